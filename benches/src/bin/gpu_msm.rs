//! GPU MSM timings beside the CPU backend's, in one run on one machine.
//!
//!     gpu_msm [--g1 20,22,24,26] [--g2 20,22] [--reps N] [--cpu-max-log L]
//!             [--dist uniform,bits:0.5,porep,one,equal,sparse:0.01,few:16]
//!             [--porep-witness FILE] [--bits-split off|auto|always|both|MODE,MODE..]
//!
//! Scalar distributions (`--dist`): uniform full-width; bits (0/1, share of ones); the aux
//! witness of a real 2 KiB PoRep partition (recorded by `real_partitions --dump-witness`,
//! tiled to n); all one; all equal; sparse; a few distinct values. Each row prints beside the
//! uniform figure of the same n (always measured first), GPU and CPU in the same run.
//! `wide:p` mixes a share p of full-width scalars into bits (the bit split's crossover).
//!
//! `--bits-split` (default: CUZK_MSM_BITS, i.e. auto): the GPU rows under each mode of the
//! bit split (zero/one scalars summed by batch addition; `both` = off,auto), with each later
//! mode's time over the first's; every mode's result is checked equal to the first's.
//!
//! For each size: the MSM with the bases resident and folded (precomputed multiples
//! 2^(c k) P in up to 60% of the device's memory, as the daemon keeps SRS vectors; the
//! precomputation's one-time cost is printed), resident plain (uploaded once, no
//! multiples), with the bases uploaded inside the call, and the CPU backend (blst's
//! Pippenger on all cores) up to 2^L points (default 22). GPU figures are medians of N runs
//! after a warm-up; the CPU runs once. The folded result is checked against the plain one
//! at every size, and both against the CPU's where the CPU ran.
//!
//! Points: 2^22 distinct points (a random start plus multiples of a random step per thread),
//! repeated to fill larger sizes; random full-width scalars. Pippenger's work does not
//! depend on the points being distinct, and 2^22 points (400 MB in G1) are far beyond the
//! GPU's cache, so the repetition does not flatter the timings.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_benches::parse_logs;
use cuzk_core::backend::cpu;
use cuzk_core::backend::cuda::kernels::msm::{
    self, Bases, BitsSplit, DeviceBases, MsmGroup, Scalars, G1, G2,
};
use cuzk_core::backend::cuda::kernels::GpuDevice;
use ff::Field;
use rand::{Rng, SeedableRng};

const DISTINCT_LOG: u32 = 22;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get())
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    let per = n.div_ceil(threads()).max(1);
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(per).enumerate() {
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ ((t as u64 + 1) * 0x9e37));
                let (k, a, mut x) = (
                    Scalar::random(&mut rng),
                    Scalar::random(&mut rng),
                    Scalar::random(&mut rng),
                );
                for v in chunk {
                    x = x * k + a;
                    *v = x;
                }
            });
        }
    });
    out
}

/// `n` points: each thread walks start + k * step from its own hashed start.
fn points<P, A>(n: usize, hash: fn(&[u8]) -> P, to_affine: fn(&P) -> A) -> Vec<A>
where
    P: Copy + Send + Sync + std::ops::Add<Output = P>,
    A: Copy + Default + Send,
{
    let mut out = vec![A::default(); n];
    let step = hash(b"step");
    let per = n.div_ceil(threads()).max(1);
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(per).enumerate() {
            s.spawn(move || {
                let mut p = hash(&t.to_le_bytes());
                for v in chunk {
                    *v = to_affine(&p);
                    p = p + step;
                }
            });
        }
    });
    out
}

fn tiled<A: Copy>(distinct: &[A], n: usize) -> Vec<A> {
    distinct.iter().copied().cycle().take(n).collect()
}

fn median_ms<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    f(); // warm-up: module load, allocator pools
    let mut v: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// A scalar distribution: Filecoin's witnesses are mostly bits, and an MSM that is only fast
/// on uniform scalars is not fast on the workload.
#[derive(Clone, Debug, PartialEq)]
enum Dist {
    /// Full-width random scalars.
    Uniform,
    /// 0 or 1, with this share of ones.
    Bits(f64),
    /// The aux witness of a real 2 KiB PoRep partition (`--porep-witness`), tiled to n.
    Porep,
    /// Every scalar one.
    One,
    /// Every scalar the same random value.
    Equal,
    /// This share of random full-width scalars, the rest zero.
    Sparse(f64),
    /// K distinct random values, repeated.
    Few(usize),
    /// This share of full-width random scalars, the rest 0 or 1 evenly.
    Wide(f64),
}

impl Dist {
    fn parse(s: &str) -> Dist {
        let (name, arg) = s.split_once(':').unwrap_or((s, ""));
        let num = |d: f64| {
            if arg.is_empty() {
                d
            } else {
                arg.parse().expect("distribution argument")
            }
        };
        match name {
            "uniform" => Dist::Uniform,
            "bits" => Dist::Bits(num(0.5)),
            "porep" => Dist::Porep,
            "one" => Dist::One,
            "equal" => Dist::Equal,
            "sparse" => Dist::Sparse(num(0.01)),
            "few" => Dist::Few(num(16.0) as usize),
            "wide" => Dist::Wide(num(0.5)),
            other => panic!("unknown distribution {other} (uniform, bits[:p], porep, one, equal, sparse[:p], few[:k], wide[:p])"),
        }
    }

    fn name(&self) -> String {
        match self {
            Dist::Uniform => "uniform".into(),
            Dist::Bits(p) => format!("bits {:.0}% ones", p * 100.0),
            Dist::Porep => "porep witness".into(),
            Dist::One => "all one".into(),
            Dist::Equal => "all equal".into(),
            Dist::Sparse(p) => format!("sparse {:.0}% nonzero", p * 100.0),
            Dist::Few(k) => format!("{k} distinct values"),
            Dist::Wide(p) => format!("{:.0}% wide, rest bits", p * 100.0),
        }
    }

    /// n scalars of this distribution; None for `porep` without a recorded witness.
    fn scalars(&self, n: usize, seed: u64, porep: Option<&[Scalar]>) -> Option<Vec<Scalar>> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let coin = |rng: &mut rand::rngs::StdRng, p: f64| rng.gen_bool(p.clamp(0.0, 1.0));
        Some(match self {
            Dist::Uniform => random_scalars(n, seed),
            Dist::Bits(p) => (0..n)
                .map(|_| {
                    if coin(&mut rng, *p) {
                        Scalar::ONE
                    } else {
                        Scalar::ZERO
                    }
                })
                .collect(),
            Dist::Porep => porep?.iter().copied().cycle().take(n).collect(),
            Dist::One => vec![Scalar::ONE; n],
            Dist::Equal => vec![Scalar::random(&mut rng); n],
            Dist::Sparse(p) => {
                let full = random_scalars(n, seed);
                full.into_iter()
                    .map(|v| if coin(&mut rng, *p) { v } else { Scalar::ZERO })
                    .collect()
            }
            Dist::Few(k) => {
                let vals: Vec<Scalar> =
                    (0..(*k).max(1)).map(|_| Scalar::random(&mut rng)).collect();
                (0..n).map(|_| vals[rng.gen_range(0..vals.len())]).collect()
            }
            Dist::Wide(p) => {
                let full = random_scalars(n, seed);
                full.into_iter()
                    .map(|v| match (coin(&mut rng, *p), coin(&mut rng, 0.5)) {
                        (true, _) => v,
                        (false, true) => Scalar::ONE,
                        (false, false) => Scalar::ZERO,
                    })
                    .collect()
            }
        })
    }
}

/// The recorded witness: raw blstrs scalars (32 bytes each, as `real_partitions
/// --dump-witness` writes them).
fn read_witness(path: &str) -> Vec<Scalar> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(
        bytes.len().is_multiple_of(32),
        "{path}: not a whole number of scalars"
    );
    bytes
        .chunks(32)
        .map(|c| {
            let limbs: [u64; 4] = std::array::from_fn(|i| {
                u64::from_le_bytes(c[8 * i..8 * i + 8].try_into().unwrap())
            });
            // SAFETY: Scalar is repr(transparent) over blst_fr = [u64; 4]; the file holds
            // scalars as they lay in memory (reduced Montgomery form).
            unsafe { std::mem::transmute::<[u64; 4], Scalar>(limbs) }
        })
        .collect()
}

struct Row {
    what: String,
    dist: String,
    /// Per mode of `--bits-split`, in its order.
    folded: Vec<f64>,
    fold: String,
    resident: Vec<f64>,
    upload: Option<f64>,
    cpu: Option<f64>,
    /// The uniform-scalar folded figure of the same group and n (same run).
    uniform: Option<f64>,
}

/// What the benchmark needs of a group beyond the kernels' MsmGroup.
trait BenchGroup: MsmGroup<Affine: Copy + Default + Send + Sync> + Sized {
    fn gpu(
        dev: &GpuDevice,
        bases: Bases<'_, Self>,
        s: &[Scalar],
        split: BitsSplit,
    ) -> Self::Projective {
        msm::msm_with_split::<Self>(dev, bases, Scalars::Host(s), split).expect("msm")
    }
    fn cpu(points: &[Self::Affine], s: &[Scalar]) -> Self::Projective;
    fn same(a: &Self::Projective, b: &Self::Projective) -> bool;
    fn distinct(n: usize) -> Vec<Self::Affine>;
}

impl BenchGroup for G1 {
    fn cpu(points: &[G1Affine], s: &[Scalar]) -> G1Projective {
        cpu::msm_g1(points, s).expect("cpu msm")
    }
    fn same(a: &G1Projective, b: &G1Projective) -> bool {
        G1Affine::from(a) == G1Affine::from(b)
    }
    fn distinct(n: usize) -> Vec<G1Affine> {
        points::<G1Projective, G1Affine>(
            n,
            |m| G1Projective::hash_to_curve(m, b"cuzk-bench", b""),
            |p| G1Affine::from(p),
        )
    }
}

impl BenchGroup for G2 {
    fn cpu(points: &[G2Affine], s: &[Scalar]) -> G2Projective {
        cpu::msm_g2(points, s).expect("cpu msm")
    }
    fn same(a: &G2Projective, b: &G2Projective) -> bool {
        G2Affine::from(a) == G2Affine::from(b)
    }
    fn distinct(n: usize) -> Vec<G2Affine> {
        points::<G2Projective, G2Affine>(
            n,
            |m| G2Projective::hash_to_curve(m, b"cuzk-bench", b""),
            |p| G2Affine::from(p),
        )
    }
}

struct Opts {
    reps: usize,
    cpu_max: u32,
    dists: Vec<Dist>,
    porep: Option<Vec<Scalar>>,
    splits: Vec<BitsSplit>,
}

/// One row per size of `logs` and distribution in group G.
fn bench_group<G: BenchGroup>(dev: &GpuDevice, logs: &[u32], o: &Opts, seed: u64) -> Vec<Row> {
    let Some(&max) = logs.iter().max() else {
        return Vec::new();
    };
    let t = Instant::now();
    let distinct = G::distinct(1 << max.min(DISTINCT_LOG));
    println!("{} points: {:.1}s", G::NAME, t.elapsed().as_secs_f64());
    let fold_budget = (dev.total_mem().expect("device memory") as f64 * 0.6) as usize;
    let mut rows = Vec::new();
    for &log in logs {
        let n = 1usize << log;
        let pts = tiled(&distinct, n);
        let what = format!("{} 2^{log}", G::NAME.to_uppercase());

        let t = Instant::now();
        let folded_bases = DeviceBases::<G>::upload_folded(dev, &pts, fold_budget).expect("fold");
        let fold = match folded_bases.fold() {
            Some(f) => format!(
                "c={} copies={} ({:.1} GB, {:.1} s once)",
                f.c,
                f.copies,
                folded_bases.bytes() as f64 / 1e9,
                t.elapsed().as_secs_f64()
            ),
            None => "none".into(),
        };
        let resident_bases = DeviceBases::<G>::upload(dev, &pts).expect("upload");
        let mut uniform = None;
        for (k, dist) in o.dists.iter().enumerate() {
            let Some(sc) = dist.scalars(n, seed + log as u64 + 1000 * k as u64, o.porep.as_deref())
            else {
                println!(
                    "{what} {}: no recorded witness (--porep-witness), skipped",
                    dist.name()
                );
                continue;
            };
            let (mut folded, mut resident, mut got) = (Vec::new(), Vec::new(), None);
            for &split in &o.splits {
                let mut got_folded = None;
                folded.push(median_ms(o.reps, || {
                    got_folded = Some(G::gpu(dev, Bases::Device(&folded_bases), &sc, split))
                }));
                let mut got_plain = None;
                resident.push(median_ms(o.reps, || {
                    got_plain = Some(G::gpu(dev, Bases::Device(&resident_bases), &sc, split))
                }));
                let (got_plain, got_folded) = (got_plain.unwrap(), got_folded.unwrap());
                assert!(
                    G::same(&got_plain, &got_folded),
                    "{what} {} {split:?}: folded != plain",
                    dist.name()
                );
                let first = *got.get_or_insert(got_plain);
                assert!(
                    G::same(&first, &got_plain),
                    "{what} {} {split:?}: differs from {:?}",
                    dist.name(),
                    o.splits[0]
                );
            }
            let got = got.unwrap();

            let upload = (*dist == Dist::Uniform).then(|| {
                median_ms(o.reps.min(3), || {
                    G::gpu(dev, Bases::Host(&pts), &sc, o.splits[0]);
                })
            });
            let cpu = (log <= o.cpu_max).then(|| {
                let t = Instant::now();
                let want = G::cpu(&pts, &sc);
                let ms = t.elapsed().as_secs_f64() * 1e3;
                assert!(G::same(&got, &want), "{what} {}: GPU != CPU", dist.name());
                ms
            });
            if *dist == Dist::Uniform {
                uniform = Some(folded[0]);
            }
            let row = Row {
                what: what.clone(),
                dist: dist.name(),
                folded,
                fold: fold.clone(),
                resident,
                upload,
                cpu,
                uniform,
            };
            print_row(&row, &o.splits);
            rows.push(row);
        }
    }
    rows
}

fn main() {
    let mut g1_logs = vec![20, 22, 24, 26];
    let mut g2_logs = vec![20, 22];
    let mut o = Opts {
        reps: 5,
        cpu_max: 22,
        dists: vec![Dist::Uniform],
        porep: None,
        splits: vec![BitsSplit::from_env()],
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--g1" => g1_logs = parse_logs(&v),
            "--g2" => g2_logs = parse_logs(&v),
            "--reps" => o.reps = v.parse().expect("--reps N"),
            "--cpu-max-log" => o.cpu_max = v.parse().expect("--cpu-max-log L"),
            "--dist" => o.dists = v.split(',').map(Dist::parse).collect(),
            "--porep-witness" => o.porep = Some(read_witness(&v)),
            "--bits-split" => o.splits = parse_splits(&v),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    // Every other row is read beside the uniform one of the same n: measure it first.
    o.dists.retain(|d| *d != Dist::Uniform);
    o.dists.insert(0, Dist::Uniform);
    let Some(dev) = cuzk_core::backend::cuda::kernels::device_or_skip(0) else {
        return;
    };
    println!("device: {}; bit split modes {:?}", dev.name(), o.splits);
    let mut rows = bench_group::<G1>(&dev, &g1_logs, &o, 0);
    rows.extend(bench_group::<G2>(&dev, &g2_logs, &o, 100));

    let extra: String = o.splits[1..]
        .iter()
        .map(|m| {
            format!(
                " folded {m:?} ms | resident {m:?} ms | {m:?} / {:?} folded |",
                o.splits[0]
            )
        })
        .collect();
    println!(
        "\n| MSM | scalars | GPU folded ms | GPU resident ms | GPU with upload ms | CPU ms | CPU / GPU folded | / uniform | fold |{extra}"
    );
    println!(
        "|---|---|---|---|---|---|---|---|---|{}",
        "---|---|---|".repeat(o.splits.len() - 1)
    );
    for r in &rows {
        let (cpu, ratio) = match r.cpu {
            Some(c) => (format!("{c:.0}"), format!("{:.1}x", c / r.folded[0])),
            None => ("-".into(), "-".into()),
        };
        let upload = r.upload.map_or("-".into(), |u| format!("{u:.1}"));
        let vs = r
            .uniform
            .map_or("-".into(), |u| format!("{:.2}", r.folded[0] / u));
        let modes: String = (1..r.folded.len())
            .map(|k| {
                format!(
                    " {:.1} | {:.1} | {:.2} |",
                    r.folded[k],
                    r.resident[k],
                    r.folded[k] / r.folded[0]
                )
            })
            .collect();
        println!(
            "| {} | {} | {:.1} | {:.1} | {upload} | {cpu} | {ratio} | {vs} | {} |{modes}",
            r.what, r.dist, r.folded[0], r.resident[0], r.fold
        );
    }
}

/// `off`, `auto`, `always`, `both` (= off,auto), or a comma-separated list of modes.
fn parse_splits(v: &str) -> Vec<BitsSplit> {
    let modes: Vec<BitsSplit> = v
        .split(',')
        .flat_map(|m| match m {
            "off" | "0" => vec![BitsSplit::Off],
            "auto" | "on" => vec![BitsSplit::Auto],
            "always" => vec![BitsSplit::Always],
            "both" => vec![BitsSplit::Off, BitsSplit::Auto],
            other => panic!("--bits-split: unknown mode {other} (off, auto, always, both)"),
        })
        .collect();
    assert!(!modes.is_empty(), "--bits-split: no mode");
    modes
}

fn print_row(r: &Row, splits: &[BitsSplit]) {
    let cpu = r.cpu.map_or("-".into(), |c| format!("{c:.0} ms"));
    let upload = r.upload.map_or("-".into(), |u| format!("{u:.1} ms"));
    let modes: String = (1..r.folded.len())
        .map(|k| {
            format!(
                "; split {:?}: folded {:.1} ms ({:.2}x), resident {:.1} ms ({:.2}x)",
                splits[k],
                r.folded[k],
                r.folded[k] / r.folded[0],
                r.resident[k],
                r.resident[k] / r.resident[0]
            )
        })
        .collect();
    println!(
        "{} {}: split {:?}: GPU folded {:.1} ms [{}], resident {:.1} ms, with upload {upload}, CPU {cpu}{modes}",
        r.what, r.dist, splits[0], r.folded[0], r.fold, r.resident[0]
    );
}

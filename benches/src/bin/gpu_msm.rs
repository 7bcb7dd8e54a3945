//! GPU MSM timings beside the CPU backend's, in one run on one machine.
//!
//!     gpu_msm [--g1 20,22,24,26] [--g2 20,22] [--reps N] [--cpu-max-log L]
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
use cuzk_core::backend::cpu;
use cuzk_core::backend::cuda::kernels::msm::{self, Bases, DeviceBases, MsmGroup, G1, G2};
use cuzk_core::backend::cuda::kernels::GpuDevice;
use ff::Field;
use rand::SeedableRng;

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

struct Row {
    what: String,
    folded: f64,
    fold: String,
    resident: f64,
    upload: f64,
    cpu: Option<f64>,
}

/// What the benchmark needs of a group beyond the kernels' MsmGroup.
trait BenchGroup: MsmGroup<Affine: Copy + Default + Send + Sync> + Sized {
    fn gpu(dev: &GpuDevice, bases: Bases<'_, Self>, s: &[Scalar]) -> Self::Projective;
    fn cpu(points: &[Self::Affine], s: &[Scalar]) -> Self::Projective;
    fn same(a: &Self::Projective, b: &Self::Projective) -> bool;
    fn distinct(n: usize) -> Vec<Self::Affine>;
}

impl BenchGroup for G1 {
    fn gpu(dev: &GpuDevice, bases: Bases<'_, G1>, s: &[Scalar]) -> G1Projective {
        msm::msm_g1(dev, bases, s).expect("msm")
    }
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
    fn gpu(dev: &GpuDevice, bases: Bases<'_, G2>, s: &[Scalar]) -> G2Projective {
        msm::msm_g2(dev, bases, s).expect("msm")
    }
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

/// One row per size of `logs` in group G.
fn bench_group<G: BenchGroup>(
    dev: &GpuDevice,
    logs: &[u32],
    reps: usize,
    cpu_max: u32,
    seed: u64,
) -> Vec<Row> {
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
        let sc = random_scalars(n, seed + log as u64);
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
        let mut got_folded = None;
        let folded = median_ms(reps, || {
            got_folded = Some(G::gpu(dev, Bases::Device(&folded_bases), &sc))
        });
        drop(folded_bases);

        let resident_bases = DeviceBases::<G>::upload(dev, &pts).expect("upload");
        let mut got = None;
        let resident = median_ms(reps, || {
            got = Some(G::gpu(dev, Bases::Device(&resident_bases), &sc))
        });
        drop(resident_bases);
        let (got, got_folded) = (got.unwrap(), got_folded.unwrap());
        assert!(G::same(&got, &got_folded), "{what}: folded != plain");

        let upload = median_ms(reps.min(3), || {
            G::gpu(dev, Bases::Host(&pts), &sc);
        });
        let cpu = (log <= cpu_max).then(|| {
            let t = Instant::now();
            let want = G::cpu(&pts, &sc);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(G::same(&got, &want), "{what}: GPU != CPU");
            ms
        });
        let row = Row {
            what,
            folded,
            fold,
            resident,
            upload,
            cpu,
        };
        print_row(&row);
        rows.push(row);
    }
    rows
}

fn parse_logs(s: &str) -> Vec<u32> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().expect("log size"))
        .collect()
}

fn main() {
    let mut g1_logs = vec![20, 22, 24, 26];
    let mut g2_logs = vec![20, 22];
    let mut reps = 5;
    let mut cpu_max = 22;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--g1" => g1_logs = parse_logs(&v),
            "--g2" => g2_logs = parse_logs(&v),
            "--reps" => reps = v.parse().expect("--reps N"),
            "--cpu-max-log" => cpu_max = v.parse().expect("--cpu-max-log L"),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    let dev = match GpuDevice::open(0) {
        Ok(d) => d,
        Err(e) => {
            println!("SKIP: no CUDA device ({e})");
            return;
        }
    };
    println!("device: {}", dev.name());
    let mut rows = bench_group::<G1>(&dev, &g1_logs, reps, cpu_max, 0);
    rows.extend(bench_group::<G2>(&dev, &g2_logs, reps, cpu_max, 100));

    println!(
        "\n| MSM | GPU folded ms | GPU resident ms | GPU with upload ms | CPU ms | CPU / GPU folded | fold |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let (cpu, ratio) = match r.cpu {
            Some(c) => (format!("{c:.0}"), format!("{:.1}x", c / r.folded)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {cpu} | {ratio} | {} |",
            r.what, r.folded, r.resident, r.upload, r.fold
        );
    }
}

fn print_row(r: &Row) {
    let cpu = r.cpu.map_or("-".into(), |c| format!("{c:.0} ms"));
    println!(
        "{}: GPU folded {:.1} ms [{}], resident {:.1} ms, with upload {:.1} ms, CPU {cpu}",
        r.what, r.folded, r.fold, r.resident, r.upload
    );
}

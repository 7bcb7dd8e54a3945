//! The GPU MSM against the CPU backend: G1 and G2 results bit-identical on fresh random
//! inputs at many sizes and on edge cases (zero scalars, one, r - 1, points at infinity,
//! repeated and opposite points, every scalar equal), through the chunked path, and through
//! the resident-bases cache, and with folded bases (precomputed multiples 2^(c k) P, all
//! windows in one set of buckets or, with fewer copies, in several).
//!
//! Skips (printing "SKIP: no CUDA device ...") where there is no driver, device or kernels;
//! fails instead where CUZK_REQUIRE_GPU=1.
//! CUZK_MSM_TEST_MAX_LOG caps the random sizes (default 16; the device run uses 24), and
//! CUZK_MSM_TEST_CPU_MAX_LOG the sizes also run on the CPU (default 22). Beyond that the
//! reference is exact algebra: the points are A_j + k S (k the index inside block j), so
//! sum_i s_i P_i = sum_j (sum_{i in j} s_i) A_j + (sum_i s_i k_i) S.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_core::backend::cuda::kernels::msm::{self as kmsm, Bases, DeviceBases, G1, G2};
use cuzk_core::backend::cuda::msm as gpu;
use cuzk_core::backend::{cpu, cuda};
use cuzk_core::backend::{G1Bases, G2Bases, Query};
use cuzk_kernels::{DeviceScalars, GpuDevice};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

const BLOCKS: usize = 64;

fn device() -> Option<GpuDevice> {
    cuzk_kernels::device_or_skip(0)
}

fn env_log(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn fresh_rng() -> ChaCha20Rng {
    let seed: u64 = rand::thread_rng().gen();
    println!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// Full-width random scalars, fast: each block runs x <- x k + s from random k, s, x.
fn random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    let per = n.div_ceil(BLOCKS).max(1);
    let seeds: Vec<[Scalar; 3]> = (0..n.div_ceil(per))
        .map(|_| [(); 3].map(|_| Scalar::random(&mut *rng)))
        .collect();
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(per)
        .zip(seeds)
        .for_each(|(c, [k, s, mut x])| {
            for v in c {
                x = x * k + s;
                *v = x;
            }
        });
    out
}

/// Points A_j + k S for block j, index k inside it (see the module comment).
trait TestGroup: Group<Scalar = Scalar> + Send + Sync {
    type Aff: Copy + Default + Send + Sync + PartialEq + std::fmt::Debug;
    fn cpu(points: &[Self::Aff], scalars: &[Scalar]) -> Self;
    fn gpu(dev: &GpuDevice, srs: &str, q: Query, p: &[Self::Aff], s: &[Scalar]) -> Self;
    /// Through bases folded into at most `copies` copies, or as many as the plan wants (a
    /// fresh upload per call).
    fn gpu_folded(dev: &GpuDevice, p: &[Self::Aff], s: &[Scalar], copies: Option<usize>) -> Self;
    fn aff(&self) -> Self::Aff;
    fn batch(p: &[Self], out: &mut [Self::Aff]);
    fn from_aff(a: Self::Aff) -> Self;
}

impl TestGroup for G1Projective {
    type Aff = G1Affine;
    fn aff(&self) -> G1Affine {
        Curve::to_affine(self)
    }
    fn batch(p: &[Self], out: &mut [G1Affine]) {
        Self::batch_normalize(p, out)
    }
    fn from_aff(a: G1Affine) -> Self {
        a.into()
    }
    fn cpu(points: &[G1Affine], scalars: &[Scalar]) -> Self {
        cpu::msm_g1(points, scalars).unwrap()
    }
    fn gpu(dev: &GpuDevice, srs: &str, q: Query, p: &[G1Affine], s: &[Scalar]) -> Self {
        // Ad hoc: the kernels themselves (the backend hands n <= 16 in G1 to the host).
        if q == Query::Adhoc {
            return kmsm::msm_g1(dev, Bases::Host(p), s).unwrap();
        }
        let bases = G1Bases::new(srs, q, p);
        gpu::msm_g1(dev, bases, s).unwrap()
    }
    fn gpu_folded(dev: &GpuDevice, p: &[G1Affine], s: &[Scalar], copies: Option<usize>) -> Self {
        let max_bytes = copies.map_or(usize::MAX, |c| c * std::mem::size_of_val(p));
        let d = DeviceBases::<G1>::upload_folded(dev, p, max_bytes).unwrap();
        assert!(d.fold().is_some(), "G1: {} points not folded", p.len());
        kmsm::msm_g1(dev, Bases::Device(&d), s).unwrap()
    }
}

impl TestGroup for G2Projective {
    type Aff = G2Affine;
    fn aff(&self) -> G2Affine {
        Curve::to_affine(self)
    }
    fn batch(p: &[Self], out: &mut [G2Affine]) {
        Self::batch_normalize(p, out)
    }
    fn from_aff(a: G2Affine) -> Self {
        a.into()
    }
    fn cpu(points: &[G2Affine], scalars: &[Scalar]) -> Self {
        cpu::msm_g2(points, scalars).unwrap()
    }
    fn gpu(dev: &GpuDevice, srs: &str, q: Query, p: &[G2Affine], s: &[Scalar]) -> Self {
        if q == Query::Adhoc {
            return kmsm::msm_g2(dev, Bases::Host(p), s).unwrap();
        }
        let bases = G2Bases::new(srs, q, p);
        gpu::msm_g2(dev, bases, s).unwrap()
    }
    fn gpu_folded(dev: &GpuDevice, p: &[G2Affine], s: &[Scalar], copies: Option<usize>) -> Self {
        let max_bytes = copies.map_or(usize::MAX, |c| c * std::mem::size_of_val(p));
        let d = DeviceBases::<G2>::upload_folded(dev, p, max_bytes).unwrap();
        assert!(d.fold().is_some(), "G2: {} points not folded", p.len());
        kmsm::msm_g2(dev, Bases::Device(&d), s).unwrap()
    }
}

struct Points<G: TestGroup> {
    affine: Vec<G::Aff>,
    starts: Vec<G>,
    step: G,
    per: usize,
}

fn random_points<G: TestGroup>(n: usize, rng: &mut ChaCha20Rng) -> Points<G> {
    let per = n.div_ceil(BLOCKS).max(1);
    let blocks = n.div_ceil(per);
    let starts: Vec<G> = (0..blocks).map(|_| G::random(&mut *rng)).collect();
    let step = G::random(&mut *rng);
    let mut affine = vec![G::Aff::default(); n];
    affine.par_chunks_mut(per).zip(&starts).for_each(|(c, a)| {
        let mut p = *a;
        let proj: Vec<G> = (0..c.len())
            .map(|_| {
                let q = p;
                p += step;
                q
            })
            .collect();
        G::batch(&proj, c);
    });
    Points {
        affine,
        starts,
        step,
        per,
    }
}

fn algebraic_msm<G: TestGroup>(p: &Points<G>, scalars: &[Scalar]) -> G {
    let mut acc = G::identity();
    let mut weighted = Scalar::ZERO;
    for (j, chunk) in scalars.chunks(p.per).enumerate() {
        let mut sum = Scalar::ZERO;
        for (k, s) in chunk.iter().enumerate() {
            sum += s;
            weighted += *s * Scalar::from(k as u64);
        }
        acc += p.starts[j] * sum;
    }
    acc + p.step * weighted
}

/// Where the bases of a checked MSM come from.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Uploaded per call (Query::Adhoc is never kept).
    Adhoc,
    /// Folded, with every window's copy (one set of buckets).
    Folded,
    /// Folded into three copies only: several sets of buckets.
    FoldedThree,
}

fn run<G: TestGroup>(dev: &GpuDevice, mode: Mode, points: &[G::Aff], s: &[Scalar]) -> G {
    match mode {
        Mode::Adhoc => G::gpu(dev, "test", Query::Adhoc, points, s),
        Mode::Folded => G::gpu_folded(dev, points, s, None),
        Mode::FoldedThree => G::gpu_folded(dev, points, s, Some(3)),
    }
}

fn check_random<G: TestGroup>(dev: &GpuDevice, what: &str, mode: Mode, max_log: u32) {
    let cpu_max = env_log("CUZK_MSM_TEST_CPU_MAX_LOG", 22);
    let mut rng = fresh_rng();
    let mut sizes = vec![1usize, 2, 3, 255, 1025];
    sizes.extend(
        [16u32, 20, 22, 24]
            .iter()
            .filter(|&&l| l <= max_log)
            .map(|&l| 1usize << l),
    );
    let biggest = *sizes.last().unwrap();
    let t = Instant::now();
    let pts = random_points::<G>(biggest, &mut rng);
    println!(
        "{what}: {biggest} points in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    for n in sizes {
        // Fresh scalars, and a fresh window into the points, for every size.
        let scalars = random_scalars(n, &mut rng);
        let t = Instant::now();
        let got = run::<G>(dev, mode, &pts.affine[..n], &scalars);
        let gpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let algebraic = algebraic_msm(&pts, &scalars);
        assert_eq!(got.aff(), algebraic.aff(), "{what} n={n}: GPU != algebra");
        let mut line = format!("{what} {mode:?} n={n}: gpu {gpu_ms:.1} ms (with upload)");
        if n <= 1 << cpu_max {
            let t = Instant::now();
            let want = G::cpu(&pts.affine[..n], &scalars);
            line += &format!(", cpu {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(got.aff(), want.aff(), "{what} n={n}: GPU != CPU");
        }
        println!("{line}: identical");
    }
}

fn check_edges<G: TestGroup>(dev: &GpuDevice, what: &str, mode: Mode) {
    let mut rng = fresh_rng();
    let n = 3000;
    let pts = random_points::<G>(n, &mut rng).affine;
    let minus_one = -Scalar::ONE;
    let random = random_scalars(n, &mut rng);
    let one_point = vec![pts[7]; n];
    let mut with_inf = pts.clone();
    for p in with_inf.iter_mut().step_by(3) {
        *p = G::Aff::default(); // blst's infinity: x = y = 0
    }
    let mut opposite = pts.clone();
    for i in (0..n).step_by(2) {
        opposite[i + 1] = (-G::from_aff(opposite[i])).aff();
    }
    let mut paired = random.clone();
    for i in (0..n).step_by(2) {
        paired[i + 1] = paired[i];
    }
    let small: Vec<Scalar> = (0..n).map(|i| Scalar::from((i % 70) as u64)).collect();
    let pow2: Vec<Scalar> = (0..n)
        .map(|i| Scalar::from(2u64).pow_vartime([(i % 255) as u64]))
        .collect();
    let mut mixed = random.clone();
    for (i, s) in mixed.iter_mut().enumerate() {
        *s = match i % 5 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            2 => minus_one,
            _ => *s,
        };
    }
    let same = vec![random[0]; n];
    // (name, bases, scalars)
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, &[G::Aff], Vec<Scalar>)> = vec![
        ("zero scalars", &pts, vec![Scalar::ZERO; n]),
        ("scalar one", &pts, vec![Scalar::ONE; n]),
        ("scalar r-1", &pts, vec![minus_one; n]),
        ("mixed 0/1/r-1/random", &pts, mixed),
        ("small scalars", &pts, small),
        ("powers of two", &pts, pow2),
        ("points at infinity", &with_inf, random.clone()),
        ("all points equal", &one_point, random.clone()),
        ("all equal, same scalar", &one_point, same.clone()),
        ("P and -P, same scalars", &opposite, paired),
        ("every scalar equal", &pts, same),
        ("n=1 zero", &pts[..1], vec![Scalar::ZERO]),
        ("n=1 one", &pts[..1], vec![Scalar::ONE]),
        ("n=1 infinity", &with_inf[..1], vec![random[1]]),
    ];
    for (name, points, scalars) in cases {
        let points = &points[..scalars.len()];
        let got = run::<G>(dev, mode, points, &scalars);
        let want = G::cpu(points, &scalars);
        assert_eq!(got.aff(), want.aff(), "{what} {mode:?} {name}: GPU != CPU");
        println!("{what} {mode:?} {name}: identical");
    }

    // Every scalar equal over 2^16 points: each window's digits all land in one bucket,
    // which spans many accumulation segments (the join of their heads).
    let big = random_points::<G>(1 << 16, &mut rng).affine;
    let s = vec![Scalar::random(&mut rng); 1 << 16];
    let got = run::<G>(dev, mode, &big, &s);
    assert_eq!(
        got.aff(),
        G::cpu(&big, &s).aff(),
        "{what} {mode:?} skewed 2^16"
    );
    println!("{what} {mode:?} skewed 2^16: identical");
}

/// The scalar distributions of real Filecoin witnesses (mostly bits, from the SHA-256 and
/// Poseidon gadgets' booleans) and their extremes: one bucket then holds nearly every entry,
/// spanning every accumulation segment, which the join of the segments' heads must handle.
fn distribution(name: &str, n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    let bit = |rng: &mut ChaCha20Rng, p: f64| {
        if rng.gen_bool(p) {
            Scalar::ONE
        } else {
            Scalar::ZERO
        }
    };
    match name {
        "all zero" => vec![Scalar::ZERO; n],
        "all one" => vec![Scalar::ONE; n],
        "99% ones" => (0..n).map(|_| bit(rng, 0.99)).collect(),
        "zeros and ones" => (0..n).map(|_| bit(rng, 0.5)).collect(),
        "few values repeated" => {
            let vals = random_scalars(5, rng);
            (0..n).map(|_| vals[rng.gen_range(0..vals.len())]).collect()
        }
        "uniform" => random_scalars(n, rng),
        other => panic!("unknown distribution {other}"),
    }
}

const DISTRIBUTIONS: [&str; 6] = [
    "all zero",
    "all one",
    "99% ones",
    "zeros and ones",
    "few values repeated",
    "uniform",
];

fn check_distributions<G: TestGroup>(dev: &GpuDevice, what: &str, max_log: u32) {
    let cpu_max = env_log("CUZK_MSM_TEST_CPU_MAX_LOG", 22);
    let mut rng = fresh_rng();
    let mut sizes = vec![1usize, 2, 3, 255];
    sizes.extend(
        [(16u32, 1usize), (20, 0), (22, 0)]
            .iter()
            .filter(|&&(l, _)| l <= max_log)
            .map(|&(l, extra)| (1usize << l) + extra),
    );
    let pts = random_points::<G>(*sizes.last().unwrap(), &mut rng);
    for n in sizes {
        for dist in DISTRIBUTIONS {
            let scalars = distribution(dist, n, &mut rng);
            let points = &pts.affine[..n];
            let algebraic = algebraic_msm(&pts, &scalars).aff();
            let cpu = (n <= 1 << cpu_max).then(|| G::cpu(points, &scalars).aff());
            if let Some(cpu) = cpu {
                assert_eq!(cpu, algebraic, "{what} n={n} {dist}: CPU != algebra");
            }
            for mode in [Mode::Adhoc, Mode::Folded, Mode::FoldedThree] {
                let t = Instant::now();
                let got = run::<G>(dev, mode, points, &scalars).aff();
                let ms = t.elapsed().as_secs_f64() * 1e3;
                assert_eq!(
                    got, algebraic,
                    "{what} {mode:?} n={n} {dist}: GPU != reference"
                );
                println!(
                    "{what} {mode:?} n={n} {dist}: identical to {} ({ms:.1} ms)",
                    if cpu.is_some() { "CPU" } else { "algebra" }
                );
            }
        }
    }
}

fn check_resident<G: TestGroup>(dev: &GpuDevice, what: &str) {
    let mut rng = fresh_rng();
    let n = 5000;
    let pts = random_points::<G>(n, &mut rng).affine;
    let srs = format!("resident-test-{what}");
    let plain = std::mem::size_of_val(&pts[..]);
    // First use: uploaded plain; second: folded (the budget has room); third: folded, kept.
    for round in 0..3 {
        let s = random_scalars(n - round, &mut rng); // fewer scalars than bases too
        let got = G::gpu(dev, &srs, Query::L, &pts, &s);
        assert_eq!(
            got.aff(),
            G::cpu(&pts[..s.len()], &s).aff(),
            "{what} round {round}"
        );
        let kept = gpu::resident_set_bytes(dev, &srs);
        match round {
            0 => assert_eq!(kept, plain, "{what}: bases not kept plain at first use"),
            _ => assert!(
                kept >= 2 * plain,
                "{what}: bases not folded at round {round}"
            ),
        }
    }
    gpu::evict(dev, &srs);
    assert_eq!(
        gpu::resident_set_bytes(dev, &srs),
        0,
        "{what}: evict left bases behind"
    );
    println!("{what} resident bases: identical, kept plain, then folded, evicted");
}

#[test]
fn g1_msm_matches_cpu() {
    let Some(dev) = device() else { return };
    check_edges::<G1Projective>(&dev, "G1", Mode::Adhoc);
    check_resident::<G1Projective>(&dev, "G1");
    check_random::<G1Projective>(
        &dev,
        "G1",
        Mode::Adhoc,
        env_log("CUZK_MSM_TEST_MAX_LOG", 16),
    );
}

#[test]
fn g2_msm_matches_cpu() {
    let Some(dev) = device() else { return };
    check_edges::<G2Projective>(&dev, "G2", Mode::Adhoc);
    check_resident::<G2Projective>(&dev, "G2");
    let max_log = env_log("CUZK_MSM_TEST_MAX_LOG", 16).min(22);
    check_random::<G2Projective>(&dev, "G2", Mode::Adhoc, max_log);
}

#[test]
fn witness_distributions_match_cpu() {
    let Some(dev) = device() else { return };
    let max_log = env_log("CUZK_MSM_TEST_MAX_LOG", 16).min(22);
    check_distributions::<G1Projective>(&dev, "G1", max_log);
    check_distributions::<G2Projective>(&dev, "G2", max_log);
}

fn adhoc(points: &[G1Affine]) -> G1Bases<'_> {
    G1Bases::new("t", Query::Adhoc, points)
}

#[test]
fn chunked_msm_matches_cpu() {
    let Some(dev) = device() else { return };
    let mut rng = fresh_rng();
    let n = 50_000;
    let p1 = random_points::<G1Projective>(n, &mut rng).affine;
    let p2 = random_points::<G2Projective>(n, &mut rng).affine;
    let s = random_scalars(n, &mut rng);
    // SAFETY of the test: the variable is read per call; tests in this binary run in one
    // process, and the others do not depend on it being unset beyond speed.
    std::env::set_var("CUZK_MSM_MAX_CHUNK", "7000");
    let g1 = G1Projective::gpu(&dev, "t", Query::Adhoc, &p1, &s);
    let g2 = G2Projective::gpu(&dev, "t", Query::Adhoc, &p2, &s);
    // Scalars already on the device (the H polynomial's path), chunked as well.
    let on_device = |s: &[Scalar]| DeviceScalars::upload(&dev, cuda::as_limbs(s)).unwrap();
    let dev_g1 = gpu::msm_g1_device_scalars(&dev, adhoc(&p1), &on_device(&s)).unwrap();
    std::env::remove_var("CUZK_MSM_MAX_CHUNK");
    let want = G1Projective::cpu(&p1, &s).aff();
    assert_eq!(g1.aff(), want);
    assert_eq!(dev_g1.aff(), want, "device scalars, chunked");
    assert_eq!(g2.aff(), G2Projective::cpu(&p2, &s).aff());
    let short = &s[..s.len() - 5]; // fewer scalars than bases, one chunk
    let dev_g1 = gpu::msm_g1_device_scalars(&dev, adhoc(&p1), &on_device(short)).unwrap();
    assert_eq!(
        dev_g1.aff(),
        G1Projective::cpu(&p1[..short.len()], short).aff()
    );
    println!("chunked (8 chunks) G1 and G2, G1 from device scalars: identical");
}

#[test]
fn folded_msm_matches_cpu() {
    let Some(dev) = device() else { return };
    let max_log = env_log("CUZK_MSM_TEST_MAX_LOG", 16);
    for mode in [Mode::Folded, Mode::FoldedThree] {
        check_edges::<G1Projective>(&dev, "G1", mode);
        check_edges::<G2Projective>(&dev, "G2", mode);
        check_random::<G1Projective>(&dev, "G1", mode, max_log);
        check_random::<G2Projective>(&dev, "G2", mode, max_log.min(22));
    }
}

#[test]
fn folded_chunked_msm_matches_cpu() {
    let Some(dev) = device() else { return };
    let mut rng = fresh_rng();
    let n = 50_000;
    let p1 = random_points::<G1Projective>(n, &mut rng).affine;
    let p2 = random_points::<G2Projective>(n, &mut rng).affine;
    let s = random_scalars(n - 3, &mut rng); // fewer scalars than bases
    let d1 = DeviceBases::<G1>::upload_folded(&dev, &p1, usize::MAX).unwrap();
    let d2 = DeviceBases::<G2>::upload_folded(&dev, &p2, usize::MAX).unwrap();
    assert!(d1.fold().is_some() && d2.fold().is_some());
    // See chunked_msm_matches_cpu: the variable is read per call.
    std::env::set_var("CUZK_MSM_MAX_CHUNK", "7000");
    let g1 = kmsm::msm_g1(&dev, Bases::Device(&d1), &s).unwrap();
    let g2 = kmsm::msm_g2(&dev, Bases::Device(&d2), &s).unwrap();
    std::env::remove_var("CUZK_MSM_MAX_CHUNK");
    assert_eq!(g1.to_affine(), G1Projective::cpu(&p1[..s.len()], &s).aff());
    assert_eq!(g2.to_affine(), G2Projective::cpu(&p2[..s.len()], &s).aff());
    println!("folded, chunked (8 chunks) G1 and G2: identical");
}

/// The A and B queries' scalars, selected on the device by a density bitmap, equal the host's
/// selection: empty, full, sparse and dense sets, lengths that are not multiples of 64.
#[test]
fn device_density_selection_matches_host() {
    let Some(dev) = device() else { return };
    let mut rng = fresh_rng();
    for (n, share) in [
        (1usize, 1.0),
        (63, 0.5),
        (64, 0.0),
        (1000, 1.0),
        (100_003, 0.25),
        (1 << 20, 0.99),
    ] {
        let s = random_scalars(n, &mut rng);
        let words: Vec<u64> = (0..n.div_ceil(64))
            .map(|w| {
                (0..64).fold(0u64, |acc, b| {
                    let i = w * 64 + b;
                    acc | (u64::from(i < n && rng.gen_bool(share)) << b)
                })
            })
            .collect();
        let want: Vec<Scalar> = (0..n)
            .filter(|&i| words[i / 64] >> (i % 64) & 1 == 1)
            .map(|i| s[i])
            .collect();
        let on_dev = DeviceScalars::upload(&dev, cuda::as_limbs(&s)).unwrap();
        let got = kmsm::select_scalars(&dev, &on_dev, &words, n).unwrap();
        assert_eq!(got.len(), want.len(), "n={n} share={share}");
        let back = got.download(&dev).unwrap();
        assert_eq!(back, cuda::as_limbs(&want), "n={n} share={share}");
        println!(
            "select n={n} share={share}: {} of {n}, identical",
            want.len()
        );
    }
}

/// A bitmap kept on the device (`DeviceDensity`, as the backend keeps a circuit's densities
/// across its partitions) selects from one vector after another exactly as a fresh one, and
/// bits past its length in the last word are not members.
#[test]
fn a_kept_density_selects_again_and_ignores_bits_past_its_length() {
    let Some(dev) = device() else { return };
    let mut rng = fresh_rng();
    let n = 100_003usize;
    let mut words: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.gen::<u64>()).collect();
    let kept = kmsm::DeviceDensity::upload(&dev, &words, n).unwrap();
    // What the host counts: the members below n only.
    *words.last_mut().unwrap() &= (1u64 << (n % 64)) - 1;
    let members: Vec<usize> = (0..n)
        .filter(|&i| words[i / 64] >> (i % 64) & 1 == 1)
        .collect();
    assert_eq!(kept.total(), members.len());
    for round in 0..3 {
        let s = random_scalars(n, &mut rng);
        let want: Vec<Scalar> = members.iter().map(|&i| s[i]).collect();
        let on_dev = DeviceScalars::upload(&dev, cuda::as_limbs(&s)).unwrap();
        let got = kmsm::select_scalars_in(&dev, &on_dev, &kept).unwrap();
        let back = got.download(&dev).unwrap();
        assert_eq!(back, cuda::as_limbs(&want), "round {round}");
    }
    println!(
        "kept density, n={n}: {} members, 3 vectors identical",
        members.len()
    );
}

/// Scalars on the device run the sort in stages of bucket sets, each stage's sort on the
/// side stream beside the accumulation of the one before (kernels msm/stages.rs; by default
/// from 2^24 points, forced here with CUZK_MSM_STAGES): folded bases in three copies
/// (several sets), plain bases (a set per window) and folded with every copy (one set, one
/// stage), on random scalars and on scalars whose digits leave whole stages empty (zeros;
/// one high window only; every scalar equal).
#[test]
fn device_scalars_in_sort_stages_match_cpu() {
    let Some(dev) = device() else { return };
    // See chunked_msm_matches_cpu: the variable is read per call, and a stage count changes
    // no result, only the order of the work.
    std::env::set_var("CUZK_MSM_STAGES", "3");
    // Begun MSMs sort ahead only where asked to (off by default).
    std::env::set_var("CUZK_MSM_AHEAD", "1");
    let mut rng = fresh_rng();
    let n = (1 << 14) + 3;
    let p1 = random_points::<G1Projective>(n, &mut rng).affine;
    let p2 = random_points::<G2Projective>(n, &mut rng).affine;
    let three1 =
        DeviceBases::<G1>::upload_folded(&dev, &p1, 3 * std::mem::size_of_val(&p1[..])).unwrap();
    let three2 =
        DeviceBases::<G2>::upload_folded(&dev, &p2, 3 * std::mem::size_of_val(&p2[..])).unwrap();
    let all1 = DeviceBases::<G1>::upload_folded(&dev, &p1, usize::MAX).unwrap();
    assert!(three1.fold().is_some() && three2.fold().is_some() && all1.fold().is_some());
    let high = Scalar::from(3u64) * Scalar::from(2u64).pow_vartime([250u64]);
    let cases: Vec<(&str, Vec<Scalar>)> = vec![
        ("random", random_scalars(n, &mut rng)),
        ("zeros", vec![Scalar::ZERO; n]),
        ("high window only", vec![high; n]),
        ("equal", vec![Scalar::from(0xdead_beef_u64); n]),
        ("short", random_scalars(n - 7, &mut rng)),
    ];
    for (what, s) in cases {
        let on_dev = DeviceScalars::upload(&dev, cuda::as_limbs(&s)).unwrap();
        let want1 = G1Projective::cpu(&p1[..s.len()], &s).aff();
        let want2 = G2Projective::cpu(&p2[..s.len()], &s).aff();
        let got = [
            kmsm::msm_g1_device_scalars(&dev, Bases::Device(&three1), &on_dev).unwrap(),
            kmsm::msm_g1_device_scalars(&dev, Bases::Device(&all1), &on_dev).unwrap(),
            kmsm::msm_g1_device_scalars(&dev, Bases::Host(&p1), &on_dev).unwrap(),
        ];
        for (g, path) in got.iter().zip(["three copies", "every copy", "plain"]) {
            assert_eq!(g.to_affine(), want1, "G1 {what}, {path}");
        }
        let g2 = kmsm::msm_g2_device_scalars(&dev, Bases::Device(&three2), &on_dev).unwrap();
        assert_eq!(g2.to_affine(), want2, "G2 {what}, three copies");
        // Begun, other MSMs queued meanwhile, then finished (the prover's H): sorted ahead
        // where it runs in stages (three copies), whole at `finish` where not.
        for (bases, ahead, path) in [
            (Bases::Device(&three1), true, "three copies"),
            (Bases::Device(&all1), false, "every copy"),
            (Bases::Host(&p1[..]), false, "host bases"),
        ] {
            let mut begun = kmsm::BegunMsm::<G1>::begin(&dev, bases, &on_dev).unwrap();
            assert_eq!(begun.is_ahead(), ahead, "{what}, {path}");
            // As the prover: an advance after each MSM but the last (the count and the
            // place are queued at two of them).
            let other = kmsm::msm_g1_device_scalars(&dev, Bases::Device(&all1), &on_dev).unwrap();
            begun.advance(&dev).unwrap();
            begun.advance(&dev).unwrap();
            let other2 = kmsm::msm_g1(&dev, Bases::Host(&p1), &s).unwrap();
            begun.advance(&dev).unwrap();
            let got = begun
                .finish(&dev, bases, &on_dev, &mut kmsm::NoLetIn)
                .unwrap();
            assert_eq!(got.to_affine(), want1, "G1 {what}, begun, {path}");
            assert_eq!(other.to_affine(), want1, "G1 {what}, beside the begun one");
            assert_eq!(other2.to_affine(), want1, "G1 {what}, beside the begun one");
        }
        // The vector is left as it was (the stages convert their own copy).
        assert_eq!(on_dev.download(&dev).unwrap(), cuda::as_limbs(&s), "{what}");
        println!("stages, {what}: G1 (three paths, three begun) and G2 identical to the CPU");
    }
    begun_misuse_is_refused_or_harmless(&dev, &three1, &all1, &p1, &mut rng);
    let_in_between_stages(&dev, &p1, &mut rng);
    std::env::remove_var("CUZK_MSM_STAGES");
    std::env::remove_var("CUZK_MSM_AHEAD");
}

/// A begun MSM finished over other bases than it began with is refused; one dropped
/// unfinished leaves the device as it was (the next MSM is exact).
fn begun_misuse_is_refused_or_harmless(
    dev: &GpuDevice,
    three: &DeviceBases<G1>,
    all: &DeviceBases<G1>,
    points: &[G1Affine],
    rng: &mut ChaCha20Rng,
) {
    let s = random_scalars(points.len(), rng);
    let on_dev = DeviceScalars::upload(dev, cuda::as_limbs(&s)).unwrap();
    let begun = kmsm::BegunMsm::<G1>::begin(dev, Bases::Device(three), &on_dev).unwrap();
    assert!(begun.is_ahead());
    assert!(begun
        .finish(dev, Bases::Device(all), &on_dev, &mut kmsm::NoLetIn)
        .is_err());
    let mut begun = kmsm::BegunMsm::<G1>::begin(dev, Bases::Device(three), &on_dev).unwrap();
    begun.advance(dev).unwrap();
    drop(begun);
    let got = kmsm::msm_g1_device_scalars(dev, Bases::Device(three), &on_dev).unwrap();
    assert_eq!(got.to_affine(), G1Projective::cpu(points, &s).aff());
    println!("begun: other bases refused; dropped unfinished, the next MSM exact");
}

/// Other MSMs run at the stages' pause points (the daemon's WinningPoSt inside a 2^27 H
/// MSM): on the same device and streams, with host and with device scalars (whose stages
/// use the side stream the paused MSM sorts on); every result, outer and inner, exact.
fn let_in_between_stages(dev: &GpuDevice, points: &[G1Affine], rng: &mut ChaCha20Rng) {
    struct Nested<'a> {
        dev: &'a GpuDevice,
        points: &'a [G1Affine],
        scalars: Vec<Scalar>,
        got: Vec<G1Affine>,
    }
    impl kmsm::LetIn for Nested<'_> {
        fn waiting(&mut self) -> bool {
            true
        }
        fn run(&mut self) {
            let on_dev = DeviceScalars::upload(self.dev, cuda::as_limbs(&self.scalars)).unwrap();
            let host = kmsm::msm_g1(self.dev, Bases::Host(self.points), &self.scalars).unwrap();
            let dev = kmsm::msm_g1_device_scalars(self.dev, Bases::Host(self.points), &on_dev);
            self.got
                .extend([host.to_affine(), dev.unwrap().to_affine()]);
        }
    }
    let s = random_scalars(points.len(), rng);
    let mut nested = Nested {
        dev,
        points,
        scalars: random_scalars(points.len() - 11, rng),
        got: Vec::new(),
    };
    let on_dev = DeviceScalars::upload(dev, cuda::as_limbs(&s)).unwrap();
    // Plain bases: a set per window, so three stages and two pause points between them.
    let outer =
        kmsm::msm_g1_device_scalars_letting_in(dev, Bases::Host(points), &on_dev, &mut nested)
            .unwrap();
    assert_eq!(
        outer.to_affine(),
        G1Projective::cpu(points, &s).aff(),
        "outer"
    );
    assert_eq!(nested.got.len(), 4, "two pauses, two MSMs each");
    let inner = G1Projective::cpu(&points[..nested.scalars.len()], &nested.scalars).aff();
    assert!(nested.got.iter().all(|g| *g == inner), "the MSMs let in");
    println!("stages, let in at both pause points: outer and 4 inner MSMs identical to the CPU");
}

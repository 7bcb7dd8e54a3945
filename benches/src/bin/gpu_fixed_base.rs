//! GPU fixed-base batch scalar multiplication (parameter generation's query points) beside
//! blstrs on every CPU core, in one run on one machine.
//!
//!     gpu_fixed_base [--g1 20,24] [--g2 20,22] [--reps N] [--cpu-log L]
//!
//! For each size: `fixed_base::g{1,2}_times` of 2^log random scalars against one random base,
//! the median of N runs after a warm-up (host vectors in, affine points out: the uploads,
//! downloads and the per-call window table are in the figure), 1000 of its points checked
//! against blstrs. The CPU figure is `(base * k).to_affine()` over rayon on 2^L scalars
//! (default 16), as points per second; the ratio is GPU / CPU throughput. Add larger G1 sizes
//! with `--g1 20,24,27` (2^27 G1 needs ~17 GB of host memory).

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_benches::parse_logs;
use cuzk_core::backend::cuda::kernels::fixed_base;
use cuzk_core::backend::cuda::kernels::GpuDevice;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rayon::prelude::*;

/// Random full-width scalars, fast: each rayon piece walks x = x * k + a from its own seed
/// (the kernel's work does not depend on how the scalars were made).
fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(t, chunk)| {
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
    out
}

fn median_s<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    f(); // warm-up: module load, pinned staging, allocator pool
    let mut v: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// What the benchmark needs of a group.
trait BenchGroup {
    type Affine: Copy + Default + PartialEq + Send + Sync;
    const NAME: &'static str;
    fn gpu(dev: &GpuDevice, base: &Self::Affine, s: &[Scalar], out: &mut [Self::Affine]);
    fn cpu(base: &Self::Affine, k: &Scalar) -> Self::Affine;
    fn random_base(seed: u64) -> Self::Affine;
}

struct G1;
struct G2;

impl BenchGroup for G1 {
    type Affine = G1Affine;
    const NAME: &'static str = "G1";
    fn gpu(dev: &GpuDevice, base: &G1Affine, s: &[Scalar], out: &mut [G1Affine]) {
        fixed_base::g1_times(dev, base, s, out).expect("g1_times");
    }
    fn cpu(base: &G1Affine, k: &Scalar) -> G1Affine {
        (base * k).to_affine()
    }
    fn random_base(seed: u64) -> G1Affine {
        G1Projective::random(rand::rngs::StdRng::seed_from_u64(seed)).to_affine()
    }
}

impl BenchGroup for G2 {
    type Affine = G2Affine;
    const NAME: &'static str = "G2";
    fn gpu(dev: &GpuDevice, base: &G2Affine, s: &[Scalar], out: &mut [G2Affine]) {
        fixed_base::g2_times(dev, base, s, out).expect("g2_times");
    }
    fn cpu(base: &G2Affine, k: &Scalar) -> G2Affine {
        (base * k).to_affine()
    }
    fn random_base(seed: u64) -> G2Affine {
        G2Projective::random(rand::rngs::StdRng::seed_from_u64(seed)).to_affine()
    }
}

struct Row {
    what: String,
    gpu_s: f64,
    gpu_rate: f64,
    cpu_rate: f64,
}

/// Points per second of blstrs on every core, over 2^cpu_log scalars.
fn cpu_rate<G: BenchGroup>(base: &G::Affine, cpu_log: u32, seed: u64) -> f64 {
    let scalars = random_scalars(1 << cpu_log, seed);
    let t = Instant::now();
    let out: Vec<G::Affine> = scalars.par_iter().map(|k| G::cpu(base, k)).collect();
    let s = t.elapsed().as_secs_f64();
    std::hint::black_box(out);
    scalars.len() as f64 / s
}

fn bench_group<G: BenchGroup>(
    dev: &GpuDevice,
    logs: &[u32],
    reps: usize,
    cpu_log: u32,
) -> Vec<Row> {
    if logs.is_empty() {
        return Vec::new();
    }
    let base = G::random_base(7);
    let cpu = cpu_rate::<G>(&base, cpu_log, 11);
    println!(
        "{} CPU (blstrs, {} threads, 2^{cpu_log}): {:.0} points/s",
        G::NAME,
        rayon::current_num_threads(),
        cpu
    );
    let mut rows = Vec::new();
    for &log in logs {
        let n = 1usize << log;
        let scalars = random_scalars(n, log as u64);
        let mut out = vec![G::Affine::default(); n];
        let gpu_s = median_s(reps, || G::gpu(dev, &base, &scalars, &mut out));
        // Spot check, spread over the whole vector (every chunk).
        let step = (n / 1000).max(1);
        (0..n)
            .step_by(step)
            .collect::<Vec<_>>()
            .par_iter()
            .for_each(|&i| {
                assert!(
                    out[i] == G::cpu(&base, &scalars[i]),
                    "{} 2^{log}: point {i} differs from blstrs",
                    G::NAME
                );
            });
        let row = Row {
            what: format!("{} 2^{log}", G::NAME),
            gpu_s,
            gpu_rate: n as f64 / gpu_s,
            cpu_rate: cpu,
        };
        println!(
            "{}: GPU {:.3} s ({:.2}M points/s), {:.1}x the CPU",
            row.what,
            row.gpu_s,
            row.gpu_rate / 1e6,
            row.gpu_rate / row.cpu_rate
        );
        rows.push(row);
    }
    rows
}

fn main() {
    let mut g1_logs = vec![20, 24];
    let mut g2_logs = vec![20, 22];
    let mut reps = 3;
    let mut cpu_log = 16;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--g1" => g1_logs = parse_logs(&v),
            "--g2" => g2_logs = parse_logs(&v),
            "--reps" => reps = v.parse().expect("--reps N"),
            "--cpu-log" => cpu_log = v.parse().expect("--cpu-log L"),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    let Some(dev) = cuzk_core::backend::cuda::kernels::device_or_skip(0) else {
        return;
    };
    println!("device: {}", dev.name());
    let mut rows = bench_group::<G1>(&dev, &g1_logs, reps, cpu_log);
    rows.extend(bench_group::<G2>(&dev, &g2_logs, reps, cpu_log));

    println!("\n| fixed-base | GPU s | GPU points/s | CPU points/s | GPU / CPU |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.3} | {:.2}M | {:.3}M | {:.1}x |",
            r.what,
            r.gpu_s,
            r.gpu_rate / 1e6,
            r.cpu_rate / 1e6,
            r.gpu_rate / r.cpu_rate
        );
    }
}

//! GPU MSM timings beside the CPU backend's, in one run on one machine.
//!
//!     gpu_msm [--g1 20,22,24,26] [--g2 20,22] [--reps N] [--cpu-max-log L]
//!
//! For each size: the MSM with the bases resident on the device (uploaded once, as the
//! daemon keeps SRS vectors), the same with the bases uploaded inside the call, and the
//! CPU backend (blst's Pippenger on all cores) up to 2^L points (default 22). GPU figures
//! are medians of N runs after a warm-up; the CPU runs once. Each GPU result is checked
//! against the CPU's where the CPU ran.
//!
//! Points: 2^22 distinct points (a random start plus multiples of a random step per thread),
//! repeated to fill larger sizes; random full-width scalars. Pippenger's work does not
//! depend on the points being distinct, and 2^22 points (400 MB in G1) are far beyond the
//! GPU's cache, so the repetition does not flatter the timings.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_core::backend::cpu;
use cuzk_core::backend::cuda::kernels::msm::{self, Bases, DeviceBases, G1, G2};
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
    resident: f64,
    upload: f64,
    cpu: Option<f64>,
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
    let mut rows = Vec::new();

    if let Some(&max) = g1_logs.iter().max() {
        let t = Instant::now();
        let distinct = points::<G1Projective, G1Affine>(
            1 << max.min(DISTINCT_LOG),
            |m| G1Projective::hash_to_curve(m, b"cuzk-bench", b""),
            |p| G1Affine::from(p),
        );
        println!("G1 points: {:.1}s", t.elapsed().as_secs_f64());
        for &log in &g1_logs {
            let n = 1usize << log;
            let pts = tiled(&distinct, n);
            let sc = random_scalars(n, log as u64);
            let resident = DeviceBases::<G1>::upload(&dev, &pts).expect("upload");
            let mut got = None;
            let r = median_ms(reps, || {
                got = Some(msm::msm_g1(&dev, Bases::Device(&resident), &sc).expect("msm"))
            });
            drop(resident);
            let u = median_ms(reps.min(3), || {
                msm::msm_g1(&dev, Bases::Host(&pts), &sc).expect("msm");
            });
            let cpu_ms = (log <= cpu_max).then(|| {
                let t = Instant::now();
                let want = cpu::msm_g1(&pts, &sc).expect("cpu msm");
                let ms = t.elapsed().as_secs_f64() * 1e3;
                assert_eq!(
                    G1Affine::from(got.unwrap()),
                    G1Affine::from(want),
                    "G1 2^{log}"
                );
                ms
            });
            let row = Row {
                what: format!("G1 2^{log}"),
                resident: r,
                upload: u,
                cpu: cpu_ms,
            };
            print_row(&row);
            rows.push(row);
        }
    }

    if let Some(&max) = g2_logs.iter().max() {
        let t = Instant::now();
        let distinct = points::<G2Projective, G2Affine>(
            1 << max.min(DISTINCT_LOG),
            |m| G2Projective::hash_to_curve(m, b"cuzk-bench", b""),
            |p| G2Affine::from(p),
        );
        println!("G2 points: {:.1}s", t.elapsed().as_secs_f64());
        for &log in &g2_logs {
            let n = 1usize << log;
            let pts = tiled(&distinct, n);
            let sc = random_scalars(n, 100 + log as u64);
            let resident = DeviceBases::<G2>::upload(&dev, &pts).expect("upload");
            let mut got = None;
            let r = median_ms(reps, || {
                got = Some(msm::msm_g2(&dev, Bases::Device(&resident), &sc).expect("msm"))
            });
            drop(resident);
            let u = median_ms(reps.min(3), || {
                msm::msm_g2(&dev, Bases::Host(&pts), &sc).expect("msm");
            });
            let cpu_ms = (log <= cpu_max).then(|| {
                let t = Instant::now();
                let want = cpu::msm_g2(&pts, &sc).expect("cpu msm");
                let ms = t.elapsed().as_secs_f64() * 1e3;
                assert_eq!(
                    G2Affine::from(got.unwrap()),
                    G2Affine::from(want),
                    "G2 2^{log}"
                );
                ms
            });
            let row = Row {
                what: format!("G2 2^{log}"),
                resident: r,
                upload: u,
                cpu: cpu_ms,
            };
            print_row(&row);
            rows.push(row);
        }
    }

    println!("\n| MSM | GPU resident ms | GPU with upload ms | CPU ms | CPU / GPU resident |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        let (cpu, ratio) = match r.cpu {
            Some(c) => (format!("{c:.0}"), format!("{:.1}x", c / r.resident)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {} | {:.1} | {:.1} | {cpu} | {ratio} |",
            r.what, r.resident, r.upload
        );
    }
}

fn print_row(r: &Row) {
    let cpu = r.cpu.map_or("-".into(), |c| format!("{c:.0} ms"));
    println!(
        "{}: GPU resident {:.1} ms, with upload {:.1} ms, CPU {cpu}",
        r.what, r.resident, r.upload
    );
}

//! GPU NTT and H-polynomial timings beside the CPU backend's, in one run on one machine.
//!
//!     gpu_ntt [log sizes, default 20,22,24,26] [--reps N]
//!
//! For each size: forward NTT with the data resident on the device, the same with the
//! transfer from and back to pinned host memory, the CPU backend's NTT; then the whole H
//! polynomial resident, from/to pinned memory, through the Backend API (Vec in, Vec out),
//! and on the CPU. Medians of N runs after a warm-up; CPU runs fewer times at large sizes.

use std::time::Instant;

use blstrs::Scalar;
use cuzk_benches::{median_ms as median, time_ms as time};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::cuda::kernels::ntt::{self, Transform};
use cuzk_core::backend::cuda::kernels::{DeviceScalars, GpuDevice, PinnedScalars};
use cuzk_core::backend::cuda::{as_limbs, CudaBackend};
use cuzk_core::backend::ntt::Domain;
use cuzk_core::backend::Backend;
use ff::Field;

/// Distinct full-width field elements, fast: x_{i+1} = x_i * k + s. (Not zeros: times on
/// zeros can hide unwritten outputs.)
fn pseudo_random(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rand::rngs::StdRng::from_seed_u64(seed);
    let k = Scalar::random(&mut rng);
    let s = Scalar::random(&mut rng);
    let mut x = Scalar::random(&mut rng);
    (0..n)
        .map(|_| {
            x = x * k + s;
            x
        })
        .collect()
}

trait SeedU64 {
    fn from_seed_u64(seed: u64) -> Self;
}
impl SeedU64 for rand::rngs::StdRng {
    fn from_seed_u64(seed: u64) -> Self {
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed)
    }
}

fn fill_pinned(dev: &GpuDevice, v: &[Scalar]) -> PinnedScalars {
    let mut p = PinnedScalars::alloc(dev, v.len()).expect("pinned alloc");
    p.as_mut_slice().copy_from_slice(as_limbs(v));
    p
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut reps = 10usize;
    let mut sizes = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--reps" {
            reps = it.next().and_then(|r| r.parse().ok()).expect("--reps N");
        } else {
            sizes.extend(a.split(',').map(|s| s.parse::<u32>().expect("log size")));
        }
    }
    if sizes.is_empty() {
        sizes = vec![20, 22, 24, 26];
    }

    // CUZK_BENCH_NO_CPU=1 skips the CPU figures (for comparing GPU variants quickly).
    let with_cpu = std::env::var("CUZK_BENCH_NO_CPU").is_err();
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    let dev = gpu.device();
    println!("{} | rayon threads {}", gpu.name(), rayon_threads());
    let cpu = CpuBackend::new();
    let mut table = Vec::new();

    for &log_n in &sizes {
        let n = 1usize << log_n;
        // CUZK_BENCH_CPU_H_MAX_LOG=k: the CPU H polynomial (about a minute at 2^26) only up
        // to 2^k; the CPU NTT is still measured.
        let cpu_h_reps = match std::env::var("CUZK_BENCH_CPU_H_MAX_LOG") {
            Ok(k) if log_n > k.parse::<u32>().expect("CUZK_BENCH_CPU_H_MAX_LOG") => 0,
            _ => usize::MAX,
        };
        let cpu_reps = match log_n {
            _ if !with_cpu => 0,
            0..=22 => 5,
            23..=24 => 2,
            _ => 1,
        };
        ntt::prepare(dev, log_n).expect("prepare");
        let x = pseudo_random(n, log_n as u64);

        // Forward NTT, resident.
        let mut d = DeviceScalars::upload(dev, as_limbs(&x)).expect("upload");
        for _ in 0..2 {
            ntt::transform_device(dev, &mut d, Transform::Ntt).unwrap();
        }
        dev.synchronize().unwrap();
        let ntt_res = time(reps, || {
            ntt::transform_device(dev, &mut d, Transform::Ntt).unwrap();
            dev.synchronize().unwrap();
        });
        drop(d);

        // Forward NTT from and back to pinned memory, the upload overlapped with the first
        // pass (ntt::transform_pinned).
        let pin_in = fill_pinned(dev, &x);
        let mut pin_out = PinnedScalars::alloc(dev, n).unwrap();
        let mut run_pinned = || {
            ntt::transform_pinned(dev, &pin_in, &mut pin_out, Transform::Ntt).unwrap();
        };
        run_pinned();
        let ntt_pin = time(reps, run_pinned);
        drop((pin_in, pin_out));

        let domain = Domain::new(log_n).unwrap();
        let ntt_cpu = median(
            (0..cpu_reps)
                .map(|_| {
                    let mut v = x.clone();
                    let t = Instant::now();
                    domain.ntt(&mut v);
                    t.elapsed()
                })
                .collect(),
        );
        drop(x);

        // H polynomial.
        let a = pseudo_random(n, 1000 + log_n as u64);
        let b = pseudo_random(n, 2000 + log_n as u64);
        let c = pseudo_random(n, 3000 + log_n as u64);
        let (pa, pb, pc) = (
            fill_pinned(dev, &a),
            fill_pinned(dev, &b),
            fill_pinned(dev, &c),
        );
        let mut da = DeviceScalars::alloc(dev, n).unwrap();
        let mut db = DeviceScalars::alloc(dev, n).unwrap();
        let mut dc = DeviceScalars::alloc(dev, n).unwrap();
        let mut h_res = Vec::new();
        for rep in 0..reps + 1 {
            da.copy_from_pinned(dev, &pa).unwrap();
            db.copy_from_pinned(dev, &pb).unwrap();
            dc.copy_from_pinned(dev, &pc).unwrap();
            dev.synchronize().unwrap();
            let t = Instant::now();
            let h = ntt::h_polynomial_resident(dev, &mut da, &mut db, &mut dc).unwrap();
            dev.synchronize().unwrap();
            if rep > 0 {
                h_res.push(t.elapsed());
            }
            drop(h);
        }
        let h_res = median(h_res);
        let mut p_h = PinnedScalars::alloc(dev, n).unwrap();
        let h_pin = time(reps, || {
            da.copy_from_pinned(dev, &pa).unwrap();
            db.copy_from_pinned(dev, &pb).unwrap();
            dc.copy_from_pinned(dev, &pc).unwrap();
            let h = ntt::h_polynomial_resident(dev, &mut da, &mut db, &mut dc).unwrap();
            h.copy_to_pinned(dev, &mut p_h).unwrap();
        });
        drop((da, db, dc, pa, pb, pc, p_h));
        // Through the Backend trait, Vec in and out as the prover calls it; the input
        // clones are made (and touched) outside the timed region, as synthesis would.
        let timed_call = |f: &dyn Fn(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>) -> usize,
                          reps: usize| {
            median(
                (0..reps)
                    .map(|_| {
                        let (a, b, c) = (a.clone(), b.clone(), c.clone());
                        let t = Instant::now();
                        assert_eq!(f(a, b, c), n - 1);
                        t.elapsed()
                    })
                    .collect(),
            )
        };
        let h_vec = timed_call(
            &|a, b, c| gpu.h_polynomial(a, b, c).unwrap().len(),
            reps.min(5),
        );
        let h_cpu = timed_call(
            &|a, b, c| cpu.h_polynomial(a, b, c).unwrap().len(),
            cpu_reps.min(cpu_h_reps),
        );

        let line = format!(
            "2^{log_n:<2} ntt: gpu {ntt_res:8.2} ms resident, {ntt_pin:8.2} ms pinned<->dev | cpu {ntt_cpu:9.1} ms | cpu/gpu {:6.1}x resident {:5.1}x pinned\n\
             2^{log_n:<2} h:   gpu {h_res:8.2} ms resident, {h_pin:8.2} ms pinned<->dev, {h_vec:8.1} ms Vec->Vec | cpu {h_cpu:9.1} ms | cpu/gpu {:6.1}x resident {:5.1}x Vec",
            ntt_cpu / ntt_res,
            ntt_cpu / ntt_pin,
            h_cpu / h_res,
            h_cpu / h_vec,
        );
        println!("{line}");
        table.push(line);
    }
    println!("\n== summary ({}) ==", gpu.name());
    for l in table {
        println!("{l}");
    }
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

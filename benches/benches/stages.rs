//! Criterion benchmarks of the prover's stages at 2^12..2^18: synthesis of the synthetic
//! circuit, NTT, G1 MSM and G2 MSM, on the CPU and, when a CUDA device opens, on the GPU in
//! the same run, so that criterion's report puts the two side by side.
//!
//!     cargo bench -p cuzk-benches --bench stages                 # everything
//!     cargo bench -p cuzk-benches --bench stages -- 'log2=12$'   # one size (a regex)
//!     cargo bench -p cuzk-benches --bench stages -- msm_g2/cuda  # one stage on one backend
//!
//! Ids read `<stage>/<backend>/log2=<k>`. The GPU figures are what the daemon pays: the NTT
//! includes the copies from and back to host memory, the MSMs keep their bases resident on
//! the device (uploaded on the first call, as the daemon keeps SRS vectors) and upload only
//! the scalars. Samples are few and short so that the whole run takes minutes on two cores;
//! at these sizes one iteration is milliseconds to a second, and ten samples give a stable
//! median.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Duration;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use cuzk_core::backend::cuda::{as_limbs, kernels, CudaBackend};
use cuzk_core::backend::ntt::Domain;
use cuzk_core::backend::{cpu, Backend, G1Bases, G2Bases, Query};
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::synth::synthesize_partition;
use ff::Field;
use group::{Curve, Group};
use rand::{rngs::StdRng, SeedableRng};

const LOG_SIZES: [u32; 4] = [12, 14, 16, 18];
const MAX_LOG: u32 = 18;

fn id(backend: &str, log: u32) -> BenchmarkId {
    BenchmarkId::new(backend, format!("log2={log}"))
}

fn configure<'a>(c: &'a mut Criterion, stage: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(stage);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group
}

/// Full-width field elements from a linear recurrence: cheap, distinct, not structured in a
/// way Pippenger could exploit (zeros or small values would flatter it).
fn scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (k, s, mut x) = (
        Scalar::random(&mut rng),
        Scalar::random(&mut rng),
        Scalar::random(&mut rng),
    );
    (0..n)
        .map(|_| {
            x = x * k + s;
            x
        })
        .collect()
}

/// `n` distinct points start + i * step: one addition each instead of a scalar
/// multiplication, then one batched inversion for all of them. An MSM's cost does not depend
/// on which points it sums, only that they are not degenerate (the identity, or repeats that
/// turn bucket additions into doublings).
fn points<P>(n: usize, seed: u64) -> Vec<P::AffineRepr>
where
    P: Curve + Group,
    P::AffineRepr: Default + Copy,
{
    let mut rng = StdRng::seed_from_u64(seed);
    let step = P::generator() * P::Scalar::random(&mut rng);
    let mut at = P::generator() * P::Scalar::random(&mut rng);
    let projective: Vec<P> = (0..n)
        .map(|_| {
            at += step;
            at
        })
        .collect();
    let mut affine = vec![P::AffineRepr::default(); n];
    P::batch_normalize(&projective, &mut affine);
    affine
}

/// The GPU, when there is one and this build carries kernels; why not, once, otherwise.
fn gpu() -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(backend) => {
            eprintln!("GPU: {}", backend.name());
            Some(backend)
        }
        Err(e) => {
            eprintln!("GPU benchmarks skipped: {e}");
            None
        }
    }
}

fn synthesis(c: &mut Criterion) {
    let mut group = configure(c, "synthesis");
    for log in LOG_SIZES {
        group.throughput(Throughput::Elements(1 << log));
        group.bench_function(id("cpu", log), |b| {
            let mut seed = 0;
            b.iter(|| {
                seed += 1;
                synthesize_partition(SyntheticCircuit::new(log, seed)).expect("synthesizes")
            })
        });
    }
    group.finish();
}

fn ntt(c: &mut Criterion, gpu: Option<&CudaBackend>) {
    let mut group = configure(c, "ntt");
    for log in LOG_SIZES {
        let input = scalars(1 << log, log.into());
        group.throughput(Throughput::Elements(1 << log));
        let domain = Domain::new(log).expect("within the two-adicity");
        let mut values = input.clone();
        group.bench_function(id("cpu", log), |b| {
            b.iter(|| domain.ntt(black_box(&mut values)))
        });
        if let Some(gpu) = gpu {
            let dev = gpu.device();
            kernels::ntt::prepare(dev, log).expect("NTT tables on the device");
            let mut limbs = as_limbs(&input).to_vec();
            group.bench_function(id("cuda", log), |b| {
                b.iter(|| kernels::ntt::ntt(dev, black_box(&mut limbs)).expect("GPU NTT"))
            });
        }
    }
    group.finish();
}

fn msm_g1(c: &mut Criterion, gpu: Option<&CudaBackend>) {
    // Made on first use, so that a filter that leaves no G1 MSM in costs nothing.
    let bases: OnceLock<Vec<G1Affine>> = OnceLock::new();
    let bases = || {
        bases
            .get_or_init(|| points::<G1Projective>(1 << MAX_LOG, 1))
            .as_slice()
    };
    let mut group = configure(c, "msm_g1");
    for log in LOG_SIZES {
        let n = 1 << log;
        let s = scalars(n, 100 + u64::from(log));
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(id("cpu", log), |b| {
            let points = &bases()[..n];
            b.iter(|| cpu::msm_g1(points, black_box(&s)).expect("CPU MSM"))
        });
        if let Some(gpu) = gpu {
            let srs_id = format!("bench-2^{log}");
            let mut checked = false;
            group.bench_function(id("cuda", log), |b| {
                let resident = G1Bases::new(&srs_id, Query::H, &bases()[..n]);
                // A benchmark of a wrong answer is worthless; one check per size is cheap.
                if !checked {
                    let want = cpu::msm_g1(resident.points, &s).expect("CPU MSM");
                    let got: G1Projective = gpu.msm_g1(resident, &s).expect("GPU MSM");
                    assert_eq!(got, want, "G1 MSM of 2^{log}: GPU and CPU differ");
                    checked = true;
                }
                b.iter(|| gpu.msm_g1(resident, black_box(&s)).expect("GPU MSM"))
            });
            gpu.evict(&srs_id);
        }
    }
    group.finish();
}

fn msm_g2(c: &mut Criterion, gpu: Option<&CudaBackend>) {
    let bases: OnceLock<Vec<G2Affine>> = OnceLock::new();
    let bases = || {
        bases
            .get_or_init(|| points::<G2Projective>(1 << MAX_LOG, 2))
            .as_slice()
    };
    let mut group = configure(c, "msm_g2");
    for log in LOG_SIZES {
        let n = 1 << log;
        let s = scalars(n, 200 + u64::from(log));
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(id("cpu", log), |b| {
            let points = &bases()[..n];
            b.iter(|| cpu::msm_g2(points, black_box(&s)).expect("CPU MSM"))
        });
        if let Some(gpu) = gpu {
            let srs_id = format!("bench-2^{log}");
            let mut checked = false;
            group.bench_function(id("cuda", log), |b| {
                let resident = G2Bases::new(&srs_id, Query::BG2Aux, &bases()[..n]);
                if !checked {
                    let want = cpu::msm_g2(resident.points, &s).expect("CPU MSM");
                    let got: G2Projective = gpu.msm_g2(resident, &s).expect("GPU MSM");
                    assert_eq!(got, want, "G2 MSM of 2^{log}: GPU and CPU differ");
                    checked = true;
                }
                b.iter(|| gpu.msm_g2(resident, black_box(&s)).expect("GPU MSM"))
            });
            gpu.evict(&srs_id);
        }
    }
    group.finish();
}

fn stages(c: &mut Criterion) {
    let gpu = gpu();
    synthesis(c);
    ntt(c, gpu.as_ref());
    msm_g1(c, gpu.as_ref());
    msm_g2(c, gpu.as_ref());
}

criterion_group!(benches, stages);
criterion_main!(benches);

//! The CUDA NTT family and H polynomial against the CPU backend, bit for bit, on fresh
//! random inputs at every size 2^1..2^24 and 2^26 (CUZK_CUDA_TEST_LOGS="a-b,c" narrows it).
//! Without a GPU, driver or kernels: prints "SKIP: no CUDA device (...)" and passes (fails
//! where CUZK_REQUIRE_GPU=1, as on the GPU machine).

use blstrs::Scalar;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::cuda::{as_limbs, CudaBackend};
use cuzk_core::backend::ntt::Domain;
use cuzk_core::backend::Backend;
use cuzk_kernels::ntt::{self, Transform};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

fn backend() -> Option<CudaBackend> {
    CudaBackend::new_or_skip(0)
}

fn sizes() -> Vec<u32> {
    let spec = std::env::var("CUZK_CUDA_TEST_LOGS").unwrap_or_else(|_| "1-24,26".into());
    let mut out = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                out.extend(a.trim().parse::<u32>().unwrap()..=b.trim().parse().unwrap())
            }
            None => out.push(part.trim().parse().unwrap()),
        }
    }
    out
}

fn seed() -> u64 {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {s}");
    s
}

/// Random scalars, generated in parallel chunks (2^26 of them one by one take seconds).
fn random(n: usize, seed: u64) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 14;
    let mut v = vec![Scalar::ZERO; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, c)| {
        let mut rng =
            ChaCha8Rng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for x in c {
            *x = Scalar::random(&mut rng);
        }
    });
    v
}

fn first_difference(a: &[Scalar], b: &[Scalar]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.par_iter()
        .zip(b.par_iter())
        .position_first(|(x, y)| x != y)
}

#[test]
fn ntt_family_matches_cpu() {
    let Some(gpu) = backend() else { return };
    let dev = gpu.device();
    let seed = seed();
    for log_n in sizes() {
        let domain = Domain::new(log_n).unwrap();
        let x = random(1 << log_n, seed.wrapping_add(log_n as u64));
        let t0 = std::time::Instant::now();
        for t in [
            Transform::Ntt,
            Transform::Intt,
            Transform::CosetNtt,
            Transform::CosetIntt,
        ] {
            let mut want = x.clone();
            match t {
                Transform::Ntt => domain.ntt(&mut want),
                Transform::Intt => domain.intt(&mut want),
                Transform::CosetNtt => domain.coset_ntt(&mut want),
                Transform::CosetIntt => domain.coset_intt(&mut want),
            }
            let mut got = as_limbs(&x).to_vec();
            ntt::transform(dev, &mut got, t).unwrap();
            let got: Vec<Scalar> = got
                .iter()
                .map(|l| unsafe { std::mem::transmute(*l) })
                .collect();
            if let Some(i) = first_difference(&got, &want) {
                panic!("{t:?} of 2^{log_n} differs from the CPU at index {i}");
            }
            // The pinned path (upload overlapped with a sliced first pass).
            let mut src = ntt::PinnedScalars::alloc(dev, x.len()).unwrap();
            src.as_mut_slice().copy_from_slice(as_limbs(&x));
            let mut dst = ntt::PinnedScalars::alloc(dev, x.len()).unwrap();
            ntt::transform_pinned(dev, &src, &mut dst, t).unwrap();
            let got: Vec<Scalar> = dst
                .as_slice()
                .iter()
                .map(|l| unsafe { std::mem::transmute(*l) })
                .collect();
            if let Some(i) = first_difference(&got, &want) {
                panic!("pinned {t:?} of 2^{log_n} differs from the CPU at index {i}");
            }
        }
        println!(
            "2^{log_n}: ntt, intt, coset_ntt, coset_intt identical, device and pinned paths ({:.1?})",
            t0.elapsed()
        );
    }
}

#[test]
fn h_polynomial_matches_cpu() {
    let Some(gpu) = backend() else { return };
    let seed = seed();
    let cpu = CpuBackend::new();
    for log_n in sizes() {
        let n = 1usize << log_n;
        // A length that is not a power of two (zero padding) as well as the full domain.
        for len in [n, n - n / 3] {
            if len == 0 {
                continue;
            }
            let a = random(len, seed ^ 1 ^ (log_n as u64) << 8);
            let b = random(len, seed ^ 2 ^ (log_n as u64) << 8);
            let c = random(len, seed ^ 3 ^ (log_n as u64) << 8);
            let t0 = std::time::Instant::now();
            let got = gpu.h_polynomial(a.clone(), b.clone(), c.clone()).unwrap();
            let t_gpu = t0.elapsed();
            let want = cpu.h_polynomial(a, b, c).unwrap();
            if let Some(i) = first_difference(&got, &want) {
                panic!("h of {len} (domain 2^{log_n}) differs from the CPU at index {i}");
            }
            println!(
                "h of {len}: identical, {} coefficients (gpu {t_gpu:.1?})",
                got.len()
            );
        }
    }
}

#[test]
fn h_polynomial_edge_cases() {
    let Some(gpu) = backend() else { return };
    let cpu = CpuBackend::new();
    let cases: Vec<(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>)> = vec![
        (vec![], vec![], vec![]),
        (vec![Scalar::ONE], vec![Scalar::ONE], vec![Scalar::ONE]),
        (
            vec![Scalar::ZERO; 1 << 12],
            vec![Scalar::ZERO; 1 << 12],
            vec![Scalar::ZERO; 1 << 12],
        ),
        (
            vec![-Scalar::ONE; 3],
            vec![-Scalar::ONE; 3],
            vec![Scalar::ONE; 3],
        ),
        (random(5, 7), random(5, 8), random(5, 9)),
    ];
    for (a, b, c) in cases {
        let len = a.len();
        let got = gpu.h_polynomial(a.clone(), b.clone(), c.clone()).unwrap();
        let want = cpu.h_polynomial(a, b, c).unwrap();
        assert!(got == want, "h of {len} edge case differs");
    }
    assert!(gpu
        .h_polynomial(vec![Scalar::ONE; 2], vec![Scalar::ONE; 3], vec![])
        .is_err());
}

#[test]
fn status_reports_the_device() {
    let Some(gpu) = backend() else { return };
    let status = cuzk_core::backend::cuda::cuda_status();
    println!("{} -> {status:?}", gpu.name());
    assert!(!status.is_empty());
    assert!(status[0].total_mem > 0);
}

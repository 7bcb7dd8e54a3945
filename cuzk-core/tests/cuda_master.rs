//! The master test on the CUDA backend: with fixed r and s, a synthetic proof made with the
//! CUDA backend has the same bytes as the CPU backend's and as bellperson's `create_proof`.
//! Without a GPU, driver or kernels: prints "SKIP: no CUDA device (...)" and passes (fails
//! where CUZK_REQUIRE_GPU=1, as on the GPU machine).

use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::cuda::CudaBackend;
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::prove::{proof_bytes, prove_circuit};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn synthetic_proofs_on_cuda_match_cpu_and_bellperson() {
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    for log in [4u32, 10, 14] {
        let mut rng = ChaCha20Rng::seed_from_u64(log as u64);
        let params = groth16::generate_random_parameters::<Bls12, _, _>(
            SyntheticCircuit::new(log, 0),
            &mut rng,
        )
        .unwrap();
        for seed in [1u64, 0xdead_beef_cafe] {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ log as u64);
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let circuit = SyntheticCircuit::new(log, seed);
            // A distinct id per parameter set: the GPU keeps bases resident by id.
            let id = format!("master-2^{log}");
            let on_gpu = prove_circuit(&gpu, &params, &id, circuit.clone(), r, s).unwrap();
            let on_cpu = prove_circuit(&CpuBackend, &params, "t", circuit.clone(), r, s).unwrap();
            let theirs = groth16::create_proof(circuit, &params, r, s).unwrap();
            assert_eq!(
                proof_bytes(&on_gpu),
                proof_bytes(&on_cpu),
                "2^{log} seed {seed}"
            );
            assert_eq!(
                proof_bytes(&on_gpu),
                proof_bytes(&theirs),
                "2^{log} seed {seed}"
            );
        }
    }
}

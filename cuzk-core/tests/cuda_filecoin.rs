//! Real 2 KiB Filecoin proofs on the CUDA backend: every partition proven on the GPU (H
//! polynomial and all five MSMs) with fixed r and s has the same bytes as on the CPU
//! backend, with a, b, c from synthesis and with a, b, c evaluated on the device from the
//! recorded matrices; the stock verifier accepts the GPU's proof.
//!
//! Kinds from `CUZK_CUDA_FIL_KINDS` (default `window`; `winning,porep,snap` need their
//! parameter files, generated when missing — PoRep's takes an hour on a small machine).
//! Parameters from `$CUZK_TEST_PARAMS`, else `$CUZK_PARAM_CACHE`, else `~/.cache/cuzk/params`.
//! Without a GPU, driver or kernels: prints "SKIP: ..." and passes (fails where
//! CUZK_REQUIRE_GPU=1, as on the GPU machine).

use blstrs::Scalar;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::cuda::CudaBackend;
use cuzk_core::backend::Backend;
use cuzk_core::kinds::vectors;
use cuzk_core::kinds::{build_task, params, ProofTask};
use cuzk_core::prove::{assemble, proof_bytes, prove_on_device};
use cuzk_core::srs::SrsCache;
use cuzk_core::synth::{with_options, SynthesisOptions, SynthesisPath};
use cuzk_core::ProofKind;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

mod common;
use common::{param_dir, SIZE};

fn kinds() -> Vec<ProofKind> {
    let list = std::env::var("CUZK_CUDA_FIL_KINDS").unwrap_or_else(|_| "window".into());
    list.split(',')
        .map(|k| match k.trim() {
            "porep" => ProofKind::PorepSealCommit,
            "winning" => ProofKind::WinningPost,
            "window" => ProofKind::WindowPostPartition,
            "snap" => ProofKind::SnapDealsUpdate,
            other => panic!("CUZK_CUDA_FIL_KINDS: unknown kind {other:?}"),
        })
        .collect()
}

/// Every partition of `task` on `backend` with the given r, s per partition; with a, b, c
/// left to the device step when `defer` (the shape's matrices recorded by an earlier run).
fn prove_all(
    task: &dyn ProofTask,
    srs: &SrsCache,
    backend: &dyn Backend,
    rs: &[(Scalar, Scalar)],
    defer: bool,
) -> Vec<u8> {
    let entry = task.params(srs).unwrap();
    let mut out = Vec::new();
    for (i, &(r, s)) in rs.iter().enumerate() {
        let options = SynthesisOptions {
            path: Some(SynthesisPath::Matrices),
            defer_abc: defer,
        };
        let synth = with_options(options, || task.synthesize(i)).unwrap();
        assert_eq!(synth.deferred.is_some(), defer, "partition {i}: deferred");
        let (msm, _) = prove_on_device(backend, &entry.params, &entry.id, synth).unwrap();
        out.extend(proof_bytes(
            &assemble(&entry.params.vk, &msm, r, s).unwrap(),
        ));
    }
    out
}

#[test]
fn filecoin_2k_proofs_on_cuda_match_cpu_and_pass_the_stock_verifiers() {
    let Some(gpu) = CudaBackend::new_or_skip(0) else {
        return;
    };
    let kinds = kinds();
    let dir = param_dir();
    params::generate(SIZE, &kinds, &dir, &mut |p| {
        eprintln!("params: {} {:?} {}", p.srs_id, p.state, p.path.display())
    })
    .expect("2 KiB parameters");
    let srs = SrsCache::new(&dir);
    let vectors_dir = tempfile::tempdir().unwrap();
    for kind in kinds {
        let manifest = vectors::generate(kind, SIZE, vectors_dir.path()).expect("vectors");
        let task = build_task(&manifest.request(vectors_dir.path()).unwrap()).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let rs: Vec<(Scalar, Scalar)> = (0..task.partitions())
            .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
            .collect();
        let on_gpu = prove_all(task.as_ref(), &srs, &gpu, &rs, false);
        let on_gpu_abc = prove_all(task.as_ref(), &srs, &gpu, &rs, true);
        let on_cpu = prove_all(task.as_ref(), &srs, &CpuBackend, &rs, false);
        assert_eq!(on_gpu, on_cpu, "{kind}: GPU and CPU bytes differ");
        assert_eq!(
            on_gpu_abc, on_cpu,
            "{kind}: a, b, c on the device: bytes differ"
        );
        task.verify_job(&on_gpu)
            .unwrap_or_else(|e| panic!("{kind}: stock verifier rejects the GPU proof: {e}"));
        println!(
            "{kind}: {} partition(s) on the GPU == CPU, stock verifier accepts",
            task.partitions()
        );
    }
}

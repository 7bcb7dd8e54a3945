//! Parameter generation for the PoRep-shaped kind: cuzk's generator on the CPU gives
//! bellperson's bytes for the same toxic waste, the GPU gives the CPU's bytes, and proofs
//! under a generated set (directly synthesized, as jobs are) verify.

use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::kinds::porep_shaped::{PorepShape, PorepShaped};
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::paramgen::{
    generate, record_rows, CpuFixedBase, FixedBase, GpuFixedBase, RecordedRows, RowSource, Toxic,
};
use cuzk_core::prove::{assemble, prove_on_device};
use cuzk_core::srs::read_params;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn generated(src: &dyn RowSource, toxic: &Toxic, fb: &dyn FixedBase) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("set.params");
    generate(src, toxic, fb, &path).unwrap();
    std::fs::read(&path).unwrap()
}

fn assert_same(ours: &[u8], theirs: &[u8], what: &str) {
    if let Some(i) = ours.iter().zip(theirs).position(|(a, b)| a != b) {
        panic!("{what}: first difference at byte {i} of {}", ours.len());
    }
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
}

#[test]
fn porep_shape_rows_generate_bellpersons_parameters_and_proofs_verify() {
    for log in [10u32, 12] {
        let toxic = Toxic::from_seed(log as u64);
        let ours = generated(&PorepShape::new(log), &toxic, &CpuFixedBase::new());
        let theirs = groth16::generate_parameters::<Bls12, _>(
            PorepShaped::new(log, 0),
            toxic.g1.into(),
            toxic.g2.into(),
            toxic.alpha,
            toxic.beta,
            toxic.gamma,
            toxic.delta,
            toxic.tau,
        )
        .unwrap();
        let mut theirs_bytes = Vec::new();
        theirs.write(&mut theirs_bytes).unwrap();
        assert_same(&ours, &theirs_bytes, &format!("porep-shaped 2^{log}"));

        // A partition proven the job's way (direct synthesis, our prover) verifies under it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.params");
        std::fs::write(&path, &ours).unwrap();
        let params = read_params(&path).unwrap();
        let pvk = groth16::prepare_verifying_key(&params.vk);
        let mut rng = ChaCha20Rng::seed_from_u64(log as u64);
        let circuit = PorepShaped::new(log, 41);
        let (msm, _) =
            prove_on_device(&CpuBackend, &params, "t", circuit.synthesize_direct()).unwrap();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let proof = assemble(&params.vk, &msm, r, s).unwrap();
        assert!(groth16::verify_proof(&pvk, &proof, &circuit.public_inputs()).unwrap());
    }
}

#[test]
fn gpu_generated_parameters_equal_cpu_generated() {
    let Some(_) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    let gpu = GpuFixedBase::open(0).unwrap();
    for log in [10u32, 13] {
        let toxic = Toxic::from_seed(100 + log as u64);
        let src = PorepShape::new(log);
        assert_same(
            &generated(&src, &toxic, &gpu),
            &generated(&src, &toxic, &CpuFixedBase::new()),
            &format!("porep-shaped 2^{log}"),
        );
    }
    let toxic = Toxic::from_seed(7);
    let m = record_rows("synthetic-2^11", SyntheticCircuit::new(11, 0)).unwrap();
    let rows = RecordedRows::new(&m).unwrap();
    assert_same(
        &generated(&rows, &toxic, &gpu),
        &generated(&rows, &toxic, &CpuFixedBase::new()),
        "uniform synthetic 2^11",
    );
}

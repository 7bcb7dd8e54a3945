//! Parameters made the way 32 GiB sets are made (`params generate` above 512 MiB): the real
//! circuit recorded from a virtual sector, cuzk's own generator run over the recording, the
//! `.params` and `.vk` written under the proof crates' file names. Checked at 2 KiB, where it
//! is cheap: a proof made with the set passes the stock verifier, which reads only the `.vk`
//! this path wrote. Its own binary: the proof crates read their parameter directory once per
//! process, and this one is fresh.

use bellperson::groth16;
use blstrs::Scalar;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::kinds::params::{self, Generator};
use cuzk_core::kinds::{build_task, virtual_sector};
use cuzk_core::matrices::MatrixCache;
use cuzk_core::prove::{assemble, proof_bytes, prove_on_device};
use cuzk_core::srs::SrsCache;
use cuzk_core::ProofKind;
use ff::Field;

const SIZE: u64 = 2048;

#[test]
fn recorded_sets_prove_and_pass_the_stock_verifiers() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = [ProofKind::WinningPost, ProofKind::WindowPostPartition];
    let files =
        params::generate_with(SIZE, &kinds, dir.path(), Generator::Recorded, &mut |_| {}).unwrap();
    assert_eq!(files.len(), kinds.len());
    let srs = SrsCache::new(dir.path().to_path_buf());
    let mut rng = rand::thread_rng();
    for kind in kinds {
        let set = params::canonical_set(kind, SIZE).unwrap();
        assert!(set.params_file(dir.path()).exists(), "{kind}");
        assert!(set.vk_file(dir.path()).exists(), "{kind}");
        // The recording is kept beside the set, for a daemon to read instead of recording.
        assert!(
            MatrixCache::file(dir.path(), &set.identifier).exists(),
            "{kind}"
        );

        let task = build_task(&virtual_sector::request(kind, SIZE).unwrap()).unwrap();
        let entry = task.params(&srs).unwrap();
        let synth = task.synthesize(0).unwrap();
        let inputs = task.public_inputs(0, synth.public_inputs()).unwrap();
        let (msm, _) = prove_on_device(&CpuBackend, &entry.params, &entry.id, synth).unwrap();
        let proof = assemble(
            &entry.params.vk,
            &msm,
            Scalar::random(&mut rng),
            Scalar::random(&mut rng),
        )
        .unwrap();
        assert!(
            groth16::verify_proof(&entry.pvk, &proof, &inputs).unwrap(),
            "{kind}"
        );
        task.verify_job(&proof_bytes(&proof))
            .unwrap_or_else(|e| panic!("{kind}: stock verifier: {e}"));

        // And a proof for other inputs does not pass: the verifier is really checking.
        let other = build_task(&virtual_sector::request(kind, SIZE).unwrap()).unwrap();
        assert!(other.verify_job(&proof_bytes(&proof)).is_err(), "{kind}");
    }
}

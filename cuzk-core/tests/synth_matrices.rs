//! The matrices path (witness-only synthesis + a, b, c from constraint matrices recorded once
//! per circuit shape) against today's full synthesis, on real 2 KiB circuits of every kind:
//! identical a, b, c, assignments and densities, for the recording run and for the witness
//! runs after it; byte-identical proofs for fixed r and s; the matrices through a file and
//! back; and a damaged or foreign file refused.
//!
//! The synthesis path is process-wide, so the tests that switch it hold `PATH_LOCK`. Only
//! the proof test needs Groth16 parameters (the cache filecoin.rs fills; generated when
//! missing).

use std::sync::{Mutex, MutexGuard, OnceLock};

use blstrs::Scalar;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::BackendError;
use cuzk_core::kinds::vectors::{self, Manifest};
use cuzk_core::kinds::{build_task, params, ProofTask};
use cuzk_core::matrices::{read_matrices, write_matrices, MatrixCache, Recorded};
use cuzk_core::prove::{assemble, proof_bytes, prove_on_device, ProveError};
use cuzk_core::synth::{
    matrices_fallbacks, matrix_cache, set_synthesis_path, with_options, SynthesisOptions,
    SynthesisPath, Synthesized,
};
use cuzk_core::ProofKind;
use ff::Field;

mod common;
use common::{param_dir, srs, KINDS, SIZE};

static PATH_LOCK: Mutex<()> = Mutex::new(());

fn path_lock() -> MutexGuard<'static, ()> {
    PATH_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

type Vectors = [OnceLock<Manifest>; 4];

/// One task of each kind, its vector sealed once per process.
fn task(kind: ProofKind) -> std::sync::Arc<dyn ProofTask> {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static M: Vectors = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    task_from(kind, &DIR, &M)
}

/// A task of the same kind over other sectors (fresh data, ticket, seed, randomness).
fn other_task(kind: ProofKind) -> std::sync::Arc<dyn ProofTask> {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static M: Vectors = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    task_from(kind, &DIR, &M)
}

fn task_from(
    kind: ProofKind,
    dir: &'static OnceLock<tempfile::TempDir>,
    vectors: &'static Vectors,
) -> std::sync::Arc<dyn ProofTask> {
    // The proof crates read their parameter directory once: set it before sealing. Sealing
    // and synthesis need no Groth16 parameters; only the proof test generates them.
    static PARAM_DIR: OnceLock<()> = OnceLock::new();
    PARAM_DIR.get_or_init(|| params::use_parameter_dir(&param_dir()).unwrap());
    let dir = dir.get_or_init(|| tempfile::tempdir().unwrap()).path();
    let i = KINDS.iter().position(|k| *k == kind).unwrap();
    let m =
        vectors[i].get_or_init(|| vectors::generate(kind, SIZE, dir).expect("sealing a vector"));
    build_task(&m.request(dir).unwrap()).unwrap()
}

fn synthesize(task: &dyn ProofTask, index: usize, path: SynthesisPath) -> Synthesized {
    set_synthesis_path(path);
    let s = task.synthesize(index).unwrap();
    set_synthesis_path(SynthesisPath::Full);
    s
}

/// A witness-only synthesis with a, b, c left to the device step.
fn synthesize_deferred(task: &dyn ProofTask, index: usize) -> Synthesized {
    let options = SynthesisOptions {
        path: Some(SynthesisPath::Matrices),
        defer_abc: true,
    };
    with_options(options, || task.synthesize(index)).unwrap()
}

fn assert_same(kind: ProofKind, what: &str, want: &Synthesized, got: &Synthesized) {
    assert_eq!(
        want.first_difference(got),
        None,
        "{kind}, {what}: differs from full synthesis"
    );
}

/// Every partition of every kind: the recording run and the witness runs after it give what
/// full synthesis gives, and none of them fell back.
#[test]
fn every_kind_matches_full_synthesis() {
    let _guard = path_lock();
    for kind in KINDS {
        let task = task(kind);
        let fallbacks = matrices_fallbacks();
        for i in 0..task.partitions() {
            let full = synthesize(task.as_ref(), i, SynthesisPath::Full);
            // The first partition of the shape records the matrices, the rest (and a second
            // pass) take the witness-only path.
            let first = synthesize(task.as_ref(), i, SynthesisPath::Matrices);
            let again = synthesize(task.as_ref(), i, SynthesisPath::Matrices);
            assert_same(kind, "matrices path", &full, &first);
            assert_same(kind, "witness-only path", &full, &again);
            assert!(full.b_aux_density.total() > 0, "{kind}: B is not empty");
        }
        assert_eq!(
            matrices_fallbacks(),
            fallbacks,
            "{kind}: the matrices path fell back to full synthesis"
        );
    }
}

/// The matrices do not depend on the witness: recorded on one sector's partition, they give
/// another sector's a, b, c exactly as full synthesis does.
#[test]
fn matrices_recorded_on_one_sector_fit_another() {
    let _guard = path_lock();
    for kind in [
        ProofKind::PorepSealCommit,
        ProofKind::WindowPostPartition,
        ProofKind::SnapDealsUpdate,
    ] {
        let _ = synthesize(task(kind).as_ref(), 0, SynthesisPath::Matrices);
        let other = other_task(kind);
        let fallbacks = matrices_fallbacks();
        let fast = synthesize(other.as_ref(), 0, SynthesisPath::Matrices);
        assert_eq!(matrices_fallbacks(), fallbacks, "{kind}: fell back");
        let full = synthesize(other.as_ref(), 0, SynthesisPath::Full);
        assert_same(kind, "another sector", &full, &fast);
        let first = synthesize(task(kind).as_ref(), 0, SynthesisPath::Full);
        assert_ne!(first.aux, full.aux, "{kind}: the two sectors differ");
    }
}

/// The same proof bytes from both paths for fixed r and s, and the proof verifies; a, b, c
/// deferred to the device step (here the CPU backend's evaluation of them) too.
#[test]
fn proofs_are_byte_identical_for_fixed_r_and_s() {
    let _guard = path_lock();
    let backend = CpuBackend;
    let (r, s) = (Scalar::from(0x1234_5678u64), Scalar::from(0x9abc_def0u64));
    for kind in KINDS {
        let task = task(kind);
        let entry = task.params(srs()).unwrap();
        let full = synthesize(task.as_ref(), 0, SynthesisPath::Full);
        // Twice, so the second is a witness-only run whichever test recorded first.
        let _ = synthesize(task.as_ref(), 0, SynthesisPath::Matrices);
        let fast = synthesize(task.as_ref(), 0, SynthesisPath::Matrices);
        let deferred = synthesize_deferred(task.as_ref(), 0);
        assert!(
            deferred.deferred.is_some() && deferred.a.is_empty(),
            "{kind}: a, b, c were not deferred"
        );
        let mut evaluated = deferred.clone();
        evaluated.evaluate_deferred().unwrap();
        assert_same(kind, "deferred, then evaluated", &full, &evaluated);
        let prove = |synth: Synthesized| {
            let (msm, _) = prove_on_device(&backend, &entry.params, &entry.id, synth).unwrap();
            proof_bytes(&assemble(&entry.params.vk, &msm, r, s).unwrap())
        };
        let inputs = task.public_inputs(0, full.public_inputs()).unwrap();
        let want = prove(full);
        assert_eq!(prove(fast), want, "{kind}: proof bytes differ");
        assert_eq!(
            prove(deferred),
            want,
            "{kind}: deferred a, b, c: bytes differ"
        );
        let proof = bellperson::groth16::Proof::read(&want[..]).unwrap();
        assert!(
            bellperson::groth16::verify_proof(&entry.pvk, &proof, &inputs).unwrap(),
            "{kind}: the proof does not verify"
        );
    }
}

/// A deferred witness that fails its matrices reaches the device step, which refuses it
/// (never proves it) and drops the matrices, so that the partition's retry records afresh.
#[test]
fn a_deferred_witness_that_fails_its_matrices_is_refused() {
    let _guard = path_lock();
    let kind = ProofKind::WindowPostPartition;
    let task = task(kind);
    let entry = task.params(srs()).unwrap();
    let _ = synthesize(task.as_ref(), 0, SynthesisPath::Matrices);
    let broken = || {
        let mut bad = synthesize_deferred(task.as_ref(), 0);
        // Written packed for the device: broken in its plain form.
        if let Some(p) = bad.packed_aux.take() {
            bad.aux = p.unpack();
        }
        for v in bad.aux.iter_mut().step_by(5) {
            *v += Scalar::ONE;
        }
        bad
    };
    let refused = |bad| match prove_on_device(&CpuBackend, &entry.params, &entry.id, bad) {
        Err(ProveError::Backend(BackendError::Unsatisfied { rows, .. })) => assert!(rows > 0),
        Err(e) => panic!("{kind}: wrong error: {e}"),
        Ok(_) => panic!("{kind}: a broken witness was proven"),
    };
    let bad = broken();
    let key = bad.deferred.as_ref().expect("deferred").key.clone();
    // The native witness is blamed first: the shape takes the general path, the matrices stay.
    refused(bad);
    assert!(
        matrix_cache().get(&key).is_some(),
        "the matrices were evicted first"
    );
    // A general witness failing them too: they go.
    refused(broken());
    assert!(matrix_cache().get(&key).is_none(), "the matrices were kept");
    // The next synthesis of the shape records again, and is right.
    let again = synthesize(task.as_ref(), 0, SynthesisPath::Matrices);
    let full = synthesize(task.as_ref(), 0, SynthesisPath::Full);
    assert_same(kind, "recorded again", &full, &again);
}

/// The recorded PoRep matrices through a file: read back equal (the digest too), found by a
/// fresh cache without recording, and refused when damaged or recorded for another circuit.
#[test]
fn matrices_file_round_trip_and_refusals() {
    let _guard = path_lock();
    let task = task(ProofKind::PorepSealCommit);
    let full = synthesize(task.as_ref(), 0, SynthesisPath::Full);
    let _ = synthesize(task.as_ref(), 0, SynthesisPath::Matrices);
    let seal = cuzk_core::kinds::registered::default_seal_proof(SIZE).unwrap();
    let key = params::seal_set(seal).unwrap().identifier;
    let m = matrix_cache()
        .get(&key)
        .expect("the PoRep matrices are recorded under the parameter identifier");
    assert_eq!(m.num_constraints(), full.num_constraints());
    assert_eq!(m.a_aux_density, full.a_aux_density);

    let dir = tempfile::tempdir().unwrap();
    let path = MatrixCache::file(dir.path(), &key);
    write_matrices(&m, &path).unwrap();
    let back = read_matrices(&path, &key).unwrap();
    assert_eq!(back, *m);

    // A fresh cache over the directory reads the file instead of recording.
    let cache = MatrixCache::with_dir(dir.path());
    match cache.lookup(&key) {
        Recorded::Ready(found) => assert_eq!(found.digest, m.digest),
        _ => panic!("the file was not used"),
    }

    assert!(read_matrices(&path, "another-circuit").is_err());
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(
        read_matrices(&path, &key).is_err(),
        "a flipped bit is caught"
    );
    // A cache finding a damaged file records anew, and replaces the file.
    let cache = MatrixCache::with_dir(dir.path());
    match cache.lookup(&key) {
        Recorded::Record(ticket) => {
            ticket.insert((*m).clone());
        }
        _ => panic!("a damaged file was used"),
    }
    assert_eq!(read_matrices(&path, &key).unwrap().digest, m.digest);
}

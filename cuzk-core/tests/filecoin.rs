//! Real Filecoin proofs at 2 KiB: sectors sealed by the proof crates, requests built from
//! Curio-format payloads, every partition proven by our prover (CPU backend: synthesize ->
//! prove_on_device -> assemble with random r, s), and the result accepted by the stock
//! verifiers. Plus the malformed-request cases, each rejected naming its field.
//!
//! Parameters are generated once into a fixed directory outside the clone
//! (`$CUZK_TEST_PARAMS`, else `$CUZK_PARAM_CACHE`, else `~/.cache/cuzk/params`) so a second
//! run skips generation.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use base64::Engine;
use bellperson::groth16;
use blstrs::Scalar;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::kinds::vectors::{self, Manifest};
use cuzk_core::kinds::virtual_sector;
use cuzk_core::kinds::{build_task, KindRequest, ProofTask};
use cuzk_core::prove::{assemble, proof_bytes, prove_on_device};
use cuzk_core::srs::SrsCache;
use cuzk_core::{Error, ProofKind};
use ff::Field;

mod common;
use common::{srs, KINDS, SIZE};

/// One vector of each kind, sealed once per process.
fn vector(kind: ProofKind) -> &'static (PathBuf, Manifest) {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static V: [OnceLock<(PathBuf, Manifest)>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    srs(); // the proof crates read their parameter directory once: set it first
    let dir = DIR
        .get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .to_path_buf();
    let i = KINDS.iter().position(|k| *k == kind).unwrap();
    V[i].get_or_init(|| {
        let m = vectors::generate(kind, SIZE, &dir).expect("generating vectors");
        assert_eq!(
            Manifest::read(&dir.join(format!("{}.json", kind.as_str()))).unwrap(),
            m
        );
        (dir.clone(), m)
    })
}

fn request(kind: ProofKind) -> KindRequest {
    let (dir, m) = vector(kind);
    m.request(dir).unwrap()
}

/// Prove every partition through our pipeline. Returns the concatenated proof and whether
/// every partition verified against the task's independently computed public inputs.
fn prove(task: &dyn ProofTask) -> (Vec<u8>, bool) {
    let entry = task.params(srs()).unwrap();
    let mut rng = rand::thread_rng();
    let mut out = Vec::new();
    let mut all_ok = true;
    for i in 0..task.partitions() {
        let synth = task.synthesize(i).unwrap();
        let witness_inputs = synth.public_inputs().to_vec();
        let (msm, _) = prove_on_device(&CpuBackend, &entry.params, &entry.id, synth).unwrap();
        let proof = assemble(
            &entry.params.vk,
            &msm,
            Scalar::random(&mut rng),
            Scalar::random(&mut rng),
        )
        .unwrap();
        let inputs = task.public_inputs(i, &witness_inputs).unwrap();
        all_ok &= groth16::verify_proof(&entry.pvk, &proof, &inputs).unwrap();
        out.extend(proof_bytes(&proof));
    }
    (out, all_ok)
}

fn end_to_end(kind: ProofKind, partitions: usize) {
    end_to_end_request(&request(kind), partitions);
}

fn end_to_end_request(req: &KindRequest, partitions: usize) {
    let kind = req.kind;
    srs(); // the proof crates read their parameter directory once: set it first
    let task = build_task(req).unwrap();
    assert_eq!(task.kind(), kind);
    assert_eq!(task.partitions(), partitions);
    // For an honest request the independent public inputs are the witness's.
    let synth = task.synthesize(0).unwrap();
    assert_eq!(
        task.public_inputs(0, synth.public_inputs()).unwrap(),
        synth.public_inputs()
    );
    drop(synth);

    let (proof, self_verified) = prove(task.as_ref());
    assert_eq!(proof.len(), 192 * partitions);
    assert!(
        self_verified,
        "{kind}: our proof fails against the verifying key"
    );
    task.verify_job(&proof)
        .unwrap_or_else(|e| panic!("{kind}: stock verifier: {e}"));
}

#[test]
fn porep_2k_verified_by_verify_seal() {
    end_to_end(ProofKind::PorepSealCommit, 1);
}

#[test]
fn winning_2k_verified_by_verify_winning_post() {
    end_to_end(ProofKind::WinningPost, 1);
}

#[test]
fn window_2k_verified_by_verify_window_post() {
    assert_eq!(
        request(ProofKind::WindowPostPartition).vanilla_proofs.len(),
        2
    );
    end_to_end(ProofKind::WindowPostPartition, 1);
}

#[test]
fn snap_2k_verified_by_verify_empty_sector_update_proof() {
    let parts = request(ProofKind::SnapDealsUpdate).vanilla_proofs.len();
    end_to_end(ProofKind::SnapDealsUpdate, parts);
}

/// Virtual sectors (never sealed: sparse trees, labels computed only where opened) prove
/// through the same pipeline and pass the same stock verifiers as sealed ones.
#[test]
fn virtual_sectors_2k_verified_by_the_stock_verifiers() {
    for (kind, partitions) in [
        (ProofKind::PorepSealCommit, 1),
        (ProofKind::WinningPost, 1),
        (ProofKind::WindowPostPartition, 1),
    ] {
        let req = virtual_sector::request(kind, SIZE).unwrap();
        end_to_end_request(&req, partitions);
    }
}

#[test]
fn preload_resolves_filecoin_circuit_ids() {
    let srs = srs();
    for id in ["porep-2k", "winning-2k", "window-2k", "snap-2k"] {
        let (entry, _) = srs.by_id(id).unwrap();
        assert_eq!(entry.id, id);
    }
    assert!(srs.by_id("porep-4k").is_err());
    assert!(
        srs.by_id("porep-32g").is_err(),
        "no 32 GiB parameters in the test cache"
    );
    // A task shares the preloaded copy.
    let task = build_task(&request(ProofKind::WinningPost)).unwrap();
    assert!(Arc::ptr_eq(
        &task.params(srs).unwrap(),
        &srs.by_id("winning-2k").unwrap().0
    ));
}

#[test]
fn missing_parameters_name_the_file() {
    srs();
    let empty = tempfile::tempdir().unwrap();
    let task = build_task(&request(ProofKind::WinningPost)).unwrap();
    match task.params(&SrsCache::new(empty.path())) {
        Err(Error::Params(msg)) => {
            assert!(msg.contains(".params") && msg.contains("missing"), "{msg}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("loaded parameters from an empty directory"),
    }
}

fn expect_invalid(req: &KindRequest, field: &str) {
    match build_task(req) {
        Err(Error::InvalidArgument { field: f, reason }) => {
            assert_eq!(f, field, "wrong field named (reason: {reason})")
        }
        Err(e) => panic!("expected InvalidArgument({field}), got {e}"),
        Ok(_) => panic!("expected InvalidArgument({field}), request accepted"),
    }
}

/// The C1 envelope with its phase-1 output edited.
fn edit_c1(req: &KindRequest, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut env: serde_json::Value = serde_json::from_slice(&req.vanilla_proof).unwrap();
    let mut c1: serde_json::Value =
        serde_json::from_slice(&b64.decode(env["Phase1Out"].as_str().unwrap()).unwrap()).unwrap();
    edit(&mut c1);
    env["Phase1Out"] = b64.encode(serde_json::to_vec(&c1).unwrap()).into();
    serde_json::to_vec(&env).unwrap()
}

#[test]
fn bad_porep_requests() {
    let good = request(ProofKind::PorepSealCommit);
    assert!(build_task(&good).is_ok());

    // registered_proof for another sector size (8 MiB V1_1) than the C1 output.
    expect_invalid(
        &KindRequest {
            registered_proof: 6,
            ..good.clone()
        },
        "registered_proof",
    );
    expect_invalid(
        &KindRequest {
            registered_proof: 99,
            ..good.clone()
        },
        "registered_proof",
    );
    expect_invalid(
        &KindRequest {
            sector_size: 8 << 20,
            ..good.clone()
        },
        "sector_size",
    );
    expect_invalid(
        &KindRequest {
            sector_number: good.sector_number + 1,
            ..good.clone()
        },
        "sector_number",
    );
    expect_invalid(
        &KindRequest {
            miner_id: good.miner_id + 1,
            ..good.clone()
        },
        "miner_id",
    );

    // Truncated and corrupted JSON, base64, inner JSON.
    let half = good.vanilla_proof[..good.vanilla_proof.len() / 2].to_vec();
    expect_invalid(
        &KindRequest {
            vanilla_proof: half,
            ..good.clone()
        },
        "vanilla_proof",
    );
    expect_invalid(
        &KindRequest {
            vanilla_proof: Vec::new(),
            ..good.clone()
        },
        "vanilla_proof",
    );
    expect_invalid(
        &KindRequest {
            vanilla_proof: b"{\"SectorNum\":1}".to_vec(),
            ..good.clone()
        },
        "vanilla_proof",
    );
    let s = String::from_utf8(good.vanilla_proof.clone()).unwrap();
    let bad_b64 = s
        .replacen("\"Phase1Out\":\"", "\"Phase1Out\":\"!!", 1)
        .into_bytes();
    expect_invalid(
        &KindRequest {
            vanilla_proof: bad_b64,
            ..good.clone()
        },
        "vanilla_proof",
    );
    let raw_c1 = base64::engine::general_purpose::STANDARD
        .decode(
            serde_json::from_slice::<serde_json::Value>(&good.vanilla_proof).unwrap()["Phase1Out"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    expect_invalid(
        &KindRequest {
            vanilla_proof: raw_c1,
            ..good.clone()
        },
        "vanilla_proof",
    );

    // Envelope SectorSize disagreeing with the phase-1 output.
    let mut env: serde_json::Value = serde_json::from_slice(&good.vanilla_proof).unwrap();
    env["SectorSize"] = (8u64 << 20).into();
    expect_invalid(
        &KindRequest {
            vanilla_proof: serde_json::to_vec(&env).unwrap(),
            ..good.clone()
        },
        "vanilla_proof",
    );

    // A phase-1 output claiming 8 MiB while holding 2 KiB proofs.
    let relabelled = edit_c1(&good, |c1| {
        c1["registered_proof"] = "StackedDrg8MiBV1_1".into()
    });
    let unset = KindRequest {
        sector_size: 0,
        registered_proof: 0,
        ..good.clone()
    };
    expect_invalid(
        &KindRequest {
            vanilla_proof: relabelled.clone(),
            ..unset.clone()
        },
        "vanilla_proof",
    );
    let mut env: serde_json::Value = serde_json::from_slice(&relabelled).unwrap();
    env["SectorSize"] = (8u64 << 20).into();
    expect_invalid(
        &KindRequest {
            vanilla_proof: serde_json::to_vec(&env).unwrap(),
            ..unset
        },
        "vanilla_proof",
    );
    // A partition missing from the vanilla proofs.
    let emptied = edit_c1(&good, |c1| {
        c1["vanilla_proofs"]["StackedDrg2KiBV1"] = serde_json::json!([])
    });
    expect_invalid(
        &KindRequest {
            vanilla_proof: emptied,
            ..good.clone()
        },
        "vanilla_proof",
    );
    // Non-interactive PoRep is refused, not mis-proven.
    let ni = edit_c1(&good, |c1| {
        c1["registered_proof"] = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep".into()
    });
    expect_invalid(
        &KindRequest {
            vanilla_proof: ni,
            registered_proof: 0,
            ..good.clone()
        },
        "registered_proof",
    );
}

#[test]
fn bad_post_requests() {
    for kind in [ProofKind::WinningPost, ProofKind::WindowPostPartition] {
        let good = request(kind);
        assert!(build_task(&good).is_ok());
        expect_invalid(
            &KindRequest {
                randomness: good.randomness[..31].to_vec(),
                ..good.clone()
            },
            "randomness",
        );
        expect_invalid(
            &KindRequest {
                randomness: vec![0xff; 32],
                ..good.clone()
            },
            "randomness",
        );
        expect_invalid(
            &KindRequest {
                registered_proof: 99,
                ..good.clone()
            },
            "registered_proof",
        );
        expect_invalid(
            &KindRequest {
                sector_size: 8 << 20,
                ..good.clone()
            },
            "sector_size",
        );
        let mut truncated = good.clone();
        let v = &mut truncated.vanilla_proofs[0];
        v.truncate(v.len() / 2);
        expect_invalid(&truncated, "vanilla_proofs");
        let mut garbage = good.clone();
        garbage.vanilla_proofs[0] = vec![0xab; 4096];
        expect_invalid(&garbage, "vanilla_proofs");
        expect_invalid(
            &KindRequest {
                vanilla_proofs: Vec::new(),
                ..good.clone()
            },
            "vanilla_proofs",
        );
        let mut too_many = good.clone();
        too_many.vanilla_proofs.extend(good.vanilla_proofs.clone());
        too_many.vanilla_proofs.extend(good.vanilla_proofs.clone());
        expect_invalid(&too_many, "vanilla_proofs");
    }
    // Winning registered proof for a window job, and the reverse.
    let window = request(ProofKind::WindowPostPartition);
    expect_invalid(
        &KindRequest {
            registered_proof: 0,
            ..window.clone()
        },
        "registered_proof",
    );
    let winning = request(ProofKind::WinningPost);
    expect_invalid(
        &KindRequest {
            registered_proof: 10,
            ..winning
        },
        "registered_proof",
    );
    // Sectors out of order, and a partition index no deadline has.
    let mut reversed = window.clone();
    reversed.vanilla_proofs.reverse();
    expect_invalid(&reversed, "vanilla_proofs");
    expect_invalid(
        &KindRequest {
            partition_index: 3000,
            ..window.clone()
        },
        "partition_index",
    );
    expect_invalid(
        &KindRequest {
            partition_index: u32::MAX,
            ..window
        },
        "partition_index",
    );
}

#[test]
fn bad_snap_requests() {
    let good = request(ProofKind::SnapDealsUpdate);
    assert!(build_task(&good).is_ok());
    expect_invalid(
        &KindRequest {
            comm_r_old: good.comm_r_old[..31].to_vec(),
            ..good.clone()
        },
        "comm_r_old",
    );
    expect_invalid(
        &KindRequest {
            comm_r_new: [good.comm_r_new.clone(), vec![0]].concat(),
            ..good.clone()
        },
        "comm_r_new",
    );
    expect_invalid(
        &KindRequest {
            comm_d_new: Vec::new(),
            ..good.clone()
        },
        "comm_d_new",
    );
    expect_invalid(
        &KindRequest {
            comm_d_new: vec![0xff; 32],
            ..good.clone()
        },
        "comm_d_new",
    );
    expect_invalid(
        &KindRequest {
            registered_proof: 5,
            ..good.clone()
        },
        "registered_proof",
    );
    expect_invalid(
        &KindRequest {
            sector_size: 4096,
            ..good.clone()
        },
        "sector_size",
    );
    let mut extra = good.clone();
    extra.vanilla_proofs.push(good.vanilla_proofs[0].clone());
    expect_invalid(&extra, "vanilla_proofs");
    let mut truncated = good.clone();
    let v = &mut truncated.vanilla_proofs[0];
    v.truncate(v.len() - 1);
    expect_invalid(&truncated, "vanilla_proofs");
}

/// Parses, but the vanilla proofs answer other challenges than the public inputs pose: the
/// proof must fail self-verification and the stock verifier, never be returned as good.
#[test]
fn inconsistent_vanilla_proof_fails_verification() {
    // PoRep: another interactive seed, so other challenges than the vanilla proofs open.
    let good = request(ProofKind::PorepSealCommit);
    let other_seed = edit_c1(&good, |c1| {
        let seed = c1["seed"].as_array_mut().unwrap();
        seed[0] = (seed[0].as_u64().unwrap() ^ 0x55).into();
    });
    let task = build_task(&KindRequest {
        vanilla_proof: other_seed,
        ..good
    })
    .unwrap();
    let (proof, ok) = prove(task.as_ref());
    assert!(!ok, "an inconsistent PoRep witness verified");
    assert!(matches!(
        task.verify_job(&proof),
        Err(Error::Verification(_))
    ));

    // WinningPoSt: other randomness than the vanilla proof was made for.
    let good = request(ProofKind::WinningPost);
    let mut randomness = good.randomness.clone();
    randomness[0] ^= 1;
    let task = build_task(&KindRequest { randomness, ..good }).unwrap();
    let (proof, ok) = prove(task.as_ref());
    assert!(!ok, "an inconsistent WinningPoSt witness verified");
    assert!(matches!(
        task.verify_job(&proof),
        Err(Error::Verification(_))
    ));
}

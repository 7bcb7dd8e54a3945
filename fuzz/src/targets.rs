//! One function per parser of client data. Each takes arbitrary bytes and must return:
//! no panic, no abort, no unbounded allocation; the parser answers Ok or a clean error (for
//! requests, `InvalidArgument` naming a field, which the daemon turns into INVALID_ARGUMENT).
//! Each returns whether the input was accepted, so the corpus replay can check that the
//! valid seeds really reach the deep end of their parser.
//!
//! Used by the cargo-fuzz binaries in `fuzz/fuzz_targets/` and, on stable, by
//! `cuzk-daemon/tests/fuzz_corpus.rs`, which replays `fuzz/corpus/<target>/` through them.

use cuzk_core::kinds::registered::{
    post_proof_abi, update_proof_abi, update_proof_for_size, window_post_proof, winning_post_proof,
    SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_64_GIB,
};
use cuzk_core::kinds::{build_task, decode_envelope, KindRequest};
use cuzk_core::{Error, ProofKind};
use cuzk_proto::v1 as pb;
use prost::Message;

/// A target: arbitrary bytes in, whether the parser accepted them out.
pub type Target = fn(&[u8]) -> bool;

/// The targets by name, as `fuzz/corpus/<name>/` and the cargo-fuzz binaries call them.
pub const TARGETS: [(&str, Target); 7] = [
    ("submit_request", submit_request),
    ("porep_envelope", porep_envelope),
    ("vanilla_winning", vanilla_winning),
    ("vanilla_window", vanilla_window),
    ("vanilla_snap", vanilla_snap),
    ("daemon_config", daemon_config),
    ("timeline", timeline),
];

/// A rejection must be a client error that names the field it rejects.
fn assert_clean(e: &Error) -> bool {
    match e {
        Error::InvalidArgument { field, reason } => {
            assert!(!field.is_empty() && !reason.is_empty(), "{e}")
        }
        other => panic!("client input gave a non-client error: {other:?}"),
    }
    false
}

/// Accepted, or rejected cleanly.
fn accepted<T>(r: cuzk_core::Result<T>) -> bool {
    r.map_or_else(|e| assert_clean(&e), |_| true)
}

/// (a) SubmitProofRequest from the wire, then every check the daemon makes before queueing:
/// protobuf decoding (as tonic's prost codec), the service's conversion, and the engine's
/// admission (`Engine::submit` runs `build_task` first, which validates and decodes).
pub fn submit_request(data: &[u8]) -> bool {
    let Ok(msg) = pb::SubmitProofRequest::decode(data) else {
        return false;
    };
    match cuzk_daemon::wire::submit_request(msg) {
        Ok(req) => accepted(build_task(&req.proof)),
        Err(e) => assert_clean(&e),
    }
}

/// (b) Curio's PoRep envelope and the commit-phase-1 JSON inside it, then the whole PoRep
/// admission for the sector the envelope names.
pub fn porep_envelope(data: &[u8]) -> bool {
    let (sector, _, _) = match decode_envelope(data) {
        Ok(d) => d,
        Err(e) => return assert_clean(&e),
    };
    let mut req = KindRequest::new(ProofKind::PorepSealCommit);
    req.vanilla_proof = data.to_vec();
    req.sector_number = sector as u64;
    req.miner_id = 1000;
    accepted(build_task(&req))
}

/// Sector sizes with distinct tree shapes (and so distinct bincode types): 2 KiB is the
/// base shape, 32 GiB adds a sub-tree level, 64 GiB a top level.
const SIZES: [u64; 3] = [SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_64_GIB];

/// A request of `kind` whose every field but the vanilla proofs is valid. The first input
/// byte picks the sector size and (window) how many entries the rest is split into, so the
/// fuzzer explores every shape's decoder and the multi-sector checks.
fn vanilla_request(kind: ProofKind, data: &[u8]) -> Option<KindRequest> {
    let (&selector, payload) = data.split_first()?;
    let size = SIZES[usize::from(selector % 3)];
    let mut req = KindRequest::new(kind);
    req.sector_size = size;
    req.registered_proof = match kind {
        ProofKind::WinningPost => post_proof_abi(winning_post_proof(size)?),
        ProofKind::WindowPostPartition => post_proof_abi(window_post_proof(size)?),
        _ => update_proof_abi(update_proof_for_size(size)?),
    };
    req.miner_id = 1000;
    // Field elements: any 32 bytes with the top two bits clear.
    req.randomness = vec![7; 32];
    req.comm_r_old = vec![1; 32];
    req.comm_r_new = vec![2; 32];
    req.comm_d_new = vec![3; 32];
    let entries = match kind {
        ProofKind::WindowPostPartition => usize::from(selector / 3 % 3) + 1,
        _ => 1,
    };
    let chunk = payload.len().div_ceil(entries).max(1);
    req.vanilla_proofs = payload.chunks(chunk).map(<[u8]>::to_vec).collect();
    if req.vanilla_proofs.is_empty() {
        req.vanilla_proofs.push(Vec::new());
    }
    Some(req)
}

fn vanilla(kind: ProofKind, data: &[u8]) -> bool {
    vanilla_request(kind, data).is_some_and(|req| accepted(build_task(&req)))
}

/// (c) bincode `FallbackPoStSectorProof`, WinningPoSt (one sector, 66 openings).
pub fn vanilla_winning(data: &[u8]) -> bool {
    vanilla(ProofKind::WinningPost, data)
}

/// (c) bincode `FallbackPoStSectorProof`s, one WindowPoSt partition.
pub fn vanilla_window(data: &[u8]) -> bool {
    vanilla(ProofKind::WindowPostPartition, data)
}

/// (c) bincode SnapDeals `PartitionProof`s.
pub fn vanilla_snap(data: &[u8]) -> bool {
    vanilla(ProofKind::SnapDealsUpdate, data)
}

/// (d) The daemon's TOML configuration file (which holds the engine's under `[engine]`),
/// and `--print-config`'s rendering of whatever parsed.
pub fn daemon_config(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    match cuzk_daemon::config::DaemonConfig::parse(text) {
        Ok(config) => config.to_toml().is_ok(),
        Err(_) => false,
    }
}

/// (e) TIMELINE lines, through the whole waterfall: parse, model, summary, HTML.
pub fn timeline(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let args = cuzk_client::waterfall::WaterfallArgs {
        log: "fuzz.log".into(),
        out: None,
        from: None,
        to: None,
        job: None,
        summary_json: None,
    };
    cuzk_client::waterfall::analyze(&text, &args).is_ok()
}

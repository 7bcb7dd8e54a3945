//! cuzk.v1 requests to engine requests: the transport-side checks (enums, request id) and
//! the field-by-field copy into the engine's types. Pure functions, in the library so that
//! the fuzz targets and tests run exactly what the service runs.

use cuzk_core::engine::priority_from_wire;
use cuzk_core::kinds::{KindRequest, SyntheticShape};
use cuzk_core::{Error, ProofKind, SubmitRequest};
use cuzk_proto::v1 as pb;

/// Longest `request_id` (an idempotency key, kept for the job's retention time).
pub const MAX_REQUEST_ID_BYTES: usize = 256;

pub fn kind_from_wire(k: i32) -> Result<ProofKind, Error> {
    match pb::ProofKind::try_from(k) {
        Ok(pb::ProofKind::PorepSealCommit) => Ok(ProofKind::PorepSealCommit),
        Ok(pb::ProofKind::SnapDealsUpdate) => Ok(ProofKind::SnapDealsUpdate),
        Ok(pb::ProofKind::WindowPostPartition) => Ok(ProofKind::WindowPostPartition),
        Ok(pb::ProofKind::WinningPost) => Ok(ProofKind::WinningPost),
        Ok(pb::ProofKind::Synthetic) => Ok(ProofKind::Synthetic),
        Ok(pb::ProofKind::Unspecified) => Err(Error::invalid("proof_kind", "must be set")),
        Err(_) => Err(Error::invalid("proof_kind", format!("unknown value {k}"))),
    }
}

pub fn submit_request(m: pb::SubmitProofRequest) -> Result<SubmitRequest, Error> {
    if m.request_id.len() > MAX_REQUEST_ID_BYTES {
        return Err(Error::invalid(
            "request_id",
            format!("longer than {MAX_REQUEST_ID_BYTES} bytes"),
        ));
    }
    let kind = kind_from_wire(m.proof_kind)?;
    let priority = priority_from_wire(m.priority)?;
    Ok(SubmitRequest {
        request_id: m.request_id,
        priority,
        proof: KindRequest {
            kind,
            sector_size: m.sector_size,
            registered_proof: m.registered_proof,
            vanilla_proof: m.vanilla_proof,
            vanilla_proofs: m.vanilla_proofs,
            sector_number: m.sector_number,
            miner_id: m.miner_id,
            randomness: m.randomness,
            partition_index: m.partition_index,
            comm_r_old: m.comm_r_old,
            comm_r_new: m.comm_r_new,
            comm_d_new: m.comm_d_new,
            synthetic_log_size: m.synthetic_log_size,
            synthetic_partitions: m.synthetic_partitions,
            synthetic_seed: m.synthetic_seed,
            synthetic_shape: SyntheticShape::parse(&m.synthetic_shape)?,
        },
    })
}

//! Talking to a daemon: connecting over TCP or a Unix socket, and building requests.

use std::time::Duration;

use cuzk_core::kinds::KindRequest;
use cuzk_core::{Priority, ProofKind};
use cuzk_proto::v1 as pb;
use cuzk_proto::v1::proving_engine_client::ProvingEngineClient;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

pub type Client = ProvingEngineClient<Channel>;

/// Connect to `addr`: `host:port`, `http://host:port`, or `unix:/path/to.sock`.
pub async fn connect(addr: &str) -> anyhow::Result<Client> {
    let channel = if let Some(path) = addr.strip_prefix("unix:") {
        let path = path.to_string();
        // The URI is required by the API but unused: the connector below dials the socket.
        Endpoint::try_from("http://[::]:0")?
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }))
            .await
    } else {
        let uri = if addr.contains("://") {
            addr.to_string()
        } else {
            format!("http://{addr}")
        };
        Endpoint::try_from(uri)?
            .connect_timeout(Duration::from_secs(10))
            .connect()
            .await
    }
    .map_err(|e| anyhow::anyhow!("connecting to {addr}: {e}"))?;
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES))
}

pub fn kind_to_wire(kind: ProofKind) -> pb::ProofKind {
    match kind {
        ProofKind::PorepSealCommit => pb::ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate => pb::ProofKind::SnapDealsUpdate,
        ProofKind::WindowPostPartition => pb::ProofKind::WindowPostPartition,
        ProofKind::WinningPost => pb::ProofKind::WinningPost,
        ProofKind::Synthetic => pb::ProofKind::Synthetic,
    }
}

pub fn priority_to_wire(p: Option<Priority>) -> pb::Priority {
    match p {
        None => pb::Priority::Unspecified,
        Some(Priority::Low) => pb::Priority::Low,
        Some(Priority::Normal) => pb::Priority::Normal,
        Some(Priority::High) => pb::Priority::High,
        Some(Priority::Critical) => pb::Priority::Critical,
    }
}

/// The wire request for a proof.
pub fn submit_request(
    req: KindRequest,
    priority: Option<Priority>,
    request_id: String,
) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id,
        proof_kind: kind_to_wire(req.kind) as i32,
        sector_size: req.sector_size,
        registered_proof: req.registered_proof,
        priority: priority_to_wire(priority) as i32,
        vanilla_proof: req.vanilla_proof,
        vanilla_proofs: req.vanilla_proofs,
        sector_number: req.sector_number,
        miner_id: req.miner_id,
        randomness: req.randomness,
        partition_index: req.partition_index,
        comm_r_old: req.comm_r_old,
        comm_r_new: req.comm_r_new,
        comm_d_new: req.comm_d_new,
        synthetic_log_size: req.synthetic_log_size,
        synthetic_partitions: req.synthetic_partitions,
        synthetic_seed: req.synthetic_seed,
    }
}

/// A synthetic job of 2^log_size constraints per partition.
pub fn synthetic_request(log_size: u32, partitions: u32, seed: u64) -> KindRequest {
    let mut r = KindRequest::new(ProofKind::Synthetic);
    r.synthetic_log_size = log_size;
    r.synthetic_partitions = partitions;
    r.synthetic_seed = seed;
    r
}

pub fn status_name(status: i32) -> &'static str {
    use pb::await_proof_response::Status;
    match Status::try_from(status) {
        Ok(Status::Completed) => "completed",
        Ok(Status::Failed) => "failed",
        Ok(Status::Cancelled) => "cancelled",
        Ok(Status::Timeout) => "timeout",
        _ => "unknown",
    }
}

//! The gRPC service: converts cuzk.v1 messages to engine calls and engine errors to status
//! codes. No proving logic lives here.

use std::time::Duration;

use cuzk_core::engine::Engine;
use cuzk_core::record::JobOutcome;
use cuzk_core::{Error, JobState};
use cuzk_daemon::wire::submit_request;
use cuzk_proto::v1 as pb;
use cuzk_proto::v1::proving_engine_server::ProvingEngine;
use pb::await_proof_response::Status as AwaitStatus;
use tonic::{Request, Response, Status};

pub struct ProvingService {
    engine: Engine,
}

impl ProvingService {
    pub fn new(engine: Engine) -> Self {
        ProvingService { engine }
    }

    async fn await_outcome(
        &self,
        job_id: &str,
        timeout_ms: u64,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
        let outcome = self
            .engine
            .await_job(job_id, timeout)
            .await
            .map_err(to_status)?;
        Ok(match outcome {
            Some(o) => outcome_message(job_id, o),
            None => pb::AwaitProofResponse {
                job_id: job_id.to_string(),
                status: AwaitStatus::Timeout as i32,
                ..Default::default()
            },
        })
    }
}

/// The one place engine errors become gRPC status codes.
pub fn to_status(e: Error) -> Status {
    let msg = e.to_string();
    match e {
        Error::InvalidArgument { .. } => Status::invalid_argument(msg),
        Error::NotFound(_) => Status::not_found(msg),
        Error::QueueFull { .. } => Status::resource_exhausted(msg),
        Error::ShuttingDown | Error::ParamsNotResident(_) => Status::unavailable(msg),
        Error::Params(_) => Status::failed_precondition(msg),
        Error::Cancelled => Status::cancelled(msg),
        Error::Synthesis(_) | Error::Prove(_) | Error::Verification(_) | Error::Internal(_) => {
            Status::internal(msg)
        }
    }
}

fn outcome_message(job_id: &str, o: JobOutcome) -> pb::AwaitProofResponse {
    let (status, error_message) = match o.state {
        JobState::Completed => (AwaitStatus::Completed, String::new()),
        JobState::Failed(msg) => (AwaitStatus::Failed, msg),
        JobState::Cancelled => (AwaitStatus::Cancelled, "job cancelled".to_string()),
        JobState::Queued | JobState::Running => (AwaitStatus::Unknown, String::new()),
    };
    let ms = |d: Duration| d.as_millis() as u64;
    pb::AwaitProofResponse {
        job_id: job_id.to_string(),
        status: status as i32,
        proof: o.proof,
        error_message,
        queue_wait_ms: ms(o.timings.queue_wait),
        srs_load_ms: ms(o.timings.srs_load),
        synthesis_ms: ms(o.timings.synthesis),
        gpu_compute_ms: ms(o.timings.gpu_compute),
        total_ms: ms(o.timings.total),
    }
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let req = submit_request(request.into_inner()).map_err(to_status)?;
        let engine = self.engine.clone();
        // Validation parses payloads of up to 256 MiB: off the async threads.
        let submitted = tokio::task::spawn_blocking(move || engine.submit(req))
            .await
            .map_err(|e| Status::internal(format!("submission task: {e}")))?
            .map_err(to_status)?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: submitted.job_id,
            queue_position: submitted.queue_position,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let r = request.into_inner();
        if r.job_id.is_empty() {
            return Err(Status::invalid_argument("job_id: must be set"));
        }
        Ok(Response::new(
            self.await_outcome(&r.job_id, r.timeout_ms).await?,
        ))
    }

    async fn prove(
        &self,
        request: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("submit: must be set"))?;
        let id = self
            .submit_proof(Request::new(submit))
            .await?
            .into_inner()
            .job_id;
        let result = self.await_outcome(&id, 0).await?;
        Ok(Response::new(pb::ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let was_running = self
            .engine
            .cancel(&request.into_inner().job_id)
            .map_err(to_status)?;
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let st = self.engine.status();
        let gpus = st
            .devices
            .iter()
            .filter(|d| d.label != "cpu")
            .map(|d| pb::GpuStatus {
                ordinal: d.ordinal,
                name: d.name.clone(),
                vram_total_bytes: d.vram_total,
                vram_free_bytes: d.vram_free,
                current_job_id: d
                    .current_job
                    .as_ref()
                    .map_or_else(String::new, |c| c.0.clone()),
                current_proof_kind: d
                    .current_job
                    .as_ref()
                    .map_or_else(String::new, |c| c.1.to_string()),
                vram_peak_bytes: d.vram_peak,
            })
            .collect();
        let loaded_srs = st
            .srs
            .iter()
            .map(|s| pb::SrsStatus {
                circuit_id: s.circuit_id.clone(),
                tier: pb::srs_status::Tier::Hot as i32,
                size_bytes: s.size_bytes,
                ref_count: s.ref_count,
            })
            .collect();
        let queues = st
            .queues
            .iter()
            .map(|q| pb::QueueStatus {
                proof_kind: q.kind.to_string(),
                pending: q.pending,
                in_progress: q.in_progress,
            })
            .collect();
        Ok(Response::new(pb::GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_proofs_completed: st.completed,
            total_proofs_failed: st.failed,
            total_proofs_cancelled: st.cancelled,
            uptime_seconds: st.uptime.as_secs(),
            // Page-locked host memory held now (the NTT's two 32 MiB staging buffers per
            // device once used, the pinned aux pool's buffers). cuzk sets no byte limit on
            // it (the staging is fixed, the pool holds at most 8 buffers a device), hence 0.
            pinned_memory_bytes: st.memory.pinned.now,
            pinned_memory_limit_bytes: 0,
            backend: st.backend,
            rss_bytes: st.memory.process.map_or(0, |p| p.rss_bytes),
            peak_rss_bytes: st.memory.process.map_or(0, |p| p.peak_rss_bytes),
        }))
    }

    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: self.engine.metrics_text(),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let engine = self.engine.clone();
        let (already_loaded, took) = tokio::task::spawn_blocking(move || engine.preload_srs(&id))
            .await
            .map_err(|e| Status::internal(format!("preload task: {e}")))?
            .map_err(to_status)?;
        Ok(Response::new(pb::PreloadSrsResponse {
            already_loaded,
            load_time_ms: took.as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let freed = self.engine.evict_srs(&request.into_inner().circuit_id);
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded: freed.is_some(),
            freed_bytes: freed.unwrap_or(0),
        }))
    }
}

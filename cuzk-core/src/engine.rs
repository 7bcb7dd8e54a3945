//! The engine: admission, the job table, and the workers of the pipeline (see pipeline.rs
//! for the way of a partition). Transport-free: the daemon's gRPC service calls these
//! methods and maps `Error` to status codes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::config::EngineConfig;
use crate::gpu::{open_devices, Device};
use crate::job::{Error, JobId, JobState, Priority, ProofKind, Result, SubmitRequest};
use crate::kinds::build_task;
use crate::metrics::Metrics;
use crate::pipeline::{self, PartitionWork, SynthesizedWork};
use crate::queue::PriorityQueue;
use crate::record::{Job, JobOutcome};
use crate::srs::{SrsCache, SrsStatus};
use crate::timeline::Timeline;

/// Test-only fault injection (kept in release builds so that tests of the daemon binary can
/// use it; inert unless set).
#[derive(Default)]
pub struct TestHooks {
    /// Called at the start of every synthesis with the job id; may panic.
    pub synthesis_panic: Option<Box<dyn Fn(&str) + Send + Sync>>,
}

/// State shared by the engine handle and its workers.
pub struct Shared {
    pub config: EngineConfig,
    pub srs: SrsCache,
    pub timeline: Timeline,
    pub metrics: Metrics,
    pub devices: Vec<Arc<Device>>,
    pub synth_queue: PriorityQueue<PartitionWork>,
    pub prove_queue: PriorityQueue<SynthesizedWork>,
    pub test_hooks: TestHooks,
    jobs: Mutex<Jobs>,
    next_seq: AtomicU64,
    accepting: AtomicBool,
    started: Instant,
}

#[derive(Default)]
struct Jobs {
    by_id: HashMap<JobId, Arc<Job>>,
    by_request: HashMap<String, JobId>,
}

/// What SubmitProof answers.
#[derive(Clone, Debug)]
pub struct Submitted {
    pub job_id: JobId,
    /// Jobs ahead of this one.
    pub queue_position: u32,
    /// True when `request_id` matched an existing job.
    pub existing: bool,
}

/// Per-kind queue counts (GetStatus; Curio uses pending + in_progress for back-pressure).
#[derive(Clone, Debug)]
pub struct QueueCounts {
    pub kind: ProofKind,
    pub pending: u32,
    pub in_progress: u32,
}

#[derive(Clone, Debug)]
pub struct DeviceStatus {
    pub ordinal: u32,
    pub label: String,
    pub name: String,
    pub vram_total: u64,
    pub vram_free: u64,
    pub current_job: Option<(JobId, ProofKind)>,
    pub busy_seconds: f64,
}

#[derive(Clone, Debug)]
pub struct EngineStatus {
    pub backend: String,
    pub devices: Vec<DeviceStatus>,
    pub srs: Vec<SrsStatus>,
    pub queues: Vec<QueueCounts>,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub uptime: Duration,
}

/// The handle the transport holds.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

impl Engine {
    /// Open the devices and start the workers.
    pub fn start(config: EngineConfig) -> Result<Engine> {
        Self::start_with_hooks(config, TestHooks::default())
    }

    pub fn start_with_hooks(config: EngineConfig, test_hooks: TestHooks) -> Result<Engine> {
        // The Filecoin proof crates (their verifiers) read the parameter directory once per
        // process: point them at ours before anything else runs.
        crate::kinds::params::use_parameter_dir(&config.param_dir)?;
        let devices = open_devices(&config)?;
        let shared = Arc::new(Shared {
            srs: SrsCache::new(config.param_dir.clone()),
            timeline: Timeline::new(config.timeline),
            metrics: Metrics::new(),
            devices,
            // Admission bounds jobs itself; partitions of admitted jobs always fit.
            synth_queue: PriorityQueue::new(usize::MAX),
            prove_queue: PriorityQueue::new(config.max_synthesized_partitions),
            test_hooks,
            jobs: Mutex::new(Jobs::default()),
            next_seq: AtomicU64::new(1),
            accepting: AtomicBool::new(true),
            started: Instant::now(),
            config,
        });
        for w in 0..shared.config.synthesis_workers.max(1) {
            let s = shared.clone();
            spawn(&format!("synth-{w}"), move || {
                pipeline::synthesis_worker(s, w)
            });
        }
        for dev in &shared.devices {
            let (s, d) = (shared.clone(), dev.clone());
            spawn(&format!("prove-{}", dev.label), move || {
                pipeline::device_worker(s, d)
            });
        }
        let weak = Arc::downgrade(&shared);
        spawn("retention", move || retention_loop(weak));
        tracing::info!(
            backend = %shared.devices.iter().map(|d| d.backend.name()).collect::<Vec<_>>().join(","),
            synthesis_workers = shared.config.synthesis_workers,
            param_dir = %shared.config.param_dir.display(),
            "engine started"
        );
        Ok(Engine { shared })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// Validate and enqueue a job. Every check happens before anything is queued.
    pub fn submit(&self, req: SubmitRequest) -> Result<Submitted> {
        let s = &self.shared;
        if !s.accepting.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        if let Some(existing) = self.by_request_id(&req.request_id) {
            return Ok(existing);
        }
        let task = build_task(&req.proof)?;
        let priority = req
            .priority
            .unwrap_or_else(|| task.kind().default_priority());

        let mut jobs = s.jobs.lock();
        // Checked again under the lock: two submissions of one request_id race here.
        if let Some(id) = jobs.by_request.get(&req.request_id) {
            return Ok(Submitted {
                job_id: id.clone(),
                queue_position: 0,
                existing: true,
            });
        }
        let queued = jobs
            .by_id
            .values()
            .filter(|j| j.state() == JobState::Queued)
            .count();
        if queued >= s.config.max_queued_jobs {
            return Err(Error::QueueFull {
                capacity: s.config.max_queued_jobs,
            });
        }
        let seq = s.next_seq.fetch_add(1, Ordering::Relaxed);
        let id = format!("job-{seq}-{:08x}", rand::random::<u32>());
        let job = Arc::new(Job::new(
            id.clone(),
            seq,
            req.request_id.clone(),
            priority,
            task,
        ));
        jobs.by_id.insert(id.clone(), job.clone());
        if !req.request_id.is_empty() {
            jobs.by_request.insert(req.request_id.clone(), id.clone());
        }
        drop(jobs);

        s.metrics.job_submitted(job.kind);
        s.timeline.emit(
            "JOB_QUEUED",
            &id,
            &[
                ("kind", &job.kind),
                ("partitions", &job.task.partitions()),
                ("priority", &priority.as_str()),
            ],
        );
        let parts = (0..job.task.partitions()).map(|index| {
            let work = PartitionWork {
                job: job.clone(),
                index,
            };
            (priority, seq, work)
        });
        if !s.synth_queue.push_all(parts) {
            s.fail(&job, Error::ShuttingDown);
            return Err(Error::ShuttingDown);
        }
        Ok(Submitted {
            job_id: id,
            queue_position: queued as u32,
            existing: false,
        })
    }

    fn by_request_id(&self, request_id: &str) -> Option<Submitted> {
        if request_id.is_empty() {
            return None;
        }
        let jobs = self.shared.jobs.lock();
        jobs.by_request.get(request_id).map(|id| Submitted {
            job_id: id.clone(),
            queue_position: 0,
            existing: true,
        })
    }

    fn job(&self, id: &str) -> Result<Arc<Job>> {
        self.shared
            .jobs
            .lock()
            .by_id
            .get(id)
            .cloned()
            .ok_or_else(|| Error::NotFound(id.to_string()))
    }

    /// Wait for a job to end. Ok(None) when `timeout` passes first (the job goes on).
    pub async fn await_job(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<Option<JobOutcome>> {
        let job = self.job(id)?;
        let mut rx = job.subscribe();
        let wait = rx.wait_for(|s| s.is_final());
        let finished = match timeout {
            Some(t) => tokio::time::timeout(t, wait).await.ok(),
            None => Some(wait.await),
        };
        match finished {
            None => Ok(None),
            // The sender lives in the job, which we hold: the wait cannot fail.
            Some(_) => Ok(job.outcome()),
        }
    }

    /// Cancel a queued or running job. Returns whether it was running. Partitions still
    /// queued are dropped at once; a device step under way finishes and is discarded.
    pub fn cancel(&self, id: &str) -> Result<bool> {
        let job = self.job(id)?;
        let was_running = job.state() == JobState::Running;
        let s = &self.shared;
        let cancelled = job.finish(JobState::Cancelled, || {
            s.metrics
                .job_finished(job.kind, "cancelled", job.submitted.elapsed());
            s.timeline.emit("JOB_CANCELLED", &job.id, &[]);
        });
        if cancelled {
            s.synth_queue.remove_where(|w| w.job.id == job.id);
            s.prove_queue.remove_where(|w| w.job.id == job.id);
        }
        Ok(was_running)
    }

    pub fn job_state(&self, id: &str) -> Result<JobState> {
        Ok(self.job(id)?.state())
    }

    pub fn status(&self) -> EngineStatus {
        let s = &self.shared;
        let mut counts: HashMap<ProofKind, (u32, u32)> = HashMap::new();
        for job in s.jobs.lock().by_id.values() {
            let e = counts.entry(job.kind).or_default();
            match job.state() {
                JobState::Queued => e.0 += 1,
                JobState::Running => e.1 += 1,
                _ => {}
            }
        }
        let queues = ProofKind::ALL
            .iter()
            .map(|&kind| {
                let (pending, in_progress) = counts.get(&kind).copied().unwrap_or_default();
                QueueCounts {
                    kind,
                    pending,
                    in_progress,
                }
            })
            .collect();
        let gpu_info = if s.devices.iter().any(|d| d.label.starts_with("cuda")) {
            cuzk_kernels::GpuDevice::list()
        } else {
            Vec::new()
        };
        let devices = s
            .devices
            .iter()
            .map(|d| {
                let info = gpu_info.iter().find(|g| g.ordinal as u32 == d.ordinal);
                DeviceStatus {
                    ordinal: d.ordinal,
                    label: d.label.clone(),
                    name: info.map_or_else(|| d.backend.name(), |g| g.name.clone()),
                    vram_total: info.map_or(0, |g| g.total_mem as u64),
                    vram_free: info.map_or(0, |g| g.free_mem as u64),
                    current_job: d.current(),
                    busy_seconds: d.busy_seconds(),
                }
            })
            .collect();
        let (completed, failed, cancelled) = s.metrics.totals();
        EngineStatus {
            backend: s.devices.first().map_or_else(String::new, |d| {
                if d.label == "cpu" {
                    "cpu".into()
                } else {
                    "cuda".into()
                }
            }),
            devices,
            srs: s.srs.status(),
            queues,
            completed,
            failed,
            cancelled,
            uptime: s.started.elapsed(),
        }
    }

    pub fn metrics_text(&self) -> String {
        let st = self.status();
        self.shared.metrics.render(&st)
    }

    /// PreloadSRS: (already loaded, load time).
    pub fn preload_srs(&self, circuit_id: &str) -> Result<(bool, Duration)> {
        self.shared.srs.preload(circuit_id)
    }

    /// EvictSRS: bytes freed, None when not loaded.
    pub fn evict_srs(&self, circuit_id: &str) -> Option<u64> {
        for d in &self.shared.devices {
            d.backend.evict(circuit_id);
        }
        self.shared.srs.evict(circuit_id)
    }

    /// Stop admission; partitions not yet synthesized are dropped with their jobs failed as
    /// "shutting down"; partitions in synthesis or already synthesized are proven.
    pub fn shutdown(&self) {
        let s = &self.shared;
        s.accepting.store(false, Ordering::SeqCst);
        s.synth_queue.close();
        for work in s.synth_queue.drain() {
            s.fail(&work.job, Error::ShuttingDown);
        }
    }

    pub fn timeline(&self) -> &Timeline {
        &self.shared.timeline
    }
}

impl Shared {
    /// Fail a job (first failure wins; later partitions of a failed job are skipped).
    pub fn fail(&self, job: &Job, err: Error) {
        let msg = err.to_string();
        let failed = job.finish(JobState::Failed(msg.clone()), || {
            tracing::warn!(job = %job.id, error = %msg, "job failed");
            self.metrics
                .job_finished(job.kind, "failed", job.submitted.elapsed());
            self.timeline
                .emit("JOB_FAILED", &job.id, &[("error", &msg)]);
        });
        if failed {
            // Its other partitions would only be skipped later; free their memory now.
            self.synth_queue.remove_where(|w| w.job.id == job.id);
            self.prove_queue.remove_where(|w| w.job.id == job.id);
        }
    }

    /// All partitions are proven: whole-job verification, then done.
    pub fn complete(&self, job: &Job, proof: &[u8]) {
        match pipeline::job_result(self, job, proof) {
            JobState::Completed => {
                job.finish(JobState::Completed, || {
                    let ms = job.submitted.elapsed().as_secs_f64() * 1e3;
                    self.metrics
                        .job_finished(job.kind, "completed", job.submitted.elapsed());
                    self.timeline
                        .emit("JOB_DONE", &job.id, &[("ms", &format!("{ms:.1}"))]);
                });
            }
            JobState::Failed(msg) => self.fail(job, Error::Verification(msg)),
            _ => unreachable!("job_result returns Completed or Failed"),
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .expect("spawning an engine thread");
}

/// Drop finished jobs older than the retention time.
fn retention_loop(shared: std::sync::Weak<Shared>) {
    loop {
        std::thread::sleep(Duration::from_secs(5));
        let Some(s) = shared.upgrade() else { return };
        let keep = Duration::from_secs(s.config.result_retention_secs);
        let mut jobs = s.jobs.lock();
        let expired: Vec<(JobId, String)> = jobs
            .by_id
            .values()
            .filter(|j| j.finished_at().is_some_and(|t| t.elapsed() > keep))
            .map(|j| (j.id.clone(), j.request_id.clone()))
            .collect();
        for (id, req) in expired {
            jobs.by_id.remove(&id);
            jobs.by_request.remove(&req);
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

/// The priority a wire value asks for (None: the kind's default).
pub fn priority_from_wire(p: i32) -> Result<Option<Priority>> {
    Ok(match p {
        0 => None,
        1 => Some(Priority::Low),
        2 => Some(Priority::Normal),
        3 => Some(Priority::High),
        4 => Some(Priority::Critical),
        other => return Err(Error::invalid("priority", format!("unknown value {other}"))),
    })
}

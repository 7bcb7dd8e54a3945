//! The engine: admission, the job table, and the workers of the pipeline (see pipeline.rs
//! for the way of a partition). Transport-free: the daemon's gRPC service calls these
//! methods and maps `Error` to status codes.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::budget::{default_budget_bytes, default_urgent_bytes, Budget};
use crate::config::EngineConfig;
use crate::gate::{HighWater, Lane, SynthesisGate};
use crate::gpu::{cpu_fallback, open_devices, test_device};
use crate::job::{Error, JobId, JobState, Priority, ProofKind, Result, SubmitRequest};
use crate::jobs::{payload_digest, Found, Jobs, Resubmit};
use crate::journal::{now_unix_ms, JobEntry, Journal};
use crate::kinds::build_task;
use crate::loading;
use crate::metrics::Metrics;
use crate::pipeline;
use crate::queue::PriorityQueue;
use crate::record::{Job, JobOutcome};
use crate::rss::{process_memory, ProcessMemory};
use crate::set_loads::SetLoads;
use crate::srs::{SrsCache, SrsStatus};
use crate::timeline::Timeline;

pub use crate::shared::Shared;
pub use crate::test_hooks::TestHooks;

/// What SubmitProof answers.
#[derive(Clone, Debug)]
pub struct Submitted {
    pub job_id: JobId,
    /// Jobs ahead of this one.
    pub queue_position: u32,
    /// True when `request_id` matched an existing job.
    pub existing: bool,
}

impl Submitted {
    fn existing(job_id: JobId) -> Self {
        Submitted {
            job_id,
            queue_position: 0,
            existing: true,
        }
    }
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
    /// The most device memory in use at the end of a device step since start (0: none yet).
    pub vram_peak: u64,
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
    pub memory: MemoryStatus,
}

/// Host memory: what the budget allows, what partitions reserve, and what the process holds.
#[derive(Clone, Debug)]
pub struct MemoryStatus {
    pub budget_bytes: u64,
    /// Reserved now by partitions in synthesis, waiting for a device or on one.
    pub reserved_bytes: u64,
    /// The reservations' high-water mark since start.
    pub reserved_peak: HighWater,
    /// The process's resident memory (None off Linux).
    pub process: Option<ProcessMemory>,
    /// Page-locked host memory the CUDA backend holds (its NTT staging buffers, the pinned
    /// aux pool): part of the resident memory, but never paged out.
    pub pinned: cuzk_kernels::PinnedHostBytes,
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
        // The journal first: a daemon that cannot keep its promises must not start.
        let journal = if config.journal {
            Some(Journal::open(&config.data_dir)?)
        } else {
            None
        };
        let recovery = match &journal {
            Some(j) => j.load()?,
            None => Default::default(),
        };
        let devices = match &test_hooks.device_backend {
            Some(backend) => vec![test_device(backend.clone())],
            None => open_devices(&config)?,
        };
        let memory_limit = match config.synthesized_memory_bytes {
            0 => default_budget_bytes(&config.param_dir),
            n => n,
        };
        let budget = Budget {
            // Every worker synthesizing plus the partitions that may wait for a device.
            slots: config.synthesis_workers.max(1) + config.max_synthesized_partitions,
            urgent_slots: config.urgent_synthesis_workers + config.max_synthesized_partitions,
            bytes: memory_limit,
            urgent_bytes: config
                .urgent_memory_bytes
                .unwrap_or_else(|| default_urgent_bytes(memory_limit))
                .min(memory_limit),
        };
        let shared = Arc::new(Shared {
            cpu_fallback: cpu_fallback(&devices),
            gate: SynthesisGate::new(budget),
            srs: SrsCache::new(config.param_dir.clone()),
            timeline: Timeline::new(config.timeline),
            metrics: Metrics::new(),
            devices,
            // Both bounded before synthesis, by the gate.
            prove_queue: PriorityQueue::new(usize::MAX),
            finalize_queue: PriorityQueue::new(usize::MAX),
            set_loads: SetLoads::default(),
            test_hooks,
            in_flight: Arc::new(AtomicUsize::new(0)),
            journal,
            jobs: Mutex::new(Jobs::default()),
            // Ids never repeat across restarts: they continue from the journal's highest.
            next_seq: AtomicU64::new(recovery.max_seq + 1),
            accepting: AtomicBool::new(true),
            closing: tokio::sync::watch::Sender::new(false),
            started: Instant::now(),
            config,
        });
        if shared.test_hooks.is_set() {
            tracing::warn!(
                "test hooks are set ({}): for tests only",
                crate::test_hooks::ENV
            );
        }
        shared.recover(recovery.jobs);
        let general = shared.config.synthesis_workers.max(1);
        for w in 0..general + shared.config.urgent_synthesis_workers {
            let s = shared.clone();
            let lane = if w < general { Lane::Any } else { Lane::Urgent };
            spawn(&format!("synth-{w}"), move || {
                pipeline::synthesis_worker(s, w, lane)
            });
        }
        for dev in &shared.devices {
            let (s, d) = (shared.clone(), dev.clone());
            spawn(&format!("prove-{}", dev.label), move || {
                pipeline::device_worker(s, d)
            });
        }
        // Two per device: finalizing (~40 ms at 2^18) must keep pace with a device (~75 ms).
        for w in 0..(2 * shared.devices.len()).max(2) {
            let s = shared.clone();
            spawn(&format!("finalize-{w}"), move || {
                pipeline::finalize_worker(s)
            });
        }
        let weak = Arc::downgrade(&shared);
        spawn("retention", move || retention_loop(weak));
        // A daemon killed while it wrote a set leaves its temporary file (up to ~47 GB).
        let (orphans, bytes) = crate::atomic_file::remove_orphans(&shared.config.param_dir);
        if !orphans.is_empty() {
            tracing::warn!(
                files = orphans.len(),
                bytes,
                "removed the temporary files of writers that are gone"
            );
        }
        tracing::info!(
            backend = %shared.devices.iter().map(|d| d.backend.name()).collect::<Vec<_>>().join(","),
            synthesis_workers = shared.config.synthesis_workers,
            urgent_synthesis_workers = shared.config.urgent_synthesis_workers,
            budget = ?shared.gate.budget(),
            param_dir = %shared.config.param_dir.display(),
            journal = %shared.journal.as_ref().map_or_else(|| "off".into(), |j| j.path().display().to_string()),
            "engine started"
        );
        Ok(Engine { shared })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// Validate and enqueue a job. Every check happens before anything is queued. A request
    /// id seen before answers with its job or starts a new one by the rules in jobs.rs.
    pub fn submit(&self, req: SubmitRequest) -> Result<Submitted> {
        let s = &self.shared;
        if !s.accepting.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        let digest = payload_digest(&req.proof);
        if let Resubmit::Existing(id) = s.jobs.lock().resubmission(&req.request_id, &digest) {
            return Ok(Submitted::existing(id));
        }
        let task = build_task(&req.proof)?;
        let priority = req
            .priority
            .unwrap_or_else(|| task.kind().default_priority());

        let mut jobs = s.jobs.lock();
        // Decided again under the lock: two submissions of one request_id race here.
        let superseded = match jobs.resubmission(&req.request_id, &digest) {
            Resubmit::Existing(id) => return Ok(Submitted::existing(id)),
            Resubmit::New { superseded } => superseded,
        };
        let queued = jobs.queued();
        if queued >= s.config.max_queued_jobs {
            return Err(Error::QueueFull {
                capacity: s.config.max_queued_jobs,
            });
        }
        let seq = s.next_seq.fetch_add(1, Ordering::Relaxed);
        let id = format!("job-{seq}-{:08x}", rand::random::<u32>());
        let job = Arc::new(
            Job::new(id.clone(), seq, req.request_id.clone(), priority, task)
                .with_payload_digest(digest),
        );
        let previous = jobs.insert(job.clone());
        drop(jobs);

        // On disk before the client hears "accepted" (outside the table lock: it fsyncs).
        if let Some(journal) = &s.journal {
            let entry = JobEntry::queued(
                seq,
                &req.request_id,
                job.kind,
                priority,
                job.submitted_unix_ms,
            );
            if let Err(e) = journal.record_submitted(&id, &entry, &req, &digest) {
                // Not durable, so not accepted.
                s.jobs.lock().remove_new(&job, previous);
                tracing::error!(job = %id, error = %e, "journal write failed; job refused");
                return Err(e);
            }
        }
        if let Some(old) = superseded {
            // Its input was replaced under the same request id: its proof is not wanted.
            tracing::info!(job = %old.id, by = %id, request_id = %req.request_id,
                "a new payload under this request id supersedes the job; cancelling it");
            s.cancel_job(&old, Some(&id));
        }
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
        if !s.enqueue(&job) {
            // Shutdown began after the admission check. A journaled job is kept for the next
            // start, so it is still accepted; without a journal it is lost: refuse it.
            if s.journal.is_none() {
                s.fail(&job, Error::ShuttingDown);
                return Err(Error::ShuttingDown);
            }
        }
        Ok(Submitted {
            job_id: id,
            queue_position: queued as u32,
            existing: false,
        })
    }

    fn find(&self, id: &str) -> Result<Found> {
        self.shared.jobs.lock().find(id)
    }

    /// Wait for a job to end. Ok(None) when `timeout` passes first (the job goes on).
    /// Err(ShuttingDown) when the daemon exits first: the job is kept (journal) for later.
    pub async fn await_job(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<Option<JobOutcome>> {
        let job = match self.find(id)? {
            Found::Live(job) => job,
            Found::Archived(outcome) => return Ok(Some(outcome)),
        };
        let mut rx = job.subscribe();
        let mut closing = self.shared.closing.subscribe();
        // True when the job ended, false when the daemon is closing. The job's sender lives
        // in the job and the closing sender in `shared`, both held here: neither wait fails.
        let wait = async {
            tokio::select! {
                _ = rx.wait_for(|s| s.is_final()) => true,
                _ = closing.wait_for(|c| *c) => false,
            }
        };
        let finished = match timeout {
            Some(t) => tokio::time::timeout(t, wait).await.ok(),
            None => Some(wait.await),
        };
        match finished {
            None => Ok(None),
            Some(_) => job.outcome().map(Some).ok_or(Error::ShuttingDown),
        }
    }

    /// Cancel a queued or running job. Returns whether it was running. Partitions still
    /// queued are dropped at once; a partition in synthesis is dropped when it ends; a device
    /// step under way finishes and is discarded (see pipeline.rs).
    pub fn cancel(&self, id: &str) -> Result<bool> {
        let job = match self.find(id)? {
            Found::Live(job) => job,
            // Finished before this start: nothing to cancel.
            Found::Archived(_) => return Ok(false),
        };
        let was_running = job.state() == JobState::Running;
        self.shared.cancel_job(&job, None);
        Ok(was_running)
    }

    pub fn job_state(&self, id: &str) -> Result<JobState> {
        Ok(match self.find(id)? {
            Found::Live(job) => job.state(),
            Found::Archived(outcome) => outcome.state,
        })
    }

    pub fn status(&self) -> EngineStatus {
        let s = &self.shared;
        let counts = s.jobs.lock().counts();
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
                    vram_peak: d.vram_peak(),
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
            memory: MemoryStatus {
                budget_bytes: s.gate.budget().bytes,
                reserved_bytes: s.gate.usage().bytes,
                reserved_peak: s.gate.high_water(),
                process: process_memory(),
                pinned: cuzk_kernels::pinned_host_bytes(),
            },
        }
    }

    /// Count a TCP connection the daemon closed at accept (its peer is outside `allow`).
    pub fn connection_refused(&self) {
        self.shared.metrics.connection_refused();
    }

    pub fn metrics_text(&self) -> String {
        let st = self.status();
        self.shared.metrics.render(&st)
    }

    /// PreloadSRS: (already loaded, load time).
    pub fn preload_srs(&self, circuit_id: &str) -> Result<(bool, Duration)> {
        let s = &self.shared;
        let t = Instant::now();
        let resident = s.srs.resident(circuit_id).is_some();
        if !resident {
            s.timeline.emit(
                "SRS_LOAD_START",
                "-",
                &[("srs", &circuit_id), ("cause", &"preload")],
            );
        }
        match s.srs.by_id(circuit_id) {
            Ok((entry, loaded_now)) => {
                if !resident {
                    loading::emit_loaded(&s.timeline, &entry, "preload", 0);
                }
                Ok((!loaded_now, t.elapsed()))
            }
            Err(e) => {
                if !resident {
                    loading::emit_failed(&s.timeline, circuit_id, "preload", &e);
                }
                Err(e)
            }
        }
    }

    /// EvictSRS: bytes freed, None when not loaded.
    pub fn evict_srs(&self, circuit_id: &str) -> Option<u64> {
        for d in &self.shared.devices {
            d.backend.evict(circuit_id);
        }
        self.shared.srs.evict(circuit_id)
    }

    /// Stop admission and take the partitions not yet synthesized out of the queue;
    /// partitions in synthesis or already synthesized go on (`in_flight` counts them), and a
    /// job whose partitions all finish still completes. With the journal, every unfinished
    /// job stays queued there and the next start runs it from the beginning; without it,
    /// the jobs whose partitions were dropped fail as "shutting down".
    pub fn shutdown(&self) {
        let s = &self.shared;
        s.accepting.store(false, Ordering::SeqCst);
        s.gate.close();
        let dropped = s.gate.drain();
        if s.journal.is_none() {
            for work in dropped {
                s.fail(&work.job, Error::ShuttingDown);
            }
            return;
        }
        let mut ids: Vec<&str> = dropped.iter().map(|w| w.job.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        tracing::info!(
            jobs = ids.len(),
            "shutdown: unstarted partitions dropped; their jobs stay queued in the journal"
        );
    }

    /// Partitions in synthesis, waiting for a device or on one.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// The daemon is about to exit: end every AwaitProof still waiting (UNAVAILABLE; the
    /// client awaits again after the restart, by the same job id).
    pub fn close(&self) {
        self.shared.closing.send_replace(true);
    }

    pub fn timeline(&self) -> &Timeline {
        &self.shared.timeline
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .expect("spawning an engine thread");
}

/// Drop finished jobs older than the retention time, from memory and from the journal.
/// Jobs of this process are timed by `Instant`; jobs read back from the journal, and the
/// journal itself, by wall-clock finish time (it outlives the process).
fn retention_loop(shared: std::sync::Weak<Shared>) {
    loop {
        std::thread::sleep(Duration::from_secs(5));
        let Some(s) = shared.upgrade() else { return };
        let keep = Duration::from_secs(s.config.result_retention_secs);
        let cutoff = now_unix_ms().saturating_sub(keep.as_millis() as u64);
        s.jobs.lock().expire(keep, cutoff);
        if let Some(journal) = &s.journal {
            match journal.prune(cutoff) {
                Ok(0) => {}
                Ok(n) => tracing::debug!(jobs = n, "journal: expired results pruned"),
                Err(e) => tracing::warn!(error = %e, "journal: pruning failed"),
            }
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

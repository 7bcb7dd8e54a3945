//! The state the engine handle and its workers share, and the job-level operations on it
//! (queueing, failing, completing, recovery from the journal) that every stage calls.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::config::EngineConfig;
use crate::gate::SynthesisGate;
use crate::gpu::Device;
use crate::job::{Error, JobId, JobState};
use crate::jobs::{payload_digest, Archived, Jobs};
use crate::journal::{now_unix_ms, JobEntry, Journal, Recovered};
use crate::kinds::build_task;
use crate::metrics::Metrics;
use crate::queue::PriorityQueue;
use crate::record::{Job, JobOutcome};
use crate::set_loads::SetLoads;
use crate::srs::{SrsCache, SrsEntry};
use crate::test_hooks::TestHooks;
use crate::timeline::Timeline;
use crate::work::{guarded, PartitionWork, ProvenWork, SynthesizedWork};

/// State shared by the engine handle and its workers.
pub struct Shared {
    pub config: EngineConfig,
    pub srs: SrsCache,
    pub timeline: Timeline,
    pub metrics: Metrics,
    pub devices: Vec<Arc<Device>>,
    /// Where partitions of a failed device are proven.
    pub cpu_fallback: Arc<Device>,
    /// Partitions waiting for synthesis, and the room (slots, memory) of those admitted.
    pub gate: Arc<SynthesisGate<PartitionWork>>,
    pub prove_queue: PriorityQueue<SynthesizedWork>,
    pub finalize_queue: PriorityQueue<ProvenWork>,
    /// Partitions waiting for their parameter set to load (loading.rs).
    pub set_loads: SetLoads,
    pub test_hooks: TestHooks,
    /// Partitions out of the synthesis queue and not yet done (see `work::InFlight`):
    /// what a graceful shutdown waits for.
    pub in_flight: Arc<AtomicUsize>,
    /// None when `config.journal` is off.
    pub(crate) journal: Option<Journal>,
    pub(crate) jobs: Mutex<Jobs>,
    pub(crate) next_seq: AtomicU64,
    pub(crate) accepting: AtomicBool,
    /// Set when the daemon is about to exit: AwaitProof calls still waiting end (UNAVAILABLE).
    pub(crate) closing: tokio::sync::watch::Sender<bool>,
    pub(crate) started: Instant,
}

impl Shared {
    /// Queue a job's partitions; false when the queue is closed (shutting down).
    pub(crate) fn enqueue(&self, job: &Arc<Job>) -> bool {
        let parts = (0..job.task.partitions()).map(|index| {
            let work = PartitionWork {
                job: job.clone(),
                index,
                on_cpu: false,
            };
            (job.priority, job.seq, work)
        });
        self.gate.push_all(parts)
    }

    /// Take back what the journal held at start: finished jobs are served until their
    /// retention passes; unfinished ones are queued again under their ids, oldest first.
    pub(crate) fn recover(&self, recovered: Vec<Recovered>) {
        let keep_ms = self.config.result_retention_secs.saturating_mul(1000);
        let now = now_unix_ms();
        let mut unfinished = Vec::new();
        let mut jobs = self.jobs.lock();
        for r in recovered {
            match r {
                Recovered::Finished { id, entry, digest } => {
                    let finished = entry.finished_unix_ms.unwrap_or(0);
                    if finished.saturating_add(keep_ms) < now {
                        continue; // expired: the retention loop deletes it
                    }
                    let outcome = JobOutcome {
                        state: entry.job_state(),
                        timings: entry.timings(),
                        proof: entry.proof,
                    };
                    let archived = Archived {
                        seq: entry.seq,
                        request_id: entry.request_id,
                        outcome,
                        finished_unix_ms: finished,
                        digest,
                    };
                    jobs.insert_archived(id, archived);
                }
                Recovered::Unfinished { id, entry, request } => {
                    unfinished.push((id, entry, request))
                }
            }
        }
        drop(jobs);
        unfinished.sort_by_key(|(_, e, _)| e.seq);
        for (id, entry, request) in unfinished {
            let task = match build_task(&request.proof) {
                Ok(task) => task,
                Err(e) => {
                    self.fail_unresumable(id, entry, e);
                    continue;
                }
            };
            let priority = entry
                .priority()
                .unwrap_or_else(|| task.kind().default_priority());
            // The digest from the request itself: journals of earlier versions have none.
            let job = Arc::new(
                Job::new(id.clone(), entry.seq, entry.request_id, priority, task)
                    .with_submitted_unix_ms(entry.submitted_unix_ms)
                    .with_payload_digest(payload_digest(&request.proof)),
            );
            self.jobs.lock().insert_recovered(job.clone());
            self.metrics.job_submitted(job.kind);
            self.timeline
                .emit("JOB_RECOVERED", &id, &[("seq", &job.seq)]);
            self.timeline.emit(
                "JOB_QUEUED",
                &id,
                &[
                    ("kind", &job.kind),
                    ("partitions", &job.task.partitions()),
                    ("priority", &priority.as_str()),
                ],
            );
            self.enqueue(&job);
        }
    }

    /// A journaled request this build no longer accepts (say, its parameters changed): fail
    /// it, so that its client learns why instead of waiting for ever.
    pub(crate) fn fail_unresumable(&self, id: JobId, entry: JobEntry, e: Error) {
        let msg = format!("cannot resume after restart: {e}");
        tracing::error!(job = %id, error = %msg, "journal: job not resumed");
        let state = JobState::Failed(msg.clone());
        let finished = now_unix_ms();
        let entry = entry.finished(&state, &[], &Default::default(), finished);
        if let Some(journal) = &self.journal {
            if let Err(e) = journal.record_finished(&id, &entry) {
                tracing::error!(job = %id, error = %e, "journal write failed");
            }
        }
        self.timeline.emit("JOB_FAILED", &id, &[("error", &msg)]);
        let archived = Archived {
            seq: entry.seq,
            request_id: entry.request_id,
            outcome: JobOutcome {
                state,
                proof: Vec::new(),
                timings: Default::default(),
            },
            finished_unix_ms: finished,
            digest: None,
        };
        self.jobs.lock().insert_archived(id, archived);
    }

    /// Journal a job's end. Called from `Job::finish`, so before any waiter wakes.
    pub(crate) fn journal_finished(&self, job: &Job, outcome: &JobOutcome) {
        let Some(journal) = &self.journal else { return };
        let entry = JobEntry::queued(
            job.seq,
            &job.request_id,
            job.kind,
            job.priority,
            job.submitted_unix_ms,
        )
        .finished(
            &outcome.state,
            &outcome.proof,
            &outcome.timings,
            now_unix_ms(),
        );
        if let Err(e) = journal.record_finished(&job.id, &entry) {
            // It stays queued in the journal: the next start proves it again, which is safe.
            tracing::error!(job = %job.id, error = %e, "journal write failed");
        }
    }

    /// Move every job holding parameter entry `from` to `to` (host_release.rs); how many.
    pub fn swap_jobs_srs(&self, from: &Arc<SrsEntry>, to: &Arc<SrsEntry>) -> usize {
        let jobs = self.jobs.lock();
        jobs.all().filter(|j| j.swap_srs(from, to)).count()
    }

    /// Whether unfinished jobs survive a restart (a refused retry need not fail its job).
    pub fn has_journal(&self) -> bool {
        self.journal.is_some()
    }

    /// Cancel a job (a client's CancelProof, or `superseded_by` a new payload under its
    /// request id); its partitions still queued are dropped at once.
    pub(crate) fn cancel_job(&self, job: &Job, superseded_by: Option<&str>) {
        let cancelled = job.finish(JobState::Cancelled, |outcome| {
            self.journal_finished(job, outcome);
            self.metrics
                .job_finished(job.kind, "cancelled", job.submitted.elapsed());
            match superseded_by {
                Some(by) => self
                    .timeline
                    .emit("JOB_CANCELLED", &job.id, &[("superseded_by", &by)]),
                None => self.timeline.emit("JOB_CANCELLED", &job.id, &[]),
            }
        });
        if cancelled {
            self.drop_partitions(job);
        }
    }

    /// Take a finished job's partitions out of every queue, freeing their memory now.
    pub(crate) fn drop_partitions(&self, job: &Job) {
        self.gate.remove_where(|w| w.job.id == job.id);
        self.prove_queue.remove_where(|w| w.job.id == job.id);
        self.finalize_queue.remove_where(|w| w.job.id == job.id);
    }

    /// Fail a job (first failure wins; later partitions of a failed job are skipped).
    pub fn fail(&self, job: &Job, err: Error) {
        let msg = err.to_string();
        let failed = job.finish(JobState::Failed(msg.clone()), |outcome| {
            self.journal_finished(job, outcome);
            tracing::warn!(job = %job.id, error = %msg, "job failed");
            self.metrics
                .job_finished(job.kind, "failed", job.submitted.elapsed());
            self.timeline
                .emit("JOB_FAILED", &job.id, &[("error", &msg)]);
        });
        if failed {
            // Its other partitions would only be skipped later.
            self.drop_partitions(job);
        }
    }

    /// All partitions are proven: whole-job verification, then done.
    pub fn complete(&self, job: &Job, proof: &[u8]) {
        match self.job_result(job, proof) {
            JobState::Completed => {
                job.finish(JobState::Completed, |outcome| {
                    self.journal_finished(job, outcome);
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

    /// The job's final state from its finished proof: stock whole-job verification, if on.
    fn job_result(&self, job: &Job, proof: &[u8]) -> JobState {
        if self.config.verify_proofs {
            if let Err(e) = guarded("job verification", || job.task.verify_job(proof)) {
                return JobState::Failed(e.to_string());
            }
        }
        JobState::Completed
    }
}

//! The engine's record of one accepted job: identity, the task, progress of its partitions,
//! and a watch channel that AwaitProof waits on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::job::{JobId, JobState, JobTimings, Priority, ProofKind};
use crate::kinds::ProofTask;
use crate::srs::SrsEntry;

pub struct Job {
    pub id: JobId,
    /// Admission order, for FIFO within a priority.
    pub seq: u64,
    pub request_id: String,
    pub kind: ProofKind,
    pub priority: Priority,
    pub task: Arc<dyn ProofTask>,
    pub submitted: Instant,
    /// Wall-clock admission time, journaled (kept across restarts for a recovered job).
    pub submitted_unix_ms: u64,
    /// What the request asked to prove (jobs.rs: a request id seen again is compared by it).
    pub payload_digest: crate::jobs::Digest,
    state: watch::Sender<JobState>,
    progress: Mutex<Progress>,
}

#[derive(Default)]
struct Progress {
    proofs: Vec<Option<Vec<u8>>>,
    remaining: usize,
    srs: Option<Arc<SrsEntry>>,
    /// A partition is to be proven on the CPU: the job keeps its parameters' host copy
    /// (host_release.rs moves it to no released entry).
    needs_host_params: bool,
    timings: JobTimings,
    first_start: Option<Instant>,
    finished: Option<Instant>,
}

/// What AwaitProof returns for a finished job.
#[derive(Clone, Debug)]
pub struct JobOutcome {
    pub state: JobState,
    pub proof: Vec<u8>,
    pub timings: JobTimings,
}

impl Job {
    pub fn new(
        id: JobId,
        seq: u64,
        request_id: String,
        priority: Priority,
        task: Arc<dyn ProofTask>,
    ) -> Self {
        let n = task.partitions();
        Job {
            id,
            seq,
            request_id,
            kind: task.kind(),
            priority,
            task,
            submitted: Instant::now(),
            submitted_unix_ms: crate::journal::now_unix_ms(),
            payload_digest: [0; 32],
            state: watch::Sender::new(JobState::Queued),
            progress: Mutex::new(Progress {
                proofs: vec![None; n],
                remaining: n,
                ..Progress::default()
            }),
        }
    }

    pub fn state(&self) -> JobState {
        self.state.borrow().clone()
    }

    pub fn is_live(&self) -> bool {
        !self.state.borrow().is_final()
    }

    pub fn subscribe(&self) -> watch::Receiver<JobState> {
        self.state.subscribe()
    }

    /// A job read back from the journal keeps its original admission time.
    pub fn with_submitted_unix_ms(mut self, ms: u64) -> Self {
        self.submitted_unix_ms = ms;
        self
    }

    pub fn with_payload_digest(mut self, digest: crate::jobs::Digest) -> Self {
        self.payload_digest = digest;
        self
    }

    /// Move to a final state unless already final; true if this call did it. `on_final` runs
    /// (only then) with the outcome before any waiter is woken, so that what it records — the
    /// journal entry, the TIMELINE line, metrics — is written before a client can see the
    /// result and, say, stop the daemon.
    pub fn finish(&self, state: JobState, on_final: impl FnOnce(&JobOutcome)) -> bool {
        debug_assert!(state.is_final());
        self.state.send_if_modified(|s| {
            if s.is_final() {
                return false;
            }
            *s = state.clone();
            let mut p = self.progress.lock();
            p.finished = Some(Instant::now());
            p.timings.total = self.submitted.elapsed();
            // The proving key is no longer needed by this job: release our reference.
            p.srs = None;
            let outcome = JobOutcome {
                proof: if state == JobState::Completed {
                    p.proofs.iter().flatten().flatten().copied().collect()
                } else {
                    Vec::new()
                },
                state,
                timings: p.timings.clone(),
            };
            drop(p);
            on_final(&outcome);
            true
        })
    }

    /// A partition starts synthesis: the job is running; the first start ends its queue wait.
    pub fn mark_started(&self) {
        self.state.send_if_modified(|s| {
            if *s == JobState::Queued {
                *s = JobState::Running;
                true
            } else {
                false
            }
        });
        let mut p = self.progress.lock();
        if p.first_start.is_none() {
            p.first_start = Some(Instant::now());
            p.timings.queue_wait = self.submitted.elapsed();
        }
    }

    /// The parameter set, if this job has loaded it already.
    pub fn loaded_srs(&self) -> Option<Arc<SrsEntry>> {
        self.progress.lock().srs.clone()
    }

    /// The parameter set for this job, loading it through `load` on first use.
    pub fn srs(
        &self,
        load: impl FnOnce() -> crate::Result<Arc<SrsEntry>>,
    ) -> crate::Result<Arc<SrsEntry>> {
        if let Some(srs) = self.progress.lock().srs.clone() {
            return Ok(srs);
        }
        let t = Instant::now();
        let srs = load()?;
        self.set_srs(srs.clone(), t.elapsed());
        Ok(srs)
    }

    /// The job's parameter set, found or loaded after `waited`. Not kept by a finished job:
    /// its reference would keep the set (tens of GB) alive until the job's record expires.
    /// A set held already is replaced only by the set loaded again in full, where the job
    /// held it released (host_release.rs).
    pub fn set_srs(&self, srs: Arc<SrsEntry>, waited: Duration) {
        let mut p = self.progress.lock();
        let reloaded = |held: &SrsEntry| held.host_released && !srs.host_released;
        if p.finished.is_some() || p.srs.as_deref().is_some_and(|held| !reloaded(held)) {
            return;
        }
        p.timings.srs_load += waited;
        p.srs = Some(srs);
    }

    /// A partition of this job is to be proven on the CPU, which reads the parameters on the
    /// host: from now on the job is not moved to a released entry.
    pub fn needs_host_params(&self) {
        self.progress.lock().needs_host_params = true;
    }

    /// Move the job from parameter set entry `from` to `to` (the same set, its host copy
    /// released or loaded again: host_release.rs). True if the job held `from`.
    /// A job with a partition bound for the CPU stays where it is.
    pub fn swap_srs(&self, from: &Arc<SrsEntry>, to: &Arc<SrsEntry>) -> bool {
        let mut p = self.progress.lock();
        match &p.srs {
            Some(held) if Arc::ptr_eq(held, from) && !p.needs_host_params => {
                p.srs = Some(to.clone());
                true
            }
            _ => false,
        }
    }

    pub fn add_synthesis(&self, d: Duration) {
        self.progress.lock().timings.synthesis += d;
    }

    pub fn add_gpu(&self, d: Duration) {
        self.progress.lock().timings.gpu_compute += d;
    }

    /// Record partition `index`'s proof; returns the concatenated proof once all are in.
    pub fn store_partition(&self, index: usize, proof: Vec<u8>) -> Option<Vec<u8>> {
        let mut p = self.progress.lock();
        if p.proofs[index].replace(proof).is_none() {
            p.remaining -= 1;
        }
        if p.remaining > 0 {
            return None;
        }
        Some(p.proofs.iter().flatten().flatten().copied().collect())
    }

    /// The outcome of a finished job (None while it runs).
    pub fn outcome(&self) -> Option<JobOutcome> {
        let state = self.state();
        if !state.is_final() {
            return None;
        }
        let p = self.progress.lock();
        let proof = if state == JobState::Completed {
            p.proofs.iter().flatten().flatten().copied().collect()
        } else {
            Vec::new()
        };
        Some(JobOutcome {
            state,
            proof,
            timings: p.timings.clone(),
        })
    }

    /// When the job finished, for retention.
    pub fn finished_at(&self) -> Option<Instant> {
        self.progress.lock().finished
    }
}

//! The job table: jobs by id (running or finished in this process, or finished before it and
//! read back from the journal) and by request id, with what a request id seen again means.
//!
//! Curio derives request ids from the work (`porep-<miner>-<sector>`, `wdpost-<miner>-<partition>-<rand>`, ...),
//! so a retry of a task arrives under the id of its first attempt, and a PoRep whose commit
//! phase 1 was redone (a new seed) arrives under it with a different payload. Hence:
//! - same id, same payload, job queued, running or completed: that job (idempotency);
//! - same id after the job FAILED or was CANCELLED: a new job (the retry runs again);
//! - same id, different payload: a new job, which takes the id over for lookups; an old job
//!   still unfinished is cancelled, since its proof is of an input its client has replaced
//!   (Curio expects a proof of the new input; refusing with ALREADY_EXISTS would leave the
//!   task failing until the old result's retention passed).
//!
//! The payload is compared by a SHA-256 digest of the proof fields (not the priority: the same
//! work asked for more urgently is the same work), journaled with the job. A finished job read
//! back from a journal written before digests were kept has none: a resubmission then counts
//! as a different payload and is proven again, since returning a stale proof costs a storage
//! provider more than proving twice.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest as _, Sha256};

use crate::job::{Error, JobId, JobState, ProofKind, Result};
use crate::kinds::{KindRequest, SyntheticShape};
use crate::record::{Job, JobOutcome};

/// SHA-256 of a request's proof fields.
pub type Digest = [u8; 32];

/// The digest of everything in `req` that decides the proof. Stable across versions (it is
/// journaled): fields in a fixed order, each length-prefixed, after a version tag.
pub fn payload_digest(req: &KindRequest) -> Digest {
    let KindRequest {
        kind,
        sector_size,
        registered_proof,
        vanilla_proof,
        vanilla_proofs,
        sector_number,
        miner_id,
        randomness,
        partition_index,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        synthetic_log_size,
        synthetic_partitions,
        synthetic_seed,
        synthetic_shape,
    } = req;
    let mut h = Sha256::new();
    let mut bytes = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    bytes(b"cuzk-payload-v1");
    bytes(kind.as_str().as_bytes());
    for n in [*sector_size, *registered_proof, *sector_number, *miner_id] {
        bytes(&n.to_le_bytes());
    }
    bytes(vanilla_proof);
    bytes(&(vanilla_proofs.len() as u64).to_le_bytes());
    for p in vanilla_proofs {
        bytes(p);
    }
    for b in [randomness, comm_r_old, comm_r_new, comm_d_new] {
        bytes(b);
    }
    for n in [*partition_index, *synthetic_log_size, *synthetic_partitions] {
        bytes(&n.to_le_bytes());
    }
    bytes(&synthetic_seed.to_le_bytes());
    // Only when set, so that digests journaled before shapes existed still match.
    if *synthetic_shape != SyntheticShape::Uniform {
        bytes(synthetic_shape.as_str().as_bytes());
    }
    h.finalize().into()
}

/// A job that finished before this start: only its outcome is kept (its request is gone),
/// served until its retention passes.
pub struct Archived {
    pub seq: u64,
    pub request_id: String,
    pub outcome: JobOutcome,
    pub finished_unix_ms: u64,
    /// None: journaled before digests were kept.
    pub digest: Option<Digest>,
}

/// A job id looked up.
pub enum Found {
    Live(Arc<Job>),
    Archived(JobOutcome),
}

/// What a submission under a request id is.
pub enum Resubmit {
    /// The job it names stands: answer with it.
    Existing(JobId),
    /// Start a new job; `superseded` is the unfinished job whose id it takes over.
    New { superseded: Option<Arc<Job>> },
}

#[derive(Default)]
pub struct Jobs {
    by_id: HashMap<JobId, Arc<Job>>,
    archived: HashMap<JobId, Archived>,
    /// The newest job under each request id.
    by_request: HashMap<String, JobId>,
}

impl Jobs {
    pub fn find(&self, id: &str) -> Result<Found> {
        if let Some(job) = self.by_id.get(id) {
            return Ok(Found::Live(job.clone()));
        }
        match self.archived.get(id) {
            Some(a) => Ok(Found::Archived(a.outcome.clone())),
            None => Err(Error::NotFound(id.to_string())),
        }
    }

    /// The rules of the module comment, for a submission of `request_id` with `digest`.
    pub fn resubmission(&self, request_id: &str, digest: &Digest) -> Resubmit {
        let fresh = Resubmit::New { superseded: None };
        let Some(id) = (!request_id.is_empty())
            .then(|| self.by_request.get(request_id))
            .flatten()
        else {
            return fresh;
        };
        let retried = |s: &JobState| matches!(s, JobState::Failed(_) | JobState::Cancelled);
        if let Some(job) = self.by_id.get(id) {
            let state = job.state();
            if retried(&state) {
                return fresh;
            }
            if &job.payload_digest != digest {
                let superseded = (!state.is_final()).then(|| job.clone());
                return Resubmit::New { superseded };
            }
            return Resubmit::Existing(id.clone());
        }
        match self.archived.get(id) {
            Some(a) if !retried(&a.outcome.state) && a.digest.as_ref() == Some(digest) => {
                Resubmit::Existing(id.clone())
            }
            _ => fresh,
        }
    }

    /// Add a job admitted now (it takes its request id over); returns the job that held the
    /// request id before, for undoing.
    pub fn insert(&mut self, job: Arc<Job>) -> Option<JobId> {
        let previous = if job.request_id.is_empty() {
            None
        } else {
            self.by_request
                .insert(job.request_id.clone(), job.id.clone())
        };
        self.by_id.insert(job.id.clone(), job);
        previous
    }

    /// Undo `insert` (the journal refused the job).
    pub fn remove_new(&mut self, job: &Job, previous: Option<JobId>) {
        self.by_id.remove(&job.id);
        if self.by_request.get(&job.request_id) == Some(&job.id) {
            match previous {
                Some(p) => self.by_request.insert(job.request_id.clone(), p),
                None => self.by_request.remove(&job.request_id),
            };
        }
    }

    /// Add a job read back from the journal. Its request id goes to the newest job under it
    /// (journal order is by job id, not by age).
    pub fn insert_recovered(&mut self, job: Arc<Job>) {
        let (rid, id, seq) = (job.request_id.clone(), job.id.clone(), job.seq);
        self.by_id.insert(id.clone(), job);
        self.claim(rid, id, seq);
    }

    pub fn insert_archived(&mut self, id: JobId, a: Archived) {
        let (rid, seq) = (a.request_id.clone(), a.seq);
        self.archived.insert(id.clone(), a);
        self.claim(rid, id, seq);
    }

    fn claim(&mut self, request_id: String, id: JobId, seq: u64) {
        if request_id.is_empty() {
            return;
        }
        let newer = self.by_request.get(&request_id).is_some_and(|held| {
            let held_seq = self
                .by_id
                .get(held)
                .map(|j| j.seq)
                .or_else(|| self.archived.get(held).map(|a| a.seq));
            held_seq.is_some_and(|s| s > seq)
        });
        if !newer {
            self.by_request.insert(request_id, id);
        }
    }

    /// Every job this process holds a record of (finished ones until they expire).
    pub fn all(&self) -> impl Iterator<Item = &Arc<Job>> {
        self.by_id.values()
    }

    pub fn queued(&self) -> usize {
        self.by_id
            .values()
            .filter(|j| j.state() == JobState::Queued)
            .count()
    }

    /// (pending, in progress) per kind.
    pub fn counts(&self) -> HashMap<ProofKind, (u32, u32)> {
        let mut counts: HashMap<ProofKind, (u32, u32)> = HashMap::new();
        for job in self.by_id.values() {
            let e = counts.entry(job.kind).or_default();
            match job.state() {
                JobState::Queued => e.0 += 1,
                JobState::Running => e.1 += 1,
                _ => {}
            }
        }
        counts
    }

    /// Forget finished jobs past their retention: this process's by `Instant` (`keep`), those
    /// read back from the journal by wall-clock finish time (`cutoff_unix_ms`).
    pub fn expire(&mut self, keep: Duration, cutoff_unix_ms: u64) {
        let mut expired: Vec<(JobId, String)> = self
            .by_id
            .values()
            .filter(|j| j.finished_at().is_some_and(|t| t.elapsed() > keep))
            .map(|j| (j.id.clone(), j.request_id.clone()))
            .collect();
        expired.extend(
            self.archived
                .iter()
                .filter(|(_, a)| a.finished_unix_ms < cutoff_unix_ms)
                .map(|(id, a)| (id.clone(), a.request_id.clone())),
        );
        for (id, req) in expired {
            self.by_id.remove(&id);
            self.archived.remove(&id);
            if self.by_request.get(&req) == Some(&id) {
                self.by_request.remove(&req);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::build_task;

    fn synthetic(seed: u64) -> KindRequest {
        let mut r = KindRequest::new(ProofKind::Synthetic);
        r.synthetic_log_size = 10;
        r.synthetic_partitions = 1;
        r.synthetic_seed = seed;
        r
    }

    fn job(seq: u64, request_id: &str, seed: u64) -> Arc<Job> {
        let req = synthetic(seed);
        let task = build_task(&req).unwrap();
        Arc::new(
            Job::new(
                format!("job-{seq}"),
                seq,
                request_id.into(),
                crate::Priority::Normal,
                task,
            )
            .with_payload_digest(payload_digest(&req)),
        )
    }

    fn archived(seq: u64, rid: &str, state: JobState, digest: Option<Digest>) -> Archived {
        Archived {
            seq,
            request_id: rid.into(),
            outcome: JobOutcome {
                state,
                proof: Vec::new(),
                timings: Default::default(),
            },
            finished_unix_ms: 1,
            digest,
        }
    }

    fn existing(r: Resubmit) -> Option<JobId> {
        match r {
            Resubmit::Existing(id) => Some(id),
            Resubmit::New { .. } => None,
        }
    }

    #[test]
    fn digest_covers_the_payload_not_the_priority() {
        let a = payload_digest(&synthetic(1));
        assert_eq!(a, payload_digest(&synthetic(1)));
        assert_ne!(a, payload_digest(&synthetic(2)));
        let mut moved = synthetic(1);
        moved.vanilla_proofs = vec![vec![1], vec![2, 3]];
        let mut regrouped = synthetic(1);
        regrouped.vanilla_proofs = vec![vec![1, 2], vec![3]];
        assert_ne!(payload_digest(&moved), payload_digest(&regrouped));
    }

    #[test]
    fn live_jobs_same_payload_existing_other_payload_supersedes() {
        let mut t = Jobs::default();
        let d1 = payload_digest(&synthetic(1));
        let d2 = payload_digest(&synthetic(2));
        assert!(t.insert(job(1, "porep-1-7", 1)).is_none());
        assert_eq!(
            existing(t.resubmission("porep-1-7", &d1)).as_deref(),
            Some("job-1")
        );
        match t.resubmission("porep-1-7", &d2) {
            Resubmit::New {
                superseded: Some(old),
            } => assert_eq!(old.id, "job-1"),
            _ => panic!("a new payload starts a new job superseding the queued one"),
        }
        // No request id: never deduplicated.
        assert!(existing(t.resubmission("", &d1)).is_none());
        // The new job takes the id over; undoing it gives it back.
        let new = job(2, "porep-1-7", 2);
        let prev = t.insert(new.clone());
        assert_eq!(prev.as_deref(), Some("job-1"));
        assert_eq!(
            existing(t.resubmission("porep-1-7", &d2)).as_deref(),
            Some("job-2")
        );
        t.remove_new(&new, prev);
        assert_eq!(
            existing(t.resubmission("porep-1-7", &d1)).as_deref(),
            Some("job-1")
        );
    }

    #[test]
    fn failed_cancelled_and_undigested_archives_run_again() {
        let mut t = Jobs::default();
        let d = payload_digest(&synthetic(1));
        t.insert_archived(
            "job-1".into(),
            archived(1, "a", JobState::Completed, Some(d)),
        );
        t.insert_archived(
            "job-2".into(),
            archived(2, "b", JobState::Failed("x".into()), Some(d)),
        );
        t.insert_archived(
            "job-3".into(),
            archived(3, "c", JobState::Cancelled, Some(d)),
        );
        t.insert_archived("job-4".into(), archived(4, "d", JobState::Completed, None));
        assert_eq!(existing(t.resubmission("a", &d)).as_deref(), Some("job-1"));
        for rid in ["b", "c", "d"] {
            assert!(existing(t.resubmission(rid, &d)).is_none(), "{rid}");
        }
        let other = payload_digest(&synthetic(9));
        assert!(existing(t.resubmission("a", &other)).is_none());
        // A failed live job too.
        let j = job(5, "e", 1);
        t.insert(j.clone());
        j.finish(JobState::Failed("boom".into()), |_| {});
        assert!(existing(t.resubmission("e", &d)).is_none());
    }

    #[test]
    fn recovery_gives_the_request_id_to_the_newest_job() {
        let mut t = Jobs::default();
        let d = payload_digest(&synthetic(2));
        // Journal order is by id string: job-10 comes before job-9.
        t.insert_recovered(job(10, "r", 2));
        t.insert_archived("job-9".into(), archived(9, "r", JobState::Cancelled, None));
        assert_eq!(existing(t.resubmission("r", &d)).as_deref(), Some("job-10"));
        t.expire(Duration::from_secs(1), 2);
        assert!(t.find("job-9").is_err(), "expired");
        assert!(t.find("job-10").is_ok(), "unfinished jobs stay");
    }
}

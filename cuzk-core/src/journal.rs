//! The durable job journal: every accepted job, its request until it ends, and its outcome
//! until its retention passes, in a redb file (`<data_dir>/journal.redb`). It is what lets a
//! daemon that was killed or stopped finish the jobs it had accepted, and answer AwaitProof
//! for jobs that finished before a restart.
//!
//! Schema (four tables, keyed by job id or name):
//! - `jobs`: job id -> [`JobEntry`] (identity, state, timestamps, proof bytes once completed).
//!   Only `Queued` and the final states are written: a running job that is interrupted is
//!   re-done from the start, so "running" need not survive.
//! - `requests`: job id -> the [`SubmitRequest`], kept while the job is unfinished (it may be
//!   hundreds of MB for a PoRep) and removed in the transaction that records its end.
//! - `digests`: job id -> the SHA-256 of its payload (jobs.rs), kept with the entry, so that a
//!   request id resubmitted after a restart is compared by payload. A table of its own, not a
//!   field of the entry: entries of journals written before it still decode (their jobs have
//!   no digest), and a daemon of that version reading a newer journal ignores the table.
//! - `meta`: `max_seq` -> the highest admission sequence number ever given, so that job ids
//!   never repeat even after every entry was pruned.
//!
//! Values are one format byte followed by bincode. Enums are stored as explicit codes (not
//! serde's variant index of our in-memory enums) so that reordering those enums cannot
//! change what old journals mean. An entry that does not decode is logged and skipped.
//!
//! Every write is one redb write transaction, committed with redb's default durability
//! (fsync before `commit` returns): a job is on disk before SubmitProof answers.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::job::{Error, JobState, JobTimings, Priority, ProofKind, Result, SubmitRequest};
use crate::jobs::Digest;
use crate::kinds::{KindRequest, SyntheticShape};

const JOBS: TableDefinition<&str, &[u8]> = TableDefinition::new("jobs");
const REQUESTS: TableDefinition<&str, &[u8]> = TableDefinition::new("requests");
const DIGESTS: TableDefinition<&str, &[u8]> = TableDefinition::new("digests");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const MAX_SEQ: &str = "max_seq";

/// The first byte of every encoded value; bump it when the layout changes incompatibly.
const FORMAT: u8 = 1;

/// The journal file's name inside the data directory.
pub const FILE_NAME: &str = "journal.redb";

/// What the journal knows of one job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobEntry {
    pub seq: u64,
    pub request_id: String,
    kind: u8,
    priority: u8,
    pub state: StoredState,
    /// The proof of a completed job; empty otherwise.
    pub proof: Vec<u8>,
    pub submitted_unix_ms: u64,
    pub finished_unix_ms: Option<u64>,
    timings_ms: StoredTimings,
}

/// A job's state as journaled. Append new variants only (bincode stores the variant index).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredState {
    Queued,
    Completed,
    Failed(String),
    Cancelled,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct StoredTimings {
    queue_wait: u64,
    srs_load: u64,
    synthesis: u64,
    gpu_compute: u64,
    total: u64,
}

impl JobEntry {
    /// A newly accepted job.
    pub fn queued(
        seq: u64,
        request_id: &str,
        kind: ProofKind,
        priority: Priority,
        submitted_unix_ms: u64,
    ) -> Self {
        JobEntry {
            seq,
            request_id: request_id.to_string(),
            kind: kind_code(kind),
            priority: priority_code(priority),
            state: StoredState::Queued,
            proof: Vec::new(),
            submitted_unix_ms,
            finished_unix_ms: None,
            timings_ms: StoredTimings::default(),
        }
    }

    /// The same job, ended in `state` (a final state) with its proof and timings.
    pub fn finished(
        mut self,
        state: &JobState,
        proof: &[u8],
        timings: &JobTimings,
        finished_unix_ms: u64,
    ) -> Self {
        self.state = match state {
            JobState::Completed => StoredState::Completed,
            JobState::Failed(msg) => StoredState::Failed(msg.clone()),
            JobState::Cancelled => StoredState::Cancelled,
            // Not final: callers only pass final states; record it as still to do.
            JobState::Queued | JobState::Running => StoredState::Queued,
        };
        self.proof = if self.state == StoredState::Completed {
            proof.to_vec()
        } else {
            Vec::new()
        };
        let ms = |d: Duration| d.as_millis() as u64;
        self.timings_ms = StoredTimings {
            queue_wait: ms(timings.queue_wait),
            srs_load: ms(timings.srs_load),
            synthesis: ms(timings.synthesis),
            gpu_compute: ms(timings.gpu_compute),
            total: ms(timings.total),
        };
        self.finished_unix_ms = Some(finished_unix_ms);
        self
    }

    pub fn kind(&self) -> Option<ProofKind> {
        kind_from_code(self.kind)
    }

    pub fn priority(&self) -> Option<Priority> {
        priority_from_code(self.priority)
    }

    pub fn is_final(&self) -> bool {
        self.state != StoredState::Queued
    }

    pub fn job_state(&self) -> JobState {
        match &self.state {
            StoredState::Queued => JobState::Queued,
            StoredState::Completed => JobState::Completed,
            StoredState::Failed(msg) => JobState::Failed(msg.clone()),
            StoredState::Cancelled => JobState::Cancelled,
        }
    }

    pub fn timings(&self) -> JobTimings {
        let d = Duration::from_millis;
        let t = &self.timings_ms;
        JobTimings {
            queue_wait: d(t.queue_wait),
            srs_load: d(t.srs_load),
            synthesis: d(t.synthesis),
            gpu_compute: d(t.gpu_compute),
            total: d(t.total),
        }
    }
}

/// One job read back at start.
#[derive(Debug)]
pub enum Recovered {
    /// Accepted but not finished: to be run again under its id.
    Unfinished {
        id: String,
        entry: JobEntry,
        request: Box<SubmitRequest>,
    },
    /// Finished: its outcome is served until its retention passes. `digest`: None for a job
    /// journaled before digests were kept.
    Finished {
        id: String,
        entry: JobEntry,
        digest: Option<Digest>,
    },
}

/// Everything read back at start.
#[derive(Debug, Default)]
pub struct Recovery {
    pub jobs: Vec<Recovered>,
    /// The highest sequence number ever given (0 for a new journal).
    pub max_seq: u64,
    /// Entries that could not be decoded (logged, left in place for inspection).
    pub skipped: usize,
}

pub struct Journal {
    db: Database,
    path: PathBuf,
}

impl Journal {
    /// Open (or create) the journal in `dir`, creating the directory if missing.
    pub fn open(dir: &Path) -> Result<Journal> {
        let path = dir.join(FILE_NAME);
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            Error::Internal(format!(
                "cannot open the job journal {}: {what}: {e}",
                path.display()
            ))
        };
        std::fs::create_dir_all(dir).map_err(|e| fail("creating its directory", &e))?;
        let db = Database::create(&path).map_err(|e| fail("opening", &e))?;
        // Create the tables up front, so that readers never meet a missing one.
        let txn = db.begin_write().map_err(|e| fail("writing", &e))?;
        txn.open_table(JOBS).map_err(|e| fail("jobs table", &e))?;
        txn.open_table(REQUESTS)
            .map_err(|e| fail("requests table", &e))?;
        txn.open_table(DIGESTS)
            .map_err(|e| fail("digests table", &e))?;
        txn.open_table(META).map_err(|e| fail("meta table", &e))?;
        txn.commit().map_err(|e| fail("committing", &e))?;
        Ok(Journal { db, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record an accepted job, its request and its payload's digest. If the job already has an
    /// entry (it ended before this write, e.g. cancelled at once) that entry is kept.
    pub fn record_submitted(
        &self,
        id: &str,
        entry: &JobEntry,
        req: &SubmitRequest,
        digest: &Digest,
    ) -> Result<()> {
        let entry_bytes = encode(entry)?;
        let req_bytes = encode_request(&StoredRequest::from(req))?;
        self.write(|txn| {
            let mut jobs = txn.open_table(JOBS)?;
            if jobs.get(id)?.is_some() {
                return Ok(());
            }
            jobs.insert(id, entry_bytes.as_slice())?;
            txn.open_table(REQUESTS)?.insert(id, req_bytes.as_slice())?;
            txn.open_table(DIGESTS)?.insert(id, digest.as_slice())?;
            let mut meta = txn.open_table(META)?;
            let max = meta.get(MAX_SEQ)?.map_or(0, |v| v.value());
            if entry.seq > max {
                meta.insert(MAX_SEQ, entry.seq)?;
            }
            Ok(())
        })
    }

    /// Record a job's end (a final `entry`) and drop its request, in one transaction.
    pub fn record_finished(&self, id: &str, entry: &JobEntry) -> Result<()> {
        let bytes = encode(entry)?;
        self.write(|txn| {
            txn.open_table(JOBS)?.insert(id, bytes.as_slice())?;
            txn.open_table(REQUESTS)?.remove(id)?;
            Ok(())
        })
    }

    /// Read every job back. Undecodable entries are logged and skipped.
    pub fn load(&self) -> Result<Recovery> {
        let read = || -> std::result::Result<Recovery, redb::Error> {
            let txn = self.db.begin_read()?;
            let jobs = txn.open_table(JOBS)?;
            let requests = txn.open_table(REQUESTS)?;
            let digests = txn.open_table(DIGESTS)?;
            let mut out = Recovery {
                max_seq: txn.open_table(META)?.get(MAX_SEQ)?.map_or(0, |v| v.value()),
                ..Recovery::default()
            };
            for row in jobs.iter()? {
                let (k, v) = row?;
                let id = k.value().to_string();
                let entry: JobEntry = match decode(v.value()) {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::error!(job = %id, error = %e, "journal: skipping an undecodable job entry");
                        out.skipped += 1;
                        continue;
                    }
                };
                out.max_seq = out.max_seq.max(entry.seq);
                if entry.is_final() {
                    let digest = digests
                        .get(id.as_str())?
                        .and_then(|v| Digest::try_from(v.value()).ok());
                    out.jobs.push(Recovered::Finished { id, entry, digest });
                    continue;
                }
                let request = match requests.get(id.as_str())? {
                    None => Err("its request is missing".to_string()),
                    Some(v) => decode_request(v.value())
                        .map_err(|e| e.to_string())
                        .and_then(SubmitRequest::try_from)
                        .map(Box::new),
                };
                match request {
                    Ok(request) => out.jobs.push(Recovered::Unfinished { id, entry, request }),
                    Err(e) => {
                        tracing::error!(job = %id, error = %e, "journal: skipping an unfinished job whose request cannot be read");
                        out.skipped += 1;
                    }
                }
            }
            Ok(out)
        };
        read().map_err(|e| self.error("reading", e))
    }

    /// Delete finished jobs that ended before `cutoff_unix_ms`; returns how many.
    pub fn prune(&self, cutoff_unix_ms: u64) -> Result<usize> {
        let expired = |v: &[u8]| {
            decode::<JobEntry>(v)
                .ok()
                .and_then(|e| e.finished_unix_ms.filter(|_| e.is_final()))
                .is_some_and(|t| t < cutoff_unix_ms)
        };
        // A read first: most passes of the retention loop find nothing and need no fsync.
        let find = || -> std::result::Result<Vec<String>, redb::Error> {
            let txn = self.db.begin_read()?;
            let jobs = txn.open_table(JOBS)?;
            let mut ids = Vec::new();
            for row in jobs.iter()? {
                let (k, v) = row?;
                if expired(v.value()) {
                    ids.push(k.value().to_string());
                }
            }
            Ok(ids)
        };
        let ids = find().map_err(|e| self.error("reading", e))?;
        if ids.is_empty() {
            return Ok(0);
        }
        self.write(|txn| {
            let mut jobs = txn.open_table(JOBS)?;
            let mut requests = txn.open_table(REQUESTS)?;
            let mut digests = txn.open_table(DIGESTS)?;
            for id in &ids {
                jobs.remove(id.as_str())?;
                requests.remove(id.as_str())?;
                digests.remove(id.as_str())?;
            }
            Ok(())
        })?;
        Ok(ids.len())
    }

    /// Run `f` in one write transaction and commit it (durably).
    fn write(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> std::result::Result<(), redb::Error>,
    ) -> Result<()> {
        let run = || -> std::result::Result<(), redb::Error> {
            let txn = self.db.begin_write()?;
            f(&txn)?;
            txn.commit()?;
            Ok(())
        };
        run().map_err(|e| self.error("writing", e))
    }

    fn error(&self, what: &str, e: redb::Error) -> Error {
        Error::Internal(format!("job journal {}: {what}: {e}", self.path.display()))
    }
}

/// Milliseconds since the Unix epoch: finished results are retained by wall-clock time,
/// since the journal outlives the process (an `Instant` does not).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn now_unix_ms() -> u64 {
    unix_ms(SystemTime::now())
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut out = vec![FORMAT];
    bincode::serialize_into(&mut out, value)
        .map_err(|e| Error::Internal(format!("encoding a journal entry: {e}")))?;
    Ok(out)
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> std::result::Result<T, String> {
    match bytes.split_first() {
        Some((&FORMAT, rest)) => bincode::deserialize(rest).map_err(|e| e.to_string()),
        Some((v, _)) => Err(format!("unknown entry format {v}")),
        None => Err("empty entry".into()),
    }
}

/// Requests are stored in format 2: format 1's fields and `synthetic_shape` after them.
const REQUEST_FORMAT: u8 = 2;

fn encode_request(r: &StoredRequest) -> Result<Vec<u8>> {
    let mut out = encode(r)?;
    out[0] = REQUEST_FORMAT;
    Ok(out)
}

/// Reads format 2 and format 1. bincode lays out a struct as its fields in order, so a
/// format-1 request is a format-2 one without its last byte: shape code 0 (uniform), the
/// only shape there was.
fn decode_request(bytes: &[u8]) -> std::result::Result<StoredRequest, String> {
    match bytes.split_first() {
        Some((&REQUEST_FORMAT, rest)) => bincode::deserialize(rest).map_err(|e| e.to_string()),
        Some((&FORMAT, rest)) => {
            let mut v = rest.to_vec();
            v.push(0);
            bincode::deserialize(&v).map_err(|e| e.to_string())
        }
        _ => decode(bytes),
    }
}

/// The stored form of a SubmitRequest. A mirror, not serde on `KindRequest` itself, so that
/// the engine's types stay free to change while old journals still decode; a field added to
/// `KindRequest` fails to compile here until it is stored too.
#[derive(Serialize, Deserialize)]
struct StoredRequest {
    request_id: String,
    /// 0: the kind's default.
    priority: u8,
    kind: u8,
    sector_size: u64,
    registered_proof: u64,
    vanilla_proof: Vec<u8>,
    vanilla_proofs: Vec<Vec<u8>>,
    sector_number: u64,
    miner_id: u64,
    randomness: Vec<u8>,
    partition_index: u32,
    comm_r_old: Vec<u8>,
    comm_r_new: Vec<u8>,
    comm_d_new: Vec<u8>,
    synthetic_log_size: u32,
    synthetic_partitions: u32,
    synthetic_seed: u64,
    /// Appended in request format 2 (see `decode_request`): 0 uniform, 1 porep.
    synthetic_shape: u8,
}

impl From<&SubmitRequest> for StoredRequest {
    fn from(r: &SubmitRequest) -> Self {
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
        } = r.proof.clone();
        StoredRequest {
            request_id: r.request_id.clone(),
            priority: r.priority.map_or(0, priority_code),
            kind: kind_code(kind),
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
            synthetic_shape: synthetic_shape.code(),
        }
    }
}

impl TryFrom<StoredRequest> for SubmitRequest {
    type Error = String;
    fn try_from(s: StoredRequest) -> std::result::Result<Self, String> {
        let kind = kind_from_code(s.kind).ok_or_else(|| format!("unknown kind code {}", s.kind))?;
        let priority = match s.priority {
            0 => None,
            p => Some(priority_from_code(p).ok_or_else(|| format!("unknown priority code {p}"))?),
        };
        Ok(SubmitRequest {
            request_id: s.request_id,
            priority,
            proof: KindRequest {
                kind,
                sector_size: s.sector_size,
                registered_proof: s.registered_proof,
                vanilla_proof: s.vanilla_proof,
                vanilla_proofs: s.vanilla_proofs,
                sector_number: s.sector_number,
                miner_id: s.miner_id,
                randomness: s.randomness,
                partition_index: s.partition_index,
                comm_r_old: s.comm_r_old,
                comm_r_new: s.comm_r_new,
                comm_d_new: s.comm_d_new,
                synthetic_log_size: s.synthetic_log_size,
                synthetic_partitions: s.synthetic_partitions,
                synthetic_seed: s.synthetic_seed,
                synthetic_shape: SyntheticShape::from_code(s.synthetic_shape)
                    .ok_or_else(|| format!("unknown synthetic shape code {}", s.synthetic_shape))?,
            },
        })
    }
}

// Stored codes follow the wire enums' numbers (proto-spec.md); they must never change.
fn kind_code(k: ProofKind) -> u8 {
    match k {
        ProofKind::PorepSealCommit => 1,
        ProofKind::SnapDealsUpdate => 2,
        ProofKind::WindowPostPartition => 3,
        ProofKind::WinningPost => 4,
        ProofKind::Synthetic => 5,
    }
}

fn kind_from_code(c: u8) -> Option<ProofKind> {
    ProofKind::ALL.into_iter().find(|&k| kind_code(k) == c)
}

fn priority_code(p: Priority) -> u8 {
    match p {
        Priority::Low => 1,
        Priority::Normal => 2,
        Priority::High => 3,
        Priority::Critical => 4,
    }
}

fn priority_from_code(c: u8) -> Option<Priority> {
    [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ]
    .into_iter()
    .find(|&p| priority_code(p) == c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(seed: u64) -> SubmitRequest {
        let mut proof = KindRequest::new(ProofKind::Synthetic);
        proof.synthetic_log_size = 10;
        proof.synthetic_partitions = 2;
        proof.synthetic_seed = seed;
        proof.vanilla_proofs = vec![vec![1, 2], vec![3]];
        SubmitRequest {
            request_id: format!("req-{seed}"),
            priority: Some(Priority::High),
            proof,
        }
    }

    fn entry(seq: u64) -> JobEntry {
        JobEntry::queued(
            seq,
            &format!("req-{seq}"),
            ProofKind::Synthetic,
            Priority::High,
            1000,
        )
    }

    fn unfinished(r: &Recovery) -> Vec<(&str, &JobEntry, &SubmitRequest)> {
        let mut v: Vec<_> = r
            .jobs
            .iter()
            .filter_map(|j| match j {
                Recovered::Unfinished { id, entry, request } => {
                    Some((id.as_str(), entry, &**request))
                }
                _ => None,
            })
            .collect();
        v.sort_by_key(|j| j.1.seq);
        v
    }

    fn finished(r: &Recovery) -> Vec<(&str, &JobEntry)> {
        r.jobs
            .iter()
            .filter_map(|j| match j {
                Recovered::Finished { id, entry, .. } => Some((id.as_str(), entry)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn round_trip_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let j = Journal::open(dir.path()).unwrap();
            for seq in [3, 7] {
                j.record_submitted(
                    &format!("job-{seq}"),
                    &entry(seq),
                    &request(seq),
                    &[seq as u8; 32],
                )
                .unwrap();
            }
            let timings = JobTimings {
                synthesis: Duration::from_millis(12),
                total: Duration::from_millis(40),
                ..JobTimings::default()
            };
            let done = entry(7).finished(&JobState::Completed, &[9; 192], &timings, 5000);
            j.record_finished("job-7", &done).unwrap();
        }
        // Reopened, as after a restart.
        let j = Journal::open(dir.path()).unwrap();
        let r = j.load().unwrap();
        assert_eq!((r.max_seq, r.skipped), (7, 0));
        let u = unfinished(&r);
        assert_eq!(u.len(), 1);
        let (id, e, req) = u[0];
        assert_eq!(id, "job-3");
        assert_eq!(e, &entry(3));
        assert_eq!(e.kind(), Some(ProofKind::Synthetic));
        assert_eq!(e.priority(), Some(Priority::High));
        assert_eq!(req.request_id, "req-3");
        assert_eq!(req.priority, Some(Priority::High));
        assert_eq!(req.proof.synthetic_seed, 3);
        assert_eq!(req.proof.vanilla_proofs, vec![vec![1, 2], vec![3]]);
        let f = finished(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].0, "job-7");
        assert_eq!(f[0].1.job_state(), JobState::Completed);
        assert_eq!(f[0].1.proof, vec![9; 192]);
        assert_eq!(f[0].1.finished_unix_ms, Some(5000));
        assert_eq!(f[0].1.timings().synthesis, Duration::from_millis(12));
        assert!(
            matches!(&r.jobs.iter().find(|j| matches!(j, Recovered::Finished { .. })),
                Some(Recovered::Finished { digest: Some(d), .. }) if *d == [7; 32]),
            "the digest is kept with the finished entry"
        );
        // The finished job's request was dropped with its end.
        let txn = j.db.begin_read().unwrap();
        assert!(txn
            .open_table(REQUESTS)
            .unwrap()
            .get("job-7")
            .unwrap()
            .is_none());
    }

    #[test]
    fn an_ended_job_is_not_reopened_by_a_late_submit_record() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let cancelled = entry(1).finished(&JobState::Cancelled, &[], &JobTimings::default(), 9);
        j.record_finished("job-1", &cancelled).unwrap();
        j.record_submitted("job-1", &entry(1), &request(1), &[1; 32])
            .unwrap();
        let r = j.load().unwrap();
        assert!(unfinished(&r).is_empty());
        assert_eq!(finished(&r)[0].1.state, StoredState::Cancelled);
        assert_eq!(r.max_seq, 1, "the sequence number is kept either way");
    }

    #[test]
    fn entries_of_journals_without_digests_read_back_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        // As the version before digests wrote them: the entry alone, finished.
        let done =
            encode(&entry(4).finished(&JobState::Completed, &[1; 192], &JobTimings::default(), 9))
                .unwrap();
        j.write(|txn| {
            txn.open_table(JOBS)?.insert("job-4", done.as_slice())?;
            Ok(())
        })
        .unwrap();
        let r = j.load().unwrap();
        assert!(matches!(
            r.jobs.as_slice(),
            [Recovered::Finished { digest: None, .. }]
        ));
        // Pruned with its digest (none here): no error.
        assert_eq!(j.prune(u64::MAX).unwrap(), 1);
    }

    #[test]
    fn corrupt_entries_are_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        j.record_submitted("job-1", &entry(1), &request(1), &[1; 32])
            .unwrap();
        j.record_submitted("job-2", &entry(2), &request(2), &[2; 32])
            .unwrap();
        j.record_submitted("job-3", &entry(3), &request(3), &[3; 32])
            .unwrap();
        j.write(|txn| {
            let mut jobs = txn.open_table(JOBS)?;
            jobs.insert("job-1", [FORMAT, 0xff, 0xff].as_slice())?;
            jobs.insert("job-bad-format", [99u8, 1, 2].as_slice())?;
            jobs.insert("job-empty", [].as_slice())?;
            // job-2's entry is fine but its request is garbage.
            txn.open_table(REQUESTS)?
                .insert("job-2", [FORMAT, 7].as_slice())?;
            Ok(())
        })
        .unwrap();
        let r = j.load().unwrap();
        assert_eq!(r.skipped, 4);
        let u = unfinished(&r);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].0, "job-3");
        // Pruning walks past them too.
        assert_eq!(j.prune(u64::MAX).unwrap(), 0);
    }

    #[test]
    fn prune_drops_only_finished_jobs_past_the_cutoff() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let t = JobTimings::default();
        for (seq, fin) in [(1u64, Some(100u64)), (2, Some(200)), (3, None)] {
            let id = format!("job-{seq}");
            j.record_submitted(&id, &entry(seq), &request(seq), &[0; 32])
                .unwrap();
            if let Some(at) = fin {
                let e = entry(seq).finished(&JobState::Failed("boom".into()), &[], &t, at);
                j.record_finished(&id, &e).unwrap();
            }
        }
        assert_eq!(j.prune(150).unwrap(), 1);
        let r = j.load().unwrap();
        let f = finished(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].0, "job-2");
        assert_eq!(f[0].1.job_state(), JobState::Failed("boom".into()));
        assert_eq!(unfinished(&r).len(), 1, "unfinished jobs are never pruned");
        // Pruning everything keeps the sequence high-water mark.
        assert_eq!(j.prune(u64::MAX).unwrap(), 1);
        assert_eq!(j.load().unwrap().max_seq, 3);
    }

    #[test]
    fn a_journal_held_open_elsewhere_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Journal::open(dir.path()).unwrap();
        let err = Journal::open(dir.path()).err().expect("second open fails");
        assert!(err.to_string().contains("journal.redb"), "{err}");
    }
}

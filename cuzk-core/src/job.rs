//! What a job is: its kind, priority, identity, lifecycle and errors.

use std::fmt;
use std::time::Duration;

use crate::prove::ProveError;

/// The proof kinds the daemon serves; numbers follow the wire enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    PorepSealCommit,
    SnapDealsUpdate,
    WindowPostPartition,
    WinningPost,
    Synthetic,
}

impl ProofKind {
    pub const ALL: [ProofKind; 5] = [
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPostPartition,
        ProofKind::WinningPost,
        ProofKind::Synthetic,
    ];

    /// Urgency when the client leaves priority unset: a WinningPoSt missed is a block reward
    /// lost; a WindowPoSt missed is a penalty; sealing can wait.
    pub fn default_priority(self) -> Priority {
        match self {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPostPartition => Priority::High,
            ProofKind::PorepSealCommit | ProofKind::SnapDealsUpdate => Priority::Normal,
            ProofKind::Synthetic => Priority::Normal,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProofKind::PorepSealCommit => "porep",
            ProofKind::SnapDealsUpdate => "snap",
            ProofKind::WindowPostPartition => "window",
            ProofKind::WinningPost => "winning",
            ProofKind::Synthetic => "synthetic",
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Scheduling priority; the derived order is the service order (Critical first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    Low,
    Normal,
    High,
    Critical,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

/// A job's id as the client sees it.
pub type JobId = String;

/// Where a job is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Completed,
    Failed(String),
    Cancelled,
}

impl JobState {
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed(_) | JobState::Cancelled
        )
    }
}

/// A job's outcome and where its time went.
#[derive(Clone, Debug, Default)]
pub struct JobTimings {
    pub queue_wait: Duration,
    pub srs_load: Duration,
    pub synthesis: Duration,
    pub gpu_compute: Duration,
    pub total: Duration,
}

/// Errors of the engine. The transport maps each to one status code, in one place.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is malformed; the message names the field.
    #[error("{field}: {reason}")]
    InvalidArgument { field: &'static str, reason: String },
    #[error("unknown job {0}")]
    NotFound(String),
    #[error("queue full ({capacity} jobs); retry later")]
    QueueFull { capacity: usize },
    #[error("daemon is shutting down")]
    ShuttingDown,
    #[error("parameters: {0}")]
    Params(String),
    /// The set is not resident, from a handle that does not wait for loads
    /// (`SrsCache::without_waiting`): the engine loads it and retries; no client sees this.
    #[error("parameter set {0} is not loaded yet")]
    ParamsNotResident(String),
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] bellpepper_core::SynthesisError),
    #[error("proving failed: {0}")]
    Prove(#[from] ProveError),
    #[error("proof failed self-verification: {0}")]
    Verification(String),
    #[error("job cancelled")]
    Cancelled,
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            field,
            reason: reason.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A request as the engine takes it: what to prove, how urgently, under which key.
#[derive(Clone, Debug)]
pub struct SubmitRequest {
    /// Idempotency key: the same id returns the same job. Empty: none.
    pub request_id: String,
    /// None: the kind's default.
    pub priority: Option<Priority>,
    pub proof: crate::kinds::KindRequest,
}

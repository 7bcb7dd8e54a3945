//! cuzk's engine: everything but transport and command line.
//!
//! The way of a job: `job` (what it is) -> `queue` (admission, priority order) -> `synth`
//! (circuit -> a/b/c + assignments) -> `prove` (H polynomial and MSMs through a `Backend`)
//! -> `finalize` (assemble, self-verify) -> results, driven by `engine`.
pub mod backend;
pub mod job;
pub mod kinds;
pub mod prove;
pub mod srs;
pub mod synth;

pub use job::{Error, JobId, JobState, Priority, ProofKind, Result};

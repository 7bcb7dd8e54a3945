//! One file per proof kind. Each turns a validated request into a `ProofTask`: the circuits
//! of its partitions, the parameter set they prove under, and how to check the result.

use std::sync::Arc;

use blstrs::Scalar;

use crate::job::{ProofKind, Result};
use crate::srs::{SrsCache, SrsEntry};
use crate::synth::Synthesized;

pub mod synthetic;
mod synthetic_task;

pub use synthetic_task::SyntheticTask;

/// A job's proving work, independent of transport. Implementations are cheap to share:
/// partitions of one job are synthesized concurrently through `&self`.
pub trait ProofTask: Send + Sync {
    fn kind(&self) -> ProofKind;

    /// Number of partitions (one circuit and one 192-byte proof each).
    fn partitions(&self) -> usize;

    /// Load (or fetch the cached) parameter set the partitions prove under.
    fn params(&self, srs: &SrsCache) -> Result<Arc<SrsEntry>>;

    /// Build and synthesize partition `index`'s circuit.
    fn synthesize(&self, index: usize) -> Result<Synthesized>;

    /// The public inputs the verifier uses for partition `index`. The default takes them
    /// from synthesis; kinds that can compute them independently of the witness should, so
    /// that self-verification also catches a witness inconsistent with the public inputs.
    fn public_inputs(&self, _index: usize, synthesized_inputs: &[Scalar]) -> Result<Vec<Scalar>> {
        Ok(synthesized_inputs.to_vec())
    }

    /// Optional whole-job check after all partitions are proven, with the concatenated proof
    /// bytes (e.g. a stock Filecoin verifier). Called only when self-verification is on.
    fn verify_job(&self, _proof: &[u8]) -> Result<()> {
        Ok(())
    }
}

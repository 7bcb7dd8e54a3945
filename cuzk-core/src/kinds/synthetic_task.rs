//! The synthetic kind as a job: `partitions` independent circuits of 2^log_size constraints.

use std::sync::Arc;

use blstrs::Scalar;

use super::synthetic::{SyntheticCircuit, MAX_LOG, MIN_LOG};
use super::ProofTask;
use crate::job::{Error, ProofKind, Result};
use crate::srs::{SrsCache, SrsEntry};
use crate::synth::{synthesize_shaped, Synthesized};

pub const MAX_PARTITIONS: u32 = 64;

#[derive(Clone, Debug)]
pub struct SyntheticTask {
    pub log_size: u32,
    pub partitions: u32,
    pub seed: u64,
}

impl SyntheticTask {
    /// Validate the request's synthetic fields.
    pub fn new(log_size: u32, partitions: u32, seed: u64) -> Result<Self> {
        if !(MIN_LOG..=MAX_LOG).contains(&log_size) {
            return Err(Error::invalid(
                "synthetic_log_size",
                format!("{log_size} is outside {MIN_LOG}..={MAX_LOG}"),
            ));
        }
        if !(1..=MAX_PARTITIONS).contains(&partitions) {
            return Err(Error::invalid(
                "synthetic_partitions",
                format!("{partitions} is outside 1..={MAX_PARTITIONS}"),
            ));
        }
        Ok(SyntheticTask {
            log_size,
            partitions,
            seed,
        })
    }

    fn circuit(&self, index: usize) -> SyntheticCircuit {
        // Each partition proves a different witness, as real partitions do.
        SyntheticCircuit::new(self.log_size, self.seed.wrapping_add(index as u64))
    }
}

impl ProofTask for SyntheticTask {
    fn kind(&self) -> ProofKind {
        ProofKind::Synthetic
    }

    fn partitions(&self) -> usize {
        self.partitions as usize
    }

    fn params(&self, srs: &SrsCache) -> Result<Arc<SrsEntry>> {
        srs.synthetic(self.log_size)
    }

    fn synthesize(&self, index: usize) -> Result<Synthesized> {
        // The circuit's structure depends on its size alone, never on the seed.
        synthesize_shaped(&SyntheticCircuit::srs_id(self.log_size), || {
            Ok::<_, Error>(self.circuit(index))
        })
    }

    fn public_inputs(&self, index: usize, _synthesized: &[Scalar]) -> Result<Vec<Scalar>> {
        Ok(self.circuit(index).public_inputs())
    }
}

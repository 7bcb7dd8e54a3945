//! The synthetic kind as a job: `partitions` independent circuits of 2^log_size constraints,
//! of one of two shapes: the uniform benchmark circuit (`synthetic`) or the PoRep-shaped one
//! (`porep_shaped`, up to a 32 GiB partition's 2^27).

use std::sync::Arc;

use blstrs::Scalar;

use super::porep_shaped::{self, PorepShaped};
use super::synthetic::{self, SyntheticCircuit};
use super::ProofTask;
use crate::job::{Error, ProofKind, Result};
use crate::srs::{SrsCache, SrsEntry};
use crate::synth::{synthesize_shaped, Synthesized};

pub const MAX_PARTITIONS: u32 = 64;

/// Which synthetic circuit a job proves (wire field `synthetic_shape`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SyntheticShape {
    /// Wide witness values, dense A and B ([`SyntheticCircuit`]).
    #[default]
    Uniform,
    /// Bit-heavy witness, B a quarter dense, like a PoRep partition ([`PorepShaped`]).
    Porep,
}

impl SyntheticShape {
    pub fn as_str(self) -> &'static str {
        match self {
            SyntheticShape::Uniform => "uniform",
            SyntheticShape::Porep => "porep",
        }
    }

    /// The wire's string; empty is the default (uniform).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "" | "uniform" => Ok(SyntheticShape::Uniform),
            "porep" => Ok(SyntheticShape::Porep),
            other => Err(Error::invalid(
                "synthetic_shape",
                format!("{other:?} is not a shape (uniform | porep)"),
            )),
        }
    }

    /// Journal code; never renumber.
    pub fn code(self) -> u8 {
        match self {
            SyntheticShape::Uniform => 0,
            SyntheticShape::Porep => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(SyntheticShape::Uniform),
            1 => Some(SyntheticShape::Porep),
            _ => None,
        }
    }

    fn log_range(self) -> std::ops::RangeInclusive<u32> {
        match self {
            SyntheticShape::Uniform => synthetic::MIN_LOG..=synthetic::MAX_LOG,
            SyntheticShape::Porep => porep_shaped::MIN_LOG..=porep_shaped::MAX_LOG,
        }
    }

    /// The parameter set's id for circuits of 2^log_size constraints.
    pub fn srs_id(self, log_size: u32) -> String {
        match self {
            SyntheticShape::Uniform => SyntheticCircuit::srs_id(log_size),
            SyntheticShape::Porep => porep_shaped::PorepShape::srs_id(log_size),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SyntheticTask {
    pub log_size: u32,
    pub partitions: u32,
    pub seed: u64,
    pub shape: SyntheticShape,
}

impl SyntheticTask {
    /// Validate the request's synthetic fields.
    pub fn new(log_size: u32, partitions: u32, seed: u64, shape: SyntheticShape) -> Result<Self> {
        let range = shape.log_range();
        if !range.contains(&log_size) {
            return Err(Error::invalid(
                "synthetic_log_size",
                format!(
                    "{log_size} is outside {}..={} for the {} shape",
                    range.start(),
                    range.end(),
                    shape.as_str()
                ),
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
            shape,
        })
    }

    /// Each partition proves a different witness, as real partitions do.
    fn seed_of(&self, index: usize) -> u64 {
        self.seed.wrapping_add(index as u64)
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
        srs.synthetic_set(self.shape, self.log_size)
    }

    fn synthesize(&self, index: usize) -> Result<Synthesized> {
        let seed = self.seed_of(index);
        match self.shape {
            // The circuit's structure depends on its size alone, never on the seed.
            SyntheticShape::Uniform => {
                synthesize_shaped(&SyntheticCircuit::srs_id(self.log_size), || {
                    Ok::<_, Error>(SyntheticCircuit::new(self.log_size, seed))
                })
            }
            SyntheticShape::Porep => {
                let circuit = PorepShaped::new(self.log_size, seed);
                Ok(if crate::synth::defers_abc() {
                    circuit
                        .synthesize_witness()
                        .map_err(|e| Error::Internal(format!("PoRep-shaped matrices: {e}")))?
                } else {
                    circuit.synthesize_direct()
                })
            }
        }
    }

    fn public_inputs(&self, index: usize, _synthesized: &[Scalar]) -> Result<Vec<Scalar>> {
        let seed = self.seed_of(index);
        Ok(match self.shape {
            SyntheticShape::Uniform => SyntheticCircuit::new(self.log_size, seed).public_inputs(),
            SyntheticShape::Porep => PorepShaped::new(self.log_size, seed).public_inputs(),
        })
    }
}

//! What the prover reads of a proving key: its parameter set's id, the parameters, and the
//! lengths of their point vectors.
//!
//! The lengths are their own field because a set's host copy of its big vectors may be
//! released once the devices hold them (host_release.rs): the parameters then keep only the
//! verifying key and the input parts of A and B (a few points, which the smallest MSMs
//! read on the host), and the lengths say what the released vectors were.

use bellperson::groth16::Parameters;
use blstrs::Bls12;

use crate::backend::{Bases, Query};

/// The lengths of a key's point vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyLens {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl KeyLens {
    pub fn of(params: &Parameters<Bls12>) -> Self {
        KeyLens {
            h: params.h.len(),
            l: params.l.len(),
            a: params.a.len(),
            b_g1: params.b_g1.len(),
            b_g2: params.b_g2.len(),
        }
    }
}

/// A proving key as the prover reads it.
#[derive(Clone, Copy)]
pub struct Key<'a> {
    pub srs_id: &'a str,
    pub params: &'a Parameters<Bls12>,
    pub lens: KeyLens,
}

impl<'a> Key<'a> {
    /// A key whose vectors are all on the host.
    pub fn new(srs_id: &'a str, params: &'a Parameters<Bls12>) -> Self {
        Key {
            srs_id,
            params,
            lens: KeyLens::of(params),
        }
    }

    /// Points `from..to` of one of the key's vectors (`host`) as MSM bases: on the host
    /// where the host still has them (always the case for the input parts), else released
    /// bases of that many points.
    pub fn bases<A>(&self, query: Query, host: &'a [A], from: usize, to: usize) -> Bases<'a, A> {
        match host.get(from..to) {
            Some(points) => Bases::new(self.srs_id, query, points),
            None => Bases::released(self.srs_id, query, to - from),
        }
    }
}

//! Witness-only synthesis: run a circuit for its variable assignments alone. The enforce
//! closures are never called, so no linear combination is built or evaluated inside them;
//! the constraint matrices recorded once per circuit shape (`crate::matrices`) turn the
//! assignments into a, b and c afterwards.
//!
//! Allocation follows `Synthesized` (and bellperson's `ProvingAssignment`) call for call:
//! input 0 is the constant one, `extend` drops the other system's own one, so the
//! assignments index exactly as the recorded matrices' columns do.
//!
//! For a device that unpacks the aux assignment itself, it is written packed as it is
//! allocated (`WitnessCs::packed`): a 32 GiB PoRep partition's 130M values, 98.7% of them
//! bits, take ~120 MB instead of 4.2 GB, and the memory is never touched twice.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::packed::PackedScalars;

/// The assignments of one circuit, and how many constraints it enforced (to check the
/// circuit against the matrices it is about to be evaluated with).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WitnessCs {
    /// Public inputs; `input[0]` is the constant one.
    pub input: Vec<Scalar>,
    /// The aux assignment, unless it is written packed.
    pub aux: Vec<Scalar>,
    /// The aux assignment, written packed (`WitnessCs::packed`; `aux` stays empty).
    pub packed: Option<PackedScalars>,
    /// Constraints enforced by the circuit (without the prover's input constraints).
    pub constraints: usize,
}

impl WitnessCs {
    /// An empty system holding only the constant one, as a proof starts.
    pub fn with_one() -> Self {
        WitnessCs {
            input: vec![Scalar::ONE],
            ..WitnessCs::default()
        }
    }

    /// Room for the assignments of a circuit whose shape is known, so the vectors grow
    /// without reallocating (a 32 GiB PoRep partition has ~130M aux variables).
    pub fn with_capacity(inputs: usize, aux: usize) -> Self {
        let mut input = Vec::with_capacity(inputs.max(1));
        input.push(Scalar::ONE);
        WitnessCs {
            input,
            aux: Vec::with_capacity(aux),
            ..WitnessCs::default()
        }
    }

    /// `with_capacity`, the aux assignment written packed.
    pub fn packed(inputs: usize, aux: usize) -> Self {
        WitnessCs {
            packed: Some(PackedScalars::with_capacity(aux)),
            ..WitnessCs::with_capacity(inputs, 0)
        }
    }

    /// Aux variables allocated.
    pub fn aux_len(&self) -> usize {
        self.packed.as_ref().map_or(self.aux.len(), |p| p.len())
    }

    /// Aux variable `i`.
    pub fn aux_at(&self, i: usize) -> Scalar {
        self.packed
            .as_ref()
            .map_or_else(|| self.aux[i], |p| p.get(i))
    }

    /// The aux assignment as a plain vector.
    pub fn into_plain_aux(self) -> Vec<Scalar> {
        match self.packed {
            Some(p) => p.unpack(),
            None => self.aux,
        }
    }
}

/// Run `circuit` for its witness.
pub fn synthesize_witness<C: bellpepper_core::Circuit<Scalar>>(
    circuit: C,
    mut cs: WitnessCs,
) -> Result<WitnessCs, SynthesisError> {
    circuit.synthesize(&mut cs)?;
    Ok(cs)
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn new() -> Self {
        // `extend`'s contract (bellperson's too): a fresh system allocates its own one
        // explicitly, which `extend` then skips.
        WitnessCs::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let x = f()?;
        match &mut self.packed {
            Some(p) => p.push(&x),
            None => self.aux.push(x),
        }
        Ok(Variable::new_unchecked(Index::Aux(self.aux_len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    // Extensible like `Synthesized`: circuits that split their work over sub-systems
    // (FallbackPoSt's sectors) must take the same path here, or the allocation order, and
    // with it every column of the matrices, would differ.
    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        self.input.extend_from_slice(&other.input[1..]);
        match (&mut self.packed, &other.packed) {
            (None, None) => self.aux.extend_from_slice(&other.aux),
            (Some(p), Some(o)) => p.extend_from(o, 0),
            (Some(p), None) => other.aux.iter().for_each(|x| p.push(x)),
            (None, Some(o)) => self.aux.extend(o.unpack()),
        }
        self.constraints += other.constraints;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::synthetic::SyntheticCircuit;
    use crate::synth::synthesize_partition;

    #[test]
    fn assignments_match_full_synthesis() {
        for log in [4, 9] {
            let full = synthesize_partition(SyntheticCircuit::new(log, 7)).unwrap();
            let w =
                synthesize_witness(SyntheticCircuit::new(log, 7), WitnessCs::with_one()).unwrap();
            assert_eq!(w.input, full.input);
            assert_eq!(w.aux, full.aux);
            // Full synthesis adds one constraint per input.
            assert_eq!(w.constraints + w.input.len(), full.num_constraints());
        }
    }

    #[test]
    fn packed_assignments_equal_plain() {
        let plain = synthesize_witness(SyntheticCircuit::new(9, 7), WitnessCs::with_one()).unwrap();
        let packed =
            synthesize_witness(SyntheticCircuit::new(9, 7), WitnessCs::packed(1, 0)).unwrap();
        assert!(packed.aux.is_empty());
        assert_eq!(packed.aux_len(), plain.aux.len());
        assert_eq!(packed.aux_at(5), plain.aux[5]);
        assert_eq!(
            (&packed.input, packed.constraints),
            (&plain.input, plain.constraints)
        );
        assert_eq!(packed.into_plain_aux(), plain.aux);
    }

    #[test]
    fn extend_skips_the_other_systems_one() {
        let mut root = WitnessCs::with_one();
        root.alloc_input(|| "x", || Ok(Scalar::from(5u64))).unwrap();
        let mut sub = WitnessCs::new();
        sub.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        sub.alloc_input(|| "y", || Ok(Scalar::from(6u64))).unwrap();
        sub.alloc(|| "z", || Ok(Scalar::from(7u64))).unwrap();
        sub.enforce(|| "c", |l| l, |l| l, |l| l);
        root.extend(&sub);
        assert_eq!(
            root.input,
            vec![Scalar::ONE, Scalar::from(5u64), Scalar::from(6u64)]
        );
        assert_eq!(root.aux, vec![Scalar::from(7u64)]);
        assert_eq!(root.constraints, 1);
    }
}

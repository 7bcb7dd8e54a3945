//! Witness-only synthesis: run a circuit for its variable assignments alone. The enforce
//! closures are never called, so no linear combination is built or evaluated inside them;
//! the constraint matrices recorded once per circuit shape (`crate::matrices`) turn the
//! assignments into a, b and c afterwards.
//!
//! Allocation follows `Synthesized` (and bellperson's `ProvingAssignment`) call for call:
//! input 0 is the constant one, `extend` drops the other system's own one, so the
//! assignments index exactly as the recorded matrices' columns do.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// The assignments of one circuit, and how many constraints it enforced (to check the
/// circuit against the matrices it is about to be evaluated with).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WitnessCs {
    /// Public inputs; `input[0]` is the constant one.
    pub input: Vec<Scalar>,
    pub aux: Vec<Scalar>,
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
            constraints: 0,
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
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
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
        self.aux.extend_from_slice(&other.aux);
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

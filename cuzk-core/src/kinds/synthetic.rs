//! The synthetic benchmark circuit: a caller-chosen size (2^k constraints in all), a mix of
//! multiplications and wide linear combinations like real circuits have, and a few public
//! inputs. Its witness is a deterministic function of a seed, so any seed gives a valid proof
//! under one parameter set per size.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// Public inputs besides the constant one: the seed's two halves and two outputs.
pub const NUM_PUBLIC_INPUTS: usize = 4;
pub const MIN_LOG: u32 = 4;
pub const MAX_LOG: u32 = 26;

#[derive(Clone, Debug)]
pub struct SyntheticCircuit {
    /// The proof's evaluation domain is 2^log_size: the circuit fills it exactly.
    pub log_size: u32,
    pub seed: u64,
}

impl SyntheticCircuit {
    pub fn new(log_size: u32, seed: u64) -> Self {
        SyntheticCircuit { log_size, seed }
    }

    /// The parameter set this circuit proves under.
    pub fn srs_id(log_size: u32) -> String {
        format!("synthetic-2^{log_size}")
    }

    /// Constraints the circuit itself enforces: the domain minus one input constraint per
    /// public input and the constant one (which the prover adds).
    fn body_constraints(&self) -> usize {
        (1usize << self.log_size) - (NUM_PUBLIC_INPUTS + 1)
    }

    /// Recurrence steps: the body less the two start and two output constraints.
    fn steps(&self) -> usize {
        self.body_constraints() - 4
    }

    /// The public inputs a verifier needs, computed without synthesizing.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let mut w = Witness::new(self.seed);
        let (lo, hi) = (w.inputs[0], w.inputs[1]);
        let mut out = Scalar::ZERO;
        for i in 0..self.steps() {
            out = w.step(i).1;
        }
        let fin = w.finish();
        vec![lo, hi, out, fin]
    }
}

/// The witness recurrence, shared by synthesis and `public_inputs` so that they agree.
struct Witness {
    inputs: [Scalar; 2],
    recent: [Scalar; 4],
    acc: Scalar,
}

impl Witness {
    fn new(seed: u64) -> Self {
        let lo = Scalar::from(seed & 0xffff_ffff) + Scalar::from(3u64);
        let hi = Scalar::from(seed >> 32) + Scalar::from(5u64);
        Witness {
            inputs: [lo, hi],
            recent: [lo, hi, lo + hi, lo * hi],
            acc: Scalar::ZERO,
        }
    }

    fn coeff(i: usize) -> Scalar {
        Scalar::from((i as u64 % 7) + 1)
    }

    /// Step i: returns (kind, value) where kind 0 is x = (p + q) * (r + k) and kind 1 is the
    /// wide linear combination x = (p + 2q + 3r + k*s) * 1.
    fn step(&mut self, i: usize) -> (u8, Scalar) {
        let [p, q, r, s] = self.recent;
        let k = Self::coeff(i);
        let (kind, x) = if i % 4 == 3 {
            (1, p + q.double() + r * Scalar::from(3u64) + k * s)
        } else {
            (0, (p + q) * (r + k))
        };
        self.recent = [x, p, q, r];
        self.acc += x;
        (kind, x)
    }

    fn finish(&self) -> Scalar {
        self.acc
    }
}

impl Circuit<Scalar> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if !(MIN_LOG..=MAX_LOG).contains(&self.log_size) {
            return Err(SynthesisError::Unsatisfiable);
        }
        let mut w = Witness::new(self.seed);
        let lo = cs.alloc_input(|| "seed lo", || Ok(w.inputs[0]))?;
        let hi = cs.alloc_input(|| "seed hi", || Ok(w.inputs[1]))?;
        // Two constraints tie the recurrence's starting variables to the inputs.
        let (lo_v, hi_v) = (w.inputs[0], w.inputs[1]);
        let sum = cs.alloc(|| "lo+hi", || Ok(lo_v + hi_v))?;
        let prod = cs.alloc(|| "lo*hi", || Ok(lo_v * hi_v))?;
        cs.enforce(|| "sum", |l| l + lo + hi, |l| l + CS::one(), |l| l + sum);
        cs.enforce(|| "prod", |l| l + lo, |l| l + hi, |l| l + prod);

        let mut recent: [Variable; 4] = [lo, hi, sum, prod];
        let mut acc = LinearCombination::zero();
        let steps = self.steps();
        let mut last = Scalar::ZERO;
        for i in 0..steps {
            let [p, q, r, s] = recent;
            let k = Witness::coeff(i);
            let (kind, value) = w.step(i);
            let x = cs.alloc(|| "x", || Ok(value))?;
            if kind == 1 {
                cs.enforce(
                    || "lc",
                    |l| l + p + (Scalar::from(2u64), q) + (Scalar::from(3u64), r) + (k, s),
                    |l| l + CS::one(),
                    |l| l + x,
                );
            } else {
                cs.enforce(
                    || "mul",
                    |l| l + p + q,
                    |l| l + r + (k, CS::one()),
                    |l| l + x,
                );
            }
            acc = acc + x;
            recent = [x, p, q, r];
            last = value;
        }
        // Outputs: the last value and the sum of all values, as public inputs.
        let out = cs.alloc_input(|| "out", || Ok(last))?;
        cs.enforce(|| "out", |l| l + recent[0], |l| l + CS::one(), |l| l + out);
        let fin = cs.alloc_input(|| "sum", || Ok(w.finish()))?;
        cs.enforce(|| "fin", |_| acc, |l| l + CS::one(), |l| l + fin);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::synthesize_partition;

    #[test]
    fn fills_the_domain_and_is_satisfied() {
        for log in [MIN_LOG, 6, 10] {
            let s = synthesize_partition(SyntheticCircuit::new(log, 42)).unwrap();
            assert_eq!(s.num_constraints(), 1 << log, "log {log}");
            for i in 0..s.num_constraints() {
                assert_eq!(s.a[i] * s.b[i], s.c[i], "constraint {i} at log {log}");
            }
            assert_eq!(
                s.public_inputs(),
                SyntheticCircuit::new(log, 42).public_inputs()
            );
        }
    }
}

//! a = A·w, b = B·w, c = C·w on CPU threads, checking a_i * b_i = c_i on the way.
//!
//! The check costs one multiplication per row against several terms per row, and it is what
//! makes the fast path safe to run by default: a witness that does not satisfy the recorded
//! matrices (a circuit that changed shape, a stale file, a malformed vanilla proof) is
//! reported instead of becoming a proof that fails verification, and the caller synthesizes
//! the old way, which behaves exactly as before.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{Matrices, Matrix, INPUT_COLUMN};

/// Rows per rayon task: large enough that scheduling is noise, small enough that two
/// cores split a 2 KiB PoSt circuit evenly.
const CHUNK_ROWS: usize = 2048;

/// The evaluations, one per row, and how many rows the witness fails.
#[derive(Clone, Debug, Default)]
pub struct Evaluated {
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    /// Rows with a_i * b_i != c_i (0 for a valid witness).
    pub unsatisfied: usize,
}

/// Evaluate the matrices on a witness. `input` (the constant one first) and `aux` must have
/// the matrices' lengths; the caller checks.
pub fn evaluate(m: &Matrices, input: &[Scalar], aux: &[Scalar]) -> Evaluated {
    assert_eq!(input.len(), m.num_inputs, "inputs");
    assert_eq!(aux.len(), m.num_aux, "aux variables");
    let n = m.num_constraints();
    let (mut a, mut b, mut c) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    // Not on huge pages (hugevec): on the 2-core development VM that made this evaluation
    // 30-40% slower for a 2 KiB PoRep partition, whole huge pages per thread or not.
    let chunk = CHUNK_ROWS;
    let w = Witness {
        input,
        aux,
        class: &classify(aux),
    };
    let k = &m.coeffs;
    // The outputs are written once, in parallel, straight into fresh memory: a zero fill
    // first would touch every page on one thread (page faults were 12% of the whole run on a
    // 2 KiB PoRep partition, measured with perf).
    let unsatisfied = a.spare_capacity_mut()[..n]
        .par_chunks_mut(chunk)
        .zip(b.spare_capacity_mut()[..n].par_chunks_mut(chunk))
        .zip(c.spare_capacity_mut()[..n].par_chunks_mut(chunk))
        .enumerate()
        .map(|(i, ((a, b), c))| {
            let first = i * chunk;
            let mut bad = 0;
            for j in 0..a.len() {
                let r = first + j;
                let (va, vb, vc) = (w.row(&m.a, r, k), w.row(&m.b, r, k), w.row(&m.c, r, k));
                bad += usize::from(!satisfied(&va, &vb, &vc));
                a[j].write(va);
                b[j].write(vb);
                c[j].write(vc);
            }
            bad
        })
        .sum();
    // SAFETY: every one of the n slots of each vector was written above (the chunks cover
    // 0..n exactly), and Scalar has no drop glue.
    unsafe {
        a.set_len(n);
        b.set_len(n);
        c.set_len(n);
    }
    Evaluated {
        a,
        b,
        c,
        unsatisfied,
    }
}

/// a * b == c, without the multiplication when b is a bit: B is the constant one or a
/// boolean in most rows of Filecoin's circuits (SHA-256 is all bits), and the check's
/// multiplication was a quarter of the evaluation on a 2 KiB PoRep partition.
#[inline]
fn satisfied(a: &Scalar, b: &Scalar, c: &Scalar) -> bool {
    if *b == Scalar::ONE {
        a == c
    } else if *b == Scalar::ZERO {
        *c == Scalar::ZERO
    } else {
        *a * b == *c
    }
}

/// What an aux value is, one byte each: a Filecoin witness is ~97% bits, so most terms need
/// only this byte (a 32nd of the value's memory traffic) and no comparison of field elements.
const ZERO: u8 = 0;
const ONE: u8 = 1;
const WIDE: u8 = 2;

fn classify(aux: &[Scalar]) -> Vec<u8> {
    aux.par_iter()
        .with_min_len(1 << 14)
        .map(|v| {
            if *v == Scalar::ZERO {
                ZERO
            } else if *v == Scalar::ONE {
                ONE
            } else {
                WIDE
            }
        })
        .collect()
}

/// Small multiples of one, for the count of unit terms whose value is one.
static SMALL: std::sync::LazyLock<Vec<Scalar>> =
    std::sync::LazyLock::new(|| (0..64u64).map(Scalar::from).collect());

struct Witness<'a> {
    input: &'a [Scalar],
    aux: &'a [Scalar],
    class: &'a [u8],
}

impl Witness<'_> {
    /// A column's class and, unless it is a bit, its value.
    #[inline]
    fn class(&self, col: u32) -> u8 {
        if col & INPUT_COLUMN != 0 {
            WIDE
        } else {
            self.class[col as usize]
        }
    }

    #[inline]
    fn value(&self, col: u32) -> Scalar {
        if col & INPUT_COLUMN != 0 {
            self.input[(col & !INPUT_COLUMN) as usize]
        } else {
            self.aux[col as usize]
        }
    }

    #[inline]
    fn row(&self, m: &Matrix, r: usize, coeffs: &[Scalar]) -> Scalar {
        let mut acc = Scalar::ZERO;
        // Unit terms: the ones are counted (no branch on a bit's value), the wide values added.
        let mut ones = 0usize;
        let units = m.unit_start[r] as usize..m.unit_start[r + 1] as usize;
        for &col in &m.unit_cols[units] {
            let c = self.class(col);
            ones += usize::from(c == ONE);
            if c == WIDE {
                acc += self.value(col);
            }
        }
        if ones != 0 {
            acc += SMALL
                .get(ones)
                .copied()
                .unwrap_or_else(|| Scalar::from(ones as u64));
        }
        let scaled = m.scaled_start[r] as usize..m.scaled_start[r + 1] as usize;
        for (&col, &k) in m.scaled_cols[scaled.clone()]
            .iter()
            .zip(&m.scaled_coeffs[scaled])
        {
            // Most scaled terms multiply a bit (packing, boolean gadgets): a bit's term is
            // the coefficient or nothing, no multiplication needed.
            match self.class(col) {
                ZERO => {}
                ONE => acc += &coeffs[k as usize],
                _ => acc += self.value(col) * coeffs[k as usize],
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::synthetic::SyntheticCircuit;
    use crate::matrices::record_matrices;
    use crate::synth::synthesize_partition;
    use crate::witness::{synthesize_witness, WitnessCs};

    #[test]
    fn evaluation_matches_full_synthesis_and_catches_a_bad_witness() {
        // 2^13 rows: several rayon chunks, the last one partial.
        let (m, _) = record_matrices("synthetic-2^13", SyntheticCircuit::new(13, 1)).unwrap();
        let full = synthesize_partition(SyntheticCircuit::new(13, 2)).unwrap();
        let w = synthesize_witness(SyntheticCircuit::new(13, 2), WitnessCs::with_one()).unwrap();
        let e = evaluate(&m, &w.input, &w.aux);
        assert_eq!((e.a, e.b, e.c, e.unsatisfied), (full.a, full.b, full.c, 0));
        assert_eq!(m.a_aux_density, full.a_aux_density);
        assert_eq!(m.b_input_density, full.b_input_density);
        assert_eq!(m.b_aux_density, full.b_aux_density);

        let mut aux = w.aux.clone();
        aux[100] += Scalar::ONE;
        assert!(evaluate(&m, &w.input, &aux).unsatisfied > 0);
    }

    /// Bits, as Filecoin's witnesses are mostly made of: rows of many unit terms with value
    /// one (more than the table of small multiples holds), bits scaled by small positive and
    /// negative integers and by wide coefficients, zeros, wide values.
    #[test]
    fn bit_rows_match_full_synthesis() {
        use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
        struct Bits;
        impl Circuit<Scalar> for Bits {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> Result<(), SynthesisError> {
                let wide = cs.alloc(|| "w", || Ok(Scalar::from(1u64 << 40)))?;
                let bits: Vec<_> = (0..100u64)
                    .map(|i| cs.alloc(|| "b", || Ok(Scalar::from(u64::from(i % 3 != 0)))))
                    .collect::<Result<_, _>>()?;
                for n in [1, 2, 63, 64, 65, 100] {
                    let units = bits[..n]
                        .iter()
                        .fold(LinearCombination::zero(), |l, &b| l + b);
                    // Powers of two times 3, positive and negative: small integers up to
                    // 2^64, field elements past it.
                    let mut k = Scalar::from(3u64);
                    let mut scaled = LinearCombination::zero();
                    for (i, &b) in bits[..n].iter().enumerate() {
                        scaled = scaled + (if i % 4 == 1 { -k } else { k }, b);
                        k = k.double();
                    }
                    cs.enforce(|| "u", |_| units + wide, |l| l + CS::one(), |_| scaled);
                }
                Ok(())
            }
        }
        let (m, w) = record_matrices("bits", Bits).unwrap();
        let full = synthesize_partition(Bits).unwrap();
        let e = evaluate(&m, &w.input, &w.aux);
        assert_eq!((e.a, e.b, e.c), (full.a, full.b, full.c));
        // Not a valid witness (c is not a * b): every circuit row is reported.
        assert_eq!(e.unsatisfied, 6);
    }

    #[test]
    fn satisfied_agrees_with_the_product() {
        let (two, three, six) = (Scalar::from(2u64), Scalar::from(3u64), Scalar::from(6u64));
        assert!(satisfied(&two, &three, &six));
        assert!(!satisfied(&two, &three, &two));
        assert!(satisfied(&two, &Scalar::ONE, &two));
        assert!(!satisfied(&two, &Scalar::ONE, &three));
        assert!(satisfied(&two, &Scalar::ZERO, &Scalar::ZERO));
        assert!(!satisfied(&two, &Scalar::ZERO, &two));
    }
}

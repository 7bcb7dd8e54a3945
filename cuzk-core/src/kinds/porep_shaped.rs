//! A synthetic circuit shaped like a PoRep partition, up to the 2^27 domain of a 32 GiB
//! sector, for measuring production-scale proofs where real ones cannot be had.
//!
//! What "shaped like" means, measured on a real 2 KiB PoRep partition (2,685,673 aux
//! variables): its aux witness is 51.2% zeros, 47.1% ones and 1.6% wider values; 99.6% of the
//! aux variables are in the A query and 25.5% in the B query. Those figures decide the MSMs'
//! cost (bit-heavy scalars, a sparse B) and the parameter file's size (~47 GB at 2^27), so
//! this circuit reproduces them with a structure of its own, in blocks of 64 variables:
//!
//! - every fourth variable is a fresh bit, `(1 - x) * x = 0` (it is in A and B);
//! - the other bits are XORs, `(2 a) * b = a + b - c` (SHA-256's gadget shape), of the bit
//!   before and the previous group's fresh bit: every bit is in A, a quarter in B;
//! - the 64th variable packs the block's 63 bits and chains to the previous block's:
//!   `(w' + sum 2^p bit_p) * (k + w') = w`, full-width after the first block (1.6% wide);
//! - eight public inputs equal the first eight blocks' packed values.
//!
//! Measured on this circuit at 2^16 (test `witness_and_densities_are_porep_shaped`): 48.9%
//! zeros, 49.6% ones, 1.56% wide; A-aux 99.98%, B-aux 26.6% (the fresh bits and the packed
//! values, which the next block's row multiplies).
//!
//! At 2^27 bellpepper synthesis would take minutes per partition, so the job path does not
//! use it: [`PorepShaped::synthesize_direct`] computes the witness and a, b, c directly, in parallel,
//! from the same row definitions ([`RowSource`]) that parameter generation reads. The
//! [`Circuit`] implementation exists so tests can check the two against bellpepper synthesis
//! and bellperson's prover at small sizes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::hugevec;
use crate::matrices::{matrices_from_rows, Matrices, RecordError};
use crate::paramgen::{Matrix, RowSource};
use crate::synth::{Density, Synthesized};

/// Variables per block: 63 bits and their packed value.
pub const BLOCK: usize = 64;
/// Public inputs besides the constant one.
pub const PUBLIC_INPUTS: usize = 8;
pub const MIN_LOG: u32 = 10;
/// 2^27: a 32 GiB PoRep partition's evaluation domain.
pub const MAX_LOG: u32 = 27;

/// Rows evaluated per parallel task (a multiple of BLOCK, so no block straddles two).
const CHUNK: usize = BLOCK * 1024;

/// The circuit's structure at one size (no witness): what parameter generation needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PorepShape {
    pub log_size: u32,
}

/// What defines aux variable j.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Def {
    Fresh,
    /// j = a XOR b; b is always a fresh bit.
    Xor {
        a: usize,
        b: usize,
    },
    /// The block's packed value (chained to the previous block's, if any).
    Packed,
}

fn def(j: usize) -> Def {
    if j % BLOCK == BLOCK - 1 {
        Def::Packed
    } else if j.is_multiple_of(4) {
        Def::Fresh
    } else {
        // The previous group's fresh bit (the first group uses its own).
        Def::Xor {
            a: j - 1,
            b: (j - j % 4).saturating_sub(4),
        }
    }
}

/// The constant of block `block`'s packing row.
fn block_constant(block: usize) -> Scalar {
    Scalar::from(block as u64 + 2)
}

fn pow2(p: usize) -> Scalar {
    Scalar::from(1u64 << p)
}

impl PorepShape {
    pub fn new(log_size: u32) -> Self {
        PorepShape { log_size }
    }

    /// Parameter set id.
    pub fn srs_id(log_size: u32) -> String {
        format!("synthetic-porep-2^{log_size}")
    }

    pub fn domain(&self) -> usize {
        1 << self.log_size
    }

    /// Aux variables: the domain less the input rows (one per input, the one included) and
    /// one binding row per public input.
    pub fn aux(&self) -> usize {
        self.domain() - 1 - 2 * PUBLIC_INPUTS
    }

    /// The shape's constraint matrices, built from its rows once per size and kept (7.2 GiB
    /// at 2^27): what a device-side evaluation of a, b, c reads.
    pub fn matrices(&self) -> Result<Arc<Matrices>, RecordError> {
        static CACHE: PerSize<Matrices> = OnceLock::new();
        per_size(&CACHE, self.log_size, || {
            matrices_from_rows(&Self::srs_id(self.log_size), self)
        })
    }

    /// The A and B densities (the same for every witness), computed once per size.
    fn densities(&self) -> Arc<Densities> {
        static CACHE: PerSize<Densities> = OnceLock::new();
        let d = per_size(&CACHE, self.log_size, || {
            Ok::<_, std::convert::Infallible>(Densities::walk(self))
        });
        d.unwrap_or_else(|never| match never {})
    }
}

/// What depends on the size alone, kept once computed.
type PerSize<T> = OnceLock<Mutex<HashMap<u32, Arc<T>>>>;

/// `cache`'s entry for `log_size`, built by `build` the first time; the lock is held while
/// building, so that two workers never build the same size twice.
fn per_size<T, E>(
    cache: &PerSize<T>,
    log_size: u32,
    build: impl FnOnce() -> Result<T, E>,
) -> Result<Arc<T>, E> {
    let mut cache = cache.get_or_init(Default::default).lock().unwrap();
    if let Some(v) = cache.get(&log_size) {
        return Ok(v.clone());
    }
    let v = Arc::new(build()?);
    cache.insert(log_size, v.clone());
    Ok(v)
}

impl RowSource for PorepShape {
    fn num_inputs(&self) -> usize {
        1 + PUBLIC_INPUTS
    }

    fn num_aux(&self) -> usize {
        self.aux()
    }

    fn num_rows(&self) -> usize {
        self.aux() + PUBLIC_INPUTS
    }

    fn row(&self, i: usize, term: &mut dyn FnMut(Matrix, Index, Scalar)) {
        let one = Index::Input(0);
        if i >= self.aux() {
            // Binding row: input k * 1 = packed value of block k.
            let k = i - self.aux();
            term(Matrix::A, Index::Input(k + 1), Scalar::ONE);
            term(Matrix::B, one, Scalar::ONE);
            term(Matrix::C, Index::Aux(k * BLOCK + BLOCK - 1), Scalar::ONE);
            return;
        }
        match def(i) {
            Def::Fresh => {
                term(Matrix::A, one, Scalar::ONE);
                term(Matrix::A, Index::Aux(i), -Scalar::ONE);
                term(Matrix::B, Index::Aux(i), Scalar::ONE);
            }
            Def::Xor { a, b } => {
                term(Matrix::A, Index::Aux(a), Scalar::from(2u64));
                term(Matrix::B, Index::Aux(b), Scalar::ONE);
                term(Matrix::C, Index::Aux(a), Scalar::ONE);
                term(Matrix::C, Index::Aux(b), Scalar::ONE);
                term(Matrix::C, Index::Aux(i), -Scalar::ONE);
            }
            Def::Packed => {
                let start = i + 1 - BLOCK;
                for p in 0..BLOCK - 1 {
                    term(Matrix::A, Index::Aux(start + p), pow2(p));
                }
                if start > 0 {
                    term(Matrix::A, Index::Aux(start - 1), Scalar::ONE);
                    term(Matrix::B, Index::Aux(start - 1), Scalar::ONE);
                }
                term(Matrix::B, one, block_constant(i / BLOCK));
                term(Matrix::C, Index::Aux(i), Scalar::ONE);
            }
        }
    }
}

/// Which variables the A and B queries touch.
struct Densities {
    a_aux: Density,
    b_input: Density,
    b_aux: Density,
}

impl Densities {
    /// Walks every row's terms (in parallel, into atomic bitmaps): the row definitions are
    /// the only source of truth for the structure.
    fn walk(shape: &PorepShape) -> Self {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        let aux = shape.aux();
        let bitmap = |n: usize| (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let (a_aux, b_aux): (Vec<AtomicU64>, Vec<AtomicU64>) = (bitmap(aux), bitmap(aux));
        let b_input: Vec<AtomicU64> = bitmap(shape.num_inputs());
        let mark = |m: &[AtomicU64], i: usize| {
            m[i / 64].fetch_or(1 << (i % 64), Relaxed);
        };
        (0..shape.num_rows())
            .into_par_iter()
            .with_min_len(CHUNK)
            .for_each(|i| {
                shape.row(i, &mut |m, var, coeff| {
                    if bool::from(coeff.is_zero()) {
                        return;
                    }
                    match (m, var) {
                        (Matrix::A, Index::Aux(j)) => mark(&a_aux, j),
                        (Matrix::B, Index::Aux(j)) => mark(&b_aux, j),
                        (Matrix::B, Index::Input(j)) => mark(&b_input, j),
                        _ => {}
                    }
                })
            });
        let take = |v: Vec<AtomicU64>, n| {
            Density::from_words(v.into_iter().map(|w| w.into_inner()).collect(), n)
        };
        Densities {
            a_aux: take(a_aux, aux),
            b_input: take(b_input, shape.num_inputs()),
            b_aux: take(b_aux, aux),
        }
    }
}

/// One partition: the shape and a witness seed.
#[derive(Clone, Copy, Debug)]
pub struct PorepShaped {
    pub shape: PorepShape,
    pub seed: u64,
}

/// The witness in compact form: a bit per variable that is one, and each block's packed
/// value and its bit sum.
struct Witness {
    bits: Vec<u64>,
    /// sum_p 2^p bit_p of each packed block (63 bits: exact in a u64).
    sums: Vec<u64>,
    packed: Vec<Scalar>,
}

impl Witness {
    fn bit(&self, j: usize) -> bool {
        self.bits[j / 64] >> (j % 64) & 1 == 1
    }

    fn value(&self, j: usize) -> Scalar {
        match def(j) {
            Def::Packed => self.packed[j / BLOCK],
            _ if self.bit(j) => Scalar::ONE,
            _ => Scalar::ZERO,
        }
    }
}

/// A fresh bit: splitmix64 of the seed and the index, so any bit is computed on its own.
fn fresh_bit(seed: u64, j: usize) -> bool {
    let mut z = seed ^ (j as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & 1 == 1
}

impl PorepShaped {
    pub fn new(log_size: u32, seed: u64) -> Self {
        PorepShaped {
            shape: PorepShape::new(log_size),
            seed,
        }
    }

    /// Blocks `0..blocks` of the witness. Bits are computed a 64-variable block per step
    /// (one word each, since BLOCK = 64), in parallel; the packed values chain block to
    /// block, so they run in order (one multiplication each).
    fn witness(&self, vars: usize) -> Witness {
        assert_eq!(BLOCK, 64, "one bitmap word per block");
        let seed = self.seed;
        let bits: Vec<u64> = (0..vars.div_ceil(64))
            .into_par_iter()
            .with_min_len(1024)
            .map(|w| {
                let mut word = 0u64;
                for p in 0..64 {
                    let j = w * 64 + p;
                    if j >= vars {
                        break;
                    }
                    let bit = match def(j) {
                        Def::Fresh => fresh_bit(seed, j),
                        // a = j - 1 sits in this word (j % 4 != 0), b is fresh.
                        Def::Xor { a, b } => (word >> (a % 64) & 1 == 1) ^ fresh_bit(seed, b),
                        Def::Packed => false,
                    };
                    word |= u64::from(bit) << p;
                }
                word
            })
            .collect();
        let blocks = vars / BLOCK;
        // A block is one word, its packed variable's bit (63) left clear.
        let sums = bits[..blocks].to_vec();
        let mut packed = Vec::with_capacity(blocks);
        let mut prev = Scalar::ZERO;
        for (b, &s) in sums.iter().enumerate() {
            prev = (prev + Scalar::from(s)) * (block_constant(b) + prev);
            packed.push(prev);
        }
        Witness { bits, sums, packed }
    }

    /// The public inputs a verifier passes (without the leading one).
    pub fn public_inputs(&self) -> Vec<Scalar> {
        self.witness(PUBLIC_INPUTS * BLOCK).packed
    }

    /// The assignments: inputs (the constant one first) and aux, on every core.
    fn assignments(&self, w: &Witness) -> (Vec<Scalar>, Vec<Scalar>) {
        let mut input = vec![Scalar::ONE];
        input.extend_from_slice(&w.packed[..PUBLIC_INPUTS]);
        let mut aux = hugevec::zeroed(self.shape.aux());
        aux.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
            for (k, v) in out.iter_mut().enumerate() {
                *v = w.value(c * CHUNK + k);
            }
        });
        (input, aux)
    }

    /// The partition's witness alone, a, b, c left to the device step
    /// ([`Synthesized::witness_only`]) with the shape's matrices: at 2^27 that keeps ~13 GB
    /// of a, b, c out of host memory and off the bus.
    pub fn synthesize_witness(&self) -> Result<Synthesized, RecordError> {
        let m = self.shape.matrices()?;
        let (input, aux) = self.assignments(&self.witness(self.shape.aux()));
        Ok(Synthesized::witness_only(m, input, aux))
    }

    /// The partition, synthesized directly: the same a, b, c, assignments and densities as
    /// bellpepper synthesis of [`Circuit::synthesize`] (tests), computed on every core.
    pub fn synthesize_direct(&self) -> Synthesized {
        let shape = &self.shape;
        let (aux_len, rows) = (shape.aux(), shape.num_rows());
        let w = self.witness(aux_len);
        let (input, aux) = self.assignments(&w);

        let n = shape.domain();
        let (mut a, mut b, mut c) = (hugevec::zeroed(n), hugevec::zeroed(n), hugevec::zeroed(n));
        let eval_row = |i: usize| -> (Scalar, Scalar, Scalar) {
            if i >= aux_len {
                let v = w.packed[i - aux_len];
                return (v, Scalar::ONE, v);
            }
            let v = |j: usize| aux[j];
            match def(i) {
                Def::Fresh => (Scalar::ONE - v(i), v(i), Scalar::ZERO),
                Def::Xor { a, b } => (v(a).double(), v(b), v(a) + v(b) - v(i)),
                Def::Packed => {
                    let block = i / BLOCK;
                    let prev = if block > 0 {
                        w.packed[block - 1]
                    } else {
                        Scalar::ZERO
                    };
                    (
                        prev + Scalar::from(w.sums[block]),
                        block_constant(block) + prev,
                        w.packed[block],
                    )
                }
            }
        };
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .zip(c.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(k, ((a, b), c))| {
                for r in 0..a.len() {
                    let i = k * CHUNK + r;
                    if i < rows {
                        (a[r], b[r], c[r]) = eval_row(i);
                    } else if i - rows < input.len() {
                        // The prover's input rows: x_i * 0 = 0.
                        a[r] = input[i - rows];
                    }
                }
            });

        let d = shape.densities();
        Synthesized {
            a,
            b,
            c,
            input,
            aux,
            a_aux_density: d.a_aux.clone(),
            b_input_density: d.b_input.clone(),
            b_aux_density: d.b_aux.clone(),
            deferred: None,
            packed_aux: None,
        }
    }
}

impl Circuit<Scalar> for PorepShaped {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let shape = self.shape;
        if !(MIN_LOG..=MAX_LOG).contains(&shape.log_size) {
            return Err(SynthesisError::Unsatisfiable);
        }
        let w = self.witness(shape.aux());
        let mut inputs = vec![CS::one()];
        for k in 0..PUBLIC_INPUTS {
            inputs.push(cs.alloc_input(|| "packed", || Ok(w.packed[k]))?);
        }
        let aux = (0..shape.aux())
            .map(|j| cs.alloc(|| "v", || Ok(w.value(j))))
            .collect::<Result<Vec<Variable>, _>>()?;
        for i in 0..shape.num_rows() {
            let mut lcs = [(); 3].map(|_| LinearCombination::<Scalar>::zero());
            shape.row(i, &mut |m, var, coeff| {
                let v = match var {
                    Index::Input(k) => inputs[k],
                    Index::Aux(j) => aux[j],
                };
                let lc = &mut lcs[m as usize];
                *lc = std::mem::replace(lc, LinearCombination::zero()) + (coeff, v);
            });
            let [la, lb, lc] = lcs;
            cs.enforce(|| "row", |_| la, |_| lb, |_| lc);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::synthesize_partition;

    #[test]
    fn direct_synthesis_equals_bellpepper_synthesis() {
        for (log, seed) in [(MIN_LOG, 1), (11, 7), (12, u64::MAX)] {
            let circuit = PorepShaped::new(log, seed);
            let direct = circuit.synthesize_direct();
            let full = synthesize_partition(circuit).unwrap();
            assert_eq!(direct.first_difference(&full), None, "2^{log} seed {seed}");
            assert_eq!(direct.num_constraints(), 1 << log);
            assert_eq!(direct.public_inputs(), circuit.public_inputs().as_slice());
            for i in 0..direct.num_constraints() {
                assert_eq!(direct.a[i] * direct.b[i], direct.c[i], "row {i} at 2^{log}");
            }
        }
    }

    /// The witness-only synthesis, evaluated from the shape's matrices, is the direct one;
    /// a witness that breaks a row is refused.
    #[test]
    fn witness_only_synthesis_evaluates_to_the_direct_one() {
        for (log, seed) in [(MIN_LOG, 3), (13, 5)] {
            let circuit = PorepShaped::new(log, seed);
            let mut s = circuit.synthesize_witness().unwrap();
            assert!(s.deferred.is_some() && s.a.is_empty());
            assert_eq!(s.num_constraints(), 1 << log);
            let mut broken = s.clone();
            s.evaluate_deferred().unwrap();
            assert_eq!(s.first_difference(&circuit.synthesize_direct()), None);
            broken.aux[4] += Scalar::ONE;
            assert!(broken.evaluate_deferred().is_err());
        }
    }

    #[test]
    fn seeds_give_different_witnesses_under_one_structure() {
        let (x, y) = (PorepShaped::new(12, 1), PorepShaped::new(12, 2));
        let (sx, sy) = (x.synthesize_direct(), y.synthesize_direct());
        assert_ne!(sx.aux, sy.aux);
        assert_ne!(x.public_inputs(), y.public_inputs());
        assert_eq!(sx.a_aux_density, sy.a_aux_density);
        assert_eq!(sx.b_aux_density, sy.b_aux_density);
    }

    /// The shape the module promises: witness mostly bits, A nearly dense, B about a quarter.
    #[test]
    fn witness_and_densities_are_porep_shaped() {
        let s = PorepShaped::new(16, 99).synthesize_direct();
        let n = s.aux.len() as f64;
        let zeros = s.aux.iter().filter(|v| **v == Scalar::ZERO).count() as f64 / n;
        let ones = s.aux.iter().filter(|v| **v == Scalar::ONE).count() as f64 / n;
        let wide = 1.0 - zeros - ones;
        assert!((0.46..0.54).contains(&zeros), "zeros {zeros}");
        assert!((0.46..0.54).contains(&ones), "ones {ones}");
        assert!((0.014..0.018).contains(&wide), "wide {wide}");
        let a = s.a_aux_density.total() as f64 / n;
        let b = s.b_aux_density.total() as f64 / n;
        eprintln!("2^16: zeros {zeros:.4} ones {ones:.4} wide {wide:.4} A-aux {a:.4} B-aux {b:.4}");
        assert!(a > 0.99, "A-aux density {a}");
        assert!((0.24..0.28).contains(&b), "B-aux density {b}");
        // B's inputs: only the constant one.
        assert_eq!(s.b_input_density.total(), 1);
        assert!(s.b_input_density.contains(0));
        // Packed values are full width after the first blocks.
        let last = s.aux[BLOCK * 100 - 1].to_bytes_le();
        assert!(
            last[24..].iter().any(|b| *b != 0),
            "packed value not full width"
        );
    }
}

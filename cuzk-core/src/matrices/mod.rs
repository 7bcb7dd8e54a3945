//! Pre-compiled constraint evaluation: a circuit's R1CS matrices A, B, C recorded once per
//! circuit shape, so that each later proof only computes the witness (`crate::witness`) and
//! evaluates a = A·w, b = B·w, c = C·w as sparse matrix-vector products.
//!
//! The matrices hold every row the prover evaluates, the input constraints `x_i * 0 = 0`
//! included, so `evaluate` gives exactly the a, b, c of `synth::synthesize_partition`, and
//! the densities (which depend only on which variables appear, never on their values) are
//! computed once with them.
//!
//! Layout: each matrix is two CSR parts over the same rows, the unit terms (coefficient one:
//! 4 bytes, a column) and the scaled terms (8 bytes, a column and an index into one shared
//! coefficient table), because most coefficients of Filecoin's circuits are one and the
//! rest repeat (powers of two from bit packing, Poseidon's round constants). A column is a
//! variable: bit 31 set for an input (index in the low bits), clear for an aux variable.
//! These arrays are what a device-side evaluator would upload as they are (`MatrixParts`).

mod cache;
mod coeffs;
mod eval;
mod file;
mod from_rows;
mod record;

use blstrs::Scalar;
use rayon::prelude::*;

use crate::synth::Density;

pub use cache::{MatrixCache, RecordTicket, Recorded};
use coeffs::CoeffTable;
pub use eval::{evaluate, Evaluated};
pub use file::{read_matrices, write_matrices, FileError};
pub use from_rows::matrices_from_rows;
pub use record::{record_matrices, RecordError, RecordingCs};

/// Column tag of an input variable.
pub const INPUT_COLUMN: u32 = 1 << 31;

/// One matrix (A, B or C), row-major, in two parts; see the module comment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matrix {
    /// Row r's unit terms are `unit_cols[unit_start[r]..unit_start[r + 1]]`.
    unit_start: Vec<u32>,
    unit_cols: Vec<u32>,
    /// Row r's scaled terms are entries `scaled_start[r]..scaled_start[r + 1]` of
    /// `scaled_cols` / `scaled_coeffs` (indices into `Matrices::coeffs`).
    scaled_start: Vec<u32>,
    scaled_cols: Vec<u32>,
    scaled_coeffs: Vec<u32>,
}

/// The raw arrays of one matrix, for an evaluator elsewhere: the GPU kernel's own type, so
/// that the layout is defined once.
pub use cuzk_kernels::r1cs::CsrParts as MatrixParts;

impl Matrix {
    fn new() -> Self {
        Matrix {
            unit_start: vec![0],
            scaled_start: vec![0],
            ..Matrix::default()
        }
    }

    /// Append a term to the row being built: a unit term (None) or a scaled one (its
    /// coefficient's index).
    fn push(&mut self, col: u32, coeff: Option<u32>) {
        match coeff {
            None => self.unit_cols.push(col),
            Some(k) => {
                self.scaled_cols.push(col);
                self.scaled_coeffs.push(k);
            }
        }
    }

    /// Close the row being built; false once the matrix outgrows its 32-bit offsets.
    fn end_row(&mut self) -> bool {
        let (units, scaled) = (self.unit_cols.len(), self.scaled_cols.len());
        self.unit_start.push(units as u32);
        self.scaled_start.push(scaled as u32);
        units.max(scaled) <= u32::MAX as usize
    }

    pub fn rows(&self) -> usize {
        self.unit_start.len() - 1
    }

    /// Non-zero terms.
    pub fn nnz(&self) -> usize {
        self.unit_cols.len() + self.scaled_cols.len()
    }

    pub fn parts(&self) -> MatrixParts<'_> {
        MatrixParts {
            unit_start: &self.unit_start,
            unit_cols: &self.unit_cols,
            scaled_start: &self.scaled_start,
            scaled_cols: &self.scaled_cols,
            scaled_coeffs: &self.scaled_coeffs,
        }
    }

    /// Row r's terms as (column, coefficient index or None for one).
    pub fn row(&self, r: usize) -> impl Iterator<Item = (u32, Option<u32>)> + '_ {
        let units = &self.unit_cols[self.unit_start[r] as usize..self.unit_start[r + 1] as usize];
        let s = self.scaled_start[r] as usize..self.scaled_start[r + 1] as usize;
        units.iter().map(|&c| (c, None)).chain(
            self.scaled_cols[s.clone()]
                .iter()
                .zip(&self.scaled_coeffs[s])
                .map(|(&c, &k)| (c, Some(k))),
        )
    }

    fn bytes(&self) -> usize {
        4 * (self.unit_start.len()
            + self.unit_cols.len()
            + self.scaled_start.len()
            + self.scaled_cols.len()
            + self.scaled_coeffs.len())
    }

    /// Every column the matrix uses, as input and aux densities: marked in parallel into
    /// atomic bitmaps (at 2^27 a PoRep-shaped A holds ~270M columns).
    fn densities(&self, inputs: usize, aux: usize) -> (Density, Density) {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        let bitmap = |n: usize| -> Vec<AtomicU64> {
            (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
        };
        let (di, da) = (bitmap(inputs), bitmap(aux));
        for cols in [&self.unit_cols, &self.scaled_cols] {
            cols.par_chunks(1 << 16).for_each(|cols| {
                for &c in cols {
                    let (map, i) = if c & INPUT_COLUMN != 0 {
                        (&di, (c & !INPUT_COLUMN) as usize)
                    } else {
                        (&da, c as usize)
                    };
                    let bit = 1u64 << (i % 64);
                    // Most variables appear in several rows: read before writing.
                    if map[i / 64].load(Relaxed) & bit == 0 {
                        map[i / 64].fetch_or(bit, Relaxed);
                    }
                }
            });
        }
        let take = |map: Vec<AtomicU64>, n| {
            Density::from_words(map.into_iter().map(AtomicU64::into_inner).collect(), n)
        };
        (take(di, inputs), take(da, aux))
    }
}

/// A circuit shape's matrices, with what the prover needs that does not depend on the
/// witness: the variable counts and the A/B densities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrices {
    /// What circuit these are (the parameter set's identifier, or the synthetic size).
    pub key: String,
    /// Inputs, the constant one included.
    pub num_inputs: usize,
    pub num_aux: usize,
    pub a: Matrix,
    pub b: Matrix,
    pub c: Matrix,
    /// Distinct coefficients other than one, indexed by the scaled terms.
    pub coeffs: Vec<Scalar>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    /// SHA-256 of the serialized matrices (`file`), the key included: ties a file on disk to
    /// what was recorded, and lets two recordings be compared cheaply.
    pub digest: [u8; 32],
}

impl Matrices {
    /// Rows: the circuit's constraints plus one per input.
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Bytes held (the densities are bitmaps: small).
    pub fn size_bytes(&self) -> usize {
        self.a.bytes() + self.b.bytes() + self.c.bytes() + 32 * self.coeffs.len()
    }

    /// Assemble from the three matrices: densities computed, digest taken.
    fn new(
        key: String,
        num_inputs: usize,
        num_aux: usize,
        [a, b, c]: [Matrix; 3],
        coeffs: Vec<Scalar>,
    ) -> Self {
        // As bellperson: inputs are dense in A by the input constraints, so only A's aux
        // part is tracked; C has no query of its own.
        let (_, a_aux_density) = a.densities(num_inputs, num_aux);
        let (b_input_density, b_aux_density) = b.densities(num_inputs, num_aux);
        let mut m = Matrices {
            key,
            num_inputs,
            num_aux,
            a,
            b,
            c,
            coeffs,
            a_aux_density,
            b_input_density,
            b_aux_density,
            digest: [0; 32],
        };
        m.digest = file::digest(&m);
        m
    }
}

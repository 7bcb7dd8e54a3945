//! Groth16 parameter generation in minutes, not hours: the QAP columns of a circuit evaluated
//! at tau straight from its rows (no bellpepper synthesis), and the query points made by
//! fixed-base scalar multiplication of the generators, on the GPU (cuzk_kernels) or on every
//! CPU core. Written in bellperson's parameter format, so a generated set loads through the
//! same path as a real Filecoin file.
//!
//! The interface a circuit offers to the generator is [`RowSource`]: its rows, term by term.
//! The way of a set: `domain` (the Lagrange basis at tau) -> `columns` (A, B, C of every
//! variable at tau) -> `generate` (the verifying key and the queries, points by
//! `fixed_base`) -> `params_file` (streamed to disk). `recorded` offers any bellpepper
//! circuit's recorded matrices as rows; `toxic` holds the secrets.

mod columns;
mod domain;
mod fixed_base;
mod generate;
mod gpu;
mod params_file;
mod recorded;
mod synthetic;
#[cfg(test)]
mod tests;
mod toxic;

use bellpepper_core::Index;
use blstrs::Scalar;

pub use columns::{qap_columns, Columns};
pub use domain::Domain;
pub use fixed_base::{CpuFixedBase, FixedBase};
pub use generate::{generate, GenReport, QueryReport};
pub use gpu::{Engine, GpuFixedBase};
pub use recorded::{record_rows, RecordedRows};
pub use synthetic::{generate_synthetic, synthetic_params_file};
pub use toxic::Toxic;

/// Which constraint matrix a term belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Matrix {
    A,
    B,
    C,
}

/// A circuit whose constraint matrices can be walked row by row without synthesizing it.
///
/// Rows are the circuit's own constraints in synthesis order; the prover's input rows
/// (`x_i * 0 = 0`, one per input, appended after them) are not included: the generator adds
/// them as bellperson does. Variables are numbered as bellperson numbers them
/// (`Index::Input(0)` is the constant one).
pub trait RowSource: Sync {
    /// Public inputs, the constant one included.
    fn num_inputs(&self) -> usize;
    fn num_aux(&self) -> usize;
    /// The circuit's own rows (without the input rows).
    fn num_rows(&self) -> usize;
    /// Calls `term(matrix, variable, coefficient)` for every term of row `i`, in any order;
    /// a variable may appear more than once in one matrix of a row (the terms add).
    fn row(&self, i: usize, term: &mut dyn FnMut(Matrix, Index, Scalar));
}

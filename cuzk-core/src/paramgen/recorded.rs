//! Any bellpepper circuit as a `RowSource`: its matrices as `crate::matrices` records them
//! (one synthesis with `RecordingCs`), walked row by row.
//!
//! The recording holds the input rows `x_k * 0 = 0` after the circuit's own (the prover
//! evaluates them); a `RowSource` leaves them to the generator, so they are not offered.
//! Recording drops zero coefficients, which add nothing to a column.

use bellpepper_core::{Circuit, Index};
use blstrs::Scalar;
use ff::Field;

use super::{Matrix, RowSource};
use crate::job::{Error, Result};
use crate::matrices::{record_matrices, Matrices, INPUT_COLUMN};

/// A circuit's recorded matrices, offered row by row.
pub struct RecordedRows<'a> {
    m: &'a Matrices,
}

impl<'a> RecordedRows<'a> {
    pub fn new(m: &'a Matrices) -> Result<Self> {
        if m.num_constraints() < m.num_inputs {
            return Err(Error::Params(format!(
                "matrices {}: {} rows cannot hold {} input rows",
                m.key,
                m.num_constraints(),
                m.num_inputs
            )));
        }
        Ok(RecordedRows { m })
    }
}

/// Record `circuit`'s matrices for parameter generation. Recording synthesizes with the
/// witness, so the circuit must be able to compute its assignments.
pub fn record_rows<C: Circuit<Scalar>>(key: &str, circuit: C) -> Result<Matrices> {
    record_matrices(key, circuit)
        .map(|(m, _witness)| m)
        .map_err(|e| Error::Params(format!("recording the matrices of {key}: {e}")))
}

fn variable(col: u32) -> Index {
    if col & INPUT_COLUMN != 0 {
        Index::Input((col & !INPUT_COLUMN) as usize)
    } else {
        Index::Aux(col as usize)
    }
}

impl RowSource for RecordedRows<'_> {
    fn num_inputs(&self) -> usize {
        self.m.num_inputs
    }

    fn num_aux(&self) -> usize {
        self.m.num_aux
    }

    fn num_rows(&self) -> usize {
        self.m.num_constraints() - self.m.num_inputs
    }

    fn row(&self, i: usize, term: &mut dyn FnMut(Matrix, Index, Scalar)) {
        for (matrix, mat) in [
            (Matrix::A, &self.m.a),
            (Matrix::B, &self.m.b),
            (Matrix::C, &self.m.c),
        ] {
            for (col, k) in mat.row(i) {
                let coeff = k.map_or(Scalar::ONE, |k| self.m.coeffs[k as usize]);
                term(matrix, variable(col), coeff);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::synthetic::{SyntheticCircuit, NUM_PUBLIC_INPUTS};

    #[test]
    fn the_input_rows_are_left_to_the_generator() {
        let m = record_rows("s", SyntheticCircuit::new(6, 0)).unwrap();
        let rows = RecordedRows::new(&m).unwrap();
        assert_eq!(rows.num_inputs(), NUM_PUBLIC_INPUTS + 1);
        assert_eq!(rows.num_rows() + rows.num_inputs(), 1 << 6);
        // The first row is "lo + hi = sum": lo and hi in A, the constant one in B.
        let mut terms = Vec::new();
        rows.row(0, &mut |m, i, k| terms.push((m, i, k)));
        assert!(terms.contains(&(Matrix::A, Index::Input(1), Scalar::ONE)));
        assert!(terms.contains(&(Matrix::B, Index::Input(0), Scalar::ONE)));
        assert!(terms.contains(&(Matrix::C, Index::Aux(0), Scalar::ONE)));
    }
}

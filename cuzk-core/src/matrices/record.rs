//! Recording a circuit's matrices: a constraint system that keeps every enforced linear
//! combination as a matrix row (and the assignments, so the recording run is also a proof's
//! synthesis).

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use super::{CoeffTable, Matrices, Matrix, INPUT_COLUMN};
use crate::witness::WitnessCs;

/// The constraint system that records. Rows are the circuit's `enforce` calls in order.
#[derive(Debug, Default)]
pub struct RecordingCs {
    input: Vec<Scalar>,
    aux: Vec<Scalar>,
    constraints: usize,
    mats: [Matrix; 3],
    coeffs: CoeffTable,
    /// Set when the circuit outgrows the 32-bit layout (a column or an offset); recording
    /// then fails, and the caller synthesizes the old way.
    too_large: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Synthesis(#[from] SynthesisError),
    /// More than 2^31 variables or 2^32 terms in one matrix.
    #[error("the circuit outgrows the matrices' 32-bit indices")]
    TooLarge,
}

/// Run `circuit` once, recording its matrices under `key`, and return them with the
/// assignments (input 0 the constant one), as `synthesize_partition` would allocate them.
pub fn record_matrices<C: Circuit<Scalar>>(
    key: &str,
    circuit: C,
) -> Result<(Matrices, WitnessCs), RecordError> {
    let mut cs = RecordingCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    let circuit_constraints = cs.constraints;
    // The prover's input constraints, as `synthesize_partition` adds them.
    for i in 0..cs.input.len() {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    if cs.too_large {
        return Err(RecordError::TooLarge);
    }
    let RecordingCs {
        input,
        aux,
        mats,
        coeffs,
        ..
    } = cs;
    let matrices = Matrices::new(
        key.to_string(),
        input.len(),
        aux.len(),
        mats,
        coeffs.into_vec(),
    );
    Ok((
        matrices,
        WitnessCs {
            input,
            aux,
            packed: None,
            constraints: circuit_constraints,
        },
    ))
}

impl RecordingCs {
    fn new() -> Self {
        RecordingCs {
            mats: [Matrix::new(), Matrix::new(), Matrix::new()],
            ..RecordingCs::default()
        }
    }

    fn column(&mut self, index: usize, input: bool) -> u32 {
        if index >= INPUT_COLUMN as usize {
            self.too_large = true;
        }
        index as u32 | if input { INPUT_COLUMN } else { 0 }
    }

    /// One matrix row from a linear combination. Zero coefficients are dropped, as the
    /// prover's evaluation skips them (and so they mark no density).
    fn push_row(&mut self, m: usize, lc: &LinearCombination<Scalar>) {
        let terms = lc
            .iter_inputs()
            .map(|(&i, k)| (i, true, k))
            .chain(lc.iter_aux().map(|(&i, k)| (i, false, k)));
        for (i, input, k) in terms {
            if bool::from(k.is_zero()) {
                continue;
            }
            let col = self.column(i, input);
            let coeff = (*k != Scalar::ONE).then(|| self.coeffs.intern(k));
            self.mats[m].push(col, coeff);
        }
        self.end_row(m);
    }

    fn end_row(&mut self, m: usize) {
        if !self.mats[m].end_row() {
            self.too_large = true;
        }
    }

    /// Append the rows of a sub-system, its columns renumbered into ours: its input 0 (its
    /// own constant one) is ours, its other inputs and its aux follow ours.
    fn append_rows(&mut self, other: &RecordingCs) {
        let (in_base, aux_base) = (self.input.len() as u64 - 1, self.aux.len() as u64);
        let remap = |c: u32| -> u64 {
            if c & INPUT_COLUMN == 0 {
                aux_base + u64::from(c)
            } else if c == INPUT_COLUMN {
                u64::from(INPUT_COLUMN)
            } else {
                u64::from(INPUT_COLUMN) | (in_base + u64::from(c & !INPUT_COLUMN))
            }
        };
        let coeff_map: Vec<u32> = other
            .coeffs
            .coeffs()
            .iter()
            .map(|k| self.coeffs.intern(k))
            .collect();
        for m in 0..3 {
            let theirs = &other.mats[m];
            for r in 0..theirs.rows() {
                for (c, k) in theirs.row(r) {
                    let c = remap(c);
                    // Past 31 bits the aux part would run into the input tag.
                    if c & !u64::from(INPUT_COLUMN) >= u64::from(INPUT_COLUMN) {
                        self.too_large = true;
                    }
                    self.mats[m].push(c as u32, k.map(|k| coeff_map[k as usize]));
                }
                self.end_row(m);
            }
        }
    }
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn new() -> Self {
        RecordingCs::new()
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

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.push_row(0, &a(LinearCombination::zero()));
        self.push_row(1, &b(LinearCombination::zero()));
        self.push_row(2, &c(LinearCombination::zero()));
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

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        self.append_rows(other);
        self.input.extend_from_slice(&other.input[1..]);
        self.aux.extend_from_slice(&other.aux);
        self.constraints += other.constraints;
        self.too_large |= other.too_large;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x * (y + 2) = z with an input x, in a sub-system extended into the root.
    fn sub_system(x: u64, y: u64) -> RecordingCs {
        let mut sub = RecordingCs::new();
        sub.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let xv = sub.alloc_input(|| "x", || Ok(Scalar::from(x))).unwrap();
        let yv = sub.alloc(|| "y", || Ok(Scalar::from(y))).unwrap();
        let zv = sub.alloc(|| "z", || Ok(Scalar::from(x * (y + 2)))).unwrap();
        let one = RecordingCs::one();
        sub.enforce(
            || "c",
            |l| l + xv,
            |l| l + yv + (Scalar::from(2u64), one),
            |l| l + zv,
        );
        sub
    }

    #[test]
    fn extend_renumbers_columns_and_coefficients() {
        let mut root = RecordingCs::new();
        root.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let w = root.alloc(|| "w", || Ok(Scalar::from(9u64))).unwrap();
        root.enforce(
            || "w",
            |l| l + (Scalar::from(3u64), w),
            |l| l + RecordingCs::one(),
            |l| l + (Scalar::from(27u64), RecordingCs::one()),
        );
        root.extend(&sub_system(4, 5));
        root.extend(&sub_system(6, 7));
        // Inputs: one, x1, x2; aux: w, y1, z1, y2, z2.
        assert_eq!(root.input.len(), 3);
        assert_eq!(root.aux.len(), 5);
        let two = root.coeffs.intern(&Scalar::from(2u64));
        let rows = |m: usize, r: usize| root.mats[m].row(r).collect::<Vec<_>>();
        assert_eq!(rows(0, 2), vec![(INPUT_COLUMN | 2, None)]);
        assert_eq!(rows(1, 2), vec![(3, None), (INPUT_COLUMN, Some(two))]);
        assert_eq!(rows(2, 2), vec![(4, None)]);
        // 3, 27 and 2: one table entry each, shared by both sub-systems.
        assert_eq!(root.coeffs.coeffs().len(), 3);
    }

    #[test]
    fn zero_coefficients_are_dropped() {
        let mut cs = RecordingCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let v = cs.alloc(|| "v", || Ok(Scalar::ONE)).unwrap();
        cs.enforce(|| "z", |l| l + v - v, |l| l + v, |l| l + v);
        assert_eq!(cs.mats[0].nnz(), 0);
        assert_eq!(cs.mats[1].nnz(), 1);
    }
}

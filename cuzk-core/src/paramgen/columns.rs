//! The QAP columns at tau: for every variable j, A_j(tau) = sum over rows i of A[i][j] L_i(tau)
//! (and B, C alike), over the circuit's rows and the input rows `x_k * 0 = 0` after them.
//!
//! Rows are walked in parallel chunks. Each chunk owns a contiguous range of columns and adds
//! into it without locks; a term outside its range goes to the chunk's spill list, applied
//! once every chunk is done. The ranges come from a first pass: chunk c owns the columns
//! above everything the chunks before it reference, up to the largest it references itself.
//! Rows of real circuits mostly use variables allocated shortly before, so that puts nearly
//! every term in its own chunk's range; what does not (the constant one, inputs, an old
//! variable) spills, and the spill list is merged by column so that a column referenced by
//! every row costs one entry a chunk.

use bellpepper_core::Index;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{Matrix, RowSource};
use crate::job::{Error, Result};

/// A, B, C evaluated at tau, one entry a variable: inputs first, then aux.
pub struct Columns {
    pub num_inputs: usize,
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
}

impl Columns {
    pub fn num_vars(&self) -> usize {
        self.a.len()
    }
}

/// Rows a chunk holds at most: a spill list merged per chunk stays small, and 2^27 rows
/// still make 2^11 chunks for the pool to balance.
const MAX_CHUNK_ROWS: usize = 1 << 16;
/// Spill entries a chunk collects before merging them by column.
const SPILL_MERGE: usize = 1 << 16;

/// The columns of `src` under the Lagrange coefficients `lagrange` (one per row of the
/// domain, which holds the circuit's rows and the input rows).
pub fn qap_columns(src: &dyn RowSource, lagrange: &[Scalar]) -> Result<Columns> {
    let rows = src.num_rows() + src.num_inputs();
    let chunk = (rows / (rayon::current_num_threads() * 8)).clamp(1, MAX_CHUNK_ROWS);
    qap_columns_in_chunks(src, lagrange, chunk)
}

/// Every row of the QAP with its variables as column numbers: the circuit's, then the
/// input rows.
struct Rows<'a> {
    src: &'a dyn RowSource,
    num_inputs: usize,
    num_aux: usize,
    circuit_rows: usize,
}

impl Rows<'_> {
    fn len(&self) -> usize {
        self.circuit_rows + self.num_inputs
    }

    /// Calls `term(matrix, column, coefficient)`; a variable out of range is an error.
    fn row(&self, i: usize, term: &mut dyn FnMut(Matrix, usize, Scalar)) -> Result<()> {
        if i >= self.circuit_rows {
            term(Matrix::A, i - self.circuit_rows, Scalar::ONE);
            return Ok(());
        }
        let mut bad = None;
        self.src.row(i, &mut |m, index, coeff| match index {
            Index::Input(k) if k < self.num_inputs => term(m, k, coeff),
            Index::Aux(k) if k < self.num_aux => term(m, self.num_inputs + k, coeff),
            _ => bad = Some(index),
        });
        match bad {
            None => Ok(()),
            Some(index) => Err(Error::Params(format!(
                "computing the QAP columns: row {i} references {index:?}, beyond the \
                 circuit's {} inputs and {} aux",
                self.num_inputs, self.num_aux
            ))),
        }
    }
}

/// Terms a chunk could not add into its own range, per matrix: (column, value), and the
/// length at which each list is merged next.
struct Spill([Vec<(usize, Scalar)>; 3], [usize; 3]);

impl Spill {
    fn new() -> Self {
        Spill(Default::default(), [SPILL_MERGE; 3])
    }

    fn push(&mut self, m: usize, col: usize, v: Scalar) {
        self.0[m].push((col, v));
        if self.0[m].len() >= self.1[m] {
            merge(&mut self.0[m]);
            // A list of distinct columns (one row over every variable: the synthetic
            // circuit's sum) does not shrink: merge again only once it has doubled, so the
            // merging stays linear in the terms.
            self.1[m] = SPILL_MERGE.max(2 * self.0[m].len());
        }
    }
}

/// Sort by column and add up the entries of each.
fn merge(v: &mut Vec<(usize, Scalar)>) {
    v.sort_unstable_by_key(|e| e.0);
    let mut out = 0;
    for i in 0..v.len() {
        if out > 0 && v[out - 1].0 == v[i].0 {
            let x = v[i].1;
            v[out - 1].1 += x;
        } else {
            v[out] = v[i];
            out += 1;
        }
    }
    v.truncate(out);
}

fn matrix_index(m: Matrix) -> usize {
    match m {
        Matrix::A => 0,
        Matrix::B => 1,
        Matrix::C => 2,
    }
}

/// `qap_columns` with the rows a chunk holds given (tests use tiny chunks to make rows
/// spill).
pub(crate) fn qap_columns_in_chunks(
    src: &dyn RowSource,
    lagrange: &[Scalar],
    chunk: usize,
) -> Result<Columns> {
    let rows = Rows {
        src,
        num_inputs: src.num_inputs(),
        num_aux: src.num_aux(),
        circuit_rows: src.num_rows(),
    };
    let (n, vars) = (rows.len(), rows.num_inputs + rows.num_aux);
    if lagrange.len() < n {
        return Err(Error::Params(format!(
            "computing the QAP columns: {n} rows but {} Lagrange coefficients",
            lagrange.len()
        )));
    }
    let starts: Vec<usize> = (0..n.div_ceil(chunk)).map(|c| c * chunk).collect();
    let range = |c: usize| starts[c]..(starts[c] + chunk).min(n);

    // First pass: the largest column each chunk references.
    let highest: Vec<usize> = (0..starts.len())
        .into_par_iter()
        .map(|c| {
            let mut top = 0;
            for i in range(c) {
                rows.row(i, &mut |_, col, _| top = top.max(col + 1))?;
            }
            Ok(top)
        })
        .collect::<Result<_>>()?;
    let mut bounds = Vec::with_capacity(starts.len() + 1);
    bounds.push(0);
    for &h in &highest {
        let last = *bounds.last().unwrap();
        bounds.push(h.max(last));
    }
    *bounds.last_mut().unwrap() = vars;

    let (mut a, mut b, mut c) = (
        vec![Scalar::ZERO; vars],
        vec![Scalar::ZERO; vars],
        vec![Scalar::ZERO; vars],
    );
    let owned = split_owned([&mut a, &mut b, &mut c], &bounds);
    let spills: Vec<Spill> = owned
        .into_par_iter()
        .enumerate()
        .map(|(ci, mut own)| {
            let lo = bounds[ci];
            let mut spill = Spill::new();
            for i in range(ci) {
                let l = lagrange[i];
                rows.row(i, &mut |m, col, coeff| {
                    let v = if coeff == Scalar::ONE { l } else { coeff * l };
                    let m = matrix_index(m);
                    match own[m].get_mut(col.wrapping_sub(lo)) {
                        Some(x) => *x += v,
                        None => spill.push(m, col, v),
                    }
                })?;
            }
            spill.0.iter_mut().for_each(merge);
            Ok(spill)
        })
        .collect::<Result<_>>()?;

    // The spills, one matrix per task.
    [&mut a, &mut b, &mut c]
        .into_par_iter()
        .enumerate()
        .for_each(|(m, col)| {
            for s in &spills {
                for &(j, v) in &s.0[m] {
                    col[j] += v;
                }
            }
        });
    Ok(Columns {
        num_inputs: rows.num_inputs,
        a,
        b,
        c,
    })
}

/// Cut the three column vectors at `bounds`: chunk c gets [bounds[c], bounds[c + 1]) of each.
fn split_owned<'a>(cols: [&'a mut Vec<Scalar>; 3], bounds: &[usize]) -> Vec<[&'a mut [Scalar]; 3]> {
    let mut rest: [&'a mut [Scalar]; 3] = cols.map(|v| v.as_mut_slice());
    let mut out = Vec::with_capacity(bounds.len() - 1);
    for w in bounds.windows(2) {
        let len = w[1] - w[0];
        let [a, b, c] = rest;
        let (a0, a1) = a.split_at_mut(len);
        let (b0, b1) = b.split_at_mut(len);
        let (c0, c1) = c.split_at_mut(len);
        out.push([a0, b0, c0]);
        rest = [a1, b1, c1];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Rows of random terms: mostly recent variables, some far behind or ahead, inputs,
    /// repeats and zero coefficients.
    struct RandomRows {
        rows: Vec<Vec<(Matrix, Index, Scalar)>>,
        inputs: usize,
        aux: usize,
    }

    impl RandomRows {
        fn new(n: usize, inputs: usize, seed: u64) -> Self {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let aux = n;
            let rows = (0..n)
                .map(|i| {
                    (0..rng.gen_range(0..6))
                        .map(|_| {
                            let m = [Matrix::A, Matrix::B, Matrix::C][rng.gen_range(0..3)];
                            let index = match rng.gen_range(0..10) {
                                0 => Index::Input(rng.gen_range(0..inputs)),
                                1 => Index::Aux(rng.gen_range(0..aux)),
                                _ => Index::Aux(i.saturating_sub(rng.gen_range(0..4))),
                            };
                            let coeff = match rng.gen_range(0..4) {
                                0 => Scalar::ZERO,
                                1 => Scalar::ONE,
                                _ => Scalar::from(rng.gen::<u64>()),
                            };
                            (m, index, coeff)
                        })
                        .collect()
                })
                .collect();
            RandomRows { rows, inputs, aux }
        }
    }

    impl RowSource for RandomRows {
        fn num_inputs(&self) -> usize {
            self.inputs
        }
        fn num_aux(&self) -> usize {
            self.aux
        }
        fn num_rows(&self) -> usize {
            self.rows.len()
        }
        fn row(&self, i: usize, term: &mut dyn FnMut(Matrix, Index, Scalar)) {
            for &(m, index, coeff) in &self.rows[i] {
                term(m, index, coeff);
            }
        }
    }

    /// The definition, one term at a time.
    fn naive(src: &RandomRows, lagrange: &[Scalar]) -> [Vec<Scalar>; 3] {
        let vars = src.inputs + src.aux;
        let mut cols = [0; 3].map(|_| vec![Scalar::ZERO; vars]);
        for (i, row) in src.rows.iter().enumerate() {
            for &(m, index, coeff) in row {
                let j = match index {
                    Index::Input(k) => k,
                    Index::Aux(k) => src.inputs + k,
                };
                cols[matrix_index(m)][j] += coeff * lagrange[i];
            }
        }
        for k in 0..src.inputs {
            cols[0][k] += lagrange[src.rows.len() + k];
        }
        cols
    }

    #[test]
    fn every_chunking_gives_the_definition() {
        let src = RandomRows::new(300, 5, 1);
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let lagrange: Vec<Scalar> = (0..305).map(|_| Scalar::random(&mut rng)).collect();
        let want = naive(&src, &lagrange);
        for chunk in [1, 3, 64, 1000] {
            let got = qap_columns_in_chunks(&src, &lagrange, chunk).unwrap();
            assert_eq!([got.a, got.b, got.c], want, "chunk {chunk}");
        }
        let got = qap_columns(&src, &lagrange).unwrap();
        assert_eq!([got.a, got.b, got.c], want);
    }

    /// One row over every variable, far from its chunk: the spill list grows past the
    /// merge size with nothing to merge, and must stay cheap and right.
    #[test]
    fn a_row_over_every_variable_spills_in_linear_time() {
        let n = 3 * SPILL_MERGE;
        let mut src = RandomRows::new(n, 2, 5);
        src.rows[n - 1] = (0..n)
            .map(|j| (Matrix::C, Index::Aux(j), Scalar::ONE))
            .collect();
        let lagrange: Vec<Scalar> = (0..n as u64 + 2).map(Scalar::from).collect();
        let got = qap_columns_in_chunks(&src, &lagrange, n / 4).unwrap();
        assert_eq!([got.a, got.b, got.c], naive(&src, &lagrange));
    }

    #[test]
    fn a_variable_out_of_range_is_an_error() {
        let mut src = RandomRows::new(10, 2, 3);
        src.rows[4].push((Matrix::B, Index::Aux(10), Scalar::ONE));
        let lagrange = vec![Scalar::ONE; 12];
        let err = qap_columns_in_chunks(&src, &lagrange, 2).err().unwrap();
        assert!(err.to_string().contains("row 4"), "{err}");
    }

    #[test]
    fn merging_adds_entries_of_one_column() {
        let (one, two) = (Scalar::ONE, Scalar::from(2u64));
        let mut v = vec![(5, one), (1, two), (5, two), (1, one), (3, one)];
        merge(&mut v);
        assert_eq!(v, vec![(1, two + one), (3, one), (5, one + two)]);
    }
}

//! Matrices of a circuit that can walk its own rows (`paramgen::RowSource`), built without
//! synthesizing it: how the PoRep-shaped kind at 2^27 (134M rows, ~730M terms) gets the
//! matrices a device-side a, b, c evaluation needs, on every core.
//!
//! One walk over the rows, chunk by chunk in parallel, each chunk into arrays of its own with
//! its own coefficient table; then the tables are merged in chunk order (so the coefficient
//! table, and with it the digest, does not depend on scheduling) and every chunk is copied
//! into its slice of the final arrays, its offsets rebased and its coefficient indices
//! renumbered on the way. (A counting pass first, to write in place, cost a second walk:
//! the walk, not the copy, is the expensive part.)

use std::ops::Range;

use bellpepper_core::Index;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{CoeffTable, Matrices, Matrix, RecordError, INPUT_COLUMN};
use crate::paramgen::{self, RowSource};

/// Rows per parallel task.
const CHUNK: usize = 1 << 16;

/// The matrices of `src` under `key`: its rows, then the prover's input rows `x_i * 0 = 0`,
/// as `record_matrices` would give for the circuit the rows describe (the same terms; a
/// row's terms in the order the source gives them, a variable repeated if it repeats them).
pub fn matrices_from_rows(key: &str, src: &dyn RowSource) -> Result<Matrices, RecordError> {
    let (inputs, aux) = (src.num_inputs(), src.num_aux());
    if inputs.max(aux) >= INPUT_COLUMN as usize {
        return Err(RecordError::TooLarge);
    }
    let rows = src.num_rows() + inputs;
    let chunks: Vec<Range<usize>> = (0..rows.div_ceil(CHUNK))
        .map(|k| k * CHUNK..rows.min((k + 1) * CHUNK))
        .collect();
    let locals: Vec<Local> = chunks.par_iter().map(|r| walk(src, r.clone())).collect();

    // The global coefficient table, and each chunk's renumbering into it.
    let mut coeffs = CoeffTable::default();
    let renumber: Vec<Vec<u32>> = locals
        .iter()
        .map(|l| l.coeffs.coeffs().iter().map(|k| coeffs.intern(k)).collect())
        .collect();
    let total = |f: fn(&Matrix) -> usize, m: usize| locals.iter().map(|l| f(&l.parts[m])).sum();
    let mut mats: [Matrix; 3] = std::array::from_fn(|m| {
        let (units, scaled) = (
            total(|p| p.unit_cols.len(), m),
            total(|p| p.scaled_cols.len(), m),
        );
        Matrix {
            unit_start: vec![0; rows + 1],
            unit_cols: vec![0; units],
            scaled_start: vec![0; rows + 1],
            scaled_cols: vec![0; scaled],
            scaled_coeffs: vec![0; scaled],
        }
    });
    if mats
        .iter()
        .any(|m| m.unit_cols.len().max(m.scaled_cols.len()) > u32::MAX as usize)
    {
        return Err(RecordError::TooLarge);
    }

    // Each chunk's slices of the three matrices, cut in chunk order.
    let mut rest: [Slices; 3] = mats.each_mut().map(|m| Slices {
        row_ends: [&mut m.unit_start[1..], &mut m.scaled_start[1..]],
        unit_cols: &mut m.unit_cols,
        scaled_cols: &mut m.scaled_cols,
        scaled_coeffs: &mut m.scaled_coeffs,
    });
    let mut base = [(0usize, 0usize); 3];
    let mut views: Vec<[View; 3]> = Vec::with_capacity(chunks.len());
    for (r, l) in chunks.iter().zip(&locals) {
        views.push(std::array::from_fn(|m| {
            let p = &l.parts[m];
            let v = rest[m].take(r.len(), p.unit_cols.len(), p.scaled_cols.len(), base[m]);
            base[m].0 += p.unit_cols.len();
            base[m].1 += p.scaled_cols.len();
            v
        }));
    }
    locals
        .into_par_iter()
        .zip(views)
        .zip(renumber)
        .for_each(|((l, view), renumber)| {
            for (p, v) in l.parts.iter().zip(view) {
                v.fill(p, &renumber);
            }
        });

    Ok(Matrices::new(
        key.to_string(),
        inputs,
        aux,
        mats,
        coeffs.into_vec(),
    ))
}

/// One chunk of rows, walked: its part of each matrix (row offsets relative to the chunk),
/// scaled terms indexing the chunk's own coefficient table.
struct Local {
    parts: [Matrix; 3],
    coeffs: CoeffTable,
}

fn walk(src: &dyn RowSource, rows: Range<usize>) -> Local {
    let mut l = Local {
        parts: std::array::from_fn(|_| Matrix::new()),
        coeffs: CoeffTable::default(),
    };
    for i in rows {
        row_terms(src, i, &mut |m, col, k| {
            let coeff = (k != Scalar::ONE).then(|| l.coeffs.intern(&k));
            l.parts[m].push(col, coeff);
        });
        for p in &mut l.parts {
            // A chunk's offsets are far from 32 bits; the whole is checked when merged.
            p.end_row();
        }
    }
    l
}

/// Row i's non-zero terms as (matrix 0..3, column, coefficient); rows past the source's are
/// the input rows, one A term each.
fn row_terms(src: &dyn RowSource, i: usize, term: &mut dyn FnMut(usize, u32, Scalar)) {
    let own = src.num_rows();
    if i >= own {
        return term(0, (i - own) as u32 | INPUT_COLUMN, Scalar::ONE);
    }
    src.row(i, &mut |m, var, k| {
        if bool::from(k.is_zero()) {
            return;
        }
        let m = match m {
            paramgen::Matrix::A => 0,
            paramgen::Matrix::B => 1,
            paramgen::Matrix::C => 2,
        };
        let col = match var {
            Index::Input(j) => j as u32 | INPUT_COLUMN,
            Index::Aux(j) => j as u32,
        };
        term(m, col, k)
    });
}

/// Slices of one matrix's final arrays: what is left to hand out (row starts from row 1 on,
/// i.e. row ends), or one chunk's share of it.
struct Slices<'a> {
    row_ends: [&'a mut [u32]; 2],
    unit_cols: &'a mut [u32],
    scaled_cols: &'a mut [u32],
    scaled_coeffs: &'a mut [u32],
}

/// One chunk's slices, and where its unit and scaled terms start in the matrix.
struct View<'a> {
    slices: Slices<'a>,
    base: (usize, usize),
}

impl View<'_> {
    fn fill(self, p: &Matrix, renumber: &[u32]) {
        let Slices {
            row_ends: [unit_end, scaled_end],
            unit_cols,
            scaled_cols,
            scaled_coeffs,
        } = self.slices;
        for (ends, local, base) in [
            (unit_end, &p.unit_start[1..], self.base.0),
            (scaled_end, &p.scaled_start[1..], self.base.1),
        ] {
            for (out, &e) in ends.iter_mut().zip(local) {
                *out = base as u32 + e;
            }
        }
        unit_cols.copy_from_slice(&p.unit_cols);
        scaled_cols.copy_from_slice(&p.scaled_cols);
        for (out, &k) in scaled_coeffs.iter_mut().zip(&p.scaled_coeffs) {
            *out = renumber[k as usize];
        }
    }
}

impl<'a> Slices<'a> {
    /// The next chunk's share: `rows` rows, `units` unit and `scaled` scaled terms.
    fn take(&mut self, rows: usize, units: usize, scaled: usize, base: (usize, usize)) -> View<'a> {
        fn cut<'a>(s: &mut &'a mut [u32], n: usize) -> &'a mut [u32] {
            let (head, tail) = std::mem::take(s).split_at_mut(n);
            *s = tail;
            head
        }
        let [u, s] = &mut self.row_ends;
        View {
            slices: Slices {
                row_ends: [cut(u, rows), cut(s, rows)],
                unit_cols: cut(&mut self.unit_cols, units),
                scaled_cols: cut(&mut self.scaled_cols, scaled),
                scaled_coeffs: cut(&mut self.scaled_coeffs, scaled),
            },
            base,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::kinds::porep_shaped::{PorepShape, PorepShaped};
    use crate::matrices::record_matrices;

    /// Row r of `m` as column -> summed coefficient.
    fn row_map(m: &Matrices, which: &Matrix, r: usize) -> BTreeMap<u32, Scalar> {
        let mut terms = BTreeMap::new();
        for (col, k) in which.row(r) {
            let k = k.map_or(Scalar::ONE, |k| m.coeffs[k as usize]);
            *terms.entry(col).or_insert(Scalar::ZERO) += k;
        }
        terms.retain(|_, k| !bool::from(k.is_zero()));
        terms
    }

    /// The rows' matrices are the recorded circuit's, term for term (up to order), with the
    /// same densities; and they are built the same twice (the digest is deterministic).
    #[test]
    fn rows_give_the_recorded_matrices() {
        for log in [10, 12] {
            let shape = PorepShape::new(log);
            let built = matrices_from_rows("k", &shape).unwrap();
            let (recorded, _) = record_matrices("k", PorepShaped::new(log, 5)).unwrap();
            assert_eq!(built.num_constraints(), recorded.num_constraints());
            assert_eq!(built.num_constraints(), 1 << log);
            assert_eq!(
                (built.num_inputs, built.num_aux),
                (recorded.num_inputs, recorded.num_aux)
            );
            for (x, y) in [
                (&built.a, &recorded.a),
                (&built.b, &recorded.b),
                (&built.c, &recorded.c),
            ] {
                for r in 0..built.num_constraints() {
                    assert_eq!(row_map(&built, x, r), row_map(&recorded, y, r), "row {r}");
                }
            }
            assert_eq!(built.a_aux_density, recorded.a_aux_density);
            assert_eq!(built.b_input_density, recorded.b_input_density);
            assert_eq!(built.b_aux_density, recorded.b_aux_density);
            assert_eq!(
                built.digest,
                matrices_from_rows("k", &shape).unwrap().digest
            );
        }
    }
}

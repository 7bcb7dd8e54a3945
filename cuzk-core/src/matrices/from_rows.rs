//! Matrices of a circuit that can walk its own rows (`paramgen::RowSource`), built without
//! synthesizing it: how the PoRep-shaped kind at 2^27 (134M rows, ~730M terms) gets the
//! matrices a device-side a, b, c evaluation needs, in seconds on every core.
//!
//! Two passes over the rows, chunk by chunk in parallel: the first counts each chunk's terms
//! and gathers its distinct coefficients (so the output is allocated once, at its final
//! size, and the coefficient table is in a deterministic order: chunk by chunk, first use
//! first), the second writes every chunk's terms into its own slice of the output.

use std::collections::{HashMap, HashSet};

use bellpepper_core::Index;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::{Matrices, Matrix, RecordError, INPUT_COLUMN};
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
    let chunks: Vec<std::ops::Range<usize>> = (0..rows.div_ceil(CHUNK))
        .map(|k| k * CHUNK..rows.min((k + 1) * CHUNK))
        .collect();

    let counted: Vec<Counted> = chunks.par_iter().map(|r| count(src, r.clone())).collect();
    let mut coeffs = Vec::new();
    let mut index: HashMap<[u8; 32], u32> = HashMap::new();
    for c in &counted {
        for (repr, k) in &c.coeffs {
            index.entry(*repr).or_insert_with(|| {
                coeffs.push(*k);
                (coeffs.len() - 1) as u32
            });
        }
    }
    let totals = |f: fn(&Counted) -> [usize; 3]| {
        counted.iter().fold([0; 3], |t, c| {
            let n = f(c);
            [t[0] + n[0], t[1] + n[1], t[2] + n[2]]
        })
    };
    let (units, scaled) = (totals(|c| c.units), totals(|c| c.scaled));
    if units.iter().chain(&scaled).any(|&n| n > u32::MAX as usize) {
        return Err(RecordError::TooLarge);
    }

    let mut mats: [Matrix; 3] = std::array::from_fn(|m| Matrix {
        unit_start: vec![0; rows + 1],
        unit_cols: vec![0; units[m]],
        scaled_start: vec![0; rows + 1],
        scaled_cols: vec![0; scaled[m]],
        scaled_coeffs: vec![0; scaled[m]],
    });
    // Each chunk's slices of the three matrices, cut in chunk order.
    let mut views: Vec<[View; 3]> = Vec::with_capacity(chunks.len());
    let mut rest: [Rest; 3] = mats.each_mut().map(|m| Rest {
        unit_start: &mut m.unit_start[1..],
        unit_cols: &mut m.unit_cols,
        scaled_start: &mut m.scaled_start[1..],
        scaled_cols: &mut m.scaled_cols,
        scaled_coeffs: &mut m.scaled_coeffs,
    });
    let mut base = ([0usize; 3], [0usize; 3]);
    for (r, c) in chunks.iter().zip(&counted) {
        let view = std::array::from_fn(|m| {
            let v = rest[m].take(r.len(), c.units[m], c.scaled[m], base.0[m], base.1[m]);
            base.0[m] += c.units[m];
            base.1[m] += c.scaled[m];
            v
        });
        views.push(view);
    }
    chunks
        .into_par_iter()
        .zip(views)
        .for_each(|(r, view)| fill(src, r, view, &index));

    Ok(Matrices::new(key.to_string(), inputs, aux, mats, coeffs))
}

/// What the first pass learns of one chunk of rows.
struct Counted {
    units: [usize; 3],
    scaled: [usize; 3],
    /// Its distinct coefficients other than one, in first-use order.
    coeffs: Vec<([u8; 32], Scalar)>,
}

fn count(src: &dyn RowSource, rows: std::ops::Range<usize>) -> Counted {
    let mut c = Counted {
        units: [0; 3],
        scaled: [0; 3],
        coeffs: Vec::new(),
    };
    let mut seen = HashSet::new();
    for i in rows {
        row_terms(src, i, &mut |m, _, k| {
            if k == Scalar::ONE {
                c.units[m] += 1;
            } else {
                c.scaled[m] += 1;
                let repr = k.to_repr();
                if seen.insert(repr) {
                    c.coeffs.push((repr, k));
                }
            }
        });
    }
    c
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

/// One chunk's part of one matrix: its rows' end offsets (global), its terms.
struct View<'a> {
    unit_end: &'a mut [u32],
    unit_cols: &'a mut [u32],
    scaled_end: &'a mut [u32],
    scaled_cols: &'a mut [u32],
    scaled_coeffs: &'a mut [u32],
    unit_base: usize,
    scaled_base: usize,
}

/// What is left of one matrix's arrays to hand out.
struct Rest<'a> {
    unit_start: &'a mut [u32],
    unit_cols: &'a mut [u32],
    scaled_start: &'a mut [u32],
    scaled_cols: &'a mut [u32],
    scaled_coeffs: &'a mut [u32],
}

impl<'a> Rest<'a> {
    fn take(
        &mut self,
        rows: usize,
        units: usize,
        scaled: usize,
        unit_base: usize,
        scaled_base: usize,
    ) -> View<'a> {
        fn cut<'a>(s: &mut &'a mut [u32], n: usize) -> &'a mut [u32] {
            let (head, tail) = std::mem::take(s).split_at_mut(n);
            *s = tail;
            head
        }
        View {
            unit_end: cut(&mut self.unit_start, rows),
            unit_cols: cut(&mut self.unit_cols, units),
            scaled_end: cut(&mut self.scaled_start, rows),
            scaled_cols: cut(&mut self.scaled_cols, scaled),
            scaled_coeffs: cut(&mut self.scaled_coeffs, scaled),
            unit_base,
            scaled_base,
        }
    }
}

fn fill(
    src: &dyn RowSource,
    rows: std::ops::Range<usize>,
    mut view: [View; 3],
    index: &HashMap<[u8; 32], u32>,
) {
    let mut at = [(0usize, 0usize); 3];
    for (r, i) in rows.enumerate() {
        row_terms(src, i, &mut |m, col, k| {
            let (v, (u, s)) = (&mut view[m], &mut at[m]);
            if k == Scalar::ONE {
                v.unit_cols[*u] = col;
                *u += 1;
            } else {
                v.scaled_cols[*s] = col;
                v.scaled_coeffs[*s] = index[&k.to_repr()];
                *s += 1;
            }
        });
        for (v, &(u, s)) in view.iter_mut().zip(&at) {
            v.unit_end[r] = (v.unit_base + u) as u32;
            v.scaled_end[r] = (v.scaled_base + s) as u32;
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

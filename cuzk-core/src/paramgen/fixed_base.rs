//! Fixed-base scalar multiplication: the same generator times millions of scalars, which is
//! all a parameter set's queries are.
//!
//! On the CPU: a table of the base's multiples d * 2^(w k) * base (d = 1 ..= 2^(w-1), one row
//! per w-bit window k) turns each product into one mixed addition per window of the
//! scalar's signed-digit recoding, with no doublings; the results are brought to affine form
//! in batches (one field inversion per batch, blst's `p1s_to_affine`). With w = 16 a G1
//! product costs 16 mixed additions, against ~255 doublings and ~50 additions for a
//! variable-base multiplication.

use std::ops::Neg;
use std::sync::Arc;

use blst::{
    blst_p1, blst_p1_affine, blst_p1s_to_affine, blst_p2, blst_p2_affine, blst_p2s_to_affine,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use parking_lot::Mutex;
use rayon::prelude::*;

use crate::job::{Error, Result};

/// out[i] = (scalars[i] * base).to_affine(), for G1 and G2.
pub trait FixedBase: Sync {
    fn g1(&self, base: &G1Affine, scalars: &[Scalar], out: &mut [G1Affine]) -> Result<()>;
    fn g2(&self, base: &G2Affine, scalars: &[Scalar], out: &mut [G2Affine]) -> Result<()>;
}

/// Every CPU core (rayon). Keeps the last table of each group, so that the chunks of one
/// query (same base, same size) build it once.
#[derive(Default)]
pub struct CpuFixedBase {
    g1_table: Mutex<Option<Arc<Table<G1Projective>>>>,
    g2_table: Mutex<Option<Arc<Table<G2Projective>>>>,
}

impl CpuFixedBase {
    pub fn new() -> Self {
        Self::default()
    }
}

impl FixedBase for CpuFixedBase {
    fn g1(&self, base: &G1Affine, scalars: &[Scalar], out: &mut [G1Affine]) -> Result<()> {
        times(&self.g1_table, base, scalars, out)
    }

    fn g2(&self, base: &G2Affine, scalars: &[Scalar], out: &mut [G2Affine]) -> Result<()> {
        times(&self.g2_table, base, scalars, out)
    }
}

/// Largest window: a G2 table of 16 rows of 2^15 points is 100 MB, and wider ones stop
/// paying for themselves below ~2^24 scalars per call. Cache-resident tables do not win:
/// capped at 12 (a 4 MB G1 table), 2^20 synthetic took 9.7 s against 8.4 s at 16 (16 cores).
const MAX_WINDOW: usize = 16;
/// Scalars whose products are normalised together (one inversion each batch).
const BATCH: usize = 1024;

/// What the table and the products need of a curve group in projective form.
trait Projective: Group + Copy + Send + Sync {
    type Affine: Copy + PartialEq + Send + Sync + Neg<Output = Self::Affine>;
    fn from_affine(p: &Self::Affine) -> Self;
    fn add_affine(&mut self, p: &Self::Affine);
    /// out[i] = points[i] in affine form, with one inversion for the whole slice.
    fn normalize(points: &[Self], out: &mut [Self::Affine]);
}

macro_rules! projective {
    ($proj:ty, $affine:ty, $raw:ty, $raw_affine:ty, $to_affine:ident) => {
        impl Projective for $proj {
            type Affine = $affine;

            fn from_affine(p: &$affine) -> Self {
                p.into()
            }

            fn add_affine(&mut self, p: &$affine) {
                // blst's add_or_double_affine: a mixed addition that also handles an
                // identity accumulator and equal points.
                *self += p;
            }

            fn normalize(points: &[Self], out: &mut [$affine]) {
                assert_eq!(points.len(), out.len());
                if points.is_empty() {
                    return;
                }
                // A second pointer of null tells blst that the first points at a contiguous
                // array. SAFETY: the blstrs point types are #[repr(transparent)] over blst's,
                // the slices are of equal length and do not overlap.
                let src: [*const $raw; 2] = [points.as_ptr().cast(), std::ptr::null()];
                unsafe {
                    $to_affine(
                        out.as_mut_ptr().cast::<$raw_affine>(),
                        src.as_ptr(),
                        points.len(),
                    )
                };
            }
        }
    };
}

projective!(
    G1Projective,
    G1Affine,
    blst_p1,
    blst_p1_affine,
    blst_p1s_to_affine
);
projective!(
    G2Projective,
    G2Affine,
    blst_p2,
    blst_p2_affine,
    blst_p2s_to_affine
);

/// The multiples of one base: row k holds d * 2^(w k) * base for d = 1 ..= 2^(w-1).
struct Table<P: Projective> {
    base: P::Affine,
    window: usize,
    windows: usize,
    points: Vec<P::Affine>,
}

impl<P: Projective> Table<P> {
    fn half(&self) -> usize {
        1 << (self.window - 1)
    }

    fn new(base: &P::Affine, window: usize) -> Self {
        let windows = windows(window);
        let half = 1usize << (window - 1);
        let mut points = vec![*base; windows * half];
        let base_p = P::from_affine(base);
        points
            .par_chunks_mut(half)
            .enumerate()
            .for_each(|(k, row)| {
                // 2^(w k) * base by doublings: w k <= 256 of them, once per row.
                let mut row_base = base_p;
                for _ in 0..window * k {
                    row_base = row_base.double();
                }
                let mut row_base_affine = [*base];
                P::normalize(&[row_base], &mut row_base_affine);
                let mut multiples = Vec::with_capacity(half);
                let mut acc = row_base;
                multiples.push(acc);
                for _ in 1..half {
                    acc.add_affine(&row_base_affine[0]);
                    multiples.push(acc);
                }
                P::normalize(&multiples, row);
            });
        Table {
            base: *base,
            window,
            windows,
            points,
        }
    }

    /// scalar * base: one mixed addition per non-zero signed digit.
    fn times(&self, scalar: &Scalar) -> P {
        let limbs = limbs(scalar);
        let (w, half) = (self.window, self.half());
        let mut acc = P::identity();
        let mut carry = 0usize;
        for k in 0..self.windows {
            let digit = window_bits(&limbs, k * w, w) + carry;
            // Digits in [-2^(w-1), 2^(w-1)]: the table holds only the positive half and the
            // negative one is a negation of y.
            if digit > half {
                // digit - 2^w, carrying 2^w into the next window; 2^w itself is a zero.
                let d = (1usize << w) - digit;
                if d != 0 {
                    acc.add_affine(&-self.points[k * half + d - 1]);
                }
                carry = 1;
            } else {
                if digit != 0 {
                    acc.add_affine(&self.points[k * half + digit - 1]);
                }
                carry = 0;
            }
        }
        acc
    }
}

/// Windows of w bits covering a scalar: scalars are below 2^255, so w * windows >= 256
/// leaves the top window room for the last carry.
fn windows(window: usize) -> usize {
    256usize.div_ceil(window)
}

/// The window minimising table building (about two operations a point) plus products.
fn window_for(n: usize) -> usize {
    (2..=MAX_WINDOW)
        .min_by_key(|&w| {
            let k = windows(w);
            n.saturating_mul(k) + 2 * k * (1usize << (w - 1))
        })
        .unwrap_or(MAX_WINDOW)
}

fn limbs(s: &Scalar) -> [u64; 4] {
    let bytes = s.to_bytes_le();
    std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()))
}

/// Bits [offset, offset + width) of a 256-bit little-endian number (width <= 16).
fn window_bits(limbs: &[u64; 4], offset: usize, width: usize) -> usize {
    let (i, shift) = (offset / 64, offset % 64);
    if i >= 4 {
        return 0;
    }
    let mut v = limbs[i] >> shift;
    if shift + width > 64 && i + 1 < 4 {
        v |= limbs[i + 1] << (64 - shift);
    }
    (v & ((1u64 << width) - 1)) as usize
}

fn times<P: Projective>(
    cache: &Mutex<Option<Arc<Table<P>>>>,
    base: &P::Affine,
    scalars: &[Scalar],
    out: &mut [P::Affine],
) -> Result<()> {
    if scalars.len() != out.len() {
        return Err(Error::Params(format!(
            "fixed-base multiplication: {} scalars for {} outputs",
            scalars.len(),
            out.len()
        )));
    }
    if scalars.is_empty() {
        return Ok(());
    }
    let window = window_for(scalars.len());
    let table = {
        let mut cached = cache.lock();
        match cached.as_ref() {
            Some(t) if t.base == *base && t.window == window => t.clone(),
            _ => {
                let t = Arc::new(Table::<P>::new(base, window));
                *cached = Some(t.clone());
                t
            }
        }
    };
    out.par_chunks_mut(BATCH)
        .zip(scalars.par_chunks(BATCH))
        .for_each(|(out, scalars)| {
            let products: Vec<P> = scalars.iter().map(|s| table.times(s)).collect();
            P::normalize(&products, out);
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn scalars(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut v: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        // The edges of the digit recoding: zero, one, -1 (every window's top digit), small
        // numbers and a power of two at a window boundary.
        v.extend([
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(2u64),
            Scalar::from(1u64 << 15),
            Scalar::from(1u64 << 16),
            Scalar::from(u64::MAX),
        ]);
        v
    }

    #[test]
    fn g1_products_equal_blstrs() {
        let fb = CpuFixedBase::new();
        let base = (G1Affine::generator() * Scalar::from(12345u64)).to_affine();
        // Sizes that pick different windows, and a batch boundary.
        for n in [1, 9, 300, 1500] {
            let s = scalars(n, n as u64);
            let mut out = vec![G1Affine::identity(); s.len()];
            fb.g1(&base, &s, &mut out).unwrap();
            for (x, p) in s.iter().zip(&out) {
                assert_eq!(*p, (base * x).to_affine(), "n {n}, scalar {x:?}");
            }
        }
    }

    #[test]
    fn g2_products_equal_blstrs() {
        let fb = CpuFixedBase::new();
        let base = G2Affine::generator();
        for n in [3, 200] {
            let s = scalars(n, 99 + n as u64);
            let mut out = vec![G2Affine::identity(); s.len()];
            fb.g2(&base, &s, &mut out).unwrap();
            for (x, p) in s.iter().zip(&out) {
                assert_eq!(*p, (base * x).to_affine(), "n {n}, scalar {x:?}");
            }
        }
    }

    #[test]
    fn every_window_width_recodes_exactly() {
        let base = G1Affine::generator();
        let s = scalars(5, 1);
        for w in 2..=MAX_WINDOW {
            let table = Table::<G1Projective>::new(&base, w);
            for x in &s {
                assert_eq!(table.times(x).to_affine(), (base * x).to_affine(), "w {w}");
            }
        }
    }

    #[test]
    fn mismatched_lengths_are_an_error() {
        let mut out = vec![G1Affine::identity(); 2];
        let err = CpuFixedBase::new().g1(&G1Affine::generator(), &[Scalar::ONE], &mut out);
        assert!(err.is_err());
    }
}

//! Number-theoretic transforms over BLS12-381's scalar field on the CPU, and the H
//! polynomial built from them.
//!
//! Conventions match bellperson 0.27's `EvaluationDomain` so that results are bit-identical:
//! omega is `ROOT_OF_UNITY` squared down to order n, the coset generator is the field's
//! `MULTIPLICATIVE_GENERATOR`, and the inverse transform scales by 1/n.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::BackendError;

/// Sub-transforms of this many elements are done whole by one thread, in cache.
const LOCAL_LOG: u32 = 12;

/// A power-of-two evaluation domain and its constants.
#[derive(Clone, Debug)]
pub struct Domain {
    pub log_n: u32,
    pub n: usize,
    pub omega: Scalar,
    pub omega_inv: Scalar,
    pub n_inv: Scalar,
    /// Coset generator g and its inverse.
    pub g: Scalar,
    pub g_inv: Scalar,
}

impl Domain {
    /// The smallest power-of-two domain holding `len` elements.
    pub fn for_len(len: usize) -> Result<Self, BackendError> {
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        Self::new(log_n)
    }

    pub fn new(log_n: u32) -> Result<Self, BackendError> {
        // bellperson refuses exponents >= S; so do we, to agree on what is provable.
        if log_n >= Scalar::S {
            return Err(BackendError::DomainTooLarge(log_n));
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..Scalar::S {
            omega = omega.square();
        }
        let n = 1usize << log_n;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        Ok(Domain {
            log_n,
            n,
            omega,
            omega_inv: omega.invert().unwrap(),
            n_inv: Scalar::from(n as u64).invert().unwrap(),
            g,
            g_inv: g.invert().unwrap(),
        })
    }

    /// 1 / z(g) where z(x) = x^n - 1 is the vanishing polynomial of the domain: z is constant
    /// on the coset g*H, so dividing by it is one multiplication per element.
    pub fn z_inv_on_coset(&self) -> Scalar {
        (self.g.pow_vartime([self.n as u64]) - Scalar::ONE)
            .invert()
            .unwrap()
    }

    /// Evaluations from coefficients, in place.
    pub fn ntt(&self, a: &mut [Scalar]) {
        transform(a, self.omega, self.log_n);
    }

    /// Coefficients from evaluations, in place.
    pub fn intt(&self, a: &mut [Scalar]) {
        transform(a, self.omega_inv, self.log_n);
        scale(a, self.n_inv);
    }

    /// Evaluations on the coset g*H from coefficients.
    pub fn coset_ntt(&self, a: &mut [Scalar]) {
        distribute_powers(a, self.g);
        self.ntt(a);
    }

    /// Coefficients from evaluations on the coset g*H.
    pub fn coset_intt(&self, a: &mut [Scalar]) {
        self.intt(a);
        distribute_powers(a, self.g_inv);
    }
}

/// h = (a*b - c) / z as coefficients (`n - 1` of them), from evaluations of a, b, c over the
/// domain (zero padded to its size).
pub fn h_polynomial(
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
) -> Result<Vec<Scalar>, BackendError> {
    if a.len() != b.len() || a.len() != c.len() {
        return Err(BackendError::LengthMismatch {
            a: a.len(),
            b: b.len(),
            c: c.len(),
        });
    }
    let domain = Domain::for_len(a.len())?;
    for v in [&mut a, &mut b, &mut c] {
        v.resize(domain.n, Scalar::ZERO);
    }
    let to_coset = |v: &mut Vec<Scalar>| {
        domain.intt(v);
        domain.coset_ntt(v);
    };
    rayon::join(
        || to_coset(&mut a),
        || rayon::join(|| to_coset(&mut b), || to_coset(&mut c)),
    );
    let z_inv = domain.z_inv_on_coset();
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
    drop((b, c));
    domain.coset_intt(&mut a);
    a.truncate(domain.n - 1);
    Ok(a)
}

/// Multiply every element by a scalar.
pub fn scale(a: &mut [Scalar], k: Scalar) {
    a.par_iter_mut().for_each(|x| *x *= k);
}

/// a[i] *= g^i.
pub fn distribute_powers(a: &mut [Scalar], g: Scalar) {
    const CHUNK: usize = 1 << 12;
    a.par_chunks_mut(CHUNK).enumerate().for_each(|(ci, chunk)| {
        let mut w = g.pow_vartime([(ci * CHUNK) as u64]);
        for x in chunk {
            *x *= w;
            w *= g;
        }
    });
}

/// In-place radix-2 decimation-in-time transform with root `omega` of order 2^log_n.
fn transform(a: &mut [Scalar], omega: Scalar, log_n: u32) {
    let n = a.len();
    assert_eq!(n, 1 << log_n, "ntt length must be the domain size");
    if n == 1 {
        return;
    }
    bit_reverse(a, log_n);
    // twiddles[j] = omega^j for j < n/2; a stage of half-size m uses every (n/2m)-th.
    let twiddles = powers(omega, n / 2);

    // Stages with blocks up to 2^LOCAL_LOG: each block is independent and fits in cache.
    let local = log_n.min(LOCAL_LOG);
    a.par_chunks_mut(1 << local).for_each(|block| {
        for s in 0..local {
            let m = 1usize << s;
            let stride = n / (2 * m);
            for pair in block.chunks_mut(2 * m) {
                let (lo, hi) = pair.split_at_mut(m);
                butterflies(lo, hi, &twiddles, stride, 0);
            }
        }
    });
    // Remaining stages: few, large blocks; split each block's butterflies across threads.
    for s in local..log_n {
        let m = 1usize << s;
        let stride = n / (2 * m);
        for pair in a.chunks_mut(2 * m) {
            let (lo, hi) = pair.split_at_mut(m);
            const PIECE: usize = 1 << 11;
            lo.par_chunks_mut(PIECE)
                .zip(hi.par_chunks_mut(PIECE))
                .enumerate()
                .for_each(|(pi, (lo, hi))| butterflies(lo, hi, &twiddles, stride, pi * PIECE));
        }
    }
}

#[inline]
fn butterflies(
    lo: &mut [Scalar],
    hi: &mut [Scalar],
    twiddles: &[Scalar],
    stride: usize,
    j0: usize,
) {
    for (j, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *y * twiddles[(j0 + j) * stride];
        *y = *x - t;
        *x += t;
    }
}

/// [1, w, w^2, ..., w^(count-1)], computed in parallel chunks.
fn powers(w: Scalar, count: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![Scalar::ZERO; count];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(ci, chunk)| {
            let mut x = w.pow_vartime([(ci * CHUNK) as u64]);
            for v in chunk {
                *v = x;
                x *= w;
            }
        });
    out
}

fn bit_reverse(a: &mut [Scalar], log_n: u32) {
    let shift = usize::BITS - log_n;
    for i in 0..a.len() {
        let j = i.reverse_bits() >> shift;
        if i < j {
            a.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn random_vec(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    /// Direct O(n^2) evaluation: the definition the fast transform must agree with.
    fn naive_ntt(coeffs: &[Scalar], omega: Scalar) -> Vec<Scalar> {
        let n = coeffs.len();
        (0..n)
            .map(|i| {
                let x = omega.pow_vartime([i as u64]);
                coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
            })
            .collect()
    }

    #[test]
    fn ntt_matches_definition_and_inverts() {
        for log_n in 0..=8 {
            let d = Domain::new(log_n).unwrap();
            let v = random_vec(d.n, log_n as u64);
            let mut f = v.clone();
            d.ntt(&mut f);
            assert_eq!(f, naive_ntt(&v, d.omega), "ntt 2^{log_n}");
            d.intt(&mut f);
            assert_eq!(f, v, "intt(ntt) 2^{log_n}");
            let mut c = v.clone();
            d.coset_ntt(&mut c);
            d.coset_intt(&mut c);
            assert_eq!(c, v, "coset round trip 2^{log_n}");
        }
    }

    #[test]
    fn large_ntt_uses_global_stages_correctly() {
        // 2^14 exercises the stages above LOCAL_LOG; compare one output point with Horner.
        let d = Domain::new(14).unwrap();
        let v = random_vec(d.n, 99);
        let mut f = v.clone();
        d.ntt(&mut f);
        for i in [0usize, 1, 4097, d.n - 1] {
            let x = d.omega.pow_vartime([i as u64]);
            let expect = v.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c);
            assert_eq!(f[i], expect, "point {i}");
        }
        d.intt(&mut f);
        assert_eq!(f, v);
    }

    #[test]
    fn h_is_the_quotient() {
        // Build a, b with c = a*b pointwise so a*b - c vanishes on the domain: then h*z must
        // equal a*b - c as polynomials; check at a random point.
        let n = 64;
        let a = random_vec(n - 3, 1);
        let b = random_vec(n - 3, 2);
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
        let h = h_polynomial(a.clone(), b.clone(), c.clone()).unwrap();
        assert_eq!(h.len(), n - 1);
        let d = Domain::new(6).unwrap();
        let interp = |mut v: Vec<Scalar>| {
            v.resize(n, Scalar::ZERO);
            d.intt(&mut v);
            v
        };
        let (pa, pb, pc) = (interp(a), interp(b), interp(c));
        let x = Scalar::from(123456789u64);
        let ev = |p: &[Scalar]| p.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c);
        let z = x.pow_vartime([n as u64]) - Scalar::ONE;
        assert_eq!(ev(&pa) * ev(&pb) - ev(&pc), ev(&h) * z);
    }

    #[test]
    fn rejects_mismatched_lengths() {
        let r = h_polynomial(
            vec![Scalar::ONE; 3],
            vec![Scalar::ONE; 2],
            vec![Scalar::ONE; 3],
        );
        assert!(matches!(r, Err(BackendError::LengthMismatch { .. })));
    }
}

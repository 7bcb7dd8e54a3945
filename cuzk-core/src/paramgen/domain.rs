//! The evaluation domain of the QAP and what the setup needs of it at tau: the Lagrange
//! basis (for the A, B, C columns) and the powers of tau (for the H query).
//!
//! bellperson takes the IFFT of (1, tau, ..., tau^(m-1)) to get the Lagrange coefficients;
//! the closed form L_i(tau) = omega^i (tau^m - 1) / (m (tau - omega^i)) is the same field
//! element (the geometric sum of (tau omega^-i)^j / m), and costs a handful of
//! multiplications a point with one inversion per chunk instead of an O(m log m) transform
//! held whole.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::job::{Error, Result};

/// Elements computed in one sequential run (one inversion, one exponentiation each).
const CHUNK: usize = 1 << 14;

/// A multiplicative subgroup of size 2^log: where the QAP's rows are interpolated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain {
    pub log: u32,
    pub size: usize,
    pub omega: Scalar,
}

impl Domain {
    /// The domain bellperson uses for `rows` constraints: the smallest power of two holding
    /// them, its generator the 2^S-th root of unity squared down.
    pub fn for_rows(rows: usize) -> Result<Self> {
        let log = rows.max(1).next_power_of_two().trailing_zeros();
        if log >= Scalar::S {
            return Err(Error::Params(format!(
                "{rows} constraints need a domain of 2^{log}, above the field's 2^{}",
                Scalar::S - 1
            )));
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log..Scalar::S {
            omega = omega.square();
        }
        Ok(Domain {
            log,
            size: 1 << log,
            omega,
        })
    }

    /// The vanishing polynomial tau^m - 1.
    pub fn z_at(&self, tau: &Scalar) -> Scalar {
        tau.pow_vartime([self.size as u64]) - Scalar::ONE
    }

    /// L_i(tau) for every i of the domain. Fails when tau lies in the domain (a zero
    /// denominator; the setup would be degenerate anyway).
    pub fn lagrange_at(&self, tau: &Scalar) -> Result<Vec<Scalar>> {
        let z = self.z_at(tau);
        if bool::from(z.is_zero()) {
            return Err(Error::Params("tau is a root of unity of the domain".into()));
        }
        let m_inv = Scalar::from(self.size as u64).invert().unwrap();
        let scale = z * m_inv;
        let mut out = vec![Scalar::ZERO; self.size];
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                let first = self.omega.pow_vartime([(c * CHUNK) as u64]);
                let mut w = first;
                for x in chunk.iter_mut() {
                    *x = *tau - w;
                    w *= self.omega;
                }
                batch_invert(chunk);
                let mut w = first * scale;
                for x in chunk.iter_mut() {
                    *x *= w;
                    w *= self.omega;
                }
            });
        Ok(out)
    }
}

/// out[i] = first * ratio^i, in parallel runs.
pub fn geometric(first: Scalar, ratio: Scalar, out: &mut [Scalar]) {
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut x = first * ratio.pow_vartime([(c * CHUNK) as u64]);
            for y in chunk.iter_mut() {
                *y = x;
                x *= ratio;
            }
        });
}

/// Invert every element in place with one field inversion (Montgomery's trick). All
/// elements must be non-zero.
fn batch_invert(v: &mut [Scalar]) {
    // prefix[i] = v[0] * ... * v[i-1]
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = Scalar::ONE;
    for x in v.iter() {
        prefix.push(acc);
        acc *= x;
    }
    let mut inv = acc.invert().unwrap();
    for (x, p) in v.iter_mut().zip(prefix).rev() {
        let next = inv * *x;
        *x = inv * p;
        inv = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn domain_sizes_are_bellpersons() {
        assert_eq!(Domain::for_rows(1).unwrap().size, 1);
        assert_eq!(Domain::for_rows(5).unwrap().size, 8);
        assert_eq!(Domain::for_rows(8).unwrap().size, 8);
        let d = Domain::for_rows(1000).unwrap();
        assert_eq!((d.size, d.log), (1024, 10));
        assert_eq!(d.omega.pow_vartime([1024]), Scalar::ONE);
        assert_ne!(d.omega.pow_vartime([512]), Scalar::ONE);
    }

    /// The Lagrange basis interpolates: sum_i L_i(tau) omega^(i k) = tau^k for k < m, which is
    /// the FFT of the coefficients giving back the powers bellperson transformed.
    #[test]
    fn lagrange_coefficients_interpolate_the_powers_of_tau() {
        let tau = Scalar::random(ChaCha20Rng::seed_from_u64(3));
        for rows in [1, 2, 7, 16, 40] {
            let d = Domain::for_rows(rows).unwrap();
            let l = d.lagrange_at(&tau).unwrap();
            for k in 0..d.size as u64 {
                let wk = d.omega.pow_vartime([k]);
                let (mut sum, mut w) = (Scalar::ZERO, Scalar::ONE);
                for li in &l {
                    sum += *li * w;
                    w *= wk;
                }
                assert_eq!(sum, tau.pow_vartime([k]), "rows {rows}, k {k}");
            }
        }
    }

    #[test]
    fn chunks_join_seamlessly() {
        let tau = Scalar::from(5u64);
        let d = Domain::for_rows(3 * CHUNK).unwrap();
        let l = d.lagrange_at(&tau).unwrap();
        for i in [0, CHUNK - 1, CHUNK, 2 * CHUNK + 17, d.size - 1] {
            let w = d.omega.pow_vartime([i as u64]);
            let want =
                w * d.z_at(&tau) * (Scalar::from(d.size as u64) * (tau - w)).invert().unwrap();
            assert_eq!(l[i], want, "i {i}");
        }
        let mut p = vec![Scalar::ZERO; 2 * CHUNK + 3];
        geometric(Scalar::from(3u64), tau, &mut p);
        assert_eq!(
            p[CHUNK + 1],
            Scalar::from(3u64) * tau.pow_vartime([CHUNK as u64 + 1])
        );
    }

    #[test]
    fn tau_in_the_domain_is_an_error() {
        let d = Domain::for_rows(8).unwrap();
        assert!(d.lagrange_at(&d.omega).is_err());
    }
}

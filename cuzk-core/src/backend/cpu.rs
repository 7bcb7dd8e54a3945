//! The CPU backend: our NTT for the H polynomial and blst's multi-threaded Pippenger for
//! the MSMs (called on the parameter vectors in place, without copying points).

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use rayon::prelude::*;

use super::{ntt, Backend, BackendError, G1Bases, G2Bases};
use crate::footprint::HostCopies;

/// Scalars are < r < 2^255.
const SCALAR_BITS: usize = 255;

#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl CpuBackend {
    pub fn new() -> Self {
        CpuBackend
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn host_copies(&self) -> HostCopies {
        HostCopies::Cpu
    }

    fn h_polynomial(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, BackendError> {
        ntt::h_polynomial(a, b, c)
    }

    fn msm_g1(&self, bases: G1Bases<'_>, scalars: &[Scalar]) -> Result<G1Projective, BackendError> {
        msm_g1(bases.host(scalars.len())?, scalars)
    }

    fn msm_g2(&self, bases: G2Bases<'_>, scalars: &[Scalar]) -> Result<G2Projective, BackendError> {
        msm_g2(bases.host(scalars.len())?, scalars)
    }
}

/// Canonical little-endian bytes of each scalar, as blst's Pippenger reads them.
fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    let mut bytes = vec![0u8; scalars.len() * 32];
    bytes
        .par_chunks_mut(32)
        .zip(scalars.par_iter())
        .for_each(|(out, s)| out.copy_from_slice(&s.to_bytes_le()));
    bytes
}

fn check_shape(points: usize, scalars: usize) -> Result<(), BackendError> {
    if points < scalars {
        return Err(BackendError::MsmShape { points, scalars });
    }
    Ok(())
}

pub fn msm_g1(points: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, BackendError> {
    check_shape(points.len(), scalars.len())?;
    if scalars.is_empty() {
        return Ok(G1Projective::identity());
    }
    let points = &points[..scalars.len()];
    // SAFETY: blstrs::G1Affine is #[repr(transparent)] over blst_p1_affine.
    let raw: &[blst_p1_affine] =
        unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) };
    let sum: blst_p1 = raw.mult(&scalar_bytes(scalars), SCALAR_BITS);
    // SAFETY: blstrs::G1Projective is #[repr(transparent)] over blst_p1.
    Ok(unsafe { std::mem::transmute::<blst_p1, G1Projective>(sum) })
}

pub fn msm_g2(points: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, BackendError> {
    check_shape(points.len(), scalars.len())?;
    if scalars.is_empty() {
        return Ok(G2Projective::identity());
    }
    let points = &points[..scalars.len()];
    // SAFETY: blstrs::G2Affine is #[repr(transparent)] over blst_p2_affine.
    let raw: &[blst_p2_affine] =
        unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) };
    let sum: blst_p2 = raw.mult(&scalar_bytes(scalars), SCALAR_BITS);
    // SAFETY: blstrs::G2Projective is #[repr(transparent)] over blst_p2.
    Ok(unsafe { std::mem::transmute::<blst_p2, G2Projective>(sum) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::prime::PrimeCurveAffine;
    use group::Curve;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn naive_g1(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
        points
            .iter()
            .zip(scalars)
            .map(|(p, s)| p.to_curve() * s)
            .sum()
    }

    #[test]
    fn msm_g1_matches_naive_including_edge_cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in [1usize, 2, 3, 31, 32, 33, 100, 257] {
            let mut points: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let mut scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            // Edge cases: a zero scalar, the scalar one, r - 1, a point at infinity, a
            // repeated point.
            scalars[0] = Scalar::ZERO;
            if n > 1 {
                scalars[1] = Scalar::ONE;
                points[n - 1] = G1Affine::identity();
            }
            if n > 2 {
                scalars[2] = -Scalar::ONE;
                points[2] = points[1];
            }
            let got = msm_g1(&points, &scalars).unwrap();
            assert_eq!(
                got.to_affine(),
                naive_g1(&points, &scalars).to_affine(),
                "n={n}"
            );
        }
    }

    #[test]
    fn msm_g2_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        for n in [1usize, 5, 40] {
            let points: Vec<G2Affine> = (0..n)
                .map(|_| G2Projective::random(&mut rng).to_affine())
                .collect();
            let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let expect: G2Projective = points
                .iter()
                .zip(&scalars)
                .map(|(p, s)| p.to_curve() * s)
                .sum();
            assert_eq!(
                msm_g2(&points, &scalars).unwrap().to_affine(),
                expect.to_affine()
            );
        }
    }

    #[test]
    fn msm_empty_and_short_bases() {
        assert_eq!(msm_g1(&[], &[]).unwrap(), G1Projective::identity());
        let p = [G1Affine::generator()];
        assert!(matches!(
            msm_g1(&p, &[Scalar::ONE, Scalar::ONE]),
            Err(BackendError::MsmShape { .. })
        ));
        // Extra bases are ignored.
        let p2 = [G1Affine::generator(), G1Affine::generator()];
        assert_eq!(
            msm_g1(&p2, &[Scalar::ONE]).unwrap().to_affine(),
            G1Affine::generator()
        );
    }
}

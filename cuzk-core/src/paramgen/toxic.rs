//! The toxic waste of a parameter set: whoever knows it can forge proofs, so sets made from a
//! seed are benchmark keys only.

use blstrs::{G1Affine, G2Affine, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// The secrets of one Groth16 setup and the generators the queries are multiples of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Toxic {
    pub tau: Scalar,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub gamma: Scalar,
    pub delta: Scalar,
    pub g1: G1Affine,
    pub g2: G2Affine,
}

impl Toxic {
    /// Deterministic secrets from a seed (ChaCha20), with the standard generators: any two
    /// processes that generate a set from the same seed write the same file.
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        Toxic {
            tau: Scalar::random(&mut rng),
            alpha: Scalar::random(&mut rng),
            beta: Scalar::random(&mut rng),
            gamma: Scalar::random(&mut rng),
            delta: Scalar::random(&mut rng),
            g1: G1Affine::generator(),
            g2: G2Affine::generator(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_secrets_and_another_seed_others() {
        assert_eq!(Toxic::from_seed(7), Toxic::from_seed(7));
        let (a, b) = (Toxic::from_seed(7), Toxic::from_seed(8));
        assert_ne!(a.tau, b.tau);
        assert_ne!(a.tau, a.alpha);
    }
}

//! Shared by the GPU tests: open device 0 or say why not and skip.

use blstrs::Scalar;
use cuzk_kernels::{GpuDevice, Limbs};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Device 0, or None after printing "SKIP: no CUDA device (why)" (a failure with
/// CUZK_REQUIRE_GPU=1).
pub fn device() -> Option<GpuDevice> {
    cuzk_kernels::device_or_skip(0)
}

pub fn limbs(s: &Scalar) -> Limbs {
    // SAFETY: Scalar is repr(transparent) over blst_fr = [u64; 4].
    unsafe { std::mem::transmute::<Scalar, Limbs>(*s) }
}

/// Fresh random scalars; the seed is printed so a failure can be replayed.
pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

pub fn fresh_seed() -> u64 {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {seed}");
    seed
}

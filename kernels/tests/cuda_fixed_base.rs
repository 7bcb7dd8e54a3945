//! Fixed-base batch scalar multiplication on the GPU against blstrs' `(base * k).to_affine()`,
//! compared byte for byte (blst's Montgomery limbs, the identity as all zeros).

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_kernels::fixed_base::{self, Shape, DEFAULT_WINDOW};
use cuzk_kernels::{GpuDevice, GpuError};
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// A ChaCha rng seeded from the clock; the seed is printed so that a failure can be replayed.
fn fresh_rng() -> ChaCha8Rng {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {seed}");
    ChaCha8Rng::seed_from_u64(seed)
}

fn random_scalars(n: usize, rng: &mut ChaCha8Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// Scalars at the edges of the field and of the signed digits: 0, 1, r-1, (r-1)/2, powers
/// of two, 2^(c-1) +- 1 and 2^c - 1 for a few windows c (a digit at exactly half, the carry
/// into the next window), 2^254 - 1 (every digit negative, a carry through every window).
fn edge_scalars() -> Vec<Scalar> {
    let two = Scalar::from(2u64);
    let mut v = vec![
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        -Scalar::ONE * two.invert().unwrap(),
        -two,
        two,
        Scalar::from(u64::MAX),
        Scalar::MULTIPLICATIVE_GENERATOR,
        Scalar::ROOT_OF_UNITY,
    ];
    for k in 0..255u64 {
        v.push(two.pow_vartime([k]));
    }
    for c in [5u64, 8, 12, 13, 16] {
        let half = 1u64 << (c - 1);
        for x in [half - 1, half, half + 1, 2 * half - 1, 2 * half, 3 * half] {
            v.push(Scalar::from(x));
            v.push(-Scalar::from(x));
            // The same digit in a middle window.
            v.push(Scalar::from(x) * two.pow_vartime([c * 7]));
        }
    }
    let mut ones = [0xffu8; 32];
    ones[31] = 0x3f;
    v.push(Scalar::from_repr(ones).unwrap());
    v
}

/// A group as these tests drive it: the GPU call and blstrs' reference.
trait TestGroup: Sized {
    type Affine: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync;
    const NAME: &'static str;
    fn gpu(
        dev: &GpuDevice,
        base: &Self::Affine,
        s: &[Scalar],
        out: &mut [Self::Affine],
        shape: Shape,
    ) -> Result<(), GpuError>;
    fn cpu(base: &Self::Affine, k: &Scalar) -> Self::Affine;
    fn random_base(rng: &mut ChaCha8Rng) -> Self::Affine;
    fn generator() -> Self::Affine;
    fn identity() -> Self::Affine;
}

struct G1;
struct G2;

impl TestGroup for G1 {
    type Affine = G1Affine;
    const NAME: &'static str = "G1";
    fn gpu(
        dev: &GpuDevice,
        base: &G1Affine,
        s: &[Scalar],
        out: &mut [G1Affine],
        shape: Shape,
    ) -> Result<(), GpuError> {
        fixed_base::g1_times_with(dev, base, s, out, shape)
    }
    fn cpu(base: &G1Affine, k: &Scalar) -> G1Affine {
        (base * k).to_affine()
    }
    fn random_base(rng: &mut ChaCha8Rng) -> G1Affine {
        G1Projective::random(rng).to_affine()
    }
    fn generator() -> G1Affine {
        G1Affine::generator()
    }
    fn identity() -> G1Affine {
        G1Affine::identity()
    }
}

impl TestGroup for G2 {
    type Affine = G2Affine;
    const NAME: &'static str = "G2";
    fn gpu(
        dev: &GpuDevice,
        base: &G2Affine,
        s: &[Scalar],
        out: &mut [G2Affine],
        shape: Shape,
    ) -> Result<(), GpuError> {
        fixed_base::g2_times_with(dev, base, s, out, shape)
    }
    fn cpu(base: &G2Affine, k: &Scalar) -> G2Affine {
        (base * k).to_affine()
    }
    fn random_base(rng: &mut ChaCha8Rng) -> G2Affine {
        G2Projective::random(rng).to_affine()
    }
    fn generator() -> G2Affine {
        G2Affine::generator()
    }
    fn identity() -> G2Affine {
        G2Affine::identity()
    }
}

/// The bytes of a value: blst's limbs exactly as they lie in memory.
fn bytes<T>(v: &T) -> &[u8] {
    // SAFETY: reading the bytes of a plain-data value (blst's affine structs have no padding).
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// The GPU's points for `scalars` equal blstrs', byte for byte.
fn check<G: TestGroup>(dev: &GpuDevice, base: &G::Affine, scalars: &[Scalar], shape: Shape) {
    let mut got = vec![G::Affine::default(); scalars.len()];
    G::gpu(dev, base, scalars, &mut got, shape).expect("fixed-base GPU call");
    let want: Vec<G::Affine> = scalars.par_iter().map(|k| G::cpu(base, k)).collect();
    for (i, k) in scalars.iter().enumerate() {
        assert_eq!(
            bytes(&got[i]),
            bytes(&want[i]),
            "{} point {i} of {} (k = {k:?}, {shape:?}): {:?} != {:?}",
            G::NAME,
            scalars.len(),
            got[i],
            want[i]
        );
        assert_eq!(got[i], want[i]);
    }
}

fn shape(chunk: usize, window: u32) -> Shape {
    Shape { chunk, window }
}

fn random_scalars_random_base<G: TestGroup>(dev: &GpuDevice) {
    let mut rng = fresh_rng();
    let base = G::random_base(&mut rng);
    let scalars = random_scalars(1000, &mut rng);
    check::<G>(dev, &base, &scalars, Shape::default());
}

fn edge_scalars_every_window<G: TestGroup>(dev: &GpuDevice) {
    let mut rng = fresh_rng();
    let base = G::random_base(&mut rng);
    let scalars = edge_scalars();
    for window in [2, 5, 8, DEFAULT_WINDOW, 13, 16] {
        check::<G>(dev, &base, &scalars, shape(1 << 24, window));
    }
    // The generator as base.
    check::<G>(dev, &G::generator(), &scalars, Shape::default());
}

fn sizes<G: TestGroup>(dev: &GpuDevice, sizes: &[usize]) {
    let mut rng = fresh_rng();
    let base = G::random_base(&mut rng);
    for &n in sizes {
        let scalars = random_scalars(n, &mut rng);
        check::<G>(dev, &base, &scalars, Shape::default());
    }
}

/// Repeated scalars (one value everywhere; a few values interleaved with 0 and 1) and chunk
/// sizes that cut the input anywhere: 1, below, at and beyond the kernel's 32 points per
/// thread, n - 1, n, n + 1.
fn repeats_and_chunk_boundaries<G: TestGroup>(dev: &GpuDevice) {
    let mut rng = fresh_rng();
    let base = G::random_base(&mut rng);
    let k = Scalar::random(&mut rng);
    check::<G>(dev, &base, &vec![k; 300], Shape::default());
    let few = random_scalars(3, &mut rng);
    let mixed: Vec<Scalar> = (0..301)
        .map(|i| match i % 5 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            j => few[j - 2],
        })
        .collect();
    for chunk in [1, 2, 7, 31, 32, 33, 64, 100, 300, 301, 302] {
        check::<G>(dev, &base, &mixed, shape(chunk, DEFAULT_WINDOW));
    }
    let scalars = random_scalars(1000, &mut rng);
    check::<G>(dev, &base, &scalars, shape(333, DEFAULT_WINDOW));
    check::<G>(dev, &base, &scalars, shape(999, 8));
}

fn identity_base<G: TestGroup>(dev: &GpuDevice) {
    let mut rng = fresh_rng();
    let mut scalars = edge_scalars();
    scalars.extend(random_scalars(200, &mut rng));
    let mut got = vec![G::random_base(&mut rng); scalars.len()];
    G::gpu(dev, &G::identity(), &scalars, &mut got, shape(100, 12)).unwrap();
    let zero = G::identity();
    assert!(
        bytes(&zero).iter().all(|&b| b == 0),
        "blstrs' identity is all zeros"
    );
    for (i, p) in got.iter().enumerate() {
        assert_eq!(bytes(p), bytes(&zero), "{} point {i}", G::NAME);
    }
    check::<G>(dev, &G::identity(), &scalars, Shape::default());
}

fn bad_calls<G: TestGroup>(dev: &GpuDevice) {
    let mut rng = fresh_rng();
    let base = G::random_base(&mut rng);
    let scalars = random_scalars(10, &mut rng);
    let mut out = vec![G::Affine::default(); 9];
    let e = G::gpu(dev, &base, &scalars, &mut out, Shape::default()).unwrap_err();
    assert!(e.to_string().contains("10 scalars"), "{e}");
    let mut out = vec![G::Affine::default(); 10];
    for bad in [shape(0, 12), shape(10, 1), shape(10, 17)] {
        assert!(
            G::gpu(dev, &base, &scalars, &mut out, bad).is_err(),
            "{bad:?}"
        );
    }
    // Nothing to do is not an error.
    G::gpu(dev, &base, &[], &mut [], Shape::default()).unwrap();
}

#[test]
fn g1_random_scalars_random_base() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    random_scalars_random_base::<G1>(&dev);
}

#[test]
fn g2_random_scalars_random_base() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    random_scalars_random_base::<G2>(&dev);
}

#[test]
fn g1_edge_scalars_every_window() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    edge_scalars_every_window::<G1>(&dev);
}

#[test]
fn g2_edge_scalars_every_window() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    edge_scalars_every_window::<G2>(&dev);
}

#[test]
fn g1_sizes() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    sizes::<G1>(&dev, &[1, 2, 3, 1000, (1 << 16) + 3]);
}

#[test]
fn g2_sizes() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    sizes::<G2>(&dev, &[1, 2, 3, 1000, (1 << 16) + 3]);
}

#[test]
fn g1_repeats_and_chunk_boundaries() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    repeats_and_chunk_boundaries::<G1>(&dev);
}

#[test]
fn g2_repeats_and_chunk_boundaries() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    repeats_and_chunk_boundaries::<G2>(&dev);
}

#[test]
fn g1_identity_base() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    identity_base::<G1>(&dev);
}

#[test]
fn g2_identity_base() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    identity_base::<G2>(&dev);
}

#[test]
fn g1_bad_calls_are_errors() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    bad_calls::<G1>(&dev);
}

#[test]
fn g2_bad_calls_are_errors() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    bad_calls::<G2>(&dev);
}

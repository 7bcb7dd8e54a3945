//! The bit split of the GPU MSM (cuzk_kernels::msm::BitsSplit: zero and one scalars summed
//! by batch addition, the rest through Pippenger) against the CPU backend (blst): G1 and G2,
//! host and device scalars, host, resident plain and resident folded bases, the split forced
//! (`Always`), chosen (`Auto`) and off, bit-identical on all-zero, all-one, one scalar, ones
//! only, others only and witness-like vectors, n not a power of two, points at infinity and
//! duplicate (and opposite) bases; and the classification's counts against the host's.
//!
//! Skips where there is no CUDA device (fails instead with CUZK_REQUIRE_GPU=1).
//! CUZK_MSM_TEST_MAX_LOG (default 16) adds 2^20 when it is 20 or more.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_core::backend::{cpu, cuda};
use cuzk_kernels::msm::{self, Bases, BitCounts, BitsSplit, DeviceBases, MsmGroup, Scalars};
use cuzk_kernels::msm::{G1, G2};
use cuzk_kernels::{DeviceScalars, GpuDevice};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

fn fresh_rng(what: &str) -> ChaCha20Rng {
    let seed: u64 = rand::thread_rng().gen();
    println!("{what}: seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

fn sizes() -> Vec<usize> {
    let max_log: u32 = std::env::var("CUZK_MSM_TEST_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let mut s = vec![1, 2, 3, 1000, (1 << 16) + 5];
    if max_log >= 20 {
        s.push(1 << 20);
    }
    s
}

/// What the test needs of a group beyond the kernels' MsmGroup: the CPU reference.
trait Group2:
    MsmGroup<
    Affine: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync,
    Projective: Group<Scalar = Scalar>
                    + Curve<AffineRepr = <Self as MsmGroup>::Affine>
                    + From<<Self as MsmGroup>::Affine>
                    + Send
                    + Sync,
>
{
    fn cpu(points: &[Self::Affine], s: &[Scalar]) -> Self::Projective;
}

impl Group2 for G1 {
    fn cpu(points: &[G1Affine], s: &[Scalar]) -> G1Projective {
        cpu::msm_g1(points, s).unwrap()
    }
}

impl Group2 for G2 {
    fn cpu(points: &[G2Affine], s: &[Scalar]) -> G2Projective {
        cpu::msm_g2(points, s).unwrap()
    }
}

/// n points: 64 random starts, each followed by multiples of a random step (fast to make,
/// all distinct with overwhelming probability).
fn random_points<G: Group2>(n: usize, rng: &mut ChaCha20Rng) -> Vec<G::Affine> {
    let per = n.div_ceil(64).max(1);
    let starts: Vec<G::Projective> = (0..n.div_ceil(per))
        .map(|_| G::Projective::random(&mut *rng))
        .collect();
    let step = G::Projective::random(&mut *rng);
    let mut out = vec![G::Affine::default(); n];
    out.par_chunks_mut(per).zip(&starts).for_each(|(c, a)| {
        let mut p = *a;
        let proj: Vec<G::Projective> = (0..c.len())
            .map(|_| {
                let q = p;
                p += step;
                q
            })
            .collect();
        G::Projective::batch_normalize(&proj, c);
    });
    out
}

fn bit(rng: &mut ChaCha20Rng, p: f64) -> Scalar {
    if rng.gen_bool(p) {
        Scalar::ONE
    } else {
        Scalar::ZERO
    }
}

/// Full-width scalars that are never 0 or 1 (with overwhelming probability).
fn wide(rng: &mut ChaCha20Rng) -> Scalar {
    Scalar::random(&mut *rng)
}

fn scalars(dist: &str, n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n)
        .map(|_| match dist {
            "all zero" => Scalar::ZERO,
            "all one" => Scalar::ONE,
            "ones only" => bit(rng, 0.5),
            "others only" => wide(rng),
            // The real PoRep aux witness: 51.2% zero, 47.1% one, 1.6% wider.
            "porep-like" => match rng.gen_range(0..1000) {
                0..=511 => Scalar::ZERO,
                512..=982 => Scalar::ONE,
                _ => wide(rng),
            },
            "half wide" => {
                if rng.gen_bool(0.5) {
                    wide(rng)
                } else {
                    bit(rng, 0.5)
                }
            }
            other => panic!("{other}"),
        })
        .collect()
}

const DISTS: [&str; 6] = [
    "all zero",
    "all one",
    "ones only",
    "others only",
    "porep-like",
    "half wide",
];

/// Every way in to the MSM for one (points, scalars): host / resident plain / resident
/// folded bases x host / device scalars x split forced / automatic / off, each against the
/// CPU's result.
fn check_all<G: Group2>(dev: &GpuDevice, what: &str, points: &[G::Affine], s: &[Scalar]) {
    let want = G::cpu(points, s).to_affine();
    let plain = DeviceBases::<G>::upload(dev, points).unwrap();
    let folded = DeviceBases::<G>::upload_folded(dev, points, usize::MAX).unwrap();
    assert!(folded.fold().is_some(), "{what}: not folded");
    let on_dev = DeviceScalars::upload(dev, cuda::as_limbs(s)).unwrap();
    for (bname, bases) in [
        ("host bases", Bases::Host(points)),
        ("resident", Bases::Device(&plain)),
        ("folded", Bases::Device(&folded)),
    ] {
        for (sname, sc) in [
            ("host scalars", Scalars::Host(s)),
            ("device scalars", Scalars::Device(&on_dev)),
        ] {
            for split in [BitsSplit::Always, BitsSplit::Auto, BitsSplit::Off] {
                let got = msm::msm_with_split::<G>(dev, bases, sc, split).unwrap();
                assert_eq!(
                    got.to_affine(),
                    want,
                    "{what} n={}: {bname}, {sname}, {split:?}: GPU != CPU",
                    s.len()
                );
            }
        }
    }
    println!(
        "{what} n={}: identical (3 bases x 2 scalars x 3 splits)",
        s.len()
    );
}

fn check_group<G: Group2>(dev: &GpuDevice, name: &str) {
    let mut rng = fresh_rng(name);
    let sizes = sizes();
    let pts = random_points::<G>(*sizes.last().unwrap(), &mut rng);
    for &n in &sizes {
        for dist in DISTS {
            let s = scalars(dist, n, &mut rng);
            check_all::<G>(dev, &format!("{name} {dist}"), &pts[..n], &s);
        }
    }
    // Bases with points at infinity, duplicates and opposites, under bit-heavy scalars: the
    // batch addition meets P + P (doubling), P + (-P) (infinity) and infinity itself.
    let n = 3000;
    let mut odd = pts[..n].to_vec();
    for i in (0..n).step_by(5) {
        odd[i] = G::Affine::default(); // blst's infinity: x = y = 0
    }
    for i in (1..n).step_by(5) {
        odd[i] = odd[i + 1]; // duplicate
    }
    for i in (3..n - 1).step_by(5) {
        odd[i + 1] = (-G::Projective::from(odd[i])).to_affine(); // opposite
    }
    let same = vec![pts[7]; n]; // every base equal
    for dist in ["all one", "ones only", "porep-like"] {
        let s = scalars(dist, n, &mut rng);
        check_all::<G>(dev, &format!("{name} {dist}, odd bases"), &odd, &s);
        check_all::<G>(dev, &format!("{name} {dist}, one base"), &same, &s);
    }
    // One scalar: zero, one, other, and one against infinity.
    for s in [Scalar::ZERO, Scalar::ONE, wide(&mut rng)] {
        check_all::<G>(dev, &format!("{name} single"), &pts[..1], &[s]);
    }
    check_all::<G>(
        dev,
        &format!("{name} single infinity"),
        &odd[..1],
        &[Scalar::ONE],
    );
    // Fewer scalars than bases: the rest of the bases is ignored.
    let s = scalars("porep-like", 999, &mut rng);
    let got = msm::msm_with_split::<G>(
        dev,
        Bases::Host(&pts[..1000]),
        Scalars::Host(&s),
        BitsSplit::Always,
    )
    .unwrap();
    assert_eq!(got.to_affine(), G::cpu(&pts[..999], &s).to_affine());
}

#[test]
fn bit_split_g1_matches_cpu() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    check_group::<G1>(&dev, "G1");
}

#[test]
fn bit_split_g2_matches_cpu() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    check_group::<G2>(&dev, "G2");
}

#[test]
fn bit_counts_match_host() {
    let Some(dev) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    let mut rng = fresh_rng("counts");
    let mut all = sizes();
    all.extend([31, 32, 33, 64, (1 << 20) + 1, (3 << 20) + 7]); // word and slice edges
    for n in all {
        for dist in DISTS {
            let s = scalars(dist, n, &mut rng);
            let want = s.iter().fold(BitCounts::default(), |mut c, x| {
                match *x {
                    x if x == Scalar::ZERO => c.zeros += 1,
                    x if x == Scalar::ONE => c.ones += 1,
                    _ => c.others += 1,
                }
                c
            });
            let on_dev = DeviceScalars::upload(&dev, cuda::as_limbs(&s)).unwrap();
            assert_eq!(
                msm::count_bits(&dev, &on_dev).unwrap(),
                want,
                "n={n} {dist}"
            );
        }
        println!("counts n={n}: identical");
    }
}

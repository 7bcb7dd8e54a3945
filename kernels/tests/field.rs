//! Fr arithmetic and small NTTs on the GPU against blstrs and a naive DFT.

mod common;

use blstrs::Scalar;
use common::*;
use cuzk_kernels::ntt::{self, FrOp, Transform};
use ff::{Field, PrimeField};

fn edge_values() -> Vec<Scalar> {
    vec![
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        -Scalar::from(2u64),
        Scalar::from(2u64),
        Scalar::ROOT_OF_UNITY,
        Scalar::MULTIPLICATIVE_GENERATOR,
        Scalar::from(u64::MAX),
    ]
}

#[test]
fn elementwise_ops_match_blstrs() {
    let Some(dev) = device() else { return };
    let seed = fresh_seed();
    let mut a = random_scalars(1 << 16, seed);
    let mut b = random_scalars(1 << 16, seed + 1);
    // Every pair of edge values, including p-1 and 0 on both sides.
    for x in edge_values() {
        for y in edge_values() {
            a.push(x);
            b.push(y);
        }
    }
    let la: Vec<_> = a.iter().map(limbs).collect();
    let lb: Vec<_> = b.iter().map(limbs).collect();
    type Reference = fn(Scalar, Scalar) -> Scalar;
    let cases: [(FrOp, Reference); 6] = [
        (FrOp::Add, |x, y| x + y),
        (FrOp::Sub, |x, y| x - y),
        (FrOp::Mul, |x, y| x * y),
        (FrOp::Square, |x, _| x.square()),
        (FrOp::Inverse, |x, _| x.invert().unwrap_or(Scalar::ZERO)),
        (FrOp::Neg, |x, _| -x),
    ];
    for (op, reference) in cases {
        let got = ntt::elementwise(&dev, op, &la, &lb).unwrap();
        for i in 0..a.len() {
            let want = limbs(&reference(a[i], b[i]));
            assert_eq!(got[i], want, "{op:?} at {i}: {:?} {:?}", a[i], b[i]);
        }
    }
}

fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

fn naive_dft(x: &[Scalar], w: Scalar) -> Vec<Scalar> {
    let n = x.len();
    (0..n)
        .map(|k| {
            let wk = w.pow_vartime([k as u64]);
            let mut acc = Scalar::ZERO;
            let mut p = Scalar::ONE;
            for xi in x {
                acc += *xi * p;
                p *= wk;
            }
            acc
        })
        .collect()
}

fn reference(x: &[Scalar], t: Transform) -> Vec<Scalar> {
    let n = x.len();
    let log_n = n.trailing_zeros();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let n_inv = Scalar::from(n as u64).invert().unwrap();
    let pow = |b: Scalar, i: usize| b.pow_vartime([i as u64]);
    match t {
        Transform::Ntt => naive_dft(x, omega(log_n)),
        Transform::Intt => naive_dft(x, omega(log_n).invert().unwrap())
            .into_iter()
            .map(|v| v * n_inv)
            .collect(),
        Transform::CosetNtt => {
            let y: Vec<_> = x.iter().enumerate().map(|(i, v)| *v * pow(g, i)).collect();
            naive_dft(&y, omega(log_n))
        }
        Transform::CosetIntt => reference(x, Transform::Intt)
            .into_iter()
            .enumerate()
            .map(|(i, v)| v * pow(g.invert().unwrap(), i))
            .collect(),
    }
}

#[test]
fn small_transforms_match_naive_dft() {
    let Some(dev) = device() else { return };
    let seed = fresh_seed();
    for log_n in 0..=11u32 {
        let x = random_scalars(1 << log_n, seed + log_n as u64);
        for t in [
            Transform::Ntt,
            Transform::Intt,
            Transform::CosetNtt,
            Transform::CosetIntt,
        ] {
            let mut got: Vec<_> = x.iter().map(limbs).collect();
            ntt::transform(&dev, &mut got, t).unwrap();
            let want: Vec<_> = reference(&x, t).iter().map(limbs).collect();
            assert!(got == want, "{t:?} of 2^{log_n} differs from the naive DFT");
        }
    }
}

#[test]
fn h_polynomial_of_one_point_is_empty() {
    let Some(dev) = device() else { return };
    let a = [limbs(&Scalar::from(3u64))];
    let h = ntt::h_polynomial(&dev, &a, &a, &a).unwrap();
    assert!(h.is_empty());
    let h = ntt::h_polynomial(&dev, &[], &[], &[]).unwrap();
    assert!(h.is_empty());
    assert!(ntt::h_polynomial(&dev, &a, &a, &[]).is_err());
}

#[test]
fn status_lists_the_device() {
    let Some(dev) = device() else { return };
    let list = cuzk_kernels::GpuDevice::list();
    assert!(list.iter().any(|i| i.ordinal == 0 && i.name == dev.name()));
    assert!(dev.total_mem().unwrap() >= dev.free_mem().unwrap());
    println!("{list:?}");
}

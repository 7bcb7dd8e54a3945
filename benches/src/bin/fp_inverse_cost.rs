//! What one inversion in BLS12-381's base field costs, counted in field products, with the
//! best-engineered inversions there are (blst's constant-time one and its variable-time
//! Euclidean one), on this machine's CPU.
//!
//!     fp_inverse_cost [--reps N]
//!
//! Why: affine bucket accumulation with Montgomery's trick costs ~6 products an addition
//! plus one inversion shared by the m additions of a batch, against 10 products for the
//! XYZZ mixed addition H's MSM uses (kernels/NOTES.md parts 7, 8, 22). It pays only when
//! 6 + inversion / m < 10, and each of the m additions keeps an accumulator and a prefix
//! product (36 32-bit words) alive until the inversion. The figure printed last is that
//! break-even m and the state it needs per thread.
//!
//! Products are timed two ways: a dependent chain (latency, the slower product, so the
//! cheaper ratio) and eight independent chains (throughput). Median of N rounds.

use std::time::Instant;

use cuzk_benches::median_ms;

use blst::{
    blst_fp, blst_fp_add, blst_fp_eucl_inverse, blst_fp_from_uint64, blst_fp_inverse, blst_fp_mul,
};

const BATCH: usize = 4096;
/// Fp products of the XYZZ mixed addition with the lazy Y3 (kernels/NOTES.md part 10).
const XYZZ_PRODUCTS: f64 = 10.0;
/// Fp products of an affine addition under Montgomery's trick, the inversion left out.
const AFFINE_PRODUCTS: f64 = 6.0;
/// 32-bit words one in-flight affine addition keeps: accumulator (x, y) and prefix product.
const WORDS_PER_ADDITION: f64 = 36.0;

fn fp(seed: u64) -> blst_fp {
    let limbs = [seed, seed ^ 0x5555_aaaa, seed.rotate_left(17), 3, 7, 1];
    let mut out = blst_fp::default();
    // SAFETY: `limbs` holds the six words blst reads; `out` is a valid destination.
    unsafe { blst_fp_from_uint64(&mut out, limbs.as_ptr()) };
    out
}

/// Nanoseconds per operation: the median round's time over the round's `ops` operations.
fn ns_per_op(rounds: Vec<std::time::Duration>, ops: usize) -> f64 {
    median_ms(rounds) * 1e6 / ops as f64
}

fn main() {
    let mut reps = 7usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            other => panic!("unknown argument {other}; usage: fp_inverse_cost [--reps N]"),
        }
    }
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let xs: Vec<blst_fp> = (0..BATCH).map(|_| fp(next())).collect();

    let (mut chain, mut indep, mut ct, mut eucl) = (vec![], vec![], vec![], vec![]);
    let mut sink = blst_fp::default();
    for _ in 0..reps {
        let mut acc = fp(1);
        let t = Instant::now();
        for _ in 0..100 {
            for x in &xs {
                // SAFETY: blst's field routines take valid, possibly aliased, references.
                unsafe { blst_fp_mul(&mut acc, &acc, x) };
            }
        }
        chain.push(t.elapsed());

        let mut accs = [fp(2); 8];
        let t = Instant::now();
        for _ in 0..100 {
            for x in xs.chunks_exact(8) {
                for (a, y) in accs.iter_mut().zip(x) {
                    // SAFETY: as above.
                    unsafe { blst_fp_mul(a, a, y) };
                }
            }
        }
        indep.push(t.elapsed());

        for (out, inverse) in [
            (
                &mut ct,
                blst_fp_inverse as unsafe extern "C" fn(*mut blst_fp, *const blst_fp),
            ),
            (&mut eucl, blst_fp_eucl_inverse),
        ] {
            let t = Instant::now();
            for x in &xs {
                let (mut y, mut z) = (blst_fp::default(), blst_fp::default());
                // SAFETY: as above; y = x + acc is nonzero with overwhelming probability and
                // blst maps zero to zero, so every call is defined.
                unsafe {
                    blst_fp_add(&mut y, x, &acc);
                    inverse(&mut z, &y);
                    blst_fp_add(&mut sink, &sink, &z);
                }
            }
            out.push(t.elapsed());
        }
        // SAFETY: as above; keeps the independent chains observable.
        unsafe { blst_fp_add(&mut sink, &sink, &accs[7]) };
    }
    let (chain, indep) = (ns_per_op(chain, 100 * BATCH), ns_per_op(indep, 100 * BATCH));
    let (ct, eucl) = (ns_per_op(ct, BATCH), ns_per_op(eucl, BATCH));
    println!("Fp product: {chain:.1} ns chained, {indep:.1} ns independent (median of {reps})");
    let cheapest = ct.min(eucl);
    for (name, ns) in [
        ("constant-time (blst_fp_inverse)", ct),
        ("Euclidean (blst_fp_eucl_inverse)", eucl),
    ] {
        println!(
            "inverse, {name}: {ns:.0} ns = {:.0} products chained, {:.0} independent",
            ns / chain,
            ns / indep
        );
    }
    // Break-even batch: 6 + inv / m < 10, with the inversion at its cheapest count.
    let inv_products = cheapest / chain;
    let m = (inv_products / (XYZZ_PRODUCTS - AFFINE_PRODUCTS)).floor() + 1.0;
    println!(
        "affine buckets beat XYZZ ({XYZZ_PRODUCTS} products) only for batches of m >= {m:.0}: \
         {:.0} live 32-bit words per thread before any working registers (255 the most a thread has)",
        m * WORDS_PER_ADDITION
    );
    println!("(checksum bit {})", sink.l[0] & 1);
}

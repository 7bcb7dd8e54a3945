//! What B's G2 MSM of a PoRep-shaped 2^27 partition costs on the CPU, with blst's own
//! multi-threaded routines: the one part of the device step supraseal leaves to the CPU.
//!
//!     b_g2_cpu_cost [--log K] [--reps N]
//!
//! Why: the device step is ~1.20 s per 2^27 partition on the H200 against a 1.0 s target, and
//! B_G2 is 83.2 ms of it (kernels/NOTES.md part 17). Moving it off the device shortens the
//! step only if the host can spare the CPU time beside synthesis, which this prices.
//!
//! The workload is the PoRep-shaped kind's B_G2 at 2^K (kinds/porep_shaped.rs): every fourth
//! aux variable is a fresh bit (in B; half of them one), every 64th a full-width packed value
//! (in B), the rest are not in B. So 2^K / 8 ones, summed by blst's batch-affine addition,
//! and 2^K / 64 wide scalars in blst's Pippenger; zeros cost nothing. The points are distinct
//! (a random start plus multiples of the generator): an addition's cost does not depend on
//! which points they are. Both sums are checked against a plain sequential sum on a prefix.

use std::time::Instant;

use cuzk_benches::{cpu_time, median_ms};

use blst::{
    blst_p2, blst_p2_add_or_double, blst_p2_affine, blst_p2_from_affine, blst_p2_generator,
    blst_p2_is_equal, blst_p2_mult, p2_affines, MultiPoint,
};
use rayon::prelude::*;

/// B_G2 on the H200 at 2^27 x 10, p50 of the device step (kernels/NOTES.md part 17): a
/// figure from another run, quoted, not measured here.
const DEVICE_B_G2_MS: f64 = 83.2;
const DEVICE_STEP_MS: f64 = 1203.2;
/// Points checked against the sequential sum.
const CHECK: usize = 512;

fn mult(p: &blst_p2, scalar: &[u8], bits: usize) -> blst_p2 {
    assert!(scalar.len() * 8 >= bits, "scalar shorter than {bits} bits");
    let mut out = blst_p2::default();
    // SAFETY: `scalar` holds the little-endian bytes blst reads for `bits` (checked above).
    unsafe { blst_p2_mult(&mut out, p, scalar.as_ptr(), bits) };
    out
}

fn add(a: &blst_p2, b: &blst_p2) -> blst_p2 {
    let mut out = blst_p2::default();
    // SAFETY: valid points; the complete formula handles equal inputs and infinity.
    unsafe { blst_p2_add_or_double(&mut out, a, b) };
    out
}

fn scalar(seed: u64) -> [u8; 32] {
    let mut s = [0u8; 32];
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for chunk in s.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    s[31] &= 0x7f; // 255 bits, as Fr's scalars
    s
}

/// `n` distinct affine points: per chunk a random multiple of the generator, then + G.
fn points(n: usize, seed: u64) -> p2_affines {
    // SAFETY: blst's generator is a static point.
    let g = unsafe { *blst_p2_generator() };
    let chunk = n.div_ceil(rayon::current_num_threads() * 4).max(1);
    let projective: Vec<blst_p2> = (0..n.div_ceil(chunk))
        .into_par_iter()
        .flat_map_iter(|c| {
            let len = chunk.min(n - c * chunk);
            let mut p = mult(&g, &scalar(seed ^ (c as u64 + 1)), 255);
            (0..len).map(move |_| {
                p = add(&p, &g);
                p
            })
        })
        .collect();
    p2_affines::from(&projective)
}

fn affine_to_p2(a: &blst_p2_affine) -> blst_p2 {
    let mut p = blst_p2::default();
    // SAFETY: `a` is a valid affine point.
    unsafe { blst_p2_from_affine(&mut p, a) };
    p
}

fn equal(a: &blst_p2, b: &blst_p2) -> bool {
    // SAFETY: valid points.
    unsafe { blst_p2_is_equal(a, b) }
}

fn main() {
    let (mut log, mut reps) = (27u32, 3usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse().ok());
        match a.as_str() {
            "--log" => log = value().expect("--log K"),
            "--reps" => reps = value().expect("--reps N") as usize,
            other => panic!("unknown argument {other}; usage: b_g2_cpu_cost [--log K] [--reps N]"),
        }
    }
    assert!((12..=27).contains(&log), "--log between 12 and 27");
    let n = 1usize << log;
    let (n_ones, n_wide) = (n / 8, n / 64);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    println!(
        "B_G2 of a PoRep-shaped 2^{log} partition: {n_ones} ones summed, {n_wide} wide scalars \
         in an MSM; {threads} threads (blst's pool)"
    );

    let t = Instant::now();
    let ones = points(n_ones, 1);
    let wide = points(n_wide, 2);
    let flat: Vec<u8> = (0..n_wide as u64).flat_map(|i| scalar(i + 7)).collect();
    println!("points generated in {:.1} s", t.elapsed().as_secs_f64());

    // The sums blst computes, against the plain sequential ones on a prefix.
    let k = CHECK.min(n_wide);
    let seq_ones = ones.as_slice()[..k]
        .iter()
        .fold(blst_p2::default(), |acc, p| add(&acc, &affine_to_p2(p)));
    let seq_wide = wide.as_slice()[..k]
        .iter()
        .zip(flat.chunks_exact(32))
        .fold(blst_p2::default(), |acc, (p, s)| {
            add(&acc, &mult(&affine_to_p2(p), s, 255))
        });
    assert!(
        equal(&ones.as_slice()[..k].add(), &seq_ones),
        "batch sum != sequential sum"
    );
    assert!(
        equal(&wide.as_slice()[..k].mult(&flat[..32 * k], 255), &seq_wide),
        "MSM != sum of products"
    );

    let (mut t_ones, mut t_wide) = (vec![], vec![]);
    let mut sink = blst_p2::default();
    let cpu_before = cpu_time();
    for _ in 0..reps {
        let t = Instant::now();
        sink = add(&sink, &ones.add());
        t_ones.push(t.elapsed());
        let t = Instant::now();
        sink = add(&sink, &wide.mult(&flat, 255));
        t_wide.push(t.elapsed());
    }
    let (ones_ms, wide_ms) = (median_ms(t_ones), median_ms(t_wide));
    let total = ones_ms + wide_ms;
    // CPU time over all rounds, per round: right even when something else shares the machine.
    let core_s = (cpu_time() - cpu_before).as_secs_f64() / reps as f64;
    println!("ones, batch-affine sum: {ones_ms:.1} ms (median of {reps})");
    println!("wide, Pippenger MSM:    {wide_ms:.1} ms");
    println!(
        "B_G2 on the CPU: {total:.1} ms on {threads} threads; {core_s:.2} core-seconds a round \
         (process CPU time), {:.0}% of the threads busy",
        100.0 * core_s * 1e3 / (total * threads as f64)
    );
    if log == 27 {
        println!(
            "on 16 such cores (the H200's host), perfectly parallel: {:.0} ms per partition, \
             {:.1}x the device's B_G2 ({DEVICE_B_G2_MS} ms, NOTES part 17, quoted) and {:.2}x \
             its whole step ({DEVICE_STEP_MS} ms)",
            core_s * 1e3 / 16.0,
            core_s * 1e3 / 16.0 / DEVICE_B_G2_MS,
            core_s * 1e3 / 16.0 / DEVICE_STEP_MS
        );
    }
    println!("(checksum {})", sink.x.fp[0].l[0] & 1);
}

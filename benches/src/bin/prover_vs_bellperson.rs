//! Our CPU prover against bellperson 0.27's `create_proof`, same synthetic circuit, same
//! parameters, same r and s, in one run; prints both times and the ratio (ours / theirs:
//! below 1.0 means ours is faster). Runs alternate so that machine noise hits both.
//!
//!     cargo run --release -p cuzk-benches --bin prover_vs_bellperson -- 16 18

use std::time::{Duration, Instant};

use bellperson::groth16;
use blstrs::Scalar;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::prove::{proof_bytes, prove_circuit};
use cuzk_core::srs::SrsCache;
use ff::Field;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("sizes are log2 constraint counts"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![16, 18]
    } else {
        sizes
    };
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let dir = std::env::var("CUZK_PARAM_CACHE").unwrap_or_else(|_| {
        format!(
            "{}/.cache/cuzk/params",
            std::env::var("HOME").unwrap_or_else(|_| "/tmp".into())
        )
    });
    let srs = SrsCache::new(dir);
    println!(
        "{:>6} {:>12} {:>16} {:>7}   ({} cores, median of {reps})",
        "size",
        "cuzk cpu ms",
        "bellperson ms",
        "ratio",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for log in sizes {
        let entry = srs.synthetic(log).expect("synthetic parameters");
        let params = &entry.params;
        let mut rng = rand::thread_rng();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let circuit = SyntheticCircuit::new(log, 7);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            let t = Instant::now();
            let a = prove_circuit(&CpuBackend, params, &entry.id, circuit.clone(), r, s).unwrap();
            ours.push(t.elapsed());
            let t = Instant::now();
            let b = groth16::create_proof(circuit.clone(), params, r, s).unwrap();
            theirs.push(t.elapsed());
            assert_eq!(proof_bytes(&a), proof_bytes(&b), "proofs differ at 2^{log}");
        }
        let (o, t) = (median(ours), median(theirs));
        println!(
            "{:>6} {:>12.1} {:>16.1} {:>7.3}",
            format!("2^{log}"),
            o.as_secs_f64() * 1e3,
            t.as_secs_f64() * 1e3,
            o.as_secs_f64() / t.as_secs_f64()
        );
    }
}

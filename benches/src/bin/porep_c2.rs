//! 2 KiB PoRep commit phase 2: cuzk (CPU backend, parameters already resident) beside
//! filecoin-proofs' own `seal_commit_phase2`, in the same process on the same C1 output.
//!
//! cuzk's time is split into synthesis (our constraint system over the StackedDrg circuit)
//! and proving (H polynomial + MSMs + assembly), and reported with and without the
//! stock `verify_seal` check, because `seal_commit_phase2` runs that check itself.
//!
//! usage: porep_c2 [--runs N] [--params DIR]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine;
use blstrs::Scalar;
use clap::Parser;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::kinds::prover_id::prover_id;
use cuzk_core::kinds::vectors;
use cuzk_core::kinds::{build_task, params};
use cuzk_core::prove::{assemble, proof_bytes, prove_on_device};
use cuzk_core::srs::SrsCache;
use cuzk_core::ProofKind;
use ff::Field;
use filecoin_proofs_api::seal::{seal_commit_phase2, SealCommitPhase1Output};
use filecoin_proofs_api::SectorId;

#[derive(Parser)]
struct Args {
    /// Timed runs of each prover (after one warm-up run each); medians are reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Parameter cache (2 KiB test parameters are generated there when missing); default
    /// $CUZK_PARAM_CACHE, else ~/.cache/cuzk/params, as the tests use.
    #[arg(long)]
    params: Option<PathBuf>,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let runs = args.runs.max(1);
    let dir = args.params.unwrap_or_else(cuzk_benches::default_param_dir);
    params::generate(2048, &[ProofKind::PorepSealCommit], &dir, &mut |p| {
        eprintln!("params: {} {:?}", p.srs_id, p.state)
    })?;

    let work = tempfile::tempdir()?;
    let m = vectors::generate(ProofKind::PorepSealCommit, 2048, work.path())?;
    let req = m.request(work.path())?;
    let task = build_task(&req)?;

    // Warm: parameters resident in both provers before anything is timed.
    let srs = SrsCache::new(&dir);
    let entry = task.params(&srs)?;
    let env: serde_json::Value = serde_json::from_slice(&req.vanilla_proof)?;
    let c1_json = base64::engine::general_purpose::STANDARD
        .decode(env["Phase1Out"].as_str().unwrap_or_default())?;
    let c1: SealCommitPhase1Output = serde_json::from_slice(&c1_json)?;
    let (prover, sector) = (prover_id(req.miner_id), SectorId::from(req.sector_number));

    let backend = CpuBackend;
    let mut rng = rand::thread_rng();
    let (mut synth_t, mut prove_t, mut verify_t, mut fp_t) = (vec![], vec![], vec![], vec![]);
    for run in 0..=runs {
        let (mut s_sum, mut p_sum) = (Duration::ZERO, Duration::ZERO);
        let mut proof = Vec::new();
        for i in 0..task.partitions() {
            let t = Instant::now();
            let synth = task.synthesize(i)?;
            s_sum += t.elapsed();
            let t = Instant::now();
            let (msm, _) = prove_on_device(&backend, &entry.params, &entry.id, synth)?;
            let p = assemble(
                &entry.params.vk,
                &msm,
                Scalar::random(&mut rng),
                Scalar::random(&mut rng),
            )?;
            p_sum += t.elapsed();
            proof.extend(proof_bytes(&p));
        }
        let t = Instant::now();
        task.verify_job(&proof)?;
        let v = t.elapsed();

        let t = Instant::now();
        let theirs = seal_commit_phase2(c1.clone(), prover, sector)?;
        let f = t.elapsed();
        assert_eq!(theirs.proof.len(), proof.len());
        if run > 0 {
            synth_t.push(s_sum);
            prove_t.push(p_sum);
            verify_t.push(v);
            fp_t.push(f);
        }
    }

    let (s, p, v, f) = (
        median(synth_t),
        median(prove_t),
        median(verify_t),
        median(fp_t),
    );
    println!(
        "2 KiB PoRep C2, {} partition(s), median of {runs} warm runs",
        task.partitions()
    );
    println!(
        "cuzk (cpu)       synthesis {:8.1} ms   proving {:8.1} ms   total {:8.1} ms",
        ms(s),
        ms(p),
        ms(s + p)
    );
    println!(
        "cuzk + verify_seal                                          total {:8.1} ms",
        ms(s + p + v)
    );
    println!(
        "filecoin-proofs  seal_commit_phase2 (includes its verify_seal) {:8.1} ms",
        ms(f)
    );
    println!(
        "ratio cuzk/filecoin-proofs: {:.3} (with verify_seal: {:.3})",
        (s + p).as_secs_f64() / f.as_secs_f64(),
        (s + p + v).as_secs_f64() / f.as_secs_f64()
    );
    Ok(())
}

//! The device step on real Filecoin partitions: a freshly sealed 2 KiB sector's PoRep,
//! WinningPoSt, WindowPoSt and SnapDeals circuits, each synthesized once, then proven on the
//! CPU backend and on the CUDA backend in the same run. Prints the witness's shape (what the
//! MSMs see: zeros, ones, small and full-width values, the A and B densities), then the H
//! polynomial, each of the five MSMs and the whole device step on both backends, and asserts
//! that both give the same MSM results.
//!
//!     real_partitions [--kinds porep,winning,window,snap] [--runs N] [--params DIR]
//!                     [--dump-witness FILE]
//!
//! The CUDA backend keeps the parameter vectors resident as the daemon does (the first proof
//! uploads them plain, the second folds them where the resident budget allows): two
//! unmeasured warm-up proofs, then the median of N. `--dump-witness` writes the PoRep
//! partition's aux assignment (raw 32-byte scalars) for `gpu_msm --dist porep`.
//! Without a GPU the CUDA rows are skipped (a failure where CUZK_REQUIRE_GPU=1).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use clap::Parser;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::cuda::CudaBackend;
use cuzk_core::backend::Backend;
use cuzk_core::kinds::{build_task, params, vectors};
use cuzk_core::prove::{prove_on_device, DeviceTimings, MsmResults};
use cuzk_core::srs::SrsCache;
use cuzk_core::synth::Synthesized;
use cuzk_core::ProofKind;
use ff::{Field, PrimeField};

const SECTOR: u64 = 2048;

#[derive(Parser)]
struct Args {
    #[arg(
        long,
        default_value = "porep,winning,window,snap",
        value_delimiter = ','
    )]
    kinds: Vec<String>,
    /// Timed proofs per backend (after the warm-ups); medians are printed.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Parameter cache (2 KiB parameters are generated there when missing); default
    /// $CUZK_PARAM_CACHE, else ~/.cache/cuzk/params.
    #[arg(long)]
    params: Option<PathBuf>,
    /// Write the PoRep partition's aux witness here (raw scalars).
    #[arg(long)]
    dump_witness: Option<PathBuf>,
}

fn kind(name: &str) -> ProofKind {
    match name {
        "porep" => ProofKind::PorepSealCommit,
        "winning" => ProofKind::WinningPost,
        "window" => ProofKind::WindowPostPartition,
        "snap" => ProofKind::SnapDealsUpdate,
        other => panic!("unknown kind {other} (porep, winning, window, snap)"),
    }
}

/// Shares of the values an MSM's scalars take.
fn shape(values: &[Scalar]) -> String {
    let (mut zero, mut one, mut small) = (0usize, 0usize, 0usize);
    for v in values {
        if bool::from(v.is_zero()) {
            zero += 1;
        } else if *v == Scalar::ONE {
            one += 1;
        } else if v.to_repr().as_ref()[8..].iter().all(|&b| b == 0) {
            small += 1;
        }
    }
    let n = values.len().max(1) as f64;
    let pct = |k: usize| 100.0 * k as f64 / n;
    format!(
        "{} values: {:.1}% zero, {:.1}% one, {:.1}% other < 2^64, {:.1}% wider",
        values.len(),
        pct(zero),
        pct(one),
        pct(small),
        pct(values.len() - zero - one - small)
    )
}

fn describe(s: &Synthesized) {
    println!(
        "  constraints {}, inputs {}",
        s.num_constraints(),
        s.input.len()
    );
    println!("  aux (L)      {}", shape(&s.aux));
    println!(
        "  A aux        {} of {} aux ({:.1}%): {}",
        s.a_aux_density.total(),
        s.aux.len(),
        100.0 * s.a_aux_density.total() as f64 / s.aux.len().max(1) as f64,
        shape(&s.a_aux_density.select(&s.aux))
    );
    println!(
        "  B aux        {} of {} aux ({:.1}%): {}",
        s.b_aux_density.total(),
        s.aux.len(),
        100.0 * s.b_aux_density.total() as f64 / s.aux.len().max(1) as f64,
        shape(&s.b_aux_density.select(&s.aux))
    );
}

struct Figures {
    step: Duration,
    t: DeviceTimings,
}

/// Median device-step figures of `runs` proofs after `warmups`, and the (checked equal)
/// MSM results.
fn measure(
    backend: &dyn Backend,
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    srs_id: &str,
    synth: &Synthesized,
    warmups: usize,
    runs: usize,
) -> (Figures, MsmResults) {
    let mut all = Vec::new();
    let mut result = None;
    for i in 0..warmups + runs {
        let input = synth.clone();
        let t = Instant::now();
        let (msm, timings) = prove_on_device(backend, params, srs_id, input).expect("device step");
        let step = t.elapsed();
        if let Some(first) = &result {
            assert_eq!(
                first,
                &msm,
                "{}: results differ between runs",
                backend.name()
            );
        }
        result = Some(msm);
        if i >= warmups {
            all.push(Figures { step, t: timings });
        }
    }
    all.sort_by_key(|f| f.step);
    let mid = all.swap_remove(all.len() / 2);
    (mid, result.unwrap())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn row(kind: &str, backend: &str, f: &Figures) -> String {
    let m = &f.t.msms;
    format!(
        "| {kind} | {backend} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
        ms(f.step),
        ms(f.t.ntt),
        ms(m.h),
        ms(m.l),
        ms(m.a),
        ms(m.b_g1),
        ms(m.b_g2)
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let runs = args.runs.max(1);
    let dir = args.params.unwrap_or_else(cuzk_benches::default_param_dir);
    let gpu = CudaBackend::new_or_skip(0);
    let mut table = Vec::new();
    for name in &args.kinds {
        let kind = kind(name);
        params::generate(SECTOR, &[kind], &dir, &mut |p| {
            eprintln!("params: {} {:?}", p.srs_id, p.state)
        })?;
        let work = tempfile::tempdir()?;
        let m = vectors::generate(kind, SECTOR, work.path())?;
        let task = build_task(&m.request(work.path())?)?;
        let entry = task.params(&SrsCache::new(&dir))?;
        let t = Instant::now();
        let synth = task.synthesize(0)?;
        println!(
            "{name} 2 KiB, partition 0 of {} (synthesized in {:.0} ms):",
            task.partitions(),
            ms(t.elapsed())
        );
        describe(&synth);
        if kind == ProofKind::PorepSealCommit {
            if let Some(path) = &args.dump_witness {
                let bytes: Vec<u8> = cuzk_core::backend::cuda::as_limbs(&synth.aux)
                    .iter()
                    .flatten()
                    .flat_map(|l| l.to_le_bytes())
                    .collect();
                std::fs::write(path, bytes)?;
                println!("  aux witness written to {}", path.display());
            }
        }

        let (cpu, want) = measure(&CpuBackend, &entry.params, &entry.id, &synth, 1, runs);
        println!("  cpu:  {}", row(name, "cpu", &cpu));
        table.push(row(name, "cpu", &cpu));
        if let Some(gpu) = &gpu {
            let (g, got) = measure(gpu, &entry.params, &entry.id, &synth, 2, runs);
            assert_eq!(got, want, "{name}: CUDA and CPU MSM results differ");
            println!("  cuda: {}  (identical to cpu)", row(name, "cuda", &g));
            table.push(row(name, "cuda", &g));
            table.push(format!(
                "| {name} | cpu / cuda | {:.1}x | | | | | | |",
                cpu.step.as_secs_f64() / g.step.as_secs_f64()
            ));
        }
    }
    println!(
        "\n| kind (2 KiB) | backend | device step ms | NTT (H poly) | H | L | A | B_G1 | B_G2 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in table {
        println!("{r}");
    }
    Ok(())
}

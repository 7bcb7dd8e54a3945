//! Synthesis today (`synthesize_partition`: linear combinations built and evaluated in every
//! enforce call) against the matrices path (witness only, then a, b, c from the constraint
//! matrices recorded once per circuit shape), on the same partitions in one run: real 2 KiB
//! PoRep, WinningPoSt, WindowPoSt and SnapDeals partitions, and synthetic circuits. For the
//! PoRep-shaped kind (`--porep-shaped 20,24`), which is never synthesized through bellpepper,
//! the two paths are its direct synthesis (the witness and a, b, c on every core) and its
//! witness alone, a, b, c left to the device (evaluated here from its matrices afterwards,
//! only to check them; the `a/b/c` column).
//!
//! Each path's result must be identical (a, b, c, assignments, densities); any difference,
//! or a partition the matrices path handed back to full synthesis, exits non-zero.
//!
//! usage: synth_compare [--vectors DIR] [--runs N] [--synthetic 16,18] [--kinds porep,...]
//!                      [--porep-shaped 20,24]
//!
//! `--vectors DIR` reads `DIR/<kind>.json` manifests (`cuzk-client gen-vanilla` writes
//! them), generating the missing ones there; without it, vectors are sealed into a
//! temporary directory. No Groth16 parameters are needed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use cuzk_benches::cpu_time;
use cuzk_core::kinds::porep_shaped::{PorepShape, PorepShaped};
use cuzk_core::kinds::vectors::{self, Manifest};
use cuzk_core::kinds::{build_task, ProofTask, SyntheticTask};
use cuzk_core::synth::{
    last_timings, matrices_fallbacks, matrix_cache, set_synthesis_path, SynthesisPath, Synthesized,
};
use cuzk_core::ProofKind;

#[derive(Parser)]
struct Args {
    /// Directory of vector manifests (generated there when missing).
    #[arg(long)]
    vectors: Option<PathBuf>,
    /// Timed runs of each path per partition (after the recording run); medians reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Synthetic circuit sizes (log2 of the constraints).
    #[arg(long, value_delimiter = ',', default_value = "16,18")]
    synthetic: Vec<u32>,
    /// Filecoin kinds to run (porep, winning, window, snap).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "porep,winning,window,snap"
    )]
    kinds: Vec<String>,
    /// PoRep-shaped kind sizes (log2 of the domain, 10..27): direct synthesis against the
    /// witness alone; none by default.
    #[arg(long, value_delimiter = ',')]
    porep_shaped: Vec<u32>,
}

struct Row {
    name: String,
    constraints: usize,
    full: Duration,
    record: Duration,
    fast: Duration,
    cpu_full: Duration,
    cpu_fast: Duration,
    witness: Duration,
    evaluate: Duration,
    parts: usize,
    matrix_bytes: usize,
    rss_full: u64,
    rss_fast: u64,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Peak resident set since the last `reset_peak_rss`, in bytes (Linux; 0 elsewhere).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0), so each path's
/// peak is its own.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// One path's run over every partition of a task.
struct Run {
    time: Duration,
    cpu: Duration,
    out: Vec<Synthesized>,
    /// Summed over partitions (matrices path only).
    witness: Duration,
    evaluate: Duration,
    parts: usize,
    peak_rss: u64,
}

fn run(task: &dyn ProofTask, path: SynthesisPath) -> Result<Run, String> {
    set_synthesis_path(path);
    reset_peak_rss();
    let (t, cpu) = (Instant::now(), cpu_time());
    let mut r = Run {
        time: Duration::ZERO,
        cpu: Duration::ZERO,
        out: Vec::new(),
        witness: Duration::ZERO,
        evaluate: Duration::ZERO,
        parts: 1,
        peak_rss: 0,
    };
    for i in 0..task.partitions() {
        r.out.push(
            task.synthesize(i)
                .map_err(|e| format!("partition {i}: {e}"))?,
        );
        if let Some(p) = last_timings() {
            r.witness += p.witness;
            r.evaluate += p.evaluate;
            r.parts = p.parts;
        }
    }
    r.time = t.elapsed();
    r.cpu = cpu_time() - cpu;
    r.peak_rss = peak_rss();
    Ok(r)
}

fn check(name: &str, what: &str, want: &[Synthesized], got: &[Synthesized]) -> Result<(), String> {
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if let Some(field) = w.first_difference(g) {
            return Err(format!("{name} partition {i}, {what}: {field} differs"));
        }
    }
    Ok(())
}

/// Both paths on one task, their timed runs interleaved so that load from elsewhere on the
/// machine falls on both alike. Only the reference result stays in memory between runs.
fn compare(name: &str, task: &dyn ProofTask, runs: usize) -> Result<Row, String> {
    let reference = run(task, SynthesisPath::Full)?.out;
    let fallbacks = matrices_fallbacks();
    let before = matrix_cache().resident_bytes();
    let recorded = run(task, SynthesisPath::Matrices)?;
    check(name, "recording run", &reference, &recorded.out)?;
    let record = recorded.time;
    drop(recorded);
    let (mut full, mut fast, mut witness, mut evaluate) = (vec![], vec![], vec![], vec![]);
    let (mut cpu_full, mut cpu_fast) = (vec![], vec![]);
    let (mut rss_full, mut rss_fast, mut parts) = (0, 0, 1);
    for _ in 0..runs {
        let f = run(task, SynthesisPath::Full)?;
        full.push(f.time);
        cpu_full.push(f.cpu);
        rss_full = rss_full.max(f.peak_rss);
        drop(f);
        let n = run(task, SynthesisPath::Matrices)?;
        check(name, "witness run", &reference, &n.out)?;
        fast.push(n.time);
        cpu_fast.push(n.cpu);
        witness.push(n.witness);
        evaluate.push(n.evaluate);
        parts = n.parts;
        rss_fast = rss_fast.max(n.peak_rss);
    }
    set_synthesis_path(SynthesisPath::Full);
    if matrices_fallbacks() != fallbacks {
        return Err(format!(
            "{name}: the matrices path fell back to full synthesis"
        ));
    }
    let p = task.partitions() as u32;
    Ok(Row {
        name: name.to_string(),
        constraints: reference[0].num_constraints(),
        full: median(full) / p,
        record: record / p,
        fast: median(fast) / p,
        cpu_full: median(cpu_full) / p,
        cpu_fast: median(cpu_fast) / p,
        witness: median(witness) / p,
        evaluate: median(evaluate) / p,
        parts,
        matrix_bytes: matrix_cache().resident_bytes() - before,
        rss_full,
        rss_fast,
    })
}

/// The PoRep-shaped kind at 2^log: `full` is its direct synthesis, `new` its witness alone
/// (what the device step needs), `record` the build of its matrices from its rows, `a/b/c`
/// their host evaluation from the matrices (checked equal to the direct synthesis). As for
/// the other circuits, the reference result stays resident through every timed run.
fn compare_porep_shaped(log: u32, runs: usize) -> Result<Row, String> {
    let name = format!("porep-sh. 2^{log}");
    let err = |e: String| format!("{name}: {e}");
    let t = Instant::now();
    let m = PorepShape::new(log)
        .matrices()
        .map_err(|e| err(e.to_string()))?;
    let record = t.elapsed();
    let circuit = PorepShaped::new(log, 7);
    let reference = circuit.synthesize_direct();
    let (mut full, mut fast, mut evaluate) = (vec![], vec![], vec![]);
    let (mut cpu_full, mut cpu_fast) = (vec![], vec![]);
    let (mut rss_full, mut rss_fast) = (0, 0);
    for _ in 0..runs {
        reset_peak_rss();
        let (t, cpu) = (Instant::now(), cpu_time());
        let direct = circuit.synthesize_direct();
        full.push(t.elapsed());
        cpu_full.push(cpu_time() - cpu);
        rss_full = rss_full.max(peak_rss());
        drop(direct);
        reset_peak_rss();
        let (t, cpu) = (Instant::now(), cpu_time());
        let mut witness = circuit
            .synthesize_witness()
            .map_err(|e| err(e.to_string()))?;
        fast.push(t.elapsed());
        cpu_fast.push(cpu_time() - cpu);
        rss_fast = rss_fast.max(peak_rss());
        let t = Instant::now();
        witness.evaluate_deferred().map_err(err)?;
        evaluate.push(t.elapsed());
        check(
            &name,
            "witness run",
            std::slice::from_ref(&reference),
            std::slice::from_ref(&witness),
        )?;
    }
    let fast = median(fast);
    Ok(Row {
        name,
        constraints: reference.num_constraints(),
        full: median(full),
        record,
        fast,
        cpu_full: median(cpu_full),
        cpu_fast: median(cpu_fast),
        witness: fast,
        evaluate: median(evaluate),
        parts: 1,
        matrix_bytes: m.size_bytes(),
        rss_full,
        rss_fast,
    })
}

fn manifest(kind: ProofKind, dir: &Path) -> Result<Manifest, String> {
    let path = dir.join(format!("{}.json", kind.as_str()));
    if path.exists() {
        return Manifest::read(&path).map_err(|e| e.to_string());
    }
    eprintln!("sealing a 2 KiB {kind} vector into {}", dir.display());
    vectors::generate(kind, 2048, dir).map_err(|e| e.to_string())
}

fn main() {
    let args = Args::parse();
    let runs = args.runs.max(1);
    let tmp = tempfile::tempdir().expect("temporary directory");
    let dir = args
        .vectors
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());

    let mut failed = false;
    let mut tasks: Vec<(String, Arc<dyn ProofTask>)> = Vec::new();
    for k in &args.kinds {
        let kind = match vectors::parse_kind(k) {
            Ok(kind) => kind,
            Err(e) => {
                eprintln!("--kinds: {e}");
                std::process::exit(2);
            }
        };
        let task = manifest(kind, &dir)
            .and_then(|m| m.request(&dir).map_err(|e| e.to_string()))
            .and_then(|req| build_task(&req).map_err(|e| e.to_string()));
        match task {
            Ok(task) => tasks.push((format!("{kind} 2KiB"), task)),
            Err(e) => {
                eprintln!("{kind}: {e}");
                failed = true;
            }
        }
    }
    for &log in &args.synthetic {
        match SyntheticTask::new(log, 1, 7, cuzk_core::kinds::SyntheticShape::Uniform) {
            Ok(task) => tasks.push((format!("synthetic 2^{log}"), Arc::new(task))),
            Err(e) => {
                eprintln!("synthetic 2^{log}: {e}");
                failed = true;
            }
        }
    }
    let mut rows = Vec::new();
    for (name, task) in &tasks {
        match compare(name, task.as_ref(), runs) {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("MISMATCH: {e}");
                failed = true;
            }
        }
    }

    for &log in &args.porep_shaped {
        match compare_porep_shaped(log, runs) {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("MISMATCH: {e}");
                failed = true;
            }
        }
    }

    println!(
        "{:<16} {:>8} {:>8} {:>8} {:>7} {:>8} {:>8} {:>8} {:>7} {:>5} {:>8} {:>8} {:>9} {:>9}",
        "circuit",
        "rows",
        "full ms",
        "new ms",
        "speedup",
        "CPU full",
        "CPU new",
        "witness",
        "a/b/c",
        "parts",
        "record",
        "matr. MB",
        "RSS full",
        "RSS new"
    );
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    for r in &rows {
        println!(
            "{:<16} {:>8} {:>8.1} {:>8.1} {:>6.2}x {:>8.0} {:>8.0} {:>8.1} {:>7.1} {:>5} {:>8.1} {:>8.1} {:>7.0}MB {:>7.0}MB",
            r.name,
            r.constraints,
            ms(r.full),
            ms(r.fast),
            r.full.as_secs_f64() / r.fast.as_secs_f64(),
            ms(r.cpu_full),
            ms(r.cpu_fast),
            ms(r.witness),
            ms(r.evaluate),
            r.parts,
            ms(r.record),
            mb(r.matrix_bytes as u64),
            mb(r.rss_full),
            mb(r.rss_fast)
        );
    }
    println!(
        "per partition (ms); medians of {runs} interleaved runs; {} cores; witness and a/b/c split the new path's time; a/b/c, assignments and densities {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        if failed {
            "DIFFER (see above)"
        } else {
            "identical"
        }
    );
    if !args.porep_shaped.is_empty() {
        println!(
            "porep-sh.: full = direct synthesis (witness and a/b/c), new = the witness alone (a/b/c on the device), a/b/c = their host evaluation from the matrices (not in new), record = the matrices built from the rows"
        );
    }
    if failed {
        std::process::exit(1);
    }
}

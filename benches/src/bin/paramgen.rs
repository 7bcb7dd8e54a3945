//! Parameter generation: cuzk's (`paramgen::generate`: rows recorded once, Lagrange basis in
//! closed form, fixed-base multiplication on every core, streamed to disk) against
//! bellperson 0.27's `generate_random_parameters`, on the synthetic circuit. Prints both
//! times and the ratio (ours / theirs: below 1.0 means ours is faster), and our phases.
//!
//!     cargo run --release -p cuzk-benches --bin paramgen -- --log 16,18,20 --peer-max-log 18
//!
//! Files go to a temporary directory (or --dir) and are removed afterwards.

use std::path::PathBuf;
use std::time::Instant;

use bellperson::groth16;
use blstrs::Bls12;
use clap::Parser;
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::paramgen::{generate, record_rows, CpuFixedBase, RecordedRows, Toxic};
use rand::SeedableRng;

#[derive(Parser)]
struct Args {
    /// Synthetic circuit sizes (log2 of the constraints).
    #[arg(long, value_delimiter = ',', default_value = "16,18,20")]
    log: Vec<u32>,
    /// Largest size bellperson runs at (2^18 takes it ~36 s on 16 cores, and it doubles).
    #[arg(long, default_value_t = 18)]
    peer_max_log: u32,
    /// Where the files are written (a temporary directory by default).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    let tmp = tempfile::tempdir().expect("temporary directory");
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    println!(
        "{:>5} {:>9} {:>9} {:>10} {:>8}   ({} cores; ours = record + generate)",
        "size",
        "ours s",
        "record s",
        "bellperson",
        "ratio",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for log in args.log {
        let t = Instant::now();
        let m = record_rows("paramgen-bench", SyntheticCircuit::new(log, 0)).expect("recording");
        let record = t.elapsed().as_secs_f64();
        let rows = RecordedRows::new(&m).expect("rows");
        let path = dir.join(format!("paramgen-2^{log}.params"));
        let report = generate(
            &rows,
            &Toxic::from_seed(log as u64),
            &CpuFixedBase::new(),
            &path,
        )
        .expect("generating");
        drop(m);
        let _ = std::fs::remove_file(&path);
        let ours = record + report.total.as_secs_f64();

        let theirs = (log <= args.peer_max_log).then(|| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(log as u64);
            let t = Instant::now();
            let p = groth16::generate_random_parameters::<Bls12, _, _>(
                SyntheticCircuit::new(log, 0),
                &mut rng,
            )
            .expect("bellperson");
            drop(p);
            t.elapsed().as_secs_f64()
        });
        let (theirs_s, ratio) = match theirs {
            Some(s) => (format!("{s:.2}"), format!("{:.3}", ours / s)),
            None => ("-".into(), "-".into()),
        };
        println!("{log:>5} {ours:>9.2} {record:>9.2} {theirs_s:>10} {ratio:>8}");
        let phases: Vec<String> = report
            .queries
            .iter()
            .map(|q| format!("{} {} pts {:.2}s", q.name, q.points, q.time.as_secs_f64()))
            .collect();
        println!(
            "      columns {:.2}s; {}; write {:.2}s; {:.1} MB",
            report.columns.as_secs_f64(),
            phases.join(", "),
            report.write.as_secs_f64(),
            report.bytes as f64 / 1e6
        );
    }
}

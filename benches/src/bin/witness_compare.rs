//! A partition's witness by the stock circuit (bellpepper's gadgets run for their values)
//! against the native generator (`cuzk_core::native_witness`), in one run, on real circuits
//! of a virtual sector of any size: each partition's challenges split over the rayon
//! threads as the daemon's synthesis splits them, wall time and core-seconds of each path,
//! the assignment's size, and the two assignments compared (any difference exits non-zero).
//!
//! usage: witness_compare [--kind porep|winning|window] [--sector-size 32GiB] [--partitions 1]
//!                        [--runs 2]
//!
//! No parameters or matrices are needed: this is the witness alone, the part of synthesis
//! that the recorded matrices leave.

use std::time::{Duration, Instant};

use clap::Parser;
use cuzk_benches::cpu_time;
use cuzk_core::kinds::registered::parse_sector_size;
use cuzk_core::kinds::{build_task, virtual_sector, WitnessPaths};
use cuzk_core::witness::WitnessCs;
use cuzk_core::ProofKind;
use rayon::prelude::*;

#[derive(Parser)]
struct Args {
    /// Kind (those with a native witness: porep, winning, window).
    #[arg(long, default_value = "porep")]
    kind: String,
    #[arg(long, default_value = "32GiB")]
    sector_size: String,
    /// Partitions measured (the first ones).
    #[arg(long, default_value_t = 1)]
    partitions: usize,
    /// Timed runs of each path per partition; medians reported.
    #[arg(long, default_value_t = 2)]
    runs: usize,
    /// The native path alone (for a profile of it); nothing compared.
    #[arg(long)]
    native_only: bool,
}

struct Timing {
    wall: Duration,
    cpu: Duration,
}

/// One partition's witness by one path, its sections split over the threads. Each piece
/// has room for `capacity` aux values, as the daemon's have for the whole partition's, and
/// is written packed, as the daemon writes it for a device that unpacks it.
fn run(
    w: &dyn WitnessPaths,
    index: usize,
    native: bool,
    capacity: usize,
) -> (Vec<WitnessCs>, Timing) {
    let sections = w.sections(index);
    let parts = sections.min(rayon::current_num_threads()).max(1);
    let (t, c) = (Instant::now(), cpu_time());
    let pieces = (0..parts)
        .into_par_iter()
        .map(|j| {
            let cs = WitnessCs::packed(1, capacity);
            let run = j * sections / parts..(j + 1) * sections / parts;
            w.witness(index, run, native, cs)
        })
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("partition {index}: {e}"));
    let timing = Timing {
        wall: t.elapsed(),
        cpu: cpu_time() - c,
    };
    (pieces, timing)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args = Args::parse();
    let kind: ProofKind = match args.kind.as_str() {
        "porep" => ProofKind::PorepSealCommit,
        "winning" => ProofKind::WinningPost,
        "window" => ProofKind::WindowPostPartition,
        other => panic!("{other}: no native witness (porep, winning, window)"),
    };
    let size = parse_sector_size(&args.sector_size)
        .unwrap_or_else(|| panic!("sector size {:?}", args.sector_size));
    let t = Instant::now();
    let req = virtual_sector::request(kind, size).expect("virtual sector");
    let task = build_task(&req).expect("task");
    let paths = task.witness_paths().expect("a kind with a native witness");
    println!(
        "{} {} virtual sector in {:.1} s; {} threads",
        args.kind,
        args.sector_size,
        t.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    println!(
        "{:>9} {:>12} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "partition",
        "aux",
        "held MB",
        "stock s",
        "stock cpu",
        "native s",
        "native cpu",
        "wall x",
        "cpu x"
    );
    let mut differ = false;
    for index in 0..args.partitions.min(task.partitions()) {
        let mut times = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
        // The partition's size, from one native run (the daemon has it from the matrices).
        let all = paths.sections(index);
        let whole = paths
            .witness(index, 0..all, true, WitnessCs::packed(1, 0))
            .expect("witness");
        let aux = whole.aux_len();
        // The packed assignment's bytes: what a partition holds from synthesis to its step.
        let held = whole.packed.as_ref().map_or(0, |p| p.host_bytes()) as f64 / 1e6;
        for _ in 0..args.runs.max(1) {
            let (native, tn) = run(paths, index, true, aux);
            let (stock, ts) = if args.native_only {
                (
                    native.clone(),
                    Timing {
                        wall: Duration::ZERO,
                        cpu: Duration::ZERO,
                    },
                )
            } else {
                run(paths, index, false, aux)
            };
            differ |= stock != native;
            for (slot, tm) in times.iter_mut().zip([ts, tn]) {
                slot.0.push(tm.wall);
                slot.1.push(tm.cpu);
            }
        }
        let [(sw, sc), (nw, nc)] = times.map(|(w, c)| (median(w), median(c)));
        println!(
            "{index:>9} {aux:>12} {held:>8.0} {:>10.3} {:>10.2} {:>10.3} {:>10.2} {:>9.1} {:>9.1}",
            sw.as_secs_f64(),
            sc.as_secs_f64(),
            nw.as_secs_f64(),
            nc.as_secs_f64(),
            sw.as_secs_f64() / nw.as_secs_f64(),
            sc.as_secs_f64() / nc.as_secs_f64().max(1e-3),
        );
    }
    if differ {
        eprintln!("the native witness differs from the stock circuit's");
        std::process::exit(1);
    }
    println!("native == stock on every partition measured");
}

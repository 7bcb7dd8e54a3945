//! Parameter-file loading: bellperson 0.27's `Parameters::read` (one thread, buffered)
//! against cuzk's parallel reader (`srs::read_parameter_file`), same file, in one run;
//! prints MB/s of each and the ratio (ours / theirs: above 1.0 means ours is faster).
//! Both read from the page cache: the file is read through once before timing.
//!
//!     cargo run --release -p cuzk-benches --bin param_load -- [FILE] [--reps N] [--tile K]
//!
//! Without FILE, the synthetic 2^16 set is generated into a temporary directory (~33 MB);
//! `--tile K` writes it with every vector repeated K times instead (K = 32: ~1 GB, the size
//! of a 2 KiB PoRep set, in seconds rather than the minutes a real 2^21 set takes).
//! Runs alternate so that machine noise hits both; medians of N (default 3).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk_core::srs::{read_parameter_file, write_params_atomic, SrsCache};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Read the file through once, so that both readers find it in the page cache.
fn warm(path: &Path) -> u64 {
    let mut f = File::open(path).expect("opening the parameter file");
    let mut buf = vec![0u8; 1 << 22];
    let mut total = 0u64;
    loop {
        match f.read(&mut buf).expect("reading the parameter file") {
            0 => return total,
            n => total += n as u64,
        }
    }
}

fn bellperson_read(path: &Path) -> Parameters<Bls12> {
    let file = File::open(path).expect("opening the parameter file");
    Parameters::read(BufReader::with_capacity(1 << 20, file), false).expect("bellperson's read")
}

/// `params` with every point vector repeated `k` times: a larger file of valid points.
fn tiled(params: &Parameters<Bls12>, k: usize) -> Parameters<Bls12> {
    fn rep<T: Clone>(v: &[T], k: usize) -> Arc<Vec<T>> {
        Arc::new(v.iter().cloned().cycle().take(v.len() * k).collect())
    }
    Parameters {
        vk: params.vk.clone(),
        h: rep(&params.h, k),
        l: rep(&params.l, k),
        a: rep(&params.a, k),
        b_g1: rep(&params.b_g1, k),
        b_g2: rep(&params.b_g2, k),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut file: Option<PathBuf> = None;
    let mut reps = 3usize;
    let mut tile = 1usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reps" => {
                reps = args
                    .next()
                    .and_then(|r| r.parse().ok())
                    .expect("--reps takes a number")
            }
            "--tile" => {
                tile = args
                    .next()
                    .and_then(|r| r.parse().ok())
                    .expect("--tile takes a number")
            }
            other => file = Some(PathBuf::from(other)),
        }
    }
    let _tmp;
    let path = match file {
        Some(p) => p,
        None => {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let entry = SrsCache::new(dir.path())
                .synthetic(16)
                .expect("generating synthetic-2^16");
            let mut p = dir.path().join("cuzk-synthetic-2^16-v1.params");
            if tile > 1 {
                p = dir.path().join(format!("synthetic-2^16-x{tile}.params"));
                write_params_atomic(&tiled(&entry.params, tile), &p)
                    .expect("writing the tiled set");
            }
            _tmp = dir;
            p
        }
    };
    let bytes = warm(&path);
    let mb = bytes as f64 / 1e6;
    println!(
        "{} ({mb:.1} MB), {} cores, median of {reps}",
        path.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let (mut theirs, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let t = Instant::now();
        let reference = bellperson_read(&path);
        theirs.push(t.elapsed());
        drop(reference);
        let t = Instant::now();
        let parallel = read_parameter_file(&path).expect("cuzk's read");
        ours.push(t.elapsed());
        drop(parallel);
    }
    // Once more, untimed: the two readers must agree.
    let same = read_parameter_file(&path).expect("cuzk's read") == bellperson_read(&path);
    assert!(same, "the two readers disagree on {}", path.display());

    let (theirs, ours) = (median(theirs), median(ours));
    let rate = |d: Duration| mb / d.as_secs_f64();
    println!("{:>12} {:>10} {:>9}", "reader", "ms", "MB/s");
    for (name, d) in [("bellperson", theirs), ("cuzk", ours)] {
        println!(
            "{name:>12} {:>10.1} {:>9.0}",
            d.as_secs_f64() * 1e3,
            rate(d)
        );
    }
    println!(
        "ratio (cuzk MB/s / bellperson MB/s): {:.2}",
        rate(ours) / rate(theirs)
    );
}

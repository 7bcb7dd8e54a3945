//! What the benchmark binaries share.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The parameter cache the tests fill: $CUZK_PARAM_CACHE, else ~/.cache/cuzk/params (2 KiB
/// test parameters are generated there when missing, so a benchmark reuses the tests').
pub fn default_param_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CUZK_PARAM_CACHE") {
        return PathBuf::from(dir);
    }
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/cuzk/params"))
        .unwrap_or_else(|| PathBuf::from("target/cuzk-test-params"))
}

/// A comma list of log sizes ("20,22,24"), as the GPU benchmarks take them.
pub fn parse_logs(s: &str) -> Vec<u32> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().expect("log size"))
        .collect()
}

/// The median of `v` in milliseconds (NaN for none).
pub fn median_ms(mut v: Vec<Duration>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// The median of `reps` runs of `f`, in milliseconds.
pub fn time_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    median_ms(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

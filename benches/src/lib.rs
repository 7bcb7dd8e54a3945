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

/// CPU time of the whole process (every thread), from /proc/self/stat (10 ms ticks; zero
/// where there is no /proc): under load from elsewhere the wall times stretch, the CPU time
/// less so.
pub fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    Duration::from_millis(f.iter().sum::<u64>() * 10)
}

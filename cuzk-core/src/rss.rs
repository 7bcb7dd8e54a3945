//! The daemon's own resident memory, as the kernel counts it: what GetStatus, the metrics and
//! `cuzk-client bench` report beside the engine's memory budget. The budget counts what
//! partitions reserve; this is what the process really holds (parameters, matrices,
//! allocator slack and all), so the two together show whether the budget's model holds.

/// Resident set size of this process now and at its highest (Linux: VmRSS and VmHWM of
/// /proc/self/status). The peak is the kernel's own, so a spike between two GetStatus calls
/// is not missed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    pub rss_bytes: u64,
    pub peak_rss_bytes: u64,
}

/// None where there is no /proc (not Linux) or it says nothing usable.
pub fn process_memory() -> Option<ProcessMemory> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status(&text)
}

/// VmRSS and VmHWM, both given in kB (KiB) by the kernel.
fn parse_status(status: &str) -> Option<ProcessMemory> {
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].split_whitespace().next()?.parse().ok()
    };
    Some(ProcessMemory {
        rss_bytes: kib("VmRSS:")? * 1024,
        peak_rss_bytes: kib("VmHWM:")? * 1024,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parsed() {
        let text =
            "Name:\tcuzk-daemon\nVmPeak:\t 9000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t    4096 kB\n";
        assert_eq!(
            parse_status(text),
            Some(ProcessMemory {
                rss_bytes: 4096 * 1024,
                peak_rss_bytes: 5120 * 1024,
            })
        );
        assert_eq!(parse_status("VmRSS:\t1 kB\n"), None, "no VmHWM");
        assert_eq!(parse_status("VmRSS:\tlots kB\nVmHWM:\t1 kB\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_reads_plausibly() {
        let before = process_memory().expect("Linux has /proc/self/status");
        assert!(before.rss_bytes > 0);
        assert!(before.peak_rss_bytes >= before.rss_bytes);
        // 64 MiB touched: the peak must cover it, and never goes down.
        let block = vec![1u8; 64 << 20];
        let during = process_memory().unwrap();
        assert!(during.peak_rss_bytes >= during.rss_bytes);
        assert!(
            during.peak_rss_bytes >= before.peak_rss_bytes.max(64 << 20),
            "{before:?} then {during:?}"
        );
        drop(std::hint::black_box(block));
        // The block is gone, its peak is not. (Not `>= during`: the kernel's RSS counters are
        // per-CPU approximations, and a reading of VmHWM can come out a few pages lower.)
        let after = process_memory().unwrap();
        assert!(
            after.peak_rss_bytes >= 64 << 20,
            "{during:?} then {after:?}"
        );
    }
}

//! What the partitions ahead of a device may hold: pipeline slots (partitions in synthesis or
//! synthesized and waiting for a device) and memory (a partition holds a, b, c and the
//! assignments until a device has proven it, ~17 GB for a 32 GiB PoRep partition, and the
//! device step's host copies on top: footprint.rs). Both are reserved before synthesis starts
//! (see gate.rs), so a worker never finishes a partition it has no room for.
//!
//! A share of each is kept for urgent work (HIGH and CRITICAL: WindowPoSt, WinningPoSt): NORMAL
//! and LOW partitions may not take it, so a PoSt arriving behind a full pipeline of sealing
//! work finds room at once instead of waiting for sealing partitions to drain.

use std::path::Path;

use crate::job::Priority;

/// The limits, fixed at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Slots any partition may take.
    pub slots: usize,
    /// Further slots only urgent partitions take.
    pub urgent_slots: usize,
    /// Bytes all reservations may hold together.
    pub bytes: u64,
    /// Of `bytes`, the part only urgent partitions may use.
    pub urgent_bytes: u64,
}

/// What the reservations hold now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub slots: usize,
    pub bytes: u64,
}

/// Whether a partition of this priority may use the urgent share.
pub fn is_urgent(p: Priority) -> bool {
    p >= Priority::High
}

impl Budget {
    /// Whether a partition of `priority` that will hold `bytes` may start now. A partition
    /// larger than what it may use is admitted when nothing else holds memory, so that it can
    /// never wait forever.
    pub fn admits(&self, used: Usage, priority: Priority, bytes: u64) -> bool {
        let urgent = is_urgent(priority);
        let slots = self.slots + if urgent { self.urgent_slots } else { 0 };
        let room = if urgent {
            self.bytes
        } else {
            self.bytes.saturating_sub(self.urgent_bytes)
        };
        used.slots < slots && (used.bytes == 0 || used.bytes.saturating_add(bytes) <= room)
    }
}

/// The memory the default budget leaves to everything it does not count: the OS, the page
/// cache of the parameter files and journal, the recorded matrices (~55 bytes a constraint,
/// ~7 GB for the 32 GiB PoRep shape), synthesis' own transients, allocator slack, each CUDA
/// device's pinned staging (64 MiB): an eighth of the machine, at least 8 GiB.
pub fn os_reserve(mem_total: u64) -> u64 {
    (mem_total / 8).max(8 << 30)
}

/// The default memory budget on a machine of `mem_total` bytes whose largest parameter set
/// is `resident_params` bytes (resident once loaded: 47 GB for 32 GiB PoRep): what is left
/// after the OS reserve and that set, at most half of the machine (the budget's model is a
/// bound per partition, not a measurement: half leaves a margin for what it misses) and at
/// least an eighth (a smaller machine still proves small kinds side by side; a partition
/// larger than the budget is admitted alone). On 128 GiB with the 32 GiB PoRep set: 64 GiB,
/// leaving 64 for 16 of reserve and 44 of parameters.
pub fn default_budget(mem_total: u64, resident_params: u64) -> u64 {
    mem_total
        .saturating_sub(os_reserve(mem_total))
        .saturating_sub(resident_params)
        .clamp(mem_total / 8, mem_total / 2)
}

/// [`default_budget`] for this machine and the parameter files in `param_dir`; 8 GiB where
/// the machine's memory is unknown.
pub fn default_budget_bytes(param_dir: &Path) -> u64 {
    physical_memory().map_or(8 << 30, |m| {
        default_budget(m, largest_parameter_file(param_dir))
    })
}

/// The size of the largest `*.params` file in `dir` (0 when none or unreadable): the set a
/// daemon keeps resident once a job of its kind has run. Parameters are stored uncompressed,
/// so the file's size is close to what the loaded set takes.
pub fn largest_parameter_file(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "params"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0)
}

/// The default urgent share: an eighth of the budget. On a 512 GiB machine (256 GiB budget)
/// that is 32 GiB, room for a 32 GiB WindowPoSt partition (~17 GB synthesized) or many
/// WinningPoSts (~0.5 GB each), while sealing keeps seven eighths.
pub fn default_urgent_bytes(budget: u64) -> u64 {
    budget / 8
}

/// MemTotal from /proc/meminfo (Linux); None elsewhere.
pub fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_total(&text)
}

fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Budget = Budget {
        slots: 2,
        urgent_slots: 1,
        bytes: 100,
        urgent_bytes: 20,
    };

    fn used(slots: usize, bytes: u64) -> Usage {
        Usage { slots, bytes }
    }

    #[test]
    fn normal_work_leaves_the_urgent_share() {
        assert!(B.admits(used(0, 0), Priority::Normal, 60));
        // 60 + 30 > 100 - 20: a NORMAL partition waits, a CRITICAL one of the same size not.
        assert!(!B.admits(used(1, 60), Priority::Normal, 30));
        assert!(!B.admits(used(1, 60), Priority::Low, 30));
        assert!(B.admits(used(1, 60), Priority::Critical, 30));
        assert!(B.admits(used(1, 60), Priority::High, 40));
        assert!(!B.admits(used(1, 60), Priority::High, 41));
    }

    #[test]
    fn urgent_slots_only_for_urgent_work() {
        assert!(!B.admits(used(2, 0), Priority::Normal, 0));
        assert!(B.admits(used(2, 0), Priority::Critical, 0));
        assert!(!B.admits(used(3, 0), Priority::Critical, 0));
    }

    #[test]
    fn oversize_admitted_alone() {
        assert!(B.admits(used(0, 0), Priority::Normal, 500));
        assert!(!B.admits(used(1, 1), Priority::Critical, 500));
        // The urgent share larger than the budget leaves NORMAL work only the oversize rule.
        let all_urgent = Budget {
            urgent_bytes: 1000,
            ..B
        };
        assert!(!all_urgent.admits(used(1, 1), Priority::Normal, 1));
        assert!(all_urgent.admits(used(0, 0), Priority::Normal, 1));
    }

    #[test]
    fn mem_total_parsed() {
        let text = "MemTotal:       24567890 kB\nMemFree: 1 kB\n";
        assert_eq!(parse_mem_total(text), Some(24567890 * 1024));
        assert_eq!(parse_mem_total("nothing"), None);
        assert!(physical_memory().unwrap_or(1) > 0);
        assert_eq!(default_urgent_bytes(800), 100);
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn default_budget_leaves_the_os_and_the_parameters_room() {
        // 128 GiB, the 32 GiB PoRep parameters (47 GB) resident: half, and what is left
        // covers the reserve and the parameters.
        let params = 47_000_000_000;
        let b = default_budget(128 * GIB, params);
        assert_eq!(b, 64 * GIB);
        assert!(128 * GIB - b >= os_reserve(128 * GIB) + params);
        // 96 GiB: the parameters, not the half, decide.
        let b = default_budget(96 * GIB, params);
        assert_eq!(b, 96 * GIB - 12 * GIB - params);
        // Small parameters: half of the machine, as before.
        assert_eq!(default_budget(32 * GIB, 1 << 20), 16 * GIB);
        // A machine too small for its parameters still gets an eighth.
        assert_eq!(default_budget(32 * GIB, params), 4 * GIB);
    }

    #[test]
    fn the_largest_parameter_file_is_found() {
        let dir = std::env::temp_dir().join(format!("cuzk-budget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.params"), [0u8; 10]).unwrap();
        std::fs::write(dir.join("b.params"), [0u8; 30]).unwrap();
        std::fs::write(dir.join("c.vk"), [0u8; 99]).unwrap();
        assert_eq!(largest_parameter_file(&dir), 30);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(largest_parameter_file(&dir), 0);
    }
}

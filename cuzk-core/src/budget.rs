//! What the partitions ahead of a device may hold: pipeline slots (partitions in synthesis or
//! synthesized and waiting for a device) and memory (a synthesized partition holds a, b, c and
//! the assignments until a device has proven it, about 13 GB for a 32 GiB PoRep partition).
//! Both are reserved before synthesis starts (see gate.rs), so a worker never finishes a
//! partition it has no room for.
//!
//! A share of each is kept for urgent work (HIGH and CRITICAL: WindowPoSt, WinningPoSt): NORMAL
//! and LOW partitions may not take it, so a PoSt arriving behind a full pipeline of sealing
//! work finds room at once instead of waiting for sealing partitions to drain.

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

/// The default memory budget: half of the machine's physical memory (the rest is for the
/// parameters, which are larger than one partition, and for synthesis itself).
pub fn default_budget_bytes() -> u64 {
    physical_memory().map_or(8 << 30, |m| m / 2)
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
}

//! The memory budget of synthesized partitions. A synthesized partition holds a, b, c and the
//! assignments until a device has proven it (about 13 GB for a 32 GiB PoRep partition), so
//! the number of partitions waiting is not a memory bound by itself: this budget is. A
//! synthesis worker reserves the partition's bytes before handing it on and waits while the
//! budget is spent; the reservation is returned when the work is dropped, whatever path it
//! takes (proven, failed, cancelled, drained at shutdown).

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

pub struct MemoryBudget {
    limit: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// Bytes held against a budget; released on drop.
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(MemoryBudget {
            limit,
            used: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        *self.used.lock()
    }

    /// Reserve `bytes`, waiting while the budget is spent. A partition larger than the
    /// whole budget is admitted when nothing else is held, so it can never wait forever.
    /// `give_up` is polled while waiting (a cancelled job stops waiting): None then.
    pub fn reserve(
        self: &Arc<Self>,
        bytes: u64,
        give_up: impl Fn() -> bool,
    ) -> Option<Reservation> {
        let mut used = self.used.lock();
        while *used > 0 && *used + bytes > self.limit {
            if give_up() {
                return None;
            }
            self.freed
                .wait_for(&mut used, std::time::Duration::from_millis(200));
        }
        *used += bytes;
        Some(Reservation {
            budget: self.clone(),
            bytes,
        })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock();
        *used -= self.bytes;
        self.budget.freed.notify_all();
    }
}

/// The default budget: half of the machine's physical memory (the rest is for the
/// parameters, which are larger than one partition, and for synthesis itself).
pub fn default_budget_bytes() -> u64 {
    physical_memory().map_or(8 << 30, |m| m / 2)
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
    use std::time::Duration;

    #[test]
    fn reserve_waits_for_release_and_admits_oversize_alone() {
        let b = MemoryBudget::new(100);
        let r1 = b.reserve(60, || false).unwrap();
        assert_eq!(b.used(), 60);
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || b2.reserve(60, || false).map(|r| r.bytes));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished(), "60 + 60 > 100 must wait");
        drop(r1);
        assert_eq!(waiter.join().unwrap(), Some(60));
        assert_eq!(b.used(), 0);
        // Larger than the whole budget: admitted when nothing is held.
        let big = b.reserve(500, || false).unwrap();
        assert_eq!(b.used(), 500);
        // ...and the next one waits until it is gone, or gives up.
        assert!(b.reserve(1, || true).is_none());
        drop(big);
    }

    #[test]
    fn mem_total_parsed() {
        let text = "MemTotal:       24567890 kB\nMemFree: 1 kB\n";
        assert_eq!(parse_mem_total(text), Some(24567890 * 1024));
        assert_eq!(parse_mem_total("nothing"), None);
        assert!(physical_memory().unwrap_or(1) > 0);
    }
}

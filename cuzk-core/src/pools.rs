//! Rayon pools of their own for the work an urgent proof waits on.
//!
//! Everything that calls into rayon from a thread outside a pool queues its tasks on the
//! global pool's one injector, first in, first out. Under PoRep load that queue holds the
//! synthesis of every partition in flight (split witnesses, a, b, c evaluation chunks), so a
//! WinningPoSt's own parallel work waited behind it: measured on the H200 with 16 PoRep jobs
//! in flight, a WinningPoSt's synthesis took 40 ms instead of 20, and one finalize 1,129 ms
//! instead of 3 (bellperson's `verify_proof` runs its Miller loops as rayon tasks). Work run
//! inside `install` on one of these pools spawns onto that pool instead, and a pool's
//! thread that waits runs its own tasks, so nothing here queues behind the global pool; the
//! operating system shares the cores between the pools' threads.

use std::sync::OnceLock;

use rayon::ThreadPool;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn build(name: &'static str, threads: usize) -> ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("cuzk-{name}-{i}"))
        .build()
        .unwrap_or_else(|e| panic!("creating the {name} threads: {e}"))
}

/// Synthesis of HIGH and CRITICAL partitions (`budget::is_urgent`): a thread per core, so
/// that an urgent partition alone on the machine runs as fast as on the global pool (a
/// 32 GiB WindowPoSt partition is as large as a PoRep one) and beside a full load gets its
/// share of the cores at once.
pub fn urgent() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| build("urgent", cores()))
}

/// Finalize (public inputs, assembly, self-verification, the stock whole-job verifier):
/// short, latency-bound work of every priority.
pub fn finalize() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| build("finalize", cores().clamp(2, 8)))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::sync::{Arc, Barrier, Condvar, Mutex};
    use std::time::Duration;

    use rayon::prelude::*;

    /// Parallel work on `pool` completes while every thread of the global pool is held
    /// busy: it does not queue behind the global pool's tasks.
    fn runs_beside_a_blocked_global_pool(pool: &'static rayon::ThreadPool) {
        let threads = rayon::current_num_threads();
        let held = Arc::new(Barrier::new(threads + 1));
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        for _ in 0..threads {
            let (held, release) = (held.clone(), release.clone());
            rayon::spawn(move || {
                held.wait();
                let (lock, cv) = &*release;
                let mut go = lock.lock().unwrap();
                while !*go {
                    go = cv.wait(go).unwrap();
                }
            });
        }
        held.wait();
        // Every global thread is now parked until released.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let sum: u64 = pool.install(|| (0..100_000u64).into_par_iter().sum());
            let _ = tx.send(sum);
        });
        let got = rx.recv_timeout(Duration::from_secs(30));
        let (lock, cv) = &*release;
        *lock.lock().unwrap() = true;
        cv.notify_all();
        assert_eq!(
            got,
            Ok(99_999 * 100_000 / 2),
            "queued behind the global pool"
        );
    }

    #[test]
    fn urgent_and_finalize_work_never_waits_for_the_global_pool() {
        runs_beside_a_blocked_global_pool(super::urgent());
        runs_beside_a_blocked_global_pool(super::finalize());
    }
}

//! The matrices of every circuit shape seen, recorded once and shared (`Arc`) by all
//! partitions and jobs of that shape; optionally kept on disk so a restart reads them back
//! instead of recording again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::{read_matrices, write_matrices, Matrices};

#[derive(Debug)]
enum Slot {
    /// One caller is recording (or reading the file); others wait for it. Synthesizing in
    /// full meanwhile takes no less time than recording, and holds a whole partition's
    /// linear combinations per worker: tens of GB each at 32 GiB, more than a host has for
    /// every worker at once.
    Pending,
    Ready(Arc<Matrices>),
    /// Recording cannot work for this shape (it outgrows the 32-bit layout): never retried.
    Unusable,
}

/// What a lookup found.
pub enum Recorded<'a> {
    Ready(Arc<Matrices>),
    /// Nobody has the matrices: the caller records them and hands them to the ticket.
    Record(RecordTicket<'a>),
    /// The shape cannot be recorded.
    Unavailable,
}

#[derive(Debug, Default)]
pub struct MatrixCache {
    dir: Option<PathBuf>,
    slots: Mutex<HashMap<String, Slot>>,
    /// Signalled whenever a pending slot is settled.
    settled: Condvar,
    fallbacks: AtomicUsize,
}

impl MatrixCache {
    /// Matrices in memory only.
    pub fn new() -> Self {
        MatrixCache::default()
    }

    /// Matrices also read from and written to `dir` (the parameter directory, typically).
    pub fn with_dir(dir: impl Into<PathBuf>) -> Self {
        MatrixCache {
            dir: Some(dir.into()),
            ..MatrixCache::default()
        }
    }

    /// Where the matrices of `key` live on disk.
    pub fn file(dir: &Path, key: &str) -> PathBuf {
        let safe: String = key
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        dir.join(format!("cuzk-matrices-{safe}.r1cs"))
    }

    pub fn lookup(&self, key: &str) -> Recorded<'_> {
        {
            let mut slots = self.slots.lock();
            loop {
                match slots.get(key) {
                    Some(Slot::Ready(m)) => return Recorded::Ready(m.clone()),
                    Some(Slot::Unusable) => return Recorded::Unavailable,
                    Some(Slot::Pending) => self.settled.wait(&mut slots),
                    None => {
                        slots.insert(key.to_string(), Slot::Pending);
                        break;
                    }
                }
            }
        }
        let mut ticket = RecordTicket {
            cache: self,
            key: key.to_string(),
            write_file: self.dir.is_some(),
            done: false,
        };
        // The file is read outside the lock: a 32 GiB PoRep's matrices are gigabytes.
        if let Some(dir) = &self.dir {
            let path = Self::file(dir, key);
            if path.exists() {
                match read_matrices(&path, key) {
                    Ok(m) => {
                        ticket.write_file = false;
                        return Recorded::Ready(ticket.insert(m));
                    }
                    Err(e) => {
                        tracing::warn!("matrices {}: {e}; recording them again", path.display())
                    }
                }
            }
        }
        Recorded::Record(ticket)
    }

    /// The matrices of `key`, if recorded.
    pub fn get(&self, key: &str) -> Option<Arc<Matrices>> {
        match self.slots.lock().get(key) {
            Some(Slot::Ready(m)) => Some(m.clone()),
            _ => None,
        }
    }

    /// Bytes held by all recorded matrices.
    pub fn resident_bytes(&self) -> usize {
        self.slots
            .lock()
            .values()
            .map(|s| match s {
                Slot::Ready(m) => m.size_bytes(),
                _ => 0,
            })
            .sum()
    }

    /// Partitions that found their matrices (or recorded them) but were then synthesized in
    /// full: non-zero means a circuit and its matrices disagreed, or a witness was invalid.
    pub fn fallbacks(&self) -> usize {
        self.fallbacks.load(Ordering::Relaxed)
    }

    pub(crate) fn count_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// Forget `key`'s matrices (in memory; the file stays).
    pub fn evict(&self, key: &str) {
        let mut slots = self.slots.lock();
        if matches!(slots.get(key), Some(Slot::Ready(_))) {
            slots.remove(key);
        }
    }
}

/// The right to record one shape's matrices. Dropped without `insert` (recording failed,
/// or panicked), the shape is free to be recorded by the next caller.
pub struct RecordTicket<'a> {
    cache: &'a MatrixCache,
    key: String,
    /// The cache has a directory and no good file there.
    write_file: bool,
    done: bool,
}

impl RecordTicket<'_> {
    /// Publish the recorded matrices (and write them to disk when the cache has a
    /// directory; a failed write is logged, the matrices are still used).
    pub fn insert(mut self, m: Matrices) -> Arc<Matrices> {
        debug_assert_eq!(m.key, self.key);
        let m = Arc::new(m);
        if let (Some(dir), true) = (&self.cache.dir, self.write_file) {
            let path = MatrixCache::file(dir, &self.key);
            if let Err(e) = write_matrices(&m, &path) {
                tracing::warn!("writing matrices {}: {e}", path.display());
            }
        }
        self.cache
            .slots
            .lock()
            .insert(self.key.clone(), Slot::Ready(m.clone()));
        self.cache.settled.notify_all();
        self.done = true;
        m
    }

    /// The shape cannot be recorded; stop trying.
    pub fn unusable(mut self) {
        self.cache
            .slots
            .lock()
            .insert(self.key.clone(), Slot::Unusable);
        self.cache.settled.notify_all();
        self.done = true;
    }
}

impl Drop for RecordTicket<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cache.slots.lock().remove(&self.key);
            self.cache.settled.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::synthetic::SyntheticCircuit;
    use crate::matrices::record_matrices;
    use std::sync::atomic::AtomicBool;

    /// A lookup while another caller records waits for the recording instead of going on
    /// without it (which at 32 GiB meant a full synthesis per waiting worker), and a failed
    /// recording frees the shape for the next caller.
    #[test]
    fn a_lookup_waits_for_the_recording_under_way() {
        let cache = MatrixCache::new();
        let Recorded::Record(ticket) = cache.lookup("k") else {
            panic!("the first lookup records");
        };
        let inserted = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| match cache.lookup("k") {
                Recorded::Ready(m) => {
                    assert!(
                        inserted.load(Ordering::SeqCst),
                        "returned before the insert"
                    );
                    m.num_aux
                }
                _ => panic!("the waiter got no matrices"),
            });
            std::thread::sleep(std::time::Duration::from_millis(200));
            let (m, _) = record_matrices("k", SyntheticCircuit::new(6, 1)).unwrap();
            let aux = m.num_aux;
            inserted.store(true, Ordering::SeqCst);
            ticket.insert(m);
            assert_eq!(waiter.join().unwrap(), aux);
        });

        let Recorded::Record(ticket) = cache.lookup("other") else {
            panic!("a new shape records");
        };
        drop(ticket);
        assert!(matches!(cache.lookup("other"), Recorded::Record(_)));
    }
}

//! Partitions parked until their parameter set has loaded (loading.rs loads the sets; the
//! engine's shared state holds this table).

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;

use crate::work::PartitionWork;

/// Partitions waiting for a set to load, by set id; a set is here from its first waiting
/// partition until its load ends.
#[derive(Default)]
pub struct SetLoads {
    waiting: Mutex<HashMap<String, Vec<Parked>>>,
}

pub(crate) struct Parked {
    pub(crate) work: PartitionWork,
    pub(crate) since: Instant,
}

impl SetLoads {
    /// Park `work` until set `id` is loaded; true when it is the first (the caller then
    /// starts the load).
    pub(crate) fn park(&self, id: &str, work: PartitionWork) -> bool {
        let mut waiting = self.waiting.lock();
        let first = !waiting.contains_key(id);
        waiting.entry(id.to_string()).or_default().push(Parked {
            work,
            since: Instant::now(),
        });
        first
    }

    /// Everything parked under `id`; a partition parked after this starts a new load (which
    /// finds the set resident when this one succeeded).
    pub(crate) fn take(&self, id: &str) -> Vec<Parked> {
        self.waiting.lock().remove(id).unwrap_or_default()
    }

    /// Sets loading now for queued jobs.
    pub fn loading(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.waiting.lock().keys().cloned().collect();
        ids.sort();
        ids
    }
}

//! Parameter sets (Groth16 proving keys, "SRS"): loaded once, kept resident, shared by every
//! partition and job that proves under them.
//!
//! Files live in one directory (FIL_PROOFS_PARAMETER_CACHE by convention). A file is written
//! to a temporary name and renamed into place, so a reader never sees half a file, and two
//! processes generating the same set at once both end with a whole one.
//!
//! Files are read in parallel (read.rs). The engine loads a set for queued jobs on a thread
//! of its own (loading.rs), so its synthesis workers look sets up through a handle that does
//! not wait (`SrsCache::without_waiting`): a set not resident is reported, not loaded.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::{self, Parameters, PreparedVerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use parking_lot::Mutex;

use crate::job::{Error, Result};
use crate::key::{Key, KeyLens};
use crate::kinds::porep_shaped;
use crate::kinds::synthetic::{MAX_LOG, MIN_LOG};
use crate::kinds::SyntheticShape;
use crate::paramgen::{generate_synthetic, synthetic_params_file, Engine};

mod read;
pub use read::{read_parameter_file, ReadError};

/// One loaded parameter set.
pub struct SrsEntry {
    pub id: String,
    /// The parameters; only the verifying key and A's and B's input parts once
    /// `host_released` (host_release.rs).
    pub params: Parameters<Bls12>,
    pub pvk: PreparedVerifyingKey<Bls12>,
    /// The point vectors' bytes as loaded (the host holds them unless `host_released`).
    pub size_bytes: u64,
    pub load_time: Duration,
    /// The point vectors' lengths as loaded.
    pub lens: KeyLens,
    /// The devices hold the big vectors and the host copy was dropped.
    pub host_released: bool,
}

impl SrsEntry {
    pub fn new(id: String, params: Parameters<Bls12>, load_time: Duration) -> Self {
        let pvk = groth16::prepare_verifying_key(&params.vk);
        SrsEntry {
            id,
            size_bytes: vector_bytes(&params),
            lens: KeyLens::of(&params),
            params,
            pvk,
            load_time,
            host_released: false,
        }
    }

    /// The key as the prover reads it.
    pub fn key(&self) -> Key<'_> {
        Key {
            srs_id: &self.id,
            params: &self.params,
            lens: self.lens,
        }
    }

    /// The point bytes the host holds of this set.
    pub fn host_bytes(&self) -> u64 {
        vector_bytes(&self.params)
    }

    /// This set without its host copy of the point vectors, for when the devices hold them:
    /// the verifying key and the input parts of A and B (their first `ic` points, which the
    /// smallest MSMs read on the host) stay.
    pub fn without_host_vectors(&self) -> SrsEntry {
        let inputs = self.params.vk.ic.len();
        fn head<A: Clone>(v: &[A], n: usize) -> Arc<Vec<A>> {
            Arc::new(v[..n.min(v.len())].to_vec())
        }
        let p = &self.params;
        let params = Parameters {
            vk: p.vk.clone(),
            h: Arc::new(Vec::new()),
            l: Arc::new(Vec::new()),
            a: head(&p.a, inputs),
            b_g1: head(&p.b_g1, inputs),
            b_g2: head(&p.b_g2, inputs),
        };
        SrsEntry {
            id: self.id.clone(),
            pvk: groth16::prepare_verifying_key(&params.vk),
            params,
            size_bytes: self.size_bytes,
            load_time: self.load_time,
            lens: self.lens,
            host_released: true,
        }
    }
}

fn vector_bytes(params: &Parameters<Bls12>) -> u64 {
    let g1 = params.h.len() + params.l.len() + params.a.len() + params.b_g1.len();
    (g1 * std::mem::size_of::<G1Affine>() + params.b_g2.len() * std::mem::size_of::<G2Affine>())
        as u64
}

/// What GetStatus reports of a parameter set.
#[derive(Clone, Debug)]
pub struct SrsStatus {
    pub circuit_id: String,
    /// Always HOT for sets in memory; sets on disk only are not listed.
    pub resident: bool,
    pub size_bytes: u64,
    /// The point bytes the host holds: size_bytes, or a few once the devices hold the set
    /// and its host copy was released (host_release.rs).
    pub host_bytes: u64,
    /// Jobs currently holding the set.
    pub ref_count: u32,
}

/// Loaded parameter sets by id. Loading one set never blocks use of another; concurrent
/// requests for the same set wait for one load. Clones share the sets.
#[derive(Clone)]
pub struct SrsCache {
    inner: Arc<Sets>,
    /// False for the synthesis workers' handle: a set not resident is an error
    /// (`Error::ParamsNotResident`), never a wait.
    wait: bool,
}

struct Sets {
    dir: PathBuf,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

/// One set's place in the cache. `entry` is only ever locked briefly; `loading` is held for
/// the whole load, so that a second request waits for the first load instead of repeating it.
#[derive(Default)]
struct Slot {
    entry: Mutex<Option<Arc<SrsEntry>>>,
    loading: Mutex<()>,
}

impl SrsCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SrsCache {
            inner: Arc::new(Sets {
                dir: dir.into(),
                slots: Mutex::new(HashMap::new()),
            }),
            wait: true,
        }
    }

    /// A handle on the same sets that never loads: a set not resident gives
    /// `Error::ParamsNotResident` with its id at once.
    pub fn without_waiting(&self) -> SrsCache {
        SrsCache {
            inner: self.inner.clone(),
            wait: false,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The set `id` if it is resident.
    pub fn resident(&self, id: &str) -> Option<Arc<SrsEntry>> {
        let slot = self.inner.slots.lock().get(id).cloned()?;
        let entry = slot.entry.lock().clone();
        entry
    }

    /// The set `id`, loading it with `load` if it is not resident. Returns the entry and
    /// whether this call loaded it. Through a `without_waiting` handle, a set not resident
    /// is `Error::ParamsNotResident` and `load` is not called.
    pub fn get_or_load(
        &self,
        id: &str,
        load: impl FnOnce() -> Result<Parameters<Bls12>>,
    ) -> Result<(Arc<SrsEntry>, bool)> {
        if !self.wait {
            return self
                .resident(id)
                .map(|e| (e, false))
                .ok_or_else(|| Error::ParamsNotResident(id.to_string()));
        }
        let slot = self
            .inner
            .slots
            .lock()
            .entry(id.to_string())
            .or_default()
            .clone();
        if let Some(entry) = slot.entry.lock().clone() {
            return Ok((entry, false));
        }
        let _loading = slot.loading.lock();
        // Loaded by the request we waited for.
        if let Some(entry) = slot.entry.lock().clone() {
            return Ok((entry, false));
        }
        let t = Instant::now();
        let params = load()?;
        let entry = Arc::new(SrsEntry::new(id.to_string(), params, t.elapsed()));
        *slot.entry.lock() = Some(entry.clone());
        tracing::info!(
            id,
            ms = t.elapsed().as_millis() as u64,
            bytes = entry.size_bytes,
            "parameters loaded"
        );
        Ok((entry, true))
    }

    /// Load a set by its circuit id (PreloadSRS). Returns (was already loaded, load time).
    pub fn preload(&self, id: &str) -> Result<(bool, Duration)> {
        let t = Instant::now();
        let (_, loaded_now) = self.by_id(id)?;
        Ok((!loaded_now, t.elapsed()))
    }

    /// Resolve a circuit id to its parameter set.
    pub fn by_id(&self, id: &str) -> Result<(Arc<SrsEntry>, bool)> {
        if let Some(log) = id
            .strip_prefix("synthetic-porep-2^")
            .and_then(|n| n.parse::<u32>().ok())
        {
            if (porep_shaped::MIN_LOG..=porep_shaped::MAX_LOG).contains(&log) {
                return self.synthetic_entry(SyntheticShape::Porep, log);
            }
        }
        if let Some(log) = id
            .strip_prefix("synthetic-2^")
            .and_then(|n| n.parse::<u32>().ok())
        {
            if (MIN_LOG..=MAX_LOG).contains(&log) {
                return self.synthetic_entry(SyntheticShape::Uniform, log);
            }
        }
        // Filecoin circuits: "porep-2k", "winning-32g", "window-64g", "snap-8m", ...
        if let Some(found) = crate::kinds::params::by_circuit_id(self, id) {
            return found;
        }
        Err(Error::invalid(
            "circuit_id",
            format!("unknown parameter set {id:?}"),
        ))
    }

    /// Replace set `id`'s entry, if it is still `held`, with the same set without its host
    /// copy of the point vectors (host_release.rs). Returns the new entry; None when the
    /// slot holds another entry by now (evicted, or already released).
    pub fn release_host(&self, id: &str, held: &Arc<SrsEntry>) -> Option<Arc<SrsEntry>> {
        let slot = self.inner.slots.lock().get(id).cloned()?;
        let mut entry = slot.entry.lock();
        if !entry.as_ref().is_some_and(|e| Arc::ptr_eq(e, held)) || held.host_released {
            return None;
        }
        let released = Arc::new(held.without_host_vectors());
        *entry = Some(released.clone());
        Some(released)
    }

    /// Forget set `id`'s entry if it is `released`, so that the next request loads the set,
    /// host copy and all, from its file (a partition retried on the CPU needs the points).
    pub fn forget_released(&self, id: &str, released: &Arc<SrsEntry>) {
        let Some(slot) = self.inner.slots.lock().get(id).cloned() else {
            return;
        };
        let mut entry = slot.entry.lock();
        if entry.as_ref().is_some_and(|e| Arc::ptr_eq(e, released)) {
            *entry = None;
        }
    }

    /// Drop a set from memory (EvictSRS). Jobs holding it keep their copy until they finish.
    /// Returns the bytes freed, or None when it was not loaded.
    pub fn evict(&self, id: &str) -> Option<u64> {
        let slot = self.inner.slots.lock().remove(id)?;
        let entry = slot.entry.lock().take()?;
        Some(entry.size_bytes)
    }

    pub fn status(&self) -> Vec<SrsStatus> {
        let slots: Vec<_> = self.inner.slots.lock().values().cloned().collect();
        let mut out: Vec<SrsStatus> = slots
            .iter()
            .filter_map(|slot| {
                let e = slot.entry.lock().clone()?;
                Some(SrsStatus {
                    circuit_id: e.id.clone(),
                    resident: true,
                    size_bytes: e.size_bytes,
                    host_bytes: e.host_bytes(),
                    // One reference is the cache's own, one the clone taken here.
                    ref_count: (Arc::strong_count(&e) - 2) as u32,
                })
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }

    /// The prepared verifying key of a synthetic set, read from the head of its file
    /// (generated, and loaded, first if there is none): a client checking proofs of a 47 GB
    /// set needs a kilobyte of it.
    pub fn synthetic_verifying_key(
        &self,
        shape: SyntheticShape,
        log_size: u32,
    ) -> Result<PreparedVerifyingKey<Bls12>> {
        let path = synthetic_params_file(self.dir(), shape, log_size);
        if !path.exists() {
            self.synthetic_set(shape, log_size)?;
        }
        let file = File::open(&path)
            .map_err(|e| Error::Params(format!("opening {}: {e}", path.display())))?;
        let vk = groth16::VerifyingKey::<Bls12>::read(BufReader::new(file))
            .map_err(|e| Error::Params(format!("verifying key of {}: {e}", path.display())))?;
        Ok(groth16::prepare_verifying_key(&vk))
    }

    /// The uniform synthetic circuit's parameters for 2^log constraints.
    pub fn synthetic(&self, log_size: u32) -> Result<Arc<SrsEntry>> {
        self.synthetic_set(SyntheticShape::Uniform, log_size)
    }

    /// A synthetic set, generated on first use (paramgen: on the GPU where there is one).
    pub fn synthetic_set(&self, shape: SyntheticShape, log_size: u32) -> Result<Arc<SrsEntry>> {
        Ok(self.synthetic_entry(shape, log_size)?.0)
    }

    fn synthetic_entry(
        &self,
        shape: SyntheticShape,
        log_size: u32,
    ) -> Result<(Arc<SrsEntry>, bool)> {
        let path = synthetic_params_file(self.dir(), shape, log_size);
        self.get_or_load(&shape.srs_id(log_size), || {
            if !path.exists() {
                generate_synthetic(shape, log_size, &path, Engine::from_env())?;
            }
            read_params(&path)
        })
    }
}

/// Write a parameter file under a temporary name and rename it into place.
pub fn write_params_atomic(params: &Parameters<Bls12>, path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Params(format!("creating {}: {e}", dir.display())))?;
    let tmp = crate::atomic_file::temporary_path(path);
    let io = |e: std::io::Error| Error::Params(format!("writing {}: {e}", tmp.display()));
    let file = File::create(&tmp).map_err(io)?;
    let mut w = BufWriter::new(file);
    params.write(&mut w).map_err(io)?;
    let file = w.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(())
}

/// Read a parameter file (points are trusted: files are ours or checked by their digest),
/// in parallel (read.rs).
pub fn read_params(path: &Path) -> Result<Parameters<Bls12>> {
    read_parameter_file(path).map_err(|e| Error::Params(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::synthetic::SyntheticCircuit;

    #[test]
    fn a_handle_that_does_not_wait_reports_sets_not_resident_and_status_counts_holders() {
        let dir = tempfile::tempdir().unwrap();
        let srs = SrsCache::new(dir.path());
        let id = SyntheticCircuit::srs_id(6);
        let quick = srs.without_waiting();
        match quick.synthetic(6) {
            Err(Error::ParamsNotResident(named)) => assert_eq!(named, id),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("nothing is loaded yet"),
        }
        assert!(srs.status().is_empty(), "looking up loads nothing");
        let held = srs.synthetic(6).unwrap();
        let found = quick.synthetic(6).unwrap();
        assert!(Arc::ptr_eq(&held, &found), "the handles share the sets");
        let status = srs.status();
        assert_eq!(status.len(), 1);
        assert_eq!(
            (status[0].circuit_id.as_str(), status[0].ref_count),
            (id.as_str(), 2)
        );
        drop((held, found));
        assert_eq!(srs.status()[0].ref_count, 0);
        assert!(srs.evict(&id).is_some());
        assert!(srs.resident(&id).is_none());
        assert!(matches!(
            quick.synthetic(6),
            Err(Error::ParamsNotResident(_))
        ));
    }
}

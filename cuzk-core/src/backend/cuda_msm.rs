//! MSMs for the CUDA backend: G1 and G2 Pippenger on the GPU (cuzk_kernels::msm), with the
//! parameters' base vectors kept resident on the device.
//!
//! Residency: bases arrive with the parameter set's id and the query they come from. The
//! first MSM over a (srs_id, query) uploads the vector and keeps it while the device's
//! resident budget allows, so a warm proof uploads only scalars. Ad-hoc bases are never
//! kept. When a new vector does not fit, the least recently used vectors are dropped first;
//! one that can never fit is uploaded per call instead. `evict` (EvictSRS) frees a set.
//!
//! Folding: a vector may be kept with precomputed multiples 2^(c k) P (cuzk_kernels::msm::Fold;
//! fewer bucket additions and one bucket reduction per MSM). A vector is uploaded plain the
//! first time; at its second use (by then a proof has uploaded every vector of its
//! parameter set once) it is folded into as many copies as the budget's free room allows,
//! once. So folding only ever takes memory that the plain vectors of the sets in use leave
//! free, and never evicts them: with a 32 GiB PoRep's vectors (~70 GB plain on an H200) there
//! is no room and nothing folds; a small set (WinningPoSt, tests) folds fully.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_kernels::msm::{self, Bases, DeviceBases, MsmGroup, G1, G2};
use cuzk_kernels::{DeviceScalars, GpuDevice};

use super::device_error;
use crate::backend::{cpu, BackendError, BegunG1, G1Bases, G2Bases, Query};
use crate::between::{Between, Nothing};

/// Share of a device's memory that resident bases may take by default; the rest is the
/// MSM and NTT working space (an MSM of 2^27 in G1 needs about 12 GB of it).
const DEFAULT_RESIDENT_SHARE: f64 = 0.6;

/// MSMs of at most this many scalars run on the host: a Groth16 proof's input parts (B's
/// inputs are often just the constant one) cost a fixed ~0.5 ms (G1) to ~1 ms (G2) of
/// launches and synchronisations on the device, against a few scalar multiplications here
/// (blst's multi-scalar multiplication: ~0.5 ms for 16 in G1, a G2 one ~3 times a G1's).
/// A 2^27 PoRep partition's A has 9 inputs: on the device they took 4.4 ms profiled
/// (kernels/NOTES.md part 12).
const HOST_MSM_MAX_G1: usize = 16;
const HOST_MSM_MAX_G2: usize = 4;

pub fn msm_g1(
    dev: &GpuDevice,
    bases: G1Bases<'_>,
    scalars: &[Scalar],
) -> Result<G1Projective, BackendError> {
    check_shape(bases.len, scalars.len())?;
    if scalars.len() <= HOST_MSM_MAX_G1 {
        return cpu::msm_g1(bases.host(scalars.len())?, scalars);
    }
    match resident::<G1>(dev, &bases)? {
        Some(d) => msm::msm_g1(dev, Bases::Device(&d), scalars),
        None => msm::msm_g1(dev, Bases::Host(bases.host(scalars.len())?), scalars),
    }
    .map_err(device_error)
}

pub fn msm_g2(
    dev: &GpuDevice,
    bases: G2Bases<'_>,
    scalars: &[Scalar],
) -> Result<G2Projective, BackendError> {
    check_shape(bases.len, scalars.len())?;
    if scalars.len() <= HOST_MSM_MAX_G2 {
        return cpu::msm_g2(bases.host(scalars.len())?, scalars);
    }
    match resident::<G2>(dev, &bases)? {
        Some(d) => msm::msm_g2(dev, Bases::Device(&d), scalars),
        None => msm::msm_g2(dev, Bases::Host(bases.host(scalars.len())?), scalars),
    }
    .map_err(device_error)
}

/// As [`msm_g1`], with the scalars in device memory (the H polynomial, the aux assignment
/// and its density selections).
pub fn msm_g1_device_scalars(
    dev: &GpuDevice,
    bases: G1Bases<'_>,
    scalars: &DeviceScalars,
) -> Result<G1Projective, BackendError> {
    msm_g1_device_scalars_between(dev, bases, scalars, &mut Nothing)
}

/// As [`msm_g1_device_scalars`], letting `between`'s work in between the MSM's stages.
pub fn msm_g1_device_scalars_between(
    dev: &GpuDevice,
    bases: G1Bases<'_>,
    scalars: &DeviceScalars,
    between: &mut dyn Between,
) -> Result<G1Projective, BackendError> {
    check_shape(bases.len, scalars.len())?;
    let mut let_in = LetIn(between);
    match resident::<G1>(dev, &bases)? {
        Some(d) => {
            msm::msm_g1_device_scalars_letting_in(dev, Bases::Device(&d), scalars, &mut let_in)
        }
        None => {
            let points = bases.host(scalars.len())?;
            msm::msm_g1_device_scalars_letting_in(dev, Bases::Host(points), scalars, &mut let_in)
        }
    }
    .map_err(device_error)
}

/// As [`msm_g1_device_scalars_between`], begun: the first stage's sort queued now, on the
/// device's side stream, beside whatever the caller runs before `finish`.
pub fn msm_g1_device_scalars_begin<'a>(
    dev: &'a GpuDevice,
    bases: G1Bases<'a>,
    scalars: DeviceScalars,
) -> Result<Box<dyn BegunG1 + 'a>, BackendError> {
    check_shape(bases.len, scalars.len())?;
    let resident = resident::<G1>(dev, &bases)?;
    let begun = match &resident {
        Some(d) => msm::BegunMsm::begin(dev, Bases::Device(d), &scalars),
        None => msm::BegunMsm::begin(dev, Bases::Host(bases.host(scalars.len())?), &scalars),
    }
    .map_err(device_error)?;
    Ok(Box::new(BegunOnDevice {
        dev,
        bases,
        resident,
        begun,
        scalars,
    }))
}

/// A begun MSM and what it reads: the resident bases are held (never dropped to make room)
/// until it is finished.
struct BegunOnDevice<'a> {
    dev: &'a GpuDevice,
    bases: G1Bases<'a>,
    resident: Option<Arc<DeviceBases<G1>>>,
    begun: msm::BegunMsm<G1>,
    scalars: DeviceScalars,
}

impl BegunG1 for BegunOnDevice<'_> {
    fn advance(&mut self) -> Result<(), BackendError> {
        self.begun.advance(self.dev).map_err(device_error)
    }

    fn is_ahead(&self) -> bool {
        self.begun.is_ahead()
    }

    fn finish(self: Box<Self>, between: &mut dyn Between) -> Result<G1Projective, BackendError> {
        let BegunOnDevice {
            dev,
            bases,
            resident,
            begun,
            scalars,
        } = *self;
        let mut let_in = LetIn(between);
        match &resident {
            Some(d) => begun.finish(dev, Bases::Device(d), &scalars, &mut let_in),
            None => {
                let points = bases.host(scalars.len())?;
                begun.finish(dev, Bases::Host(points), &scalars, &mut let_in)
            }
        }
        .map_err(device_error)
    }
}

/// The kernels' pause points, answered by the step's [`Between`] (which counts the time).
struct LetIn<'a>(&'a mut dyn Between);

impl msm::LetIn for LetIn<'_> {
    fn waiting(&mut self) -> bool {
        self.0.waiting()
    }
    fn run(&mut self) {
        self.0.run();
    }
}

/// As [`msm_g1_device_scalars`], in G2.
pub fn msm_g2_device_scalars(
    dev: &GpuDevice,
    bases: G2Bases<'_>,
    scalars: &DeviceScalars,
) -> Result<G2Projective, BackendError> {
    check_shape(bases.len, scalars.len())?;
    match resident::<G2>(dev, &bases)? {
        Some(d) => msm::msm_g2_device_scalars(dev, Bases::Device(&d), scalars),
        None => {
            let points = bases.host(scalars.len())?;
            msm::msm_g2_device_scalars(dev, Bases::Host(points), scalars)
        }
    }
    .map_err(device_error)
}

/// Frees every vector kept for `srs_id` on this device (EvictSRS).
pub fn evict(dev: &GpuDevice, srs_id: &str) {
    let cache = device_cache(dev);
    let mut cache = lock(&cache);
    cache.entries.retain(|(id, _), _| id != srs_id);
}

/// Device bytes held by resident bases on this device.
pub fn resident_bytes(dev: &GpuDevice) -> usize {
    lock(&device_cache(dev)).bytes()
}

/// Device bytes held by one parameter set's resident vectors on this device.
pub fn resident_set_bytes(dev: &GpuDevice, srs_id: &str) -> usize {
    let cache = device_cache(dev);
    let cache = lock(&cache);
    cache
        .entries
        .iter()
        .filter(|((id, _), _)| id == srs_id)
        .map(|(_, e)| e.bytes)
        .sum()
}

/// Whether every vector of `srs_id` in `queries` is resident in its final form (its
/// folding considered; folding re-uploads from the host copy); if so they are kept from
/// now on, dropped only by `evict` (Backend::keep_for_release). An empty vector needs
/// nothing. (The length is checked, not the fingerprint: the caller's host copy is the one
/// these vectors were uploaded from, by the proofs that made them resident.)
pub fn keep_for_release(dev: &GpuDevice, srs_id: &str, queries: &[(Query, usize)]) -> bool {
    let cache = device_cache(dev);
    let mut cache = lock(&cache);
    let held = |e: &Entry, len: usize| e.fold_considered && e.points == len;
    let all = queries.iter().filter(|(_, len)| *len > 0).all(|(q, len)| {
        cache
            .entries
            .get(&(srs_id.to_owned(), *q))
            .is_some_and(|e| held(e, *len))
    });
    if all {
        for (q, _) in queries {
            if let Some(e) = cache.entries.get_mut(&(srs_id.to_owned(), *q)) {
                e.kept = true;
            }
        }
    }
    all
}

/// Sets the resident budget of this device in bytes (default: 60% of its memory).
/// Vectors already resident beyond a lowered budget are dropped, least recently used first
/// (those kept for a released set excepted).
pub fn set_resident_budget(dev: &GpuDevice, bytes: usize) {
    let cache = device_cache(dev);
    let mut cache = lock(&cache);
    cache.budget = Some(bytes);
    cache.shrink_to(bytes);
}

fn check_shape(points: usize, scalars: usize) -> Result<(), BackendError> {
    if points < scalars {
        return Err(BackendError::MsmShape { points, scalars });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------

enum Resident {
    G1(Arc<DeviceBases<G1>>),
    G2(Arc<DeviceBases<G2>>),
}

struct Entry {
    bases: Resident,
    bytes: usize,
    /// First and last point as uploaded: a different vector under the same key (a
    /// parameter file replaced under the same id) is caught and re-uploaded.
    fingerprint: Vec<u8>,
    last_use: u64,
    /// Whether folding was considered (at the second use; done or not, only once).
    fold_considered: bool,
    /// The vector's length in points.
    points: usize,
    /// Kept for a set whose host copy was released (keep_for_release): never dropped to
    /// make room, since nothing on the host could upload it again.
    kept: bool,
}

#[derive(Default)]
struct DeviceCache {
    entries: HashMap<(String, Query), Entry>,
    budget: Option<usize>,
    clock: u64,
}

impl DeviceCache {
    fn bytes(&self) -> usize {
        self.entries.values().map(|e| e.bytes).sum()
    }

    fn shrink_to(&mut self, limit: usize) {
        while self.bytes() > limit {
            let Some(oldest) = self
                .entries
                .iter()
                .filter(|(_, e)| !e.kept)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }
}

type SharedCache = Arc<Mutex<DeviceCache>>;

fn device_cache(dev: &GpuDevice) -> SharedCache {
    static CACHES: OnceLock<Mutex<HashMap<usize, SharedCache>>> = OnceLock::new();
    let all = CACHES.get_or_init(Default::default);
    lock(all).entry(dev.ordinal()).or_default().clone()
}

/// A cache's lock, past a poisoning panic. (Also the CUDA backend's density cache.)
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Entries are inserted whole; a panic elsewhere leaves nothing half-written.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Per-group access to the cache's typed entries.
trait Residency: MsmGroup + Sized {
    fn wrap(d: Arc<DeviceBases<Self>>) -> Resident;
    fn unwrap(r: &Resident) -> Option<Arc<DeviceBases<Self>>>;
}

impl Residency for G1 {
    fn wrap(d: Arc<DeviceBases<G1>>) -> Resident {
        Resident::G1(d)
    }
    fn unwrap(r: &Resident) -> Option<Arc<DeviceBases<G1>>> {
        match r {
            Resident::G1(d) => Some(d.clone()),
            Resident::G2(_) => None,
        }
    }
}

impl Residency for G2 {
    fn wrap(d: Arc<DeviceBases<G2>>) -> Resident {
        Resident::G2(d)
    }
    fn unwrap(r: &Resident) -> Option<Arc<DeviceBases<G2>>> {
        match r {
            Resident::G2(d) => Some(d.clone()),
            Resident::G1(_) => None,
        }
    }
}

fn fingerprint<A: Copy>(points: &[A]) -> Vec<u8> {
    let bytes = |p: &A| {
        // SAFETY: the affine points are plain limb structs (blst_p1_affine / blst_p2_affine).
        unsafe { std::slice::from_raw_parts(p as *const A as *const u8, std::mem::size_of::<A>()) }
            .to_vec()
    };
    let mut f = (points.len() as u64).to_le_bytes().to_vec();
    if let (Some(a), Some(b)) = (points.first(), points.last()) {
        f.extend(bytes(a));
        f.extend(bytes(b));
    }
    f
}

/// The resident copy of the bases for (srs_id, query), uploading it if it fits the budget;
/// None where the bases are ad hoc or too large to keep, or released and not held here.
fn resident<G: Residency>(
    dev: &GpuDevice,
    bases: &crate::backend::Bases<'_, G::Affine>,
) -> Result<Option<Arc<DeviceBases<G>>>, BackendError> {
    let (srs_id, query, points) = (bases.srs_id, bases.query, bases.points);
    if query == Query::Adhoc || bases.len == 0 {
        return Ok(None);
    }
    let cache = device_cache(dev);
    let mut cache = lock(&cache);
    cache.clock += 1;
    let now = cache.clock;
    let key = (srs_id.to_owned(), query);
    if bases.is_released() {
        // No host copy to compare or upload: the vector kept for the released set, if any.
        return Ok(cache.entries.get_mut(&key).and_then(|e| {
            e.last_use = now;
            (e.points == bases.len)
                .then(|| G::unwrap(&e.bases))
                .flatten()
        }));
    }
    let print = fingerprint(points);
    let budget = match cache.budget {
        Some(b) => b,
        None => {
            let total = dev.total_mem().map_err(device_error)?;
            (total as f64 * DEFAULT_RESIDENT_SHARE) as usize
        }
    };

    // A hit (the same vector under this key): (bases, whether this is a repeat use).
    let hit = cache
        .entries
        .get_mut(&key)
        .filter(|e| e.fingerprint == print)
        .and_then(|e| {
            e.last_use = now;
            let d = G::unwrap(&e.bases)?;
            Some((d, std::mem::replace(&mut e.fold_considered, true)))
        });
    match hit {
        Some((d, repeat)) if repeat || d.fold().is_some() => return Ok(Some(d)),
        Some((d, _)) => {
            return Ok(fold_on_second_use(
                dev, &mut cache, key, d, points, budget, now,
            ))
        }
        // Missing, or another vector under this key: (re)upload it.
        None => cache.entries.remove(&key),
    };

    let plain = std::mem::size_of_val(points);
    if plain > budget {
        return Ok(None);
    }
    cache.shrink_to(budget - plain);
    let d = upload(dev, points, plain);
    if let Some(d) = &d {
        insert::<G>(&mut cache, key, d.clone(), print, points.len(), now, false);
    }
    Ok(d)
}

/// The second use of a plain resident vector: folded into its own bytes plus the room the
/// budget has left, if that holds two copies or more; else kept as it is.
fn fold_on_second_use<G: Residency>(
    dev: &GpuDevice,
    cache: &mut DeviceCache,
    key: (String, Query),
    plain: Arc<DeviceBases<G>>,
    points: &[G::Affine],
    budget: usize,
    now: u64,
) -> Option<Arc<DeviceBases<G>>> {
    let room = plain.bytes() + budget.saturating_sub(cache.bytes());
    if msm::plan_fold::<G>(points.len(), room).is_none() {
        return Some(plain);
    }
    // The plain copy goes first, so that the folded one can take its memory.
    let print = cache.entries.remove(&key).map(|e| e.fingerprint)?;
    drop(plain);
    let d = upload(dev, points, room);
    if let Some(d) = &d {
        insert::<G>(cache, key, d.clone(), print, points.len(), now, true);
    }
    d
}

/// The vector on the device, folded into at most `max_bytes`; None when the device is out of
/// memory right now (the MSM then runs from host bases and nothing is kept).
fn upload<G: Residency>(
    dev: &GpuDevice,
    points: &[G::Affine],
    max_bytes: usize,
) -> Option<Arc<DeviceBases<G>>> {
    DeviceBases::<G>::upload_folded(dev, points, max_bytes)
        .ok()
        .map(Arc::new)
}

fn insert<G: Residency>(
    cache: &mut DeviceCache,
    key: (String, Query),
    d: Arc<DeviceBases<G>>,
    fingerprint: Vec<u8>,
    points: usize,
    now: u64,
    fold_considered: bool,
) {
    let bytes = d.bytes();
    cache.entries.insert(
        key,
        Entry {
            bases: G::wrap(d),
            bytes,
            fingerprint,
            last_use: now,
            fold_considered,
            points,
            kept: false,
        },
    );
}

//! Multi-scalar multiplication in G1 and G2 of BLS12-381 on the GPU (Pippenger).
//!
//! Bases are blstrs affine points exactly as they lie in memory (blst's Montgomery form,
//! infinity as x = y = 0), uploaded with no conversion. Scalars are `blstrs::Scalar`
//! (Montgomery form); the device converts them to canonical integers.
//!
//! One MSM of n points, per chunk of the input (see [`plan_chunk`]):
//! 1. signed c-bit window digits, counted per bucket (as the scalars' upload lands);
//! 2. an exclusive scan of the counts, then two passes (by ranges of buckets, then by
//!    bucket) sort the point indices by bucket (cuda/msm/sort.cuh);
//! 3. equal-length segments of the sorted list are summed per bucket in XYZZ coordinates
//!    (one thread per segment; the pieces of buckets cut by segment boundaries are joined
//!    by a segmented reduction in levels, so a bucket of millions of entries, as bit-heavy
//!    Filecoin witnesses make, costs no more than many small ones);
//! 4. each window's sum_d d * B_d is reduced on the device in levels of L buckets;
//! 5. the host combines the handful of remaining points (levels, windows, chunks) with
//!    blstrs, so the result is a blstrs projective point.
//!
//! Device memory: a chunk's working set is sized from the free memory at the time of the
//! call; an MSM larger than that runs as several chunks whose results add up.
//!
//! Bit-heavy scalar vectors (Filecoin witnesses: ~98% zeros and ones) first go through
//! [`bits`]: the ones' bases are summed by batch addition and only the others run the steps
//! above, where a cost estimate says that pays (`CUZK_MSM_BITS=0` turns it off).

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{
    result, sys, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaViewMut, DeviceRepr,
    LaunchConfig, PushKernelArg,
};

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::ntt::{DeviceScalars, Limbs, ELEM_BYTES};

mod ahead;
mod bases;
mod bits;
mod buckets;
mod plan;
mod scan;
mod select;
mod stages;

pub use ahead::BegunMsm;
use bases::*;
pub use bases::{plan_fold, DeviceBases, Fold};
pub use bits::{count_bits, BitCounts, BitsSplit};
use buckets::*;
pub use plan::window_bits;
use plan::*;
use scan::exclusive_scan;
pub use select::{
    select_scalars, select_scalars_in, upload_packed, upload_packed_pinned, DeviceDensity,
    PackedParts, PackedWord,
};
use stages::*;
pub use stages::{LetIn, NoLetIn};

/// Buckets per reduction segment: each level divides the points left by this. A power of
/// two, so that the host multiplies by it with doublings. The reduction is bound by its
/// longest chain of dependent additions (about levels * 2L plus the sums of each level's
/// acc), not by its total work: with L = 32 a G2 2^22 MSM spent 26 ms here for 1M
/// additions, about 370 in a chain; L = 8 cut the chain to about 170, L = 4 to about 130
/// (and gives the first level twice the threads).
const REDUCE_L: u32 = 4;
/// The first level's segment where the sets hold at least REDUCE_WIDE_FROM buckets in all
/// (H's 3 x 2^23 at 2^27): there the level has threads to spare and is bound by its work,
/// and a wider first segment leaves the later levels (about a third of the work at L = 4)
/// 16 times fewer points instead of 4 times, for ~1/8 more additions in the first.
/// `CUZK_MSM_REDUCE_WIDE=0` keeps L = 4 throughout (the A/B), `=1` makes every first level
/// wide (the tests).
const REDUCE_L_WIDE: u32 = 16;
const REDUCE_WIDE_FROM: u64 = 1 << 22;

/// One of the two groups the prover runs MSMs in.
pub trait MsmGroup {
    type Affine: Copy;
    type Projective: Copy;
    /// Kernel name suffix ("g1", "g2").
    const NAME: &'static str;
    /// u64 limbs of one affine point / one XYZZ point.
    const AFFINE_U64: usize;
    const XYZZ_U64: usize;
    fn identity() -> Self::Projective;
    fn add(a: &Self::Projective, b: &Self::Projective) -> Self::Projective;
    fn double(a: &Self::Projective) -> Self::Projective;
    /// blst's projective point from its raw limbs (x, y, z; Jacobian; Montgomery form),
    /// as the kernels write it.
    fn from_jacobian(limbs: &[u64]) -> Self::Projective;
}

pub struct G1;
pub struct G2;

/// A blstrs projective point from raw limbs. blstrs' projective types are
/// #[repr(transparent)] over blst_p1 / blst_p2, #[repr(C)] structs of x, y, z made of u64
/// limbs, so the bytes are the point; `P` must be one of those two types.
fn projective_from_limbs<P: Copy>(limbs: &[u64]) -> P {
    assert_eq!(limbs.len() * 8, std::mem::size_of::<P>());
    // SAFETY: size checked; any limb pattern is a valid (if perhaps not reduced) blst point,
    // and the kernels write reduced coordinates.
    unsafe { std::ptr::read_unaligned(limbs.as_ptr() as *const P) }
}

impl MsmGroup for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    const NAME: &'static str = "g1";
    const AFFINE_U64: usize = 12;
    const XYZZ_U64: usize = 24;
    fn identity() -> G1Projective {
        projective_from_limbs(&[0; 18])
    }
    fn add(a: &G1Projective, b: &G1Projective) -> G1Projective {
        a + b
    }
    fn double(a: &G1Projective) -> G1Projective {
        a + a
    }
    fn from_jacobian(l: &[u64]) -> G1Projective {
        projective_from_limbs(l)
    }
}

impl MsmGroup for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    const NAME: &'static str = "g2";
    const AFFINE_U64: usize = 24;
    const XYZZ_U64: usize = 48;
    fn identity() -> G2Projective {
        projective_from_limbs(&[0; 36])
    }
    fn add(a: &G2Projective, b: &G2Projective) -> G2Projective {
        a + b
    }
    fn double(a: &G2Projective) -> G2Projective {
        a + a
    }
    fn from_jacobian(l: &[u64]) -> G2Projective {
        projective_from_limbs(l)
    }
}

/// Where an MSM's bases are: still on the host (uploaded chunk by chunk for this call), or
/// resident on the device.
pub enum Bases<'a, G: MsmGroup> {
    Host(&'a [G::Affine]),
    Device(&'a DeviceBases<G>),
}

// By hand: a derive would ask G itself to be Copy; the variants are references.
impl<G: MsmGroup> Clone for Bases<'_, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: MsmGroup> Copy for Bases<'_, G> {}

impl<G: MsmGroup> Bases<'_, G> {
    fn len(&self) -> usize {
        match self {
            Bases::Host(p) => p.len(),
            Bases::Device(d) => d.len,
        }
    }
}

fn scalar_limbs(scalars: &[Scalar]) -> &[Limbs] {
    const _: () = assert!(std::mem::size_of::<Scalar>() == std::mem::size_of::<Limbs>());
    const _: () = assert!(std::mem::align_of::<Scalar>() == std::mem::align_of::<Limbs>());
    // SAFETY: Scalar is #[repr(transparent)] over blst_fr, a #[repr(C)] [u64; 4].
    unsafe { std::slice::from_raw_parts(scalars.as_ptr() as *const Limbs, scalars.len()) }
}

/// sum_i scalars[i] * bases[i] in G1. `bases.len() >= scalars.len()`; extra bases ignored.
pub fn msm_g1(dev: &GpuDevice, bases: Bases<'_, G1>, scalars: &[Scalar]) -> Result<G1Projective> {
    msm::<G1>(dev, bases, Scalars::Host(scalars))
}

/// sum_i scalars[i] * bases[i] in G2.
pub fn msm_g2(dev: &GpuDevice, bases: Bases<'_, G2>, scalars: &[Scalar]) -> Result<G2Projective> {
    msm::<G2>(dev, bases, Scalars::Host(scalars))
}

/// As [`msm_g1`], with scalars (Fr, Montgomery form) already in device memory: the H
/// polynomial the NTTs left there, or the aux assignment uploaded once for the L, A and B
/// MSMs (with [`select_scalars`]). The vector is left as it is.
pub fn msm_g1_device_scalars(
    dev: &GpuDevice,
    bases: Bases<'_, G1>,
    scalars: &DeviceScalars,
) -> Result<G1Projective> {
    msm::<G1>(dev, bases, Scalars::Device(scalars))
}

/// As [`msm_g1_device_scalars`], letting `let_in`'s work in at the MSM's pause points
/// (between the stages of an MSM of 2^24 scalars or more, and between chunks): the daemon's
/// H MSM, during which a WinningPoSt would otherwise wait ~0.8 s at 2^27.
pub fn msm_g1_device_scalars_letting_in(
    dev: &GpuDevice,
    bases: Bases<'_, G1>,
    scalars: &DeviceScalars,
    let_in: &mut dyn LetIn,
) -> Result<G1Projective> {
    msm_letting_in::<G1>(
        dev,
        bases,
        Scalars::Device(scalars),
        BitsSplit::from_env(),
        let_in,
    )
}

/// As [`msm_g1_device_scalars`], in G2.
pub fn msm_g2_device_scalars(
    dev: &GpuDevice,
    bases: Bases<'_, G2>,
    scalars: &DeviceScalars,
) -> Result<G2Projective> {
    msm::<G2>(dev, bases, Scalars::Device(scalars))
}

/// The MSM with the bit split chosen by the caller instead of by `CUZK_MSM_BITS` (tests force
/// it on every input; benchmarks time it on and off in one run). The entry points above are
/// this with [`BitsSplit::from_env`].
pub fn msm_with_split<G: MsmGroup>(
    dev: &GpuDevice,
    bases: Bases<'_, G>,
    scalars: Scalars<'_>,
    split: BitsSplit,
) -> Result<G::Projective> {
    msm_letting_in::<G>(dev, bases, scalars, split, &mut NoLetIn)
}

fn msm_letting_in<G: MsmGroup>(
    dev: &GpuDevice,
    bases: Bases<'_, G>,
    scalars: Scalars<'_>,
    split: BitsSplit,
    let_in: &mut dyn LetIn,
) -> Result<G::Projective> {
    if bases.len() < scalars.len() {
        return Err(GpuError::Invalid(format!(
            "msm: {} bases for {} scalars",
            bases.len(),
            scalars.len()
        )));
    }
    if scalars.len() == 0 {
        return Ok(G::identity());
    }
    dev.ctx().bind_to_thread()?;
    let uploaded;
    let scalars = match bits::try_split::<G>(dev, &bases, scalars, split)? {
        bits::Outcome::Done(p) => return Ok(p),
        // The split uploaded host scalars to classify them, then found it did not pay.
        bits::Outcome::Pippenger(Some(d)) => {
            uploaded = d;
            Scalars::Device(&uploaded)
        }
        bits::Outcome::Pippenger(None) => scalars,
    };
    pippenger::<G>(dev, bases, scalars, let_in)
}

/// Where an MSM's scalars are (blstrs Montgomery form either way).
#[derive(Clone, Copy)]
pub enum Scalars<'a> {
    Host(&'a [Scalar]),
    Device(&'a DeviceScalars),
}

impl Scalars<'_> {
    fn len(&self) -> usize {
        match self {
            Scalars::Host(s) => s.len(),
            Scalars::Device(d) => d.len(),
        }
    }

    fn range(&self, start: usize, end: usize) -> Self {
        match *self {
            Scalars::Host(s) => Scalars::Host(&s[start..end]),
            Scalars::Device(d) => Scalars::Device(d),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Running

struct Kernels {
    count: CudaFunction,
    partition: CudaFunction,
    place: CudaFunction,
    scan_blocks: CudaFunction,
    scan_totals: CudaFunction,
    scan_add: CudaFunction,
    accumulate: CudaFunction,
    join_heads: CudaFunction,
    reduce_level: CudaFunction,
    sum_level: CudaFunction,
    to_jacobian: CudaFunction,
}

impl Kernels {
    fn load<G: MsmGroup>(module: &Arc<CudaModule>) -> Result<Self> {
        let f = |name: &str| module.load_function(name);
        let g = |name: &str| module.load_function(&format!("{name}_{}", G::NAME));
        Ok(Kernels {
            count: f("msm_count_digits")?,
            partition: f("msm_partition_digits")?,
            place: f("msm_place_digits")?,
            scan_blocks: f("msm_scan_blocks")?,
            scan_totals: f("msm_scan_totals")?,
            scan_add: f("msm_scan_add")?,
            accumulate: g("msm_accumulate")?,
            join_heads: g("msm_join_heads")?,
            reduce_level: g("msm_reduce_level")?,
            sum_level: g("msm_sum_level")?,
            to_jacobian: g("msm_xyzz_to_jacobian")?,
        })
    }
}

fn grid(threads: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (threads.div_ceil(block).max(1), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Phase timings on stderr when CUZK_MSM_PROFILE is set (synchronises between phases).
struct Profile {
    on: bool,
    t: Instant,
    stream: Arc<CudaStream>,
    line: String,
}

impl Profile {
    fn new(stream: &Arc<CudaStream>, what: String) -> Self {
        Profile {
            on: std::env::var_os("CUZK_MSM_PROFILE").is_some(),
            t: Instant::now(),
            stream: stream.clone(),
            line: what,
        }
    }
    fn mark(&mut self, phase: &str) -> Result<()> {
        if self.on {
            self.stream.synchronize()?;
            let now = Instant::now();
            let ms = (now - self.t).as_secs_f64() * 1e3;
            self.line.push_str(&format!(" {phase}={ms:.2}"));
            self.t = now;
        }
        Ok(())
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        if self.on {
            eprintln!("MSM_PROFILE {}", self.line);
        }
    }
}

fn msm<G: MsmGroup>(
    dev: &GpuDevice,
    bases: Bases<'_, G>,
    scalars: Scalars<'_>,
) -> Result<G::Projective> {
    msm_with_split::<G>(dev, bases, scalars, BitsSplit::from_env())
}

/// Pippenger over every scalar (no bit split), in chunks that fit the device's free memory.
fn pippenger<G: MsmGroup>(
    dev: &GpuDevice,
    bases: Bases<'_, G>,
    scalars: Scalars<'_>,
    let_in: &mut dyn LetIn,
) -> Result<G::Projective> {
    if bases.len() < scalars.len() {
        return Err(GpuError::Invalid(format!(
            "msm: {} bases for {} scalars",
            bases.len(),
            scalars.len()
        )));
    }
    let n = scalars.len();
    if n == 0 {
        return Ok(G::identity());
    }
    dev.ctx().bind_to_thread()?;
    let kernels = Kernels::load::<G>(&dev.module("msm")?)?;
    let free = dev.free_mem()?;
    let mut chunk = plan_chunk::<G>(&bases, n, free).ok_or_else(|| {
        GpuError::Invalid(format!("msm: too little free device memory ({free} bytes)"))
    })?;
    // Tests force the chunked path with a small cap.
    if let Some(cap) = std::env::var("CUZK_MSM_MAX_CHUNK")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        chunk = chunk.min(cap.max(1));
    }

    let mut total = G::identity();
    let mut start = 0;
    while start < n {
        let end = (start + chunk).min(n);
        let part = scalars.range(start, end);
        match msm_chunk::<G>(dev, &kernels, &bases, start, end - start, part, let_in) {
            Ok(part) => {
                total = G::add(&total, &part);
                start = end;
                if start < n {
                    pause(dev, None, let_in)?;
                }
            }
            // Memory taken by someone else since we planned: retry this chunk smaller.
            Err(GpuError::Driver(e))
                if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY && chunk > 1024 =>
            {
                dev.stream().synchronize()?;
                chunk = chunk.div_ceil(2);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

/// The MSM of one chunk of n scalars against bases[offset..offset + n]: `scalars` holds
/// just the chunk's when they are on the host, the whole vector when on the device.
fn msm_chunk<G: MsmGroup>(
    dev: &GpuDevice,
    k: &Kernels,
    bases: &Bases<'_, G>,
    offset: usize,
    n: usize,
    scalars: Scalars<'_>,
    let_in: &mut dyn LetIn,
) -> Result<G::Projective> {
    let stream = dev.stream();
    dev.ctx().bind_to_thread()?;
    let plan = Plan::new(bases, n);
    let Plan { c, nwin, sets, .. } = plan;
    let m = buckets_per_window(c);
    let nb = plan.buckets();
    let (points, stride): (u64, usize);
    let uploaded;
    // Bases: the resident vector from `offset`, or this chunk uploaded now.
    match bases {
        Bases::Device(d) => {
            points = d.buf.device_ptr() + (offset * G::AFFINE_U64 * 8) as u64;
            stride = d.len;
        }
        Bases::Host(p) => {
            uploaded = upload_points::<G>(dev, &p[offset..offset + n])?;
            points = uploaded.device_ptr();
            stride = n;
        }
    }
    let lay = MsmLayout {
        n: n as u32,
        c,
        nwin,
        buckets_per_window: m,
        fold: plan.fold,
        stride: stride as u32,
    };
    let mut prof = Profile::new(
        stream,
        format!("{} n={n} c={c} fold={} sets={sets}", G::NAME, plan.fold),
    );

    // 1. Scalars through part 1's pinned double-buffered staging (about 3x a pageable copy
    // here); as each piece lands, the device makes its scalars canonical and counts their
    // digits per bucket while the host stages the next piece. Device scalars are copied
    // (device to device): the kernels make their copy canonical in place, the caller's
    // vector stays as it was.
    // 2-3. Sort and bucket sums (stages.rs): host scalars in one stage on the compute
    // stream (counted already); device scalars in stages whose sorts run on the side stream,
    // each beside the accumulation of the stage before.
    let sc_buf = DeviceScalars::alloc(dev, n)?;
    let sc = sc_buf.device_ptr();
    let mut buckets = stream.alloc_zeros::<u64>(nb as usize * G::XYZZ_U64)?;
    match scalars {
        Scalars::Host(host) => {
            let mut counts = stream.alloc_zeros::<u32>(nb as usize)?;
            dev.ntt_state()
                .upload_staged_each(dev, scalar_limbs(host), sc, |first, count| {
                    let digits = CountDigits {
                        scalars: first as u32..(first + count) as u32,
                        convert: true,
                        sets: 0..sets,
                        set_base: 0,
                    };
                    count_digits(stream, k, sc, &lay, &digits, &mut counts)
                })?;
            prof.mark("upload+count")?;
            let stage = sort_stage(dev, k, stream, sc, &lay, 0..sets, Counts::Given(counts))?;
            prof.mark("sort")?;
            accumulate_stage::<G>(dev, k, stream, points, m, &stage, &mut buckets)?;
            prof.mark("accumulate")?;
        }
        Scalars::Device(d) => {
            let src = d.device_ptr() + (offset * ELEM_BYTES) as u64;
            // SAFETY: both ranges lie inside their allocations (offset + n <= d.len()).
            unsafe { result::memcpy_dtod_async(sc, src, n * ELEM_BYTES, stream.cu_stream()) }?;
            // Dropped before sc_buf: the compute stream then waits for the side stream.
            let mut ahead = SortAhead::new(dev, sc, lay, stage_sets(&plan, n))?;
            accumulate_stages::<G>(
                dev,
                k,
                &mut ahead,
                points,
                m,
                &mut buckets,
                let_in,
                &mut prof,
            )?;
        }
    }
    drop(sc_buf);
    reduce_and_combine::<G>(stream, k, buckets, plan, m, &mut prof)
}

/// Steps 4 and 5 of an MSM chunk, from its bucket sums.
fn reduce_and_combine<G: MsmGroup>(
    stream: &Arc<CudaStream>,
    k: &Kernels,
    buckets: CudaSlice<u64>,
    plan: Plan,
    m: u32,
    prof: &mut Profile,
) -> Result<G::Projective> {
    let Plan { c, sets, .. } = plan;
    // 4. Per-set reduction, level by level; each level leaves one point per set.
    let (level_sums, segs): (Vec<_>, Vec<u32>) =
        reduce_windows::<G>(stream, k, buckets, m, sets, prof)?
            .into_iter()
            .unzip();

    // 5. On the host: levels (S = S_0 + L (S_1 + L (...))), then sets (Horner in 2^(c fold)).
    // Every level's points converted into one buffer, then one download.
    let jac = G::XYZZ_U64 * 3 / 4;
    let per_level = sets as usize * jac;
    let mut out = unsafe { stream.alloc::<u64>(level_sums.len() * per_level) }?;
    for (i, s) in level_sums.iter().enumerate() {
        let mut dst = out.slice_mut(i * per_level..(i + 1) * per_level);
        unsafe {
            stream
                .launch_builder(&k.to_jacobian)
                .arg(s)
                .arg(&mut dst)
                .arg(&sets)
                .launch(grid(sets, 32))?;
        }
    }
    let all = stream.clone_dtoh(&out)?;
    let host_levels: Vec<&[u64]> = all.chunks(per_level).collect();
    let mut result = G::identity();
    for w in (0..sets as usize).rev() {
        for _ in 0..c * plan.fold {
            result = G::double(&result);
        }
        let mut win = G::identity();
        for (lvl, seg) in host_levels.iter().zip(&segs).rev() {
            for _ in 0..seg.trailing_zeros() {
                win = G::double(&win);
            }
            win = G::add(&win, &G::from_jacobian(&lvl[w * jac..(w + 1) * jac]));
        }
        result = G::add(&result, &win);
    }
    prof.mark("host")?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    const G1_POINT: usize = 96;

    #[test]
    fn fold_plan_uses_every_window_when_memory_allows() {
        // The shapes measured on the H200 (kernels/NOTES.md).
        assert_eq!(
            plan_fold::<G1>(1 << 24, usize::MAX),
            Some(Fold { c: 22, copies: 12 })
        );
        assert_eq!(
            plan_fold::<G1>(1 << 26, usize::MAX),
            Some(Fold { c: 24, copies: 11 })
        );
        assert_eq!(
            plan_fold::<G2>(1 << 22, usize::MAX),
            Some(Fold { c: 20, copies: 13 })
        );
    }

    #[test]
    fn fold_plan_respects_memory_and_index_limits() {
        let len = 1 << 20;
        // Under two copies: no fold.
        assert_eq!(plan_fold::<G1>(len, 2 * len * G1_POINT - 1), None);
        assert_eq!(plan_fold::<G1>(0, usize::MAX), None);
        // Three copies' room: at most three, and enough sets to cover every window.
        let f = plan_fold::<G1>(len, 3 * len * G1_POINT).unwrap();
        assert!((2..=3).contains(&f.copies), "{f:?}");
        let sets = windows(f.c).div_ceil(f.copies);
        assert!(sets * f.copies >= windows(f.c));
        // Entries carry copy * len + i in 31 bits.
        let f = plan_fold::<G1>(1 << 29, usize::MAX).unwrap();
        assert!(f.copies as usize * (1 << 29) <= 1 << 31, "{f:?}");
        assert_eq!(plan_fold::<G1>(1 << 31, usize::MAX), None);
    }

    /// The H200's L2 (50 MB, 3/4 of it for counters): the folded 2^27 H MSM (c = 24, three
    /// sets of 2^23 buckets, 100 MB of counters) counts one set per pass; plain c = 20 (13
    /// sets of 2^19, 27 MB) all in one; a budget below one set still makes progress.
    #[test]
    fn count_passes_keep_the_counters_in_l2() {
        let budget = 50 * (1 << 20) * 3 / 4;
        assert_eq!(sets_within(budget, buckets_per_window(24)), 1);
        let plain = sets_within(budget, buckets_per_window(20));
        assert!(plain >= 13, "{plain}");
        assert_eq!(sets_within(1, buckets_per_window(16)), 1);
        assert_eq!(sets_within(0, 0), 1);
    }

    #[test]
    fn sort_partitions_cover_every_bucket() {
        for nb in [
            1u32,
            7,
            512,
            513,
            1 << 16,
            (1 << 21) + 8,
            13 * ((1 << 19) + 8),
        ] {
            let (pshift, nparts) = partitions(nb);
            assert!(nparts <= MAX_PARTS, "nb={nb}");
            assert!((nparts as u64) << pshift >= nb as u64, "nb={nb}");
            assert_eq!((nb - 1) >> pshift, nparts - 1, "nb={nb}");
        }
    }
}

//! Base vectors resident on the device, plain or folded (precomputed multiples).

use super::*;

/// A vector of affine bases resident in device memory, as uploaded (no conversion), and
/// possibly its precomputed multiples (see [`Fold`]).
pub struct DeviceBases<G: MsmGroup> {
    pub(super) buf: DeviceScalars,
    pub(super) len: usize,
    pub(super) fold: Option<Fold>,
    _group: PhantomData<G>,
}

/// Copies 2^(c k) P of resident bases P for k < copies, one after another in device
/// memory. Since 2^(c k) (d P) = d (2^(c k) P), a digit of window w can be added against
/// copy w mod copies into the buckets of window w - (w mod copies): `copies` consecutive
/// windows share one set of buckets (cuda/msm/fold.cuh). One bucket reduction per set instead of per
/// window lets c grow: a G1 2^24 MSM runs 12 windows of 22 bits, one reduction, instead of
/// 13 windows of 20 bits and 13 reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub c: u32,
    pub copies: u32,
}

impl<G: MsmGroup> DeviceBases<G> {
    /// Copies `points` to the device.
    pub fn upload(dev: &GpuDevice, points: &[G::Affine]) -> Result<Self> {
        Ok(DeviceBases {
            buf: upload_points::<G>(dev, points)?,
            len: points.len(),
            fold: None,
            _group: PhantomData,
        })
    }

    /// Copies `points` to the device with as many precomputed multiples as `max_bytes`
    /// allows (all of them in at most `max_bytes`); plain as [`Self::upload`] where not even
    /// two copies fit or the device is short of memory for them now.
    pub fn upload_folded(dev: &GpuDevice, points: &[G::Affine], max_bytes: usize) -> Result<Self> {
        let Some(fold) = plan_fold::<G>(points.len(), max_bytes) else {
            return Self::upload(dev, points);
        };
        match upload_with_copies::<G>(dev, points, fold) {
            Ok(buf) => Ok(DeviceBases {
                buf,
                len: points.len(),
                fold: Some(fold),
                _group: PhantomData,
            }),
            Err(GpuError::Driver(e)) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                dev.stream().synchronize()?;
                Self::upload(dev, points)
            }
            Err(e) => Err(e),
        }
    }

    /// A plain (unfolded) vector of `len` points already in device memory: the bit split's
    /// gathered bases (src/msm/bits.rs).
    pub(super) fn from_buffer(buf: DeviceScalars, len: usize) -> Self {
        DeviceBases {
            buf,
            len,
            fold: None,
            _group: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn fold(&self) -> Option<Fold> {
        self.fold
    }

    /// Device memory held.
    pub fn bytes(&self) -> usize {
        self.fold.map_or(1, |f| f.copies as usize) * self.len * G::AFFINE_U64 * 8
    }
}

/// Points per launch of the fold kernel (its scratch holds ZZ, ZZZ per point).
pub(super) const FOLD_SLICE: usize = 1 << 22;
/// Points per thread of the fold kernel (FOLD_BATCH in cuda/msm/fold.cuh).
pub(super) const FOLD_BATCH: usize = 16;

/// The bases uploaded as copy 0 of `fold.copies`, each next copy 2^c times the one before,
/// computed on the device.
pub(super) fn upload_with_copies<G: MsmGroup>(
    dev: &GpuDevice,
    points: &[G::Affine],
    fold: Fold,
) -> Result<DeviceScalars> {
    let len = points.len();
    let point_bytes = G::AFFINE_U64 * 8;
    let elems_per_point = G::AFFINE_U64 / 4;
    let buf = DeviceScalars::alloc(dev, fold.copies as usize * len * elems_per_point)?;
    dev.ntt_state()
        .upload_staged(dev, point_elems::<G>(points), buf.device_ptr())?;

    let stream = dev.stream();
    let kernel = dev
        .module("msm")?
        .load_function(&format!("msm_fold_{}", G::NAME))?;
    let slice = FOLD_SLICE.min(len);
    let scratch = unsafe { stream.alloc::<u64>(slice * G::AFFINE_U64) }?;
    for k in 1..fold.copies as usize {
        for start in (0..len).step_by(slice) {
            let count = (len - start).min(slice) as u32;
            let src = buf.device_ptr() + (((k - 1) * len + start) * point_bytes) as u64;
            let dst = buf.device_ptr() + ((k * len + start) * point_bytes) as u64;
            let threads = count.div_ceil(FOLD_BATCH as u32);
            unsafe {
                stream
                    .launch_builder(&kernel)
                    .arg(&src)
                    .arg(&dst)
                    .arg(&scratch)
                    .arg(&count)
                    .arg(&fold.c)
                    .launch(grid(threads, 128))?;
            }
        }
    }
    stream.synchronize()?;
    Ok(buf)
}

/// The fold for `len` bases in at most `max_bytes`: c and copies with the fewest bucket
/// additions (nwin * n) plus reduction work (REDUCE_COST per bucket, per set of buckets).
/// None where fewer than two copies fit.
pub fn plan_fold<G: MsmGroup>(len: usize, max_bytes: usize) -> Option<Fold> {
    if len == 0 {
        return None;
    }
    let copy_bytes = len * G::AFFINE_U64 * 8;
    // Entry k * len + i carries a sign in bit 31.
    let index_cap = ((1usize << 31) / len).max(1);
    let fit = (max_bytes / copy_bytes).min(index_cap);
    if fit < 2 {
        return None;
    }
    let n = len as u64;
    // CUZK_MSM_FOLD_WINDOW pins c, for tuning.
    let pinned = std::env::var("CUZK_MSM_FOLD_WINDOW")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|c| (2..=MAX_FOLD_C).contains(c));
    let (c, nwin, sets) = (2..=MAX_FOLD_C)
        .filter(|&c| pinned.is_none_or(|p| p == c))
        .map(|c| {
            let nwin = windows(c);
            let sets = nwin.div_ceil(nwin.min(fit as u32));
            (c, nwin, sets)
        })
        .min_by_key(|&(c, nwin, sets)| {
            nwin as u64 * n + sets as u64 * REDUCE_COST * (1u64 << (c - 1))
        })?;
    let copies = nwin.div_ceil(sets);
    (copies >= 2).then_some(Fold { c, copies })
}

/// Widest folded window: 2^23 buckets in one set.
pub(super) const MAX_FOLD_C: u32 = 24;
/// A bucket's share of the reduction, in mixed additions (two full additions each, which
/// ran ~6 times a mixed addition's time on the H200 at G1 2^24).
pub(super) const REDUCE_COST: u64 = 6;

/// Points through the pinned, double-buffered staging of [`DeviceScalars`]: an affine point
/// is a whole number of 32-byte elements (3 in G1, 6 in G2), and the staging moves bytes.
pub(super) fn upload_points<G: MsmGroup>(
    dev: &GpuDevice,
    points: &[G::Affine],
) -> Result<DeviceScalars> {
    DeviceScalars::upload(dev, point_elems::<G>(points))
}

/// Affine points as the 32-byte elements the pinned staging moves: a point is a whole number
/// of them (3 in G1, 6 in G2).
pub(super) fn point_elems<G: MsmGroup>(points: &[G::Affine]) -> &[Limbs] {
    assert_eq!(std::mem::size_of::<G::Affine>(), G::AFFINE_U64 * 8);
    const _: () = assert!(std::mem::align_of::<Limbs>() == std::mem::align_of::<u64>());
    // SAFETY: blstrs' affine points are #[repr(transparent)] over blst's #[repr(C)] affine
    // structs of u64 limbs (checked size above), so any point's bytes are valid limbs;
    // [u64; 4] has u64's alignment and AFFINE_U64 (12 or 24) is a multiple of 4.
    unsafe {
        std::slice::from_raw_parts(
            points.as_ptr() as *const Limbs,
            points.len() * G::AFFINE_U64 / 4,
        )
    }
}

//! Density selection of a device-resident scalar vector (cuda/msm/select.cuh): the A and B
//! queries' MSMs take the aux assignment compacted to the variables their key holds points
//! for, and selecting on the device spares the host a copy of the vector and the device a
//! second upload of it.
//!
//! Its inverse, [`upload_packed`]: an assignment that crosses the bus as bitmaps with ranks
//! ([`PackedWord`]) and its wide values. A PoRep witness is ~98% zeros and ones, so at 2^27 that is ~110 MB instead
//! of 4.3 GB (174 ms of the device step staged at ~25 GB/s).

use super::*;
use crate::memory::PinnedScalars;

/// The elements i of `src` (the first `len`) whose bit is set in `words` (bit i % 64 of word
/// i / 64), in order.
pub fn select_scalars(
    dev: &GpuDevice,
    src: &DeviceScalars,
    words: &[u64],
    len: usize,
) -> Result<DeviceScalars> {
    select_scalars_in(dev, src, &DeviceDensity::upload(dev, words, len)?)
}

/// A density bitmap on the device with each word's rank (the set bits before it), for
/// selections ([`select_scalars_in`]). A circuit's densities are the same for each of its
/// partitions, so a backend keeps them instead of deriving and uploading them per step.
pub struct DeviceDensity {
    words: CudaSlice<u64>,
    rank: CudaSlice<u32>,
    len: usize,
    total: usize,
}

impl DeviceDensity {
    /// The first `len` bits of `words` (bit i % 64 of word i / 64), with their ranks,
    /// uploaded on the device's compute stream (where the selections that read them run).
    pub fn upload(dev: &GpuDevice, words: &[u64], len: usize) -> Result<DeviceDensity> {
        if words.len() < len.div_ceil(64) || len > u32::MAX as usize {
            return Err(GpuError::Invalid(format!(
                "density: {len} elements with a bitmap of {} words",
                words.len()
            )));
        }
        let mut words = words[..len.div_ceil(64)].to_vec();
        // Bits past `len` in the last word are not members: the kernel reads the word whole.
        if !len.is_multiple_of(64) {
            if let Some(last) = words.last_mut() {
                *last &= (1u64 << (len % 64)) - 1;
            }
        }
        let mut rank = Vec::with_capacity(words.len());
        let mut total = 0u32;
        for w in &words {
            rank.push(total);
            total += w.count_ones();
        }
        dev.ctx().bind_to_thread()?;
        let stream = dev.stream();
        // At least one element each: an empty bitmap still makes valid (unused) buffers.
        let d_words = stream.clone_htod(if words.is_empty() { &[0][..] } else { &words })?;
        let d_rank = stream.clone_htod(if rank.is_empty() { &[0][..] } else { &rank })?;
        Ok(DeviceDensity {
            words: d_words,
            rank: d_rank,
            len,
            total: total as usize,
        })
    }

    /// Number of variables the bitmap is over.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of members: the length of a selection.
    pub fn total(&self) -> usize {
        self.total
    }
}

/// The elements i of `src` (the first `density.len()`) that `density` holds, in order.
pub fn select_scalars_in(
    dev: &GpuDevice,
    src: &DeviceScalars,
    density: &DeviceDensity,
) -> Result<DeviceScalars> {
    let len = density.len;
    if len > src.len() {
        return Err(GpuError::Invalid(format!(
            "select: {len} elements of a vector of {}",
            src.len()
        )));
    }
    dev.ctx().bind_to_thread()?;
    let out = DeviceScalars::alloc(dev, density.total)?;
    if density.total == 0 {
        return Ok(out);
    }
    let stream = dev.stream();
    let kernel = dev.module("msm")?.load_function("msm_select_scalars")?;
    let (src_ptr, out_ptr, n) = (src.device_ptr(), out.device_ptr(), len as u32);
    unsafe {
        stream
            .launch_builder(&kernel)
            .arg(&src_ptr)
            .arg(&n)
            .arg(&density.words)
            .arg(&density.rank)
            .arg(&out_ptr)
            .launch(grid(n, 256))?;
    }
    Ok(out)
}

/// 64 elements of a packed scalar vector (cuda/msm/select.cuh `packed_word`): bit j of
/// `wide` says element j is wide, the value `wide_rank` + (set bits of `wide` below j) of
/// the wide values; else bit j of `one` says it is one; else it is zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PackedWord {
    pub wide: u64,
    pub one: u64,
    /// Wide elements before this word.
    pub wide_rank: u64,
    pub reserved: u64,
}

const _: () = assert!(std::mem::size_of::<PackedWord>() == ELEM_BYTES);
const _: () = assert!(std::mem::align_of::<PackedWord>() == std::mem::align_of::<Limbs>());

/// A scalar vector of `len` elements, packed: `words` (one per 64 elements) and the wide
/// values they rank.
#[derive(Clone, Copy, Debug)]
pub struct PackedParts<'a> {
    pub len: usize,
    pub words: &'a [PackedWord],
    pub wide: &'a [Limbs],
    /// The field's one as the vector holds it (Montgomery form for blstrs scalars).
    pub one: Limbs,
}

/// The vector `p` describes, in device memory: the words and the wide values go up through
/// the pinned staging (both are a few percent of the vector for a witness), the device
/// writes the elements. Refused when the words do not cover exactly `len` elements, or when
/// a rank points past the wide values given (the kernel reads nothing there; the error comes
/// back once it has run).
pub fn upload_packed(dev: &GpuDevice, p: PackedParts<'_>) -> Result<DeviceScalars> {
    check_words(p.len, p.words.len())?;
    // SAFETY: PackedWord is four u64s, like Limbs (size and alignment asserted above).
    let words: &[Limbs] =
        unsafe { std::slice::from_raw_parts(p.words.as_ptr().cast(), p.words.len()) };
    let out = DeviceScalars::alloc(dev, p.len)?;
    let on_device = (
        DeviceScalars::upload(dev, words)?,
        DeviceScalars::upload(dev, p.wide)?,
    );
    expand_packed(dev, out, on_device, p.one)
}

/// As [`upload_packed`], for a packed vector in pinned memory, `src`: its words (elements
/// `0..words`, each a `PackedWord`) then its `wide` values. Both go up by DMA straight from
/// there, with no staging copy on the host.
pub fn upload_packed_pinned(
    dev: &GpuDevice,
    len: usize,
    src: &PinnedScalars,
    words: usize,
    wide: usize,
    one: Limbs,
) -> Result<DeviceScalars> {
    check_words(len, words)?;
    let out = DeviceScalars::alloc(dev, len)?;
    let on_device = (
        DeviceScalars::upload_from_pinned(dev, src, 0..words)?,
        DeviceScalars::upload_from_pinned(dev, src, words..words + wide)?,
    );
    expand_packed(dev, out, on_device, one)
}

fn check_words(len: usize, words: usize) -> Result<()> {
    if words != len.div_ceil(64) || len > u32::MAX as usize {
        return Err(GpuError::Invalid(format!(
            "packed vector of {len} elements with {words} words"
        )));
    }
    Ok(())
}

/// `out` written from its packed words and wide values, on the device. (`out` is allocated
/// before them, as it was before the pinned path: allocated after them, the a, b, c
/// evaluation that reads it next measured 100 ms instead of 66 at 2^27 on the pinned path.)
fn expand_packed(
    dev: &GpuDevice,
    out: DeviceScalars,
    (words, wide): (DeviceScalars, DeviceScalars),
    one: Limbs,
) -> Result<DeviceScalars> {
    dev.ctx().bind_to_thread()?;
    let len = out.len();
    if len == 0 {
        return Ok(out);
    }
    let one = DeviceScalars::upload(dev, &[one])?;
    let stream = dev.stream();
    let mut bad = stream.alloc_zeros::<u32>(1)?;
    let kernel = dev.module("msm")?.load_function("msm_expand_scalars")?;
    let (n, nwide) = (len as u32, wide.len().min(u32::MAX as usize) as u32);
    let (words_ptr, wide_ptr, one_ptr, out_ptr) = (
        words.device_ptr(),
        wide.device_ptr(),
        one.device_ptr(),
        out.device_ptr(),
    );
    unsafe {
        stream
            .launch_builder(&kernel)
            .arg(&n)
            .arg(&words_ptr)
            .arg(&wide_ptr)
            .arg(&nwide)
            .arg(&one_ptr)
            .arg(&out_ptr)
            .arg(&mut bad)
            .launch(grid(n, 256))?;
    }
    if stream.clone_dtoh(&bad)?[0] != 0 {
        return Err(GpuError::Invalid(format!(
            "packed vector: a rank points past its {} wide values",
            wide.len()
        )));
    }
    Ok(out)
}

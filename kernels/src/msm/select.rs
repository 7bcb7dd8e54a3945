//! Density selection of a device-resident scalar vector (cuda/msm/select.cuh): the A and B
//! queries' MSMs take the aux assignment compacted to the variables their key holds points
//! for, and selecting on the device spares the host a copy of the vector and the device a
//! second upload of it.
//!
//! Its inverse, [`upload_packed`]: an assignment that crosses the bus as two bitmaps and its
//! wide values. A PoRep witness is ~98% zeros and ones, so at 2^27 that is ~110 MB instead
//! of 4.3 GB (174 ms of the device step staged at ~25 GB/s).

use super::*;

/// The elements i of `src` (the first `len`) whose bit is set in `words` (bit i % 64 of word
/// i / 64), in order.
pub fn select_scalars(
    dev: &GpuDevice,
    src: &DeviceScalars,
    words: &[u64],
    len: usize,
) -> Result<DeviceScalars> {
    if len > src.len() || words.len() < len.div_ceil(64) {
        return Err(GpuError::Invalid(format!(
            "select: {len} elements of a vector of {} with a bitmap of {} words",
            src.len(),
            words.len()
        )));
    }
    let words = &words[..len.div_ceil(64)];
    let mut rank = Vec::with_capacity(words.len());
    let mut total = 0u32;
    for w in words {
        rank.push(total);
        total += w.count_ones();
    }
    dev.ctx().bind_to_thread()?;
    let out = DeviceScalars::alloc(dev, total as usize)?;
    if total == 0 {
        return Ok(out);
    }
    let stream = dev.stream();
    let d_words = stream.clone_htod(words)?;
    let d_rank = stream.clone_htod(&rank)?;
    let kernel = dev.module("msm")?.load_function("msm_select_scalars")?;
    let (src_ptr, out_ptr, n) = (src.device_ptr(), out.device_ptr(), len as u32);
    unsafe {
        stream
            .launch_builder(&kernel)
            .arg(&src_ptr)
            .arg(&n)
            .arg(&d_words)
            .arg(&d_rank)
            .arg(&out_ptr)
            .launch(grid(n, 256))?;
    }
    Ok(out)
}

/// A scalar vector of `len` elements as bitmaps (bit i % 64 of word i / 64) and values:
/// element i is the next of `wide` where `wide_words` has bit i, else `one` where
/// `one_words` has it, else zero.
#[derive(Clone, Copy, Debug)]
pub struct PackedParts<'a> {
    pub len: usize,
    pub wide_words: &'a [u64],
    pub wide: &'a [Limbs],
    pub one_words: &'a [u64],
    /// The field's one as the vector holds it (Montgomery form for blstrs scalars).
    pub one: Limbs,
}

/// The vector `p` describes, in device memory: the bitmaps and the wide values go up, the
/// device writes the elements. Refused unless the bitmaps cover exactly `len` elements and
/// `wide` holds one value per set bit of `wide_words`, so the kernel never reads outside
/// what was uploaded.
pub fn upload_packed(dev: &GpuDevice, p: PackedParts<'_>) -> Result<DeviceScalars> {
    let words = p.len.div_ceil(64);
    if p.wide_words.len() != words || p.one_words.len() != words || p.len > u32::MAX as usize {
        return Err(GpuError::Invalid(format!(
            "packed vector of {} elements with bitmaps of {} and {} words",
            p.len,
            p.wide_words.len(),
            p.one_words.len()
        )));
    }
    let mut rank = Vec::with_capacity(words);
    let mut total = 0usize;
    for (i, w) in p.wide_words.iter().enumerate() {
        // Bits past len would be counted here but never read by the kernel.
        let w = if i + 1 == words && !p.len.is_multiple_of(64) {
            w & ((1u64 << (p.len % 64)) - 1)
        } else {
            *w
        };
        rank.push(total as u32);
        total += w.count_ones() as usize;
    }
    if total != p.wide.len() {
        return Err(GpuError::Invalid(format!(
            "packed vector: {total} wide elements marked, {} given",
            p.wide.len()
        )));
    }
    dev.ctx().bind_to_thread()?;
    let out = DeviceScalars::alloc(dev, p.len)?;
    if p.len == 0 {
        return Ok(out);
    }
    let wide = DeviceScalars::upload(dev, p.wide)?;
    let one = DeviceScalars::upload(dev, &[p.one])?;
    let stream = dev.stream();
    let d_wide_words = stream.clone_htod(p.wide_words)?;
    let d_rank = stream.clone_htod(&rank)?;
    let d_one_words = stream.clone_htod(p.one_words)?;
    let kernel = dev.module("msm")?.load_function("msm_expand_scalars")?;
    let (wide_ptr, one_ptr, out_ptr, n) = (
        wide.device_ptr(),
        one.device_ptr(),
        out.device_ptr(),
        p.len as u32,
    );
    unsafe {
        stream
            .launch_builder(&kernel)
            .arg(&n)
            .arg(&d_wide_words)
            .arg(&d_rank)
            .arg(&wide_ptr)
            .arg(&d_one_words)
            .arg(&one_ptr)
            .arg(&out_ptr)
            .launch(grid(n, 256))?;
    }
    // wide and one are freed in stream order, after the kernel has read them.
    Ok(out)
}

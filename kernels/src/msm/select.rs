//! Density selection of a device-resident scalar vector (cuda/msm/select.cuh): the A and B
//! queries' MSMs take the aux assignment compacted to the variables their key holds points
//! for, and selecting on the device spares the host a copy of the vector and the device a
//! second upload of it.

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

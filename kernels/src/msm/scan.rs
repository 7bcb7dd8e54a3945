//! Exclusive prefix sums of u32 counts on the device (msm_scan_* in cuda/msm/sort.cuh): the
//! sort's bucket offsets and the bit split's ranks.

use super::*;

/// out[i] = counts[0] + ... + counts[i - 1] for i <= len, so out[len] is the total; `len`
/// (at least 1) entries of `counts` are read.
pub(super) fn exclusive_scan(
    stream: &Arc<CudaStream>,
    k: &Kernels,
    counts: &CudaSlice<u32>,
    len: u32,
) -> Result<CudaSlice<u32>> {
    let mut out = unsafe { stream.alloc::<u32>(len as usize + 1) }?;
    let blocks = len.div_ceil(1024);
    let mut block_tot = unsafe { stream.alloc::<u32>(blocks as usize) }?;
    // SAFETY: the kernels read `len` counts and write len + 1 outputs and `blocks` totals,
    // all inside the allocations above.
    unsafe {
        stream
            .launch_builder(&k.scan_blocks)
            .arg(counts)
            .arg(&mut out)
            .arg(&len)
            .arg(&mut block_tot)
            .launch(grid(len, 1024))?;
        stream
            .launch_builder(&k.scan_totals)
            .arg(&mut block_tot)
            .arg(&blocks)
            .arg(&mut out)
            .arg(&len)
            .launch(grid(1024, 1024))?;
        stream
            .launch_builder(&k.scan_add)
            .arg(&mut out)
            .arg(&len)
            .arg(&block_tot)
            .launch(grid(len, 1024))?;
    }
    Ok(out)
}

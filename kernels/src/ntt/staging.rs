//! Pinned staging copies between host slices and device memory: two pinned buffers on the
//! copy stream, so that the host copies one chunk while the DMA engine moves the other.

use cudarc::driver::{result, CudaEvent};
use rayon::prelude::*;

use super::{Limbs, NttState, ELEM_BYTES};
use crate::device::GpuDevice;
use crate::error::Result;
use crate::memory::PinnedScalars;

/// Elements per pinned staging chunk (32 MiB): large enough that DMA runs at full speed,
/// small enough that the host copy of the next chunk overlaps it.
const STAGING_CHUNK: usize = 1 << 20;

pub(super) struct Staging {
    bufs: [PinnedScalars; 2],
    done: [CudaEvent; 2],
}

impl NttState {
    fn staging(&mut self, dev: &GpuDevice) -> Result<&mut Staging> {
        if self.staging.is_none() {
            self.staging = Some(Staging {
                bufs: [
                    PinnedScalars::alloc(dev, STAGING_CHUNK)?,
                    PinnedScalars::alloc(dev, STAGING_CHUNK)?,
                ],
                done: [dev.ctx().new_event(None)?, dev.ctx().new_event(None)?],
            });
        }
        Ok(self.staging.as_mut().unwrap())
    }

    /// Host slice -> device through the two pinned buffers on the copy stream: the host
    /// copies chunk i+1 while the DMA engine moves chunk i. Returns once the last chunk is
    /// queued; the compute stream is made to wait for it by the caller (join).
    pub(crate) fn upload_staged(
        &mut self,
        dev: &GpuDevice,
        host: &[Limbs],
        dst: u64,
    ) -> Result<()> {
        self.upload_staged_each(dev, host, dst, |_, _| Ok(()))?;
        dev.stream().join(dev.copy_stream())?;
        Ok(())
    }

    /// As `upload_staged`, calling `landed(first, count)` as each piece of `host` is queued:
    /// work the caller then puts on the compute stream runs after that piece has landed,
    /// while the host stages the next one.
    pub(crate) fn upload_staged_each(
        &mut self,
        dev: &GpuDevice,
        host: &[Limbs],
        dst: u64,
        mut landed: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        dev.ctx().bind_to_thread()?;
        let copy = dev.copy_stream().clone();
        let st = self.staging(dev)?;
        for (i, chunk) in host.chunks(STAGING_CHUNK).enumerate() {
            let k = i & 1;
            st.done[k].synchronize()?;
            let buf = &mut st.bufs[k].as_mut_slice()[..chunk.len()];
            par_copy(buf, chunk);
            let off = (i * STAGING_CHUNK * ELEM_BYTES) as u64;
            // SAFETY: buf is pinned and stays untouched until done[k] fires.
            unsafe { result::memcpy_htod_async(dst + off, &*buf, copy.cu_stream()) }?;
            st.done[k].record(&copy)?;
            dev.stream().join(&copy)?;
            landed(i * STAGING_CHUNK, chunk.len())?;
        }
        Ok(())
    }

    /// Device -> host slice, after all queued compute, through the pinned buffers.
    pub(crate) fn download_staged(
        &mut self,
        dev: &GpuDevice,
        src: u64,
        out: &mut [Limbs],
    ) -> Result<()> {
        dev.ctx().bind_to_thread()?;
        let queued = dev.stream().record_event(None)?;
        self.download_staged_after(dev, &queued, src, out)
    }

    /// As `download_staged`, after the compute work recorded in `after` only: kernels queued
    /// since keep running while this chunk comes back (fixed_base.rs's pipeline).
    pub(crate) fn download_staged_after(
        &mut self,
        dev: &GpuDevice,
        after: &CudaEvent,
        src: u64,
        out: &mut [Limbs],
    ) -> Result<()> {
        dev.ctx().bind_to_thread()?;
        let copy = dev.copy_stream().clone();
        copy.wait(after)?;
        let st = self.staging(dev)?;
        let lens: Vec<usize> = out.chunks(STAGING_CHUNK).map(|c| c.len()).collect();
        let count = lens.len();
        let enqueue = |st: &mut Staging, i: usize, len: usize| -> Result<()> {
            let k = i & 1;
            let buf = &mut st.bufs[k].as_mut_slice()[..len];
            let off = (i * STAGING_CHUNK * ELEM_BYTES) as u64;
            // SAFETY: buf is pinned; the host reads it only after done[k].
            unsafe { result::memcpy_dtoh_async(buf, src + off, copy.cu_stream()) }?;
            st.done[k].record(&copy)?;
            Ok(())
        };
        if count > 0 {
            enqueue(st, 0, lens[0])?;
        }
        for (i, chunk) in out.chunks_mut(STAGING_CHUNK).enumerate() {
            // Queue the next chunk before copying this one out, so DMA and memcpy overlap.
            if i + 1 < count {
                enqueue(st, i + 1, lens[i + 1])?;
            }
            let k = i & 1;
            st.done[k].synchronize()?;
            par_copy(chunk, &st.bufs[k].as_slice()[..chunk.len()]);
        }
        Ok(())
    }
}

/// memcpy split over threads: one core copies ~10 GB/s, under PCIe's ~50. The threads are a
/// pool of their own, not rayon's global one: there the pieces queue behind synthesis's
/// parallel work (a/b/c evaluation, the PoRep-shaped kind's fill), and the device waits for
/// its staging copies. Under a full synthesis load a 2 KiB PoRep partition's device step grew
/// from 130 to 206 ms that way, and a 2^27 partition's NTT step took 0.9-1.1 s.
fn par_copy(dst: &mut [Limbs], src: &[Limbs]) {
    const PIECE: usize = 1 << 15;
    copy_pool().install(|| {
        dst.par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s))
    });
}

/// Threads for staging copies: enough to keep PCIe busy (~4 cores of memcpy), few enough to
/// leave the cores to synthesis. `CUZK_COPY_THREADS` overrides.
fn copy_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::env::var("CUZK_COPY_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(6);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cuzk-copy-{i}"))
            .build()
            .expect("creating the staging copy threads")
    })
}

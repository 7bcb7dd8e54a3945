//! Field-element vectors in device memory and in page-locked host memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaStream};

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::ntt::{Limbs, ELEM_BYTES};

/// A vector of field elements in device memory, freed (stream-ordered) on drop.
pub struct DeviceScalars {
    pub(crate) ptr: u64,
    pub(crate) len: usize,
    stream: Arc<CudaStream>,
}

impl DeviceScalars {
    /// Uninitialised device memory for `len` elements, allocated on the compute stream.
    ///
    /// The copy stream is ordered after the allocation, i.e. after every kernel queued on the
    /// compute stream so far. The pool hands out memory freed on the compute stream while
    /// kernels that use it are still queued (a later compute-stream kernel is ordered after
    /// them; a copy on the copy stream is not), and memory freed on another backend's stream
    /// with only this compute stream waiting for it. Without the order, an upload into the
    /// new vector could land before those kernels have run, and they would overwrite it or
    /// read it: A's density selection, queued, then A's input MSM's upload did this
    /// (kernels/NOTES.md part 13).
    pub fn alloc(dev: &GpuDevice, len: usize) -> Result<Self> {
        dev.ctx().bind_to_thread()?;
        let stream = dev.stream().clone();
        let bytes = len.max(1) * ELEM_BYTES;
        // SAFETY: plain stream-ordered allocation; freed in Drop on the same stream.
        let ptr = unsafe { result::malloc_async(stream.cu_stream(), bytes) }?;
        let d = DeviceScalars { ptr, len, stream };
        dev.copy_stream().join(&d.stream)?;
        Ok(d)
    }

    pub fn zeros(dev: &GpuDevice, len: usize) -> Result<Self> {
        let d = Self::alloc(dev, len)?;
        d.zero_range(0, len)?;
        Ok(d)
    }

    /// Copies `host` to a new device vector of `len >= host.len()` elements, the tail zeroed.
    pub fn upload_padded(dev: &GpuDevice, host: &[Limbs], len: usize) -> Result<Self> {
        if len < host.len() {
            return Err(GpuError::Invalid(format!(
                "upload of {} elements into {len}",
                host.len()
            )));
        }
        let d = Self::alloc(dev, len)?;
        let mut state = dev.ntt_state();
        state.upload_staged(dev, host, d.ptr)?;
        drop(state);
        d.zero_range(host.len(), len)?;
        Ok(d)
    }

    pub fn upload(dev: &GpuDevice, host: &[Limbs]) -> Result<Self> {
        Self::upload_padded(dev, host, host.len())
    }

    /// `host` (inside `pin`'s range) to the start of this vector by DMA on the copy stream,
    /// in pieces so that the compute stream's next kernel waits only for what it must;
    /// returns when the whole copy has landed.
    pub fn copy_from_registered(
        &self,
        dev: &GpuDevice,
        pin: &HostRegistration,
        host: &[Limbs],
    ) -> Result<()> {
        if !pin.covers(host) || host.len() > self.len {
            return Err(GpuError::Invalid(format!(
                "copy of {} elements from outside their registration or into {}",
                host.len(),
                self.len
            )));
        }
        dev.ctx().bind_to_thread()?;
        let copy = dev.copy_stream();
        // After the compute stream's work on this vector (DeviceScalars::zeros' memset).
        copy.join(dev.stream())?;
        const PIECE: usize = 1 << 24;
        for (i, piece) in host.chunks(PIECE).enumerate() {
            let off = (i * PIECE * ELEM_BYTES) as u64;
            // SAFETY: the piece is registered (page-locked) host memory that outlives the
            // copy (we synchronise below); the destination range lies inside this vector.
            unsafe { result::memcpy_htod_async(self.ptr + off, piece, copy.cu_stream()) }?;
        }
        dev.stream().join(copy)?;
        copy.synchronize()?;
        Ok(())
    }

    /// Copies the first `out.len()` elements to the host.
    pub fn download_into(&self, dev: &GpuDevice, out: &mut [Limbs]) -> Result<()> {
        if out.len() > self.len {
            return Err(GpuError::Invalid(format!(
                "download of {} elements from {}",
                out.len(),
                self.len
            )));
        }
        dev.ntt_state().download_staged(dev, self.ptr, out)
    }

    pub fn download(&self, dev: &GpuDevice) -> Result<Vec<Limbs>> {
        let mut out = vec![[0u64; 4]; self.len];
        self.download_into(dev, &mut out)?;
        Ok(out)
    }

    /// Elements `range` of pinned host memory into a new vector, by DMA on the copy stream;
    /// the compute stream waits for it before its next kernel (the caller keeps `src` until
    /// that has run).
    pub fn upload_from_pinned(
        dev: &GpuDevice,
        src: &PinnedScalars,
        range: std::ops::Range<usize>,
    ) -> Result<Self> {
        let host = src.as_slice().get(range.clone()).ok_or_else(|| {
            GpuError::Invalid(format!(
                "elements {range:?} of a {}-element buffer",
                src.len
            ))
        })?;
        let d = Self::alloc(dev, host.len())?;
        if !host.is_empty() {
            // The copy stream is ordered after the allocation (`alloc`).
            // SAFETY: host is pinned memory that outlives the copy (see above); d holds
            // host.len() elements.
            unsafe { result::memcpy_htod_async(d.ptr, host, dev.copy_stream().cu_stream()) }?;
            dev.stream().join(dev.copy_stream())?;
        }
        Ok(d)
    }

    /// Asynchronous copy from pinned host memory on the copy stream; the compute stream
    /// waits for it before its next kernel.
    pub fn copy_from_pinned(&mut self, dev: &GpuDevice, src: &PinnedScalars) -> Result<()> {
        let n = src.len.min(self.len);
        dev.ctx().bind_to_thread()?;
        // After the compute stream's work on this vector.
        dev.copy_stream().join(dev.stream())?;
        // SAFETY: both ranges are live allocations of at least n elements.
        unsafe {
            result::memcpy_htod_async(
                self.ptr,
                &src.as_slice()[..n],
                dev.copy_stream().cu_stream(),
            )
        }?;
        dev.stream().join(dev.copy_stream())?;
        Ok(())
    }

    /// Copy to pinned host memory after the compute stream's work; synchronous.
    pub fn copy_to_pinned(&self, dev: &GpuDevice, dst: &mut PinnedScalars) -> Result<()> {
        let n = dst.len.min(self.len);
        dev.ctx().bind_to_thread()?;
        dev.copy_stream().join(dev.stream())?;
        // SAFETY: as above.
        unsafe {
            result::memcpy_dtoh_async(
                &mut dst.as_mut_slice()[..n],
                self.ptr,
                dev.copy_stream().cu_stream(),
            )
        }?;
        dev.copy_stream().synchronize()?;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Keep the first `len` elements (the allocation stays as it is): the H polynomial of a
    /// domain of n is its first n - 1 coefficients.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The raw device address (CUdeviceptr) of element 0, for kernels of other modules.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    pub(crate) fn zero_range(&self, from: usize, to: usize) -> Result<()> {
        if to > from {
            // SAFETY: [from, to) lies inside the allocation.
            unsafe {
                result::memset_d8_async(
                    self.ptr + (from * ELEM_BYTES) as u64,
                    0,
                    (to - from) * ELEM_BYTES,
                    self.stream.cu_stream(),
                )
            }?;
        }
        Ok(())
    }
}

impl Drop for DeviceScalars {
    fn drop(&mut self) {
        let ctx = self.stream.context();
        if ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by malloc_async on this stream; nothing uses it after drop.
            let _ = unsafe { result::free_async(self.ptr, self.stream.cu_stream()) };
        }
    }
}

/// Page-locked host memory held through this crate ([`PinnedScalars`] and
/// [`HostRegistration`], every device together), in bytes: now, and the most at once since
/// the process started. The OS cannot page it out, so an operator counts it apart from the
/// rest of the daemon's memory (GetStatus reports it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinnedHostBytes {
    pub now: u64,
    pub peak: u64,
}

/// The process's [`PinnedHostBytes`].
pub fn pinned_host_bytes() -> PinnedHostBytes {
    PINNED.read()
}

static PINNED: PinnedTally = PinnedTally::new();

/// Bytes pinned now and their high-water mark, counted where memory is page-locked and
/// released.
struct PinnedTally {
    now: AtomicU64,
    peak: AtomicU64,
}

impl PinnedTally {
    const fn new() -> Self {
        PinnedTally {
            now: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        }
    }

    fn pinned(&self, bytes: usize) {
        let now = self.now.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn released(&self, bytes: usize) {
        self.now.fetch_sub(bytes as u64, Ordering::Relaxed);
    }

    fn read(&self) -> PinnedHostBytes {
        PinnedHostBytes {
            now: self.now.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
        }
    }
}

/// Page-locked host memory for field elements: DMA reads and writes it directly, at full
/// PCIe speed, and copies from it are asynchronous.
pub struct PinnedScalars {
    ptr: *mut Limbs,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: plain host memory owned by this value.
unsafe impl Send for PinnedScalars {}
unsafe impl Sync for PinnedScalars {}

impl PinnedScalars {
    pub fn alloc(dev: &GpuDevice, len: usize) -> Result<Self> {
        Self::alloc_flags(dev, len, 0)
    }

    /// As `alloc`, pinned for every context (any device's copy engine reads it at full
    /// speed): for buffers that synthesis fills before it knows which device proves them.
    pub fn alloc_portable(dev: &GpuDevice, len: usize) -> Result<Self> {
        Self::alloc_flags(dev, len, sys::CU_MEMHOSTALLOC_PORTABLE)
    }

    fn alloc_flags(dev: &GpuDevice, len: usize, flags: u32) -> Result<Self> {
        dev.ctx().bind_to_thread()?;
        // Not write-combined: we read results back through it on the CPU.
        let bytes = Self::bytes_for(len);
        // SAFETY: the pointer is checked and owned by the value; zeroed below.
        let ptr = unsafe { result::malloc_host(bytes, flags) }? as *mut Limbs;
        PINNED.pinned(bytes);
        let mut p = PinnedScalars {
            ptr,
            len,
            ctx: dev.ctx().clone(),
        };
        p.as_mut_slice().fill([0; 4]);
        Ok(p)
    }

    /// What an allocation of `len` elements pins (never nothing: the driver refuses 0).
    fn bytes_for(len: usize) -> usize {
        len.max(1) * ELEM_BYTES
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[Limbs] {
        // SAFETY: ptr is a live allocation of len elements, initialised at alloc.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [Limbs] {
        // SAFETY: as above, and &mut self is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedScalars {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by malloc_host; any DMA that used it was synchronised.
            if unsafe { result::free_host(self.ptr as *mut _) }.is_ok() {
                PINNED.released(Self::bytes_for(self.len));
            }
        }
    }
}

/// Host memory the driver has page-locked where it lies (cuMemHostRegister), for DMA
/// straight from it; unregistered on drop. The memory must outlive the registration and
/// every copy from it: [`DeviceScalars::copy_from_registered`] synchronises before it
/// returns, so a registration can be dropped right after its copies. The proving path does not
/// use it: at 2^27 registering a partition's aux costs more than the staging copy it saves,
/// inside the device step or beside it (kernels/NOTES.md); `gpu_upload` measures both.
pub struct HostRegistration {
    ptr: usize,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: a registration is an address range and a context handle, no access to the memory.
unsafe impl Send for HostRegistration {}
unsafe impl Sync for HostRegistration {}

impl HostRegistration {
    pub fn new(dev: &GpuDevice, host: &[Limbs]) -> Result<Self> {
        let bytes = std::mem::size_of_val(host);
        if bytes == 0 {
            return Err(GpuError::Invalid("registration of an empty range".into()));
        }
        dev.ctx().bind_to_thread()?;
        // PORTABLE: pinned for every context, so that any device's copy engine may read it.
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE;
        // SAFETY: a live host range of `bytes`; the driver only locks its pages (the memory
        // is not written). Unregistered in Drop.
        unsafe {
            sys::cuMemHostRegister_v2(host.as_ptr() as *mut std::ffi::c_void, bytes, flags).result()
        }?;
        PINNED.pinned(bytes);
        Ok(HostRegistration {
            ptr: host.as_ptr() as usize,
            bytes,
            ctx: dev.ctx().clone(),
        })
    }

    /// Whether `host` lies inside this registration.
    pub fn covers(&self, host: &[Limbs]) -> bool {
        let start = host.as_ptr() as usize;
        start >= self.ptr && start + std::mem::size_of_val(host) <= self.ptr + self.bytes
    }
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: registered in new; the copies that read it have completed.
            let unregistered =
                unsafe { sys::cuMemHostUnregister(self.ptr as *mut std::ffi::c_void) }.result();
            if unregistered.is_ok() {
                PINNED.released(self.bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_counts_what_is_pinned_and_its_high_water_mark() {
        let t = PinnedTally::new();
        assert_eq!(t.read(), PinnedHostBytes::default());
        t.pinned(100);
        t.pinned(50);
        assert_eq!(
            t.read(),
            PinnedHostBytes {
                now: 150,
                peak: 150
            }
        );
        t.released(100);
        assert_eq!(t.read(), PinnedHostBytes { now: 50, peak: 150 });
        t.pinned(20);
        t.released(70);
        assert_eq!(t.read(), PinnedHostBytes { now: 0, peak: 150 });
        t.pinned(200);
        assert_eq!(
            t.read(),
            PinnedHostBytes {
                now: 200,
                peak: 200
            }
        );
    }
}

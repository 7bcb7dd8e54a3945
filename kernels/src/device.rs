//! One CUDA device: its context, streams and the embedded modules loaded into it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{sys, CudaContext, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::error::{GpuError, Result};
use crate::ntt::NttState;

/// What GetStatus reports about a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    pub ordinal: usize,
    pub name: String,
    pub total_mem: usize,
    pub free_mem: usize,
    /// (major, minor), e.g. (9, 0) for an H100/H200.
    pub compute_capability: (i32, i32),
}

/// What [`GpuDevice::release_idle_pool_memory`] handed back to the driver, and what the
/// device's memory pool still reserves after it (in use, or kept for reuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolRelease {
    pub released: u64,
    pub reserved: u64,
}

/// A CUDA device opened for work: the primary context, a compute stream, a copy stream
/// (so that uploads overlap kernels), a side stream (kernels that overlap the compute
/// stream's inside one call), and a cache of loaded modules.
///
/// Callers serialise work on one device through the engine's per-device mutex; the inner
/// caches are locked anyway so that a `GpuDevice` is safely `Sync`.
pub struct GpuDevice {
    ordinal: usize,
    name: String,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    copy_stream: Arc<CudaStream>,
    side_stream: Arc<CudaStream>,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    pub(crate) ntt: Mutex<NttState>,
}

/// cudarc panics on first use where libcuda is missing; ask the loader first.
fn ensure_driver() -> Result<()> {
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(GpuError::NoDriver)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these caches leaves nothing half-written that matters
    // (entries are inserted whole), so a poisoned lock is recovered rather than propagated.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl GpuDevice {
    /// Number of CUDA devices; an error when there is no driver.
    pub fn count() -> Result<usize> {
        ensure_driver()?;
        Ok(CudaContext::device_count()? as usize)
    }

    /// Opens device `ordinal`. Fails with a clear error when there is no driver, no such
    /// device, or (checked here so that it surfaces early) no embedded kernels.
    pub fn open(ordinal: usize) -> Result<GpuDevice> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        if !crate::KERNELS_BUILT {
            return Err(GpuError::NoKernels);
        }
        let ctx = CudaContext::new(ordinal)?;
        let name = ctx.name()?;
        let stream = ctx.new_stream()?;
        let copy_stream = ctx.new_stream()?;
        let side_stream = ctx.new_stream()?;
        let dev = GpuDevice {
            ordinal,
            name,
            ctx,
            stream,
            copy_stream,
            side_stream,
            modules: Mutex::new(HashMap::new()),
            ntt: Mutex::new(NttState::default()),
        };
        dev.keep_pool_memory()?;
        Ok(dev)
    }

    /// The device's default memory pool, which every stream-ordered allocation here uses.
    fn pool(&self) -> Result<sys::CUmemoryPool> {
        self.ctx.bind_to_thread()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: plain driver query on this context's device.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()).result()? };
        Ok(pool)
    }

    fn pool_attribute(&self, attr: sys::CUmemPool_attribute) -> Result<u64> {
        let pool = self.pool()?;
        let mut v = 0u64;
        // SAFETY: the attributes read here are u64 values; `v` outlives the call.
        unsafe {
            sys::cuMemPoolGetAttribute(pool, attr, &mut v as *mut u64 as *mut std::ffi::c_void)
                .result()?
        };
        Ok(v)
    }

    /// Lets the pool keep every byte that stream-ordered frees return while the device is
    /// busy, instead of handing what exceeds the threshold back to the driver at each
    /// synchronisation. The threshold counts the resident bases too (~75 GB at 2^27), so
    /// with the earlier one (an eighth of the device, at most 16 GiB) every transient buffer
    /// of a 2^27 step (H's ~26 GB, the a, b, c vectors) was unmapped at the step's end and
    /// mapped again in the next: the next step's upload and evaluation measured 58 and 49 ms
    /// instead of 22 and 29, and the step 1,310 ms against 1,239 (kernels/NOTES.md, part
    /// 15). Every allocation here comes from this pool, so what it keeps serves them all;
    /// [`Self::release_idle_pool_memory`] hands it back once the device idles.
    /// [`Self::free_mem`] counts what the pool holds idle as free.
    /// `CUZK_POOL_KEEP_GIB` sets the threshold instead (the A/B's knob).
    fn keep_pool_memory(&self) -> Result<()> {
        let mut keep = match std::env::var("CUZK_POOL_KEEP_GIB")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            Some(gib) => gib << 30,
            None => self.total_mem()? as u64,
        };
        let pool = self.pool()?;
        // SAFETY: as above; `keep` outlives the call.
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut keep as *mut u64 as *mut std::ffi::c_void,
            )
            .result()?;
        }
        Ok(())
    }

    /// What the pool keeps of its idle memory once the device has no work: an eighth of the
    /// device, at most 16 GiB (an NTT's output and an MSM's working set at 2^24 stay mapped;
    /// re-mapping them cost ~0.5 ms per 2^24 NTT in the harness).
    pub fn idle_pool_keep(&self) -> Result<u64> {
        Ok((self.total_mem()? as u64 / 8).min(16 << 30))
    }

    /// Hands what the memory pool holds idle back to the driver, down to
    /// [`Self::idle_pool_keep`] reserved bytes, for other processes on the device while
    /// this one has no work. Memory still in use stays.
    ///
    /// The context is synchronised first: the driver cannot release memory whose
    /// stream-ordered free the host has not yet seen complete, and a proving step's last
    /// buffers are freed after its last synchronisation (their drops queue the frees). On
    /// the H200 the trim without it released 32 MiB after a 2^26 job (kernels/NOTES.md,
    /// part 16). Synchronising the context, not this handle's streams, covers every
    /// backend's handle on the device.
    pub fn release_idle_pool_memory(&self) -> Result<PoolRelease> {
        self.ctx.synchronize()?;
        let reserved = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
        let before = self.pool_attribute(reserved)?;
        let (pool, keep) = (self.pool()?, self.idle_pool_keep()?);
        // SAFETY: plain driver call on this context's default pool.
        unsafe { sys::cuMemPoolTrimTo(pool, keep as usize).result()? };
        let after = self.pool_attribute(reserved)?;
        Ok(PoolRelease {
            released: before.saturating_sub(after),
            reserved: after,
        })
    }

    /// Every device the driver sees, with memory figures; empty without a driver.
    pub fn list() -> Vec<GpuInfo> {
        let Ok(count) = Self::count() else {
            return Vec::new();
        };
        (0..count)
            .filter_map(|ordinal| {
                let ctx = CudaContext::new(ordinal).ok()?;
                let (free_mem, total_mem) = ctx.mem_get_info().ok()?;
                Some(GpuInfo {
                    ordinal,
                    name: ctx.name().ok()?,
                    total_mem,
                    free_mem,
                    compute_capability: ctx.compute_capability().ok()?,
                })
            })
            .collect()
    }

    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn total_mem(&self) -> Result<usize> {
        Ok(self.ctx.total_mem()?)
    }

    /// Memory a new allocation can get: free at the driver plus what the memory pool holds
    /// idle (see `keep_pool_memory`).
    pub fn free_mem(&self) -> Result<usize> {
        self.ctx.bind_to_thread()?;
        let driver = self.ctx.mem_get_info()?.0;
        let reserved =
            self.pool_attribute(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
        let used =
            self.pool_attribute(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
        Ok(driver + reserved.saturating_sub(used) as usize)
    }

    /// The most device memory in use, as the driver counts it (every process's allocations,
    /// and what this device's memory pool holds idle), that this process can have seen so
    /// far: what is in use now outside the pool, plus the pool's own high-water mark in place
    /// of what it holds now. An MSM allocates and frees its working set within one call, so
    /// a query after the call would miss it; the pool's mark still holds it.
    pub fn used_mem_high_water(&self) -> Result<usize> {
        self.ctx.bind_to_thread()?;
        let (free, total) = self.ctx.mem_get_info()?;
        let reserved =
            self.pool_attribute(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
        let reserved_high =
            self.pool_attribute(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?;
        let outside_pool = total.saturating_sub(free).saturating_sub(reserved as usize);
        Ok(outside_pool + reserved_high.max(reserved) as usize)
    }

    pub fn info(&self) -> Result<GpuInfo> {
        self.ctx.bind_to_thread()?;
        let (free_mem, total_mem) = self.ctx.mem_get_info()?;
        Ok(GpuInfo {
            ordinal: self.ordinal,
            name: self.name.clone(),
            total_mem,
            free_mem,
            compute_capability: self.ctx.compute_capability()?,
        })
    }

    pub fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The compute stream: kernels of one job run here in order.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A second stream for host<->device copies that overlap compute.
    pub fn copy_stream(&self) -> &Arc<CudaStream> {
        &self.copy_stream
    }

    /// A third stream, for kernels that run beside the compute stream's within one call:
    /// the MSM sorts its next bucket sets here while the compute stream accumulates the
    /// last ones (msm/stages.rs).
    pub fn side_stream(&self) -> &Arc<CudaStream> {
        &self.side_stream
    }

    /// The embedded module `name` (fatbin of `cuda/<name>.cu`), loaded once per device.
    pub fn module(&self, name: &str) -> Result<Arc<CudaModule>> {
        let mut modules = lock(&self.modules);
        if let Some(m) = modules.get(name) {
            return Ok(m.clone());
        }
        let bytes = crate::fatbin(name).ok_or_else(|| {
            if crate::KERNELS_BUILT {
                GpuError::NoModule(name.to_owned())
            } else {
                GpuError::NoKernels
            }
        })?;
        // cuModuleLoadData takes the size from the fatbin header and copies the image.
        let module = self.ctx.load_module(Ptx::from_binary(bytes.to_vec()))?;
        modules.insert(name.to_owned(), module.clone());
        Ok(module)
    }

    /// Blocks until all work on every stream is done, returning the first error.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize()?;
        self.copy_stream.synchronize()?;
        self.side_stream.synchronize()?;
        Ok(())
    }

    pub(crate) fn ntt_state(&self) -> std::sync::MutexGuard<'_, NttState> {
        lock(&self.ntt)
    }
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuDevice({}: {})", self.ordinal, self.name)
    }
}

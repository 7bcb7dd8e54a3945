//! Devices of the prove stage. Each has one backend and ONE mutex around all work that
//! allocates device memory or launches kernels: with two locks (staging, compute), memory
//! staged under one stayed allocated while another worker computed, and devices ran out of
//! memory — CUDA memory operations are device-global. The CPU backend is a device too, so
//! the pipeline has the same shape with and without a GPU.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, SharedBackend};
use crate::config::{BackendChoice, EngineConfig};
use crate::job::{Error, JobId, ProofKind, Result};

pub struct Device {
    /// "cpu" or "cuda0", "cuda1", ... (TIMELINE `device=`).
    pub label: String,
    pub ordinal: u32,
    pub backend: SharedBackend,
    lock: Mutex<()>,
    current: Mutex<Option<(JobId, ProofKind)>>,
    busy_ns: AtomicU64,
    /// The most device memory in use read after any device step (0: none read, or no device).
    vram_peak: AtomicU64,
}

impl Device {
    fn new(label: String, ordinal: u32, backend: SharedBackend) -> Self {
        Device {
            label,
            ordinal,
            backend,
            lock: Mutex::new(()),
            current: Mutex::new(None),
            busy_ns: AtomicU64::new(0),
            vram_peak: AtomicU64::new(0),
        }
    }

    /// Exclusive use of the device.
    pub fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock.lock()
    }

    pub fn set_current(&self, job: Option<(JobId, ProofKind)>) {
        *self.current.lock() = job;
    }

    pub fn current(&self) -> Option<(JobId, ProofKind)> {
        self.current.lock().clone()
    }

    pub fn add_busy(&self, d: std::time::Duration) {
        self.busy_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn busy_seconds(&self) -> f64 {
        self.busy_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Read the device's memory high-water mark into `vram_peak`. Called at the end of each
    /// device step, under the device's lock: the kernels' reading holds the step's peak (the
    /// NTT's four domain-sized vectors, an MSM's working set) even after the step freed it.
    pub fn sample_memory(&self) {
        if let Some(bytes) = self.backend.device_memory_high_water() {
            self.vram_peak.fetch_max(bytes, Ordering::Relaxed);
        }
    }

    /// The most device memory in use at a device step's end so far (all processes on the
    /// device, as the driver counts it); 0 before the first step or without a device.
    pub fn vram_peak(&self) -> u64 {
        self.vram_peak.load(Ordering::Relaxed)
    }
}

/// Where a partition goes when its device failed: the CPU backend, which needs nothing but
/// memory. When the CPU is already the proving device, it is that device (its mutex).
pub fn cpu_fallback(devices: &[Arc<Device>]) -> Arc<Device> {
    match devices.iter().find(|d| d.label == "cpu") {
        Some(d) => d.clone(),
        None => Arc::new(Device::new(
            "cpu-fallback".into(),
            0,
            Arc::new(CpuBackend::new()),
        )),
    }
}

/// One device proving on `backend`, labelled `test0` (TestHooks::device_backend).
pub fn test_device(backend: SharedBackend) -> Arc<Device> {
    Arc::new(Device::new("test0".into(), 0, backend))
}

/// The devices the configuration asks for. `auto` takes every CUDA device when the kernels
/// are built in and a driver answers, and the CPU otherwise.
pub fn open_devices(config: &EngineConfig) -> Result<Vec<Arc<Device>>> {
    let cpu = || {
        vec![Arc::new(Device::new(
            "cpu".into(),
            0,
            Arc::new(CpuBackend::new()),
        ))]
    };
    match config.backend {
        BackendChoice::Cpu => Ok(cpu()),
        BackendChoice::Cuda => open_cuda(config),
        BackendChoice::Auto => match open_cuda(config) {
            Ok(devs) if !devs.is_empty() => Ok(devs),
            Ok(_) => Ok(cpu()),
            Err(e) => {
                tracing::info!("CUDA unavailable ({e}); proving on the CPU");
                Ok(cpu())
            }
        },
    }
}

fn open_cuda(config: &EngineConfig) -> Result<Vec<Arc<Device>>> {
    let ordinals: Vec<u32> = if config.devices.is_empty() {
        if !cuzk_kernels::KERNELS_BUILT {
            return Err(Error::Internal("built without CUDA kernels".into()));
        }
        let n =
            cuzk_kernels::GpuDevice::count().map_err(|e| Error::Internal(format!("CUDA: {e}")))?;
        (0..n as u32).collect()
    } else {
        config.devices.clone()
    };
    if ordinals.is_empty() {
        return Err(Error::Internal("CUDA: no devices".into()));
    }
    ordinals
        .into_iter()
        .map(|o| {
            let backend = crate::backend::cuda::CudaBackend::new(o as usize)
                .map_err(|e| Error::Internal(format!("CUDA device {o}: {e}")))?;
            if config.gpu_resident_bytes > 0 {
                crate::backend::cuda::msm::set_resident_budget(
                    backend.device(),
                    config.gpu_resident_bytes as usize,
                );
            }
            let backend: Arc<dyn Backend> = Arc::new(backend);
            Ok(Arc::new(Device::new(format!("cuda{o}"), o, backend)))
        })
        .collect()
}

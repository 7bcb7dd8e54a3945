//! Fixed-base multiplication on a GPU (cuzk_kernels::fixed_base), and the choice between it
//! and every CPU core.

use blstrs::{G1Affine, G2Affine, Scalar};
use cuzk_kernels::GpuDevice;

use super::{CpuFixedBase, FixedBase};
use crate::job::{Error, Result};

pub struct GpuFixedBase {
    dev: GpuDevice,
}

impl GpuFixedBase {
    pub fn open(ordinal: usize) -> Result<Self> {
        GpuDevice::open(ordinal)
            .map(|dev| GpuFixedBase { dev })
            .map_err(|e| Error::Params(format!("parameter generation on GPU {ordinal}: {e}")))
    }
}

fn gpu_error(e: cuzk_kernels::GpuError) -> Error {
    Error::Params(format!("fixed-base multiplication on the GPU: {e}"))
}

impl FixedBase for GpuFixedBase {
    fn g1(&self, base: &G1Affine, scalars: &[Scalar], out: &mut [G1Affine]) -> Result<()> {
        cuzk_kernels::fixed_base::g1_times(&self.dev, base, scalars, out).map_err(gpu_error)
    }

    fn g2(&self, base: &G2Affine, scalars: &[Scalar], out: &mut [G2Affine]) -> Result<()> {
        cuzk_kernels::fixed_base::g2_times(&self.dev, base, scalars, out).map_err(gpu_error)
    }
}

/// Where a generation's points are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// GPU 0 when there is one (and the kernels were built), else the CPU.
    Auto,
    Cpu,
    Gpu,
}

impl Engine {
    /// `CUZK_PARAMGEN=cpu|gpu` overrides auto (benchmarks of one against the other).
    pub fn from_env() -> Self {
        match std::env::var("CUZK_PARAMGEN").as_deref() {
            Ok("cpu") => Engine::Cpu,
            Ok("gpu") => Engine::Gpu,
            _ => Engine::Auto,
        }
    }

    /// The multiplier, and its name for reports ("gpu" or "cpu").
    pub fn open(self) -> Result<(Box<dyn FixedBase>, &'static str)> {
        let gpu = || GpuFixedBase::open(0).map(|g| (Box::new(g) as Box<dyn FixedBase>, "gpu"));
        let cpu = || (Box::new(CpuFixedBase::new()) as Box<dyn FixedBase>, "cpu");
        match self {
            Engine::Cpu => Ok(cpu()),
            Engine::Gpu => gpu(),
            Engine::Auto if cuzk_kernels::KERNELS_BUILT => Ok(gpu().unwrap_or_else(|e| {
                tracing::info!(error = %e, "parameter generation on the CPU");
                cpu()
            })),
            Engine::Auto => Ok(cpu()),
        }
    }
}

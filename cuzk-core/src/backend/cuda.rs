//! The CUDA backend: the H polynomial on the GPU (cuzk-kernels' NTTs), MSMs through
//! `cuda_msm.rs` (mounted here as `msm`).
//!
//! A `blstrs::Scalar` is `#[repr(transparent)]` over blst_fr, four u64 Montgomery limbs, and
//! the kernels use exactly that representation: vectors are reinterpreted, never converted.

use std::sync::Mutex;

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_kernels::msm::{select_scalars_in, DeviceDensity};
use cuzk_kernels::{DeviceScalars, GpuDevice, GpuError};
use ff::Field;

use super::density_cache::DensityCache;
use super::{
    AtFinish, Backend, BackendError, BegunG1, FromMatrices, G1Bases, G2Bases, IdleRelease, Query,
    ScalarVec,
};
use crate::between::{Between, Nothing};
use crate::footprint::HostCopies;
use crate::matrices::Matrices;
use crate::packed::PackedScalars;
use crate::pinned_pool::{PinnedBuf, PinnedPool};
use crate::synth::Density;

/// The kernels crate, for callers (benchmarks, tools) that drive the device directly.
pub use cuzk_kernels as kernels;
pub use cuzk_kernels::GpuInfo;

pub use crate::limbs::as_limbs;
use crate::limbs::as_limbs_mut;

#[path = "cuda_msm.rs"]
pub mod msm;
#[path = "cuda_r1cs.rs"]
mod r1cs;
pub use r1cs::csr_parts;

pub(crate) fn device_error(e: GpuError) -> BackendError {
    BackendError::Device(e.to_string())
}

/// Pinned buffers a device lends to synthesis at most: a packed aux for each partition in
/// synthesis or waiting for a device, at the defaults (pinned_pool.rs; ~160 MB each at 2^27).
const PINNED_BUFFERS: usize = 8;

/// One GPU, driven through cuzk-kernels.
pub struct CudaBackend {
    dev: GpuDevice,
    /// Circuit shapes' constraint matrices, for partitions whose a, b, c are evaluated here.
    matrices: r1cs::ResidentMatrices,
    /// Page-locked buffers lent to synthesis for packed aux vectors (pinned_pool.rs).
    pinned: PinnedPool,
    /// The A and B densities of the circuits in use, with their ranks, on the device.
    densities: Mutex<DensityCache<DeviceDensity>>,
}

impl CudaBackend {
    /// Opens device `ordinal` and loads the NTT kernels, so that a missing driver, a missing
    /// device, a build without kernels or a fatbin that does not load fails here, at startup,
    /// with a message that says which.
    pub fn new(ordinal: usize) -> Result<Self, BackendError> {
        if !cuzk_kernels::KERNELS_BUILT {
            return Err(BackendError::Device(
                "built without CUDA kernels (no nvcc at build time; run scripts/install-nvcc.sh)"
                    .into(),
            ));
        }
        let dev = GpuDevice::open(ordinal).map_err(device_error)?;
        dev.module("ntt").map_err(device_error)?;
        Ok(CudaBackend {
            dev,
            matrices: Default::default(),
            pinned: PinnedPool::new(PINNED_BUFFERS),
            densities: Mutex::new(DensityCache::from_env()),
        })
    }

    /// For tests and benchmarks: device `ordinal`'s backend, or None after printing why not
    /// (a panic where CUZK_REQUIRE_GPU=1, see cuzk_kernels::skip_without_device).
    pub fn new_or_skip(ordinal: usize) -> Option<Self> {
        match Self::new(ordinal) {
            Ok(b) => Some(b),
            Err(e) => {
                cuzk_kernels::skip_without_device(&e.to_string());
                None
            }
        }
    }

    pub fn device(&self) -> &GpuDevice {
        &self.dev
    }

    /// h as [`Backend::h_polynomial`], left on the device for an H MSM there.
    pub fn h_polynomial_on_device(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<cuzk_kernels::DeviceScalars, BackendError> {
        cuzk_kernels::ntt::h_polynomial_to_device(&self.dev, as_limbs(a), as_limbs(b), as_limbs(c))
            .map_err(map_error)
    }
}

fn map_error(e: GpuError) -> BackendError {
    match e {
        GpuError::LengthMismatch { a, b, c } => BackendError::LengthMismatch { a, b, c },
        GpuError::DomainTooLarge(l) => BackendError::DomainTooLarge(l),
        e => device_error(e),
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        format!("cuda:{} ({})", self.dev.ordinal(), self.dev.name())
    }

    fn host_copies(&self) -> HostCopies {
        HostCopies::Cuda
    }

    fn device_memory_high_water(&self) -> Option<u64> {
        self.dev.used_mem_high_water().ok().map(|b| b as u64)
    }

    fn release_idle_memory(&self) -> Result<Option<IdleRelease>, BackendError> {
        let pool = self.dev.release_idle_pool_memory().map_err(device_error)?;
        Ok(Some(IdleRelease {
            released: pool.released,
            kept: pool.reserved,
        }))
    }

    fn h_polynomial(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, BackendError> {
        let h = self.h_polynomial_on_device(&a, &b, &c)?;
        drop((a, b));
        // h goes into c's memory, which synthesis already touched: a fresh vector of 2^24
        // scalars costs more in first-touch page faults than the PCIe copy into it. The
        // uploads are complete (staged through pinned buffers) once h_polynomial_on_device
        // returns, so c is free to overwrite.
        let mut out = c;
        out.resize(h.len(), Scalar::ZERO);
        h.download_into(&self.dev, as_limbs_mut(&mut out))
            .map_err(map_error)?;
        Ok(out)
    }

    fn h_polynomial_for_msm(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<ScalarVec<'static>, BackendError> {
        let h = self.h_polynomial_on_device(&a, &b, &c)?;
        // Done when it returns (the NTT's time is reported apart from the MSMs').
        self.dev.synchronize().map_err(device_error)?;
        Ok(ScalarVec::Device(h))
    }

    fn evaluates_matrices(&self) -> bool {
        true
    }

    fn h_polynomial_from_matrices(
        &self,
        m: &Matrices,
        input: &[Scalar],
        aux: &ScalarVec<'_>,
    ) -> Result<FromMatrices, BackendError> {
        let uploaded;
        let aux = match aux {
            ScalarVec::Device(d) => d,
            ScalarVec::Host(h) => {
                uploaded = DeviceScalars::upload(&self.dev, as_limbs(h)).map_err(map_error)?;
                &uploaded
            }
        };
        r1cs::h_from_matrices(&self.dev, &self.matrices, m, input, aux)
    }

    fn load_scalars<'a>(&self, scalars: &'a [Scalar]) -> Result<ScalarVec<'a>, BackendError> {
        // Staged: pinning a 2^27 aux in place costs more than staging it (kernels/NOTES.md).
        let d = DeviceScalars::upload(&self.dev, as_limbs(scalars)).map_err(map_error)?;
        Ok(ScalarVec::Device(d))
    }

    fn load_packed(&self, packed: &PackedScalars) -> Result<ScalarVec<'static>, BackendError> {
        let one = as_limbs(&[Scalar::ONE])[0];
        let d = match packed.pinned() {
            Some((buf, words, wide)) => cuzk_kernels::msm::upload_packed_pinned(
                &self.dev,
                packed.len(),
                buf,
                words,
                wide,
                one,
            ),
            None => cuzk_kernels::msm::upload_packed(
                &self.dev,
                cuzk_kernels::msm::PackedParts {
                    len: packed.len(),
                    words: packed.words(),
                    wide: as_limbs(packed.wide()),
                    one,
                },
            ),
        }
        .map_err(map_error)?;
        Ok(ScalarVec::Device(d))
    }

    fn pinned_buffer(&self, elements: usize) -> Option<PinnedBuf> {
        self.pinned.take(&self.dev, elements)
    }

    fn takes_packed(&self) -> bool {
        true
    }

    fn select<'a>(
        &self,
        v: &ScalarVec<'a>,
        density: &Density,
    ) -> Result<ScalarVec<'a>, BackendError> {
        match v {
            ScalarVec::Host(h) => Ok(ScalarVec::Host(density.select(h).into())),
            ScalarVec::Device(d) => {
                let kept = msm::lock(&self.densities)
                    .get_or_derive(density, || {
                        DeviceDensity::upload(&self.dev, density.words(), density.len())
                    })
                    .map_err(map_error)?;
                select_scalars_in(&self.dev, d, &kept)
                    .map(ScalarVec::Device)
                    .map_err(map_error)
            }
        }
    }

    fn msm_g1_vec(
        &self,
        bases: G1Bases<'_>,
        v: &ScalarVec<'_>,
    ) -> Result<G1Projective, BackendError> {
        self.msm_g1_vec_between(bases, v, &mut Nothing)
    }

    fn msm_g1_vec_between(
        &self,
        bases: G1Bases<'_>,
        v: &ScalarVec<'_>,
        between: &mut dyn Between,
    ) -> Result<G1Projective, BackendError> {
        match v {
            ScalarVec::Host(h) => msm::msm_g1(&self.dev, bases, h),
            ScalarVec::Device(d) => {
                msm::msm_g1_device_scalars_between(&self.dev, bases, d, between)
            }
        }
    }

    fn msm_g1_vec_begin<'a>(
        &'a self,
        bases: G1Bases<'a>,
        v: ScalarVec<'a>,
    ) -> Result<Box<dyn BegunG1 + 'a>, BackendError> {
        match v {
            ScalarVec::Device(d) => msm::msm_g1_device_scalars_begin(&self.dev, bases, d),
            v => Ok(Box::new(AtFinish {
                backend: self,
                bases,
                v,
            })),
        }
    }

    fn msm_g2_vec(
        &self,
        bases: G2Bases<'_>,
        v: &ScalarVec<'_>,
    ) -> Result<G2Projective, BackendError> {
        match v {
            ScalarVec::Host(h) => msm::msm_g2(&self.dev, bases, h),
            ScalarVec::Device(d) => msm::msm_g2_device_scalars(&self.dev, bases, d),
        }
    }

    fn msm_g1(&self, bases: G1Bases<'_>, scalars: &[Scalar]) -> Result<G1Projective, BackendError> {
        msm::msm_g1(&self.dev, bases, scalars)
    }

    fn msm_g2(&self, bases: G2Bases<'_>, scalars: &[Scalar]) -> Result<G2Projective, BackendError> {
        msm::msm_g2(&self.dev, bases, scalars)
    }

    fn evict(&self, srs_id: &str) {
        msm::evict(&self.dev, srs_id);
        // Densities belong to circuits, not sets; what an operator evicts should leave
        // nothing behind, and the next selection derives its bitmap again (a few ms).
        msm::lock(&self.densities).clear();
    }

    fn keep_for_release(&self, srs_id: &str, queries: &[(Query, usize)]) -> bool {
        msm::keep_for_release(&self.dev, srs_id, queries)
    }
}

/// Every CUDA device the driver sees (ordinal, name, memory), for GetStatus. Empty where
/// there is no driver; devices are listed even in a build without kernels, which
/// [`kernels_built`] tells apart.
pub fn cuda_status() -> Vec<GpuInfo> {
    GpuDevice::list()
}

/// Whether this binary carries the CUDA kernels.
pub fn kernels_built() -> bool {
    cuzk_kernels::KERNELS_BUILT
}

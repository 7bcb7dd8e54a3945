//! CUDA kernels for cuzk and the Rust side that loads and drives them.
//!
//! `build.rs` compiles every top-level `cuda/*.cu` into its own fatbin and embeds it here;
//! [`fatbin`] finds one by file stem ("ntt", "msm", "fixed_base"). Without nvcc at build time the crate
//! still builds, [`KERNELS_BUILT`] is false and every device entry point says so.
//!
//! The driver is loaded at run time (cudarc, dynamic loading): one binary runs on machines
//! with and without a GPU. [`GpuDevice::open`] reports "no CUDA driver" where there is none.

mod device;
mod error;
pub mod fixed_base;
mod memory;
pub mod msm;
pub mod ntt;
pub mod r1cs;

pub use device::{GpuDevice, GpuInfo, PoolRelease};
pub use error::{GpuError, Result};
pub use memory::{
    pinned_host_bytes, DeviceScalars, HostRegistration, PinnedHostBytes, PinnedScalars,
};
pub use ntt::Limbs;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/fatbins.rs"));
}

/// Whether nvcc compiled the kernels into this build.
pub const KERNELS_BUILT: bool = embedded::KERNELS_BUILT;

/// The embedded fatbin compiled from `cuda/<name>.cu`, if any.
pub fn fatbin(name: &str) -> Option<&'static [u8]> {
    embedded::FATBINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, bytes)| *bytes)
}

/// Names of the embedded fatbins (file stems of the top-level .cu files).
pub fn fatbin_names() -> Vec<&'static str> {
    embedded::FATBINS.iter().map(|(n, _)| *n).collect()
}

/// For tests and benchmarks: device `ordinal`, or None after printing
/// "SKIP: no CUDA device (why)" (see [`skip_without_device`]).
pub fn device_or_skip(ordinal: usize) -> Option<GpuDevice> {
    if !KERNELS_BUILT {
        skip_without_device("built without CUDA kernels");
        return None;
    }
    match GpuDevice::open(ordinal) {
        Ok(d) => Some(d),
        Err(e) => {
            skip_without_device(&e.to_string());
            None
        }
    }
}

/// A GPU test or benchmark that found no device says so and skips, except where
/// `CUZK_REQUIRE_GPU=1` (the device scripts set it): there a dead driver or a build without
/// kernels must fail the check, not read as a pass.
pub fn skip_without_device(why: &str) {
    if std::env::var("CUZK_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("CUZK_REQUIRE_GPU=1 but no CUDA device: {why}");
    }
    println!("SKIP: no CUDA device ({why})");
}

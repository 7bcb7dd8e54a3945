use cudarc::driver::DriverError;

/// What can go wrong on the device side. None of these panic; a caller fails (or re-routes)
/// the job and carries on.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no CUDA driver (libcuda could not be loaded)")]
    NoDriver,
    #[error("built without CUDA kernels (no nvcc at build time; run scripts/install-nvcc.sh)")]
    NoKernels,
    #[error("no CUDA device with ordinal {ordinal} ({count} present)")]
    NoDevice { ordinal: usize, count: usize },
    #[error("no embedded kernel module {0:?}")]
    NoModule(String),
    #[error("evaluation domain of 2^{0} is larger than the kernels support (2^28)")]
    DomainTooLarge(u32),
    #[error("input vectors differ in length: a={a}, b={b}, c={c}")]
    LengthMismatch { a: usize, b: usize, c: usize },
    #[error("{0}")]
    Invalid(String),
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
}

pub type Result<T, E = GpuError> = std::result::Result<T, E>;

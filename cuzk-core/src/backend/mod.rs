//! The heavy arithmetic of a Groth16 proof, behind one trait so that the CPU and the
//! CUDA implementations are interchangeable and must agree bit for bit.

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

pub mod cpu;
pub mod cuda;
pub mod ntt;

/// Errors a backend can report. A device failure fails (or re-routes) the job; it never
/// takes the daemon down.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("evaluation domain of 2^{0} exceeds the field's two-adicity")]
    DomainTooLarge(u32),
    #[error("input vectors differ in length: a={a}, b={b}, c={c}")]
    LengthMismatch { a: usize, b: usize, c: usize },
    #[error("msm: {points} bases for {scalars} scalars")]
    MsmShape { points: usize, scalars: usize },
    #[error("device error: {0}")]
    Device(String),
}

/// One set of proving-key point vectors that a backend may keep resident (on a device).
/// `id` names the parameter set (e.g. "synthetic-2^16", "porep-32g") so that a backend can
/// cache uploads; the slices are the parameters' own vectors, never copies.
#[derive(Clone, Copy)]
pub struct G1Bases<'a> {
    pub srs_id: &'a str,
    pub query: Query,
    pub points: &'a [G1Affine],
}

#[derive(Clone, Copy)]
pub struct G2Bases<'a> {
    pub srs_id: &'a str,
    pub query: Query,
    pub points: &'a [G2Affine],
}

/// Which part of the proving key a set of bases is (for residency bookkeeping). The parts
/// are disjoint, so a backend caching by (srs_id, query) never stores a point twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Query {
    H,
    L,
    /// The A query is stored as inputs (dense) then aux (by density): two disjoint vectors.
    AInput,
    AAux,
    BG1Input,
    BG1Aux,
    BG2Input,
    BG2Aux,
    /// Ad-hoc bases (benchmarks, tests): never cached.
    Adhoc,
}

/// The H polynomial's coefficients where the backend left them: on the host, or in device
/// memory, where the CUDA backend's NTTs leave them for its H MSM (at 2^22 that spares a
/// 128 MB download and the same upload again; at 2^27, 4.3 GB each way).
pub enum HCoeffs {
    Host(Vec<Scalar>),
    Device(cuzk_kernels::DeviceScalars),
}

/// The arithmetic kernels of a Groth16 prover.
///
/// Callers serialise use of one device through the engine's per-device mutex; an
/// implementation may assume it is not called concurrently for the same device.
pub trait Backend: Send + Sync {
    /// A short human name: "cpu", "cuda:0 (NVIDIA H200)".
    fn name(&self) -> String;

    /// The coefficients of h(x) = (a(x) b(x) - c(x)) / z(x), given the evaluations of a, b, c
    /// over the smallest power-of-two domain that holds them (zero padded). Returns `n - 1`
    /// coefficients, `n` the domain size, exactly as bellperson's prover does.
    fn h_polynomial(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, BackendError>;

    /// h as [`Backend::h_polynomial`], left where [`Backend::msm_h`] wants it (the host
    /// unless the backend says otherwise). Returns once h is computed, so that it can be timed.
    fn h_polynomial_for_msm(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<HCoeffs, BackendError> {
        self.h_polynomial(a, b, c).map(HCoeffs::Host)
    }

    /// sum_i h_i H_i for coefficients from [`Backend::h_polynomial_for_msm`].
    fn msm_h(&self, bases: G1Bases<'_>, h: HCoeffs) -> Result<G1Projective, BackendError> {
        match h {
            HCoeffs::Host(h) => self.msm_g1(bases, &h),
            HCoeffs::Device(_) => Err(BackendError::Device(
                "H coefficients in device memory reached a backend without a device".into(),
            )),
        }
    }

    /// sum_i scalars[i] * bases[i]; `bases.points.len() >= scalars.len()`, extra bases ignored.
    fn msm_g1(&self, bases: G1Bases<'_>, scalars: &[Scalar]) -> Result<G1Projective, BackendError>;

    /// As `msm_g1`, in G2.
    fn msm_g2(&self, bases: G2Bases<'_>, scalars: &[Scalar]) -> Result<G2Projective, BackendError>;

    /// Drop whatever the backend keeps resident for a parameter set (EvictSRS).
    fn evict(&self, _srs_id: &str) {}
}

pub type SharedBackend = Arc<dyn Backend>;

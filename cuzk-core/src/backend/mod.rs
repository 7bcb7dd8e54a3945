//! The heavy arithmetic of a Groth16 proof, behind one trait so that the CPU and the
//! CUDA implementations are interchangeable and must agree bit for bit.

use std::borrow::Cow;
use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use crate::between::Between;
use crate::footprint::HostCopies;
use crate::matrices::Matrices;
use crate::packed::PackedScalars;
use crate::pinned_pool::PinnedBuf;
use crate::synth::Density;

pub mod cpu;
pub mod cuda;
pub mod density_cache;
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
    /// The set's host copy was released (host_release.rs) and this backend does not hold
    /// the vector: the partition is retried once the set is loaded again.
    #[error("the host copy of {srs_id}'s {query:?} points was released, and this backend does not hold them")]
    BasesReleased { srs_id: String, query: Query },
    /// The witness fails rows of its circuit shape's recorded matrices: a/b/c from them
    /// would not be the circuit's. The caller drops the matrices and synthesizes again.
    #[error("{rows} of {of} constraints unsatisfied by the witness (matrices {key})")]
    Unsatisfied { rows: u64, of: usize, key: String },
}

/// One proving-key point vector that a backend may keep resident (on a device). `srs_id`
/// names the parameter set (e.g. "synthetic-2^16", "porep-32g") and `query` the vector, so
/// that a backend can cache uploads; `points` is the parameters' own vector, never a copy.
///
/// Once a set's host copy has been released (host_release.rs), `points` is empty and `len`
/// is the vector's length: only a backend that holds the vector itself can use it, and any
/// other answers [`BackendError::BasesReleased`].
#[derive(Clone, Copy)]
pub struct Bases<'a, A> {
    pub srs_id: &'a str,
    pub query: Query,
    pub points: &'a [A],
    pub len: usize,
}

pub type G1Bases<'a> = Bases<'a, G1Affine>;
pub type G2Bases<'a> = Bases<'a, G2Affine>;

impl<'a, A> Bases<'a, A> {
    /// A vector on the host.
    pub fn new(srs_id: &'a str, query: Query, points: &'a [A]) -> Self {
        Bases {
            srs_id,
            query,
            points,
            len: points.len(),
        }
    }

    /// A vector of `len` points whose host copy was released.
    pub fn released(srs_id: &'a str, query: Query, len: usize) -> Self {
        Bases {
            srs_id,
            query,
            points: &[],
            len,
        }
    }

    /// Whether the host holds no copy of a vector that has points.
    pub fn is_released(&self) -> bool {
        self.points.len() < self.len
    }

    /// The first `n` points on the host: an MSM's shape error when the vector is shorter, or
    /// `BasesReleased` when its host copy is gone.
    pub fn host(&self, n: usize) -> Result<&'a [A], BackendError> {
        if self.len < n {
            return Err(BackendError::MsmShape {
                points: self.len,
                scalars: n,
            });
        }
        self.points
            .get(..n)
            .ok_or_else(|| BackendError::BasesReleased {
                srs_id: self.srs_id.to_string(),
                query: self.query,
            })
    }
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

/// A vector of MSM scalars where the backend's MSMs read it: on the host, or in device
/// memory. The CUDA backend keeps H where its NTTs left it (at 2^22 that spares a 128 MB
/// download and the same upload again; at 2^27, 4.3 GB each way) and uploads the aux
/// assignment once for the L, A and B MSMs, selecting A's and B's scalars on the device.
pub enum ScalarVec<'a> {
    Host(Cow<'a, [Scalar]>),
    Device(cuzk_kernels::DeviceScalars),
}

impl ScalarVec<'_> {
    pub fn len(&self) -> usize {
        match self {
            ScalarVec::Host(v) => v.len(),
            ScalarVec::Device(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The H polynomial of a deferred partition, and how long a, b, c took to evaluate (the
/// device step's breakdown in the TIMELINE).
pub struct FromMatrices {
    pub h: ScalarVec<'static>,
    pub evaluate: std::time::Duration,
}

pub(crate) fn unsatisfied(m: &Matrices, rows: u64) -> BackendError {
    BackendError::Unsatisfied {
        rows,
        of: m.num_constraints(),
        key: m.key.clone(),
    }
}

fn no_device() -> BackendError {
    BackendError::Device("scalars in device memory reached a backend without a device".into())
}

/// What [`Backend::release_idle_memory`] handed back to the driver, and what the device
/// still holds for this process after it (in use, or kept for reuse): TIMELINE's
/// DEVICE_IDLE_RELEASE `bytes` and `kept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleRelease {
    pub released: u64,
    pub kept: u64,
}

/// The arithmetic kernels of a Groth16 prover.
///
/// Callers serialise use of one device through the engine's per-device mutex; an
/// implementation may assume it is not called concurrently for the same device.
pub trait Backend: Send + Sync {
    /// A short human name: "cpu", "cuda:0 (NVIDIA H200)".
    fn name(&self) -> String;

    /// Which host copies this backend's device step makes beside the synthesized vectors,
    /// for the memory the engine reserves per partition (footprint.rs).
    fn host_copies(&self) -> HostCopies;

    /// The most device memory in use so far, read after each device step (GetStatus'
    /// `vram_peak_bytes`); None where the backend has no device.
    fn device_memory_high_water(&self) -> Option<u64> {
        None
    }

    /// Hands device memory held idle for reuse (a memory pool's) back to the driver, called
    /// under the device's lock once it has had no work for a while. None where the backend
    /// holds none.
    fn release_idle_memory(&self) -> Result<Option<IdleRelease>, BackendError> {
        Ok(None)
    }

    /// The coefficients of h(x) = (a(x) b(x) - c(x)) / z(x), given the evaluations of a, b, c
    /// over the smallest power-of-two domain that holds them (zero padded). Returns `n - 1`
    /// coefficients, `n` the domain size, exactly as bellperson's prover does.
    fn h_polynomial(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, BackendError>;

    /// h as [`Backend::h_polynomial`], left where the backend's MSMs read it (the host
    /// unless the backend says otherwise). Returns once h is computed, so that it can be timed.
    fn h_polynomial_for_msm(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<ScalarVec<'static>, BackendError> {
        Ok(ScalarVec::Host(Cow::Owned(self.h_polynomial(a, b, c)?)))
    }

    /// Whether a, b, c are best evaluated by this backend, in the device step, from the
    /// circuit's matrices and the assignment (the CUDA backend: on the device, beside the
    /// aux assignment it uploads anyway), rather than by the synthesis workers.
    fn evaluates_matrices(&self) -> bool {
        false
    }

    /// h as [`Backend::h_polynomial_for_msm`], for a partition whose a, b, c were deferred:
    /// evaluated from `m` on the assignment (`aux` as `load_scalars` left it). Here on CPU
    /// threads; a backend that `evaluates_matrices` does it where its NTTs run.
    fn h_polynomial_from_matrices(
        &self,
        m: &Matrices,
        input: &[Scalar],
        aux: &ScalarVec<'_>,
    ) -> Result<FromMatrices, BackendError> {
        let ScalarVec::Host(aux) = aux else {
            return Err(no_device());
        };
        let t = std::time::Instant::now();
        let e = crate::matrices::evaluate(m, input, aux.as_ref());
        if e.unsatisfied != 0 {
            return Err(unsatisfied(m, e.unsatisfied as u64));
        }
        let evaluate = t.elapsed();
        Ok(FromMatrices {
            h: self.h_polynomial_for_msm(e.a, e.b, e.c)?,
            evaluate,
        })
    }

    /// `scalars` where this backend's MSMs read them, for several MSMs over one vector.
    fn load_scalars<'a>(&self, scalars: &'a [Scalar]) -> Result<ScalarVec<'a>, BackendError> {
        Ok(ScalarVec::Host(Cow::Borrowed(scalars)))
    }

    /// As `load_scalars`, for an assignment the synthesis worker packed (packed.rs). Here:
    /// unpacked on the host.
    fn load_packed(&self, packed: &PackedScalars) -> Result<ScalarVec<'static>, BackendError> {
        Ok(ScalarVec::Host(Cow::Owned(packed.unpack())))
    }

    /// Page-locked host memory for `elements` elements of a packed vector
    /// (`PackedScalars::pin`), from which `load_packed` uploads by DMA alone; None where the
    /// backend has none to lend (the CPU's, or a pool with every buffer out).
    fn pinned_buffer(&self, _elements: usize) -> Option<PinnedBuf> {
        None
    }

    /// Whether `load_packed` is this backend's fast way in (the device unpacks, so the
    /// packed vector is what crosses the bus): the synthesis worker packs only for these.
    fn takes_packed(&self) -> bool {
        false
    }

    /// The members of `v` in `density` (indexed like `v`), in order, where `v` is: the
    /// scalars of a query whose key holds points only for those variables.
    fn select<'a>(
        &self,
        v: &ScalarVec<'a>,
        density: &Density,
    ) -> Result<ScalarVec<'a>, BackendError> {
        match v {
            ScalarVec::Host(h) => Ok(ScalarVec::Host(Cow::Owned(density.select(h)))),
            ScalarVec::Device(_) => Err(no_device()),
        }
    }

    /// As `msm_g1`, over a vector from `h_polynomial_for_msm`, `load_scalars` or `select`.
    fn msm_g1_vec(
        &self,
        bases: G1Bases<'_>,
        v: &ScalarVec<'_>,
    ) -> Result<G1Projective, BackendError> {
        match v {
            ScalarVec::Host(h) => self.msm_g1(bases, h),
            ScalarVec::Device(_) => Err(no_device()),
        }
    }

    /// As `msm_g1_vec`, letting `between`'s work in at the MSM's own pause points: the CUDA
    /// backend has them between the stages of an MSM of 2^24 scalars or more (a 2^27
    /// partition's H), a backend without any runs the MSM through.
    fn msm_g1_vec_between(
        &self,
        bases: G1Bases<'_>,
        v: &ScalarVec<'_>,
        between: &mut dyn Between,
    ) -> Result<G1Projective, BackendError> {
        let _ = between;
        self.msm_g1_vec(bases, v)
    }

    /// Begins `msm_g1_vec` (taking the vector), to be finished after the caller's other
    /// work: the CUDA backend sorts the first stage of a 2^27 H MSM on the device beside the
    /// L, A and B MSMs that run meanwhile. Here: all of it at `finish`.
    fn msm_g1_vec_begin<'a>(
        &'a self,
        bases: G1Bases<'a>,
        v: ScalarVec<'a>,
    ) -> Result<Box<dyn BegunG1 + 'a>, BackendError> {
        Ok(Box::new(AtFinish {
            backend: self,
            bases,
            v,
        }))
    }

    /// As `msm_g1_vec`, in G2.
    fn msm_g2_vec(
        &self,
        bases: G2Bases<'_>,
        v: &ScalarVec<'_>,
    ) -> Result<G2Projective, BackendError> {
        match v {
            ScalarVec::Host(h) => self.msm_g2(bases, h),
            ScalarVec::Device(_) => Err(no_device()),
        }
    }

    /// sum_i scalars[i] * bases[i]; `bases.len >= scalars.len()`, extra bases ignored.
    fn msm_g1(&self, bases: G1Bases<'_>, scalars: &[Scalar]) -> Result<G1Projective, BackendError>;

    /// As `msm_g1`, in G2.
    fn msm_g2(&self, bases: G2Bases<'_>, scalars: &[Scalar]) -> Result<G2Projective, BackendError>;

    /// Drop whatever the backend keeps resident for a parameter set (EvictSRS).
    fn evict(&self, _srs_id: &str) {}

    /// Whether this backend holds every vector of `srs_id` in `queries` (query, length) itself,
    /// in its final form (a device's folding decided), so that the set's host copy may be
    /// released (host_release.rs). When it answers true it keeps them from now on: they are
    /// no longer dropped to make room for other vectors, only by `evict`.
    fn keep_for_release(&self, _srs_id: &str, _queries: &[(Query, usize)]) -> bool {
        false
    }
}

pub type SharedBackend = Arc<dyn Backend>;

/// A G1 MSM begun by [`Backend::msm_g1_vec_begin`].
pub trait BegunG1 {
    /// Queues more of it beside the caller's work: called at each of the caller's phase
    /// ends (the prover: after L, A and B_G1).
    fn advance(&mut self) -> Result<(), BackendError>;

    /// Its result, `between`'s work let in at its pause points.
    fn finish(self: Box<Self>, between: &mut dyn Between) -> Result<G1Projective, BackendError>;

    /// Whether part of it runs ahead, beside the caller's work (false: all of it runs at
    /// `finish`, and the caller may as well finish it at once).
    fn is_ahead(&self) -> bool {
        false
    }
}

/// A begun MSM that runs whole at `finish`.
pub struct AtFinish<'a, B: ?Sized> {
    pub backend: &'a B,
    pub bases: G1Bases<'a>,
    pub v: ScalarVec<'a>,
}

impl<B: Backend + ?Sized> BegunG1 for AtFinish<'_, B> {
    fn advance(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    fn finish(self: Box<Self>, between: &mut dyn Between) -> Result<G1Projective, BackendError> {
        self.backend
            .msm_g1_vec_between(self.bases, &self.v, between)
    }
}

//! The Groth16 prover, as the recipe reads: H polynomial, then the five multi-scalar
//! multiplications, then assembly with the blinding factors r and s.
//!
//! The device part (`prove_on_device`) runs under the engine's per-device mutex; assembly
//! (`assemble`, in finalize) is cheap CPU work done after the lock is released.

use std::time::{Duration, Instant};

use bellperson::groth16::{Parameters, Proof, VerifyingKey};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use group::{prime::PrimeCurveAffine, Curve, Group};

use crate::backend::{Backend, BackendError, BegunG1, Query};
use crate::between::{Between, Counted, Nothing};
use crate::key::Key;
use crate::synth::Synthesized;

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("parameters do not fit the circuit: {0}")]
    ParamsMismatch(String),
    #[error("verifying key has a point at infinity")]
    DegenerateKey,
}

/// The MSM results of one partition: everything assembly needs besides r, s and the key.
#[derive(Clone, Debug, PartialEq)]
pub struct MsmResults {
    pub h: G1Projective,
    pub l: G1Projective,
    /// sum over inputs and A-dense aux of w_i * A_i.
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// Time spent in each half of the device work, for the TIMELINE, and in each MSM (the
/// benchmarks of real partitions break the step down by it).
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceTimings {
    /// The phase before the MSMs: a partition's H polynomial (its NTTs), with a deferred
    /// partition's aux upload and a, b, c evaluation (`upload`, `evaluate`) included.
    pub ntt: Duration,
    /// Of `ntt`: the aux assignment to where the MSMs read it (deferred partitions).
    pub upload: Duration,
    /// Of `ntt`: a, b, c from the matrices (deferred partitions).
    pub evaluate: Duration,
    pub msm: Duration,
    pub msms: MsmTimings,
    /// Whether a, b, c were evaluated in the step (from the matrices; `ntt` includes it and
    /// the aux upload) rather than by synthesis.
    pub abc_in_step: bool,
}

/// Each of the five MSMs of a partition (input and aux parts together).
#[derive(Clone, Copy, Debug, Default)]
pub struct MsmTimings {
    pub h: Duration,
    pub l: Duration,
    pub a: Duration,
    pub b_g1: Duration,
    pub b_g2: Duration,
}

/// H polynomial and MSMs of one synthesized partition, under parameters on the host.
pub fn prove_on_device(
    backend: &dyn Backend,
    params: &Parameters<Bls12>,
    srs_id: &str,
    synth: Synthesized,
) -> Result<(MsmResults, DeviceTimings), ProveError> {
    prove_with_key(backend, Key::new(srs_id, params), synth)
}

/// H polynomial and MSMs of one synthesized partition, under a key whose host copy may have
/// been released (the backend then holds its vectors).
pub fn prove_with_key(
    backend: &dyn Backend,
    key: Key<'_>,
    synth: Synthesized,
) -> Result<(MsmResults, DeviceTimings), ProveError> {
    prove_with_key_between(backend, key, synth, &mut Nothing)
}

/// As [`prove_with_key`], letting `between`'s work in at the step's pause points: between
/// its phases (after the H polynomial and after each MSM but the last) and inside H's MSM
/// where the backend has pause points (the CUDA backend: between its stages at 2^24 and
/// more). The pipeline runs waiting CRITICAL partitions there, so that a WinningPoSt does
/// not wait for a whole 2^27 step; the time they take is left out of the step's timings.
/// They may use the backend: nothing of this step is in flight at those points (every
/// phase ends with its result on the host, an MSM finishes its queued work before it
/// pauses), and this step's device buffers are its own.
pub fn prove_with_key_between(
    backend: &dyn Backend,
    key: Key<'_>,
    synth: Synthesized,
    between: &mut dyn Between,
) -> Result<(MsmResults, DeviceTimings), ProveError> {
    check_shapes(&key, &synth)?;
    let params = key.params;
    let Synthesized {
        a,
        b,
        c,
        input,
        aux: aux_host,
        packed_aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
        deferred,
    } = synth;

    // Packed by the synthesis worker for a backend that unpacks on the device (packed.rs).
    let load_aux = || match &packed_aux {
        Some(p) => backend.load_packed(p),
        None => backend.load_scalars(&aux_host),
    };
    let t = Instant::now();
    let (mut upload, mut evaluate) = (Duration::ZERO, Duration::ZERO);
    // The aux assignment goes where the MSMs read it once, for L and the A and B selections;
    // a partition whose a, b, c were deferred has them evaluated there too, from it.
    let (h_coeffs, aux) = match &deferred {
        None => (backend.h_polynomial_for_msm(a, b, c)?, None),
        Some(m) => {
            let aux = load_aux()?;
            upload = t.elapsed();
            let from = backend
                .h_polynomial_from_matrices(m, &input, &aux)
                .inspect_err(|e| {
                    // A native witness is suspected first: the retry takes the general
                    // path. Else these matrices are not to be trusted with this shape
                    // again: the partition's retry (and every later one) records afresh,
                    // which checks its own witness and falls back to full synthesis if that
                    // fails too.
                    if matches!(e, BackendError::Unsatisfied { .. })
                        && !crate::native_witness::blame(&m.key)
                    {
                        crate::synth::matrix_cache().evict(&m.key);
                    }
                })?;
            evaluate = from.evaluate;
            (from.h, Some(aux))
        }
    };
    let ntt = t.elapsed();
    between.run();

    let t = Instant::now();
    let n_in = input.len();
    let b_in = b_input_density.total();
    let lens = key.lens;
    // key.bases: a vector's points as MSM bases, released where the host has them no more.
    let mut msms = MsmTimings::default();
    let mut laps = Laps::new();

    // H's MSM is begun first. Sorting ahead (the CUDA backend, CUZK_MSM_AHEAD=1: its first
    // stage sorts on the device beside B_G1 and B_G2) it finishes last; else it runs now,
    // before L, A and B, as it always has (the order whose next step measured fastest:
    // kernels/NOTES.md part 13). Its time is its own calls' (begin, advance, finish).
    let h_bases = key.bases(Query::H, &params.h, 0, lens.h);
    let mut h = HMsm::Begun(backend.msm_g1_vec_begin(h_bases, h_coeffs)?);
    let mut h_time = Duration::ZERO;
    if h.is_ahead() {
        h_time = laps.split();
    } else {
        // From the start: a set's first use uploads H's bases in `begin`.
        h.finish(between, &mut laps, &mut h_time)?;
        laps.pause(between);
    }
    let aux = match aux {
        Some(aux) => aux,
        None => load_aux()?,
    };
    let l = backend.msm_g1_vec(key.bases(Query::L, &params.l, 0, lens.l), &aux)?;
    msms.l = laps.split();
    h.advance(&mut laps, &mut h_time)?;
    laps.pause(between);

    let a_aux = backend.select(&aux, &a_aux_density)?;
    let a = backend.msm_g1(key.bases(Query::AInput, &params.a, 0, n_in), &input)?
        + backend.msm_g1_vec(key.bases(Query::AAux, &params.a, n_in, lens.a), &a_aux)?;
    drop(a_aux);
    msms.a = laps.split();
    h.advance(&mut laps, &mut h_time)?;
    laps.pause(between);

    let b_in_scalars = b_input_density.select(&input);
    let b_aux = backend.select(&aux, &b_aux_density)?;
    drop(aux);
    let b_g1 = backend.msm_g1(
        key.bases(Query::BG1Input, &params.b_g1, 0, b_in),
        &b_in_scalars,
    )? + backend.msm_g1_vec(
        key.bases(Query::BG1Aux, &params.b_g1, b_in, lens.b_g1),
        &b_aux,
    )?;
    msms.b_g1 = laps.split();
    h.advance(&mut laps, &mut h_time)?;
    laps.pause(between);
    let b_g2 = backend.msm_g2(
        key.bases(Query::BG2Input, &params.b_g2, 0, b_in),
        &b_in_scalars,
    )? + backend.msm_g2_vec(
        key.bases(Query::BG2Aux, &params.b_g2, b_in, lens.b_g2),
        &b_aux,
    )?;
    msms.b_g2 = laps.split();
    if h.is_ahead() {
        laps.pause(between);
    }
    let h = h.finish(between, &mut laps, &mut h_time)?;
    msms.h = h_time;
    let msm = t.elapsed().saturating_sub(laps.paused);

    Ok((
        MsmResults {
            h,
            l,
            a,
            b_g1,
            b_g2,
        },
        DeviceTimings {
            ntt,
            upload,
            evaluate,
            msm,
            msms,
            abc_in_step: deferred.is_some(),
        },
    ))
}

/// H's MSM in the step: begun, then finished where the backend sorts it ahead, else at once.
enum HMsm<'a> {
    Begun(Box<dyn BegunG1 + 'a>),
    Done(G1Projective),
}

impl HMsm<'_> {
    fn is_ahead(&self) -> bool {
        matches!(self, HMsm::Begun(b) if b.is_ahead())
    }

    /// `advance` of a begun MSM (right after another MSM's split), its time added to
    /// `h_time`.
    fn advance(&mut self, laps: &mut Laps, h_time: &mut Duration) -> Result<(), ProveError> {
        if let HMsm::Begun(b) = self {
            b.advance()?;
            *h_time += laps.split();
        }
        Ok(())
    }

    /// Its result: finished, its time since the last split or pause added to `h_time`,
    /// the work let in at its pause points left out.
    fn finish(
        &mut self,
        between: &mut dyn Between,
        laps: &mut Laps,
        h_time: &mut Duration,
    ) -> Result<G1Projective, ProveError> {
        let done = match std::mem::replace(self, HMsm::Done(G1Projective::identity())) {
            HMsm::Done(p) => p,
            HMsm::Begun(b) => {
                let mut inside = Counted::new(between);
                let p = b.finish(&mut inside)?;
                let let_in = inside.total;
                *h_time += laps.split_leaving_out(let_in);
                p
            }
        };
        *self = HMsm::Done(done);
        Ok(done)
    }
}

/// Each MSM's time, the pauses between them left out.
struct Laps {
    lap: Instant,
    paused: Duration,
}

impl Laps {
    fn new() -> Self {
        Laps {
            lap: Instant::now(),
            paused: Duration::ZERO,
        }
    }

    /// Time since the last split or pause.
    fn split(&mut self) -> Duration {
        self.split_leaving_out(Duration::ZERO)
    }

    /// As `split`, for a phase that let `let_in` of other work in inside it.
    fn split_leaving_out(&mut self, let_in: Duration) -> Duration {
        let now = Instant::now();
        let d = now - self.lap;
        self.lap = now;
        self.paused += let_in;
        d.saturating_sub(let_in)
    }

    fn pause(&mut self, between: &mut dyn Between) {
        self.paused += between.run();
        self.lap = Instant::now();
    }
}

/// The proof from the MSM results and the blinding factors:
/// A = alpha + sum(A) + r delta, B = beta + sum(B) + s delta,
/// C = s A + r B1 - r s delta + H + L (expanded so that no point is computed twice).
pub fn assemble(
    vk: &VerifyingKey<Bls12>,
    msm: &MsmResults,
    r: Scalar,
    s: Scalar,
) -> Result<Proof<Bls12>, ProveError> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::DegenerateKey);
    }
    let a = vk.alpha_g1 + msm.a + vk.delta_g1 * r;
    let b = vk.beta_g2 + msm.b_g2 + vk.delta_g2 * s;
    let c = msm.a * s
        + msm.b_g1 * r
        + vk.delta_g1 * (r * s)
        + vk.alpha_g1 * s
        + vk.beta_g1 * r
        + msm.h
        + msm.l;
    Ok(Proof {
        a: a.to_affine(),
        b: b.to_affine(),
        c: c.to_affine(),
    })
}

/// Groth16 proof bytes: A, B, C compressed (48 + 96 + 48 = 192), as bellperson writes them.
pub fn proof_bytes(proof: &Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::with_capacity(PROOF_BYTES);
    proof.write(&mut out).expect("writing to a Vec cannot fail");
    out
}

pub const PROOF_BYTES: usize = 192;

/// Every vector of the key must be long enough for this circuit; a mismatch would otherwise
/// be an out-of-bounds panic or, worse, a wrong proof.
fn check_shapes(key: &Key<'_>, s: &Synthesized) -> Result<(), ProveError> {
    let n = s.num_constraints().max(1).next_power_of_two();
    let lens = &key.lens;
    let b = s.b_input_density.total() + s.b_aux_density.total();
    let checks = [
        ("h", lens.h, n - 1),
        ("l", lens.l, s.aux_len()),
        ("a", lens.a, s.input.len() + s.a_aux_density.total()),
        ("b_g1", lens.b_g1, b),
        ("b_g2", lens.b_g2, b),
        ("vk.ic", key.params.vk.ic.len(), s.input.len()),
    ];
    for (name, have, need) in checks {
        let ok = if name == "vk.ic" {
            have == need
        } else {
            have >= need
        };
        if !ok {
            return Err(ProveError::ParamsMismatch(format!(
                "{name} has {have} points, the circuit needs {need}"
            )));
        }
    }
    Ok(())
}

/// Synthesize and prove one circuit in one call (tests, benchmarks, one-off tools).
pub fn prove_circuit<C: bellpepper_core::Circuit<Scalar>>(
    backend: &dyn Backend,
    params: &Parameters<Bls12>,
    srs_id: &str,
    circuit: C,
    r: Scalar,
    s: Scalar,
) -> Result<Proof<Bls12>, crate::Error> {
    let synth = crate::synth::synthesize_partition(circuit)?;
    let (msm, _) = prove_on_device(backend, params, srs_id, synth)?;
    Ok(assemble(&params.vk, &msm, r, s)?)
}

//! The master test of the prover: with fixed r and s our proof bytes equal bellperson
//! 0.27's `create_proof` bytes, and bellperson's verifier accepts them; with work let in at
//! the step's pause points too.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{self, Parameters};
use blstrs::{Bls12, Scalar};
use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::{Backend, BackendError, G1Bases, G2Bases, ScalarVec};
use cuzk_core::between::Between;
use cuzk_core::footprint::HostCopies;
use cuzk_core::key::Key;
use cuzk_core::kinds::porep_shaped::PorepShaped;
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::prove::{
    assemble, proof_bytes, prove_circuit, prove_on_device, prove_with_key_between,
};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// A circuit that exercises the density rules: an input used in B, aux variables used only
/// in B or only in C, a zero coefficient, and an A that holds
/// only a constant.
#[derive(Clone)]
struct Sparse {
    x: u64,
}

impl Circuit<Scalar> for Sparse {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = Scalar::from(self.x);
        let inp = cs.alloc_input(|| "x", || Ok(x))?;
        let unused = cs.alloc(|| "unused", || Ok(Scalar::from(99u64)))?;
        let sq = cs.alloc(|| "x^2", || Ok(x.square()))?;
        let cube = cs.alloc(|| "x^3", || Ok(x.square() * x))?;
        let only_b = cs.alloc(|| "x+1", || Ok(x + Scalar::ONE))?;
        // x * x = sq, with the input in both A and B.
        cs.enforce(|| "sq", |l| l + inp, |l| l + inp, |l| l + sq);
        // sq * x = cube, zero coefficient on `unused` in A must not mark it dense.
        cs.enforce(
            || "cube",
            |l| l + sq + (Scalar::ZERO, unused),
            |l| l + inp,
            |l| l + cube,
        );
        // 1 * (x + 1) = only_b: A holds only the constant; only_b appears in C only here.
        cs.enforce(
            || "succ",
            |l| l + CS::one(),
            |l| l + inp + CS::one(),
            |l| l + only_b,
        );
        // 2 * only_b = 2x + 2: only_b in B only.
        cs.enforce(
            || "double",
            |l| l + (Scalar::from(2u64), CS::one()),
            |l| l + only_b,
            |l| l + (Scalar::from(2u64), inp) + (Scalar::from(2u64), CS::one()),
        );
        // 1 * 99 = unused: `unused` appears in C alone (and with a zero coefficient in A above).
        cs.enforce(
            || "pin",
            |l| l + CS::one(),
            |l| l + (Scalar::from(99u64), CS::one()),
            |l| l + unused,
        );
        let _ = cs.alloc_input(|| "cube out", || Ok(x.square() * x))?;
        Ok(())
    }
}

fn check<C: Circuit<Scalar> + Clone + Send>(circuit: C, params: &Parameters<Bls12>, seed: u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));

    let ours = prove_circuit(&CpuBackend, params, "test", circuit.clone(), r, s).unwrap();
    let theirs = groth16::create_proof(circuit.clone(), params, r, s).unwrap();
    assert_eq!(proof_bytes(&ours), proof_bytes(&theirs), "seed {seed}");

    // bellperson's verifier accepts it with the circuit's public inputs.
    let synth = cuzk_core::synth::synthesize_partition(circuit).unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    assert!(groth16::verify_proof(&pvk, &ours, synth.public_inputs()).unwrap());
    // ...and rejects it with a public input changed.
    let mut wrong = synth.public_inputs().to_vec();
    wrong[0] += Scalar::ONE;
    assert!(!groth16::verify_proof(&pvk, &ours, &wrong).unwrap());
}

#[test]
fn synthetic_circuits_match_bellperson_byte_for_byte() {
    for log in [4u32, 7, 10, 12] {
        let mut rng = ChaCha20Rng::seed_from_u64(log as u64);
        let params = groth16::generate_random_parameters::<Bls12, _, _>(
            SyntheticCircuit::new(log, 0),
            &mut rng,
        )
        .unwrap();
        for seed in [1u64, 0xdead_beef_cafe] {
            check(SyntheticCircuit::new(log, seed), &params, seed ^ log as u64);
        }
    }
}

#[test]
fn sparse_densities_match_bellperson_byte_for_byte() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let params =
        groth16::generate_random_parameters::<Bls12, _, _>(Sparse { x: 0 }, &mut rng).unwrap();
    for x in [0u64, 1, 3, 1 << 40] {
        check(Sparse { x }, &params, x);
    }
}

/// The PoRep-shaped circuit as the job path proves it (direct synthesis, not bellpepper's;
/// and witness only with the aux packed), against bellperson's prover on the same circuit.
#[test]
fn porep_shaped_circuits_match_bellperson_byte_for_byte() {
    for log in [10u32, 11] {
        let mut rng = ChaCha20Rng::seed_from_u64(100 + log as u64);
        let params =
            groth16::generate_random_parameters::<Bls12, _, _>(PorepShaped::new(log, 0), &mut rng)
                .unwrap();
        let pvk = groth16::prepare_verifying_key(&params.vk);
        for seed in [3u64, u64::MAX] {
            let circuit = PorepShaped::new(log, seed);
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let synth = circuit.synthesize_direct();
            let (msm, _) = prove_on_device(&CpuBackend, &params, "t", synth).unwrap();
            let ours = assemble(&params.vk, &msm, r, s).unwrap();
            let theirs = groth16::create_proof(circuit, &params, r, s).unwrap();
            assert_eq!(
                proof_bytes(&ours),
                proof_bytes(&theirs),
                "2^{log} seed {seed}"
            );
            // As a GPU worker's partition arrives: witness only, a, b, c deferred, the aux
            // packed (the CPU backend unpacks it and evaluates a, b, c on the host).
            let mut packed = circuit.synthesize_witness().unwrap();
            assert!(packed.pack_aux(), "2^{log}: a PoRep-shaped aux packs");
            let (msm, _) = prove_on_device(&CpuBackend, &params, "t", packed).unwrap();
            assert_eq!(
                proof_bytes(&assemble(&params.vk, &msm, r, s).unwrap()),
                proof_bytes(&theirs),
                "2^{log} seed {seed}: deferred and packed"
            );
            let inputs = circuit.public_inputs();
            assert!(groth16::verify_proof(&pvk, &ours, &inputs).unwrap());
            let mut wrong = inputs.clone();
            wrong[3] += Scalar::ONE;
            assert!(!groth16::verify_proof(&pvk, &ours, &wrong).unwrap());
        }
    }
}

#[test]
fn zero_blinding_still_matches() {
    // r = s = 0 removes the blinding: the deterministic core of the proof must still agree.
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let params =
        groth16::generate_random_parameters::<Bls12, _, _>(SyntheticCircuit::new(6, 0), &mut rng)
            .unwrap();
    let c = SyntheticCircuit::new(6, 77);
    let ours = prove_circuit(
        &CpuBackend,
        &params,
        "t",
        c.clone(),
        Scalar::ZERO,
        Scalar::ZERO,
    )
    .unwrap();
    let theirs = groth16::create_proof(c, &params, Scalar::ZERO, Scalar::ZERO).unwrap();
    assert_eq!(proof_bytes(&ours), proof_bytes(&theirs));
}

#[test]
fn mismatched_parameters_are_an_error_not_a_panic() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let small =
        groth16::generate_random_parameters::<Bls12, _, _>(SyntheticCircuit::new(5, 0), &mut rng)
            .unwrap();
    let r = prove_circuit(
        &CpuBackend,
        &small,
        "t",
        SyntheticCircuit::new(8, 1),
        Scalar::ONE,
        Scalar::ONE,
    );
    let err = r.unwrap_err().to_string();
    assert!(err.contains("parameters do not fit"), "{err}");
}

/// The CPU backend with a pause point inside H's MSM, where the CUDA backend has its stages'.
struct PausingCpu;

impl Backend for PausingCpu {
    fn name(&self) -> String {
        "cpu, pausing in H".into()
    }
    fn host_copies(&self) -> HostCopies {
        CpuBackend.host_copies()
    }
    fn h_polynomial(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, BackendError> {
        CpuBackend.h_polynomial(a, b, c)
    }
    fn msm_g1_vec_between(
        &self,
        bases: G1Bases<'_>,
        v: &ScalarVec<'_>,
        between: &mut dyn Between,
    ) -> Result<G1Projective, BackendError> {
        assert!(between.waiting(), "the test's work always waits");
        between.run();
        self.msm_g1_vec(bases, v)
    }
    fn msm_g1(&self, bases: G1Bases<'_>, scalars: &[Scalar]) -> Result<G1Projective, BackendError> {
        CpuBackend.msm_g1(bases, scalars)
    }
    fn msm_g2(&self, bases: G2Bases<'_>, scalars: &[Scalar]) -> Result<G2Projective, BackendError> {
        CpuBackend.msm_g2(bases, scalars)
    }
}

/// Work let in that takes `LET_IN` each time it runs.
struct Slow {
    runs: u32,
}

const LET_IN: Duration = Duration::from_millis(100);

impl Between for Slow {
    fn waiting(&self) -> bool {
        true
    }
    fn run(&mut self) -> Duration {
        std::thread::sleep(LET_IN);
        self.runs += 1;
        LET_IN
    }
}

/// Work let in at a step's pause points (pipeline.rs lets a WinningPoSt in there) changes no
/// proof byte, runs at each of them (after the H polynomial, inside H's MSM where the
/// backend pauses, after four of the five MSMs), and is left out of the step's timings.
#[test]
fn work_let_in_at_the_pause_points_changes_no_byte_and_no_timing() {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let params =
        groth16::generate_random_parameters::<Bls12, _, _>(SyntheticCircuit::new(10, 0), &mut rng)
            .unwrap();
    let circuit = SyntheticCircuit::new(10, 3);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let synth = cuzk_core::synth::synthesize_partition(circuit.clone()).unwrap();
    let mut slow = Slow { runs: 0 };
    let t = Instant::now();
    let (msm, timings) =
        prove_with_key_between(&PausingCpu, Key::new("t", &params), synth, &mut slow).unwrap();
    let wall = t.elapsed();
    let theirs = groth16::create_proof(circuit, &params, r, s).unwrap();
    let ours = assemble(&params.vk, &msm, r, s).unwrap();
    assert_eq!(proof_bytes(&ours), proof_bytes(&theirs));
    assert_eq!(
        slow.runs, 6,
        "1 after the H polynomial, 1 inside H, 4 after MSMs"
    );
    let own = wall - LET_IN * slow.runs;
    assert!(
        timings.ntt + timings.msm <= own,
        "the step's timings ({:?} + {:?}) hold none of the {} let-ins ({wall:?} in all)",
        timings.ntt,
        timings.msm,
        slow.runs
    );
    assert!(timings.msms.h < LET_IN, "H's MSM leaves its let-in out");
}

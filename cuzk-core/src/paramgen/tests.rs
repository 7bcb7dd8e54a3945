//! The generator against bellperson's: the same toxic waste must give the same file, byte
//! for byte, and the file must prove and verify.

use std::path::Path;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::*;
use crate::backend::cpu::CpuBackend;
use crate::kinds::porep_shaped::{PorepShape, PorepShaped};
use crate::kinds::synthetic::SyntheticCircuit;
use crate::prove::{assemble, prove_on_device};
use crate::srs::read_params;

fn bellperson_bytes<C: Circuit<Scalar>>(circuit: C, t: &Toxic) -> Vec<u8> {
    let params = groth16::generate_parameters::<Bls12, _>(
        circuit,
        t.g1.into(),
        t.g2.into(),
        t.alpha,
        t.beta,
        t.gamma,
        t.delta,
        t.tau,
    )
    .unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    bytes
}

fn our_bytes(src: &dyn RowSource, t: &Toxic, dir: &Path) -> (Vec<u8>, GenReport) {
    let path = dir.join("x.params");
    let report = generate(src, t, &CpuFixedBase::new(), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(report.bytes, bytes.len() as u64);
    (bytes, report)
}

/// Where two files first differ, for a readable failure.
fn assert_same(ours: &[u8], theirs: &[u8], what: &str) {
    if let Some(i) = ours.iter().zip(theirs).position(|(a, b)| a != b) {
        panic!("{what}: first difference at byte {i}");
    }
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
}

#[test]
fn synthetic_2_10_equals_bellperson() {
    let toxic = Toxic::from_seed(10);
    let m = record_rows("synthetic-2^10", SyntheticCircuit::new(10, 0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ours, report) = our_bytes(&RecordedRows::new(&m).unwrap(), &toxic, dir.path());
    assert_same(
        &ours,
        &bellperson_bytes(SyntheticCircuit::new(10, 0), &toxic),
        "2^10",
    );
    assert_eq!(report.domain, 1024);
    let names: Vec<_> = report.queries.iter().map(|q| (q.name, q.points)).collect();
    assert_eq!(names[..3], [("ic", 5), ("h", 1023), ("l", m.num_aux)]);
}

/// A circuit written to reach the generator's corners: inputs in B, aux variables only in
/// C (zero A and B columns, left out of the a and b queries), a variable twice in one row,
/// zero coefficients, and rows that reference variables far behind and far ahead (terms
/// that spill out of their chunk's columns).
struct Handmade {
    /// Besides the constant one.
    inputs: usize,
    aux: usize,
    rows: Vec<[Vec<(Index, Scalar)>; 3]>,
}

impl Handmade {
    fn new() -> Self {
        let (k, x, y) = (Scalar::from, Index::Input, Index::Aux);
        let one = Index::Input(0);
        let mut rows = vec![
            [
                vec![(x(1), k(1)), (y(0), k(1))],
                vec![(x(2), k(1))],
                vec![(y(1), k(1))],
            ],
            // y2 twice in A (bellpepper merges them; a RowSource need not), and in B.
            [
                vec![(y(2), k(2)), (y(2), k(3))],
                vec![(y(2), k(1))],
                vec![(y(39), k(1))],
            ],
            [
                vec![(y(3), k(0)), (y(4), k(1))],
                vec![(one, k(1))],
                vec![(y(5), k(5))],
            ],
        ];
        for i in 3..36 {
            let mut b = vec![(one, k(1))];
            let mut c = vec![(y(i + 2), k(1))];
            if i % 5 == 0 {
                b.push((y(0), k(11)));
                c.push((x(1), k(13)));
            }
            rows.push([vec![(y(i), k(1)), (y(i + 1), k(7))], b, c]);
        }
        // y38 (and y39, row 1) only in C; x1 in B.
        rows.push([
            vec![(y(36), k(1)), (y(37), k(1))],
            vec![(x(1), k(1))],
            vec![(y(38), k(9))],
        ]);
        Handmade {
            inputs: 2,
            aux: 40,
            rows,
        }
    }
}

impl RowSource for Handmade {
    fn num_inputs(&self) -> usize {
        self.inputs + 1
    }
    fn num_aux(&self) -> usize {
        self.aux
    }
    fn num_rows(&self) -> usize {
        self.rows.len()
    }
    fn row(&self, i: usize, term: &mut dyn FnMut(Matrix, Index, Scalar)) {
        for (m, terms) in [Matrix::A, Matrix::B, Matrix::C]
            .into_iter()
            .zip(&self.rows[i])
        {
            for &(index, coeff) in terms {
                term(m, index, coeff);
            }
        }
    }
}

impl Circuit<Scalar> for &Handmade {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for _ in 0..self.inputs {
            cs.alloc_input(|| "x", || Ok(Scalar::ZERO))?;
        }
        for _ in 0..self.aux {
            cs.alloc(|| "y", || Ok(Scalar::ZERO))?;
        }
        let lc = |terms: &[(Index, Scalar)]| {
            terms.iter().fold(LinearCombination::zero(), |lc, &(i, k)| {
                lc + (k, Variable::new_unchecked(i))
            })
        };
        for [a, b, c] in &self.rows {
            cs.enforce(|| "row", |_| lc(a), |_| lc(b), |_| lc(c));
        }
        Ok(())
    }
}

#[test]
fn handmade_circuit_equals_bellperson_as_rows_and_as_recorded_matrices() {
    let toxic = Toxic::from_seed(1);
    let circuit = Handmade::new();
    let theirs = bellperson_bytes(&circuit, &toxic);
    let dir = tempfile::tempdir().unwrap();
    let (ours, report) = our_bytes(&circuit, &toxic, dir.path());
    assert_same(&ours, &theirs, "rows");
    let a = report.queries.iter().find(|q| q.name == "a").unwrap();
    let b = report.queries.iter().find(|q| q.name == "b_g1").unwrap();
    // y1, y38, y39 have no A; only x1, x2, the constant one and y0, y2 have B.
    assert_eq!((a.points, b.points), (43 - 3, 5));

    let m = record_rows("handmade", &circuit).unwrap();
    let (recorded, _) = our_bytes(&RecordedRows::new(&m).unwrap(), &toxic, dir.path());
    assert_same(&recorded, &theirs, "recorded");
}

#[test]
fn an_unconstrained_aux_variable_is_an_error_and_leaves_no_file() {
    let toxic = Toxic::from_seed(2);
    let mut circuit = Handmade::new();
    circuit.aux += 1;
    let bellperson = groth16::generate_parameters::<Bls12, _>(
        &circuit,
        toxic.g1.into(),
        toxic.g2.into(),
        toxic.alpha,
        toxic.beta,
        toxic.gamma,
        toxic.delta,
        toxic.tau,
    );
    assert!(matches!(
        bellperson,
        Err(SynthesisError::UnconstrainedVariable)
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.params");
    let err = generate(&circuit, &toxic, &CpuFixedBase::new(), &path).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("aux variable 40 is unconstrained"), "{msg}");
    assert!(msg.contains("u.params"), "{msg}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_generated_set_proves_and_verifies() {
    let toxic = Toxic::from_seed(8);
    let m = record_rows("synthetic-2^8", SyntheticCircuit::new(8, 0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.params");
    generate(
        &RecordedRows::new(&m).unwrap(),
        &toxic,
        &CpuFixedBase::new(),
        &path,
    )
    .unwrap();
    let params = read_params(&path).unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for seed in [3, 77] {
        let circuit = SyntheticCircuit::new(8, seed);
        let inputs = circuit.public_inputs();
        let proof = groth16::create_random_proof(circuit, &params, &mut rng).unwrap();
        assert!(
            groth16::verify_proof(&pvk, &proof, &inputs).unwrap(),
            "seed {seed}"
        );
        let wrong: Vec<Scalar> = inputs.iter().map(|x| *x + Scalar::ONE).collect();
        assert!(!groth16::verify_proof(&pvk, &proof, &wrong).unwrap());
    }
}

/// The PoRep-shaped kind's rows (not recorded: its own `RowSource`) give bellperson's file for
/// its `Circuit`, and a partition proven the job's way (direct synthesis, our prover)
/// verifies under the set.
#[test]
fn porep_shape_rows_equal_bellperson_and_prove() {
    for log in [10u32, 12] {
        let toxic = Toxic::from_seed(log as u64);
        let dir = tempfile::tempdir().unwrap();
        let (ours, _) = our_bytes(&PorepShape::new(log), &toxic, dir.path());
        let what = format!("porep-shaped 2^{log}");
        assert_same(
            &ours,
            &bellperson_bytes(PorepShaped::new(log, 0), &toxic),
            &what,
        );

        let params = read_params(&dir.path().join("x.params")).unwrap();
        let pvk = groth16::prepare_verifying_key(&params.vk);
        let circuit = PorepShaped::new(log, 41);
        let (msm, _) =
            prove_on_device(&CpuBackend, &params, "t", circuit.synthesize_direct()).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(log as u64);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let proof = assemble(&params.vk, &msm, r, s).unwrap();
        assert!(groth16::verify_proof(&pvk, &proof, &circuit.public_inputs()).unwrap());
    }
}

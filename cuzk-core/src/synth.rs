//! Synthesis: run a bellpepper circuit into our own constraint system, recording what the
//! prover needs and nothing else — the A/B/C evaluations per constraint, the variable
//! assignments, and which variables the A and B queries touch (their densities).
//!
//! The recording follows bellperson 0.27's `ProvingAssignment` exactly (one extra input
//! constraint `x_i * 0 = 0` per public input, the same density rules), because the proving
//! key's query vectors were laid out by that convention.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use std::sync::Arc;

use blstrs::Scalar;
use ff::Field;

use crate::matrices::Matrices;
pub use crate::matrix_synth::{
    defers_abc, last_timings, matrices_fallbacks, matrix_cache, set_synthesis_path, synthesis_path,
    synthesize_cached, synthesize_shaped, synthesize_shaped_split, synthesize_split, with_options,
    PathTimings, PieceResult, SynthesisOptions, SynthesisPath,
};
use crate::packed::PackedScalars;

/// A set of variable indices, as a bitmap plus its population count. The proving key stores
/// query points only for the variables in the set, so an MSM over a density-selected subset
/// uses the next base for each set bit.
///
/// The bitmap is shared between clones: a circuit's densities are derived once from its
/// recorded matrices and cloned into every partition, and a device that keeps a bitmap
/// (with its ranks) for selections knows it again by that (`backend::density_cache`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Arc<Vec<u64>>,
    len: usize,
    total: usize,
}

impl Density {
    /// A set over `len` variables, all members (inputs in the A query are always dense).
    pub fn full(len: usize) -> Self {
        let mut d = Density::default();
        for i in 0..len {
            d.push();
            d.insert(i);
        }
        d
    }

    /// A set from its bitmap (bit i % 64 of word i / 64 is variable i).
    pub(crate) fn from_words(words: Vec<u64>, len: usize) -> Self {
        debug_assert_eq!(words.len(), len.div_ceil(64));
        let total = words.iter().map(|w| w.count_ones() as usize).sum();
        Density {
            words: Arc::new(words),
            len,
            total,
        }
    }

    fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            Arc::make_mut(&mut self.words).push(0);
        }
        self.len += 1;
    }

    pub(crate) fn insert(&mut self, i: usize) {
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if self.words[w] & bit == 0 {
            Arc::make_mut(&mut self.words)[w] |= bit;
            self.total += 1;
        }
    }

    pub fn contains(&self, i: usize) -> bool {
        self.words[i / 64] & (1u64 << (i % 64)) != 0
    }

    /// Number of variables the set is over.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of members.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The bitmap: variable i is bit i % 64 of word i / 64 (for selections on a device).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The bitmap as shared by this set's clones (equal pointers: the same bitmap).
    pub(crate) fn shared_words(&self) -> &Arc<Vec<u64>> {
        &self.words
    }

    /// The members of `values` (indexed like the variables), in order: the scalars of an
    /// MSM whose bases are stored only for members.
    pub fn select(&self, values: &[Scalar]) -> Vec<Scalar> {
        debug_assert_eq!(values.len(), self.len);
        if self.total == self.len {
            return values.to_vec();
        }
        let mut out = Vec::with_capacity(self.total);
        out.extend(
            values
                .iter()
                .enumerate()
                .filter(|(i, _)| self.contains(*i))
                .map(|(_, v)| *v),
        );
        out
    }

    fn extend(&mut self, other: &Density, skip_first: bool) {
        let start = usize::from(skip_first);
        // As bellperson's DensityTracker: the other system's first input is its own "one",
        // standing for ours, so its use marks ours.
        if skip_first && other.len > 0 && other.contains(0) && self.len > 0 {
            self.insert(0);
        }
        for i in start..other.len {
            self.push();
            if other.contains(i) {
                self.insert(self.len - 1);
            }
        }
    }
}

/// One partition's circuit, synthesized: everything the prove stage needs.
#[derive(Clone, Debug, Default)]
pub struct Synthesized {
    /// Evaluations of A, B, C, one per constraint (input constraints included).
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    /// Public inputs; `input[0]` is the constant one.
    pub input: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    /// Set when a, b, c were left for the device step to evaluate (`SynthesisOptions::
    /// defer_abc`): the circuit shape's matrices, already checked to fit the assignment;
    /// a, b, c are then empty.
    pub deferred: Option<Arc<Matrices>>,
    /// Set by [`Synthesized::pack_aux`]: the aux assignment packed (`aux` is then empty).
    pub packed_aux: Option<PackedScalars>,
}

impl Synthesized {
    pub fn num_constraints(&self) -> usize {
        self.deferred
            .as_ref()
            .map_or(self.a.len(), |m| m.num_constraints())
    }

    /// Aux variables, whichever way the assignment is held.
    pub fn aux_len(&self) -> usize {
        self.packed_aux.as_ref().map_or(self.aux.len(), |p| p.len())
    }

    /// Packs the aux assignment (packed.rs) for a backend that unpacks on the device, unless
    /// it is too wide to gain; true if it did. The plain vector is freed.
    pub fn pack_aux(&mut self) -> bool {
        if self.packed_aux.is_some() {
            return true;
        }
        let Some(p) = PackedScalars::pack(&self.aux) else {
            return false;
        };
        self.packed_aux = Some(p);
        self.aux = Vec::new();
        true
    }

    /// A partition whose a, b, c are left to the device step: the assignments, and the
    /// matrices (already checked to fit them) with their densities.
    pub fn witness_only(m: Arc<Matrices>, input: Vec<Scalar>, aux: Vec<Scalar>) -> Self {
        Synthesized {
            input,
            aux,
            a_aux_density: m.a_aux_density.clone(),
            b_input_density: m.b_input_density.clone(),
            b_aux_density: m.b_aux_density.clone(),
            deferred: Some(m),
            ..Synthesized::default()
        }
    }

    /// a, b, c evaluated here on CPU threads if they were deferred (tests, benchmarks, and
    /// a backend without its own evaluator); an error if the witness fails a row.
    pub fn evaluate_deferred(&mut self) -> Result<(), String> {
        let Some(m) = self.deferred.take() else {
            return Ok(());
        };
        if let Some(p) = self.packed_aux.take() {
            self.aux = p.unpack();
        }
        let e = crate::matrices::evaluate(&m, &self.input, &self.aux);
        if e.unsatisfied != 0 {
            let msg = format!(
                "{} of {} constraints unsatisfied",
                e.unsatisfied,
                m.num_constraints()
            );
            self.deferred = Some(m);
            return Err(msg);
        }
        (self.a, self.b, self.c) = (e.a, e.b, e.c);
        Ok(())
    }

    /// The public inputs a verifier passes (without the leading one).
    pub fn public_inputs(&self) -> &[Scalar] {
        &self.input[1..]
    }

    /// The first field in which two syntheses differ (None: identical), for the tests and
    /// the benchmark that compare the two paths.
    pub fn first_difference(&self, other: &Synthesized) -> Option<&'static str> {
        let fields = [
            (
                "deferred",
                self.deferred.is_some() == other.deferred.is_some(),
            ),
            ("a", self.a == other.a),
            ("b", self.b == other.b),
            ("c", self.c == other.c),
            ("input", self.input == other.input),
            ("packed_aux", self.packed_aux == other.packed_aux),
            ("aux", self.aux == other.aux),
            ("a_aux_density", self.a_aux_density == other.a_aux_density),
            (
                "b_input_density",
                self.b_input_density == other.b_input_density,
            ),
            ("b_aux_density", self.b_aux_density == other.b_aux_density),
        ];
        fields
            .into_iter()
            .find(|(_, same)| !same)
            .map(|(name, _)| name)
    }

    /// Bytes held, for the engine's memory budget.
    pub fn size_bytes(&self) -> usize {
        (self.a.len() * 3 + self.input.len() + self.aux.len()) * std::mem::size_of::<Scalar>()
    }
}

/// Synthesize one circuit into a/b/c evaluations, assignments and densities.
pub fn synthesize_partition<C: Circuit<Scalar>>(circuit: C) -> Result<Synthesized, SynthesisError> {
    let mut cs = Synthesized::default();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    // Each public input gets a constraint `x_i * 0 = 0` so that the input polynomials are
    // linearly independent (Groth16's soundness needs it; bellperson lays out keys this way).
    for i in 0..cs.input.len() {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(cs)
}

/// Evaluate a linear combination, marking the variables it uses (with a non-zero coefficient)
/// in the given densities.
fn eval_tracked(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
    input: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            acc += term(input[i], coeff);
            if let Some(d) = input_density.as_deref_mut() {
                d.insert(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += term(aux[i], coeff);
            if let Some(d) = aux_density.as_deref_mut() {
                d.insert(i);
            }
        }
    }
    acc
}

#[inline]
fn term(value: Scalar, coeff: &Scalar) -> Scalar {
    // Most coefficients are one; skipping the multiplication is a measurable share of
    // synthesis time.
    if *coeff == Scalar::ONE {
        value
    } else {
        value * coeff
    }
}

impl ConstraintSystem<Scalar> for Synthesized {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(self.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        // Inputs are dense in A (every input has its own constraint there), so only the aux
        // part of A is tracked. C has no query of its own: no density.
        let a_val = eval_tracked(
            &a,
            None,
            Some(&mut self.a_aux_density),
            &self.input,
            &self.aux,
        );
        let b_val = eval_tracked(
            &b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            &self.input,
            &self.aux,
        );
        let c_val = eval_tracked(&c, None, None, &self.input, &self.aux);
        self.a.push(a_val);
        self.b.push(b_val);
        self.c.push(c_val);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        self.a_aux_density.extend(&other.a_aux_density, false);
        self.b_input_density.extend(&other.b_input_density, true);
        self.b_aux_density.extend(&other.b_aux_density, false);
        self.a.extend_from_slice(&other.a);
        self.b.extend_from_slice(&other.b);
        self.c.extend_from_slice(&other.c);
        // The other system's first input is its own temporary "one".
        self.input.extend_from_slice(&other.input[1..]);
        self.aux.extend_from_slice(&other.aux);
    }
}

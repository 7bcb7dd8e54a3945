//! Native witness generation for neptune's legacy Poseidon gadget
//! (`neptune::circuit::poseidon_hash`, neptune 11.0.0).
//!
//! The gadget, run against a witness-only constraint system, spends most of its
//! time building `LinearCombination`s it never needs (every MDS product is an
//! `Elt::Num` carrying an LC alongside its value). This module computes the
//! same assignment directly on field elements and allocates the same aux
//! variables, in the same order, with the same values.
//!
//! # How the gadget allocates (what we mirror)
//!
//! State: `[tag, x_1 .. x_arity]`, width `w = arity + 1`. The tag is a *constant*
//! `Elt::Num` (never allocated); preimage elements are `Elt::Allocated`.
//!
//! Whether an element is `Allocated` or `Num` only matters in
//! `ensure_allocated` (a `Num` gets a fresh variable + 1 constraint, an
//! `Allocated` is reused). That status is fully determined by position:
//! * first full round: tag is a `Num` but is S-boxed *statically*
//!   (`constant_quintic_s_box_pre_add_tag`, no variable); the preimage
//!   elements are `Allocated`, so no input allocation.
//! * every MDS product (dense, pre-sparse or sparse) returns `Num`s for all
//!   lanes, so every later S-box input is a `Num` and is allocated.
//!   (The partial-round S-box output is `Allocated`, but the sparse MDS that
//!   immediately follows turns it back into a `Num`.)
//!
//! So no dynamic tracking is needed; the schedule below is exact.
//!
//! Per S-box (each allocation is paired with exactly one `enforce`):
//! * first round, lane i >= 1 (`quintic_s_box_pre_add`):
//!   `(x+pre)^2`, `^4`, `^4 * (x+pre) + post`               -> 3 aux
//! * other rounds (`quintic_s_box`):
//!   `x` (ensure_allocated), `x^2`, `x^4`, `x^4 * x (+ post)` -> 4 aux
//!   (the terminal full round has no post key).
//!
//! Finally `elements[1]` (a `Num`) is allocated as the hash: 1 aux.
//!
//! Round constants (`compressed_round_constants`) are consumed as: first round
//! `2w` (pre + post keys), other initial full rounds `w`, partial rounds `1`,
//! final full rounds `w`, terminal round `0`.
//!
//! MDS per round counter `r` (incremented after every round):
//! `r == half_full - 1` -> `pre_sparse_matrix`;
//! `half_full - 1 < r < half_full + partial` -> `sparse_matrixes[r - half_full]`;
//! otherwise the dense `m`. Dense products are row-vector times matrix:
//! `out[j] = sum_i s[i] * M[i][j]`.

use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use neptune::hash_type::HashType;
use neptune::poseidon::{Arity, PoseidonConstants};

/// Allocates one internal aux variable. The name closure is only evaluated
/// by systems that record names (witness-only systems never call it), so the
/// `format!` costs nothing on the hot path, yet the function also works with
/// name-checking systems such as `TestConstraintSystem`.
#[inline(always)]
fn aux<CS: ConstraintSystem<Fr>>(cs: &mut CS, n: &mut usize, v: Fr) -> Result<(), SynthesisError> {
    let k = *n;
    cs.alloc(|| format!("native poseidon aux {k}"), || Ok(v))?;
    *n += 1;
    Ok(())
}

/// `quintic_s_box` on a `Num` input: allocates x, x^2, x^4, x^5 (+ post).
#[inline(always)]
fn sbox_alloc<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    n: &mut usize,
    x: &mut Fr,
    post: Option<Fr>,
) -> Result<(), SynthesisError> {
    let l = *x;
    aux(cs, n, l)?; // ensure_allocated of the Num input
    let l2 = l.square();
    aux(cs, n, l2)?;
    let l4 = l2.square();
    aux(cs, n, l4)?;
    let mut l5 = l4 * l;
    if let Some(rk) = post {
        l5 += rk;
    }
    aux(cs, n, l5)?;
    *x = l5;
    Ok(())
}

/// Dense product `state <- state · M` (row vector times matrix), using `tmp`
/// as the accumulator. Iterating rows outermost keeps `M[i]` contiguous.
#[inline(always)]
fn mds_dense(state: &mut [Fr], tmp: &mut [Fr], m: &[Vec<Fr>]) {
    let w = state.len();
    for t in tmp.iter_mut() {
        *t = Fr::ZERO;
    }
    for (s, row) in state.iter().zip(m.iter()) {
        for (t, c) in tmp.iter_mut().zip(row[..w].iter()) {
            *t += *s * c;
        }
    }
    state.copy_from_slice(tmp);
}

/// Sparse product (M'' form): lane 0 <- <state, w_hat>; lane j <- s_j + s_0 * v_rest[j-1]
/// (both using the *old* s_0, as the gadget builds the new vector from the old one).
#[inline(always)]
fn mds_sparse(state: &mut [Fr], w_hat: &[Fr], v_rest: &[Fr]) {
    let s0 = state[0];
    let mut acc = Fr::ZERO;
    for (s, c) in state.iter().zip(w_hat.iter()) {
        acc += *s * c;
    }
    for (s, v) in state[1..].iter_mut().zip(v_rest.iter()) {
        *s += s0 * v;
    }
    state[0] = acc;
}

/// Applies the MDS step the gadget's `product_mds` would apply for round `r`.
#[inline(always)]
fn product_mds<A: Arity<Fr>>(
    c: &PoseidonConstants<Fr, A>,
    r: usize,
    state: &mut [Fr],
    tmp: &mut [Fr],
) {
    let sparse_offset = c.half_full_rounds - 1;
    if r == sparse_offset {
        mds_dense(state, tmp, &c.pre_sparse_matrix);
    } else if r > sparse_offset && r < c.half_full_rounds + c.partial_rounds {
        let sm = &c.sparse_matrixes[r - sparse_offset - 1];
        mds_sparse(state, &sm.w_hat, &sm.v_rest);
    } else {
        mds_dense(state, tmp, &c.mds_matrices.m);
    }
}

/// Allocates through `cs` exactly the variables `neptune::circuit::poseidon_hash(cs, preimage, constants)`
/// allocates — same count, same order, same values — and returns the same hash AllocatedNum
/// (its value equal, allocated where the gadget allocates it), plus the number of `enforce` calls
/// the gadget would have made. It enforces nothing itself: for witness-only systems only.
///
/// Panics where the gadget panics (ConstantLength hash type with length != arity,
/// preimage longer than the arity). A preimage shorter than the arity is mirrored
/// too: the gadget then S-boxes only the lanes it has and its MDS `zip` treats the
/// missing lanes as zero.
pub fn poseidon_witness<CS, A>(
    mut cs: CS,
    preimage: &[AllocatedNum<Fr>],
    constants: &PoseidonConstants<Fr, A>,
) -> Result<(AllocatedNum<Fr>, usize), SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    A: Arity<Fr>,
{
    let arity = A::to_usize();
    let width = constants.width();
    if let HashType::ConstantLength(length) = constants.hash_type {
        assert!(
            length == arity,
            "Length must be equal to arity since no padding is provided"
        );
    }
    // The gadget indexes per-lane round keys by element position; more than
    // `arity` inputs would index past the width and panic there.
    assert!(preimage.len() <= arity, "preimage longer than arity");
    let lanes = preimage.len() + 1;

    // One scratch buffer per hash: [state | tmp].
    let mut buf = vec![Fr::ZERO; 2 * width];
    let (state, tmp) = buf.split_at_mut(width);
    state[0] = constants.domain_tag;
    for (s, x) in state[1..].iter_mut().zip(preimage) {
        *s = x.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    }

    let rc = &constants.compressed_round_constants;
    let mut n = 0usize; // aux variables allocated == enforce calls of the gadget
    let mut r = 0usize; // gadget's `current_round` (drives MDS choice)

    // --- First full round: pre-add + post-add keys, 3 aux per preimage lane.
    {
        let (pre, post) = (&rc[..width], &rc[width..2 * width]);
        // Tag lane: constant S-box, nothing allocated.
        let t = state[0] + pre[0];
        state[0] = t.square().square() * t + post[0];
        for i in 1..lanes {
            // Preimage is already Allocated: ensure_allocated allocates nothing.
            let t = state[i] + pre[i];
            let t2 = t.square();
            aux(&mut cs, &mut n, t2)?; // square_sum: (x + pre)^2
            let t4 = t2.square();
            aux(&mut cs, &mut n, t4)?; // square: ^4
            let t5 = t4 * t + post[i];
            aux(&mut cs, &mut n, t5)?; // mul_sum: ^4 * (x + pre) + post
            state[i] = t5;
        }
        // Lanes with no gadget element contribute nothing to the MDS zip.
        for s in state[lanes..].iter_mut() {
            *s = Fr::ZERO;
        }
        product_mds(constants, r, state, tmp);
        r += 1;
    }
    let mut off = 2 * width;

    // --- Remaining initial full rounds: every lane is a Num -> 4 aux each.
    for _ in 1..constants.full_rounds / 2 {
        for i in 0..width {
            sbox_alloc(&mut cs, &mut n, &mut state[i], Some(rc[off + i]))?;
        }
        off += width;
        product_mds(constants, r, state, tmp);
        r += 1;
    }

    // --- Partial rounds: lane 0 only, one key each.
    for _ in 0..constants.partial_rounds {
        sbox_alloc(&mut cs, &mut n, &mut state[0], Some(rc[off]))?;
        off += 1;
        product_mds(constants, r, state, tmp);
        r += 1;
    }

    // --- Final full rounds but the last.
    for _ in 0..(constants.full_rounds / 2) - 1 {
        for i in 0..width {
            sbox_alloc(&mut cs, &mut n, &mut state[i], Some(rc[off + i]))?;
        }
        off += width;
        product_mds(constants, r, state, tmp);
        r += 1;
    }

    // --- Terminal full round: no round key after the S-box.
    for s in state.iter_mut() {
        sbox_alloc(&mut cs, &mut n, s, None)?;
    }
    product_mds(constants, r, state, tmp);

    // --- Output: elements[1] is a Num, so ensure_allocated allocates it (+1 enforce).
    let h = state[1];
    let hash = AllocatedNum::alloc(cs.namespace(|| "hash result"), || Ok(h))?;
    n += 1;

    Ok((hash, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use generic_array::typenum::{U11, U16, U2, U4, U8};
    use neptune::Poseidon;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    use crate::witness::WitnessCs;

    fn alloc_preimage(cs: &mut WitnessCs, vals: &[Fr]) -> Vec<AllocatedNum<Fr>> {
        vals.iter()
            .map(|v| AllocatedNum::alloc(&mut *cs, || Ok(*v)).unwrap())
            .collect()
    }

    /// Runs gadget and native on identical fresh systems and compares everything.
    /// Returns (aux per hash, constraints per hash) of the gadget.
    fn check_one<A: Arity<Fr>>(
        vals: &[Fr],
        c: &PoseidonConstants<Fr, A>,
        native_check: bool,
    ) -> (usize, usize) {
        let mut g = WitnessCs::with_one();
        let pg = alloc_preimage(&mut g, vals);
        let aux0 = g.aux.len();
        let hg = neptune::circuit::poseidon_hash(&mut g, pg, c).unwrap();

        let mut w = WitnessCs::with_one();
        let pw = alloc_preimage(&mut w, vals);
        let (hw, count) = poseidon_witness(&mut w, &pw, c).unwrap();

        assert_eq!(g.aux.len(), w.aux.len(), "aux count");
        for (k, (a, b)) in g.aux.iter().zip(w.aux.iter()).enumerate() {
            assert_eq!(a, b, "aux[{k}] differs");
        }
        assert_eq!(g.input, w.input, "inputs");
        assert_eq!(w.constraints, 0, "native made enforce calls");
        assert_eq!(g.constraints, w.constraints + count, "constraint count");
        assert_eq!(hg.get_value(), hw.get_value(), "hash value");
        // Hash is the last allocation in both.
        assert_eq!(hw.get_value().unwrap(), *w.aux.last().unwrap());
        assert_eq!(hg.get_variable(), hw.get_variable(), "hash variable");
        if native_check {
            let expect = Poseidon::<Fr, A>::new_with_preimage(vals, c).hash();
            assert_eq!(hw.get_value().unwrap(), expect, "native Poseidon");
        }
        (g.aux.len() - aux0, g.constraints)
    }

    fn run_arity<A: Arity<Fr>>(seed: u8) -> (usize, usize) {
        let c = PoseidonConstants::<Fr, A>::new();
        let arity = A::to_usize();
        let mut rng = ChaCha8Rng::seed_from_u64(u64::from(seed));
        let mut cases: Vec<Vec<Fr>> = (0..20)
            .map(|_| (0..arity).map(|_| Fr::random(&mut rng)).collect())
            .collect();
        cases.push(vec![Fr::ZERO; arity]);
        cases.push(vec![-Fr::ONE; arity]);
        // Mixed zeros, -1, 1 and random.
        cases.push(
            (0..arity)
                .map(|i| match i % 4 {
                    0 => Fr::ZERO,
                    1 => -Fr::ONE,
                    2 => Fr::ONE,
                    _ => Fr::random(&mut rng),
                })
                .collect(),
        );
        let mut sizes = None;
        for v in &cases {
            let s = check_one::<A>(v, &c, true);
            assert!(sizes.is_none() || sizes == Some(s));
            sizes = Some(s);
        }
        sizes.unwrap()
    }

    #[test]
    fn matches_gadget_all_arities() {
        let (a2, k2) = run_arity::<U2>(1);
        run_arity::<U4>(2);
        let (a8, k8) = run_arity::<U8>(3);
        let (a11, k11) = run_arity::<U11>(4);
        run_arity::<U16>(5);
        // neptune's own expected legacy constraint counts (Standard strength).
        assert_eq!((a2, k2), (311, 311));
        assert_eq!((a8, k8), (505, 505));
        assert_eq!(a11, k11);
    }

    #[test]
    fn matches_gadget_strengthened_and_constant_length() {
        use neptune::Strength;
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let c = PoseidonConstants::<Fr, U8>::new_with_strength(Strength::Strengthened);
        let c2 = PoseidonConstants::<Fr, U4>::new_constant_length(4);
        for _ in 0..5 {
            let v: Vec<Fr> = (0..8).map(|_| Fr::random(&mut rng)).collect();
            check_one::<U8>(&v, &c, true);
            check_one::<U4>(&v[..4], &c2, true);
        }
    }

    #[test]
    fn matches_gadget_short_preimage() {
        // Legacy gadget accepts fewer inputs than the arity (MerkleTree hash type);
        // its result differs from native Poseidon then, so only compare to the gadget.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let c = PoseidonConstants::<Fr, U8>::new();
        for len in [1, 5, 7] {
            let v: Vec<Fr> = (0..len).map(|_| Fr::random(&mut rng)).collect();
            check_one::<U8>(&v, &c, false);
        }
    }

    #[test]
    fn works_with_test_constraint_system() {
        // Unique lazy names make it usable with name-checking systems too.
        use bellpepper_core::test_cs::TestConstraintSystem;
        let c = PoseidonConstants::<Fr, U2>::new();
        let mut cs = TestConstraintSystem::<Fr>::new();
        let a = AllocatedNum::alloc(cs.namespace(|| "a"), || Ok(Fr::from(3u64))).unwrap();
        let b = AllocatedNum::alloc(cs.namespace(|| "b"), || Ok(Fr::from(5u64))).unwrap();
        let (h, n) = poseidon_witness(cs.namespace(|| "p"), &[a, b], &c).unwrap();
        assert_eq!(n, 311);
        let want =
            Poseidon::<Fr, U2>::new_with_preimage(&[Fr::from(3u64), Fr::from(5u64)], &c).hash();
        assert_eq!(h.get_value().unwrap(), want);
    }
}

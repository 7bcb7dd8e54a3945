//! A Merkle tree of which only a few leaves are known: every other leaf holds one default
//! value, so every sub-tree without a known leaf has the same root at its height. A 2^30-leaf
//! tree with a few thousand known leaves costs a few thousand hashes per level, not 2^30.
//!
//! The shape is a list of arities from the leaves up (a 32 GiB tree C or R: nine levels of 8,
//! then the sub-tree level of 8), hashed with the proof crates' own hash function, so the
//! openings it gives are the proof crates' `MerkleProof`s and verify as theirs.

use std::collections::BTreeMap;

use filecoin_hashers::{Hasher, PoseidonArity};
use merkletree::hash::Algorithm;
use storage_proofs_core::merkle::MerkleProof;

use crate::job::{Error, Result};

pub struct SparseTree<H: Hasher> {
    arities: Vec<usize>,
    /// Known nodes of each level, leaves first; the root level holds one node.
    levels: Vec<BTreeMap<u64, H::Domain>>,
    /// The node of each level under which no leaf is known.
    defaults: Vec<H::Domain>,
}

fn hash<H: Hasher>(children: &[H::Domain]) -> H::Domain {
    let mut f = H::Function::default();
    // The proof crates' hashers ignore the height (their verifiers pass a level index).
    f.multi_node(children, 0)
}

impl<H: Hasher> SparseTree<H> {
    /// The tree of `arities` (leaves up) whose leaves are `default_leaf` except `known`.
    pub fn new(
        arities: &[usize],
        default_leaf: H::Domain,
        known: impl IntoIterator<Item = (u64, H::Domain)>,
    ) -> Result<Self> {
        let leaves: u64 = arities.iter().map(|&a| a as u64).product();
        let mut level: BTreeMap<u64, H::Domain> = known.into_iter().collect();
        if let Some((&i, _)) = level.iter().next_back().filter(|(&i, _)| i >= leaves) {
            return Err(Error::Internal(format!(
                "leaf {i} of a tree of {leaves} leaves"
            )));
        }
        let mut levels = Vec::with_capacity(arities.len() + 1);
        let mut defaults = vec![default_leaf];
        for &a in arities {
            let d = *defaults.last().expect("one default a level");
            let mut up = BTreeMap::new();
            for &i in level.keys() {
                let parent = i / a as u64;
                if up.contains_key(&parent) {
                    continue;
                }
                let children: Vec<H::Domain> = (0..a as u64)
                    .map(|j| *level.get(&(parent * a as u64 + j)).unwrap_or(&d))
                    .collect();
                up.insert(parent, hash::<H>(&children));
            }
            defaults.push(hash::<H>(&vec![d; a]));
            levels.push(std::mem::replace(&mut level, up));
        }
        levels.push(level);
        Ok(SparseTree {
            arities: arities.to_vec(),
            levels,
            defaults,
        })
    }

    fn node(&self, level: usize, i: u64) -> H::Domain {
        *self.levels[level].get(&i).unwrap_or(&self.defaults[level])
    }

    pub fn root(&self) -> H::Domain {
        self.node(self.arities.len(), 0)
    }

    pub fn leaf(&self, i: u64) -> H::Domain {
        self.node(0, i)
    }

    /// The siblings and position of leaf `i` at every level, leaves up.
    pub fn path(&self, i: u64) -> Vec<(Vec<H::Domain>, usize)> {
        let mut i = i;
        let mut path = Vec::with_capacity(self.arities.len());
        for (level, &a) in self.arities.iter().enumerate() {
            let (parent, at) = (i / a as u64, (i % a as u64) as usize);
            let siblings = (0..a as u64)
                .filter(|&j| j != at as u64)
                .map(|j| self.node(level, parent * a as u64 + j))
                .collect();
            path.push((siblings, at));
            i = parent;
        }
        path
    }

    /// The opening of leaf `i` as the proof crates type it.
    pub fn proof<A, B, C>(&self, i: u64) -> MerkleProof<H, A, B, C>
    where
        A: PoseidonArity,
        B: PoseidonArity,
        C: PoseidonArity,
    {
        MerkleProof::from_parts(self.leaf(i), self.root(), self.path(i))
    }
}

/// The arities, leaves up, of a tree of `leaves` leaves with base arity `base` and sub-tree
/// and top arities `sub` and `top` (0: no such level), as the proof crates build trees C and R.
pub fn tree_arities(leaves: u64, base: usize, sub: usize, top: usize) -> Result<Vec<usize>> {
    let above = sub.max(1) as u64 * top.max(1) as u64;
    let mut base_leaves = leaves / above;
    let mut arities = Vec::new();
    while base_leaves > 1 {
        if !base_leaves.is_multiple_of(base as u64) {
            break;
        }
        base_leaves /= base as u64;
        arities.push(base);
    }
    if base_leaves != 1 || !leaves.is_multiple_of(above) {
        return Err(Error::Internal(format!(
            "{leaves} leaves are not a tree of arities {base}/{sub}/{top}"
        )));
    }
    arities.extend([sub, top].into_iter().filter(|&a| a > 0));
    Ok(arities)
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::sha256::Sha256Hasher;
    use filecoin_hashers::Domain;
    use generic_array::typenum::{U0, U2, U8};
    use rand::SeedableRng;
    use storage_proofs_core::merkle::MerkleProofTrait;

    /// A sparse tree's root and openings equal a dense tree's built level by level.
    #[test]
    fn sparse_equals_dense() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let arities = [8, 8, 2];
        let n = 128u64;
        let zero = <PoseidonHasher as Hasher>::Domain::default();
        let known: Vec<_> = [3u64, 64, 65, 127]
            .iter()
            .map(|&i| (i, <PoseidonHasher as Hasher>::Domain::random(&mut rng)))
            .collect();
        let t = SparseTree::<PoseidonHasher>::new(&arities, zero, known.clone()).unwrap();
        let mut dense: Vec<_> = (0..n)
            .map(|i| known.iter().find(|k| k.0 == i).map_or(zero, |k| k.1))
            .collect();
        for a in arities {
            dense = dense.chunks(a).map(hash::<PoseidonHasher>).collect();
        }
        assert_eq!(dense, vec![t.root()]);
        for (i, v) in known {
            let p: MerkleProof<PoseidonHasher, U8, U8, U2> = t.proof(i);
            assert!(p.verify(), "opening of {i}");
            assert!(p.proves_challenge(i as usize));
            assert!(p.validate_data(v));
            assert_eq!(p.root(), t.root());
        }
    }

    #[test]
    fn binary_tree_of_defaults() {
        let zero = <Sha256Hasher as Hasher>::Domain::default();
        let t = SparseTree::<Sha256Hasher>::new(&[2; 5], zero, []).unwrap();
        let p: MerkleProof<Sha256Hasher, U2, U0, U0> = t.proof(21);
        assert!(p.verify());
        assert!(p.proves_challenge(21));
        assert!(SparseTree::<Sha256Hasher>::new(&[2; 5], zero, [(32, zero)]).is_err());
    }

    #[test]
    fn shapes_of_trees_c_and_r() {
        assert_eq!(tree_arities(64, 8, 0, 0).unwrap(), vec![8, 8]);
        let mut a32 = vec![8; 9];
        a32.push(8);
        assert_eq!(tree_arities(1 << 30, 8, 8, 0).unwrap(), a32);
        let mut a64 = vec![8; 9];
        a64.extend([8, 2]);
        assert_eq!(tree_arities(1 << 31, 8, 8, 2).unwrap(), a64);
        assert!(tree_arities(96, 8, 0, 0).is_err());
    }
}

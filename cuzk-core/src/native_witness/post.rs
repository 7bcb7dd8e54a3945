//! A FallbackPoSt partition's witness (WindowPoSt, WinningPoSt: storage-proofs-post 19.1.0's
//! `FallbackPoStCircuit`) with its Poseidon computed natively.
//!
//! Per sector the stock `Sector::synthesize` allocates comm_r_last, comm_c and comm_r, checks
//! comm_r = H(comm_c, comm_r_last), and opens each challenged leaf in tree R. A 32 GiB
//! WindowPoSt partition is 2,349 sectors x 10 openings of 10 levels: ~235,000 Poseidon
//! hashes of arity 8, nearly all of its witness. The functions below follow the stock circuit
//! step for step (the sectors in order, as its parallel extensible synthesis also lays them
//! out), with `poseidon_witness` where it hashes.

use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use blstrs::Scalar as Fr;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{Hasher, POSEIDON_CONSTANTS_2};
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::Sector;

use super::porep::{inclusion, poseidon, Path};
use crate::witness::WitnessCs;

/// The stock `Sector::synthesize` for each of `sectors`, whose challenged leaves' paths
/// (`SectorProof::as_options`) are `paths`, into `cs`.
pub fn synthesize<Tree: 'static + MerkleTreeTrait>(
    cs: &mut WitnessCs,
    sectors: &[Sector<Tree>],
    paths: &[Vec<Path>],
) -> Result<(), SynthesisError> {
    // Tree R is hashed here with Poseidon, as every Filecoin PoSt's is.
    if Tree::Hasher::name() != PoseidonHasher::name() || sectors.len() != paths.len() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let value = |v: Option<Fr>| v.ok_or(SynthesisError::AssignmentMissing);
    for (s, paths) in sectors.iter().zip(paths) {
        if s.leafs.len() != paths.len() {
            return Err(SynthesisError::Unsatisfiable);
        }
        let comm_r_last = AllocatedNum::alloc(&mut *cs, || value(s.comm_r_last))?;
        let comm_c = AllocatedNum::alloc(&mut *cs, || value(s.comm_c))?;
        let comm_r = AllocatedNum::alloc(&mut *cs, || value(s.comm_r))?;
        comm_r.inputize(&mut *cs)?;
        let hash = poseidon(cs, &[comm_c, comm_r_last.clone()], &POSEIDON_CONSTANTS_2)?;
        constraint::equal(&mut *cs, || "comm_r", &comm_r, &hash);
        for (leaf, path) in s.leafs.iter().zip(paths) {
            // `PoRCircuit::synthesize` allocates the leaf (`Root::Val`) before its path.
            let leaf = AllocatedNum::alloc(&mut *cs, || value(*leaf))?;
            inclusion::<Tree>(cs, path, &comm_r_last, &leaf)?;
        }
    }
    Ok(())
}

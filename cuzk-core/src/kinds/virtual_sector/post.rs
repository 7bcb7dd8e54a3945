//! PoSt vanilla proofs of sectors that were never sealed.
//!
//! A FallbackPoSt proof opens, for each sector, the challenged leaves of its replica tree R
//! (the challenges follow from the randomness, the prover and the sector id, never from the
//! sector's content) and states comm_c and comm_r_last, with comm_r = H(comm_c, comm_r_last)
//! public. So each sector is a sparse tree R whose challenged leaves are pseudo-random and all
//! others zero, and a pseudo-random comm_c: consistent, and what the verifier checks.

use std::collections::BTreeMap;

use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::FallbackPoStSectorProof;
use filecoin_proofs_api::{RegisteredPoStProof, SectorId};
use generic_array::typenum::Unsigned;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{self, FallbackPoSt, PublicSector};

use super::field_element;
use super::sparse::{tree_arities, SparseTree};
use crate::job::{Error, Result};
use crate::kinds::prover_id::prover_id;

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// One virtual sector's PoSt payload.
pub struct VirtualPostSector {
    pub sector_number: u64,
    pub comm_r: [u8; 32],
    /// bincode `FallbackPoStSectorProof`, as Curio sends it.
    pub vanilla: Vec<u8>,
}

/// The vanilla proofs of `post` for virtual sectors `sector_numbers` (ascending) of miner
/// `miner_id` under `randomness`, checked by the proof crates' own FallbackPoSt verifier.
pub fn virtual_post(
    post: RegisteredPoStProof,
    miner_id: u64,
    sector_numbers: &[u64],
    randomness: [u8; 32],
    seed: [u8; 32],
) -> Result<Vec<VirtualPostSector>> {
    let size = u64::from(post.sector_size());
    crate::kinds::with_shape!(
        size,
        virtual_post_shaped,
        post,
        miner_id,
        sector_numbers,
        randomness,
        seed
    )
}

fn virtual_post_shaped<Tree: 'static + MerkleTreeTrait>(
    post: RegisteredPoStProof,
    miner_id: u64,
    sector_numbers: &[u64],
    randomness: [u8; 32],
    seed: [u8; 32],
) -> Result<Vec<VirtualPostSector>> {
    let fil = |what: &str, e: anyhow::Error| Error::Internal(format!("{what}: {e:#}"));
    let prover = prover_id(miner_id);
    let ids: Vec<SectorId> = sector_numbers.iter().map(|&n| SectorId::from(n)).collect();
    let challenges = filecoin_proofs_api::post::generate_fallback_sector_challenges(
        post,
        &randomness,
        &ids,
        prover,
    )
    .map_err(|e| fil("generate_fallback_sector_challenges", e))?;
    let nodes = u64::from(post.sector_size()) / 32;
    let proofs = sector_proofs::<Tree>(&ids, &challenges, nodes, seed)?;
    check::<Tree>(post, &proofs, randomness, prover)?;
    proofs
        .iter()
        .map(|p| {
            Ok(VirtualPostSector {
                sector_number: u64::from(p.sector_id),
                comm_r: p.comm_r.into_bytes().try_into().expect("32-byte domain"),
                vanilla: bincode::serialize(p)
                    .map_err(|e| Error::Internal(format!("encoding a sector proof: {e}")))?,
            })
        })
        .collect()
}

/// Each sector's openings of its challenged leaves.
fn sector_proofs<Tree: 'static + MerkleTreeTrait>(
    ids: &[SectorId],
    challenges: &BTreeMap<SectorId, Vec<u64>>,
    nodes: u64,
    seed: [u8; 32],
) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    let arities = tree_arities(
        nodes,
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    )?;
    ids.par_iter()
        .map(|id| {
            let leaves = challenges
                .get(id)
                .ok_or_else(|| Error::Internal(format!("no challenges for sector {id:?}")))?;
            let n = u64::from(*id);
            let value = |what: u64, i: u64| -> TreeDomain<Tree> {
                let d = Sha256::new()
                    .chain_update(b"cuzk virtual post sector")
                    .chain_update(seed)
                    .chain_update(n.to_le_bytes())
                    .chain_update(what.to_le_bytes())
                    .chain_update(i.to_le_bytes())
                    .finalize();
                field_element(d.into())
            };
            let tree_r = SparseTree::<Tree::Hasher>::new(
                &arities,
                TreeDomain::<Tree>::default(),
                leaves.iter().map(|&l| (l, value(0, l))),
            )?;
            let comm_c = value(1, 0);
            let comm_r_last = tree_r.root();
            Ok(FallbackPoStSectorProof {
                sector_id: *id,
                comm_r: <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last),
                vanilla_proof: fallback::Proof {
                    sectors: vec![fallback::SectorProof {
                        inclusion_proofs: leaves.iter().map(|&l| tree_r.proof(l)).collect(),
                        comm_c,
                        comm_r_last,
                    }],
                },
            })
        })
        .collect()
}

/// The proof crates' FallbackPoSt verifier over all the sectors as one partition.
fn check<Tree: 'static + MerkleTreeTrait>(
    post: RegisteredPoStProof,
    proofs: &[FallbackPoStSectorProof<Tree>],
    randomness: [u8; 32],
    prover: [u8; 32],
) -> Result<()> {
    let fil = |what: &str, e: anyhow::Error| Error::Internal(format!("{what}: {e:#}"));
    let config = post.as_v1_config();
    let pp = fallback::PublicParams {
        sector_size: u64::from(config.sector_size),
        challenge_count: config.challenge_count,
        sector_count: proofs.len(),
        api_version: config.api_version,
    };
    let domain =
        |b: &[u8; 32], what: &str| TreeDomain::<Tree>::try_from_bytes(b).map_err(|e| fil(what, e));
    let inputs = fallback::PublicInputs {
        randomness: domain(&randomness, "randomness")?,
        prover_id: domain(&prover, "prover id")?,
        sectors: proofs
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: None,
    };
    let proof = fallback::Proof {
        sectors: proofs
            .iter()
            .flat_map(|p| p.vanilla_proof.sectors.clone())
            .collect(),
    };
    let ok = FallbackPoSt::<Tree>::verify_all_partitions(&pp, &inputs, &[proof])
        .map_err(|e| fil("FallbackPoSt verification", e))?;
    if !ok {
        return Err(Error::Internal(
            "the proof crates' FallbackPoSt verifier rejected the virtual sectors".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::registered;
    use filecoin_proofs::SectorShapeBase;

    /// The check is real: openings made for one randomness fail under another.
    #[test]
    fn openings_for_other_randomness_fail() {
        let post = registered::window_post_proof(registered::SECTOR_SIZE_2_KIB).unwrap();
        let ids = [SectorId::from(3), SectorId::from(4)];
        let prover = prover_id(1000);
        let (r1, r2) = ([5u8; 32], [6u8; 32]);
        let ch =
            filecoin_proofs_api::post::generate_fallback_sector_challenges(post, &r1, &ids, prover)
                .unwrap();
        let proofs = sector_proofs::<SectorShapeBase>(&ids, &ch, 64, [1; 32]).unwrap();
        assert!(check::<SectorShapeBase>(post, &proofs, r1, prover).is_ok());
        // (The challenges follow from the randomness and sector ids, not the prover.)
        assert!(check::<SectorShapeBase>(post, &proofs, r2, prover).is_err());
    }
}

//! SnapDeals (SNAP_DEALS_UPDATE): one bincode `PartitionProof` per partition becomes one
//! EmptySectorUpdate circuit each, as `generate_empty_sector_update_proof_with_vanilla`
//! builds them.

use std::sync::Arc;

use blstrs::Scalar;
use filecoin_hashers::Domain;
use filecoin_proofs::{DefaultPieceDomain, SectorUpdateConfig};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::constants::{apex_leaf_count, TreeRDomain, TreeRHasher};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams,
};

use super::params::{self, ParamSet};
use super::registered::update_proof;
use super::request::{bincode_from, field_element, KindRequest};
use super::{synthesize_guarded, ProofTask};
use crate::job::{Error, ProofKind, Result};
use crate::srs::{SrsCache, SrsEntry};
use crate::synth::Synthesized;

type Compound<Tree> = EmptySectorUpdateCompound<Tree>;

pub(super) fn build(req: &KindRequest) -> Result<Arc<dyn ProofTask>> {
    let registered = update_proof(req.registered_proof).ok_or_else(|| {
        Error::invalid(
            "registered_proof",
            format!(
                "{} is not a Go abi RegisteredUpdateProof",
                req.registered_proof
            ),
        )
    })?;
    let size = u64::from(registered.sector_size());
    req.check_sector_size(size)?;
    let comm_r_old = field_element("comm_r_old", &req.comm_r_old)?;
    let comm_r_new = field_element("comm_r_new", &req.comm_r_new)?;
    let comm_d_new = field_element("comm_d_new", &req.comm_d_new)?;
    super::with_shape!(
        size,
        build_shaped,
        req,
        registered,
        [comm_r_old, comm_r_new, comm_d_new]
    )
}

fn build_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: &KindRequest,
    registered: RegisteredUpdateProof,
    [comm_r_old, comm_r_new, comm_d_new]: [[u8; 32]; 3],
) -> Result<Arc<dyn ProofTask>> {
    let bad = |reason: String| Error::invalid("vanilla_proofs", reason);
    let config = SectorUpdateConfig::from_porep_config(&registered.as_v1_config());
    let pub_params = PublicParams::from_sector_size(u64::from(config.sector_size));
    let partitions = usize::from(config.update_partitions);
    if req.vanilla_proofs.len() != partitions {
        return Err(bad(format!(
            "{} partition proofs; {registered:?} has {partitions} partitions",
            req.vanilla_proofs.len()
        )));
    }
    let apex = apex_leaf_count(pub_params.sector_nodes);
    let mut vanilla = Vec::with_capacity(partitions);
    for (i, bytes) in req.vanilla_proofs.iter().enumerate() {
        let p: PartitionProof<Tree> = bincode_from("vanilla_proofs", i, bytes)?;
        // The circuit indexes these by position; wrong counts would panic inside it.
        if p.apex_leafs.len() != apex || p.challenge_proofs.len() != pub_params.challenge_count {
            return Err(bad(format!(
                "entry {i} has {} apex leaves and {} challenge proofs; {registered:?} needs {apex} and {}",
                p.apex_leafs.len(),
                p.challenge_proofs.len(),
                pub_params.challenge_count
            )));
        }
        vanilla.push(p);
    }

    let commitment = |field: &'static str, b: &[u8; 32]| -> Result<TreeRDomain> {
        TreeRDomain::try_from_bytes(b).map_err(|e| Error::invalid(field, format!("{e:#}")))
    };
    let pub_inputs = PublicInputs {
        k: partitions,
        comm_r_old: commitment("comm_r_old", &comm_r_old)?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&comm_d_new)
            .map_err(|e| Error::invalid("comm_d_new", format!("{e:#}")))?,
        comm_r_new: commitment("comm_r_new", &comm_r_new)?,
        h: config.h,
    };
    Ok(Arc::new(SnapTask::<Tree> {
        registered,
        params: params::update_set(registered)?,
        pub_params,
        pub_inputs,
        vanilla,
        comm_r_old,
        comm_r_new,
        comm_d_new,
    }))
}

/// One SnapDeals update-proof job.
pub struct SnapTask<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    registered: RegisteredUpdateProof,
    params: ParamSet,
    pub_params: PublicParams,
    pub_inputs: PublicInputs,
    vanilla: Vec<PartitionProof<Tree>>,
    comm_r_old: [u8; 32],
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> ProofTask for SnapTask<Tree> {
    fn kind(&self) -> ProofKind {
        ProofKind::SnapDealsUpdate
    }

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn params(&self, srs: &SrsCache) -> Result<Arc<SrsEntry>> {
        Ok(params::load(srs, &self.params)?.0)
    }

    fn synthesize(&self, index: usize) -> Result<Synthesized> {
        let proof = self.vanilla.get(index).ok_or_else(|| {
            Error::Internal(format!("partition {index} of {}", self.vanilla.len()))
        })?;
        synthesize_guarded(self.kind(), index, &self.params.identifier, || {
            <Compound<Tree> as CompoundProof<
                EmptySectorUpdate<Tree>,
                EmptySectorUpdateCircuit<Tree>,
            >>::circuit(&self.pub_inputs, (), proof, &self.pub_params, Some(index))
        })
    }

    /// From the three commitments and the partition index only.
    fn public_inputs(&self, index: usize, _synthesized: &[Scalar]) -> Result<Vec<Scalar>> {
        <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| Error::Verification(format!("snap public inputs of partition {index}: {e:#}")))
    }

    fn verify_job(&self, proof: &[u8]) -> Result<()> {
        match filecoin_proofs_api::update::verify_empty_sector_update_proof(
            self.registered,
            proof,
            self.comm_r_old,
            self.comm_r_new,
            self.comm_d_new,
        ) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Verification(
                "verify_empty_sector_update_proof rejected the proof".into(),
            )),
            Err(e) => Err(Error::Verification(format!(
                "verify_empty_sector_update_proof: {e:#}"
            ))),
        }
    }
}

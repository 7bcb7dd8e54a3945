//! One WindowPoSt partition (WINDOW_POST_PARTITION), as
//! `generate_single_window_post_with_vanilla` proves it: the partition's sector proofs in
//! order, the last repeated to fill the circuit's `sector_count` slots. The challenges depend
//! on each sector's position in the whole deadline, so the public inputs place this
//! partition at `partition_index`.

use std::sync::Arc;

use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback;

use super::params;
use super::post::{common, decode_sectors, public_sectors, registered, replicas, PostTask};
use super::request::KindRequest;
use super::ProofTask;
use crate::job::{Error, ProofKind, Result};

/// The actors' limit on partitions in one deadline (builtin-actors policy
/// `MAX_PARTITIONS_PER_DEADLINE`); no index past it can exist on chain.
pub const MAX_PARTITIONS_PER_DEADLINE: u32 = 3000;

pub(super) fn build(req: &KindRequest) -> Result<Arc<dyn ProofTask>> {
    let registered = registered(req, false)?;
    if req.partition_index >= MAX_PARTITIONS_PER_DEADLINE {
        return Err(Error::invalid(
            "partition_index",
            format!(
                "{} is out of range: a deadline has at most {MAX_PARTITIONS_PER_DEADLINE} partitions",
                req.partition_index
            ),
        ));
    }
    super::with_shape!(
        u64::from(registered.sector_size()),
        build_shaped,
        req,
        registered
    )
}

fn build_shaped<Tree: 'static + MerkleTreeTrait>(
    req: &KindRequest,
    registered: filecoin_proofs_api::RegisteredPoStProof,
) -> Result<Arc<dyn ProofTask>> {
    let config = registered.as_v1_config();
    let n = req.vanilla_proofs.len();
    if n == 0 || n > config.sector_count {
        return Err(Error::invalid(
            "vanilla_proofs",
            format!(
                "{n} vanilla proofs; a {registered:?} partition holds 1..={} sectors",
                config.sector_count
            ),
        ));
    }
    let c = common::<Tree>(req)?;
    let sectors = decode_sectors::<Tree>(req, &config)?;
    let pub_params = filecoin_proofs::parameters::window_post_public_params::<Tree>(&config)
        .map_err(|e| Error::Internal(format!("window setup: {e:#}")))?;

    let mut sector_proofs: Vec<_> = sectors
        .iter()
        .map(|s| s.vanilla_proof.sectors[0].clone())
        .collect();
    let last = sector_proofs.last().expect("at least one sector").clone();
    sector_proofs.resize(pub_params.sector_count, last);
    let partition = fallback::Proof {
        sectors: sector_proofs,
    };

    let k = req.partition_index as usize;
    let pub_sectors = public_sectors(&sectors);
    let circuit_inputs = fallback::PublicInputs {
        randomness: c.randomness_safe,
        prover_id: c.prover_id_safe,
        sectors: pub_sectors.clone(),
        k: Some(k),
    };
    let verifier_inputs = fallback::PublicInputs {
        randomness: c.randomness_safe,
        prover_id: c.prover_id_safe,
        sectors: pub_sectors,
        k: None,
    };
    Ok(Arc::new(PostTask::<Tree> {
        kind: ProofKind::WindowPostPartition,
        registered,
        params: params::post_set(ProofKind::WindowPostPartition, registered)?,
        pub_params,
        circuit_inputs,
        verifier_inputs,
        verifier_k: k,
        partition,
        randomness: c.randomness,
        prover_id: c.prover_id,
        replicas: replicas(registered, &sectors),
    }))
}

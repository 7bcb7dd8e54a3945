//! WinningPoSt: one sector's vanilla proof (66 challenge openings) becomes one FallbackPoSt
//! circuit, laid out as `generate_winning_post_with_vanilla` lays it out: the circuit holds
//! 66 single-challenge "sectors", all the same sector, and the verifier lists that sector 66
//! times.

use std::sync::Arc;

use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, SectorProof};

use super::params;
use super::post::{common, decode_sectors, public_sectors, registered, replicas, PostTask};
use super::request::KindRequest;
use super::ProofTask;
use crate::job::{Error, ProofKind, Result};

pub(super) fn build(req: &KindRequest) -> Result<Arc<dyn ProofTask>> {
    let registered = registered(req, true)?;
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
    if req.vanilla_proofs.len() != config.sector_count {
        return Err(Error::invalid(
            "vanilla_proofs",
            format!(
                "{} vanilla proofs; WinningPoSt proves exactly {} sector",
                req.vanilla_proofs.len(),
                config.sector_count
            ),
        ));
    }
    let c = common::<Tree>(req)?;
    let sectors = decode_sectors::<Tree>(req, &config)?;
    let pub_params = filecoin_proofs::parameters::winning_post_public_params::<Tree>(&config)
        .map_err(|e| Error::Internal(format!("winning setup: {e:#}")))?;

    // Each opening becomes its own one-challenge sector proof.
    let sector = &sectors[0].vanilla_proof.sectors[0];
    let partition = fallback::Proof {
        sectors: sector
            .inclusion_proofs
            .iter()
            .map(|p| SectorProof {
                inclusion_proofs: vec![p.clone()],
                comm_c: sector.comm_c,
                comm_r_last: sector.comm_r_last,
            })
            .collect(),
    };
    debug_assert_eq!(partition.sectors.len(), pub_params.sector_count);

    let pub_sectors = public_sectors(&sectors);
    let circuit_inputs = fallback::PublicInputs {
        randomness: c.randomness_safe,
        prover_id: c.prover_id_safe,
        sectors: pub_sectors.clone(),
        k: None,
    };
    let verifier_inputs = fallback::PublicInputs {
        randomness: c.randomness_safe,
        prover_id: c.prover_id_safe,
        sectors: vec![pub_sectors[0].clone(); pub_params.sector_count],
        k: None,
    };
    Ok(Arc::new(PostTask::<Tree> {
        kind: ProofKind::WinningPost,
        registered,
        params: params::post_set(ProofKind::WinningPost, registered)?,
        pub_params,
        circuit_inputs,
        verifier_inputs,
        verifier_k: 0,
        partition,
        randomness: c.randomness,
        prover_id: c.prover_id,
        replicas: replicas(registered, &sectors),
    }))
}

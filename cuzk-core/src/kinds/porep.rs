//! PoRep commit phase 2 (POREP_SEAL_COMMIT): the commit-phase-1 output, in Curio's envelope,
//! becomes one StackedDrg circuit per partition, as filecoin-proofs' `seal_commit_phase2`
//! builds them; the output is their 192-byte proofs concatenated in partition order.

use std::sync::Arc;

use anyhow::Context;
use base64::Engine;
use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{as_safe_commitment, DefaultPieceDomain, DefaultPieceHasher, PoRepConfig};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{ApiFeature, RegisteredSealProof, SectorId};
use serde::Deserialize;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCompound, StackedDrg};

use super::params::{self, ParamSet};
use super::prover_id::prover_id;
use super::registered::{seal_proof, seal_proof_abi};
use super::request::KindRequest;
use super::{synthesize_guarded_split, ProofTask};
use crate::job::{Error, ProofKind, Result};
use crate::native_witness::porep as native;
use crate::srs::{SrsCache, SrsEntry};
use crate::synth::Synthesized;
use crate::witness::{synthesize_witness, WitnessCs};

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type PubInputs<Tree> = stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>;
type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

/// Curio's envelope around the phase-1 output (Go field names).
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: i64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// The phase-1 output decoded from the envelope, with no check beyond its format.
pub fn decode_envelope(bytes: &[u8]) -> Result<(i64, u64, SealCommitPhase1Output)> {
    let bad = |reason: String| Error::invalid("vanilla_proof", reason);
    if bytes.is_empty() {
        return Err(bad("is empty; PoRep needs the commit-phase-1 output".into()));
    }
    let env: Envelope = serde_json::from_slice(bytes).map_err(|e| {
        bad(format!(
            "is not Curio's JSON envelope {{SectorNum, Phase1Out, SectorSize}}: {e}"
        ))
    })?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(env.phase1_out.as_bytes())
        .map_err(|e| bad(format!("Phase1Out is not standard base64: {e}")))?;
    let c1: SealCommitPhase1Output = serde_json::from_slice(&raw).map_err(|e| {
        bad(format!(
            "Phase1Out is not a SealCommitPhase1Output (JSON): {e}"
        ))
    })?;
    Ok((env.sector_num, env.sector_size, c1))
}

/// Curio's envelope for a phase-1 output (what `decode_envelope` reads).
pub fn encode_envelope(sector_num: u64, c1: &SealCommitPhase1Output) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(c1).map_err(|e| Error::Internal(format!("encoding C1: {e}")))?;
    let env = serde_json::json!({
        "SectorNum": sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(json),
        "SectorSize": u64::from(c1.registered_proof.sector_size()),
    });
    Ok(env.to_string().into_bytes())
}

pub(super) fn build(req: &KindRequest) -> Result<Arc<dyn ProofTask>> {
    let (sector_num, env_size, c1) = decode_envelope(&req.vanilla_proof)?;
    let registered = c1.registered_proof;
    let size = u64::from(registered.sector_size());

    // proto3 cannot tell 0 from unset, and 0 is also StackedDrg2KiBV1: only a non-zero
    // number that disagrees with the phase-1 output is a contradiction.
    if req.registered_proof != 0 {
        match seal_proof(req.registered_proof) {
            None => {
                return Err(Error::invalid(
                    "registered_proof",
                    format!("{} is not a Go abi RegisteredSealProof", req.registered_proof),
                ))
            }
            Some(p) if p != registered => {
                return Err(Error::invalid(
                    "registered_proof",
                    format!(
                        "{} ({p:?}, {} bytes) contradicts the commit-phase-1 output, which is {registered:?} ({size} bytes, abi {})",
                        req.registered_proof,
                        u64::from(p.sector_size()),
                        seal_proof_abi(registered)
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    req.check_sector_size(size)?;
    if env_size != size {
        return Err(Error::invalid(
            "vanilla_proof",
            format!(
                "envelope SectorSize {env_size} but the phase-1 output is for {size}-byte sectors"
            ),
        ));
    }
    if sector_num < 0 || sector_num as u64 != req.sector_number {
        return Err(Error::invalid(
            "sector_number",
            format!(
                "{} but the envelope's SectorNum is {sector_num}",
                req.sector_number
            ),
        ));
    }
    if registered.feature_enabled(ApiFeature::NonInteractivePoRep) {
        // Its output is a SnarkPack aggregate, not concatenated partition proofs.
        return Err(Error::invalid(
            "registered_proof",
            format!("{registered:?}: non-interactive PoRep (aggregated output) is not supported"),
        ));
    }
    super::with_shape!(size, build_shaped, req, registered, c1)
}

fn build_shaped<Tree: 'static + MerkleTreeTrait>(
    req: &KindRequest,
    registered: RegisteredSealProof,
    c1: SealCommitPhase1Output,
) -> Result<Arc<dyn ProofTask>> {
    Ok(Arc::new(task::<Tree>(req, registered, c1)?))
}

fn task<Tree: 'static + MerkleTreeTrait>(
    req: &KindRequest,
    registered: RegisteredSealProof,
    c1: SealCommitPhase1Output,
) -> Result<PorepTask<Tree>> {
    let bad = |reason: String| Error::invalid("vanilla_proof", reason);
    let config = registered.as_v1_config();
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> = c1
        .vanilla_proofs
        .try_into()
        .map_err(|e| bad(format!("vanilla proofs are not for {registered:?}: {e}")))?;
    let pub_params = params::porep_public_params::<Tree>(&config)?;

    let partitions = usize::from(config.partitions);
    if vanilla.len() != partitions {
        return Err(bad(format!(
            "{} partitions of vanilla proofs, {registered:?} has {partitions}",
            vanilla.len()
        )));
    }
    let per_partition = pub_params.challenges.num_challenges_per_partition();
    if let Some((k, p)) = vanilla
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() != per_partition)
    {
        return Err(bad(format!(
            "partition {k} has {} challenge proofs, {registered:?} needs {per_partition}",
            p.len()
        )));
    }

    // Sizes sharing a tree shape (2 KiB, 8 MiB, 512 MiB) share the vanilla proof type, so
    // the type alone does not pin the size; the data-tree openings' height does.
    let height = (u64::from(config.sector_size) / 32).trailing_zeros() as usize;
    for (k, partition) in vanilla.iter().enumerate() {
        if let Some(p) = partition
            .iter()
            .find(|p| p.comm_d_proofs.path().len() != height)
        {
            return Err(bad(format!(
                "partition {k}: a comm_d opening of height {} cannot be from a {registered:?} sector (height {height})",
                p.comm_d_proofs.path().len()
            )));
        }
    }

    let field = |name: &'static str, b: &[u8; 32]| -> Result<()> {
        if *b == [0; 32] {
            return Err(bad(format!("{name} is all zero")));
        }
        Ok(())
    };
    field("comm_r", &c1.comm_r)?;
    field("comm_d", &c1.comm_d)?;
    field("seed", &c1.seed)?;
    let comm_r: TreeDomain<Tree> =
        as_safe_commitment(&c1.comm_r, "comm_r").map_err(|e| bad(format!("{e:#}")))?;
    let comm_d = DefaultPieceDomain::try_from_bytes(&c1.comm_d)
        .map_err(|e| bad(format!("comm_d: {e:#}")))?;

    // The replica id the verifier will derive; the phase-1 output must have been made for it.
    let prover = prover_id(req.miner_id);
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &prover,
        req.sector_number,
        &c1.ticket,
        c1.comm_d,
        &config.porep_id,
    );
    let c1_replica: [u8; 32] = c1
        .replica_id
        .into_bytes()
        .try_into()
        .expect("32-byte domain");
    if AsRef::<[u8]>::as_ref(&replica_id) != c1_replica {
        return Err(Error::invalid(
            "miner_id",
            format!(
                "the phase-1 output was not made for miner f0{} sector {} (its replica id differs)",
                req.miner_id, req.sector_number
            ),
        ));
    }

    let pub_inputs = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(c1.seed),
    };
    Ok(PorepTask::<Tree> {
        registered,
        config,
        params: params::seal_set(registered)?,
        pub_params,
        pub_inputs,
        vanilla,
        comm_r: c1.comm_r,
        comm_d: c1.comm_d,
        ticket: c1.ticket,
        seed: c1.seed,
        prover_id: prover,
        sector_id: SectorId::from(req.sector_number),
    })
}

/// One PoRep commit-phase-2 job.
pub struct PorepTask<Tree: 'static + MerkleTreeTrait> {
    registered: RegisteredSealProof,
    config: PoRepConfig,
    params: ParamSet,
    pub_params: stacked::PublicParams<Tree>,
    pub_inputs: PubInputs<Tree>,
    vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    ticket: [u8; 32],
    seed: [u8; 32],
    prover_id: [u8; 32],
    sector_id: SectorId,
}

impl<Tree: 'static + MerkleTreeTrait> PorepTask<Tree> {
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.registered
    }

    pub fn porep_config(&self) -> &PoRepConfig {
        &self.config
    }
}

impl<Tree: 'static + MerkleTreeTrait> PorepTask<Tree> {
    fn partition(&self, index: usize) -> Result<&Vec<stacked::Proof<Tree, DefaultPieceHasher>>> {
        self.vanilla
            .get(index)
            .ok_or_else(|| Error::Internal(format!("partition {index} of {}", self.vanilla.len())))
    }

    #[allow(clippy::ptr_arg)] // CompoundProof::circuit takes the proofs as a &Vec
    fn circuit(
        &self,
        index: usize,
        proofs: &Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
    ) -> anyhow::Result<stacked::StackedCircuit<Tree, DefaultPieceHasher>> {
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::circuit(
            &self.pub_inputs,
            (),
            proofs,
            &self.pub_params,
            Some(index),
        )
    }

    /// The witness of the commitments and the challenges `run` of `partition` (one of this
    /// task's), computed natively (`native_witness::porep`).
    fn native_witness(
        &self,
        partition: &[stacked::Proof<Tree, DefaultPieceHasher>],
        run: &[stacked::Proof<Tree, DefaultPieceHasher>],
        mut cs: WitnessCs,
    ) -> anyhow::Result<std::result::Result<WitnessCs, SynthesisError>> {
        let tau = self.pub_inputs.tau.as_ref().context("no tau")?;
        let c = native::Commitments::new(
            self.pub_inputs.replica_id.into(),
            tau.comm_d.into(),
            tau.comm_r.into(),
            partition,
        )?;
        let challenges = run
            .iter()
            .map(native::Challenge::new)
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(native::synthesize::<Tree>(&mut cs, &c, &challenges).map(|()| cs))
    }
}

impl<Tree: 'static + MerkleTreeTrait> ProofTask for PorepTask<Tree> {
    fn kind(&self) -> ProofKind {
        ProofKind::PorepSealCommit
    }

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn params(&self, srs: &SrsCache) -> Result<Arc<SrsEntry>> {
        Ok(params::load(srs, &self.params)?.0)
    }

    fn record_matrices(&self, index: usize) -> Result<crate::matrices::Matrices> {
        let proofs = self.partition(index)?;
        let circuit = self
            .circuit(index, proofs)
            .map_err(|e| Error::Params(format!("porep circuit {index}: {e:#}")))?;
        crate::paramgen::record_rows(&self.params.identifier, circuit)
    }

    fn synthesize(&self, index: usize) -> Result<Synthesized> {
        let proofs = self.partition(index)?;
        let circuit =
            |proofs: &Vec<stacked::Proof<Tree, DefaultPieceHasher>>| self.circuit(index, proofs);
        // The circuit allocates the commitments, then proves each challenge on its own: its
        // witness can be synthesized a run of challenges per thread.
        let parts = proofs.len().min(rayon::current_num_threads());
        let run = |j: usize| &proofs[j * proofs.len() / parts..(j + 1) * proofs.len() / parts];
        let shape = &self.params.identifier;
        let native = crate::native_witness::use_for(shape);
        synthesize_guarded_split(
            self.kind(),
            index,
            shape,
            || circuit(proofs),
            parts,
            |j, cs| {
                if !native {
                    // (`circuit` takes a Vec and clones it again; the copy is small beside
                    // synthesis.)
                    return Ok(synthesize_witness(circuit(&run(j).to_vec())?, cs));
                }
                self.native_witness(proofs, run(j), cs)
            },
        )
    }

    fn witness_paths(&self) -> Option<&dyn super::WitnessPaths> {
        Some(self)
    }

    /// From the public inputs alone (replica id derived from miner, sector, ticket and comm_d;
    /// challenges from the seed), never from the witness.
    fn public_inputs(&self, index: usize, _synthesized: &[Scalar]) -> Result<Vec<Scalar>> {
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| Error::Verification(format!("porep public inputs of partition {index}: {e:#}")))
    }

    fn verify_job(&self, proof: &[u8]) -> Result<()> {
        let ok = filecoin_proofs_api::seal::verify_seal(
            self.registered,
            self.comm_r,
            self.comm_d,
            self.prover_id,
            self.sector_id,
            self.ticket,
            self.seed,
            proof,
        )
        .map_err(|e| Error::Verification(format!("verify_seal: {e:#}")))?;
        if !ok {
            return Err(Error::Verification("verify_seal rejected the proof".into()));
        }
        Ok(())
    }
}

impl<Tree: 'static + MerkleTreeTrait> super::WitnessPaths for PorepTask<Tree> {
    fn sections(&self, index: usize) -> usize {
        self.vanilla.get(index).map_or(0, Vec::len)
    }

    fn witness(
        &self,
        index: usize,
        run: std::ops::Range<usize>,
        native: bool,
        cs: WitnessCs,
    ) -> Result<WitnessCs> {
        let proofs = self.partition(index)?;
        let part = proofs
            .get(run.clone())
            .ok_or_else(|| Error::Internal(format!("challenges {run:?} of {}", proofs.len())))?;
        let failed = |e: &dyn std::fmt::Display| {
            Error::Verification(format!("porep partition {index} witness: {e}"))
        };
        let w = if native {
            self.native_witness(proofs, part, cs)
        } else {
            self.circuit(index, &part.to_vec())
                .map(|c| synthesize_witness(c, cs))
        };
        w.map_err(|e| failed(&format!("{e:#}")))?
            .map_err(|e| failed(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{assert_witness_paths_agree, registered, virtual_sector, WitnessPaths};

    /// The native witness of `challenges` challenges of partition 0 of a virtual sector, and
    /// of its whole partitions where `challenges` is None, equals the stock circuit's in
    /// every input, every aux value and the constraint count.
    fn native_equals_stock<Tree: 'static + MerkleTreeTrait>(size: u64, challenges: Option<usize>) {
        let req = virtual_sector::request(ProofKind::PorepSealCommit, size).unwrap();
        let (_, _, c1) = decode_envelope(&req.vanilla_proof).unwrap();
        let t = task::<Tree>(&req, c1.registered_proof, c1).unwrap();
        let partitions = if challenges.is_some() {
            1
        } else {
            t.partitions()
        };
        for index in 0..partitions {
            let run = 0..challenges.unwrap_or(t.sections(index));
            assert_witness_paths_agree(&t, index, run, &format!("partition {index}"));
        }
    }

    #[test]
    fn native_witness_equals_the_stock_circuits_at_2kib() {
        native_equals_stock::<filecoin_proofs::SectorShapeBase>(
            registered::SECTOR_SIZE_2_KIB,
            None,
        );
    }

    /// Two of the 18 challenges of a 32 GiB partition: ~14M variables, seconds.
    #[test]
    fn native_witness_equals_the_stock_circuits_at_32gib() {
        native_equals_stock::<filecoin_proofs::SectorShape32GiB>(
            registered::SECTOR_SIZE_32_GIB,
            Some(2),
        );
    }
}

//! What WinningPoSt and WindowPoSt share: one FallbackPoSt circuit built from per-sector
//! vanilla proofs (bincode `FallbackPoStSectorProof`, as Curio sends them), with the
//! public inputs the stock verifier derives, computed without the witness.

use std::collections::BTreeMap;
use std::sync::Arc;

use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use filecoin_hashers::Hasher;
use filecoin_proofs::{as_safe_commitment, FallbackPoStSectorProof, PoStConfig};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use super::params::{self, ParamSet};
use super::prover_id::prover_id;
use super::registered::post_proof;
use super::request::{bincode_from, field_element, KindRequest};
use super::{synthesize_guarded, synthesize_guarded_split, ProofTask, WitnessPaths};
use crate::job::{Error, ProofKind, Result};
use crate::srs::{SrsCache, SrsEntry};
use crate::synth::Synthesized;
use crate::witness::{synthesize_witness, WitnessCs};

pub(super) type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
pub(super) type PartitionProof<Tree> = fallback::Proof<<Tree as MerkleTreeTrait>::Proof>;
type Compound<Tree> = FallbackPoStCompound<Tree>;

/// The registered PoSt proof of a request, which must be of `typ`.
pub(super) fn registered(req: &KindRequest, winning: bool) -> Result<RegisteredPoStProof> {
    let p = post_proof(req.registered_proof).ok_or_else(|| {
        Error::invalid(
            "registered_proof",
            format!(
                "{} is not a Go abi RegisteredPoStProof",
                req.registered_proof
            ),
        )
    })?;
    let is_winning = p.typ() == filecoin_proofs_api::PoStType::Winning;
    if is_winning != winning {
        return Err(Error::invalid(
            "registered_proof",
            format!(
                "{} is {p:?}, not a {} proof",
                req.registered_proof,
                if winning { "WinningPoSt" } else { "WindowPoSt" }
            ),
        ));
    }
    req.check_sector_size(u64::from(p.sector_size()))?;
    Ok(p)
}

/// Decoded and shape-checked sector proofs, in request order (ascending sector number).
pub(super) fn decode_sectors<Tree: 'static + MerkleTreeTrait>(
    req: &KindRequest,
    config: &PoStConfig,
) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    let bad = |reason: String| Error::invalid("vanilla_proofs", reason);
    let mut out: Vec<FallbackPoStSectorProof<Tree>> = Vec::with_capacity(req.vanilla_proofs.len());
    for (i, bytes) in req.vanilla_proofs.iter().enumerate() {
        let p: FallbackPoStSectorProof<Tree> = bincode_from("vanilla_proofs", i, bytes)?;
        // One sector proof per sector, `challenge_count` openings each: what the stock
        // partitioning assumes (and indexes without checking).
        if p.vanilla_proof.sectors.len() != 1 {
            return Err(bad(format!(
                "entry {i} holds {} sector proofs, expected 1",
                p.vanilla_proof.sectors.len()
            )));
        }
        let openings = p.vanilla_proof.sectors[0].inclusion_proofs.len();
        if openings != config.challenge_count {
            return Err(bad(format!(
                "entry {i} opens {openings} challenges, {:?} PoSt needs {}",
                config.typ, config.challenge_count
            )));
        }
        let comm_r: &[u8] = p.comm_r.as_ref();
        field_element("vanilla_proofs", comm_r)
            .map_err(|_| bad(format!("entry {i}: comm_r is not a field element")))?;
        if let Some(prev) = out.last() {
            if u64::from(prev.sector_id) >= u64::from(p.sector_id) {
                return Err(bad(format!(
                    "entry {i} (sector {}) is not after sector {}: sectors must be in ascending sector-number order",
                    u64::from(p.sector_id),
                    u64::from(prev.sector_id)
                )));
            }
        }
        out.push(p);
    }
    Ok(out)
}

/// One FallbackPoSt partition proof job (WinningPoSt, or one WindowPoSt partition).
pub struct PostTask<Tree: 'static + MerkleTreeTrait> {
    pub(super) kind: ProofKind,
    pub(super) registered: RegisteredPoStProof,
    pub(super) params: ParamSet,
    pub(super) pub_params: fallback::PublicParams,
    /// The sectors as the prover lays them out for the circuit (chunk 0 is this partition).
    pub(super) circuit_inputs: fallback::PublicInputs<Domain<Tree>>,
    /// This partition's sectors as the verifier lists them; they are chunk `verifier_k` of
    /// the deadline's list.
    pub(super) verifier_inputs: fallback::PublicInputs<Domain<Tree>>,
    pub(super) verifier_k: usize,
    pub(super) partition: PartitionProof<Tree>,
    pub(super) randomness: [u8; 32],
    pub(super) prover_id: [u8; 32],
    pub(super) replicas: BTreeMap<SectorId, PublicReplicaInfo>,
}

pub(super) struct Common<Tree: 'static + MerkleTreeTrait> {
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    pub randomness_safe: Domain<Tree>,
    pub prover_id_safe: Domain<Tree>,
}

pub(super) fn common<Tree: 'static + MerkleTreeTrait>(req: &KindRequest) -> Result<Common<Tree>> {
    let randomness = field_element("randomness", &req.randomness)?;
    let prover_id = prover_id(req.miner_id);
    let randomness_safe = as_safe_commitment(&randomness, "randomness")
        .map_err(|e| Error::invalid("randomness", format!("{e:#}")))?;
    let prover_id_safe = as_safe_commitment(&prover_id, "prover_id")
        .map_err(|e| Error::invalid("miner_id", format!("{e:#}")))?;
    Ok(Common {
        randomness,
        prover_id,
        randomness_safe,
        prover_id_safe,
    })
}

pub(super) fn public_sectors<Tree: 'static + MerkleTreeTrait>(
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> Vec<PublicSector<Domain<Tree>>> {
    proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect()
}

pub(super) fn replicas<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> BTreeMap<SectorId, PublicReplicaInfo> {
    proofs
        .iter()
        .map(|p| {
            let comm_r: [u8; 32] = AsRef::<[u8]>::as_ref(&p.comm_r)
                .try_into()
                .expect("32-byte domain");
            (p.sector_id, PublicReplicaInfo::new(registered, comm_r))
        })
        .collect()
}

impl<Tree: 'static + MerkleTreeTrait> PostTask<Tree> {
    fn circuit(&self) -> anyhow::Result<FallbackPoStCircuit<Tree>> {
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::circuit(
            &self.circuit_inputs,
            Default::default(),
            &self.partition,
            &self.pub_params,
            Some(0),
        )
    }

    /// The witness of sectors `run` of `circuit` (this task's), computed natively.
    fn native_witness(
        &self,
        circuit: &FallbackPoStCircuit<Tree>,
        run: std::ops::Range<usize>,
        mut cs: WitnessCs,
    ) -> std::result::Result<WitnessCs, SynthesisError> {
        let paths: Vec<_> = self.partition.sectors[run.clone()]
            .iter()
            .map(|s| s.as_options())
            .collect();
        crate::native_witness::post::synthesize(&mut cs, &circuit.sectors[run], &paths)?;
        Ok(cs)
    }

    /// Verify with the stock verifying key and public-input code, for a partition the
    /// top-level stock verifier cannot take alone (a WindowPoSt partition after the first).
    pub(super) fn verify_partition_with_vk(&self, proof: &[u8]) -> Result<()> {
        let e = |m: String| {
            Error::Verification(format!("{} partition {}: {m}", self.kind, self.verifier_k))
        };
        let vk = <Compound<Tree> as CompoundProof<
            FallbackPoSt<'_, Tree>,
            FallbackPoStCircuit<Tree>,
        >>::verifying_key::<rand::rngs::OsRng>(None, &self.pub_params)
        .map_err(|x| e(format!("verifying key: {x:#}")))?;
        let pvk = bellperson::groth16::prepare_verifying_key(&vk);
        let proof =
            bellperson::groth16::Proof::read(proof).map_err(|x| e(format!("proof bytes: {x}")))?;
        let inputs = self.public_inputs(0, &[])?;
        let ok = bellperson::groth16::verify_proof(&pvk, &proof, &inputs)
            .map_err(|x| e(format!("verify_proof: {x}")))?;
        if !ok {
            return Err(e("rejected by the stock verifying key".into()));
        }
        Ok(())
    }
}

impl<Tree: 'static + MerkleTreeTrait> ProofTask for PostTask<Tree> {
    fn kind(&self) -> ProofKind {
        self.kind
    }

    fn partitions(&self) -> usize {
        1
    }

    fn params(&self, srs: &SrsCache) -> Result<Arc<SrsEntry>> {
        Ok(params::load(srs, &self.params)?.0)
    }

    fn synthesize(&self, index: usize) -> Result<Synthesized> {
        if index != 0 {
            return Err(Error::Internal(format!(
                "{} has one partition, not {index}",
                self.kind
            )));
        }
        let shape = &self.params.identifier;
        let sectors = self.partition.sectors.len();
        // The sectors are independent sections: split over the threads, each part's witness
        // computed natively (`native_witness::post`; WinningPoSt's one sector in one part).
        let parts = sectors.min(rayon::current_num_threads());
        if parts == 0 || !crate::native_witness::use_for(shape) {
            return synthesize_guarded(self.kind, index, shape, || self.circuit());
        }
        let built = self.circuit();
        synthesize_guarded_split(
            self.kind,
            index,
            shape,
            || self.circuit(),
            parts,
            |j, cs| {
                let circuit = built.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
                let run = j * sectors / parts..(j + 1) * sectors / parts;
                Ok(self.native_witness(circuit, run, cs))
            },
        )
    }

    fn witness_paths(&self) -> Option<&dyn super::WitnessPaths> {
        Some(self)
    }

    fn record_matrices(&self, _index: usize) -> Result<crate::matrices::Matrices> {
        let circuit = self
            .circuit()
            .map_err(|e| Error::Params(format!("{} circuit: {e:#}", self.kind)))?;
        crate::paramgen::record_rows(&self.params.identifier, circuit)
    }

    /// Challenges derived from randomness, sector ids and this partition's position, as the
    /// verifier derives them; comm_r as the request states it.
    fn public_inputs(&self, _index: usize, _synthesized: &[Scalar]) -> Result<Vec<Scalar>> {
        // generate_public_inputs reads chunk k of the deadline's sector list, and the
        // challenges of sector i depend only on k * sector_count + i: earlier partitions'
        // entries are placeholders. Built here, not kept, as they can be many.
        let padded;
        let inputs = if self.verifier_k == 0 {
            &self.verifier_inputs
        } else {
            let mut sectors = vec![
                self.verifier_inputs.sectors[0].clone();
                self.verifier_k * self.pub_params.sector_count
            ];
            sectors.extend_from_slice(&self.verifier_inputs.sectors);
            padded = fallback::PublicInputs {
                randomness: self.verifier_inputs.randomness,
                prover_id: self.verifier_inputs.prover_id,
                sectors,
                k: None,
            };
            &padded
        };
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::generate_public_inputs(
            inputs,
            &self.pub_params,
            Some(self.verifier_k),
        )
        .map_err(|e| Error::Verification(format!("{} public inputs: {e:#}", self.kind)))
    }

    fn verify_job(&self, proof: &[u8]) -> Result<()> {
        let (name, r) = match self.kind {
            ProofKind::WinningPost => (
                "verify_winning_post",
                filecoin_proofs_api::post::verify_winning_post(
                    &self.randomness,
                    proof,
                    &self.replicas,
                    self.prover_id,
                ),
            ),
            _ if self.verifier_k == 0 => (
                "verify_window_post",
                filecoin_proofs_api::post::verify_window_post(
                    &self.randomness,
                    &[(self.registered, proof)],
                    &self.replicas,
                    self.prover_id,
                ),
            ),
            _ => return self.verify_partition_with_vk(proof),
        };
        match r {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Verification(format!("{name} rejected the proof"))),
            Err(e) => Err(Error::Verification(format!("{name}: {e:#}"))),
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> WitnessPaths for PostTask<Tree> {
    fn sections(&self, _index: usize) -> usize {
        self.partition.sectors.len()
    }

    fn witness(
        &self,
        index: usize,
        run: std::ops::Range<usize>,
        native: bool,
        cs: WitnessCs,
    ) -> Result<WitnessCs> {
        let failed = |e: String| Error::Verification(format!("{} witness: {e}", self.kind));
        let circuit = self.circuit().map_err(|e| failed(format!("{e:#}")))?;
        if index != 0 || run.end > circuit.sectors.len() {
            return Err(Error::Internal(format!("{} sectors {run:?}", self.kind)));
        }
        let w = if native {
            self.native_witness(&circuit, run, cs)
        } else {
            let part = FallbackPoStCircuit {
                prover_id: circuit.prover_id,
                sectors: circuit.sectors[run].to_vec(),
            };
            synthesize_witness(part, cs)
        };
        w.map_err(|e| failed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{assert_witness_paths_agree, build_task, registered, virtual_sector};

    /// The native witness of a virtual sector's partition (its first `sectors` sectors)
    /// equals the stock circuit's in every input, aux value and the constraint count.
    fn native_equals_stock(kind: ProofKind, size: u64, sectors: Option<usize>) {
        let req = virtual_sector::request(kind, size).unwrap();
        let task = build_task(&req).unwrap();
        let paths = task.witness_paths().unwrap();
        let run = 0..sectors.unwrap_or(paths.sections(0));
        assert_witness_paths_agree(paths, 0, run, &kind.to_string());
    }

    #[test]
    fn native_witness_equals_the_stock_circuits() {
        let (small, large) = (
            registered::SECTOR_SIZE_2_KIB,
            registered::SECTOR_SIZE_32_GIB,
        );
        native_equals_stock(ProofKind::WindowPostPartition, small, None);
        native_equals_stock(ProofKind::WinningPost, small, None);
        // 32 GiB: WinningPoSt's sector (66 openings) and 3 of WindowPoSt's 2,349.
        native_equals_stock(ProofKind::WinningPost, large, None);
        native_equals_stock(ProofKind::WindowPostPartition, large, Some(3));
    }
}

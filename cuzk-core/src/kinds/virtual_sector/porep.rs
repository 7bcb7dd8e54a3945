//! A PoRep commit-phase-1 output of a sector that was never sealed.
//!
//! The interactive PoRep's verifier (and its circuit) checks only what a proof opens: for each
//! challenged node its data-tree leaf, its SDR labels in every layer (each a SHA-256 of its
//! parents' labels), the column hashes of it and its 14 parents in tree C, and its replica
//! leaf in tree R; then comm_r = H(comm_c, comm_r_last). The challenges follow from the
//! replica id (made from comm_d, never comm_r) and the seed. So a consistent output needs no
//! sector:
//!
//! - the data is all zeros (a CC sector): tree D is the zero tree, comm_d its root;
//! - a challenged node's labels are computed from its parents' labels as SDR computes them;
//!   every other node's labels are pseudo-random (nobody can tell, nothing recomputes them);
//! - trees C and R are sparse: the opened leaves are real, every other leaf is zero.
//!
//! Challenged nodes may be one another's parents: the labels are computed layer by layer and,
//! within a layer, in ascending node order, which is the order SDR's dependencies run in
//! (base parents are earlier nodes of the same layer, expander parents nodes of the layer
//! below). Synthetic and non-interactive PoRep draw their challenges from comm_r, which
//! depends on the labels, so they cannot be made this way; their circuit is V1_1's.

use std::any::Any;
use std::collections::{BTreeSet, HashMap};

use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{DefaultPieceHasher, SectorShape32GiB, SectorShape64GiB, SectorShapeBase};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::RegisteredSealProof;
use generic_array::typenum::Unsigned;
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Challenges, Column, ColumnProof, EncodingProof, LabelingProof,
    ReplicaColumnProof, StackedDrg, TOTAL_PARENTS,
};

use super::field_element;
use super::sparse::{tree_arities, SparseTree};
use crate::job::{Error, Result};
use crate::kinds::params::porep_public_params;
use crate::kinds::prover_id::prover_id;

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type VanillaProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// What the request for a virtual sector's proof carries beside the phase-1 output.
pub struct VirtualPorep {
    pub c1: SealCommitPhase1Output,
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
}

/// The phase-1 output of a virtual sector `sector_number` of miner `miner_id`, sealed with
/// `registered` (an interactive PoRep: V1 or V1_1), for `ticket` and `seed`. `label_seed`
/// picks the labels of the nodes nobody opens. Checked by the proof crates' own vanilla
/// verifier before it is returned.
pub fn virtual_porep(
    registered: RegisteredSealProof,
    miner_id: u64,
    sector_number: u64,
    ticket: [u8; 32],
    seed: [u8; 32],
    label_seed: [u8; 32],
) -> Result<VirtualPorep> {
    let size = u64::from(registered.sector_size());
    crate::kinds::with_shape!(
        size,
        virtual_porep_shaped,
        registered,
        miner_id,
        sector_number,
        ticket,
        seed,
        label_seed
    )
}

fn virtual_porep_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSealProof,
    miner_id: u64,
    sector_number: u64,
    ticket: [u8; 32],
    seed: [u8; 32],
    label_seed: [u8; 32],
) -> Result<VirtualPorep> {
    let config = registered.as_v1_config();
    let pp = porep_public_params::<Tree>(&config)?;
    if !matches!(pp.challenges, Challenges::Interactive(_)) {
        return Err(Error::invalid(
            "registered_proof",
            format!(
                "{registered:?} draws its challenges from comm_r: a virtual sector stands in \
                 only for interactive PoRep (V1, V1_1), whose circuit and parameters it shares"
            ),
        ));
    }
    let nodes = u64::from(config.sector_size) / 32;
    let layers = pp.num_layers;

    // Tree D of an all-zero sector.
    let zero_d = <DefaultPieceHasher as Hasher>::Domain::default();
    let tree_d = SparseTree::<DefaultPieceHasher>::new(
        &vec![2; nodes.trailing_zeros() as usize],
        zero_d,
        [],
    )?;
    let comm_d_domain = tree_d.root();
    let comm_d: [u8; 32] = domain_bytes(&comm_d_domain);

    let prover = prover_id(miner_id);
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &prover,
        sector_number,
        &ticket,
        comm_d,
        &config.porep_id,
    );
    let pub_inputs = stacked::PublicInputs::<_, <DefaultPieceHasher as Hasher>::Domain> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    let partitions = usize::from(config.partitions);
    let challenges: Vec<Vec<usize>> = (0..partitions)
        .map(|k| pub_inputs.challenges(&pp.challenges, pp.graph.size(), Some(k)))
        .collect();

    // Every challenged node's parents: base parents first, then expander parents.
    let base = pp.graph.base_graph().degree();
    let mut parents_of: HashMap<u64, Vec<u64>> = HashMap::new();
    for &c in challenges.iter().flatten() {
        let mut p = vec![0u32; pp.graph.degree()];
        pp.graph
            .parents(c, &mut p)
            .map_err(|e| Error::Internal(format!("parents of node {c}: {e:#}")))?;
        if p[..base].iter().any(|&q| u64::from(q) >= c as u64) {
            return Err(Error::Internal(format!(
                "node {c} has a base parent that is not an earlier node"
            )));
        }
        parents_of.insert(c as u64, p.into_iter().map(u64::from).collect());
    }
    let mut labels = Labels::<Tree>::new(label_seed, replica_id);
    let challenged: BTreeSet<u64> = parents_of.keys().copied().collect();
    for layer in 1..=layers {
        for &c in &challenged {
            let parents = labels.parent_labels(&parents_of[&c], base, layer);
            let label = labels.sdr_label(layer, c, &parents);
            labels.computed.insert((c, layer), label);
        }
    }

    // Tree C: the columns of every challenged node and parent; tree R: the replica of every
    // challenged node, which for all-zero data is its last layer's label.
    let column =
        |n: u64| -> Vec<TreeDomain<Tree>> { (1..=layers).map(|l| labels.label(n, l)).collect() };
    let mut columns: HashMap<u64, Vec<TreeDomain<Tree>>> = HashMap::new();
    for (&c, parents) in &parents_of {
        for &n in std::iter::once(&c).chain(parents) {
            columns.entry(n).or_insert_with(|| column(n));
        }
    }
    let column_hash = |n: u64, rows: &Vec<TreeDomain<Tree>>| -> Result<TreeDomain<Tree>> {
        let col = Column::<Tree::Hasher>::new(n as u32, rows.clone())
            .map_err(|e| Error::Internal(format!("column {n}: {e:#}")))?;
        Ok(col.hash().into())
    };
    let arities = tree_arities(
        nodes,
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    )?;
    let zero = TreeDomain::<Tree>::default();
    let tree_c = SparseTree::<Tree::Hasher>::new(
        &arities,
        zero,
        columns
            .iter()
            .map(|(&n, rows)| Ok((n, column_hash(n, rows)?)))
            .collect::<Result<Vec<_>>>()?,
    )?;
    let tree_r = SparseTree::<Tree::Hasher>::new(
        &arities,
        zero,
        challenged.iter().map(|&c| (c, labels.label(c, layers))),
    )?;
    let comm_r_domain = <Tree::Hasher as Hasher>::Function::hash2(&tree_c.root(), &tree_r.root());

    let column_proof = |n: u64| -> Result<ColumnProof<_>> {
        let col = Column::<Tree::Hasher>::new(n as u32, columns[&n].clone())
            .map_err(|e| Error::Internal(format!("column {n}: {e:#}")))?;
        ColumnProof::from_column(col, tree_c.proof(n))
            .map_err(|e| Error::Internal(format!("column proof {n}: {e:#}")))
    };
    let mut vanilla: Vec<Vec<VanillaProof<Tree>>> = Vec::with_capacity(partitions);
    for partition in &challenges {
        let mut proofs = Vec::with_capacity(partition.len());
        for &c in partition {
            let c = c as u64;
            let parents = &parents_of[&c];
            let labeling: Vec<LabelingProof<Tree::Hasher>> = (1..=layers)
                .map(|l| LabelingProof::new(l as u32, c, labels.parent_labels(parents, base, l)))
                .collect();
            proofs.push(VanillaProof::<Tree> {
                comm_d_proofs: tree_d.proof(c),
                comm_r_last_proof: tree_r.proof(c),
                replica_column_proofs: ReplicaColumnProof {
                    c_x: column_proof(c)?,
                    drg_parents: parents[..base]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<_>>()?,
                    exp_parents: parents[base..]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<_>>()?,
                },
                encoding_proof: EncodingProof::new(
                    layers as u32,
                    c,
                    labels.parent_labels(parents, base, layers),
                ),
                labeling_proofs: labeling,
            });
        }
        vanilla.push(proofs);
    }

    let comm_r = domain_bytes(&comm_r_domain);
    if !vanilla_ok::<Tree>(&pp, replica_id, seed, comm_d, comm_r, &vanilla)? {
        return Err(Error::Internal(
            "the proof crates' vanilla verifier rejected the virtual sector".into(),
        ));
    }
    let c1 = SealCommitPhase1Output {
        registered_proof: registered,
        vanilla_proofs: vanilla_seal_proof::<Tree>(u64::from(config.sector_size), vanilla)?,
        comm_r,
        comm_d,
        replica_id: <filecoin_proofs::DefaultTreeDomain as Domain>::try_from_bytes(&domain_bytes(
            &replica_id,
        ))
        .map_err(|e| Error::Internal(format!("replica id: {e:#}")))?,
        seed,
        ticket,
    };
    Ok(VirtualPorep { c1, comm_r, comm_d })
}

/// Whether the proof crates' own vanilla verifier (as commit phase 1 runs it) accepts the
/// phase-1 output `c1` of sector `sector_number` of miner `miner_id`.
pub fn verify_c1(c1: &SealCommitPhase1Output, miner_id: u64, sector_number: u64) -> Result<bool> {
    let size = u64::from(c1.registered_proof.sector_size());
    crate::kinds::with_shape!(size, verify_c1_shaped, c1, miner_id, sector_number)
}

fn verify_c1_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
    miner_id: u64,
    sector_number: u64,
) -> Result<bool> {
    let config = c1.registered_proof.as_v1_config();
    let pp = porep_public_params::<Tree>(&config)?;
    let vanilla: Vec<Vec<VanillaProof<Tree>>> = c1
        .vanilla_proofs
        .clone()
        .try_into()
        .map_err(|e| Error::invalid("vanilla_proof", format!("{e:#}")))?;
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &prover_id(miner_id),
        sector_number,
        &c1.ticket,
        c1.comm_d,
        &config.porep_id,
    );
    vanilla_ok::<Tree>(&pp, replica_id, c1.seed, c1.comm_d, c1.comm_r, &vanilla)
}

fn vanilla_ok<Tree: 'static + MerkleTreeTrait>(
    pp: &stacked::PublicParams<Tree>,
    replica_id: TreeDomain<Tree>,
    seed: [u8; 32],
    comm_d: [u8; 32],
    comm_r: [u8; 32],
    vanilla: &[Vec<VanillaProof<Tree>>],
) -> Result<bool> {
    let bad =
        |what: &str, e: anyhow::Error| Error::invalid("vanilla_proof", format!("{what}: {e:#}"));
    let pub_inputs = stacked::PublicInputs {
        replica_id,
        seed: Some(seed),
        tau: Some(stacked::Tau {
            comm_d: <DefaultPieceHasher as Hasher>::Domain::try_from_bytes(&comm_d)
                .map_err(|e| bad("comm_d", e))?,
            comm_r: TreeDomain::<Tree>::try_from_bytes(&comm_r).map_err(|e| bad("comm_r", e))?,
        }),
        k: None,
    };
    StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(pp, &pub_inputs, vanilla)
        .map_err(|e| bad("vanilla verification", e))
}

fn domain_bytes<D: Domain>(d: &D) -> [u8; 32] {
    d.into_bytes().try_into().expect("32-byte domain")
}

/// The proof crates type vanilla proofs by tree shape (`Tree` is one of them) and name the
/// variant by sector size.
fn vanilla_seal_proof<Tree: 'static + MerkleTreeTrait>(
    size: u64,
    proofs: Vec<Vec<VanillaProof<Tree>>>,
) -> Result<VanillaSealProof> {
    use crate::kinds::registered as r;
    let any: Box<dyn Any> = Box::new(proofs);
    let any = match any.downcast::<Vec<Vec<VanillaProof<SectorShapeBase>>>>() {
        Ok(p) => {
            return match size {
                r::SECTOR_SIZE_2_KIB => Ok(VanillaSealProof::StackedDrg2KiBV1(*p)),
                r::SECTOR_SIZE_8_MIB => Ok(VanillaSealProof::StackedDrg8MiBV1(*p)),
                _ => Ok(VanillaSealProof::StackedDrg512MiBV1(*p)),
            }
        }
        Err(a) => a,
    };
    let any = match any.downcast::<Vec<Vec<VanillaProof<SectorShape32GiB>>>>() {
        Ok(p) => return Ok(VanillaSealProof::StackedDrg32GiBV1(*p)),
        Err(a) => a,
    };
    match any.downcast::<Vec<Vec<VanillaProof<SectorShape64GiB>>>>() {
        Ok(p) => Ok(VanillaSealProof::StackedDrg64GiBV1(*p)),
        Err(_) => Err(Error::invalid(
            "sector_size",
            "no vanilla proof type for this tree shape",
        )),
    }
}

/// SDR labels: computed for challenged nodes, pseudo-random for every other node.
struct Labels<Tree: MerkleTreeTrait> {
    seed: [u8; 32],
    replica_id: TreeDomain<Tree>,
    computed: HashMap<(u64, usize), TreeDomain<Tree>>,
}

impl<Tree: MerkleTreeTrait> Labels<Tree> {
    fn new(seed: [u8; 32], replica_id: TreeDomain<Tree>) -> Self {
        Labels {
            seed,
            replica_id,
            computed: HashMap::new(),
        }
    }

    fn label(&self, node: u64, layer: usize) -> TreeDomain<Tree> {
        if let Some(l) = self.computed.get(&(node, layer)) {
            return *l;
        }
        let digest = Sha256::new()
            .chain_update(b"cuzk virtual sector label")
            .chain_update(self.seed)
            .chain_update(node.to_le_bytes())
            .chain_update((layer as u64).to_le_bytes())
            .finalize();
        field_element(digest.into())
    }

    /// The labels a node's label in `layer` hashes, in SDR's order: its base parents in the
    /// same layer, then (above the first layer) its expander parents in the layer below,
    /// repeated to TOTAL_PARENTS.
    fn parent_labels(&self, parents: &[u64], base: usize, layer: usize) -> Vec<TreeDomain<Tree>> {
        let used = if layer == 1 { base } else { parents.len() };
        let own: Vec<TreeDomain<Tree>> = parents[..used]
            .iter()
            .enumerate()
            .map(|(i, &p)| self.label(p, if i < base { layer } else { layer - 1 }))
            .collect();
        own.iter().copied().cycle().take(TOTAL_PARENTS).collect()
    }

    /// SDR's label: SHA-256 of the replica id, the layer, the node and the parents' labels,
    /// truncated to a field element (the same function `LabelingProof::verify` checks).
    fn sdr_label(&self, layer: usize, node: u64, parents: &[TreeDomain<Tree>]) -> TreeDomain<Tree> {
        let mut head = [0u8; 64];
        head[..32].copy_from_slice(&self.replica_id.into_bytes());
        head[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
        head[36..44].copy_from_slice(&node.to_be_bytes());
        let mut h = Sha256::new().chain_update(head);
        for p in parents {
            h.update(p.into_bytes());
        }
        let label = field_element(h.finalize().into());
        debug_assert!(
            LabelingProof::<Tree::Hasher>::new(layer as u32, node, parents.to_vec())
                .verify(&self.replica_id, &label),
            "SDR label of node {node} in layer {layer}"
        );
        label
    }
}

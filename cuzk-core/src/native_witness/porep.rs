//! A PoRep partition's witness (StackedDrg, filecoin-proofs 19.1.0's `StackedCircuit`)
//! with its SHA-256 computed natively.
//!
//! The functions below follow `StackedCircuit::synthesize` and the per-challenge
//! `Proof::synthesize` of storage-proofs-porep step for step, calling the same gadgets in the
//! same order, except where the stock circuit hashes (SHA-256 for the labels and tree D's
//! Merkle path, Poseidon for the columns and trees C and R): there `sha256_witness` and
//! `poseidon_witness` allocate the gadgets' variables natively.
//! The stock circuit stays what records the matrices and what a fallback synthesizes; this
//! only ever writes into a `WitnessCs`.

use anyhow::{ensure, Context};
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use bellperson::gadgets::{multipack, uint32::UInt32};
use blstrs::Scalar as Fr;
use ff::PrimeField;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{Hasher, PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::DefaultPieceHasher;
use generic_array::typenum::Unsigned;
use neptune::poseidon::{Arity, PoseidonConstants};
use serde_json::Value;
use storage_proofs_core::gadgets::{constraint, encode::encode, insertion::insert, uint64::UInt64};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked;

use super::poseidon::poseidon_witness;
use super::sha256::sha256_witness;
use crate::witness::WitnessCs;

/// A Merkle path as the circuits take it: per level, the siblings and the index there.
pub(super) type Path = Vec<(Vec<Option<Fr>>, Option<usize>)>;
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type VanillaProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// What the circuit allocates before the challenges.
pub struct Commitments {
    pub replica_id: Fr,
    pub comm_d: Fr,
    pub comm_r: Fr,
    pub comm_r_last: Fr,
    pub comm_c: Fr,
}

struct Column {
    rows: Vec<Fr>,
    path: Path,
}

/// One challenge's openings, as the stock circuit's `Proof::from(vanilla)` takes them.
pub struct Challenge {
    data_leaf: Fr,
    node: u64,
    comm_d_path: Path,
    drg: Vec<Column>,
    exp: Vec<Column>,
    c_x: Column,
    comm_r_last_path: Path,
}

impl Commitments {
    /// The stock `StackedCompound::circuit`'s values, with its consistency checks.
    pub fn new<Tree: MerkleTreeTrait>(
        replica_id: Fr,
        comm_d: Fr,
        comm_r: Fr,
        proofs: &[VanillaProof<Tree>],
    ) -> anyhow::Result<Self> {
        // Trees C and R are hashed here with Poseidon, as every Filecoin PoRep's are.
        ensure!(
            Tree::Hasher::name() == PoseidonHasher::name(),
            "{}: trees C and R are not Poseidon trees",
            Tree::Hasher::name()
        );
        let first = proofs.first().context("a partition without challenges")?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        ensure!(
            proofs.iter().all(|p| p.comm_r_last() == comm_r_last),
            "inconsistent comm_r_lasts"
        );
        ensure!(
            proofs.iter().all(|p| p.comm_c() == comm_c),
            "inconsistent comm_cs"
        );
        Ok(Commitments {
            replica_id,
            comm_d,
            comm_r,
            comm_r_last: comm_r_last.into(),
            comm_c: comm_c.into(),
        })
    }
}

impl Challenge {
    /// The openings of one challenge. The proof crate keeps two of them to itself (the
    /// labeling proof's node and a column proof's inclusion path), so those are read from
    /// the proof's serde form, the one Curio sends.
    pub fn new<Tree: MerkleTreeTrait>(p: &VanillaProof<Tree>) -> anyhow::Result<Self> {
        let v = serde_json::to_value(p)?;
        let node = v["labeling_proofs"][0]["node"]
            .as_u64()
            .context("the labeling proof has no node")?;
        let columns = &v["replica_column_proofs"];
        let column = |c: &Value| -> anyhow::Result<Column> {
            let col: stacked::Column<Tree::Hasher> = serde_json::from_value(c["column"].clone())?;
            let inclusion: TreeProof<Tree> = serde_json::from_value(c["inclusion_proof"].clone())?;
            Ok(Column {
                rows: col.rows().iter().map(|&r| r.into()).collect(),
                path: inclusion.as_options(),
            })
        };
        let list = |name: &str| -> anyhow::Result<Vec<Column>> {
            columns[name]
                .as_array()
                .with_context(|| format!("no {name}"))?
                .iter()
                .map(column)
                .collect()
        };
        Ok(Challenge {
            data_leaf: p.comm_d_proofs.leaf().into(),
            node,
            comm_d_path: p.comm_d_proofs.as_options(),
            drg: list("drg_parents")?,
            exp: list("exp_parents")?,
            c_x: column(&columns["c_x"])?,
            comm_r_last_path: p.comm_r_last_proof.as_options(),
        })
    }
}

/// `StackedCircuit::synthesize` for `challenges`, into `cs`.
pub fn synthesize<Tree: 'static + MerkleTreeTrait>(
    cs: &mut WitnessCs,
    c: &Commitments,
    challenges: &[Challenge],
) -> Result<(), SynthesisError> {
    let replica_id = AllocatedNum::alloc(&mut *cs, || Ok(c.replica_id))?;
    replica_id.inputize(&mut *cs)?;
    let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(&mut *cs)?);
    let comm_d = AllocatedNum::alloc(&mut *cs, || Ok(c.comm_d))?;
    comm_d.inputize(&mut *cs)?;
    let comm_r = AllocatedNum::alloc(&mut *cs, || Ok(c.comm_r))?;
    comm_r.inputize(&mut *cs)?;
    let comm_r_last = AllocatedNum::alloc(&mut *cs, || Ok(c.comm_r_last))?;
    let comm_c = AllocatedNum::alloc(&mut *cs, || Ok(c.comm_c))?;
    // `PoseidonFunction::hash2_circuit`.
    let hash = poseidon(
        cs,
        &[comm_c.clone(), comm_r_last.clone()],
        &POSEIDON_CONSTANTS_2,
    )?;
    constraint::equal(&mut *cs, || "comm_r", &comm_r, &hash);
    for ch in challenges {
        challenge::<Tree>(cs, ch, &comm_d, &comm_c, &comm_r_last, &replica_id_bits)?;
    }
    Ok(())
}

/// The stock `Proof::synthesize`: one challenge.
fn challenge<Tree: 'static + MerkleTreeTrait>(
    cs: &mut WitnessCs,
    ch: &Challenge,
    comm_d: &AllocatedNum<Fr>,
    comm_c: &AllocatedNum<Fr>,
    comm_r_last: &AllocatedNum<Fr>,
    replica_id: &[Boolean],
) -> Result<(), SynthesisError> {
    let data_leaf = AllocatedNum::alloc(&mut *cs, || Ok(ch.data_leaf))?;
    tree_d_inclusion(cs, &ch.comm_d_path, comm_d, &data_leaf)?;

    let mut columns = |cols: &[Column]| -> Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError> {
        let mut out = Vec::with_capacity(cols.len());
        for col in cols {
            let rows = col
                .rows
                .iter()
                .map(|&r| AllocatedNum::alloc(&mut *cs, || Ok(r)))
                .collect::<Result<Vec<_>, _>>()?;
            let hash = hash_column(&mut *cs, &rows)?;
            inclusion::<Tree>(&mut *cs, &col.path, comm_c, &hash)?;
            out.push(rows);
        }
        Ok(out)
    };
    let drg = columns(&ch.drg)?;
    let exp = columns(&ch.exp)?;

    let node = UInt64::alloc(&mut *cs, Some(ch.node))?;
    node.pack_into_input(&mut *cs)?;

    let layers = drg[0].len();
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents = Vec::with_capacity(drg.len() + exp.len());
        for col in &drg {
            parents.push(reverse_bit_numbering(col[layer - 1].to_bits_le(&mut *cs)?));
        }
        // Expander parents hold no first layer: their rows are shifted by one.
        if layer > 1 {
            for col in &exp {
                parents.push(reverse_bit_numbering(col[layer - 2].to_bits_le(&mut *cs)?));
            }
        }
        // The labeling hash takes 37 parents, repeated as the stock circuit repeats them.
        let mut expanded = parents.clone();
        if layer > 1 {
            expanded.extend_from_slice(&parents);
            expanded.extend_from_slice(&parents[..9]);
        } else {
            for _ in 0..5 {
                expanded.extend_from_slice(&parents);
            }
            expanded.push(parents[0].clone());
        }
        labels.push(label(cs, replica_id, &expanded, layer as u32, &node)?);
    }

    let key = &labels[layers - 1];
    let encoded = encode(&mut *cs, key, &data_leaf)?;
    inclusion::<Tree>(cs, &ch.comm_r_last_path, comm_r_last, &encoded)?;
    let column_hash = hash_column(&mut *cs, &labels)?;
    inclusion::<Tree>(cs, &ch.c_x.path, comm_c, &column_hash)
}

/// The stock `create_label_circuit`: SHA-256 of replica id, layer, node and the parents'
/// labels, 32 bytes each, packed into a field element.
fn label(
    cs: &mut WitnessCs,
    replica_id: &[Boolean],
    parents: &[Vec<Boolean>],
    layer: u32,
    node: &UInt64,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut bits = Vec::with_capacity((2 + parents.len()) * 256);
    bits.extend_from_slice(replica_id);
    bits.resize(256, Boolean::constant(false));
    bits.extend(UInt32::constant(layer).into_bits_be());
    bits.extend(node.to_bits_be());
    bits.resize(512, Boolean::constant(false));
    for parent in parents {
        bits.extend_from_slice(parent);
        bits.resize(bits.len().next_multiple_of(256), Boolean::constant(false));
    }
    let hash = reverse_bit_numbering(sha256(cs, &bits)?);
    multipack::pack_bits(&mut *cs, &hash[..Fr::CAPACITY as usize])
}

/// The stock `enforce_inclusion` in tree D (binary, SHA-256): `PoRCircuit::synthesize` with
/// `Sha256Function::hash_multi_leaf_circuit` at each level.
fn tree_d_inclusion(
    cs: &mut WitnessCs,
    path: &Path,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    for (siblings, index) in path {
        let bit = Boolean::from(AllocatedBit::alloc(&mut *cs, index.map(|i| i & 1 == 1))?);
        index_bits.push(bit.clone());
        let siblings = siblings
            .iter()
            .map(|s| AllocatedNum::alloc(&mut *cs, || s.ok_or(SynthesisError::AssignmentMissing)))
            .collect::<Result<Vec<_>, _>>()?;
        let inserted = insert(&mut *cs, &cur, &[bit], &siblings)?;
        cur = sha256_leaves(cs, &inserted)?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(&mut *cs, || "root", &cur, root);
    Ok(())
}

/// `Sha256Function::hash_multi_leaf_circuit`: each leaf's bits, bytes reversed, hashed, and
/// the digest's first 254 bits (little-endian per byte) packed.
fn sha256_leaves(
    cs: &mut WitnessCs,
    leaves: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut bits = Vec::with_capacity(leaves.len() * 256);
    for leaf in leaves {
        let mut padded = leaf.to_bits_le(&mut *cs)?;
        padded.resize(padded.len().next_multiple_of(8), Boolean::Constant(false));
        bits.extend(padded.chunks_exact(8).flat_map(|b| b.iter().rev()).cloned());
    }
    let digest = sha256(cs, &bits)?;
    let le: Vec<Boolean> = digest
        .chunks(8)
        .flat_map(|b| b.iter().rev())
        .take(Fr::CAPACITY as usize)
        .cloned()
        .collect();
    multipack::pack_bits(&mut *cs, &le)
}

fn sha256(cs: &mut WitnessCs, bits: &[Boolean]) -> Result<Vec<Boolean>, SynthesisError> {
    let (digest, constraints) = sha256_witness(&mut *cs, bits)?;
    // The gadget's constraints live in the recorded matrices; the count keeps the
    // witness's shape checks (`matrix_synth`) exact.
    cs.constraints += constraints;
    Ok(digest)
}

/// The stock `hash_single_column`: Poseidon over a column of 2 or 11 labels.
fn hash_column(
    cs: &mut WitnessCs,
    column: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    match column.len() {
        2 => poseidon(cs, column, &POSEIDON_CONSTANTS_2),
        11 => poseidon(cs, column, &POSEIDON_CONSTANTS_11),
        // The stock circuit panics here; no PoRep has another layer count.
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

pub(super) fn poseidon<A: Arity<Fr>>(
    cs: &mut WitnessCs,
    preimage: &[AllocatedNum<Fr>],
    constants: &PoseidonConstants<Fr, A>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let (hash, constraints) = poseidon_witness(&mut *cs, preimage, constants)?;
    cs.constraints += constraints;
    Ok(hash)
}

/// The stock `enforce_inclusion` in tree C or R (Poseidon, `PoRCircuit::synthesize` with its
/// base, sub- and top-tree levels): per level the index bits and siblings allocated, the
/// node inserted among them (the stock `insert` gadget), their hash.
pub(super) fn inclusion<Tree: 'static + MerkleTreeTrait>(
    cs: &mut WitnessCs,
    path: &Path,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    // `AuthPath::from` takes the sub- and top-tree levels off the end.
    let sub = usize::from(Tree::SubTreeArity::to_usize() > 0);
    let top = usize::from(Tree::TopTreeArity::to_usize() > 0);
    let base = path
        .len()
        .checked_sub(sub + top)
        .ok_or(SynthesisError::Unsatisfiable)?;
    let mut cur = leaf.clone();
    let mut index_bits = Vec::new();
    for (i, (siblings, index)) in path.iter().enumerate() {
        cur = if i < base {
            level::<Tree::Arity>(cs, &cur, siblings, *index, &mut index_bits)?
        } else if i < base + sub {
            level::<Tree::SubTreeArity>(cs, &cur, siblings, *index, &mut index_bits)?
        } else {
            level::<Tree::TopTreeArity>(cs, &cur, siblings, *index, &mut index_bits)?
        };
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(&mut *cs, || "root", &cur, root);
    Ok(())
}

/// One level of `SubPath::synthesize` in a Poseidon tree of arity `A`.
fn level<A: PoseidonArity>(
    cs: &mut WitnessCs,
    cur: &AllocatedNum<Fr>,
    siblings: &[Option<Fr>],
    index: Option<usize>,
    index_bits: &mut Vec<Boolean>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let bits = (0..A::to_usize().trailing_zeros())
        .map(|i| AllocatedBit::alloc(&mut *cs, index.map(|x| (x >> i) & 1 == 1)).map(Boolean::from))
        .collect::<Result<Vec<_>, _>>()?;
    index_bits.extend_from_slice(&bits);
    let siblings = siblings
        .iter()
        .map(|s| AllocatedNum::alloc(&mut *cs, || s.ok_or(SynthesisError::AssignmentMissing)))
        .collect::<Result<Vec<_>, _>>()?;
    let inserted = insert(&mut *cs, cur, &bits, &siblings)?;
    poseidon(cs, &inserted, A::PARAMETERS())
}

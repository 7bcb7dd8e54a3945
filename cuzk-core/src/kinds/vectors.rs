//! Test vectors: seal fresh sectors with the proof crates and write what Curio would send
//! for each proof kind (the C1 envelope, bincode vanilla proofs, SnapDeals partition proofs),
//! with a manifest of the public inputs a verifier needs. Meant for the small sector sizes;
//! sealing is the proof crates' own CPU code.
//!
//! Layout of `out_dir` for kind K: `K.json` (the manifest) plus the payload files it names.
//! Sealing scratch space goes to `out_dir/K-work/` and is removed afterwards.

use std::fs::{self, File, OpenOptions};
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::{
    PieceInfo, PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof, SectorId,
    UnpaddedBytesAmount,
};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use super::prover_id::prover_id;
use super::registered::{self, post_proof_abi, seal_proof_abi, update_proof_abi};
use super::request::KindRequest;
use crate::job::{Error, ProofKind, Result};

/// Largest sector size `generate` seals (it writes and seals whole sectors in memory-backed
/// files; larger sizes take hours and need production parameters anyway).
pub const MAX_VECTOR_SECTOR_SIZE: u64 = registered::SECTOR_SIZE_512_MIB;

/// The miner the vectors are made for (f01000, as in Lotus' devnets).
pub const MINER_ID: u64 = 1000;

/// What a verifier needs, and where the payloads are. Byte strings are hex.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// "porep", "winning", "window" or "snap".
    pub kind: String,
    pub sector_size: u64,
    /// The request's registered_proof (Go abi numbering) for this kind.
    pub registered_proof: u64,
    /// The Go abi RegisteredSealProof the sectors were sealed with.
    pub seal_proof: u64,
    pub miner_id: u64,
    pub prover_id: String,
    /// The sectors, in ascending order, with their commitments.
    pub sectors: Vec<SectorInfo>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ticket: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub seed: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub randomness: String,
    #[serde(default)]
    pub partition_index: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comm_r_old: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comm_r_new: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comm_d_new: String,
    /// PoRep: the file holding Curio's C1 envelope.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vanilla_proof: String,
    /// PoSt: one file per sector; SnapDeals: one per partition (bincode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vanilla_proofs: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SectorInfo {
    pub sector_number: u64,
    pub comm_r: String,
    pub comm_d: String,
}

impl Manifest {
    /// An empty manifest of `kind` for MINER_ID's sectors of `sector_size` sealed with `seal`.
    pub(crate) fn for_sectors(
        kind: ProofKind,
        sector_size: u64,
        seal: RegisteredSealProof,
    ) -> Self {
        Manifest {
            kind: kind.as_str().to_string(),
            sector_size,
            seal_proof: seal_proof_abi(seal),
            miner_id: MINER_ID,
            prover_id: hex::encode(prover_id(MINER_ID)),
            ..Manifest::default()
        }
    }

    pub fn read(path: &Path) -> Result<Manifest> {
        let bytes = fs::read(path).map_err(|e| io_err(path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::Internal(format!("{} is not a vector manifest: {e}", path.display()))
        })
    }

    pub fn proof_kind(&self) -> Result<ProofKind> {
        parse_kind(&self.kind)
    }

    /// The SubmitProof request Curio would send for this vector, payloads read from `dir`.
    pub fn request(&self, dir: &Path) -> Result<KindRequest> {
        self.request_with(&|name| fs::read(dir.join(name)).map_err(|e| io_err(&dir.join(name), e)))
    }

    /// The request, with each payload the manifest names read by `read`.
    pub fn request_with(&self, read: &dyn Fn(&str) -> Result<Vec<u8>>) -> Result<KindRequest> {
        let kind = self.proof_kind()?;
        let mut req = KindRequest::new(kind);
        req.sector_size = self.sector_size;
        req.registered_proof = self.registered_proof;
        req.miner_id = self.miner_id;
        req.sector_number = self.sectors.first().map_or(0, |s| s.sector_number);
        req.partition_index = self.partition_index;
        if !self.vanilla_proof.is_empty() {
            req.vanilla_proof = read(&self.vanilla_proof)?;
        }
        req.vanilla_proofs = self
            .vanilla_proofs
            .iter()
            .map(|f| read(f))
            .collect::<Result<_>>()?;
        req.randomness = unhex(&self.randomness)?;
        req.comm_r_old = unhex(&self.comm_r_old)?;
        req.comm_r_new = unhex(&self.comm_r_new)?;
        req.comm_d_new = unhex(&self.comm_d_new)?;
        Ok(req)
    }
}

pub fn parse_kind(s: &str) -> Result<ProofKind> {
    ProofKind::ALL
        .into_iter()
        .find(|k| *k != ProofKind::Synthetic && k.as_str() == s)
        .ok_or_else(|| {
            Error::invalid(
                "kind",
                format!("{s:?} is not porep, winning, window or snap"),
            )
        })
}

fn unhex(s: &str) -> Result<Vec<u8>> {
    hex::decode(s).map_err(|e| Error::Internal(format!("manifest hex {s:?}: {e}")))
}

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::Internal(format!("{}: {e}", path.display()))
}

fn fil(what: &str) -> impl Fn(anyhow::Error) -> Error + '_ {
    move |e| Error::Internal(format!("{what}: {e:#}"))
}

/// A sealed sector on disk.
struct Sealed {
    sector_number: u64,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    cache_dir: PathBuf,
    replica: PathBuf,
    c1: SealCommitPhase1Output,
    ticket: [u8; 32],
    seed: [u8; 32],
}

/// A sector of random data, sealed through commit phase 1.
fn seal_sector(
    proof: RegisteredSealProof,
    work: &Path,
    sector_number: u64,
    rng: &mut impl RngCore,
) -> Result<Sealed> {
    let size = u64::from(proof.sector_size());
    let dir = work.join(format!("sector-{sector_number}"));
    let cache_dir = dir.join("cache");
    fs::create_dir_all(&cache_dir).map_err(|e| io_err(&cache_dir, e))?;
    let staged = dir.join("staged");
    let replica = dir.join("sealed");

    let piece = write_piece(proof, &staged, size, rng)?;
    File::create(&replica).map_err(|e| io_err(&replica, e))?;

    let prover = prover_id(MINER_ID);
    let id = SectorId::from(sector_number);
    let mut ticket = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    seed[0] |= 1; // the stock code rejects an all-zero seed

    let p1 = seal_pre_commit_phase1(
        proof,
        &cache_dir,
        &staged,
        &replica,
        prover,
        id,
        ticket,
        std::slice::from_ref(&piece),
    )
    .map_err(fil("seal_pre_commit_phase1"))?;
    let p2 =
        seal_pre_commit_phase2(p1, &cache_dir, &replica).map_err(fil("seal_pre_commit_phase2"))?;
    let (comm_r, comm_d) = (p2.comm_r, p2.comm_d);
    let c1 = seal_commit_phase1(&cache_dir, &replica, prover, id, ticket, seed, p2, &[piece])
        .map_err(fil("seal_commit_phase1"))?;
    Ok(Sealed {
        sector_number,
        comm_r,
        comm_d,
        cache_dir,
        replica,
        c1,
        ticket,
        seed,
    })
}

/// One piece filling the whole sector, of random bytes, fr32-padded into `path`.
fn write_piece(
    proof: RegisteredSealProof,
    path: &Path,
    size: u64,
    rng: &mut impl RngCore,
) -> Result<PieceInfo> {
    let unpadded = size / 128 * 127;
    let mut data = vec![0u8; unpadded as usize];
    rng.fill_bytes(&mut data);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let (piece, _) = add_piece(
        proof,
        Cursor::new(data),
        &mut file,
        UnpaddedBytesAmount(unpadded),
        &[],
    )
    .map_err(fil("add_piece"))?;
    file.flush().map_err(|e| io_err(path, e))?;
    Ok(piece)
}

/// Write a payload (or manifest) `name` into `dir`; returns the name the manifest records.
pub(crate) fn write_payload(dir: &Path, name: &str, bytes: &[u8]) -> Result<String> {
    let path = dir.join(name);
    fs::write(&path, bytes).map_err(|e| io_err(&path, e))?;
    Ok(name.to_string())
}

fn sector_info(s: &Sealed) -> SectorInfo {
    SectorInfo {
        sector_number: s.sector_number,
        comm_r: hex::encode(s.comm_r),
        comm_d: hex::encode(s.comm_d),
    }
}

/// Seal fresh sectors of `sector_size` and write the vector of `kind` into `out_dir`
/// (`<kind>.json` and payload files). Returns the manifest.
pub fn generate(kind: ProofKind, sector_size: u64, out_dir: &Path) -> Result<Manifest> {
    let seal = registered::default_seal_proof(sector_size).ok_or_else(|| {
        Error::invalid("sector_size", format!("no sealing proof for {sector_size}"))
    })?;
    if sector_size > MAX_VECTOR_SECTOR_SIZE {
        return Err(Error::invalid(
            "sector_size",
            format!("test vectors are for sizes up to {MAX_VECTOR_SECTOR_SIZE} bytes"),
        ));
    }
    fs::create_dir_all(out_dir).map_err(|e| io_err(out_dir, e))?;
    let work = out_dir.join(format!("{}-work", kind.as_str()));
    let _ = fs::remove_dir_all(&work);
    let mut rng = rand::thread_rng();
    let mut m = Manifest::for_sectors(kind, sector_size, seal);
    let name = kind.as_str();
    match kind {
        ProofKind::PorepSealCommit => {
            let s = seal_sector(seal, &work, 1, &mut rng)?;
            m.registered_proof = seal_proof_abi(seal);
            m.ticket = hex::encode(s.ticket);
            m.seed = hex::encode(s.seed);
            let env = super::porep::encode_envelope(s.sector_number, &s.c1)?;
            m.vanilla_proof = write_payload(out_dir, "porep-c1.json", &env)?;
            m.sectors.push(sector_info(&s));
        }
        ProofKind::WinningPost | ProofKind::WindowPostPartition => {
            let post = if kind == ProofKind::WinningPost {
                registered::winning_post_proof(sector_size)
            } else {
                registered::window_post_proof(sector_size)
            }
            .expect("every sealed size has PoSt proofs");
            // A WindowPoSt partition of two sectors exercises ordering and padding.
            let count = if kind == ProofKind::WinningPost {
                1
            } else {
                2.min(post.sector_count()) as u64
            };
            let sectors = (1..=count)
                .map(|n| seal_sector(seal, &work, n, &mut rng))
                .collect::<Result<Vec<_>>>()?;
            let mut randomness = [0u8; 32];
            rng.fill(&mut randomness[..]);
            randomness[31] &= 0x3f; // as Curio does: a field element
            m.registered_proof = post_proof_abi(post);
            m.randomness = hex::encode(randomness);
            write_post_vanilla(post, &sectors, randomness, out_dir, name, &mut m)?;
            m.sectors = sectors.iter().map(sector_info).collect();
        }
        ProofKind::SnapDealsUpdate => {
            let s = seal_sector(seal, &work, 1, &mut rng)?;
            let update = registered::update_proof_for_size(sector_size)
                .expect("every sealed size has an update proof");
            m.registered_proof = update_proof_abi(update);
            write_snap_vanilla(seal, update, &s, &work, out_dir, &mut rng, &mut m)?;
            m.sectors.push(sector_info(&s));
        }
        ProofKind::Synthetic => {
            return Err(Error::invalid("kind", "synthetic jobs need no vectors"));
        }
    }
    let manifest = serde_json::to_vec_pretty(&m).map_err(|e| Error::Internal(e.to_string()))?;
    write_payload(out_dir, &format!("{name}.json"), &manifest)?;
    let _ = fs::remove_dir_all(&work);
    Ok(m)
}

fn write_post_vanilla(
    post: RegisteredPoStProof,
    sectors: &[Sealed],
    randomness: [u8; 32],
    out_dir: &Path,
    name: &str,
    m: &mut Manifest,
) -> Result<()> {
    let prover = prover_id(MINER_ID);
    let ids: Vec<SectorId> = sectors
        .iter()
        .map(|s| SectorId::from(s.sector_number))
        .collect();
    let challenges = filecoin_proofs_api::post::generate_fallback_sector_challenges(
        post,
        &randomness,
        &ids,
        prover,
    )
    .map_err(fil("generate_fallback_sector_challenges"))?;
    for s in sectors {
        let id = SectorId::from(s.sector_number);
        let replica =
            PrivateReplicaInfo::new(post, s.comm_r, s.cache_dir.clone(), s.replica.clone());
        let c = challenges.get(&id).ok_or_else(|| {
            Error::Internal(format!("no challenges for sector {}", s.sector_number))
        })?;
        let bytes = filecoin_proofs_api::post::generate_single_vanilla_proof(post, id, &replica, c)
            .map_err(fil("generate_single_vanilla_proof"))?;
        m.vanilla_proofs.push(write_payload(
            out_dir,
            &format!("{name}-vanilla-{}.bin", s.sector_number),
            &bytes,
        )?);
    }
    Ok(())
}

fn write_snap_vanilla(
    seal: RegisteredSealProof,
    update: filecoin_proofs_api::RegisteredUpdateProof,
    s: &Sealed,
    work: &Path,
    out_dir: &Path,
    rng: &mut impl RngCore,
    m: &mut Manifest,
) -> Result<()> {
    let size = u64::from(seal.sector_size());
    let dir = work.join("update");
    let new_cache = dir.join("cache");
    fs::create_dir_all(&new_cache).map_err(|e| io_err(&new_cache, e))?;
    let staged = dir.join("staged");
    let piece = write_piece(seal, &staged, size, rng)?;
    let new_replica = dir.join("replica");
    let f = File::create(&new_replica).map_err(|e| io_err(&new_replica, e))?;
    f.set_len(size).map_err(|e| io_err(&new_replica, e))?;
    drop(f);
    let enc = filecoin_proofs_api::update::empty_sector_update_encode_into(
        update,
        &new_replica,
        &new_cache,
        &s.replica,
        &s.cache_dir,
        &staged,
        &[piece],
    )
    .map_err(fil("empty_sector_update_encode_into"))?;
    let proofs = filecoin_proofs_api::update::generate_partition_proofs(
        update,
        s.comm_r,
        enc.comm_r_new,
        enc.comm_d_new,
        &s.replica,
        &s.cache_dir,
        &new_replica,
        &new_cache,
    )
    .map_err(fil("generate_partition_proofs"))?;
    m.comm_r_old = hex::encode(s.comm_r);
    m.comm_r_new = hex::encode(enc.comm_r_new);
    m.comm_d_new = hex::encode(enc.comm_d_new);
    for (i, p) in proofs.iter().enumerate() {
        m.vanilla_proofs.push(write_payload(
            out_dir,
            &format!("snap-partition-{i}.bin"),
            &p.0,
        )?);
    }
    Ok(())
}

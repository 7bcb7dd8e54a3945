//! Virtual sectors: the payloads Curio would send for a sector's proofs, made consistent
//! without sealing the sector, so the real circuits can be proven at the sizes storage
//! providers run (a sealed 32 GiB sector takes hours and hundreds of GB). Each payload passes
//! the proof crates' own vanilla verification before it is written.
//!
//! What a virtual sector can stand in for: the interactive PoRep (V1, V1_1), whose challenges
//! follow from the replica id and the seed (see `porep`), and WinningPoSt and WindowPoSt,
//! whose challenges follow from the randomness and the sector ids (see `post`). Synthetic and
//! non-interactive PoRep draw their challenges from comm_r and need a sealed sector; their
//! circuit and parameter file are V1_1's. SnapDeals is not made yet: its challenges follow
//! from comm_r_new, which depends on the whole new replica.

mod porep;
mod post;
mod sparse;

use std::fs;
use std::path::Path;

use rand::RngCore;

pub use porep::{verify_c1, virtual_porep, VirtualPorep};
pub use post::{virtual_post, VirtualPostSector};
pub use sparse::{tree_arities, SparseTree};

/// 32 bytes as a field element the way Filecoin truncates hashes: the top two bits cleared.
fn field_element<D: filecoin_hashers::Domain>(mut bytes: [u8; 32]) -> D {
    bytes[31] &= 0b0011_1111;
    D::try_from_bytes(&bytes).expect("a 254-bit value is a field element")
}

use super::registered::{self, post_proof_abi, seal_proof_abi};
use super::vectors::{write_payload, Manifest, SectorInfo, MINER_ID};
use crate::job::{Error, ProofKind, Result};

/// Write the vector of `kind` for a virtual sector of `sector_size` into `out_dir`, in the
/// layout `vectors::generate` writes (`<kind>.json` and the payloads it names).
pub fn generate(kind: ProofKind, sector_size: u64, out_dir: &Path) -> Result<Manifest> {
    let (m, payloads) = make(kind, sector_size)?;
    fs::create_dir_all(out_dir)
        .map_err(|e| Error::Internal(format!("{}: {e}", out_dir.display())))?;
    for (name, bytes) in &payloads {
        write_payload(out_dir, name, bytes)?;
    }
    let manifest = serde_json::to_vec_pretty(&m).map_err(|e| Error::Internal(e.to_string()))?;
    write_payload(out_dir, &format!("{}.json", m.kind), &manifest)?;
    Ok(m)
}

/// A payload file's name and bytes.
type Payload = (String, Vec<u8>);

/// The manifest of a fresh virtual sector's vector of `kind`, and the payloads it names.
fn make(kind: ProofKind, sector_size: u64) -> Result<(Manifest, Vec<Payload>)> {
    let seal = registered::default_seal_proof(sector_size).ok_or_else(|| {
        Error::invalid("sector_size", format!("no sealing proof for {sector_size}"))
    })?;
    let mut payloads = Vec::new();
    let mut rng = rand::thread_rng();
    let mut m = Manifest::for_sectors(kind, sector_size, seal);
    match kind {
        ProofKind::PorepSealCommit => {
            let sector_number = 1 + u64::from(rng.next_u32());
            let mut bytes = [[0u8; 32]; 3];
            for b in &mut bytes {
                rng.fill_bytes(b);
            }
            let [ticket, mut seed, label_seed] = bytes;
            seed[0] |= 1; // the stock code rejects an all-zero seed
            let v = virtual_porep(seal, MINER_ID, sector_number, ticket, seed, label_seed)?;
            m.registered_proof = seal_proof_abi(seal);
            m.ticket = hex::encode(ticket);
            m.seed = hex::encode(seed);
            let env = super::porep::encode_envelope(sector_number, &v.c1)?;
            m.vanilla_proof = "porep-c1.json".into();
            payloads.push((m.vanilla_proof.clone(), env));
            m.sectors.push(SectorInfo {
                sector_number,
                comm_r: hex::encode(v.comm_r),
                comm_d: hex::encode(v.comm_d),
            });
        }
        ProofKind::WinningPost | ProofKind::WindowPostPartition => {
            let winning = kind == ProofKind::WinningPost;
            let post = if winning {
                registered::winning_post_proof(sector_size)
            } else {
                registered::window_post_proof(sector_size)
            }
            .ok_or_else(|| Error::invalid("sector_size", format!("no PoSt for {sector_size}")))?;
            // WinningPoSt proves one sector; a WindowPoSt partition is full.
            let count = if winning {
                1
            } else {
                post.sector_count() as u64
            };
            let first = 1 + u64::from(rng.next_u32());
            let numbers: Vec<u64> = (first..first + count).collect();
            let mut randomness = [0u8; 32];
            let mut seed = [0u8; 32];
            rng.fill_bytes(&mut randomness);
            rng.fill_bytes(&mut seed);
            randomness[31] &= 0x3f; // as Curio sends it: a field element
            let sectors = virtual_post(post, MINER_ID, &numbers, randomness, seed)?;
            m.registered_proof = post_proof_abi(post);
            m.randomness = hex::encode(randomness);
            for s in &sectors {
                let name = format!("{}-vanilla-{}.bin", m.kind, s.sector_number);
                m.vanilla_proofs.push(name.clone());
                payloads.push((name, s.vanilla.clone()));
                m.sectors.push(SectorInfo {
                    sector_number: s.sector_number,
                    comm_r: hex::encode(s.comm_r),
                    comm_d: String::new(),
                });
            }
        }
        other => {
            return Err(Error::invalid(
                "kind",
                format!("virtual sectors are made for porep, winning and window, not {other}"),
            ))
        }
    }
    Ok((m, payloads))
}

/// A request of `kind` for a virtual sector of `sector_size`, made in memory (parameter
/// generation records the real circuit from it).
pub fn request(kind: ProofKind, sector_size: u64) -> Result<super::KindRequest> {
    let (m, payloads) = make(kind, sector_size)?;
    m.request_with(&|name| {
        payloads
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .ok_or_else(|| Error::Internal(format!("no payload {name}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32 GiB virtual sector passes the proof crates' vanilla verification (inside
    /// `virtual_porep`) and the daemon's own request checks, in seconds.
    #[test]
    fn porep_32gib_is_consistent() {
        let dir = tempfile::tempdir().unwrap();
        let size = registered::SECTOR_SIZE_32_GIB;
        let m = generate(ProofKind::PorepSealCommit, size, dir.path()).unwrap();
        assert_eq!(m.registered_proof, 8, "V1_1");
        let req = m.request(dir.path()).unwrap();
        let task = super::super::build_task(&req).unwrap();
        assert_eq!(task.partitions(), 10);
    }

    /// The check is real: the same output for another sector, or with another seed, fails.
    #[test]
    fn tampered_porep_fails_vanilla_verification() {
        let p = registered::default_seal_proof(registered::SECTOR_SIZE_2_KIB).unwrap();
        let v = virtual_porep(p, 1000, 5, [3; 32], [4; 32], [5; 32]).unwrap();
        assert!(verify_c1(&v.c1, 1000, 5).unwrap());
        assert!(!verify_c1(&v.c1, 1000, 6).unwrap());
        let mut c1 = v.c1.clone();
        c1.seed[1] ^= 1;
        assert!(!verify_c1(&c1, 1000, 5).unwrap());
    }

    /// 32 GiB WinningPoSt and a full WindowPoSt partition (2,349 sectors) pass the proof
    /// crates' FallbackPoSt verifier (inside `virtual_post`) and the daemon's request checks.
    #[test]
    fn post_32gib_is_consistent() {
        let size = registered::SECTOR_SIZE_32_GIB;
        for (kind, sectors) in [
            (ProofKind::WinningPost, 1),
            (ProofKind::WindowPostPartition, 2349),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let m = generate(kind, size, dir.path()).unwrap();
            assert_eq!(m.sectors.len(), sectors, "{kind}");
            let req = m.request(dir.path()).unwrap();
            let task = super::super::build_task(&req).unwrap();
            assert_eq!(task.partitions(), 1);
        }
    }

    #[test]
    fn synthetic_porep_is_refused() {
        let p = registered::seal_proof(13).unwrap();
        let err = virtual_porep(p, 1000, 1, [1; 32], [1; 32], [2; 32])
            .err()
            .unwrap();
        assert!(err.to_string().contains("comm_r"), "{err}");
    }
}

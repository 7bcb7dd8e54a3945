//! Registered-proof numbers as Filecoin's Go `abi` package (and so Curio and filecoin-ffi)
//! numbers them, mapped to filecoin-proofs-api's enums, and the sector sizes they imply.
//!
//! The Go numbering happens to follow the Rust enums' declaration order today, but the wire
//! contract is the Go numbering, so it is spelled out here rather than derived from the enum
//! order: a reordering upstream must not silently change what a number means.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

pub const SECTOR_SIZE_2_KIB: u64 = 2 << 10;
pub const SECTOR_SIZE_8_MIB: u64 = 8 << 20;
pub const SECTOR_SIZE_512_MIB: u64 = 512 << 20;
pub const SECTOR_SIZE_32_GIB: u64 = 32 << 30;
pub const SECTOR_SIZE_64_GIB: u64 = 64 << 30;

/// The sector sizes that have registered proofs (the published sizes).
pub const SECTOR_SIZES: [u64; 5] = [
    SECTOR_SIZE_2_KIB,
    SECTOR_SIZE_8_MIB,
    SECTOR_SIZE_512_MIB,
    SECTOR_SIZE_32_GIB,
    SECTOR_SIZE_64_GIB,
];

use RegisteredPoStProof as P;
use RegisteredSealProof as S;
use RegisteredUpdateProof as U;

/// Go `abi.RegisteredSealProof`.
const SEAL: [(u64, S); 20] = [
    (0, S::StackedDrg2KiBV1),
    (1, S::StackedDrg8MiBV1),
    (2, S::StackedDrg512MiBV1),
    (3, S::StackedDrg32GiBV1),
    (4, S::StackedDrg64GiBV1),
    (5, S::StackedDrg2KiBV1_1),
    (6, S::StackedDrg8MiBV1_1),
    (7, S::StackedDrg512MiBV1_1),
    (8, S::StackedDrg32GiBV1_1),
    (9, S::StackedDrg64GiBV1_1),
    (10, S::StackedDrg2KiBV1_1_Feat_SyntheticPoRep),
    (11, S::StackedDrg8MiBV1_1_Feat_SyntheticPoRep),
    (12, S::StackedDrg512MiBV1_1_Feat_SyntheticPoRep),
    (13, S::StackedDrg32GiBV1_1_Feat_SyntheticPoRep),
    (14, S::StackedDrg64GiBV1_1_Feat_SyntheticPoRep),
    (15, S::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep),
    (16, S::StackedDrg8MiBV1_2_Feat_NonInteractivePoRep),
    (17, S::StackedDrg512MiBV1_2_Feat_NonInteractivePoRep),
    (18, S::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep),
    (19, S::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep),
];

/// Go `abi.RegisteredPoStProof`. Go's `StackedDrgWindow*V1_1` (10..=14) are the Rust
/// `StackedDrgWindow*V1_2` (the grinding fix); the Rust V1_1 name was never published.
const POST: [(u64, P); 15] = [
    (0, P::StackedDrgWinning2KiBV1),
    (1, P::StackedDrgWinning8MiBV1),
    (2, P::StackedDrgWinning512MiBV1),
    (3, P::StackedDrgWinning32GiBV1),
    (4, P::StackedDrgWinning64GiBV1),
    (5, P::StackedDrgWindow2KiBV1),
    (6, P::StackedDrgWindow8MiBV1),
    (7, P::StackedDrgWindow512MiBV1),
    (8, P::StackedDrgWindow32GiBV1),
    (9, P::StackedDrgWindow64GiBV1),
    (10, P::StackedDrgWindow2KiBV1_2),
    (11, P::StackedDrgWindow8MiBV1_2),
    (12, P::StackedDrgWindow512MiBV1_2),
    (13, P::StackedDrgWindow32GiBV1_2),
    (14, P::StackedDrgWindow64GiBV1_2),
];

/// Go `abi.RegisteredUpdateProof`.
const UPDATE: [(u64, U); 5] = [
    (0, U::StackedDrg2KiBV1),
    (1, U::StackedDrg8MiBV1),
    (2, U::StackedDrg512MiBV1),
    (3, U::StackedDrg32GiBV1),
    (4, U::StackedDrg64GiBV1),
];

pub fn seal_proof(abi: u64) -> Option<S> {
    SEAL.iter().find(|(n, _)| *n == abi).map(|(_, p)| *p)
}

pub fn seal_proof_abi(proof: S) -> u64 {
    SEAL.iter()
        .find(|(_, p)| *p == proof)
        .map(|(n, _)| *n)
        .expect("every seal proof is in the table")
}

pub fn post_proof(abi: u64) -> Option<P> {
    POST.iter().find(|(n, _)| *n == abi).map(|(_, p)| *p)
}

pub fn post_proof_abi(proof: P) -> u64 {
    POST.iter()
        .find(|(_, p)| *p == proof)
        .map(|(n, _)| *n)
        .expect("every PoSt proof is in the table")
}

pub fn update_proof(abi: u64) -> Option<U> {
    UPDATE.iter().find(|(n, _)| *n == abi).map(|(_, p)| *p)
}

pub fn update_proof_abi(proof: U) -> u64 {
    UPDATE
        .iter()
        .find(|(_, p)| *p == proof)
        .map(|(n, _)| *n)
        .expect("every update proof is in the table")
}

/// The proof a new sector of this size is sealed with today (Go's default: V1_1).
pub fn default_seal_proof(sector_size: u64) -> Option<S> {
    SEAL[5..10]
        .iter()
        .map(|(_, p)| *p)
        .find(|p| u64::from(p.sector_size()) == sector_size)
}

pub fn winning_post_proof(sector_size: u64) -> Option<P> {
    POST[0..5]
        .iter()
        .map(|(_, p)| *p)
        .find(|p| u64::from(p.sector_size()) == sector_size)
}

/// The WindowPoSt proof in use on chain (Go V1_1, Rust V1_2).
pub fn window_post_proof(sector_size: u64) -> Option<P> {
    POST[10..15]
        .iter()
        .map(|(_, p)| *p)
        .find(|p| u64::from(p.sector_size()) == sector_size)
}

pub fn update_proof_for_size(sector_size: u64) -> Option<U> {
    UPDATE
        .iter()
        .map(|(_, p)| *p)
        .find(|p| u64::from(p.sector_size()) == sector_size)
}

/// Short label used in circuit ids ("porep-2k", "window-32g").
pub fn size_label(sector_size: u64) -> Option<&'static str> {
    Some(match sector_size {
        SECTOR_SIZE_2_KIB => "2k",
        SECTOR_SIZE_8_MIB => "8m",
        SECTOR_SIZE_512_MIB => "512m",
        SECTOR_SIZE_32_GIB => "32g",
        SECTOR_SIZE_64_GIB => "64g",
        _ => return None,
    })
}

/// Parse a sector size as people write it: "2KiB", "2k", "8MiB", "32GiB", "64g" or plain
/// bytes ("2048"). Only published sizes are accepted.
pub fn parse_sector_size(s: &str) -> Option<u64> {
    let t = s.trim().to_ascii_lowercase();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num.parse().ok()?;
    let shift = match unit.trim() {
        "" | "b" => 0,
        "k" | "kib" | "ki" => 10,
        "m" | "mib" | "mi" => 20,
        "g" | "gib" | "gi" => 30,
        _ => return None,
    };
    let size = n.checked_mul(1u64 << shift)?;
    SECTOR_SIZES.contains(&size).then_some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        assert_eq!(seal_proof(5), Some(S::StackedDrg2KiBV1_1));
        assert_eq!(post_proof(0), Some(P::StackedDrgWinning2KiBV1));
        assert_eq!(post_proof(10), Some(P::StackedDrgWindow2KiBV1_2));
        assert_eq!(update_proof(0), Some(U::StackedDrg2KiBV1));
        assert_eq!(seal_proof(20), None);
        assert_eq!(post_proof(15), None);
        assert_eq!(update_proof(5), None);
    }

    #[test]
    fn tables_round_trip_and_cover_every_size() {
        for (n, p) in SEAL {
            assert_eq!(seal_proof_abi(p), n);
        }
        for (n, p) in POST {
            assert_eq!(post_proof_abi(p), n);
        }
        for (n, p) in UPDATE {
            assert_eq!(update_proof_abi(p), n);
        }
        for size in SECTOR_SIZES {
            assert_eq!(
                u64::from(default_seal_proof(size).unwrap().sector_size()),
                size
            );
            assert_eq!(
                u64::from(winning_post_proof(size).unwrap().sector_size()),
                size
            );
            assert_eq!(
                u64::from(window_post_proof(size).unwrap().sector_size()),
                size
            );
            assert_eq!(
                u64::from(update_proof_for_size(size).unwrap().sector_size()),
                size
            );
            assert!(size_label(size).is_some());
        }
        // Each size appears exactly four times among seal proofs, three among PoSt proofs.
        for size in SECTOR_SIZES {
            assert_eq!(
                SEAL.iter()
                    .filter(|(_, p)| u64::from(p.sector_size()) == size)
                    .count(),
                4
            );
            assert_eq!(
                POST.iter()
                    .filter(|(_, p)| u64::from(p.sector_size()) == size)
                    .count(),
                3
            );
        }
    }

    #[test]
    fn sector_size_parsing() {
        assert_eq!(parse_sector_size("2KiB"), Some(2048));
        assert_eq!(parse_sector_size("2k"), Some(2048));
        assert_eq!(parse_sector_size("2048"), Some(2048));
        assert_eq!(parse_sector_size("8MiB"), Some(8 << 20));
        assert_eq!(parse_sector_size("32GiB"), Some(32 << 30));
        assert_eq!(parse_sector_size("64g"), Some(64 << 30));
        assert_eq!(parse_sector_size("4KiB"), None);
        assert_eq!(parse_sector_size("KiB"), None);
        assert_eq!(parse_sector_size("99999999999999999999g"), None);
    }
}

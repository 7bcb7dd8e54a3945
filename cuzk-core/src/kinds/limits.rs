//! Size limits on what a client sends, per kind and field, checked before any payload is
//! decoded: JSON, base64 and bincode decoders allocate in proportion to their input (and
//! the PoRep envelope is decoded twice), so a payload far larger than any real one is
//! refused on its length alone.
//!
//! Each cap is the largest legitimate payload (32 or 64 GiB sectors, the largest published)
//! with headroom. The estimates count bincode/JSON bytes of the proof crates' types; they
//! were checked against real 2 KiB payloads (`cuzk-client gen-vanilla`), whose sizes the same
//! arithmetic predicts within a few percent:
//!
//! - a Poseidon oct-tree opening is ~240 bytes per level (7 sibling hashes of 32 bytes, a
//!   length and an index of 8 each); 2 KiB (2 levels) measures 558 bytes per challenge;
//!   32 GiB (9 base levels + 1 sub-tree level) is ~2.5 KB, 64 GiB adds a binary top level.
//!
//! A request over a cap is answered INVALID_ARGUMENT naming the field, not
//! RESOURCE_EXHAUSTED: the request can never succeed, and RESOURCE_EXHAUSTED is what a full
//! queue answers, which clients (Curio among them) treat as "retry later".

use super::request::KindRequest;
use crate::job::{Error, ProofKind, Result};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// PoRep `vanilla_proof`: Curio's envelope around the commit-phase-1 JSON. A 32 GiB C1
/// output is about 50 MB of JSON (180 challenge proofs of ~48 KB raw each, byte arrays
/// written as decimal lists), ~67 MB once base64'd into the envelope; 64 GiB trees are one
/// level taller (~70 MB). 128 MiB is 1.8x the largest, and half the gRPC message limit.
pub const MAX_POREP_ENVELOPE_BYTES: usize = 128 * MIB;

/// WinningPoSt: exactly one sector is proven per job (filecoin-proofs'
/// `WINNING_POST_SECTOR_COUNT`).
pub const MAX_WINNING_SECTOR_PROOFS: usize = 1;
/// One WinningPoSt `FallbackPoStSectorProof`: 66 openings of ~2.55 KB at 64 GiB, ~170 KB
/// (2 KiB measures 36,816 bytes). 1 MiB is 6x.
pub const MAX_WINNING_SECTOR_PROOF_BYTES: usize = MIB;

/// WindowPoSt: sectors in one partition (filecoin-proofs' `WINDOW_POST_SECTOR_COUNT`: 2349
/// at 32 GiB, 2300 at 64 GiB, fewer at test sizes).
pub const MAX_WINDOW_SECTOR_PROOFS: usize = 2349;
/// One WindowPoSt `FallbackPoStSectorProof`: 10 openings of ~2.55 KB, ~26 KB at 64 GiB
/// (2 KiB measures 5,680 bytes). 256 KiB is 10x; 2349 of them (~600 MiB) is more than the
/// message limit allows anyway, which then bounds the total.
pub const MAX_WINDOW_SECTOR_PROOF_BYTES: usize = 256 * KIB;

/// SnapDeals: partitions of an update proof (storage-proofs-update `partition_count`: 16
/// for 32 and 64 GiB).
pub const MAX_SNAP_PARTITION_PROOFS: usize = 16;
/// One SnapDeals `PartitionProof`: 86 challenges (`challenge_count`), each opening TreeROld
/// and TreeRNew (~2.55 KB each) and TreeDNew (binary, 31 levels of 48 bytes, ~1.5 KB), plus
/// the apex leaves: ~570 KB at 32 GiB, ~580 KB at 64 GiB (2 KiB measures 15,064 bytes).
/// 4 MiB is 7x.
pub const MAX_SNAP_PARTITION_PROOF_BYTES: usize = 4 * MIB;

/// `randomness`, `comm_r_old`, `comm_r_new`, `comm_d_new`: 32 raw bytes each (proto-spec),
/// whichever kind; the kind's own check then requires exactly 32 where it uses the field.
pub const MAX_FIELD_ELEMENT_BYTES: usize = 32;

/// What one kind accepts in its payload fields. A cap of 0 means the kind does not use the
/// field: a payload there is a client sending the wrong kind, not something to ignore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadLimits {
    /// `vanilla_proof`, bytes.
    pub vanilla_proof_bytes: usize,
    /// `vanilla_proofs`, entries.
    pub vanilla_proofs: usize,
    /// `vanilla_proofs`, bytes of each entry.
    pub vanilla_proof_entry_bytes: usize,
}

impl PayloadLimits {
    pub const fn of(kind: ProofKind) -> PayloadLimits {
        let (vanilla_proof_bytes, vanilla_proofs, vanilla_proof_entry_bytes) = match kind {
            ProofKind::PorepSealCommit => (MAX_POREP_ENVELOPE_BYTES, 0, 0),
            ProofKind::WinningPost => {
                (0, MAX_WINNING_SECTOR_PROOFS, MAX_WINNING_SECTOR_PROOF_BYTES)
            }
            ProofKind::WindowPostPartition => {
                (0, MAX_WINDOW_SECTOR_PROOFS, MAX_WINDOW_SECTOR_PROOF_BYTES)
            }
            ProofKind::SnapDealsUpdate => {
                (0, MAX_SNAP_PARTITION_PROOFS, MAX_SNAP_PARTITION_PROOF_BYTES)
            }
            ProofKind::Synthetic => (0, 0, 0),
        };
        PayloadLimits {
            vanilla_proof_bytes,
            vanilla_proofs,
            vanilla_proof_entry_bytes,
        }
    }
}

/// Every length check of `req`, before anything in it is decoded.
pub fn check_sizes(req: &KindRequest) -> Result<()> {
    let kind = req.kind;
    let limits = PayloadLimits::of(kind);
    let over = |field: &'static str, what: String, limit: usize| {
        Err(Error::invalid(
            field,
            if limit == 0 {
                format!("{what}: {kind} does not use this field; it must be empty")
            } else {
                format!("{what}, over the {kind} limit of {limit}")
            },
        ))
    };

    let n = req.vanilla_proof.len();
    if n > limits.vanilla_proof_bytes {
        return over(
            "vanilla_proof",
            format!("{n} bytes"),
            limits.vanilla_proof_bytes,
        );
    }
    let count = req.vanilla_proofs.len();
    if count > limits.vanilla_proofs {
        return over(
            "vanilla_proofs",
            format!("{count} entries"),
            limits.vanilla_proofs,
        );
    }
    if let Some((i, p)) = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() > limits.vanilla_proof_entry_bytes)
    {
        return over(
            "vanilla_proofs",
            format!("entry {i} is {} bytes", p.len()),
            limits.vanilla_proof_entry_bytes,
        );
    }
    for (field, bytes) in [
        ("randomness", &req.randomness),
        ("comm_r_old", &req.comm_r_old),
        ("comm_r_new", &req.comm_r_new),
        ("comm_d_new", &req.comm_d_new),
    ] {
        if bytes.len() > MAX_FIELD_ELEMENT_BYTES {
            return Err(Error::invalid(
                field,
                format!(
                    "{} bytes, over the limit of {MAX_FIELD_ELEMENT_BYTES}",
                    bytes.len()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field the check rejects, and its message.
    fn rejected(req: &KindRequest) -> (&'static str, String) {
        match check_sizes(req) {
            Err(Error::InvalidArgument { field, reason }) => (field, reason),
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    fn at_cap_passes_one_over_fails(
        kind: ProofKind,
        field: &'static str,
        cap: usize,
        set: impl Fn(&mut KindRequest, usize),
    ) {
        let mut req = KindRequest::new(kind);
        set(&mut req, cap);
        assert!(check_sizes(&req).is_ok(), "{kind} {field} at its cap {cap}");
        set(&mut req, cap + 1);
        let (f, reason) = rejected(&req);
        assert_eq!(f, field, "{kind}: {reason}");
        assert!(
            reason.contains(&cap.to_string()) || cap == 0,
            "{kind} {field}: the message names the limit: {reason}"
        );
    }

    #[test]
    fn porep_envelope_cap() {
        at_cap_passes_one_over_fails(
            ProofKind::PorepSealCommit,
            "vanilla_proof",
            MAX_POREP_ENVELOPE_BYTES,
            |r, n| r.vanilla_proof = vec![b' '; n],
        );
    }

    #[test]
    fn sector_and_partition_proof_counts() {
        for (kind, cap) in [
            (ProofKind::WinningPost, MAX_WINNING_SECTOR_PROOFS),
            (ProofKind::WindowPostPartition, MAX_WINDOW_SECTOR_PROOFS),
            (ProofKind::SnapDealsUpdate, MAX_SNAP_PARTITION_PROOFS),
        ] {
            at_cap_passes_one_over_fails(kind, "vanilla_proofs", cap, |r, n| {
                r.vanilla_proofs = vec![vec![0u8; 8]; n]
            });
        }
    }

    #[test]
    fn per_entry_byte_caps() {
        for (kind, cap) in [
            (ProofKind::WinningPost, MAX_WINNING_SECTOR_PROOF_BYTES),
            (
                ProofKind::WindowPostPartition,
                MAX_WINDOW_SECTOR_PROOF_BYTES,
            ),
            (ProofKind::SnapDealsUpdate, MAX_SNAP_PARTITION_PROOF_BYTES),
        ] {
            at_cap_passes_one_over_fails(kind, "vanilla_proofs", cap, |r, n| {
                r.vanilla_proofs = vec![vec![0u8; n]]
            });
        }
        let mut req = KindRequest::new(ProofKind::WindowPostPartition);
        req.vanilla_proofs = vec![vec![0; 10], vec![0; MAX_WINDOW_SECTOR_PROOF_BYTES + 1]];
        assert!(rejected(&req).1.contains("entry 1"));
    }

    #[test]
    fn field_element_caps_for_every_kind() {
        for kind in ProofKind::ALL {
            for field in ["randomness", "comm_r_old", "comm_r_new", "comm_d_new"] {
                at_cap_passes_one_over_fails(kind, field, MAX_FIELD_ELEMENT_BYTES, |r, n| {
                    let v = vec![0u8; n];
                    match field {
                        "randomness" => r.randomness = v,
                        "comm_r_old" => r.comm_r_old = v,
                        "comm_r_new" => r.comm_r_new = v,
                        _ => r.comm_d_new = v,
                    }
                });
            }
        }
    }

    #[test]
    fn unused_payload_fields_must_be_empty() {
        for kind in [
            ProofKind::WinningPost,
            ProofKind::WindowPostPartition,
            ProofKind::SnapDealsUpdate,
            ProofKind::Synthetic,
        ] {
            let mut req = KindRequest::new(kind);
            req.vanilla_proof = vec![1];
            let (field, reason) = rejected(&req);
            assert_eq!(field, "vanilla_proof");
            assert!(reason.contains("must be empty"), "{reason}");
        }
        for kind in [ProofKind::PorepSealCommit, ProofKind::Synthetic] {
            let mut req = KindRequest::new(kind);
            req.vanilla_proofs = vec![vec![]];
            assert_eq!(rejected(&req).0, "vanilla_proofs");
        }
    }
}

//! A proof request as the engine receives it, independent of protobuf, and the field checks
//! every kind shares. Each check names the wire field it rejects.

use super::synthetic_task::SyntheticShape;
use crate::job::{Error, ProofKind, Result};

/// The fields of SubmitProofRequest that describe the proof (see proto-spec.md). Fields a kind
/// does not use are ignored.
#[derive(Clone, Debug)]
pub struct KindRequest {
    pub kind: ProofKind,
    pub sector_size: u64,
    pub registered_proof: u64,
    pub vanilla_proof: Vec<u8>,
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub sector_number: u64,
    pub miner_id: u64,
    pub randomness: Vec<u8>,
    pub partition_index: u32,
    pub comm_r_old: Vec<u8>,
    pub comm_r_new: Vec<u8>,
    pub comm_d_new: Vec<u8>,
    pub synthetic_log_size: u32,
    pub synthetic_partitions: u32,
    pub synthetic_seed: u64,
    pub synthetic_shape: SyntheticShape,
}

impl KindRequest {
    /// A request of `kind` with every other field zero or empty.
    pub fn new(kind: ProofKind) -> Self {
        KindRequest {
            kind,
            sector_size: 0,
            registered_proof: 0,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector_number: 0,
            miner_id: 0,
            randomness: Vec::new(),
            partition_index: 0,
            comm_r_old: Vec::new(),
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
            synthetic_log_size: 0,
            synthetic_partitions: 0,
            synthetic_seed: 0,
            synthetic_shape: SyntheticShape::Uniform,
        }
    }

    /// `sector_size` must agree with the registered proof's size; 0 means "unset" (proto3
    /// cannot tell a zero from an absent field) and takes the proof's size.
    pub(crate) fn check_sector_size(&self, proof_size: u64) -> Result<()> {
        if self.sector_size != 0 && self.sector_size != proof_size {
            return Err(Error::invalid(
                "sector_size",
                format!(
                    "{} does not match the registered proof's sector size {proof_size}",
                    self.sector_size
                ),
            ));
        }
        Ok(())
    }
}

/// Hex as people paste it (an optional 0x prefix), for command-line fields.
pub fn parse_hex(field: &'static str, s: &str) -> Result<Vec<u8>> {
    let s = s.trim();
    hex::decode(s.strip_prefix("0x").unwrap_or(s))
        .map_err(|e| Error::invalid(field, format!("is not hex: {e}")))
}

/// A 32-byte field (commitment, randomness).
pub(crate) fn bytes32(field: &'static str, bytes: &[u8]) -> Result<[u8; 32]> {
    bytes
        .try_into()
        .map_err(|_| Error::invalid(field, format!("must be 32 bytes, got {}", bytes.len())))
}

/// A 32-byte value that must also be a canonical BLS12-381 scalar (little endian), as the
/// proofs embed commitments and PoSt randomness as field elements. A non-canonical value
/// would make the stock code fail deep inside the job; reject it at submission instead.
pub(crate) fn field_element(field: &'static str, bytes: &[u8]) -> Result<[u8; 32]> {
    let b = bytes32(field, bytes)?;
    let fr: Option<blstrs::Scalar> = blstrs::Scalar::from_bytes_le(&b).into();
    if fr.is_none() {
        return Err(Error::invalid(
            field,
            "is not a canonical BLS12-381 scalar (little endian); PoSt randomness has the top two bits of byte 31 cleared",
        ));
    }
    Ok(b)
}

/// bincode 1.x deserialisation of one untrusted payload. bincode's default options read
/// length prefixes before allocating, so a hostile length would make it try to allocate
/// that much; the limit bounds every allocation by the payload size.
pub(crate) fn bincode_from<T: serde::de::DeserializeOwned>(
    field: &'static str,
    index: usize,
    bytes: &[u8],
) -> Result<T> {
    use bincode::Options;
    // Same encoding as bincode::deserialize (fixint, little endian, trailing bytes allowed),
    // plus a size limit.
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
        .map_err(|e| {
            Error::invalid(
                field,
                format!("entry {index} is not a valid bincode payload: {e}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_checks_name_the_field() {
        match bytes32("comm_r_old", &[0u8; 31]) {
            Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "comm_r_old"),
            other => panic!("{other:?}"),
        }
        let mut r = [0xffu8; 32];
        assert!(field_element("randomness", &r).is_err());
        r[31] &= 0x3f;
        assert!(field_element("randomness", &r).is_ok());
    }

    #[test]
    fn bincode_limits_allocation() {
        // A Vec<u64> claiming 2^60 elements in a 12-byte payload.
        let mut bytes = (1u64 << 60).to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0u8; 4]);
        let r: Result<Vec<u64>> = bincode_from("vanilla_proofs", 0, &bytes);
        assert!(matches!(
            r,
            Err(Error::InvalidArgument {
                field: "vanilla_proofs",
                ..
            })
        ));
    }
}

//! The prover id the proofs bind to: Filecoin's Go code writes a miner's ID address payload
//! (the unsigned LEB128 varint of the actor id) into 32 zero bytes.

/// The 32-byte prover id of miner actor `miner_id` (f0<miner_id>).
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    // A u64 takes at most 10 varint bytes, so it always fits.
    for byte in out.iter_mut() {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            *byte = low;
            break;
        }
        *byte = low | 0x80;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::prover_id;

    #[test]
    fn leb128() {
        assert_eq!(prover_id(0), [0u8; 32]);
        assert_eq!(prover_id(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id(128)[..3], [0x80, 0x01, 0]);
        let max = prover_id(u64::MAX);
        assert_eq!(
            max[..10],
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        assert!(max[10..].iter().all(|&b| b == 0));
    }
}

//! The coefficient table of a shape's matrices: every coefficient other than one, once, in
//! first-use order (so a recording, and its digest, does not depend on anything but the
//! circuit); scaled terms hold an index into it.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use blstrs::Scalar;

use crate::limbs::as_limbs;

#[derive(Debug, Default)]
pub(crate) struct CoeffTable {
    coeffs: Vec<Scalar>,
    /// By Montgomery limbs (unique per field element, so equal limbs are equal values),
    /// hashed by a fold of the limbs: SipHash over the canonical encoding was a third of a
    /// PoRep-shaped build from rows.
    index: HashMap<[u64; 4], u32, BuildHasherDefault<LimbHasher>>,
}

impl CoeffTable {
    /// k's index, added at the end the first time it is seen.
    pub(crate) fn intern(&mut self, k: &Scalar) -> u32 {
        let next = self.coeffs.len() as u32;
        let limbs = as_limbs(std::slice::from_ref(k))[0];
        let idx = *self.index.entry(limbs).or_insert(next);
        if idx == next {
            self.coeffs.push(*k);
        }
        idx
    }

    pub(crate) fn coeffs(&self) -> &[Scalar] {
        &self.coeffs
    }

    pub(crate) fn into_vec(self) -> Vec<Scalar> {
        self.coeffs
    }
}

#[derive(Default)]
struct LimbHasher(u64);

impl Hasher for LimbHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

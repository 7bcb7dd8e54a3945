//! A `blstrs::Scalar` as its four u64 Montgomery limbs, without copying: `Scalar` is
//! `#[repr(transparent)]` over blst_fr, a repr(C) struct holding exactly [u64; 4], which is
//! the kernels' representation (vectors are reinterpreted for the device, never converted)
//! and, the Montgomery form being unique per field element, a cheap hash key.

use blstrs::Scalar;
use cuzk_kernels::Limbs;

const _: () = assert!(std::mem::size_of::<Scalar>() == std::mem::size_of::<Limbs>());
const _: () = assert!(std::mem::align_of::<Scalar>() == std::mem::align_of::<Limbs>());

/// Scalars as limbs.
pub fn as_limbs(s: &[Scalar]) -> &[Limbs] {
    // SAFETY: same size and alignment (asserted above); every bit pattern is a valid Limbs.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const Limbs, s.len()) }
}

/// Limbs as scalars. Only for limbs that hold fully reduced Montgomery values (scalars
/// moved into other memory, such as packed.rs's pinned buffers).
pub(crate) fn from_limbs(l: &[Limbs]) -> &[Scalar] {
    // SAFETY: same size and alignment (asserted above); the values are valid scalars by the
    // caller's contract.
    unsafe { std::slice::from_raw_parts(l.as_ptr() as *const Scalar, l.len()) }
}

/// Scalars as limbs to write. Only for writers of fully reduced Montgomery values (our
/// kernels), so that the scalars stay valid.
pub(crate) fn as_limbs_mut(s: &mut [Scalar]) -> &mut [Limbs] {
    // SAFETY: as in as_limbs.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut Limbs, s.len()) }
}

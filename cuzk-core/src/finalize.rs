//! Finalize: assemble the proof with fresh blinding factors and check it against the
//! verifying key before anyone sees it. A wrong proof costs a storage provider real money
//! (a failed PoSt is a penalty), so self-verification is on by default.

use bellperson::groth16;
use blstrs::Scalar;
use ff::Field;

use crate::job::{Error, Result};
use crate::prove::{assemble, proof_bytes, MsmResults};
use crate::srs::SrsEntry;

/// The 192 proof bytes of one partition.
pub fn finalize_partition(
    srs: &SrsEntry,
    msm: &MsmResults,
    public_inputs: Option<&[Scalar]>,
) -> Result<Vec<u8>> {
    let mut rng = rand::rngs::OsRng;
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let proof = assemble(&srs.params.vk, msm, r, s)?;
    if let Some(inputs) = public_inputs {
        let ok = groth16::verify_proof(&srs.pvk, &proof, inputs)
            .map_err(|e| Error::Verification(e.to_string()))?;
        if !ok {
            return Err(Error::Verification(
                "the proof does not verify against the public inputs (inconsistent witness?)"
                    .into(),
            ));
        }
    }
    Ok(proof_bytes(&proof))
}

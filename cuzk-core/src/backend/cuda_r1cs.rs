//! a, b, c on the device for partitions whose synthesis deferred them
//! (`Synthesized::deferred`): each circuit shape's matrices uploaded at its first device
//! step and kept (cuzk-kernels' `r1cs`), then per partition only the public inputs go up
//! beside the aux assignment the MSMs upload anyway. The H polynomial follows on the device
//! (the NTTs of `h_polynomial_resident`), so a, b, c never exist on the host.

use std::sync::Arc;

use cuzk_kernels::r1cs::{CsrParts, DeviceMatrices};
use cuzk_kernels::{DeviceScalars, GpuDevice};
use parking_lot::Mutex;

use super::{as_limbs, device_error};
use crate::backend::{unsatisfied, BackendError, FromMatrices, ScalarVec};
use crate::matrices::Matrices;
use blstrs::Scalar;

/// Device memory the matrices of all shapes may hold together; the least recently used shape
/// goes first past it. A 2 KiB PoRep partition's take 148 MB, every 2 KiB kind's together
/// about 250 MB; a 32 GiB PoRep's would take ~7 GB.
const MAX_RESIDENT_BYTES: usize = 8 << 30;

/// The shapes' matrices on one device, by digest (which covers the key and every array).
#[derive(Default)]
pub struct ResidentMatrices {
    entries: Mutex<Vec<([u8; 32], Arc<DeviceMatrices>)>>,
}

impl ResidentMatrices {
    /// `m` on the device: uploaded now unless resident; most recently used last.
    fn get(&self, dev: &GpuDevice, m: &Matrices) -> Result<Arc<DeviceMatrices>, BackendError> {
        let mut entries = self.entries.lock();
        if let Some(i) = entries.iter().position(|(d, _)| *d == m.digest) {
            let e = entries.remove(i);
            let found = e.1.clone();
            entries.push(e);
            return Ok(found);
        }
        let parts = csr_parts(m);
        let bytes = m.size_bytes();
        // Room first, so that the upload does not hold the old shapes beside the new.
        let mut held: usize = entries.iter().map(|(_, d)| d.bytes()).sum();
        while held + bytes > MAX_RESIDENT_BYTES && !entries.is_empty() {
            held -= entries.remove(0).1.bytes();
        }
        let uploaded =
            DeviceMatrices::upload(dev, parts, as_limbs(&m.coeffs), m.num_inputs, m.num_aux)
                .map_err(device_error)?;
        let uploaded = Arc::new(uploaded);
        entries.push((m.digest, uploaded.clone()));
        Ok(uploaded)
    }
}

/// A, B, C as the kernels take them.
pub fn csr_parts(m: &Matrices) -> [CsrParts<'_>; 3] {
    [m.a.parts(), m.b.parts(), m.c.parts()]
}

/// The H polynomial's n - 1 coefficients on the device, from the matrices and the
/// assignment; `Unsatisfied` when the witness fails a row. Done when it returns.
pub fn h_from_matrices(
    dev: &GpuDevice,
    resident: &ResidentMatrices,
    m: &Matrices,
    input: &[Scalar],
    aux: &DeviceScalars,
) -> Result<FromMatrices, BackendError> {
    let t = std::time::Instant::now();
    let dm = resident.get(dev, m)?;
    let input = DeviceScalars::upload(dev, as_limbs(input)).map_err(device_error)?;
    let n = m.num_constraints().max(1).next_power_of_two();
    let mut e = dm.evaluate(dev, &input, aux, n).map_err(device_error)?;
    if e.unsatisfied != 0 {
        return Err(unsatisfied(m, e.unsatisfied));
    }
    // The unsatisfied count came back from the device: the evaluation is done.
    let evaluate = t.elapsed();
    let mut h = cuzk_kernels::ntt::h_polynomial_resident(dev, &mut e.a, &mut e.b, &mut e.c)
        .map_err(device_error)?;
    h.truncate(n - 1);
    dev.synchronize().map_err(device_error)?;
    Ok(FromMatrices {
        h: ScalarVec::Device(h),
        evaluate,
    })
}

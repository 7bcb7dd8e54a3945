//! a, b, c of a partition on the device, from its circuit's constraint matrices (recorded
//! once per circuit shape by cuzk-core's `matrices`) and the witness (cuda/r1cs/*).
//!
//! The prover uploads the aux assignment for its L, A and B MSMs anyway; evaluating the
//! matrices where it already is spares the host the evaluation (a third of a 2 KiB PoRep
//! partition's synthesis) and the PCIe bus two thirds of the upload (a, b, c are three vectors
//! of the domain's length, the assignment one). The matrices stay on the device per shape
//! (`DeviceMatrices`, about 55 bytes a row), uploaded at a shape's first device step.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::memory::DeviceScalars;
use crate::ntt::Limbs;

/// One matrix's arrays as cuzk-core's `Matrix` holds them (two CSR parts over the same
/// rows; bit 31 of a column marks an input).
#[derive(Clone, Copy, Debug)]
pub struct CsrParts<'a> {
    pub unit_start: &'a [u32],
    pub unit_cols: &'a [u32],
    pub scaled_start: &'a [u32],
    pub scaled_cols: &'a [u32],
    pub scaled_coeffs: &'a [u32],
}

struct DeviceCsr {
    unit_start: CudaSlice<u32>,
    unit_cols: CudaSlice<u32>,
    scaled_start: CudaSlice<u32>,
    scaled_cols: CudaSlice<u32>,
    scaled_coeffs: CudaSlice<u32>,
}

/// A circuit shape's A, B, C and coefficient table in device memory.
pub struct DeviceMatrices {
    rows: usize,
    num_inputs: usize,
    num_aux: usize,
    parts: [DeviceCsr; 3],
    coeffs: DeviceScalars,
    bytes: usize,
}

/// The device's a, b, c, each `len` long (the rows, then zeros), and how many rows the
/// witness fails (0 for a valid one).
pub struct Evaluation {
    pub a: DeviceScalars,
    pub b: DeviceScalars,
    pub c: DeviceScalars,
    pub unsatisfied: u64,
}

/// A column refers to an input (its index in the low bits) when bit 31 is set.
const INPUT_COLUMN: u32 = 1 << 31;

impl DeviceMatrices {
    /// Uploads A, B, C (`[a, b, c]`) and the coefficients, after checking that the arrays are
    /// well formed: a kernel must never read out of bounds, whatever the host hands it.
    pub fn upload(
        dev: &GpuDevice,
        matrices: [CsrParts<'_>; 3],
        coeffs: &[Limbs],
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<Self> {
        let rows = matrices[0].unit_start.len().saturating_sub(1);
        for m in &matrices {
            check_part(m, rows, coeffs.len(), num_inputs, num_aux)?;
        }
        if rows > u32::MAX as usize / 2 {
            return Err(GpuError::Invalid(format!(
                "{rows} rows: more than 32-bit indices"
            )));
        }
        dev.ctx().bind_to_thread()?;
        let stream = dev.stream();
        let mut bytes = 32 * coeffs.len();
        let mut up = |m: &CsrParts<'_>| -> Result<DeviceCsr> {
            let mut one = |v: &[u32]| {
                bytes += 4 * v.len();
                // A zero-length device slice cannot be allocated: a matrix without scaled
                // terms still gets one unused word.
                stream.clone_htod(if v.is_empty() { &[0u32][..] } else { v })
            };
            Ok(DeviceCsr {
                unit_start: one(m.unit_start)?,
                unit_cols: one(m.unit_cols)?,
                scaled_start: one(m.scaled_start)?,
                scaled_cols: one(m.scaled_cols)?,
                scaled_coeffs: one(m.scaled_coeffs)?,
            })
        };
        let parts = [up(&matrices[0])?, up(&matrices[1])?, up(&matrices[2])?];
        let coeffs = DeviceScalars::upload(dev, coeffs)?;
        Ok(DeviceMatrices {
            rows,
            num_inputs,
            num_aux,
            parts,
            coeffs,
            bytes,
        })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Device memory held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// a, b, c for the assignment (`input` with the constant one first, `aux`), into fresh
    /// vectors of `len >= rows` elements, zero padded. Waits for the kernel (the count of
    /// unsatisfied rows is read back). Long rows as [`warp_rows`] says.
    pub fn evaluate(
        &self,
        dev: &GpuDevice,
        input: &DeviceScalars,
        aux: &DeviceScalars,
        len: usize,
    ) -> Result<Evaluation> {
        self.evaluate_with(dev, input, aux, len, warp_rows())
    }

    /// [`evaluate`](Self::evaluate) with the long rows of a warp summed by the whole warp
    /// when at most `warp_rows` of its lanes have one (0: every row by its own lane).
    pub fn evaluate_with(
        &self,
        dev: &GpuDevice,
        input: &DeviceScalars,
        aux: &DeviceScalars,
        len: usize,
        warp_rows: u32,
    ) -> Result<Evaluation> {
        if input.len() != self.num_inputs || aux.len() != self.num_aux || len < self.rows {
            return Err(GpuError::Invalid(format!(
                "matrices of {} inputs, {} aux, {} rows evaluated on {} inputs, {} aux into {len}",
                self.num_inputs,
                self.num_aux,
                self.rows,
                input.len(),
                aux.len()
            )));
        }
        dev.ctx().bind_to_thread()?;
        let stream = dev.stream();
        let out = || -> Result<DeviceScalars> {
            let v = DeviceScalars::alloc(dev, len)?;
            v.zero_range(self.rows, len)?;
            Ok(v)
        };
        let (a, b, c) = (out()?, out()?, out()?);
        let mut unsatisfied = stream.alloc_zeros::<u64>(1)?;
        if self.rows > 0 {
            let kernel = dev.module("r1cs")?.load_function("r1cs_evaluate_rows")?;
            let rows = self.rows as u32;
            let (coeffs, inp, aux) = (self.coeffs.ptr, input.ptr, aux.ptr);
            let (pa, pb, pc) = (a.ptr, b.ptr, c.ptr);
            let mut launch = stream.launch_builder(&kernel);
            for p in &self.parts {
                launch
                    .arg(&p.unit_start)
                    .arg(&p.unit_cols)
                    .arg(&p.scaled_start)
                    .arg(&p.scaled_cols)
                    .arg(&p.scaled_coeffs);
            }
            launch
                .arg(&coeffs)
                .arg(&inp)
                .arg(&aux)
                .arg(&rows)
                .arg(&warp_rows)
                .arg(&pa)
                .arg(&pb)
                .arg(&pc)
                .arg(&mut unsatisfied);
            let cfg = LaunchConfig {
                grid_dim: (rows.div_ceil(256), 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the argument list is the kernel's signature; every index the kernel
            // follows was bounds-checked at upload (check_part) against the lengths checked
            // above, and the outputs hold `len >= rows` elements.
            unsafe { launch.launch(cfg) }?;
        }
        let unsatisfied = stream.clone_dtoh(&unsatisfied)?[0];
        Ok(Evaluation {
            a,
            b,
            c,
            unsatisfied,
        })
    }
}

/// How many long rows per warp the evaluation sums with the whole warp
/// (`CUZK_EVAL_WARP_ROWS`; default 8; 0: every row by its own lane).
///
/// A row is one lane, so a warp takes as long as its longest row, and bit packing makes a
/// few rows long: the PoRep-shaped circuit's every 64th row has 64 terms in A against ~2
/// elsewhere, Filecoin's circuits pack SHA-256 words and field elements the same way. With
/// N > 0, a part of more than 16 terms is summed by all 32 lanes (then a shuffle reduction)
/// wherever at most N lanes of the warp have one. `cuda_abc` checks 0, 8 and 32 against the
/// host; on an H100 at 2^26 the evaluation took 11.1 ms at 8 against 15.0-18.0 ms at 0
/// (kernels/NOTES.md, part 19).
pub fn warp_rows() -> u32 {
    std::env::var("CUZK_EVAL_WARP_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// Row starts that begin at 0, never decrease and end at the terms' length; every column
/// and coefficient index in range.
fn check_part(
    m: &CsrParts<'_>,
    rows: usize,
    coeffs: usize,
    inputs: usize,
    aux: usize,
) -> Result<()> {
    let starts_ok = |s: &[u32], terms: usize| {
        s.len() == rows + 1
            && s[0] == 0
            && s.windows(2).all(|w| w[0] <= w[1])
            && s[rows] as usize == terms
    };
    let col_ok = |c: &u32| {
        if c & INPUT_COLUMN != 0 {
            ((c & !INPUT_COLUMN) as usize) < inputs
        } else {
            (*c as usize) < aux
        }
    };
    let ok = starts_ok(m.unit_start, m.unit_cols.len())
        && starts_ok(m.scaled_start, m.scaled_cols.len())
        && m.scaled_coeffs.len() == m.scaled_cols.len()
        && m.unit_cols.iter().all(col_ok)
        && m.scaled_cols.iter().all(col_ok)
        && m.scaled_coeffs.iter().all(|&k| (k as usize) < coeffs);
    if ok {
        Ok(())
    } else {
        Err(GpuError::Invalid(format!(
            "malformed constraint matrix ({rows} rows, {inputs} inputs, {aux} aux, {coeffs} \
             coefficients)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_parts_are_refused() {
        let good = CsrParts {
            unit_start: &[0, 1, 2],
            unit_cols: &[0, INPUT_COLUMN],
            scaled_start: &[0, 0, 1],
            scaled_cols: &[1],
            scaled_coeffs: &[0],
        };
        assert!(check_part(&good, 2, 1, 1, 2).is_ok());
        // Column out of range, input out of range, coefficient out of range.
        assert!(check_part(&good, 2, 1, 1, 1).is_err());
        assert!(check_part(&good, 2, 1, 0, 2).is_err());
        assert!(check_part(&good, 2, 0, 1, 2).is_err());
        // Starts that decrease, or do not end at the terms' length.
        let bad = CsrParts {
            unit_start: &[0, 2, 1],
            ..good
        };
        assert!(check_part(&bad, 2, 1, 1, 2).is_err());
        let short = CsrParts {
            unit_start: &[0, 1, 1],
            ..good
        };
        assert!(check_part(&short, 2, 1, 1, 2).is_err());
    }
}

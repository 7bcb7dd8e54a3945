//! Number-theoretic transforms over BLS12-381 Fr on the GPU, and the H polynomial.
//!
//! Vectors are raw `[u64; 4]` limbs in blst_fr's Montgomery form (what a `blstrs::Scalar`
//! is in memory), so callers reinterpret their slices with no conversion. Semantics are
//! bellperson 0.27's `EvaluationDomain` exactly: omega = ROOT_OF_UNITY squared (32 - log n)
//! times, coset generator g = MULTIPLICATIVE_GENERATOR (7), the inverse scales by 1/n,
//! the coset transforms multiply coefficient i by g^i (g^-i after the inverse), and Z on the
//! coset is the constant g^n - 1. Field results are canonical, so "the same function" means
//! "the same bits".
//!
//! Plan: a transform of 2^L is a few radix-2^m passes (see cuda/ntt/radix_regs.cuh: 2^2
//! points per thread in registers, up to 2^10 per block through shared memory), DIF
//! (natural in, bit-reversed out) or DIT (the reverse). The plain transforms fold the bit
//! reversal (and the 1/n or g^-i of the inverses) into the last DIF pass, which writes out
//! of place; the H polynomial pairs DIF and DIT so that only its very last step permutes.
//! Domains of 2^1 use the radix-2 shared-memory passes (cuda/ntt/radix_pass.cuh) and a
//! separate permutation.
//!
//! Per device we keep: the loaded kernels, the radix root tables, one set of twiddle and
//! coset tables per domain size (built once, on the host, a few hundred KiB each), and two
//! pinned staging buffers through which host vectors stream while the previous chunk's DMA
//! runs.
//!
//! Layout: `plan` (which passes), `domain` (the per-size tables), `passes` (the kernel
//! launches of a transform), `staging` (host <-> device through the pinned buffers); this
//! file holds the per-device state and the public entry points.

mod domain;
mod passes;
mod plan;
mod staging;

use std::collections::HashMap;
use std::sync::Arc;

use blstrs::Scalar;
use cudarc::driver::{CudaFunction, LaunchConfig};
use ff::Field;

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
pub use crate::memory::{DeviceScalars, PinnedScalars};

use domain::{omega, Domain};
use plan::MAX_LOG_RADIX;
use staging::Staging;

/// One field element: blst_fr limbs, Montgomery form, little endian.
pub type Limbs = [u64; 4];

pub(crate) const ELEM_BYTES: usize = 32;

/// Largest domain the kernels index (u32 indices, twiddle exponents below 2^L).
pub const MAX_LOG_N: u32 = 28;

const _: () = assert!(std::mem::size_of::<Scalar>() == ELEM_BYTES);

#[cfg(test)]
fn to_scalar(l: &Limbs) -> Scalar {
    // SAFETY: Scalar is #[repr(transparent)] over blst_fr, a #[repr(C)] struct of [u64; 4].
    unsafe { std::mem::transmute::<Limbs, Scalar>(*l) }
}

fn to_limbs(s: &Scalar) -> Limbs {
    // SAFETY: as above.
    unsafe { std::mem::transmute::<Scalar, Limbs>(*s) }
}

// ---------------------------------------------------------------------------------------
// Per-device state

struct Kernels {
    pass_dif: CudaFunction,
    pass_dit: CudaFunction,
    regs_dif: CudaFunction,
    regs_dit: CudaFunction,
    bit_reverse: CudaFunction,
    elementwise: CudaFunction,
    /// w_1024^e and w_1024^-e for e < 512: the radix stages' twiddles for every domain.
    roots: DeviceScalars,
    roots_inv: DeviceScalars,
}

impl Kernels {
    /// The radix stages' root table for this direction.
    fn roots(&self, inverse: bool) -> u64 {
        if inverse {
            self.roots_inv.ptr
        } else {
            self.roots.ptr
        }
    }
}

#[derive(Default)]
pub(crate) struct NttState {
    kernels: Option<Arc<Kernels>>,
    domains: HashMap<u32, Arc<Domain>>,
    staging: Option<Staging>,
}

fn launch_1d(n: usize) -> LaunchConfig {
    let threads = 256u32;
    let blocks = n.div_ceil(threads as usize).clamp(1, 132 * 16) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl NttState {
    fn kernels(&mut self, dev: &GpuDevice) -> Result<Arc<Kernels>> {
        if let Some(k) = &self.kernels {
            return Ok(k.clone());
        }
        let module = dev.module("ntt")?;
        let w = omega(MAX_LOG_RADIX);
        let w_inv = w.invert().unwrap();
        let powers = |base: Scalar| -> Vec<Limbs> {
            let mut x = Scalar::ONE;
            (0..1usize << (MAX_LOG_RADIX - 1))
                .map(|_| {
                    let l = to_limbs(&x);
                    x *= base;
                    l
                })
                .collect()
        };
        let roots = powers(w);
        let roots_inv = powers(w_inv);
        let k = Arc::new(Kernels {
            pass_dif: module.load_function("ntt_pass_dif")?,
            pass_dit: module.load_function("ntt_pass_dit")?,
            regs_dif: module.load_function("ntt_regs_dif")?,
            regs_dit: module.load_function("ntt_regs_dit")?,
            bit_reverse: module.load_function("ntt_bit_reverse")?,
            elementwise: module.load_function("fr_elementwise")?,
            roots: self.upload_unlocked(dev, &roots)?,
            roots_inv: self.upload_unlocked(dev, &roots_inv)?,
        });
        self.kernels = Some(k.clone());
        Ok(k)
    }

    fn upload_unlocked(&mut self, dev: &GpuDevice, host: &[Limbs]) -> Result<DeviceScalars> {
        let d = DeviceScalars::alloc(dev, host.len())?;
        self.upload_staged(dev, host, d.ptr)?;
        dev.stream().join(dev.copy_stream())?;
        Ok(d)
    }
}

// ---------------------------------------------------------------------------------------
// Transforms

/// The four transforms of bellperson's EvaluationDomain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// fft: evaluations at omega^i
    Ntt,
    /// ifft: the inverse, scaled by 1/n
    Intt,
    /// coset_fft: coefficient i times g^i, then fft
    CosetNtt,
    /// icoset_fft: ifft, then coefficient i times g^-i
    CosetIntt,
}

/// Element-wise field operations (`fr_elementwise` in ntt.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrOp {
    Add = 0,
    Sub = 1,
    Mul = 2,
    Square = 3,
    Inverse = 4,
    Neg = 5,
}

/// log2 of the smallest power of two >= len (bellperson's domain size; len 0 or 1 -> 0).
pub fn domain_log(len: usize) -> u32 {
    len.max(1).next_power_of_two().trailing_zeros()
}

/// Builds the kernels' root tables and the domain's twiddle tables now, so that the first
/// transform of this size does not pay for them (a few ms on the host).
pub fn prepare(dev: &GpuDevice, log_n: u32) -> Result<()> {
    let mut st = dev.ntt_state();
    st.kernels(dev)?;
    st.domain(dev, log_n)?;
    dev.stream().synchronize()?;
    Ok(())
}

/// In-place transform of a device vector whose length is a power of two. Asynchronous:
/// errors of the kernels themselves surface at the next synchronisation.
pub fn transform_device(dev: &GpuDevice, data: &mut DeviceScalars, t: Transform) -> Result<()> {
    dev.ntt_state().transform(dev, data, t)
}

/// In-place transform of a host slice whose length is a power of two.
pub fn transform(dev: &GpuDevice, values: &mut [Limbs], t: Transform) -> Result<()> {
    if !values.len().is_power_of_two() {
        return Err(GpuError::Invalid(format!(
            "NTT of {} elements: not a power of two",
            values.len()
        )));
    }
    let mut st = dev.ntt_state();
    let mut d = DeviceScalars::alloc(dev, values.len())?;
    st.upload_staged(dev, values, d.ptr)?;
    st.transform(dev, &mut d, t)?;
    st.download_staged(dev, d.ptr, values)?;
    Ok(())
}

/// Transform of a pinned host vector into another (same length), the upload overlapped
/// with the first pass; returns when `dst` holds the result.
pub fn transform_pinned(
    dev: &GpuDevice,
    src: &PinnedScalars,
    dst: &mut PinnedScalars,
    t: Transform,
) -> Result<()> {
    dev.ntt_state().transform_pinned(dev, src, dst, t)
}

pub fn ntt(dev: &GpuDevice, values: &mut [Limbs]) -> Result<()> {
    transform(dev, values, Transform::Ntt)
}

pub fn intt(dev: &GpuDevice, values: &mut [Limbs]) -> Result<()> {
    transform(dev, values, Transform::Intt)
}

pub fn coset_ntt(dev: &GpuDevice, values: &mut [Limbs]) -> Result<()> {
    transform(dev, values, Transform::CosetNtt)
}

pub fn coset_intt(dev: &GpuDevice, values: &mut [Limbs]) -> Result<()> {
    transform(dev, values, Transform::CosetIntt)
}

fn check_lengths(a: usize, b: usize, c: usize) -> Result<u32> {
    if a != b || a != c {
        return Err(GpuError::LengthMismatch { a, b, c });
    }
    let log_n = domain_log(a);
    if log_n > MAX_LOG_N {
        return Err(GpuError::DomainTooLarge(log_n));
    }
    Ok(log_n)
}

/// Device memory an H polynomial of 2^log_n takes: a, b, c and the result.
pub fn h_polynomial_bytes(log_n: u32) -> usize {
    4 * (1usize << log_n) * ELEM_BYTES
}

/// h(x) = (a(x) b(x) - c(x)) / Z(x) from host evaluations, left on the device for the H
/// MSM: the returned vector holds the n - 1 coefficients bellperson keeps (n the domain
/// size). a, b, c are uploaded once (each upload overlaps the previous vector's
/// transforms); they are zero-padded to n.
pub fn h_polynomial_to_device(
    dev: &GpuDevice,
    a: &[Limbs],
    b: &[Limbs],
    c: &[Limbs],
) -> Result<DeviceScalars> {
    let log_n = check_lengths(a.len(), b.len(), c.len())?;
    let n = 1usize << log_n;
    let mut st = dev.ntt_state();
    if log_n == 0 {
        let mut h = DeviceScalars::alloc(dev, 1)?;
        h.len = 0;
        return Ok(h);
    }
    let need = h_polynomial_bytes(log_n);
    let free = dev.free_mem()?;
    if free < need {
        return Err(GpuError::Invalid(format!(
            "H polynomial of 2^{log_n} needs {need} bytes of device memory, {free} free"
        )));
    }
    st.kernels(dev)?;
    st.domain(dev, log_n)?;
    let upload = |st: &mut NttState, host: &[Limbs]| -> Result<DeviceScalars> {
        let d = DeviceScalars::alloc(dev, n)?;
        st.upload_staged(dev, host, d.ptr)?;
        d.zero_range(host.len(), n)?;
        Ok(d)
    };
    let mut da = upload(&mut st, a)?;
    st.evaluate_on_coset(dev, &mut da, log_n)?;
    let mut db = upload(&mut st, b)?;
    st.evaluate_on_coset(dev, &mut db, log_n)?;
    let mut dc = upload(&mut st, c)?;
    let mut h = st.h_from_coset(dev, &mut da, &mut db, &mut dc, log_n)?;
    h.len = n - 1;
    Ok(h)
}

/// As [`h_polynomial_to_device`], downloaded: the n - 1 coefficients of h.
pub fn h_polynomial(dev: &GpuDevice, a: &[Limbs], b: &[Limbs], c: &[Limbs]) -> Result<Vec<Limbs>> {
    let h = h_polynomial_to_device(dev, a, b, c)?;
    let mut out = vec![[0u64; 4]; h.len];
    dev.ntt_state().download_staged(dev, h.ptr, &mut out)?;
    Ok(out)
}

/// The H polynomial of vectors already on the device, each of 2^k elements (zero padded
/// by the caller); they are overwritten. Returns all n coefficients (h is the first n - 1).
/// Asynchronous, like [`transform_device`].
pub fn h_polynomial_resident(
    dev: &GpuDevice,
    a: &mut DeviceScalars,
    b: &mut DeviceScalars,
    c: &mut DeviceScalars,
) -> Result<DeviceScalars> {
    let n = a.len;
    check_lengths(n, b.len, c.len)?;
    if !n.is_power_of_two() {
        return Err(GpuError::Invalid(format!(
            "H polynomial over {n} elements: not a power of two"
        )));
    }
    let log_n = n.trailing_zeros();
    let mut st = dev.ntt_state();
    if log_n == 0 {
        return DeviceScalars::alloc(dev, 1);
    }
    st.h_polynomial(dev, a, b, c, log_n)
}

/// out[i] = a[i] op b[i] on the device (b unused by the unary ops).
pub fn elementwise(dev: &GpuDevice, op: FrOp, a: &[Limbs], b: &[Limbs]) -> Result<Vec<Limbs>> {
    let n = a.len();
    if b.len() != n {
        return Err(GpuError::Invalid(format!(
            "elementwise: {} and {} elements",
            n,
            b.len()
        )));
    }
    let mut st = dev.ntt_state();
    let k = st.kernels(dev)?;
    let da = DeviceScalars::alloc(dev, n)?;
    let db = DeviceScalars::alloc(dev, n)?;
    let out = DeviceScalars::alloc(dev, n)?;
    st.upload_staged(dev, a, da.ptr)?;
    st.upload_staged(dev, b, db.ptr)?;
    st.elementwise(dev, &k, out.ptr, da.ptr, db.ptr, op, n as u32)?;
    let mut res = vec![[0u64; 4]; n];
    st.download_staged(dev, out.ptr, &mut res)?;
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limbs_round_trip_through_scalar() {
        let x = Scalar::from(123456789u64);
        assert_eq!(to_scalar(&to_limbs(&x)), x);
        // One in Montgomery form is R mod r, the constant FR_ONE in fr.cuh.
        assert_eq!(
            to_limbs(&Scalar::ONE),
            [
                0x0000_0001_ffff_fffe,
                0x5884_b7fa_0003_4802,
                0x998c_4fef_ecbc_4ff5,
                0x1824_b159_acc5_056f
            ]
        );
    }
}

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
//! Plan: a transform of 2^L is a few radix-2^m passes through shared memory (see
//! cuda/ntt/radix_pass.cuh), DIF (natural in, bit-reversed out) or DIT (the reverse). The
//! plain transforms add one bit-reversal pass that also applies 1/n or g^-i; the H
//! polynomial pairs DIF and DIT so that only its very last step permutes.
//!
//! Per device we keep: the loaded kernels, the radix root tables, one set of twiddle and
//! coset tables per domain size (built once, on the host, a few hundred KiB each), and two
//! pinned staging buffers through which host vectors stream while the previous chunk's DMA
//! runs.

use std::collections::HashMap;
use std::sync::Arc;

use blstrs::Scalar;
use cudarc::driver::{result, CudaEvent, CudaFunction, LaunchConfig, PushKernelArg};
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
pub use crate::memory::{DeviceScalars, PinnedScalars};

/// One field element: blst_fr limbs, Montgomery form, little endian.
pub type Limbs = [u64; 4];

pub(crate) const ELEM_BYTES: usize = 32;

/// Largest domain the kernels index (u32 indices, twiddle exponents below 2^L).
pub const MAX_LOG_N: u32 = 28;

/// Elements per pinned staging chunk (32 MiB): large enough that DMA runs at full speed,
/// small enough that the host copy of the next chunk overlaps it.
const STAGING_CHUNK: usize = 1 << 20;

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

/// x^e = lo[e mod 2^bits] * hi[e >> bits], both on the device (cuda/ntt/twiddles.cuh).
struct PowTable {
    lo: DeviceScalars,
    hi: DeviceScalars,
    bits: u32,
}

/// Everything a domain of 2^log_n needs on the device, built once and kept.
struct Domain {
    omega: PowTable,
    omega_inv: PowTable,
    /// g^i (coset NTT of natural-order coefficients)
    coset: PowTable,
    /// g^i / n (coset NTT straight after an unscaled inverse)
    coset_over_n: PowTable,
    /// g^-i / n (inverse coset NTT)
    icoset_over_n: PowTable,
    /// 1/n (inverse NTT)
    over_n: PowTable,
    /// (g^n - 1)^-1
    z_inv: DeviceScalars,
}

/// The root of unity of order 2^log_n that bellperson uses for this domain.
fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

struct Kernels {
    pass_dif: CudaFunction,
    pass_dit: CudaFunction,
    bit_reverse: CudaFunction,
    h_pointwise: CudaFunction,
    elementwise: CudaFunction,
    /// w_1024^e and w_1024^-e for e < 512: the radix stages' twiddles for every domain.
    roots: DeviceScalars,
    roots_inv: DeviceScalars,
}

struct Staging {
    bufs: [PinnedScalars; 2],
    done: [CudaEvent; 2],
}

#[derive(Default)]
pub(crate) struct NttState {
    kernels: Option<Arc<Kernels>>,
    domains: HashMap<u32, Arc<Domain>>,
    staging: Option<Staging>,
}

const THREADS_PER_PASS: u32 = 512; // NTT_THREADS in radix_pass.cuh
const LOG_BLOCK: u32 = 10; // NTT_LOG_BLOCK
const MAX_LOG_RADIX: u32 = 10; // NTT_MAX_LOG_RADIX
/// Strided passes take at most 2^9 rows so that each block still reads runs of at least
/// two adjacent elements (64 bytes).
const MAX_STRIDED_RADIX: u32 = 9;

/// The passes of a DIF transform of 2^log_n, top bits first: (lo, m, c) = bits [lo, lo+m)
/// with 2^c adjacent columns per block. The DIT transform runs the same list backwards.
fn plan(log_n: u32) -> Vec<(u32, u32, u32)> {
    if log_n == 0 {
        return Vec::new();
    }
    let last = log_n.min(MAX_LOG_RADIX);
    let rest = log_n - last;
    let mut passes = Vec::new();
    if rest > 0 {
        let k = rest.div_ceil(MAX_STRIDED_RADIX);
        let mut lo = log_n;
        for i in 0..k {
            // Balanced sizes: earlier passes take the remainder.
            let m = rest / k + u32::from(i < rest % k);
            lo -= m;
            passes.push((lo, m, (LOG_BLOCK - m).min(lo)));
        }
    }
    passes.push((0, last, 0));
    passes
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
        // CUZK_NTT_VARIANT=1: the pass kernels without the two-blocks-per-SM register cap
        // (a measurement switch; see NOTES.md).
        let suffix = match std::env::var("CUZK_NTT_VARIANT").as_deref() {
            Ok("1") => "_1",
            _ => "",
        };
        let k = Arc::new(Kernels {
            pass_dif: module.load_function(&format!("ntt_pass_dif{suffix}"))?,
            pass_dit: module.load_function(&format!("ntt_pass_dit{suffix}"))?,
            bit_reverse: module.load_function("ntt_bit_reverse")?,
            h_pointwise: module.load_function("ntt_h_pointwise")?,
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

    fn domain(&mut self, dev: &GpuDevice, log_n: u32) -> Result<Arc<Domain>> {
        if log_n > MAX_LOG_N {
            return Err(GpuError::DomainTooLarge(log_n));
        }
        if let Some(d) = self.domains.get(&log_n) {
            return Ok(d.clone());
        }
        let d = Arc::new(self.build_domain(dev, log_n)?);
        self.domains.insert(log_n, d.clone());
        Ok(d)
    }

    fn build_domain(&mut self, dev: &GpuDevice, log_n: u32) -> Result<Domain> {
        // The caller holds the state lock; uploads go through the unlocked helper.
        let w = omega(log_n);
        let w_inv = w.invert().unwrap();
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().unwrap();
        let n = 1u64 << log_n;
        let n_inv = Scalar::from(n).invert().unwrap();
        let z_inv = (g.pow_vartime([n]) - Scalar::ONE).invert().unwrap();
        let mut table = |base: Scalar, factor: Scalar| -> Result<PowTable> {
            let bits = log_n.div_ceil(2);
            let (lo, hi) = pow_table_host(base, factor, log_n);
            Ok(PowTable {
                lo: self.upload_unlocked(dev, &lo)?,
                hi: self.upload_unlocked(dev, &hi)?,
                bits,
            })
        };
        Ok(Domain {
            omega: table(w, Scalar::ONE)?,
            omega_inv: table(w_inv, Scalar::ONE)?,
            coset: table(g, Scalar::ONE)?,
            coset_over_n: table(g, n_inv)?,
            icoset_over_n: table(g_inv, n_inv)?,
            over_n: table(Scalar::ONE, n_inv)?,
            z_inv: self.upload_unlocked(dev, &[to_limbs(&z_inv)])?,
        })
    }

    fn staging(&mut self, dev: &GpuDevice) -> Result<&mut Staging> {
        if self.staging.is_none() {
            self.staging = Some(Staging {
                bufs: [
                    PinnedScalars::alloc(dev, STAGING_CHUNK)?,
                    PinnedScalars::alloc(dev, STAGING_CHUNK)?,
                ],
                done: [dev.ctx().new_event(None)?, dev.ctx().new_event(None)?],
            });
        }
        Ok(self.staging.as_mut().unwrap())
    }

    /// Host slice -> device through the two pinned buffers on the copy stream: the host
    /// copies chunk i+1 while the DMA engine moves chunk i. Returns once the last chunk is
    /// queued; the compute stream is made to wait for it by the caller (join).
    pub(crate) fn upload_staged(
        &mut self,
        dev: &GpuDevice,
        host: &[Limbs],
        dst: u64,
    ) -> Result<()> {
        dev.ctx().bind_to_thread()?;
        let copy = dev.copy_stream().clone();
        let st = self.staging(dev)?;
        for (i, chunk) in host.chunks(STAGING_CHUNK).enumerate() {
            let k = i & 1;
            st.done[k].synchronize()?;
            let buf = &mut st.bufs[k].as_mut_slice()[..chunk.len()];
            par_copy(buf, chunk);
            let off = (i * STAGING_CHUNK * ELEM_BYTES) as u64;
            // SAFETY: buf is pinned and stays untouched until done[k] fires.
            unsafe { result::memcpy_htod_async(dst + off, &*buf, copy.cu_stream()) }?;
            st.done[k].record(&copy)?;
        }
        dev.stream().join(&copy)?;
        Ok(())
    }

    /// Device -> host slice, after all queued compute, through the pinned buffers.
    pub(crate) fn download_staged(
        &mut self,
        dev: &GpuDevice,
        src: u64,
        out: &mut [Limbs],
    ) -> Result<()> {
        dev.ctx().bind_to_thread()?;
        let copy = dev.copy_stream().clone();
        copy.join(dev.stream())?;
        let st = self.staging(dev)?;
        let lens: Vec<usize> = out.chunks(STAGING_CHUNK).map(|c| c.len()).collect();
        let count = lens.len();
        let enqueue = |st: &mut Staging, i: usize, len: usize| -> Result<()> {
            let k = i & 1;
            let buf = &mut st.bufs[k].as_mut_slice()[..len];
            let off = (i * STAGING_CHUNK * ELEM_BYTES) as u64;
            // SAFETY: buf is pinned; the host reads it only after done[k].
            unsafe { result::memcpy_dtoh_async(buf, src + off, copy.cu_stream()) }?;
            st.done[k].record(&copy)?;
            Ok(())
        };
        if count > 0 {
            enqueue(st, 0, lens[0])?;
        }
        for (i, chunk) in out.chunks_mut(STAGING_CHUNK).enumerate() {
            // Queue the next chunk before copying this one out, so DMA and memcpy overlap.
            if i + 1 < count {
                enqueue(st, i + 1, lens[i + 1])?;
            }
            let k = i & 1;
            st.done[k].synchronize()?;
            par_copy(chunk, &st.bufs[k].as_slice()[..chunk.len()]);
        }
        Ok(())
    }
}

fn pow_table_host(base: Scalar, factor: Scalar, log_n: u32) -> (Vec<Limbs>, Vec<Limbs>) {
    let bits = log_n.div_ceil(2);
    let lo_len = 1usize << bits;
    let hi_len = 1usize << (log_n - bits);
    let mut lo = Vec::with_capacity(lo_len);
    let mut x = factor;
    for _ in 0..lo_len {
        lo.push(to_limbs(&x));
        x *= base;
    }
    let step = base.pow_vartime([lo_len as u64]);
    let mut hi = Vec::with_capacity(hi_len);
    let mut y = Scalar::ONE;
    for _ in 0..hi_len {
        hi.push(to_limbs(&y));
        y *= step;
    }
    (lo, hi)
}

/// memcpy split over the rayon pool: one core copies ~10 GB/s, under PCIe's ~50.
fn par_copy(dst: &mut [Limbs], src: &[Limbs]) {
    const PIECE: usize = 1 << 15;
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
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

impl NttState {
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        dit: bool,
        data: u64,
        log_n: u32,
        (lo, m, c): (u32, u32, u32),
        inverse: bool,
        tw: &PowTable,
        scale: Option<&PowTable>,
    ) -> Result<()> {
        let f = if dit { &k.pass_dit } else { &k.pass_dif };
        let roots = if inverse {
            k.roots_inv.ptr
        } else {
            k.roots.ptr
        };
        let (sc_lo, sc_hi, sc_bits) =
            scale.map_or((0u64, 0u64, 0u32), |t| (t.lo.ptr, t.hi.ptr, t.bits));
        let cfg = LaunchConfig {
            grid_dim: (1u32 << (log_n - m - c), 1, 1),
            block_dim: (THREADS_PER_PASS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = dev.stream().launch_builder(f);
        b.arg(&data)
            .arg(&log_n)
            .arg(&lo)
            .arg(&m)
            .arg(&c)
            .arg(&roots)
            .arg(&tw.lo.ptr)
            .arg(&tw.hi.ptr)
            .arg(&tw.bits)
            .arg(&sc_lo)
            .arg(&sc_hi)
            .arg(&sc_bits);
        // SAFETY: the argument list matches ntt_pass_{dif,dit} in ntt.cu; `data` holds
        // 2^log_n elements and the tables cover exponents below 2^log_n.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Natural order in, bit-reversed out; `first_scale` multiplies the input by
    /// scale(natural index) inside the first pass.
    #[allow(clippy::too_many_arguments)]
    fn dif(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        data: u64,
        log_n: u32,
        inverse: bool,
        tw: &PowTable,
        first_scale: Option<&PowTable>,
    ) -> Result<()> {
        for (i, p) in plan(log_n).into_iter().enumerate() {
            let scale = if i == 0 { first_scale } else { None };
            self.pass(dev, k, false, data, log_n, p, inverse, tw, scale)?;
        }
        Ok(())
    }

    /// Bit-reversed order in, natural out; `first_scale` multiplies input position p by
    /// scale(rev(p)), i.e. by its natural index.
    #[allow(clippy::too_many_arguments)]
    fn dit(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        data: u64,
        log_n: u32,
        inverse: bool,
        tw: &PowTable,
        first_scale: Option<&PowTable>,
    ) -> Result<()> {
        for (i, p) in plan(log_n).into_iter().rev().enumerate() {
            let scale = if i == 0 { first_scale } else { None };
            self.pass(dev, k, true, data, log_n, p, inverse, tw, scale)?;
        }
        Ok(())
    }

    fn bit_reverse(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        out: u64,
        inp: u64,
        log_n: u32,
        scale: Option<&PowTable>,
    ) -> Result<()> {
        let (sc_lo, sc_hi, sc_bits) =
            scale.map_or((0u64, 0u64, 0u32), |t| (t.lo.ptr, t.hi.ptr, t.bits));
        let mut b = dev.stream().launch_builder(&k.bit_reverse);
        b.arg(&out)
            .arg(&inp)
            .arg(&log_n)
            .arg(&sc_lo)
            .arg(&sc_hi)
            .arg(&sc_bits);
        // SAFETY: matches ntt_bit_reverse; out and inp are distinct 2^log_n vectors.
        unsafe { b.launch(launch_1d(1usize << log_n)) }?;
        Ok(())
    }

    fn transform(&mut self, dev: &GpuDevice, data: &mut DeviceScalars, t: Transform) -> Result<()> {
        let n = data.len;
        if !n.is_power_of_two() {
            return Err(GpuError::Invalid(format!(
                "NTT of {n} elements: not a power of two"
            )));
        }
        let log_n = n.trailing_zeros();
        if log_n == 0 {
            // One point: every transform is the identity (g^0 = 1, 1/1 = 1).
            return Ok(());
        }
        let k = self.kernels(dev)?;
        let d = self.domain(dev, log_n)?;
        let inverse = matches!(t, Transform::Intt | Transform::CosetIntt);
        let tw = if inverse { &d.omega_inv } else { &d.omega };
        let first = (t == Transform::CosetNtt).then_some(&d.coset);
        self.dif(dev, &k, data.ptr, log_n, inverse, tw, first)?;
        let last = match t {
            Transform::Intt => Some(&d.over_n),
            Transform::CosetIntt => Some(&d.icoset_over_n),
            _ => None,
        };
        let mut out = DeviceScalars::alloc(dev, n)?;
        self.bit_reverse(dev, &k, out.ptr, data.ptr, log_n, last)?;
        std::mem::swap(data, &mut out);
        Ok(())
    }

    /// a, b, c: evaluations over the 2^log_n domain, on the device; overwritten.
    /// Returns h's n coefficients (the caller keeps the first n - 1).
    fn h_polynomial(
        &mut self,
        dev: &GpuDevice,
        a: &mut DeviceScalars,
        b: &mut DeviceScalars,
        c: &mut DeviceScalars,
        log_n: u32,
    ) -> Result<DeviceScalars> {
        for x in [&mut *a, &mut *b, &mut *c] {
            self.evaluate_on_coset(dev, x, log_n)?;
        }
        self.h_from_coset(dev, a, b, c, log_n)
    }

    /// Evaluations -> evaluations on the coset g<omega>: inverse DIF (bit-reversed,
    /// unscaled coefficients), then DIT with g^i / n applied on its way in.
    fn evaluate_on_coset(
        &mut self,
        dev: &GpuDevice,
        x: &mut DeviceScalars,
        log_n: u32,
    ) -> Result<()> {
        let k = self.kernels(dev)?;
        let d = self.domain(dev, log_n)?;
        self.dif(dev, &k, x.ptr, log_n, true, &d.omega_inv, None)?;
        self.dit(
            dev,
            &k,
            x.ptr,
            log_n,
            false,
            &d.omega,
            Some(&d.coset_over_n),
        )
    }

    /// (a b - c) / Z on the coset, then the inverse coset transform; returns h.
    fn h_from_coset(
        &mut self,
        dev: &GpuDevice,
        a: &mut DeviceScalars,
        b: &DeviceScalars,
        c: &DeviceScalars,
        log_n: u32,
    ) -> Result<DeviceScalars> {
        let k = self.kernels(dev)?;
        let d = self.domain(dev, log_n)?;
        let n = 1u32 << log_n;
        let mut pw = dev.stream().launch_builder(&k.h_pointwise);
        pw.arg(&a.ptr)
            .arg(&b.ptr)
            .arg(&c.ptr)
            .arg(&d.z_inv.ptr)
            .arg(&n);
        // SAFETY: matches ntt_h_pointwise; all three vectors hold n elements.
        unsafe { pw.launch(launch_1d(n as usize)) }?;
        self.dif(dev, &k, a.ptr, log_n, true, &d.omega_inv, None)?;
        let h = DeviceScalars::alloc(dev, n as usize)?;
        self.bit_reverse(dev, &k, h.ptr, a.ptr, log_n, Some(&d.icoset_over_n))?;
        Ok(h)
    }
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
    st.evaluate_on_coset(dev, &mut dc, log_n)?;
    let mut h = st.h_from_coset(dev, &mut da, &db, &dc, log_n)?;
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
    let (op, n32) = (op as u32, n as u32);
    let mut l = dev.stream().launch_builder(&k.elementwise);
    l.arg(&out.ptr).arg(&da.ptr).arg(&db.ptr).arg(&op).arg(&n32);
    // SAFETY: matches fr_elementwise; all three vectors hold n elements.
    unsafe { l.launch(launch_1d(n)) }?;
    let mut res = vec![[0u64; 4]; n];
    st.download_staged(dev, out.ptr, &mut res)?;
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_every_bit_once() {
        for log_n in 1..=MAX_LOG_N {
            let p = plan(log_n);
            let mut next = log_n;
            for &(lo, m, c) in &p {
                assert_eq!(lo + m, next, "log_n={log_n} plan={p:?}");
                assert!((1..=MAX_LOG_RADIX).contains(&m));
                assert!(m + c <= LOG_BLOCK && c <= lo);
                next = lo;
            }
            assert_eq!(next, 0);
        }
    }

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

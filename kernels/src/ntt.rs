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

use std::collections::HashMap;
use std::sync::Arc;

use blstrs::Scalar;
use cudarc::driver::{result, sys, CudaEvent, CudaFunction, LaunchConfig, PushKernelArg};
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

/// Column slices of the pinned path's overlapped upload (2-D copies of 2^m rows each).
const PINNED_SLICES: usize = 16;

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

impl PowTable {
    /// The kernels' (lo, hi, bits) arguments for an optional table; all zero for none.
    fn args(t: Option<&PowTable>) -> (u64, u64, u32) {
        t.map_or((0, 0, 0), |t| (t.lo.ptr, t.hi.ptr, t.bits))
    }
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
    /// w_N^e and w_N^-e for every e < N, for the one four-step boundary whose N is small
    /// enough (the second of three passes): one load instead of a product of two.
    direct: Option<DirectTwiddles>,
}

struct DirectTwiddles {
    log: u32,
    fwd: DeviceScalars,
    inv: DeviceScalars,
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
    regs_dif: CudaFunction,
    regs_dit: CudaFunction,
    bit_reverse: CudaFunction,
    h_pointwise: CudaFunction,
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

/// Points per thread of the register passes: 2^REG_LOG_RADIX (NTT_REG_LOG_RADIX in ntt.cu).
const REG_LOG_RADIX: u32 = 2;
/// Largest N = 2^log for which the direct four-step table is built (8 MiB per direction).
const MAX_DIRECT_LOG: u32 = 18;

/// The register passes of a DIF transform of 2^log_n (log_n >= REG_LOG_RADIX), top bits
/// first, as (lo, m, c): the last covers min(log_n, 10) bits, the others at most 9 and at
/// least REG_LOG_RADIX each, balanced (2^24: 7 + 7 + 10, 2^26: 8 + 8 + 10).
fn plan_regs(log_n: u32) -> Vec<(u32, u32, u32)> {
    debug_assert!(log_n >= REG_LOG_RADIX);
    let passes = if log_n <= MAX_LOG_RADIX {
        1
    } else {
        1 + (log_n - MAX_LOG_RADIX).div_ceil(MAX_STRIDED_RADIX)
    };
    let last = MAX_LOG_RADIX.min(log_n - REG_LOG_RADIX * (passes - 1));
    let rest = log_n - last;
    let k = passes - 1;
    let mut out = Vec::new();
    let mut lo = log_n;
    for i in 0..k {
        let m = rest / k + u32::from(i < rest % k);
        lo -= m;
        out.push((lo, m, (LOG_BLOCK - m).min(lo)));
    }
    out.push((0, last, 0));
    out
}

/// The N of the boundary that gets a direct twiddle table, if any: after the second of
/// three or more passes, N = 2^(log_n - m_first).
fn direct_log(log_n: u32) -> Option<u32> {
    if log_n < REG_LOG_RADIX {
        return None;
    }
    let p = plan_regs(log_n);
    let log = log_n - p[0].1;
    (p.len() >= 3 && log <= MAX_DIRECT_LOG).then_some(log)
}

/// The radix-2 passes (domains below 2^REG_LOG_RADIX), as plan_regs.
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
        let k = Arc::new(Kernels {
            pass_dif: module.load_function("ntt_pass_dif")?,
            pass_dit: module.load_function("ntt_pass_dit")?,
            regs_dif: module.load_function("ntt_regs_dif")?,
            regs_dit: module.load_function("ntt_regs_dit")?,
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
        let direct = match direct_log(log_n) {
            Some(log) => {
                let wn = omega(log);
                let powers = |base: Scalar| -> Vec<Limbs> {
                    let mut x = Scalar::ONE;
                    (0..1usize << log)
                        .map(|_| {
                            let l = to_limbs(&x);
                            x *= base;
                            l
                        })
                        .collect()
                };
                Some(DirectTwiddles {
                    log,
                    fwd: self.upload_unlocked(dev, &powers(wn))?,
                    inv: self.upload_unlocked(dev, &powers(wn.invert().unwrap()))?,
                })
            }
            None => None,
        };
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
            direct,
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
        self.upload_staged_each(dev, host, dst, |_, _| Ok(()))?;
        dev.stream().join(dev.copy_stream())?;
        Ok(())
    }

    /// As `upload_staged`, calling `landed(first, count)` as each piece of `host` is queued:
    /// work the caller then puts on the compute stream runs after that piece has landed,
    /// while the host stages the next one.
    pub(crate) fn upload_staged_each(
        &mut self,
        dev: &GpuDevice,
        host: &[Limbs],
        dst: u64,
        mut landed: impl FnMut(usize, usize) -> Result<()>,
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
            dev.stream().join(&copy)?;
            landed(i * STAGING_CHUNK, chunk.len())?;
        }
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
        let queued = dev.stream().record_event(None)?;
        self.download_staged_after(dev, &queued, src, out)
    }

    /// As `download_staged`, after the compute work recorded in `after` only: kernels queued
    /// since keep running while this chunk comes back (fixed_base.rs's pipeline).
    pub(crate) fn download_staged_after(
        &mut self,
        dev: &GpuDevice,
        after: &CudaEvent,
        src: u64,
        out: &mut [Limbs],
    ) -> Result<()> {
        dev.ctx().bind_to_thread()?;
        let copy = dev.copy_stream().clone();
        copy.wait(after)?;
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

/// memcpy split over threads: one core copies ~10 GB/s, under PCIe's ~50. The threads are a
/// pool of their own, not rayon's global one: there the pieces queue behind synthesis's
/// parallel work (a/b/c evaluation, the PoRep-shaped kind's fill), and the device waits for
/// its staging copies. Under a full synthesis load a 2 KiB PoRep partition's device step grew
/// from 130 to 206 ms that way, and a 2^27 partition's NTT step took 0.9-1.1 s.
fn par_copy(dst: &mut [Limbs], src: &[Limbs]) {
    const PIECE: usize = 1 << 15;
    copy_pool().install(|| {
        dst.par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s))
    });
}

/// Threads for staging copies: enough to keep PCIe busy (~4 cores of memcpy), few enough to
/// leave the cores to synthesis. `CUZK_COPY_THREADS` overrides.
fn copy_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::env::var("CUZK_COPY_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(6);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cuzk-copy-{i}"))
            .build()
            .expect("creating the staging copy threads")
    })
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
        let roots = k.roots(inverse);
        let (sc_lo, sc_hi, sc_bits) = PowTable::args(scale);
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

    /// One register pass (ntt_regs_dif / ntt_regs_dit). `blocks`: a sub-range of the
    /// pass's blocks (first, count), for the pinned path's sliced first pass.
    #[allow(clippy::too_many_arguments)]
    fn reg_pass(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        d: &Domain,
        dit: bool,
        (inp, out): (u64, u64),
        log_n: u32,
        (lo, m, c): (u32, u32, u32),
        inverse: bool,
        scale: Option<&PowTable>,
        out_scale: Option<&PowTable>,
        blocks: Option<(u32, u32)>,
    ) -> Result<()> {
        let f = if dit { &k.regs_dit } else { &k.regs_dif };
        let roots = k.roots(inverse);
        let tw = if inverse { &d.omega_inv } else { &d.omega };
        let direct = match &d.direct {
            Some(t) if lo != 0 && lo + m == t.log => {
                if inverse {
                    t.inv.ptr
                } else {
                    t.fwd.ptr
                }
            }
            _ => 0u64,
        };
        let (sc_lo, sc_hi, sc_bits) = PowTable::args(scale);
        let (osc_lo, osc_hi, osc_bits) = PowTable::args(out_scale);
        let bitrev = u32::from(inp != out);
        let all = 1u32 << (log_n - m - c);
        let (block0, count) = blocks.unwrap_or((0, all));
        let cfg = LaunchConfig {
            grid_dim: (count, 1, 1),
            block_dim: (1u32 << (m + c - REG_LOG_RADIX), 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = dev.stream().launch_builder(f);
        b.arg(&inp)
            .arg(&out)
            .arg(&log_n)
            .arg(&lo)
            .arg(&m)
            .arg(&c)
            .arg(&roots)
            .arg(&tw.lo.ptr)
            .arg(&tw.hi.ptr)
            .arg(&tw.bits)
            .arg(&direct)
            .arg(&sc_lo)
            .arg(&sc_hi)
            .arg(&sc_bits)
            .arg(&osc_lo)
            .arg(&osc_hi)
            .arg(&osc_bits)
            .arg(&bitrev)
            .arg(&block0);
        // SAFETY: the argument list matches NTT_REG_KERNEL in ntt.cu; `inp`/`out` hold
        // 2^log_n elements (distinct only for a bit-reversing last pass, lo == 0), the tables
        // cover exponents below 2^log_n, the direct table N = 2^(lo + m) entries.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// DIF transform of `data` (natural order in). `first_scale` multiplies the input by
    /// scale(natural index) inside the first pass. With `permute_to` the result lands there
    /// in natural order, times `last_scale`(index) (`data` is left scrambled); otherwise it
    /// stays in `data`, bit-reversed, and `last_scale` must be None.
    #[allow(clippy::too_many_arguments)]
    fn dif(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        d: &Domain,
        data: u64,
        log_n: u32,
        inverse: bool,
        first_scale: Option<&PowTable>,
        permute_to: Option<u64>,
        last_scale: Option<&PowTable>,
    ) -> Result<()> {
        if log_n < REG_LOG_RADIX {
            let tw = if inverse { &d.omega_inv } else { &d.omega };
            for (i, p) in plan(log_n).into_iter().enumerate() {
                let scale = if i == 0 { first_scale } else { None };
                self.pass(dev, k, false, data, log_n, p, inverse, tw, scale)?;
            }
            if let Some(out) = permute_to {
                self.bit_reverse(dev, k, out, data, log_n, last_scale)?;
            }
            return Ok(());
        }
        debug_assert!(permute_to.is_some() || last_scale.is_none());
        let passes = plan_regs(log_n);
        let count = passes.len();
        for (i, p) in passes.into_iter().enumerate() {
            let last = i + 1 == count;
            let out = if last {
                permute_to.unwrap_or(data)
            } else {
                data
            };
            let scale = if i == 0 { first_scale } else { None };
            let oscale = if last { last_scale } else { None };
            self.reg_pass(
                dev,
                k,
                d,
                false,
                (data, out),
                log_n,
                p,
                inverse,
                scale,
                oscale,
                None,
            )?;
        }
        Ok(())
    }

    /// DIT transform in place: bit-reversed order in, natural out; `first_scale` multiplies
    /// input position p by scale(rev(p)), i.e. by its natural index.
    #[allow(clippy::too_many_arguments)]
    fn dit(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        d: &Domain,
        data: u64,
        log_n: u32,
        inverse: bool,
        first_scale: Option<&PowTable>,
    ) -> Result<()> {
        if log_n < REG_LOG_RADIX {
            let tw = if inverse { &d.omega_inv } else { &d.omega };
            for (i, p) in plan(log_n).into_iter().rev().enumerate() {
                let scale = if i == 0 { first_scale } else { None };
                self.pass(dev, k, true, data, log_n, p, inverse, tw, scale)?;
            }
            return Ok(());
        }
        for (i, p) in plan_regs(log_n).into_iter().rev().enumerate() {
            let scale = if i == 0 { first_scale } else { None };
            self.reg_pass(
                dev,
                k,
                d,
                true,
                (data, data),
                log_n,
                p,
                inverse,
                scale,
                None,
                None,
            )?;
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
        let (sc_lo, sc_hi, sc_bits) = PowTable::args(scale);
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

    fn check_pow2(n: usize) -> Result<u32> {
        if !n.is_power_of_two() {
            return Err(GpuError::Invalid(format!(
                "NTT of {n} elements: not a power of two"
            )));
        }
        Ok(n.trailing_zeros())
    }

    fn transform(&mut self, dev: &GpuDevice, data: &mut DeviceScalars, t: Transform) -> Result<()> {
        let log_n = Self::check_pow2(data.len)?;
        if log_n == 0 {
            // One point: every transform is the identity (g^0 = 1, 1/1 = 1).
            return Ok(());
        }
        let k = self.kernels(dev)?;
        let d = self.domain(dev, log_n)?;
        let mut out = DeviceScalars::alloc(dev, data.len)?;
        self.transform_into(dev, &k, &d, data.ptr, out.ptr, log_n, t, false)?;
        std::mem::swap(data, &mut out);
        Ok(())
    }

    /// `inp` (scrambled afterwards) -> `out`, natural order. `first_done`: the first DIF
    /// pass has already run (the pinned path runs it in slices as the upload lands).
    #[allow(clippy::too_many_arguments)]
    fn transform_into(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        d: &Domain,
        inp: u64,
        out: u64,
        log_n: u32,
        t: Transform,
        first_done: bool,
    ) -> Result<()> {
        let inverse = matches!(t, Transform::Intt | Transform::CosetIntt);
        let first = (t == Transform::CosetNtt).then_some(&d.coset);
        let last = match t {
            Transform::Intt => Some(&d.over_n),
            Transform::CosetIntt => Some(&d.icoset_over_n),
            _ => None,
        };
        if !first_done {
            return self.dif(dev, k, d, inp, log_n, inverse, first, Some(out), last);
        }
        let passes = plan_regs(log_n);
        let count = passes.len();
        for (i, p) in passes.into_iter().enumerate().skip(1) {
            let is_last = i + 1 == count;
            let o = if is_last { out } else { inp };
            let oscale = if is_last { last } else { None };
            self.reg_pass(
                dev,
                k,
                d,
                false,
                (inp, o),
                log_n,
                p,
                inverse,
                None,
                oscale,
                None,
            )?;
        }
        Ok(())
    }

    /// Pinned host vector -> transform -> pinned host vector. The first DIF pass covers the
    /// top bits, so its blocks are column slices over all rows: the upload goes as 2-D
    /// copies of column slices on the copy stream and the first pass starts on each slice as
    /// it lands, hiding that pass under the transfer. Synchronous.
    fn transform_pinned(
        &mut self,
        dev: &GpuDevice,
        src: &PinnedScalars,
        dst: &mut PinnedScalars,
        t: Transform,
    ) -> Result<()> {
        let n = src.len();
        if dst.len() != n {
            return Err(GpuError::Invalid(format!(
                "pinned NTT: {} elements in, {} out",
                n,
                dst.len()
            )));
        }
        let log_n = Self::check_pow2(n)?;
        let k = self.kernels(dev)?;
        let d = self.domain(dev, log_n)?;
        dev.ctx().bind_to_thread()?;
        let mut data = DeviceScalars::alloc(dev, n)?;
        let copy = dev.copy_stream().clone();
        let passes = if log_n >= REG_LOG_RADIX {
            plan_regs(log_n)
        } else {
            Vec::new()
        };
        if passes.len() < 2 || t == Transform::CosetNtt {
            // One pass (nothing to overlap) or a first pass with a scale: plain upload.
            data.copy_from_pinned(dev, src)?;
            self.transform(dev, &mut data, t)?;
            return data.copy_to_pinned(dev, dst);
        }
        let out = DeviceScalars::alloc(dev, n)?;
        let inverse = matches!(t, Transform::Intt | Transform::CosetIntt);
        let (lo, m, c) = passes[0];
        let cols = 1usize << lo;
        let slices = PINNED_SLICES.min(cols >> c);
        let width = cols / slices;
        let blocks = (1u32 << (log_n - m - c)) / slices as u32;
        copy.join(dev.stream())?;
        for s in 0..slices {
            let off = s * width * ELEM_BYTES;
            let cp = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                srcHost: unsafe { (src.as_slice().as_ptr() as *const u8).add(off) } as *const _,
                srcDevice: 0,
                srcArray: std::ptr::null_mut(),
                srcPitch: cols * ELEM_BYTES,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: std::ptr::null_mut(),
                dstDevice: data.ptr + off as u64,
                dstArray: std::ptr::null_mut(),
                dstPitch: cols * ELEM_BYTES,
                WidthInBytes: width * ELEM_BYTES,
                Height: 1usize << m,
            };
            // SAFETY: rows of `width` elements at pitch `cols` inside both n-element
            // allocations; src stays alive and unmodified until the copy stream is joined.
            unsafe { sys::cuMemcpy2DAsync_v2(&cp, copy.cu_stream()) }.result()?;
            dev.stream().join(&copy)?;
            let range = Some((s as u32 * blocks, blocks));
            self.reg_pass(
                dev,
                &k,
                &d,
                false,
                (data.ptr, data.ptr),
                log_n,
                passes[0],
                inverse,
                None,
                None,
                range,
            )?;
        }
        self.transform_into(dev, &k, &d, data.ptr, out.ptr, log_n, t, true)?;
        out.copy_to_pinned(dev, dst)
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
        self.dif(dev, &k, &d, x.ptr, log_n, true, None, None, None)?;
        self.dit(dev, &k, &d, x.ptr, log_n, false, Some(&d.coset_over_n))
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
        let h = DeviceScalars::alloc(dev, n as usize)?;
        let last = Some(&d.icoset_over_n);
        self.dif(dev, &k, &d, a.ptr, log_n, true, None, Some(h.ptr), last)?;
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
    fn register_plans_cover_every_bit_once() {
        for log_n in REG_LOG_RADIX..=MAX_LOG_N {
            let p = plan_regs(log_n);
            let mut next = log_n;
            for (i, &(lo, m, c)) in p.iter().enumerate() {
                assert_eq!(lo + m, next, "log_n={log_n} plan={p:?}");
                let max = if i + 1 == p.len() {
                    MAX_LOG_RADIX
                } else {
                    MAX_STRIDED_RADIX
                };
                assert!(
                    (REG_LOG_RADIX..=max).contains(&m),
                    "log_n={log_n} plan={p:?}"
                );
                assert!(m + c <= LOG_BLOCK && c <= lo);
                next = lo;
            }
            assert_eq!(next, 0);
        }
        assert_eq!(plan_regs(24), vec![(17, 7, 3), (10, 7, 3), (0, 10, 0)]);
        assert_eq!(plan_regs(26), vec![(18, 8, 2), (10, 8, 2), (0, 10, 0)]);
        assert_eq!(direct_log(24), Some(17));
        assert_eq!(direct_log(26), Some(18));
        assert_eq!(direct_log(19), None);
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

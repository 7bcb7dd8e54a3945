//! The transforms as sequences of kernel launches on the compute stream: the radix
//! passes, DIF and DIT, the plain and pinned transforms, and the H polynomial's steps.

use cudarc::driver::{sys, LaunchConfig, PushKernelArg};

use super::domain::{Domain, PowTable};
use super::plan::{plan, plan_regs, REG_LOG_RADIX};
use super::{launch_1d, FrOp, Kernels, NttState, Transform, ELEM_BYTES};
use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::memory::{DeviceScalars, PinnedScalars};

const THREADS_PER_PASS: u32 = 512; // NTT_THREADS in radix_pass.cuh

/// Column slices of the pinned path's overlapped upload (2-D copies of 2^m rows each).
const PINNED_SLICES: usize = 16;

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

    pub(super) fn transform(
        &mut self,
        dev: &GpuDevice,
        data: &mut DeviceScalars,
        t: Transform,
    ) -> Result<()> {
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
    pub(super) fn transform_pinned(
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
    pub(super) fn h_polynomial(
        &mut self,
        dev: &GpuDevice,
        a: &mut DeviceScalars,
        b: &mut DeviceScalars,
        c: &mut DeviceScalars,
        log_n: u32,
    ) -> Result<DeviceScalars> {
        self.evaluate_on_coset(dev, a, log_n)?;
        self.evaluate_on_coset(dev, b, log_n)?;
        self.h_from_coset(dev, a, b, c, log_n)
    }

    /// Evaluations -> evaluations on the coset g<omega>: inverse DIF (bit-reversed,
    /// unscaled coefficients), then DIT with g^i / n applied on its way in.
    pub(super) fn evaluate_on_coset(
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

    /// h from a and b evaluated on the coset and c over the domain (all overwritten).
    ///
    /// bellperson takes c to the coset too and transforms (a b - c) / Z back. The inverse
    /// coset transform is linear and undoes the coset transform of C, which has degree < n,
    /// so its share of h is C's own coefficients over Z: h = (icoset(a b) - C) / Z(g). C's
    /// coefficients need one inverse transform of c, not a transform there and back: one
    /// 2^log_n transform fewer (~40 ms at 2^27), the same coefficients.
    pub(super) fn h_from_coset(
        &mut self,
        dev: &GpuDevice,
        a: &mut DeviceScalars,
        b: &mut DeviceScalars,
        c: &mut DeviceScalars,
        log_n: u32,
    ) -> Result<DeviceScalars> {
        let k = self.kernels(dev)?;
        let d = self.domain(dev, log_n)?;
        let n = 1u32 << log_n;
        // a <- a b on the coset; b is free after it.
        self.elementwise(dev, &k, a.ptr, a.ptr, b.ptr, FrOp::Mul, n)?;
        // b <- C / Z(g), natural order: the unscaled inverse's n C, permuted, times 1/(n Z(g)).
        self.dif(
            dev,
            &k,
            &d,
            c.ptr,
            log_n,
            true,
            None,
            Some(b.ptr),
            Some(&d.z_inv_over_n),
        )?;
        let h = DeviceScalars::alloc(dev, n as usize)?;
        let last = Some(&d.icoset_z_inv_over_n);
        self.dif(dev, &k, &d, a.ptr, log_n, true, None, Some(h.ptr), last)?;
        self.elementwise(dev, &k, h.ptr, h.ptr, b.ptr, FrOp::Sub, n)?;
        Ok(h)
    }

    /// out[i] = a[i] op b[i] over n elements of device vectors (out may be a).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn elementwise(
        &self,
        dev: &GpuDevice,
        k: &Kernels,
        out: u64,
        a: u64,
        b: u64,
        op: FrOp,
        n: u32,
    ) -> Result<()> {
        let op = op as u32;
        let mut l = dev.stream().launch_builder(&k.elementwise);
        l.arg(&out).arg(&a).arg(&b).arg(&op).arg(&n);
        // SAFETY: matches fr_elementwise; the three vectors hold n elements, and each element
        // is read before it is written.
        unsafe { l.launch(launch_1d(n as usize)) }?;
        Ok(())
    }
}

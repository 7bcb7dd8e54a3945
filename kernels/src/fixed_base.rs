//! Fixed-base batch scalar multiplication in G1 and G2 on the GPU: `out[i] = scalars[i] *
//! base` in affine form, bit for bit what blstrs' `(base * k).to_affine()` gives. Parameter
//! generation for a 2^27-constraint circuit makes ~400M G1 and ~33M G2 points this way.
//!
//! Per call:
//! 1. the host builds the base's window table with blstrs: row w holds m * 2^(c w) * base
//!    for m = 1 .. 2^(c-1) (signed c-bit digits, so half the multiples suffice), affine,
//!    and uploads it once;
//! 2. the scalars go through in chunks of at most [`DEFAULT_CHUNK`] points, two chunks'
//!    buffers on the device: while chunk k runs, the host brings chunk k-1's points back and
//!    stages chunk k+1's scalars, both through the pinned buffers of the NTT's staging;
//! 3. the kernel (cuda/fixed_base/window_sum.cuh) sums each scalar's table entries with
//!    mixed XYZZ additions and converts each thread's 32 points to affine with one shared
//!    inversion.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{CudaEvent, CudaFunction, LaunchConfig, PushKernelArg};
use rayon::prelude::*;

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::memory::DeviceScalars;
use crate::msm::{MsmGroup, G1, G2};
use crate::ntt::{Limbs, ELEM_BYTES};

/// Window width in bits. 12: 21 additions per point against 31 at 8 bits, and a table of
/// 22 x 2048 points (4.3 MB in G1, 8.6 MB in G2) that stays in the H200's L2 and that the
/// host builds in a few tens of milliseconds.
pub const DEFAULT_WINDOW: u32 = 12;
/// Points per chunk: G1's two chunk buffers (scalars, points, scratch) take 2 x 0.9 GB at
/// 2^22, G2's 2 x 1.7 GB; smaller where the device has less free. Small enough that a
/// 2^24 call is four chunks whose copies overlap the kernel: one chunk of 2^24 ran G1 at
/// 68M points/s on the H200 (copies and kernel in series), in chunks of 2^22 at 83M.
pub const DEFAULT_CHUNK: usize = 1 << 22;
/// Widest window the table may use: 2^15 points per row.
pub const MAX_WINDOW: u32 = 16;
/// Points per thread of the kernel (FIXED_BASE_BATCH in window_sum.cuh).
const BATCH: usize = 32;
const BLOCK: u32 = 128;

/// out[i] = (scalars[i] * base).to_affine() in G1.
pub fn g1_times(
    dev: &GpuDevice,
    base: &G1Affine,
    scalars: &[Scalar],
    out: &mut [G1Affine],
) -> Result<()> {
    times::<G1>(dev, base, scalars, out, Shape::default())
}

/// out[i] = (scalars[i] * base).to_affine() in G2.
pub fn g2_times(
    dev: &GpuDevice,
    base: &G2Affine,
    scalars: &[Scalar],
    out: &mut [G2Affine],
) -> Result<()> {
    times::<G2>(dev, base, scalars, out, Shape::default())
}

/// How a call is cut up: points per chunk and the window width. Public for the tests, which
/// cross chunk boundaries with small n and try other windows.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub chunk: usize,
    pub window: u32,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            chunk: DEFAULT_CHUNK,
            window: DEFAULT_WINDOW,
        }
    }
}

/// [`g1_times`] with an explicit [`Shape`].
#[doc(hidden)]
pub fn g1_times_with(
    dev: &GpuDevice,
    base: &G1Affine,
    scalars: &[Scalar],
    out: &mut [G1Affine],
    shape: Shape,
) -> Result<()> {
    times::<G1>(dev, base, scalars, out, shape)
}

/// [`g2_times`] with an explicit [`Shape`].
#[doc(hidden)]
pub fn g2_times_with(
    dev: &GpuDevice,
    base: &G2Affine,
    scalars: &[Scalar],
    out: &mut [G2Affine],
    shape: Shape,
) -> Result<()> {
    times::<G2>(dev, base, scalars, out, shape)
}

/// What the table needs of a group beyond the MSM's [`MsmGroup`].
trait TableGroup: MsmGroup<Affine: Default + Send + Sync, Projective: Send + Sync> {
    fn from_affine(a: &Self::Affine) -> Self::Projective;
    fn to_affine(p: &Self::Projective) -> Self::Affine;
}

impl TableGroup for G1 {
    fn from_affine(a: &G1Affine) -> G1Projective {
        a.into()
    }
    fn to_affine(p: &G1Projective) -> G1Affine {
        p.into()
    }
}

impl TableGroup for G2 {
    fn from_affine(a: &G2Affine) -> G2Projective {
        a.into()
    }
    fn to_affine(p: &G2Projective) -> G2Affine {
        p.into()
    }
}

/// Windows of c bits that cover a canonical scalar (< r < 2^255) with signed digits: the
/// top window's bits plus the carry into it must not exceed 2^(c-1), which holds when
/// nwin * c >= 256 (as the MSM's digit_reader notes).
pub(crate) fn windows(c: u32) -> usize {
    256usize.div_ceil(c as usize)
}

/// Row w = m * 2^(c w) * base for m = 1 ..= 2^(c-1), rows one after another. Rows are
/// independent (each starts from its own 2^(c w) * base), so they are built in parallel.
fn window_table<G: TableGroup>(base: &G::Affine, c: u32) -> Vec<G::Affine> {
    let row = 1usize << (c - 1);
    let mut starts = Vec::with_capacity(windows(c));
    let mut b = G::from_affine(base);
    for _ in 0..windows(c) {
        starts.push(b);
        for _ in 0..c {
            b = G::double(&b);
        }
    }
    let projective: Vec<G::Projective> = starts
        .par_iter()
        .flat_map_iter(|start| {
            let mut acc = *start;
            (0..row).map(move |_| {
                let m = acc;
                acc = G::add(&acc, start);
                m
            })
        })
        .collect();
    // blstrs has no batched normalisation (group's default converts one by one); one
    // inversion each is fine spread over the cores for ~45K points.
    projective.par_iter().map(G::to_affine).collect()
}

/// Affine points as 32-byte elements, the unit the pinned staging moves: 3 per G1 point,
/// 6 per G2 point.
fn point_limbs<G: MsmGroup>(points: &[G::Affine]) -> &[Limbs] {
    assert_eq!(std::mem::size_of::<G::Affine>(), G::AFFINE_U64 * 8);
    assert_eq!(
        std::mem::align_of::<G::Affine>(),
        std::mem::align_of::<Limbs>()
    );
    // SAFETY: blstrs' affine points are #[repr(transparent)] over blst's #[repr(C)] affine
    // structs of u64 limbs (size and alignment checked above); AFFINE_U64 is 12 or 24.
    unsafe {
        std::slice::from_raw_parts(
            points.as_ptr() as *const Limbs,
            points.len() * G::AFFINE_U64 / 4,
        )
    }
}

fn point_limbs_mut<G: MsmGroup>(points: &mut [G::Affine]) -> &mut [Limbs] {
    assert_eq!(std::mem::size_of::<G::Affine>(), G::AFFINE_U64 * 8);
    assert_eq!(
        std::mem::align_of::<G::Affine>(),
        std::mem::align_of::<Limbs>()
    );
    // SAFETY: as in point_limbs; every bit pattern of the limbs is a valid blst affine
    // struct, and the kernel writes reduced coordinates (or 0, 0 for infinity).
    unsafe {
        std::slice::from_raw_parts_mut(
            points.as_mut_ptr() as *mut Limbs,
            points.len() * G::AFFINE_U64 / 4,
        )
    }
}

fn scalar_limbs(scalars: &[Scalar]) -> &[Limbs] {
    const _: () = assert!(std::mem::size_of::<Scalar>() == std::mem::size_of::<Limbs>());
    const _: () = assert!(std::mem::align_of::<Scalar>() == std::mem::align_of::<Limbs>());
    // SAFETY: Scalar is #[repr(transparent)] over blst_fr, a #[repr(C)] [u64; 4].
    unsafe { std::slice::from_raw_parts(scalars.as_ptr() as *const Limbs, scalars.len()) }
}

/// One chunk's device buffers: its scalars, its points (projective X, Y, then affine) and
/// the kernel's ZZ, ZZZ scratch; `done` fires when the chunk's kernel has finished.
struct Slot {
    scalars: DeviceScalars,
    points: DeviceScalars,
    scratch: DeviceScalars,
    done: CudaEvent,
}

impl Slot {
    fn alloc<G: MsmGroup>(dev: &GpuDevice, chunk: usize) -> Result<Self> {
        let elems = chunk * G::AFFINE_U64 / 4;
        Ok(Slot {
            scalars: DeviceScalars::alloc(dev, chunk)?,
            points: DeviceScalars::alloc(dev, elems)?,
            scratch: DeviceScalars::alloc(dev, elems)?,
            done: dev.ctx().new_event(None)?,
        })
    }
}

/// Device bytes a chunk of `chunk` points takes in one slot.
fn slot_bytes<G: MsmGroup>(chunk: usize) -> usize {
    chunk * (ELEM_BYTES + 2 * G::AFFINE_U64 * 8)
}

fn times<G: TableGroup>(
    dev: &GpuDevice,
    base: &G::Affine,
    scalars: &[Scalar],
    out: &mut [G::Affine],
    shape: Shape,
) -> Result<()> {
    if !crate::KERNELS_BUILT {
        return Err(GpuError::NoKernels);
    }
    if scalars.len() != out.len() {
        return Err(GpuError::Invalid(format!(
            "fixed-base {}: {} scalars but room for {} points",
            G::NAME,
            scalars.len(),
            out.len()
        )));
    }
    let c = shape.window;
    if !(2..=MAX_WINDOW).contains(&c) {
        return Err(GpuError::Invalid(format!(
            "fixed-base window of {c} bits (2 ..= {MAX_WINDOW})"
        )));
    }
    if shape.chunk == 0 {
        return Err(GpuError::Invalid("fixed-base chunk of 0 points".into()));
    }
    let n = scalars.len();
    if n == 0 {
        return Ok(());
    }
    dev.ctx().bind_to_thread()?;
    let kernel = dev
        .module("fixed_base")?
        .load_function(&format!("fixed_base_times_{}", G::NAME))?;

    // Two slots in at most half of what is free now; the kernel indexes a chunk in 32 bits.
    let room = dev.free_mem()? / 2 / (2 * slot_bytes::<G>(1));
    let chunk = shape.chunk.min(n).min(room).min(u32::MAX as usize);
    if chunk == 0 {
        return Err(GpuError::Invalid(format!(
            "fixed-base {}: too little free device memory",
            G::NAME
        )));
    }

    let table = window_table::<G>(base, c);
    let table = DeviceScalars::upload(dev, point_limbs::<G>(&table))?;
    let job = Job {
        dev,
        kernel: &kernel,
        table: table.device_ptr(),
        c,
        nwin: windows(c) as u32,
    };
    // The second slot is only used from the second chunk on.
    let second = if n > chunk { chunk } else { 1 };
    let slots = [
        Slot::alloc::<G>(dev, chunk)?,
        Slot::alloc::<G>(dev, second)?,
    ];
    job.run::<G>(&slots, scalars, out, chunk)
}

/// One call's fixed parts: the kernel and the uploaded table.
struct Job<'a> {
    dev: &'a GpuDevice,
    kernel: &'a CudaFunction,
    table: u64,
    c: u32,
    nwin: u32,
}

impl Job<'_> {
    /// Chunk k: stage its scalars into slot k % 2, queue its kernel, then bring chunk k-1's
    /// points back while chunk k runs. Slot k % 2 is free again by then: chunk k-2's points
    /// were copied out (after its kernel) in the previous round.
    fn run<G: MsmGroup>(
        &self,
        slots: &[Slot; 2],
        scalars: &[Scalar],
        out: &mut [G::Affine],
        chunk: usize,
    ) -> Result<()> {
        let dev = self.dev;
        let mut staging = dev.ntt_state();
        let mut pending: Option<(&Slot, &mut [G::Affine])> = None;
        for (k, (sc, dst)) in scalars.chunks(chunk).zip(out.chunks_mut(chunk)).enumerate() {
            let slot = &slots[k % 2];
            staging.upload_staged(dev, scalar_limbs(sc), slot.scalars.device_ptr())?;
            self.launch(slot, sc.len())?;
            if let Some((prev, prev_out)) = pending.take() {
                let limbs = point_limbs_mut::<G>(prev_out);
                staging.download_staged_after(dev, &prev.done, prev.points.device_ptr(), limbs)?;
            }
            pending = Some((slot, dst));
        }
        if let Some((prev, prev_out)) = pending {
            let limbs = point_limbs_mut::<G>(prev_out);
            staging.download_staged_after(dev, &prev.done, prev.points.device_ptr(), limbs)?;
        }
        dev.synchronize()
    }

    fn launch(&self, slot: &Slot, n: usize) -> Result<()> {
        let stream = self.dev.stream();
        let threads = n.div_ceil(BATCH) as u32;
        let cfg = LaunchConfig {
            grid_dim: (threads.div_ceil(BLOCK), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let (sc, pts, scratch) = (
            slot.scalars.device_ptr(),
            slot.points.device_ptr(),
            slot.scratch.device_ptr(),
        );
        let n = n as u32;
        // SAFETY: the buffers hold `n` scalars, points and scratch pairs (slot sized for a
        // whole chunk), the table windows(c) rows of 2^(c-1) points; argument types match
        // fixed_base_times_{g1,g2} in cuda/fixed_base.cu.
        unsafe {
            stream
                .launch_builder(self.kernel)
                .arg(&sc)
                .arg(&n)
                .arg(&self.table)
                .arg(&self.c)
                .arg(&self.nwin)
                .arg(&pts)
                .arg(&scratch)
                .launch(cfg)?;
        }
        slot.done.record(stream)?;
        Ok(())
    }
}

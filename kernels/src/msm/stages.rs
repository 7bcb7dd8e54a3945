//! Steps 2 and 3 of an MSM chunk (sort, then bucket sums) by stages of bucket sets, so that
//! sorting one stage runs beside the accumulation of the one before.
//!
//! The two phases are bound by different parts of the GPU: the sort (count, scan, partition,
//! place) by atomics and memory, the accumulation by the integer multiplier (kernels/NOTES.md,
//! "The 2^27 step"). The accumulation kernel leaves room on every SM (two blocks of 128
//! threads at 184 registers), so the next stage's sort kernels, launched on the device's
//! side stream, fill it. In the 2^27 H MSM (folded bases, three sets of 2^23 buckets) the
//! sort was ~200 of ~940 ms profiled, all of it in series with the accumulation before this.
//!
//! Each stage has its own counters, offsets and sorted list (bucket numbers counted from the
//! stage's first), so no buffer is shared between the streams: cudarc's event tracking then
//! orders each stage's accumulation after its sort, and frees a stage's lists only after the
//! accumulation that read them, with no false dependency between stages.

use super::*;

/// Stages per MSM of at least [`STAGE_MIN_POINTS`] scalars on the device. Each stage's
/// partition pass reads every scalar again (~1 ms per 2^27 scalars), and the first stage's
/// sort is not hidden.
const STAGES: u32 = 3;

/// Below this, one stage (the sort, then the accumulation, in series): a small MSM's kernels
/// do not fill the device, and each stage adds a wait for its offsets. Measured on the H200
/// (kernels/NOTES.md, "The 2^27 step, part 6"): three stages took the 2^27 H MSM from 842 to
/// 809 ms, but a real 2 KiB PoRep partition's device step from 74.5 to 93 ms.
const STAGE_MIN_POINTS: usize = 1 << 24;

/// The bucket sets of each stage for an MSM of `n` points: `sets` split into at most
/// `CUZK_MSM_STAGES` (which overrides the size rule; 1 runs every MSM in series) ranges,
/// consecutive and as even as possible.
pub(super) fn stage_sets(sets: u32, n: usize) -> Vec<std::ops::Range<u32>> {
    let want = std::env::var("CUZK_MSM_STAGES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(if n >= STAGE_MIN_POINTS { STAGES } else { 1 });
    split_sets(sets, want)
}

fn split_sets(sets: u32, want: u32) -> Vec<std::ops::Range<u32>> {
    let stages = want.clamp(1, sets.max(1));
    (0..stages)
        .map(|i| (i * sets / stages)..((i + 1) * sets / stages))
        .collect()
}

/// Work an MSM lets in at its pause points: between the stages of a staged MSM and between
/// chunks. The daemon runs a waiting WinningPoSt there instead of behind the whole 2^27 H
/// MSM (~0.8 s; one stage is ~0.27 s).
pub trait LetIn {
    /// Whether anything waits. Asked at every pause point, so it must be cheap.
    fn waiting(&mut self) -> bool;
    /// Runs what waits. Everything the MSM queued so far has finished by then, so the time
    /// is the let-in work's own; what it queues on the device's streams runs before the MSM
    /// goes on, and it must leave the MSM's buffers (its own allocations) alone.
    fn run(&mut self);
}

/// Lets nothing in: the MSM runs through.
pub struct NoLetIn;

impl LetIn for NoLetIn {
    fn waiting(&mut self) -> bool {
        false
    }
    fn run(&mut self) {}
}

/// A pause point: when something waits, the MSM's streams (the compute stream, and `side`
/// where a staged sort runs beside it) finish this MSM's queued work, then `let_in` runs
/// (on the same thread and context).
pub(super) fn pause(
    dev: &GpuDevice,
    side: Option<&Arc<CudaStream>>,
    let_in: &mut dyn LetIn,
) -> Result<()> {
    if let_in.waiting() {
        if let Some(side) = side {
            side.synchronize()?;
        }
        dev.stream().synchronize()?;
        let_in.run();
        dev.ctx().bind_to_thread()?;
    }
    Ok(())
}

/// Makes `stream` wait for everything queued on `side` so far, when dropped.
pub(super) struct JoinOnDrop<'a> {
    pub(super) stream: &'a Arc<CudaStream>,
    pub(super) side: &'a Arc<CudaStream>,
}

impl Drop for JoinOnDrop<'_> {
    fn drop(&mut self) {
        // An error here leaves the context broken, and the next call reports it.
        let _ = self.stream.join(self.side);
    }
}

/// One stage's sort: `offsets` (its buckets + 1 entries, from 0), the sorted point entries.
pub(super) struct SortedStage {
    sets: std::ops::Range<u32>,
    offsets: CudaSlice<u32>,
    sorted: CudaSlice<u32>,
    entries: u32,
}

/// Where a stage's counts come from.
pub(super) enum Counts {
    /// Already counted (as the host's scalars were uploaded), for these sets.
    Given(CudaSlice<u32>),
    /// Counted here, in passes of the sets whose counters fit in L2; `convert` makes the
    /// scalars canonical in the first pass (the first stage's).
    Count { convert: bool },
}

/// One launch of the digit count (cuda/msm/sort.cuh): the digits of `scalars` that fall in
/// bucket sets `sets`, into counters numbered from `set_base`'s first bucket.
pub(super) struct CountDigits {
    pub(super) scalars: std::ops::Range<u32>,
    /// Makes the scalars canonical first (their first pass).
    pub(super) convert: bool,
    pub(super) sets: std::ops::Range<u32>,
    pub(super) set_base: u32,
}

pub(super) fn count_digits(
    stream: &Arc<CudaStream>,
    k: &Kernels,
    sc: u64,
    lay: &MsmLayout,
    digits: &CountDigits,
    counts: &mut CudaSlice<u32>,
) -> Result<()> {
    let count = digits.scalars.end - digits.scalars.start;
    unsafe {
        stream
            .launch_builder(&k.count)
            .arg(&sc)
            .arg(lay)
            .arg(&digits.scalars.start)
            .arg(&count)
            .arg(counts)
            .arg(&u32::from(digits.convert))
            .arg(&digits.sets.start)
            .arg(&digits.sets.end)
            .arg(&digits.set_base)
            .launch(grid(count, 256))?;
    }
    Ok(())
}

/// Sorts the entries of bucket sets `sets` on `stream`: counts (unless given), offsets, the
/// two passes of cuda/msm/sort.cuh. Returns once the offsets' total is known; the partition
/// and place passes are queued.
pub(super) fn sort_stage(
    dev: &GpuDevice,
    k: &Kernels,
    stream: &Arc<CudaStream>,
    sc: u64,
    lay: &MsmLayout,
    sets: std::ops::Range<u32>,
    counts: Counts,
) -> Result<SortedStage> {
    let m = lay.buckets_per_window;
    let nbs = (sets.end - sets.start) * m;
    let mut counts = match counts {
        Counts::Given(c) => c,
        Counts::Count { mut convert } => {
            let mut counts = stream.alloc_zeros::<u32>(nbs as usize)?;
            let per_pass = sets_per_count_pass(dev, m)?;
            for lo in sets.clone().step_by(per_pass as usize) {
                let hi = (lo + per_pass).min(sets.end);
                let digits = CountDigits {
                    scalars: 0..lay.n,
                    convert: std::mem::take(&mut convert),
                    sets: lo..hi,
                    set_base: sets.start,
                };
                count_digits(stream, k, sc, lay, &digits, &mut counts)?;
            }
            counts
        }
    };
    let offsets = exclusive_scan(stream, k, &counts, nbs)?;
    let entries = stream.clone_dtoh(&offsets.slice(nbs as usize..))?[0];
    let (pshift, nparts) = partitions(nbs);
    let mut part_fill = stream.alloc_zeros::<u32>(nparts as usize)?;
    let mut staged = unsafe { stream.alloc::<u64>(entries.max(1) as usize) }?;
    let mut sorted = unsafe { stream.alloc::<u32>(entries.max(1) as usize) }?;
    unsafe {
        stream
            .launch_builder(&k.partition)
            .arg(&sc)
            .arg(lay)
            .arg(&pshift)
            .arg(&nparts)
            .arg(&offsets)
            .arg(&mut part_fill)
            .arg(&mut staged)
            .arg(&sets.start)
            .arg(&sets.end)
            .launch(grid(lay.n, PART_BLOCK))?;
        stream
            .launch_builder(&k.place)
            .arg(&staged)
            .arg(&entries)
            .arg(&offsets)
            .arg(&mut counts)
            .arg(&mut sorted)
            .launch(grid(entries, 256))?;
    }
    Ok(SortedStage {
        sets,
        offsets,
        sorted,
        entries,
    })
}

/// Bucket sums of one sorted stage into its sets' part of `buckets`, on `stream`: equal
/// segments of the sorted list, then the heads joined (buckets.rs).
pub(super) fn accumulate_stage<G: MsmGroup>(
    dev: &GpuDevice,
    k: &Kernels,
    stream: &Arc<CudaStream>,
    points: u64,
    m: u32,
    stage: &SortedStage,
    buckets: &mut CudaSlice<u64>,
) -> Result<()> {
    let entries = stage.entries;
    if entries == 0 {
        return Ok(());
    }
    let xyzz = G::XYZZ_U64;
    let nbs = (stage.sets.end - stage.sets.start) * m;
    let first = stage.sets.start as usize * m as usize * xyzz;
    let mut view = buckets.slice_mut(first..first + nbs as usize * xyzz);
    let segments = accumulate_segments(dev, k, entries)?;
    let seg_len = entries.div_ceil(segments).max(1);
    let segments = entries.div_ceil(seg_len).max(1);
    let mut head_sum = unsafe { stream.alloc::<u64>(segments as usize * xyzz) }?;
    let mut head_bucket = stream.alloc_zeros::<u32>(segments as usize)?;
    unsafe {
        stream
            .launch_builder(&k.accumulate)
            .arg(&points)
            .arg(&stage.sorted)
            .arg(&stage.offsets)
            .arg(&nbs)
            .arg(&entries)
            .arg(&seg_len)
            .arg(&mut view)
            .arg(&mut head_sum)
            .arg(&mut head_bucket)
            .launch(grid(segments, ACCUMULATE_BLOCK))?;
    }
    join_heads::<G>(stream, k, head_bucket, head_sum, segments, &mut view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_cover_every_set_once_in_order() {
        for sets in [1u32, 2, 3, 4, 11, 13] {
            for want in [0u32, 1, 2, 3, 5, 20] {
                let st = split_sets(sets, want);
                assert_eq!(st.len() as u32, want.clamp(1, sets));
                assert_eq!(st[0].start, 0);
                assert_eq!(st.last().unwrap().end, sets);
                for w in st.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                assert!(st.iter().all(|r| r.end > r.start), "{sets} {want} {st:?}");
            }
        }
    }
}

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

/// The bucket sets of each stage for an MSM of `n` points under `plan`: its sets split into
/// at most `CUZK_MSM_STAGES` (which overrides the size rule; 1 runs every MSM in series)
/// ranges, consecutive and as even as possible, the one of fewest windows first.
///
/// Why that order: only the first stage's sort runs with nothing beside it; every later
/// stage is sorted on the side stream while the stage before accumulates. At 2^27 with
/// bases folded 4 times, the 11 windows make sets of 4, 4 and 3: starting with the set of 3
/// leaves 3/11 of the entries' sort exposed instead of 4/11 (~16 of ~64 ms, part 12's
/// profile), and its accumulation (~164 ms) still outlasts the next stage's sort.
pub(super) fn stage_sets(plan: &Plan, n: usize) -> Vec<std::ops::Range<u32>> {
    let want = std::env::var("CUZK_MSM_STAGES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(if n >= STAGE_MIN_POINTS { STAGES } else { 1 });
    let stages = split_sets(plan.sets, want);
    // CUZK_MSM_STAGE_ORDER=sets keeps the sets' order (the A/B of this rule on the device).
    if std::env::var("CUZK_MSM_STAGE_ORDER").is_ok_and(|v| v == "sets") {
        return stages;
    }
    fewest_windows_first(stages, plan)
}

fn split_sets(sets: u32, want: u32) -> Vec<std::ops::Range<u32>> {
    let stages = want.clamp(1, sets.max(1));
    (0..stages)
        .map(|i| (i * sets / stages)..((i + 1) * sets / stages))
        .collect()
}

/// `stages` with the one of fewest windows moved to the front (the first such; the others
/// keep their order). The bucket sets are independent until the reduction, which reads them
/// all after the last stage, so any order sums the same buckets.
fn fewest_windows_first(
    mut stages: Vec<std::ops::Range<u32>>,
    plan: &Plan,
) -> Vec<std::ops::Range<u32>> {
    let windows = |r: &std::ops::Range<u32>| {
        (r.end * plan.fold).min(plan.nwin) - (r.start * plan.fold).min(plan.nwin)
    };
    if let Some(i) = (0..stages.len()).min_by_key(|&i| windows(&stages[i])) {
        stages[..=i].rotate_right(1);
    }
    stages
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

/// A stage counted and scanned (queued on its stream), its entries not yet placed.
pub(super) struct CountedStage {
    sets: std::ops::Range<u32>,
    counts: CudaSlice<u32>,
    offsets: CudaSlice<u32>,
    nbs: u32,
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
    let counted = count_stage(dev, k, stream, sc, lay, sets, counts)?;
    place_stage(k, stream, sc, lay, counted)
}

/// The first half of [`sort_stage`]: the counts (unless given) and their scan, queued on
/// `stream`; nothing waits for them.
pub(super) fn count_stage(
    dev: &GpuDevice,
    k: &Kernels,
    stream: &Arc<CudaStream>,
    sc: u64,
    lay: &MsmLayout,
    sets: std::ops::Range<u32>,
    counts: Counts,
) -> Result<CountedStage> {
    let m = lay.buckets_per_window;
    let nbs = (sets.end - sets.start) * m;
    let counts = match counts {
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
    Ok(CountedStage {
        sets,
        counts,
        offsets,
        nbs,
    })
}

/// The second half of [`sort_stage`]: waits for the offsets' total (the size of the lists),
/// then queues the partition and place passes on `stream`.
pub(super) fn place_stage(
    k: &Kernels,
    stream: &Arc<CudaStream>,
    sc: u64,
    lay: &MsmLayout,
    counted: CountedStage,
) -> Result<SortedStage> {
    let CountedStage {
        sets,
        mut counts,
        offsets,
        nbs,
    } = counted;
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

/// The stages of an MSM over device scalars `sc`, each sorted one ahead of the
/// accumulation on the side stream (on the compute stream where there is one stage). A
/// stage's count may be queued early ([`SortAhead::count_next`]) and placed later
/// ([`SortAhead::place_counted`]): a begun MSM (ahead.rs) sorts its first stage that way
/// while the caller's other MSMs run. Dropped, it makes the compute stream wait for the
/// side stream, which may still read `sc` (the caller frees it after this).
pub(super) struct SortAhead {
    stream: Arc<CudaStream>,
    side: Arc<CudaStream>,
    sc: u64,
    lay: MsmLayout,
    stages: Vec<std::ops::Range<u32>>,
    /// The next stage to count.
    next: usize,
    counted: Option<CountedStage>,
    sorted: Option<SortedStage>,
    convert: bool,
}

impl SortAhead {
    /// Nothing queued yet; the side stream waits for what the compute stream has queued
    /// (the scalars' copy).
    pub(super) fn new(
        dev: &GpuDevice,
        sc: u64,
        lay: MsmLayout,
        stages: Vec<std::ops::Range<u32>>,
    ) -> Result<Self> {
        let stream = dev.stream().clone();
        let side = if stages.len() > 1 {
            dev.side_stream().clone()
        } else {
            stream.clone()
        };
        side.join(&stream)?;
        Ok(SortAhead {
            stream,
            side,
            sc,
            lay,
            stages,
            next: 0,
            counted: None,
            sorted: None,
            convert: true,
        })
    }

    pub(super) fn side(&self) -> &Arc<CudaStream> {
        &self.side
    }

    /// Queues the next stage's count and scan, unless one is counted or sorted already or
    /// every stage has been.
    pub(super) fn count_next(&mut self, dev: &GpuDevice, k: &Kernels) -> Result<()> {
        if self.counted.is_some() || self.sorted.is_some() {
            return Ok(());
        }
        let Some(sets) = self.stages.get(self.next).cloned() else {
            return Ok(());
        };
        let counts = Counts::Count {
            convert: std::mem::take(&mut self.convert),
        };
        let stage = count_stage(dev, k, &self.side, self.sc, &self.lay, sets, counts)?;
        self.counted = Some(stage);
        self.next += 1;
        Ok(())
    }

    /// Queues the counted stage's partition and place (the host waits for its scan).
    pub(super) fn place_counted(&mut self, k: &Kernels) -> Result<()> {
        if let Some(counted) = self.counted.take() {
            self.sorted = Some(place_stage(k, &self.side, self.sc, &self.lay, counted)?);
        }
        Ok(())
    }

    /// The next stage, sorted (its passes queued; cudarc's events order the accumulation
    /// that reads it after them), or None after the last.
    pub(super) fn next_sorted(
        &mut self,
        dev: &GpuDevice,
        k: &Kernels,
    ) -> Result<Option<SortedStage>> {
        self.count_next(dev, k)?;
        self.place_counted(k)?;
        Ok(self.sorted.take())
    }
}

impl Drop for SortAhead {
    fn drop(&mut self) {
        // An error here leaves the context broken, and the next call reports it.
        let _ = self.stream.join(&self.side);
    }
}

/// Steps 2 and 3 over every stage of `ahead`: each stage's accumulation on the compute
/// stream is queued before the next stage's sort, whose scan the host waits for, so the
/// compute stream is never left idle meanwhile; a pause point after each stage but the
/// last (the next stage is sorted by then, and the later stages keep their overlap).
#[allow(clippy::too_many_arguments)]
pub(super) fn accumulate_stages<G: MsmGroup>(
    dev: &GpuDevice,
    k: &Kernels,
    ahead: &mut SortAhead,
    points: u64,
    m: u32,
    buckets: &mut CudaSlice<u64>,
    let_in: &mut dyn LetIn,
    prof: &mut Profile,
) -> Result<()> {
    let stream = dev.stream().clone();
    let mut stage = ahead.next_sorted(dev, k)?;
    let mut i = 0;
    while let Some(sorted) = stage {
        accumulate_stage::<G>(dev, k, &stream, points, m, &sorted, buckets)?;
        stage = ahead.next_sorted(dev, k)?;
        if stage.is_some() {
            let side = ahead.side().clone();
            pause(dev, Some(&side), let_in)?;
        }
        prof.mark(&format!("stage{i}"))?;
        i += 1;
    }
    Ok(())
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

    fn plan(nwin: u32, fold: u32) -> Plan {
        Plan {
            c: 256u32.div_ceil(nwin),
            nwin,
            fold,
            sets: nwin.div_ceil(fold),
        }
    }

    #[test]
    fn the_stage_of_fewest_windows_comes_first() {
        // H at 2^27: 11 windows folded 4 times, sets of 4, 4 and 3 windows.
        let st = fewest_windows_first(split_sets(3, 3), &plan(11, 4));
        assert_eq!(st, vec![2..3, 0..1, 1..2]);
        // Two stages over those sets: 0..1 (4 windows) and 1..3 (7) stay as they are.
        let st = fewest_windows_first(split_sets(3, 2), &plan(11, 4));
        assert_eq!(st, vec![0..1, 1..3]);
        // Every set equal (unfolded): the order is unchanged.
        let st = fewest_windows_first(split_sets(16, 3), &plan(16, 1));
        assert_eq!(st, split_sets(16, 3));
        // Whatever the order, every set once.
        for (nwin, fold) in [(11, 4), (13, 4), (16, 1), (10, 3), (1, 1)] {
            let p = plan(nwin, fold);
            for want in 1..6 {
                let mut got: Vec<u32> = fewest_windows_first(split_sets(p.sets, want), &p)
                    .into_iter()
                    .flatten()
                    .collect();
                got.sort_unstable();
                assert_eq!(got, (0..p.sets).collect::<Vec<_>>(), "{nwin} {fold} {want}");
            }
        }
    }
}

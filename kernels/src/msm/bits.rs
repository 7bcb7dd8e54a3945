//! Bit-heavy MSMs as batch additions (cuda/msm/bits.cuh).
//!
//! Filecoin witnesses are mostly bits: a real PoRep partition's aux assignment is 51% zero,
//! 47% one and 1.6% wider values, and the L and A MSMs take it whole (~130M scalars each at
//! 32 GiB). For such a vector sum_i s_i P_i is the plain sum of the P_i whose scalar is one
//! plus an MSM over the few others, while Pippenger spends its whole digit count, sort and
//! bucket reduction on it (the recorded PoRep witness at G1 2^22: 16.5 ms against 38.3 ms
//! uniform, most of it work fixed per MSM: the join and the reduction over 2^20 buckets).
//! Per MSM:
//! 1. a strided sample of the scalars decides whether the split pays ([`pays`]);
//! 2. every scalar is classified (zero, one, other) into two bitmaps, counted per 32-scalar
//!    word, and one exclusive scan of the counts ranks the ones and the others;
//! 3. compaction: the ones' indices in order; the others' scalars and bases gathered into
//!    temporary device vectors (the others are ~2%, so gathering costs little and lets them
//!    run the ordinary Pippenger over plain bases, with a window sized for their count);
//! 4. the ones' bases summed with mixed XYZZ additions into one partial sum per resident
//!    thread, reduced by the bucket reduction's sum_level kernels to one point;
//! 5. result = that sum + Pippenger over the others.
//!
//! Resident bases are read in place (copy 0 of a folded vector is the plain vector); host
//! bases are uploaded in pieces of [`HOST_PIECE`] points, each compacted and summed before
//! the next. Exact throughout: group additions only, every special case of the formulas
//! handled (infinity, equal points, opposite points).

use ff::Field;

use super::*;

/// Whether an MSM splits its 0/1 scalars off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitsSplit {
    /// Pippenger over every scalar.
    Off,
    /// Split where the cost estimate ([`pays`]) says it is cheaper.
    Auto,
    /// Split whatever the scalars (tests; measuring the estimate's threshold).
    Always,
}

impl BitsSplit {
    /// `CUZK_MSM_BITS`: `0` off (A/B measurements), `always` forced, anything else (or
    /// unset) automatic.
    pub fn from_env() -> Self {
        match std::env::var("CUZK_MSM_BITS").as_deref() {
            Ok("0") | Ok("off") => BitsSplit::Off,
            Ok("always") => BitsSplit::Always,
            _ => BitsSplit::Auto,
        }
    }
}

/// How many scalars of a vector are zero, one and anything else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitCounts {
    pub zeros: u64,
    pub ones: u64,
    pub others: u64,
}

/// The classification of a device scalar vector (the kernels the split starts with).
pub fn count_bits(dev: &GpuDevice, scalars: &DeviceScalars) -> Result<BitCounts> {
    let n = scalars.len();
    if n == 0 {
        return Ok(BitCounts::default());
    }
    check_len(n)?;
    dev.ctx().bind_to_thread()?;
    let module = dev.module("msm")?;
    let (k, bk) = (
        Kernels::load::<G1>(&module)?,
        BitsKernels::load::<G1>(&module)?,
    );
    let mut maps = Bitmaps::new(dev.stream(), n)?;
    maps.classify(dev.stream(), &bk, scalars.device_ptr(), 0, n)?;
    Ok(maps.rank(dev.stream(), &k)?.counts)
}

/// What [`try_split`] did: the whole MSM, or nothing (Pippenger runs it), handing back the
/// scalars it uploaded to classify, if any.
pub(super) enum Outcome<P> {
    Done(P),
    Pippenger(Option<DeviceScalars>),
}

/// The split where `mode` (and, for [`BitsSplit::Auto`], the cost estimate) wants it;
/// otherwise, or where the device lacks the memory, leaves the MSM to Pippenger.
pub(super) fn try_split<G: MsmGroup>(
    dev: &GpuDevice,
    bases: &Bases<'_, G>,
    scalars: Scalars<'_>,
    mode: BitsSplit,
) -> Result<Outcome<G::Projective>> {
    let n = scalars.len();
    if mode == BitsSplit::Off || n == 0 || check_len(n).is_err() {
        return Ok(Outcome::Pippenger(None));
    }
    let module = dev.module("msm")?;
    let bk = BitsKernels::load::<G>(&module)?;
    if mode == BitsSplit::Auto {
        let (ones, others) = match scalars {
            Scalars::Host(h) => sample_host(h),
            Scalars::Device(d) => sample_device(dev, &bk, d.device_ptr(), n)?,
        };
        if !pays(Plan::new(bases, n), n, ones, others) {
            return Ok(Outcome::Pippenger(None));
        }
    }
    let k = Kernels::load::<G>(&module)?;
    match split::<G>(dev, &k, &bk, bases, scalars, mode) {
        // Memory taken since we looked: Pippenger plans its chunks from what is left.
        Err(GpuError::Driver(e)) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
            dev.stream().synchronize()?;
            Ok(Outcome::Pippenger(None))
        }
        r => r,
    }
}

/// Scalars counts and indices are u32 on the device, with room for a grid's overshoot.
const MAX_SPLIT_N: usize = 1 << 31;

fn check_len(n: usize) -> Result<()> {
    if n > MAX_SPLIT_N {
        return Err(GpuError::Invalid(format!("bit split: {n} scalars")));
    }
    Ok(())
}

/// Scalars a decision samples (evenly spaced): enough to tell 2% others from 50%.
const SAMPLES: usize = 4096;
/// Host bases are uploaded and summed this many points at a time (96 MiB in G1, 192 in G2).
/// A multiple of 32, so that pieces begin at bitmap words.
pub(super) const HOST_PIECE: usize = 1 << 20;
/// Threads per block of the bits kernels (the sum kernels' __launch_bounds__).
const SUM_BLOCK: u32 = 128;

/// The Montgomery form of one (R mod r) as the kernels compare it: blstrs' own limbs.
#[repr(C)]
#[derive(Clone, Copy)]
struct FrWords([u64; 4]);

// SAFETY: four u64, laid out as the kernels' `fr_words`.
unsafe impl DeviceRepr for FrWords {}

fn montgomery_one() -> FrWords {
    FrWords(scalar_limbs(&[Scalar::ONE])[0])
}

struct BitsKernels {
    sample: CudaFunction,
    classify: CudaFunction,
    compact: CudaFunction,
    sum: CudaFunction,
}

impl BitsKernels {
    fn load<G: MsmGroup>(module: &Arc<CudaModule>) -> Result<Self> {
        Ok(BitsKernels {
            sample: module.load_function("msm_bits_sample")?,
            classify: module.load_function("msm_bits_classify")?,
            compact: module.load_function("msm_bits_compact")?,
            sum: module.load_function(&format!("msm_bits_sum_{}", G::NAME))?,
        })
    }
}

// ---------------------------------------------------------------------------------------
// The decision

/// (ones, others) estimated for the whole vector from SAMPLES evenly spaced scalars.
fn sample_host(s: &[Scalar]) -> (u64, u64) {
    let one = montgomery_one().0;
    let limbs = scalar_limbs(s);
    let (n, k) = (s.len(), SAMPLES.min(s.len()));
    let (mut ones, mut others) = (0u64, 0u64);
    for j in 0..k {
        let l = limbs[j * n / k];
        if l == one {
            ones += 1;
        } else if l != [0; 4] {
            others += 1;
        }
    }
    (scale(ones, n, k), scale(others, n, k))
}

fn sample_device(dev: &GpuDevice, bk: &BitsKernels, sc: u64, n: usize) -> Result<(u64, u64)> {
    let stream = dev.stream();
    let k = SAMPLES.min(n);
    let mut counts = stream.alloc_zeros::<u32>(2)?;
    let (n32, k32, one) = (n as u32, k as u32, montgomery_one());
    // SAFETY: the kernel reads scalars below n of the caller's vector, writes two counters.
    unsafe {
        stream
            .launch_builder(&bk.sample)
            .arg(&sc)
            .arg(&n32)
            .arg(&k32)
            .arg(&one)
            .arg(&mut counts)
            .launch(grid(k32, 256))?;
    }
    let c = stream.clone_dtoh(&counts)?;
    Ok((scale(c[0] as u64, n, k), scale(c[1] as u64, n, k)))
}

fn scale(count: u64, n: usize, k: usize) -> u64 {
    count * n as u64 / k.max(1) as u64
}

/// The estimate below is in mixed additions at full throughput (G1: ~0.44 ns each at 2^24
/// on the H200, G2 ~3x that; the terms scale alike in both groups).
///
/// Per sorted entry of Pippenger (its count, partition and place, and its bucket addition):
/// at G1 2^24 (uniform) partition and place took 16.3 ms beside 88.6 ms of bucket
/// additions, and the count ~15 ms more where no upload hides it.
const ENTRY_COST: f64 = 1.3;
/// The same for a scalar one, whose entries all go to one bucket: their place pass (an
/// atomic each on that bucket's counter) took about as long as their additions on the real
/// PoRep partition (1.0 against 0.96 ms for L's 1.8M entries).
const ONE_ENTRY_COST: f64 = 2.0;
/// Per kernel launch in a chain of dependent ones, or per synchronisation with the host:
/// ~18 us (G1; the tail of a small launch and the gap to the next). A Pippenger run ends in
/// dozens of them (the join's levels, the reduction's levels and each level's sums of acc),
/// whatever its size, which is what dominated the bit-heavy MSMs measured (NOTES.md "MSM on
/// real witnesses": 2.7M scalars, ~1 ms of bucket additions in a 12.5 ms MSM).
const LAUNCH_COST: f64 = 40_000.0;
/// Per scalar, the split's own passes (classification and compaction read ~70 bytes, a few
/// hundredths of an addition at the device's bandwidth; rounded well up).
const PASS_COST: f64 = 0.1;
/// Per other scalar: its scalar and base gathered (one random read of a point).
const GATHER_COST: f64 = 0.2;
/// Partial sums of the batch addition, about one per resident thread (132 SMs x 2 blocks
/// of 128 in G1), joined by a tree of sum_level launches.
const PARTIALS: u64 = 1 << 15;
/// Host synchronisations of a Pippenger run (the entry count, the result) and of the split
/// (the sample, the two totals, the ones' sum).
const PIPPENGER_SYNCS: u32 = 2;
const SPLIT_SYNCS: u32 = 4;
/// Upper bound on the join's input (its heads, one per accumulation segment: two waves).
const JOIN_SEGMENTS: u64 = 1 << 16;

/// Levels of 4-to-1 reduction for `len` points.
fn levels(len: u64) -> u32 {
    let mut l = 0;
    let mut left = len;
    while left > 1 {
        left = left.div_ceil(REDUCE_L as u64);
        l += 1;
    }
    l
}

/// Pippenger's work for `ones` scalars equal to one (one digit each) and `others`
/// full-width ones (a digit per window): sorted entries, buckets reduced, and the chain of
/// launches at its end (the join's levels; per reduction level, its own launch and the
/// levels that sum its acc).
fn pippenger_cost(plan: Plan, ones: u64, others: u64) -> f64 {
    let entries = ones + others * plan.nwin as u64;
    // The planners' own weights per bucket (window_bits, plan_fold), so that the estimate
    // agrees with the plan they chose for n.
    let bucket_cost = if plan.fold > 1 {
        REDUCE_COST
    } else {
        PLAIN_BUCKET_COST
    };
    let lv = levels(1 << (plan.c - 1));
    let launches = levels(entries.min(JOIN_SEGMENTS)) + lv * (lv + 1) / 2 + PIPPENGER_SYNCS;
    ones as f64 * ONE_ENTRY_COST
        + (others * plan.nwin as u64) as f64 * ENTRY_COST
        + plan.buckets() as f64 * bucket_cost as f64
        + launches as f64 * LAUNCH_COST
}

/// Whether the split is estimated cheaper than Pippenger (`whole`: its plan for the
/// vector's bases) over all n scalars. The split pays a pass over every scalar, one addition
/// per one, a tree over the partial sums and Pippenger over the others with plain bases; it
/// saves the ones' sort, the chain of launches at the end of a Pippenger run sized for n,
/// and it sizes the others' window for their own count. Against folded bases it gives up
/// their fewer windows for the others, so these must be a smaller share to pay. Where the
/// estimate starts to split, for vectors of half zeros, half ones and a share of full-width
/// others (the test below prints them): with plain bases up to 34-38% others at 2^20-2^22
/// and 55% at 2^24-2^27 (11% at 2^16, where fixed costs dominate both ways); with folded
/// bases 15-23%. Filecoin's PoRep and SnapDeals aux vectors (1.6-4.6% others) split, the
/// PoSt ones (99% full-width) do not. `gpu_msm --bits-split` measures the real crossover.
pub(super) fn pays(whole: Plan, n: usize, ones: u64, others: u64) -> bool {
    let before = pippenger_cost(whole, ones, others);
    let mut split = n as f64 * PASS_COST + ones as f64 + SPLIT_SYNCS as f64 * LAUNCH_COST;
    if ones > 0 {
        // Partial sums joined in a tree: one full addition (~2 mixed) each, a launch a level.
        let partials = ones.min(PARTIALS);
        split += 2.0 * partials as f64 + levels(partials) as f64 * LAUNCH_COST;
    }
    if others > 0 {
        split +=
            others as f64 * GATHER_COST + pippenger_cost(Plan::plain(others as usize), 0, others);
    }
    split < before
}

// ---------------------------------------------------------------------------------------
// Classification

/// The two bitmaps of a vector and their per-word counts: counts[w] the ones of word w,
/// counts[words + w] its others.
struct Bitmaps {
    n: usize,
    words: u32,
    ones: CudaSlice<u32>,
    others: CudaSlice<u32>,
    counts: CudaSlice<u32>,
}

/// After the scan: ranks[w] = ones before word w (w <= words), ranks[words + w] - ranks[words]
/// = others before it.
struct Ranked {
    maps: Bitmaps,
    ranks: CudaSlice<u32>,
    counts: BitCounts,
}

impl Bitmaps {
    fn new(stream: &Arc<CudaStream>, n: usize) -> Result<Self> {
        let words = n.div_ceil(32);
        Ok(Bitmaps {
            n,
            words: words as u32,
            ones: unsafe { stream.alloc::<u32>(words) }?,
            others: unsafe { stream.alloc::<u32>(words) }?,
            counts: unsafe { stream.alloc::<u32>(2 * words) }?,
        })
    }

    /// Device bytes for n scalars' bitmaps, counts and ranks.
    fn bytes(n: usize) -> usize {
        n.div_ceil(32) * 4 * 6 + 4096
    }

    /// Classifies scalars [first, first + count) of the vector at `sc`; `first` is a multiple
    /// of 32 (a word boundary).
    fn classify(
        &mut self,
        stream: &Arc<CudaStream>,
        bk: &BitsKernels,
        sc: u64,
        first: usize,
        count: usize,
    ) -> Result<()> {
        assert!(first.is_multiple_of(32) && first + count <= self.n);
        let (first32, end) = (first as u32, (first + count) as u32);
        let one = montgomery_one();
        // SAFETY: the kernel reads scalars [first, end) and writes the words they fall in.
        unsafe {
            stream
                .launch_builder(&bk.classify)
                .arg(&sc)
                .arg(&first32)
                .arg(&end)
                .arg(&self.words)
                .arg(&one)
                .arg(&mut self.ones)
                .arg(&mut self.others)
                .arg(&mut self.counts)
                .launch(grid(count as u32, 256))?;
        }
        Ok(())
    }

    fn rank(self, stream: &Arc<CudaStream>, k: &Kernels) -> Result<Ranked> {
        let w = self.words as usize;
        let ranks = exclusive_scan(stream, k, &self.counts, 2 * self.words)?;
        let ones = stream.clone_dtoh(&ranks.slice(w..w + 1))?[0] as u64;
        let nonzero = stream.clone_dtoh(&ranks.slice(2 * w..2 * w + 1))?[0] as u64;
        let counts = BitCounts {
            zeros: self.n as u64 - nonzero,
            ones,
            others: nonzero - ones,
        };
        Ok(Ranked {
            maps: self,
            ranks,
            counts,
        })
    }
}

// ---------------------------------------------------------------------------------------
// The split

fn split<G: MsmGroup>(
    dev: &GpuDevice,
    k: &Kernels,
    bk: &BitsKernels,
    bases: &Bases<'_, G>,
    scalars: Scalars<'_>,
    mode: BitsSplit,
) -> Result<Outcome<G::Projective>> {
    let stream = dev.stream();
    let n = scalars.len();
    let host_scalars = matches!(scalars, Scalars::Host(_));
    let upload_bytes = if host_scalars { n * ELEM_BYTES } else { 0 };
    if Bitmaps::bytes(n) + upload_bytes + MEMORY_MARGIN > dev.free_mem()? {
        return Ok(Outcome::Pippenger(None));
    }
    let mut prof = Profile::new(stream, format!("{} bits n={n}", G::NAME));

    // 1. Scalars on the device and classified (host scalars as each slice of the upload
    // lands, as Pippenger counts its digits).
    let mut maps = Bitmaps::new(stream, n)?;
    let mut uploaded = None;
    let sc = match scalars {
        Scalars::Device(d) => {
            maps.classify(stream, bk, d.device_ptr(), 0, n)?;
            d.device_ptr()
        }
        Scalars::Host(h) => {
            let buf = DeviceScalars::alloc(dev, n)?;
            // The copy stream is ordered after the allocation (`DeviceScalars::alloc`).
            let ptr = buf.device_ptr();
            dev.ntt_state()
                .upload_staged_each(dev, scalar_limbs(h), ptr, |first, count| {
                    maps.classify(stream, bk, ptr, first, count)
                })?;
            uploaded = Some(buf);
            ptr
        }
    };
    let ranked = maps.rank(stream, k)?;
    let BitCounts { ones, others, .. } = ranked.counts;
    prof.mark(&format!("classify ones={ones} others={others}"))?;
    if ones == 0 && others == 0 {
        return Ok(Outcome::Done(G::identity()));
    }
    if mode == BitsSplit::Auto && !pays(Plan::new(bases, n), n, ones, others) {
        return Ok(Outcome::Pippenger(uploaded));
    }

    // 2. Compaction and the ones' partial sums (per piece of host bases).
    let point_bytes = G::AFFINE_U64 * 8;
    let threads = sum_threads(dev, bk)?.min(ones.max(1) as u32);
    let partials_len = if threads <= 1 {
        1
    } else {
        threads.next_multiple_of(REDUCE_L)
    };
    let piece_bytes = match bases {
        Bases::Host(_) => HOST_PIECE.min(n) * point_bytes,
        Bases::Device(_) => 0,
    };
    let need = ones as usize * 4
        + others as usize * (ELEM_BYTES + point_bytes)
        + 3 * partials_len as usize * G::XYZZ_U64 * 8
        + piece_bytes;
    if need + MEMORY_MARGIN > dev.free_mem()? {
        return Ok(Outcome::Pippenger(uploaded));
    }
    let mut lists = Lists::<G> {
        ones_idx: unsafe { stream.alloc::<u32>(ones.max(1) as usize) }?,
        others_scalars: DeviceScalars::alloc(dev, others as usize)?,
        others_points: DeviceScalars::alloc(dev, others as usize * G::AFFINE_U64 / 4)?,
        partials: stream.alloc_zeros::<u64>(partials_len as usize * G::XYZZ_U64)?,
        threads,
        _group: PhantomData,
    };
    match bases {
        Bases::Device(d) => lists.piece(stream, bk, &ranked, sc, 0, n, d.buf.device_ptr())?,
        Bases::Host(p) => {
            let buf = DeviceScalars::alloc(dev, HOST_PIECE.min(n) * G::AFFINE_U64 / 4)?;
            for a in (0..n).step_by(HOST_PIECE) {
                let b = (a + HOST_PIECE).min(n);
                // The piece's buffer is still read by the last piece's kernels.
                dev.copy_stream().join(stream)?;
                dev.ntt_state()
                    .upload_staged(dev, point_elems::<G>(&p[a..b]), buf.device_ptr())?;
                lists.piece(stream, bk, &ranked, sc, a, b, buf.device_ptr())?;
            }
        }
    }
    drop((ranked, uploaded));
    prof.mark("compact+sum")?;

    // 3. The partial sums to one point, then the others through Pippenger.
    let Lists {
        others_scalars,
        others_points,
        partials,
        ..
    } = lists;
    let ones_sum = if ones == 0 {
        G::identity()
    } else {
        let sum = sum_windows::<G>(stream, k, partials, partials_len, 1)?;
        let mut jac = unsafe { stream.alloc::<u64>(G::XYZZ_U64 * 3 / 4) }?;
        let one_point = 1u32;
        // SAFETY: one XYZZ point in, one Jacobian point out.
        unsafe {
            stream
                .launch_builder(&k.to_jacobian)
                .arg(&sum)
                .arg(&mut jac)
                .arg(&one_point)
                .launch(grid(1, 32))?;
        }
        G::from_jacobian(&stream.clone_dtoh(&jac)?)
    };
    prof.mark("ones")?;
    if others == 0 {
        return Ok(Outcome::Done(ones_sum));
    }
    let gathered = DeviceBases::<G>::from_buffer(others_points, others as usize);
    let rest = pippenger::<G>(
        dev,
        Bases::Device(&gathered),
        Scalars::Device(&others_scalars),
        // The others of a bit-heavy vector are a few percent of it: too short to pause in.
        &mut NoLetIn,
    )?;
    prof.mark("others")?;
    Ok(Outcome::Done(G::add(&ones_sum, &rest)))
}

/// Threads for the batch addition: one full wave of resident threads (grid-stride, so every
/// thread has the same work and a second wave would only add partial sums).
fn sum_threads(dev: &GpuDevice, bk: &BitsKernels) -> Result<u32> {
    let sms = dev
        .ctx()
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
        as u32;
    let blocks = bk
        .sum
        .occupancy_max_active_blocks_per_multiprocessor(SUM_BLOCK, 0, None)?
        .max(1);
    Ok(sms.max(1) * blocks * SUM_BLOCK)
}

/// The split's outputs: the ones' indices, the others gathered, the ones' partial sums.
struct Lists<G: MsmGroup> {
    ones_idx: CudaSlice<u32>,
    others_scalars: DeviceScalars,
    others_points: DeviceScalars,
    partials: CudaSlice<u64>,
    threads: u32,
    _group: PhantomData<G>,
}

impl<G: MsmGroup> Lists<G> {
    /// Scalars [a, b) (a a multiple of 32) against the bases at `points` (point a first):
    /// compacted, then their ones' bases added into the partial sums.
    #[allow(clippy::too_many_arguments)]
    fn piece(
        &mut self,
        stream: &Arc<CudaStream>,
        bk: &BitsKernels,
        r: &Ranked,
        sc: u64,
        a: usize,
        b: usize,
        points: u64,
    ) -> Result<()> {
        debug_assert!(a.is_multiple_of(32) && a < b && b <= r.maps.n);
        let (first, end, words) = (a as u32, b as u32, r.maps.words);
        let point_u4 = (G::AFFINE_U64 / 2) as u32;
        let (os, op) = (
            self.others_scalars.device_ptr(),
            self.others_points.device_ptr(),
        );
        // Ones of this piece: ranks at its first word and one past its last (b is a multiple
        // of 32 or n, whose rank entry is the total).
        let (word_lo, word_hi) = (first / 32, end.div_ceil(32));
        // SAFETY: compaction reads scalars and bases of [a, b) and writes ranks below the
        // counts the lists were sized by; the sum reads those ones and the piece's bases.
        unsafe {
            stream
                .launch_builder(&bk.compact)
                .arg(&sc)
                .arg(&first)
                .arg(&end)
                .arg(&words)
                .arg(&r.maps.ones)
                .arg(&r.maps.others)
                .arg(&r.ranks)
                .arg(&points)
                .arg(&point_u4)
                .arg(&mut self.ones_idx)
                .arg(&os)
                .arg(&op)
                .launch(grid(end - first, 256))?;
            if r.counts.ones > 0 {
                stream
                    .launch_builder(&bk.sum)
                    .arg(&points)
                    .arg(&first)
                    .arg(&self.ones_idx)
                    .arg(&r.ranks)
                    .arg(&word_lo)
                    .arg(&word_hi)
                    .arg(&self.threads)
                    .arg(&mut self.partials)
                    .launch(grid(self.threads, SUM_BLOCK))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest share of others (the rest half zeros, half ones) at which the split is
    /// estimated to pay, in steps of 1%.
    fn threshold(plan: Plan, n: usize) -> f64 {
        (0..=100)
            .map(|p| p as f64 / 100.0)
            .filter(|&s| {
                let others = (n as f64 * s) as u64;
                let ones = (n as u64 - others) / 2;
                pays(plan, n, ones, others)
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn split_pays_on_witnesses_not_on_uniform_scalars() {
        for log in [16u32, 20, 22, 24, 26, 27] {
            let n = 1usize << log;
            let plain = Plan::plain(n);
            let mut plans = vec![("plain", plain)];
            if let Some(f) = plan_fold::<G1>(n, usize::MAX) {
                plans.push(("folded", Plan::folded(f)));
            }
            for (what, plan) in plans {
                let t = threshold(plan, n);
                println!(
                    "2^{log} {what} (c={}): split up to {:.0}% others",
                    plan.c,
                    t * 100.0
                );
                // PoRep and SnapDeals aux vectors (1.6% others, B's 4.6%) split ...
                for (zeros, ones, others) in [(0.512, 0.471, 0.016), (0.478, 0.476, 0.046)] {
                    let f = |x: f64| (n as f64 * x) as u64;
                    let _ = zeros;
                    assert!(pays(plan, n, f(ones), f(others)), "2^{log} {what}");
                }
                // ... uniform and PoSt-like (99% wide) vectors do not.
                assert!(!pays(plan, n, 0, n as u64), "2^{log} {what} uniform");
                assert!(!pays(plan, n, n as u64 / 200, n as u64 * 99 / 100));
                // All bits always split.
                assert!(pays(plan, n, n as u64 / 2, 0), "2^{log} {what} bits");
            }
        }
    }

    #[test]
    fn levels_count_four_to_one_steps() {
        assert_eq!(levels(1), 0);
        assert_eq!(levels(4), 1);
        assert_eq!(levels(5), 2);
        assert_eq!(levels(1 << 19), 10);
    }
}

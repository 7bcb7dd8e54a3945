//! An MSM begun ahead of the caller's next work. The 2^27 partition's H MSM sorted its first
//! stage (~64 ms) with nothing beside it (kernels/NOTES.md part 12): begun right after the H
//! polynomial, that sort runs on the side stream while the caller's L, A and B MSMs run on
//! the compute stream, and the MSM itself runs last.
//!
//! [`BegunMsm::begin`] copies the scalars; [`BegunMsm::advance`], called at the caller's
//! phase ends, queues the first stage's count and scan at one call and its partition and
//! place at a later one (the host waits for the scan there, done by then);
//! [`BegunMsm::finish`] queues what no call did, accumulates every stage, reduces and
//! combines, as the MSM run whole would. Where the MSM would not run in stages as one chunk
//! of resident bases (small, short of free memory, host bases), all of it runs at `finish`.
//! The bit split is not tried ahead: a begun MSM is for full-width scalars (the H
//! polynomial), which it never pays for. Off by default: every begun MSM runs whole at
//! `finish` (and the prover finishes it at once) unless `CUZK_MSM_AHEAD=1`.

use super::*;

/// An MSM over device scalars, begun (see the module's notes).
pub struct BegunMsm<G: MsmGroup> {
    state: State,
    _group: PhantomData<G>,
}

/// At which of the caller's `advance` calls the first stage's count and scan (0: at
/// `begin`) and its partition and place are queued: `CUZK_MSM_AHEAD_AT=count,place`. The
/// prover calls `advance` after L, A and B_G1, and what is queued runs beside the MSMs that
/// follow, slowing them: on the H200 at 2^27 (kernels/NOTES.md part 13) the sort took ~50 ms
/// off H wherever it ran, and the step gained most with the count beside B_G1 and the place
/// beside B_G2 (2,3, the default: -30 ms against the MSM run whole) than beside L and A
/// (0,1: -18 ms) or L and B_G2 (0,3: -8 ms).
#[derive(Clone, Copy)]
struct AheadAt {
    count: u32,
    place: u32,
}

impl AheadAt {
    fn from_env() -> Self {
        let parsed = std::env::var("CUZK_MSM_AHEAD_AT").ok().and_then(|v| {
            let (c, p) = v.split_once(',')?;
            Some((c.trim().parse().ok()?, p.trim().parse().ok()?))
        });
        match parsed {
            Some((count, place)) if count < place => AheadAt { count, place },
            _ => AheadAt { count: 2, place: 3 },
        }
    }
}

enum State {
    /// The first stage sorting ahead.
    Ahead(Box<Ahead>),
    /// Runs whole at `finish`.
    Whole,
}

/// `ahead` comes before `copy`: dropped first, it makes the compute stream wait for the
/// side stream, which reads the copy.
struct Ahead {
    ahead: SortAhead,
    copy: DeviceScalars,
    plan: Plan,
    lay: MsmLayout,
    /// The bases' length and fold at `begin`: `finish` must be given the same ones.
    bases: (usize, Option<Fold>),
    /// `advance` calls so far, and those that queue the first stage's count and its place.
    advances: u32,
    at: AheadAt,
}

impl<G: MsmGroup> BegunMsm<G> {
    /// Begins sum_i scalars[i] * bases[i]. The scalars are copied (the caller's vector stays
    /// as it is, and is read again only if the MSM falls back to running whole).
    pub fn begin(dev: &GpuDevice, bases: Bases<'_, G>, scalars: &DeviceScalars) -> Result<Self> {
        let whole = BegunMsm {
            state: State::Whole,
            _group: PhantomData,
        };
        let n = scalars.len();
        // Off unless CUZK_MSM_AHEAD=1 (kernels/NOTES.md part 13: H sorted ahead is ~40 ms
        // shorter, but the next step's upload and evaluation measured ~70 ms longer).
        let on = std::env::var("CUZK_MSM_AHEAD").is_ok_and(|v| v == "1");
        let Bases::Device(d) = bases else {
            return Ok(whole);
        };
        // An empty or misshapen MSM runs whole: `finish` reports the shape.
        if !on || n == 0 || d.len < n {
            return Ok(whole);
        }
        let plan = Plan::new(&bases, n);
        let stages = stage_sets(&plan, n);
        if stages.len() < 2 {
            return Ok(whole);
        }
        dev.ctx().bind_to_thread()?;
        if plan_chunk::<G>(&bases, n, dev.free_mem()?) != Some(n) {
            return Ok(whole);
        }
        let k = Kernels::load::<G>(&dev.module("msm")?)?;
        let lay = MsmLayout {
            n: n as u32,
            c: plan.c,
            nwin: plan.nwin,
            buckets_per_window: buckets_per_window(plan.c),
            fold: plan.fold,
            stride: d.len as u32,
        };
        let copy = DeviceScalars::alloc(dev, n)?;
        // SAFETY: both allocations hold n elements.
        unsafe {
            result::memcpy_dtod_async(
                copy.device_ptr(),
                scalars.device_ptr(),
                n * ELEM_BYTES,
                dev.stream().cu_stream(),
            )
        }?;
        let mut ahead = SortAhead::new(dev, copy.device_ptr(), lay, stages)?;
        let at = AheadAt::from_env();
        if at.count == 0 {
            ahead.count_next(dev, &k)?;
        }
        Ok(BegunMsm {
            state: State::Ahead(Box::new(Ahead {
                ahead,
                copy,
                plan,
                lay,
                bases: (d.len, d.fold),
                advances: 0,
                at,
            })),
            _group: PhantomData,
        })
    }

    /// Whether the first stage is sorting ahead (false: the MSM runs whole at `finish`).
    pub fn is_ahead(&self) -> bool {
        matches!(self.state, State::Ahead(_))
    }

    /// Called at each of the caller's phase ends: queues the first stage's count and scan,
    /// then at a later call its partition and place (`CUZK_MSM_AHEAD_AT`); `finish` queues
    /// what no call did.
    pub fn advance(&mut self, dev: &GpuDevice) -> Result<()> {
        let State::Ahead(a) = &mut self.state else {
            return Ok(());
        };
        a.advances += 1;
        if a.advances != a.at.count && a.advances != a.at.place {
            return Ok(());
        }
        dev.ctx().bind_to_thread()?;
        let k = Kernels::load::<G>(&dev.module("msm")?)?;
        if a.advances == a.at.count {
            a.ahead.count_next(dev, &k)?;
        } else {
            a.ahead.place_counted(&k)?;
        }
        Ok(())
    }

    /// The MSM's result, `let_in`'s work let in at its pause points. `bases` and `scalars`
    /// must be those given to `begin`.
    pub fn finish(
        self,
        dev: &GpuDevice,
        bases: Bases<'_, G>,
        scalars: &DeviceScalars,
        let_in: &mut dyn LetIn,
    ) -> Result<G::Projective> {
        let whole = |let_in: &mut dyn LetIn| {
            msm_letting_in::<G>(
                dev,
                bases,
                Scalars::Device(scalars),
                BitsSplit::from_env(),
                let_in,
            )
        };
        let State::Ahead(a) = self.state else {
            return whole(let_in);
        };
        let Ahead {
            ahead,
            copy,
            plan,
            lay,
            bases: begun,
            ..
        } = *a;
        let d = match bases {
            Bases::Device(d) if (d.len, d.fold) == begun && scalars.len() == lay.n as usize => d,
            _ => {
                return Err(GpuError::Invalid(
                    "msm finished over other bases than begun".into(),
                ))
            }
        };
        match run_ahead::<G>(dev, ahead, copy, plan, lay, d, let_in) {
            // Memory taken since `begin` planned: the whole MSM plans afresh, in chunks.
            Err(GpuError::Driver(e)) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                dev.stream().synchronize()?;
                whole(let_in)
            }
            r => r,
        }
    }
}

/// Steps 2 to 5 of a begun MSM: as `msm_chunk`'s, with the first stage sorted already.
fn run_ahead<G: MsmGroup>(
    dev: &GpuDevice,
    mut ahead: SortAhead,
    copy: DeviceScalars,
    plan: Plan,
    lay: MsmLayout,
    bases: &DeviceBases<G>,
    let_in: &mut dyn LetIn,
) -> Result<G::Projective> {
    dev.ctx().bind_to_thread()?;
    let k = Kernels::load::<G>(&dev.module("msm")?)?;
    let stream = dev.stream();
    let m = lay.buckets_per_window;
    let mut prof = Profile::new(
        stream,
        format!(
            "{} n={} c={} fold={} sets={} begun",
            G::NAME,
            lay.n,
            plan.c,
            plan.fold,
            plan.sets
        ),
    );
    let mut buckets = stream.alloc_zeros::<u64>(plan.buckets() as usize * G::XYZZ_U64)?;
    let points = bases.buf.device_ptr();
    accumulate_stages::<G>(
        dev,
        &k,
        &mut ahead,
        points,
        m,
        &mut buckets,
        let_in,
        &mut prof,
    )?;
    drop(ahead);
    drop(copy);
    reduce_and_combine::<G>(stream, &k, buckets, plan, m, &mut prof)
}

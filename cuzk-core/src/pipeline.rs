//! The way of a partition, top to bottom: a synthesis worker takes it from the gate, its room
//! reserved (gate.rs: most urgent first, room for urgent work kept), and synthesizes its
//! circuit; a device worker proves it under the device's mutex (letting a waiting
//! WinningPoSt in at the pause points of a longer step: `UrgentBetween`); a finalize
//! worker assembles and verifies it; the last partition completes the job. Finalizing on its
//! own workers keeps the device worker on the device: done inline, the public inputs and
//! verification (~43 ms a partition at 2^18) left each H200 idle 38% of a sweep.
//!
//! A panic in a job's circuit or prover fails that job, never the worker or the daemon. A
//! device failure (a backend error or a panic in the prover) sends the partition back for
//! synthesis once more, to be proven on the CPU backend.
//!
//! A job cancelled (or failed) while one of its partitions is in a stage loses that partition
//! at the stage's end: a synthesized partition is dropped instead of queued for a device, and
//! a device result is discarded unfinalized.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::BackendError;
use crate::between::Between;
use crate::finalize::finalize_partition;
use crate::footprint::{partition_bytes_bound, partition_peak_bytes, HostCopies, PartitionShape};
use crate::gate::{Lane, Take};
use crate::gpu::Device;
use crate::host_release;
use crate::job::{Error, Priority, Result};
use crate::metrics::Phase;
use crate::prove::{prove_with_key_between, ProveError};
use crate::queue::Popped;
use crate::shared::Shared;
use crate::synth::Synthesized;
use crate::work::{guarded, panic_message, InFlight, PartitionWork, ProvenWork, SynthesizedWork};

/// A synthesis worker: takes the most urgent partition whose room is free (gate.rs), with
/// that room already reserved, so that it never waits holding a finished partition.
pub fn synthesis_worker(shared: Arc<Shared>, worker: usize, lane: Lane) {
    while let Some(next) = shared.gate.take(lane, |w| partition_bytes(&shared, w)) {
        let (PartitionWork { job, index, on_cpu }, mut ticket) = match next {
            Take::Admitted(work, ticket) => (work, ticket),
            Take::Prepare(work) => {
                // Quick: a set not resident is loaded off this worker (loading.rs).
                crate::loading::prepare(&shared, work);
                continue;
            }
        };
        if !job.is_live() {
            continue;
        }
        let in_flight = InFlight::new(&shared.in_flight);
        job.mark_started();
        let tl = &shared.timeline;
        tl.emit(
            "SYNTH_START",
            &job.id,
            &[("partition", &index), ("worker", &worker)],
        );
        let t = Instant::now();
        let result = guarded("synthesis", || {
            if let Some(hook) = &shared.test_hooks.synthesis_panic {
                hook(&job);
            }
            if !shared.test_hooks.synthesis_delay.is_zero() {
                std::thread::sleep(shared.test_hooks.synthesis_delay);
            }
            let options = synthesis_options(&shared, on_cpu);
            let synthesize = || {
                let mut synth = crate::synth::with_options(options, || job.task.synthesize(index))?;
                // Bound for a device that unpacks: the aux goes packed (packed.rs), and the
                // partition waits for its step holding ~2.5% of a PoRep witness's bytes.
                let t = Instant::now();
                let packed = synth.deferred.is_some() && packs_aux(&shared) && synth.pack_aux();
                if packed {
                    pin_packed(&shared, &mut synth);
                }
                Ok((synth, packed.then(|| t.elapsed())))
            };
            // Urgent work on a pool of its own, not behind the load's tasks (pools.rs).
            if crate::budget::is_urgent(job.priority) {
                crate::pools::urgent().install(synthesize)
            } else {
                synthesize()
            }
        });
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let (synth, packed) = match result {
            Ok(synth) => synth,
            Err(e) => {
                shared.fail(&job, e);
                continue;
            }
        };
        job.add_synthesis(t.elapsed());
        shared
            .metrics
            .partition_phase(job.kind, Phase::Synthesis, t.elapsed());
        tl.emit(
            "SYNTH_END",
            &job.id,
            &[
                ("partition", &index),
                ("worker", &worker),
                ("ms", &format!("{ms:.1}")),
                (
                    "pack_ms",
                    &packed.map_or("-".into(), |d| format!("{:.1}", d.as_secs_f64() * 1e3)),
                ),
            ],
        );
        // Cancelled (or failed) while synthesizing: free the partition now.
        if !job.is_live() {
            continue;
        }
        // Its real shape, on the backends that may prove it (footprint.rs).
        let shape = PartitionShape::of(&synth);
        ticket.resize(peak_on_backends(&shared, on_cpu, |copies| {
            partition_peak_bytes(&shape, copies)
        }));
        let work = SynthesizedWork {
            job: job.clone(),
            index,
            synth,
            in_flight,
            ticket,
        };
        if on_cpu {
            // The retry of a failed device: proven here, so no GPU worker waits on the CPU.
            let fallback = shared.cpu_fallback.clone();
            if let Err(e) = prove_partition(&shared, &fallback, work, Lock::TakeAlone) {
                shared.fail(&job, e.into_error());
            }
            continue;
        }
        tl.emit("GPU_QUEUE", &job.id, &[("partition", &index)]);
        // Unbounded and never closed: the room was reserved at the gate, and shutdown lets
        // synthesized partitions be proven.
        shared.prove_queue.push_all([(job.priority, job.seq, work)]);
        if !job.is_live() {
            // Cancelled just now: its removal may have missed us.
            shared.prove_queue.remove_where(|w| w.job.id == job.id);
        }
    }
}

/// How a synthesis worker synthesizes a partition: the configured path, and a, b, c left to
/// the device step when every backend that may prove it evaluates them itself (a CPU retry
/// never defers: the CPU backend would evaluate them under the device lock).
fn synthesis_options(shared: &Shared, on_cpu: bool) -> crate::synth::SynthesisOptions {
    let devices = &shared.devices;
    crate::synth::SynthesisOptions {
        path: shared.config.synthesis,
        defer_abc: shared.config.abc_on_device
            && !on_cpu
            && !devices.is_empty()
            && devices.iter().all(|d| d.backend.evaluates_matrices()),
    }
}

/// Whether every device that may prove a partition takes its aux packed (`CUZK_PACK_AUX=0`
/// sends it plain, for measuring the difference).
fn packs_aux(shared: &Shared) -> bool {
    static OFF: std::sync::LazyLock<bool> =
        std::sync::LazyLock::new(|| std::env::var("CUZK_PACK_AUX").is_ok_and(|v| v == "0"));
    !*OFF && !shared.devices.is_empty() && shared.devices.iter().all(|d| d.backend.takes_packed())
}

/// A packed aux moved into page-locked memory a device lends (pinned_pool.rs), so that its
/// upload in the device step is a DMA alone. Any device's buffer serves: they are pinned for
/// every device. By default only for a packed aux of at least [`PIN_AUX_MIN_ELEMENTS`]: on the
/// H200 at 2^27, once the pool kept the step's memory (kernels/NOTES.md, part 17), the upload
/// fell from 21-34 to 3.7 ms p50 and the step from 1,236-1,241 to 1,203 ms; small partitions
/// keep the heap path they were measured with. `CUZK_PIN_AUX=1` pins every size, `=0` none.
fn pin_packed(shared: &Shared, synth: &mut Synthesized) {
    static MODE: std::sync::LazyLock<Option<bool>> =
        std::sync::LazyLock::new(|| match std::env::var("CUZK_PIN_AUX").as_deref() {
            Ok("1") => Some(true),
            Ok("0") => Some(false),
            _ => None,
        });
    let Some(p) = synth
        .packed_aux
        .as_mut()
        .filter(|p| pins_aux(*MODE, p.pinned_len()))
    else {
        return;
    };
    let lent = shared
        .devices
        .first()
        .and_then(|d| d.backend.pinned_buffer(p.pinned_len()));
    if let Some(buf) = lent {
        p.pin(buf);
    }
}

/// The smallest packed aux (in elements, 32 MiB) pinned by default: a 2^27 partition's is
/// ~4.4M elements (~140 MB); a 2 KiB one's a few thousand.
const PIN_AUX_MIN_ELEMENTS: usize = 1 << 20;

/// Whether a packed aux of `len` elements goes to pinned memory: `forced` is the
/// environment's choice, else by size.
fn pins_aux(forced: Option<bool>, len: usize) -> bool {
    forced.unwrap_or(len >= PIN_AUX_MIN_ELEMENTS)
}

/// The bytes partition `work` will hold at most, from synthesis to the end of its device step,
/// bounded from its parameters; None while they are not loaded (the gate then hands it out to
/// be prepared).
fn partition_bytes(shared: &Shared, work: &PartitionWork) -> Option<u64> {
    let srs = work
        .job
        .loaded_srs()
        .filter(|srs| !host_release::needs_reload(srs, work.on_cpu))?;
    Some(peak_on_backends(shared, work.on_cpu, |copies| {
        partition_bytes_bound(&srs.key(), copies)
    }))
}

/// The largest of `bytes` over the backends that may prove a partition: the CPU fallback for
/// a retry (`on_cpu`), else any of the engine's devices.
fn peak_on_backends(shared: &Shared, on_cpu: bool, bytes: impl Fn(HostCopies) -> u64) -> u64 {
    if on_cpu {
        return bytes(shared.cpu_fallback.backend.host_copies());
    }
    shared
        .devices
        .iter()
        .map(|d| bytes(d.backend.host_copies()))
        .max()
        .unwrap_or(0)
}

pub fn device_worker(shared: Arc<Shared>, device: Arc<Device>) {
    let idle = Duration::from_millis(shared.config.idle_release_ms);
    loop {
        let work = if idle.is_zero() {
            shared.prove_queue.pop()
        } else {
            match shared.prove_queue.pop_within(idle) {
                Popped::Item(work) => Some(work),
                Popped::Closed => None,
                // A device that waits for synthesis is not idle: its next step needs the
                // same memory (a real 32 GiB partition's synthesis takes longer than a step,
                // so the device waits between most steps). Wait again.
                Popped::TimedOut if engine_has_partitions(&shared) => continue,
                // Once per idle spell: the next pop waits for work however long it takes.
                Popped::TimedOut => {
                    release_idle_memory(&shared, &device);
                    shared.prove_queue.pop()
                }
            }
        };
        let Some(work) = work else { return };
        serve(&shared, &device, work, Lock::Take);
    }
}

/// Whether any partition is waiting for synthesis, in it, or past it and not yet done.
fn engine_has_partitions(shared: &Shared) -> bool {
    shared.in_flight.load(Ordering::SeqCst) > 0 || !shared.gate.is_empty()
}

/// The device's idle memory back to the driver, under its lock (memory operations are
/// device-global). TIMELINE (job `-`): DEVICE_IDLE_RELEASE `device`, `bytes` released,
/// `kept` (what the device still holds for this process: the resident parameters and the
/// pool's keep), whenever the backend holds device memory.
fn release_idle_memory(shared: &Shared, device: &Device) {
    let _exclusive = device.lock();
    match device.backend.release_idle_memory() {
        // Nothing held (a device that never stepped): nothing to say.
        Ok(Some(r)) if r.released == 0 && r.kept == 0 => {}
        Ok(Some(r)) => {
            shared.timeline.emit(
                "DEVICE_IDLE_RELEASE",
                "-",
                &[
                    ("device", &device.label),
                    ("bytes", &r.released),
                    ("kept", &r.kept),
                ],
            );
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(device = %device.label, error = %e, "idle memory release failed"),
    }
}

/// Whether a device step takes the device's lock, or runs under the lock of a step it was
/// let into at a pause point.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lock {
    /// Take it; let waiting CRITICAL partitions in at the step's pause points.
    Take,
    /// Take it; nothing in between (a CPU retry: the waiting work is for the devices).
    TakeAlone,
    /// Held by the step this one was let into.
    Held,
}

/// CRITICAL partitions of at most this domain may run at the pause points of another step:
/// a WinningPoSt (2 KiB to 64 GiB sectors alike) is far below it, and its device memory
/// (~1 GB at 2^22) fits beside a 2^27 step's. Larger work waits for the step's end.
const BETWEEN_PHASES_MAX_DOMAIN: usize = 1 << 24;

/// Whether `work` (of priority `p`) may run at the pause points of a lower-priority step.
fn lets_in(p: Priority, work: &SynthesizedWork) -> bool {
    p == Priority::Critical
        && work.synth.num_constraints().next_power_of_two() <= BETWEEN_PHASES_MAX_DOMAIN
}

/// The pause points of a device step (prove.rs, `prove_with_key_between`): between its
/// phases and between the stages of its H MSM, the CRITICAL partitions waiting for a device
/// run under the step's lock. A WinningPoSt behind a 2^27 PoRep step then waits for the
/// part of a phase in progress (the H polynomial or a third of H's MSM, ~0.3 s) instead of
/// the whole step (~1.4 s).
struct UrgentBetween<'a> {
    shared: &'a Shared,
    device: &'a Device,
    /// Whether the step took the lock for itself: a CPU retry's and a let-in step's pause
    /// points do nothing (the test hook's phase delay included).
    own_lock: bool,
    /// Whether work is let in: into a step of lower priority than CRITICAL (nothing would
    /// overtake one anyway), when the configuration allows.
    open: bool,
    /// What was let in so far (its own GPU_START..GPU_END lie inside this step's).
    let_in: Duration,
}

impl<'a> UrgentBetween<'a> {
    fn new(shared: &'a Shared, device: &'a Device, running: Priority, lock: Lock) -> Self {
        let own_lock = lock == Lock::Take;
        UrgentBetween {
            shared,
            device,
            own_lock,
            open: own_lock && running < Priority::Critical && shared.config.urgent_between_phases,
            let_in: Duration::ZERO,
        }
    }
}

impl Between for UrgentBetween<'_> {
    fn waiting(&self) -> bool {
        self.open && self.shared.prove_queue.head_is(lets_in)
    }

    fn run(&mut self) -> Duration {
        if !self.own_lock {
            return Duration::ZERO;
        }
        self.shared.test_hooks.pause_between_phases();
        if !self.open {
            return Duration::ZERO;
        }
        let t = Instant::now();
        let mut ran = false;
        while let Some(work) = self.shared.prove_queue.pop_if(lets_in) {
            serve(self.shared, self.device, work, Lock::Held);
            ran = true;
        }
        let d = if ran { t.elapsed() } else { Duration::ZERO };
        self.let_in += d;
        d
    }
}

/// One synthesized partition on `device`: proven, or on a device fault sent back for a CPU
/// retry, or its job failed.
fn serve(shared: &Shared, device: &Device, work: SynthesizedWork, lock: Lock) {
    if !work.job.is_live() {
        return;
    }
    let (job, index) = (work.job.clone(), work.index);
    match prove_partition(shared, device, work, lock) {
        Ok(()) => {}
        Err(Failure::Device(e)) => {
            // Retried once, on the CPU (a retry that fails there fails the job): a
            // device fault must not cost a WindowPoSt.
            let msg = e.to_string();
            tracing::warn!(job = %job.id, partition = index, device = %device.label,
                error = %msg, "device failed; retrying the partition on the CPU");
            shared.timeline.emit(
                "DEVICE_RETRY",
                &job.id,
                &[
                    ("partition", &index),
                    ("device", &device.label.as_str()),
                    ("error", &msg),
                ],
            );
            let retry = PartitionWork {
                job: job.clone(),
                index,
                on_cpu: true,
            };
            job.needs_host_params();
            // Refused only when shutting down: the journal then keeps the job for the
            // next start; without one it is lost, and says so.
            if !shared.gate.push_all([(job.priority, job.seq, retry)]) && !shared.has_journal() {
                shared.fail(&job, Error::ShuttingDown);
            }
        }
        Err(e) => shared.fail(&job, e.into_error()),
    }
}

/// Why a partition's proving failed: its device (worth a retry elsewhere) or the job.
enum Failure {
    Device(Error),
    Job(Error),
}

impl Failure {
    fn into_error(self) -> Error {
        match self {
            Failure::Device(e) | Failure::Job(e) => e,
        }
    }
}

/// Prove one synthesized partition on `device`, finalize it, and complete the job when it
/// was the last.
fn prove_partition(
    shared: &Shared,
    device: &Device,
    work: SynthesizedWork,
    lock: Lock,
) -> Result<(), Failure> {
    let SynthesizedWork {
        job,
        index,
        synth,
        in_flight: _in_flight,
        mut ticket,
    } = work;
    // Taken by a device: the next partition may be admitted to synthesis.
    ticket.leave_slot();
    let tl = &shared.timeline;
    let dev = device.label.as_str();
    tl.emit(
        "GPU_LOCK_WAIT",
        &job.id,
        &[("partition", &index), ("device", &dev)],
    );
    let srs = job
        .srs(|| job.task.params(&shared.srs))
        .map_err(Failure::Job)?;
    let synthesized_inputs = synth.public_inputs().to_vec();
    let b_inputs = synth.b_input_density.total();
    let proven = {
        let _exclusive = (lock != Lock::Held).then(|| device.lock());
        let outer = device.current();
        device.set_current(Some((job.id.clone(), job.kind)));
        tl.emit(
            "GPU_START",
            &job.id,
            &[("partition", &index), ("device", &dev)],
        );
        let t = Instant::now();
        let mut between = UrgentBetween::new(shared, device, job.priority, lock);
        if !shared.test_hooks.device_delay.is_zero() {
            std::thread::sleep(shared.test_hooks.device_delay);
        }
        let injected = shared
            .test_hooks
            .device_error
            .as_ref()
            .is_some_and(|hook| hook(&job.request_id, dev));
        let r = if injected {
            Err(Failure::Device(Error::Prove(ProveError::Backend(
                BackendError::Device("injected device fault (test hook)".into()),
            ))))
        } else {
            catch_unwind(AssertUnwindSafe(|| {
                prove_with_key_between(device.backend.as_ref(), srs.key(), synth, &mut between)
            }))
            .map_err(|panic| {
                Failure::Device(Error::Internal(format!(
                    "prover panicked: {}",
                    panic_message(&panic)
                )))
            })
            .and_then(|r| {
                r.map_err(|e| match e {
                    ProveError::Backend(_) => Failure::Device(e.into()),
                    other => Failure::Job(other.into()),
                })
            })
        };
        // Time spent in partitions let in at this step's pause points (not this step's).
        let let_in = between.let_in;
        let elapsed = t.elapsed().saturating_sub(let_in);
        // The step's high-water point is behind us; the reading keeps it (gpu.rs).
        device.sample_memory();
        device.add_busy(elapsed);
        device.set_current(outer);
        if let Ok((_, timings)) = &r {
            let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
            tl.emit(
                "NTT_END",
                &job.id,
                &[
                    ("partition", &index),
                    ("device", &dev),
                    ("ms", &ms(timings.ntt)),
                    // Of ms, for a deferred partition: the aux upload and the evaluation.
                    ("upload", &ms(timings.upload)),
                    ("evaluate", &ms(timings.evaluate)),
                    // Where a, b, c were evaluated: in this step (included in ms), or by
                    // synthesis.
                    (
                        "abc",
                        &if timings.abc_in_step {
                            "device"
                        } else {
                            "synthesis"
                        },
                    ),
                ],
            );
            tl.emit(
                "MSM_END",
                &job.id,
                &[
                    ("partition", &index),
                    ("device", &dev),
                    ("ms", &ms(timings.msm)),
                    // Each MSM, so that a large partition's step reads without a profiler.
                    ("h", &ms(timings.msms.h)),
                    ("l", &ms(timings.msms.l)),
                    ("a", &ms(timings.msms.a)),
                    ("b_g1", &ms(timings.msms.b_g1)),
                    ("b_g2", &ms(timings.msms.b_g2)),
                ],
            );
        }
        let ms = format!("{:.1}", elapsed.as_secs_f64() * 1e3);
        let let_in_ms = format!("{:.1}", let_in.as_secs_f64() * 1e3);
        let mut detail: Vec<(&str, &dyn std::fmt::Display)> =
            vec![("partition", &index), ("device", &dev), ("ms", &ms)];
        if !let_in.is_zero() {
            // Steps let in between this one's phases (their own GPU_START..GPU_END lie
            // inside this one's); `ms` leaves them out.
            detail.push(("let_in", &let_in_ms));
        }
        tl.emit("GPU_END", &job.id, &detail);
        job.add_gpu(elapsed);
        shared
            .metrics
            .partition_phase(job.kind, Phase::Device, elapsed);
        r?
    };
    // The partition's memory is not needed for assembly: give it back before the CPU work.
    drop(ticket);
    host_release::after_device_step(shared, &srs, b_inputs);
    if !job.is_live() {
        // Cancelled while on the device: the step ran to its end; its result is dropped.
        return Ok(());
    }
    let (msm, _) = proven;
    let work = ProvenWork {
        job: job.clone(),
        index,
        srs,
        msm,
        synthesized_inputs,
        in_flight: _in_flight,
    };
    // Never closed, never full: a proven partition always reaches a finalize worker.
    let _ = shared.finalize_queue.push_wait(job.priority, job.seq, work);
    Ok(())
}

pub fn finalize_worker(shared: Arc<Shared>) {
    while let Some(work) = shared.finalize_queue.pop() {
        if !work.job.is_live() {
            continue;
        }
        let job = work.job.clone();
        // On a pool of its own: verification spawns rayon tasks (pools.rs).
        if let Err(e) = crate::pools::finalize().install(|| finalize(&shared, work)) {
            shared.fail(&job, e);
        }
    }
}

/// Assemble with fresh r, s; verify against public inputs computed from the request (not the
/// witness); store; complete the job when it was the last partition.
fn finalize(shared: &Shared, work: ProvenWork) -> Result<()> {
    let ProvenWork {
        job,
        index,
        srs,
        msm,
        synthesized_inputs,
        in_flight: _in_flight,
    } = work;
    let t = Instant::now();
    let verify = shared.config.verify_proofs;
    let inputs = if verify {
        Some(job.task.public_inputs(index, &synthesized_inputs)?)
    } else {
        None
    };
    let bytes = guarded("finalize", || {
        finalize_partition(&srs, &msm, inputs.as_deref())
    })?;
    shared
        .metrics
        .partition_phase(job.kind, Phase::Finalize, t.elapsed());
    shared.timeline.emit(
        "FINALIZE_END",
        &job.id,
        &[
            ("partition", &index),
            ("verified", &verify),
            ("ms", &format!("{:.1}", t.elapsed().as_secs_f64() * 1e3)),
        ],
    );
    if let Some(proof) = job.store_partition(index, bytes) {
        shared.complete(&job, &proof);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{pins_aux, PIN_AUX_MIN_ELEMENTS};

    #[test]
    fn a_large_packed_aux_is_pinned_by_default_and_the_environment_overrides_the_size() {
        let two_kib = 3_000;
        let partition_2p27 = 4_400_000;
        assert!(!pins_aux(None, two_kib));
        assert!(!pins_aux(None, PIN_AUX_MIN_ELEMENTS - 1));
        assert!(pins_aux(None, PIN_AUX_MIN_ELEMENTS));
        assert!(pins_aux(None, partition_2p27));
        assert!(pins_aux(Some(true), two_kib));
        assert!(!pins_aux(Some(false), partition_2p27));
    }
}

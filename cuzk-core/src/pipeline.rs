//! The way of a partition, top to bottom: a synthesis worker takes it from the queue and
//! synthesizes its circuit; a device worker proves it under the device's mutex; finalize
//! assembles and verifies it; the last partition completes the job.
//!
//! A panic in a job's circuit or prover fails that job, never the worker or the daemon.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use crate::engine::Shared;
use crate::finalize::finalize_partition;
use crate::gpu::Device;
use crate::job::{Error, JobState, Result};
use crate::metrics::Phase;
use crate::prove::prove_on_device;
use crate::record::Job;
use crate::synth::Synthesized;

/// A partition waiting for synthesis.
pub struct PartitionWork {
    pub job: Arc<Job>,
    pub index: usize,
}

/// A synthesized partition waiting for a device.
pub struct SynthesizedWork {
    pub job: Arc<Job>,
    pub index: usize,
    pub synth: Synthesized,
}

/// Run `f`, turning a panic into an error naming what panicked.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(Error::Internal(format!("{what} panicked: {msg}")))
    })
}

pub fn synthesis_worker(shared: Arc<Shared>, worker: usize) {
    while let Some(PartitionWork { job, index }) = shared.synth_queue.pop() {
        if !job.is_live() {
            continue;
        }
        job.mark_started();
        let tl = &shared.timeline;
        tl.emit(
            "SYNTH_START",
            &job.id,
            &[("partition", &index), ("worker", &worker)],
        );
        let t = Instant::now();
        let result = guarded("synthesis", || {
            // Load the parameters first, so a missing file fails the job before the work.
            job.srs(|| job.task.params(&shared.srs))?;
            if let Some(hook) = &shared.test_hooks.synthesis_panic {
                hook(&job.id);
            }
            job.task.synthesize(index)
        });
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match result {
            Ok(synth) => {
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
                    ],
                );
                tl.emit("GPU_QUEUE", &job.id, &[("partition", &index)]);
                let work = SynthesizedWork {
                    job: job.clone(),
                    index,
                    synth,
                };
                if shared
                    .prove_queue
                    .push_wait(job.priority, job.seq, work)
                    .is_err()
                {
                    shared.fail(&job, Error::ShuttingDown);
                }
            }
            Err(e) => shared.fail(&job, e),
        }
    }
}

pub fn device_worker(shared: Arc<Shared>, device: Arc<Device>) {
    while let Some(SynthesizedWork { job, index, synth }) = shared.prove_queue.pop() {
        if !job.is_live() {
            continue;
        }
        let tl = &shared.timeline;
        let dev = device.label.as_str();
        tl.emit(
            "GPU_LOCK_WAIT",
            &job.id,
            &[("partition", &index), ("device", &dev)],
        );
        let srs = match job.srs(|| job.task.params(&shared.srs)) {
            Ok(srs) => srs,
            Err(e) => {
                shared.fail(&job, e);
                continue;
            }
        };
        let synthesized_inputs = synth.public_inputs().to_vec();
        let proven = {
            let _exclusive = device.lock();
            device.set_current(Some((job.id.clone(), job.kind)));
            tl.emit(
                "GPU_START",
                &job.id,
                &[("partition", &index), ("device", &dev)],
            );
            let t = Instant::now();
            let r = guarded("prover", || {
                Ok(prove_on_device(
                    device.backend.as_ref(),
                    &srs.params,
                    &srs.id,
                    synth,
                )?)
            });
            let elapsed = t.elapsed();
            device.add_busy(elapsed);
            device.set_current(None);
            if let Ok((_, timings)) = &r {
                tl.emit(
                    "NTT_END",
                    &job.id,
                    &[
                        ("partition", &index),
                        ("device", &dev),
                        ("ms", &format!("{:.1}", timings.ntt.as_secs_f64() * 1e3)),
                    ],
                );
                tl.emit(
                    "MSM_END",
                    &job.id,
                    &[
                        ("partition", &index),
                        ("device", &dev),
                        ("ms", &format!("{:.1}", timings.msm.as_secs_f64() * 1e3)),
                    ],
                );
            }
            tl.emit(
                "GPU_END",
                &job.id,
                &[
                    ("partition", &index),
                    ("device", &dev),
                    ("ms", &format!("{:.1}", elapsed.as_secs_f64() * 1e3)),
                ],
            );
            job.add_gpu(elapsed);
            shared
                .metrics
                .partition_phase(job.kind, Phase::Device, elapsed);
            r
        };
        // Assembly and verification need no device: done after the lock is released.
        let finished = proven.and_then(|(msm, _)| {
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
            tl.emit(
                "FINALIZE_END",
                &job.id,
                &[
                    ("partition", &index),
                    ("verified", &verify),
                    ("ms", &format!("{:.1}", t.elapsed().as_secs_f64() * 1e3)),
                ],
            );
            Ok(bytes)
        });
        match finished {
            Ok(bytes) => {
                if let Some(proof) = job.store_partition(index, bytes) {
                    shared.complete(&job, &proof);
                }
            }
            Err(e) => shared.fail(&job, e),
        }
    }
}

/// The job's final state from its finished proof: stock whole-job verification, if on.
pub fn job_result(shared: &Shared, job: &Job, proof: &[u8]) -> JobState {
    if shared.config.verify_proofs {
        if let Err(e) = guarded("job verification", || job.task.verify_job(proof)) {
            return JobState::Failed(e.to_string());
        }
    }
    JobState::Completed
}

//! Parameter sets loaded for queued jobs, off the synthesis workers.
//!
//! A partition's size is bounded from its parameters, so a partition whose job has not its
//! parameter set yet is handed to a synthesis worker to be prepared (gate.rs). The worker
//! only looks the set up (`SrsCache::without_waiting`): resident, the partition goes back to
//! its place at once; not resident, it is parked under the set's id (set_loads.rs) and the
//! set is loaded on a thread of its own, once however many partitions and jobs wait for it. When
//! the load ends, the parked partitions go back to their places in the queue, or, when it
//! failed, their jobs fail with its error. Meanwhile the worker takes other partitions:
//! why: a 32 GiB PoRep set is ~47 GB, seconds to minutes to read, and a worker loading it
//! held itself and every partition behind it for that long.
//!
//! TIMELINE (job `-`, the set in `srs=`): SRS_LOAD_START, then SRS_LOAD_END (`bytes`, `ms`,
//! `mb_s`, `partitions` that waited) or SRS_LOAD_FAILED (`error`). PreloadSRS writes the
//! same events with `cause=preload`.

use std::sync::Arc;
use std::time::Duration;

use crate::host_release;
use crate::job::Error;
use crate::record::Job;
use crate::shared::Shared;
use crate::srs::SrsEntry;
use crate::timeline::Timeline;
use crate::work::{guarded, PartitionWork};

/// A synthesis worker's part: find the partition's set without waiting for it; resident, put
/// the partition back in its place; not resident, park it and, if it is the first to wait,
/// start the load. A job whose set cannot be named fails here.
pub fn prepare(shared: &Arc<Shared>, work: PartitionWork) {
    let job = work.job.clone();
    // Not marked Running here: every job passes through this on its first take, resident
    // set or not, and a job still waiting behind others (or for its parameters) is queued;
    // it runs from its first synthesis (pipeline.rs). Marking it here let a queued job's
    // cancel report it running.
    let resident = shared.srs.without_waiting();
    match guarded("finding parameters", || job.task.params(&resident)) {
        // Bound for the CPU under a set whose host copy was released (host_release.rs): the
        // set is read from its file again, as if it had never been loaded.
        Ok(srs) if host_release::needs_reload(&srs, work.on_cpu) => {
            shared.srs.forget_released(&srs.id, &srs);
            park_and_load(shared, srs.id.clone(), work);
        }
        Ok(srs) => {
            job.set_srs(srs, Duration::ZERO);
            put_back(shared, work);
        }
        Err(Error::ParamsNotResident(id)) => park_and_load(shared, id, work),
        Err(e) => shared.fail(&job, e),
    }
}

/// Park `work` until set `id` is loaded, starting the load if it is the first to wait.
fn park_and_load(shared: &Arc<Shared>, id: String, work: PartitionWork) {
    let job = work.job.clone();
    if shared.set_loads.park(&id, work) {
        let s = shared.clone();
        let name = format!("srs-load-{id}");
        std::thread::Builder::new()
            .name(name)
            .spawn(move || load_for_queue(s, id, job))
            .expect("spawning a parameter loader thread");
    }
}

/// Load set `id` through `job`'s task (any waiting job names the same set), then release
/// everything parked on it.
fn load_for_queue(shared: Arc<Shared>, id: String, job: Arc<Job>) {
    let tl = &shared.timeline;
    tl.emit("SRS_LOAD_START", "-", &[("srs", &id), ("cause", &"queue")]);
    let result = guarded("loading parameters", || {
        if !shared.test_hooks.srs_load_delay.is_zero() {
            std::thread::sleep(shared.test_hooks.srs_load_delay);
        }
        job.task.params(&shared.srs)
    });
    let parked = shared.set_loads.take(&id);
    match result {
        Ok(srs) => {
            emit_loaded(tl, &srs, "queue", parked.len());
            for p in parked {
                p.work.job.set_srs(srs.clone(), p.since.elapsed());
                put_back(&shared, p.work);
            }
        }
        Err(e) => {
            emit_failed(tl, &id, "queue", &e);
            let mut failed: Vec<&Arc<Job>> = parked.iter().map(|p| &p.work.job).collect();
            failed.sort_by_key(|j| j.seq);
            failed.dedup_by_key(|j| j.seq);
            for job in failed {
                shared.fail(job, same_error(&e));
            }
        }
    }
}

/// A partition back in its place in the queue, its size now known.
fn put_back(shared: &Shared, work: PartitionWork) {
    let job = work.job.clone();
    if !job.is_live() {
        return;
    }
    if shared.gate.put_back(job.priority, job.seq, work).is_err() && !shared.has_journal() {
        // Shutting down: without a journal the job cannot be resumed later.
        shared.fail(&job, Error::ShuttingDown);
    }
}

/// The load's error, for each of the jobs that waited on it (errors are not Clone).
fn same_error(e: &Error) -> Error {
    match e {
        Error::Params(msg) => Error::Params(msg.clone()),
        other => Error::Params(other.to_string()),
    }
}

pub fn emit_loaded(tl: &Timeline, srs: &SrsEntry, cause: &str, partitions: usize) {
    let secs = srs.load_time.as_secs_f64();
    let mb_s = if secs > 0.0 {
        srs.size_bytes as f64 / 1e6 / secs
    } else {
        0.0
    };
    tl.emit(
        "SRS_LOAD_END",
        "-",
        &[
            ("srs", &srs.id),
            ("cause", &cause),
            ("bytes", &srs.size_bytes),
            ("ms", &format!("{:.1}", secs * 1e3)),
            ("mb_s", &format!("{mb_s:.0}")),
            ("partitions", &partitions),
        ],
    );
}

pub fn emit_failed(tl: &Timeline, id: &str, cause: &str, e: &Error) {
    tl.emit(
        "SRS_LOAD_FAILED",
        "-",
        &[("srs", &id), ("cause", &cause), ("error", &e)],
    );
}

//! A job's life across daemon restarts, shutdowns, cancellations and faults, with a real
//! `cuzk-daemon` process over real sockets: kill -9 and SIGTERM with jobs in flight (nothing
//! accepted is lost), request_id idempotency and finished results across a restart,
//! cancellation in each state, and a panic in one job's synthesis. Small synthetic jobs; the
//! daemon's test hooks (CUZK_TEST_HOOKS) slow its stages so a job can be caught in each.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{await_done, has, submit, synthetic, verify_synthetic, Daemon, Event};
use cuzk_client::rpc::Client;
use cuzk_core::journal::Recovered;
use cuzk_proto::v1 as pb;
use pb::await_proof_response::Status as AwaitStatus;
use tonic::Code;

const HOOKS: &str = "CUZK_TEST_HOOKS";

/// A daemon on `data` with one synthesis worker, an optional config file and test hooks.
async fn daemon(data: &Path, config: Option<&Path>, hooks: &str) -> Daemon {
    let data = data.display().to_string();
    let config = config.map(|c| c.display().to_string());
    let mut args = vec!["--data-dir", data.as_str(), "--synthesis-workers", "1"];
    if let Some(c) = &config {
        args.extend(["--config", c.as_str()]);
    }
    Daemon::start_with(&args, &[(HOOKS, hooks)]).await
}

fn write_config(dir: &Path, toml: &str) -> std::path::PathBuf {
    let p = dir.join("cuzk.toml");
    std::fs::write(&p, toml).unwrap();
    p
}

/// (log size, partitions, seed) of the synthetic jobs, and their submission.
type Spec = (u32, u32, u64);

async fn submit_all(c: &mut Client, specs: &[Spec]) -> Vec<String> {
    let mut ids = Vec::new();
    for &(log, parts, seed) in specs {
        ids.push(submit(c, synthetic(log, parts, seed, None)).await);
    }
    ids
}

async fn await_all_and_verify(c: &mut Client, ids: &[String], specs: &[Spec]) {
    for (id, &(log, parts, seed)) in ids.iter().zip(specs) {
        let r = await_done(c, id).await;
        assert_eq!(
            r.status,
            AwaitStatus::Completed as i32,
            "{id}: {}",
            r.error_message
        );
        verify_synthetic(&r.proof, log, parts, seed);
    }
}

/// The admission sequence number inside a job id (`job-<seq>-<random>`).
fn seq(id: &str) -> u64 {
    id.split('-').nth(1).unwrap().parse().unwrap()
}

fn count(events: &[Event], name: &str) -> usize {
    events.iter().filter(|e| e.name == name).count()
}

const SPECS: [Spec; 6] = [
    (10, 1, 11),
    (11, 2, 12),
    (10, 2, 13),
    (12, 1, 14),
    (10, 1, 15),
    (11, 1, 16),
];

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_with_jobs_in_flight_loses_nothing() {
    let data = tempfile::tempdir().unwrap();
    // Slow stages so that the kill finds jobs queued, in synthesis and on the device.
    let mut d = daemon(data.path(), None, "synth-delay-ms=150;device-delay-ms=150").await;
    let ids = submit_all(&mut d.client, &SPECS).await;
    d.wait_for("the first job done", Duration::from_secs(30), |ev| {
        count(ev, "JOB_DONE") >= 1
    })
    .await;
    let before = d.kill9().await;
    let done_before: Vec<&String> = ids
        .iter()
        .filter(|id| has(&before, id, "JOB_DONE"))
        .collect();
    assert!(
        !done_before.is_empty() && done_before.len() < ids.len(),
        "the kill must land mid-run: {} of {} done",
        done_before.len(),
        ids.len()
    );

    // Same data directory, no hooks: every job completes under its original id.
    let mut d = daemon(data.path(), None, "").await;
    await_all_and_verify(&mut d.client, &ids, &SPECS).await;
    // Ids continue from the journal's highest: no collision with the old ones.
    let next = submit_all(&mut d.client, &[(10, 1, 17)]).await;
    assert!(
        ids.iter().all(|id| seq(&next[0]) > seq(id)),
        "{next:?} vs {ids:?}"
    );
    await_all_and_verify(&mut d.client, &next, &[(10, 1, 17)]).await;
    let after = d.stop().await;
    for id in &ids {
        // Finished jobs are served from the journal; the others were recovered and re-run.
        let finished_before = done_before.contains(&id);
        assert_eq!(has(&after, id, "JOB_RECOVERED"), !finished_before, "{id}");
        assert_eq!(has(&after, id, "JOB_DONE"), !finished_before, "{id}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_admission_finishes_in_flight_and_keeps_the_rest() {
    let data = tempfile::tempdir().unwrap();
    let config = write_config(data.path(), "shutdown_grace_secs = 10\n");
    let mut d = daemon(
        data.path(),
        Some(&config),
        "synth-delay-ms=300;device-delay-ms=600",
    )
    .await;
    let ids = submit_all(&mut d.client, &SPECS).await;
    // A client waiting on the last job when the daemon stops.
    let mut waiter = d.client.clone();
    let last = ids.last().unwrap().clone();
    let waiting = tokio::spawn(async move {
        waiter
            .await_proof(pb::AwaitProofRequest {
                job_id: last,
                timeout_ms: 0,
            })
            .await
    });
    d.wait_for("a partition on the device", Duration::from_secs(30), |ev| {
        count(ev, "GPU_START") >= 1
    })
    .await;
    let t = Instant::now();
    d.inner.as_ref().unwrap().signal(15);
    // A partition is on the device for 600 ms: the daemon still listens, and refuses work.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = d
        .client
        .submit_proof(synthetic(10, 1, 99, None))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    let mut inner = d.inner.take().unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), inner.child.wait())
        .await
        .expect("the daemon exits within its grace period")
        .unwrap();
    let took = t.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(10), "exit took {took:?}");
    // The waiter was told to come back (UNAVAILABLE), not left hanging or told "failed".
    let w = waiting.await.unwrap();
    match w {
        Err(s) => assert_eq!(s.code(), Code::Unavailable, "{s:?}"),
        Ok(r) => panic!("the last job cannot have finished: {:?}", r.into_inner()),
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = d.events();
    assert_eq!(count(&before, "JOB_FAILED"), 0, "nothing fails at shutdown");
    // Partitions on the device or in synthesis at SIGTERM were allowed to end.
    let started = count(&before, "GPU_START");
    assert_eq!(started, count(&before, "GPU_END"));
    assert!(count(&before, "JOB_DONE") < ids.len());

    let mut d = daemon(data.path(), None, "").await;
    await_all_and_verify(&mut d.client, &ids, &SPECS).await;
    let after = d.stop().await;
    assert_eq!(
        count(&after, "JOB_RECOVERED") + count(&before, "JOB_DONE"),
        ids.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn request_ids_and_finished_results_survive_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let mut d = daemon(data.path(), None, "device-delay-ms=3000").await;
    let mut done_req = synthetic(10, 1, 21, None);
    done_req.request_id = "curio-done".into();
    let mut open_req = synthetic(10, 1, 22, None);
    open_req.request_id = "curio-open".into();
    let done = submit(&mut d.client, done_req.clone()).await;
    let proof = await_done(&mut d.client, &done).await;
    assert_eq!(proof.status, AwaitStatus::Completed as i32);
    let open = submit(&mut d.client, open_req.clone()).await;
    d.wait_for(
        "the open job on the device",
        Duration::from_secs(30),
        |ev| has(ev, &open, "GPU_START"),
    )
    .await;
    d.kill9().await;

    let mut d = daemon(data.path(), None, "").await;
    // The same request ids name the same jobs: no second job is made.
    for (req, id) in [(done_req, &done), (open_req, &open)] {
        let again = d.client.submit_proof(req).await.unwrap().into_inner();
        assert_eq!(&again.job_id, id);
    }
    // The finished result is the same bytes; the open job completes.
    let r = await_done(&mut d.client, &done).await;
    assert_eq!(r.status, AwaitStatus::Completed as i32);
    assert_eq!(r.proof, proof.proof);
    verify_synthetic(&r.proof, 10, 1, 21);
    await_all_and_verify(&mut d.client, std::slice::from_ref(&open), &[(10, 1, 22)]).await;
    let after = d.stop().await;
    let queued: Vec<&str> = after
        .iter()
        .filter(|e| e.name == "JOB_QUEUED")
        .map(|e| e.job.as_str())
        .collect();
    assert_eq!(queued, [open.as_str()], "only the recovered job is queued");

    // Past its retention the finished result is gone at the next start, and its request id
    // is free again.
    let config = write_config(data.path(), "[engine]\nresult_retention_secs = 1\n");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut d = daemon(data.path(), Some(&config), "").await;
    let gone = d
        .client
        .await_proof(pb::AwaitProofRequest {
            job_id: done.clone(),
            timeout_ms: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
    let mut req = synthetic(10, 1, 21, None);
    req.request_id = "curio-done".into();
    let fresh = submit(&mut d.client, req).await;
    assert_ne!(fresh, done);
    // The retention loop (every 5 s) deletes the expired entries from the journal itself.
    tokio::time::sleep(Duration::from_secs(6)).await;
    d.stop().await;
    let journal = cuzk_core::journal::Journal::open(data.path()).unwrap();
    let left = journal.load().unwrap();
    assert_eq!(left.skipped, 0);
    let ids: Vec<String> = left
        .jobs
        .iter()
        .map(|j| match j {
            Recovered::Finished { id, .. } | Recovered::Unfinished { id, .. } => id.clone(),
        })
        .collect();
    assert!(
        !ids.contains(&done) && !ids.contains(&open),
        "expired results pruned from the journal: {ids:?}"
    );
    assert!(left.max_seq >= seq(&fresh), "the id high-water mark stays");
}

/// A synthetic 2^10 job of `seed` under `request_id`.
fn keyed(request_id: &str, seed: u64) -> pb::SubmitProofRequest {
    let mut req = synthetic(10, 1, seed, None);
    req.request_id = request_id.into();
    req
}

async fn status_of(c: &mut Client, id: &str) -> pb::AwaitProofResponse {
    let r = await_done(c, id).await;
    if r.status == AwaitStatus::Completed as i32 {
        assert!(!r.proof.is_empty());
    }
    r
}

async fn completes(c: &mut Client, id: &str, seed: u64) {
    let r = status_of(c, id).await;
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{id}: {}",
        r.error_message
    );
    verify_synthetic(&r.proof, 10, 1, seed);
}

#[tokio::test(flavor = "multi_thread")]
async fn request_id_retries_run_again_and_new_payloads_start_new_jobs_across_a_restart() {
    // Curio's ids are per sector: a retry after a failure, or with a redone commit phase 1,
    // arrives under the first attempt's id (README, "The API").
    let data = tempfile::tempdir().unwrap();
    let hooks = "synth-panic-once=porep-1000-1;synth-panic=porep-1000-3;synth-delay-ms=300";
    let mut d = daemon(data.path(), None, hooks).await;
    let c = &mut d.client;
    // Failed, then retried under the same id with the same payload: a new job that runs.
    let a = submit(c, keyed("porep-1000-1", 31)).await;
    assert_eq!(status_of(c, &a).await.status, AwaitStatus::Failed as i32);
    let b = submit(c, keyed("porep-1000-1", 31)).await;
    assert_ne!(a, b, "a failed job's id starts a new job");
    completes(c, &b, 31).await;
    assert_eq!(
        submit(c, keyed("porep-1000-1", 31)).await,
        b,
        "completed: idempotent"
    );
    // A new payload under a completed job's id: a new job proving the new input; the old
    // job still answers under its own id.
    let b2 = submit(c, keyed("porep-1000-1", 32)).await;
    assert_ne!(b2, b);
    completes(c, &b2, 32).await;
    completes(c, &b, 31).await;
    // A new payload while the old job runs: the new job supersedes it, the old is cancelled.
    let e = submit(c, keyed("porep-1000-2", 40)).await;
    let f = submit(c, keyed("porep-1000-2", 41)).await;
    assert_ne!(e, f);
    assert_eq!(status_of(c, &e).await.status, AwaitStatus::Cancelled as i32);
    completes(c, &f, 41).await;
    assert_eq!(submit(c, keyed("porep-1000-2", 41)).await, f);
    // Left failed, and left completed, for after the restart.
    let failed = submit(c, keyed("porep-1000-3", 33)).await;
    assert_eq!(
        status_of(c, &failed).await.status,
        AwaitStatus::Failed as i32
    );
    let done = submit(c, keyed("porep-1000-4", 34)).await;
    completes(c, &done, 34).await;
    let before = d.stop().await;
    let superseded = before
        .iter()
        .find(|ev| ev.job == e && ev.name == "JOB_CANCELLED")
        .expect("the superseded job is cancelled");
    assert_eq!(superseded.detail.get("superseded_by"), Some(&f));

    // Same journal, no hooks.
    let mut d = daemon(data.path(), None, "").await;
    let c = &mut d.client;
    let retried = submit(c, keyed("porep-1000-3", 33)).await;
    assert_ne!(retried, failed, "failed before the restart: runs again");
    completes(c, &retried, 33).await;
    assert_eq!(
        submit(c, keyed("porep-1000-4", 34)).await,
        done,
        "same payload: same job"
    );
    completes(c, &done, 34).await;
    let changed = submit(c, keyed("porep-1000-4", 35)).await;
    assert_ne!(changed, done, "new payload: new job");
    completes(c, &changed, 35).await;
    // The newest job under an id keeps it across the restart (the journal lists by job id).
    assert_eq!(submit(c, keyed("porep-1000-2", 41)).await, f);
    assert_eq!(submit(c, keyed("porep-1000-1", 32)).await, b2);
    assert_eq!(status_of(c, &e).await.status, AwaitStatus::Cancelled as i32);
    let after = d.stop().await;
    assert_eq!(
        count(&after, "JOB_DONE"),
        2,
        "only the retried and the changed job ran"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_in_each_state_and_only_that_job() {
    let data = tempfile::tempdir().unwrap();
    // One synthesis worker, one device. Synthesis 4 s, device 10 s: D is on the device
    // while W, synthesized, waits for it and S is in synthesis; Q and U wait in the queue
    // (Q could start at 12 s: the margin a loaded CI machine needs, where 1.5 s steps
    // once, and 2.5 s steps in a clean-clone run on 2 cores, let Q start before the test
    // looked).
    let mut d = daemon(
        data.path(),
        None,
        "synth-delay-ms=4000;device-delay-ms=10000",
    )
    .await;
    let specs: [Spec; 5] = [
        (10, 1, 31),
        (10, 1, 32),
        (10, 1, 33),
        (10, 1, 34),
        (10, 1, 35),
    ];
    let ids = submit_all(&mut d.client, &specs).await;
    let [dev, wait, synth, queued, untouched] = <[String; 5]>::try_from(ids.clone()).unwrap();
    let cancel = |c: &mut Client, id: &str| {
        let mut c = c.clone();
        let id = id.to_string();
        async move {
            c.cancel_proof(pb::CancelProofRequest { job_id: id })
                .await
                .unwrap()
                .into_inner()
                .was_running
        }
    };
    let ev = d.events();
    assert!(!has(&ev, &queued, "SYNTH_START"), "queued");
    assert!(!cancel(&mut d.client, &queued).await);

    let ev = d
        .wait_for("S in synthesis", Duration::from_secs(30), |ev| {
            has(ev, &synth, "SYNTH_START")
        })
        .await;
    // Each job is where it should be when cancelled.
    assert!(
        has(&ev, &dev, "GPU_START") && !has(&ev, &dev, "GPU_END"),
        "on the device"
    );
    assert!(
        has(&ev, &wait, "GPU_QUEUE") && !has(&ev, &wait, "GPU_START"),
        "waiting"
    );
    assert!(!has(&ev, &synth, "SYNTH_END"), "in synthesis");
    for id in [&dev, &wait, &synth] {
        assert!(cancel(&mut d.client, id).await, "{id} was running");
    }
    let ev = d.events();
    assert!(
        !has(&ev, &dev, "GPU_END") && !has(&ev, &synth, "SYNTH_END"),
        "the cancels landed while the steps ran"
    );

    // A timed-out await leaves the job alone.
    let t = d
        .client
        .await_proof(pb::AwaitProofRequest {
            job_id: untouched.clone(),
            timeout_ms: 1,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(t.status, AwaitStatus::Timeout as i32);
    for id in [&dev, &wait, &synth, &queued] {
        let r = await_done(&mut d.client, id).await;
        assert_eq!(r.status, AwaitStatus::Cancelled as i32, "{id}");
    }
    await_all_and_verify(&mut d.client, &ids[4..], &specs[4..]).await;
    let ev = d.stop().await;
    for id in [&dev, &wait, &synth, &queued] {
        assert!(has(&ev, id, "JOB_CANCELLED"), "{id}");
        assert!(!has(&ev, id, "FINALIZE_END"), "{id}: nothing finalized");
    }
    assert!(
        !has(&ev, &queued, "SYNTH_START"),
        "a queued job never starts"
    );
    assert!(
        !has(&ev, &synth, "GPU_QUEUE"),
        "its synthesis is dropped, not queued"
    );
    assert!(!has(&ev, &wait, "GPU_START"), "it leaves the device queue");
    assert!(has(&ev, &dev, "GPU_END"), "the device step runs to its end");

    // The cancellations were journaled: after a restart they are still CANCELLED.
    let mut d = daemon(data.path(), None, "").await;
    for id in [&dev, &wait, &synth, &queued] {
        let r = await_done(&mut d.client, id).await;
        assert_eq!(
            r.status,
            AwaitStatus::Cancelled as i32,
            "{id} after restart"
        );
    }
    let after = d.stop().await;
    assert_eq!(count(&after, "JOB_RECOVERED"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_in_one_jobs_synthesis_fails_only_that_job() {
    let data = tempfile::tempdir().unwrap();
    let mut d = daemon(data.path(), None, "synth-panic=poisoned").await;
    let specs: [Spec; 3] = [(10, 2, 41), (10, 1, 42), (11, 1, 43)];
    let mut ids = Vec::new();
    for (i, &(log, parts, seed)) in specs.iter().enumerate() {
        let mut req = synthetic(log, parts, seed, None);
        if i == 1 {
            req.request_id = "poisoned".into();
        }
        ids.push(submit(&mut d.client, req).await);
    }
    let r = await_done(&mut d.client, &ids[1]).await;
    assert_eq!(r.status, AwaitStatus::Failed as i32);
    assert!(
        r.error_message.contains("synthesis panicked")
            && r.error_message.contains("injected synthesis panic"),
        "{}",
        r.error_message
    );
    await_all_and_verify(&mut d.client, &ids[..1], &specs[..1]).await;
    await_all_and_verify(&mut d.client, &ids[2..], &specs[2..]).await;
    let ev = d.stop().await;
    assert!(has(&ev, &ids[1], "JOB_FAILED"));
    assert_eq!(count(&ev, "JOB_DONE"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_daemon_on_the_same_journal_fails_to_start_clearly() {
    let data = tempfile::tempdir().unwrap();
    let first = daemon(data.path(), None, "").await;
    let log = tempfile::tempdir().unwrap();
    let log = log.path().join("second.log");
    let args: Vec<String> = [
        "--backend",
        "cpu",
        "--param-dir",
        &common::param_dir().display().to_string(),
        "--data-dir",
        &data.path().display().to_string(),
    ]
    .map(String::from)
    .into();
    std::env::set_var("CUZK_DAEMON", env!("CARGO_BIN_EXE_cuzk-daemon"));
    let second = cuzk_client::spawn::SpawnedDaemon::start(&args, &log).await;
    assert!(
        second.is_err(),
        "a second daemon must not share the journal"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("cannot open the job journal") && text.contains("journal.redb"),
        "{text}"
    );
    first.stop().await;
}

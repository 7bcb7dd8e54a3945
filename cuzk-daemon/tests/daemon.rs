//! The daemon end to end over real sockets: a real `cuzk-daemon` process, the real client
//! library, synthetic proofs verified with bellperson's verifier, and its TIMELINE parsed back.

mod common;

use std::time::Duration;

use common::{await_done, submit, synthetic, verify_synthetic, Daemon, Event};
use cuzk_client::rpc;
use cuzk_core::kinds::KindRequest;
use cuzk_core::{Priority, ProofKind};
use cuzk_proto::v1 as pb;
use pb::await_proof_response::Status as AwaitStatus;
use tonic::Code;

#[tokio::test(flavor = "multi_thread")]
async fn proves_several_sizes_concurrently_and_timeline_is_complete() {
    let mut d = Daemon::start(&["--synthesis-workers", "2"]).await;
    let jobs = [(10u32, 1u32, 5u64), (12, 2, 6), (11, 3, 7), (10, 1, 8)];
    let mut ids = Vec::new();
    for (log, parts, seed) in jobs {
        ids.push(submit(&mut d.client, synthetic(log, parts, seed, None)).await);
    }
    // Await concurrently from separate connections.
    let mut waits = Vec::new();
    for id in &ids {
        let mut c = d.client.clone();
        let id = id.clone();
        waits.push(tokio::spawn(async move { await_done(&mut c, &id).await }));
    }
    for ((log, parts, seed), w) in jobs.into_iter().zip(waits) {
        let r = w.await.unwrap();
        assert_eq!(
            r.status,
            AwaitStatus::Completed as i32,
            "{}",
            r.error_message
        );
        verify_synthetic(&r.proof, log, parts, seed);
        assert!(r.total_ms >= r.synthesis_ms.min(r.total_ms));
    }
    let status = d
        .client
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.total_proofs_completed, 4);
    assert_eq!(status.backend, "cpu");
    assert!(status
        .loaded_srs
        .iter()
        .any(|s| s.circuit_id == "synthetic-2^12"));

    let events = d.stop().await;
    for (id, (_, parts, _)) in ids.iter().zip(jobs) {
        let mine: Vec<&Event> = events.iter().filter(|e| &e.job == id).collect();
        let first = |name: &str| {
            mine.iter()
                .position(|e| e.name == name)
                .unwrap_or_else(|| panic!("{id}: no {name}"))
        };
        assert_eq!(mine[0].name, "JOB_QUEUED", "{id}");
        assert_eq!(mine.last().unwrap().name, "JOB_DONE", "{id}");
        assert!(
            first("SYNTH_START") < first("GPU_START") && first("GPU_START") < first("JOB_DONE")
        );
        for p in 0..parts {
            let p = p.to_string();
            let order: Vec<&str> = mine
                .iter()
                .filter(|e| e.detail.get("partition") == Some(&p))
                .map(|e| e.name.as_str())
                .collect();
            assert_eq!(
                order,
                [
                    "SYNTH_START",
                    "SYNTH_END",
                    "GPU_QUEUE",
                    "GPU_LOCK_WAIT",
                    "GPU_START",
                    "NTT_END",
                    "MSM_END",
                    "GPU_END",
                    "FINALIZE_END"
                ],
                "{id} partition {p}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn critical_job_submitted_behind_normal_ones_starts_first() {
    // One synthesis worker, each synthesis slowed to a second: the NORMAL jobs pile up in
    // the queue while the first is synthesized, however slow admission is (every submission
    // is an fsync'd journal write, tens of ms on a loaded VM).
    let mut d = Daemon::start_with(
        &["--synthesis-workers", "1"],
        &[("CUZK_TEST_HOOKS", "synth-delay-ms=1000")],
    )
    .await;
    let mut normal = Vec::new();
    for seed in 0..4 {
        let req = synthetic(13, 1, 100 + seed, Some(Priority::Normal));
        normal.push(submit(&mut d.client, req).await);
    }
    let critical = submit(
        &mut d.client,
        synthetic(10, 1, 200, Some(Priority::Critical)),
    )
    .await;
    for id in normal.iter().chain([&critical]) {
        let r = await_done(&mut d.client, id).await;
        assert_eq!(
            r.status,
            AwaitStatus::Completed as i32,
            "{}",
            r.error_message
        );
    }
    let events = d.stop().await;
    let start = |id: &str| {
        events
            .iter()
            .find(|e| e.job == id && e.name == "SYNTH_START")
            .map(|e| e.ms)
            .unwrap()
    };
    // The first NORMAL job was already running when CRITICAL arrived; the last ones were
    // still queued and must start after it.
    assert!(
        start(&critical) < start(&normal[3]),
        "critical did not overtake"
    );
    assert!(
        start(&critical) < start(&normal[2]),
        "critical did not overtake"
    );
}

/// The first `name` event of `job` (and of `partition`, when given).
fn at(events: &[Event], job: &str, name: &str, partition: Option<&str>) -> f64 {
    events
        .iter()
        .find(|e| {
            e.job == job
                && e.name == name
                && partition
                    .is_none_or(|p| e.detail.get("partition").map(String::as_str) == Some(p))
        })
        .unwrap_or_else(|| panic!("{job}: no {name}"))
        .ms
}

async fn timed_critical(d: &mut Daemon, seed: u64) -> (String, Duration) {
    let t = std::time::Instant::now();
    let id = submit(
        &mut d.client,
        synthetic(10, 1, seed, Some(Priority::Critical)),
    )
    .await;
    let r = await_done(&mut d.client, &id).await;
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{}",
        r.error_message
    );
    verify_synthetic(&r.proof, 10, 1, seed);
    (id, t.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn critical_job_overtakes_a_full_pipeline_at_every_stage() {
    // Two general synthesis workers (plus the default urgent one), one synthesized partition
    // may wait for the device; synthesis 300 ms, each device step 600 ms. Eight NORMAL
    // partitions keep every general slot full and the device busy for ~5 s.
    const DEVICE_MS: f64 = 600.0;
    let mut d = Daemon::start_with(
        &[
            "--synthesis-workers",
            "2",
            "--max-synthesized-partitions",
            "1",
        ],
        &[("CUZK_TEST_HOOKS", "synth-delay-ms=300;device-delay-ms=600")],
    )
    .await;
    // Warm-up (parameters), then the CRITICAL job's idle latency on this daemon.
    timed_critical(&mut d, 300).await;
    let (_, idle) = timed_critical(&mut d, 301).await;

    let mut normal = Vec::new();
    for seed in 0..4 {
        let req = synthetic(10, 2, 400 + 2 * seed, Some(Priority::Normal));
        normal.push(submit(&mut d.client, req).await);
    }
    // Every general slot taken (two in synthesis or waiting, one on the device): the old
    // design's parked workers would have been here.
    d.wait_for(
        "the device busy with NORMAL work",
        Duration::from_secs(30),
        |ev| {
            ev.iter().filter(|e| e.name == "GPU_START").count() >= 2 + 2
                && ev.iter().filter(|e| e.name == "SYNTH_END").count() >= 2 + 4
        },
    )
    .await;
    let (critical, loaded) = timed_critical(&mut d, 302).await;
    for id in &normal {
        let r = await_done(&mut d.client, id).await;
        assert_eq!(
            r.status,
            AwaitStatus::Completed as i32,
            "{}",
            r.error_message
        );
    }
    let events = d.stop().await;
    let queued = at(&events, &critical, "JOB_QUEUED", None);
    let synth = at(&events, &critical, "SYNTH_START", None);
    let gpu_queue = at(&events, &critical, "GPU_QUEUE", None);
    let gpu = at(&events, &critical, "GPU_START", None);
    let normal_synth: Vec<f64> = events
        .iter()
        .filter(|e| normal.contains(&e.job) && e.name == "SYNTH_START")
        .map(|e| e.ms)
        .collect();
    // There was NORMAL work still queued when it arrived, and the device was busy.
    let still_queued: Vec<f64> = normal_synth
        .iter()
        .copied()
        .filter(|&t| t > queued)
        .collect();
    assert!(
        !still_queued.is_empty(),
        "the load must outlast the CRITICAL job"
    );
    let busy = events.iter().any(|e| {
        e.name == "GPU_START"
            && normal.contains(&e.job)
            && e.ms < queued
            && events.iter().any(|f| {
                f.name == "GPU_END"
                    && f.job == e.job
                    && f.detail.get("partition") == e.detail.get("partition")
                    && f.ms > queued
            })
    });
    assert!(busy, "the device must be mid-step when CRITICAL arrives");
    // Synthesis: before every NORMAL partition still queued.
    assert!(
        still_queued.iter().all(|&t| t > synth),
        "a queued NORMAL partition started synthesis before CRITICAL ({synth} ms): {still_queued:?}"
    );
    // Device: directly after the step in progress, no other step started in between.
    let overtook: Vec<&Event> = events
        .iter()
        .filter(|e| e.name == "GPU_START" && e.job != critical && e.ms > gpu_queue && e.ms < gpu)
        .collect();
    assert!(
        overtook.is_empty(),
        "device steps started ahead of CRITICAL: {overtook:?}"
    );
    // Latency: its idle latency plus at most one device step (the one in progress), with
    // slack for a loaded 2-core CI machine.
    let bound = idle + Duration::from_secs_f64(DEVICE_MS / 1e3) + Duration::from_millis(600);
    assert!(
        loaded <= bound,
        "CRITICAL under load {loaded:?} vs idle {idle:?} (bound {bound:?})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_a_queued_job_and_bad_input_gets_clear_errors() {
    let mut d = Daemon::start(&["--synthesis-workers", "1", "--max-queued-jobs", "2"]).await;
    let c = &mut d.client;
    // Its set loaded (generated, on a fresh cache) first: a job whose set is loading is
    // queued, and with it queued too the queue below would be full one job early.
    for id in ["synthetic-2^16", "synthetic-2^10"] {
        c.preload_srs(pb::PreloadSrsRequest {
            circuit_id: id.into(),
        })
        .await
        .unwrap();
    }
    // A long job occupies the only synthesis worker: its later partitions stay queued ahead
    // of the jobs below while the device (prove queue of 2) holds the worker back...
    let busy = submit(c, synthetic(16, 6, 1, None)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...so these wait in the queue.
    let queued = submit(c, synthetic(10, 1, 2, None)).await;
    let _second = submit(c, synthetic(10, 1, 3, None)).await;
    // The queue holds 2 jobs: the next is refused.
    let full = c.submit_proof(synthetic(10, 1, 4, None)).await.unwrap_err();
    assert_eq!(full.code(), Code::ResourceExhausted, "{full:?}");

    let was_running = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: queued.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .was_running;
    assert!(!was_running);
    let r = await_done(c, &queued).await;
    assert_eq!(r.status, AwaitStatus::Cancelled as i32);

    // A timeout answers TIMEOUT and leaves the job alone.
    let t = c
        .await_proof(pb::AwaitProofRequest {
            job_id: busy.clone(),
            timeout_ms: 1,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(t.status, AwaitStatus::Timeout as i32);

    // Bad input, each named.
    let bad = |f: fn(&mut pb::SubmitProofRequest)| {
        let mut r = synthetic(10, 1, 1, None);
        f(&mut r);
        r
    };
    let cases: Vec<(pb::SubmitProofRequest, &str)> = vec![
        (bad(|r| r.proof_kind = 77), "proof_kind"),
        (bad(|r| r.proof_kind = 0), "proof_kind"),
        (bad(|r| r.priority = 9), "priority"),
        (bad(|r| r.synthetic_log_size = 40), "synthetic_log_size"),
        (bad(|r| r.synthetic_partitions = 0), "synthetic_partitions"),
        (
            rpc::submit_request(
                KindRequest::new(ProofKind::PorepSealCommit),
                None,
                String::new(),
            ),
            "vanilla_proof",
        ),
        (
            {
                let mut k = KindRequest::new(ProofKind::WinningPost);
                k.randomness = vec![0; 31];
                k.vanilla_proofs = vec![vec![1, 2, 3]];
                rpc::submit_request(k, None, String::new())
            },
            "randomness",
        ),
    ];
    for (req, field) in cases {
        let e = c.submit_proof(req).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(
            e.message().contains(field),
            "{:?} should name {field}",
            e.message()
        );
    }
    let nf = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "no-such-job".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(nf.code(), Code::NotFound);
    let nf = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(nf.code(), Code::NotFound);
    let unknown_srs = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "bogus".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown_srs.code(), Code::InvalidArgument);

    // The daemon still serves, and the long job completes.
    let r = await_done(c, &busy).await;
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{}",
        r.error_message
    );
    verify_synthetic(&r.proof, 16, 6, 1);
    let events = d.stop().await;
    assert!(events
        .iter()
        .any(|e| e.job == queued && e.name == "JOB_CANCELLED"));
    assert!(!events
        .iter()
        .any(|e| e.job == queued && e.name == "SYNTH_START"));
}

#[tokio::test(flavor = "multi_thread")]
async fn request_id_is_idempotent_and_unix_socket_serves() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("cuzk.sock");
    let mut d = Daemon::start(&["--unix-socket", sock.to_str().unwrap()]).await;
    let mut req = synthetic(10, 1, 9, None);
    req.request_id = "curio-42".into();
    let a = submit(&mut d.client, req.clone()).await;
    let b = submit(&mut d.client, req).await;
    assert_eq!(a, b);

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut unix = rpc::connect(&format!("unix:{}", sock.display()))
        .await
        .unwrap();
    let r = await_done(&mut unix, &a).await;
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{}",
        r.error_message
    );
    verify_synthetic(&r.proof, 10, 1, 9);
    let metrics = unix
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(
        metrics
            .prometheus_text
            .contains("cuzk_jobs_finished_total{kind=\"synthetic\",status=\"completed\"} 1"),
        "{}",
        metrics.prometheus_text
    );
    d.stop().await;
}

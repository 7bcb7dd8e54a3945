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

#[tokio::test(flavor = "multi_thread")]
async fn cancel_a_queued_job_and_bad_input_gets_clear_errors() {
    let mut d = Daemon::start(&["--synthesis-workers", "1", "--max-queued-jobs", "2"]).await;
    let c = &mut d.client;
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

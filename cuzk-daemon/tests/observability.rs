//! What an operator sees, end to end on a real daemon process: the HTTP /metrics endpoint
//! scraped over a plain TCP socket, GetStatus after jobs, and gRPC reflection.

mod common;

use std::time::Duration;

use common::{prove_small, synthetic, FilesDaemon as Daemon};
use cuzk_client::rpc;
use cuzk_proto::v1 as pb;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::ServerReflectionRequest;

/// One HTTP/1.1 exchange over a fresh TCP connection: (status code, headers, body).
async fn http(addr: &str, method: &str, path: &str) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut raw))
        .await
        .expect("the response arrives")
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a header block");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    (code, head.to_lowercase(), body.to_string())
}

/// The value of the sample line that starts with `series` (name and labels).
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_endpoint_and_status_describe_finished_and_cancelled_jobs() {
    let d = Daemon::start(|_| vec!["--metrics-listen=127.0.0.1:0".into()]).await;
    let started = std::time::Instant::now();
    let metrics_addr = d
        .log()
        .lines()
        .find_map(|l| l.strip_prefix("cuzk-daemon metrics on http://"))
        .and_then(|a| a.strip_suffix("/metrics"))
        .expect("the daemon announces its metrics address")
        .to_string();
    let mut c = rpc::connect(d.addr()).await.unwrap();

    prove_small(&mut c, 7).await;
    // A job large enough to be still queued or running when cancelled.
    let doomed = c
        .submit_proof(synthetic(14, 4, 8, None))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    c.cancel_proof(pb::CancelProofRequest { job_id: doomed })
        .await
        .unwrap();
    // Uptime is whole seconds.
    tokio::time::sleep(Duration::from_secs(1).saturating_sub(started.elapsed())).await;

    let (code, head, body) = http(&metrics_addr, "GET", "/metrics").await;
    assert_eq!(code, 200, "{head}");
    assert!(
        head.contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    let kind = "kind=\"synthetic\"";
    assert_eq!(
        sample(
            &body,
            &format!("cuzk_jobs_finished_total{{{kind},status=\"completed\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &body,
            &format!("cuzk_jobs_finished_total{{{kind},status=\"cancelled\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(&body, &format!("cuzk_jobs_submitted_total{{{kind}}}")),
        2.0
    );
    // The cancelled job left no queue behind.
    assert_eq!(
        sample(
            &body,
            &format!("cuzk_queue_jobs{{{kind},state=\"pending\"}}")
        ),
        0.0
    );
    // One partition went through each stage; the histograms have buckets and a count.
    for phase in ["synthesis", "device", "finalize"] {
        let series = format!("cuzk_partition_phase_seconds_count{{{kind},phase=\"{phase}\"}}");
        assert!(sample(&body, &series) >= 1.0, "{series}");
        assert!(
            body.contains(&format!(
                "cuzk_partition_phase_seconds_bucket{{le=\"+Inf\",{kind},phase=\"{phase}\"}}"
            )) || body.contains(&format!(
                "cuzk_partition_phase_seconds_bucket{{{kind},phase=\"{phase}\",le=\"+Inf\"}}"
            )),
            "{phase} buckets:\n{body}"
        );
    }
    assert!(body.contains("cuzk_job_duration_seconds_bucket{"), "{body}");
    assert!(sample(&body, "cuzk_device_busy_seconds_total{device=\"cpu\"}") > 0.0);
    let srs = sample(
        &body,
        "cuzk_srs_resident_bytes{circuit_id=\"synthetic-2^10\"}",
    );
    assert!(srs > 0.0);
    assert!(sample(&body, "cuzk_srs_resident_bytes_all") >= srs);
    assert!(sample(&body, "cuzk_uptime_seconds") >= 1.0);
    // Memory: the budget, what partitions reserved at most (the proven one, at least), and
    // the daemon's resident set (Linux).
    let budget = sample(&body, "cuzk_memory_budget_bytes");
    let reserved_peak = sample(&body, "cuzk_memory_reserved_peak_bytes");
    assert!(
        budget > 0.0 && reserved_peak > 0.0,
        "{budget} {reserved_peak}"
    );
    assert_eq!(sample(&body, "cuzk_memory_reserved_bytes"), 0.0);
    if cfg!(target_os = "linux") {
        let rss = sample(&body, "cuzk_process_resident_bytes");
        assert!(rss > 0.0 && sample(&body, "cuzk_process_resident_peak_bytes") >= rss);
    }
    // Page-locked memory: the CPU backend pins none.
    assert_eq!(sample(&body, "cuzk_pinned_host_bytes"), 0.0);
    assert_eq!(sample(&body, "cuzk_pinned_host_peak_bytes"), 0.0);
    assert!(body.trim_end().ends_with("# EOF"));

    // GetMetrics renders the same registry.
    let grpc_text = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    assert_eq!(
        sample(
            &grpc_text,
            &format!("cuzk_jobs_finished_total{{{kind},status=\"completed\"}}")
        ),
        1.0
    );

    // Anything else is refused politely, and the endpoint keeps serving.
    assert_eq!(http(&metrics_addr, "GET", "/").await.0, 404);
    assert_eq!(http(&metrics_addr, "POST", "/metrics").await.0, 405);
    let mut junk = tokio::net::TcpStream::connect(&metrics_addr).await.unwrap();
    junk.write_all(b"\x16\x03\x01 not http at all\r\n\r\n")
        .await
        .unwrap();
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), junk.read_to_end(&mut sink)).await;
    assert_eq!(http(&metrics_addr, "GET", "/metrics").await.0, 200);

    let st = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(st.uptime_seconds >= 1);
    assert_eq!(st.backend, "cpu");
    if cfg!(target_os = "linux") {
        assert!(st.rss_bytes > 0, "the daemon's resident memory is reported");
        assert!(st.peak_rss_bytes >= st.rss_bytes);
    }
    assert_eq!(
        (st.pinned_memory_bytes, st.pinned_memory_limit_bytes),
        (0, 0),
        "the CPU backend pins nothing, and no limit is set"
    );
    assert_eq!(
        (
            st.total_proofs_completed,
            st.total_proofs_failed,
            st.total_proofs_cancelled
        ),
        (1, 0, 1)
    );
    let q = st
        .queues
        .iter()
        .find(|q| q.proof_kind == "synthetic")
        .expect("a queue for the synthetic kind");
    assert_eq!((q.pending, q.in_progress), (0, 0));
    let loaded = st
        .loaded_srs
        .iter()
        .find(|s| s.circuit_id == "synthetic-2^10")
        .expect("the job's parameter set is listed");
    assert_eq!(loaded.size_bytes as f64, srs);
    assert_eq!(loaded.ref_count, 0, "no job holds it any more");
    // The CPU backend is no GPU.
    assert!(st.gpus.is_empty());
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reflection_lists_and_describes_the_proving_service() {
    let d = Daemon::start(|_| Vec::new()).await;
    let channel = tonic::transport::Endpoint::try_from(format!("http://{}", d.addr()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = ServerReflectionClient::new(channel);
    let requests = [
        MessageRequest::ListServices(String::new()),
        MessageRequest::FileContainingSymbol("cuzk.v1.ProvingEngine".into()),
    ]
    .map(|m| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(m),
    });
    let mut responses = client
        .server_reflection_info(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();

    let listed = responses.message().await.unwrap().unwrap().message_response;
    let Some(MessageResponse::ListServicesResponse(list)) = listed else {
        panic!("expected a service list, got {listed:?}");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"cuzk.v1.ProvingEngine"), "{names:?}");

    let described = responses.message().await.unwrap().unwrap().message_response;
    let Some(MessageResponse::FileDescriptorResponse(files)) = described else {
        panic!("expected a file descriptor, got {described:?}");
    };
    // The descriptor of proving.proto, which names the service's methods.
    let raw = files.file_descriptor_proto.concat();
    for needle in [&b"cuzk/v1/proving.proto"[..], b"SubmitProof", b"GetStatus"] {
        assert!(
            raw.windows(needle.len()).any(|w| w == needle),
            "{:?} missing",
            String::from_utf8_lossy(needle)
        );
    }
    d.stop().await;
}

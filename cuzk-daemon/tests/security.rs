//! TLS and the bearer token, end to end: a real daemon process, real sockets, certificates
//! made at test time with rcgen, proofs checked with bellperson's verifier.

mod common;

use std::path::Path;

use common::{prove_small, synthetic, FilesDaemon as Daemon};
use cuzk_client::rpc::{self, ConnectOptions};
use cuzk_proto::v1 as pb;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::ServerReflectionRequest;

/// A fresh CA: its certificate (PEM) and the issuer that signs with its key.
fn make_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// Writes ca.pem, cert.pem (for the name "cuzk.test" only) and key.pem into `dir`; returns
/// the daemon's TLS flags.
fn write_server_cert(dir: &Path, ca_pem: &str, ca: &Issuer<'static, KeyPair>) -> Vec<String> {
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["cuzk.test".to_string()]).unwrap();
    let cert = params.signed_by(&key, ca).unwrap();
    std::fs::write(dir.join("ca.pem"), ca_pem).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    vec![
        format!("--tls-cert={}", dir.join("cert.pem").display()),
        format!("--tls-key={}", dir.join("key.pem").display()),
    ]
}

async fn status(c: &mut rpc::Client) -> Result<pb::GetStatusResponse, tonic::Status> {
    c.get_status(pb::GetStatusRequest {})
        .await
        .map(|r| r.into_inner())
}

/// `addr` refuses us: either at connect (TLS handshakes happen there) or at the first call.
/// Returns the error text.
async fn refused(addr: &str, opts: &ConnectOptions) -> String {
    match rpc::connect_with(addr, opts).await {
        Err(e) => format!("{e:#}"),
        Ok(mut c) => status(&mut c)
            .await
            .expect_err("a call through a refused connection fails")
            .to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_listener_serves_only_clients_that_trust_its_ca() {
    let (ca_pem, ca) = make_ca("cuzk test CA");
    let d = Daemon::start(|dir| write_server_cert(dir, &ca_pem, &ca)).await;
    let addr = d.addr().to_string();
    let ca_file = d.dir.path().join("ca.pem");

    // Plaintext HTTP/2 to a TLS listener: no call gets through.
    let e = refused(&addr, &ConnectOptions::default()).await;
    assert!(!e.is_empty());

    // A client that trusts another CA refuses the daemon's certificate.
    let (other_pem, _) = make_ca("some other CA");
    let other_file = d.dir.path().join("other-ca.pem");
    std::fs::write(&other_file, other_pem).unwrap();
    let e = refused(
        &addr,
        &ConnectOptions {
            tls_ca: Some(other_file),
            tls_domain: Some("cuzk.test".into()),
            token: None,
        },
    )
    .await;
    assert!(e.to_lowercase().contains("certificate"), "{e}");

    // The right CA but the wrong name: refused too (the certificate names cuzk.test only).
    let e = refused(
        &format!("https://{addr}"),
        &ConnectOptions {
            tls_ca: Some(ca_file.clone()),
            tls_domain: None,
            token: None,
        },
    )
    .await;
    assert!(e.to_lowercase().contains("certificate"), "{e}");

    // Trusting the CA, with the certificate's name: a proof completes and verifies. The
    // bare host:port form: a CA implies TLS.
    let trusting = ConnectOptions {
        tls_ca: Some(ca_file),
        tls_domain: Some("cuzk.test".into()),
        token: None,
    };
    let mut c = rpc::connect_with(&addr, &trusting).await.unwrap();
    prove_small(&mut c, 41).await;
    assert_eq!(status(&mut c).await.unwrap().total_proofs_completed, 1);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn token_guards_every_cuzk_call_but_not_health_on_tcp_and_unix() {
    let d = Daemon::start(|dir| {
        std::fs::write(dir.join("token"), "correct-horse-battery\n").unwrap();
        vec![
            format!("--auth-token-file={}", dir.join("token").display()),
            format!("--unix-socket={}", dir.join("cuzk.sock").display()),
        ]
    })
    .await;
    let addr = d.addr().to_string();
    let sock = d.dir.path().join("cuzk.sock");
    let unix = format!("unix:{}", sock.display());
    let with_token = |t: &str| ConnectOptions {
        token: Some(t.to_string()),
        ..Default::default()
    };

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the socket is the owner's only");

    for a in [&addr, &unix] {
        // No token: every cuzk.v1 method is refused, nothing is queued.
        let mut c = rpc::connect(a).await.unwrap();
        let e = status(&mut c).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
        assert!(e.message().contains("authorization"), "{}", e.message());
        let e = c.submit_proof(synthetic(10, 1, 1, None)).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);
        let e = c.get_metrics(pb::GetMetricsRequest {}).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);

        // A wrong token, and the right one with a character missing.
        for wrong in ["nope", "correct-horse-batter"] {
            let mut c = rpc::connect_with(a, &with_token(wrong)).await.unwrap();
            let e = c
                .cancel_proof(pb::CancelProofRequest {
                    job_id: "job-1".into(),
                })
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
            assert!(e.message().contains("invalid bearer token"));
        }
    }

    // Health stays open: a load balancer probes without credentials.
    let channel = tonic::transport::Endpoint::try_from(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let health = HealthClient::new(channel.clone())
        .check(HealthCheckRequest {
            service: "cuzk.v1.ProvingEngine".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(health.status, ServingStatus::Serving as i32);
    // So does reflection: it describes the public API, nothing more.
    let mut reflection = ServerReflectionClient::new(channel);
    let list = reflection
        .server_reflection_info(tokio_stream::iter([ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        }]))
        .await
        .expect("reflection answers without a token")
        .into_inner()
        .message()
        .await
        .unwrap();
    assert!(list.is_some());

    // The right token: a proof completes over TCP, and the Unix socket sees it.
    let mut c = rpc::connect_with(&addr, &with_token("correct-horse-battery"))
        .await
        .unwrap();
    prove_small(&mut c, 42).await;
    let mut u = rpc::connect_with(&unix, &with_token("correct-horse-battery"))
        .await
        .unwrap();
    let st = status(&mut u).await.unwrap();
    assert_eq!(st.total_proofs_completed, 1);
    // The refused submissions above never reached the engine.
    assert_eq!(st.total_proofs_failed + st.total_proofs_cancelled, 0);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_tls_or_token_files_stop_the_daemon_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-token");
    std::fs::write(&empty, "\n").unwrap();
    let cases = [
        (
            vec![format!("--auth-token-file={}", empty.display())],
            "empty",
        ),
        (
            vec![
                format!("--tls-cert={}", dir.path().join("none.pem").display()),
                format!("--tls-key={}", dir.path().join("none.pem").display()),
            ],
            "none.pem",
        ),
        (vec![format!("--tls-cert={}", empty.display())], "--tls-key"),
    ];
    for (args, expect) in cases {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .args(["--listen", "127.0.0.1:0", "--backend", "cpu"])
            .args(&args)
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should not start");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// `allow` closes a TCP connection from outside its ranges before any request is read, and
/// counts it; the 0600 Unix socket is local and not subject to it.
#[tokio::test(flavor = "multi_thread")]
async fn allow_closes_connections_from_outside_it() {
    let d = Daemon::start(|dir| {
        vec![
            "--allow=192.0.2.0/24".to_string(),
            format!("--unix-socket={}", dir.join("cuzk.sock").display()),
        ]
    })
    .await;
    // The test connects from 127.0.0.1, outside 192.0.2.0/24.
    let e = refused(d.addr(), &ConnectOptions::default()).await;
    assert!(!e.is_empty());
    let unix = format!("unix:{}", d.dir.path().join("cuzk.sock").display());
    let mut c = rpc::connect_with(&unix, &ConnectOptions::default())
        .await
        .unwrap();
    let metrics = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    let refused_count = metrics
        .lines()
        .find_map(|l| l.strip_prefix("cuzk_connections_refused_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no refusal counter in\n{metrics}"));
    assert!(refused_count >= 1.0, "{refused_count}");
    // And loopback, once allowed, is served.
    d.stop().await;
    let d = Daemon::start(|_| vec!["--allow=127.0.0.0/8".to_string()]).await;
    let mut c = rpc::connect_with(d.addr(), &ConnectOptions::default())
        .await
        .unwrap();
    status(&mut c).await.unwrap();
    d.stop().await;
}

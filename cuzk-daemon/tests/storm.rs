//! A storm of malformed requests against a real daemon process over real sockets, while
//! valid jobs run: every SubmitProofRequest field wrong in turn, payloads over the per-kind
//! limits and over the gRPC message limit, garbage on the raw TCP socket and inside a gRPC
//! frame. Each bad request must get an error status (INVALID_ARGUMENT naming its field,
//! where there is a field), the daemon must stay up, and every valid job must complete with
//! a proof that verifies.

mod common;

use common::{await_done, param_dir};
use std::path::Path;
use std::time::Duration;

use bytes::{Buf, BufMut};
use cuzk_client::rpc::{self, Client};
use cuzk_client::spawn::SpawnedDaemon;
use cuzk_core::kinds::limits::{
    MAX_POREP_ENVELOPE_BYTES, MAX_SNAP_PARTITION_PROOFS, MAX_WINDOW_SECTOR_PROOFS,
    MAX_WINNING_SECTOR_PROOF_BYTES,
};
use cuzk_core::srs::SrsCache;
use cuzk_proto::v1 as pb;
use pb::await_proof_response::Status as AwaitStatus;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Code;

const LOG_SIZE: u32 = 10;
const PARTITIONS: u32 = 2;
const VALID_JOBS: u64 = 6;

/// A valid 2 KiB PoRep envelope (Curio's format), from the fuzz seed corpus.
fn porep_envelope() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/corpus/porep_envelope/valid-envelope-2KiB"),
    )
    .expect("the seed corpus holds a 2 KiB PoRep envelope")
}

fn base(kind: pb::ProofKind) -> pb::SubmitProofRequest {
    let mut r = pb::SubmitProofRequest {
        proof_kind: kind as i32,
        sector_size: 2048,
        miner_id: 1000,
        ..Default::default()
    };
    match kind {
        pb::ProofKind::PorepSealCommit => {
            r.registered_proof = 5; // StackedDrg2KiBV1_1
            r.vanilla_proof = porep_envelope();
            r.sector_number = 1;
        }
        pb::ProofKind::WinningPost => {
            r.registered_proof = 0; // StackedDrgWinning2KiBV1
            r.randomness = vec![7; 32];
            r.vanilla_proofs = vec![b"not bincode".to_vec()];
        }
        pb::ProofKind::WindowPostPartition => {
            r.registered_proof = 10; // StackedDrgWindow2KiBV1_1
            r.randomness = vec![7; 32];
            r.vanilla_proofs = vec![b"not bincode".to_vec()];
        }
        pb::ProofKind::SnapDealsUpdate => {
            r.registered_proof = 0; // StackedDrg2KiBV1 update
            r.comm_r_old = vec![1; 32];
            r.comm_r_new = vec![2; 32];
            r.comm_d_new = vec![3; 32];
            r.vanilla_proofs = vec![b"not bincode".to_vec()];
        }
        _ => {
            r.sector_size = 0;
            r.synthetic_log_size = LOG_SIZE;
            r.synthetic_partitions = 1;
        }
    }
    r
}

/// A malformed request and the field its INVALID_ARGUMENT must name.
struct Case {
    name: &'static str,
    req: pb::SubmitProofRequest,
    field: &'static str,
}

fn case(
    name: &'static str,
    kind: pb::ProofKind,
    field: &'static str,
    edit: impl FnOnce(&mut pb::SubmitProofRequest),
) -> Case {
    let mut req = base(kind);
    edit(&mut req);
    Case { name, req, field }
}

/// Every field wrong in turn, each kind's payload malformed, and the per-kind size limits
/// exceeded (the large ones only when `oversize`: they are 128 MiB on the wire).
fn cases(oversize: bool) -> Vec<Case> {
    use pb::ProofKind::*;
    let non_canonical = vec![0xff; 32];
    let mut v = vec![
        case("kind unset", Synthetic, "proof_kind", |r| r.proof_kind = 0),
        case("kind unknown", Synthetic, "proof_kind", |r| {
            r.proof_kind = 55
        }),
        case("priority unknown", Synthetic, "priority", |r| {
            r.priority = 9
        }),
        case("request id too long", Synthetic, "request_id", |r| {
            r.request_id = "x".repeat(300)
        }),
        case("sector size", WinningPost, "sector_size", |r| {
            r.sector_size = 4096
        }),
        case(
            "registered proof unknown",
            WinningPost,
            "registered_proof",
            |r| r.registered_proof = 999,
        ),
        case(
            "window given a winning proof",
            WindowPostPartition,
            "registered_proof",
            |r| r.registered_proof = 0,
        ),
        case(
            "porep contradicting proof",
            PorepSealCommit,
            "registered_proof",
            |r| r.registered_proof = 8,
        ),
        case("prover id (miner)", PorepSealCommit, "miner_id", |r| {
            r.miner_id = 1001
        }),
        case("sector number", PorepSealCommit, "sector_number", |r| {
            r.sector_number = 2
        }),
        case("porep payload", PorepSealCommit, "vanilla_proof", |r| {
            r.vanilla_proof = b"{\"SectorNum\": 1, \"Phase1Out\": 7}".to_vec()
        }),
        case("randomness short", WinningPost, "randomness", |r| {
            r.randomness = vec![7; 31]
        }),
        case("randomness not a scalar", WinningPost, "randomness", |r| {
            r.randomness = non_canonical.clone()
        }),
        case("winning payload", WinningPost, "vanilla_proofs", |_| {}),
        case("winning sector count", WinningPost, "vanilla_proofs", |r| {
            r.vanilla_proofs = vec![vec![0; 8]; 2]
        }),
        case(
            "partition index",
            WindowPostPartition,
            "partition_index",
            |r| r.partition_index = 5000,
        ),
        case(
            "window payload",
            WindowPostPartition,
            "vanilla_proofs",
            |_| {},
        ),
        case("comm_r_old short", SnapDealsUpdate, "comm_r_old", |r| {
            r.comm_r_old = vec![1; 31]
        }),
        case("comm_r_new empty", SnapDealsUpdate, "comm_r_new", |r| {
            r.comm_r_new.clear()
        }),
        case(
            "comm_d_new not a scalar",
            SnapDealsUpdate,
            "comm_d_new",
            |r| r.comm_d_new = non_canonical.clone(),
        ),
        case("snap payload", SnapDealsUpdate, "vanilla_proofs", |_| {}),
        case("synthetic log size", Synthetic, "synthetic_log_size", |r| {
            r.synthetic_log_size = 99
        }),
        case(
            "synthetic partitions",
            Synthetic,
            "synthetic_partitions",
            |r| r.synthetic_partitions = 0,
        ),
        case("unused payload", Synthetic, "vanilla_proof", |r| {
            r.vanilla_proof = vec![1]
        }),
        // Per-kind limits that are cheap to exceed.
        case(
            "window sector count limit",
            WindowPostPartition,
            "vanilla_proofs",
            |r| r.vanilla_proofs = vec![vec![0; 4]; MAX_WINDOW_SECTOR_PROOFS + 1],
        ),
        case(
            "snap partition count limit",
            SnapDealsUpdate,
            "vanilla_proofs",
            |r| r.vanilla_proofs = vec![vec![0; 4]; MAX_SNAP_PARTITION_PROOFS + 1],
        ),
        case("randomness limit", WindowPostPartition, "randomness", |r| {
            r.randomness = vec![7; 33]
        }),
    ];
    if oversize {
        v.push(case(
            "porep envelope limit",
            PorepSealCommit,
            "vanilla_proof",
            |r| r.vanilla_proof = vec![b' '; MAX_POREP_ENVELOPE_BYTES + 1],
        ));
        v.push(case(
            "winning entry limit",
            WinningPost,
            "vanilla_proofs",
            |r| r.vanilla_proofs = vec![vec![0; MAX_WINNING_SECTOR_PROOF_BYTES + 1]],
        ));
    }
    v
}

/// Submits every case and checks each is refused naming its field; then the other RPCs'
/// malformed requests.
async fn hammer(mut c: Client, oversize: bool) {
    for Case { name, req, field } in cases(oversize) {
        let err = c
            .submit_proof(req)
            .await
            .expect_err(&format!("{name}: accepted"));
        assert_eq!(err.code(), Code::InvalidArgument, "{name}: {err:?}");
        assert!(
            err.message().starts_with(&format!("{field}:")),
            "{name}: the message names {field}: {}",
            err.message()
        );
    }
    let err = c
        .prove(pb::ProveRequest { submit: None })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("submit"));
    let err = c
        .await_proof(pb::AwaitProofRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("job_id"));
    let err = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "job-no-such".into(),
            timeout_ms: 10,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: "job-no-such".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}

/// One message over the gRPC limit, from a client that lifts its own limit: tonic must
/// answer with a status, not drop the connection of everybody else.
async fn over_message_limit(addr: &str) {
    let c = rpc::connect(addr)
        .await
        .unwrap()
        .max_encoding_message_size(usize::MAX);
    let mut req = base(pb::ProofKind::PorepSealCommit);
    req.vanilla_proof = vec![b' '; cuzk_proto::MAX_MESSAGE_BYTES + 1];
    let err = c.clone().submit_proof(req).await.unwrap_err();
    assert!(
        matches!(err.code(), Code::OutOfRange | Code::ResourceExhausted),
        "over the message limit: {err:?}"
    );
    // The same connection still works.
    c.clone()
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("the connection survives an oversize message");
}

/// Raw bytes as the gRPC message body: garbage inside a well-formed gRPC frame.
#[derive(Clone, Default)]
struct RawCodec;
struct RawEncoder;
struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let mut out = vec![0; src.remaining()];
        src.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

/// Bytes that are no protobuf message: a length-delimited field 2 (proof_kind is a varint)
/// whose length runs past the end, then noise.
fn garbage(seed: u8) -> Vec<u8> {
    let mut v = vec![0x12, 0xff, 0xff, 0xff, 0x7f];
    v.extend((0..4096u32).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
    v
}

async fn garbage_in_grpc_frames(addr: &str) {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    for (i, method) in ["SubmitProof", "AwaitProof", "Prove", "CancelProof"]
        .into_iter()
        .enumerate()
    {
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        grpc.ready().await.unwrap();
        let path = format!("/cuzk.v1.ProvingEngine/{method}");
        let err = grpc
            .unary(
                tonic::Request::new(garbage(i as u8)),
                path.parse().unwrap(),
                RawCodec,
            )
            .await
            .expect_err(&format!("{method} accepted garbage"));
        assert!(
            matches!(err.code(), Code::Internal | Code::InvalidArgument),
            "{method}: {err:?}"
        );
    }
}

/// Writes `bytes` on a fresh TCP connection and expects the daemon to hang up within 10 s.
async fn raw_tcp(addr: &str, bytes: &[u8]) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The server may close before it has read everything: a failed write is fine.
    let _ = s.write_all(bytes).await;
    let mut buf = vec![0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the daemon kept a garbage connection open");
}

async fn garbage_on_sockets(addr: &str) {
    // Not HTTP/2 at all.
    raw_tcp(addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    raw_tcp(addr, &garbage(1)).await;
    // HTTP/2's preface and SETTINGS, then a HEADERS frame on stream 1 whose header block
    // is no HPACK.
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    let block = [0xffu8; 32];
    h2.extend_from_slice(&[0, 0, block.len() as u8, 1, 0x4 | 0x1, 0, 0, 0, 1]);
    h2.extend_from_slice(&block);
    raw_tcp(addr, &h2).await;
    // A frame of an undefined type claiming 16 MiB, cut off.
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0xff, 0xff, 0xff, 0xee, 0, 0, 0, 0, 3, 1, 2, 3]);
    raw_tcp(addr, &h2).await;
}

/// A valid job from its own connection: submitted, awaited, verified.
async fn valid_job(addr: String, seed: u64) {
    let mut c = rpc::connect(&addr).await.unwrap();
    let req = rpc::synthetic_request(LOG_SIZE, PARTITIONS, seed);
    let id = c
        .submit_proof(rpc::submit_request(req.clone(), None, String::new()))
        .await
        .expect("a valid job is accepted during the storm")
        .into_inner()
        .job_id;
    let r = await_done(&mut c, &id).await;
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "job {id}: {}",
        r.error_message
    );
    let srs = SrsCache::new(param_dir());
    cuzk_client::bench::verify_proof(&req, &r.proof, &srs)
        .unwrap_or_else(|e| panic!("job {id} (seed {seed}): {e:#}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_request_storm_while_valid_jobs_run() {
    std::env::set_var("CUZK_DAEMON", env!("CARGO_BIN_EXE_cuzk-daemon"));
    let logdir = tempfile::tempdir().unwrap();
    let log = logdir.path().join("daemon.log");
    let args: Vec<String> = ["--backend", "cpu", "--param-dir"]
        .into_iter()
        .map(String::from)
        .chain([param_dir().display().to_string()])
        .collect();
    let mut daemon = SpawnedDaemon::start(&args, &log)
        .await
        .expect("daemon starts");
    let addr = daemon.addr.clone();

    let mut storm = tokio::task::JoinSet::new();
    for seed in 0..VALID_JOBS {
        storm.spawn(valid_job(addr.clone(), 1000 + seed));
    }
    for i in 0..4 {
        let c = rpc::connect(&addr).await.unwrap();
        // One hammer also sends the 128 MiB payloads over the per-kind limits.
        storm.spawn(hammer(c, i == 0));
    }
    let a = addr.clone();
    storm.spawn(async move { over_message_limit(&a).await });
    let a = addr.clone();
    storm.spawn(async move { garbage_in_grpc_frames(&a).await });
    let a = addr.clone();
    storm.spawn(async move { garbage_on_sockets(&a).await });
    while let Some(r) = storm.join_next().await {
        if let Err(e) = r {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            panic!(
                "{e}\ndaemon log (last lines, newest first):\n{}",
                tail.join("\n")
            );
        }
    }

    assert!(
        daemon.child.try_wait().unwrap().is_none(),
        "the daemon died during the storm"
    );
    let status = rpc::connect(&addr)
        .await
        .unwrap()
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("the daemon still answers")
        .into_inner();
    assert_eq!(status.total_proofs_completed, VALID_JOBS);
    assert_eq!(status.total_proofs_failed, 0);
    daemon.stop().await.unwrap();
}

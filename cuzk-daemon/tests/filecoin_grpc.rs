//! Real Filecoin proofs through a running daemon: a 2 KiB sector sealed by the proof crates,
//! its C1 output (in Curio's envelope), PoSt vanilla proofs and SnapDeals partition proofs
//! sent over gRPC, and the returned proofs checked by the stock verifiers (verify_seal,
//! verify_winning_post, verify_window_post, verify_empty_sector_update_proof).

mod common;

use common::{await_done, param_dir};

use cuzk_client::rpc;
use cuzk_client::spawn::SpawnedDaemon;
use cuzk_core::kinds::{build_task, params, vectors};
use cuzk_core::ProofKind;
use cuzk_proto::v1 as pb;
use pb::await_proof_response::Status as AwaitStatus;

const SECTOR_2K: u64 = 2048;

#[tokio::test(flavor = "multi_thread")]
async fn four_filecoin_kinds_over_grpc_pass_the_stock_verifiers() {
    let kinds = [
        ProofKind::PorepSealCommit,
        ProofKind::WinningPost,
        ProofKind::WindowPostPartition,
        ProofKind::SnapDealsUpdate,
    ];
    let dir = param_dir();
    // Generated once per machine; later runs find the files and skip this.
    params::generate(SECTOR_2K, &kinds, &dir, &mut |p| {
        eprintln!("params: {} {:?}", p.srs_id, p.state)
    })
    .expect("2 KiB parameters");
    params::use_parameter_dir(&dir).unwrap();
    let vectors_dir = tempfile::tempdir().unwrap();

    std::env::set_var("CUZK_DAEMON", env!("CARGO_BIN_EXE_cuzk-daemon"));
    let log = vectors_dir.path().join("daemon.log");
    let args = vec![
        "--backend".to_string(),
        "cpu".into(),
        "--param-dir".into(),
        dir.display().to_string(),
    ];
    let daemon = SpawnedDaemon::start(&args, &log)
        .await
        .expect("daemon starts");
    let mut client = rpc::connect(&daemon.addr).await.unwrap();

    for kind in kinds {
        let manifest = vectors::generate(kind, SECTOR_2K, vectors_dir.path())
            .unwrap_or_else(|e| panic!("{kind}: sealing test vectors: {e}"));
        let req = manifest.request(vectors_dir.path()).unwrap();
        let partitions = build_task(&req).unwrap().partitions();
        let wire = rpc::submit_request(req.clone(), None, format!("e2e-{kind}"));
        let id = client.submit_proof(wire).await.unwrap().into_inner().job_id;
        let r = await_done(&mut client, &id).await;
        assert_eq!(
            r.status,
            AwaitStatus::Completed as i32,
            "{kind}: {}",
            r.error_message
        );
        assert_eq!(r.proof.len(), 192 * partitions, "{kind}");
        // The stock verifier, in this process, on the bytes the daemon returned.
        build_task(&req)
            .unwrap()
            .verify_job(&r.proof)
            .unwrap_or_else(|e| panic!("{kind}: stock verifier rejects the daemon's proof: {e}"));
        // A flipped byte must be rejected: the check above can fail.
        let mut bad = r.proof.clone();
        bad[100] ^= 1;
        assert!(
            build_task(&req).unwrap().verify_job(&bad).is_err(),
            "{kind}"
        );
    }
    let status = client
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.total_proofs_completed, 4);
    assert!(status
        .loaded_srs
        .iter()
        .any(|s| s.circuit_id.starts_with("porep")));
    daemon.stop().await.unwrap();
}

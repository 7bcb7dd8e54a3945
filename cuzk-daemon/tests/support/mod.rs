//! Shared by security.rs and observability.rs: a real `cuzk-daemon` process on the CPU
//! backend, and synthetic proofs checked with bellperson's verifier.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};

use bellperson::groth16::{self, Proof};
use blstrs::Bls12;
use cuzk_client::rpc;
use cuzk_client::spawn::SpawnedDaemon;
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_proto::v1 as pb;
use pb::await_proof_response::Status as AwaitStatus;

/// Parameter files persist across runs (generated once per machine).
pub fn param_dir() -> PathBuf {
    std::env::var_os("CUZK_PARAM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/tmp".into()))
                .join(".cache/cuzk/params")
        })
}

pub struct Daemon {
    pub inner: Option<SpawnedDaemon>,
    /// Holds the log and whatever files a test writes (certificates, tokens, sockets).
    pub dir: tempfile::TempDir,
}

impl Daemon {
    /// Start the daemon on 127.0.0.1:0. `extra` may write files into the daemon's directory
    /// (certificates, a token) and returns the further flags, which may name them.
    pub async fn start(extra: impl FnOnce(&Path) -> Vec<String>) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = vec![
            "--backend".into(),
            "cpu".into(),
            "--synthesis-workers".into(),
            "1".into(),
            "--param-dir".into(),
            param_dir().display().to_string(),
        ];
        args.extend(extra(dir.path()));
        std::env::set_var("CUZK_DAEMON", env!("CARGO_BIN_EXE_cuzk-daemon"));
        let d = SpawnedDaemon::start(&args, &dir.path().join("daemon.log"))
            .await
            .expect("daemon starts");
        Daemon {
            inner: Some(d),
            dir,
        }
    }

    pub fn addr(&self) -> &str {
        &self.inner.as_ref().unwrap().addr
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    pub async fn stop(mut self) -> String {
        self.inner.take().unwrap().stop().await.unwrap();
        self.log()
    }
}

/// A synthetic request of 2^log constraints, one partition.
pub fn synthetic(log: u32, partitions: u32, seed: u64) -> pb::SubmitProofRequest {
    rpc::submit_request(
        rpc::synthetic_request(log, partitions, seed),
        None,
        String::new(),
    )
}

/// Prove a 2^10 synthetic job through `client` and check the proof with bellperson.
pub async fn prove_small(client: &mut rpc::Client, seed: u64) {
    let r = client
        .prove(pb::ProveRequest {
            submit: Some(synthetic(10, 1, seed)),
        })
        .await
        .expect("Prove succeeds")
        .into_inner()
        .result
        .expect("a result");
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{}",
        r.error_message
    );
    verify_synthetic(&r.proof, 10, seed);
}

/// Check a one-partition synthetic proof against the key and its public inputs.
pub fn verify_synthetic(proof: &[u8], log: u32, seed: u64) {
    assert_eq!(proof.len(), 192);
    let path = param_dir().join(format!("cuzk-synthetic-2^{log}-v1.params"));
    let params = cuzk_core::srs::read_params(Path::new(&path)).unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    let p = Proof::<Bls12>::read(proof).unwrap();
    let inputs = SyntheticCircuit::new(log, seed).public_inputs();
    assert!(groth16::verify_proof(&pvk, &p, &inputs).unwrap());
}

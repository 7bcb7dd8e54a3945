//! Helpers shared by the tests that run a real `cuzk-daemon` process: starting and stopping
//! it, synthetic requests, verifying their proofs, and reading its TIMELINE back.
//! `Daemon` comes with a plaintext client; `FilesDaemon` has a directory for the files a
//! test hands the daemon (certificates, tokens, sockets) and leaves connecting to the test.
// Each test binary uses its own subset.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bellperson::groth16::{self, Proof};
use blstrs::Bls12;
use cuzk_client::rpc::{self, Client};
use cuzk_client::spawn::SpawnedDaemon;
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::Priority;
use cuzk_proto::v1 as pb;
use pb::await_proof_response::Status as AwaitStatus;

/// Parameter files persist across runs (CI's second run skips generation).
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
    pub client: Client,
    _logdir: tempfile::TempDir,
    pub log: PathBuf,
}

impl Daemon {
    /// A daemon on the CPU backend with a data directory of its own.
    pub async fn start(extra: &[&str]) -> Daemon {
        Self::start_with(extra, &[]).await
    }

    /// As `start`, with environment variables (e.g. CUZK_TEST_HOOKS) for the daemon. Pass
    /// `--data-dir` in `extra` to choose the data directory (the journal).
    pub async fn start_with(extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        std::env::set_var("CUZK_DAEMON", env!("CARGO_BIN_EXE_cuzk-daemon"));
        let logdir = tempfile::tempdir().unwrap();
        let log = logdir.path().join("daemon.log");
        let mut args: Vec<String> = vec![
            "--backend".into(),
            "cpu".into(),
            "--param-dir".into(),
            param_dir().display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let d = SpawnedDaemon::start_with_env(&args, env, &log)
            .await
            .expect("daemon starts");
        let client = rpc::connect(&d.addr).await.expect("client connects");
        Daemon {
            inner: Some(d),
            client,
            _logdir: logdir,
            log,
        }
    }

    /// Stop the daemon (SIGTERM) and return its TIMELINE lines.
    pub async fn stop(mut self) -> Vec<Event> {
        self.inner.take().unwrap().stop().await.unwrap();
        self.events()
    }

    /// SIGKILL: no chance to clean up, as in a crash or an OOM kill.
    pub async fn kill9(mut self) -> Vec<Event> {
        let mut d = self.inner.take().unwrap();
        d.child.start_kill().unwrap();
        d.child.wait().await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.events()
    }

    /// The TIMELINE lines written so far.
    pub fn events(&self) -> Vec<Event> {
        parse_timeline(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// Wait until the TIMELINE satisfies `cond` (polling the log); panics after `limit`.
    pub async fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        cond: impl Fn(&[Event]) -> bool,
    ) -> Vec<Event> {
        let deadline = Instant::now() + limit;
        loop {
            let ev = self.events();
            if cond(&ev) {
                return ev;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    pub ms: f64,
    pub name: String,
    pub job: String,
    pub detail: HashMap<String, String>,
}

/// Whether `events` hold an `name` event of job `job`.
pub fn has(events: &[Event], job: &str, name: &str) -> bool {
    events.iter().any(|e| e.job == job && e.name == name)
}

pub fn parse_timeline(log: &str) -> Vec<Event> {
    let mut out: Vec<Event> = log
        .lines()
        .filter(|l| l.starts_with("TIMELINE,"))
        .map(|l| {
            let f: Vec<&str> = l.splitn(5, ',').collect();
            assert_eq!(f.len(), 5, "malformed TIMELINE line {l:?}");
            let detail = f[4]
                .split(';')
                .filter(|kv| !kv.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').expect("key=value");
                    (k.to_string(), v.to_string())
                })
                .collect();
            Event {
                ms: f[1].parse().expect("offset is a number"),
                name: f[2].to_string(),
                job: f[3].to_string(),
                detail,
            }
        })
        .collect();
    out.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    out
}

pub fn synthetic(
    log: u32,
    partitions: u32,
    seed: u64,
    priority: Option<Priority>,
) -> pb::SubmitProofRequest {
    rpc::submit_request(
        rpc::synthetic_request(log, partitions, seed),
        priority,
        String::new(),
    )
}

/// Check each 192-byte partition proof against the synthetic key and its public inputs.
pub fn verify_synthetic(proof: &[u8], log: u32, partitions: u32, seed: u64) {
    assert_eq!(proof.len(), 192 * partitions as usize);
    let path = param_dir().join(format!("cuzk-synthetic-2^{log}-v1.params"));
    let params = cuzk_core::srs::read_params(Path::new(&path)).unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    for (i, chunk) in proof.chunks(192).enumerate() {
        let p = Proof::<Bls12>::read(chunk).unwrap();
        let inputs = SyntheticCircuit::new(log, seed + i as u64).public_inputs();
        assert!(
            groth16::verify_proof(&pvk, &p, &inputs).unwrap(),
            "partition {i} of 2^{log}"
        );
    }
}

/// Submits `req`, which must be accepted; returns its job id.
pub async fn submit(c: &mut Client, req: pb::SubmitProofRequest) -> String {
    c.submit_proof(req).await.unwrap().into_inner().job_id
}

pub async fn await_done(c: &mut Client, id: &str) -> pb::AwaitProofResponse {
    c.await_proof(pb::AwaitProofRequest {
        job_id: id.into(),
        timeout_ms: 0,
    })
    .await
    .unwrap()
    .into_inner()
}

/// A daemon on the CPU backend whose flags may name files the test writes first.
pub struct FilesDaemon {
    pub inner: Option<SpawnedDaemon>,
    /// Holds the log and whatever files a test writes (certificates, tokens, sockets).
    pub dir: tempfile::TempDir,
}

impl FilesDaemon {
    /// Start the daemon on 127.0.0.1:0. `extra` may write files into the daemon's directory
    /// (certificates, a token) and returns the further flags, which may name them.
    pub async fn start(extra: impl FnOnce(&Path) -> Vec<String>) -> FilesDaemon {
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
        FilesDaemon {
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

/// Prove a 2^10 synthetic job through `client` and check the proof with bellperson.
pub async fn prove_small(client: &mut rpc::Client, seed: u64) {
    let r = client
        .prove(pb::ProveRequest {
            submit: Some(synthetic(10, 1, seed, None)),
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
    verify_synthetic(&r.proof, 10, 1, seed);
}

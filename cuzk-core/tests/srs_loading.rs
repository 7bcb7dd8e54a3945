//! Parameter sets load off the synthesis workers (loading.rs): a job whose set is loading
//! holds no worker, so jobs on resident sets flow past it; a set that fails to load fails
//! the jobs waiting for it and no other.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use cuzk_core::config::{BackendChoice, EngineConfig};
use cuzk_core::engine::{Engine, TestHooks};
use cuzk_core::job::{JobState, ProofKind, SubmitRequest};
use cuzk_core::kinds::KindRequest;

/// This binary's parameter directory (one per process: the proof crates read theirs once):
/// the synthetic 2^10 and 2^11 sets, copied from the tests' cache when there (else
/// generated on first use), and a broken "2^12" set, a truncated copy of 2^10.
fn param_dir() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let cache = std::env::var_os("CUZK_PARAM_CACHE")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/cuzk/params")));
        let name = |log: u32| format!("cuzk-synthetic-2^{log}-v1.params");
        for log in [10, 11] {
            if let Some(src) = cache
                .as_ref()
                .map(|c| c.join(name(log)))
                .filter(|p| p.exists())
            {
                std::fs::copy(src, dir.path().join(name(log))).unwrap();
            }
        }
        let srs = cuzk_core::srs::SrsCache::new(dir.path());
        srs.synthetic(10).unwrap();
        let whole = std::fs::read(dir.path().join(name(10))).unwrap();
        std::fs::write(dir.path().join(name(12)), &whole[..whole.len() / 2]).unwrap();
        let path = dir.path().to_path_buf();
        (dir, path)
    });
    path
}

fn config() -> EngineConfig {
    EngineConfig {
        param_dir: param_dir().to_path_buf(),
        backend: BackendChoice::Cpu,
        synthesis_workers: 1,
        urgent_synthesis_workers: 0,
        timeline: false,
        journal: false,
        ..EngineConfig::default()
    }
}

fn synthetic(request_id: &str, log: u32, partitions: u32) -> SubmitRequest {
    let mut proof = KindRequest::new(ProofKind::Synthetic);
    proof.synthetic_log_size = log;
    proof.synthetic_partitions = partitions;
    proof.synthetic_seed = 7;
    SubmitRequest {
        request_id: request_id.into(),
        priority: None,
        proof,
    }
}

async fn state(engine: &Engine, id: &str) -> JobState {
    engine
        .await_job(id, Some(Duration::from_secs(300)))
        .await
        .unwrap()
        .expect("job finished in time")
        .state
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_waiting_for_its_set_holds_no_synthesis_worker() {
    let hooks = TestHooks {
        srs_load_delay: Duration::from_secs(8),
        ..TestHooks::default()
    };
    let engine = Engine::start_with_hooks(config(), hooks).unwrap();
    // Resident before the jobs arrive (PreloadSRS is not delayed).
    engine.preload_srs("synthetic-2^10").unwrap();
    // First in the queue, and its set takes 8 s to load: with the one synthesis worker
    // loading it, the second job would wait those 8 s.
    let slow = engine.submit(synthetic("slow", 11, 2)).unwrap().job_id;
    let fast = engine.submit(synthetic("fast", 10, 1)).unwrap().job_id;
    let t = std::time::Instant::now();
    assert_eq!(state(&engine, &fast).await, JobState::Completed);
    let waited = t.elapsed();
    assert!(
        !engine.job_state(&slow).unwrap().is_final(),
        "the slow job's set is still loading"
    );
    let resident: Vec<String> = engine
        .status()
        .srs
        .into_iter()
        .map(|s| s.circuit_id)
        .collect();
    assert!(
        !resident.iter().any(|id| id == "synthetic-2^11"),
        "2^11 loaded already ({resident:?}) after {waited:?}: the test proves nothing"
    );
    assert_eq!(state(&engine, &slow).await, JobState::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_set_that_fails_to_load_fails_its_jobs_and_no_other() {
    let engine = Engine::start(config()).unwrap();
    let broken: Vec<String> = (0..2)
        .map(|i| {
            engine
                .submit(synthetic(&format!("broken-{i}"), 12, 2))
                .unwrap()
                .job_id
        })
        .collect();
    let fine = engine.submit(synthetic("fine", 10, 1)).unwrap().job_id;
    for id in &broken {
        match state(&engine, id).await {
            JobState::Failed(msg) => assert!(
                msg.contains("cuzk-synthetic-2^12-v1.params") && msg.contains("truncated"),
                "the error names the file and what is wrong: {msg}"
            ),
            other => panic!("a job on a broken set must fail, got {other:?}"),
        }
    }
    assert_eq!(state(&engine, &fine).await, JobState::Completed);
    // A preload of the broken set reports the same error.
    let e = engine.preload_srs("synthetic-2^12").unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
}

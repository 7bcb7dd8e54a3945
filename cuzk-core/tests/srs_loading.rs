//! Parameter sets load off the synthesis workers (loading.rs): a job whose set is loading
//! holds no worker, so jobs on resident sets flow past it; a set that fails to load fails
//! the jobs waiting for it and no other. A set the device holds drops its host copy
//! (host_release.rs), and a partition retried on the CPU has it loaded again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::{Backend, BackendError, Bases, G1Bases, G2Bases, Query};
use cuzk_core::config::{BackendChoice, EngineConfig};
use cuzk_core::engine::{Engine, TestHooks};
use cuzk_core::footprint::HostCopies;
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

/// A stand-in for a GPU that keeps parameter vectors resident: the CPU backend, plus its own
/// copy of every vector it has proven with, from which it serves bases whose host copy was
/// released. `from_own_copy` counts the MSMs it served so.
#[derive(Default)]
struct HoldingBackend {
    held: Mutex<HashMap<(String, Query), Held>>,
    from_own_copy: AtomicUsize,
}

enum Held {
    G1(Vec<G1Affine>),
    G2(Vec<G2Affine>),
}

impl Held {
    fn len(&self) -> usize {
        match self {
            Held::G1(v) => v.len(),
            Held::G2(v) => v.len(),
        }
    }
}

impl HoldingBackend {
    /// The bases' points: the host's (a copy kept the first time), else the kept copy.
    fn points<A: Copy>(
        &self,
        bases: &Bases<'_, A>,
        wrap: fn(Vec<A>) -> Held,
        unwrap: fn(&Held) -> Option<&Vec<A>>,
    ) -> Result<Vec<A>, BackendError> {
        let key = (bases.srs_id.to_string(), bases.query);
        let mut held = self.held.lock().unwrap();
        if !bases.is_released() {
            if bases.query != Query::Adhoc {
                held.entry(key)
                    .or_insert_with(|| wrap(bases.points.to_vec()));
            }
            return Ok(bases.points.to_vec());
        }
        self.from_own_copy.fetch_add(1, Ordering::Relaxed);
        held.get(&key)
            .and_then(unwrap)
            .filter(|v| v.len() == bases.len)
            .cloned()
            .ok_or_else(|| BackendError::BasesReleased {
                srs_id: bases.srs_id.to_string(),
                query: bases.query,
            })
    }
}

impl Backend for HoldingBackend {
    fn name(&self) -> String {
        "holding".into()
    }

    fn host_copies(&self) -> HostCopies {
        HostCopies::Cpu
    }

    fn h_polynomial(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, BackendError> {
        CpuBackend.h_polynomial(a, b, c)
    }

    fn msm_g1(&self, bases: G1Bases<'_>, scalars: &[Scalar]) -> Result<G1Projective, BackendError> {
        let points = self.points(&bases, Held::G1, |h| match h {
            Held::G1(v) => Some(v),
            Held::G2(_) => None,
        })?;
        CpuBackend.msm_g1(G1Bases::new(bases.srs_id, Query::Adhoc, &points), scalars)
    }

    fn msm_g2(&self, bases: G2Bases<'_>, scalars: &[Scalar]) -> Result<G2Projective, BackendError> {
        let points = self.points(&bases, Held::G2, |h| match h {
            Held::G2(v) => Some(v),
            Held::G1(_) => None,
        })?;
        CpuBackend.msm_g2(G2Bases::new(bases.srs_id, Query::Adhoc, &points), scalars)
    }

    fn evict(&self, srs_id: &str) {
        self.held.lock().unwrap().retain(|(id, _), _| id != srs_id);
    }

    fn keep_for_release(&self, srs_id: &str, queries: &[(Query, usize)]) -> bool {
        let held = self.held.lock().unwrap();
        queries.iter().filter(|(_, len)| *len > 0).all(|(q, len)| {
            held.get(&(srs_id.to_string(), *q))
                .is_some_and(|h| h.len() == *len)
        })
    }
}

fn host_bytes(engine: &Engine, id: &str) -> Option<(u64, u64)> {
    let status = engine.status();
    let set = status.srs.iter().find(|s| s.circuit_id == id)?;
    Some((set.host_bytes, set.size_bytes))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_set_held_by_the_device_drops_its_host_copy_and_a_cpu_retry_loads_it_again() {
    let device = Arc::new(HoldingBackend::default());
    let hooks = TestHooks {
        device_backend: Some(device.clone()),
        // Job "faulty" fails on the stand-in device and is retried on the CPU.
        device_error: Some(Box::new(|request, dev| {
            request == "faulty" && dev == "test0"
        })),
        ..TestHooks::default()
    };
    let engine = Engine::start_with_hooks(
        EngineConfig {
            release_host_params_min_bytes: 0,
            ..config()
        },
        hooks,
    )
    .unwrap();
    let id = "synthetic-2^10";

    // The device holds every vector after the first partition: the rest prove without the
    // host copy, and every proof is verified before it is returned.
    let first = engine.submit(synthetic("first", 10, 3)).unwrap().job_id;
    assert_eq!(state(&engine, &first).await, JobState::Completed);
    let (host, size) = host_bytes(&engine, id).expect("the set is resident");
    assert!(
        host < size / 50,
        "the host keeps {host} of {size} bytes after the release"
    );
    let served = device.from_own_copy.load(Ordering::Relaxed);
    assert!(served >= 5, "{served} MSMs from the device's own copy");
    let second = engine.submit(synthetic("second", 10, 2)).unwrap().job_id;
    assert_eq!(state(&engine, &second).await, JobState::Completed);
    assert!(device.from_own_copy.load(Ordering::Relaxed) >= served + 10);

    // A device fault: the CPU, which has no copy of its own, gets the set loaded again.
    let faulty = engine.submit(synthetic("faulty", 10, 2)).unwrap().job_id;
    assert_eq!(state(&engine, &faulty).await, JobState::Completed);
    assert!(engine.status().srs.iter().any(|s| s.circuit_id == id));

    // A set below the size limit keeps its host copy.
    let engine = Engine::start_with_hooks(
        config(),
        TestHooks {
            device_backend: Some(Arc::new(HoldingBackend::default())),
            ..TestHooks::default()
        },
    )
    .unwrap();
    let kept = engine.submit(synthetic("kept", 10, 3)).unwrap().job_id;
    assert_eq!(state(&engine, &kept).await, JobState::Completed);
    let (host, size) = host_bytes(&engine, id).unwrap();
    assert_eq!(host, size, "a 2^10 set is below the default 4 GiB");
}

//! A device hands its idle memory back once it has had no work for `idle_release_ms` and the
//! engine has no partition, once per idle spell, and never with 0. The backend here is the CPU's with a counter: the CUDA
//! backend's release (its memory pool trimmed) is the same call.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::{Backend, BackendError, G1Bases, G2Bases, IdleRelease};
use cuzk_core::config::{BackendChoice, EngineConfig};
use cuzk_core::engine::{Engine, TestHooks};
use cuzk_core::footprint::HostCopies;
use cuzk_core::job::{JobState, ProofKind, SubmitRequest};
use cuzk_core::kinds::KindRequest;

/// The CPU backend, counting the releases asked of it.
#[derive(Default)]
struct Counting {
    releases: AtomicUsize,
}

impl Backend for Counting {
    fn name(&self) -> String {
        "counting".into()
    }

    fn host_copies(&self) -> HostCopies {
        HostCopies::Cpu
    }

    fn release_idle_memory(&self) -> Result<Option<IdleRelease>, BackendError> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        Ok(Some(IdleRelease {
            released: 1 << 20,
            kept: 0,
        }))
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
        CpuBackend.msm_g1(bases, scalars)
    }

    fn msm_g2(&self, bases: G2Bases<'_>, scalars: &[Scalar]) -> Result<G2Projective, BackendError> {
        CpuBackend.msm_g2(bases, scalars)
    }
}

/// The process's parameter directory (the proof crates read theirs once per process), with
/// the synthetic 2^10 set.
fn param_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        cuzk_core::srs::SrsCache::new(dir.path())
            .synthetic(10)
            .unwrap();
        dir
    })
    .path()
}

fn start(idle_release_ms: u64) -> (Engine, Arc<Counting>) {
    // Keeps the device busy long enough that an idle release inside the job would show.
    let hooks = TestHooks {
        device_delay: Duration::from_millis(4 * idle_release_ms.max(100)),
        ..TestHooks::default()
    };
    start_with(idle_release_ms, hooks)
}

fn start_with(idle_release_ms: u64, hooks: TestHooks) -> (Engine, Arc<Counting>) {
    let backend = Arc::new(Counting::default());
    let config = EngineConfig {
        param_dir: param_dir().to_path_buf(),
        backend: BackendChoice::Cpu,
        synthesis_workers: 1,
        urgent_synthesis_workers: 0,
        timeline: false,
        journal: false,
        idle_release_ms,
        ..EngineConfig::default()
    };
    let hooks = TestHooks {
        device_backend: Some(backend.clone()),
        ..hooks
    };
    (Engine::start_with_hooks(config, hooks).unwrap(), backend)
}

async fn prove_one(engine: &Engine, id: &str) {
    let mut proof = KindRequest::new(ProofKind::Synthetic);
    proof.synthetic_log_size = 10;
    proof.synthetic_partitions = 2;
    proof.synthetic_seed = 3;
    let job = engine
        .submit(SubmitRequest {
            request_id: id.into(),
            priority: None,
            proof,
        })
        .unwrap()
        .job_id;
    let done = engine
        .await_job(&job, Some(Duration::from_secs(300)))
        .await
        .unwrap()
        .expect("job finished in time");
    assert_eq!(done.state, JobState::Completed);
}

/// Waits up to `within` for the count to reach `want`.
async fn count_reaches(b: &Counting, want: usize, within: Duration) -> usize {
    let t = Instant::now();
    while b.releases.load(Ordering::SeqCst) < want && t.elapsed() < within {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    b.releases.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_device_releases_its_memory_once_per_idle_spell() {
    let idle = 400;
    let (engine, backend) = start(idle);
    // Idle from the start: one release, and no more however long it stays idle.
    assert_eq!(count_reaches(&backend, 1, Duration::from_secs(10)).await, 1);
    tokio::time::sleep(Duration::from_millis(5 * idle)).await;
    assert_eq!(backend.releases.load(Ordering::SeqCst), 1, "once per spell");

    // Two partitions, each held on the device 1.6 s: no release while they run (the
    // device is busy), one after.
    prove_one(&engine, "idle-1").await;
    assert_eq!(
        backend.releases.load(Ordering::SeqCst),
        1,
        "released while the job's partitions were proven"
    );
    assert_eq!(count_reaches(&backend, 2, Duration::from_secs(10)).await, 2);
    tokio::time::sleep(Duration::from_millis(5 * idle)).await;
    assert_eq!(backend.releases.load(Ordering::SeqCst), 2, "once per spell");
    engine.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn zero_never_releases() {
    let (engine, backend) = start(0);
    prove_one(&engine, "never").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(backend.releases.load(Ordering::SeqCst), 0);
    engine.shutdown();
}

/// A device waiting for synthesis is not idle: with each partition's synthesis taking three
/// idle periods (one worker, so the device waits that long between the two steps), nothing
/// is released until the job is done.
#[tokio::test(flavor = "multi_thread")]
async fn a_device_waiting_for_synthesis_keeps_its_memory() {
    let idle = 300;
    let hooks = TestHooks {
        synthesis_delay: Duration::from_millis(3 * idle),
        ..TestHooks::default()
    };
    let (engine, backend) = start_with(idle, hooks);
    assert_eq!(count_reaches(&backend, 1, Duration::from_secs(10)).await, 1);
    prove_one(&engine, "slow-synthesis").await;
    assert_eq!(
        backend.releases.load(Ordering::SeqCst),
        1,
        "released while a partition was in synthesis"
    );
    assert_eq!(count_reaches(&backend, 2, Duration::from_secs(10)).await, 2);
    engine.shutdown();
}

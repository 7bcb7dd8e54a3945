//! A CRITICAL partition is let onto the device between the phases of a running NORMAL step
//! (pipeline.rs, `UrgentBetween`), and waits for the whole step when that is off.
//! CPU backend, 2^10 synthetic circuits; the `phase_delay` hook makes each phase of a step
//! 400 ms longer, so the step being overtaken is long and its phases are where the test
//! catches it. Both proofs are verified by the engine (Completed) either way.

mod common;

use std::time::{Duration, Instant};

use cuzk_core::config::{BackendChoice, EngineConfig};
use cuzk_core::engine::{Engine, TestHooks};
use cuzk_core::job::{JobState, Priority, ProofKind, SubmitRequest};
use cuzk_core::kinds::KindRequest;

const PHASE_DELAY: Duration = Duration::from_millis(400);
/// Pauses in one step: after the H polynomial and after four of the five MSMs.
const PAUSES: u32 = 5;

fn synthetic(request_id: &str, priority: Priority, seed: u64) -> SubmitRequest {
    let mut proof = KindRequest::new(ProofKind::Synthetic);
    proof.synthetic_log_size = 10;
    proof.synthetic_partitions = 1;
    proof.synthetic_seed = seed;
    SubmitRequest {
        request_id: request_id.into(),
        priority: Some(priority),
        proof,
    }
}

/// When each job completed, from the submission of the CRITICAL one.
struct Run {
    critical_latency: Duration,
    normal_done_first: bool,
    /// The CRITICAL job ran on the device inside the NORMAL one's step: the device's current
    /// job went NORMAL, CRITICAL, NORMAL.
    seen_inside: bool,
}

async fn run(between: bool, seed: u64) -> Run {
    let hooks = TestHooks {
        phase_delay: PHASE_DELAY,
        ..TestHooks::default()
    };
    let engine = Engine::start_with_hooks(
        EngineConfig {
            param_dir: common::param_dir(),
            backend: BackendChoice::Cpu,
            synthesis_workers: 1,
            urgent_synthesis_workers: 1,
            urgent_between_phases: between,
            timeline: false,
            journal: false,
            ..EngineConfig::default()
        },
        hooks,
    )
    .unwrap();
    // The parameters of both (one set) loaded first, so that neither waits for them.
    let warm = engine
        .submit(synthetic("warm", Priority::Normal, seed))
        .unwrap()
        .job_id;
    let o = engine
        .await_job(&warm, Some(Duration::from_secs(300)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(o.state, JobState::Completed);

    let normal = engine
        .submit(synthetic("sealing", Priority::Normal, seed + 1))
        .unwrap()
        .job_id;
    // The job on the (one) device now.
    let current = || {
        engine
            .status()
            .devices
            .iter()
            .find_map(|d| d.current_job.as_ref().map(|(j, _)| j.to_string()))
    };
    // Until the NORMAL step holds the device.
    let t = Instant::now();
    while current().as_deref() != Some(normal.as_str()) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the NORMAL step never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let submitted = Instant::now();
    let critical = engine
        .submit(synthetic("winning", Priority::Critical, seed + 2))
        .unwrap()
        .job_id;
    let watch = async {
        // The device's current job, consecutive repeats dropped, over both steps.
        let mut order: Vec<String> = Vec::new();
        while submitted.elapsed() < 2 * PHASE_DELAY * PAUSES {
            if let Some(j) = current() {
                if order.last() != Some(&j) {
                    order.push(j);
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        order
            .windows(3)
            .any(|w| w[0] == normal && w[1] == critical && w[2] == normal)
    };
    let wait = |id: String| {
        let engine = engine.clone();
        async move {
            let o = engine
                .await_job(&id, Some(Duration::from_secs(300)))
                .await
                .unwrap()
                .expect("finished in time");
            assert_eq!(o.state, JobState::Completed, "{id}");
            Instant::now()
        }
    };
    let (critical_done, normal_done, seen_inside) =
        tokio::join!(wait(critical.clone()), wait(normal.clone()), watch);
    engine.shutdown();
    Run {
        critical_latency: critical_done - submitted,
        normal_done_first: normal_done < critical_done,
        seen_inside,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_critical_partition_runs_between_the_phases_of_a_normal_step() {
    let r = run(true, 100).await;
    assert!(
        r.seen_inside,
        "the CRITICAL step ran while the NORMAL step was on the device"
    );
    assert!(
        !r.normal_done_first,
        "the CRITICAL job finished first (latency {:?})",
        r.critical_latency
    );
    // It waited for one phase at most, not for the rest of the step (>= 4 pauses).
    assert!(
        r.critical_latency < PHASE_DELAY * (PAUSES - 1),
        "latency {:?}",
        r.critical_latency
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_it_off_a_critical_partition_waits_for_the_whole_step() {
    let r = run(false, 200).await;
    assert!(!r.seen_inside);
    // Submitted once the step began, so at least the pauses after its first phase remain.
    assert!(
        r.critical_latency >= PHASE_DELAY * (PAUSES - 1),
        "latency {:?}",
        r.critical_latency
    );
}

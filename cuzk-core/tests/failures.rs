//! Failure isolation inside the engine: a device fault is retried once on the CPU backend,
//! a second fault fails only that job, a memory budget smaller than one partition still lets
//! every job through (one partition at a time), and one too small for two partitions runs
//! them one at a time without its reservations ever exceeding it.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cuzk_core::config::{BackendChoice, EngineConfig};
use cuzk_core::engine::{Engine, TestHooks};
use cuzk_core::gate::HighWater;
use cuzk_core::job::{JobState, ProofKind, SubmitRequest};
use cuzk_core::kinds::KindRequest;

fn config() -> EngineConfig {
    EngineConfig {
        param_dir: common::param_dir(),
        backend: BackendChoice::Cpu,
        synthesis_workers: 1,
        timeline: false,
        journal: false,
        ..EngineConfig::default()
    }
}

fn synthetic(request_id: &str, partitions: u32, seed: u64) -> SubmitRequest {
    let mut proof = KindRequest::new(ProofKind::Synthetic);
    proof.synthetic_log_size = 10;
    proof.synthetic_partitions = partitions;
    proof.synthetic_seed = seed;
    SubmitRequest {
        request_id: request_id.into(),
        priority: None,
        proof,
    }
}

async fn outcome(engine: &Engine, id: &str) -> (JobState, Vec<u8>) {
    let o = engine
        .await_job(id, Some(Duration::from_secs(300)))
        .await
        .unwrap()
        .expect("job finished in time");
    (o.state, o.proof)
}

#[tokio::test(flavor = "multi_thread")]
async fn device_fault_is_retried_on_the_cpu_and_a_second_fault_fails_only_that_job() {
    // "flaky" faults on its first device step only; "broken" on every step; "fine" never.
    let steps: Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let seen = steps.clone();
    let flaky_faults = Arc::new(AtomicUsize::new(0));
    let ff = flaky_faults.clone();
    let hooks = TestHooks {
        device_error: Some(Box::new(move |request: &str, _device: &str| {
            seen.lock().unwrap().push(request.to_string());
            match request {
                "flaky" => ff.fetch_add(1, Ordering::SeqCst) == 0,
                "broken" => true,
                _ => false,
            }
        })),
        ..TestHooks::default()
    };
    let engine = Engine::start_with_hooks(config(), hooks).unwrap();
    let flaky = engine.submit(synthetic("flaky", 2, 1)).unwrap().job_id;
    let broken = engine.submit(synthetic("broken", 1, 2)).unwrap().job_id;
    let fine = engine.submit(synthetic("fine", 1, 3)).unwrap().job_id;

    // Completed means the engine's own verification accepted the proof.
    let (state, proof) = outcome(&engine, &flaky).await;
    assert_eq!(
        state,
        JobState::Completed,
        "one fault is retried on the CPU"
    );
    assert_eq!(proof.len(), 2 * 192, "both partitions proven");
    let (state, _) = outcome(&engine, &fine).await;
    assert_eq!(state, JobState::Completed);
    match outcome(&engine, &broken).await.0 {
        JobState::Failed(msg) => assert!(
            msg.contains("injected device fault"),
            "the failure names the fault: {msg}"
        ),
        other => panic!("a job failing on every device must fail, got {other:?}"),
    }

    let steps = steps.lock().unwrap();
    let count = |r: &str| steps.iter().filter(|s| *s == r).count();
    assert_eq!(count("flaky"), 3, "two partitions + one retry: {steps:?}");
    assert_eq!(count("broken"), 2, "retried exactly once: {steps:?}");
    assert_eq!(count("fine"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_smaller_than_one_partition_still_proves_everything() {
    let engine = Engine::start(EngineConfig {
        synthesized_memory_bytes: 1,
        synthesis_workers: 2,
        ..config()
    })
    .unwrap();
    let ids: Vec<String> = (0..3)
        .map(|i| {
            engine
                .submit(synthetic(&format!("budget-{i}"), 2, 10 + i))
                .unwrap()
                .job_id
        })
        .collect();
    for id in &ids {
        assert_eq!(outcome(&engine, id).await.0, JobState::Completed);
    }
    // Over the budget, but only ever one partition at a time.
    assert_eq!(engine.status().memory.reserved_peak.partitions, 1);
}

/// Runs `jobs` two-partition jobs on an engine with `budget` bytes of partition memory, two
/// synthesis workers and steps slow enough that partitions would overlap where room allows;
/// returns the reservations' high-water mark.
async fn high_water_of_two_partition_jobs(budget: u64, jobs: u64) -> HighWater {
    let hooks = TestHooks {
        synthesis_delay: Duration::from_millis(150),
        device_delay: Duration::from_millis(100),
        ..TestHooks::default()
    };
    let engine = Engine::start_with_hooks(
        EngineConfig {
            synthesized_memory_bytes: budget,
            synthesis_workers: 2,
            ..config()
        },
        hooks,
    )
    .unwrap();
    let ids: Vec<String> = (0..jobs)
        .map(|i| {
            let id = format!("pair-{budget}-{i}");
            engine.submit(synthetic(&id, 2, 40 + i)).unwrap().job_id
        })
        .collect();
    for id in &ids {
        assert_eq!(outcome(&engine, id).await.0, JobState::Completed);
    }
    let memory = engine.status().memory;
    assert_eq!(memory.budget_bytes, budget);
    assert_eq!(
        memory.reserved_bytes, 0,
        "every partition's memory given back"
    );
    memory.reserved_peak
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_too_small_for_two_partitions_runs_them_one_at_a_time() {
    // What one partition reserves (its bound from the parameters, then its real size),
    // measured on an engine with room to spare.
    let roomy = Engine::start(config()).unwrap();
    let id = roomy.submit(synthetic("one", 1, 30)).unwrap().job_id;
    assert_eq!(outcome(&roomy, &id).await.0, JobState::Completed);
    let one = roomy.status().memory.reserved_peak;
    assert_eq!(one.partitions, 1);
    let partition = one.bytes;
    assert!(partition > 0);
    roomy.shutdown();

    // Room for one and a half partitions: two never fit at once.
    let budget = partition + partition / 2;
    let peak = high_water_of_two_partition_jobs(budget, 2).await;
    assert!(
        peak.bytes <= budget,
        "reserved {} of a {budget}-byte budget",
        peak.bytes
    );
    assert_eq!(peak.partitions, 1, "one partition at a time");
    assert_eq!(peak.bytes, partition);

    // The same load with room for three overlaps, so the figures above can see overlap.
    let budget = 4 * partition;
    let peak = high_water_of_two_partition_jobs(budget, 2).await;
    assert!(peak.partitions >= 2, "{peak:?}");
    assert!(peak.bytes <= budget, "{peak:?}");
}

//! `cuzk-client bench` end to end: a small sweep (-j 1,2) through the bench library against a
//! daemon it spawns itself, and the report's numbers checked against the daemon's TIMELINE.
//!
//! The report's stage times and busy fraction are taken from the TIMELINE by the bench code
//! itself, so "agree with the TIMELINE" is checked two ways: through the stats module's own
//! functions on steps rebuilt from the log (does the driver attach the right jobs to the right
//! step?), and by recomputing the busy fraction and synthesis mean from the raw lines here (is
//! the arithmetic right?). The client's clock is checked against the daemon's: a caller
//! cannot see a proof finish sooner than the daemon finished it.

mod common;

use common::param_dir;
use std::collections::BTreeMap;

use clap::{Args, FromArgMatches};
use cuzk_client::bench::stats::{self, ProofRecord, SweepRow, SweepStep};
use cuzk_client::bench::{self, BenchArgs};
use cuzk_client::waterfall::model::{JobModel, JobOutcome, RunModel};
use cuzk_client::waterfall::{build_model, parse_timeline};

const COUNT: usize = 4;
const WARMUP: usize = 1;
const PARTITIONS: usize = 2;
const LEVELS: [usize; 2] = [1, 2];

/// The flags exactly as a user types them after `cuzk-client bench`.
fn bench_args(flags: &[String]) -> BenchArgs {
    let command = BenchArgs::augment_args(clap::Command::new("bench"));
    let matches = command
        .try_get_matches_from(std::iter::once("bench".to_string()).chain(flags.iter().cloned()))
        .expect("the bench flags parse");
    BenchArgs::from_arg_matches(&matches).expect("BenchArgs from its own matches")
}

/// One TIMELINE line, read here without the waterfall parser.
struct RawEvent {
    ms: f64,
    name: String,
    job: String,
    detail: BTreeMap<String, String>,
}

fn raw_events(log: &str) -> Vec<RawEvent> {
    log.lines()
        .filter_map(|l| l.strip_prefix("TIMELINE,"))
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, ',').collect();
            assert_eq!(f.len(), 4, "TIMELINE line with too few fields: {l:?}");
            RawEvent {
                ms: f[0].parse().expect("offset_ms is a number"),
                name: f[1].to_string(),
                job: f[2].to_string(),
                detail: f[3]
                    .split(';')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }
        })
        .collect()
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0)
}

/// The step's records as the TIMELINE alone tells them: every job counted as the client
/// reported it (all completed), times on the daemon's clock.
fn step_from_timeline(concurrency: usize, jobs: &[&JobModel], model: &RunModel) -> SweepStep {
    let mut records: Vec<ProofRecord> = jobs
        .iter()
        .map(|j| {
            let (start, end) = j.extent().expect("a logged job has an extent");
            ProofRecord {
                job_id: j.job_id.clone(),
                submitted_s: start / 1e3,
                finished_s: end / 1e3,
                ok: true,
                queue_wait_ms: None,
                synth_ms: Vec::new(),
                prove_ms: Vec::new(),
            }
        })
        .collect();
    stats::fill_from_timeline(&mut records, model);
    SweepStep {
        concurrency,
        records,
    }
}

/// Device-busy fraction over [from, to], from GPU_START/GPU_END pairs of the raw lines:
/// the union of busy intervals per device, averaged over devices.
fn busy_fraction(events: &[RawEvent], from: f64, to: f64) -> f64 {
    let mut open: BTreeMap<(String, String, String), f64> = BTreeMap::new();
    let mut by_device: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut sorted: Vec<&RawEvent> = events.iter().collect();
    sorted.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    for e in sorted {
        let key = || {
            (
                e.job.clone(),
                e.detail["partition"].clone(),
                e.detail["device"].clone(),
            )
        };
        match e.name.as_str() {
            "GPU_START" => {
                open.insert(key(), e.ms);
            }
            "GPU_END" => {
                let start = open.remove(&key()).expect("GPU_END after its GPU_START");
                by_device
                    .entry(e.detail["device"].clone())
                    .or_default()
                    .push((start.max(from), e.ms.min(to)));
            }
            _ => {}
        }
    }
    assert!(!by_device.is_empty(), "no device work in the TIMELINE");
    let fractions: Vec<f64> = by_device
        .into_values()
        .map(|mut spans| {
            spans.retain(|(s, e)| s < e);
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut busy, mut cursor) = (0.0, f64::NEG_INFINITY);
            for (s, e) in spans {
                let s = s.max(cursor);
                if e > s {
                    busy += e - s;
                    cursor = e;
                }
            }
            busy / (to - from)
        })
        .collect();
    fractions.iter().sum::<f64>() / fractions.len() as f64
}

/// Mean SYNTH_START..SYNTH_END of the given jobs' partitions, from the raw lines.
fn mean_synthesis_ms(events: &[RawEvent], jobs: &[&str]) -> f64 {
    let mut starts = BTreeMap::new();
    let mut durations = Vec::new();
    for e in events.iter().filter(|e| jobs.contains(&e.job.as_str())) {
        let key = (e.job.clone(), e.detail.get("partition").cloned());
        match e.name.as_str() {
            "SYNTH_START" => {
                starts.insert(key, e.ms);
            }
            "SYNTH_END" => durations.push(e.ms - starts[&key]),
            _ => {}
        }
    }
    assert_eq!(durations.len(), jobs.len() * PARTITIONS);
    durations.iter().sum::<f64>() / durations.len() as f64
}

/// Whether any two of the jobs were in the daemon at the same time.
fn any_overlap(jobs: &[&JobModel]) -> bool {
    let mut extents: Vec<(f64, f64)> = jobs.iter().filter_map(|j| j.extent()).collect();
    extents.sort_by(|a, b| a.0.total_cmp(&b.0));
    extents.windows(2).any(|w| w[1].0 < w[0].1)
}

fn check_row(row: &SweepRow, jobs: &[&JobModel], model: &RunModel, events: &[RawEvent]) {
    let j = row.concurrency;
    assert_eq!((row.completed, row.failed), (COUNT, 0), "J={j}: {row:?}");
    assert_eq!(jobs.len(), COUNT, "J={j}: jobs in the TIMELINE");
    for job in jobs {
        assert_eq!(job.outcome, JobOutcome::Done, "J={j}: job {}", job.job_id);
        assert_eq!(
            job.partitions.len(),
            PARTITIONS,
            "J={j}: job {}",
            job.job_id
        );
    }

    let step = step_from_timeline(j, jobs, model);
    let problems = stats::disagreements(&step, model);
    assert!(problems.is_empty(), "J={j}: {problems:?}");

    // The driver's figures are the stats module's on the same jobs: the right jobs went
    // into the step and the TIMELINE's times, not the reply's whole milliseconds, were used.
    let expected = stats::sweep_row(&step, Some(model));
    for (name, got, want) in [
        (
            "queue wait",
            row.mean_queue_wait_ms,
            expected.mean_queue_wait_ms,
        ),
        ("synthesis", row.mean_synth_ms, expected.mean_synth_ms),
        ("prove", row.mean_prove_ms, expected.mean_prove_ms),
        ("busy", row.prove_busy, expected.prove_busy),
    ] {
        let (got, want) = (got.expect(name), want.expect(name));
        assert!(close(got, want, 1e-9), "J={j}: {name}: {got} vs {want}");
    }

    // And the same arithmetic done here from the raw lines.
    let ids: Vec<&str> = jobs.iter().map(|j| j.job_id.as_str()).collect();
    let synth = mean_synthesis_ms(events, &ids);
    assert!(
        close(row.mean_synth_ms.unwrap(), synth, 1e-6),
        "J={j}: synthesis {} vs {synth} from the raw lines",
        row.mean_synth_ms.unwrap()
    );
    let from = jobs
        .iter()
        .filter_map(|j| j.queued_ms)
        .fold(f64::MAX, f64::min);
    let to = jobs
        .iter()
        .filter_map(|j| j.ended_ms)
        .fold(f64::MIN, f64::max);
    let busy = row.prove_busy.unwrap();
    assert!(busy > 0.0 && busy <= 1.0, "J={j}: busy fraction {busy}");
    let raw_busy = busy_fraction(events, from, to);
    assert!(
        close(busy, raw_busy, 1e-6),
        "J={j}: busy {busy} vs {raw_busy} from the raw lines"
    );

    // The client's clock brackets the daemon's: submission before JOB_QUEUED, the reply
    // after JOB_DONE. (A millisecond of slack for the log's three decimals.)
    assert!(
        row.wall_s * 1e3 >= to - from - 1.0,
        "J={j}: wall {} s, daemon busy with the step {} ms",
        row.wall_s,
        to - from
    );
    let longest = jobs
        .iter()
        .map(|j| j.ended_ms.unwrap() - j.queued_ms.unwrap())
        .fold(0.0, f64::max);
    let max_latency = row.latency_max_s.unwrap();
    assert!(
        max_latency * 1e3 >= longest - 1.0,
        "J={j}: latency max {max_latency} s, longest job in the daemon {longest} ms"
    );
    assert!(row.latency_p50_s.unwrap() <= max_latency);
    assert!(close(
        row.s_per_proof.unwrap(),
        row.wall_s / COUNT as f64,
        1e-12
    ));
    assert!(close(
        row.proofs_per_hour,
        COUNT as f64 * 3600.0 / row.wall_s,
        1e-12
    ));

    // -j is what was in flight: one at a time at J=1, overlapping at J=2.
    assert_eq!(
        any_overlap(jobs),
        j > 1,
        "J={j}: jobs overlapping in the daemon"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_numbers_agree_with_the_timeline() {
    std::env::set_var("CUZK_DAEMON", env!("CARGO_BIN_EXE_cuzk-daemon"));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("daemon.log");
    let params = param_dir().display().to_string();
    let flags: Vec<String> = [
        "--spawn",
        "--kind=synthetic",
        "--log-size=10",
        &format!("--partitions={PARTITIONS}"),
        &format!("--count={COUNT}"),
        "-j",
        "1,2",
        &format!("--warmup={WARMUP}"),
        &format!("--log={}", log.display()),
        &format!("--param-dir={params}"),
        "--daemon-arg=--backend=cpu",
        &format!("--daemon-arg=--param-dir={params}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let args = bench_args(&flags);
    assert_eq!(args.concurrency, LEVELS);

    let rows = bench::run(&args, "unused with --spawn", true)
        .await
        .expect("the sweep succeeds and every proof verifies");
    assert_eq!(
        rows.iter().map(|r| r.concurrency).collect::<Vec<_>>(),
        LEVELS
    );
    // Each level carries the daemon's memory from GetStatus (one reading: peak >= now).
    if cfg!(target_os = "linux") {
        assert!(rows
            .iter()
            .all(|r| r.rss_bytes.unwrap() > 0 && r.rss_bytes <= r.peak_rss_bytes));
    }

    let text = std::fs::read_to_string(&log).unwrap();
    let parsed = parse_timeline(&text);
    assert!(parsed.malformed.is_empty(), "{:?}", parsed.malformed);
    let model = build_model(&parsed.events);
    let events = raw_events(&text);

    // Jobs in queue order: the warm-up, then each level's, since a level starts only once
    // the previous one has finished.
    let mut jobs: Vec<&JobModel> = model.jobs.iter().collect();
    jobs.sort_by(|a, b| a.queued_ms.unwrap().total_cmp(&b.queued_ms.unwrap()));
    assert_eq!(
        jobs.len(),
        WARMUP + COUNT * LEVELS.len(),
        "jobs in the TIMELINE"
    );
    for (level, row) in rows.iter().enumerate() {
        let start = WARMUP + level * COUNT;
        check_row(row, &jobs[start..start + COUNT], &model, &events);
    }
}

/// `bench --load --probe` against a daemon it spawns: synthetic NORMAL load, a CRITICAL
/// synthetic probe. Real CPU proving (no test hooks: they would reach the other test's daemon
/// through the environment), so only what must hold however slow the machine is asserted:
/// every job done and verified, each phase's count, and the TIMELINE showing no load work
/// started ahead of a queued probe job at either stage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_under_load_overtakes_and_reports_both_phases() {
    std::env::set_var("CUZK_DAEMON", env!("CARGO_BIN_EXE_cuzk-daemon"));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("daemon.log");
    let params = param_dir().display().to_string();
    let flags: Vec<String> = [
        "--spawn",
        "--load=synthetic:3",
        "--log-size=12",
        "--partitions=2",
        "--probe=synthetic:3",
        "--probe-log-size=10",
        "--probe-priority=critical",
        &format!("--log={}", log.display()),
        &format!("--param-dir={params}"),
        "--daemon-arg=--backend=cpu",
        "--daemon-arg=--synthesis-workers=1",
        &format!("--daemon-arg=--param-dir={params}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let args = bench_args(&flags);
    let report = bench::probe::run(&args, "unused with --spawn", true)
        .await
        .expect("the probe run succeeds and every proof verifies");
    assert_eq!(report.failed(), 0);
    assert_eq!((report.idle.jobs, report.under_load.jobs), (3, 3));
    assert!(report.idle.p50_s.is_some() && report.under_load.max_s.is_some());
    assert!(report.window_s > 0.0);
    if cfg!(target_os = "linux") {
        assert!(report.peak_rss_bytes.unwrap() > 0);
    }
    assert!(report.probe.contains("critical") && report.load.contains("normal"));
    assert_eq!(report.synth_overtaken_by, [0, 0, 0], "{report:?}");
    assert_eq!(report.device_overtaken_by, [0, 0, 0], "{report:?}");
    let (from, to) = report.daemon_window_s.expect("a TIMELINE window");
    assert!(from < to);
    // Each probe job under load has its own request id and job: six probe jobs, two warm-ups.
    let text = std::fs::read_to_string(&log).unwrap();
    let model = build_model(&parse_timeline(&text).events);
    let critical = model
        .jobs
        .iter()
        .filter(|j| j.priority.as_deref() == Some("critical"))
        .count();
    assert_eq!(
        critical,
        3 + 3 + 1,
        "probe jobs (idle, under load, warm-up)"
    );
    let rendered = bench::probe::render(&report);
    assert!(
        rendered.contains("under load") && rendered.contains("proofs/h"),
        "{rendered}"
    );
}

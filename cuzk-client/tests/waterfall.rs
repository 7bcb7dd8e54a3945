//! The waterfall rebuilt from a recorded daemon log: three jobs on two devices, with tracing
//! noise, lines out of order, a torn line and a bad offset (tests/fixtures/timeline.log).
//!
//! Every expected number below was worked out by hand from the fixture, so a change in how
//! phases are cut or percentiles are taken shows up here.

use std::path::PathBuf;

use cuzk_client::waterfall::model::{JobOutcome, SpanEnd};
use cuzk_client::waterfall::summary::IdleGap;
use cuzk_client::waterfall::{analyze, run, Analysis, Phase, WaterfallArgs};

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/timeline.log")
}

fn args() -> WaterfallArgs {
    WaterfallArgs {
        log: fixture_path(),
        out: None,
        from: None,
        to: None,
        job: None,
        summary_json: None,
    }
}

fn analyze_with(args: &WaterfallArgs) -> Analysis {
    let text = std::fs::read_to_string(fixture_path()).unwrap();
    analyze(&text, args).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn malformed_lines_are_reported_and_skipped() {
    let a = analyze_with(&args());
    let bad: Vec<(usize, &str)> = a
        .timeline
        .malformed
        .iter()
        .map(|m| (m.line, m.reason.as_str()))
        .collect();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert_eq!(bad[0].0, 21);
    assert!(bad[0].1.starts_with("expected"), "{}", bad[0].1);
    assert_eq!(bad[1].0, 55);
    assert!(bad[1].1.contains("3050.x"), "{}", bad[1].1);
    assert_eq!(a.timeline.events.len(), 48);
    // 58 lines: 48 events, 2 malformed, 8 others (tracing, a backtrace line, a blank line,
    // and a WARN line that merely mentions TIMELINE).
    assert_eq!(a.timeline.ignored_lines, 8);
}

#[test]
fn phases_of_every_partition() {
    let a = analyze_with(&args());
    let ids: Vec<&str> = a.model.jobs.iter().map(|j| j.job_id.as_str()).collect();
    // job-b's JOB_QUEUED sits after its SYNTH_START in the file; sorting puts it first.
    assert_eq!(ids, ["job-a", "job-b", "job-c"]);

    use Phase::*;
    let expected: [(&str, u32, [f64; 5]); 5] = [
        ("job-a", 0, [2.0, 1000.0, 3.0, 700.0, 25.0]),
        ("job-a", 1, [2.5, 1100.0, 2.0, 800.0, 30.0]),
        ("job-a", 2, [1002.0, 1200.0, 1.0, 700.0, 20.0]),
        ("job-b", 0, [612.5, 300.0, 502.0, 200.0, 10.0]),
        ("job-c", 0, [212.0, 500.0, 1.0, 300.0, 7.0]),
    ];
    for (job, index, durations) in expected {
        let p = &a.model.job(job).unwrap().partitions[index as usize];
        assert_eq!(p.index, index);
        let got: Vec<(Phase, f64)> = p.spans.iter().map(|s| (s.phase, s.duration_ms())).collect();
        let want: Vec<(Phase, f64)> = Phase::ALL.into_iter().zip(durations).collect();
        assert_eq!(got, want, "{job} p{index}");
        assert!(p.spans.iter().all(|s| s.is_complete()), "{job} p{index}");
        assert!(p.is_finalized());
        assert_eq!(p.verified, Some(true));
    }

    let a0 = &a.model.job("job-a").unwrap().partitions[0];
    assert_eq!((a0.spans[0].start_ms, a0.spans[0].end_ms), (10.0, 12.0));
    assert_eq!(a0.spans[3].device.as_deref(), Some("cuda0"));
    assert_eq!(a0.worker.as_deref(), Some("0"));
    // GPU_LOCK_WAIT, then NTT_END and MSM_END, both written at GPU_END (1715) as the engine
    // does, placed by their durations after GPU_START (1015): 200 ms NTT, 400 ms MSM.
    let at: Vec<f64> = a0.markers.iter().map(|m| m.at_ms).collect();
    assert_eq!(at, [1013.0, 1215.0, 1615.0]);

    // job-c failed while partition 1 was on cuda0: that span is cut at the failure.
    let c = a.model.job("job-c").unwrap();
    assert_eq!(
        c.outcome,
        JobOutcome::Failed {
            error: "cuda0 out of memory".into()
        }
    );
    let c1 = &c.partitions[1];
    let last = c1.spans.last().unwrap();
    assert_eq!(
        (
            last.phase,
            last.start_ms,
            last.end_ms,
            last.end,
            last.device.as_deref()
        ),
        (DeviceWork, 2913.0, 3100.0, SpanEnd::JobEnded, Some("cuda0"))
    );
    assert_eq!(c1.phase_ms(DeviceWait), Some(312.5));
    assert!(!c1.is_finalized());
    assert_eq!(a.model.job("job-b").unwrap().outcome, JobOutcome::Done);
}

#[test]
fn phase_percentiles() {
    let a = analyze_with(&args());
    let s = &a.summary;
    assert_eq!((s.view.from_ms, s.view.to_ms), (10.0, 3100.0));
    assert_eq!(
        (s.jobs, s.jobs_done, s.jobs_failed, s.partitions),
        (3, 2, 1, 6)
    );
    // (n, p50, p95, max); nearest rank, so each is a duration that occurred.
    let expected = [
        (Phase::QueueWait, 6, 2.5, 1002.0, 1002.0),
        (Phase::Synthesis, 6, 600.0, 1200.0, 1200.0),
        (Phase::DeviceWait, 6, 2.0, 502.0, 502.0),
        // job-c p1's device work was cut short by the failure, so only five count.
        (Phase::DeviceWork, 5, 700.0, 800.0, 800.0),
        (Phase::Finalize, 5, 20.0, 30.0, 30.0),
    ];
    for (phase, n, p50, p95, max) in expected {
        let st = s.phase(phase).unwrap();
        assert_eq!(
            (st.count, st.p50_ms, st.p95_ms, st.max_ms),
            (n, p50, p95, max),
            "{phase:?}"
        );
    }
    assert!(close(
        s.phase(Phase::Synthesis).unwrap().mean_ms,
        4700.0 / 6.0
    ));
}

#[test]
fn device_busy_fraction_and_idle_gaps() {
    let a = analyze_with(&args());
    let cuda0 = a.summary.device("cuda0").unwrap();
    // [1015, 1715] + [2213, 2913] + [2913, 3100] (cut by the failure, but the device was
    // busy) merge into 700 + 887 ms over the 3090 ms run.
    assert_eq!(cuda0.busy_ms, 1587.0);
    assert!(close(cuda0.busy_fraction, 1587.0 / 3090.0));
    assert_eq!(cuda0.spans, 3);
    let gaps: Vec<(f64, f64)> = cuda0
        .idle_gaps
        .iter()
        .map(|g| (g.start_ms, g.end_ms))
        .collect();
    assert_eq!(gaps, [(10.0, 1015.0), (1715.0, 2213.0)]);

    let cuda1 = a.summary.device("cuda1").unwrap();
    // job-b p0 takes cuda1 the instant job-a p1 lets go: one busy stretch, no gap.
    assert_eq!(cuda1.busy_ms, 1300.0);
    assert!(close(cuda1.busy_fraction, 1300.0 / 3090.0));
    assert_eq!(
        cuda1.longest_gap(),
        Some(&IdleGap {
            start_ms: 10.0,
            end_ms: 1114.5
        })
    );
    assert_eq!(cuda1.idle_gaps.len(), 3);
    let devices: Vec<&str> = a.model.devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(devices, ["cuda0", "cuda1"]);
}

#[test]
fn synthesis_by_partitions_in_flight() {
    let a = analyze_with(&args());
    let load = a.summary.load(Phase::Synthesis).unwrap();
    let points: Vec<(u32, usize, f64)> = load
        .points
        .iter()
        .map(|p| (p.in_flight, p.count, p.mean_ms))
        .collect();
    // a0 and a1 ran with about 2 partitions in flight, a2, c0 and c1 with about 3 (a2:
    // 4084 ms-partitions over 1200 ms), b0 with 4.
    assert_eq!(points.len(), 3);
    assert_eq!((points[0].0, points[0].1, points[0].2), (2, 2, 1050.0));
    assert_eq!((points[1].0, points[1].1), (3, 3));
    assert!(close(points[1].2, 2300.0 / 3.0));
    assert_eq!((points[2].0, points[2].1, points[2].2), (4, 1, 300.0));
    assert!(close(load.growth().unwrap(), 300.0 / 1050.0));
}

#[test]
fn zoom_window_counts_spans_that_start_in_it() {
    let mut zoom = args();
    zoom.from = Some(1.0);
    zoom.to = Some(2.0);
    let a = analyze_with(&zoom);
    let s = &a.summary;
    assert_eq!((s.view.from_ms, s.view.to_ms), (1000.0, 2000.0));
    // Synthesis spans starting in [1, 2] s: job-a p2 and job-b p0.
    assert_eq!(s.phase(Phase::Synthesis).unwrap().count, 2);
    // job-c was queued at exactly 2.000 s: its two queue waits start on the edge.
    assert_eq!(s.phase(Phase::QueueWait).unwrap().count, 2);
    let cuda0 = s.device("cuda0").unwrap();
    assert_eq!((cuda0.busy_ms, cuda0.busy_fraction), (700.0, 0.7));
    let cuda1 = s.device("cuda1").unwrap();
    assert_eq!(cuda1.busy_ms, 2000.0 - 1114.5);
}

#[test]
fn job_filter_shows_one_job_over_its_extent() {
    let mut only_b = args();
    only_b.job = Some("job-b".into());
    let a = analyze_with(&only_b);
    let s = &a.summary;
    assert_eq!((s.view.from_ms, s.view.to_ms), (500.0, 2124.5));
    assert_eq!((s.jobs, s.partitions), (1, 1));
    assert_eq!(s.phase(Phase::DeviceWait).unwrap().max_ms, 502.0);
    // Devices still count every job: cuda1 ran job-a p1 then job-b p0 in this window.
    assert_eq!(s.device("cuda1").unwrap().busy_ms, 1000.0);
    assert!(a.html.contains("job-b p0 · synthesis"));
    assert!(!a.html.contains("job-a p0 · synthesis"));

    let mut unknown = args();
    unknown.job = Some("job-z".into());
    let text = std::fs::read_to_string(fixture_path()).unwrap();
    let err = analyze(&text, &unknown)
        .err()
        .expect("an unknown job is an error");
    assert!(err.to_string().contains("job-z"), "{err}");
}

#[test]
fn html_is_self_contained_and_complete() {
    let a = analyze_with(&args());
    let html = &a.html;
    assert!(html.starts_with("<!DOCTYPE html>"));
    // A sticky header (legend, axis, device lanes) and the partition rows.
    assert_eq!(html.matches("<svg").count(), 2);
    for needle in [
        "job-a",
        "job-b",
        "job-c",
        "cuda0",
        "cuda1",
        "queue wait",
        "synthesis",
        "waiting for device",
        "device work",
        "finalize",
        "FAILED: cuda0 out of memory",
        "line 21:",
        "line 55:",
        "51.4%",
        ">51%</text>",
        ">42%</text>",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    // Nothing to fetch: no scripts, links or remote URLs besides the SVG namespace.
    assert!(!html.contains("<script"));
    assert!(!html.contains("<link"));
    assert_eq!(html.matches("http://").count(), 2);
    assert!(!html.contains("https://"));
    // A tooltip per bar (29 spans, none of zero length), per device-lane stretch (6) and per
    // job heading (3).
    let spans: usize = a
        .model
        .jobs
        .iter()
        .flat_map(|j| &j.partitions)
        .map(|p| p.spans.len())
        .sum();
    assert_eq!(spans, 29);
    assert_eq!(html.matches("<title>job-").count(), spans + 6 + 3);
}

#[test]
fn run_writes_html_and_json() {
    let dir = std::env::temp_dir().join(format!("cuzk-waterfall-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut a = args();
    a.out = Some(dir.join("w.html"));
    a.summary_json = Some(dir.join("w.json"));
    let report = run(&a).unwrap();
    let html = std::fs::read_to_string(dir.join("w.html")).unwrap();
    assert!(html.contains("<svg"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("w.json")).unwrap()).unwrap();
    assert_eq!(json["devices"][0]["device"], "cuda0");
    assert_eq!(json["devices"][0]["busy_ms"], 1587.0);
    assert_eq!(json["phases"][1]["phase"], "synthesis");
    let text = report.to_string();
    assert!(
        text.contains("warning: skipped malformed TIMELINE line 21"),
        "{text}"
    );
    assert!(text.contains("48 TIMELINE events, 8 other lines ignored, 2 malformed"));
    std::fs::remove_dir_all(&dir).unwrap();

    let missing = WaterfallArgs {
        log: dir.join("no-such.log"),
        ..args()
    };
    assert!(run(&missing)
        .unwrap_err()
        .to_string()
        .contains("cannot read"));
}

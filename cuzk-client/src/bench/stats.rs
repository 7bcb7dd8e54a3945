//! The numbers of a bench sweep: one row per concurrency level, from what the client saw of
//! each proof and from the daemon's TIMELINE of the same run.
//!
//! Pure functions only; the sweep driver collects the records and prints what these return.
//! Two clocks meet here: latencies and wall time are the client's (what a caller of the daemon
//! experiences), the prove stage's busy fraction is the daemon's (only it knows when a device
//! was held). The daemon's window for a step is taken from its own events for the step's jobs,
//! so the two clocks never need to be aligned.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::waterfall::model::{JobOutcome, Phase, RunModel};
use crate::waterfall::summary::{device_usage, text_table, Distribution};

/// One proof as the sweep driver saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProofRecord {
    pub job_id: String,
    /// Seconds since the sweep step began, by the client's clock.
    pub submitted_s: f64,
    /// When the proof (or the failure) came back, same clock.
    pub finished_s: f64,
    /// Returned a proof, and it verified unless verification was switched off.
    pub ok: bool,
    /// Admission to the first synthesis, when the daemon's reply reports it; otherwise
    /// [`fill_from_timeline`] supplies it.
    pub queue_wait_ms: Option<f64>,
    /// Synthesis time of each partition.
    pub synth_ms: Vec<f64>,
    /// Device work (GPU_START..GPU_END) of each partition.
    pub prove_ms: Vec<f64>,
}

/// All proofs of one concurrency level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    pub concurrency: usize,
    pub records: Vec<ProofRecord>,
}

/// One line of the sweep report. `None` where there is nothing to measure (no proof
/// completed, no TIMELINE captured), which the table prints as `-`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub concurrency: usize,
    pub completed: usize,
    pub failed: usize,
    /// First submission to last reply, over every proof of the step.
    pub wall_s: f64,
    /// Wall time per completed proof: a failed proof is no throughput.
    pub s_per_proof: Option<f64>,
    pub proofs_per_hour: f64,
    /// Submission to reply, completed proofs only.
    pub latency_p50_s: Option<f64>,
    pub latency_p95_s: Option<f64>,
    pub latency_max_s: Option<f64>,
    pub mean_queue_wait_ms: Option<f64>,
    pub mean_synth_ms: Option<f64>,
    pub mean_prove_ms: Option<f64>,
    /// Mean over devices of the fraction of the step's window each held device work.
    pub prove_busy: Option<f64>,
    pub prove_busy_by_device: BTreeMap<String, f64>,
    /// The daemon's resident memory at the step's end, and its peak since the daemon started
    /// (GetStatus; None where the daemon's OS does not say). A sweep's levels run in order,
    /// so a level's peak covers the levels before it too.
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// Per GPU ("cuda0"), the most device memory in use at a device step's end since the
    /// daemon started.
    #[serde(default)]
    pub vram_peak_bytes: BTreeMap<String, u64>,
}

/// What GetStatus says the daemon holds, read at the end of a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DaemonMemory {
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub vram_peak_bytes: BTreeMap<String, u64>,
}

impl DaemonMemory {
    /// The wire's 0 means "not reported" (no /proc, no device step yet).
    pub fn from_status(s: &cuzk_proto::v1::GetStatusResponse) -> Self {
        let known = |b: u64| (b > 0).then_some(b);
        DaemonMemory {
            rss_bytes: known(s.rss_bytes),
            peak_rss_bytes: known(s.peak_rss_bytes),
            vram_peak_bytes: s
                .gpus
                .iter()
                .filter(|g| g.vram_peak_bytes > 0)
                .map(|g| (format!("cuda{}", g.ordinal), g.vram_peak_bytes))
                .collect(),
        }
    }
}

impl SweepRow {
    pub fn set_memory(&mut self, m: DaemonMemory) {
        self.rss_bytes = m.rss_bytes;
        self.peak_rss_bytes = m.peak_rss_bytes;
        self.vram_peak_bytes = m.vram_peak_bytes;
    }

    /// The largest of the GPUs' peaks (the table's and CSV's one column).
    pub fn vram_peak_max(&self) -> Option<u64> {
        self.vram_peak_bytes.values().copied().max()
    }
}

/// Fills in what the client's records lack from the TIMELINE: queue wait (JOB_QUEUED to the
/// first SYNTH_START) and per-partition synthesis and device-work times. Values the daemon
/// already reported are kept.
pub fn fill_from_timeline(records: &mut [ProofRecord], model: &RunModel) {
    for record in records {
        let Some(job) = model.job(&record.job_id) else {
            continue;
        };
        if record.queue_wait_ms.is_none() {
            let first_synth = job
                .partitions
                .iter()
                .flat_map(|p| &p.spans)
                .filter(|s| s.phase == Phase::Synthesis)
                .map(|s| s.start_ms)
                .min_by(f64::total_cmp);
            if let (Some(queued), Some(start)) = (job.queued_ms, first_synth) {
                record.queue_wait_ms = Some(start - queued);
            }
        }
        // Only complete spans: a partition cut short by a failure has no real duration.
        let complete = |phase: Phase| -> Vec<f64> {
            job.partitions
                .iter()
                .filter(|p| {
                    p.spans
                        .iter()
                        .filter(|s| s.phase == phase)
                        .all(|s| s.is_complete())
                })
                .filter_map(|p| p.phase_ms(phase))
                .collect()
        };
        if record.synth_ms.is_empty() {
            record.synth_ms = complete(Phase::Synthesis);
        }
        if record.prove_ms.is_empty() {
            record.prove_ms = complete(Phase::DeviceWork);
        }
    }
}

/// The report row of one step. `timeline` is the daemon's run (when the sweep spawned it or
/// was given its log); without it the busy fraction is unknown.
pub fn sweep_row(step: &SweepStep, timeline: Option<&RunModel>) -> SweepRow {
    let records = &step.records;
    let done: Vec<&ProofRecord> = records.iter().filter(|r| r.ok).collect();
    let completed = done.len();
    let failed = records.len() - completed;

    let first_submit = records.iter().map(|r| r.submitted_s).min_by(f64::total_cmp);
    let last_reply = records.iter().map(|r| r.finished_s).max_by(f64::total_cmp);
    let wall_s = match (first_submit, last_reply) {
        (Some(start), Some(end)) => (end - start).max(0.0),
        _ => 0.0,
    };
    let latency = Distribution::new(done.iter().map(|r| r.finished_s - r.submitted_s));
    let mean = |values: Vec<f64>| Distribution::new(values).map(|d| d.mean());

    let busy = timeline.and_then(|model| prove_busy(step, model));
    SweepRow {
        concurrency: step.concurrency,
        completed,
        failed,
        wall_s,
        s_per_proof: (completed > 0).then(|| wall_s / completed as f64),
        proofs_per_hour: if wall_s > 0.0 {
            completed as f64 * 3600.0 / wall_s
        } else {
            0.0
        },
        latency_p50_s: latency.as_ref().map(|d| d.percentile(50.0)),
        latency_p95_s: latency.as_ref().map(|d| d.percentile(95.0)),
        latency_max_s: latency.as_ref().map(|d| d.max()),
        mean_queue_wait_ms: mean(done.iter().filter_map(|r| r.queue_wait_ms).collect()),
        mean_synth_ms: mean(done.iter().flat_map(|r| r.synth_ms.clone()).collect()),
        mean_prove_ms: mean(done.iter().flat_map(|r| r.prove_ms.clone()).collect()),
        prove_busy: busy.as_ref().map(|(mean, _)| *mean),
        prove_busy_by_device: busy.map(|(_, by_device)| by_device).unwrap_or_default(),
        rss_bytes: None,
        peak_rss_bytes: None,
        vram_peak_bytes: BTreeMap::new(),
    }
}

pub fn sweep_rows(steps: &[SweepStep], timeline: Option<&RunModel>) -> Vec<SweepRow> {
    steps.iter().map(|step| sweep_row(step, timeline)).collect()
}

/// Busy fraction of each device over the step's window on the daemon's clock: from the first
/// JOB_QUEUED to the last job end among the step's jobs. Device work of any job in that window
/// counts, since a device is busy whoever holds it.
fn prove_busy(step: &SweepStep, model: &RunModel) -> Option<(f64, BTreeMap<String, f64>)> {
    let ids: HashSet<&str> = step.records.iter().map(|r| r.job_id.as_str()).collect();
    let jobs = model
        .jobs
        .iter()
        .filter(|j| ids.contains(j.job_id.as_str()));
    let extents: Vec<(f64, f64)> = jobs.filter_map(|j| j.extent()).collect();
    let from = extents.iter().map(|e| e.0).min_by(f64::total_cmp)?;
    let to = extents.iter().map(|e| e.1).max_by(f64::total_cmp)?;
    if model.devices.is_empty() || to <= from {
        return None;
    }
    let by_device: BTreeMap<String, f64> = model
        .devices
        .iter()
        .map(|lane| {
            let intervals: Vec<(f64, f64)> =
                lane.busy.iter().map(|b| (b.start_ms, b.end_ms)).collect();
            let usage = device_usage(&intervals, from, to);
            (lane.device.clone(), usage.busy_fraction)
        })
        .collect();
    let mean = by_device.values().sum::<f64>() / by_device.len() as f64;
    Some((mean, by_device))
}

/// Where the client's records and the daemon's TIMELINE disagree about a step: a proof the
/// client counts as done that the daemon never finished, or the other way round, or a job the
/// daemon never logged. Empty when they agree; the sweep test asserts that.
pub fn disagreements(step: &SweepStep, model: &RunModel) -> Vec<String> {
    let mut problems = Vec::new();
    for record in &step.records {
        match model.job(&record.job_id).map(|j| &j.outcome) {
            None => problems.push(format!("job {} is not in the TIMELINE", record.job_id)),
            Some(JobOutcome::Done) if !record.ok => problems.push(format!(
                "job {} is JOB_DONE in the TIMELINE but failed at the client",
                record.job_id
            )),
            Some(outcome) if record.ok && *outcome != JobOutcome::Done => problems.push(format!(
                "job {} succeeded at the client but the TIMELINE says {outcome:?}",
                record.job_id
            )),
            Some(_) => {}
        }
    }
    problems
}

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or("-".to_string(), |v| format!("{v:.decimals$}"))
}

fn percent(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn gib(bytes: Option<u64>) -> String {
    opt(bytes.map(|b| b as f64 / (1u64 << 30) as f64), 2)
}

/// Aligned text table, one row per concurrency level.
pub fn render_table(rows: &[SweepRow]) -> String {
    let headers = [
        "J",
        "done",
        "failed",
        "wall s",
        "s/proof",
        "proofs/h",
        "p50 s",
        "p95 s",
        "max s",
        "queue ms",
        "synth ms/part",
        "prove ms/part",
        "prove busy",
        "peak RSS GiB",
        "peak VRAM GiB",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.concurrency.to_string(),
                r.completed.to_string(),
                r.failed.to_string(),
                format!("{:.2}", r.wall_s),
                opt(r.s_per_proof, 2),
                format!("{:.1}", r.proofs_per_hour),
                opt(r.latency_p50_s, 2),
                opt(r.latency_p95_s, 2),
                opt(r.latency_max_s, 2),
                opt(r.mean_queue_wait_ms, 1),
                opt(r.mean_synth_ms, 1),
                opt(r.mean_prove_ms, 1),
                percent(r.prove_busy),
                gib(r.peak_rss_bytes),
                gib(r.vram_peak_max()),
            ]
        })
        .collect();
    text_table(&headers, &cells)
}

pub fn render_json(rows: &[SweepRow]) -> String {
    serde_json::to_string_pretty(rows).expect("rows hold only strings and numbers")
}

const CSV_HEADER: &str = "concurrency,completed,failed,wall_s,s_per_proof,proofs_per_hour,\
latency_p50_s,latency_p95_s,latency_max_s,mean_queue_wait_ms,mean_synth_ms,mean_prove_ms,prove_busy,\
rss_bytes,peak_rss_bytes,vram_peak_bytes";

/// CSV with the JSON field names as header; an unknown value is an empty field. Per-device
/// busy fractions are left to the JSON, where a map fits; `vram_peak_bytes` is the largest
/// GPU's (the JSON has each).
pub fn render_csv(rows: &[SweepRow]) -> String {
    let field = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    let bytes = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in rows {
        let cells = [
            r.concurrency.to_string(),
            r.completed.to_string(),
            r.failed.to_string(),
            format!("{}", r.wall_s),
            field(r.s_per_proof),
            format!("{}", r.proofs_per_hour),
            field(r.latency_p50_s),
            field(r.latency_p95_s),
            field(r.latency_max_s),
            field(r.mean_queue_wait_ms),
            field(r.mean_synth_ms),
            field(r.mean_prove_ms),
            field(r.prove_busy),
            bytes(r.rss_bytes),
            bytes(r.peak_rss_bytes),
            bytes(r.vram_peak_max()),
        ];
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::{build_model, parse_timeline};

    /// Two one-partition proofs at J=2 on one device, plus a failure.
    const LOG: &str = "\
TIMELINE,100,JOB_QUEUED,p1,kind=synthetic;partitions=1;priority=normal
TIMELINE,100,JOB_QUEUED,p2,kind=synthetic;partitions=1;priority=normal
TIMELINE,100,JOB_QUEUED,p3,kind=synthetic;partitions=1;priority=normal
TIMELINE,110,SYNTH_START,p1,partition=0;worker=0
TIMELINE,120,SYNTH_START,p2,partition=0;worker=1
TIMELINE,510,SYNTH_END,p1,partition=0;worker=0;ms=400
TIMELINE,510,GPU_START,p1,partition=0;device=cuda0
TIMELINE,520,SYNTH_END,p2,partition=0;worker=1;ms=400
TIMELINE,710,GPU_END,p1,partition=0;device=cuda0;ms=200
TIMELINE,710,GPU_START,p2,partition=0;device=cuda0
TIMELINE,720,FINALIZE_END,p1,partition=0;verified=true;ms=10
TIMELINE,720,JOB_DONE,p1,ms=620
TIMELINE,1010,GPU_END,p2,partition=0;device=cuda0;ms=300
TIMELINE,1020,FINALIZE_END,p2,partition=0;verified=true;ms=10
TIMELINE,1020,JOB_DONE,p2,ms=920
TIMELINE,1100,JOB_FAILED,p3,error=bad vanilla proof
";

    fn record(id: &str, submitted: f64, finished: f64, ok: bool) -> ProofRecord {
        ProofRecord {
            job_id: id.into(),
            submitted_s: submitted,
            finished_s: finished,
            ok,
            queue_wait_ms: None,
            synth_ms: vec![],
            prove_ms: vec![],
        }
    }

    fn step() -> (SweepStep, RunModel) {
        let model = build_model(&parse_timeline(LOG).events);
        let mut records = vec![
            record("p1", 0.0, 0.7, true),
            record("p2", 0.0, 1.0, true),
            record("p3", 0.1, 1.1, false),
        ];
        fill_from_timeline(&mut records, &model);
        (
            SweepStep {
                concurrency: 2,
                records,
            },
            model,
        )
    }

    #[test]
    fn timeline_fills_queue_wait_and_stage_times() {
        let (step, _) = step();
        let p1 = &step.records[0];
        assert_eq!(p1.queue_wait_ms, Some(10.0));
        assert_eq!(p1.synth_ms, [400.0]);
        assert_eq!(p1.prove_ms, [200.0]);
        // p2 waited 190 ms for the device; that is neither synthesis nor proving.
        assert_eq!(step.records[1].prove_ms, [300.0]);
        assert_eq!(step.records[2].queue_wait_ms, None);
    }

    #[test]
    fn row_from_records_and_timeline() {
        let (step, model) = step();
        let row = sweep_row(&step, Some(&model));
        assert_eq!((row.concurrency, row.completed, row.failed), (2, 2, 1));
        assert!((row.wall_s - 1.1).abs() < 1e-12);
        assert!((row.s_per_proof.unwrap() - 0.55).abs() < 1e-12);
        assert!((row.proofs_per_hour - 2.0 * 3600.0 / 1.1).abs() < 1e-9);
        assert_eq!(row.latency_p50_s, Some(0.7));
        assert_eq!(row.latency_p95_s, Some(1.0));
        assert_eq!(row.latency_max_s, Some(1.0));
        assert_eq!(row.mean_queue_wait_ms, Some(15.0));
        assert_eq!(row.mean_synth_ms, Some(400.0));
        assert_eq!(row.mean_prove_ms, Some(250.0));
        // cuda0 held device work 510..1010 in the step's window 100..1100.
        assert_eq!(row.prove_busy, Some(0.5));
        assert_eq!(row.prove_busy_by_device["cuda0"], 0.5);
        assert!(disagreements(&step, &model).is_empty());
    }

    #[test]
    fn without_a_timeline_the_busy_fraction_is_unknown() {
        let (step, _) = step();
        let row = sweep_row(&step, None);
        assert_eq!(row.prove_busy, None);
        let table = render_table(std::slice::from_ref(&row));
        let cells: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
        // prove busy, peak RSS and peak VRAM: all unknown here.
        assert_eq!(cells[cells.len() - 3..], ["-", "-", "-"]);
        assert!(render_csv(&[row]).lines().nth(1).unwrap().ends_with(",,,,"));
    }

    #[test]
    fn disagreements_are_named() {
        let (mut step, model) = step();
        step.records[0].ok = false;
        step.records[2].ok = true;
        step.records.push(record("ghost", 0.0, 1.0, true));
        let problems = disagreements(&step, &model);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("p1"));
        assert!(problems[1].contains("p3") && problems[1].contains("Failed"));
        assert!(problems[2].contains("ghost is not in the TIMELINE"));
    }

    #[test]
    fn renders_table_json_and_csv() {
        let (step, model) = step();
        let mut rows = sweep_rows(std::slice::from_ref(&step), Some(&model));
        rows[0].set_memory(DaemonMemory {
            rss_bytes: Some(1 << 30),
            peak_rss_bytes: Some(3 << 29),
            vram_peak_bytes: [("cuda0".into(), 1 << 31), ("cuda1".into(), 1 << 32)].into(),
        });
        let table = render_table(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("J  done  failed  wall s"));
        assert!(
            lines[1].ends_with("50.0%          1.50           4.00"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[0].len(), lines[1].len(), "columns align");

        let back: Vec<SweepRow> = serde_json::from_str(&render_json(&rows)).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!((back[0].completed, back[0].failed), (2, 1));
        assert_eq!(back[0].prove_busy_by_device["cuda0"], 0.5);
        assert_eq!(back[0].peak_rss_bytes, Some(3 << 29));
        assert_eq!(back[0].vram_peak_bytes["cuda1"], 1 << 32);
        // Reports written before these fields existed still read.
        let old = r#"[{"concurrency":1,"completed":1,"failed":0,"wall_s":1.0,"s_per_proof":1.0,
            "proofs_per_hour":3600.0,"latency_p50_s":null,"latency_p95_s":null,"latency_max_s":null,
            "mean_queue_wait_ms":null,"mean_synth_ms":null,"mean_prove_ms":null,"prove_busy":null,
            "prove_busy_by_device":{}}]"#;
        let old: Vec<SweepRow> = serde_json::from_str(old).unwrap();
        assert_eq!(old[0].peak_rss_bytes, None);

        let csv = render_csv(&rows);
        let mut csv_lines = csv.lines();
        let header: Vec<&str> = csv_lines.next().unwrap().split(',').collect();
        let values: Vec<&str> = csv_lines.next().unwrap().split(',').collect();
        assert_eq!(header.len(), values.len());
        assert_eq!(header[0], "concurrency");
        assert_eq!(values[..3], ["2", "2", "1"]);
        assert_eq!(values[header.len() - 4], "0.5");
        assert_eq!(
            values[header.len() - 3..],
            [
                (1u64 << 30).to_string(),
                (3u64 << 29).to_string(),
                (1u64 << 32).to_string()
            ]
        );
    }
}

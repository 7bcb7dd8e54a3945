//! Numbers behind the waterfall: how long each phase takes, how busy each device is, and
//! whether phases slow down as more partitions are in flight.
//!
//! The last one is the question a throughput plateau raises: if synthesis takes 1.0 s with one
//! partition in flight and 1.6 s with four, the partitions share something (memory bandwidth,
//! cores) and adding concurrency stops paying.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::model::{Phase, RunModel, Span};

/// The part of the run a summary or chart looks at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct View {
    pub from_ms: f64,
    pub to_ms: f64,
    /// Only this job's partitions; devices and load still count every job, because a device
    /// is busy or idle whoever uses it.
    pub job: Option<String>,
}

impl View {
    /// The window asked for (`--from/--to`, seconds), else the job's extent (`--job`), else
    /// the whole run.
    pub fn resolve(
        model: &RunModel,
        from_s: Option<f64>,
        to_s: Option<f64>,
        job: Option<&str>,
    ) -> Result<View, String> {
        let (default_from, default_to) = match job {
            Some(id) => model
                .job(id)
                .ok_or_else(|| format!("no job `{id}` in the log"))?
                .extent()
                .unwrap_or((model.start_ms, model.end_ms)),
            None => (model.start_ms, model.end_ms),
        };
        let from_ms = from_s.map_or(default_from, |s| s * 1000.0);
        let to_ms = to_s.map_or(default_to, |s| s * 1000.0);
        if !(from_ms.is_finite() && to_ms.is_finite()) || to_ms < from_ms {
            return Err(format!(
                "empty window: from {:.3} s to {:.3} s",
                from_ms / 1000.0,
                to_ms / 1000.0
            ));
        }
        Ok(View {
            from_ms,
            to_ms,
            job: job.map(str::to_string),
        })
    }

    pub fn whole(model: &RunModel) -> View {
        View {
            from_ms: model.start_ms,
            to_ms: model.end_ms,
            job: None,
        }
    }

    pub fn width_ms(&self) -> f64 {
        self.to_ms - self.from_ms
    }

    pub fn shows_job(&self, job_id: &str) -> bool {
        self.job.as_deref().is_none_or(|j| j == job_id)
    }

    pub fn overlaps(&self, start_ms: f64, end_ms: f64) -> bool {
        start_ms <= self.to_ms && end_ms >= self.from_ms
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseStats {
    pub phase: Phase,
    /// Complete spans that start inside the window.
    pub count: usize,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdleGap {
    pub start_ms: f64,
    pub end_ms: f64,
}

impl IdleGap {
    pub fn duration_ms(&self) -> f64 {
        self.end_ms - self.start_ms
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceStats {
    pub device: String,
    /// Device work spans (complete or not) overlapping the window.
    pub spans: usize,
    /// Union of the device-work spans, clipped to the window.
    pub busy_ms: f64,
    pub window_ms: f64,
    pub busy_fraction: f64,
    /// Every stretch of the window with no device work, in time order.
    pub idle_gaps: Vec<IdleGap>,
}

impl DeviceStats {
    pub fn longest_gap(&self) -> Option<&IdleGap> {
        self.idle_gaps
            .iter()
            .max_by(|a, b| a.duration_ms().total_cmp(&b.duration_ms()))
    }
}

/// Spans of one phase that ran with about `in_flight` partitions in flight.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadPoint {
    pub in_flight: u32,
    pub count: usize,
    pub mean_ms: f64,
    pub p50_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseLoad {
    pub phase: Phase,
    /// Sorted by `in_flight`.
    pub points: Vec<LoadPoint>,
}

impl PhaseLoad {
    /// Mean at the highest load over mean at the lowest: 1.0 means the phase does not care
    /// how busy the engine is.
    pub fn growth(&self) -> Option<f64> {
        let (first, last) = (self.points.first()?, self.points.last()?);
        (self.points.len() > 1 && first.mean_ms > 0.0).then(|| last.mean_ms / first.mean_ms)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub view: View,
    pub jobs: usize,
    pub jobs_done: usize,
    pub jobs_failed: usize,
    pub jobs_cancelled: usize,
    pub partitions: usize,
    pub phases: Vec<PhaseStats>,
    pub devices: Vec<DeviceStats>,
    pub load: Vec<PhaseLoad>,
}

impl Summary {
    pub fn phase(&self, phase: Phase) -> Option<&PhaseStats> {
        self.phases.iter().find(|s| s.phase == phase)
    }

    pub fn device(&self, device: &str) -> Option<&DeviceStats> {
        self.devices.iter().find(|d| d.device == device)
    }

    pub fn load(&self, phase: Phase) -> Option<&PhaseLoad> {
        self.load.iter().find(|l| l.phase == phase)
    }
}

pub fn summarize(model: &RunModel, view: &View) -> Summary {
    use super::model::JobOutcome;

    let jobs: Vec<_> = model
        .jobs
        .iter()
        .filter(|j| view.shows_job(&j.job_id))
        .filter(|j| j.extent().is_some_and(|(s, e)| view.overlaps(s, e)))
        .collect();
    // A span counts once, at its start, with its full duration: clipping it to the window
    // would report a made-up duration.
    let spans: Vec<&Span> = jobs
        .iter()
        .flat_map(|j| &j.partitions)
        .flat_map(|p| &p.spans)
        .filter(|s| s.is_complete() && s.start_ms >= view.from_ms && s.start_ms <= view.to_ms)
        .collect();

    let phases = Phase::ALL
        .iter()
        .filter_map(|&phase| {
            let durations = spans
                .iter()
                .filter(|s| s.phase == phase)
                .map(|s| s.duration_ms());
            let d = Distribution::new(durations)?;
            Some(PhaseStats {
                phase,
                count: d.len(),
                mean_ms: d.mean(),
                p50_ms: d.percentile(50.0),
                p95_ms: d.percentile(95.0),
                max_ms: d.max(),
            })
        })
        .collect();

    let in_flight = InFlight::new(model);
    let load = Phase::ALL
        .iter()
        .filter_map(|&phase| {
            let mut buckets: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for span in spans.iter().filter(|s| s.phase == phase) {
                let level = in_flight.mean_over(span.start_ms, span.end_ms).round() as u32;
                buckets.entry(level).or_default().push(span.duration_ms());
            }
            let points: Vec<LoadPoint> = buckets
                .into_iter()
                .filter_map(|(in_flight, durations)| {
                    let d = Distribution::new(durations)?;
                    Some(LoadPoint {
                        in_flight,
                        count: d.len(),
                        mean_ms: d.mean(),
                        p50_ms: d.percentile(50.0),
                    })
                })
                .collect();
            (!points.is_empty()).then_some(PhaseLoad { phase, points })
        })
        .collect();

    let devices = model
        .devices
        .iter()
        .map(|lane| {
            let intervals: Vec<(f64, f64)> =
                lane.busy.iter().map(|b| (b.start_ms, b.end_ms)).collect();
            let usage = device_usage(&intervals, view.from_ms, view.to_ms);
            DeviceStats {
                device: lane.device.clone(),
                spans: lane
                    .busy
                    .iter()
                    .filter(|b| view.overlaps(b.start_ms, b.end_ms))
                    .count(),
                busy_ms: usage.busy_ms,
                window_ms: view.width_ms(),
                busy_fraction: usage.busy_fraction,
                idle_gaps: usage.idle_gaps,
            }
        })
        .collect();

    let count = |f: fn(&JobOutcome) -> bool| jobs.iter().filter(|j| f(&j.outcome)).count();
    Summary {
        view: view.clone(),
        jobs: jobs.len(),
        jobs_done: count(|o| matches!(o, JobOutcome::Done)),
        jobs_failed: count(|o| matches!(o, JobOutcome::Failed { .. })),
        jobs_cancelled: count(|o| matches!(o, JobOutcome::Cancelled)),
        partitions: jobs.iter().map(|j| j.partitions.len()).sum(),
        phases,
        devices,
        load,
    }
}

/// Busy time of one device over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceUsage {
    pub busy_ms: f64,
    pub busy_fraction: f64,
    pub idle_gaps: Vec<IdleGap>,
}

/// Merges possibly overlapping busy intervals, clips them to `[from_ms, to_ms]`, and returns
/// the busy time, its fraction of the window and the idle gaps between. Shared with the bench
/// report, which asks the same of the prove stage.
pub fn device_usage(intervals: &[(f64, f64)], from_ms: f64, to_ms: f64) -> DeviceUsage {
    let clipped: Vec<(f64, f64)> = intervals
        .iter()
        .map(|&(s, e)| (s.max(from_ms), e.min(to_ms)))
        .filter(|(s, e)| s < e)
        .collect();
    let merged = merge_intervals(clipped);
    let busy_ms: f64 = merged.iter().map(|(s, e)| e - s).sum();
    let mut idle_gaps = Vec::new();
    let mut cursor = from_ms;
    for &(s, e) in &merged {
        if s > cursor {
            idle_gaps.push(IdleGap {
                start_ms: cursor,
                end_ms: s,
            });
        }
        cursor = e;
    }
    if to_ms > cursor {
        idle_gaps.push(IdleGap {
            start_ms: cursor,
            end_ms: to_ms,
        });
    }
    let width = to_ms - from_ms;
    DeviceUsage {
        busy_ms,
        busy_fraction: if width > 0.0 { busy_ms / width } else { 0.0 },
        idle_gaps,
    }
}

/// Union of intervals, sorted; touching intervals (one ends where the next starts, as when a
/// device lock passes straight to the next partition) become one.
pub fn merge_intervals(mut intervals: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(intervals.len());
    for (s, e) in intervals {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Sorted sample of durations.
#[derive(Debug, Clone)]
pub struct Distribution(Vec<f64>);

impl Distribution {
    /// `None` for an empty sample: a percentile of nothing is not zero.
    pub fn new(values: impl IntoIterator<Item = f64>) -> Option<Distribution> {
        let mut values: Vec<f64> = values.into_iter().collect();
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        Some(Distribution(values))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Nearest-rank percentile: always a value that occurred, so a p95 over a handful of
    /// proofs is the slowest real proof rather than an interpolation no proof took.
    pub fn percentile(&self, p: f64) -> f64 {
        let n = self.0.len();
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.0[rank.clamp(1, n) - 1]
    }

    pub fn mean(&self) -> f64 {
        self.0.iter().sum::<f64>() / self.0.len() as f64
    }

    pub fn max(&self) -> f64 {
        self.0[self.0.len() - 1]
    }
}

/// How many partitions are in flight (past the queue, not yet finalized) over time, over
/// every job in the run.
pub struct InFlight {
    /// (time, count from this time on), strictly increasing in time.
    steps: Vec<(f64, i64)>,
}

impl InFlight {
    pub fn new(model: &RunModel) -> InFlight {
        let mut deltas: Vec<(f64, i64)> = Vec::new();
        for partition in model.jobs.iter().flat_map(|j| &j.partitions) {
            if let Some((start, end)) = partition.in_flight_window() {
                deltas.push((start, 1));
                deltas.push((end, -1));
            }
        }
        deltas.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut steps: Vec<(f64, i64)> = Vec::new();
        let mut level = 0;
        for (t, delta) in deltas {
            level += delta;
            match steps.last_mut() {
                Some(last) if last.0 == t => last.1 = level,
                _ => steps.push((t, level)),
            }
        }
        InFlight { steps }
    }

    pub fn at(&self, t: f64) -> i64 {
        let i = self.steps.partition_point(|&(time, _)| time <= t);
        if i == 0 {
            0
        } else {
            self.steps[i - 1].1
        }
    }

    /// Time-weighted mean over `[start, end]`; for an empty interval, the level at `start`.
    pub fn mean_over(&self, start: f64, end: f64) -> f64 {
        if end <= start {
            return self.at(start) as f64;
        }
        let mut area = 0.0;
        let mut t = start;
        let mut level = self.at(start);
        // Binary search to the first change after `start`: a run of thousands of partitions
        // asks this once per span.
        let first_after = self.steps.partition_point(|&(time, _)| time <= start);
        for &(time, next) in &self.steps[first_after..] {
            if time >= end {
                break;
            }
            area += (time - t) * level as f64;
            t = time;
            level = next;
        }
        area += (end - t) * level as f64;
        area / (end - start)
    }
}

/// Left-aligns the first column and right-aligns the rest, which are numbers.
pub fn text_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            if i == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn seconds(ms: f64) -> String {
    format!("{:.3}", ms / 1000.0)
}

/// A table as header and rows of cells, rendered as text by [`text_table`] or as HTML by
/// the chart, so both show the same numbers.
pub type Table = (Vec<String>, Vec<Vec<String>>);

impl Summary {
    pub fn headline(&self) -> String {
        format!(
            "window {} s .. {} s ({} s){}: {} jobs ({} done, {} failed, {} cancelled), {} partitions",
            seconds(self.view.from_ms),
            seconds(self.view.to_ms),
            seconds(self.view.width_ms()),
            self.view
                .job
                .as_deref()
                .map(|j| format!(", job {j}"))
                .unwrap_or_default(),
            self.jobs,
            self.jobs_done,
            self.jobs_failed,
            self.jobs_cancelled,
            self.partitions,
        )
    }

    pub fn phase_table(&self) -> Table {
        let headers = ["phase", "n", "p50 ms", "p95 ms", "max ms", "mean ms"];
        let rows = self
            .phases
            .iter()
            .map(|s| {
                vec![
                    s.phase.label().to_string(),
                    s.count.to_string(),
                    format!("{:.1}", s.p50_ms),
                    format!("{:.1}", s.p95_ms),
                    format!("{:.1}", s.max_ms),
                    format!("{:.1}", s.mean_ms),
                ]
            })
            .collect();
        (strings(&headers), rows)
    }

    pub fn device_table(&self) -> Table {
        let headers = [
            "device",
            "busy",
            "busy ms",
            "spans",
            "idle gaps",
            "idle ms",
            "longest gap",
        ];
        let rows = self
            .devices
            .iter()
            .map(|d| {
                let longest = d.longest_gap().map_or("-".to_string(), |g| {
                    format!("{:.1} ms at {} s", g.duration_ms(), seconds(g.start_ms))
                });
                let idle: f64 = d.idle_gaps.iter().map(IdleGap::duration_ms).sum();
                vec![
                    d.device.clone(),
                    format!("{:.1}%", d.busy_fraction * 100.0),
                    format!("{:.1}", d.busy_ms),
                    d.spans.to_string(),
                    d.idle_gaps.len().to_string(),
                    format!("{idle:.1}"),
                    longest,
                ]
            })
            .collect();
        (strings(&headers), rows)
    }

    /// One row per in-flight level, one column per phase: "mean ms (n)"; a last row with
    /// each phase's growth from the lowest to the highest level.
    pub fn load_table(&self) -> Table {
        let mut levels: Vec<u32> = self
            .load
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.in_flight))
            .collect();
        levels.sort_unstable();
        levels.dedup();
        let mut headers = vec!["in flight".to_string()];
        headers.extend(self.load.iter().map(|l| l.phase.label().to_string()));
        let mut rows: Vec<Vec<String>> = levels
            .iter()
            .map(|&level| {
                let mut row = vec![level.to_string()];
                row.extend(self.load.iter().map(|l| {
                    l.points
                        .iter()
                        .find(|p| p.in_flight == level)
                        .map_or("-".to_string(), |p| {
                            format!("{:.1} ({})", p.mean_ms, p.count)
                        })
                }));
                row
            })
            .collect();
        let mut growth = vec!["growth".to_string()];
        growth.extend(
            self.load
                .iter()
                .map(|l| l.growth().map_or("-".to_string(), |g| format!("x{g:.2}"))),
        );
        rows.push(growth);
        (headers, rows)
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn print_table(f: &mut fmt::Formatter<'_>, (headers, rows): Table) -> fmt::Result {
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    f.write_str(&text_table(&headers, &rows))
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.headline())?;
        writeln!(
            f,
            "\nphase durations (complete phases starting in the window)"
        )?;
        print_table(f, self.phase_table())?;
        writeln!(f, "\ndevices (busy over the window, all jobs)")?;
        print_table(f, self.device_table())?;
        writeln!(
            f,
            "\nphase duration by partitions in flight (mean ms (n); time-weighted in-flight count)"
        )?;
        print_table(f, self.load_table())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let d = Distribution::new([300.0, 1200.0, 500.0, 1000.0, 600.0, 1100.0]).unwrap();
        assert_eq!(d.percentile(50.0), 600.0);
        assert_eq!(d.percentile(95.0), 1200.0);
        assert_eq!(d.percentile(0.0), 300.0);
        assert_eq!(d.max(), 1200.0);
        assert_eq!(d.mean(), 4700.0 / 6.0);
        assert!(Distribution::new([]).is_none());
        let one = Distribution::new([7.0]).unwrap();
        assert_eq!((one.percentile(50.0), one.percentile(95.0)), (7.0, 7.0));
    }

    #[test]
    fn merges_overlapping_and_touching_intervals() {
        let merged = merge_intervals(vec![(5.0, 7.0), (0.0, 2.0), (2.0, 3.0), (6.0, 9.0)]);
        assert_eq!(merged, [(0.0, 3.0), (5.0, 9.0)]);
    }

    #[test]
    fn usage_clips_to_the_window_and_lists_gaps() {
        let usage = device_usage(&[(0.0, 2.0), (4.0, 6.0), (5.0, 12.0)], 1.0, 10.0);
        assert_eq!(usage.busy_ms, 1.0 + 6.0);
        assert_eq!(usage.busy_fraction, 7.0 / 9.0);
        assert_eq!(
            usage.idle_gaps,
            [IdleGap {
                start_ms: 2.0,
                end_ms: 4.0
            }]
        );
        let idle = device_usage(&[], 0.0, 10.0);
        assert_eq!(idle.busy_fraction, 0.0);
        assert_eq!(idle.idle_gaps.len(), 1);
    }

    #[test]
    fn in_flight_is_time_weighted() {
        let steps = InFlight {
            steps: vec![(0.0, 1), (10.0, 3), (20.0, 0)],
        };
        assert_eq!(steps.at(-1.0), 0);
        assert_eq!(steps.at(10.0), 3);
        assert_eq!(steps.mean_over(0.0, 20.0), 2.0);
        assert_eq!(steps.mean_over(5.0, 15.0), 2.0);
        assert_eq!(steps.mean_over(10.0, 10.0), 3.0);
        assert_eq!(steps.mean_over(15.0, 25.0), 1.5);
    }

    #[test]
    fn table_aligns_columns() {
        let t = text_table(
            &["j", "wall s"],
            &[
                vec!["1".into(), "10.5".into()],
                vec!["16".into(), "3.25".into()],
            ],
        );
        assert_eq!(t, "j   wall s\n1     10.5\n16    3.25\n");
    }
}

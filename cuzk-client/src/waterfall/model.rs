//! Rebuilds what each partition was doing, and when, from the TIMELINE events.
//!
//! A partition is in exactly one phase from the moment its job is queued until it is
//! finalized, so each event simply closes the phase in progress and opens the next. That walk
//! needs no pairing of start and end events, and it copes with what real logs hold: a
//! partition re-routed to another device (two device-work spans), a job that fails half way
//! (its open phases end at the failure), a log cut off mid-run (they end at the last event).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::parse::{Event, EventKind};

/// The phases of a partition's way through the engine, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// JOB_QUEUED -> SYNTH_START: waiting for admission to a synthesis worker.
    QueueWait,
    /// SYNTH_START -> SYNTH_END.
    Synthesis,
    /// SYNTH_END (or GPU_QUEUE) -> GPU_START: synthesized, waiting for a device.
    DeviceWait,
    /// GPU_START -> GPU_END: holding the device lock.
    DeviceWork,
    /// GPU_END -> FINALIZE_END: assembly and self-verification.
    Finalize,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::QueueWait,
        Phase::Synthesis,
        Phase::DeviceWait,
        Phase::DeviceWork,
        Phase::Finalize,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Phase::QueueWait => "queue wait",
            Phase::Synthesis => "synthesis",
            Phase::DeviceWait => "waiting for device",
            Phase::DeviceWork => "device work",
            Phase::Finalize => "finalize",
        }
    }

    /// Whether the partition holds engine resources (memory, a worker, a device) in this
    /// phase. Queue wait does not: that is what "in flight" excludes.
    pub fn in_flight(self) -> bool {
        self != Phase::QueueWait
    }
}

/// Why a span stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanEnd {
    /// The next phase began (or FINALIZE_END): the duration is the phase's real duration.
    Complete,
    /// The job failed or was cancelled during the phase.
    JobEnded,
    /// The log stops during the phase.
    LogEnded,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    pub phase: Phase,
    pub start_ms: f64,
    pub end_ms: f64,
    pub end: SpanEnd,
    /// The device, for device wait (once GPU_LOCK_WAIT names it) and device work.
    pub device: Option<String>,
}

impl Span {
    pub fn duration_ms(&self) -> f64 {
        self.end_ms - self.start_ms
    }

    pub fn is_complete(&self) -> bool {
        self.end == SpanEnd::Complete
    }
}

/// A point event inside a phase, drawn as a tick (NTT_END, MSM_END, GPU_LOCK_WAIT).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Marker {
    pub kind: EventKind,
    /// When the line was written.
    pub offset_ms: f64,
    /// When the step it marks ended. The engine writes NTT_END and MSM_END together after
    /// the device work, each with its duration, so the NTT ended at GPU_START + ntt ms and
    /// the MSMs at GPU_START + ntt ms + msm ms; without a duration, the line's own offset.
    pub at_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionModel {
    pub index: u32,
    pub spans: Vec<Span>,
    pub markers: Vec<Marker>,
    pub worker: Option<String>,
    pub verified: Option<bool>,
}

impl PartitionModel {
    /// From the start of the first in-flight phase to the end of the last span.
    pub fn in_flight_window(&self) -> Option<(f64, f64)> {
        let first = self.spans.iter().find(|s| s.phase.in_flight())?;
        let last = self.spans.last()?;
        Some((first.start_ms, last.end_ms))
    }

    /// Summed duration of one phase (a re-routed partition has two device-work spans).
    pub fn phase_ms(&self, phase: Phase) -> Option<f64> {
        let spans: Vec<_> = self.spans.iter().filter(|s| s.phase == phase).collect();
        (!spans.is_empty()).then(|| spans.iter().map(|s| s.duration_ms()).sum())
    }

    pub fn is_finalized(&self) -> bool {
        self.spans
            .last()
            .is_some_and(|s| s.phase == Phase::Finalize && s.is_complete())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum JobOutcome {
    Done,
    Failed {
        error: String,
    },
    Cancelled,
    /// The log ends before the job does.
    Unfinished,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobModel {
    pub job_id: String,
    pub kind: Option<String>,
    pub priority: Option<String>,
    pub queued_ms: Option<f64>,
    pub ended_ms: Option<f64>,
    pub outcome: JobOutcome,
    pub partitions: Vec<PartitionModel>,
}

impl JobModel {
    /// First and last instant the job shows in the log.
    pub fn extent(&self) -> Option<(f64, f64)> {
        let spans = self.partitions.iter().flat_map(|p| &p.spans);
        let start = spans.clone().map(|s| s.start_ms).chain(self.queued_ms);
        let end = spans.map(|s| s.end_ms).chain(self.ended_ms);
        Some((start.min_by(f64::total_cmp)?, end.max_by(f64::total_cmp)?))
    }
}

/// One stretch of device work on a device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceBusy {
    pub job_id: String,
    pub partition: u32,
    pub start_ms: f64,
    pub end_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceLane {
    pub device: String,
    /// Sorted by start.
    pub busy: Vec<DeviceBusy>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunModel {
    /// In order of first appearance, which is queue order.
    pub jobs: Vec<JobModel>,
    /// Sorted by device name.
    pub devices: Vec<DeviceLane>,
    /// First and last event of any job.
    pub start_ms: f64,
    pub end_ms: f64,
}

impl RunModel {
    pub fn job(&self, job_id: &str) -> Option<&JobModel> {
        self.jobs.iter().find(|j| j.job_id == job_id)
    }

    pub fn partition_count(&self) -> usize {
        self.jobs.iter().map(|j| j.partitions.len()).sum()
    }
}

/// Builds the model from parsed events (any order; they are sorted here by offset, ties by
/// line).
pub fn build_model(events: &[Event]) -> RunModel {
    let mut sorted: Vec<&Event> = events.iter().collect();
    sorted.sort_by(|a, b| {
        a.offset_ms
            .total_cmp(&b.offset_ms)
            .then(a.line.cmp(&b.line))
    });
    // Events of unknown kinds are kept by the parser but say nothing about phases; a job
    // that only has such events (an engine-wide event under a placeholder id) is no job.
    sorted.retain(|e| !matches!(e.kind, EventKind::Other(_)));

    let start_ms = sorted.first().map_or(0.0, |e| e.offset_ms);
    let end_ms = sorted.last().map_or(0.0, |e| e.offset_ms);

    let mut order: Vec<&str> = Vec::new();
    let mut builders: HashMap<&str, JobBuilder> = HashMap::new();
    for event in sorted {
        let job = builders.entry(&event.job_id).or_insert_with(|| {
            order.push(&event.job_id);
            JobBuilder::new(&event.job_id)
        });
        job.apply(event);
    }

    let jobs: Vec<JobModel> = order
        .iter()
        .map(|id| builders.remove(id).expect("every id has a builder"))
        .map(|job| job.finish(end_ms))
        .collect();
    let devices = device_lanes(&jobs);
    RunModel {
        jobs,
        devices,
        start_ms,
        end_ms,
    }
}

fn device_lanes(jobs: &[JobModel]) -> Vec<DeviceLane> {
    let mut lanes: BTreeMap<String, Vec<DeviceBusy>> = BTreeMap::new();
    for job in jobs {
        for partition in &job.partitions {
            for span in partition
                .spans
                .iter()
                .filter(|s| s.phase == Phase::DeviceWork)
            {
                // GPU_START always names its device; "?" only for a log that breaks that.
                let device = span.device.clone().unwrap_or_else(|| "?".to_string());
                lanes.entry(device).or_default().push(DeviceBusy {
                    job_id: job.job_id.clone(),
                    partition: partition.index,
                    start_ms: span.start_ms,
                    end_ms: span.end_ms,
                });
            }
        }
    }
    lanes
        .into_iter()
        .map(|(device, mut busy)| {
            busy.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
            DeviceLane { device, busy }
        })
        .collect()
}

struct JobBuilder {
    job: JobModel,
    partitions: BTreeMap<u32, PartitionBuilder>,
}

struct PartitionBuilder {
    model: PartitionModel,
    /// The phase in progress and when it began.
    open: Option<(Phase, f64, Option<String>)>,
    /// NTT duration of the device work in progress, for placing its MSM_END.
    ntt_ms: Option<f64>,
}

impl PartitionBuilder {
    fn new(index: u32, queued_ms: Option<f64>) -> Self {
        PartitionBuilder {
            model: PartitionModel {
                index,
                spans: Vec::new(),
                markers: Vec::new(),
                worker: None,
                verified: None,
            },
            open: queued_ms.map(|t| (Phase::QueueWait, t, None)),
            ntt_ms: None,
        }
    }

    fn close(&mut self, at_ms: f64, end: SpanEnd) {
        if let Some((phase, start_ms, device)) = self.open.take() {
            self.model.spans.push(Span {
                phase,
                start_ms,
                end_ms: at_ms,
                end,
                device,
            });
        }
    }

    fn enter(&mut self, phase: Phase, at_ms: f64, device: Option<&str>) {
        self.close(at_ms, SpanEnd::Complete);
        self.open = Some((phase, at_ms, device.map(str::to_string)));
    }

    fn current_phase(&self) -> Option<Phase> {
        self.open.as_ref().map(|(phase, _, _)| *phase)
    }

    fn apply(&mut self, event: &Event) {
        let t = event.offset_ms;
        match event.kind {
            EventKind::SynthStart => {
                self.model.worker = event.get("worker").map(str::to_string);
                self.enter(Phase::Synthesis, t, None);
            }
            EventKind::SynthEnd => self.enter(Phase::DeviceWait, t, None),
            // GPU_QUEUE normally follows SYNTH_END at once; the wait began at SYNTH_END.
            EventKind::GpuQueue if self.current_phase() == Some(Phase::DeviceWait) => {}
            EventKind::GpuQueue => self.enter(Phase::DeviceWait, t, None),
            EventKind::GpuLockWait => {
                if self.current_phase() != Some(Phase::DeviceWait) {
                    self.enter(Phase::DeviceWait, t, None);
                }
                if let Some((_, _, device)) = &mut self.open {
                    *device = event.device().map(str::to_string);
                }
                self.mark(event);
            }
            EventKind::GpuStart => {
                self.ntt_ms = None;
                self.enter(Phase::DeviceWork, t, event.device());
            }
            EventKind::NttEnd | EventKind::MsmEnd => self.mark(event),
            EventKind::GpuEnd => {
                // Keep the device named by GPU_START; GPU_END's is only a fallback.
                if let Some((Phase::DeviceWork, _, device @ None)) = &mut self.open {
                    *device = event.device().map(str::to_string);
                }
                self.enter(Phase::Finalize, t, None);
            }
            EventKind::FinalizeEnd => {
                self.model.verified = event.get("verified").map(|v| v == "true");
                self.close(t, SpanEnd::Complete);
            }
            _ => {}
        }
    }

    fn mark(&mut self, event: &Event) {
        let ms: Option<f64> = event.get("ms").and_then(|ms| ms.parse().ok());
        let work_start = match &self.open {
            Some((Phase::DeviceWork, start, _)) => Some(*start),
            _ => None,
        };
        let ended = match (&event.kind, work_start, ms) {
            (EventKind::NttEnd, Some(start), Some(ms)) => {
                self.ntt_ms = Some(ms);
                Some(start + ms)
            }
            (EventKind::MsmEnd, Some(start), Some(ms)) => {
                Some(start + self.ntt_ms.unwrap_or(0.0) + ms)
            }
            _ => None,
        };
        self.model.markers.push(Marker {
            kind: event.kind.clone(),
            offset_ms: event.offset_ms,
            // A step cannot end after its line was written; rounding in the durations can
            // push the sum a hair past it.
            at_ms: ended.map_or(event.offset_ms, |at| at.min(event.offset_ms)),
        });
    }
}

impl JobBuilder {
    fn new(job_id: &str) -> Self {
        JobBuilder {
            job: JobModel {
                job_id: job_id.to_string(),
                kind: None,
                priority: None,
                queued_ms: None,
                ended_ms: None,
                outcome: JobOutcome::Unfinished,
                partitions: Vec::new(),
            },
            partitions: BTreeMap::new(),
        }
    }

    fn partition(&mut self, index: u32) -> &mut PartitionBuilder {
        let queued_ms = self.job.queued_ms;
        self.partitions
            .entry(index)
            .or_insert_with(|| PartitionBuilder::new(index, queued_ms))
    }

    fn apply(&mut self, event: &Event) {
        let t = event.offset_ms;
        match &event.kind {
            EventKind::JobQueued => {
                self.job.queued_ms = Some(t);
                self.job.kind = event.get("kind").map(str::to_string);
                self.job.priority = event.get("priority").map(str::to_string);
                // Partitions that never reach a worker before the job ends still waited in
                // the queue, so they get rows too.
                let declared: u32 = event
                    .get("partitions")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                for index in 0..declared {
                    self.partition(index);
                }
            }
            kind if kind.is_job_end() => {
                self.job.ended_ms = Some(t);
                self.job.outcome = match kind {
                    EventKind::JobDone => JobOutcome::Done,
                    EventKind::JobFailed => JobOutcome::Failed {
                        error: event.get("error").unwrap_or("").to_string(),
                    },
                    _ => JobOutcome::Cancelled,
                };
                for partition in self.partitions.values_mut() {
                    partition.close(t, SpanEnd::JobEnded);
                }
            }
            _ => {
                if let Some(index) = event.partition() {
                    self.partition(index).apply(event);
                }
            }
        }
    }

    fn finish(mut self, log_end_ms: f64) -> JobModel {
        self.job.partitions = self
            .partitions
            .into_values()
            .map(|mut p| {
                p.close(log_end_ms, SpanEnd::LogEnded);
                p.model
            })
            .collect();
        self.job
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_timeline;
    use super::*;

    fn model(log: &str) -> RunModel {
        let timeline = parse_timeline(log);
        assert!(timeline.malformed.is_empty(), "{:?}", timeline.malformed);
        build_model(&timeline.events)
    }

    fn phases(p: &PartitionModel) -> Vec<(Phase, f64, f64, SpanEnd)> {
        p.spans
            .iter()
            .map(|s| (s.phase, s.start_ms, s.end_ms, s.end))
            .collect()
    }

    #[test]
    fn one_partition_walks_all_phases() {
        let m = model(
            "TIMELINE,0,JOB_QUEUED,j,kind=porep;partitions=1;priority=normal\n\
             TIMELINE,2,SYNTH_START,j,partition=0;worker=1\n\
             TIMELINE,10,SYNTH_END,j,partition=0;worker=1;ms=8\n\
             TIMELINE,11,GPU_QUEUE,j,partition=0\n\
             TIMELINE,12,GPU_LOCK_WAIT,j,partition=0;device=cuda0\n\
             TIMELINE,13,GPU_START,j,partition=0;device=cuda0\n\
             TIMELINE,15,NTT_END,j,partition=0;device=cuda0;ms=2\n\
             TIMELINE,20,GPU_END,j,partition=0;device=cuda0;ms=7\n\
             TIMELINE,21,FINALIZE_END,j,partition=0;verified=true;ms=1\n\
             TIMELINE,21,JOB_DONE,j,ms=21\n",
        );
        let job = &m.jobs[0];
        assert_eq!(job.kind.as_deref(), Some("porep"));
        assert_eq!(job.outcome, JobOutcome::Done);
        let p = &job.partitions[0];
        use Phase::*;
        use SpanEnd::Complete;
        assert_eq!(
            phases(p),
            [
                (QueueWait, 0.0, 2.0, Complete),
                (Synthesis, 2.0, 10.0, Complete),
                (DeviceWait, 10.0, 13.0, Complete),
                (DeviceWork, 13.0, 20.0, Complete),
                (Finalize, 20.0, 21.0, Complete),
            ]
        );
        assert_eq!(p.spans[2].device.as_deref(), Some("cuda0"));
        assert_eq!(p.worker.as_deref(), Some("1"));
        assert_eq!(p.verified, Some(true));
        assert!(p.is_finalized());
        assert_eq!(p.markers.len(), 2);
        // GPU_LOCK_WAIT at its own offset; NTT_END written at 15 but 2 ms after GPU_START.
        let at: Vec<f64> = p.markers.iter().map(|m| m.at_ms).collect();
        assert_eq!(at, [12.0, 15.0]);
        assert_eq!(m.devices.len(), 1);
        assert_eq!(m.devices[0].busy[0].start_ms, 13.0);
    }

    #[test]
    fn ntt_and_msm_ends_are_placed_by_their_durations() {
        // As the engine writes them: both after the work, just before GPU_END.
        let m = model(
            "TIMELINE,0,GPU_START,j,partition=0;device=cuda0\n\
             TIMELINE,100,NTT_END,j,partition=0;device=cuda0;ms=30\n\
             TIMELINE,100,MSM_END,j,partition=0;device=cuda0;ms=65.5\n\
             TIMELINE,100,GPU_END,j,partition=0;device=cuda0;ms=100\n",
        );
        let at: Vec<f64> = m.jobs[0].partitions[0]
            .markers
            .iter()
            .map(|m| m.at_ms)
            .collect();
        assert_eq!(at, [30.0, 95.5]);
    }

    #[test]
    fn rerouted_partition_has_two_device_spans() {
        let m = model(
            "TIMELINE,0,JOB_QUEUED,j,partitions=1\n\
             TIMELINE,1,SYNTH_START,j,partition=0\n\
             TIMELINE,2,SYNTH_END,j,partition=0\n\
             TIMELINE,3,GPU_START,j,partition=0;device=cuda0\n\
             TIMELINE,5,GPU_QUEUE,j,partition=0\n\
             TIMELINE,6,GPU_START,j,partition=0;device=cpu\n\
             TIMELINE,9,GPU_END,j,partition=0;device=cpu\n\
             TIMELINE,9,FINALIZE_END,j,partition=0\n",
        );
        let p = &m.jobs[0].partitions[0];
        assert_eq!(p.phase_ms(Phase::DeviceWork), Some(5.0));
        assert_eq!(p.phase_ms(Phase::DeviceWait), Some(2.0));
        let names: Vec<_> = m.devices.iter().map(|d| d.device.as_str()).collect();
        assert_eq!(names, ["cpu", "cuda0"]);
        assert_eq!(m.jobs[0].outcome, JobOutcome::Unfinished);
    }

    #[test]
    fn failure_and_log_end_close_open_phases() {
        let m = model(
            "TIMELINE,0,JOB_QUEUED,a,partitions=2\n\
             TIMELINE,1,SYNTH_START,a,partition=0\n\
             TIMELINE,4,JOB_FAILED,a,error=out of memory\n\
             TIMELINE,5,JOB_QUEUED,b,partitions=1\n\
             TIMELINE,6,SYNTH_START,b,partition=0\n\
             TIMELINE,7,SRS_LOADED,-,tier=hot\n",
        );
        assert_eq!(m.jobs.len(), 2, "the engine-wide event is no job");
        let a = &m.jobs[0];
        assert_eq!(
            a.outcome,
            JobOutcome::Failed {
                error: "out of memory".into()
            }
        );
        // Partition 1 never left the queue, but it still has a row.
        assert_eq!(
            phases(&a.partitions[1]),
            [(Phase::QueueWait, 0.0, 4.0, SpanEnd::JobEnded)]
        );
        assert_eq!(a.partitions[0].spans[1].end, SpanEnd::JobEnded);
        let b = &m.jobs[1].partitions[0];
        assert_eq!(
            b.spans.last().map(|s| (s.end_ms, s.end)),
            Some((6.0, SpanEnd::LogEnded))
        );
        assert_eq!((m.start_ms, m.end_ms), (0.0, 6.0));
    }
}

//! Parser for the daemon's TIMELINE lines.
//!
//! Format (DESIGN.md, "TIMELINE events"), one event per stderr line:
//!
//! ```text
//! TIMELINE,<offset_ms>,<EVENT>,<job_id>,<detail>
//! ```
//!
//! `detail` is `key=value` pairs joined by `;` and may be empty. Any line that does not start
//! with `TIMELINE,` is someone else's output (tracing, panics, a wrapper script) and is ignored.
//! A line that does start with it but breaks the format is reported with its line number and
//! skipped, so one torn write cannot hide the rest of a run.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// The prefix that marks a TIMELINE line; the trailing comma keeps words such as
/// `TIMELINEX` out.
const PREFIX: &str = "TIMELINE,";

/// The engine's event names. Unknown names are kept as [`EventKind::Other`] rather than
/// rejected: a newer daemon may add events and an older client must still draw the rest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum EventKind {
    JobQueued,
    SynthStart,
    SynthEnd,
    GpuQueue,
    GpuLockWait,
    GpuStart,
    NttEnd,
    MsmEnd,
    GpuEnd,
    FinalizeEnd,
    JobDone,
    JobFailed,
    JobCancelled,
    Other(String),
}

impl EventKind {
    pub fn from_name(name: &str) -> EventKind {
        match name {
            "JOB_QUEUED" => EventKind::JobQueued,
            "SYNTH_START" => EventKind::SynthStart,
            "SYNTH_END" => EventKind::SynthEnd,
            "GPU_QUEUE" => EventKind::GpuQueue,
            "GPU_LOCK_WAIT" => EventKind::GpuLockWait,
            "GPU_START" => EventKind::GpuStart,
            "NTT_END" => EventKind::NttEnd,
            "MSM_END" => EventKind::MsmEnd,
            "GPU_END" => EventKind::GpuEnd,
            "FINALIZE_END" => EventKind::FinalizeEnd,
            "JOB_DONE" => EventKind::JobDone,
            "JOB_FAILED" => EventKind::JobFailed,
            "JOB_CANCELLED" => EventKind::JobCancelled,
            other => EventKind::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            EventKind::JobQueued => "JOB_QUEUED",
            EventKind::SynthStart => "SYNTH_START",
            EventKind::SynthEnd => "SYNTH_END",
            EventKind::GpuQueue => "GPU_QUEUE",
            EventKind::GpuLockWait => "GPU_LOCK_WAIT",
            EventKind::GpuStart => "GPU_START",
            EventKind::NttEnd => "NTT_END",
            EventKind::MsmEnd => "MSM_END",
            EventKind::GpuEnd => "GPU_END",
            EventKind::FinalizeEnd => "FINALIZE_END",
            EventKind::JobDone => "JOB_DONE",
            EventKind::JobFailed => "JOB_FAILED",
            EventKind::JobCancelled => "JOB_CANCELLED",
            EventKind::Other(name) => name,
        }
    }

    /// Events that end a job, whatever state its partitions are in.
    pub fn is_job_end(&self) -> bool {
        matches!(
            self,
            EventKind::JobDone | EventKind::JobFailed | EventKind::JobCancelled
        )
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One parsed TIMELINE line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// Milliseconds since the engine started.
    pub offset_ms: f64,
    pub kind: EventKind,
    pub job_id: String,
    pub detail: BTreeMap<String, String>,
    /// 1-based line number in the input, kept so that ties sort as they were written.
    pub line: usize,
}

impl Event {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.detail.get(key).map(String::as_str)
    }

    /// The partition index, when the event belongs to one partition of its job.
    pub fn partition(&self) -> Option<u32> {
        self.get("partition").and_then(|p| p.parse().ok())
    }

    pub fn device(&self) -> Option<&str> {
        self.get("device")
    }
}

/// A TIMELINE line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Malformed {
    /// 1-based line number in the input.
    pub line: usize,
    pub reason: String,
    pub text: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.reason, self.text)
    }
}

/// Everything read from one log.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// Sorted by offset; events at the same offset keep their input order, because the
    /// emitter writes causally related events (GPU_END, FINALIZE_END) in order even when the
    /// clock does not tick between them.
    pub events: Vec<Event>,
    pub malformed: Vec<Malformed>,
    /// Lines in the input that were not TIMELINE lines.
    pub ignored_lines: usize,
}

/// Parses a whole log. Never fails: bad TIMELINE lines end up in `malformed`.
pub fn parse_timeline(text: &str) -> Timeline {
    let mut timeline = Timeline::default();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        match parse_line(raw, line) {
            Ok(Some(event)) => timeline.events.push(event),
            Ok(None) => timeline.ignored_lines += 1,
            Err(reason) => timeline.malformed.push(Malformed {
                line,
                reason,
                text: raw.trim_end().to_string(),
            }),
        }
    }
    // A stable sort keeps same-offset events in input order.
    timeline
        .events
        .sort_by(|a, b| a.offset_ms.total_cmp(&b.offset_ms));
    timeline
}

/// Parses one line. `Ok(None)` for a line that is not a TIMELINE line; `Err(reason)` for one
/// that is but breaks the format.
pub fn parse_line(raw: &str, line: usize) -> Result<Option<Event>, String> {
    // `lines()` leaves the '\r' of a CRLF log (one copied off Windows, or through a pty).
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    let Some(rest) = raw.strip_prefix(PREFIX) else {
        return Ok(None);
    };
    // The detail never holds a comma, but if a daemon's error message slips one in it is
    // still better kept in the detail than the whole line thrown away.
    let mut fields = rest.splitn(4, ',');
    let offset = fields.next().unwrap_or("");
    let (Some(name), Some(job_id)) = (fields.next(), fields.next()) else {
        return Err("expected TIMELINE,<offset_ms>,<EVENT>,<job_id>,<detail>".to_string());
    };
    // An event with no detail may be written without the final comma.
    let detail = fields.next().unwrap_or("");

    let offset_ms: f64 = offset
        .parse()
        .map_err(|_| format!("offset `{offset}` is not a number of milliseconds"))?;
    if !offset_ms.is_finite() || offset_ms < 0.0 {
        return Err(format!(
            "offset `{offset}` is not a non-negative finite number"
        ));
    }
    if !is_event_name(name) {
        return Err(format!("event `{name}` is not an upper snake case name"));
    }
    // Any other text is a valid id: the emitter only strips ',' ';' and line breaks.
    if job_id.is_empty() {
        return Err("the job id is empty".to_string());
    }

    Ok(Some(Event {
        offset_ms,
        kind: EventKind::from_name(name),
        job_id: job_id.to_string(),
        detail: parse_detail(detail)?,
        line,
    }))
}

fn is_event_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn parse_detail(detail: &str) -> Result<BTreeMap<String, String>, String> {
    let mut pairs = BTreeMap::new();
    // A trailing ';' is harmless, so empty items are skipped rather than rejected.
    for item in detail.split(';').filter(|item| !item.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!("detail item `{item}` is not key=value"));
        };
        if key.is_empty() {
            return Err(format!("detail item `{item}` has an empty key"));
        }
        pairs.insert(key.to_string(), value.to_string());
    }
    // Numeric keys are checked here so that a torn number is reported at its line, not
    // silently read as a missing value later.
    if let Some(p) = pairs.get("partition") {
        if p.parse::<u32>().is_err() {
            return Err(format!("partition `{p}` is not a partition index"));
        }
    }
    if let Some(ms) = pairs.get("ms") {
        if !ms.parse::<f64>().is_ok_and(f64::is_finite) {
            return Err(format!("ms `{ms}` is not a number"));
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_full_line() {
        let event = parse_line(
            "TIMELINE,1234.5,GPU_END,job-7,partition=3;device=cuda1;ms=700",
            9,
        )
        .unwrap()
        .unwrap();
        assert_eq!(event.offset_ms, 1234.5);
        assert_eq!(event.kind, EventKind::GpuEnd);
        assert_eq!(event.job_id, "job-7");
        assert_eq!(event.partition(), Some(3));
        assert_eq!(event.device(), Some("cuda1"));
        assert_eq!(event.get("ms"), Some("700"));
        assert_eq!(event.line, 9);
    }

    #[test]
    fn empty_detail_with_or_without_the_last_comma() {
        for line in ["TIMELINE,5,JOB_CANCELLED,j,", "TIMELINE,5,JOB_CANCELLED,j"] {
            let event = parse_line(line, 1).unwrap().unwrap();
            assert!(event.detail.is_empty(), "{line}");
            assert_eq!(event.kind, EventKind::JobCancelled);
        }
    }

    #[test]
    fn other_lines_are_not_timeline_lines() {
        for line in [
            "",
            "2025-01-01T00:00:00Z INFO cuzk: TIMELINE,1,JOB_DONE,j,",
            "TIMELINEX,1,JOB_DONE,j,",
            "timeline,1,JOB_DONE,j,",
        ] {
            assert_eq!(parse_line(line, 1), Ok(None), "{line}");
        }
    }

    #[test]
    fn bad_lines_say_why() {
        let cases = [
            ("TIMELINE,1500.0,GPU_STA", "expected"),
            ("TIMELINE,12x,SYNTH_START,j,partition=0", "offset `12x`"),
            ("TIMELINE,-1,SYNTH_START,j,", "non-negative"),
            ("TIMELINE,NaN,SYNTH_START,j,", "non-negative"),
            ("TIMELINE,1,synth_start,j,", "upper snake case"),
            ("TIMELINE,1,SYNTH_START,,", "job id"),
            ("TIMELINE,1,SYNTH_START,j,partition3", "not key=value"),
            ("TIMELINE,1,SYNTH_START,j,partition=x", "partition `x`"),
            ("TIMELINE,1,SYNTH_END,j,partition=1;ms=1e", "ms `1e`"),
        ];
        for (line, why) in cases {
            let err = parse_line(line, 1).unwrap_err();
            assert!(err.contains(why), "{line}: {err}");
        }
    }

    #[test]
    fn unknown_events_are_kept() {
        let event = parse_line("TIMELINE,3,SRS_LOADED,-,tier=hot", 1)
            .unwrap()
            .unwrap();
        assert_eq!(event.kind, EventKind::Other("SRS_LOADED".into()));
        assert_eq!(event.kind.name(), "SRS_LOADED");
    }

    #[test]
    fn sorts_by_offset_and_keeps_ties_in_input_order() {
        let log = "TIMELINE,20,GPU_END,j,partition=0\n\
                   noise\n\
                   TIMELINE,20,FINALIZE_END,j,partition=0\n\
                   TIMELINE,10,GPU_START,j,partition=0\r\n\
                   TIMELINE,bad\n";
        let timeline = parse_timeline(log);
        let order: Vec<_> = timeline.events.iter().map(|e| e.line).collect();
        assert_eq!(order, [4, 1, 3]);
        assert_eq!(timeline.ignored_lines, 1);
        assert_eq!(timeline.malformed.len(), 1);
        assert_eq!(timeline.malformed[0].line, 5);
    }
}

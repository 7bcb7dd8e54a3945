//! TIMELINE events: one CSV line per phase boundary on stderr,
//! `TIMELINE,<offset_ms>,<EVENT>,<job_id>,<detail>`, so that a run can be rebuilt as a
//! waterfall from its log alone. The format is public (README) and stable.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

/// The emitter. Cheap to share; each line is written with a single `write` call so lines
/// from concurrent workers never interleave.
#[derive(Debug)]
pub struct Timeline {
    start: Instant,
    enabled: bool,
}

impl Timeline {
    pub fn new(enabled: bool) -> Self {
        Timeline {
            start: Instant::now(),
            enabled,
        }
    }

    /// Milliseconds since the engine started.
    pub fn offset_ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1e3
    }

    /// Emit `event` for `job` with `detail` as (key, value) pairs.
    pub fn emit(&self, event: &str, job: &str, detail: &[(&str, &dyn std::fmt::Display)]) {
        if !self.enabled {
            return;
        }
        let line = format_line(self.offset_ms(), event, job, detail);
        // stderr is unbuffered: one write_all of the whole line is one write(2) for any
        // line shorter than the pipe buffer.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

/// One TIMELINE line, newline-terminated. Commas and semicolons inside values would break
/// the format, so they are replaced.
pub fn format_line(
    offset_ms: f64,
    event: &str,
    job: &str,
    detail: &[(&str, &dyn std::fmt::Display)],
) -> String {
    let mut line = String::with_capacity(96);
    let _ = write!(line, "TIMELINE,{offset_ms:.3},{event},{},", sanitize(job));
    for (i, (k, v)) in detail.iter().enumerate() {
        if i > 0 {
            line.push(';');
        }
        let _ = write!(line, "{k}={}", sanitize(&v.to_string()));
    }
    line.push('\n');
    line
}

fn sanitize(s: &str) -> String {
    s.replace([',', ';', '\n', '\r'], "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format_is_stable() {
        let line = format_line(
            12.5,
            "SYNTH_END",
            "job-1",
            &[("partition", &3), ("ms", &"4.250"), ("error", &"a,b;c")],
        );
        assert_eq!(
            line,
            "TIMELINE,12.500,SYNTH_END,job-1,partition=3;ms=4.250;error=a_b_c\n"
        );
        assert_eq!(
            format_line(0.0, "JOB_DONE", "j", &[]),
            "TIMELINE,0.000,JOB_DONE,j,\n"
        );
    }
}

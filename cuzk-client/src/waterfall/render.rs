//! The waterfall as one self-contained HTML file: inline SVG and CSS, no script, nothing
//! fetched, so it opens from a CI artifact or a mail attachment as it is.
//!
//! Each bar carries an SVG `<title>`, which browsers show as a tooltip: hovering tells the job,
//! partition, phase, times and device without cluttering the chart with text.

use std::fmt::Write;

use super::model::{JobModel, JobOutcome, PartitionModel, Phase, RunModel, Span, SpanEnd};
use super::parse::{EventKind, Malformed};
use super::summary::{Summary, Table, View};

const WIDTH: f64 = 1560.0;
const LABEL_W: f64 = 200.0;
const RIGHT_PAD: f64 = 24.0;
const PLOT_W: f64 = WIDTH - LABEL_W - RIGHT_PAD;
const LANE_H: f64 = 18.0;
const JOB_HEADER_H: f64 = 20.0;
const AXIS_H: f64 = 26.0;
const LEGEND_H: f64 = 28.0;
/// Rows shrink past this many partitions so that a few hundred still fit a few screens.
const DENSE_ROWS: usize = 120;

/// Colour-blind-safe hues (Okabe-Ito), one per phase, in pipeline order.
fn phase_colour(phase: Phase) -> &'static str {
    match phase {
        Phase::QueueWait => "#b8b8b8",
        Phase::Synthesis => "#0072b2",
        Phase::DeviceWait => "#e69f00",
        Phase::DeviceWork => "#009e73",
        Phase::Finalize => "#cc79a7",
    }
}

const FAILED_COLOUR: &str = "#d55e00";
const OTHER_JOB_COLOUR: &str = "#d9d9d9";

pub struct RenderInput<'a> {
    pub title: &'a str,
    pub model: &'a RunModel,
    pub summary: &'a Summary,
    pub view: &'a View,
    pub malformed: &'a [Malformed],
}

pub fn render_html(input: &RenderInput<'_>) -> String {
    let mut html = String::new();
    let title = escape(input.title);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>{title}</h1>\n<p class=\"headline\">{}</p>\n",
        escape(&input.summary.headline())
    );
    html.push_str(&render_svg(input.model, input.summary, input.view));
    html.push_str("<div class=\"tables\">\n");
    section(&mut html, "Phase durations", &input.summary.phase_table());
    section(
        &mut html,
        "Devices (busy over the window, all jobs)",
        &input.summary.device_table(),
    );
    section(
        &mut html,
        "Phase duration by partitions in flight (mean ms (n))",
        &input.summary.load_table(),
    );
    html.push_str("</div>\n");
    if !input.malformed.is_empty() {
        let _ = writeln!(
            html,
            "<details class=\"malformed\"><summary>{} malformed TIMELINE line(s) skipped</summary><ul>",
            input.malformed.len()
        );
        for m in input.malformed {
            let _ = writeln!(
                html,
                "<li>line {}: {} — <code>{}</code></li>",
                m.line,
                escape(&m.reason),
                escape(&m.text)
            );
        }
        html.push_str("</ul></details>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
}

const STYLE: &str = "\
body{font:13px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:16px 20px;color:#222;background:#fff}\
h1{font-size:18px;margin:0 0 4px}\
h2{font-size:14px;margin:18px 0 6px}\
.headline{color:#555;margin:0 0 10px}\
svg{display:block}\
.sticky{position:sticky;top:0;background:#fff;z-index:1;border-bottom:1px solid #ddd}\
svg text{font-family:system-ui,-apple-system,'Segoe UI',sans-serif}\
.tables{display:flex;flex-wrap:wrap;gap:0 36px}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums}\
th,td{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}\
th{background:#f4f4f4;font-weight:600}\
th:first-child,td:first-child{text-align:left}\
.malformed{margin-top:16px;color:#8a3b00}\
code{font-size:12px}";

fn section(html: &mut String, heading: &str, (headers, rows): &Table) {
    let _ = write!(html, "<section><h2>{}</h2><table><tr>", escape(heading));
    for h in headers {
        let _ = write!(html, "<th>{}</th>", escape(h));
    }
    html.push_str("</tr>\n");
    for row in rows {
        html.push_str("<tr>");
        for cell in row {
            let _ = write!(html, "<td>{}</td>", escape(cell));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table></section>\n");
}

/// Maps engine milliseconds to x pixels for the viewed window.
struct Scale {
    from_ms: f64,
    to_ms: f64,
    px_per_ms: f64,
}

impl Scale {
    fn new(view: &View) -> Scale {
        // A zero-width window (one event) still needs a finite scale.
        let width = view.width_ms().max(1.0);
        Scale {
            from_ms: view.from_ms,
            to_ms: view.from_ms + width,
            px_per_ms: PLOT_W / width,
        }
    }

    fn x(&self, t_ms: f64) -> f64 {
        LABEL_W + (t_ms.clamp(self.from_ms, self.to_ms) - self.from_ms) * self.px_per_ms
    }

    /// Clipped bar extent, or `None` when it lies outside the window. Bars of real but tiny
    /// duration get a sliver so they stay visible; zero-length ones are skipped.
    fn bar(&self, start_ms: f64, end_ms: f64) -> Option<(f64, f64)> {
        if end_ms < self.from_ms || start_ms > self.to_ms || end_ms <= start_ms {
            return None;
        }
        let x = self.x(start_ms);
        Some((x, (self.x(end_ms) - x).max(0.75)))
    }
}

/// Two SVGs: a header (legend, axis, device lanes) that stays on screen while scrolling, so a
/// few hundred partition rows below can still be read against the axis and the devices; and
/// the rows themselves.
fn render_svg(model: &RunModel, summary: &Summary, view: &View) -> String {
    let scale = Scale::new(view);
    let jobs: Vec<&JobModel> = model
        .jobs
        .iter()
        .filter(|j| view.shows_job(&j.job_id))
        .filter(|j| j.extent().is_some_and(|(s, e)| view.overlaps(s, e)))
        .collect();
    let rows: usize = jobs.iter().map(|j| j.partitions.len()).sum();
    let row_h = if rows > DENSE_ROWS { 9.0 } else { 15.0 };

    let mut header = String::new();
    legend(&mut header);
    let axis_y = LEGEND_H + AXIS_H - 6.0;
    let header_h = LEGEND_H + AXIS_H + JOB_HEADER_H + model.devices.len() as f64 * LANE_H + 6.0;
    grid(&mut header, &scale, axis_y, header_h);
    axis(&mut header, &scale, axis_y, true);
    device_lanes(&mut header, model, summary, view, &scale, LEGEND_H + AXIS_H);

    let mut body = String::new();
    let mut y = 4.0;
    for (i, job) in jobs.iter().enumerate() {
        let height = JOB_HEADER_H + job.partitions.len() as f64 * row_h;
        if i % 2 == 0 {
            let _ = writeln!(
                body,
                "<rect x=\"0\" y=\"{y:.1}\" width=\"{WIDTH}\" height=\"{height:.1}\" class=\"band\"/>"
            );
        }
        job_header(&mut body, job, &scale, y, row_h);
        y += JOB_HEADER_H;
        for partition in &job.partitions {
            partition_row(&mut body, job, partition, &scale, y, row_h);
            y += row_h;
        }
    }
    let plot_bottom = y + 4.0;
    let mut rows_svg = String::new();
    grid(&mut rows_svg, &scale, 0.0, plot_bottom);
    rows_svg.push_str(&body);
    axis(&mut rows_svg, &scale, plot_bottom, false);

    format!(
        "<div class=\"sticky\">\n{}</div>\n{}",
        svg_element(
            &header,
            header_h,
            "waterfall legend, time axis and device lanes"
        ),
        svg_element(
            &rows_svg,
            plot_bottom + AXIS_H,
            "waterfall of job partitions"
        )
    )
}

fn svg_element(content: &str, height: f64, label: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"{label}\">\n\
         <style>{SVG_STYLE}</style>\n{content}</svg>\n"
    )
}

/// Device lanes: they answer "is the device ever idle" before the detail below.
fn device_lanes(
    svg: &mut String,
    model: &RunModel,
    summary: &Summary,
    view: &View,
    scale: &Scale,
    top: f64,
) {
    let _ = writeln!(
        svg,
        "<text x=\"8\" y=\"{:.1}\" class=\"group\">devices</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" class=\"small\" text-anchor=\"end\">busy</text>",
        top + 14.0,
        LABEL_W - 8.0,
        top + 14.0
    );
    let mut y = top + JOB_HEADER_H;
    for lane in &model.devices {
        let busy = summary.device(&lane.device).map_or(String::new(), |d| {
            format!("{:.0}%", d.busy_fraction * 100.0)
        });
        let _ = writeln!(
            svg,
            "<rect x=\"{LABEL_W}\" y=\"{y:.1}\" width=\"{PLOT_W}\" height=\"{:.1}\" class=\"lane\"/>\
             <text x=\"16\" y=\"{:.1}\" class=\"label\">{}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"label\" text-anchor=\"end\">{busy}</text>",
            LANE_H - 2.0,
            y + LANE_H - 5.5,
            escape(&lane.device),
            LABEL_W - 8.0,
            y + LANE_H - 5.5,
        );
        for busy in &lane.busy {
            let Some((x, w)) = scale.bar(busy.start_ms, busy.end_ms) else {
                continue;
            };
            let colour = if view.shows_job(&busy.job_id) {
                phase_colour(Phase::DeviceWork)
            } else {
                OTHER_JOB_COLOUR
            };
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{:.1}\" fill=\"{colour}\" class=\"busy\">\
                 <title>{} p{} on {}: {} .. {} s ({:.1} ms)</title></rect>",
                LANE_H - 2.0,
                escape(&busy.job_id),
                busy.partition,
                escape(&lane.device),
                secs(busy.start_ms),
                secs(busy.end_ms),
                busy.end_ms - busy.start_ms
            );
        }
        y += LANE_H;
    }
}

const SVG_STYLE: &str = "\
.label{font-size:11px;fill:#333}\
.small{font-size:10px;fill:#777}\
.group{font-size:12px;font-weight:600;fill:#222}\
.tick{font-size:10px;fill:#555}\
.grid{stroke:#e6e6e6;stroke-width:1}\
.axis{stroke:#888;stroke-width:1}\
.lane{fill:#f2f2f2}\
.band{fill:#fafafa}\
.busy{stroke:#fff;stroke-width:0.5}\
.open{opacity:0.45;stroke-dasharray:3 2;stroke-width:1}\
.mark{stroke:#fff;stroke-width:1;opacity:0.85}\
.lockmark{stroke:#7a5200;stroke-width:1}";

fn legend(svg: &mut String) {
    let mut x = 8.0;
    let y = 8.0;
    for phase in Phase::ALL {
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"{}\" class=\"label\">{}</text>",
            phase_colour(phase),
            x + 19.0,
            y + 10.0,
            phase.label()
        );
        x += 34.0 + phase.label().len() as f64 * 6.2;
    }
    let _ = writeln!(
        svg,
        "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"12\" fill=\"{}\" stroke=\"{}\" class=\"open\"/>\
         <text x=\"{}\" y=\"{}\" class=\"label\">cut short (job ended / log ended)</text>\
         <line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{}\" stroke=\"{FAILED_COLOUR}\" stroke-width=\"2\"/>\
         <text x=\"{}\" y=\"{}\" class=\"label\">job failed</text>\
         <text x=\"{}\" y=\"{}\" class=\"small\">ticks: NTT end, MSM end (white), device lock wait (dark)</text>",
        phase_colour(Phase::DeviceWork),
        phase_colour(Phase::DeviceWork),
        x + 19.0,
        y + 10.0,
        x + 236.0,
        x + 236.0,
        y + 12.0,
        x + 243.0,
        y + 10.0,
        x + 330.0,
        y + 10.0,
    );
}

/// Tick step in ms: 1, 2 or 5 times a power of ten, about ten ticks across the window.
fn tick_step_ms(width_ms: f64) -> f64 {
    let rough = (width_ms / 10.0).max(1e-3);
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|step| *step >= rough)
        .unwrap_or(10.0 * power)
}

fn ticks(scale: &Scale) -> (f64, impl Iterator<Item = f64>) {
    let step = tick_step_ms(scale.to_ms - scale.from_ms);
    let first = (scale.from_ms / step).ceil() as i64;
    let last = (scale.to_ms / step).floor() as i64;
    (step, (first..=last).map(move |k| k as f64 * step))
}

fn grid(svg: &mut String, scale: &Scale, top: f64, bottom: f64) {
    for t in ticks(scale).1 {
        let x = scale.x(t);
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.2}\" y1=\"{top:.1}\" x2=\"{x:.2}\" y2=\"{bottom:.1}\" class=\"grid\"/>"
        );
    }
}

/// Axis line with tick labels above it (`labels_above`) or below it.
fn axis(svg: &mut String, scale: &Scale, y: f64, labels_above: bool) {
    let (step, ticks) = ticks(scale);
    // Enough decimals that neighbouring ticks differ.
    let decimals = if step >= 1000.0 {
        0
    } else {
        (3.0 - step.log10().floor()).clamp(1.0, 4.0) as usize
    };
    let _ = writeln!(
        svg,
        "<line x1=\"{LABEL_W}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" class=\"axis\"/>",
        LABEL_W + PLOT_W
    );
    let text_y = if labels_above { y - 5.0 } else { y + 14.0 };
    for t in ticks {
        let _ = writeln!(
            svg,
            "<text x=\"{:.2}\" y=\"{text_y:.1}\" class=\"tick\" text-anchor=\"middle\">{:.*}</text>",
            scale.x(t),
            decimals,
            t / 1000.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{text_y:.1}\" class=\"tick\" text-anchor=\"end\">seconds since engine start</text>",
        LABEL_W - 8.0,
    );
}

fn job_header(body: &mut String, job: &JobModel, scale: &Scale, y: f64, row_h: f64) {
    let outcome = match &job.outcome {
        JobOutcome::Done => "done".to_string(),
        JobOutcome::Failed { error } => format!("FAILED: {error}"),
        JobOutcome::Cancelled => "cancelled".to_string(),
        JobOutcome::Unfinished => "unfinished".to_string(),
    };
    let total = match (job.queued_ms, job.ended_ms) {
        (Some(q), Some(e)) => format!(" in {:.2} s", (e - q) / 1000.0),
        _ => String::new(),
    };
    let about: Vec<&str> = [job.kind.as_deref(), job.priority.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let _ = writeln!(
        body,
        "<text x=\"8\" y=\"{:.1}\" class=\"group\">{}<title>{}</title></text>\
         <text x=\"{:.1}\" y=\"{:.1}\" class=\"small\">{} · {} partitions · {}{}</text>",
        y + 14.0,
        escape(&shorten(&job.job_id, 26)),
        escape(&job.job_id),
        LABEL_W + 4.0,
        y + 14.0,
        escape(&about.join(" · ")),
        job.partitions.len(),
        escape(&outcome),
        total
    );
    if let (Some(end), JobOutcome::Failed { .. } | JobOutcome::Cancelled) =
        (job.ended_ms, &job.outcome)
    {
        if end >= scale.from_ms && end <= scale.to_ms {
            let x = scale.x(end);
            let rows = job.partitions.len() as f64;
            let _ = writeln!(
                body,
                "<line x1=\"{x:.2}\" y1=\"{:.1}\" x2=\"{x:.2}\" y2=\"{:.1}\" stroke=\"{FAILED_COLOUR}\" stroke-width=\"2\"/>",
                y + 3.0,
                y + JOB_HEADER_H + rows * row_h
            );
        }
    }
}

fn partition_row(
    body: &mut String,
    job: &JobModel,
    partition: &PartitionModel,
    scale: &Scale,
    y: f64,
    row_h: f64,
) {
    let bar_h = row_h - 3.0;
    let mut label = format!("p{}", partition.index);
    if let Some(worker) = &partition.worker {
        let _ = write!(label, " · w{worker}");
    }
    if row_h >= 12.0 {
        let _ = writeln!(
            body,
            "<text x=\"24\" y=\"{:.1}\" class=\"small\">{}</text>",
            y + bar_h - 1.5,
            escape(&label)
        );
    }
    for span in &partition.spans {
        let Some((x, w)) = scale.bar(span.start_ms, span.end_ms) else {
            continue;
        };
        let colour = phase_colour(span.phase);
        let open = if span.is_complete() {
            String::new()
        } else {
            format!(" class=\"open\" stroke=\"{colour}\"")
        };
        let _ = writeln!(
            body,
            "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{bar_h:.1}\" fill=\"{colour}\"{open}>\
             <title>{}</title></rect>",
            escape(&span_title(job, partition, span))
        );
    }
    for marker in &partition.markers {
        if marker.at_ms < scale.from_ms || marker.at_ms > scale.to_ms {
            continue;
        }
        let class = if marker.kind == EventKind::GpuLockWait {
            "lockmark"
        } else {
            "mark"
        };
        let x = scale.x(marker.at_ms);
        let _ = writeln!(
            body,
            "<line x1=\"{x:.2}\" y1=\"{:.1}\" x2=\"{x:.2}\" y2=\"{:.1}\" class=\"{class}\"/>",
            y + 1.0,
            y + bar_h - 1.0
        );
    }
}

fn span_title(job: &JobModel, partition: &PartitionModel, span: &Span) -> String {
    let mut title = format!(
        "{} p{} · {}: {} .. {} s ({:.1} ms)",
        job.job_id,
        partition.index,
        span.phase.label(),
        secs(span.start_ms),
        secs(span.end_ms),
        span.duration_ms()
    );
    if let Some(device) = &span.device {
        let _ = write!(title, " on {device}");
    }
    match span.end {
        SpanEnd::Complete => {}
        SpanEnd::JobEnded => title.push_str(" · cut short: job ended"),
        SpanEnd::LogEnded => title.push_str(" · cut short: log ends"),
    }
    title
}

fn secs(ms: f64) -> String {
    format!("{:.3}", ms / 1000.0)
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let head: String = text.chars().take(max - 1).collect();
        head + "…"
    }
}

/// Escapes text for HTML element content and double-quoted attributes alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_steps_are_round() {
        assert_eq!(tick_step_ms(3090.0), 500.0);
        assert_eq!(tick_step_ms(10_000.0), 1000.0);
        assert_eq!(tick_step_ms(120_000.0), 20_000.0);
        assert_eq!(tick_step_ms(45.0), 5.0);
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn bars_are_clipped_to_the_window() {
        let scale = Scale::new(&View {
            from_ms: 1000.0,
            to_ms: 2000.0,
            job: None,
        });
        assert_eq!(scale.bar(0.0, 999.0), None);
        assert_eq!(scale.bar(1500.0, 1500.0), None);
        let (x, w) = scale.bar(500.0, 1500.0).unwrap();
        assert_eq!(x, LABEL_W);
        assert!((w - PLOT_W / 2.0).abs() < 1e-9);
    }
}

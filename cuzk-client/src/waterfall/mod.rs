//! `cuzk-client waterfall LOG`: rebuilds what ran when from the daemon's TIMELINE lines and
//! writes it as an HTML chart plus a text summary.
//!
//! The way through: [`parse`] (lines -> events) -> [`model`] (events -> per-partition phase
//! spans and device lanes) -> [`summary`] (percentiles, device busy time, load scaling) ->
//! [`render`] (HTML with inline SVG).

pub mod model;
pub mod parse;
pub mod render;
pub mod summary;

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

pub use model::{build_model, Phase, RunModel};
pub use parse::{parse_timeline, Event, EventKind, Malformed, Timeline};
pub use summary::{summarize, Summary, View};

/// Arguments of `cuzk-client waterfall`.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct WaterfallArgs {
    /// Daemon log (its stderr) holding TIMELINE lines; `-` reads standard input.
    pub log: PathBuf,
    /// Where to write the HTML chart [default: LOG with extension .waterfall.html, or
    /// waterfall.html when reading standard input].
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Start of the window to show, in seconds since engine start.
    #[arg(long)]
    pub from: Option<f64>,
    /// End of the window to show, in seconds since engine start.
    #[arg(long)]
    pub to: Option<f64>,
    /// Show only this job's partitions (device lanes still show every job, greyed).
    #[arg(long)]
    pub job: Option<String>,
    /// Also write the summary as JSON to this file. (Not `--json`: the client's global
    /// `--json` flag owns that name.)
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
}

#[derive(Debug)]
pub enum WaterfallError {
    Read {
        path: PathBuf,
        source: io::Error,
    },
    Write {
        path: PathBuf,
        source: io::Error,
    },
    /// The log has no TIMELINE events of any job: the wrong file, or a daemon that ran
    /// without its timeline.
    NoEvents {
        path: PathBuf,
        malformed: usize,
    },
    /// `--from/--to/--job` select nothing that exists.
    BadView(String),
}

impl fmt::Display for WaterfallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaterfallError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            WaterfallError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
            WaterfallError::NoEvents { path, malformed } => write!(
                f,
                "{} holds no TIMELINE events ({malformed} malformed TIMELINE lines)",
                path.display()
            ),
            WaterfallError::BadView(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for WaterfallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WaterfallError::Read { source, .. } | WaterfallError::Write { source, .. } => {
                Some(source)
            }
            _ => None,
        }
    }
}

/// What `run` did; its `Display` is what the command prints.
#[derive(Debug, Clone)]
pub struct Report {
    pub html_path: PathBuf,
    pub json_path: Option<PathBuf>,
    pub events: usize,
    pub ignored_lines: usize,
    pub malformed: Vec<Malformed>,
    pub summary: Summary,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for m in &self.malformed {
            writeln!(f, "warning: skipped malformed TIMELINE {m}")?;
        }
        writeln!(
            f,
            "{} TIMELINE events, {} other lines ignored, {} malformed",
            self.events,
            self.ignored_lines,
            self.malformed.len()
        )?;
        write!(f, "{}", self.summary)?;
        writeln!(f, "\nwrote {}", self.html_path.display())?;
        if let Some(json) = &self.json_path {
            writeln!(f, "wrote {}", json.display())?;
        }
        Ok(())
    }
}

/// The whole analysis of one log, without touching files.
pub struct Analysis {
    pub timeline: Timeline,
    pub model: RunModel,
    pub view: View,
    pub summary: Summary,
    pub html: String,
}

/// Parses `text`, builds the model, summarizes the window and renders the chart.
pub fn analyze(text: &str, args: &WaterfallArgs) -> Result<Analysis, WaterfallError> {
    let timeline = parse_timeline(text);
    let model = build_model(&timeline.events);
    if model.jobs.is_empty() {
        return Err(WaterfallError::NoEvents {
            path: args.log.clone(),
            malformed: timeline.malformed.len(),
        });
    }
    let view = View::resolve(&model, args.from, args.to, args.job.as_deref())
        .map_err(WaterfallError::BadView)?;
    let summary = summarize(&model, &view);
    let title = format!("cuzk waterfall — {}", args.log.display());
    let html = render::render_html(&render::RenderInput {
        title: &title,
        model: &model,
        summary: &summary,
        view: &view,
        malformed: &timeline.malformed,
    });
    Ok(Analysis {
        timeline,
        model,
        view,
        summary,
        html,
    })
}

/// Entry point of `cuzk-client waterfall`: reads the log, writes the HTML (and JSON when
/// asked) and returns the report to print.
pub fn run(args: &WaterfallArgs) -> Result<Report, WaterfallError> {
    let text = read_log(&args.log)?;
    let analysis = analyze(&text, args)?;

    let html_path = args.out.clone().unwrap_or_else(|| default_out(&args.log));
    write_file(&html_path, &analysis.html)?;
    if let Some(json_path) = &args.summary_json {
        let json = serde_json::to_string_pretty(&analysis.summary)
            .expect("the summary holds only strings and numbers");
        write_file(json_path, &json)?;
    }
    Ok(Report {
        html_path,
        json_path: args.summary_json.clone(),
        events: analysis.timeline.events.len(),
        ignored_lines: analysis.timeline.ignored_lines,
        malformed: analysis.timeline.malformed,
        summary: analysis.summary,
    })
}

fn read_log(path: &Path) -> Result<String, WaterfallError> {
    let read_err = |source| WaterfallError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        io::stdin().read_to_end(&mut buf).map_err(read_err)?;
        buf
    } else {
        std::fs::read(path).map_err(read_err)?
    };
    // A log may hold a stray non-UTF-8 byte (a panic message, a binary dump); that must not
    // cost the TIMELINE lines around it.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn write_file(path: &Path, contents: &str) -> Result<(), WaterfallError> {
    std::fs::write(path, contents).map_err(|source| WaterfallError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn default_out(log: &Path) -> PathBuf {
    if log == Path::new("-") {
        PathBuf::from("waterfall.html")
    } else {
        log.with_extension("waterfall.html")
    }
}

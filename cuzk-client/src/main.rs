//! cuzk-client: submit, await, prove, cancel and inspect proof jobs from the shell; run
//! benchmark sweeps; rebuild the waterfall from a daemon's TIMELINE.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use cuzk_client::filecoin_cmds::{self, GenVanillaArgs, ParamsCmd, ProveInputArgs};
use cuzk_client::rpc::{self, Client};
use cuzk_client::{bench, demo, load, waterfall};
use cuzk_core::kinds::SyntheticShape;
use cuzk_core::{Priority, ProofKind};
use cuzk_proto::v1 as pb;

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-client",
    version,
    about = "Client for the cuzk proving daemon"
)]
struct Cli {
    /// Daemon address: host:port, http://host:port, https://host:port or unix:/path.
    #[arg(
        long,
        global = true,
        env = "CUZK_ADDR",
        default_value = "127.0.0.1:9820"
    )]
    addr: String,
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
    /// Trust this CA certificate (PEM) for the daemon's TLS certificate; implies TLS.
    #[arg(long, global = true, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// The name the daemon's certificate must carry, when not the address's host.
    #[arg(long, global = true, value_name = "NAME")]
    tls_domain: Option<String>,
    /// File holding the daemon's bearer token (else $CUZK_AUTH_TOKEN).
    #[arg(long, global = true, value_name = "FILE")]
    token_file: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Submit a proof job; prints its id.
    Submit(JobArgs),
    /// Wait for a job and write its proof.
    Await(AwaitArgs),
    /// Submit and wait in one call.
    Prove(ProveArgs),
    /// Cancel a queued or running job.
    Cancel { job_id: String },
    /// Devices, parameter sets, queues, totals.
    Status,
    /// Prometheus metrics text.
    Metrics,
    /// Load a parameter set ahead of proofs (e.g. synthetic-2^16, porep-2k).
    Preload { circuit_id: String },
    /// Drop a loaded parameter set.
    Evict { circuit_id: String },
    /// Rebuild the waterfall chart and phase summary from a daemon log's TIMELINE lines.
    Waterfall(waterfall::WaterfallArgs),
    /// Sweep proofs at several concurrency levels and report throughput and latency; with
    /// --load and --probe, time one kind of proof under a background load of another.
    // Boxed: its many flags would make every command as large as it.
    Bench(Box<bench::BenchArgs>),
    /// Many small synthetic jobs from many concurrent connections; checks none is lost and
    /// every proof verifies.
    Load(load::LoadArgs),
    /// Start a daemon on its defaults, prove a few synthetic jobs, print the timings.
    Demo(demo::DemoArgs),
    /// Filecoin parameter files.
    #[command(subcommand)]
    Params(ParamsCmd),
    /// Seal a fresh sector and write vanilla proofs (test vectors).
    GenVanilla(GenVanillaArgs),
}

#[derive(Args, Debug)]
struct JobArgs {
    /// synthetic | porep | winning | window | snap
    #[arg(long, default_value = "synthetic")]
    kind: String,
    /// low | normal | high | critical (default: by kind)
    #[arg(long)]
    priority: Option<String>,
    /// Idempotency key.
    #[arg(long, default_value = "")]
    request_id: String,
    /// Synthetic: 2^k constraints per partition.
    #[arg(long, default_value_t = 16)]
    log_size: u32,
    /// Synthetic: partitions.
    #[arg(long, default_value_t = 1)]
    partitions: u32,
    /// Synthetic: witness seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Synthetic: uniform | porep (bit-heavy witness, B a quarter dense; up to 2^27).
    #[arg(long, default_value = "uniform")]
    shape: String,
    #[command(flatten)]
    filecoin: ProveInputArgs,
}

#[derive(Args, Debug)]
struct AwaitArgs {
    job_id: String,
    /// Give up waiting after this many ms (0: wait for the end).
    #[arg(long, default_value_t = 0)]
    timeout_ms: u64,
    /// Write the proof bytes here ("-" for stdout as raw bytes).
    #[arg(long, short)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ProveArgs {
    #[command(flatten)]
    job: JobArgs,
    #[arg(long, short)]
    out: Option<PathBuf>,
}

fn parse_kind(s: &str) -> anyhow::Result<ProofKind> {
    Ok(match s {
        "synthetic" => ProofKind::Synthetic,
        "porep" => ProofKind::PorepSealCommit,
        "winning" => ProofKind::WinningPost,
        "window" => ProofKind::WindowPostPartition,
        "snap" => ProofKind::SnapDealsUpdate,
        other => anyhow::bail!("unknown kind {other:?} (synthetic|porep|winning|window|snap)"),
    })
}

fn parse_priority(s: &str) -> anyhow::Result<Priority> {
    Ok(match s {
        "low" => Priority::Low,
        "normal" => Priority::Normal,
        "high" => Priority::High,
        "critical" => Priority::Critical,
        other => anyhow::bail!("unknown priority {other:?} (low|normal|high|critical)"),
    })
}

impl JobArgs {
    fn request(&self) -> anyhow::Result<pb::SubmitProofRequest> {
        let kind = parse_kind(&self.kind)?;
        let req = if kind == ProofKind::Synthetic {
            let mut r = rpc::synthetic_request(self.log_size, self.partitions, self.seed);
            r.synthetic_shape = SyntheticShape::parse(&self.shape)?;
            r
        } else {
            self.filecoin.to_request(kind)?
        };
        let priority = self.priority.as_deref().map(parse_priority).transpose()?;
        Ok(rpc::submit_request(req, priority, self.request_id.clone()))
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let tls = cli.tls_ca.is_some() || cli.addr.starts_with("https://");
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            let msg = format!("{e:#}");
            eprintln!("error: {msg}");
            if let Some(hint) = tls_mismatch_hint(&msg, tls) {
                eprintln!("hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}

/// A plaintext client talking to a TLS listener (or the reverse) sees only a protocol error;
/// name the likely cause.
fn tls_mismatch_hint(msg: &str, tls: bool) -> Option<&'static str> {
    let any = |needles: &[&str]| needles.iter().any(|n| msg.contains(n));
    if !tls && any(&["connection closed", "FRAME_SIZE_ERROR", "h2 protocol error"]) {
        Some("if the daemon serves TLS, pass --tls-ca PEM or an https:// address")
    } else if tls && any(&["InvalidContentType", "CorruptMessage", "corrupt message"]) {
        Some("the daemon does not seem to serve TLS: drop --tls-ca and use host:port")
    } else {
        None
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let json = cli.json;
    let connect = rpc::ConnectOptions {
        tls_ca: cli.tls_ca.clone(),
        tls_domain: cli.tls_domain.clone(),
        token: rpc::ConnectOptions::read_token(cli.token_file.as_deref())?,
    };
    match cli.cmd {
        Cmd::Waterfall(a) => {
            let report = waterfall::run(&a)?;
            println!("{report}");
            return Ok(ExitCode::SUCCESS);
        }
        Cmd::Demo(a) => return demo::run(&a).await.map(|_| ExitCode::SUCCESS),
        Cmd::Bench(mut a) => {
            a.connect = connect;
            if a.load.is_some() {
                let report = bench::probe::run(&a, &cli.addr, json).await?;
                return Ok(if report.failed() == 0 {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                });
            }
            let rows = bench::run(&a, &cli.addr, json).await?;
            let failed: usize = rows.iter().map(|r| r.failed).sum();
            return Ok(if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        Cmd::Load(a) => {
            let report = load::run(&a, &cli.addr, json).await?;
            return Ok(if report.passed(a.jobs) {
                ExitCode::SUCCESS
            } else {
                eprintln!("load test FAILED: lost, rejected or invalid jobs (see above)");
                ExitCode::FAILURE
            });
        }
        Cmd::Params(c) => {
            filecoin_cmds::run_params(&c)?;
            return Ok(ExitCode::SUCCESS);
        }
        Cmd::GenVanilla(a) => {
            filecoin_cmds::gen_vanilla(&a)?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let mut client = rpc::connect_with(&cli.addr, &connect).await?;
    match cli.cmd {
        Cmd::Submit(a) => {
            let r = client.submit_proof(a.request()?).await?.into_inner();
            if json {
                println!(
                    "{}",
                    serde_json::json!({"job_id": r.job_id, "queue_position": r.queue_position})
                );
            } else {
                println!("{}", r.job_id);
            }
        }
        Cmd::Await(a) => {
            let r = await_with_progress(&mut client, &a.job_id, a.timeout_ms).await?;
            return report_result(&r, a.out.as_ref(), json);
        }
        Cmd::Prove(a) => {
            let id = client
                .submit_proof(a.job.request()?)
                .await?
                .into_inner()
                .job_id;
            eprintln!("submitted {id}");
            let r = await_with_progress(&mut client, &id, 0).await?;
            return report_result(&r, a.out.as_ref(), json);
        }
        Cmd::Cancel { job_id } => {
            let r = client
                .cancel_proof(pb::CancelProofRequest {
                    job_id: job_id.clone(),
                })
                .await?
                .into_inner();
            if json {
                println!(
                    "{}",
                    serde_json::json!({"job_id": job_id, "was_running": r.was_running})
                );
            } else {
                println!(
                    "cancelled {job_id} (was {})",
                    if r.was_running { "running" } else { "queued" }
                );
            }
        }
        Cmd::Status => {
            let s = client
                .get_status(pb::GetStatusRequest {})
                .await?
                .into_inner();
            print_status(&s, json);
        }
        Cmd::Metrics => {
            let m = client
                .get_metrics(pb::GetMetricsRequest {})
                .await?
                .into_inner();
            print!("{}", m.prometheus_text);
        }
        Cmd::Preload { circuit_id } => {
            let r = client
                .preload_srs(pb::PreloadSrsRequest {
                    circuit_id: circuit_id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "{circuit_id}: {} ({} ms)",
                if r.already_loaded {
                    "already loaded"
                } else {
                    "loaded"
                },
                r.load_time_ms
            );
        }
        Cmd::Evict { circuit_id } => {
            let r = client
                .evict_srs(pb::EvictSrsRequest {
                    circuit_id: circuit_id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "{circuit_id}: {}",
                if r.was_loaded {
                    format!("evicted, {} bytes freed", r.freed_bytes)
                } else {
                    "was not loaded".into()
                }
            );
        }
        Cmd::Waterfall(_)
        | Cmd::Demo(_)
        | Cmd::Bench(_)
        | Cmd::Load(_)
        | Cmd::Params(_)
        | Cmd::GenVanilla(_) => {
            unreachable!("handled before connecting")
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// AwaitProof with a spinner on stderr (the server call blocks; the spinner shows life).
async fn await_with_progress(
    client: &mut Client,
    job_id: &str,
    timeout_ms: u64,
) -> anyhow::Result<pb::AwaitProofResponse> {
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .expect("static template"),
    );
    spinner.set_message(format!("proving {job_id}"));
    spinner.enable_steady_tick(Duration::from_millis(120));
    let r = client
        .await_proof(pb::AwaitProofRequest {
            job_id: job_id.to_string(),
            timeout_ms,
        })
        .await;
    spinner.finish_and_clear();
    let r = r?.into_inner();
    Ok(r)
}

fn report_result(
    r: &pb::AwaitProofResponse,
    out: Option<&PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let status = rpc::status_name(r.status);
    if let Some(path) = out {
        if !r.proof.is_empty() {
            if path.as_os_str() == "-" {
                use std::io::Write;
                std::io::stdout().write_all(&r.proof)?;
            } else {
                std::fs::write(path, &r.proof)?;
            }
        }
    }
    if json {
        println!(
            "{}",
            serde_json::json!({
                "job_id": r.job_id, "status": status, "error": r.error_message,
                "proof_hex": hex::encode(&r.proof), "proof_bytes": r.proof.len(),
                "queue_wait_ms": r.queue_wait_ms, "srs_load_ms": r.srs_load_ms,
                "synthesis_ms": r.synthesis_ms, "gpu_compute_ms": r.gpu_compute_ms, "total_ms": r.total_ms,
            })
        );
    } else if out.is_none_or(|p| p.as_os_str() != "-") {
        println!(
            "{}: {status}{} — {} proof bytes; total {} ms (queue {} ms, srs {} ms, synthesis {} ms, prove {} ms)",
            r.job_id,
            if r.error_message.is_empty() { String::new() } else { format!(": {}", r.error_message) },
            r.proof.len(),
            r.total_ms,
            r.queue_wait_ms,
            r.srs_load_ms,
            r.synthesis_ms,
            r.gpu_compute_ms,
        );
    }
    if status == "completed" {
        Ok(ExitCode::SUCCESS)
    } else {
        if !json {
            eprintln!("error: job {} {status}: {}", r.job_id, r.error_message);
        }
        Ok(ExitCode::FAILURE)
    }
}

fn print_status(s: &pb::GetStatusResponse, json: bool) {
    if json {
        let v = serde_json::json!({
            "backend": s.backend,
            "uptime_seconds": s.uptime_seconds,
            "completed": s.total_proofs_completed,
            "failed": s.total_proofs_failed,
            "cancelled": s.total_proofs_cancelled,
            "rss_bytes": s.rss_bytes,
            "peak_rss_bytes": s.peak_rss_bytes,
            "pinned_bytes": s.pinned_memory_bytes,
            "gpus": s.gpus.iter().map(|g| serde_json::json!({
                "ordinal": g.ordinal, "name": g.name, "vram_total": g.vram_total_bytes,
                "vram_free": g.vram_free_bytes, "vram_peak": g.vram_peak_bytes,
                "current_job": g.current_job_id, "current_kind": g.current_proof_kind,
            })).collect::<Vec<_>>(),
            "srs": s.loaded_srs.iter().map(|x| serde_json::json!({
                "circuit_id": x.circuit_id, "size_bytes": x.size_bytes, "ref_count": x.ref_count,
            })).collect::<Vec<_>>(),
            "queues": s.queues.iter().map(|q| serde_json::json!({
                "kind": q.proof_kind, "pending": q.pending, "in_progress": q.in_progress,
            })).collect::<Vec<_>>(),
        });
        println!("{v}");
        return;
    }
    println!(
        "backend {}  uptime {} s  completed {}  failed {}  cancelled {}",
        s.backend,
        s.uptime_seconds,
        s.total_proofs_completed,
        s.total_proofs_failed,
        s.total_proofs_cancelled
    );
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    // 0: the daemon's OS does not report it.
    if s.peak_rss_bytes > 0 {
        println!(
            "memory  rss {:.2} GiB  peak {:.2} GiB  pinned {:.2} GiB",
            gib(s.rss_bytes),
            gib(s.peak_rss_bytes),
            gib(s.pinned_memory_bytes)
        );
    }
    for g in &s.gpus {
        println!(
            "gpu {} {}  vram {:.1}/{:.1} GiB free  peak {:.1} GiB in use  {}",
            g.ordinal,
            g.name,
            gib(g.vram_free_bytes),
            gib(g.vram_total_bytes),
            gib(g.vram_peak_bytes),
            if g.current_job_id.is_empty() {
                "idle".to_string()
            } else {
                format!("{} ({})", g.current_job_id, g.current_proof_kind)
            }
        );
    }
    for x in &s.loaded_srs {
        println!(
            "srs {}  {:.1} MiB  refs {}",
            x.circuit_id,
            x.size_bytes as f64 / (1u64 << 20) as f64,
            x.ref_count
        );
    }
    for q in &s.queues {
        if q.pending + q.in_progress > 0 {
            println!(
                "queue {}  pending {}  in progress {}",
                q.proof_kind, q.pending, q.in_progress
            );
        }
    }
}

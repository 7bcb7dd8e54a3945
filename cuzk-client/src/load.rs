//! `cuzk-client load`: many small synthetic jobs from many concurrent clients, each on its
//! own gRPC connection, then the two properties a storage provider cares about under load:
//! no accepted job is lost (every submitted job is answered COMPLETED) and no returned proof
//! is wrong (every proof verifies). Bounded in job count and wall time, and loopback only:
//! it is a test, not a way to flood a production daemon.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use cuzk_core::kinds::KindRequest;
use cuzk_proto::v1 as pb;
use pb::await_proof_response::Status as AwaitStatus;
use tokio::task::JoinSet;

use crate::bench::{verifier_params, verify_proof};
use crate::rpc;
use crate::spawn::SpawnedDaemon;
use crate::waterfall::summary::Distribution;

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// Concurrent clients, each with its own connection and one job in flight.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Jobs in all, spread over the clients.
    #[arg(long, default_value_t = 208)]
    pub jobs: usize,
    /// Synthetic circuit of 2^k constraints per partition.
    #[arg(long, default_value_t = 10)]
    pub log_size: u32,
    #[arg(long, default_value_t = 1)]
    pub partitions: u32,
    /// Stop submitting, and stop waiting, after this many seconds; a job still unanswered
    /// then counts as lost.
    #[arg(long, default_value_t = 600)]
    pub time_limit_secs: u64,
    /// Start a daemon of our own on a free loopback port, its stderr in --log.
    #[arg(long)]
    pub spawn: bool,
    /// Extra flags for the spawned daemon, e.g. --daemon-arg=--backend=cpu.
    #[arg(long = "daemon-arg")]
    pub daemon_args: Vec<String>,
    /// The spawned daemon's log.
    #[arg(long, default_value = "cuzk-load.log")]
    pub log: PathBuf,
    /// Parameter directory for checking proofs, as the daemon's [default:
    /// $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    pub param_dir: Option<PathBuf>,
}

/// One job as a client saw it.
struct JobResult {
    seed: u64,
    job_id: String,
    /// Submission to answer.
    latency_s: f64,
    /// None: no answer within the time limit (or the RPC failed).
    status: Option<AwaitStatus>,
    error: String,
    proof: Vec<u8>,
}

/// The run's totals.
#[derive(Debug, Default, serde::Serialize)]
pub struct LoadReport {
    pub clients: usize,
    pub submitted: usize,
    /// Refused at submission (an error status), so never accepted.
    pub rejected: usize,
    pub completed: usize,
    /// Accepted but not answered COMPLETED: failed, cancelled, timed out or unanswered.
    pub lost: usize,
    pub verified: usize,
    pub invalid: usize,
    pub wall_s: f64,
    pub jobs_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub max_ms: f64,
    /// The daemon's own completed count (GetStatus), when it was spawned for this run.
    pub daemon_completed: Option<u64>,
}

impl LoadReport {
    /// Zero lost, zero invalid, every job submitted and the daemon agreeing.
    pub fn passed(&self, jobs: usize) -> bool {
        self.submitted == jobs
            && self.rejected == 0
            && self.lost == 0
            && self.invalid == 0
            && self.verified == self.completed
            && self
                .daemon_completed
                .is_none_or(|n| n == self.completed as u64)
    }
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "clients {}  submitted {}  completed {}  rejected {}  lost {}",
            self.clients, self.submitted, self.completed, self.rejected, self.lost
        )?;
        writeln!(
            f,
            "verified {}  invalid {}  daemon completed {}",
            self.verified,
            self.invalid,
            self.daemon_completed
                .map_or_else(|| "-".to_string(), |n| n.to_string())
        )?;
        write!(
            f,
            "wall {:.1} s  throughput {:.2} jobs/s  latency p50 {:.0} ms  p95 {:.0} ms  max {:.0} ms",
            self.wall_s, self.jobs_per_s, self.p50_ms, self.p95_ms, self.max_ms
        )
    }
}

/// A TCP address on this machine, or a Unix socket.
fn is_loopback(addr: &str) -> bool {
    if addr.starts_with("unix:") {
        return true;
    }
    let hostport = addr.split("://").last().unwrap_or(addr);
    let host = hostport
        .rsplit_once(':')
        .map_or(hostport, |(h, _)| h)
        .trim_matches(['[', ']']);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Runs the load against `addr` (or a spawned daemon), prints the report and returns it.
pub async fn run(args: &LoadArgs, addr: &str, json: bool) -> anyhow::Result<LoadReport> {
    anyhow::ensure!(args.clients > 0, "--clients must be at least 1");
    anyhow::ensure!(args.jobs > 0, "--jobs must be at least 1");
    anyhow::ensure!(
        args.spawn || is_loopback(addr),
        "{addr} is not a loopback address: the load test runs against a local daemon only"
    );
    let template = rpc::synthetic_request(args.log_size, args.partitions, 0);
    // Admission's own checks, before a daemon is started.
    cuzk_core::kinds::build_task(&template)?;

    let daemon = if args.spawn {
        let d = SpawnedDaemon::start(&args.daemon_args, &args.log).await?;
        eprintln!("daemon on {} (log: {})", d.addr, args.log.display());
        Some(d)
    } else {
        None
    };
    let addr = daemon
        .as_ref()
        .map_or(addr, |d| d.addr.as_str())
        .to_string();
    let outcome = drive(args, &template, &addr).await;
    let daemon_completed = match &daemon {
        Some(_) => Some(completed_on_daemon(&addr).await?),
        None => None,
    };
    if let Some(d) = daemon {
        d.stop().await?;
    }
    let (results, wall_s) = outcome?;

    let mut report = tally(args, &results, wall_s);
    report.daemon_completed = daemon_completed;
    (report.verified, report.invalid) = verify(args, &template, &results)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(report)
}

/// `clients` tasks, each on its own connection, take job numbers from a shared counter
/// until `jobs` are taken or the time limit passes.
async fn drive(
    args: &LoadArgs,
    template: &KindRequest,
    addr: &str,
) -> anyhow::Result<(Vec<JobResult>, f64)> {
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.time_limit_secs);
    let next = Arc::new(AtomicUsize::new(0));
    // request_id is an idempotency key: ids unique to this run, so that a second run
    // against the same daemon proves again instead of getting the first run's jobs back.
    let run = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    let mut clients = JoinSet::new();
    for c in 0..args.clients {
        // Connected up front: a connection refused is a setup failure, not a lost job.
        let client = rpc::connect(addr)
            .await
            .with_context(|| format!("client {c}"))?;
        let (next, template, jobs, run) = (next.clone(), template.clone(), args.jobs, run.clone());
        clients.spawn(async move {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= jobs || Instant::now() >= deadline {
                    return done;
                }
                let mut req = template.clone();
                req.synthetic_seed = i as u64;
                let request_id = format!("load-{run}-{i}");
                done.push(one_job(client.clone(), req, request_id, deadline).await);
            }
        });
    }
    let mut results = Vec::new();
    while let Some(r) = clients.join_next().await {
        results.extend(r.context("a load client panicked")?);
    }
    Ok((results, start.elapsed().as_secs_f64()))
}

async fn one_job(
    mut client: rpc::Client,
    req: KindRequest,
    request_id: String,
    deadline: Instant,
) -> JobResult {
    let seed = req.synthetic_seed;
    let t0 = Instant::now();
    let mut result = JobResult {
        seed,
        job_id: String::new(),
        latency_s: 0.0,
        status: None,
        error: String::new(),
        proof: Vec::new(),
    };
    let submitted = client
        .submit_proof(rpc::submit_request(req, None, request_id))
        .await;
    let job_id = match submitted {
        Ok(r) => r.into_inner().job_id,
        Err(s) => {
            result.error = format!("submit: {s}");
            return result;
        }
    };
    result.job_id = job_id.clone();
    let left = deadline.saturating_duration_since(Instant::now());
    let reply = client
        .await_proof(pb::AwaitProofRequest {
            job_id,
            // At least 1 ms: 0 would mean "no timeout".
            timeout_ms: (left.as_millis() as u64).max(1),
        })
        .await;
    result.latency_s = t0.elapsed().as_secs_f64();
    match reply {
        Ok(r) => {
            let r = r.into_inner();
            result.status = AwaitStatus::try_from(r.status).ok();
            result.error = r.error_message;
            result.proof = r.proof;
        }
        Err(s) => result.error = format!("await: {s}"),
    }
    result
}

fn tally(args: &LoadArgs, results: &[JobResult], wall_s: f64) -> LoadReport {
    let accepted: Vec<&JobResult> = results.iter().filter(|r| !r.job_id.is_empty()).collect();
    let completed: Vec<&JobResult> = accepted
        .iter()
        .copied()
        .filter(|r| r.status == Some(AwaitStatus::Completed))
        .collect();
    for r in results
        .iter()
        .filter(|r| r.status != Some(AwaitStatus::Completed))
    {
        eprintln!(
            "job {} (seed {}): {}: {}",
            if r.job_id.is_empty() { "-" } else { &r.job_id },
            r.seed,
            r.status.map_or("no answer", |s| s.as_str_name()),
            r.error
        );
    }
    let latency = Distribution::new(completed.iter().map(|r| r.latency_s * 1e3));
    let pct = |p: f64| latency.as_ref().map_or(0.0, |d| d.percentile(p));
    LoadReport {
        clients: args.clients,
        submitted: results.len(),
        rejected: results.len() - accepted.len(),
        completed: completed.len(),
        lost: accepted.len() - completed.len(),
        wall_s,
        jobs_per_s: completed.len() as f64 / wall_s.max(1e-9),
        p50_ms: pct(50.0),
        p95_ms: pct(95.0),
        max_ms: pct(100.0),
        ..LoadReport::default()
    }
}

/// Every completed job's proof against the verifying key: (verified, invalid).
fn verify(
    args: &LoadArgs,
    template: &KindRequest,
    results: &[JobResult],
) -> anyhow::Result<(usize, usize)> {
    let srs = verifier_params(args.param_dir.as_ref(), &[template.kind])?;
    let (mut verified, mut invalid) = (0, 0);
    for r in results
        .iter()
        .filter(|r| r.status == Some(AwaitStatus::Completed))
    {
        let mut req = template.clone();
        req.synthetic_seed = r.seed;
        match verify_proof(&req, &r.proof, &srs) {
            Ok(()) => verified += 1,
            Err(e) => {
                eprintln!("job {} (seed {}): invalid proof: {e:#}", r.job_id, r.seed);
                invalid += 1;
            }
        }
    }
    Ok((verified, invalid))
}

async fn completed_on_daemon(addr: &str) -> anyhow::Result<u64> {
    let mut c = rpc::connect(addr).await?;
    Ok(c.get_status(pb::GetStatusRequest {})
        .await?
        .into_inner()
        .total_proofs_completed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_addresses() {
        for a in [
            "127.0.0.1:9820",
            "http://127.0.0.1:1",
            "localhost:9820",
            "[::1]:9820",
            "unix:/run/cuzk.sock",
        ] {
            assert!(is_loopback(a), "{a}");
        }
        for a in ["10.0.0.1:9820", "http://example.com:80", "0.0.0.0:1"] {
            assert!(!is_loopback(a), "{a}");
        }
    }

    #[test]
    fn report_counts_lost_and_rejected() {
        let args = LoadArgs {
            clients: 2,
            jobs: 3,
            log_size: 10,
            partitions: 1,
            time_limit_secs: 1,
            spawn: false,
            daemon_args: vec![],
            log: "x".into(),
            param_dir: None,
        };
        let job = |id: &str, status| JobResult {
            seed: 0,
            job_id: id.into(),
            latency_s: 0.5,
            status,
            error: String::new(),
            proof: vec![],
        };
        let r = tally(
            &args,
            &[
                job("a", Some(AwaitStatus::Completed)),
                job("b", Some(AwaitStatus::Timeout)),
                job("", None),
            ],
            2.0,
        );
        assert_eq!((r.submitted, r.completed, r.lost, r.rejected), (3, 1, 1, 1));
        assert_eq!(r.p50_ms, 500.0);
        assert!(!r.passed(3));
    }
}

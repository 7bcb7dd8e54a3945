//! `cuzk-client bench`: proof sweeps at several concurrency levels, or (`--load`, `--probe`,
//! probe.rs) the latency of one kind of proof under a background load of another.
//!
//! For each level J the driver keeps J proofs in flight until `--count` have been submitted,
//! timing each from submission to reply. After the sweep it reads the daemon's TIMELINE
//! (captured when it spawned the daemon, or `--log` of a running one) for the per-partition
//! stage times and the prove stage's busy fraction, checks every returned proof, and hands
//! everything to [`stats`] for the report.

pub mod probe;
pub mod stats;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use bellperson::groth16;
use blstrs::Bls12;
use cuzk_core::kinds::{build_task, KindRequest, SyntheticShape};
use cuzk_core::srs::SrsCache;
use cuzk_core::ProofKind;
use cuzk_proto::v1 as pb;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::task::JoinSet;

use crate::filecoin_cmds::ProveInputArgs;
use crate::rpc::{self, Client};
use crate::spawn::SpawnedDaemon;
use crate::waterfall::{build_model, parse_timeline};
use stats::{ProofRecord, SweepStep};

/// Bytes of one partition's Groth16 proof (compressed A, B, C).
const PROOF_BYTES: usize = 192;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// TLS and token for a daemon of its own (the client's global flags; unused with --spawn).
    #[arg(skip)]
    pub connect: rpc::ConnectOptions,
    /// Proofs per concurrency level.
    #[arg(short = 'c', long, default_value_t = 8)]
    pub count: usize,
    /// Proofs kept in flight; a comma list sweeps, e.g. -j 1,2,4,8.
    #[arg(
        short = 'j',
        long = "concurrency",
        value_delimiter = ',',
        default_value = "1"
    )]
    pub concurrency: Vec<usize>,
    /// synthetic | porep | winning | window | snap (the Filecoin kinds take their inputs
    /// from --manifest or the other input flags).
    #[arg(long, default_value = "synthetic")]
    pub kind: String,
    /// Synthetic: 2^k constraints per partition.
    #[arg(long, default_value_t = 16)]
    pub log_size: u32,
    /// Synthetic: partitions per proof.
    #[arg(long, default_value_t = 1)]
    pub partitions: u32,
    /// Synthetic: uniform | porep (PoRep-shaped witness and densities, up to 2^27).
    #[arg(long, default_value = "uniform")]
    pub shape: String,
    /// Start a daemon of our own for the sweep and capture its stderr in --log.
    #[arg(long)]
    pub spawn: bool,
    /// Extra flags for the spawned daemon, e.g. --daemon-arg=--backend=cpu.
    #[arg(long = "daemon-arg")]
    pub daemon_args: Vec<String>,
    /// The daemon's log: written with --spawn [default: cuzk-bench.log]; for a running
    /// daemon, its stderr file, read after the sweep for the TIMELINE.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Do not check the returned proofs.
    #[arg(long)]
    pub no_verify: bool,
    /// Parameter directory for checking proofs, as the daemon's [default:
    /// $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    pub param_dir: Option<PathBuf>,
    /// Unmeasured proofs before the sweep, so that parameter loading is not timed.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Print CSV instead of the table.
    #[arg(long)]
    pub csv: bool,
    /// Probe mode: background load of KIND:N (N jobs kept in flight), e.g. porep:16.
    #[arg(long, value_name = "KIND:N", requires = "probe")]
    pub load: Option<String>,
    /// Probe mode: KIND:M, M jobs timed one after another, alone and then under the load.
    #[arg(long, value_name = "KIND:M", requires = "load")]
    pub probe: Option<String>,
    /// The load's gen-vanilla manifest (else --manifest-dir, else --manifest).
    #[arg(long, value_name = "JSON")]
    pub load_manifest: Option<PathBuf>,
    /// The probe's gen-vanilla manifest (else --manifest-dir, else --manifest).
    #[arg(long, value_name = "JSON")]
    pub probe_manifest: Option<PathBuf>,
    /// A gen-vanilla output directory: each role's manifest is DIR/<kind>.json.
    #[arg(long, value_name = "DIR")]
    pub manifest_dir: Option<PathBuf>,
    /// low | normal | high | critical (default: by kind).
    #[arg(long)]
    pub load_priority: Option<String>,
    /// low | normal | high | critical (default: by kind; WinningPoSt is critical).
    #[arg(long)]
    pub probe_priority: Option<String>,
    /// Synthetic probe: 2^k constraints, one partition [default: --log-size].
    #[arg(long)]
    pub probe_log_size: Option<u32>,
    /// Probe mode: wait up to MS before each probe job, the waits spread evenly over 0..MS,
    /// so that the jobs arrive at every point of the load's device steps, as a WinningPoSt
    /// for a won block does, not in step with them (0: each sent as the last returns).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub probe_gap_ms: u64,
    #[command(flatten)]
    pub filecoin: ProveInputArgs,
}

/// What one proof came back with, beside its record.
pub(crate) struct Outcome {
    record: ProofRecord,
    proof: Vec<u8>,
    /// The synthetic seed it was submitted with, for recomputing its public inputs.
    seed: u64,
    /// The daemon's job totals, used per partition when there is no TIMELINE.
    queue_wait_ms: u64,
    synthesis_ms: u64,
    gpu_compute_ms: u64,
}

/// Runs the sweep against `addr` (ignored with `--spawn`) and prints the report: a table,
/// `--csv`, or JSON when `json` (the client's global `--json`). Fails when any proof failed,
/// so that scripts notice.
pub async fn run(args: &BenchArgs, addr: &str, json: bool) -> anyhow::Result<Vec<stats::SweepRow>> {
    anyhow::ensure!(args.count > 0, "--count must be at least 1");
    anyhow::ensure!(
        args.concurrency.iter().all(|&j| j > 0),
        "every -j level must be at least 1"
    );
    let request = kind_request(args)?;

    let Target {
        log,
        daemon,
        addr,
        connect,
    } = target(args, addr).await?;
    let sweep = sweep(args, &request, &addr, &connect).await;
    if let Some(d) = daemon {
        // Stopped before reading the log, so that every TIMELINE line has been written.
        d.stop().await?;
    }
    let (mut outcomes, memory) = sweep?;

    let timeline = match &log {
        Some(path) => {
            let text = std::fs::read(path)
                .with_context(|| format!("reading the daemon log {}", path.display()))?;
            let parsed = parse_timeline(&String::from_utf8_lossy(&text));
            for m in &parsed.malformed {
                eprintln!("warning: skipped malformed TIMELINE {m}");
            }
            Some(build_model(&parsed.events))
        }
        None => None,
    };
    let partitions = build_task(&request)?.partitions().max(1);
    for (_, step) in outcomes.iter_mut() {
        let mut records: Vec<ProofRecord> = step.iter().map(|o| o.record.clone()).collect();
        if let Some(model) = &timeline {
            stats::fill_from_timeline(&mut records, model);
        }
        for (o, r) in step.iter_mut().zip(records) {
            o.record = r;
            // Without a TIMELINE only the job totals are known; their per-partition mean is
            // what the report shows anyway.
            if o.record.queue_wait_ms.is_none() && o.record.ok {
                o.record.queue_wait_ms = Some(o.queue_wait_ms as f64);
            }
            if o.record.synth_ms.is_empty() && o.record.ok {
                o.record.synth_ms = vec![o.synthesis_ms as f64 / partitions as f64; partitions];
            }
            if o.record.prove_ms.is_empty() && o.record.ok {
                o.record.prove_ms = vec![o.gpu_compute_ms as f64 / partitions as f64; partitions];
            }
        }
    }

    if !args.no_verify {
        verify_all(args, &request, &mut outcomes)?;
    }

    let steps: Vec<SweepStep> = outcomes
        .into_iter()
        .map(|(concurrency, step)| SweepStep {
            concurrency,
            records: step.into_iter().map(|o| o.record).collect(),
        })
        .collect();
    if let Some(model) = &timeline {
        for step in &steps {
            for problem in stats::disagreements(step, model) {
                eprintln!("warning: J={}: {problem}", step.concurrency);
            }
        }
    }
    let mut rows = stats::sweep_rows(&steps, timeline.as_ref());
    for (row, m) in rows.iter_mut().zip(memory) {
        row.set_memory(m);
    }
    if json {
        println!("{}", stats::render_json(&rows));
    } else if args.csv {
        print!("{}", stats::render_csv(&rows));
    } else {
        print!("{}", stats::render_table(&rows));
        if let Some(log) = &log {
            eprintln!(
                "waterfall: cuzk-client waterfall {} --out waterfall.html",
                log.display()
            );
        }
    }
    let failed: usize = rows.iter().map(|r| r.failed).sum();
    anyhow::ensure!(failed == 0, "{failed} proof(s) failed");
    Ok(rows)
}

fn kind_request(args: &BenchArgs) -> anyhow::Result<KindRequest> {
    let kind = ProofKind::ALL
        .into_iter()
        .find(|k| k.as_str() == args.kind)
        .with_context(|| {
            format!(
                "unknown kind {:?} (synthetic|porep|winning|window|snap)",
                args.kind
            )
        })?;
    let request = if kind == ProofKind::Synthetic {
        let mut r = rpc::synthetic_request(args.log_size, args.partitions, 0);
        r.synthetic_shape = SyntheticShape::parse(&args.shape)?;
        r
    } else {
        args.filecoin.to_request(kind)?
    };
    // Admission's own checks, here, so that a bad flag fails before a daemon is started.
    build_task(&request)?;
    Ok(request)
}

/// Outcomes of each level in submission order, and what the daemon held at its end.
type Levels = (Vec<(usize, Vec<Outcome>)>, Vec<stats::DaemonMemory>);

/// Warm-up, then every level in turn; after each, the daemon's memory (GetStatus), printed and
/// kept for the report.
async fn sweep(
    args: &BenchArgs,
    request: &KindRequest,
    addr: &str,
    connect: &rpc::ConnectOptions,
) -> anyhow::Result<Levels> {
    let client = rpc::connect_with(addr, connect).await?;
    let mut seed = 0u64;
    if args.warmup > 0 {
        eprintln!("warm-up: {} proof(s)", args.warmup);
        run_level(&client, request, 1, args.warmup, &mut seed, None).await?;
    }
    let mut levels = Vec::new();
    let mut memory = Vec::new();
    for &j in &args.concurrency {
        let bar = ProgressBar::new(args.count as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "J={prefix:>3} [{bar:40}] {pos}/{len} proofs {elapsed_precise} eta {eta}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(j.to_string());
        let outcomes = run_level(&client, request, j, args.count, &mut seed, Some(&bar)).await?;
        bar.finish();
        levels.push((j, outcomes));
        let m = daemon_memory(&client).await?;
        eprintln!("J={j}: {}", describe_memory(&m));
        memory.push(m);
    }
    Ok((levels, memory))
}

/// What the daemon says it holds now (GetStatus).
pub(crate) async fn daemon_memory(client: &Client) -> anyhow::Result<stats::DaemonMemory> {
    let status = client
        .clone()
        .get_status(pb::GetStatusRequest {})
        .await
        .context("GetStatus for the daemon's memory")?
        .into_inner();
    Ok(stats::DaemonMemory::from_status(&status))
}

/// "daemon RSS 3.10 GiB (peak 4.20 GiB); VRAM peak cuda0 12.3 GiB".
pub(crate) fn describe_memory(m: &stats::DaemonMemory) -> String {
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    let rss = match (m.rss_bytes, m.peak_rss_bytes) {
        (Some(now), Some(peak)) => format!("daemon RSS {} (peak {})", gib(now), gib(peak)),
        _ => "daemon RSS not reported".to_string(),
    };
    if m.vram_peak_bytes.is_empty() {
        return rss;
    }
    let vram: Vec<String> = m
        .vram_peak_bytes
        .iter()
        .map(|(gpu, b)| format!("{gpu} {}", gib(*b)))
        .collect();
    format!("{rss}; VRAM peak {}", vram.join(", "))
}

/// Where a bench run goes: a daemon of its own (`--spawn`, its stderr in the log) or `addr`,
/// and the log to read the TIMELINE from afterwards.
pub(super) struct Target {
    pub log: Option<PathBuf>,
    pub daemon: Option<SpawnedDaemon>,
    pub addr: String,
    pub connect: rpc::ConnectOptions,
}

pub(super) async fn target(args: &BenchArgs, addr: &str) -> anyhow::Result<Target> {
    let log = match (&args.log, args.spawn) {
        (Some(log), _) => Some(log.clone()),
        (None, true) => Some(PathBuf::from("cuzk-bench.log")),
        (None, false) => None,
    };
    let daemon = if args.spawn {
        let log = log.as_ref().expect("set above for --spawn");
        let d = SpawnedDaemon::start(&args.daemon_args, log).await?;
        eprintln!("daemon on {} (log: {})", d.addr, log.display());
        Some(d)
    } else {
        None
    };
    let addr = daemon
        .as_ref()
        .map_or(addr, |d| d.addr.as_str())
        .to_string();
    // A spawned daemon is ours, plaintext on loopback, without a token.
    let connect = if daemon.is_some() {
        rpc::ConnectOptions::default()
    } else {
        args.connect.clone()
    };
    Ok(Target {
        log,
        daemon,
        addr,
        connect,
    })
}

/// Keeps `concurrency` proofs in flight until `count` are done. Each proof gets its own
/// seed: identical synthetic requests would be a cache benchmark, not a proving one.
async fn run_level(
    client: &Client,
    request: &KindRequest,
    concurrency: usize,
    count: usize,
    seed: &mut u64,
    bar: Option<&ProgressBar>,
) -> anyhow::Result<Vec<Outcome>> {
    let start = Instant::now();
    let mut in_flight = JoinSet::new();
    let mut outcomes: Vec<Option<Outcome>> = (0..count).map(|_| None).collect();
    let mut next = 0;
    loop {
        while next < count && in_flight.len() < concurrency {
            let mut req = request.clone();
            req.synthetic_seed = *seed;
            *seed += 1;
            let client = client.clone();
            let index = next;
            in_flight.spawn(async move {
                let outcome = prove_one(client, req, None, String::new(), start).await;
                (index, outcome)
            });
            next += 1;
        }
        let Some(joined) = in_flight.join_next().await else {
            break;
        };
        let (index, outcome) = joined.context("a proof task panicked")?;
        outcomes[index] = Some(outcome?);
        if let Some(bar) = bar {
            bar.inc(1);
        }
    }
    Ok(outcomes.into_iter().flatten().collect())
}

/// Submits one proof and awaits it, timed on `start`'s clock.
pub(crate) async fn prove_one(
    mut client: Client,
    req: KindRequest,
    priority: Option<cuzk_core::Priority>,
    request_id: String,
    start: Instant,
) -> anyhow::Result<Outcome> {
    let req_seed = req.synthetic_seed;
    let submitted_s = start.elapsed().as_secs_f64();
    let submit = client
        .submit_proof(rpc::submit_request(req, priority, request_id))
        .await
        .context("submitting a proof")?
        .into_inner();
    let reply = client
        .await_proof(pb::AwaitProofRequest {
            job_id: submit.job_id.clone(),
            timeout_ms: 0,
        })
        .await
        .with_context(|| format!("awaiting job {}", submit.job_id))?
        .into_inner();
    let finished_s = start.elapsed().as_secs_f64();
    let seed = req_seed;
    let ok = rpc::status_name(reply.status) == "completed";
    if !ok {
        eprintln!(
            "job {} {}: {}",
            submit.job_id,
            rpc::status_name(reply.status),
            reply.error_message
        );
    }
    Ok(Outcome {
        record: ProofRecord {
            job_id: submit.job_id,
            submitted_s,
            finished_s,
            ok,
            // Left to the TIMELINE, which has sub-millisecond times; the reply's whole
            // milliseconds are the fallback.
            queue_wait_ms: None,
            synth_ms: Vec::new(),
            prove_ms: Vec::new(),
        },
        proof: reply.proof,
        seed,
        queue_wait_ms: reply.queue_wait_ms,
        synthesis_ms: reply.synthesis_ms,
        gpu_compute_ms: reply.gpu_compute_ms,
    })
}

/// Checks every returned proof against the verifying key, after the sweep so that the
/// client's pairings do not compete with the daemon for cores while it is being measured.
/// A proof that does not verify counts as failed.
fn verify_all(
    args: &BenchArgs,
    request: &KindRequest,
    levels: &mut [(usize, Vec<Outcome>)],
) -> anyhow::Result<()> {
    let srs = Arc::new(verifier_params(args.param_dir.as_ref(), &[request.kind])?);
    let mut checked = 0;
    for (_, outcomes) in levels.iter_mut() {
        for o in outcomes.iter_mut().filter(|o| o.record.ok) {
            let mut req = request.clone();
            req.synthetic_seed = o.seed;
            if let Err(e) = verify_proof(&req, &o.proof, &srs) {
                eprintln!("job {}: the proof does not verify: {e:#}", o.record.job_id);
                o.record.ok = false;
            }
            checked += 1;
        }
    }
    eprintln!("verified {checked} proof(s)");
    Ok(())
}

/// The parameter cache proofs of `kinds` are checked against: `dir`, else the Filecoin
/// default. The Filecoin kinds' stock verifiers read their keys from
/// FIL_PROOFS_PARAMETER_CACHE, not from this cache, so when `kinds` has one the process's
/// proof crates are pointed at the same directory (else a `--param-dir` holding the keys
/// checks every Filecoin proof against a missing file). Synthetic-only checks leave the
/// crates alone.
pub fn verifier_params(dir: Option<&PathBuf>, kinds: &[ProofKind]) -> anyhow::Result<SrsCache> {
    let dir = dir
        .cloned()
        .unwrap_or_else(cuzk_core::config::default_param_dir);
    if kinds.iter().any(|k| *k != ProofKind::Synthetic) {
        cuzk_core::kinds::params::use_parameter_dir(&dir)
            .with_context(|| format!("checking proofs against {}", dir.display()))?;
    }
    Ok(SrsCache::new(dir))
}

/// Synthetic proofs are checked partition by partition with public inputs recomputed here;
/// the Filecoin kinds through their stock verifier.
pub fn verify_proof(req: &KindRequest, proof: &[u8], srs: &SrsCache) -> anyhow::Result<()> {
    let task = build_task(req)?;
    anyhow::ensure!(
        proof.len() == PROOF_BYTES * task.partitions(),
        "{} proof bytes for {} partitions",
        proof.len(),
        task.partitions()
    );
    if req.kind != ProofKind::Synthetic {
        return Ok(task.verify_job(proof)?);
    }
    let pvk = srs.synthetic_verifying_key(req.synthetic_shape, req.synthetic_log_size)?;
    for (index, bytes) in proof.chunks(PROOF_BYTES).enumerate() {
        let proof = groth16::Proof::<Bls12>::read(bytes)
            .with_context(|| format!("partition {index}: not a proof"))?;
        let inputs = task.public_inputs(index, &[])?;
        let ok = groth16::verify_proof(&pvk, &proof, &inputs)
            .with_context(|| format!("partition {index}"))?;
        anyhow::ensure!(ok, "partition {index} does not verify");
    }
    Ok(())
}

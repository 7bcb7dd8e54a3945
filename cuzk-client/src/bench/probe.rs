//! `cuzk-client bench --load KIND:N --probe KIND:M`: the latency of urgent proofs under bulk
//! load, the figure a storage provider's block rewards hang on.
//!
//! In one run, against one daemon: warm-up (one job of each kind, unmeasured: parameters);
//! the probe alone, M jobs one after another (its idle latency); then the load, N jobs kept
//! in flight, and once its first job is back (the pipeline is full) the same M probe jobs one
//! after another; then a window of the same length with the load alone, for the load's
//! throughput without the probe. Every job has a request id of its own (`bench-<run>-<role>-
//! <i>`), so idempotency never answers one from another, even where payloads are identical
//! (a WinningPoSt manifest gives one payload).
//!
//! From the daemon's TIMELINE (when it was spawned or its log given) the report also counts,
//! for each probe job under load, the load partitions that started synthesis after the probe
//! was queued but before it, and the device steps of other jobs that started while its
//! partitions waited for the device: both 0 when the probe overtakes the load at every stage.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use cuzk_core::kinds::{build_task, KindRequest, SyntheticShape};
use cuzk_core::{Priority, ProofKind};
use serde::Serialize;
use tokio::task::JoinSet;

use super::stats::DaemonMemory;
use super::{prove_one, target, BenchArgs, Outcome, Target};
use crate::filecoin_cmds::ProveInputArgs;
use crate::rpc::{self, Client};
use crate::waterfall::model::{Phase, RunModel};
use crate::waterfall::summary::Distribution;
use crate::waterfall::{build_model, parse_timeline};

/// One side of the run: what it proves, how many, how urgently.
#[derive(Clone, Debug)]
pub struct Role {
    pub name: &'static str,
    pub kind: ProofKind,
    pub count: usize,
    pub request: KindRequest,
    /// None: the kind's default (WinningPoSt CRITICAL, WindowPoSt HIGH, the rest NORMAL).
    pub priority: Option<Priority>,
    /// Synthetic jobs get seeds from here on (each job its own witness).
    seed_base: u64,
}

/// Latency figures of one set of probe jobs (seconds, client's clock).
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub jobs: usize,
    pub failed: usize,
    pub p50_s: Option<f64>,
    pub p95_s: Option<f64>,
    pub max_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    pub load: String,
    pub probe: String,
    pub idle: Latency,
    pub under_load: Latency,
    /// The window in which the probe ran under load, and the load-only one after it.
    pub window_s: f64,
    pub load_done_with_probe: usize,
    pub load_per_hour_with_probe: f64,
    pub load_done_alone: usize,
    pub load_per_hour_alone: f64,
    pub load_failed: usize,
    /// Per probe job under load (TIMELINE): load partitions started in synthesis ahead of
    /// it after it was queued, and device steps of other jobs started while it waited.
    pub synth_overtaken_by: Vec<usize>,
    pub device_overtaken_by: Vec<usize>,
    /// The probe window on the daemon's clock (s since engine start), for the waterfall.
    pub daemon_window_s: Option<(f64, f64)>,
    /// The daemon's resident memory at the end and its peak since it started; per GPU, the
    /// most device memory in use at a device step's end (GetStatus; None/empty: not reported).
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub vram_peak_bytes: std::collections::BTreeMap<String, u64>,
}

impl ProbeReport {
    pub fn failed(&self) -> usize {
        self.idle.failed + self.under_load.failed + self.load_failed
    }
}

/// `KIND:N`, e.g. `porep:16`.
fn parse_spec(flag: &str, spec: &str) -> anyhow::Result<(ProofKind, usize)> {
    let (kind, n) = spec
        .split_once(':')
        .with_context(|| format!("{flag} {spec:?}: expected KIND:COUNT, e.g. porep:16"))?;
    let kind = ProofKind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind)
        .with_context(|| {
            format!("{flag}: unknown kind {kind:?} (synthetic|porep|winning|window|snap)")
        })?;
    let n: usize = n
        .parse()
        .with_context(|| format!("{flag} {spec:?}: count"))?;
    anyhow::ensure!(n > 0, "{flag} {spec:?}: count must be at least 1");
    Ok((kind, n))
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

/// The request of one role: synthetic from the size flags; a Filecoin kind from its own
/// manifest flag, else `--manifest-dir DIR` (gen-vanilla's `DIR/<kind>.json`), else the
/// shared input flags (`--manifest`, when it is of that kind).
fn role(
    args: &BenchArgs,
    name: &'static str,
    spec: &str,
    manifest: Option<&PathBuf>,
    priority: Option<&String>,
    (log_size, partitions): (u32, u32),
    seed_base: u64,
) -> anyhow::Result<Role> {
    let (kind, count) = parse_spec(&format!("--{name}"), spec)?;
    let request = if kind == ProofKind::Synthetic {
        // --shape applies to both synthetic roles, as to a sweep: a PoRep-shaped 2^27 load
        // exists only in that shape.
        let mut r = rpc::synthetic_request(log_size, partitions, seed_base);
        r.synthetic_shape = SyntheticShape::parse(&args.shape)?;
        r
    } else {
        let manifest = manifest.cloned().or_else(|| {
            args.manifest_dir
                .as_ref()
                .map(|d| d.join(format!("{}.json", kind.as_str())))
        });
        match manifest {
            Some(m) => ProveInputArgs {
                manifest: Some(m),
                ..ProveInputArgs::default()
            }
            .to_request(kind)?,
            None => args.filecoin.to_request(kind)?,
        }
    };
    // Admission's own checks, before a daemon is started.
    build_task(&request).with_context(|| format!("--{name} {spec}"))?;
    Ok(Role {
        name,
        kind,
        count,
        request,
        priority: priority.map(|p| parse_priority(p)).transpose()?,
        seed_base,
    })
}

/// Load and probe from the flags.
pub fn roles(args: &BenchArgs) -> anyhow::Result<(Role, Role)> {
    let (Some(load), Some(probe)) = (&args.load, &args.probe) else {
        anyhow::bail!("--load and --probe go together");
    };
    let load = role(
        args,
        "load",
        load,
        args.load_manifest.as_ref(),
        args.load_priority.as_ref(),
        (args.log_size, args.partitions),
        0,
    )?;
    let probe = role(
        args,
        "probe",
        probe,
        args.probe_manifest.as_ref(),
        args.probe_priority.as_ref(),
        (args.probe_log_size.unwrap_or(args.log_size), 1),
        1 << 40,
    )?;
    Ok((load, probe))
}

/// A job of `role`, unique by request id and (synthetic) seed.
fn job(role: &Role, run: &str, i: u64) -> (KindRequest, String) {
    let mut req = role.request.clone();
    if req.kind == ProofKind::Synthetic {
        req.synthetic_seed = role.seed_base + i;
    }
    (req, format!("bench-{run}-{}-{i}", role.name))
}

/// Numbers each role's jobs across the phases, so that no two share a request id.
struct Counter(u64);

impl Counter {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

/// `count` jobs of `role` one after another, each awaited before the next is sent, after
/// a wait of `arrival_gap(i, gap)` (not part of its latency).
async fn sequential(
    client: &Client,
    role: &Role,
    run: &str,
    n: &mut Counter,
    count: usize,
    gap: Duration,
    clock: Instant,
) -> anyhow::Result<Vec<Outcome>> {
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        tokio::time::sleep(arrival_gap(i, gap)).await;
        let (req, rid) = job(role, run, n.next());
        out.push(prove_one(client.clone(), req, role.priority, rid, clock).await?);
    }
    Ok(out)
}

/// The wait before probe job `i`: the fractional parts of i times the golden ratio, which
/// cover 0..1 evenly for any number of jobs, scaled to `max`. A job sent as soon as the last
/// returns arrives at the same point of each device step (the let-in ends one pause, the
/// next job comes at the next pause); spread waits measure every point.
fn arrival_gap(i: usize, max: Duration) -> Duration {
    const PHI: f64 = 0.618_033_988_749_894_8;
    max.mul_f64((i as f64 * PHI).fract())
}

/// Keeps `role.count` jobs in flight until `stop`; then waits for those in flight.
async fn drive_load(
    client: Client,
    role: Role,
    run: String,
    first: u64,
    stop: Arc<AtomicBool>,
    clock: Instant,
    done: Arc<Mutex<Vec<Outcome>>>,
) -> anyhow::Result<()> {
    let mut in_flight = JoinSet::new();
    let mut n = Counter(first);
    loop {
        while !stop.load(Ordering::SeqCst) && in_flight.len() < role.count {
            let (req, rid) = job(&role, &run, n.next());
            let (client, priority) = (client.clone(), role.priority);
            in_flight.spawn(async move { prove_one(client, req, priority, rid, clock).await });
        }
        // Polls the stop flag at least every 100 ms while all jobs are in flight.
        tokio::select! {
            joined = in_flight.join_next() => match joined {
                Some(r) => done.lock().expect("the load's outcomes").push(r.context("a load task panicked")??),
                None => return Ok(()),
            },
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        if stop.load(Ordering::SeqCst) && in_flight.is_empty() {
            return Ok(());
        }
    }
}

fn latency(outcomes: &[Outcome]) -> Latency {
    let ok: Vec<f64> = outcomes
        .iter()
        .filter(|o| o.record.ok)
        .map(|o| o.record.finished_s - o.record.submitted_s)
        .collect();
    let d = Distribution::new(ok.iter().copied());
    Latency {
        jobs: outcomes.len(),
        failed: outcomes.len() - ok.len(),
        p50_s: d.as_ref().map(|d| d.percentile(50.0)),
        p95_s: d.as_ref().map(|d| d.percentile(95.0)),
        max_s: d.as_ref().map(|d| d.max()),
    }
}

/// Runs the probe against `addr` (or a spawned daemon) and prints the report.
pub async fn run(args: &BenchArgs, addr: &str, json: bool) -> anyhow::Result<ProbeReport> {
    let (load, probe) = roles(args)?;
    let Target {
        log,
        daemon,
        addr,
        connect,
    } = target(args, addr).await?;
    let measured = measure(args, &load, &probe, &addr, &connect).await;
    if let Some(d) = daemon {
        d.stop().await?;
    }
    let mut m = measured?;

    let model = match &log {
        Some(path) => {
            let text = std::fs::read(path)
                .with_context(|| format!("reading the daemon log {}", path.display()))?;
            Some(build_model(
                &parse_timeline(&String::from_utf8_lossy(&text)).events,
            ))
        }
        None => None,
    };
    if !args.no_verify {
        verify(args, &load, &mut m.load)?;
        verify(args, &probe, &mut m.idle)?;
        verify(args, &probe, &mut m.loaded)?;
    }
    let report = report(&load, &probe, &m, model.as_ref());
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
        if let (Some(log), Some((from, to))) = (&log, report.daemon_window_s) {
            eprintln!(
                "waterfall of the probe window: cuzk-client waterfall {} --from {:.1} --to {:.1} --out probe.html",
                log.display(),
                from,
                to
            );
        }
    }
    anyhow::ensure!(report.failed() == 0, "{} proof(s) failed", report.failed());
    Ok(report)
}

/// What the phases returned.
struct Measured {
    idle: Vec<Outcome>,
    loaded: Vec<Outcome>,
    load: Vec<Outcome>,
    /// Probe window and load-only window end, client's clock (s since `clock`).
    window: (f64, f64, f64),
    /// The daemon's, once every job has ended.
    memory: DaemonMemory,
}

async fn measure(
    args: &BenchArgs,
    load: &Role,
    probe: &Role,
    addr: &str,
    connect: &rpc::ConnectOptions,
) -> anyhow::Result<Measured> {
    let client = rpc::connect_with(addr, connect).await?;
    // Unique per run, so that a second run against the same daemon is not deduplicated.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() ^ d.as_secs() as u32);
    let run = format!("{:08x}{:x}", nanos, std::process::id());
    let clock = Instant::now();
    let mut probe_n = Counter(0);
    // Load jobs are numbered from 0; warm-ups far from both ranges.
    let mut warm_n = Counter(1 << 30);
    for _ in 0..args.warmup {
        eprintln!("warm-up: one {} and one {} job", load.kind, probe.kind);
        sequential(&client, load, &run, &mut warm_n, 1, Duration::ZERO, clock).await?;
        sequential(&client, probe, &run, &mut warm_n, 1, Duration::ZERO, clock).await?;
    }
    eprintln!(
        "idle: {} {} job(s) one after another",
        probe.count, probe.kind
    );
    let gap = Duration::from_millis(args.probe_gap_ms);
    let idle = sequential(&client, probe, &run, &mut probe_n, probe.count, gap, clock).await?;

    eprintln!("load: {} {} job(s) in flight", load.count, load.kind);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(Mutex::new(Vec::new()));
    let driver = tokio::spawn(drive_load(
        client.clone(),
        load.clone(),
        run.clone(),
        0,
        stop.clone(),
        clock,
        done.clone(),
    ));
    // The pipeline is full once the first load job is back.
    while done.lock().expect("the load's outcomes").is_empty() {
        anyhow::ensure!(
            !driver.is_finished(),
            "the load stopped before its first job"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("probe under load: {} {} job(s)", probe.count, probe.kind);
    let t0 = clock.elapsed().as_secs_f64();
    let loaded = sequential(&client, probe, &run, &mut probe_n, probe.count, gap, clock).await;
    let t1 = clock.elapsed().as_secs_f64();
    if loaded.is_ok() {
        eprintln!("load alone for {:.1} s", t1 - t0);
        tokio::time::sleep(Duration::from_secs_f64(t1 - t0)).await;
    }
    let t2 = clock.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    eprintln!("waiting for the load jobs in flight");
    driver.await.context("the load driver panicked")??;
    let load = std::mem::take(&mut *done.lock().expect("the load's outcomes"));
    let memory = super::daemon_memory(&client).await?;
    eprintln!("{}", super::describe_memory(&memory));
    Ok(Measured {
        idle,
        loaded: loaded?,
        load,
        window: (t0, t1, t2),
        memory,
    })
}

fn verify(args: &BenchArgs, role: &Role, outcomes: &mut [Outcome]) -> anyhow::Result<()> {
    let srs = super::verifier_params(args.param_dir.as_ref(), &[role.kind])?;
    for o in outcomes.iter_mut().filter(|o| o.record.ok) {
        let mut req = role.request.clone();
        req.synthetic_seed = o.seed;
        if let Err(e) = super::verify_proof(&req, &o.proof, &srs) {
            eprintln!("job {}: the proof does not verify: {e:#}", o.record.job_id);
            o.record.ok = false;
        }
    }
    Ok(())
}

fn report(load: &Role, probe: &Role, m: &Measured, model: Option<&RunModel>) -> ProbeReport {
    let (t0, t1, t2) = m.window;
    let in_window = |from: f64, to: f64| {
        m.load
            .iter()
            .filter(|o| o.record.ok && o.record.finished_s > from && o.record.finished_s <= to)
            .count()
    };
    let per_hour = |n: usize, s: f64| if s > 0.0 { n as f64 * 3600.0 / s } else { 0.0 };
    let (with, alone) = (in_window(t0, t1), in_window(t1, t2));
    let probe_ids: Vec<&str> = m.loaded.iter().map(|o| o.record.job_id.as_str()).collect();
    let load_ids: Vec<&str> = m.load.iter().map(|o| o.record.job_id.as_str()).collect();
    let (synth, device) = model.map_or((Vec::new(), Vec::new()), |model| {
        overtaken(model, &probe_ids, &load_ids)
    });
    let daemon_window_s = model.and_then(|model| {
        let spans: Vec<(f64, f64)> = probe_ids
            .iter()
            .filter_map(|id| model.job(id).and_then(|j| j.extent()))
            .collect();
        let from = spans.iter().map(|s| s.0).min_by(f64::total_cmp)?;
        let to = spans.iter().map(|s| s.1).max_by(f64::total_cmp)?;
        Some((from / 1e3, to / 1e3))
    });
    let describe = |r: &Role| {
        let p = r
            .priority
            .unwrap_or_else(|| r.kind.default_priority())
            .as_str();
        format!("{} x{} ({p})", r.kind, r.count)
    };
    ProbeReport {
        load: describe(load),
        probe: describe(probe),
        idle: latency(&m.idle),
        under_load: latency(&m.loaded),
        window_s: t1 - t0,
        load_done_with_probe: with,
        load_per_hour_with_probe: per_hour(with, t1 - t0),
        load_done_alone: alone,
        load_per_hour_alone: per_hour(alone, t2 - t1),
        load_failed: m.load.iter().filter(|o| !o.record.ok).count(),
        synth_overtaken_by: synth,
        device_overtaken_by: device,
        daemon_window_s,
        rss_bytes: m.memory.rss_bytes,
        peak_rss_bytes: m.memory.peak_rss_bytes,
        vram_peak_bytes: m.memory.vram_peak_bytes.clone(),
    }
}

/// For each probe job: load partitions that started synthesis after it was queued and before
/// it; device steps of other jobs that started while one of its partitions waited.
pub fn overtaken(model: &RunModel, probes: &[&str], load: &[&str]) -> (Vec<usize>, Vec<usize>) {
    let starts = |phase: Phase, id: &str| -> Vec<f64> {
        model.job(id).map_or(Vec::new(), |j| {
            j.partitions
                .iter()
                .flat_map(|p| &p.spans)
                .filter(|s| s.phase == phase)
                .map(|s| s.start_ms)
                .collect()
        })
    };
    let device_starts: Vec<(&str, f64)> = model
        .devices
        .iter()
        .flat_map(|d| d.busy.iter().map(|b| (b.job_id.as_str(), b.start_ms)))
        .collect();
    let mut synth = Vec::new();
    let mut device = Vec::new();
    for &p in probes {
        let Some(job) = model.job(p) else { continue };
        let (Some(queued), Some(first)) = (
            job.queued_ms,
            starts(Phase::Synthesis, p)
                .into_iter()
                .min_by(f64::total_cmp),
        ) else {
            continue;
        };
        let ahead = load
            .iter()
            .flat_map(|l| starts(Phase::Synthesis, l))
            .filter(|&s| s > queued && s < first)
            .count();
        synth.push(ahead);
        let mut passed = 0;
        for part in &job.partitions {
            let wait = part.spans.iter().find(|s| s.phase == Phase::DeviceWait);
            let work = part.spans.iter().find(|s| s.phase == Phase::DeviceWork);
            if let (Some(wait), Some(work)) = (wait, work) {
                passed += device_starts
                    .iter()
                    .filter(|(id, s)| *id != p && *s > wait.start_ms && *s < work.start_ms)
                    .count();
            }
        }
        device.push(passed);
    }
    (synth, device)
}

pub fn render(r: &ProbeReport) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
    let mut out = format!("probe {} beside load {}\n", r.probe, r.load);
    out += &format!(
        "{:<12} {:>5} {:>7} {:>7} {:>7} {:>7}\n",
        "", "jobs", "failed", "p50 s", "p95 s", "max s"
    );
    for (name, l) in [("idle", &r.idle), ("under load", &r.under_load)] {
        out += &format!(
            "{name:<12} {:>5} {:>7} {:>7} {:>7} {:>7}\n",
            l.jobs,
            l.failed,
            f(l.p50_s),
            f(l.p95_s),
            f(l.max_s)
        );
    }
    out += &format!(
        "load throughput over {:.1} s windows: {:.1} proofs/h with the probe ({} done), {:.1} proofs/h alone ({} done); {} load job(s) failed\n",
        r.window_s,
        r.load_per_hour_with_probe,
        r.load_done_with_probe,
        r.load_per_hour_alone,
        r.load_done_alone,
        r.load_failed
    );
    if !r.synth_overtaken_by.is_empty() {
        let sum = |v: &[usize]| v.iter().sum::<usize>();
        out += &format!(
            "load work started ahead of a queued probe (TIMELINE): synthesis {} partition(s), device {} step(s) over {} probe job(s)\n",
            sum(&r.synth_overtaken_by),
            sum(&r.device_overtaken_by),
            r.synth_overtaken_by.len()
        );
    }
    let memory = DaemonMemory {
        rss_bytes: r.rss_bytes,
        peak_rss_bytes: r.peak_rss_bytes,
        vram_peak_bytes: r.vram_peak_bytes.clone(),
    };
    out += &super::describe_memory(&memory);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use clap::{Args, FromArgMatches};

    use super::*;

    fn args(flags: &[&str]) -> BenchArgs {
        let matches = BenchArgs::augment_args(clap::Command::new("bench"))
            .try_get_matches_from(std::iter::once("bench").chain(flags.iter().copied()))
            .expect("the bench flags parse");
        BenchArgs::from_arg_matches(&matches).expect("BenchArgs from its own matches")
    }

    #[test]
    fn synthetic_roles_take_the_shape_and_their_own_sizes() {
        let a = args(&[
            "--load=synthetic:2",
            "--probe=synthetic:5",
            "--shape=porep",
            "--log-size=27",
            "--partitions=10",
            "--probe-log-size=12",
        ]);
        let (load, probe) = roles(&a).unwrap();
        assert_eq!(load.request.synthetic_shape, SyntheticShape::Porep);
        assert_eq!(probe.request.synthetic_shape, SyntheticShape::Porep);
        assert_eq!(
            (
                load.request.synthetic_log_size,
                load.request.synthetic_partitions
            ),
            (27, 10)
        );
        assert_eq!(
            (
                probe.request.synthetic_log_size,
                probe.request.synthetic_partitions
            ),
            (12, 1)
        );
        assert_eq!((load.count, probe.count), (2, 5));

        let uniform = args(&["--load=synthetic:1", "--probe=synthetic:1"]);
        let (load, _) = roles(&uniform).unwrap();
        assert_eq!(load.request.synthetic_shape, SyntheticShape::Uniform);

        let bad = args(&["--load=synthetic:1", "--probe=synthetic:1", "--shape=round"]);
        assert!(
            roles(&bad).is_err(),
            "an unknown shape is refused before a daemon starts"
        );
    }

    #[test]
    fn arrival_gaps_cover_the_range_evenly() {
        let max = Duration::from_millis(1000);
        assert_eq!(
            arrival_gap(0, max),
            Duration::ZERO,
            "the first job goes at once"
        );
        assert_eq!(
            arrival_gap(7, Duration::ZERO),
            Duration::ZERO,
            "no gap asked"
        );
        for n in [5usize, 20, 60] {
            let mut gaps: Vec<f64> = (0..n).map(|i| arrival_gap(i, max).as_secs_f64()).collect();
            assert!(gaps.iter().all(|g| (0.0..1.0).contains(g)), "{n}: {gaps:?}");
            gaps.sort_by(f64::total_cmp);
            gaps.push(1.0);
            // No hole wider than 2.7 times the even spacing (the golden ratio's bound is
            // below that for every n).
            let widest = gaps.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
            assert!(widest < 2.7 / n as f64, "{n} jobs: a hole of {widest}");
        }
    }
}

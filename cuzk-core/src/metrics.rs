//! Prometheus metrics through prometheus-client: jobs by kind and outcome, job and
//! per-partition phase durations, and values refreshed from the engine's status at each
//! scrape (queue depth, device busy time and memory, parameter memory, the daemon's resident
//! memory and the memory budget, uptime). GetMetrics
//! and the daemon's HTTP `/metrics` both render this one registry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::engine::EngineStatus;
use crate::job::ProofKind;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindStatusLabel {
    kind: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindPhaseLabel {
    kind: String,
    phase: &'static str,
}

/// The per-partition stages timed by `partition_phase_seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Circuit synthesis on a CPU worker.
    Synthesis,
    /// H polynomial and MSMs under the device lock.
    Device,
    /// Proof assembly and self-verification.
    Finalize,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Phase::Synthesis => "synthesis",
            Phase::Device => "device",
            Phase::Finalize => "finalize",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    kind: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeviceLabel {
    device: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SrsLabel {
    circuit_id: String,
}

pub struct Metrics {
    registry: Mutex<Registry>,
    submitted: Family<KindLabel, Counter>,
    finished: Family<KindStatusLabel, Counter>,
    duration: Family<KindLabel, Histogram>,
    phase_duration: Family<KindPhaseLabel, Histogram>,
    queue: Family<QueueLabel, Gauge>,
    device_busy: Family<DeviceLabel, Counter<f64, AtomicU64>>,
    device_memory_total: Family<DeviceLabel, Gauge>,
    device_memory_used: Family<DeviceLabel, Gauge>,
    device_memory_peak: Family<DeviceLabel, Gauge>,
    process_resident: Gauge,
    process_resident_peak: Gauge,
    pinned_host: Gauge,
    pinned_host_peak: Gauge,
    memory_budget: Gauge,
    memory_reserved: Gauge,
    memory_reserved_peak: Gauge,
    srs_bytes: Family<SrsLabel, Gauge>,
    srs_bytes_all: Gauge,
    uptime: Gauge,
    connections_refused: Counter,
    completed: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let m = Metrics {
            registry: Mutex::new(Registry::with_prefix("cuzk")),
            submitted: Family::default(),
            finished: Family::default(),
            // 10 ms .. ~20 min.
            duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.01, 2.0, 18))
            }),
            // 1 ms .. ~35 min: a 2^10 synthetic partition and a 32 GiB PoRep partition on
            // a slow CPU both land inside.
            phase_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 22))
            }),
            queue: Family::default(),
            device_busy: Family::default(),
            device_memory_total: Family::default(),
            device_memory_used: Family::default(),
            device_memory_peak: Family::default(),
            process_resident: Gauge::default(),
            process_resident_peak: Gauge::default(),
            pinned_host: Gauge::default(),
            pinned_host_peak: Gauge::default(),
            memory_budget: Gauge::default(),
            memory_reserved: Gauge::default(),
            memory_reserved_peak: Gauge::default(),
            srs_bytes: Family::default(),
            srs_bytes_all: Gauge::default(),
            uptime: Gauge::default(),
            connections_refused: Counter::default(),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
        };
        {
            let mut r = m.registry.lock();
            r.register("jobs_submitted", "Jobs accepted", m.submitted.clone());
            r.register(
                "jobs_finished",
                "Jobs ended, by outcome",
                m.finished.clone(),
            );
            r.register(
                "job_duration_seconds",
                "Submission to end, seconds",
                m.duration.clone(),
            );
            r.register(
                "partition_phase_seconds",
                "Time of one partition in a stage (synthesis, device, finalize), seconds",
                m.phase_duration.clone(),
            );
            r.register("queue_jobs", "Jobs pending or in progress", m.queue.clone());
            r.register(
                "device_busy_seconds",
                "Time each device spent proving (holding its lock), seconds",
                m.device_busy.clone(),
            );
            r.register(
                "device_memory_total_bytes",
                "GPU memory of each CUDA device",
                m.device_memory_total.clone(),
            );
            r.register(
                "device_memory_used_bytes",
                "GPU memory in use on each CUDA device (all processes)",
                m.device_memory_used.clone(),
            );
            r.register(
                "device_memory_peak_bytes",
                "Most GPU memory in use at the end of a device step since start (all processes)",
                m.device_memory_peak.clone(),
            );
            r.register(
                "process_resident_bytes",
                "Resident memory of the daemon (VmRSS; Linux only)",
                m.process_resident.clone(),
            );
            r.register(
                "process_resident_peak_bytes",
                "Highest resident memory of the daemon since start (VmHWM; Linux only)",
                m.process_resident_peak.clone(),
            );
            r.register(
                "pinned_host_bytes",
                "Page-locked host memory the CUDA backend holds (staging buffers, pinned aux pool)",
                m.pinned_host.clone(),
            );
            r.register(
                "pinned_host_peak_bytes",
                "Most page-locked host memory held at once since start",
                m.pinned_host_peak.clone(),
            );
            r.register(
                "memory_budget_bytes",
                "Host memory partitions may reserve together (synthesized_memory_bytes)",
                m.memory_budget.clone(),
            );
            r.register(
                "memory_reserved_bytes",
                "Host memory reserved now by partitions in synthesis, queued or on a device",
                m.memory_reserved.clone(),
            );
            r.register(
                "memory_reserved_peak_bytes",
                "Most host memory partitions have reserved at once since start",
                m.memory_reserved_peak.clone(),
            );
            r.register(
                "srs_resident_bytes",
                "Bytes of each parameter set in memory",
                m.srs_bytes.clone(),
            );
            r.register(
                "srs_resident_bytes_all",
                "Bytes of all parameter sets in memory",
                m.srs_bytes_all.clone(),
            );
            r.register(
                "uptime_seconds",
                "Seconds since the engine started",
                m.uptime.clone(),
            );
            r.register(
                "connections_refused",
                "TCP connections closed when accepted: the peer is outside `allow`",
                m.connections_refused.clone(),
            );
        }
        m
    }

    pub fn connection_refused(&self) {
        self.connections_refused.inc();
    }

    pub fn job_submitted(&self, kind: ProofKind) {
        self.submitted
            .get_or_create(&KindLabel {
                kind: kind.to_string(),
            })
            .inc();
    }

    pub fn job_finished(&self, kind: ProofKind, status: &str, took: Duration) {
        let label = KindStatusLabel {
            kind: kind.to_string(),
            status: status.to_string(),
        };
        self.finished.get_or_create(&label).inc();
        self.duration
            .get_or_create(&KindLabel {
                kind: kind.to_string(),
            })
            .observe(took.as_secs_f64());
        match status {
            "completed" => self.completed.fetch_add(1, Ordering::Relaxed),
            "failed" => self.failed.fetch_add(1, Ordering::Relaxed),
            "cancelled" => self.cancelled.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
    }

    /// One partition spent `took` in `phase`.
    pub fn partition_phase(&self, kind: ProofKind, phase: Phase, took: Duration) {
        self.phase_duration
            .get_or_create(&KindPhaseLabel {
                kind: kind.to_string(),
                phase: phase.as_str(),
            })
            .observe(took.as_secs_f64());
    }

    /// (completed, failed, cancelled) since start.
    pub fn totals(&self) -> (u64, u64, u64) {
        (
            self.completed.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.cancelled.load(Ordering::Relaxed),
        )
    }

    /// The text exposition (OpenMetrics text, which Prometheus reads), with the values that
    /// mirror engine state refreshed from `status`.
    pub fn render(&self, status: &EngineStatus) -> String {
        // Held for the whole refresh: the busy counters are advanced by difference, and two
        // concurrent scrapes must not both add the same difference.
        let registry = self.registry.lock();
        for q in &status.queues {
            let kind = q.kind.to_string();
            self.queue
                .get_or_create(&QueueLabel {
                    kind: kind.clone(),
                    state: "pending".into(),
                })
                .set(q.pending as i64);
            self.queue
                .get_or_create(&QueueLabel {
                    kind,
                    state: "in_progress".into(),
                })
                .set(q.in_progress as i64);
        }
        for d in &status.devices {
            let label = DeviceLabel {
                device: d.label.clone(),
            };
            // A counter only goes up: advance it to the device's running total.
            let busy = self.device_busy.get_or_create(&label);
            let delta = d.busy_seconds - busy.get();
            if delta > 0.0 {
                busy.inc_by(delta);
            }
            // The CPU device has no memory figures; a CUDA device reports both.
            if d.vram_total > 0 {
                self.device_memory_total
                    .get_or_create(&label)
                    .set(d.vram_total as i64);
                self.device_memory_used
                    .get_or_create(&label)
                    .set(d.vram_total.saturating_sub(d.vram_free) as i64);
                self.device_memory_peak
                    .get_or_create(&label)
                    .set(d.vram_peak as i64);
            }
        }
        // Evicted sets disappear from the exposition rather than linger at their last size.
        self.srs_bytes.clear();
        for s in &status.srs {
            self.srs_bytes
                .get_or_create(&SrsLabel {
                    circuit_id: s.circuit_id.clone(),
                })
                .set(s.size_bytes as i64);
        }
        self.srs_bytes_all
            .set(status.srs.iter().map(|s| s.size_bytes).sum::<u64>() as i64);
        self.uptime.set(status.uptime.as_secs() as i64);
        let mem = &status.memory;
        // Off Linux there is no reading and the two gauges stay at 0.
        if let Some(p) = mem.process {
            self.process_resident.set(p.rss_bytes as i64);
            self.process_resident_peak.set(p.peak_rss_bytes as i64);
        }
        self.pinned_host.set(mem.pinned.now as i64);
        self.pinned_host_peak.set(mem.pinned.peak as i64);
        self.memory_budget.set(mem.budget_bytes as i64);
        self.memory_reserved.set(mem.reserved_bytes as i64);
        self.memory_reserved_peak
            .set(mem.reserved_peak.bytes as i64);
        let mut out = String::new();
        encode(&mut out, &registry).expect("encoding to a String cannot fail");
        out
    }
}

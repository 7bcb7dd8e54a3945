//! Prometheus metrics through prometheus-client: jobs by kind and outcome, job durations,
//! and gauges (queue depth, device busy time, parameter memory) refreshed from the engine's
//! status at each scrape.

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
    queue: Family<QueueLabel, Gauge>,
    device_busy_ms: Family<DeviceLabel, Gauge>,
    srs_bytes: Family<SrsLabel, Gauge>,
    uptime: Gauge,
    completed: AtomicU64,
    failed: AtomicU64,
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
            queue: Family::default(),
            device_busy_ms: Family::default(),
            srs_bytes: Family::default(),
            uptime: Gauge::default(),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
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
            r.register("queue_jobs", "Jobs pending or in progress", m.queue.clone());
            r.register(
                "device_busy_milliseconds",
                "Time each device spent proving",
                m.device_busy_ms.clone(),
            );
            r.register(
                "srs_resident_bytes",
                "Parameter sets in memory",
                m.srs_bytes.clone(),
            );
            r.register(
                "uptime_seconds",
                "Seconds since the engine started",
                m.uptime.clone(),
            );
        }
        m
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
            _ => 0,
        };
    }

    /// (completed, failed) since start.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.completed.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }

    /// The text exposition, with gauges refreshed from `status`.
    pub fn render(&self, status: &EngineStatus) -> String {
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
            self.device_busy_ms
                .get_or_create(&DeviceLabel {
                    device: d.label.clone(),
                })
                .set((d.busy_seconds * 1e3) as i64);
        }
        self.srs_bytes.clear();
        for s in &status.srs {
            self.srs_bytes
                .get_or_create(&SrsLabel {
                    circuit_id: s.circuit_id.clone(),
                })
                .set(s.size_bytes as i64);
        }
        self.uptime.set(status.uptime.as_secs() as i64);
        let mut out = String::new();
        encode(&mut out, &self.registry.lock()).expect("encoding to a String cannot fail");
        out
    }
}

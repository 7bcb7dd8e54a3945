//! Test-only fault and delay injection. Kept in release builds so that tests of the daemon
//! binary can use it (a test cannot reach into another process); inert unless set.
//!
//! The daemon reads `CUZK_TEST_HOOKS` at start, e.g.
//! `CUZK_TEST_HOOKS="synth-panic=req-7;synth-delay-ms=500;device-delay-ms=300"`:
//! - `synth-panic=<request_id>`: synthesis of that job's partitions panics (the job fails,
//!   nothing else does);
//! - `synth-panic-once=<request_id>`: only the first synthesis under that request id panics
//!   (a retry under the same id then succeeds);
//! - `synth-delay-ms=<n>`: every partition's synthesis takes at least n ms longer;
//! - `device-delay-ms=<n>`: every partition holds its device n ms longer (under its lock);
//! - `phase-delay-ms=<n>`: each phase of a device step that may let waiting CRITICAL work
//!   in (the H polynomial, each MSM but the last; pipeline.rs) ends n ms later;
//! - `srs-load-delay-ms=<n>`: every parameter set loaded for queued jobs takes n ms longer
//!   (on the loader thread; PreloadSRS is not delayed).
//!
//! The delays let a test catch a job in synthesis, waiting for the device, or on it.
//! Never set this in production.

use std::time::Duration;

use crate::backend::SharedBackend;
use crate::record::Job;

/// The environment variable the daemon reads its hooks from.
pub const ENV: &str = "CUZK_TEST_HOOKS";

/// Called at the start of every partition's synthesis; may panic.
pub type SynthesisHook = Box<dyn Fn(&Job) + Send + Sync>;

/// Called before each device step with (request id, device label); true makes that step
/// fail as a device fault would (in-process tests only).
pub type DeviceFaultHook = Box<dyn Fn(&str, &str) -> bool + Send + Sync>;

#[derive(Default)]
pub struct TestHooks {
    pub synthesis_panic: Option<SynthesisHook>,
    pub device_error: Option<DeviceFaultHook>,
    /// Added to every partition's synthesis.
    pub synthesis_delay: Duration,
    /// Added to every partition's device step, inside the device lock.
    pub device_delay: Duration,
    /// Added after each phase of a device step but the last, under its lock.
    pub phase_delay: Duration,
    /// Added to every load of a set for queued jobs (loading.rs).
    pub srs_load_delay: Duration,
    /// Prove on this backend (one device, `test0`) instead of the configured devices: a
    /// stand-in for a GPU in in-process tests (host_release.rs's, on machines without one).
    pub device_backend: Option<SharedBackend>,
}

impl TestHooks {
    /// Hooks from `CUZK_TEST_HOOKS` (none when unset or empty).
    pub fn from_env() -> Result<TestHooks, String> {
        match std::env::var(ENV) {
            Ok(spec) => Self::parse(&spec),
            Err(_) => Ok(TestHooks::default()),
        }
    }

    /// Parse `key=value` pairs separated by `;`.
    pub fn parse(spec: &str) -> Result<TestHooks, String> {
        let mut hooks = TestHooks::default();
        for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{ENV}: {item:?} is not key=value"))?;
            let ms = || {
                value
                    .parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|e| format!("{ENV}: {key}: {e}"))
            };
            match key {
                "synth-panic" | "synth-panic-once" => {
                    let request_id = value.to_string();
                    let once = key == "synth-panic-once";
                    let armed = std::sync::atomic::AtomicBool::new(true);
                    // Several panic hooks add up: each checks its own request id.
                    let earlier = hooks.synthesis_panic.take();
                    hooks.synthesis_panic = Some(Box::new(move |job: &Job| {
                        if let Some(earlier) = &earlier {
                            earlier(job);
                        }
                        let fire = job.request_id == request_id
                            && (!once || armed.swap(false, std::sync::atomic::Ordering::SeqCst));
                        if fire {
                            panic!("injected synthesis panic (test hook) for {request_id}");
                        }
                    }));
                }
                "synth-delay-ms" => hooks.synthesis_delay = ms()?,
                "device-delay-ms" => hooks.device_delay = ms()?,
                "phase-delay-ms" => hooks.phase_delay = ms()?,
                "srs-load-delay-ms" => hooks.srs_load_delay = ms()?,
                other => return Err(format!("{ENV}: unknown hook {other:?}")),
            }
        }
        Ok(hooks)
    }

    pub fn is_set(&self) -> bool {
        self.synthesis_panic.is_some()
            || self.device_error.is_some()
            || !self.synthesis_delay.is_zero()
            || !self.device_delay.is_zero()
            || !self.phase_delay.is_zero()
            || !self.srs_load_delay.is_zero()
            || self.device_backend.is_some()
    }
}

impl TestHooks {
    /// The `phase-delay-ms` hook: a step's phase made longer, where a test catches it.
    pub fn pause_between_phases(&self) {
        if !self.phase_delay.is_zero() {
            std::thread::sleep(self.phase_delay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let h = TestHooks::parse(
            "synth-panic=r1; synth-delay-ms=20;device-delay-ms=5;srs-load-delay-ms=7;phase-delay-ms=3",
        )
        .unwrap();
        assert_eq!(h.phase_delay, Duration::from_millis(3));
        assert_eq!(h.srs_load_delay, Duration::from_millis(7));
        assert!(h.synthesis_panic.is_some());
        assert_eq!(h.synthesis_delay, Duration::from_millis(20));
        assert_eq!(h.device_delay, Duration::from_millis(5));
        assert!(!TestHooks::parse("").unwrap().is_set());
        assert!(TestHooks::parse("bogus=1").is_err());
        assert!(TestHooks::parse("synth-delay-ms=x").is_err());
        assert!(TestHooks::parse("synth-panic").is_err());
        assert!(TestHooks::parse("synth-panic-once=r2")
            .unwrap()
            .synthesis_panic
            .is_some());
    }
}

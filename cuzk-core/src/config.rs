//! The engine's configuration: one serde struct, every field with a default, so that no
//! file is needed. The daemon reads it once (TOML) and lets flags override it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::synth::SynthesisPath;

/// Which backend proves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// CUDA when a device and the kernels are present, else the CPU.
    #[default]
    Auto,
    Cpu,
    Cuda,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" => Ok(BackendChoice::Cuda),
            other => Err(format!("unknown backend {other:?} (auto|cpu|cuda)")),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Parameter (SRS) directory; FIL_PROOFS_PARAMETER_CACHE when set.
    pub param_dir: PathBuf,
    pub backend: BackendChoice,
    /// CUDA devices to use (empty: all).
    pub devices: Vec<u32>,
    /// Threads synthesizing partitions concurrently.
    pub synthesis_workers: usize,
    /// Jobs waiting in the queue before SubmitProof answers RESOURCE_EXHAUSTED.
    pub max_queued_jobs: usize,
    /// Further threads that synthesize only HIGH and CRITICAL partitions (PoSt), so that one
    /// is free when a PoSt arrives however much sealing work keeps the others busy.
    pub urgent_synthesis_workers: usize,
    /// Synthesized partitions that may wait for a device beside those in synthesis (each
    /// holds a/b/c and the assignments in memory). Urgent partitions may use as many again.
    pub max_synthesized_partitions: usize,
    /// Bytes that partitions in synthesis, waiting for a device or on one may hold together
    /// (reserved before synthesis, the device step's host copies included: footprint.rs); 0:
    /// budget::default_budget (RAM less a reserve and the largest parameter file, at most
    /// half of RAM).
    pub synthesized_memory_bytes: u64,
    /// Of those bytes, the share only HIGH and CRITICAL partitions may use; unset: an eighth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub urgent_memory_bytes: Option<u64>,
    /// Device memory each GPU may keep parameter points in (resident SRS vectors and their
    /// precomputed multiples, least recently used dropped first); 0: 60% of the device.
    pub gpu_resident_bytes: u64,
    /// Drop a parameter set's host copy of its point vectors once every device holds them
    /// (host_release.rs): a 32 GiB PoRep set gives ~45 GiB of RAM back. A partition retried
    /// on the CPU after a device fault first loads the set again from its file.
    pub release_host_params: bool,
    /// Only sets with at least this many bytes of points are released: a small set costs
    /// little to keep, and keeping it spares the CPU retry its reload.
    pub release_host_params_min_bytes: u64,
    /// How partitions are synthesized: "matrices" (the witness alone, then a, b, c from the
    /// constraint matrices recorded once per circuit shape) or "full" (bellperson's way,
    /// every constraint's linear combinations built and evaluated). Unset: the process's
    /// default ($CUZK_SYNTHESIS, else matrices). Same proofs either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis: Option<SynthesisPath>,
    /// With the matrices path and CUDA devices: a, b, c evaluated on the device from the
    /// uploaded assignment, not by the synthesis workers (less host work and a third of the
    /// upload; README, "a, b, c on the device"). Off: evaluated on the host, as with the CPU
    /// backend (which always does).
    pub abc_on_device: bool,
    /// Let a waiting CRITICAL partition (a WinningPoSt) onto a device at the pause points of
    /// a lower-priority step (after its H polynomial, after each MSM, between the stages of
    /// H's MSM on CUDA), under that step's lock, instead of after the whole step (~1.4 s at
    /// 2^27). Off: it waits for the step.
    pub urgent_between_phases: bool,
    /// After this long with no partition to prove, and none waiting for synthesis or in it,
    /// a device hands the memory its pool holds idle back to the driver (CUDA: the pool keeps
    /// every freed byte while busy, so that a 2^27 step's transient buffers are not unmapped
    /// and mapped again each step). 0 never.
    pub idle_release_ms: u64,
    /// Verify every proof against the verifying key before returning it.
    pub verify_proofs: bool,
    /// How long finished jobs stay available to AwaitProof.
    pub result_retention_secs: u64,
    /// Write TIMELINE lines to stderr.
    pub timeline: bool,
    /// Where the daemon keeps its state (the job journal); created if missing.
    /// Default: $CUZK_DATA_DIR, else $XDG_DATA_HOME/cuzk, else ~/.local/share/cuzk.
    pub data_dir: PathBuf,
    /// Journal every accepted job in `data_dir`, so that a restart finishes what was accepted
    /// and still answers for what finished. Off: jobs live in memory only (embedded tests).
    pub journal: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        EngineConfig {
            param_dir: default_param_dir(),
            backend: BackendChoice::Auto,
            devices: Vec::new(),
            synthesis_workers: (cores / 2).clamp(1, 8),
            max_queued_jobs: 256,
            urgent_synthesis_workers: 1,
            max_synthesized_partitions: 2,
            synthesized_memory_bytes: 0,
            urgent_memory_bytes: None,
            gpu_resident_bytes: 0,
            release_host_params: true,
            release_host_params_min_bytes: 4 << 30,
            synthesis: None,
            abc_on_device: true,
            urgent_between_phases: true,
            idle_release_ms: 2000,
            verify_proofs: true,
            result_retention_secs: 3600,
            timeline: true,
            data_dir: default_data_dir(),
            journal: true,
        }
    }
}

/// $CUZK_DATA_DIR, else the XDG data directory's `cuzk`.
pub fn default_data_dir() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("CUZK_DATA_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(xdg) = var("XDG_DATA_HOME") {
        return PathBuf::from(xdg).join("cuzk");
    }
    let home = var("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".local/share/cuzk")
}

/// The Filecoin convention: FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters.
pub fn default_param_dir() -> PathBuf {
    std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_toml_gives_defaults_and_unknown_fields_are_rejected() {
        let c: EngineConfig = toml::from_str("").unwrap();
        assert!(c.verify_proofs);
        assert_eq!(c.max_queued_jobs, 256);
        assert_eq!(
            (c.urgent_synthesis_workers, c.urgent_memory_bytes),
            (1, None)
        );
        let c: EngineConfig = toml::from_str("urgent_memory_bytes = 0").unwrap();
        assert_eq!(c.urgent_memory_bytes, Some(0));
        let c: EngineConfig = toml::from_str("backend = \"cpu\"\nsynthesis_workers = 3").unwrap();
        assert_eq!(c.backend, BackendChoice::Cpu);
        assert_eq!(c.synthesis_workers, 3);
        assert!(toml::from_str::<EngineConfig>("bogus = 1").is_err());
        assert!(c.journal);
        let c: EngineConfig = toml::from_str("journal = false\ndata_dir = \"/x/y\"").unwrap();
        assert!(!c.journal);
        assert_eq!(c.data_dir, PathBuf::from("/x/y"));
    }
}

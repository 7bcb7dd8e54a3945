//! The daemon's configuration file: where to listen, plus the engine's settings under
//! `[engine]`. Every field has a default, so no file is needed; flags override the file.

use std::path::{Path, PathBuf};

use cuzk_core::EngineConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// TCP address for gRPC. Loopback by default: proofs are not for the open network.
    pub listen: String,
    /// Also serve on this Unix socket (created with 0600 rights).
    pub unix_socket: Option<PathBuf>,
    /// Seconds SIGTERM waits for running jobs before exiting.
    pub shutdown_grace_secs: u64,
    pub engine: EngineConfig,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: "127.0.0.1:9820".into(),
            unix_socket: None,
            shutdown_grace_secs: 30,
            engine: EngineConfig::default(),
        }
    }
}

impl DaemonConfig {
    pub fn load(path: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = path else {
            return Ok(DaemonConfig::default());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading config {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("config {}: {e}", path.display()))
    }

    /// The configuration file's text, as `load` reads it.
    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    /// The effective configuration as TOML (`--print-config`).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string_pretty(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_nested_engine_section() {
        let c: DaemonConfig = toml::from_str("").unwrap();
        assert_eq!(c.listen, "127.0.0.1:9820");
        let c: DaemonConfig =
            toml::from_str("listen = \"127.0.0.1:1\"\n[engine]\nmax_queued_jobs = 3\n").unwrap();
        assert_eq!(c.engine.max_queued_jobs, 3);
        assert!(toml::from_str::<DaemonConfig>("[engine]\nnope = 1").is_err());
    }
}

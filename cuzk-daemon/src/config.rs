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
    pub fn to_toml(&self) -> anyhow::Result<String> {
        let strings = [
            self.listen.as_str(),
            &self
                .unix_socket
                .as_deref()
                .unwrap_or(Path::new(""))
                .to_string_lossy(),
            &self.engine.param_dir.to_string_lossy(),
        ];
        if let Some(s) = strings.iter().find(|s| longest_quote_run(s) > 255) {
            anyhow::bail!("cannot print {s:?} as TOML: it holds 256 or more quotes in a row");
        }
        Ok(toml::to_string_pretty(self)?)
    }
}

/// The TOML writer (toml_write 0.1, also toml_writer 1.1) counts runs of quotes in a u8: a
/// string with 256 in a row overflows it, a panic where overflow checks are on (tests,
/// debug builds). Found by the `daemon_config` fuzz target; no real address or path looks
/// like that, so such a value is refused instead of rendered.
fn longest_quote_run(s: &str) -> usize {
    let mut longest = 0;
    for quote in ['\'', '"'] {
        let mut run = 0;
        for c in s.chars() {
            run = if c == quote { run + 1 } else { 0 };
            longest = longest.max(run);
        }
    }
    longest
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

    #[test]
    fn values_the_toml_writer_cannot_render_are_refused_not_a_panic() {
        let text = format!("listen = \"{}\"\n", "'".repeat(300));
        let c = DaemonConfig::parse(&text).unwrap();
        assert!(c.to_toml().is_err());
        let text = format!("[engine]\nparam_dir = '{}'\n", "\"".repeat(256));
        assert!(DaemonConfig::parse(&text).unwrap().to_toml().is_err());
        assert!(DaemonConfig::default().to_toml().is_ok());
    }
}

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
    /// A file holding the shared bearer token every cuzk.v1 call must present (else the
    /// CUZK_AUTH_TOKEN environment variable; else no token is required).
    pub auth_token_file: Option<PathBuf>,
    /// Serve Prometheus metrics over plain HTTP at http://<this>/metrics (off when unset).
    pub metrics_listen: Option<String>,
    /// TLS for the TCP listener (the Unix socket stays plaintext: it is local and 0600).
    pub tls: Option<TlsConfig>,
    /// Source-address ranges the TCP listener accepts connections from ("10.0.0.0/8",
    /// "fd00::/8", "192.0.2.7"); any other connection is closed before a byte is read. Empty:
    /// loopback only. Curio's client has no TLS and no token: this is what exposes the daemon
    /// to a remote Curio node, and to nobody else.
    pub allow: Vec<String>,
    pub engine: EngineConfig,
}

/// `[tls]`: the server's certificate chain and private key, PEM files.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: "127.0.0.1:9820".into(),
            unix_socket: None,
            shutdown_grace_secs: 30,
            auth_token_file: None,
            metrics_listen: None,
            tls: None,
            allow: Vec::new(),
            engine: EngineConfig::default(),
        }
    }
}

/// Flags for the security and observability keys above, flattened into the daemon's
/// command line; each overrides its key in the file.
#[derive(clap::Args, Debug, Default)]
pub struct ExposureFlags {
    /// TLS certificate chain (PEM) for the TCP listener; needs --tls-key.
    #[arg(long)]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for the TCP listener; needs --tls-cert.
    #[arg(long)]
    pub tls_key: Option<PathBuf>,
    /// File holding the bearer token every cuzk.v1 call must present (else $CUZK_AUTH_TOKEN).
    #[arg(long)]
    pub auth_token_file: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9821.
    #[arg(long)]
    pub metrics_listen: Option<String>,
    /// Accept TCP connections from this address range (repeatable; replaces the file's
    /// `allow`), e.g. --allow 10.0.0.0/8 --allow fd00::/8. Default: loopback only.
    #[arg(long = "allow", value_name = "CIDR")]
    pub allow: Vec<String>,
}

impl ExposureFlags {
    pub fn apply(&self, c: &mut DaemonConfig) -> anyhow::Result<()> {
        match (&self.tls_cert, &self.tls_key, &mut c.tls) {
            (None, None, _) => {}
            (Some(cert), Some(key), tls) => {
                *tls = Some(TlsConfig {
                    cert: cert.clone(),
                    key: key.clone(),
                })
            }
            // One flag replaces its half of a [tls] section from the file.
            (cert, key, Some(tls)) => {
                if let Some(cert) = cert {
                    tls.cert = cert.clone();
                }
                if let Some(key) = key {
                    tls.key = key.clone();
                }
            }
            (_, _, None) => anyhow::bail!("--tls-cert and --tls-key go together"),
        }
        if let Some(v) = &self.auth_token_file {
            c.auth_token_file = Some(v.clone());
        }
        if let Some(v) = &self.metrics_listen {
            c.metrics_listen = Some(v.clone());
        }
        if !self.allow.is_empty() {
            c.allow = self.allow.clone();
        }
        crate::allow::Allowlist::parse(&c.allow)?;
        Ok(())
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
    fn security_and_metrics_keys() {
        let c: DaemonConfig = toml::from_str(
            "auth_token_file = \"/etc/cuzk/token\"\nmetrics_listen = \"127.0.0.1:9821\"\n\
             [tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\n",
        )
        .unwrap();
        assert_eq!(c.auth_token_file.unwrap(), PathBuf::from("/etc/cuzk/token"));
        assert_eq!(c.metrics_listen.as_deref(), Some("127.0.0.1:9821"));
        assert_eq!(c.tls.unwrap().key, PathBuf::from("k.pem"));
        // Half a TLS section is an error, not a silent plaintext listener.
        assert!(toml::from_str::<DaemonConfig>("[tls]\ncert = \"c.pem\"\n").is_err());
    }

    #[test]
    fn allow_flags_replace_the_file_and_bad_ranges_fail_the_start() {
        let mut c: DaemonConfig = toml::from_str("allow = [\"10.0.0.0/8\"]\n").unwrap();
        assert_eq!(c.allow, vec!["10.0.0.0/8".to_string()]);
        let flags = ExposureFlags {
            allow: vec!["192.0.2.0/24".into(), "fd00::/8".into()],
            ..Default::default()
        };
        flags.apply(&mut c).unwrap();
        assert_eq!(c.allow.len(), 2);
        let bad = ExposureFlags {
            allow: vec!["10.0.0.0/40".into()],
            ..Default::default()
        };
        assert!(bad.apply(&mut DaemonConfig::default()).is_err());
    }

    #[test]
    fn tls_flags_need_both_halves_unless_the_file_has_tls() {
        let half = ExposureFlags {
            tls_cert: Some("c.pem".into()),
            ..Default::default()
        };
        assert!(half.apply(&mut DaemonConfig::default()).is_err());
        let mut c: DaemonConfig =
            toml::from_str("[tls]\ncert = \"old.pem\"\nkey = \"k.pem\"\n").unwrap();
        half.apply(&mut c).unwrap();
        let tls = c.tls.unwrap();
        assert_eq!(
            (tls.cert.to_str(), tls.key.to_str()),
            (Some("c.pem"), Some("k.pem"))
        );
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

//! TLS for the gRPC TCP listener: rustls (ring provider) through tonic. The certificate
//! chain and key are read once at start; a file that is missing or holds no PEM block of
//! the right kind stops the daemon with the file's name rather than a listener that fails
//! every handshake later.

use std::path::Path;

use tonic::transport::{Identity, Server, ServerTlsConfig};

use cuzk_daemon::config::TlsConfig;

/// The server builder for the TCP listener: with TLS when configured. rustls parses the
/// key here, so a bad one fails the start, before anything is loaded or announced.
pub fn tcp_server(tls: Option<&TlsConfig>) -> anyhow::Result<Server> {
    let builder = Server::builder();
    let Some(c) = tls else {
        return Ok(builder);
    };
    builder.tls_config(server_tls(c)?).map_err(|e| {
        // tonic's own message is only "transport error"; the cause is in its source.
        let cause = std::error::Error::source(&e).map_or_else(String::new, |s| format!(": {s}"));
        anyhow::anyhow!(
            "TLS certificate {} with key {}: {e}{cause}",
            c.cert.display(),
            c.key.display()
        )
    })
}

fn server_tls(c: &TlsConfig) -> anyhow::Result<ServerTlsConfig> {
    let cert = read_pem(&c.cert, "certificate", "-----BEGIN CERTIFICATE-----")?;
    let key = read_pem(&c.key, "private key", "PRIVATE KEY-----")?;
    Ok(ServerTlsConfig::new().identity(Identity::from_pem(cert, key)))
}

fn read_pem(path: &Path, what: &str, marker: &str) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("reading TLS {what} {}: {e}", path.display()))?;
    if !String::from_utf8_lossy(&bytes).contains(marker) {
        anyhow::bail!(
            "TLS {what} {}: no PEM block containing {marker:?}",
            path.display()
        );
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_wrong_files_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, "not a certificate").unwrap();
        let c = TlsConfig {
            cert: cert.clone(),
            key: key.clone(),
        };
        let e = tcp_server(Some(&c)).unwrap_err().to_string();
        assert!(e.contains("cert.pem") && e.contains("CERTIFICATE"), "{e}");
        std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let e = tcp_server(Some(&c)).unwrap_err().to_string();
        assert!(e.contains("key.pem"), "{e}");
        // Markers present, contents garbage: refused by rustls, with both files named.
        std::fs::write(
            &key,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let e = tcp_server(Some(&c)).unwrap_err().to_string();
        assert!(e.contains("cert.pem") && e.contains("key.pem"), "{e}");
        assert!(tcp_server(None).is_ok());
    }
}

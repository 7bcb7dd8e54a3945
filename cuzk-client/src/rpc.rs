//! Talking to a daemon: connecting over TCP (plaintext or TLS) or a Unix socket, with the
//! daemon's bearer token if it wants one, and building requests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuzk_core::kinds::{KindRequest, SyntheticShape};
use cuzk_core::{Priority, ProofKind};
use cuzk_proto::v1 as pb;
use cuzk_proto::v1::proving_engine_client::ProvingEngineClient;
use hyper_util::rt::TokioIo;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Uri};

pub type Client = ProvingEngineClient<InterceptedService<Channel, BearerToken>>;

/// Environment variable holding the daemon's bearer token (same name as the daemon's).
pub const TOKEN_ENV: &str = "CUZK_AUTH_TOKEN";

/// How to reach a daemon beyond its address.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    /// Trust this CA (PEM) for the daemon's certificate; implies TLS. Without it an
    /// `https://` address is checked against the system's roots.
    pub tls_ca: Option<PathBuf>,
    /// The name the certificate must carry, when not the address's host.
    pub tls_domain: Option<String>,
    /// Sent as `authorization: Bearer <token>` on every call.
    pub token: Option<String>,
}

impl ConnectOptions {
    /// The token from `file` if given, else from $CUZK_AUTH_TOKEN (trimmed; None if unset).
    pub fn read_token(file: Option<&Path>) -> anyhow::Result<Option<String>> {
        let token = match file {
            Some(f) => std::fs::read_to_string(f)
                .map_err(|e| anyhow::anyhow!("reading token file {}: {e}", f.display()))?,
            None => match std::env::var(TOKEN_ENV) {
                Ok(t) => t,
                Err(_) => return Ok(None),
            },
        };
        let token = token.trim();
        Ok((!token.is_empty()).then(|| token.to_string()))
    }
}

/// Adds the bearer token, when there is one, to every call.
#[derive(Clone)]
pub struct BearerToken(Option<MetadataValue<Ascii>>);

impl BearerToken {
    fn new(token: Option<&str>) -> anyhow::Result<Self> {
        let Some(token) = token else {
            return Ok(BearerToken(None));
        };
        let mut value: MetadataValue<Ascii> = format!("Bearer {token}")
            .parse()
            .map_err(|_| anyhow::anyhow!("the auth token must be printable ASCII"))?;
        // Keeps it out of debug output of the HTTP/2 layers.
        value.set_sensitive(true);
        Ok(BearerToken(Some(value)))
    }
}

impl Interceptor for BearerToken {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// Connect to `addr`: `host:port`, `http://host:port`, `https://host:port` or
/// `unix:/path/to.sock`, without TLS options or token.
pub async fn connect(addr: &str) -> anyhow::Result<Client> {
    connect_with(addr, &ConnectOptions::default()).await
}

/// Connect to `addr` with `opts`. TLS is used for `https://` addresses and whenever a CA
/// is given; a CA with an `http://` address is a contradiction and refused.
pub async fn connect_with(addr: &str, opts: &ConnectOptions) -> anyhow::Result<Client> {
    let token = BearerToken::new(opts.token.as_deref())?;
    let channel = if let Some(path) = addr.strip_prefix("unix:") {
        if opts.tls_ca.is_some() || opts.tls_domain.is_some() {
            anyhow::bail!("TLS options do not apply to a Unix socket ({addr})");
        }
        let path = path.to_string();
        // The URI is required by the API but unused: the connector below dials the socket.
        Endpoint::try_from("http://[::]:0")?
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }))
            .await
    } else {
        let tls = addr.starts_with("https://") || opts.tls_ca.is_some();
        let uri = match addr.split_once("://") {
            Some(("http", _)) if tls => {
                anyhow::bail!("{addr}: --tls-ca given for an http:// address (use https://)")
            }
            Some(_) => addr.to_string(),
            None if tls => format!("https://{addr}"),
            None => format!("http://{addr}"),
        };
        let mut endpoint = Endpoint::try_from(uri)?.connect_timeout(Duration::from_secs(10));
        if tls {
            endpoint = endpoint
                .tls_config(client_tls(opts)?)
                .map_err(|e| anyhow::anyhow!("TLS configuration: {e}"))?;
        }
        endpoint.connect().await
    }
    .map_err(|e| anyhow::anyhow!("connecting to {addr}: {}", error_chain(&e)))?;
    Ok(ProvingEngineClient::with_interceptor(channel, token)
        .max_decoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES))
}

fn client_tls(opts: &ConnectOptions) -> anyhow::Result<ClientTlsConfig> {
    let mut tls = ClientTlsConfig::new();
    tls = match &opts.tls_ca {
        Some(ca) => {
            let pem = std::fs::read(ca)
                .map_err(|e| anyhow::anyhow!("reading TLS CA {}: {e}", ca.display()))?;
            tls.ca_certificate(Certificate::from_pem(pem))
        }
        None => tls.with_native_roots(),
    };
    if let Some(d) = &opts.tls_domain {
        tls = tls.domain_name(d.clone());
    }
    Ok(tls)
}

/// "transport error" alone does not say that a certificate was refused: name every cause.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        // Some layers already print their source in their own message.
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

pub fn kind_to_wire(kind: ProofKind) -> pb::ProofKind {
    match kind {
        ProofKind::PorepSealCommit => pb::ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate => pb::ProofKind::SnapDealsUpdate,
        ProofKind::WindowPostPartition => pb::ProofKind::WindowPostPartition,
        ProofKind::WinningPost => pb::ProofKind::WinningPost,
        ProofKind::Synthetic => pb::ProofKind::Synthetic,
    }
}

pub fn priority_to_wire(p: Option<Priority>) -> pb::Priority {
    match p {
        None => pb::Priority::Unspecified,
        Some(Priority::Low) => pb::Priority::Low,
        Some(Priority::Normal) => pb::Priority::Normal,
        Some(Priority::High) => pb::Priority::High,
        Some(Priority::Critical) => pb::Priority::Critical,
    }
}

/// The wire request for a proof.
pub fn submit_request(
    req: KindRequest,
    priority: Option<Priority>,
    request_id: String,
) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id,
        proof_kind: kind_to_wire(req.kind) as i32,
        sector_size: req.sector_size,
        registered_proof: req.registered_proof,
        priority: priority_to_wire(priority) as i32,
        vanilla_proof: req.vanilla_proof,
        vanilla_proofs: req.vanilla_proofs,
        sector_number: req.sector_number,
        miner_id: req.miner_id,
        randomness: req.randomness,
        partition_index: req.partition_index,
        comm_r_old: req.comm_r_old,
        comm_r_new: req.comm_r_new,
        comm_d_new: req.comm_d_new,
        synthetic_log_size: req.synthetic_log_size,
        synthetic_partitions: req.synthetic_partitions,
        synthetic_seed: req.synthetic_seed,
        synthetic_shape: match req.synthetic_shape {
            // Unset on the wire: daemons from before shapes read it as theirs.
            SyntheticShape::Uniform => String::new(),
            s => s.as_str().to_string(),
        },
    }
}

/// A synthetic job of 2^log_size constraints per partition.
pub fn synthetic_request(log_size: u32, partitions: u32, seed: u64) -> KindRequest {
    let mut r = KindRequest::new(ProofKind::Synthetic);
    r.synthetic_log_size = log_size;
    r.synthetic_partitions = partitions;
    r.synthetic_seed = seed;
    r
}

pub fn status_name(status: i32) -> &'static str {
    use pb::await_proof_response::Status;
    match Status::try_from(status) {
        Ok(Status::Completed) => "completed",
        Ok(Status::Failed) => "failed",
        Ok(Status::Cancelled) => "cancelled",
        Ok(Status::Timeout) => "timeout",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn contradictory_tls_options_are_refused_before_dialing() {
        let ca = ConnectOptions {
            tls_ca: Some("ca.pem".into()),
            ..Default::default()
        };
        let e = connect_with("http://127.0.0.1:1", &ca).await.unwrap_err();
        assert!(e.to_string().contains("https://"), "{e}");
        let e = connect_with("unix:/nonexistent.sock", &ca)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("Unix socket"), "{e}");
        // A CA file that is not there is named.
        let e = connect_with("127.0.0.1:1", &ca).await.unwrap_err();
        assert!(e.to_string().contains("ca.pem"), "{e}");
    }

    #[test]
    fn token_becomes_a_sensitive_bearer_header() {
        let mut t = BearerToken::new(Some("abc")).unwrap();
        let req = t.call(tonic::Request::new(())).unwrap();
        let v = req.metadata().get("authorization").unwrap();
        assert_eq!(v.to_str().unwrap(), "Bearer abc");
        assert!(v.is_sensitive());
        assert!(BearerToken::new(Some("line\nbreak")).is_err());
        let mut none = BearerToken::new(None).unwrap();
        let req = none.call(tonic::Request::new(())).unwrap();
        assert!(req.metadata().get("authorization").is_none());
    }
}

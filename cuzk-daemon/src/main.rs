//! cuzk-daemon: the long-running proving daemon. Reads its configuration once, starts the
//! engine, serves cuzk.v1 over TCP (and a Unix socket if asked), and shuts down gracefully on
//! SIGINT/SIGTERM.

mod auth;
mod http_metrics;
mod routes;
mod service;
mod tls;
mod unix_socket;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use cuzk_core::config::BackendChoice;
use cuzk_core::engine::TestHooks;
use cuzk_core::Engine;
use cuzk_proto::v1::proving_engine_server::ProvingEngineServer;
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::service::Routes;
use tonic::transport::Server;

use crate::auth::BearerAuth;
use crate::service::ProvingService;
use cuzk_daemon::allow::Allowlist;
use cuzk_daemon::config::{DaemonConfig, ExposureFlags};

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-daemon",
    version,
    about = "Groth16 proving daemon for Filecoin (cuzk.v1 gRPC)"
)]
struct Args {
    /// TOML configuration file (every field optional).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// TCP listen address, e.g. 127.0.0.1:9820 (port 0 picks a free one).
    #[arg(long)]
    listen: Option<String>,
    /// Also serve on this Unix socket.
    #[arg(long)]
    unix_socket: Option<PathBuf>,
    /// auto | cpu | cuda
    #[arg(long)]
    backend: Option<BackendChoice>,
    /// Parameter directory (default: FIL_PROOFS_PARAMETER_CACHE).
    #[arg(long)]
    param_dir: Option<PathBuf>,
    /// Data directory: the job journal lives here (default: $CUZK_DATA_DIR, else
    /// $XDG_DATA_HOME/cuzk, else ~/.local/share/cuzk).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    #[arg(long)]
    synthesis_workers: Option<usize>,
    /// Extra synthesis threads for HIGH and CRITICAL partitions only (default 1).
    #[arg(long)]
    urgent_synthesis_workers: Option<usize>,
    /// Synthesized partitions that may wait for a device (default 2).
    #[arg(long)]
    max_synthesized_partitions: Option<usize>,
    #[arg(long)]
    max_queued_jobs: Option<usize>,
    /// Synthesis path: matrices (witness only, a/b/c from recorded constraint matrices) or
    /// full (bellperson's way).
    #[arg(long)]
    synthesis: Option<cuzk_core::synth::SynthesisPath>,
    /// Evaluate a/b/c on CUDA devices from the witness (engine `abc_on_device`, default
    /// true); `--abc-on-device=false` evaluates them on the synthesis threads.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    abc_on_device: Option<bool>,
    /// Let a waiting WinningPoSt (CRITICAL) onto a device at the pause points of a longer
    /// step (engine `urgent_between_phases`, default true); `=false`: after the step.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    urgent_between_phases: Option<bool>,
    /// Milliseconds a device waits without work (and with no partition in the engine) before
    /// its memory pool's idle memory goes back to the driver (engine `idle_release_ms`,
    /// default 2000; 0 never).
    #[arg(long)]
    idle_release_ms: Option<u64>,
    /// Drop a parameter set's host copy once the GPUs hold it (engine
    /// `release_host_params`, default true, for sets of `release_host_params_min_bytes`);
    /// `--release-host-params=false` keeps every set on the host too.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    release_host_params: Option<bool>,
    /// Release only sets of at least this many bytes of points (default 4 GiB; 0: any).
    #[arg(long)]
    release_host_params_min_bytes: Option<u64>,
    /// Skip verifying proofs before returning them (not recommended).
    #[arg(long)]
    no_verify: bool,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    exposure: ExposureFlags,
}

impl Args {
    fn apply(&self, c: &mut DaemonConfig) -> anyhow::Result<()> {
        if let Some(v) = &self.listen {
            c.listen = v.clone();
        }
        if let Some(v) = &self.unix_socket {
            c.unix_socket = Some(v.clone());
        }
        if let Some(v) = self.backend {
            c.engine.backend = v;
        }
        if let Some(v) = &self.param_dir {
            c.engine.param_dir = v.clone();
        }
        if let Some(v) = &self.data_dir {
            c.engine.data_dir = v.clone();
        }
        if let Some(v) = self.synthesis_workers {
            c.engine.synthesis_workers = v;
        }
        if let Some(v) = self.urgent_synthesis_workers {
            c.engine.urgent_synthesis_workers = v;
        }
        if let Some(v) = self.max_synthesized_partitions {
            c.engine.max_synthesized_partitions = v;
        }
        if let Some(v) = self.max_queued_jobs {
            c.engine.max_queued_jobs = v;
        }
        if let Some(v) = self.synthesis {
            c.engine.synthesis = Some(v);
        }
        if let Some(v) = self.abc_on_device {
            c.engine.abc_on_device = v;
        }
        if let Some(v) = self.urgent_between_phases {
            c.engine.urgent_between_phases = v;
        }
        if let Some(v) = self.idle_release_ms {
            c.engine.idle_release_ms = v;
        }
        if let Some(v) = self.release_host_params {
            c.engine.release_host_params = v;
        }
        if let Some(v) = self.release_host_params_min_bytes {
            c.engine.release_host_params_min_bytes = v;
        }
        if self.no_verify {
            c.engine.verify_proofs = false;
        }
        self.exposure.apply(c)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut config = DaemonConfig::load(args.config.as_deref())?;
    args.apply(&mut config)?;
    if args.print_config {
        print!("{}", config.to_toml()?);
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();

    let grace = Duration::from_secs(config.shutdown_grace_secs);
    // Credentials first: a bad file stops the daemon before it loads anything.
    let token = auth::load_token(config.auth_token_file.as_deref())?;
    let token_required = token.is_some();
    let mut tcp = tls::tcp_server(config.tls.as_ref())?;
    let allow = Allowlist::parse(&config.allow)?;
    // Test-only fault/delay injection (CUZK_TEST_HOOKS; see cuzk-core's test_hooks.rs).
    let hooks = TestHooks::from_env().map_err(|e| anyhow::anyhow!(e))?;
    let engine = Engine::start_with_hooks(config.engine.clone(), hooks)?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    let routes = routes::grpc_routes(&engine, BearerAuth::new(token), Routes::new(health_service))?;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    // Bound before the gRPC listener announces itself, so that whoever waits for that line
    // finds this one above it.
    let metrics = if let Some(addr) = &config.metrics_listen {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("metrics listener on {addr}: {e}"))?;
        let local = listener.local_addr()?;
        if !local.ip().is_loopback() {
            tracing::warn!("metrics served without authentication on non-loopback {local}");
        }
        eprintln!("cuzk-daemon metrics on http://{local}/metrics");
        Some(tokio::spawn(http_metrics::serve(
            listener,
            engine.clone(),
            stop_rx.clone(),
        )))
    } else {
        None
    };

    // Also ready before the TCP line: when it appears, every listener accepts.
    let unix = if let Some(path) = &config.unix_socket {
        let listener = unix_socket::bind_private(path)?;
        eprintln!("cuzk-daemon listening on unix:{}", path.display());
        let server = Server::builder()
            .add_routes(routes.clone())
            .serve_with_incoming_shutdown(
                UnixListenerStream::new(listener),
                stopped(stop_rx.clone()),
            );
        Some(tokio::spawn(server))
    } else {
        None
    };

    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|e| anyhow::anyhow!("listening on {}: {e}", config.listen))?;
    let local = listener.local_addr()?;
    let tls_on = config.tls.is_some();
    tracing::info!(tls = tls_on, token_required, %allow, "gRPC on {local}");
    if !allow.loopback_only() {
        warn_if_exposed(local, tls_on, token_required);
    } else if !local.ip().is_loopback() {
        tracing::warn!(
            "listening on {local} but accepting loopback peers only: set `allow` (or --allow \
             CIDR) to the addresses of the Curio nodes that may connect"
        );
    }
    // A fixed-format line that scripts and tests wait for.
    eprintln!("cuzk-daemon listening on {local}");
    let incoming = allowed(TcpListenerStream::new(listener), allow, engine.clone());
    let tcp = tcp
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, stopped(stop_rx));
    let tcp = tokio::spawn(tcp);

    shutdown_signal().await;
    tracing::info!(
        "shutting down: admission stopped, waiting up to {grace:?} for partitions in progress"
    );
    engine.shutdown();
    wait_for_in_flight(&engine, grace).await;
    // Unfinished jobs stay queued in the journal; their waiters are told to come back.
    engine.close();
    let _ = stop_tx.send(true);
    tcp.await??;
    if let Some(u) = unix {
        u.await??;
    }
    if let Some(m) = metrics {
        m.await?;
    }
    if let Some(path) = &config.unix_socket {
        let _ = std::fs::remove_file(path);
    }
    tracing::info!("stopped");
    Ok(())
}

/// The accepted connections whose peer is in `allow`; any other is closed (dropped) before a
/// byte of it is read, logged and counted.
fn allowed(
    incoming: TcpListenerStream,
    allow: Allowlist,
    engine: Engine,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt;
    incoming.filter_map(move |conn| {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        match stream.peer_addr() {
            Ok(peer) if allow.allows(peer.ip()) => Some(Ok(stream)),
            Ok(peer) => {
                tracing::warn!(%peer, "connection refused: the peer is outside `allow`");
                engine.connection_refused();
                None
            }
            // Gone before we looked: nothing to serve.
            Err(_) => None,
        }
    })
}

/// Proofs, job control and the token itself cross this listener: say loudly when it is
/// reachable from other machines without TLS or without a token.
fn warn_if_exposed(addr: std::net::SocketAddr, tls: bool, token: bool) {
    if addr.ip().is_loopback() {
        return;
    }
    if !tls {
        tracing::warn!(
            "INSECURE: listening on non-loopback {addr} without TLS: requests, proofs and any \
             bearer token cross the network in plaintext (set [tls] cert/key or --tls-cert/--tls-key)"
        );
    }
    if !token {
        tracing::warn!(
            "INSECURE: listening on non-loopback {addr} without an auth token: anyone who can \
             reach it can submit and cancel jobs (set auth_token_file, --auth-token-file or \
             CUZK_AUTH_TOKEN)"
        );
    }
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Wait for the partitions in synthesis or on a device (not whole jobs: the queued rest of a
/// job was dropped and waits for the next start in the journal).
async fn wait_for_in_flight(engine: &Engine, grace: Duration) {
    // A grace of "forever" in the config must not overflow the clock.
    let deadline = Instant::now()
        .checked_add(grace)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
    while Instant::now() < deadline {
        if engine.in_flight() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tracing::warn!(
        partitions = engine.in_flight(),
        "grace period over with partitions in progress; their jobs run again on the next start"
    );
}

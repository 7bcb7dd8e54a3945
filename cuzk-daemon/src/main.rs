//! cuzk-daemon: the long-running proving daemon. Reads its configuration once, starts the
//! engine, serves cuzk.v1 over TCP (and a Unix socket if asked), and shuts down gracefully on
//! SIGINT/SIGTERM.

mod service;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use cuzk_core::config::BackendChoice;
use cuzk_core::Engine;
use cuzk_proto::v1::proving_engine_server::ProvingEngineServer;
use cuzk_proto::MAX_MESSAGE_BYTES;
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::transport::Server;

use crate::service::ProvingService;
use cuzk_daemon::config::DaemonConfig;

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
    #[arg(long)]
    synthesis_workers: Option<usize>,
    #[arg(long)]
    max_queued_jobs: Option<usize>,
    /// Skip verifying proofs before returning them (not recommended).
    #[arg(long)]
    no_verify: bool,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

impl Args {
    fn apply(&self, c: &mut DaemonConfig) {
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
        if let Some(v) = self.synthesis_workers {
            c.engine.synthesis_workers = v;
        }
        if let Some(v) = self.max_queued_jobs {
            c.engine.max_queued_jobs = v;
        }
        if self.no_verify {
            c.engine.verify_proofs = false;
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut config = DaemonConfig::load(args.config.as_deref())?;
    args.apply(&mut config);
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
    let engine = Engine::start(config.engine.clone())?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    let proving = || {
        ProvingEngineServer::new(ProvingService::new(engine.clone()))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    };

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|e| anyhow::anyhow!("listening on {}: {e}", config.listen))?;
    // A fixed-format line that scripts and tests wait for.
    eprintln!("cuzk-daemon listening on {}", listener.local_addr()?);
    let tcp = Server::builder()
        .add_service(health_service.clone())
        .add_service(proving())
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), stopped(stop_rx.clone()));
    let tcp = tokio::spawn(tcp);

    let unix = if let Some(path) = &config.unix_socket {
        let _ = std::fs::remove_file(path);
        let listener = tokio::net::UnixListener::bind(path)
            .map_err(|e| anyhow::anyhow!("binding {}: {e}", path.display()))?;
        restrict_socket(path)?;
        eprintln!("cuzk-daemon listening on unix:{}", path.display());
        let server = Server::builder()
            .add_service(health_service)
            .add_service(proving())
            .serve_with_incoming_shutdown(UnixListenerStream::new(listener), stopped(stop_rx));
        Some(tokio::spawn(server))
    } else {
        None
    };

    shutdown_signal().await;
    tracing::info!("shutting down: admission stopped, waiting up to {grace:?} for running jobs");
    engine.shutdown();
    wait_for_running(&engine, grace).await;
    let _ = stop_tx.send(true);
    tcp.await??;
    if let Some(u) = unix {
        u.await??;
    }
    if let Some(path) = &config.unix_socket {
        let _ = std::fs::remove_file(path);
    }
    tracing::info!("stopped");
    Ok(())
}

/// Only the owner may talk to the daemon through its socket.
fn restrict_socket(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

async fn wait_for_running(engine: &Engine, grace: Duration) {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        let running: u32 = engine.status().queues.iter().map(|q| q.in_progress).sum();
        if running == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::warn!("grace period over with jobs still running");
}

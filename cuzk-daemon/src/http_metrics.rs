//! `GET /metrics` over plain HTTP/1.1 for Prometheus scrapers, which do not speak gRPC. It
//! renders the same registry as the GetMetrics RPC (cuzk-core's `Metrics`). Off unless
//! `metrics_listen` is set.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use cuzk_core::Engine;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// prometheus-client writes the OpenMetrics text format (it ends in `# EOF`).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serve until `stop` turns true. Each connection is its own task; a client that sends
/// its request headers too slowly is dropped rather than holding a socket forever.
pub async fn serve(listener: TcpListener, engine: Engine, mut stop: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.wait_for(|s| *s) => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("metrics listener: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let engine = engine.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| respond(req, engine.clone()));
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("metrics connection: {e}");
            }
        });
    }
}

async fn respond(
    req: Request<Incoming>,
    engine: Engine,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let text = |status: StatusCode, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != "/metrics" {
        return Ok(text(
            StatusCode::NOT_FOUND,
            "cuzk-daemon: metrics are at /metrics\n",
        ));
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(r);
    }
    // Rendering reads device state (a driver call on CUDA): off the async threads.
    let body = match tokio::task::spawn_blocking(move || engine.metrics_text()).await {
        Ok(body) => body,
        Err(e) => {
            tracing::error!("rendering metrics: {e}");
            return Ok(text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "rendering metrics failed\n",
            ));
        }
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS));
    Ok(r)
}

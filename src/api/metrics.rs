//! The metrics listener (`--metrics-listen`): `GET /metrics` in the OpenMetrics text format Prometheus scrapes,
//! on an address of its own so the figures are not public unless an operator asks for it. Each scrape copies the
//! current tips, lag, WebSocket counts and store figures (read off the async workers) into the daemon's
//! [`Metrics`](crate::metrics::Metrics) and encodes them. Few connections, bounded in header time; closed at once
//! on shutdown.

use super::body::{json_response, Body};
use super::AppState;
use crate::metrics::{Scrape, CONTENT_TYPE};
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE as CONTENT_TYPE_HEADER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Most connections to the metrics listener at once (a Prometheus or two and a curl).
const METRICS_CONNECTIONS: usize = 16;

/// Time a client of the metrics listener has to send its request head, also between keep-alive requests.
const METRICS_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `/metrics` on `listener` until `cancel` fires.
pub async fn serve_metrics(listener: TcpListener, state: AppState, cancel: CancellationToken) {
    let slots = Arc::new(tokio::sync::Semaphore::new(METRICS_CONNECTIONS));
    let tracker = TaskTracker::new();
    loop {
        let permit = tokio::select! {
            _ = cancel.cancelled() => break,
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let stream = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (state, cancel) = (state.clone(), cancel.clone());
        tracker.spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(answer(&req, &state).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(METRICS_HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                _ = cancel.cancelled() => {}
            }
            drop(permit);
        });
    }
    tracker.close();
    tracker.wait().await;
}

async fn answer(req: &Request<Incoming>, state: &AppState) -> Response<Body> {
    if req.uri().path() != "/metrics" {
        return json_response(StatusCode::NOT_FOUND, &serde_json::json!({"message": "Not found: try /metrics"}));
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut response =
            json_response(StatusCode::METHOD_NOT_ALLOWED, &serde_json::json!({"message": "Method not allowed"}));
        response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let text = state.status.metrics().encode(&scrape(state).await);
    let mut response = Response::new(Body::new(Bytes::from(text)));
    response.headers_mut().insert(CONTENT_TYPE_HEADER, HeaderValue::from_static(CONTENT_TYPE));
    response
}

/// The scrape-time values: the follower's state, the WebSocket hub's counts and the store's figures.
async fn scrape(state: &AppState) -> Scrape {
    let status = state.status.snapshot();
    let (ws_connections, ws_subscriptions) = state.ws.hub.counts();
    let store = state.store.clone();
    let figures = match tokio::task::spawn_blocking(move || store.disk_figures()).await {
        Ok(Ok(figures)) => Some(figures),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "store figures unavailable for this scrape");
            None
        }
        Err(e) => {
            tracing::debug!(error = %e, "store figures task failed");
            None
        }
    };
    Scrape {
        indexed_tip: status.indexed,
        node_tip: status.node_head,
        lag_blocks: status.lag(),
        node_up: status.node_reachable,
        trace_lag_blocks: status.trace_lag(),
        paused_writers: status.paused.len(),
        rpc_in_flight: state.rpc.in_flight(),
        ws_connections,
        ws_subscriptions,
        store: figures,
    }
}

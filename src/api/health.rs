//! `GET /health`: is the daemon following its node, and how far behind is it.

use super::body::{json_response, Body};
use super::AppState;
use hyper::{Response, StatusCode};
use serde_json::json;

/// 200 while the node answers (catching up included), 503 while it does not; the body tells the tips and lag, and
/// with `--tracing` how far the trace pass is (`tracing`: `null` off, `false` when the node cannot trace).
pub fn health(state: &AppState) -> Response<Body> {
    let status = state.status.snapshot();
    let code = if status.node_reachable { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    json_response(
        code,
        &json!({
            "status": if status.node_reachable { "ok" } else { "node_unreachable" },
            "indexed_tip": status.indexed,
            "node_tip": status.node_head,
            "lag": status.lag(),
            "node_reachable": status.node_reachable,
            "node_error": status.node_error,
            "tracing": status.tracing,
            "traced_tip": status.traced,
            "trace_lag": status.trace_lag(),
        }),
    )
}

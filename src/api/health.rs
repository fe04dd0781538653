//! `GET /health`: is the daemon following its node, and how far behind is it.

use super::body::{json_response, Body};
use super::AppState;
use hyper::{Response, StatusCode};
use serde_json::json;

/// 200 while the node answers (catching up included), 503 while it does not; the body tells the tips and lag, and
/// with `--tracing` how far the trace pass is (`tracing`: `null` off, `false` when the node cannot trace).
/// While the store refuses writes (disk full) the status is `indexer_paused` with the error, still 200: the API
/// keeps serving what is indexed, so a load balancer should keep routing to it.
pub fn health(state: &AppState) -> Response<Body> {
    let status = state.status.snapshot();
    let code = if status.node_reachable { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let paused = !status.paused.is_empty();
    let summary = match (status.node_reachable, paused) {
        (false, _) => "node_unreachable",
        (true, true) => "indexer_paused",
        (true, false) => "ok",
    };
    let paused_writers: Vec<_> = status
        .paused
        .iter()
        .map(
            |p| json!({"writer": p.writer.name(), "error": p.error, "since": p.since_unix_s(), "failures": p.failures}),
        )
        .collect();
    json_response(
        code,
        &json!({
            "status": summary,
            "indexed_tip": status.indexed,
            "node_tip": status.node_head,
            "lag": status.lag(),
            "node_reachable": status.node_reachable,
            "node_error": status.node_error,
            "tracing": status.tracing,
            "traced_tip": status.traced,
            "trace_lag": status.trace_lag(),
            "indexer_paused": paused,
            "indexer_error": status.paused.first().map(|p| &p.error),
            "paused_writers": paused_writers,
        }),
    )
}

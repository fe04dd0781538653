//! `GET /health`: is the daemon following its node, is the node answering and producing blocks, and how far behind
//! is the index.

use super::body::{json_response, Body};
use super::AppState;
use hyper::{Response, StatusCode};
use serde_json::json;
use std::time::{Duration, Instant};

/// When the node counts as unresponsive or stalled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthConfig {
    /// The node has not answered the follower for this long: `node_unresponsive`.
    pub unresponsive_after: Duration,
    /// The node's head has not moved for this long: `node_stalled` (`None`: never, for chains that may idle).
    pub stalled_after: Option<Duration>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig { unresponsive_after: Duration::from_secs(15), stalled_after: None }
    }
}

fn millis(duration: Option<Duration>) -> Option<u64> {
    duration.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// 200 `ok` while the node answers (catching up included); 503 with `node_unreachable` when the last node request
/// failed, `node_unresponsive` when the node has not answered for `unresponsive_after`, `node_stalled` when its head
/// has not moved for `stalled_after`. While the store refuses writes (disk full) the status is `indexer_paused`
/// with the error, still 200: the API keeps serving what is indexed, so a load balancer should keep routing to it.
/// The body tells the tips and lag, how long ago the node answered and its head moved, the paused writers, and
/// with `--tracing` how far the trace pass is (`tracing`: `null` off, `false` when the node cannot trace).
pub fn health(state: &AppState) -> Response<Body> {
    let status = state.status.snapshot();
    let config = &state.config.health;
    let now = Instant::now();
    let since_answer = status.node_answered_at.map(|t| now.saturating_duration_since(t));
    let since_new_head = status.head_seen_at.map(|t| now.saturating_duration_since(t));
    let paused = !status.paused.is_empty();
    let (verdict, code) = if !status.node_reachable {
        ("node_unreachable", StatusCode::SERVICE_UNAVAILABLE)
    } else if since_answer.is_some_and(|d| d > config.unresponsive_after) {
        ("node_unresponsive", StatusCode::SERVICE_UNAVAILABLE)
    } else if config.stalled_after.is_some_and(|limit| since_new_head.is_some_and(|d| d > limit)) {
        ("node_stalled", StatusCode::SERVICE_UNAVAILABLE)
    } else if paused {
        ("indexer_paused", StatusCode::OK)
    } else {
        ("ok", StatusCode::OK)
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
            "status": verdict,
            "indexed_tip": status.indexed,
            "node_tip": status.node_head,
            "lag": status.lag(),
            "node_reachable": status.node_reachable,
            "node_error": status.node_error,
            "ms_since_node_answer": millis(since_answer),
            "ms_since_new_head": millis(since_new_head),
            "tracing": status.tracing,
            "traced_tip": status.traced,
            "trace_lag": status.trace_lag(),
            "indexer_paused": paused,
            "indexer_error": status.paused.first().map(|p| &p.error),
            "paused_writers": paused_writers,
        }),
    )
}

//! `GET /health` (liveness: the process serves; the body tells whether the daemon follows its node, whether the
//! node answers and produces blocks, and how far behind the index is) and `GET /health/ready` (readiness: 200 only
//! while the node is reachable and the index within `--ready-max-lag-blocks` of it, else 503 with the reason).

use super::body::{json_response, Body};
use super::AppState;
use crate::status::StatusSnapshot;
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
    /// `/health/ready` answers 503 `lagging` while the index is more than this many blocks behind the node.
    pub ready_max_lag_blocks: u64,
}

/// Default of [`HealthConfig::ready_max_lag_blocks`] (and `--ready-max-lag-blocks`).
pub const DEFAULT_READY_MAX_LAG_BLOCKS: u64 = 10;

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            unresponsive_after: Duration::from_secs(15),
            stalled_after: None,
            ready_max_lag_blocks: DEFAULT_READY_MAX_LAG_BLOCKS,
        }
    }
}

/// What is wrong with the node, if anything: `node_unreachable` when the last request failed, `node_unresponsive`
/// when it has not answered for `unresponsive_after`, `node_stalled` when its head has not moved for
/// `stalled_after`.
fn node_problem(status: &StatusSnapshot, config: &HealthConfig, now: Instant) -> Option<&'static str> {
    let since_answer = status.node_answered_at.map(|t| now.saturating_duration_since(t));
    let since_new_head = status.head_seen_at.map(|t| now.saturating_duration_since(t));
    if !status.node_reachable {
        Some("node_unreachable")
    } else if since_answer.is_some_and(|d| d > config.unresponsive_after) {
        Some("node_unresponsive")
    } else if config.stalled_after.is_some_and(|limit| since_new_head.is_some_and(|d| d > limit)) {
        Some("node_stalled")
    } else {
        None
    }
}

/// Whether the node's head as last seen is current: the node answered the last request, within
/// `unresponsive_after` (a head the follower cannot refresh says nothing of how far behind the index is).
pub fn head_is_current(status: &StatusSnapshot, config: &HealthConfig, now: Instant) -> bool {
    !matches!(node_problem(status, config, now), Some("node_unreachable" | "node_unresponsive"))
}

/// Why the daemon should not get traffic, or `None` when it is ready: `starting` before the node's head is known
/// (and no node error seen), a [`node_problem`], `lagging` while the index is more than `ready_max_lag_blocks` behind.
pub fn unready_reason(status: &StatusSnapshot, config: &HealthConfig, now: Instant) -> Option<&'static str> {
    if status.node_head.is_none() && status.node_error.is_none() {
        return Some("starting");
    }
    node_problem(status, config, now).or_else(|| (status.lag() > config.ready_max_lag_blocks).then_some("lagging"))
}

fn millis(duration: Option<Duration>) -> Option<u64> {
    duration.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Liveness: always 200 while the process serves (a load balancer or supervisor must not restart it because the
/// node is down). The body's `status`: `ok`; `node_unreachable`, `node_unresponsive` or `node_stalled` (see
/// [`node_problem`]); `indexer_paused` while the store refuses writes (disk full). It tells the tips and lag, how
/// long ago the node answered and its head moved, the paused writers, and with `--tracing` how far the trace pass
/// is (`tracing`: `null` off, `false` when the node cannot trace), and whether this is a read replica
/// (`read_replica`; its `indexed_tip` is the primary's tip as of its last catch-up). Readiness is [`ready`].
pub fn health(state: &AppState) -> Response<Body> {
    let status = state.status.snapshot();
    let config = &state.config.health;
    let now = Instant::now();
    let since_answer = status.node_answered_at.map(|t| now.saturating_duration_since(t));
    let since_new_head = status.head_seen_at.map(|t| now.saturating_duration_since(t));
    let paused = !status.paused.is_empty();
    let verdict = match node_problem(&status, config, now) {
        Some(problem) => problem,
        None if paused => "indexer_paused",
        None => "ok",
    };
    let paused_writers: Vec<_> = status
        .paused
        .iter()
        .map(
            |p| json!({"writer": p.writer.name(), "error": p.error, "since": p.since_unix_s(), "failures": p.failures}),
        )
        .collect();
    json_response(
        StatusCode::OK,
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
            "balanced_tip": status.balanced,
            "balance_lag": status.balance_lag(),
            "indexer_paused": paused,
            "indexer_error": status.paused.first().map(|p| &p.error),
            "paused_writers": paused_writers,
            "read_replica": state.config.read_replica,
        }),
    )
}

/// Readiness: 200 `{"ready": true, ...}` while [`unready_reason`] finds nothing, else 503 with `"ready": false`,
/// the `reason` and a `message`; both with the tips, the lag and the threshold.
pub fn ready(state: &AppState) -> Response<Body> {
    let status = state.status.snapshot();
    let config = &state.config.health;
    let reason = unready_reason(&status, config, Instant::now());
    let message = reason.map(|reason| match reason {
        "starting" => "the node's head is not known yet".to_owned(),
        "lagging" => {
            format!("the index is {} blocks behind the node (most {})", status.lag(), config.ready_max_lag_blocks)
        }
        "node_unreachable" => {
            format!("the node is unreachable: {}", status.node_error.as_deref().unwrap_or("no answer"))
        }
        "node_unresponsive" => "the node has not answered for too long".to_owned(),
        _ => "the node's head has not moved for too long".to_owned(),
    });
    let code = if reason.is_some() { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    json_response(
        code,
        &json!({
            "ready": reason.is_none(),
            "reason": reason,
            "message": message,
            "indexed_tip": status.indexed,
            "node_tip": status.node_head,
            "lag": status.lag(),
            "max_lag": config.ready_max_lag_blocks,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synced(now: Instant) -> StatusSnapshot {
        StatusSnapshot {
            node_head: Some(100),
            node_reachable: true,
            indexed: Some(100),
            node_answered_at: Some(now),
            head_seen_at: Some(now),
            ..StatusSnapshot::default()
        }
    }

    #[test]
    fn readiness_needs_a_reachable_node_and_a_small_lag() {
        let now = Instant::now();
        let config = HealthConfig { ready_max_lag_blocks: 5, ..HealthConfig::default() };
        assert_eq!(unready_reason(&synced(now), &config, now), None);
        let within = StatusSnapshot { indexed: Some(95), ..synced(now) };
        assert_eq!(unready_reason(&within, &config, now), None);
        let behind = StatusSnapshot { indexed: Some(94), ..synced(now) };
        assert_eq!(unready_reason(&behind, &config, now), Some("lagging"));
        let empty = StatusSnapshot { indexed: None, ..synced(now) };
        assert_eq!(unready_reason(&empty, &config, now), Some("lagging"));
        let down = StatusSnapshot { node_reachable: false, node_error: Some("refused".into()), ..synced(now) };
        assert_eq!(unready_reason(&down, &config, now), Some("node_unreachable"));
        let silent = synced(now - Duration::from_secs(60));
        assert_eq!(unready_reason(&silent, &config, now), Some("node_unresponsive"));
        let stalled = StatusSnapshot { head_seen_at: Some(now - Duration::from_secs(60)), ..synced(now) };
        let strict = HealthConfig { stalled_after: Some(Duration::from_secs(30)), ..config.clone() };
        assert_eq!(unready_reason(&stalled, &config, now), None);
        assert_eq!(unready_reason(&stalled, &strict, now), Some("node_stalled"));
        assert_eq!(unready_reason(&StatusSnapshot::default(), &config, now), Some("starting"));
        let starting = StatusSnapshot { node_head: None, ..synced(now) };
        assert_eq!(unready_reason(&starting, &config, now), Some("starting"));
    }

    #[test]
    fn a_head_is_current_while_the_node_answers() {
        let now = Instant::now();
        let config = HealthConfig::default();
        assert!(head_is_current(&synced(now), &config, now));
        let down = StatusSnapshot { node_reachable: false, ..synced(now) };
        assert!(!head_is_current(&down, &config, now));
        assert!(!head_is_current(&synced(now - Duration::from_secs(60)), &config, now));
        // A head that does not move is still the node's head.
        let stalled = StatusSnapshot { head_seen_at: Some(now - Duration::from_secs(60)), ..synced(now) };
        let strict = HealthConfig { stalled_after: Some(Duration::from_secs(30)), ..config };
        assert!(head_is_current(&stalled, &strict, now));
    }
}

//! `Status`: what the follower knows right now (node head, reachability, when the node last answered and when its
//! head last moved, indexed tip), shared with the API for `/health` and the indexing-status endpoint.

use std::sync::Mutex;
use std::time::Instant;

/// A copy of the follower's state at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusSnapshot {
    /// The node's latest head, once seen.
    pub node_head: Option<u64>,
    /// Whether the last node request succeeded.
    pub node_reachable: bool,
    /// The last node error, while the node is unreachable.
    pub node_error: Option<String>,
    /// Highest indexed block.
    pub indexed: Option<u64>,
    /// Whether call traces are indexed: `None` when not asked for (`--tracing` off), `Some(false)` when the node
    /// cannot trace.
    pub tracing: Option<bool>,
    /// Highest block whose traces are indexed.
    pub traced: Option<u64>,
    /// When the node last answered a request of the follower.
    pub node_answered_at: Option<Instant>,
    /// When the node's head was first seen at its current number.
    pub head_seen_at: Option<Instant>,
}

impl StatusSnapshot {
    /// Blocks the index is behind the node (0 when unknown).
    pub fn lag(&self) -> u64 {
        match (self.node_head, self.indexed) {
            (Some(head), Some(indexed)) => head.saturating_sub(indexed),
            (Some(head), None) => head + 1,
            _ => 0,
        }
    }

    /// Share of indexed blocks whose traces are indexed (`None` when traces are not indexed).
    pub fn trace_ratio(&self) -> Option<f64> {
        let lag = self.trace_lag()?;
        Some(match self.indexed {
            Some(indexed) => (indexed + 1).saturating_sub(lag) as f64 / (indexed + 1) as f64,
            None => 1.0,
        })
    }

    /// Blocks the trace pass is behind the indexed tip (`None` when traces are not indexed).
    pub fn trace_lag(&self) -> Option<u64> {
        if self.tracing != Some(true) {
            return None;
        }
        Some(match (self.indexed, self.traced) {
            (Some(indexed), Some(traced)) => indexed.saturating_sub(traced),
            (Some(indexed), None) => indexed + 1,
            (None, _) => 0,
        })
    }
}

/// Shared, updated by the follower.
#[derive(Debug, Default)]
pub struct Status(Mutex<StatusSnapshot>);

impl Status {
    fn update(&self, f: impl FnOnce(&mut StatusSnapshot)) {
        let mut guard = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard);
    }

    /// The current state.
    pub fn snapshot(&self) -> StatusSnapshot {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub(crate) fn set_node_head(&self, head: u64) {
        self.update(|s| {
            if s.node_head != Some(head) {
                s.head_seen_at = Some(Instant::now());
            }
            s.node_head = Some(head);
        });
    }

    pub(crate) fn set_node_ok(&self) {
        self.update(|s| {
            s.node_answered_at = Some(Instant::now());
            s.node_reachable = true;
            s.node_error = None;
        });
    }

    pub(crate) fn set_node_error(&self, error: String) {
        self.update(|s| {
            s.node_reachable = false;
            s.node_error = Some(error);
        });
    }

    pub(crate) fn set_indexed(&self, tip: Option<u64>) {
        self.update(|s| s.indexed = tip);
    }

    pub(crate) fn set_tracing(&self, supported: bool) {
        self.update(|s| s.tracing = Some(supported));
    }

    pub(crate) fn set_traced(&self, tip: Option<u64>) {
        self.update(|s| s.traced = tip);
    }
}

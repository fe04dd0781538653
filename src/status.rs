//! `Status`: what the follower knows right now (node head, reachability, when the node last answered and when its
//! head last moved, indexed tip), shared with the API for `/health`, `/health/ready`, the indexing-status endpoint
//! and the metrics.

use crate::metrics::Metrics;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A task that writes to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Writer {
    /// The block follower (blocks, reorgs, the chain identity).
    Follower,
    /// The trace pass (`--tracing`).
    Traces,
    /// The pending-pool follower.
    Pending,
    /// The token metadata fetcher.
    TokenMetadata,
    /// The contract code writer.
    ContractCode,
    /// The balance writer (`--coin-balances`).
    Balances,
}

impl Writer {
    /// The name `/health` and the logs use.
    pub fn name(self) -> &'static str {
        match self {
            Writer::Follower => "follower",
            Writer::Traces => "traces",
            Writer::Pending => "pending",
            Writer::TokenMetadata => "token_metadata",
            Writer::ContractCode => "contract_code",
            Writer::Balances => "balances",
        }
    }
}

/// A writer that cannot write to the store right now (disk full, I/O error) and retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterPause {
    /// Who paused.
    pub writer: Writer,
    /// The latest write error.
    pub error: String,
    /// When the first failed write of this pause happened.
    pub since: SystemTime,
    /// Failed writes during this pause (the first one and the retries).
    pub failures: u64,
}

impl WriterPause {
    /// `since` in seconds after the Unix epoch.
    pub fn since_unix_s(&self) -> u64 {
        self.since.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
    }
}

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
    /// Whether native balances are indexed (`--coin-balances`).
    pub coin_balances: bool,
    /// Highest block up to which the balance writer asked for every block's native balances.
    pub balanced: Option<u64>,
    /// When the node last answered a request of the follower.
    pub node_answered_at: Option<Instant>,
    /// When the node's head was first seen at its current number.
    pub head_seen_at: Option<Instant>,
    /// Writers paused because the store refuses writes, in the order they paused (empty while all can write).
    pub paused: Vec<WriterPause>,
    /// How the follower's last sync of a range spent its time.
    pub last_sync: Option<crate::indexer::SyncReport>,
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

    /// Blocks the balance writer is behind the indexed tip (`None` when native balances are not indexed).
    pub fn balance_lag(&self) -> Option<u64> {
        if !self.coin_balances {
            return None;
        }
        Some(match (self.indexed, self.balanced) {
            (Some(indexed), Some(balanced)) => indexed.saturating_sub(balanced),
            (Some(indexed), None) => indexed + 1,
            (None, _) => 0,
        })
    }
}

/// Shared, updated by the follower; also carries the daemon's [`Metrics`], which every task reporting here counts
/// into.
#[derive(Debug, Default)]
pub struct Status {
    state: Mutex<StatusSnapshot>,
    metrics: Arc<Metrics>,
}

impl Status {
    /// A status counting into `metrics`.
    pub fn with_metrics(metrics: Arc<Metrics>) -> Status {
        Status { state: Mutex::default(), metrics }
    }

    /// The daemon's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    fn update(&self, f: impl FnOnce(&mut StatusSnapshot)) {
        let mut guard = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard);
    }

    /// The current state.
    pub fn snapshot(&self) -> StatusSnapshot {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub(crate) fn set_node_head(&self, head: u64) {
        self.update(|s| {
            if s.node_head != Some(head) {
                s.head_seen_at = Some(Instant::now());
            }
            s.node_head = Some(head);
        });
    }

    pub(crate) fn set_last_sync(&self, report: crate::indexer::SyncReport) {
        self.update(|s| s.last_sync = Some(report));
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

    pub(crate) fn set_coin_balances(&self, on: bool) {
        self.update(|s| s.coin_balances = on);
    }

    pub(crate) fn set_balanced(&self, tip: Option<u64>) {
        self.update(|s| s.balanced = tip);
    }

    /// Records a failed write of `writer`; returns whether this starts a pause (it was not paused).
    pub(crate) fn set_writer_paused(&self, writer: Writer, error: String) -> bool {
        let mut started = false;
        self.update(|s| match s.paused.iter_mut().find(|p| p.writer == writer) {
            Some(pause) => {
                pause.error = error;
                pause.failures += 1;
            }
            None => {
                started = true;
                s.paused.push(WriterPause { writer, error, since: SystemTime::now(), failures: 1 });
            }
        });
        started
    }

    /// Records a successful write of `writer`; returns how long it was paused, if it was.
    pub(crate) fn set_writer_resumed(&self, writer: Writer) -> Option<Duration> {
        let mut ended = None;
        self.update(|s| {
            if let Some(i) = s.paused.iter().position(|p| p.writer == writer) {
                let pause = s.paused.remove(i);
                ended = Some(pause.since.elapsed().unwrap_or_default());
            }
        });
        ended
    }
}

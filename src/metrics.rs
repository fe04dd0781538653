//! Prometheus metrics of one daemon: the only module that imports `prometheus-client`.
//!
//! Every daemon owns one [`Metrics`] (tests run many daemons in one process, so nothing is global). Counters and
//! histograms are updated where things happen (the follower, the node client, the HTTP server) with atomics;
//! values that already live elsewhere (tips, lag, WebSocket connections, RocksDB figures) are copied in by
//! [`Metrics::encode`] at scrape time from a [`Scrape`]. Label values come from finite sets only: route templates,
//! the node methods of [`NODE_METHODS`], HTTP status codes.

use crate::store::DiskFigures;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// The `Content-Type` of [`Metrics::encode`]'s output (OpenMetrics text, which Prometheus scrapes natively).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Node JSON-RPC methods labelled by name; any other is counted as `other`.
pub const NODE_METHODS: &[&str] = &[
    "eth_chainId",
    "eth_getBlockByNumber",
    "eth_getBlockReceipts",
    "eth_getBalance",
    "eth_getCode",
    "eth_call",
    "txpool_content",
    "debug_traceBlockByNumber",
    "debug_traceTransaction",
];

/// The label of node method `method`: itself when in [`NODE_METHODS`], else `other`.
pub fn node_method_label(method: &str) -> &'static str {
    NODE_METHODS.iter().find(|m| **m == method).copied().unwrap_or("other")
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    code: u16,
}

fn latency_histogram() -> Histogram {
    // 1 ms to ~16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// What a scrape reads from the rest of the daemon.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    /// Highest indexed block.
    pub indexed_tip: Option<u64>,
    /// The node's latest head.
    pub node_tip: Option<u64>,
    /// Blocks the index is behind the node.
    pub lag_blocks: u64,
    /// Whether the node answers.
    pub node_up: bool,
    /// Blocks the trace pass is behind the index (`None` without `--tracing`).
    pub trace_lag_blocks: Option<u64>,
    /// Writers paused because the store refuses writes.
    pub paused_writers: usize,
    /// Passthrough requests waiting for the node's answer.
    pub rpc_in_flight: usize,
    /// WebSocket connections open.
    pub ws_connections: usize,
    /// Topic subscriptions over all WebSocket connections.
    pub ws_subscriptions: usize,
    /// Store figures (`None` when they could not be read).
    pub store: Option<DiskFigures>,
}

/// Every metric of one daemon.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    indexed_tip: Gauge,
    node_tip: Gauge,
    lag_blocks: Gauge,
    lag_seconds: Gauge,
    node_up: Gauge,
    trace_lag_blocks: Gauge,
    paused_writers: Gauge,
    blocks_indexed: Counter,
    transactions_indexed: Counter,
    reorgs: Counter,
    reorg_depth: Histogram,
    node_request_duration: Family<MethodLabels, Histogram, fn() -> Histogram>,
    node_request_errors: Family<MethodLabels, Counter>,
    pending_pool: Gauge,
    http_requests: Family<RequestLabels, Counter>,
    http_request_duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
    rate_limited: Counter,
    open_connections: Gauge,
    connections_refused: Counter,
    rpc_in_flight: Gauge,
    ws_connections: Gauge,
    ws_subscriptions: Gauge,
    ws_dropped_slow: Counter,
    ws_idle_closed: Counter,
    ws_catch_up_blocks: Counter,
    ws_events_missed: Counter,
    store_disk_bytes: Gauge,
    rocksdb_sst_bytes: Gauge,
    rocksdb_memtable_bytes: Gauge,
    rocksdb_pending_compaction_bytes: Gauge,
    rocksdb_running_compactions: Gauge,
    rocksdb_running_flushes: Gauge,
    rocksdb_write_stopped: Gauge,
    rocksdb_delayed_write_rate: Gauge,
    rocksdb_block_cache_bytes: Gauge,
    rocksdb_block_cache_capacity_bytes: Gauge,
    row_cache_bytes: Gauge,
    row_cache_capacity_bytes: Gauge,
    /// Timestamp of the node's head block (Unix seconds; 0 unknown).
    node_head_time: AtomicU64,
    /// Timestamp of the indexed tip block (Unix seconds; 0 unknown).
    indexed_time: AtomicU64,
    /// Number of the block `indexed_time` belongs to (-1 unknown).
    indexed_time_of: AtomicI64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn gauge(registry: &mut Registry, name: &str, help: &str) -> Gauge {
    let gauge = Gauge::default();
    registry.register(name, help, gauge.clone());
    gauge
}

fn counter(registry: &mut Registry, name: &str, help: &str) -> Counter {
    let counter = Counter::default();
    registry.register(name, help, counter.clone());
    counter
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Metrics {
    /// Every metric at zero, registered under the `rockscout_` prefix.
    pub fn new() -> Metrics {
        let mut r = Registry::with_prefix("rockscout");
        let reorg_depth = Histogram::new(exponential_buckets(1.0, 2.0, 11));
        r.register("reorg_depth_blocks", "Blocks reverted by each reorg", reorg_depth.clone());
        let node_request_duration = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        r.register(
            "node_request_duration_seconds",
            "Latency of the follower's JSON-RPC requests to the node, by method",
            node_request_duration.clone(),
        );
        let node_request_errors: Family<MethodLabels, Counter> = Family::default();
        // Every error series exists from the start at 0, so `rate()` and alerts see a value before the first error.
        for method in NODE_METHODS.iter().copied().chain(["other"]) {
            let _ = node_request_errors.get_or_create(&MethodLabels { method });
        }
        r.register(
            "node_request_errors",
            "Failed JSON-RPC requests to the node (transport, timeout or JSON-RPC error; a reverted eth_call is an answer), by method",
            node_request_errors.clone(),
        );
        let http_requests = Family::default();
        r.register("http_requests", "HTTP requests answered, by route template and status code", http_requests.clone());
        let http_request_duration = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        r.register(
            "http_request_duration_seconds",
            "Time to produce an HTTP response, by route template",
            http_request_duration.clone(),
        );
        Metrics {
            indexed_tip: gauge(&mut r, "indexed_tip", "Highest indexed block number"),
            node_tip: gauge(&mut r, "node_tip", "The node's latest block number"),
            lag_blocks: gauge(&mut r, "lag_blocks", "Blocks the index is behind the node"),
            lag_seconds: gauge(
                &mut r,
                "lag_seconds",
                "Chain time the index is behind the node: head block timestamp minus indexed tip timestamp",
            ),
            node_up: gauge(&mut r, "node_up", "1 while the node answers the follower, else 0"),
            trace_lag_blocks: gauge(
                &mut r,
                "trace_lag_blocks",
                "Blocks the trace pass is behind the indexed tip (0 without --tracing)",
            ),
            paused_writers: gauge(&mut r, "paused_writers", "Writers paused because the store refuses writes"),
            blocks_indexed: counter(&mut r, "blocks_indexed", "Blocks committed to the index"),
            transactions_indexed: counter(&mut r, "transactions_indexed", "Transactions committed to the index"),
            reorgs: counter(&mut r, "reorgs", "Reorgs resolved (each reverting one or more blocks)"),
            reorg_depth,
            node_request_duration,
            node_request_errors,
            pending_pool: gauge(&mut r, "pending_pool_transactions", "Transactions in the node's pool, last seen"),
            http_requests,
            http_request_duration,
            rate_limited: counter(&mut r, "http_rate_limited", "Requests refused with 429 by the per-client limiter"),
            open_connections: gauge(&mut r, "http_open_connections", "HTTP connections open on the API listener"),
            connections_refused: counter(
                &mut r,
                "http_connections_refused",
                "HTTP connections closed at once because their client IP held its most connections",
            ),
            rpc_in_flight: gauge(
                &mut r,
                "rpc_passthrough_in_flight",
                "Passthrough requests (/api/eth) waiting for the node's answer",
            ),
            ws_connections: gauge(&mut r, "ws_connections", "WebSocket connections open"),
            ws_subscriptions: gauge(&mut r, "ws_subscriptions", "Topic subscriptions over all WebSocket connections"),
            ws_dropped_slow: counter(
                &mut r,
                "ws_dropped_slow_consumers",
                "WebSocket connections closed because they fell behind the broadcasts",
            ),
            ws_idle_closed: counter(
                &mut r,
                "ws_idle_closed",
                "WebSocket connections closed because the client sent nothing (no heartbeat) for the idle timeout",
            ),
            ws_catch_up_blocks: counter(
                &mut r,
                "ws_catch_up_blocks",
                "Blocks indexed too far behind the node's head to be broadcast one by one (catch-up)",
            ),
            ws_events_missed: counter(
                &mut r,
                "ws_events_missed",
                "Chain events the WebSocket publisher missed because it fell behind the indexer's event stream",
            ),
            store_disk_bytes: gauge(&mut r, "store_disk_bytes", "Bytes of every file in the data directory"),
            rocksdb_sst_bytes: gauge(&mut r, "rocksdb_sst_bytes", "Bytes of live SST files"),
            rocksdb_memtable_bytes: gauge(&mut r, "rocksdb_memtable_bytes", "Bytes of memtables"),
            rocksdb_pending_compaction_bytes: gauge(
                &mut r,
                "rocksdb_pending_compaction_bytes",
                "Bytes compaction still has to rewrite (RocksDB's estimate); writes stall when it grows too large",
            ),
            rocksdb_running_compactions: gauge(&mut r, "rocksdb_running_compactions", "Compactions running"),
            rocksdb_running_flushes: gauge(&mut r, "rocksdb_running_flushes", "Memtable flushes running"),
            rocksdb_write_stopped: gauge(&mut r, "rocksdb_write_stopped", "1 while RocksDB stops writes (stall)"),
            rocksdb_delayed_write_rate: gauge(
                &mut r,
                "rocksdb_delayed_write_rate_bytes",
                "Bytes per second RocksDB slows writes to while it delays them (0: not delayed)",
            ),
            rocksdb_block_cache_bytes: gauge(&mut r, "rocksdb_block_cache_bytes", "Bytes the block cache holds"),
            rocksdb_block_cache_capacity_bytes: gauge(
                &mut r,
                "rocksdb_block_cache_capacity_bytes",
                "Size of the block cache (--cache-mb)",
            ),
            row_cache_bytes: gauge(&mut r, "row_cache_bytes", "Bytes the rows in the row cache weigh"),
            row_cache_capacity_bytes: gauge(
                &mut r,
                "row_cache_capacity_bytes",
                "Size of the row cache (--row-cache-mb)",
            ),
            node_head_time: AtomicU64::new(0),
            indexed_time: AtomicU64::new(0),
            indexed_time_of: AtomicI64::new(-1),
            registry: r,
        }
    }

    /// One request of the follower to the node finished after `elapsed`.
    pub fn node_request(&self, method: &str, elapsed: Duration, ok: bool) {
        let labels = MethodLabels { method: node_method_label(method) };
        self.node_request_duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
        if !ok {
            self.node_request_errors.get_or_create(&labels).inc();
        }
    }

    /// The node's head is block `number` with timestamp `time` (Unix seconds).
    pub fn node_head(&self, time: u64) {
        self.node_head_time.store(time, Ordering::Relaxed);
    }

    /// Blocks were committed: `blocks` of them with `transactions` transactions, the last one `tip` with
    /// timestamp `time`.
    pub fn indexed(&self, blocks: u64, transactions: u64, tip: u64, time: u64) {
        self.blocks_indexed.inc_by(blocks);
        self.transactions_indexed.inc_by(transactions);
        self.indexed_time.store(time, Ordering::Relaxed);
        self.indexed_time_of.store(to_i64(tip), Ordering::Relaxed);
    }

    /// A reorg reverted `depth` blocks.
    pub fn reorg(&self, depth: u64) {
        self.reorgs.inc();
        self.reorg_depth.observe(depth as f64);
    }

    /// The node's pool holds `size` transactions.
    pub fn pending_pool(&self, size: usize) {
        self.pending_pool.set(to_i64(size as u64));
    }

    /// An HTTP request for `route` (a template) was answered with `code` after `elapsed`.
    pub fn http_request(&self, route: &'static str, code: u16, elapsed: Duration) {
        self.http_requests.get_or_create(&RequestLabels { route, code }).inc();
        self.http_request_duration.get_or_create(&RouteLabels { route }).observe(elapsed.as_secs_f64());
    }

    /// A request was refused by the rate limiter.
    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    /// An HTTP connection opened (`true`) or closed (`false`).
    pub fn connection(&self, opened: bool) {
        if opened {
            self.open_connections.inc();
        } else {
            self.open_connections.dec();
        }
    }

    /// A connection was closed at once: its client held its most connections.
    pub fn connection_refused(&self) {
        self.connections_refused.inc();
    }

    /// A WebSocket connection was closed for falling behind.
    pub fn ws_dropped_slow(&self) {
        self.ws_dropped_slow.inc();
    }

    /// A WebSocket connection was closed for sending nothing for the idle timeout.
    pub fn ws_idle_closed(&self) {
        self.ws_idle_closed.inc();
    }

    /// A block was indexed too far behind the head to be broadcast.
    pub fn ws_catch_up_block(&self) {
        self.ws_catch_up_blocks.inc();
    }

    /// The WebSocket publisher missed `count` chain events.
    pub fn ws_events_missed(&self, count: u64) {
        self.ws_events_missed.inc_by(count);
    }

    /// The metrics in the OpenMetrics text format, with the scrape-time values of `scrape`.
    pub fn encode(&self, scrape: &Scrape) -> String {
        let set = |gauge: &Gauge, value: u64| {
            gauge.set(to_i64(value));
        };
        set(&self.indexed_tip, scrape.indexed_tip.unwrap_or_default());
        set(&self.node_tip, scrape.node_tip.unwrap_or_default());
        set(&self.lag_blocks, scrape.lag_blocks);
        set(&self.node_up, u64::from(scrape.node_up));
        set(&self.trace_lag_blocks, scrape.trace_lag_blocks.unwrap_or_default());
        set(&self.paused_writers, scrape.paused_writers as u64);
        set(&self.rpc_in_flight, scrape.rpc_in_flight as u64);
        set(&self.ws_connections, scrape.ws_connections as u64);
        set(&self.ws_subscriptions, scrape.ws_subscriptions as u64);
        set(&self.lag_seconds, self.lag_seconds(scrape));
        if let Some(store) = &scrape.store {
            set(&self.store_disk_bytes, store.disk_bytes);
            set(&self.rocksdb_sst_bytes, store.sst_bytes);
            set(&self.rocksdb_memtable_bytes, store.memtable_bytes);
            set(&self.rocksdb_pending_compaction_bytes, store.pending_compaction_bytes);
            set(&self.rocksdb_running_compactions, store.running_compactions);
            set(&self.rocksdb_running_flushes, store.running_flushes);
            set(&self.rocksdb_write_stopped, u64::from(store.write_stopped));
            set(&self.rocksdb_delayed_write_rate, store.delayed_write_rate);
            set(&self.rocksdb_block_cache_bytes, store.block_cache_bytes);
            set(&self.rocksdb_block_cache_capacity_bytes, store.block_cache_capacity);
            set(&self.row_cache_bytes, store.row_cache_bytes);
            set(&self.row_cache_capacity_bytes, store.row_cache_capacity);
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// 0 when the index is at the node's tip; else the head's timestamp minus the indexed tip's (as far as known).
    fn lag_seconds(&self, scrape: &Scrape) -> u64 {
        if scrape.lag_blocks == 0 {
            return 0;
        }
        let head = self.node_head_time.load(Ordering::Relaxed);
        let indexed_of = self.indexed_time_of.load(Ordering::Relaxed);
        let indexed = self.indexed_time.load(Ordering::Relaxed);
        let current = scrape.indexed_tip.is_some_and(|tip| to_i64(tip) == indexed_of);
        if head == 0 || !current {
            return 0;
        }
        head.saturating_sub(indexed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_node_methods_share_one_label() {
        assert_eq!(node_method_label("eth_getBlockByNumber"), "eth_getBlockByNumber");
        assert_eq!(node_method_label("eth_getBlockByNumberX"), "other");
        assert_eq!(node_method_label("personal_sign"), "other");
    }

    #[test]
    fn encoding_names_every_family_with_the_prefix() {
        let metrics = Metrics::new();
        metrics.http_request("/api/v2/blocks/:number_or_hash", 200, Duration::from_millis(3));
        metrics.node_request("made_up_method", Duration::from_millis(1), false);
        metrics.indexed(3, 7, 2, 1_000);
        let scrape = Scrape { indexed_tip: Some(2), node_tip: Some(5), lag_blocks: 3, ..Scrape::default() };
        metrics.node_head(1_030);
        let text = metrics.encode(&scrape);
        assert!(text.contains("rockscout_blocks_indexed_total 3"), "{text}");
        assert!(text.contains("rockscout_transactions_indexed_total 7"), "{text}");
        assert!(text.contains("rockscout_lag_blocks 3"), "{text}");
        assert!(text.contains("rockscout_lag_seconds 30"), "{text}");
        assert!(
            text.contains(r#"rockscout_http_requests_total{route="/api/v2/blocks/:number_or_hash",code="200"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"rockscout_node_request_errors_total{method="other"} 1"#), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}

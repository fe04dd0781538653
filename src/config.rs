//! Command line and environment: the clap `Cli` (doc comments are the help text) and the validated `Config` the
//! daemon runs with.

use crate::api::limits::RateLimitConfig;
use crate::api::rpc::RpcConfig;
use crate::api::{ApiConfig, HealthConfig};
use crate::indexer::{IndexerConfig, ResetPolicy};
use crate::store::ZstdDictionary;
use alloy::transports::http::reqwest::Url;
use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// The block cache's default size in MiB (`--cache-mb`).
const DEFAULT_CACHE_MB: u64 = (crate::store::DEFAULT_CACHE_BYTES >> 20) as u64;

/// The row cache's default size in MiB (`--row-cache-mb`).
const DEFAULT_ROW_CACHE_MB: u64 = (crate::store::DEFAULT_ROW_CACHE_BYTES >> 20) as u64;

/// The memtables' default budget in MiB (`--memtable-mb`).
const DEFAULT_MEMTABLE_MB: u64 = (crate::store::DEFAULT_MEMTABLE_BYTES >> 20) as u64;

/// rockscout: an EVM block explorer backend in one binary. Follows an execution node, indexes the chain into an
/// embedded RocksDB and serves Blockscout-compatible REST (/api/v2), JSON-RPC (/api/eth) and WebSocket
/// (/socket/v2) APIs.
#[derive(Debug, Parser)]
#[command(name = "rockscout", version)]
pub struct Cli {
    /// Log format.
    #[arg(long, env = "ROCKSCOUT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Index a node's chain and serve the explorer APIs.
    Run(RunArgs),
    /// Start a local anvil devnet (chain id 713714), index and serve it, and send demo traffic.
    Dev(DevArgs),
    /// Manage account tokens offline, against the data directory (the daemon must not be running on it).
    Account(AccountArgs),
    /// Write a consistent copy of a data directory (running daemon or not) that another rockscout can start from.
    Snapshot(SnapshotArgs),
    /// Serve the explorer APIs from another rockscout's data directory, read-only (a read replica): it opens the
    /// index as a RocksDB secondary instance and catches up with the indexing process continuously.
    Serve(ServeArgs),
}

/// `rockscout serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Data directory of the primary (a `rockscout run` indexing the chain, on this machine) to serve read-only.
    #[arg(long, env = "ROCKSCOUT_SECONDARY_OF")]
    pub secondary_of: PathBuf,
    /// Directory for the secondary instance's own files (RocksDB's info log). Default: a new owner-only directory
    /// in the system's temporary directory, removed on exit.
    #[arg(long, env = "ROCKSCOUT_SECONDARY_DIR")]
    pub secondary_dir: Option<PathBuf>,
    /// HTTP JSON-RPC URL of the execution node (for /api/eth, balances and the node's head).
    #[arg(long, env = "ROCKSCOUT_RPC_URL", value_parser = parse_rpc_url)]
    pub rpc_url: String,
    /// Milliseconds between two catch-ups with the primary.
    #[arg(long, env = "ROCKSCOUT_CATCH_UP_INTERVAL_MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(10..=10_000))]
    pub catch_up_interval_ms: u64,
    /// Most blocks whose WebSocket events one catch-up publishes; when the primary moved further, the older
    /// blocks get no events (logged).
    #[arg(long, env = "ROCKSCOUT_REPLICA_EVENT_BLOCKS", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub replica_event_blocks: u64,
    /// The API settings (as for `run`; the indexing settings, --data-dir and --reindex do not apply). Metrics are
    /// off unless --metrics-listen names an address.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

impl ServeArgs {
    /// The replica's configuration and options, or why the flags do not make a replica.
    pub fn replica(&self) -> Result<(Config, crate::replica::ReplicaOptions), String> {
        if self.daemon.reindex {
            return Err("--reindex does not apply to a read replica: a replica never writes its primary's index".into());
        }
        let mut config = Config::from_args(self.rpc_url.clone(), None, &self.daemon);
        config.data_dir = self.secondary_of.clone();
        config.metrics_listen = match self.daemon.metrics_listen {
            Some(MetricsListen::At(addr)) => Some(addr),
            None | Some(MetricsListen::Off) => None,
        };
        config.api.read_replica = true;
        let options = crate::replica::ReplicaOptions {
            primary: self.secondary_of.clone(),
            secondary_dir: self.secondary_dir.clone(),
            catch_up_interval: Duration::from_millis(self.catch_up_interval_ms),
            event_blocks: self.replica_event_blocks,
        };
        Ok((config, options))
    }
}

/// `rockscout snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Directory of the RocksDB index to copy (a daemon may be running on it).
    #[arg(long, env = "ROCKSCOUT_DATA_DIR", default_value = "rockscout-data")]
    pub data_dir: PathBuf,
    /// The new directory to write the copy into (must not exist; on the same file system the copy hard-links).
    #[arg(long)]
    pub to: PathBuf,
}

/// `rockscout account`.
#[derive(Debug, Args)]
pub struct AccountArgs {
    /// Directory of the RocksDB index.
    #[arg(long, env = "ROCKSCOUT_DATA_DIR", default_value = "rockscout-data", global = true)]
    pub data_dir: PathBuf,
    /// What to do.
    #[command(subcommand)]
    pub command: AccountCommand,
}

/// `rockscout account` subcommands.
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Mint an account token for an address (creating the account) and print it; it is shown only once.
    Token {
        /// The account's address (0x…).
        #[arg(long)]
        address: alloy::primitives::Address,
        /// A name for the token (1–35 characters), e.g. `ci`.
        #[arg(long)]
        name: String,
        /// Lifetime: a number with a unit (`90d`, `12h`, `30m`, `3600s`), at most 36500d; default: until revoked.
        #[arg(long, value_parser = parse_lifetime)]
        expires: Option<Duration>,
    },
    /// Revoke one token (by the id `account list` shows) or every token of an address.
    Revoke {
        /// The token id (16 hex digits).
        #[arg(long, conflicts_with = "address", required_unless_present = "address")]
        id: Option<String>,
        /// Revoke every token of this account.
        #[arg(long)]
        address: Option<alloy::primitives::Address>,
    },
    /// List the tokens (id, account, name, created, expiry; never the secret).
    List,
}

/// Parses `90d`, `12h`, `30m`, `45s`.
pub fn parse_lifetime(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = number.parse().map_err(|_| format!("`{text}`: expected a number with a unit (d, h, m, s)"))?;
    let seconds = match unit {
        "d" => n.checked_mul(86_400),
        "h" => n.checked_mul(3_600),
        "m" => n.checked_mul(60),
        "s" | "" => Some(n),
        _ => None,
    };
    match seconds {
        Some(s) if s > LONGEST_LIFETIME_SECS => Err(format!("`{text}`: at most 36500d (100 years)")),
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(format!("`{text}`: expected a positive number with a unit (d, h, m, s)")),
    }
}

/// The longest token lifetime `--expires` takes: 100 years (a longer one is "until revoked", the default).
const LONGEST_LIFETIME_SECS: u64 = 36_500 * 86_400;

/// `rockscout run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// HTTP JSON-RPC URL of the execution node.
    #[arg(long, env = "ROCKSCOUT_RPC_URL", value_parser = parse_rpc_url)]
    pub rpc_url: String,
    /// WebSocket JSON-RPC URL of the node, for newHeads notifications (polling is used without it).
    #[arg(long, env = "ROCKSCOUT_WS_URL", value_parser = parse_ws_url)]
    pub ws_url: Option<String>,
    /// Settings shared with `dev`.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

/// `rockscout dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// The anvil binary (default: scripts/tools' npm install, then PATH).
    #[arg(long, env = "ANVIL_BIN")]
    pub anvil_bin: Option<PathBuf>,
    /// Seconds between devnet blocks.
    #[arg(long, default_value_t = 1)]
    pub block_time: u64,
    /// Do not send demo traffic.
    #[arg(long)]
    pub no_traffic: bool,
    /// Settings shared with `run`.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

/// Settings of the daemon, for `run` and `dev`.
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Directory of the RocksDB index.
    #[arg(long, env = "ROCKSCOUT_DATA_DIR", default_value = "rockscout-data")]
    pub data_dir: PathBuf,
    /// Address the HTTP server listens on.
    #[arg(long, env = "ROCKSCOUT_LISTEN", default_value = "127.0.0.1:4000")]
    pub listen: SocketAddr,
    /// What to do when the node's chain was replaced (new genesis) or a reorg is deeper than the undo depth.
    #[arg(long, env = "ROCKSCOUT_ON_RESET", value_enum, default_value_t = ResetPolicy::Exit)]
    pub on_reset: ResetPolicy,
    /// Delete the indexed chain data and rebuild it from the node (account data is kept).
    #[arg(long, env = "ROCKSCOUT_REINDEX", value_parser = BoolishValueParser::new())]
    pub reindex: bool,
    /// MiB of RocksDB's block cache, shared by every table: the data, index and filter blocks recent reads
    /// touched. A store of tens of millions of transactions serves its pages faster with more (see
    /// docs/operations.md); the process's memory grows by as much once the cache has filled.
    #[arg(long = "cache-mb", env = "ROCKSCOUT_CACHE_MB", default_value_t = DEFAULT_CACHE_MB, value_parser = clap::value_parser!(u64).range(8..=1_048_576))]
    pub cache_mb: u64,
    /// MiB of the row cache: the rows API requests read by key (blocks, transactions, accounts, tokens,
    /// contracts), so a page opened again skips the store's lookups. 0 turns it off.
    #[arg(long = "row-cache-mb", env = "ROCKSCOUT_ROW_CACHE_MB", default_value_t = DEFAULT_ROW_CACHE_MB, value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub row_cache_mb: u64,
    /// MiB the memtables of every table may hold together: rows written and not yet flushed to table files (about
    /// 20 of them are the empty memtables' bloom filters). Catching up waits for flushes past it. Less memory costs
    /// more compaction (docs/operations.md).
    #[arg(long = "memtable-mb", env = "ROCKSCOUT_MEMTABLE_MB", default_value_t = DEFAULT_MEMTABLE_MB, value_parser = clap::value_parser!(u64).range(64..=65_536))]
    pub memtable_mb: u64,
    /// Which tables compress their oldest data with a Zstd dictionary trained for each table file: the
    /// transactions (the default), every table whose rows repeat content (`all`, alone: `--zstd-dictionary`; less
    /// disk, longer compactions), or none (docs/operations.md). Files already written stay as they are until
    /// compaction rewrites them.
    #[arg(long = "zstd-dictionary", env = "ROCKSCOUT_ZSTD_DICTIONARY", value_enum, default_value_t = ZstdDictionary::Transactions, num_args = 0..=1, default_missing_value = "all")]
    pub zstd_dictionary: ZstdDictionary,
    /// Index internal transactions from the node's call traces (debug_traceBlockByNumber), serve raw traces and
    /// state changes, and pass the read-only debug_trace*/debug_getRaw* methods through /api/eth.
    #[arg(long, env = "ROCKSCOUT_TRACING", value_parser = BoolishValueParser::new())]
    pub tracing: bool,
    /// How long, in milliseconds, the node must keep refusing to trace one block (error answers for the block and
    /// for one of its transactions: a pruned state) before the trace pass leaves it without internal transactions
    /// and goes on
    #[arg(long = "trace-refusal-window-ms", env = "ROCKSCOUT_TRACE_REFUSAL_WINDOW_MS", default_value_t = DEFAULT_TRACE_REFUSAL_WINDOW_MS)]
    pub trace_refusal_window_ms: u64,
    /// Folder of local build artifacts (Foundry `out/`, Hardhat `artifacts/`, with their build-info): deployed
    /// contracts whose code matches one get its name, ABI and sources. Repeatable; rescanned when it changes.
    #[arg(long = "artifacts", env = "ROCKSCOUT_ARTIFACTS", value_delimiter = ',')]
    pub artifacts: Vec<PathBuf>,
    /// Folder of Solidity compilers for contract verification: programs named by version (`0.8.37` or
    /// `solc-0.8.37`) that speak `solc --standard-json` on stdin.
    #[arg(long = "compilers-dir", env = "ROCKSCOUT_COMPILERS_DIR")]
    pub compilers_dir: Option<PathBuf>,
    /// Solidity release list (solc-bin's `list.json`) to download a compiler from when a verification asks for a
    /// version the compilers folder lacks; the download is checked against the list's SHA-256 and kept in
    /// `<data-dir>/compilers`. "off" turns downloads off.
    #[arg(long = "compiler-list-url", env = "ROCKSCOUT_COMPILER_LIST_URL", default_value = DEFAULT_COMPILER_LIST_URL, value_parser = parse_compiler_list_url)]
    pub compiler_list_url: CompilerList,
    /// An ENS-compatible name registry on the chain (0x…): names are indexed from its events and resolved through
    /// it, searchable and shown on addresses. Off when absent; changing it needs --reindex.
    #[arg(long = "name-registry", env = "ROCKSCOUT_NAME_REGISTRY")]
    pub name_registry: Option<alloy::primitives::Address>,
    /// Requests to the node in flight while catching up (each a JSON-RPC batch of blocks).
    #[arg(long, env = "ROCKSCOUT_FETCH_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub fetch_concurrency: u16,
    /// Most blocks asked for in one JSON-RPC batch while catching up (fewer when blocks carry many transactions:
    /// a batch aims at about 800). 1 asks for one block per request.
    #[arg(long, env = "ROCKSCOUT_FETCH_BATCH", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub fetch_batch: u16,
    /// Index native balances: fetch the balance of every address a block names (miner, senders, recipients,
    /// created contracts) after that block, in batched eth_getBalance calls at the block's hash, while fetching it
    /// (coin balance history, top accounts). Needs a node that keeps the state of the blocks indexed (an archive
    /// node for old history); blocks whose state the node refuses are kept without balances.
    #[arg(long, env = "ROCKSCOUT_COIN_BALANCES", default_value_t = true, action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub coin_balances: bool,
    /// Fetch NFT metadata documents named by http(s) token URIs (data: URIs are always decoded).
    #[arg(long, env = "ROCKSCOUT_NFT_METADATA_HTTP", default_value_t = true, action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub nft_metadata_http: bool,
    /// Also fetch NFT metadata from loopback and private-network addresses (off: a contract's URI must not make
    /// the server probe its own network).
    #[arg(long, env = "ROCKSCOUT_NFT_METADATA_ALLOW_PRIVATE", value_parser = BoolishValueParser::new())]
    pub nft_metadata_allow_private: bool,
    /// Milliseconds between head polls when no WebSocket notification arrives.
    #[arg(long, env = "ROCKSCOUT_POLL_INTERVAL_MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub poll_interval_ms: u64,
    /// Blocks whose undo data is kept: the deepest reorg reverted exactly.
    #[arg(long, env = "ROCKSCOUT_UNDO_DEPTH", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub undo_depth: u64,
    /// Timeout of one request to the node, in milliseconds (indexer and JSON-RPC passthrough).
    #[arg(long, env = "ROCKSCOUT_RPC_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub rpc_timeout_ms: u64,
    /// Requests per second allowed per client IP on every surface; 0 turns rate limiting off.
    #[arg(long, env = "ROCKSCOUT_RATE_LIMIT", default_value_t = 100)]
    pub rate_limit: u32,
    /// Burst size of the per-client rate limit (default: twice the rate).
    #[arg(long, env = "ROCKSCOUT_RATE_BURST")]
    pub rate_burst: Option<u32>,
    /// Requests per second allowed per API key (apikey= or x-api-key), counted against the key instead of the
    /// client IP; burst twice that. Only applies while --rate-limit is on.
    #[arg(long, env = "ROCKSCOUT_API_KEY_RATE_LIMIT", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub api_key_rate_limit: u32,
    /// Failed authentications (bad tokens, refused sign-ins) one client IP may make per minute before its
    /// authenticated requests are refused with 429 for the rest of the minute.
    #[arg(long, env = "ROCKSCOUT_AUTH_FAILURE_BUDGET", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub auth_failure_budget: u32,
    /// Domain named in sign-in-with-Ethereum messages (default: the Host header of the request for the message).
    /// Set it to the explorer's public host name in production.
    #[arg(long, env = "ROCKSCOUT_SIWE_DOMAIN")]
    pub siwe_domain: Option<String>,
    /// Proxies whose X-Forwarded-For header names the client (comma-separated IPs).
    #[arg(long, env = "ROCKSCOUT_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxy: Vec<IpAddr>,
    /// Client IPs never rate limited (comma-separated).
    #[arg(long, env = "ROCKSCOUT_RATE_LIMIT_EXEMPT", value_delimiter = ',')]
    pub rate_limit_exempt: Vec<IpAddr>,
    /// Largest JSON-RPC request body, in bytes.
    #[arg(long, env = "ROCKSCOUT_MAX_BODY_BYTES", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1024..=(64 << 20)))]
    pub max_body_bytes: u64,
    /// Most requests in one JSON-RPC batch.
    #[arg(long, env = "ROCKSCOUT_MAX_BATCH", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_batch: u64,
    /// Refuse eth_sendRawTransaction on the JSON-RPC passthrough.
    #[arg(long, env = "ROCKSCOUT_NO_SEND_RAW_TRANSACTION", value_parser = BoolishValueParser::new())]
    pub no_send_raw_transaction: bool,
    /// Time a request may take, in milliseconds.
    #[arg(long, env = "ROCKSCOUT_REQUEST_TIMEOUT_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub request_timeout_ms: u64,
    /// Time a page or a WebSocket push waits for the node for a value the index does not hold (a current balance,
    /// code not fetched yet, a revert reason), in milliseconds; past it the value is left out.
    #[arg(long, env = "ROCKSCOUT_NODE_READ_TIMEOUT_MS", default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub node_read_timeout_ms: u64,
    /// Time a client has to send request headers (also between keep-alive requests), in milliseconds.
    #[arg(long, env = "ROCKSCOUT_HEADER_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub header_timeout_ms: u64,
    /// Most HTTP connections served at once.
    #[arg(long, env = "ROCKSCOUT_MAX_CONNECTIONS", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,
    /// Most HTTP connections one client IP holds at once while rate limiting is on (clients in --rate-limit-exempt
    /// and --trusted-proxies aside); its further connections are closed at once. 0: no bound.
    #[arg(long, env = "ROCKSCOUT_MAX_CONNECTIONS_PER_IP", default_value_t = 128, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub max_connections_per_ip: u64,
    /// Most gas an eth_call, eth_estimateGas, eth_createAccessList or debug_traceCall on /api/eth may use; a call
    /// asking for more (or for no limit) gets this.
    #[arg(long, env = "ROCKSCOUT_RPC_GAS_CAP", default_value_t = 50_000_000, value_parser = clap::value_parser!(u64).range(21_000..))]
    pub rpc_gas_cap: u64,
    /// Widest block range of one eth_getLogs on /api/eth.
    #[arg(long, env = "ROCKSCOUT_RPC_MAX_LOG_RANGE", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub rpc_max_log_range: u64,
    /// Most logs one eth_getLogs answer on /api/eth may hold.
    #[arg(long, env = "ROCKSCOUT_RPC_MAX_LOG_RESULTS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub rpc_max_log_results: u64,
    /// Longest tracer timeout passed to debug_trace* on /api/eth, in milliseconds.
    #[arg(long, env = "ROCKSCOUT_RPC_TRACE_TIMEOUT_MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub rpc_trace_timeout_ms: u64,
    /// Most /api/eth requests in flight per client IP (more get 429).
    #[arg(long, env = "ROCKSCOUT_RPC_MAX_CONCURRENT_PER_IP", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub rpc_max_concurrent_per_ip: u64,
    /// Most MiB of node answers /api/eth holds at once, all clients together (more get 503).
    #[arg(long, env = "ROCKSCOUT_RPC_MAX_INFLIGHT_MIB", default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub rpc_max_inflight_mib: u64,
    /// /health's status says node_unresponsive, and /health/ready answers 503, once the node has not answered for
    /// this many milliseconds (at least twice the poll interval).
    #[arg(long, env = "ROCKSCOUT_HEALTH_UNRESPONSIVE_MS", default_value_t = 15_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    pub health_unresponsive_ms: u64,
    /// /health's status says node_stalled, and /health/ready answers 503, once the node's head has not moved for this many milliseconds; 0 = never
    /// (the default, as an idle devnet makes no blocks). Set it on chains with regular blocks.
    #[arg(long, env = "ROCKSCOUT_HEALTH_STALL_MS", default_value_t = 0)]
    pub health_stall_ms: u64,
    /// /health/ready answers 503 ("lagging") while the index is more than this many blocks behind the node.
    #[arg(long, env = "ROCKSCOUT_READY_MAX_LAG_BLOCKS", default_value_t = crate::api::DEFAULT_READY_MAX_LAG_BLOCKS)]
    pub ready_max_lag_blocks: u64,
    /// Address of the Prometheus /metrics listener, or "off" [default: 127.0.0.1:9100 for run, a free loopback
    /// port (logged) for dev]. Keep it off the public interface unless scrapers need it there.
    #[arg(long, env = "ROCKSCOUT_METRICS_LISTEN", value_parser = parse_metrics_listen)]
    pub metrics_listen: Option<MetricsListen>,
    /// Time a connection may stay open with no request in flight (before its first request, between keep-alive
    /// requests, idle HTTP/2), in milliseconds.
    #[arg(long, env = "ROCKSCOUT_IDLE_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    pub idle_timeout_ms: u64,
    /// Time a write to a client may make no progress (the client does not read) before the connection is
    /// dropped, in milliseconds.
    #[arg(long, env = "ROCKSCOUT_WRITE_TIMEOUT_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub write_timeout_ms: u64,
    /// Do not serve the explorer pages (API-only deployments); every API path is unchanged.
    #[arg(long, env = "ROCKSCOUT_NO_UI", value_parser = BoolishValueParser::new())]
    pub no_ui: bool,
}

/// Where `/metrics` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsListen {
    /// Not served.
    Off,
    /// Served on this address.
    At(SocketAddr),
}

/// Default of `--trace-refusal-window-ms`: ten minutes.
pub const DEFAULT_TRACE_REFUSAL_WINDOW_MS: u64 = 600_000;

/// Default metrics address of `rockscout run`.
pub const DEFAULT_METRICS_LISTEN: SocketAddr = SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9100);

fn parse_metrics_listen(raw: &str) -> Result<MetricsListen, String> {
    if raw.eq_ignore_ascii_case("off") {
        return Ok(MetricsListen::Off);
    }
    raw.parse().map(MetricsListen::At).map_err(|e| format!("expected an address like 127.0.0.1:9100 or \"off\": {e}"))
}

/// Where compilers missing from the compilers folder come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompilerList {
    /// Nowhere.
    Off,
    /// The release list at this URL.
    At(Url),
}

/// The release list of solc's official Linux builds.
pub const DEFAULT_COMPILER_LIST_URL: &str = "https://binaries.soliditylang.org/linux-amd64/list.json";

/// A URL of one of `schemes`, kept as the text given.
fn url_of(raw: &str, schemes: &[&str]) -> Result<String, String> {
    let expected = schemes.join(" or ");
    let url = Url::parse(raw).map_err(|e| format!("expected an {expected} URL: {e}"))?;
    if !schemes.contains(&url.scheme()) {
        return Err(format!("expected an {expected} URL, not a {}: URL", url.scheme()));
    }
    Ok(raw.to_owned())
}

/// `--rpc-url`: the node's HTTP JSON-RPC endpoint.
fn parse_rpc_url(raw: &str) -> Result<String, String> {
    url_of(raw, &["http", "https"])
}

/// `--ws-url`: the node's WebSocket JSON-RPC endpoint.
fn parse_ws_url(raw: &str) -> Result<String, String> {
    url_of(raw, &["ws", "wss"])
}

fn parse_compiler_list_url(raw: &str) -> Result<CompilerList, String> {
    if raw.eq_ignore_ascii_case("off") {
        return Ok(CompilerList::Off);
    }
    let url = Url::parse(raw).map_err(|e| format!("expected an http(s) URL or \"off\": {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(CompilerList::At(url)),
        other => Err(format!("expected an http(s) URL or \"off\", not a {other}: URL")),
    }
}

/// The validated configuration of one daemon.
#[derive(Debug, Clone)]
pub struct Config {
    /// Node HTTP URL.
    pub rpc_url: String,
    /// Node WebSocket URL.
    pub ws_url: Option<String>,
    /// Data directory.
    pub data_dir: PathBuf,
    /// HTTP listen address.
    pub listen: SocketAddr,
    /// Address of the `/metrics` listener (`None`: not served).
    pub metrics_listen: Option<SocketAddr>,
    /// Wipe the index before starting.
    pub reindex: bool,
    /// Index call traces (and allow `debug_*` on `/api/eth`).
    pub tracing: bool,
    /// How long the node must keep refusing to trace a block before the trace pass passes it.
    pub trace_refusal_window: Duration,
    /// Node request timeout.
    pub rpc_timeout: Duration,
    /// Follower settings.
    pub indexer: IndexerConfig,
    /// HTTP server settings.
    pub api: ApiConfig,
    /// Folders of local build artifacts, watched for changes.
    pub artifacts: Vec<PathBuf>,
    /// Match deployed code with the demo contracts of `rockscout dev` too.
    pub demo_artifacts: bool,
    /// Folder of compilers for verification (none: verification answers that no compiler is available).
    pub compilers_dir: Option<PathBuf>,
    /// Release list that missing compilers are downloaded from into `<data_dir>/compilers` (none: no downloads).
    pub compiler_list_url: Option<Url>,
    /// Time limit of one verification's compile (the compiler is killed past it).
    pub verify_timeout: Duration,
    /// The ENS-compatible registry names come from (none: no names).
    pub name_registry: Option<alloy::primitives::Address>,
    /// Bytes of the store's block cache (`--cache-mb`).
    pub cache_bytes: usize,
    /// Bytes of the store's row cache (`--row-cache-mb`; 0: none).
    pub row_cache_bytes: usize,
    /// Bytes the store's memtables may hold together (`--memtable-mb`).
    pub memtable_bytes: usize,
    /// The tables whose bottom level a Zstd dictionary per file compresses (`--zstd-dictionary`).
    pub zstd_dictionary: ZstdDictionary,
}

impl Config {
    /// A configuration for `rpc_url` with every other setting at its default, except metrics, which a library
    /// user turns on by setting `metrics_listen` (the `run` command's default is [`DEFAULT_METRICS_LISTEN`]).
    pub fn new(rpc_url: impl Into<String>, data_dir: impl Into<PathBuf>) -> Config {
        Config {
            rpc_url: rpc_url.into(),
            ws_url: None,
            data_dir: data_dir.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 4000)),
            metrics_listen: None,
            reindex: false,
            tracing: false,
            trace_refusal_window: Duration::from_millis(DEFAULT_TRACE_REFUSAL_WINDOW_MS),
            rpc_timeout: Duration::from_secs(10),
            indexer: IndexerConfig::default(),
            api: ApiConfig::default(),
            artifacts: Vec::new(),
            demo_artifacts: false,
            compilers_dir: None,
            compiler_list_url: None,
            verify_timeout: Duration::from_secs(60),
            name_registry: None,
            cache_bytes: crate::store::DEFAULT_CACHE_BYTES,
            row_cache_bytes: crate::store::DEFAULT_ROW_CACHE_BYTES,
            memtable_bytes: crate::store::DEFAULT_MEMTABLE_BYTES,
            zstd_dictionary: ZstdDictionary::default(),
        }
    }

    /// The configuration of `rockscout run`/`dev` from parsed flags (metrics on [`DEFAULT_METRICS_LISTEN`] unless
    /// `--metrics-listen` says otherwise).
    pub fn from_args(rpc_url: String, ws_url: Option<String>, args: &DaemonArgs) -> Config {
        let rpc_timeout = Duration::from_millis(args.rpc_timeout_ms);
        Config {
            rpc_url,
            ws_url,
            data_dir: args.data_dir.clone(),
            listen: args.listen,
            metrics_listen: match args.metrics_listen {
                None => Some(DEFAULT_METRICS_LISTEN),
                Some(MetricsListen::Off) => None,
                Some(MetricsListen::At(addr)) => Some(addr),
            },
            reindex: args.reindex,
            tracing: args.tracing,
            trace_refusal_window: Duration::from_millis(args.trace_refusal_window_ms),
            artifacts: args.artifacts.clone(),
            demo_artifacts: false,
            compilers_dir: args.compilers_dir.clone(),
            compiler_list_url: match &args.compiler_list_url {
                CompilerList::Off => None,
                CompilerList::At(url) => Some(url.clone()),
            },
            verify_timeout: Duration::from_secs(60),
            name_registry: args.name_registry,
            cache_bytes: usize::try_from(args.cache_mb << 20).unwrap_or(usize::MAX),
            row_cache_bytes: usize::try_from(args.row_cache_mb << 20).unwrap_or(usize::MAX),
            memtable_bytes: usize::try_from(args.memtable_mb << 20).unwrap_or(usize::MAX),
            zstd_dictionary: args.zstd_dictionary,
            rpc_timeout,
            api: ApiConfig {
                header_read_timeout: Duration::from_millis(args.header_timeout_ms),
                request_timeout: Duration::from_millis(args.request_timeout_ms),
                node_read_timeout: Duration::from_millis(args.node_read_timeout_ms),
                max_connections: args.max_connections as usize,
                max_connections_per_ip: args.max_connections_per_ip as usize,
                idle_timeout: Duration::from_millis(args.idle_timeout_ms),
                write_timeout: Duration::from_millis(args.write_timeout_ms),
                rate_limit: RateLimitConfig {
                    per_second: args.rate_limit,
                    burst: args.rate_burst.unwrap_or(args.rate_limit.saturating_mul(2)),
                    trusted_proxies: args.trusted_proxy.clone(),
                    exempt: args.rate_limit_exempt.clone(),
                    ..RateLimitConfig::default()
                },
                rpc: RpcConfig {
                    allow_debug: args.tracing,
                    allow_send_raw: !args.no_send_raw_transaction,
                    max_batch: args.max_batch as usize,
                    max_body: args.max_body_bytes as usize,
                    upstream_timeout: rpc_timeout,
                    gas_cap: args.rpc_gas_cap,
                    max_log_range: args.rpc_max_log_range,
                    max_log_results: args.rpc_max_log_results as usize,
                    trace_timeout: Duration::from_millis(args.rpc_trace_timeout_ms),
                    max_concurrent_per_client: args.rpc_max_concurrent_per_ip as usize,
                    max_inflight_bytes: (args.rpc_max_inflight_mib as usize) << 20,
                    ..RpcConfig::default()
                },
                health: HealthConfig {
                    unresponsive_after: Duration::from_millis(args.health_unresponsive_ms)
                        .max(Duration::from_millis(args.poll_interval_ms) * 2),
                    stalled_after: (args.health_stall_ms > 0).then_some(Duration::from_millis(args.health_stall_ms)),
                    ready_max_lag_blocks: args.ready_max_lag_blocks,
                },
                auth: crate::api::auth::AuthConfig {
                    failure_budget: args.auth_failure_budget,
                    siwe_domain: args.siwe_domain.clone(),
                    api_key_per_second: args.api_key_rate_limit,
                    api_key_burst: args.api_key_rate_limit.saturating_mul(2),
                    ..crate::api::auth::AuthConfig::default()
                },
                nft_metadata: crate::api::nft_metadata::MetadataConfig {
                    http: args.nft_metadata_http,
                    allow_private: args.nft_metadata_allow_private,
                    ..Default::default()
                },
                ui: !args.no_ui,
                ..ApiConfig::default()
            },
            indexer: IndexerConfig {
                fetch_concurrency: usize::from(args.fetch_concurrency),
                fetch_batch: usize::from(args.fetch_batch),
                poll_interval: Duration::from_millis(args.poll_interval_ms),
                undo_depth: args.undo_depth,
                on_reset: args.on_reset,
                coin_balances: args.coin_balances,
                ..IndexerConfig::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_config(extra: &[&str]) -> Result<Config, clap::Error> {
        let args = ["rockscout", "run", "--rpc-url", "http://127.0.0.1:8545"].iter().chain(extra);
        match Cli::try_parse_from(args)?.command {
            Command::Run(run) => Ok(Config::from_args(run.rpc_url, run.ws_url, &run.daemon)),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn node_urls_must_have_their_schemes() {
        let parse = |args: &[&str]| Cli::try_parse_from(["rockscout", "run"].iter().chain(args));
        assert!(parse(&["--rpc-url", "https://node.example/v2/key"]).is_ok());
        for bad in ["ftp://127.0.0.1:8545", "ws://127.0.0.1:8546", "", "not a url"] {
            assert!(parse(&["--rpc-url", bad]).is_err(), "{bad:?}");
        }
        assert!(parse(&["--rpc-url", "http://127.0.0.1:8545", "--ws-url", "wss://node.example/ws"]).is_ok());
        assert!(parse(&["--rpc-url", "http://127.0.0.1:8545", "--ws-url", "http://127.0.0.1:8546"]).is_err());
    }

    #[test]
    fn switches_read_1_0_yes_no_as_well_as_true_false() {
        // The same parser reads the switches' environment variables (ROCKSCOUT_REINDEX=1).
        for (value, on) in [("1", true), ("yes", true), ("true", true), ("0", false), ("off", false)] {
            assert_eq!(run_config(&["--coin-balances", value]).unwrap().indexer.coin_balances, on, "{value}");
        }
        assert!(run_config(&["--coin-balances", "maybe"]).is_err());
    }

    #[test]
    fn token_lifetimes_are_positive_and_at_most_a_century() {
        assert_eq!(parse_lifetime("90d"), Ok(Duration::from_secs(90 * 86_400)));
        assert_eq!(parse_lifetime("3600"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_lifetime("36500d"), Ok(Duration::from_secs(36_500 * 86_400)));
        for bad in ["36501d", "99999999999999d", "0h", "-1d", "5w", "d", ""] {
            assert!(parse_lifetime(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_block_cache_size_comes_from_cache_mb_within_its_range() {
        assert_eq!(run_config(&[]).unwrap().cache_bytes, crate::store::DEFAULT_CACHE_BYTES);
        assert_eq!(run_config(&["--cache-mb", "256"]).unwrap().cache_bytes, 256 << 20);
        assert!(run_config(&["--cache-mb", "4"]).is_err(), "below 8 MiB is refused");
        assert!(run_config(&["--cache-mb", "lots"]).is_err());
    }

    #[test]
    fn the_memtable_budget_comes_from_memtable_mb_within_its_range() {
        assert_eq!(run_config(&[]).unwrap().memtable_bytes, 128 << 20);
        assert_eq!(run_config(&["--memtable-mb", "64"]).unwrap().memtable_bytes, 64 << 20);
        assert!(run_config(&["--memtable-mb", "32"]).is_err(), "below 64 MiB is refused");
        assert!(run_config(&["--memtable-mb", "plenty"]).is_err());
    }

    #[test]
    fn the_zstd_dictionary_is_the_transactions_unless_asked_otherwise() {
        let tables = |args: &[&str]| run_config(args).map(|config| config.zstd_dictionary);
        assert_eq!(tables(&[]).unwrap(), ZstdDictionary::Transactions);
        assert_eq!(tables(&["--zstd-dictionary"]).unwrap(), ZstdDictionary::All, "the switch alone: every table");
        assert_eq!(tables(&["--zstd-dictionary", "all"]).unwrap(), ZstdDictionary::All);
        assert_eq!(tables(&["--zstd-dictionary", "true"]).unwrap(), ZstdDictionary::All);
        assert_eq!(tables(&["--zstd-dictionary", "off"]).unwrap(), ZstdDictionary::Off);
        assert_eq!(tables(&["--zstd-dictionary=false"]).unwrap(), ZstdDictionary::Off);
        assert_eq!(tables(&["--zstd-dictionary", "transactions"]).unwrap(), ZstdDictionary::Transactions);
        assert!(tables(&["--zstd-dictionary", "logs"]).is_err());
    }

    #[test]
    fn the_row_cache_size_comes_from_row_cache_mb_and_zero_turns_it_off() {
        assert_eq!(run_config(&[]).unwrap().row_cache_bytes, crate::store::DEFAULT_ROW_CACHE_BYTES);
        assert_eq!(run_config(&["--row-cache-mb", "128"]).unwrap().row_cache_bytes, 128 << 20);
        assert_eq!(run_config(&["--row-cache-mb", "0"]).unwrap().row_cache_bytes, 0);
        assert!(run_config(&["--row-cache-mb", "2000000"]).is_err(), "above 1 TiB is refused");
        assert!(run_config(&["--row-cache-mb", "-1"]).is_err());
    }
}

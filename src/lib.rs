//! rockscout: an EVM block explorer backend in one process. It follows an execution node, indexes the chain into
//! an embedded RocksDB and serves Blockscout's REST (`/api/v2`), JSON-RPC (`/api/eth`) and WebSocket (`/socket/v2`)
//! surfaces.
//!
//! Layers (see `docs/architecture.md`): [`node`] talks to the node, [`indexer`] turns blocks into rows (pure core
//! in `indexer::rows`), [`store`] is the only user of RocksDB, [`api`] the only user of hyper. [`run`] wires them.

/// mimalloc instead of glibc's malloc for every program built on this library (the daemon, its tests and
/// benchmarks): a page or list response allocates thousands of small JSON strings and maps, and glibc's
/// allocator was a fifth of the server's time in profiles of the explorer pages (`docs/benchmarks.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod account;
pub mod api;
pub mod chain;
pub mod config;
pub mod contracts;
pub mod dev;
pub mod events;
pub mod indexer;
pub mod metrics;
pub mod node;
pub mod replica;
pub mod snapshot;
pub mod status;
pub mod store;
pub mod telemetry;
pub mod ui;

pub use config::Config;

use indexer::balances::BalanceWriter;
use indexer::contracts::CodeWriter;
use indexer::metadata::MetadataFetcher;
use indexer::pending::PendingFollower;
use indexer::traces::TraceFollower;
use indexer::{Indexer, IndexerError};
use node::{Node, NodeError};
use status::{Status, StatusSnapshot};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use store::{OpenState, Store, StoreError, StoreOptions};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Why the daemon could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store could not be opened or written.
    #[error("store at {path}: {source}")]
    Store {
        /// Data directory.
        path: String,
        /// Cause.
        source: StoreError,
    },
    /// The follower stopped.
    #[error(transparent)]
    Indexer(#[from] IndexerError),
    /// Bad node settings.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// The listen address is unavailable.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
    /// The metrics address is unavailable.
    #[error("cannot listen for metrics on {addr}: {source} (choose another --metrics-listen address, or \"off\")")]
    MetricsBind {
        /// The address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
    /// The devnet could not start.
    #[error(transparent)]
    Anvil(#[from] dev::anvil::AnvilError),
    /// A background task panicked or was cancelled.
    #[error("task failed: {0}")]
    Task(String),
}

/// A running daemon: store, follower and HTTP server.
#[derive(Debug)]
pub struct Daemon {
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    store: Arc<Store>,
    status: Arc<Status>,
    events: events::EventSender,
    cancel: CancellationToken,
    indexer: JoinHandle<Result<(), IndexerError>>,
    /// The HTTP server; `true` when every connection closed within the shutdown grace period.
    server: JoinHandle<bool>,
    /// The pending-pool follower, the WebSocket publisher and the metrics server.
    helpers: TaskTracker,
}

impl Daemon {
    /// Opens the store, binds the listener and starts following the node.
    pub async fn start(config: &Config) -> Result<Daemon, RunError> {
        warn_if_few_files(config);
        let store_error = |source| RunError::Store { path: config.data_dir.display().to_string(), source };
        if config.reindex {
            Store::clear_chain_data(&config.data_dir).map_err(store_error)?;
        }
        let store = Arc::new(
            Store::open(
                &config.data_dir,
                &StoreOptions {
                    name_registry: config.name_registry,
                    cache_bytes: config.cache_bytes,
                    row_cache_bytes: config.row_cache_bytes,
                    memtable_bytes: config.memtable_bytes,
                    zstd_dictionary: config.zstd_dictionary,
                    ..StoreOptions::default()
                },
            )
            .map_err(store_error)?,
        );
        match store.open_state() {
            OpenState::Created => {
                tracing::info!(path = %config.data_dir.display(), "created a new index")
            }
            OpenState::Clean => {
                tracing::info!(path = %config.data_dir.display(), "opened the index")
            }
            OpenState::Unclean => tracing::warn!(
                path = %config.data_dir.display(),
                "the previous run did not stop cleanly; every commit is atomic, resuming from the stored tip"
            ),
        }
        if let Some(indexed) = store.check_name_registry().map_err(store_error)? {
            let name = |registry: Option<alloy::primitives::Address>| registry.map_or("none".into(), |r| r.to_string());
            tracing::warn!(
                indexed = %name(indexed),
                configured = %name(config.name_registry),
                "the index's names were derived from another --name-registry: names shown and searched mix the two \
                 until a restart with --reindex (the node's data is not touched)"
            );
        }
        let metrics = Arc::new(metrics::Metrics::new());
        let node =
            Node::new(&config.rpc_url, config.ws_url.as_deref(), config.rpc_timeout)?.with_metrics(metrics.clone());
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| RunError::Bind { addr: config.listen, source })?;
        let addr = listener.local_addr().map_err(|source| RunError::Bind { addr: config.listen, source })?;
        let metrics_listener = match config.metrics_listen {
            Some(wanted) => {
                let bind_error = |source| RunError::MetricsBind { addr: wanted, source };
                let listener = tokio::net::TcpListener::bind(wanted).await.map_err(bind_error)?;
                let bound = listener.local_addr().map_err(bind_error)?;
                tracing::info!(addr = %bound, "metrics listening on /metrics");
                Some((listener, bound))
            }
            None => None,
        };
        let metrics_addr = metrics_listener.as_ref().map(|(_, bound)| *bound);
        tracing::info!(%addr, "http server listening");

        let status = Arc::new(Status::with_metrics(metrics));
        let events = events::channel(1024);
        let cancel = CancellationToken::new();
        let mut compilers = contracts::verifier::Compilers::new(config.compilers_dir.clone());
        if let Some(list) = &config.compiler_list_url {
            compilers = compilers.with_releases(config.data_dir.join("compilers"), list.clone());
        }
        contracts::verifier::index_verified_code(&store)
            .map_err(|source| RunError::Store { path: config.data_dir.display().to_string(), source })?;
        let verifications =
            contracts::jobs::Verifications::new(store.clone(), node.clone(), compilers, config.verify_timeout)
                .map_err(|source| RunError::Store { path: config.data_dir.display().to_string(), source })?;
        let state = api::AppState::new(
            store.clone(),
            status.clone(),
            node.clone(),
            config.rpc_url.clone(),
            events.clone(),
            config.api.clone(),
            verifications.clone(),
        );
        let helpers = TaskTracker::new();
        helpers.spawn(verifications.run(cancel.clone()));
        helpers.spawn(snapshot::serve(store.clone(), config.data_dir.clone(), cancel.clone()));
        helpers.spawn(api::publish_verification_outcomes(state.clone(), cancel.clone()));
        helpers.spawn(api::ws::publish::run(state.clone(), cancel.clone()));
        if let Some((listener, _)) = metrics_listener {
            helpers.spawn(api::serve_metrics(listener, state.clone(), cancel.clone()));
        }
        let server = tokio::spawn(api::serve(listener, state, cancel.clone()));
        let pool_interval =
            (config.indexer.poll_interval * 4).clamp(Duration::from_millis(200), Duration::from_secs(2));
        let pool = PendingFollower::new(store.clone(), node.clone(), status.clone(), events.clone(), pool_interval);
        helpers.spawn(pool.run(cancel.clone()));
        let metadata = MetadataFetcher::new(store.clone(), node.clone(), status.clone(), events.clone());
        helpers.spawn(metadata.run(cancel.clone()));
        let code = CodeWriter::new(store.clone(), node.clone(), status.clone(), events.clone());
        helpers.spawn(code.run(cancel.clone()));
        if config.indexer.coin_balances {
            let balances = BalanceWriter::new(store.clone(), node.clone(), status.clone(), events.clone());
            helpers.spawn(balances.run(cancel.clone()));
        }
        if !config.artifacts.is_empty() || config.demo_artifacts {
            let builtin = if config.demo_artifacts { dev::contracts::demo_artifacts() } else { Vec::new() };
            let knowledge = store.knowledge().clone();
            helpers.spawn(contracts::watch::run(config.artifacts.clone(), builtin, knowledge, cancel.clone()));
        }
        if config.tracing {
            let traces = TraceFollower::new(
                store.clone(),
                node.clone(),
                status.clone(),
                events.clone(),
                config.indexer.fetch_concurrency,
            )
            .with_coin_balances(config.indexer.coin_balances)
            .with_refusal_window(config.trace_refusal_window);
            helpers.spawn(traces.run(cancel.clone()));
        }
        helpers.close();
        let follower = Indexer::new(store.clone(), node, config.indexer.clone(), status.clone(), events.clone());
        let indexer = tokio::spawn(follower.run(cancel.clone()));
        Ok(Daemon { addr, metrics_addr, store, status, events, cancel, indexer, server, helpers })
    }

    /// The address the HTTP server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address `/metrics` is served on (`None`: metrics off).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The store (for inspection by tests and tools).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The follower's current state.
    pub fn status(&self) -> StatusSnapshot {
        self.status.snapshot()
    }

    /// Subscribes to chain events.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<events::ChainEvent> {
        self.events.subscribe()
    }

    /// Runs until `cancel` fires (then shuts down cleanly) or the follower fails.
    pub async fn run_until(mut self, cancel: CancellationToken) -> Result<(), RunError> {
        let outcome = tokio::select! {
            _ = cancel.cancelled() => None,
            result = &mut self.indexer => Some(result),
        };
        match outcome {
            None => self.shutdown().await,
            Some(result) => {
                let indexer_result = flatten(result);
                self.cancel.cancel();
                let _ = self.server.await;
                self.helpers.wait().await;
                close_store(self.store);
                indexer_result
            }
        }
    }

    /// Stops accepting requests, lets in-flight ones finish, stops the follower after its current commit and
    /// closes the store.
    pub async fn shutdown(self) -> Result<(), RunError> {
        self.shutdown_drained().await.map(|_| ())
    }

    /// [`Daemon::shutdown`], also saying whether every HTTP and WebSocket connection closed within the grace
    /// period (`false`: some were dropped).
    pub async fn shutdown_drained(self) -> Result<bool, RunError> {
        self.cancel.cancel();
        let served = self.server.await;
        let indexed = flatten(self.indexer.await);
        self.helpers.wait().await;
        close_store(self.store);
        let drained = served.map_err(|e| RunError::Task(e.to_string()))?;
        indexed.map(|()| drained)
    }
}

fn flatten(result: Result<Result<(), IndexerError>, tokio::task::JoinError>) -> Result<(), RunError> {
    match result {
        Ok(inner) => inner.map_err(RunError::from),
        Err(e) => Err(RunError::Task(e.to_string())),
    }
}

fn close_store(store: Arc<Store>) {
    match Arc::try_unwrap(store) {
        Ok(store) => match store.close() {
            Ok(()) => tracing::info!("index closed cleanly"),
            Err(e) => tracing::warn!(error = %e, "closing the index failed"),
        },
        // Someone (a test, a task finishing) still holds the store: the last holder closes it on drop.
        Err(_) => tracing::debug!("store still shared; it closes when the last holder drops it"),
    }
}

/// Raises the soft limit of open files to the hard one, as servers do: every connection and WebSocket holds a
/// descriptor and RocksDB keeps its table files open, and a shell's soft default (often 1,024) would leave the
/// follower without a socket to reach the node once clients held the rest. Returns the limit now in force.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read or write the struct passed, which lives on this stack frame.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // An unlimited hard limit is not a valid soft one for files: the kernel's usual ceiling stands in for it.
        let wanted = if limit.rlim_max == libc::RLIM_INFINITY { 1 << 20 } else { limit.rlim_max };
        if limit.rlim_cur < wanted {
            let raised = libc::rlimit { rlim_cur: wanted, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            limit = raised;
        }
    }
    Ok(limit.rlim_cur)
}

/// Descriptors kept for what is not a client connection: table files, the node's sockets, the listeners.
const FILES_OF_OUR_OWN: u64 = 1024;

/// Warns when the open file limit cannot hold every connection the server admits (HTTP and WebSocket) and its own
/// files: past it accepts fail and the follower cannot reach the node.
fn warn_if_few_files(config: &Config) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes only the struct passed, which lives on this stack frame.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let admitted = (config.api.max_connections + config.api.ws.max_connections) as u64;
    if limit.rlim_cur < admitted + FILES_OF_OUR_OWN {
        tracing::warn!(
            open_files = limit.rlim_cur,
            connections = admitted,
            "the open file limit is below the connections the server admits (--max-connections and 10,000 \
             WebSockets) and its own files: raise the hard limit (LimitNOFILE= in a systemd unit, ulimit -Hn) or \
             lower --max-connections"
        );
    }
}

/// Runs the daemon until `cancel` fires or the follower fails.
pub async fn run(config: Config, cancel: CancellationToken) -> Result<(), RunError> {
    Daemon::start(&config).await?.run_until(cancel).await
}

/// A token cancelled on SIGINT or SIGTERM.
pub fn cancel_on_signals() -> CancellationToken {
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM");
                    let _ = ctrl_c.await;
                    token.cancel();
                    return;
                }
            };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down");
        token.cancel();
    });
    cancel
}

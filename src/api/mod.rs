//! The HTTP server: the only module that imports `hyper`.
//!
//! One accept loop (HTTP/1.1 and HTTP/2, upgrades enabled), one service function that parses a [`Route`],
//! dispatches it with one `match` and turns any [`ApiError`] into a response in one place. Connections are
//! drained gracefully on shutdown.
//!
//! Routes (see `docs/api.md`): `GET /health`, and Blockscout's REST surface under `/api/v2`: stats, blocks,
//! transactions, addresses, search, and the home-page endpoints.

mod body;
mod error;
mod health;
pub mod json;
mod methods;
mod query;
mod rest;
mod router;

pub use error::ApiError;
pub use router::Route;

use crate::events::EventSender;
use crate::indexer::Status;
use crate::node::{Node, NodeError};
use crate::store::Store;
use alloy::primitives::{Address, U256};
use body::Body;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rest::stats::ChainStats;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Limits of the HTTP server.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Time a client has to send its request headers (slowloris guard).
    pub header_read_timeout: Duration,
    /// Time in-flight requests get to finish on shutdown.
    pub shutdown_grace: Duration,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig { header_read_timeout: Duration::from_secs(10), shutdown_grace: Duration::from_secs(10) }
    }
}

/// What handlers share.
#[derive(Debug)]
pub struct Shared {
    /// The index.
    pub store: Arc<Store>,
    /// The follower's state.
    pub status: Arc<Status>,
    /// The node (balances, revert reasons).
    pub node: Node,
    /// Chain events.
    pub events: EventSender,
    /// Server limits.
    pub config: ApiConfig,
    stats: Mutex<Option<Arc<ChainStats>>>,
    on_chain: Mutex<OnChainCache>,
}

/// An address's balance and whether it has code, read from the node at one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnChain {
    /// Native balance in wei.
    pub balance: U256,
    /// Whether code is deployed at the address.
    pub has_code: bool,
}

/// [`OnChain`] values of the current tip; emptied when the tip moves.
#[derive(Debug, Default)]
struct OnChainCache {
    tip: u64,
    entries: HashMap<Address, OnChain>,
}

/// Most addresses cached per tip.
const ON_CHAIN_CACHE_LIMIT: usize = 10_000;

/// Cheap handle on [`Shared`].
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// State for a server over `store` and `node`.
    pub fn new(store: Arc<Store>, status: Arc<Status>, node: Node, events: EventSender, config: ApiConfig) -> Self {
        AppState(Arc::new(Shared {
            store,
            status,
            node,
            events,
            config,
            stats: Mutex::new(None),
            on_chain: Mutex::new(OnChainCache::default()),
        }))
    }

    /// Balance and code presence of `address` at block `tip`, from the node, cached per tip.
    pub async fn account_state(&self, address: Address, tip: u64) -> Result<OnChain, NodeError> {
        {
            let cache = self.on_chain.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(hit) = cache.entries.get(&address).filter(|_| cache.tip == tip) {
                return Ok(*hit);
            }
        }
        let (balance, code) = tokio::try_join!(self.node.balance(address, tip), self.node.code(address, tip))?;
        let fresh = OnChain { balance, has_code: !code.is_empty() };
        let mut cache = self.on_chain.lock().unwrap_or_else(|p| p.into_inner());
        if cache.tip != tip || cache.entries.len() >= ON_CHAIN_CACHE_LIMIT {
            cache.tip = tip;
            cache.entries.clear();
        }
        cache.entries.insert(address, fresh);
        Ok(fresh)
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// Serves HTTP on `listener` until `cancel` fires, then stops accepting and lets in-flight requests finish within
/// the grace period.
pub async fn serve(listener: TcpListener, state: AppState, cancel: CancellationToken) {
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(state.config.header_read_timeout).keep_alive(true);
    loop {
        let (stream, peer) = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let state = state.clone();
        let service = hyper::service::service_fn(move |req| handle(req, state.clone(), peer));
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
        let connection = graceful.watch(connection.into_owned());
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => tracing::debug!("http connections drained"),
        _ = tokio::time::sleep(state.config.shutdown_grace) => tracing::warn!("http connections still open after the grace period"),
    }
}

async fn handle(req: Request<Incoming>, state: AppState, _peer: SocketAddr) -> Result<Response<Body>, Infallible> {
    let response = match Route::parse(req.method(), req.uri().path(), req.uri().query()) {
        Ok(route) => dispatch(route, &req, &state).await.unwrap_or_else(ApiError::into_response),
        Err(e) => e.into_response(),
    };
    Ok(response)
}

async fn dispatch(route: Route, req: &Request<Incoming>, state: &AppState) -> Result<Response<Body>, ApiError> {
    use rest::{addresses, blocks, search, stats, transactions};
    match route {
        Route::Health => Ok(health::health(state)),
        Route::Stats => stats::handler(state, req.headers()),
        Route::Blocks { kind, page } => blocks::list(state, kind, page),
        Route::Block(id) => blocks::detail(state, id),
        Route::BlockTransactions { id, kinds, page } => blocks::transactions(state, id, kinds, page),
        Route::Transactions { pending, kinds, methods, page } => {
            transactions::list(state, pending, kinds, methods, page)
        }
        Route::Transaction(hash) => transactions::detail(state, hash).await,
        Route::TransactionLogs { hash, page } => transactions::logs(state, hash, page),
        Route::TransactionSub(hash, sub) => transactions::sub(state, hash, sub),
        Route::Address(address) => addresses::detail(state, address).await,
        Route::AddressTransactions { address, direction, ascending, page } => {
            addresses::transactions(state, address, direction, ascending, page)
        }
        Route::AddressLogs { address, topic, page } => addresses::logs(state, address, topic, page),
        Route::AddressCounters(address) => addresses::counters(state, address),
        Route::AddressTabsCounters(address) => addresses::tabs_counters(state, address),
        Route::CoinBalanceHistory { address, page } => addresses::coin_balance_history(state, address, page).await,
        Route::AddressSub(_, sub) => Ok(addresses::sub(sub)),
        Route::Tokens => Ok(body::ok(&json::Envelope::<()>::empty())),
        Route::Search(q) => search::search(state, &q),
        Route::SearchQuick(q) => search::quick(state, &q),
        Route::SearchRedirect(q) => search::redirect(state, &q),
        Route::MainPageBlocks => blocks::main_page(state),
        Route::MainPageTransactions => transactions::main_page(state),
        Route::IndexingStatus => Ok(stats::indexing_status(state)),
        Route::BackendVersion => Ok(stats::backend_version()),
        Route::TransactionsChart => stats::transactions_chart(state),
    }
}

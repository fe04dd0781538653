//! The HTTP server: the only module that imports `hyper`.
//!
//! One accept loop (HTTP/1.1 and HTTP/2, upgrades enabled) bounded in concurrent connections, and one service
//! function that, for every request: resolves the client IP and takes a token from its rate-limit bucket (refusing
//! with 429 when it is empty, CORS preflights included; a JSON-RPC error on `/api/eth`), answers CORS preflights,
//! parses a [`Route`], dispatches it with one `match` under a per-request timeout, turns any [`ApiError`] into a
//! response, gzips large text answers for clients that accept it (`compress.rs`), and adds the CORS and
//! `x-ratelimit-*` headers. Every connection is bounded in idle time and write
//! progress and drained on shutdown (`conn.rs`).
//!
//! Surfaces (see `docs/api.md`): `GET /health` and `GET /health/ready`; Blockscout's REST API under `/api/v2`;
//! the JSON-RPC passthrough `POST /api/eth`; the Phoenix V2 WebSocket `GET /socket/v2/websocket`; the explorer
//! pages (`pages.rs`, every other GET unless `--no-ui`). Every request
//! is counted by route template and status code into the metrics, which `metrics.rs` serves as `GET /metrics` on
//! a listener of its own, never on the API's.

pub mod auth;
mod body;
mod compress;
mod conn;
mod cursor;
mod error;
mod etherscan;
mod health;
pub mod json;
pub mod limits;
mod methods;
mod metrics;
pub mod names;
pub mod nft_metadata;
mod pages;
pub(crate) mod query;
mod request_body;
mod rest;
mod router;
pub mod rpc;
pub mod ws;

pub use error::{ApiError, FailureCause, AUTH_BUDGET_MESSAGE, READ_REPLICA_MESSAGE};
pub use health::{HealthConfig, DEFAULT_READY_MAX_LAG_BLOCKS};
pub use metrics::serve_metrics;
pub use rest::verification::publish_outcomes as publish_verification_outcomes;
pub use router::Route;

use crate::events::EventSender;
use crate::node::{Node, NodeError};
use crate::status::Status;
use crate::store::records::Tip;
use crate::store::{Reader, Store};
use alloy::primitives::{Address, U256};
use body::{json_response, Body};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use limits::{RateLimitConfig, RateLimiter, Verdict};
use request_body::RequestBody;
use rest::stats::ChainStats;
use rpc::RpcConfig;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Limits of the HTTP server.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Time a client has to send its request headers, also between keep-alive requests (slowloris guard).
    pub header_read_timeout: Duration,
    /// Time a connection may stay open without a request in flight (before the first one, during the protocol
    /// detection, between requests, idle HTTP/2); upgraded WebSockets have their own.
    pub idle_timeout: Duration,
    /// Time a write to a client may make no progress before the connection is dropped.
    pub write_timeout: Duration,
    /// Time one request may take.
    pub request_timeout: Duration,
    /// Time a page or a WebSocket push waits for the node for a value the index does not hold (a current balance,
    /// code not fetched yet, a revert reason); past it the value is left out.
    pub node_read_timeout: Duration,
    /// Time in-flight requests get to finish on shutdown.
    pub shutdown_grace: Duration,
    /// Most connections served at once; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// Most connections one client IP holds at once while rate limiting is on (exempt clients and trusted proxies
    /// aside); its further connections are closed at once. 0: no bound.
    pub max_connections_per_ip: usize,
    /// Per-client rate limiting.
    pub rate_limit: RateLimitConfig,
    /// The JSON-RPC passthrough.
    pub rpc: RpcConfig,
    /// The WebSocket stream.
    pub ws: ws::WsConfig,
    /// When `/health` reports the node unresponsive or stalled.
    pub health: health::HealthConfig,
    /// Account tokens and sign-in.
    pub auth: auth::AuthConfig,
    /// How NFT instance metadata is fetched.
    pub nft_metadata: nft_metadata::MetadataConfig,
    /// Whether the explorer pages are served (`--no-ui` turns them off; the API is the same either way).
    pub ui: bool,
    /// Whether this server is a read replica (`rockscout serve --secondary-of`): routes that store something
    /// answer [`ApiError::ReadReplica`].
    pub read_replica: bool,
}

impl ApiConfig {
    /// Time a request's body may take to arrive: two thirds of the request's time, so that a body cut short
    /// gets its own answer (408) before the request times out.
    pub fn body_timeout(&self) -> Duration {
        self.request_timeout * 2 / 3
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            node_read_timeout: Duration::from_secs(2),
            shutdown_grace: Duration::from_secs(10),
            max_connections: 1024,
            max_connections_per_ip: 128,
            rate_limit: RateLimitConfig::default(),
            rpc: RpcConfig::default(),
            ws: ws::WsConfig::default(),
            health: health::HealthConfig::default(),
            auth: auth::AuthConfig::default(),
            nft_metadata: nft_metadata::MetadataConfig::default(),
            ui: true,
            read_replica: false,
        }
    }
}

/// The WebSocket side of the server.
#[derive(Debug)]
pub struct WsServer {
    /// Topic subscriptions and fan-out.
    pub hub: Arc<ws::hub::Hub>,
    /// Connection tasks, awaited on shutdown.
    pub tracker: tokio_util::task::TaskTracker,
    /// One permit per connection.
    pub permits: Arc<tokio::sync::Semaphore>,
    /// Connections per client (`--max-connections-per-ip`, while rate limiting is on): an upgraded connection
    /// leaves the HTTP count, and one client must not take every WebSocket slot.
    pub per_client: Option<limits::ConcurrencyLimiter>,
    /// Fired on shutdown: connections close with 1001.
    pub shutdown: CancellationToken,
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
    /// The node's HTTP URL, for the passthrough.
    pub rpc_url: String,
    /// Chain events.
    pub events: EventSender,
    /// Server limits.
    pub config: ApiConfig,
    /// WebSocket connections.
    pub ws: WsServer,
    /// Accounts: tokens, tags, watchlists, API keys.
    pub accounts: Arc<crate::account::Accounts>,
    /// Failed-authentication budget and sign-in nonces.
    pub auth: AuthState,
    /// The contract verification queue.
    pub verifications: Arc<crate::contracts::jobs::Verifications>,
    limiter: RateLimiter,
    key_limiter: RateLimiter<u64>,
    /// Requests with valid API keys, per client IP (see `handle`).
    keyed_ip_limiter: RateLimiter,
    /// One permit per store-reading handler running on the blocking pool.
    readers: Arc<tokio::sync::Semaphore>,
    /// One permit per KiB of the large request bodies being received ([`BODY_BUDGET`]).
    body_budget: Arc<tokio::sync::Semaphore>,
    /// KiB of [`BODY_BUDGET`] each client holds ([`BODY_SHARE`] at most).
    body_shares: limits::ConcurrencyLimiter,
    /// Where refused request bodies are read to their end (`request_body`).
    linger_places: Arc<request_body::LingerPlaces>,
    /// One permit per trace the API has asked the node for, REST, passthrough and verification together
    /// ([`crate::contracts::creation::NODE_TRACES`]).
    node_traces: Arc<tokio::sync::Semaphore>,
    rpc: rpc::Passthrough,
    stats: Mutex<Option<Arc<ChainStats>>>,
    on_chain: Mutex<OnChainCache>,
    /// CSV exports per client IP (a bucket of its own: an export costs far more than a page).
    csv_limiter: RateLimiter,
    names: names::NameCache,
    /// NFT instance metadata resolved recently.
    pub nft_metadata: nft_metadata::MetadataCache,
}

/// Authentication state shared by the routes.
#[derive(Debug)]
pub struct AuthState {
    /// Failed authentications per client IP.
    pub failures: auth::FailureBudget,
    /// Outstanding sign-in messages.
    pub nonces: crate::account::siwe::Nonces,
}

/// An address's balance and whether it has code, read from the node at one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnChain {
    /// Native balance in wei.
    pub balance: U256,
    /// Whether code is deployed at the address.
    pub has_code: bool,
}

/// [`OnChain`] values at the indexed tip; emptied when the tip changes (a new block, or another block at the same
/// height after a reorg).
#[derive(Debug, Default)]
struct OnChainCache {
    tip: Option<Tip>,
    /// What the node said of each address at `tip`: its state, or `None` when it refused to say (it does not know
    /// the tip's block: another branch, a pruned state), which is not asked again at that tip.
    entries: HashMap<Address, Option<OnChain>>,
}

/// Most addresses cached per tip.
const ON_CHAIN_CACHE_LIMIT: usize = 10_000;

/// Store-reading handlers running at once on the blocking pool; further requests wait (within their deadline).
const STORE_READERS: usize = 8;

/// Cheap handle on [`Shared`].
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// State for a server over `store`, passing JSON-RPC through to `rpc_url`.
    pub fn new(
        store: Arc<Store>,
        status: Arc<Status>,
        node: Node,
        rpc_url: String,
        events: EventSender,
        config: ApiConfig,
        verifications: Arc<crate::contracts::jobs::Verifications>,
    ) -> Self {
        let hub = ws::hub::Hub::new(config.ws.queue, status.metrics().clone());
        let auth = AuthState {
            failures: auth::FailureBudget::new(config.auth.failure_budget, config.auth.failure_window),
            nonces: crate::account::siwe::Nonces::new(config.auth.siwe_max_outstanding, config.auth.siwe_lifetime),
        };
        let csv_limiter = RateLimiter::new(limits::RateLimitConfig {
            per_second: rest::csv::EXPORTS_PER_SECOND,
            burst: rest::csv::EXPORTS_BURST,
            ..config.rate_limit.clone()
        });
        let node_traces = verifications.traces().permits();
        AppState(Arc::new(Shared {
            accounts: Arc::new(crate::account::Accounts::new(store.clone())),
            auth,
            verifications,
            store,
            status,
            node,
            rpc_url,
            events,
            ws: WsServer {
                hub: Arc::new(hub),
                tracker: tokio_util::task::TaskTracker::new(),
                permits: Arc::new(tokio::sync::Semaphore::new(config.ws.max_connections)),
                per_client: (config.rate_limit.per_second > 0 && config.max_connections_per_ip > 0)
                    .then(|| limits::ConcurrencyLimiter::new(config.max_connections_per_ip, config.ws.max_connections)),
                shutdown: CancellationToken::new(),
            },
            limiter: RateLimiter::new(config.rate_limit.clone()),
            key_limiter: RateLimiter::per_key(
                config.auth.api_key_per_second,
                config.auth.api_key_burst,
                config.rate_limit.max_tracked,
            ),
            keyed_ip_limiter: RateLimiter::per_key(
                config.auth.api_key_per_second,
                config.auth.api_key_burst,
                config.rate_limit.max_tracked,
            ),
            readers: Arc::new(tokio::sync::Semaphore::new(STORE_READERS)),
            body_budget: Arc::new(tokio::sync::Semaphore::new(BODY_BUDGET >> 10)),
            body_shares: limits::ConcurrencyLimiter::new(BODY_SHARE >> 10, config.max_connections),
            linger_places: Arc::default(),
            node_traces: node_traces.clone(),
            rpc: rpc::Passthrough::new(config.rpc.clone(), node_traces),
            config,
            stats: Mutex::new(None),
            on_chain: Mutex::new(OnChainCache::default()),
            csv_limiter,
            names: names::NameCache::default(),
            nft_metadata: nft_metadata::MetadataCache::default(),
        }))
    }

    /// The node's trace of transaction `hash` with `tracer` and `config`, within the places for node traces
    /// ([`crate::contracts::creation::NODE_TRACES`]).
    pub async fn node_trace(
        &self,
        hash: alloy::primitives::B256,
        tracer: &str,
        config: serde_json::Value,
    ) -> Result<serde_json::Value, ApiError> {
        let _permit = self
            .node_traces
            .try_acquire()
            .map_err(|_| ApiError::Busy("the node is computing other transaction traces; retry shortly"))?;
        Ok(self.node.trace_transaction_with(hash, tracer, config).await?)
    }

    /// The creation inputs of `creations` within `limit` ([`crate::contracts::creation::CreationTraces::inputs`]).
    pub async fn creation_inputs(
        &self,
        creations: Vec<(Address, crate::contracts::creation::CreationInput)>,
        limit: std::time::Duration,
    ) -> Vec<Option<alloy::primitives::Bytes>> {
        self.verifications.traces().inputs(creations, limit).await
    }

    /// The creation input of one contract, as [`AppState::creation_inputs`] gives it.
    pub async fn creation_input(
        &self,
        address: Address,
        creation: crate::contracts::creation::CreationInput,
        limit: std::time::Duration,
    ) -> Option<alloy::primitives::Bytes> {
        self.creation_inputs(vec![(address, creation)], limit).await.pop().flatten()
    }

    /// Balance and code presence of `address` after the indexed tip `tip` (block 0 before any block is indexed),
    /// from the node, cached per tip.
    pub async fn account_state(&self, address: Address, tip: Option<Tip>) -> Result<OnChain, NodeError> {
        {
            let cache = self.on_chain.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(hit) = cache.entries.get(&address).filter(|_| cache.tip == tip) {
                return hit
                    .ok_or_else(|| NodeError::Invalid("the node refused this address's state at this block".into()));
            }
        }
        // By the tip's hash: a node that moved to another branch answers for the indexed block or not at all.
        let answer = match tip {
            Some(tip) => {
                tokio::try_join!(self.node.balance_after(address, tip.hash), self.node.code_after(address, tip.hash))
            }
            None => tokio::try_join!(self.node.balance(address, 0), self.node.code(address, 0)),
        };
        let answer = answer.map(|(balance, code)| OnChain { balance, has_code: !code.is_empty() });
        let fresh = match &answer {
            Ok(state) => Some(*state),
            Err(NodeError::Rpc { .. } | NodeError::Invalid(_)) => None,
            // Unreachable or slow: asked again next time.
            Err(_) => return answer,
        };
        let mut cache = self.on_chain.lock().unwrap_or_else(|p| p.into_inner());
        if cache.tip != tip || cache.entries.len() >= ON_CHAIN_CACHE_LIMIT {
            cache.tip = tip;
            cache.entries.clear();
        }
        cache.entries.insert(address, fresh);
        answer
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// Serves HTTP on `listener` until `cancel` fires, then stops accepting, closes WebSocket connections (1001),
/// closes idle connections and lets in-flight requests finish within the grace period. Returns whether every
/// connection ended within it (connections still open then are dropped).
pub async fn serve(listener: TcpListener, state: AppState, cancel: CancellationToken) -> bool {
    let connections = Arc::new(tokio::sync::Semaphore::new(state.config.max_connections));
    // One client cannot take every slot with connections that never send a request (the rate limit counts requests).
    let per_ip = (state.limiter.enabled() && state.config.max_connections_per_ip > 0)
        .then(|| limits::ConcurrencyLimiter::new(state.config.max_connections_per_ip, state.config.max_connections));
    let tracker = tokio_util::task::TaskTracker::new();
    let force = CancellationToken::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(state.config.header_read_timeout).keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(HTTP2_MAX_STREAMS)
        .max_header_list_size(HTTP2_MAX_HEADER_LIST);
    loop {
        let permit = tokio::select! {
            _ = cancel.cancelled() => break,
            permit = connections.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
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
        let peer_slot = match &per_ip {
            Some(per_ip) if !state.limiter.spares_peer(peer.ip()) => match per_ip.try_acquire(peer.ip()) {
                Some(slot) => Some(slot),
                None => {
                    tracing::debug!(%peer, "closed a connection over the client's connection limit");
                    state.status.metrics().connection_refused();
                    continue;
                }
            },
            _ => None,
        };
        // Responses leave in several writes (headers, body chunks): without this, Nagle's algorithm can hold the last
        // one back until the client's delayed acknowledgement, tens of milliseconds later.
        let _ = stream.set_nodelay(true);
        let activity = conn::Activity::new();
        let responder: conn::UnparsableResponder = {
            let state = state.clone();
            Arc::new(move |status| unparsable_request_response(&state, peer, status))
        };
        let io = conn::GuardedIo::new(stream, activity.clone(), state.config.write_timeout, responder);
        let service = {
            let (state, activity) = (state.clone(), activity.clone());
            hyper::service::service_fn(move |req| {
                let busy = activity.busy();
                let response = handle(req, state.clone(), peer);
                async move { Ok::<_, Infallible>(response.await?.map(|body| conn::TrackedBody::new(body, busy))) }
            })
        };
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service).into_owned();
        let timeouts = [state.config.idle_timeout, state.config.write_timeout];
        let (cancel, force) = (cancel.clone(), force.clone());
        let metrics = state.status.metrics().clone();
        metrics.connection(true);
        tracker.spawn(async move {
            let ended = conn::drive(connection, &activity, timeouts, &cancel, &force).await;
            tracing::debug!(%peer, ?ended, "connection closed");
            metrics.connection(false);
            drop((permit, peer_slot));
        });
    }
    drop(listener);
    state.ws.shutdown.cancel();
    state.ws.tracker.close();
    tracker.close();
    let drained = async {
        tracker.wait().await;
        state.ws.tracker.wait().await;
    };
    let clean = tokio::time::timeout(state.config.shutdown_grace, drained).await.is_ok();
    if clean {
        tracing::info!("http and websocket connections drained");
    } else {
        tracing::warn!("connections still open after the grace period: closing them");
        force.cancel();
        tracker.wait().await;
    }
    clean
}

/// Most concurrent HTTP/2 streams per connection.
const HTTP2_MAX_STREAMS: u32 = 256;

/// Largest HTTP/2 header list of one request, in bytes.
const HTTP2_MAX_HEADER_LIST: u32 = 64 << 10;

/// The whole HTTP/1.1 response that replaces hyper's bare answer to a request head it could not parse (bad request
/// line or header, URI or headers too long): a JSON message with the CORS and rate-limit headers of every response;
/// the connection closes after it.
fn unparsable_request_response(state: &AppState, peer: SocketAddr, status: StatusCode) -> Vec<u8> {
    let client = limits::client_ip(peer.ip(), &hyper::HeaderMap::new(), state.limiter.trusted_proxies());
    let verdict = state.limiter.check(client, Instant::now());
    let message = match status {
        StatusCode::URI_TOO_LONG => "URI too long",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "Request header fields too large",
        _ => "Malformed HTTP request",
    };
    let body = serde_json::json!({ "message": message }).to_string();
    let mut response = Response::new(Body::default());
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, body::JSON);
    add_cors(&mut response);
    limits::set_headers(response.headers_mut(), &verdict);
    let mut head = format!("HTTP/1.1 {} {}\r\n", status.as_u16(), status.canonical_reason().unwrap_or_default());
    for (name, value) in response.headers() {
        head.push_str(&format!("{name}: {}\r\n", String::from_utf8_lossy(value.as_bytes())));
    }
    head.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()));
    head.into_bytes()
}

/// Headers every response carries for browsers (Blockscout's frontend calls the API cross-origin).
fn add_cors(response: &mut Response<Body>) {
    let headers = response.headers_mut();
    headers.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    headers.insert(
        "access-control-expose-headers",
        HeaderValue::from_static(
            "x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, bypass-429-option, retry-after",
        ),
    );
}

/// The answer to a CORS preflight.
fn preflight(req: &Request<RequestBody>) -> Response<Body> {
    let mut response = Response::new(Body::default());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert("access-control-allow-methods", HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS"));
    let requested = req.headers().get("access-control-request-headers").cloned();
    headers.insert(
        "access-control-allow-headers",
        requested.unwrap_or_else(|| HeaderValue::from_static("content-type, updated-gas-oracle, show-scam-tokens")),
    );
    headers.insert("access-control-max-age", HeaderValue::from_static("86400"));
    response
}

async fn handle(req: Request<Incoming>, state: AppState, peer: SocketAddr) -> Result<Response<Body>, Infallible> {
    let started = Instant::now();
    let gzip_accepted = compress::accepts_gzip(req.headers());
    let client = limits::client_ip(peer.ip(), req.headers(), state.limiter.trusted_proxies());
    // A refused body is read to its end in the places of its client: behind a trusted proxy, the one it names.
    let req = RequestBody::wrap(req, client, &state.linger_places);
    let verdict = match auth::presented_api_key(req.headers(), req.uri().query()) {
        // A valid API key is limited by its own (larger) bucket, counted against the key, not the IP's anonymous
        // bucket; all keyed requests of one IP share one more bucket of the key's size, so keys of many free
        // accounts do not multiply it. An invalid key gets the anonymous limit of the IP and counts as a failed
        // authentication; once the IP's failure budget is spent, no key is checked (the anonymous limit, whatever
        // the key) until its window ends.
        Some(key)
            if state.limiter.enabled()
                && auth::looks_like_api_key(&key)
                && state.auth.failures.locked_for(client, Instant::now()).is_none() =>
        {
            let now = Instant::now();
            match state.accounts.verify_api_key(&key) {
                Ok(Some((key_id, _))) => match state.key_limiter.check(key_id, now) {
                    allowed @ Verdict::Allowed(_) => match state.keyed_ip_limiter.check(client, now) {
                        limited @ Verdict::Limited(_) => limited,
                        _ => allowed,
                    },
                    other => other,
                },
                _ => {
                    state.auth.failures.record(client, now);
                    state.limiter.check(client, now)
                }
            }
        }
        _ => state.limiter.check(client, Instant::now()),
    };
    let parsed = Route::parse(req.method(), req.uri().path(), req.uri().query());
    let label = router::route_label(req.method(), &parsed);
    // Preflights take a token like any request, and are refused like any request once the bucket is empty.
    let mut response = if let Verdict::Limited(_) = verdict {
        tracing::debug!(%client, "rate limited");
        state.status.metrics().rate_limited();
        if parsed.as_ref().is_ok_and(Route::is_rpc) {
            let message = "Too many requests";
            rpc::error_response(
                StatusCode::TOO_MANY_REQUESTS,
                serde_json::Value::Null,
                rpc::code::LIMIT_EXCEEDED,
                message,
            )
        } else if matches!(parsed, Ok(Route::Etherscan)) {
            etherscan::rate_limited()
        } else if matches!(parsed, Err(ApiError::NoRoute)) && state.config.ui && pages::is_page_path(req.uri().path()) {
            pages::rate_limited()
        } else {
            json_response(StatusCode::TOO_MANY_REQUESTS, &serde_json::json!({"message": "Too many requests"}))
        }
    } else if req.method() == Method::OPTIONS {
        preflight(&req)
    } else {
        // The account API's answers are personal even without credentials (a sign-in message, the token it gives).
        let private = auth::carries_credentials(req.headers(), req.uri().query())
            || req.uri().path().starts_with("/api/account/");
        let mut response = match parsed {
            Ok(route) if state.config.read_replica && route.writes() => ApiError::ReadReplica.into_response(),
            Ok(route) => {
                let (etherscan, json_rpc) = (matches!(route, Route::Etherscan), route.is_rpc());
                let served = async {
                    let viewer = if route.needs_account() {
                        Some(auth::require_account(req.headers(), &state, client)?)
                    } else if route.shows_private_data() {
                        auth::viewer(req.headers(), &state, client)?
                    } else {
                        None
                    };
                    let response = route.dispatch(req, &state, client).await?;
                    match viewer {
                        Some(account) => personalized(response, &state, account).await,
                        None => Ok(response),
                    }
                };
                match tokio::time::timeout(state.config.request_timeout, served).await {
                    Ok(result) => result.unwrap_or_else(ApiError::into_response),
                    // Etherscan-style and JSON-RPC clients read every answer in their own form.
                    Err(_) if etherscan => etherscan::refused(ApiError::Timeout),
                    Err(_) if json_rpc => timed_out(rpc::error_response(
                        StatusCode::SERVICE_UNAVAILABLE,
                        serde_json::Value::Null,
                        rpc::code::UPSTREAM_UNAVAILABLE,
                        "Request timed out",
                    )),
                    Err(_) => ApiError::Timeout.into_response(),
                }
            }
            Err(ApiError::NoRoute)
                if state.config.ui
                    && (req.method() == Method::GET || req.method() == Method::HEAD)
                    && pages::is_page_path(req.uri().path()) =>
            {
                let page = pages::serve(&state, req.uri().path(), req.uri().query(), req.headers());
                match tokio::time::timeout(state.config.request_timeout, page).await {
                    Ok(response) => response,
                    Err(_) => timed_out(pages::timed_out()),
                }
            }
            // Pages answer GET and HEAD only.
            Err(ApiError::NoRoute) if state.config.ui && pages::is_page_path(req.uri().path()) => {
                ApiError::MethodNotAllowed { allow: "GET, HEAD" }.into_response()
            }
            Err(e) => e.into_response(),
        };
        if private {
            // Answers to requests with credentials may hold one account's private data: never in shared caches.
            response.headers_mut().insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
            response.headers_mut().insert(hyper::header::VARY, HeaderValue::from_static("authorization, cookie"));
        }
        response
    };
    compress::apply(&mut response, gzip_accepted);
    add_cors(&mut response);
    limits::set_headers(response.headers_mut(), &verdict);
    let status = response.status();
    if let Some(FailureCause(cause)) = response.extensions_mut().remove::<FailureCause>() {
        tracing::warn!(route = label, %status, error = %cause, "request failed");
    }
    state.status.metrics().http_request(label, status.as_u16(), started.elapsed());
    Ok(response)
}

/// `response`, the answer to a request that ran out of time in its own form (a page, a JSON-RPC error), logged as
/// the API's own timeouts are.
fn timed_out(mut response: Response<Body>) -> Response<Body> {
    response.extensions_mut().insert(FailureCause(ApiError::Timeout.to_string()));
    response
}

/// A successful JSON response with `account`'s private tags and watchlist names written in (see
/// [`auth::personalize`]); other responses, and accounts with nothing to show, pass unchanged.
async fn personalized(
    response: Response<Body>,
    state: &AppState,
    account: Address,
) -> Result<Response<Body>, ApiError> {
    if response.status() != StatusCode::OK {
        return Ok(response);
    }
    let personal = state.accounts.personal(account).map_err(|e| ApiError::Internal(e.to_string()))?;
    if personal.is_empty() {
        return Ok(response);
    }
    let (mut parts, body) = response.into_parts();
    let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    if !auth::mentions(&bytes, &personal) {
        return Ok(Response::from_parts(parts, Body::new(bytes)));
    }
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Ok(Response::from_parts(parts, Body::new(bytes)));
    };
    auth::personalize(&mut value, &personal);
    let bytes = Bytes::from(serde_json::to_vec(&value).expect("JSON values serialize"));
    parts.headers.remove(CONTENT_LENGTH);
    Ok(Response::from_parts(parts, Body::new(bytes)))
}

/// Runs `f` on the blocking pool with a reader whose scans stop at `deadline`, at most [`STORE_READERS`] at once:
/// store reads never stall the async workers, and the request timeout ends a long scan instead of leaving it
/// running.
pub(crate) async fn blocking_read<T, F>(state: &AppState, deadline: tokio::time::Instant, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Reader<'_>) -> Result<T, ApiError> + Send + 'static,
{
    let permit = tokio::time::timeout_at(deadline, state.readers.clone().acquire_owned())
        .await
        .map_err(|_| ApiError::Timeout)?
        .map_err(|_| ApiError::Busy("the store is closing"))?;
    let store = state.store.clone();
    let until = deadline.into_std();
    let task = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        f(&store.view().until(until))
    });
    task.await.map_err(|e| ApiError::Internal(format!("read task failed: {e}")))?
}

/// Bytes of request bodies the server receives at once, over every connection (bodies of at most
/// [`SMALL_BODY`] are not counted): each body holds room for the bytes received so far while it is read; a body that
/// finds no room is refused with 503, so clients that start large bodies and never finish them cannot make the server
/// hold their limits times its connections.
pub const BODY_BUDGET: usize = 64 << 20;

/// Most of [`BODY_BUDGET`] one client's bodies hold at once (its largest body, 10 MiB, fits).
pub const BODY_SHARE: usize = BODY_BUDGET / 4;

/// Bodies this small are read without a reservation from [`BODY_BUDGET`].
const SMALL_BODY: usize = 64 << 10;

/// Reads a request body of at most `limit` bytes (the `Content-Length` is checked first, the stream as it comes)
/// within [`ApiConfig::body_timeout`] (a body that stops short of its length is the client's fault), inside the
/// server's [`BODY_BUDGET`]: past [`SMALL_BODY`], the bytes received so far hold their room in it, and in their
/// client's [`BODY_SHARE`], while the body arrives. Room is taken as bytes arrive, not for a declared length, so
/// connections that announce large bodies and send nothing hold nothing.
pub(crate) async fn read_body(
    state: &AppState,
    req: Request<RequestBody>,
    limit: usize,
    client: std::net::IpAddr,
) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt;
    let within = state.config.body_timeout();
    let declared = req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    // One client's bodies hold at most a quarter of the budget, so it cannot refuse everyone's.
    let client = Some(client).filter(|c| !state.limiter.spares_peer(*c));
    let mut body = req.into_body();
    let mut room = limits::Room::default();
    let read = async {
        let mut collected = bytes::BytesMut::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| ApiError::BadBody(e.to_string()))?;
            let Ok(data) = frame.into_data() else { continue };
            let total = collected.len() + data.len();
            if total > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            if total > SMALL_BODY {
                room.grow_to(total.div_ceil(1024), &state.body_budget, &state.body_shares, client).map_err(
                    |refused| match refused {
                        limits::RoomRefused::Share => {
                            ApiError::Throttled("too many large request bodies from this client at once".into())
                        }
                        limits::RoomRefused::Budget => {
                            ApiError::Busy("too many large request bodies are being received; retry shortly")
                        }
                    },
                )?;
            }
            collected.extend_from_slice(&data);
        }
        Ok(collected.freeze())
    };
    let read = tokio::time::timeout(within, read).await;
    // A client too slow to send its body within the time is not waited for again.
    read.map_err(|_| {
        body.abandon();
        ApiError::BodyTimeout { within }
    })?
}

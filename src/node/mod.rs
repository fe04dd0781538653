//! `Node`: the execution node as the indexer sees it, on alloy's provider (HTTP for requests, optional WebSocket
//! for `newHeads` wake-ups). Every call has a bounded timeout; retrying is the caller's choice ([`retry`]).

pub mod wire;

use crate::metrics::Metrics;
use alloy::primitives::{Address, Bytes, B256, U256, U64};
use alloy::providers::{Provider, ProviderBuilder, RootProvider, WsConnect};
use alloy::rpc::client::BatchRequest;
use futures_util::StreamExt;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wire::{RpcBlock, RpcBlockTrace, RpcCallFrame, RpcHead, RpcInitFrame, RpcPool, RpcReceipt, RpcTransaction};

/// What an `eth_call` came to.
#[derive(Debug, Clone)]
pub enum CallOutcome {
    /// The call returned these bytes.
    Returned(Bytes),
    /// The call reverted: the node's message and the revert data (empty when the node gives none).
    Reverted {
        /// The node's error message.
        message: String,
        /// The revert data.
        data: Bytes,
    },
}

/// Most `eth_getBalance` calls in one JSON-RPC batch.
pub const BALANCE_BATCH: usize = 100;
/// Balance batches of one [`Node::balances_at`] call in flight at once.
pub const BALANCE_BATCHES_IN_FLIGHT: usize = 4;

/// A failed node request.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NodeError {
    /// Connection refused, reset, DNS, HTTP status: the node is down or unreachable.
    #[error("node unreachable: {0}")]
    Transport(String),
    /// No answer within the request timeout.
    #[error("node did not answer within {0:?}")]
    Timeout(Duration),
    /// The node answered with a JSON-RPC error.
    #[error("node error {code}: {message}")]
    Rpc {
        /// JSON-RPC error code.
        code: i64,
        /// Message.
        message: String,
    },
    /// The node's answer did not make sense (wrong shape, receipts of another block).
    #[error("unexpected answer from node: {0}")]
    Invalid(String),
}

impl From<alloy::transports::TransportError> for NodeError {
    fn from(e: alloy::transports::TransportError) -> Self {
        use alloy::transports::RpcError;
        match e {
            RpcError::ErrorResp(payload) => NodeError::Rpc { code: payload.code, message: payload.message.to_string() },
            RpcError::DeserError { err, text } => {
                NodeError::Invalid(format!("{err}: {}", text.chars().take(200).collect::<String>()))
            }
            other => NodeError::Transport(redact_urls(&other.to_string())),
        }
    }
}

/// `text` with every URL in it cut to its scheme, host and port: a hosted node's URL carries its API key in the path
/// or the query (`https://…/v2/KEY`), and node errors are logged and shown by `/health`.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start =
            rest[..at].rfind(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c))).map_or(0, |i| i + 1);
        let end = rest[at..].find(|c: char| c.is_whitespace() || "\"'()<>,".contains(c)).map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..scheme_start]);
        out.push_str(&redact_url(&rest[scheme_start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `url` as `scheme://host:port`, with `/…` standing for any path or query and without credentials.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, after)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let authority = &after[..authority_end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let more = if after[authority_end..].trim_start_matches('/').is_empty() { "" } else { "/…" };
    format!("{scheme}://{host}{more}")
}

/// A block with full transactions and its receipts, exactly as the node returned them.
#[derive(Debug, Clone)]
pub struct RawBundle {
    /// The block.
    pub block: RpcBlock,
    /// Its receipts, in transaction order.
    pub receipts: Vec<RpcReceipt>,
}

/// The execution node.
#[derive(Debug, Clone)]
pub struct Node {
    provider: RootProvider,
    ws_url: Option<String>,
    timeout: Duration,
    metrics: Option<Arc<Metrics>>,
}

/// Parses JSON nested to any depth (the recursion grows the stack in segments instead of overflowing it).
fn parse_deep<R: serde::de::DeserializeOwned>(text: &str) -> Result<R, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = R::deserialize(serde_stacker::Deserializer::new(&mut deserializer))?;
    deserializer.end()?;
    Ok(value)
}

fn quantity(n: u64) -> String {
    format!("{n:#x}")
}

impl Node {
    /// A client for the node at `http_url` (and `ws_url` for head notifications, if given).
    pub fn new(http_url: &str, ws_url: Option<&str>, timeout: Duration) -> Result<Node, NodeError> {
        let url =
            http_url.parse().map_err(|e| NodeError::Invalid(format!("rpc url {:?}: {e}", redact_url(http_url))))?;
        Ok(Node { provider: RootProvider::new_http(url), ws_url: ws_url.map(str::to_owned), timeout, metrics: None })
    }

    /// This client, timing every request and counting its failures into `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Node {
        self.metrics = Some(metrics);
        self
    }

    /// Records one finished request.
    fn observe(&self, method: &str, started: Instant, ok: bool) {
        if let Some(metrics) = &self.metrics {
            metrics.node_request(method, started.elapsed(), ok);
        }
    }

    async fn call<R>(&self, method: &'static str, params: serde_json::Value) -> Result<R, NodeError>
    where
        R: serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + Unpin + 'static,
    {
        let started = Instant::now();
        let request = self.provider.raw_request::<_, R>(method.into(), params);
        let result = match tokio::time::timeout(self.timeout, request).await {
            Ok(result) => result.map_err(NodeError::from),
            Err(_) => Err(NodeError::Timeout(self.timeout)),
        };
        // A reverted `eth_call` is the node's answer, not its failure.
        let answered = match &result {
            Ok(_) => true,
            Err(NodeError::Rpc { .. }) => method == "eth_call",
            Err(_) => false,
        };
        self.observe(method, started, answered);
        result
    }

    /// `eth_chainId`.
    pub async fn chain_id(&self) -> Result<u64, NodeError> {
        Ok(self.call::<U64>("eth_chainId", serde_json::json!([])).await?.to())
    }

    /// The node's latest block header.
    pub async fn head(&self) -> Result<RpcHead, NodeError> {
        self.call::<Option<RpcHead>>("eth_getBlockByNumber", serde_json::json!(["latest", false]))
            .await?
            .ok_or_else(|| NodeError::Invalid("no latest block".into()))
    }

    /// The header at `number`, if the node has it.
    pub async fn header(&self, number: u64) -> Result<Option<RpcHead>, NodeError> {
        self.call("eth_getBlockByNumber", serde_json::json!([quantity(number), false])).await
    }

    /// Blocks `numbers` with full transactions, and their receipts, in one JSON-RPC batch (one HTTP round trip)
    /// when `receipts_with_blocks`; otherwise the blocks first, then one batch of receipts for the blocks that
    /// have transactions (a block without any needs none). One entry per number, in order: `None` where the node
    /// has no such block (yet). Every call of a batch is timed (in the metrics) with the batch's duration.
    pub async fn bundles(
        &self,
        numbers: RangeInclusive<u64>,
        receipts_with_blocks: bool,
    ) -> Result<Vec<Option<RawBundle>>, NodeError> {
        let started = Instant::now();
        let mut batch = BatchRequest::new(self.provider.client());
        let mut waiters = Vec::new();
        for number in numbers.clone() {
            let block = batch.add_call::<_, Option<RpcBlock>>("eth_getBlockByNumber", &(quantity(number), true))?;
            let receipts = match receipts_with_blocks {
                true => {
                    Some(batch.add_call::<_, Option<Vec<RpcReceipt>>>("eth_getBlockReceipts", &(quantity(number),))?)
                }
                false => None,
            };
            waiters.push((block, receipts));
        }
        let answers = async {
            batch.send().await?;
            let mut answers = Vec::with_capacity(waiters.len());
            for (block, receipts) in waiters {
                let receipts = match receipts {
                    Some(receipts) => Some(receipts.await?),
                    None => None,
                };
                answers.push((block.await?, receipts));
            }
            Ok(answers)
        };
        let calls = numbers.clone().count() * if receipts_with_blocks { 2 } else { 1 };
        let answers = self.timed_batch("eth_getBlockByNumber", calls, started, answers).await?;

        // Receipts not asked for yet: one more batch, for the blocks with transactions only.
        let wanted: Vec<u64> = answers
            .iter()
            .filter_map(|(block, receipts)| match (block, receipts) {
                (Some(block), None) if !block.transactions.is_empty() => Some(block.number.to::<u64>()),
                _ => None,
            })
            .collect();
        let mut late = std::collections::HashMap::new();
        if !wanted.is_empty() {
            let started = Instant::now();
            let mut batch = BatchRequest::new(self.provider.client());
            let waiters = wanted
                .iter()
                .map(|n| batch.add_call::<_, Option<Vec<RpcReceipt>>>("eth_getBlockReceipts", &(quantity(*n),)))
                .collect::<Result<Vec<_>, _>>()?;
            let receipts = async {
                batch.send().await?;
                futures_util::future::try_join_all(waiters).await
            };
            let receipts = self.timed_batch("eth_getBlockReceipts", wanted.len(), started, receipts).await?;
            late.extend(wanted.into_iter().zip(receipts));
        }
        Ok(answers
            .into_iter()
            .map(|(block, receipts)| {
                let block = block?;
                let receipts = match receipts {
                    Some(receipts) => receipts?,
                    None if block.transactions.is_empty() => Vec::new(),
                    None => late.remove(&block.number.to::<u64>()).flatten()?,
                };
                Some(RawBundle { block, receipts })
            })
            .collect())
    }

    /// Awaits the answers of a JSON-RPC batch of `calls` calls within the request timeout, timing each call as
    /// `method` (a node's refusal is an answer, not a failure).
    async fn timed_batch<T>(
        &self,
        method: &str,
        calls: usize,
        started: Instant,
        answers: impl std::future::Future<Output = Result<T, alloy::transports::TransportError>>,
    ) -> Result<T, NodeError> {
        let result = match tokio::time::timeout(self.timeout, answers).await {
            Ok(result) => result.map_err(NodeError::from),
            Err(_) => Err(NodeError::Timeout(self.timeout)),
        };
        let answered = matches!(result, Ok(_) | Err(NodeError::Rpc { .. }));
        for _ in 0..calls {
            self.observe(method, started, answered);
        }
        result
    }

    /// Every transaction in the node's pool (`txpool_content`: pending and queued).
    pub async fn pool(&self) -> Result<Vec<RpcTransaction>, NodeError> {
        let pool: RpcPool = self.call("txpool_content", serde_json::json!([])).await?;
        Ok(pool
            .pending
            .into_values()
            .chain(pool.queued.into_values())
            .flat_map(|by_nonce| by_nonce.into_values())
            .collect())
    }

    /// `eth_call` of `data` on `to` at block `number` (the latest when `None`): `Ok(None)` when the call reverts
    /// or the node refuses it.
    pub async fn call_contract(
        &self,
        to: Address,
        data: Bytes,
        number: Option<u64>,
    ) -> Result<Option<Bytes>, NodeError> {
        let block = number.map_or_else(|| serde_json::json!("latest"), |n| serde_json::json!(quantity(n)));
        match self.call::<Bytes>("eth_call", serde_json::json!([{"to": to, "data": data}, block])).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(NodeError::Rpc { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A call whose answer nests as deep as the EVM's calls do (traces: two JSON levels per call, up to 1,024
    /// calls), past `serde_json`'s usual limit of 128 levels: the answer is taken whole and parsed without a depth
    /// limit, on a stack that grows as the parse needs.
    async fn call_deep<R>(&self, method: &'static str, params: serde_json::Value) -> Result<R, NodeError>
    where
        R: serde::de::DeserializeOwned,
    {
        let raw: Box<serde_json::value::RawValue> = self.call(method, params).await?;
        parse_deep(raw.get()).map_err(|e| NodeError::Invalid(format!("{method}: {e}")))
    }

    /// The tracer options of a trace request: `tracer`, `config`, and a `timeout` of the request's own (as a Go
    /// duration), so a node that honours it (geth and its kin) stops a trace nobody waits for any more instead of
    /// computing it on while the request is tried again.
    fn tracer_options(&self, tracer: &str, config: Option<serde_json::Value>) -> serde_json::Value {
        let mut options = serde_json::json!({"tracer": tracer, "timeout": format!("{}ms", self.timeout.as_millis())});
        if let Some(config) = config {
            options["tracerConfig"] = config;
        }
        options
    }

    /// `callTracer` traces of every transaction of block `number`, in transaction order.
    pub async fn trace_block(&self, number: u64) -> Result<Vec<RpcBlockTrace>, NodeError> {
        let options = self.tracer_options("callTracer", None);
        self.call_deep("debug_traceBlockByNumber", serde_json::json!([quantity(number), options])).await
    }

    /// The `callTracer` trace of one transaction.
    pub async fn trace_transaction(&self, hash: B256) -> Result<RpcCallFrame, NodeError> {
        self.call_deep("debug_traceTransaction", serde_json::json!([hash, self.tracer_options("callTracer", None)]))
            .await
    }

    /// The call trace of transaction `hash` as far as creations' init code needs it; the node is asked to give up
    /// after `limit` (a node that honours the tracer's timeout).
    pub async fn creation_trace(&self, hash: B256, limit: Duration) -> Result<RpcInitFrame, NodeError> {
        let mut options = self.tracer_options("callTracer", None);
        options["timeout"] = serde_json::json!(format!("{}ms", limit.as_millis()));
        self.call_deep("debug_traceTransaction", serde_json::json!([hash, options])).await
    }

    /// A trace of one transaction with `tracer` and `config` as the node returns it (raw traces, state diffs).
    pub async fn trace_transaction_with(
        &self,
        hash: B256,
        tracer: &str,
        config: serde_json::Value,
    ) -> Result<serde_json::Value, NodeError> {
        let options = self.tracer_options(tracer, Some(config));
        self.call_deep("debug_traceTransaction", serde_json::json!([hash, options])).await
    }

    /// Native balance of `address` at block `number`.
    pub async fn balance(&self, address: Address, number: u64) -> Result<U256, NodeError> {
        self.call("eth_getBalance", serde_json::json!([address, quantity(number)])).await
    }

    /// Native balances of `addresses` after the block with hash `block` (EIP-1898 block hash, so a reorg can never
    /// answer for another block at that height), in JSON-RPC batches of at most [`BALANCE_BATCH`] calls.
    pub async fn balances_after(&self, addresses: &[Address], block: B256) -> Result<Vec<U256>, NodeError> {
        let queries: Vec<(Address, B256)> = addresses.iter().map(|address| (*address, block)).collect();
        self.balances_at(&queries).await?.into_iter().collect()
    }

    /// The native balance of each `(address, block hash)` after that block, in JSON-RPC batches of at most
    /// [`BALANCE_BATCH`] calls (so the balances of several blocks share round trips), [`BALANCE_BATCHES_IN_FLIGHT`]
    /// at a time. The outer error is a failed batch (transport, timeout); an inner one is the node's refusal of that
    /// one call (e.g. a pruned state).
    pub async fn balances_at(&self, queries: &[(Address, B256)]) -> Result<Vec<Result<U256, NodeError>>, NodeError> {
        self.account_quantities("eth_getBalance", queries).await
    }

    /// The nonce of each `(address, block hash)` after that block, batched and answered like
    /// [`Node::balances_at`].
    pub async fn nonces_at(&self, queries: &[(Address, B256)]) -> Result<Vec<Result<u64, NodeError>>, NodeError> {
        let answers = self.account_quantities("eth_getTransactionCount", queries).await?;
        Ok(answers
            .into_iter()
            .map(|answer| {
                answer.and_then(|n| u64::try_from(n).map_err(|_| NodeError::Invalid(format!("nonce {n} out of range"))))
            })
            .collect())
    }

    /// One quantity per `(address, block hash)` from the account method `method` (`eth_getBalance`,
    /// `eth_getTransactionCount`): batches of at most [`BALANCE_BATCH`] calls, [`BALANCE_BATCHES_IN_FLIGHT`] at a
    /// time.
    async fn account_quantities(
        &self,
        method: &'static str,
        queries: &[(Address, B256)],
    ) -> Result<Vec<Result<U256, NodeError>>, NodeError> {
        // Futures are lazy: collected first (a closure in the stream's type defeats the compiler's proof that the
        // callers' futures are `Send`), they still start only as `buffered` polls them.
        let batches: Vec<_> = queries.chunks(BALANCE_BATCH).map(|chunk| self.quantity_batch(method, chunk)).collect();
        let mut batches = futures_util::stream::iter(batches).buffered(BALANCE_BATCHES_IN_FLIGHT);
        let mut out = Vec::with_capacity(queries.len());
        while let Some(answers) = batches.next().await {
            out.extend(answers?);
        }
        Ok(out)
    }

    /// One JSON-RPC batch of [`Node::account_quantities`].
    async fn quantity_batch(
        &self,
        method: &'static str,
        chunk: &[(Address, B256)],
    ) -> Result<Vec<Result<U256, NodeError>>, NodeError> {
        let started = Instant::now();
        let mut batch = BatchRequest::new(self.provider.client());
        let waiters = chunk
            .iter()
            .map(|(address, block)| {
                batch.add_call::<_, U256>(method, &(address, serde_json::json!({"blockHash": block})))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let answers = async {
            batch.send().await?;
            Ok(futures_util::future::join_all(waiters).await)
        };
        let mut out = Vec::with_capacity(chunk.len());
        for answer in self.timed_batch(method, 1, started, answers).await? {
            match answer.map_err(NodeError::from) {
                Err(e @ (NodeError::Transport(_) | NodeError::Timeout(_) | NodeError::Invalid(_))) => return Err(e),
                answer => out.push(answer),
            }
        }
        Ok(out)
    }

    /// Native balance of `address` after the block with hash `block` (EIP-1898: never another branch's block).
    pub async fn balance_after(&self, address: Address, block: B256) -> Result<U256, NodeError> {
        self.call("eth_getBalance", serde_json::json!([address, {"blockHash": block}])).await
    }

    /// Code at `address` after the block with hash `block` (EIP-1898).
    pub async fn code_after(&self, address: Address, block: B256) -> Result<Bytes, NodeError> {
        self.call("eth_getCode", serde_json::json!([address, {"blockHash": block}])).await
    }

    /// Code at `address` at block `number`.
    pub async fn code(&self, address: Address, number: u64) -> Result<Bytes, NodeError> {
        self.call("eth_getCode", serde_json::json!([address, quantity(number)])).await
    }

    /// Storage word `slot` of `address` at block `number`.
    pub async fn storage(&self, address: Address, slot: B256, number: u64) -> Result<B256, NodeError> {
        self.call("eth_getStorageAt", serde_json::json!([address, slot, quantity(number)])).await
    }

    /// Replays a call at the state before block `number`; returns the revert data when it reverts (empty when the
    /// node gives no data), `None` when it succeeds.
    pub async fn revert_data(&self, call: serde_json::Value, number: u64) -> Result<Option<Bytes>, NodeError> {
        let params = serde_json::json!([call, quantity(number.saturating_sub(1))]);
        Ok(match self.call_outcome(params).await? {
            CallOutcome::Returned(_) => None,
            CallOutcome::Reverted { data, .. } => Some(data),
        })
    }

    /// `eth_call` of `call` at the node's latest block: what it returned, or how it reverted.
    pub async fn call_latest(&self, call: serde_json::Value) -> Result<CallOutcome, NodeError> {
        self.call_outcome(serde_json::json!([call, "latest"])).await
    }

    async fn call_outcome(&self, params: serde_json::Value) -> Result<CallOutcome, NodeError> {
        let started = Instant::now();
        let request = self.provider.raw_request::<_, Bytes>("eth_call".into(), params);
        let answer = tokio::time::timeout(self.timeout, request).await;
        // A revert is an answer, not a failure of the node.
        let answered = matches!(answer, Ok(Ok(_)) | Ok(Err(alloy::transports::RpcError::ErrorResp(_))));
        self.observe("eth_call", started, answered);
        match answer {
            Err(_) => Err(NodeError::Timeout(self.timeout)),
            Ok(Ok(bytes)) => Ok(CallOutcome::Returned(bytes)),
            Ok(Err(alloy::transports::RpcError::ErrorResp(payload))) => Ok(CallOutcome::Reverted {
                message: payload.message.to_string(),
                data: payload.as_revert_data().unwrap_or_default(),
            }),
            Ok(Err(e)) => Err(e.into()),
        }
    }

    /// Hash of block `number` on the node's canonical chain.
    pub async fn block_hash(&self, number: u64) -> Result<Option<B256>, NodeError> {
        Ok(self.header(number).await?.map(|h| h.hash))
    }

    /// Waits until the node may have a new head: a `newHeads` notification when a WebSocket URL is configured
    /// and reachable, otherwise `poll` elapses. Returns early on cancellation.
    pub fn head_signal(&self, poll: Duration, cancel: CancellationToken) -> HeadSignal {
        let (tx, rx) = tokio::sync::watch::channel(0u64);
        if let Some(url) = self.ws_url.clone() {
            tokio::spawn(follow_new_heads(url, tx, cancel));
        }
        HeadSignal { rx, poll }
    }
}

/// Wakes the follower when a new head may exist.
#[derive(Debug)]
pub struct HeadSignal {
    rx: tokio::sync::watch::Receiver<u64>,
    poll: Duration,
}

impl HeadSignal {
    /// Returns after a `newHeads` notification or after the poll interval, whichever comes first.
    pub async fn wait(&mut self) {
        let notified = async {
            if self.rx.changed().await.is_err() {
                // No notifier (no WebSocket URL, or its task ended): only the poll interval ends the wait.
                std::future::pending::<()>().await;
            }
        };
        let _ = tokio::time::timeout(self.poll, notified).await;
    }
}

/// How long a `newHeads` subscription may stay silent before its connection is asked for the head, and how long
/// connecting, subscribing or that question may take: a node that accepts connections but answers nothing (locked
/// up) left alloy's own reconnection, and with it the subscription, waiting for good while the follower polled.
const QUIET_SUBSCRIPTION: Duration = Duration::from_secs(30);

/// Why a `newHeads` subscription was left.
#[derive(Debug, thiserror::Error)]
enum SubscriptionEnded {
    #[error(transparent)]
    Transport(#[from] alloy::transports::TransportError),
    #[error("the connection did not answer within {0:?}")]
    Silent(Duration),
    #[error("the node's head moved to {head} without a notification since {notified}")]
    Stale { head: u64, notified: u64 },
}

/// `future`'s outcome, or [`SubscriptionEnded::Silent`] after [`QUIET_SUBSCRIPTION`].
async fn within_quiet<T, E>(future: impl std::future::Future<Output = Result<T, E>>) -> Result<T, SubscriptionEnded>
where
    SubscriptionEnded: From<E>,
{
    match tokio::time::timeout(QUIET_SUBSCRIPTION, future).await {
        Ok(outcome) => Ok(outcome?),
        Err(_) => Err(SubscriptionEnded::Silent(QUIET_SUBSCRIPTION)),
    }
}

async fn follow_new_heads(url: String, tx: tokio::sync::watch::Sender<u64>, cancel: CancellationToken) {
    let mut backoff = Backoff::new();
    while !cancel.is_cancelled() {
        let connected = async {
            let provider = within_quiet(ProviderBuilder::new().connect_ws(WsConnect::new(url.clone()))).await?;
            let mut stream = within_quiet(async { provider.subscribe_blocks().await }).await?.into_stream();
            let mut notified = within_quiet(provider.get_block_number()).await?;
            tracing::info!(url = %redact_url(&url), "following newHeads over websocket");
            loop {
                match tokio::time::timeout(QUIET_SUBSCRIPTION, stream.next()).await {
                    Ok(Some(header)) => {
                        notified = notified.max(header.number);
                        tx.send_replace(header.number);
                    }
                    Ok(None) => return Ok(()),
                    // Silent: an idle chain, or a connection (or alloy's reconnection) that answers nothing.
                    Err(_) => match within_quiet(provider.get_block_number()).await? {
                        head if head <= notified => {}
                        head => return Err(SubscriptionEnded::Stale { head, notified }),
                    },
                }
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => return,
            result = connected => {
                if let Err(e) = result {
                    let error = redact_urls(&e.to_string());
                    tracing::warn!(url = %redact_url(&url), %error, "websocket head subscription failed; polling meanwhile");
                }
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

/// Capped exponential backoff: 100 ms doubling up to 5 s.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    /// Starts at the shortest delay.
    pub fn new() -> Self {
        Backoff { next: Duration::from_millis(100) }
    }

    /// The delay to wait now; the following one doubles, up to 5 s.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(Duration::from_secs(5));
        delay
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_errors_keep_host_and_port_only() {
        let error = "error sending request for url (http://user:pw@127.0.0.1:19399/v2/SECRETKEY123)";
        assert_eq!(redact_urls(error), "error sending request for url (http://127.0.0.1:19399/…)");
        assert_eq!(redact_url("wss://node.example/ws?key=abc"), "wss://node.example/…");
        assert_eq!(redact_url("http://127.0.0.1:8545"), "http://127.0.0.1:8545");
        assert_eq!(redact_url("http://127.0.0.1:8545/"), "http://127.0.0.1:8545");
        let two = "a https://x.io/k1 then \"ws://y:1/k2\" end";
        assert_eq!(redact_urls(two), "a https://x.io/… then \"ws://y:1/…\" end");
        assert_eq!(redact_urls("no url here"), "no url here");
    }

    #[test]
    fn init_code_is_the_creating_frame_s_input() {
        let (factory, child, other) = (Address::repeat_byte(1), Address::repeat_byte(2), Address::repeat_byte(3));
        let trace = serde_json::json!({
            "type": "CALL", "from": Address::repeat_byte(9), "to": factory, "input": "0xaa",
            "calls": [
                {"type": "CREATE", "from": factory, "to": other, "input": "0x6001"},
                {"type": "CALL", "from": factory, "to": child, "input": "0xbb"},
                {"type": "DELEGATECALL", "from": factory, "to": factory, "input": "0xcc", "calls": [
                    {"type": "CREATE2", "from": factory, "to": child, "input": "0x6002"}
                ]}
            ]
        });
        let root: RpcInitFrame = parse_deep(&trace.to_string()).unwrap();
        assert_eq!(
            root.init_code_of(child),
            Some(&Bytes::from_static(&[0x60, 0x02])),
            "a call to it is not its creation"
        );
        assert_eq!(root.init_code_of(other), Some(&Bytes::from_static(&[0x60, 0x01])));
        assert_eq!(root.init_code_of(factory), None, "the called contract was not created here");
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let mut b = Backoff::new();
        let delays: Vec<_> = (0..8).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    }

    /// Without a WebSocket URL nothing notifies: each wait lasts the whole poll interval (it once returned at once,
    /// and the follower asked the node for its head in a tight loop).
    #[tokio::test]
    async fn without_notifications_a_wait_lasts_the_poll_interval() {
        let node = Node::new("http://127.0.0.1:9", None, Duration::from_secs(1)).unwrap();
        let poll = Duration::from_millis(50);
        let mut signal = node.head_signal(poll, CancellationToken::new());
        for _ in 0..3 {
            let started = tokio::time::Instant::now();
            signal.wait().await;
            assert!(started.elapsed() >= poll, "a wait ended after {:?}", started.elapsed());
        }
    }
}

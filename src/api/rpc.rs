//! `POST /api/eth`: JSON-RPC 2.0 passthrough to the node, behind an explicit allow-list and bounds on what a caller
//! can make the node do.
//!
//! Every method name is looked up, byte for byte, in [`METHODS`]; anything not listed is refused locally (-32601)
//! and never reaches the node. Listed methods are forwarded, forwarded only under a switch (raw transaction
//! submission; the `debug_trace*`/`debug_getRaw*` family with tracing), or answered locally (`eth_accounts`).
//! Methods that make the node execute or scan are guarded: calls get their `gas` capped, `eth_getLogs` a block
//! range cap (and a result cap on the answer), traces a tracer `timeout`. Guarded requests are re-encoded from the
//! checked values, so the node sees exactly what was checked; all other requests go out as the exact bytes
//! received, and answers come back as the exact bytes the node sent. Each client IP has a few requests in flight
//! at most, and all node answers together hold at most a fixed byte budget.

use super::body::{raw_json_response, Body};
use super::limits::{ConcurrencyLimiter, Room, RoomRefused};
pub(super) use alloy::transports::http::reqwest;
use bytes::Bytes;
use hyper::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// JSON-RPC error codes used here.
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC request (or batch too large, or body too large).
    pub const INVALID_REQUEST: i64 = -32600;
    /// Method not found or not allowed.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Parameters a guard cannot read (e.g. a block tag of `eth_getLogs`).
    pub const INVALID_PARAMS: i64 = -32602;
    /// The node could not be reached.
    pub const UPSTREAM_UNAVAILABLE: i64 = -32000;
    /// A bound was hit: rate, concurrency, bytes in flight, log range or results (EIP-1474's "limit exceeded").
    pub const LIMIT_EXCEEDED: i64 = -32005;
}

/// Passthrough settings.
#[derive(Debug, Clone)]
pub struct RpcConfig {
    /// Forward the read-only `debug_trace*`/`debug_getRaw*` methods (the daemon runs with tracing).
    pub allow_debug: bool,
    /// Forward `eth_sendRawTransaction` and `eth_sendRawTransactionSync`.
    pub allow_send_raw: bool,
    /// Most requests in one batch.
    pub max_batch: usize,
    /// Largest request body, bytes.
    pub max_body: usize,
    /// Largest node answer passed back, bytes.
    pub max_response: usize,
    /// Time the node has to answer.
    pub upstream_timeout: Duration,
    /// Most gas a call (`eth_call`, `eth_estimateGas`, `eth_createAccessList`, `debug_traceCall`) may use.
    pub gas_cap: u64,
    /// Widest block range of one `eth_getLogs`.
    pub max_log_range: u64,
    /// Most logs one `eth_getLogs` answer may hold.
    pub max_log_results: usize,
    /// Longest tracer `timeout` passed to `debug_trace*`.
    pub trace_timeout: Duration,
    /// Most passthrough requests in flight per client IP.
    pub max_concurrent_per_client: usize,
    /// Most bytes of node answers held at once, all clients together.
    pub max_inflight_bytes: usize,
}

impl Default for RpcConfig {
    fn default() -> Self {
        RpcConfig {
            allow_debug: false,
            allow_send_raw: true,
            max_batch: 100,
            max_body: 1 << 20,
            max_response: 32 << 20,
            upstream_timeout: Duration::from_secs(10),
            gas_cap: 50_000_000,
            max_log_range: 10_000,
            max_log_results: 10_000,
            trace_timeout: Duration::from_secs(5),
            max_concurrent_per_client: 8,
            max_inflight_bytes: 128 << 20,
        }
    }
}

/// Under which condition a listed method is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Always forwarded.
    Forward,
    /// Forwarded unless `--no-send-raw-transaction`.
    ForwardIfSendRaw,
    /// Forwarded with `--tracing`.
    ForwardIfTracing,
    /// Answered locally with `[]` (the node's accounts are not the public's).
    AnswerEmptyList,
}

/// What is checked or rewritten in a forwarded request's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Forwarded as received.
    None,
    /// `params[0]` is a call object: its `gas` is capped.
    GasCap,
    /// `params[0]` is a log filter: its block range is capped, and so is the number of results.
    LogRange,
    /// `params[n]` is a tracer config: its `timeout` is capped.
    TraceTimeout(usize),
    /// `debug_traceCall`: gas cap on `params[0]`, trace timeout on `params[2]`.
    TraceCall,
}

/// The allow-list: every method served, how, and what is guarded. Anything else is refused.
pub const METHODS: &[(&str, Access, Guard)] = &[
    ("web3_clientVersion", Access::Forward, Guard::None),
    ("web3_sha3", Access::Forward, Guard::None),
    ("net_version", Access::Forward, Guard::None),
    ("net_listening", Access::Forward, Guard::None),
    ("net_peerCount", Access::Forward, Guard::None),
    ("eth_chainId", Access::Forward, Guard::None),
    ("eth_blockNumber", Access::Forward, Guard::None),
    ("eth_syncing", Access::Forward, Guard::None),
    ("eth_protocolVersion", Access::Forward, Guard::None),
    ("eth_gasPrice", Access::Forward, Guard::None),
    ("eth_maxPriorityFeePerGas", Access::Forward, Guard::None),
    ("eth_blobBaseFee", Access::Forward, Guard::None),
    ("eth_feeHistory", Access::Forward, Guard::None),
    ("eth_getBalance", Access::Forward, Guard::None),
    ("eth_getCode", Access::Forward, Guard::None),
    ("eth_getStorageAt", Access::Forward, Guard::None),
    ("eth_getTransactionCount", Access::Forward, Guard::None),
    ("eth_getProof", Access::Forward, Guard::None),
    ("eth_getBlockByNumber", Access::Forward, Guard::None),
    ("eth_getBlockByHash", Access::Forward, Guard::None),
    ("eth_getBlockReceipts", Access::Forward, Guard::None),
    ("eth_getBlockTransactionCountByNumber", Access::Forward, Guard::None),
    ("eth_getBlockTransactionCountByHash", Access::Forward, Guard::None),
    ("eth_getUncleCountByBlockNumber", Access::Forward, Guard::None),
    ("eth_getUncleCountByBlockHash", Access::Forward, Guard::None),
    ("eth_getUncleByBlockNumberAndIndex", Access::Forward, Guard::None),
    ("eth_getUncleByBlockHashAndIndex", Access::Forward, Guard::None),
    ("eth_getTransactionByHash", Access::Forward, Guard::None),
    ("eth_getTransactionByBlockNumberAndIndex", Access::Forward, Guard::None),
    ("eth_getTransactionByBlockHashAndIndex", Access::Forward, Guard::None),
    ("eth_getTransactionReceipt", Access::Forward, Guard::None),
    ("eth_getRawTransactionByHash", Access::Forward, Guard::None),
    ("eth_call", Access::Forward, Guard::GasCap),
    ("eth_estimateGas", Access::Forward, Guard::GasCap),
    ("eth_createAccessList", Access::Forward, Guard::GasCap),
    ("eth_getLogs", Access::Forward, Guard::LogRange),
    ("eth_sendRawTransaction", Access::ForwardIfSendRaw, Guard::None),
    ("eth_sendRawTransactionSync", Access::ForwardIfSendRaw, Guard::None),
    ("eth_accounts", Access::AnswerEmptyList, Guard::None),
    ("eth_requestAccounts", Access::AnswerEmptyList, Guard::None),
    ("debug_traceTransaction", Access::ForwardIfTracing, Guard::TraceTimeout(1)),
    ("debug_traceBlockByNumber", Access::ForwardIfTracing, Guard::TraceTimeout(1)),
    ("debug_traceBlockByHash", Access::ForwardIfTracing, Guard::TraceTimeout(1)),
    ("debug_traceBlock", Access::ForwardIfTracing, Guard::TraceTimeout(1)),
    ("debug_traceCall", Access::ForwardIfTracing, Guard::TraceCall),
    ("debug_getRawHeader", Access::ForwardIfTracing, Guard::None),
    ("debug_getRawBlock", Access::ForwardIfTracing, Guard::None),
    ("debug_getRawTransaction", Access::ForwardIfTracing, Guard::None),
    ("debug_getRawReceipts", Access::ForwardIfTracing, Guard::None),
];

/// What to do with one method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send it to the node, with this guard.
    Forward(Guard),
    /// Answer locally with this result.
    Answer(Value),
    /// Refuse with this message.
    Refuse(String),
}

/// A method name as shown in messages: quoted and escaped (a trailing space or NUL is visible), cut at 64 chars.
fn shown(method: &str) -> String {
    let cut: String = method.chars().take(64).collect();
    format!("{cut:?}")
}

/// The allow-list lookup: exact bytes, no prefixes.
pub fn decide(method: &str, config: &RpcConfig) -> Decision {
    match METHODS.iter().find(|(name, _, _)| *name == method) {
        Some((_, Access::Forward, guard)) => Decision::Forward(*guard),
        Some((_, Access::ForwardIfSendRaw, guard)) if config.allow_send_raw => Decision::Forward(*guard),
        Some((_, Access::ForwardIfSendRaw, _)) => {
            Decision::Refuse(format!("method {} is disabled on this explorer", shown(method)))
        }
        Some((_, Access::ForwardIfTracing, guard)) if config.allow_debug => Decision::Forward(*guard),
        Some((_, Access::ForwardIfTracing, _)) => {
            Decision::Refuse(format!("method {} is not available: tracing is not enabled", shown(method)))
        }
        Some((_, Access::AnswerEmptyList, _)) => Decision::Answer(json!([])),
        None => Decision::Refuse(refusal(method)),
    }
}

/// Why an unlisted method is refused.
fn refusal(method: &str) -> String {
    const NODE_KEYS: &[&str] = &[
        "eth_sendTransaction",
        "eth_sendTransactionSync",
        "eth_sendUnsignedTransaction",
        "eth_sign",
        "eth_signTransaction",
    ];
    if NODE_KEYS.contains(&method) || method.starts_with("eth_signTypedData") || method.starts_with("personal_") {
        format!("method {} is not available: it uses keys held by the node", shown(method))
    } else if matches!(method, "eth_subscribe" | "eth_unsubscribe") {
        format!("method {} is not available over HTTP", shown(method))
    } else {
        format!("the method {} does not exist/is not available", shown(method))
    }
}

/// The members of a request; any other member (say `"METHOD"`, which a case-insensitive parser on the node would
/// take for `method`) or a duplicate makes it an invalid request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Probe<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
}

/// Keeps `"id": null` distinct from a missing id (a notification).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// What happens to one request of a call.
#[derive(Debug)]
enum Action {
    /// Sent to the node: the original bytes, or the re-encoded guarded request. `logs`: the answer's result count
    /// is checked; `trace`: a trace, which needs one of the node-trace permits.
    Forward { rewritten: Option<String>, logs: bool, trace: bool },
    /// Answered locally.
    Answer(Value),
    /// Refused locally.
    Refuse { code: i64, message: String },
}

/// One request of a call, classified.
struct Item<'a> {
    raw: &'a RawValue,
    id: Option<&'a RawValue>,
    action: Action,
}

impl Item<'_> {
    fn forwarded(&self) -> bool {
        matches!(self.action, Action::Forward { .. })
    }

    fn checks_logs(&self) -> bool {
        matches!(self.action, Action::Forward { logs: true, .. })
    }

    /// The bytes sent to the node.
    fn outgoing(&self) -> &str {
        match &self.action {
            Action::Forward { rewritten: Some(text), .. } => text,
            _ => self.raw.get(),
        }
    }

    fn id_value(&self) -> Value {
        self.id.map(|r| serde_json::from_str(r.get()).unwrap_or(Value::Null)).unwrap_or(Value::Null)
    }

    /// The local response of a refused or locally answered request (`None` for a notification or a forwarded one).
    fn local_response(&self) -> Option<Value> {
        self.id?;
        match &self.action {
            Action::Answer(result) => Some(json!({"jsonrpc": "2.0", "id": self.id_value(), "result": result})),
            Action::Refuse { code, message } => Some(error_value(self.id_value(), *code, message)),
            Action::Forward { .. } => None,
        }
    }
}

fn error_value(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A JSON-RPC error response with `status`.
pub fn error_response(status: StatusCode, id: Value, code: i64, message: &str) -> hyper::Response<Body> {
    let bytes = serde_json::to_vec(&error_value(id, code, message)).expect("json serializes");
    raw_json_response(status, Bytes::from(bytes))
}

/// What the guards need besides the configuration.
struct Context<'c> {
    config: &'c RpcConfig,
    /// The node's head as the follower last saw it (resolves `latest` in log filters).
    node_head: Option<u64>,
}

fn classify<'a>(raw: &'a RawValue, context: &Context<'_>) -> Item<'a> {
    let refuse = |id: Option<&'a RawValue>, code: i64, message: String| Item {
        raw,
        id,
        action: Action::Refuse { code, message },
    };
    let probe = match serde_json::from_str::<Probe<'a>>(raw.get()) {
        Ok(probe) => probe,
        Err(e) => {
            return refuse(Some(null_raw()), code::INVALID_REQUEST, format!("invalid request: {e}"));
        }
    };
    let (Some(version), Some(method)) = (&probe.jsonrpc, &probe.method) else {
        let message = "invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": …}".to_owned();
        return refuse(Some(probe.id.unwrap_or(null_raw())), code::INVALID_REQUEST, message);
    };
    if version != "2.0" {
        let message = "invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": …}".to_owned();
        return refuse(Some(probe.id.unwrap_or(null_raw())), code::INVALID_REQUEST, message);
    }
    let id = probe.id;
    match decide(method, context.config) {
        Decision::Answer(result) => Item { raw, id, action: Action::Answer(result) },
        Decision::Refuse(message) => refuse(id, code::METHOD_NOT_FOUND, message),
        Decision::Forward(Guard::None) => {
            Item { raw, id, action: Action::Forward { rewritten: None, logs: false, trace: false } }
        }
        Decision::Forward(guard) => match guarded(method, probe.params, id, guard, context) {
            Ok(text) => {
                let (logs, trace) =
                    (guard == Guard::LogRange, matches!(guard, Guard::TraceTimeout(_) | Guard::TraceCall));
                Item { raw, id, action: Action::Forward { rewritten: Some(text), logs, trace } }
            }
            Err((code, message)) => refuse(id, code, message),
        },
    }
}

fn null_raw() -> &'static RawValue {
    static NULL: std::sync::OnceLock<Box<RawValue>> = std::sync::OnceLock::new();
    NULL.get_or_init(|| RawValue::from_string("null".into()).expect("null is JSON"))
}

/// Applies `guard` to the parameters and re-encodes the request from the checked values.
fn guarded(
    method: &str,
    params: Option<&RawValue>,
    id: Option<&RawValue>,
    guard: Guard,
    context: &Context<'_>,
) -> Result<String, (i64, String)> {
    let mut params: Vec<Value> = match params {
        None => Vec::new(),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|_| (code::INVALID_PARAMS, format!("invalid params of {}: expected an array", shown(method))))?,
    };
    let config = context.config;
    match guard {
        Guard::None => {}
        Guard::GasCap => cap_call_gas(params.get_mut(0), config.gas_cap),
        Guard::LogRange => check_log_range(params.get_mut(0), config.max_log_range, context.node_head)?,
        Guard::TraceTimeout(index) => cap_trace_timeout(&mut params, index, config.trace_timeout),
        Guard::TraceCall => {
            cap_call_gas(params.get_mut(0), config.gas_cap);
            cap_trace_timeout(&mut params, 2, config.trace_timeout);
        }
    }
    let mut request = Map::new();
    request.insert("jsonrpc".into(), json!("2.0"));
    if let Some(id) = id {
        request.insert("id".into(), serde_json::from_str(id.get()).unwrap_or(Value::Null));
    }
    request.insert("method".into(), json!(method));
    request.insert("params".into(), Value::Array(params));
    Ok(Value::Object(request).to_string())
}

/// Removes every member whose name equals `name` ignoring ASCII case (a case-insensitive parser on the node would
/// read any of them) and returns the value of the exactly named one, else of the first variant.
fn take_member(object: &mut Map<String, Value>, name: &str) -> Option<Value> {
    let variants: Vec<String> = object.keys().filter(|k| k.eq_ignore_ascii_case(name)).cloned().collect();
    let exact = object.get(name).cloned();
    let mut first = None;
    for key in variants {
        let value = object.remove(&key);
        first = first.or(value);
    }
    exact.or(first)
}

/// A quantity as a node reads it: a `0x` hex string or a JSON number.
fn quantity(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) => u64::from_str_radix(s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?, 16).ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// Sets a call object's `gas` to the cap when it is missing, unreadable or larger (`gasLimit` and other spellings
/// are folded into `gas`).
fn cap_call_gas(call: Option<&mut Value>, cap: u64) {
    let Some(Value::Object(call)) = call else { return };
    let gas = take_member(call, "gas");
    let limit = take_member(call, "gasLimit");
    let wanted = gas.or(limit).as_ref().and_then(quantity).map_or(cap, |g| g.min(cap));
    call.insert("gas".into(), json!(format!("{wanted:#x}")));
}

/// A block of a log filter, resolved against the node's head.
fn filter_block(value: Option<Value>, head: Option<u64>) -> Result<u64, String> {
    match value {
        None | Some(Value::Null) => Ok(head.unwrap_or(u64::MAX)),
        Some(Value::String(tag)) if matches!(tag.as_str(), "latest" | "safe" | "finalized" | "pending") => {
            Ok(head.unwrap_or(u64::MAX))
        }
        Some(Value::String(tag)) if tag == "earliest" => Ok(0),
        Some(other) => quantity(&other).ok_or_else(|| format!("invalid block {other} in the log filter")),
    }
}

/// Refuses a log filter spanning more than `max_range` blocks (`latest` and the other head tags, or a missing bound,
/// are the node's head as last seen; while no head was seen yet they count as the highest block, so only a range
/// between two head tags passes). A `blockHash` filter is one block.
fn check_log_range(filter: Option<&mut Value>, max_range: u64, head: Option<u64>) -> Result<(), (i64, String)> {
    let Some(Value::Object(filter)) = filter else { return Ok(()) };
    let hash = take_member(filter, "blockHash");
    let from = take_member(filter, "fromBlock");
    let to = take_member(filter, "toBlock");
    let invalid = |message| (code::INVALID_PARAMS, message);
    let (from_block, to_block) = if hash.is_some() {
        (0, 0)
    } else {
        (filter_block(from.clone(), head).map_err(invalid)?, filter_block(to.clone(), head).map_err(invalid)?)
    };
    let width = if to_block < from_block { 0 } else { (to_block - from_block).saturating_add(1) };
    if width > max_range {
        let message = format!(
            "the block range of eth_getLogs spans more than {max_range} blocks; ask for a smaller range (the \
             explorer's limit)"
        );
        return Err((code::LIMIT_EXCEEDED, message));
    }
    for (name, value) in [("blockHash", hash), ("fromBlock", from), ("toBlock", to)] {
        if let Some(value) = value {
            filter.insert(name.into(), value);
        }
    }
    Ok(())
}

/// A Go duration (`"5s"`, `"1m30s"`, `"250ms"`), as geth reads a tracer `timeout`.
fn go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).filter(|&i| i > 0)?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
}

/// Sets the tracer config's `timeout` (at `params[index]`) to the cap when it is missing, unreadable or longer.
fn cap_trace_timeout(params: &mut Vec<Value>, index: usize, cap: Duration) {
    if params.len() == index {
        params.push(json!({}));
    }
    let Some(options) = params.get_mut(index) else { return };
    if options.is_null() {
        *options = json!({});
    }
    let Value::Object(options) = options else { return };
    let asked = take_member(options, "timeout");
    let wanted = asked.as_ref().and_then(Value::as_str).and_then(go_duration).map_or(cap, |t| t.min(cap));
    options.insert("timeout".into(), json!(format!("{}ms", wanted.as_millis())));
}

/// Why a forward failed.
#[derive(Debug)]
enum Failure {
    /// The node is down, silent or sent too much: 502.
    Upstream(String),
    /// The explorer's byte budget for node answers is spent: 503.
    Busy(String),
    /// The client's share of that budget is spent: 429.
    Throttled(String),
}

impl Failure {
    fn status_code_message(&self) -> (StatusCode, i64, &str) {
        match self {
            Failure::Upstream(m) => (StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, m),
            Failure::Busy(m) => (StatusCode::SERVICE_UNAVAILABLE, code::LIMIT_EXCEEDED, m),
            Failure::Throttled(m) => (StatusCode::TOO_MANY_REQUESTS, code::LIMIT_EXCEEDED, m),
        }
    }
}

/// A node answer, holding its share of the byte budget.
struct Answer {
    status: StatusCode,
    bytes: Vec<u8>,
    permit: Room,
}

/// Bytes of an answer body that give their share of the budget back only when the body is dropped (sent).
struct Budgeted {
    bytes: Vec<u8>,
    _room: Room,
}

impl AsRef<[u8]> for Budgeted {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

fn budgeted(bytes: Vec<u8>, room: Room) -> Bytes {
    Bytes::from_owner(Budgeted { bytes, _room: room })
}

/// The passthrough: its settings, the pooled upstream client and its bounds.
#[derive(Debug)]
pub struct Passthrough {
    config: RpcConfig,
    client: reqwest::Client,
    slots: ConcurrencyLimiter,
    /// Node answers held, in KiB.
    budget: Arc<Semaphore>,
    /// KiB of `budget` each client's answers hold: a quarter of it, or one whole answer if that is more.
    shares: ConcurrencyLimiter,
    /// One permit per trace asked of the node, shared with the REST routes that trace.
    traces: Arc<Semaphore>,
}

/// The refusal of a trace request while the node computes as many as the explorer allows at once.
const TRACES_BUSY: &str = "the node is computing other transaction traces; retry shortly";

impl Passthrough {
    /// A passthrough with `config`, tracing within `traces`' permits.
    pub fn new(config: RpcConfig, traces: Arc<Semaphore>) -> Self {
        let kib = config.max_inflight_bytes.div_ceil(1024).clamp(1, Semaphore::MAX_PERMITS);
        Passthrough {
            client: reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(60)).build().unwrap_or_default(),
            slots: ConcurrencyLimiter::new(config.max_concurrent_per_client, 100_000),
            budget: Arc::new(Semaphore::new(kib)),
            shares: ConcurrencyLimiter::new((kib / 4).max(config.max_response.div_ceil(1024)), 100_000),
            traces,
            config,
        }
    }

    /// Takes a node-trace permit for each trace request among `items`, in order; those that find none left are
    /// refused (a trace of a large transaction holds a node for seconds to minutes, whatever its `timeout`).
    fn admit_traces(&self, items: &mut [Item<'_>]) -> Vec<OwnedSemaphorePermit> {
        let mut permits = Vec::new();
        for item in items.iter_mut().filter(|i| matches!(i.action, Action::Forward { trace: true, .. })) {
            match self.traces.clone().try_acquire_owned() {
                Ok(permit) => permits.push(permit),
                Err(_) => item.action = Action::Refuse { code: code::LIMIT_EXCEEDED, message: TRACES_BUSY.into() },
            }
        }
        permits
    }

    /// The settings.
    pub fn config(&self) -> &RpcConfig {
        &self.config
    }

    /// Passthrough requests in flight (admitted and not yet answered), all clients together.
    pub fn in_flight(&self) -> usize {
        self.slots.total_in_flight()
    }

    /// Takes one of `client`'s passthrough slots (held while the returned guard lives), or answers 429.
    pub fn admit(&self, client: IpAddr) -> Result<super::limits::Slot, Box<hyper::Response<Body>>> {
        self.slots.try_acquire(client).ok_or_else(|| {
            let message = format!(
                "too many concurrent requests from this client (limit {}); wait for an answer before sending more",
                self.config.max_concurrent_per_client
            );
            Box::new(error_response(StatusCode::TOO_MANY_REQUESTS, Value::Null, code::LIMIT_EXCEEDED, &message))
        })
    }

    /// Sends `body` to the node; returns its answer, read within the per-answer limit and the shared budget.
    async fn forward(&self, url: &str, body: Bytes, client: IpAddr) -> Result<Answer, Failure> {
        let timeout = self.config.upstream_timeout;
        let request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .timeout(timeout)
            .send();
        let mut response = request.await.map_err(|e| {
            Failure::Upstream(if e.is_timeout() {
                format!("the node did not answer within {timeout:?}")
            } else {
                format!("the node is unreachable ({})", e.without_url())
            })
        })?;
        let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let mut bytes = Vec::new();
        let mut room = Room::default();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failure::Upstream(format!("reading the node's answer: {}", e.without_url())))?
        {
            if bytes.len() + chunk.len() > self.config.max_response {
                return Err(Failure::Upstream(format!("the node's answer exceeds {} bytes", self.config.max_response)));
            }
            let kib = (bytes.len() + chunk.len()).div_ceil(1024);
            room.grow_to(kib, &self.budget, &self.shares, Some(client)).map_err(|refused| match refused {
                RoomRefused::Share => Failure::Throttled(format!(
                    "this client holds too many node answers at once ({} bytes); try again shortly",
                    self.shares.per_client() << 10
                )),
                RoomRefused::Budget => Failure::Busy(format!(
                    "the explorer holds too many node answers at once ({} bytes); try again shortly",
                    self.config.max_inflight_bytes
                )),
            })?;
            bytes.extend_from_slice(&chunk);
        }
        Ok(Answer { status, bytes, permit: room })
    }

    /// Handles one call (single request or batch) whose body is `body`; `node_head` is the node's head as the
    /// follower last saw it.
    pub async fn call(&self, url: &str, body: Bytes, node_head: Option<u64>, client: IpAddr) -> hyper::Response<Body> {
        let config = &self.config;
        let trimmed = body.iter().position(|b| !b.is_ascii_whitespace()).map(|i| body[i]);
        let is_batch = trimmed == Some(b'[');
        let items: Vec<&RawValue> = if is_batch {
            match serde_json::from_slice::<Vec<&RawValue>>(&body) {
                Ok(items) => items,
                Err(_) => return error_response(StatusCode::OK, Value::Null, code::PARSE_ERROR, "Parse error"),
            }
        } else {
            match serde_json::from_slice::<&RawValue>(&body) {
                Ok(item) => vec![item],
                Err(_) => return error_response(StatusCode::OK, Value::Null, code::PARSE_ERROR, "Parse error"),
            }
        };
        if is_batch && items.is_empty() {
            return error_response(StatusCode::OK, Value::Null, code::INVALID_REQUEST, "invalid request: empty batch");
        }
        if items.len() > config.max_batch {
            let message = format!("batch of {} requests exceeds the limit of {}", items.len(), config.max_batch);
            return error_response(StatusCode::OK, Value::Null, code::INVALID_REQUEST, &message);
        }
        let context = Context { config, node_head };
        let mut classified: Vec<Item<'_>> = items.iter().map(|raw| classify(raw, &context)).collect();
        let _traces = self.admit_traces(&mut classified);
        if is_batch {
            self.batch(url, &body, &classified, client).await
        } else {
            self.single(url, &body, &classified[0], client).await
        }
    }

    async fn single(&self, url: &str, body: &Bytes, item: &Item<'_>, client: IpAddr) -> hyper::Response<Body> {
        if !item.forwarded() {
            return match item.local_response() {
                Some(value) => raw_json_response(StatusCode::OK, Bytes::from(value.to_string())),
                None => raw_json_response(StatusCode::NO_CONTENT, Bytes::new()),
            };
        }
        let outgoing = match &item.action {
            Action::Forward { rewritten: Some(text), .. } => Bytes::from(text.clone()),
            _ => body.clone(),
        };
        match self.forward(url, outgoing, client).await {
            Ok(answer) => {
                if item.checks_logs() {
                    if let Some(message) = self.too_many_logs(&answer.bytes) {
                        return error_response(StatusCode::OK, item.id_value(), code::LIMIT_EXCEEDED, &message);
                    }
                }
                raw_json_response(answer.status, budgeted(answer.bytes, answer.permit))
            }
            Err(failure) => {
                let (status, code, message) = failure.status_code_message();
                error_response(status, item.id_value(), code, message)
            }
        }
    }

    /// A batch: the forwarded requests go to the node in one batch (the original bytes when all are forwarded
    /// unchanged), the rest are answered locally; the answers are returned together.
    async fn batch(&self, url: &str, body: &Bytes, classified: &[Item<'_>], client: IpAddr) -> hyper::Response<Body> {
        let forwarded: Vec<&Item<'_>> = classified.iter().filter(|i| i.forwarded()).collect();
        let checks_logs = forwarded.iter().any(|i| i.checks_logs());
        let mut responses: Vec<Box<RawValue>> = Vec::new();
        let mut status = StatusCode::OK;
        let mut permit = Room::default();
        if !forwarded.is_empty() {
            let verbatim = forwarded.len() == classified.len()
                && forwarded.iter().all(|i| matches!(i.action, Action::Forward { rewritten: None, .. }));
            let upstream_body = if verbatim {
                body.clone()
            } else {
                let parts: Vec<&str> = forwarded.iter().map(|i| i.outgoing()).collect();
                Bytes::from(format!("[{}]", parts.join(",")))
            };
            match self.forward(url, upstream_body, client).await {
                Ok(answer) if verbatim && !checks_logs => {
                    return raw_json_response(answer.status, budgeted(answer.bytes, answer.permit));
                }
                Ok(answer) => match serde_json::from_slice::<Vec<Box<RawValue>>>(&answer.bytes) {
                    Ok(node_responses) => {
                        let log_ids: Vec<&str> = forwarded
                            .iter()
                            .filter(|i| i.checks_logs())
                            .filter_map(|i| i.id.map(|r| r.get()))
                            .collect();
                        for response in node_responses {
                            responses.push(self.checked_batch_answer(response, &log_ids));
                        }
                        permit = answer.permit;
                    }
                    // Not a batch answer (e.g. a single error object): pass it back as the node sent it.
                    Err(_) => return raw_json_response(answer.status, budgeted(answer.bytes, answer.permit)),
                },
                Err(failure) => {
                    let (failure_status, code, message) = failure.status_code_message();
                    status = failure_status;
                    for item in forwarded.iter().filter(|i| i.id.is_some()) {
                        let value = error_value(item.id_value(), code, message);
                        responses.push(RawValue::from_string(value.to_string()).expect("json"));
                    }
                }
            }
        }
        for item in classified.iter().filter(|i| !i.forwarded()) {
            if let Some(value) = item.local_response() {
                responses.push(RawValue::from_string(value.to_string()).expect("json"));
            }
        }
        if responses.is_empty() {
            return raw_json_response(StatusCode::NO_CONTENT, Bytes::new());
        }
        let parts: Vec<&str> = responses.iter().map(|r| r.get()).collect();
        raw_json_response(status, budgeted(format!("[{}]", parts.join(",")).into_bytes(), permit))
    }

    /// One answer of a batch, replaced by a limit error when it answers an `eth_getLogs` (by id) with too many logs.
    fn checked_batch_answer(&self, response: Box<RawValue>, log_ids: &[&str]) -> Box<RawValue> {
        #[derive(Deserialize)]
        struct Id<'a> {
            #[serde(borrow)]
            id: Option<&'a RawValue>,
        }
        let id = serde_json::from_str::<Id<'_>>(response.get()).ok().and_then(|a| a.id);
        let Some(id) = id.filter(|id| log_ids.contains(&id.get())) else { return response };
        match self.too_many_logs(response.get().as_bytes()) {
            Some(message) => {
                let id: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
                let value = error_value(id, code::LIMIT_EXCEEDED, &message);
                RawValue::from_string(value.to_string()).expect("json")
            }
            None => response,
        }
    }

    /// `Some(message)` when an `eth_getLogs` answer holds more logs than allowed.
    fn too_many_logs(&self, answer: &[u8]) -> Option<String> {
        #[derive(Deserialize)]
        struct Logs<'a> {
            #[serde(borrow)]
            result: Option<&'a RawValue>,
        }
        let result = serde_json::from_slice::<Logs<'_>>(answer).ok()?.result?;
        let count = serde_json::from_str::<Vec<serde::de::IgnoredAny>>(result.get()).ok()?.len();
        let max = self.config.max_log_results;
        (count > max).then(|| {
            format!(
                "query returned more than {max} results; narrow the block range or the filter (the explorer's limit)"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_list() {
        let config = RpcConfig::default();
        let cases: &[(&str, bool)] = &[
            ("eth_chainId", true),
            ("eth_getBalance", true),
            ("eth_sendRawTransaction", true),
            ("eth_sendRawTransactionSync", true),
            ("net_version", true),
            ("web3_clientVersion", true),
            ("eth_sendTransaction", false),
            ("eth_sendTransactionSync", false),
            ("eth_sendUnsignedTransaction", false),
            ("eth_sign", false),
            ("eth_signTransaction", false),
            ("eth_signTypedData_v4", false),
            ("eth_subscribe", false),
            ("eth_newFilter", false),
            ("eth_someFutureMethod", false),
            ("debug_traceTransaction", false),
            ("anvil_mine", false),
            ("hardhat_mine", false),
            ("evm_snapshot", false),
            ("admin_peers", false),
            ("personal_sign", false),
            ("miner_start", false),
            ("txpool_content", false),
            ("engine_newPayloadV3", false),
            ("eth_chainId ", false),
            ("eth_chainId\0", false),
            ("eth_chainId\u{200b}", false),
            ("ETH_CHAINID", false),
            ("eth", false),
            ("eth_", false),
            ("", false),
        ];
        for (method, forwarded) in cases {
            assert_eq!(matches!(decide(method, &config), Decision::Forward(_)), *forwarded, "{method:?}");
        }
        assert_eq!(decide("eth_accounts", &config), Decision::Answer(json!([])));
        assert_eq!(decide("eth_requestAccounts", &config), Decision::Answer(json!([])));
        let tracing = RpcConfig { allow_debug: true, allow_send_raw: false, ..RpcConfig::default() };
        assert_eq!(decide("debug_traceTransaction", &tracing), Decision::Forward(Guard::TraceTimeout(1)));
        assert_eq!(decide("debug_getRawBlock", &tracing), Decision::Forward(Guard::None));
        for refused in ["debug_setHead", "debug_chaindbCompact", "debug_setGCPercent", "eth_sendRawTransactionSync"] {
            assert!(matches!(decide(refused, &tracing), Decision::Refuse(_)), "{refused}");
        }
        let Decision::Refuse(message) = decide("eth_sendTransaction\0", &config) else { panic!("refused") };
        assert!(message.contains(r#""eth_sendTransaction\0""#), "{message}");
    }

    fn classify_text(text: &str, config: &RpcConfig, head: Option<u64>) -> Action {
        let raw: Box<RawValue> = RawValue::from_string(text.into()).unwrap();
        let context = Context { config, node_head: head };
        let item = classify(&raw, &context);
        item.action
    }

    fn rewritten(action: Action) -> Value {
        match action {
            Action::Forward { rewritten: Some(text), .. } => serde_json::from_str(&text).unwrap(),
            other => panic!("not rewritten: {other:?}"),
        }
    }

    #[test]
    fn unknown_or_case_variant_members_are_invalid_requests() {
        let config = RpcConfig::default();
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","METHOD":"eth_sendTransaction"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","method":"eth_sendTransaction"}"#,
        ] {
            assert!(
                matches!(classify_text(text, &config, None), Action::Refuse { code: code::INVALID_REQUEST, .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn call_gas_is_capped() {
        let config = RpcConfig { gas_cap: 1_000_000, ..RpcConfig::default() };
        let call = |object: &str| {
            let text = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"eth_call","params":[{object},"latest"]}}"#);
            rewritten(classify_text(&text, &config, None))
        };
        assert_eq!(call(r#"{"to":"0x01"}"#)["params"][0], json!({"to": "0x01", "gas": "0xf4240"}));
        assert_eq!(call(r#"{"gas":"0x3b9aca00"}"#)["params"][0]["gas"], "0xf4240");
        assert_eq!(call(r#"{"gas":"0x5208"}"#)["params"][0]["gas"], "0x5208");
        assert_eq!(call(r#"{"gas":21000}"#)["params"][0]["gas"], "0x5208");
        assert_eq!(call(r#"{"gas":"lots"}"#)["params"][0]["gas"], "0xf4240");
        assert_eq!(call(r#"{"gas":"0x5208","GAS":"0x3b9aca00"}"#)["params"][0], json!({"gas": "0x5208"}));
        assert_eq!(call(r#"{"gasLimit":"0x3b9aca00"}"#)["params"][0], json!({"gas": "0xf4240"}));
        let whole = call(r#"{"to":"0x01"}"#);
        assert_eq!(whole["id"], 3);
        assert_eq!(whole["params"][1], "latest");
        let by_name = r#"{"jsonrpc":"2.0","id":3,"method":"eth_call","params":{"to":"0x01"}}"#;
        assert!(matches!(classify_text(by_name, &config, None), Action::Refuse { code: code::INVALID_PARAMS, .. }));
    }

    #[test]
    fn log_ranges_are_capped() {
        let config = RpcConfig { max_log_range: 100, ..RpcConfig::default() };
        let logs = |filter: &str, head| {
            let text = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{filter}]}}"#);
            classify_text(&text, &config, head)
        };
        let allowed = |a: &Action| matches!(a, Action::Forward { logs: true, .. });
        let too_wide = |a: &Action| matches!(a, Action::Refuse { code: code::LIMIT_EXCEEDED, .. });
        assert!(allowed(&logs(r#"{"fromBlock":"0x0","toBlock":"0x63"}"#, Some(500))));
        assert!(too_wide(&logs(r#"{"fromBlock":"0x0","toBlock":"0x64"}"#, Some(500))));
        assert!(too_wide(&logs(r#"{"fromBlock":"earliest"}"#, Some(500))));
        assert!(allowed(&logs(r#"{"fromBlock":"earliest"}"#, Some(99))));
        assert!(allowed(&logs(r#"{"fromBlock":"0x190","toBlock":"latest"}"#, Some(450))));
        assert!(too_wide(&logs(r#"{"fromBlock":"0x0","toBlock":"latest"}"#, None)));
        assert!(allowed(&logs(r#"{}"#, None)));
        assert!(allowed(&logs(r#"{"blockHash":"0xab"}"#, Some(10_000))));
        assert!(allowed(&logs(r#"{"fromBlock":"0x0","TOBLOCK":"0x1000","toBlock":"0x1"}"#, Some(10_000))));
        assert!(too_wide(&logs(r#"{"fromBlock":"0x0","TOBLOCK":"0x1000"}"#, Some(10_000))));
        assert!(matches!(logs(r#"{"fromBlock":"soon"}"#, Some(1)), Action::Refuse { code: code::INVALID_PARAMS, .. }));
        let folded = rewritten(logs(r#"{"fromBlock":"0x0","TOBLOCK":"0x1000","toBlock":"0x1"}"#, Some(10)));
        assert_eq!(folded["params"][0], json!({"fromBlock": "0x0", "toBlock": "0x1"}));
    }

    #[test]
    fn traces_beyond_the_shared_permits_are_refused() {
        let config = RpcConfig { allow_debug: true, ..RpcConfig::default() };
        let traces = Arc::new(Semaphore::new(2));
        let passthrough = Passthrough::new(config.clone(), traces.clone());
        let raws: Vec<Box<RawValue>> = [
            r#"{"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0xab"]}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"debug_traceCall","params":[{},"latest"]}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"debug_traceBlockByNumber","params":["0x1"]}"#,
        ]
        .iter()
        .map(|text| RawValue::from_string(text.to_string()).unwrap())
        .collect();
        let context = Context { config: &config, node_head: None };
        let mut items: Vec<Item<'_>> = raws.iter().map(|raw| classify(raw, &context)).collect();
        let permits = passthrough.admit_traces(&mut items);
        assert_eq!(permits.len(), 2);
        assert_eq!(items.iter().map(Item::forwarded).collect::<Vec<_>>(), [true, true, true, false]);
        assert!(
            matches!(&items[3].action, Action::Refuse { code: code::LIMIT_EXCEEDED, message } if message == TRACES_BUSY)
        );
        // The REST routes' traces wait on the same permits, and get them back when the call ends.
        assert!(traces.try_acquire().is_err());
        drop(permits);
        assert_eq!(traces.available_permits(), 2);
    }

    #[test]
    fn trace_timeouts_are_capped() {
        let config = RpcConfig { allow_debug: true, trace_timeout: Duration::from_secs(5), ..RpcConfig::default() };
        let trace = |params: &str| {
            let text = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":{params}}}"#);
            rewritten(classify_text(&text, &config, None))["params"].clone()
        };
        assert_eq!(trace(r#"["0xab"]"#), json!(["0xab", {"timeout": "5000ms"}]));
        assert_eq!(trace(r#"["0xab",null]"#), json!(["0xab", {"timeout": "5000ms"}]));
        assert_eq!(trace(r#"["0xab",{"timeout":"1m"}]"#)[1]["timeout"], "5000ms");
        assert_eq!(trace(r#"["0xab",{"timeout":"1.5s"}]"#)[1]["timeout"], "1500ms");
        assert_eq!(trace(r#"["0xab",{"timeout":"forever"}]"#)[1]["timeout"], "5000ms");
        assert_eq!(
            trace(r#"["0xab",{"tracer":"callTracer"}]"#)[1],
            json!({"tracer": "callTracer", "timeout": "5000ms"})
        );
        let text = r#"{"jsonrpc":"2.0","id":1,"method":"debug_traceCall","params":[{"gas":"0xffffffffff"},"latest"]}"#;
        let call = rewritten(classify_text(text, &config, None));
        assert_eq!(call["params"], json!([{"gas": "0x2faf080"}, "latest", {"timeout": "5000ms"}]));
        assert_eq!(go_duration("1h2m3.5s"), Some(Duration::from_millis(3_723_500)));
        assert_eq!(go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(go_duration("5"), None);
        assert_eq!(go_duration("-5s"), None);
    }
}

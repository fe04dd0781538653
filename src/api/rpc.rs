//! `POST /api/eth`: JSON-RPC 2.0 passthrough to the node, behind an allow-list.
//!
//! Allowed and forwarded unchanged: `eth_*`, `net_*`, `web3_*`, and `debug_*` when tracing is enabled. Refused
//! locally (never forwarded): methods that use keys held by the node (`eth_sendTransaction`, `eth_sign*`), every
//! other namespace (`anvil_`, `hardhat_`, `evm_`, `admin_`, `personal_`, `miner_`, `txpool_`, `engine_`, …),
//! subscriptions (they need a WebSocket), and `eth_sendRawTransaction` when the operator disabled it.
//! `eth_accounts` is answered locally with `[]`. A request or batch entirely allowed is forwarded as the exact
//! bytes received and the node's answer is returned as the exact bytes it sent.

use super::body::{raw_json_response, Body};
pub(super) use alloy::transports::http::reqwest;
use bytes::Bytes;
use hyper::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::time::Duration;

/// JSON-RPC error codes used here.
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC request (or batch too large, or body too large).
    pub const INVALID_REQUEST: i64 = -32600;
    /// Method not found or not allowed.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The node could not be reached.
    pub const UPSTREAM_UNAVAILABLE: i64 = -32000;
}

/// Passthrough settings.
#[derive(Debug, Clone)]
pub struct RpcConfig {
    /// Forward `debug_*` (the daemon runs with tracing).
    pub allow_debug: bool,
    /// Forward `eth_sendRawTransaction`.
    pub allow_send_raw: bool,
    /// Most requests in one batch.
    pub max_batch: usize,
    /// Largest request body, bytes.
    pub max_body: usize,
    /// Largest node answer passed back, bytes.
    pub max_response: usize,
    /// Time the node has to answer.
    pub upstream_timeout: Duration,
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
        }
    }
}

/// What to do with one method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send it to the node.
    Forward,
    /// Answer locally with this result.
    Answer(Value),
    /// Refuse with this message.
    Refuse(String),
}

/// The allow-list.
pub fn decide(method: &str, config: &RpcConfig) -> Decision {
    const NODE_KEYS: &[&str] = &["eth_sendTransaction", "eth_sign", "eth_signTransaction"];
    if method == "eth_accounts" {
        return Decision::Answer(json!([]));
    }
    if NODE_KEYS.contains(&method) || method.starts_with("eth_signTypedData") {
        return Decision::Refuse(format!("method {method} is not available: it uses keys held by the node"));
    }
    if matches!(method, "eth_subscribe" | "eth_unsubscribe") {
        return Decision::Refuse(format!("method {method} is not available over HTTP"));
    }
    if method == "eth_sendRawTransaction" && !config.allow_send_raw {
        return Decision::Refuse("method eth_sendRawTransaction is disabled on this explorer".into());
    }
    let namespace = method.split('_').next().unwrap_or_default();
    match namespace {
        "eth" | "net" | "web3" if method.len() > namespace.len() + 1 => Decision::Forward,
        "debug" if config.allow_debug => Decision::Forward,
        "debug" => Decision::Refuse(format!("method {method} is not available: tracing is not enabled")),
        _ => Decision::Refuse(format!("the method {method} does not exist/is not available")),
    }
}

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
}

/// Keeps `"id": null` distinct from a missing id (a notification).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// One request of a call, classified.
struct Item<'a> {
    raw: &'a RawValue,
    id: Option<&'a RawValue>,
    decision: Decision,
}

impl Item<'_> {
    /// The local response of a refused or locally answered request (`None` for a notification).
    fn local_response(&self) -> Option<Value> {
        let id: Value = match self.id {
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => return None,
        };
        Some(match &self.decision {
            Decision::Answer(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Decision::Refuse(message) => error_value(id, code::METHOD_NOT_FOUND, message),
            Decision::Forward => unreachable!("forwarded requests have no local response"),
        })
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

fn classify<'a>(raw: &'a RawValue, config: &RpcConfig) -> Item<'a> {
    match serde_json::from_str::<Probe<'a>>(raw.get()) {
        Ok(Probe { jsonrpc: Some(version), method: Some(method), id }) if version == "2.0" => {
            Item { raw, id, decision: decide(&method, config) }
        }
        Ok(Probe { id, .. }) => Item {
            raw,
            id: Some(id.unwrap_or(null_raw())),
            decision: Decision::Refuse("invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": …}".into()),
        },
        Err(_) => {
            Item { raw, id: Some(null_raw()), decision: Decision::Refuse("invalid request: not an object".into()) }
        }
    }
}

fn null_raw() -> &'static RawValue {
    static NULL: std::sync::OnceLock<Box<RawValue>> = std::sync::OnceLock::new();
    NULL.get_or_init(|| RawValue::from_string("null".into()).expect("null is JSON"))
}

/// Items refused as invalid requests get -32600, the rest of the refusals -32601.
fn invalid_request(item: &Item<'_>) -> bool {
    matches!(&item.decision, Decision::Refuse(m) if m.starts_with("invalid request"))
}

fn local_value(item: &Item<'_>) -> Option<Value> {
    let mut value = item.local_response()?;
    if invalid_request(item) {
        value["error"]["code"] = json!(code::INVALID_REQUEST);
    }
    Some(value)
}

/// Sends `body` to the node; returns the node's status and body, or why it failed.
async fn forward(
    client: &reqwest::Client,
    url: &str,
    body: Bytes,
    config: &RpcConfig,
) -> Result<(StatusCode, Bytes), String> {
    let request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .timeout(config.upstream_timeout)
        .send();
    let mut response = request.await.map_err(|e| {
        if e.is_timeout() {
            format!("the node did not answer within {:?}", config.upstream_timeout)
        } else {
            format!("the node is unreachable ({})", e.without_url())
        }
    })?;
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|e| format!("reading the node's answer: {}", e.without_url()))?
    {
        if out.len() + chunk.len() > config.max_response {
            return Err(format!("the node's answer exceeds {} bytes", config.max_response));
        }
        out.extend_from_slice(&chunk);
    }
    Ok((status, Bytes::from(out)))
}

/// The pooled upstream client.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(60)).build().unwrap_or_default()
}

/// Handles one call (single request or batch) whose body is `body`.
pub async fn call(client: &reqwest::Client, url: &str, body: Bytes, config: &RpcConfig) -> hyper::Response<Body> {
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
    let classified: Vec<Item<'_>> = items.iter().map(|raw| classify(raw, config)).collect();
    let forwarded: Vec<&Item<'_>> = classified.iter().filter(|i| i.decision == Decision::Forward).collect();

    if !is_batch {
        let item = &classified[0];
        if item.decision != Decision::Forward {
            return match local_value(item) {
                Some(value) => raw_json_response(StatusCode::OK, Bytes::from(value.to_string())),
                None => raw_json_response(StatusCode::NO_CONTENT, Bytes::new()),
            };
        }
        return match forward(client, url, body.clone(), config).await {
            Ok((status, bytes)) => raw_json_response(status, bytes),
            Err(message) => {
                let id = item.id.map(|r| serde_json::from_str(r.get()).unwrap_or(Value::Null)).unwrap_or(Value::Null);
                error_response(StatusCode::BAD_GATEWAY, id, code::UPSTREAM_UNAVAILABLE, &message)
            }
        };
    }

    // A batch: forward the allowed requests (the original bytes when all are allowed), answer the rest locally.
    let mut responses: Vec<Box<RawValue>> = Vec::new();
    let mut status = StatusCode::OK;
    if !forwarded.is_empty() {
        let upstream_body = if forwarded.len() == classified.len() {
            body.clone()
        } else {
            let parts: Vec<&str> = forwarded.iter().map(|i| i.raw.get()).collect();
            Bytes::from(format!("[{}]", parts.join(",")))
        };
        match forward(client, url, upstream_body, config).await {
            Ok((node_status, bytes)) if forwarded.len() == classified.len() => {
                return raw_json_response(node_status, bytes);
            }
            Ok((node_status, bytes)) => match serde_json::from_slice::<Vec<Box<RawValue>>>(&bytes) {
                Ok(node_responses) => responses.extend(node_responses),
                // Not a batch answer (e.g. a single error object): pass it back as the node sent it.
                Err(_) => return raw_json_response(node_status, bytes),
            },
            Err(message) => {
                status = StatusCode::BAD_GATEWAY;
                for item in &forwarded {
                    if let Some(id) = item.id {
                        let id: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
                        let value = error_value(id, code::UPSTREAM_UNAVAILABLE, &message);
                        responses.push(RawValue::from_string(value.to_string()).expect("json"));
                    }
                }
            }
        }
    }
    for item in classified.iter().filter(|i| i.decision != Decision::Forward) {
        if let Some(value) = local_value(item) {
            responses.push(RawValue::from_string(value.to_string()).expect("json"));
        }
    }
    if responses.is_empty() {
        return raw_json_response(StatusCode::NO_CONTENT, Bytes::new());
    }
    let parts: Vec<&str> = responses.iter().map(|r| r.get()).collect();
    raw_json_response(status, Bytes::from(format!("[{}]", parts.join(","))))
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
            ("net_version", true),
            ("web3_clientVersion", true),
            ("eth_sendTransaction", false),
            ("eth_sign", false),
            ("eth_signTransaction", false),
            ("eth_signTypedData_v4", false),
            ("eth_subscribe", false),
            ("debug_traceTransaction", false),
            ("anvil_mine", false),
            ("hardhat_mine", false),
            ("evm_snapshot", false),
            ("admin_peers", false),
            ("personal_sign", false),
            ("miner_start", false),
            ("txpool_content", false),
            ("engine_newPayloadV3", false),
            ("eth", false),
            ("eth_", false),
            ("", false),
        ];
        for (method, forwarded) in cases {
            assert_eq!(decide(method, &config) == Decision::Forward, *forwarded, "{method}");
        }
        assert_eq!(decide("eth_accounts", &config), Decision::Answer(json!([])));
        let tracing = RpcConfig { allow_debug: true, allow_send_raw: false, ..RpcConfig::default() };
        assert_eq!(decide("debug_traceTransaction", &tracing), Decision::Forward);
        assert!(matches!(decide("eth_sendRawTransaction", &tracing), Decision::Refuse(_)));
    }
}

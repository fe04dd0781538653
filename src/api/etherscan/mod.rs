//! The Etherscan-style API at `/api?module=…&action=…` (also `/api/v1`), as Blockscout serves it for the tools
//! that script against explorers (Foundry, Hardhat, the Python and JS explorer clients).
//!
//! Parameters come from the query string and the body (a form or a JSON object; the body wins), `module` and
//! `action` in any letter case. Answers use the `{"message","result","status"}` envelope: a refused parameter or an
//! empty list is `status:"0"` with HTTP 200, as Blockscout does; only a missing or unknown module/action is a 400.
//! Every list is bounded by Etherscan's result window (`page × offset ≤ 10,000`) and read from the indexes.

mod account;
mod chain;
mod proxy;
mod verify;

use super::body::{json_response, Body};
use super::error::ApiError;
use super::query::Query;
use super::router::Direction;
use super::{blocking_read, read_body, AppState};
use crate::api::request_body::RequestBody;
use crate::store::{Order, Reader, StoreError};
use alloy::primitives::{Address, B256};
use hyper::header::CONTENT_TYPE;
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use std::ops::RangeInclusive;

/// Largest request body (a verification request carries whole standard-JSON inputs).
pub const MAX_BODY: usize = 10 << 20;
/// Etherscan's result window: `page × offset` may not pass it.
pub const RESULT_WINDOW: u64 = 10_000;
/// Most logs `getLogs` answers with.
pub const MAX_LOGS: usize = 1_000;
/// Most bytes of transaction inputs and log data (as hex) one answer carries: 10,000 transactions of 400 KB of call
/// data each would be 8 GB, 1,000 logs of 1 MB 2 GB.
pub const MAX_HEX_BYTES: usize = 64 << 20;

/// The transaction inputs and log data an answer has written so far, within [`MAX_HEX_BYTES`].
#[derive(Debug, Default)]
struct HexBudget(usize);

impl HexBudget {
    /// The refusal of a list past the budget.
    const EXCEEDED: &'static str = "Result is too large: its transactions' inputs and logs' data pass 64 MiB; ask \
                                    for fewer (offset) or a narrower block range";

    /// `bytes` as `0x`-hex, or `None` once the answer's inputs and data pass [`MAX_HEX_BYTES`].
    fn hex(&mut self, bytes: &[u8]) -> Option<String> {
        self.0 = self.0.saturating_add(2 + 2 * bytes.len());
        (self.0 <= MAX_HEX_BYTES).then(|| format!("0x{}", alloy::hex::encode(bytes)))
    }
}

/// What an action answers.
#[derive(Debug)]
enum Answer {
    /// `status:"1"`, `message:"OK"`.
    Ok(Value),
    /// `status:"0"` with `message` and `result` (`null`, `[]`, or the message itself).
    NotOk(String, Value),
    /// A JSON-RPC style answer (`eth_block_number`).
    Rpc(Value),
    /// The passthrough's own response (`module=proxy`).
    Forwarded(Box<Response<Body>>),
}

impl Answer {
    /// A refusal with a `null` result.
    fn refuse(message: impl Into<String>) -> Answer {
        Answer::NotOk(message.into(), Value::Null)
    }

    /// A list: `status:"1"` when it has items, else `status:"0"` with `empty` and `[]`.
    fn list(items: Vec<Value>, empty: &str) -> Answer {
        if items.is_empty() {
            Answer::NotOk(empty.to_string(), json!([]))
        } else {
            Answer::Ok(Value::Array(items))
        }
    }
}

/// Why an action gave no answer of its own.
#[derive(Debug)]
enum Refusal {
    /// A parameter was refused: an envelope with HTTP 200.
    Answer(Answer),
    /// The translator's own refusals (missing or unknown module/action): an envelope with this status.
    Translator(StatusCode, &'static str),
    /// Refused for the server's load (the verification queue) or the client's failed authentications: 429 with
    /// `Retry-After` (seconds), the reason as the `result`.
    Throttled(String, u64),
    /// A failure of the server (timeouts, store errors).
    Server(ApiError),
}

impl Refusal {
    /// A verification request's refusal in Etherscan's form: `message` `NOTOK`, the reason as the `result` text.
    /// Hardhat's and Foundry's verifiers read the reason from `result` (Hardhat fails on a `null` one) and retry
    /// on "Unable to locate ContractCode at …".
    fn with_reason_as_result(self) -> Refusal {
        match self {
            Refusal::Answer(Answer::NotOk(reason, Value::Null)) => {
                Refusal::Answer(Answer::NotOk("NOTOK".into(), Value::String(reason)))
            }
            other => other,
        }
    }
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal::Server(e)
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Refusal::Server(e.into())
    }
}

type Outcome = Result<Answer, Refusal>;

/// A refusal envelope for a bad parameter.
fn bad(message: impl Into<String>) -> Refusal {
    Refusal::Answer(Answer::refuse(message))
}

/// The merged parameters of one request.
#[derive(Debug)]
struct Params(Query);

impl Params {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)
    }

    /// The `id` of a JSON-RPC style answer: the query's (a number when it reads as one), 1 by default.
    fn rpc_id(&self) -> Value {
        self.get("id").map_or(json!(1), |raw| raw.parse::<u64>().map_or(json!(raw), |n| json!(n)))
    }

    /// A required address: `missing` when absent, `invalid` when malformed.
    fn address(&self, key: &str, missing: &str, invalid: &str) -> Result<Address, Refusal> {
        parse_address(self.get(key).ok_or_else(|| bad(missing))?).ok_or_else(|| bad(invalid))
    }

    /// An optional address.
    fn opt_address(&self, key: &str, invalid: &str) -> Result<Option<Address>, Refusal> {
        self.get(key).map(|raw| parse_address(raw).ok_or_else(|| bad(invalid))).transpose()
    }

    /// A required transaction hash (`txhash`).
    fn tx_hash(&self) -> Result<B256, Refusal> {
        let raw = self.get("txhash").ok_or_else(|| bad("Query parameter txhash is required"))?;
        parse_hash(raw).ok_or_else(|| bad("Invalid txhash format"))
    }

    /// A non-negative integer, `None` when absent or not one (Blockscout ignores malformed paging values).
    fn lenient_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.trim().parse::<u64>().ok())
    }

    /// `page` (from 1) and `offset` (up to `max_offset`, else `default_offset`) as rows skipped and taken, with
    /// `page × offset` checked against the window when `check_window`. Unchecked lists skip past any list the index
    /// can hold when the product overflows.
    fn window(&self, default_offset: u64, max_offset: u64, check_window: bool) -> Result<(usize, usize), Refusal> {
        let page = self.lenient_u64("page").filter(|p| *p > 0).unwrap_or(1);
        let offset = self.lenient_u64("offset").filter(|o| (1..=max_offset).contains(o)).unwrap_or(default_offset);
        if check_window && page.saturating_mul(offset) > RESULT_WINDOW {
            return Err(bad("Result window is too large, PageNo x Offset size must be less than or equal to 10000"));
        }
        let skip = usize::try_from((page - 1).saturating_mul(offset)).unwrap_or(usize::MAX);
        Ok((skip, offset as usize))
    }

    /// `page`, `offset`, `sort`, `startblock` and `endblock`, with the window checked.
    fn paging(&self, default_offset: u64, check_window: bool) -> Result<Paging, Refusal> {
        let (skip, take) = self.window(default_offset, RESULT_WINDOW, check_window)?;
        let order = match self.get("sort") {
            Some("asc") => Order::OldestFirst,
            _ => Order::NewestFirst,
        };
        let first = self.lenient_u64("startblock").unwrap_or(0);
        let last = self.lenient_u64("endblock").unwrap_or(u64::MAX);
        Ok(Paging { skip, take, order, blocks: first..=last })
    }
}

/// Which rows of a list are answered.
#[derive(Debug, Clone)]
struct Paging {
    /// Rows skipped (earlier pages).
    skip: usize,
    /// Rows answered.
    take: usize,
    /// `sort=asc` is oldest first; the default newest first.
    order: Order,
    /// `startblock..=endblock`.
    blocks: RangeInclusive<u64>,
}

impl Paging {
    /// The page of `rows` that passes `keep` (at most `skip + take` rows are examined past the filter).
    fn page<T>(
        &self,
        rows: impl Iterator<Item = Result<T, StoreError>>,
        keep: impl Fn(&T) -> bool,
    ) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::new();
        for row in rows.filter(|r| r.as_ref().map_or(true, &keep)).skip(self.skip) {
            out.push(row?);
            if out.len() == self.take {
                break;
            }
        }
        Ok(out)
    }

    /// The block window clipped to what is indexed (`None` when empty).
    fn blocks_upto(&self, tip: Option<u64>) -> Option<RangeInclusive<u64>> {
        let last = (*self.blocks.end()).min(tip?);
        (*self.blocks.start() <= last).then(|| *self.blocks.start()..=last)
    }
}

/// An address as the REST API reads it; the refusal's wording is Etherscan's, so only whether it parses counts.
fn parse_address(raw: &str) -> Option<Address> {
    super::router::parse_address(raw, "address").ok()
}

/// A 32-byte hash as the REST API reads it.
fn parse_hash(raw: &str) -> Option<B256> {
    super::router::parse_hash(raw, "hash").ok()
}

/// `filter_by=to|from` of `txlist`.
fn filter_by(params: &Params) -> Option<Direction> {
    match params.get("filter_by") {
        Some("to") => Some(Direction::To),
        Some("from") => Some(Direction::From),
        _ => None,
    }
}

/// Lowercase `0x` hex of an address, as Etherscan answers.
fn lower(address: &Address) -> String {
    format!("{address:#x}")
}

/// Reads the body's parameters: a form, or the members of a JSON object (scalars as text).
fn body_params(content_type: &str, body: &[u8]) -> Result<Query, Refusal> {
    if body.is_empty() {
        return Ok(Query::default());
    }
    if content_type.starts_with("application/json") {
        let value: Value = serde_json::from_slice(body).map_err(|e| bad(format!("Invalid JSON body: {e}")))?;
        let Value::Object(members) = value else {
            return Err(bad("Invalid JSON body: expected an object"));
        };
        let pairs = members
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect();
        return Ok(Query::from_pairs(pairs));
    }
    if content_type.starts_with("multipart/") {
        return Err(bad(
            "multipart bodies are not accepted here: send a form (application/x-www-form-urlencoded) or JSON",
        ));
    }
    let text = std::str::from_utf8(body).map_err(|_| bad("Invalid form body: not UTF-8"))?;
    Ok(Query::parse(Some(text)))
}

fn envelope(status: StatusCode, message: &str, result: Value, ok: bool) -> Response<Body> {
    let status_field = if ok { "1" } else { "0" };
    json_response(status, &json!({"message": message, "result": result, "status": status_field}))
}

/// The refusal of a rate-limited request, in the envelope and Etherscan's own words, which its clients read.
pub fn rate_limited() -> Response<Body> {
    envelope(StatusCode::TOO_MANY_REQUESTS, "NOTOK", json!("Max rate limit reached"), false)
}

/// A request the server could not answer (a body too large or too slow, the node unavailable, the time up), in the
/// envelope clients parse, with the error's status and its `Retry-After`.
pub fn refused(error: ApiError) -> Response<Body> {
    let status = error.status();
    let message = error.message();
    let mut rendered = error.into_response();
    let mut response = envelope(status, &message, Value::Null, false);
    let retry = rendered.headers().get(hyper::header::RETRY_AFTER).cloned();
    response.headers_mut().extend(retry.map(|v| (hyper::header::RETRY_AFTER, v)));
    // A 5xx's cause, for the server's log line.
    if let Some(cause) = rendered.extensions_mut().remove::<crate::api::FailureCause>() {
        response.extensions_mut().insert(cause);
    }
    response
}

/// Serves one request to `/api`.
pub async fn serve(
    req: Request<RequestBody>,
    state: &AppState,
    deadline: tokio::time::Instant,
    client: std::net::IpAddr,
) -> Response<Body> {
    let query = Query::parse(req.uri().query());
    let headers = req.headers().clone();
    let content_type =
        req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
    let body = match read_body(state, req, MAX_BODY, client).await {
        Ok(body) => body,
        Err(unread) => return refused(unread),
    };
    let outcome = match body_params(&content_type, &body) {
        Ok(from_body) => run(Params(Query::merged(from_body, query)), state, deadline, (&headers, client)).await,
        Err(refusal) => Err(refusal),
    };
    match outcome {
        Ok(Answer::Ok(result)) => envelope(StatusCode::OK, "OK", result, true),
        Ok(Answer::NotOk(message, result)) | Err(Refusal::Answer(Answer::NotOk(message, result))) => {
            envelope(StatusCode::OK, &message, result, false)
        }
        Ok(Answer::Rpc(value)) | Err(Refusal::Answer(Answer::Rpc(value))) => json_response(StatusCode::OK, &value),
        Ok(Answer::Forwarded(response)) | Err(Refusal::Answer(Answer::Forwarded(response))) => *response,
        Err(Refusal::Answer(Answer::Ok(result))) => envelope(StatusCode::OK, "OK", result, true),
        Err(Refusal::Translator(status, message)) => envelope(status, message, Value::Null, false),
        Err(Refusal::Throttled(reason, seconds)) => {
            let mut response = envelope(StatusCode::TOO_MANY_REQUESTS, "NOTOK", Value::String(reason), false);
            response.headers_mut().insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from(seconds));
            response
        }
        Err(Refusal::Server(ApiError::Internal(detail))) => {
            tracing::warn!(%detail, "etherscan-style request failed");
            envelope(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong.", Value::Null, false)
        }
        Err(Refusal::Server(e)) => refused(e),
    }
}

/// Runs a store read on the blocking pool under the request's deadline.
async fn read<T, F>(state: &AppState, deadline: tokio::time::Instant, f: F) -> Result<T, Refusal>
where
    T: Send + 'static,
    F: FnOnce(&Reader<'_>) -> Result<T, StoreError> + Send + 'static,
{
    Ok(blocking_read(state, deadline, move |r| f(r).map_err(ApiError::from)).await?)
}

async fn run(
    params: Params,
    state: &AppState,
    deadline: tokio::time::Instant,
    (headers, client): (&hyper::HeaderMap, std::net::IpAddr),
) -> Outcome {
    let (Some(module), Some(action)) = (params.get("module"), params.get("action")) else {
        return Err(Refusal::Translator(
            StatusCode::BAD_REQUEST,
            "Params 'module' and 'action' are required parameters",
        ));
    };
    let (module, action) = (module.to_ascii_lowercase(), action.to_ascii_lowercase());
    match (module.as_str(), action.as_str()) {
        ("account", "balance") => account::balance(&params, state, false).await,
        ("account", "balancemulti") => account::balance(&params, state, true).await,
        ("account", "eth_get_balance") => proxy::eth_get_balance(&params, state, client).await,
        ("account", "listaccounts") => account::listaccounts(params, state, deadline).await,
        ("account", "txlist") => account::txlist(params, state, deadline).await,
        ("account", "pendingtxlist") => account::pendingtxlist(params, state, deadline).await,
        ("account", "txlistinternal") => account::txlistinternal(params, state, deadline).await,
        ("account", "tokentx") => account::tokentx(params, state, deadline, account::Standard::Erc20).await,
        ("account", "tokennfttx") => account::tokentx(params, state, deadline, account::Standard::Erc721).await,
        ("account", "token1155tx") => account::tokentx(params, state, deadline, account::Standard::Erc1155).await,
        ("account", "tokenbalance") => account::tokenbalance(params, state, deadline).await,
        ("account", "tokenlist") => account::tokenlist(params, state, deadline).await,
        ("account", "getminedblocks") => account::getminedblocks(params, state, deadline).await,
        ("logs", "getlogs") => chain::getlogs(params, state, deadline).await,
        ("token", "gettoken") => chain::gettoken(params, state, deadline).await,
        ("token", "gettokenholders") => chain::gettokenholders(params, state, deadline).await,
        ("stats", "tokensupply") => chain::tokensupply(params, state, deadline).await,
        ("stats", "ethsupply") => chain::ethsupply(state, deadline).await,
        ("stats", "coinprice") => Ok(chain::coinprice()),
        ("stats", "ethprice") => Ok(chain::ethprice()),
        ("block", "getblockreward") => chain::getblockreward(params, state, deadline).await,
        ("block", "getblocknobytime") => chain::getblocknobytime(params, state, deadline).await,
        ("block", "getblockcountdown") => chain::getblockcountdown(params, state, deadline).await,
        ("block", "eth_block_number") => chain::eth_block_number(&params, state),
        ("proxy", action) => proxy::call(action, &params, state, client).await,
        ("transaction", "gettxinfo") => chain::gettxinfo(params, state, deadline).await,
        ("transaction", "getstatus") => chain::getstatus(params, state, deadline).await,
        ("transaction", "gettxreceiptstatus") => chain::gettxreceiptstatus(params, state, deadline).await,
        ("contract", "getcontractcreation") => chain::getcontractcreation(params, state, deadline).await,
        ("contract", "getabi") => chain::getabi(params, state, deadline).await,
        ("contract", "getsourcecode") => chain::getsourcecode(params, state, deadline).await,
        ("contract", "listcontracts") => chain::listcontracts(params, state, deadline).await,
        ("contract", "verifysourcecode") => {
            verify::verifysourcecode(&params, headers, state, client).await.map_err(Refusal::with_reason_as_result)
        }
        ("contract", "checkverifystatus") => verify::checkverifystatus(&params, state),
        ("contract", "verifyproxycontract") => {
            verify::verifyproxycontract(&params, state).map_err(Refusal::with_reason_as_result)
        }
        ("contract", "checkproxyverification") => verify::checkproxyverification(&params, state),
        _ => Err(Refusal::Translator(StatusCode::BAD_REQUEST, "Unknown action")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_s_inputs_stop_at_the_budget() {
        let mut budget = HexBudget::default();
        let input = vec![0xab; 1 << 20];
        let fits = MAX_HEX_BYTES / (2 + 2 * input.len());
        for _ in 0..fits {
            assert_eq!(budget.hex(&input).map(|h| h.len()), Some(2 + 2 * input.len()));
        }
        assert_eq!(budget.hex(&input), None);
        assert_eq!(budget.hex(&[]), None, "a list past its budget stays past it");
    }

    fn params(raw: &str) -> Params {
        Params(Query::parse(Some(raw)))
    }

    #[test]
    fn paging_defaults_window_and_lenient_values() {
        let p = params("").paging(RESULT_WINDOW, true).unwrap();
        assert_eq!((p.skip, p.take, p.order), (0, 10_000, Order::NewestFirst));
        assert!(params("page=2").paging(RESULT_WINDOW, true).is_err(), "2 × the default 10,000 passes the window");
        let p = params("page=3&offset=100&sort=asc&startblock=5&endblock=9").paging(RESULT_WINDOW, true).unwrap();
        assert_eq!((p.skip, p.take, p.order, p.blocks), (200, 100, Order::OldestFirst, 5..=9));
        // Malformed or out-of-range values fall back to the defaults, as Blockscout's parser does.
        let p = params("page=-1&offset=20000&sort=sideways&startblock=x").paging(10, false).unwrap();
        assert_eq!((p.skip, p.take, p.order, p.blocks.clone()), (0, 10, Order::NewestFirst, 0..=u64::MAX));
        assert_eq!(p.blocks_upto(Some(7)), Some(0..=7));
        assert_eq!(p.blocks_upto(None), None);
        // A page past any list (the product overflows u64) skips everything instead of wrapping to the first page.
        let far = params("page=4611686018427387905&offset=4").paging(10, false).unwrap();
        assert_eq!((far.skip, far.take), (usize::MAX, 4));
        let late = params("startblock=8").paging(10, false).unwrap();
        assert_eq!(late.blocks_upto(Some(7)), None);
    }

    #[test]
    fn body_parameters_come_from_forms_and_json_objects() {
        let form = body_params("application/x-www-form-urlencoded", b"module=contract&sourceCode=a%2Bb").unwrap();
        assert_eq!(form.get("sourceCode"), Some("a+b"));
        let json = body_params("application/json", br#"{"module":"account","page":2,"x":null}"#).unwrap();
        assert_eq!((json.get("module"), json.get("page"), json.get("x")), (Some("account"), Some("2"), None));
        assert!(body_params("application/json", b"[1]").is_err());
        assert!(body_params("application/json", b"{").is_err());
        // The body wins over the query string.
        let merged = Query::merged(form, Query::parse(Some("module=account&action=txlist")));
        assert_eq!((merged.get("module"), merged.get("action")), (Some("contract"), Some("txlist")));
    }

    #[test]
    fn lists_and_refusals_use_the_etherscan_envelope() {
        assert!(
            matches!(Answer::list(vec![], "No transactions found"), Answer::NotOk(m, r) if m == "No transactions found" && r == json!([]))
        );
        assert!(matches!(Answer::list(vec![json!(1)], "x"), Answer::Ok(_)));
        assert_eq!(parse_address("0xZZ"), None);
        assert!(parse_address("0x00000000000000000000000000000000000000aA").is_some());
        assert_eq!(parse_hash("0x12"), None);
    }
}

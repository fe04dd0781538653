//! CSV exports: an address's transactions, internal transactions, token transfers and logs
//! (`/api/v2/addresses/:a/<list>/csv?from_period=&to_period=`) and a token's holders (`/tokens/:t/holders/csv`), with
//! Blockscout's column sets, plus `/api/v2/config/csv-export`.
//!
//! A CSV is streamed: a task on the blocking pool (holding one of the store's reader permits) walks the index
//! newest first and sends chunks of rows through a small channel that the response body drains, so memory stays at
//! a few chunks whatever the export's size. It is bounded in rows ([`MAX_ROWS`]), in rows examined
//! ([`MAX_SCANNED`]) and in time ([`TIME_LIMIT`]: a client that stops reading ends the export). Every field is
//! CSV-escaped, and a field that a spreadsheet would read as a formula (`=`, `+`, `-`, `@`, tab, CR) is prefixed
//! with `'`.

use crate::api::body::Body;
use crate::api::json::{iso_timestamp, parse_iso_ms};
use crate::api::query::Query;
use crate::api::{ApiError, AppState};
use crate::store::keys::BlockPos;
use crate::store::records::{direction, TokenKind};
use crate::store::tables::{InternalTxs, Logs, TokenMetadatas, Tokens, Transactions, Transfers};
use crate::store::{Order, Reader, StoreResult};
use alloy::primitives::{Address, U256};
use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_DISPOSITION, CONTENT_TYPE};
use hyper::Response;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Rows in one export at most (`limit` in `/config/csv-export`).
pub const MAX_ROWS: usize = 10_000;
/// Index rows examined per export at most (rows outside the period count too).
pub const MAX_SCANNED: usize = 100_000;
/// How long one export may take, including waiting for the client to read.
pub const TIME_LIMIT: Duration = Duration::from_secs(60);
/// CSV exports a client IP may start per second, sustained.
pub const EXPORTS_PER_SECOND: u32 = 1;
/// CSV exports a client IP may start at once.
pub const EXPORTS_BURST: u32 = 5;
/// Rows per streamed chunk.
const CHUNK_ROWS: usize = 200;

/// What is exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Export {
    /// `/addresses/:a/transactions/csv`.
    Transactions(Address),
    /// `/addresses/:a/internal-transactions/csv`.
    InternalTransactions(Address),
    /// `/addresses/:a/token-transfers/csv`.
    TokenTransfers(Address),
    /// `/addresses/:a/logs/csv`.
    Logs(Address),
    /// `/tokens/:t/holders/csv`.
    Holders(Address),
    /// `/advanced-filters/csv`.
    AdvancedFilters(Box<super::advanced::AdvancedFilter>),
}

/// The export's parameters besides the subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvParams {
    /// Oldest block time included (seconds).
    pub from: Option<u64>,
    /// Newest block time included (seconds).
    pub to: Option<u64>,
    /// `filter_type=address&filter_value=to|from`: only rows where the address is the recipient (`to`) or sender.
    pub direction: Option<bool>,
    /// `filter_type=topic&filter_value=0x…` (logs): only logs with this topic.
    pub topic: Option<alloy::primitives::B256>,
}

/// `from_period`/`to_period`: a date (`2025-01-31`, the whole day) or an ISO 8601 UTC time.
fn period(q: &Query, key: &'static str, end_of_day: bool) -> Result<Option<u64>, ApiError> {
    let Some(raw) = q.get(key) else { return Ok(None) };
    let bad = || ApiError::invalid(key, "Invalid value: expected a date (YYYY-MM-DD) or an ISO 8601 UTC time");
    let seconds = if raw.len() == 10 {
        let time = if end_of_day { "T23:59:59Z" } else { "T00:00:00Z" };
        parse_iso_ms(&format!("{raw}{time}")).ok_or_else(bad)? / 1000
    } else {
        let text = raw.strip_suffix("+00:00").map(|t| format!("{t}Z")).unwrap_or_else(|| raw.to_owned());
        parse_iso_ms(&text).ok_or_else(bad)? / 1000
    };
    Ok(Some(seconds))
}

impl CsvParams {
    /// Reads the parameters (422 for a malformed one).
    pub fn from_query(q: &Query) -> Result<Self, ApiError> {
        let mut params = CsvParams {
            from: period(q, "from_period", false)?,
            to: period(q, "to_period", true)?,
            direction: None,
            topic: None,
        };
        match (q.get("filter_type"), q.get("filter_value")) {
            (None, _) => {}
            (Some("address"), Some("to")) => params.direction = Some(true),
            (Some("address"), Some("from")) => params.direction = Some(false),
            (Some("topic"), Some(topic)) => {
                params.topic = Some(crate::api::router::parse_hash(topic, "filter_value")?);
            }
            (Some("address" | "topic"), _) => return Err(ApiError::invalid("filter_value", "Invalid value")),
            (Some(_), _) => return Err(ApiError::invalid("filter_type", "Invalid value: address, topic")),
        }
        Ok(params)
    }
}

/// One CSV field, escaped: quoted when it holds a comma, quote or line break; a leading formula character is
/// neutralised with `'`.
pub fn field(text: &str) -> String {
    let neutral = match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_owned(),
    };
    if neutral.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", neutral.replace('"', "\"\""))
    } else {
        neutral
    }
}

fn line(fields: &[String]) -> String {
    let mut out: String = fields.iter().map(|f| field(f)).collect::<Vec<_>>().join(",");
    out.push_str("\r\n");
    out
}

/// Sends chunks to the response body until the rows end, the client leaves or the time is up.
struct Sink {
    chunks: tokio::sync::mpsc::Sender<Bytes>,
    pending: String,
    rows: usize,
    deadline: Instant,
}

/// Why an export stopped early.
enum Stop {
    /// The client went away or stopped reading until the time limit.
    Gone,
    /// The store failed (the body ends where it is).
    Store,
}

impl From<crate::store::StoreError> for Stop {
    fn from(_: crate::store::StoreError) -> Self {
        Stop::Store
    }
}

impl Sink {
    fn row(&mut self, fields: &[String]) -> Result<bool, Stop> {
        self.pending.push_str(&line(fields));
        self.rows += 1;
        if self.rows.is_multiple_of(CHUNK_ROWS) {
            self.flush()?;
        }
        Ok(self.rows < MAX_ROWS + 1)
    }

    fn flush(&mut self) -> Result<(), Stop> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut chunk = Bytes::from(std::mem::take(&mut self.pending));
        loop {
            match self.chunks.try_send(chunk) {
                Ok(()) => return Ok(()),
                Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => return Err(Stop::Gone),
                Err(tokio::sync::mpsc::error::TrySendError::Full(back)) => {
                    if Instant::now() >= self.deadline {
                        return Err(Stop::Gone);
                    }
                    chunk = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
}

/// Whether a block time is inside the period: `Some(true)` inside, `Some(false)` newer than it, `None` older
/// (the newest-first walk ends).
fn in_period(params: &CsvParams, timestamp: u64) -> Option<bool> {
    if params.from.is_some_and(|from| timestamp < from) {
        return None;
    }
    Some(params.to.is_none_or(|to| timestamp <= to))
}

/// Block times, read once per block.
struct Times<'a, 'r> {
    reader: &'a Reader<'r>,
    known: HashMap<u64, (u64, String)>,
}

impl Times<'_, '_> {
    fn get(&mut self, block: u64) -> StoreResult<(u64, String)> {
        if let Some(known) = self.known.get(&block) {
            return Ok(known.clone());
        }
        if self.known.len() > 4096 {
            self.known.clear();
        }
        let header = self.reader.block(block)?;
        let value = header.map(|h| (h.timestamp, format!("{:#x}", h.hash))).unwrap_or_default();
        self.known.insert(block, value.clone());
        Ok(value)
    }
}

fn checksum(address: Option<Address>) -> String {
    address.map(|a| a.to_checksum(None)).unwrap_or_default()
}

fn header_of(export: &Export) -> &'static [&'static str] {
    match export {
        Export::Transactions(_) => &[
            "TxHash",
            "BlockNumber",
            "UnixTimestamp",
            "FromAddress",
            "ToAddress",
            "ContractAddress",
            "Type",
            "Value",
            "Fee",
            "Status",
            "ErrCode",
            "CurrentPrice",
            "TxDateOpeningPrice",
            "TxDateClosingPrice",
            "MethodName",
        ],
        Export::InternalTransactions(_) => &[
            "TxHash",
            "Index",
            "BlockNumber",
            "BlockHash",
            "TxIndex",
            "BlockIndex",
            "UnixTimestamp",
            "FromAddress",
            "ToAddress",
            "ContractAddress",
            "Type",
            "CallType",
            "Gas",
            "GasUsed",
            "Value",
            "Input",
            "Output",
            "ErrCode",
            "Fee",
        ],
        Export::TokenTransfers(_) => &[
            "TxHash",
            "BlockNumber",
            "UnixTimestamp",
            "FromAddress",
            "ToAddress",
            "TokenContractAddress",
            "Type",
            "TokenDecimals",
            "TokenSymbol",
            "TokenDecimals",
            "TokensTransferred",
            "TransactionFee",
            "Status",
            "ErrCode",
        ],
        Export::Logs(_) => &[
            "TxHash",
            "Index",
            "BlockNumber",
            "BlockHash",
            "ContractAddress",
            "Data",
            "FirstTopic",
            "SecondTopic",
            "ThirdTopic",
            "FourthTopic",
        ],
        Export::Holders(_) => &["HolderAddress", "Balance"],
        Export::AdvancedFilters(_) => super::advanced::CSV_COLUMNS,
    }
}

/// Writes the export's rows (after its header) into `sink`.
fn write_rows(reader: &Reader<'_>, export: &Export, params: &CsvParams, sink: &mut Sink) -> Result<(), Stop> {
    let mut times = Times { reader, known: HashMap::new() };
    let status = |ok: bool| if ok { "ok" } else { "error" }.to_owned();
    match *export {
        Export::AdvancedFilters(ref filter) => {
            super::advanced::csv_rows(reader, filter, MAX_SCANNED / super::advanced::MAX_TXS_SCANNED, |fields| {
                sink.row(fields)
            })?;
        }
        Export::Transactions(address) => {
            for row in reader.address_txs(address, None, Order::NewestFirst).take(MAX_SCANNED) {
                let (key, _) = row?;
                let (timestamp, _) = times.get(key.pos.block)?;
                match in_period(params, timestamp) {
                    None => break,
                    Some(false) => continue,
                    Some(true) => {}
                }
                let Some(tx) = reader.get::<Transactions>(&key.pos)? else { continue };
                let kind = if tx.from == address {
                    "OUT"
                } else if tx.to == Some(address) {
                    "IN"
                } else {
                    ""
                };
                if params.direction.is_some_and(|to| (kind == "IN") != to) {
                    continue;
                }
                let method = super::contracts(reader, tx.to)?.method(&tx.input, tx.to.as_ref());
                let fields = [
                    format!("{:#x}", tx.hash),
                    key.pos.block.to_string(),
                    iso_timestamp(timestamp),
                    checksum(Some(tx.from)),
                    checksum(tx.to),
                    checksum(tx.created),
                    kind.to_owned(),
                    tx.value.to_string(),
                    tx.fee().to_string(),
                    status(tx.succeeded()),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    method.unwrap_or_default(),
                ];
                if !sink.row(&fields)? {
                    break;
                }
            }
        }
        Export::InternalTransactions(address) => {
            for row in reader.address_calls(address, None).take(MAX_SCANNED) {
                let (key, _) = row?;
                let (timestamp, block_hash) = times.get(key.pos.block)?;
                match in_period(params, timestamp) {
                    None => break,
                    Some(false) => continue,
                    Some(true) => {}
                }
                let Some(call) = reader.get::<InternalTxs>(&key.pos)? else { continue };
                if params.direction.is_some_and(|to| (call.to == Some(address)) != to) {
                    continue;
                }
                let tx = reader.get::<Transactions>(&BlockPos { block: key.pos.block, index: key.pos.tx })?;
                let fee = tx.map(|t| U256::from(t.effective_gas_price) * U256::from(call.gas_used)).unwrap_or_default();
                let (kind, call_type) = match call.kind.label() {
                    label @ ("create" | "create2" | "selfdestruct") => (label, ""),
                    label => ("call", label),
                };
                let fields = [
                    format!("{:#x}", call.tx_hash),
                    key.pos.index.to_string(),
                    key.pos.block.to_string(),
                    block_hash,
                    key.pos.tx.to_string(),
                    key.pos.tx.to_string(),
                    iso_timestamp(timestamp),
                    checksum(Some(call.from)),
                    checksum(call.to),
                    checksum(call.created),
                    kind.to_owned(),
                    call_type.to_owned(),
                    call.gas.to_string(),
                    call.gas_used.to_string(),
                    call.value.to_string(),
                    String::new(),
                    String::new(),
                    call.error.clone().unwrap_or_default(),
                    fee.to_string(),
                ];
                if !sink.row(&fields)? {
                    break;
                }
            }
        }
        Export::TokenTransfers(address) => {
            for row in reader.address_transfers(address, None).take(MAX_SCANNED) {
                let (key, bits) = row?;
                let (timestamp, _) = times.get(key.pos.block)?;
                match in_period(params, timestamp) {
                    None => break,
                    Some(false) => continue,
                    Some(true) => {}
                }
                let Some(t) = reader.get::<Transfers>(&key.pos)? else { continue };
                let incoming = bits & direction::RECEIVED != 0;
                let kind = if t.from == address {
                    "OUT"
                } else if incoming {
                    "IN"
                } else {
                    ""
                };
                if params.direction.is_some_and(|to| (kind == "IN") != to) {
                    continue;
                }
                let tx = reader.get::<Transactions>(&BlockPos { block: key.pos.block, index: t.tx_index })?;
                let metadata = reader.get::<TokenMetadatas>(&t.token)?;
                let decimals = match t.kind {
                    TokenKind::Erc20 => metadata.as_ref().and_then(|m| m.decimals).map(|d| d.to_string()),
                    _ => None,
                }
                .unwrap_or_default();
                let symbol = metadata.and_then(|m| m.symbol).unwrap_or_default();
                let fields = [
                    format!("{:#x}", t.tx_hash),
                    key.pos.block.to_string(),
                    iso_timestamp(timestamp),
                    checksum(Some(t.from)),
                    checksum(Some(t.to)),
                    checksum(Some(t.token)),
                    kind.to_owned(),
                    decimals.clone(),
                    symbol,
                    decimals,
                    t.amount.to_string(),
                    tx.as_ref().map(|t| t.fee().to_string()).unwrap_or_default(),
                    tx.as_ref().map(|t| status(t.succeeded())).unwrap_or_default(),
                    String::new(),
                ];
                if !sink.row(&fields)? {
                    break;
                }
            }
        }
        Export::Logs(address) => {
            for row in reader.address_logs(address, None).take(MAX_SCANNED) {
                let (key, ()) = row?;
                let (timestamp, block_hash) = times.get(key.pos.block)?;
                match in_period(params, timestamp) {
                    None => break,
                    Some(false) => continue,
                    Some(true) => {}
                }
                let Some(log) = reader.get::<Logs>(&key.pos)? else { continue };
                if params.topic.is_some_and(|topic| !log.topics.contains(&topic)) {
                    continue;
                }
                let topic = |i: usize| log.topics.get(i).map(|t| format!("{t:#x}")).unwrap_or_default();
                let fields = [
                    format!("{:#x}", log.tx_hash),
                    key.pos.index.to_string(),
                    key.pos.block.to_string(),
                    block_hash,
                    checksum(Some(log.address)),
                    log.data.to_string(),
                    topic(0),
                    topic(1),
                    topic(2),
                    topic(3),
                ];
                if !sink.row(&fields)? {
                    break;
                }
            }
        }
        Export::Holders(token) => {
            let decimals = reader.get::<TokenMetadatas>(&token)?.and_then(|m| m.decimals).unwrap_or(0);
            let kind = reader.get::<Tokens>(&token)?.map(|r| r.kind);
            let decimals = if kind == Some(TokenKind::Erc20) { decimals } else { 0 };
            for row in reader.holders(token, None).take(MAX_SCANNED) {
                let (key, ()) = row?;
                let fields = [checksum(Some(key.holder)), crate::chain::decimal_amount(key.amount, decimals)];
                if !sink.row(&fields)? {
                    break;
                }
            }
        }
    }
    sink.flush()
}

/// The file name Blockscout's frontend saves the export under.
fn file_name(export: &Export) -> String {
    let (what, subject) = match *export {
        Export::AdvancedFilters(_) => return "advanced_filters.csv".to_owned(),
        Export::Transactions(a) => ("transactions", a),
        Export::InternalTransactions(a) => ("internal_transactions", a),
        Export::TokenTransfers(a) => ("token_transfers", a),
        Export::Logs(a) => ("logs", a),
        Export::Holders(a) => ("holders", a),
    };
    format!("{what}_{}.csv", subject.to_checksum(None))
}

/// `GET /api/v2/config/csv-export`.
pub fn config() -> Response<Body> {
    crate::api::body::ok(&serde_json::json!({"limit": MAX_ROWS, "async_enabled": false}))
}

/// Serves an export: 404 for an unknown token, 429 past the client's export budget, then a streamed `text/csv`
/// body.
pub async fn export(
    state: &AppState,
    client: std::net::IpAddr,
    export: Export,
    params: CsvParams,
) -> Result<Response<Body>, ApiError> {
    if let Export::Holders(token) = &export {
        if state.store.view().get::<Tokens>(token)?.is_none() {
            return Err(ApiError::NotFound);
        }
    }
    if let crate::api::limits::Verdict::Limited(quota) = state.csv_limiter.check(client, Instant::now()) {
        return Err(ApiError::Throttled(format!("too many CSV exports: retry in {} ms", quota.retry_ms)));
    }
    let permit = tokio::time::timeout(Duration::from_secs(5), state.readers.clone().acquire_owned())
        .await
        .map_err(|_| ApiError::Timeout)?
        .map_err(|_| ApiError::Busy("the store is closing"))?;
    let name = file_name(&export);
    let (sender, chunks) = tokio::sync::mpsc::channel(4);
    let store = state.store.clone();
    let deadline = Instant::now() + TIME_LIMIT;
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let reader = store.view().until(deadline);
        let mut sink = Sink {
            chunks: sender,
            pending: line(&header_of(&export).iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()),
            rows: 0,
            deadline,
        };
        if let Err(Stop::Store) = write_rows(&reader, &export, &params, &mut sink) {
            tracing::debug!("a CSV export ended early: the store read failed or timed out");
        }
    });
    let mut response = Response::new(Body::stream(chunks));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8"));
    let disposition = format!("attachment; filename=\"{name}\"");
    response.headers_mut().insert(CONTENT_DISPOSITION, HeaderValue::from_str(&disposition).expect("ascii"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_escaped_and_formulas_neutralised() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        for risky in ["+1", "-1", "@SUM(A1)", "\tx"] {
            assert!(field(risky).starts_with('\'') || field(risky).starts_with("\"'"), "{risky}");
        }
        assert_eq!(line(&["a".into(), "b,c".into()]), "a,\"b,c\"\r\n");
    }

    #[test]
    fn periods_are_dates_or_times() {
        let q = Query::parse(Some("from_period=1970-01-02&to_period=1970-01-02"));
        let p = CsvParams::from_query(&q).unwrap();
        assert_eq!((p.from, p.to), (Some(86_400), Some(2 * 86_400 - 1)));
        let q = Query::parse(Some("from_period=1970-01-01T00:01:00Z"));
        assert_eq!(CsvParams::from_query(&q).unwrap().from, Some(60));
        for bad in [
            "from_period=yesterday",
            "to_period=2024-13-01",
            "filter_type=color",
            "filter_type=address&filter_value=up",
        ] {
            assert!(CsvParams::from_query(&Query::parse(Some(bad))).is_err(), "{bad}");
        }
    }
}

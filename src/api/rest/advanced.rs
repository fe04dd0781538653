//! `GET /api/v2/advanced-filters` and `/advanced-filters/methods`: transactions, internal transactions (value
//! transfers and creations) and token transfers in one newest-first list, filtered by type, method selector, age,
//! from/to addresses, amount and token contract, with Blockscout's five-field cursor.
//!
//! Cost is bounded whatever the filter: candidate transactions come from the most selective index (the histories
//! of the included addresses, else the transfers of the included tokens, else every transaction), and at most
//! [`MAX_TXS_SCANNED`] of them are examined per request. When that cap is reached the page ends early with a cursor
//! past the last transaction examined, so the next request continues there.

use super::contracts;
use super::tokens::{token_json, tx_transfers};
use crate::api::body::{ok, Body};
use crate::api::cursor::Cursor;
use crate::api::json::{iso_timestamp, parse_iso_ms, Contracts, TransferJson};
use crate::api::query::Query;
use crate::api::router::Page;
use crate::api::ApiError;
use crate::contracts::abi::Abi;
use crate::store::keys::{BlockPos, TracePos, TransferPos};
use crate::store::records::{CallKind, TokenKind, TokenTransferRecord, TxRecord};
use crate::store::tables::{TokenMetadatas, Transactions, Transfers};
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, U256};
use hyper::Response;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};

/// Candidate transactions examined per request at most.
pub const MAX_TXS_SCANNED: usize = 2_000;
/// Method selectors and token contracts read from one filter at most (Blockscout's limit).
pub const MAX_FILTER_VALUES: usize = 20;

/// Blockscout's default method list for the filter's picker.
const METHODS: &[(&str, &str)] = &[
    ("0xa9059cbb", "transfer"),
    ("0xa0712d68", "mint"),
    ("0x095ea7b3", "approve"),
    ("0x40993b26", "buy"),
    ("0x3593564c", "execute"),
    ("0x3ccfd60b", "withdraw"),
    ("0xd0e30db0", "deposit"),
    ("0x0a19b14a", "trade"),
    ("0x4420e486", "register"),
    ("0x5f575529", "swap"),
    ("0xd9627aa4", "sellToUniswap"),
    ("0xe9e05c42", "depositTransaction"),
    ("0x23b872dd", "transferFrom"),
    ("0xa22cb465", "setApprovalForAll"),
    ("0x2e7ba6ef", "claim"),
    ("0x0502b1c5", "unoswap"),
    ("0xb2267a7b", "sendMessage"),
    ("0x9871efa4", "unxswapByOrderId"),
    ("0xbf6eac2f", "stake"),
    ("0x3ce33bff", "bridge"),
    ("0xeb672419", "requestL2Transaction"),
    ("0xe449022e", "uniswapV3Swap"),
    ("0x0162e2d0", "swapETHForExactTokens"),
];

/// The kinds of row the list holds (`transaction_types`).
const TYPES: &[&str] = &["COIN_TRANSFER", "CONTRACT_INTERACTION", "CONTRACT_CREATION", "ERC-20", "ERC-721", "ERC-1155"];

/// Addresses to include and exclude.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeExclude<T> {
    /// Only these (none: any).
    pub include: Vec<T>,
    /// Never these.
    pub exclude: Vec<T>,
}

/// A token filter entry: a contract or the native coin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFilter {
    /// The native coin (`native`).
    Native,
    /// A token contract.
    Contract(Address),
}

/// Everything `/advanced-filters` filters by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvancedFilter {
    /// Upper-case type names (`COIN_TRANSFER`, `ERC-20`, …); empty: all.
    pub types: Vec<String>,
    /// Selectors of the transaction's input; empty: any.
    pub methods: Vec<[u8; 4]>,
    /// Block timestamps (seconds), inclusive.
    pub age_from: Option<u64>,
    /// Block timestamps (seconds), inclusive.
    pub age_to: Option<u64>,
    /// `from` addresses.
    pub from: IncludeExclude<Address>,
    /// `to` addresses.
    pub to: IncludeExclude<Address>,
    /// Whether an included from and an included to must both match (`and`) or either (`or`, the default).
    pub relation_and: bool,
    /// Amount range in whole units (`"1.5"`), as (integer digits, fraction digits).
    pub amount_from: Option<String>,
    /// Amount range in whole units.
    pub amount_to: Option<String>,
    /// Token contracts (and `native`).
    pub tokens: IncludeExclude<TokenFilter>,
}

fn list<'q>(q: &'q Query, key: &'static str) -> impl Iterator<Item = &'q str> {
    q.get(key).into_iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty())
}

fn address(raw: &str, key: &'static str) -> Result<Address, ApiError> {
    let valid = raw.len() == 42 && raw.starts_with("0x") && raw[2..].bytes().all(|b| b.is_ascii_hexdigit());
    if !valid {
        return Err(ApiError::invalid(key, "Invalid address hash"));
    }
    raw.parse().map_err(|_| ApiError::invalid(key, "Invalid address hash"))
}

fn addresses(q: &Query, include: &'static str, exclude: &'static str) -> Result<IncludeExclude<Address>, ApiError> {
    let read = |key| list(q, key).take(MAX_FILTER_VALUES).map(|a| address(a, key)).collect::<Result<Vec<_>, _>>();
    Ok(IncludeExclude { include: read(include)?, exclude: read(exclude)? })
}

fn tokens(q: &Query, include: &'static str, exclude: &'static str) -> Result<IncludeExclude<TokenFilter>, ApiError> {
    let read = |key| {
        list(q, key)
            .take(MAX_FILTER_VALUES)
            .map(|a| match a.to_ascii_lowercase().as_str() {
                "native" => Ok(TokenFilter::Native),
                _ => address(a, key).map(TokenFilter::Contract),
            })
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(IncludeExclude { include: read(include)?, exclude: read(exclude)? })
}

/// A decimal amount: digits with at most one `.`.
fn amount(q: &Query, key: &'static str) -> Result<Option<String>, ApiError> {
    let Some(raw) = q.get(key) else { return Ok(None) };
    let (whole, fraction) = raw.split_once('.').unwrap_or((raw, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) || raw.len() > 100 {
        return Err(ApiError::invalid(key, "Invalid value: expected a non-negative decimal number"));
    }
    Ok(Some(raw.to_owned()))
}

fn age(q: &Query, key: &'static str) -> Result<Option<u64>, ApiError> {
    q.get(key)
        .map(|raw| {
            let normalized = raw.replace("+00:00", "Z");
            parse_iso_ms(&normalized)
                .map(|ms| ms / 1000)
                .ok_or_else(|| ApiError::invalid(key, "Invalid value: expected an ISO 8601 UTC time (…Z)"))
        })
        .transpose()
}

impl AdvancedFilter {
    /// Reads the filter from the query (422 for a malformed value).
    pub fn from_query(q: &Query) -> Result<Self, ApiError> {
        let mut types = Vec::new();
        for t in list(q, "transaction_types") {
            let t = t.to_ascii_uppercase();
            if !TYPES.contains(&t.as_str()) {
                return Err(ApiError::invalid(
                    "transaction_types",
                    format!("Invalid value: one of {}", TYPES.join(",")),
                ));
            }
            types.push(t);
        }
        let mut methods = Vec::new();
        for m in list(q, "methods").take(MAX_FILTER_VALUES) {
            let bytes = m.strip_prefix("0x").and_then(|h| alloy::hex::decode(h).ok());
            match bytes.and_then(|b| <[u8; 4]>::try_from(b).ok()) {
                Some(selector) => methods.push(selector),
                None => return Err(ApiError::invalid("methods", "Invalid value: expected 0x and 8 hex digits")),
            }
        }
        let relation_and = match q.get("address_relation").map(str::to_ascii_lowercase).as_deref() {
            None | Some("or") => false,
            Some("and") => true,
            Some(_) => return Err(ApiError::invalid("address_relation", "Invalid value: or, and")),
        };
        Ok(AdvancedFilter {
            types,
            methods,
            age_from: age(q, "age_from")?,
            age_to: age(q, "age_to")?,
            from: addresses(q, "from_address_hashes_to_include", "from_address_hashes_to_exclude")?,
            to: addresses(q, "to_address_hashes_to_include", "to_address_hashes_to_exclude")?,
            relation_and,
            amount_from: amount(q, "amount_from")?,
            amount_to: amount(q, "amount_to")?,
            tokens: tokens(q, "token_contract_address_hashes_to_include", "token_contract_address_hashes_to_exclude")?,
        })
    }

    fn parties_match(&self, from: &Address, to: Option<&Address>) -> bool {
        if self.from.exclude.contains(from) || to.is_some_and(|t| self.to.exclude.contains(t)) {
            return false;
        }
        let from_in = self.from.include.contains(from);
        let to_in = to.is_some_and(|t| self.to.include.contains(t));
        match (self.from.include.is_empty(), self.to.include.is_empty()) {
            (true, true) => true,
            (false, true) => from_in,
            (true, false) => to_in,
            (false, false) if self.relation_and => from_in && to_in,
            (false, false) => from_in || to_in,
        }
    }

    fn token_matches(&self, token: TokenFilter) -> bool {
        !self.tokens.exclude.contains(&token)
            && (self.tokens.include.is_empty() || self.tokens.include.contains(&token))
    }

    fn amount_matches(&self, value: U256, decimals: u8) -> bool {
        let scaled = |text: &String| scale(text, decimals);
        self.amount_from.as_ref().is_none_or(|from| scaled(from) <= value)
            && self.amount_to.as_ref().is_none_or(|to| value <= scaled(to))
    }
}

/// A decimal text in units of `10^-decimals` (digits past `decimals` are dropped; too large saturates).
fn scale(text: &str, decimals: u8) -> U256 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let mut digits: String = whole.to_owned();
    digits.extend(fraction.chars().chain(std::iter::repeat('0')).take(decimals as usize));
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return U256::ZERO;
    }
    U256::from_str_radix(digits, 10).unwrap_or(U256::MAX)
}

/// The position of a row: its transaction and, inside it, the transaction itself, an internal call or a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Within {
    /// The transaction's own row.
    Transaction,
    /// An internal call (its index in the transaction's calls).
    Internal(u32),
    /// A token transfer (log index, index in its batch).
    Transfer(u32, u16),
}

/// `block_number`, `transaction_index`, `internal_transaction_index`, `token_transfer_index`,
/// `token_transfer_batch_index`: the last row shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdvancedCursor {
    /// The row's transaction.
    pub tx: BlockPos,
    /// The row inside it.
    pub within: Within,
}

impl AdvancedCursor {
    /// A cursor past every row of `tx`.
    fn past(tx: BlockPos) -> Self {
        AdvancedCursor { tx, within: Within::Transfer(u32::MAX, u16::MAX) }
    }
}

impl Cursor for AdvancedCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(block) = q.u64("block_number")? else { return Ok(None) };
        let small = |key: &'static str| -> Result<Option<u32>, ApiError> {
            q.u64(key)?
                .map(|n| u32::try_from(n).map_err(|_| ApiError::invalid(key, "Invalid value: too large")))
                .transpose()
        };
        let index = small("transaction_index")?.unwrap_or(u32::MAX);
        let within = match (small("internal_transaction_index")?, small("token_transfer_index")?) {
            (Some(internal), _) => Within::Internal(internal),
            (None, Some(log)) => {
                let batch = small("token_transfer_batch_index")?.unwrap_or(0);
                Within::Transfer(log, u16::try_from(batch).unwrap_or(u16::MAX))
            }
            (None, None) => Within::Transaction,
        };
        Ok(Some(AdvancedCursor { tx: BlockPos { block, index }, within }))
    }

    fn to_params(&self) -> Vec<(&'static str, Value)> {
        let (internal, log, batch) = match self.within {
            Within::Transaction => (Value::Null, Value::Null, Value::Null),
            Within::Internal(i) => (json!(i), Value::Null, Value::Null),
            Within::Transfer(log, item) => (Value::Null, json!(log), json!(item)),
        };
        vec![
            ("block_number", json!(self.tx.block)),
            ("transaction_index", json!(self.tx.index)),
            ("internal_transaction_index", internal),
            ("token_transfer_index", log),
            ("token_transfer_batch_index", batch),
        ]
    }
}

type Candidates<'r> = Box<dyn Iterator<Item = StoreResult<BlockPos>> + 'r>;

/// Newest-first transaction positions merged from several newest-first streams, each position once.
struct Merged<'r> {
    streams: Vec<std::iter::Peekable<Candidates<'r>>>,
    last: Option<BlockPos>,
}

impl Iterator for Merged<'_> {
    type Item = StoreResult<BlockPos>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let mut best: Option<(usize, BlockPos)> = None;
            for (i, stream) in self.streams.iter_mut().enumerate() {
                match stream.peek() {
                    Some(Ok(pos)) if best.is_none_or(|(_, b)| (pos.block, pos.index) > (b.block, b.index)) => {
                        best = Some((i, *pos))
                    }
                    Some(Ok(_)) | None => {}
                    Some(Err(_)) => return stream.next(),
                }
            }
            let (i, pos) = best?;
            self.streams[i].next();
            if self.last != Some(pos) {
                self.last = Some(pos);
                return Some(Ok(pos));
            }
        }
    }
}

/// The candidate transactions at or below `start` (a position inside the cursor's block or above), newest first.
fn candidates<'r>(reader: &'r Reader<'r>, filter: &AdvancedFilter, start: Option<u64>) -> Candidates<'r> {
    let top = start.map(|b| b.saturating_add(1));
    let tx_after = top.map(|block| BlockPos { block, index: 0 });
    let transfer_after = top.map(|block| TransferPos { block, log: 0, item: 0 });
    let transfer_tx = move |pos: TransferPos| -> StoreResult<Option<BlockPos>> {
        Ok(reader.get::<Transfers>(&pos)?.map(|t| BlockPos { block: pos.block, index: t.tx_index }))
    };
    let mut addresses: Vec<Address> = filter.from.include.iter().chain(&filter.to.include).copied().collect();
    addresses.sort();
    addresses.dedup();
    let token_contracts: Vec<Address> = filter
        .tokens
        .include
        .iter()
        .filter_map(|t| match t {
            TokenFilter::Contract(a) => Some(*a),
            TokenFilter::Native => None,
        })
        .collect();
    let only_tokens = !filter.tokens.include.is_empty() && !filter.tokens.include.contains(&TokenFilter::Native);
    let mut streams: Vec<std::iter::Peekable<Candidates<'r>>> = Vec::new();
    if !addresses.is_empty() {
        for address in addresses {
            let txs = reader
                .address_txs(address, tx_after, crate::store::Order::NewestFirst)
                .map(|row| row.map(|(key, _)| key.pos));
            streams.push((Box::new(txs) as Candidates<'r>).peekable());
            let transfers = reader
                .address_transfers(address, transfer_after)
                .filter_map(move |row| row.and_then(|(key, _)| transfer_tx(key.pos)).transpose());
            streams.push((Box::new(transfers) as Candidates<'r>).peekable());
            let calls = reader
                .address_calls(address, top.map(|block| TracePos { block, tx: 0, index: 0 }))
                .map(|row| row.map(|(key, _)| BlockPos { block: key.pos.block, index: key.pos.tx }));
            streams.push((Box::new(calls) as Candidates<'r>).peekable());
        }
    } else if only_tokens && !token_contracts.is_empty() {
        for token in token_contracts {
            let transfers = reader
                .token_transfers(token, transfer_after)
                .filter_map(move |row| row.and_then(|(key, _)| transfer_tx(key.pos)).transpose());
            streams.push((Box::new(transfers) as Candidates<'r>).peekable());
        }
    } else {
        let txs = reader.txs(tx_after).map(|row| row.map(|(pos, _)| pos));
        return Box::new(txs);
    }
    Box::new(Merged { streams, last: None })
}

/// One row of the list before rendering.
struct Row {
    tx: BlockPos,
    within: Within,
    kind: &'static str,
    from: Address,
    to: Option<Address>,
    value: U256,
    transfer: Option<TokenTransferRecord>,
}

/// The rows of transaction `tx` (at `pos`) that pass `filter`, in the list's order.
fn tx_rows(
    reader: &Reader<'_>,
    filter: &AdvancedFilter,
    pos: BlockPos,
    tx: &TxRecord,
    contracts: &mut HashMap<Address, bool>,
) -> StoreResult<Vec<Row>> {
    let mut rows = Vec::new();
    let mut is_contract = |reader: &Reader<'_>, a: Address| -> StoreResult<bool> {
        if let Some(known) = contracts.get(&a) {
            return Ok(*known);
        }
        let flag = super::contracts(reader, [a])?.is_contract(&a);
        contracts.insert(a, flag);
        Ok(flag)
    };
    let tx_kind = match tx.to {
        None => "contract_creation",
        Some(to) if !tx.input.is_empty() && is_contract(reader, to)? => "contract_interaction",
        Some(_) if !tx.input.is_empty() => "contract_interaction",
        Some(_) => "coin_transfer",
    };
    let to_or_created = tx.to.or(tx.created);
    rows.push(Row {
        tx: pos,
        within: Within::Transaction,
        kind: tx_kind,
        from: tx.from,
        to: to_or_created,
        value: tx.value,
        transfer: None,
    });
    for call in reader.tx_calls(pos, None) {
        let (key, call) = call?;
        let kind = match call.kind {
            CallKind::Create | CallKind::Create2 => "contract_creation",
            _ if !call.value.is_zero() && call.success => "coin_transfer",
            _ => continue,
        };
        let to = call.to.or(call.created);
        rows.push(Row {
            tx: pos,
            within: Within::Internal(key.index),
            kind,
            from: call.from,
            to,
            value: call.value,
            transfer: None,
        });
    }
    for (tpos, transfer) in tx_transfers(reader, pos.block, tx)?.into_iter().rev() {
        let kind = match transfer.kind {
            TokenKind::Erc20 => "ERC-20",
            TokenKind::Erc721 => "ERC-721",
            TokenKind::Erc1155 => "ERC-1155",
        };
        rows.push(Row {
            tx: pos,
            within: Within::Transfer(tpos.log, tpos.item),
            kind,
            from: transfer.from,
            to: Some(transfer.to),
            value: transfer.amount,
            transfer: Some(transfer),
        });
    }
    rows.sort_by_key(|r| r.within);
    let mut kept = Vec::new();
    for row in rows {
        if !filter.types.is_empty() && !filter.types.iter().any(|t| t.eq_ignore_ascii_case(row.kind)) {
            continue;
        }
        if !filter.parties_match(&row.from, row.to.as_ref()) {
            continue;
        }
        let (token, decimals) = match &row.transfer {
            None => (TokenFilter::Native, 18),
            Some(t) => {
                let decimals = match t.kind {
                    TokenKind::Erc20 => reader.get::<TokenMetadatas>(&t.token)?.and_then(|m| m.decimals).unwrap_or(0),
                    _ => 0,
                };
                (TokenFilter::Contract(t.token), decimals)
            }
        };
        if !filter.token_matches(token) || !filter.amount_matches(row.value, decimals) {
            continue;
        }
        kept.push(row);
    }
    Ok(kept)
}

/// `GET /api/v2/advanced-filters`.
pub fn advanced_filters(
    reader: &Reader<'_>,
    filter: &AdvancedFilter,
    page: Page<AdvancedCursor>,
) -> Result<Response<Body>, ApiError> {
    let (found, next) = scan(reader, filter, page.after, page.size)?;
    render(reader, filter, found, next, page.size)
}

/// Rows found by one scan (each with its transaction) and the cursor after them.
type Scanned = (Vec<(Row, TxRecord)>, Option<AdvancedCursor>);

/// Up to `size` rows after `after`, examining at most [`MAX_TXS_SCANNED`] candidate transactions, and the cursor
/// that continues after them (`None` at the end).
fn scan(
    reader: &Reader<'_>,
    filter: &AdvancedFilter,
    after: Option<AdvancedCursor>,
    size: usize,
) -> StoreResult<Scanned> {
    let mut found: Vec<(Row, TxRecord)> = Vec::new();
    let mut scanned = 0usize;
    let mut cap_cursor = None;
    let mut flags = HashMap::new();
    let mut more = false;
    'scan: for pos in candidates(reader, filter, after.map(|c| c.tx.block)) {
        let pos = pos?;
        if let Some(after) = after {
            if (pos.block, pos.index) > (after.tx.block, after.tx.index) {
                continue;
            }
        }
        if scanned >= MAX_TXS_SCANNED {
            more = true;
            break;
        }
        scanned += 1;
        let Some(tx) = reader.get::<Transactions>(&pos)? else { continue };
        let header_time = reader.block(pos.block)?.map(|h| h.timestamp).unwrap_or(0);
        cap_cursor = Some(AdvancedCursor::past(pos));
        if filter.age_to.is_some_and(|to| header_time > to) {
            continue;
        }
        if filter.age_from.is_some_and(|from| header_time < from) {
            // Newest first: every later candidate is older still.
            cap_cursor = None;
            break;
        }
        if !filter.methods.is_empty() && !tx.input.get(..4).is_some_and(|s| filter.methods.iter().any(|m| m == s)) {
            continue;
        }
        for row in tx_rows(reader, filter, pos, &tx, &mut flags)? {
            if after.is_some_and(|after| after.tx == pos && row.within <= after.within) {
                continue;
            }
            if found.len() == size {
                more = true;
                break 'scan;
            }
            found.push((row, tx.clone()));
        }
    }
    let next = match found.last() {
        _ if !more => None,
        Some((row, _)) if found.len() == size => Some(AdvancedCursor { tx: row.tx, within: row.within }),
        _ => cap_cursor,
    };
    Ok((found, next))
}

/// Columns of `/advanced-filters/csv` (Blockscout's).
pub const CSV_COLUMNS: &[&str] = &[
    "TxHash",
    "Type",
    "MethodId",
    "UtcTimestamp",
    "FromAddress",
    "ToAddress",
    "CreatedContractAddress",
    "Value",
    "TokenContractAddressHash",
    "TokenDecimals",
    "TokenSymbol",
    "TokenValue",
    "TokenID",
    "BlockNumber",
    "Fee",
    "CurrentPrice",
    "TxDateOpeningPrice",
    "TxDateClosingPrice",
];

/// The rows of `/advanced-filters/csv`, page after page, each handed to `row` until it answers `false`, the rows
/// end or `max_pages` scans of [`MAX_TXS_SCANNED`] transactions were made.
pub fn csv_rows<E: From<crate::store::StoreError>>(
    reader: &Reader<'_>,
    filter: &AdvancedFilter,
    max_pages: usize,
    mut row: impl FnMut(&[String]) -> Result<bool, E>,
) -> Result<(), E> {
    let mut after = None;
    let checksum = |a: Option<Address>| a.map(|a| a.to_checksum(None)).unwrap_or_default();
    for _ in 0..max_pages {
        let (found, next) = scan(reader, filter, after, 500)?;
        for (r, tx) in &found {
            let timestamp = reader.block(r.tx.block)?.map(|h| iso_timestamp(h.timestamp)).unwrap_or_default();
            let created = match r.within {
                Within::Transaction => tx.created,
                _ if r.kind == "contract_creation" => r.to,
                _ => None,
            };
            let (token, decimals, symbol, token_value, token_id) = match &r.transfer {
                Some(t) => {
                    let metadata = reader.get::<TokenMetadatas>(&t.token)?;
                    let decimals = metadata.as_ref().and_then(|m| m.decimals).filter(|_| t.kind == TokenKind::Erc20);
                    let value = match (t.kind, decimals) {
                        (TokenKind::Erc721, _) => String::new(),
                        (_, Some(d)) => crate::chain::decimal_amount(t.amount, d),
                        (_, None) => t.amount.to_string(),
                    };
                    (
                        checksum(Some(t.token)),
                        decimals.map(|d| d.to_string()).unwrap_or_default(),
                        metadata.and_then(|m| m.symbol).unwrap_or_default(),
                        value,
                        t.token_id.filter(|_| t.kind != TokenKind::Erc20).map(|id| id.to_string()).unwrap_or_default(),
                    )
                }
                None => Default::default(),
            };
            let fields = [
                format!("{:#x}", tx.hash),
                r.kind.to_owned(),
                tx.input.get(..4).map(|s| format!("0x{}", alloy::hex::encode(s))).unwrap_or_default(),
                timestamp,
                checksum(Some(r.from)),
                checksum(r.to),
                checksum(created),
                if r.transfer.is_some() { String::new() } else { r.value.to_string() },
                token,
                decimals,
                symbol,
                token_value,
                token_id,
                r.tx.block.to_string(),
                tx.fee().to_string(),
                String::new(),
                String::new(),
                String::new(),
            ];
            if !row(&fields)? {
                return Ok(());
            }
        }
        match next {
            Some(next) => after = Some(next),
            None => return Ok(()),
        }
    }
    Ok(())
}

fn render(
    reader: &Reader<'_>,
    filter: &AdvancedFilter,
    rows: Vec<(Row, TxRecord)>,
    next: Option<AdvancedCursor>,
    size: usize,
) -> Result<Response<Body>, ApiError> {
    let headers = super::headers(reader, rows.iter().map(|(r, _)| r.tx.block))?;
    let parties = rows.iter().flat_map(|(r, tx)| [Some(r.from), r.to, tx.to].into_iter().flatten());
    let contracts: Contracts = contracts(reader, parties)?;
    let token_addresses: BTreeSet<Address> =
        rows.iter().filter_map(|(r, _)| r.transfer.as_ref().map(|t| t.token)).collect();
    let mut tokens = HashMap::new();
    for token in token_addresses {
        if let Some(json) = token_json(reader, &token)? {
            tokens.insert(token, json);
        }
    }
    let mut items = Vec::with_capacity(rows.len());
    for (row, tx) in &rows {
        let Some(header) = headers.get(&row.tx.block) else { continue };
        let (total, token) = match (&row.transfer, row.within) {
            (Some(t), Within::Transfer(log, _)) => match tokens.get(&t.token) {
                Some(token) => {
                    let call = tx.to.as_ref().map(|to| (&tx.input, Some(to)));
                    let item = TransferJson::new(t, log, header, token.clone(), call, &contracts);
                    let item = serde_json::to_value(item).expect("serializes");
                    (item["total"].clone(), item["token"].clone())
                }
                None => (Value::Null, Value::Null),
            },
            _ => (Value::Null, Value::Null),
        };
        let (internal, log, batch) = match row.within {
            Within::Transaction => (Value::Null, Value::Null, Value::Null),
            Within::Internal(i) => (json!(i), Value::Null, Value::Null),
            Within::Transfer(l, b) => (Value::Null, json!(l), json!(b)),
        };
        items.push(json!({
            "hash": format!("{:#x}", tx.hash),
            "type": row.kind,
            "method": contracts.method(&tx.input, tx.to.as_ref()),
            "from": contracts.address(&row.from),
            "to": row.to.map(|a| contracts.address(&a)),
            "created_contract": Value::Null,
            "value": if row.transfer.is_some() { Value::Null } else { json!(row.value.to_string()) },
            "total": total,
            "token": token,
            "fee": tx.fee().to_string(),
            "status": if tx.succeeded() { "ok" } else { "error" },
            "timestamp": iso_timestamp(header.timestamp),
            "block_number": row.tx.block,
            "transaction_index": row.tx.index,
            "internal_transaction_index": internal,
            "token_transfer_index": log,
            "token_transfer_batch_index": batch,
        }));
    }
    let next_page_params = next.map(|c| Value::Object(crate::api::cursor::next_page_params(&c, size, &[])));
    Ok(ok(&json!({
        "items": items,
        "next_page_params": next_page_params,
        "search_params": search_params(reader, filter)?,
    })))
}

/// `search_params`: names of the filtered methods and the filtered tokens' objects.
fn search_params(reader: &Reader<'_>, filter: &AdvancedFilter) -> StoreResult<Value> {
    let well_known = Abi::well_known();
    let mut methods = Map::new();
    for selector in &filter.methods {
        let id = format!("0x{}", alloy::hex::encode(selector));
        let name = METHODS
            .iter()
            .find(|(m, _)| *m == id)
            .map(|(_, n)| (*n).to_owned())
            .or_else(|| well_known.function(selector).map(|f| f.name.clone()));
        if let Some(name) = name {
            methods.insert(id, json!(name));
        }
    }
    let mut tokens = Map::new();
    for t in filter.tokens.include.iter().chain(&filter.tokens.exclude) {
        if let TokenFilter::Contract(address) = t {
            if let Some(json) = token_json(reader, address)? {
                tokens.insert(address.to_checksum(None), serde_json::to_value(json).expect("serializes"));
            }
        }
    }
    Ok(json!({"methods": methods, "tokens": tokens}))
}

/// `GET /api/v2/advanced-filters/methods?q=`: Blockscout's default list, or the one method a name or selector
/// names (the default list, then the well-known signatures).
pub fn methods(q: Option<&str>) -> Result<Response<Body>, ApiError> {
    let item = |id: &str, name: &str| json!({"method_id": id, "name": name});
    let Some(q) = q.map(str::to_ascii_lowercase) else {
        let all: Vec<Value> = METHODS.iter().map(|(id, name)| item(id, name)).collect();
        return Ok(ok(&all));
    };
    if let Some((id, name)) = METHODS.iter().find(|(id, name)| *id == q || name.eq_ignore_ascii_case(&q)) {
        return Ok(ok(&json!([item(id, name)])));
    }
    let selector =
        q.strip_prefix("0x").and_then(|h| alloy::hex::decode(h).ok()).and_then(|b| <[u8; 4]>::try_from(b).ok());
    let well_known = Abi::well_known();
    let found = match selector {
        Some(selector) => {
            let name = well_known.function(&selector).map(|f| f.name.clone()).unwrap_or_default();
            vec![item(&q, &name)]
        }
        None => well_known
            .selectors_named(&q)
            .into_iter()
            .take(1)
            .map(|s| {
                let name = well_known.function(&s).map(|f| f.name.clone()).unwrap_or_default();
                item(&format!("0x{}", alloy::hex::encode(s)), &name)
            })
            .collect(),
    };
    Ok(ok(&found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_scale_to_the_token_decimals() {
        assert_eq!(scale("1.5", 18), U256::from(15u64) * U256::from(10u64).pow(U256::from(17)));
        assert_eq!(scale("0.25", 2), U256::from(25u8));
        assert_eq!(scale("0.001", 2), U256::ZERO);
        assert_eq!(scale("7", 0), U256::from(7u8));
        assert_eq!(scale(&"9".repeat(90), 0), U256::MAX);
    }

    #[test]
    fn cursors_read_back_what_they_write() {
        let tx = BlockPos { block: 9, index: 2 };
        for within in
            [Within::Transaction, Within::Internal(3), Within::Transfer(5, 1), Within::Transfer(u32::MAX, u16::MAX)]
        {
            let cursor = AdvancedCursor { tx, within };
            let text: Vec<String> = cursor
                .to_params()
                .into_iter()
                .map(|(k, v)| format!("{k}={}", if v.is_null() { "null".to_owned() } else { v.to_string() }))
                .collect();
            let q = Query::parse(Some(&text.join("&")));
            assert_eq!(AdvancedCursor::from_query(&q).unwrap(), Some(cursor));
        }
    }

    #[test]
    fn malformed_filters_are_refused() {
        for bad in [
            "methods=0x12",
            "transaction_types=FOO",
            "amount_from=1.2.3",
            "age_from=yesterday",
            "from_address_hashes_to_include=0x12",
            "address_relation=xor",
        ] {
            assert!(AdvancedFilter::from_query(&Query::parse(Some(bad))).is_err(), "{bad}");
        }
        let ok = AdvancedFilter::from_query(&Query::parse(Some("transaction_types=erc-20,coin_transfer&methods=0xa9059cbb&age_from=2024-01-01T00:00:00Z&token_contract_address_hashes_to_include=native"))).unwrap();
        assert_eq!(ok.types, vec!["ERC-20", "COIN_TRANSFER"]);
        assert_eq!(ok.tokens.include, vec![TokenFilter::Native]);
    }
}

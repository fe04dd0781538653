//! Addresses: `/addresses/:a` and its lists and counters. Any well-formed address answers 200; an address the
//! index never saw gets zeros and empty lists, as in Blockscout.

use super::{envelope, take_page, tx_envelope, PageRows};
use crate::api::body::{ok, Body};
use crate::api::cursor::{AmountCursor, BlockCursor, CoinRankCursor, PosCursor, TxAmount};
use crate::api::json::{checksum, hash_hex, iso_date, iso_timestamp, signed_change, AddressJson, LogJson};
use crate::api::router::{Direction as Filter, Page};
use crate::api::{ApiError, AppState};
use crate::store::keys::{BlockPos, CoinRankKey, DayKey};
use crate::store::records::{role, AccountRecord, LogRecord, TxRecord};
use crate::store::tables::{Accounts, Code, Contracts, Logs, Transactions};
use crate::store::{Order, Reader, StoreResult};
use alloy::primitives::{Address, B256, U256};
use hyper::Response;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Distinct token holdings counted for `/tabs-counters` (Blockscout caps its tab counts similarly).
const TABS_CAP: usize = 51;

fn account(reader: &Reader<'_>, address: &Address) -> StoreResult<Option<AccountRecord>> {
    reader.get::<Accounts>(address)
}

/// `GET /api/v2/addresses/:a`: the address object plus balance (from the node at the indexed tip, cached per
/// block), creation, and what the address has.
pub async fn detail(state: &AppState, address: Address) -> Result<Response<Body>, ApiError> {
    // Every stored fact comes from one view; the node is asked for the balance after it is dropped.
    let (record, has_tokens, token, tip, internal, info) = {
        let reader = state.store.view();
        let record = account(&reader, &address)?;
        let has_tokens = reader.has_tokens(address)?;
        let token = super::tokens::token_json(&reader, &address)?;
        let internal = match record.as_ref().and_then(|r| r.creation) {
            Some(_) => None,
            None => super::traces::internal_creation(&reader, address)?,
        };
        let info = super::smart_contracts::contract_info(&reader, &address)?;
        (record, has_tokens, token, reader.tip()?, internal, info)
    };
    let on_chain = match tip {
        Some(tip) => tokio::time::timeout(state.config.node_read_timeout, state.account_state(address, Some(tip)))
            .await
            .ok()
            .and_then(Result::ok),
        None => None,
    };
    let indexed_contract = record.as_ref().is_some_and(AccountRecord::is_contract);
    let is_contract = indexed_contract || on_chain.as_ref().is_some_and(|s| s.has_code);
    let is_contract = is_contract || internal.is_some_and(|c| c.success);
    let creation = record.as_ref().and_then(|r| r.creation).map(|c| (c.creator, c.tx, c.success));
    let creation = creation.or(internal.map(|c| (c.creator, c.tx, c.success)));
    let object =
        AddressJson::new(&address, is_contract).with_info(info.as_ref()).with_ens(state.primary_name(address).await);
    let mut body = serde_json::to_value(object).expect("address object serializes");
    let fields = body.as_object_mut().expect("an object");
    let extra = json!({
        "creator_address_hash": creation.map(|(creator, _, _)| checksum(&creator)),
        "creation_transaction_hash": creation.map(|(_, tx, _)| hash_hex(&tx)),
        // Created, and (as the node says at the tip) no code left: `selfdestructed`, as on the contract's own route.
        "creation_status": creation.map(|(_, _, success)| match (success, on_chain.as_ref().map(|s| s.has_code)) {
            (false, _) => "failed",
            (true, Some(false)) => "selfdestructed",
            (true, _) => "success",
        }),
        "token": token,
        "coin_balance": on_chain.as_ref().map(|s| s.balance.to_string()),
        "exchange_rate": null,
        "block_number_balance_updated_at": on_chain.as_ref().and(tip.map(|t| t.number)),
        // Every log the index holds counts in its emitter's account (and leaves with it when its block is reverted).
        "has_logs": record.as_ref().is_some_and(|r| r.log_count > 0),
        "has_tokens": has_tokens,
        "has_token_transfers": record.as_ref().is_some_and(|r| r.token_transfer_count > 0),
        "has_validated_blocks": record.as_ref().is_some_and(|r| r.blocks_mined > 0),
        "has_beacon_chain_withdrawals": false,
        "watchlist_address_id": null,
    });
    if let serde_json::Value::Object(extra) = extra {
        fields.extend(extra);
    }
    Ok(ok(&body))
}

/// `GET /api/v2/addresses/:a/transactions`.
pub fn transactions(
    reader: &Reader<'_>,
    address: Address,
    filter: Option<Filter>,
    ascending: bool,
    page: Page<PosCursor>,
) -> Result<Response<Body>, ApiError> {
    let order = if ascending { Order::OldestFirst } else { Order::NewestFirst };
    let wanted = wanted_roles(filter);
    let scan = reader.address_txs(address, page.after.map(|c| c.0), order);
    let rows = take_page(scan, page.size, |_, roles| Ok(roles & wanted != 0))?;
    let positions: Vec<BlockPos> = rows.items.iter().map(|(k, _)| k.pos).collect();
    let txs = reader.multi_get::<Transactions>(&positions)?;
    let items: Vec<(BlockPos, TxRecord)> = positions.into_iter().zip(txs).filter_map(|(p, t)| Some((p, t?))).collect();
    let page_rows = PageRows { items, next: rows.next.map(|k| k.pos) };
    let mut extra = Vec::new();
    if let Some(f) = filter {
        extra.push(("filter", json!(if f == Filter::To { "to" } else { "from" })));
    }
    if ascending {
        extra.push(("order", json!("asc")));
    }
    Ok(ok(&tx_envelope(reader, page_rows, page.size, &extra)?))
}

/// Most transactions of one address (in every direction) that a list sorted by value or fee reads and sorts for
/// each page; an address with more is refused with 422.
pub const SORTED_TXS_LIMIT: usize = 10_000;

/// Transactions whose records are held at once while a sorted list reads their amounts.
const AMOUNT_CHUNK: usize = 256;

/// `GET /api/v2/addresses/:a/transactions?sort=value|fee&order=`: the address's transactions sorted by the
/// amount, ties newest first in either order (as Blockscout). No index is kept by amount: every page reads the
/// amounts of the address's whole list, at most [`SORTED_TXS_LIMIT`] transactions, and keeps only the page's
/// records.
pub fn transactions_by(
    reader: &Reader<'_>,
    address: Address,
    filter: Option<Filter>,
    by: TxAmount,
    ascending: bool,
    page: Page<AmountCursor>,
) -> Result<Response<Body>, ApiError> {
    let wanted = wanted_roles(filter);
    let mut positions = Vec::new();
    for (examined, row) in reader.address_txs(address, None, Order::NewestFirst).enumerate() {
        if examined == SORTED_TXS_LIMIT {
            let detail = format!(
                "Sorting by {} is supported for addresses with at most {SORTED_TXS_LIMIT} transactions; sort by \
                 block_number",
                by.name()
            );
            return Err(ApiError::invalid("sort", detail));
        }
        let (key, roles) = row?;
        if roles & wanted != 0 {
            positions.push(key.pos);
        }
    }
    let amount = |tx: &TxRecord| match by {
        TxAmount::Value => tx.body.value,
        TxAmount::Fee => tx.fee(),
    };
    let mut rows: Vec<(U256, BlockPos)> = Vec::with_capacity(positions.len());
    for chunk in positions.chunks(AMOUNT_CHUNK) {
        let txs = reader.multi_get::<Transactions>(chunk)?;
        rows.extend(chunk.iter().zip(txs).filter_map(|(pos, tx)| Some((amount(&tx?), *pos))));
    }
    // The amount in the order asked for, then the newest first.
    let compare = |(a, a_pos): &(U256, BlockPos), (b, b_pos): &(U256, BlockPos)| {
        let by_amount = if ascending { a.cmp(b) } else { b.cmp(a) };
        by_amount.then_with(|| (b_pos.block, b_pos.index).cmp(&(a_pos.block, a_pos.index)))
    };
    let (shown, more) = super::sorted_page(rows, compare, page.after.map(|c| (c.amount, c.pos)), page.size);
    let positions: Vec<BlockPos> = shown.iter().map(|(_, pos)| *pos).collect();
    let txs = reader.multi_get::<Transactions>(&positions)?;
    let items: Vec<(BlockPos, TxRecord)> = positions.into_iter().zip(txs).filter_map(|(p, t)| Some((p, t?))).collect();
    let next = shown.last().filter(|_| more).map(|(amount, pos)| AmountCursor { by, amount: *amount, pos: *pos });
    let mut extra = vec![("order", json!(if ascending { "asc" } else { "desc" }))];
    extra.extend(filter.map(|f| ("filter", json!(if f == Filter::To { "to" } else { "from" }))));
    Ok(ok(&envelope(super::tx_items(reader, &items)?, next, page.size, &extra)))
}

/// The roles in an address's transaction index that a `filter` lists.
fn wanted_roles(filter: Option<Filter>) -> u8 {
    match filter {
        None => role::FROM | role::TO | role::CREATED,
        Some(Filter::To) => role::TO | role::CREATED,
        Some(Filter::From) => role::FROM,
    }
}

/// `GET /api/v2/addresses/:a/logs`, optionally only logs carrying `topic`.
pub fn logs(
    reader: &Reader<'_>,
    address: Address,
    topic: Option<B256>,
    page: Page<PosCursor>,
) -> Result<Response<Body>, ApiError> {
    let scan = reader.address_logs(address, page.after.map(|c| c.0));
    // With a topic filter each candidate log is read once; without one only the page is.
    let mut fetched: Vec<(BlockPos, LogRecord)> = Vec::new();
    let rows = take_page(scan, page.size, |key, _| match topic {
        None => Ok(true),
        Some(topic) => match reader.get::<Logs>(&key.pos)? {
            Some(log) if log.topics.contains(&topic) => {
                fetched.push((key.pos, log));
                Ok(true)
            }
            _ => Ok(false),
        },
    })?;
    let positions: Vec<BlockPos> = rows.items.iter().map(|(k, ())| k.pos).collect();
    let logs: Vec<(BlockPos, LogRecord)> = if topic.is_some() {
        fetched.into_iter().filter(|(p, _)| positions.contains(p)).collect()
    } else {
        positions
            .iter()
            .copied()
            .zip(reader.multi_get::<Logs>(&positions)?)
            .filter_map(|(p, l)| Some((p, l?)))
            .collect()
    };
    let headers = super::headers(reader, logs.iter().map(|(p, _)| p.block))?;
    let contracts = super::contracts(reader, logs.iter().map(|(_, l)| l.address))?;
    let items: Vec<LogJson> = logs
        .iter()
        .filter_map(|(pos, log)| Some(LogJson::new(log, *pos, headers.get(&pos.block)?, &contracts)))
        .collect();
    let echo: Vec<_> = topic.map(|t| ("topic", json!(hash_hex(&t)))).into_iter().collect();
    Ok(ok(&envelope(items, rows.next.map(|k| PosCursor(k.pos)), page.size, &echo)))
}

/// `GET /api/v2/addresses/:a/counters` (decimal strings). A contract's gas usage is the gas of the transactions sent
/// to it, or of those it sent when none were; any other address's is the gas of the transactions it sent.
pub fn counters(reader: &Reader<'_>, address: Address) -> Result<Response<Body>, ApiError> {
    let record = account(reader, &address)?;
    let gas = match &record {
        Some(r) if r.gas_received > 0 && is_code_account(reader, &address, r)? => r.gas_received,
        Some(r) => r.gas_used,
        None => 0,
    };
    let (txs, mined, transfers) = record.map_or((0, 0, 0), |r| (r.tx_count, r.blocks_mined, r.token_transfer_count));
    Ok(ok(&json!({
        "transactions_count": txs.to_string(),
        "token_transfers_count": transfers.to_string(),
        "gas_usage_count": gas.to_string(),
        "validations_count": mined.to_string(),
    })))
}

/// Whether the address is a contract whose gas usage is the gas of the transactions sent to it (Blockscout's rule):
/// it holds code that is not an EIP-7702 delegation (a delegating account is still an account, counted by what it
/// sent).
fn is_code_account(reader: &Reader<'_>, address: &Address, record: &AccountRecord) -> StoreResult<bool> {
    let Some(row) = reader.get::<Contracts>(address)? else { return Ok(record.is_contract()) };
    Ok(reader.get::<Code>(&row.code_hash)?.is_some_and(|code| crate::contracts::proxy::is_contract_code(&code)))
}

/// `GET /api/v2/addresses/:a/tabs-counters` (numbers).
pub fn tabs_counters(reader: &Reader<'_>, address: Address) -> Result<Response<Body>, ApiError> {
    let record = account(reader, &address)?;
    let (txs, logs, mined, transfers) =
        record.map_or((0, 0, 0, 0), |r| (r.tx_count, r.log_count, r.blocks_mined, r.token_transfer_count));
    let balances = super::tokens::holdings_count(reader, address, TABS_CAP)?;
    let internal = reader.address_calls(address, None).take(TABS_CAP).count();
    Ok(ok(&json!({
        "transactions_count": txs,
        "token_transfers_count": transfers,
        "token_balances_count": balances,
        "logs_count": logs,
        "withdrawals_count": 0,
        "internal_transactions_count": internal,
        "validations_count": mined,
    })))
}

/// `GET /api/v2/addresses/:a/coin-balance-history`: the indexed balance after each block that named the address
/// (newest first), with the change from the address's previous indexed balance, and the address's first
/// transaction in that block if it sent or received one. The address's first indexed balance has no previous one
/// in the index: its change is from the node's balance at the parent block, asked once (the whole value when the
/// node does not answer within 2 s).
pub async fn coin_balance_history(
    state: &AppState,
    address: Address,
    page: Page<BlockCursor>,
    deadline: tokio::time::Instant,
) -> Result<Response<Body>, ApiError> {
    let (mut items, next, first) =
        crate::api::blocking_read(state, deadline, move |r| coin_balance_page(r, address, page)).await?;
    if let (Some((block, value)), Some(last)) = (first, items.last_mut()) {
        if let Some(parent) = block.checked_sub(1) {
            let asked = tokio::time::timeout(state.config.node_read_timeout, state.node.balance(address, parent)).await;
            if let Ok(Ok(before)) = asked {
                last["delta"] = json!(signed_change(value, before));
            }
        }
    }
    Ok(ok(&envelope(items, next, page.size, &[])))
}

/// Items, cursor, and the address's oldest indexed balance (block, value) when the page ends with it.
type BalancePage = (Vec<Value>, Option<BlockCursor>, Option<(u64, U256)>);

/// One page of the coin balance history: the items (deltas against the next older indexed balance, the whole value
/// for the oldest), the cursor, and the oldest indexed balance when the page ends with it.
fn coin_balance_page(reader: &Reader<'_>, address: Address, page: Page<BlockCursor>) -> Result<BalancePage, ApiError> {
    // One row more than the page: it decides whether more follow and is the last item's previous balance.
    let mut rows: Vec<(u64, U256)> = Vec::with_capacity(page.size + 1);
    for row in reader.coin_balances(address, page.after.map(|c| c.0)).take(page.size + 1) {
        let (key, amount) = row?;
        rows.push((key.pos.block, amount.0));
    }
    let shown = rows.len().min(page.size);
    let headers = super::headers(reader, rows[..shown].iter().map(|(block, _)| *block))?;
    let mut items = Vec::with_capacity(shown);
    for (i, (block, value)) in rows[..shown].iter().enumerate() {
        let Some(header) = headers.get(block) else { continue };
        let before = rows.get(i + 1).map_or(U256::ZERO, |(_, v)| *v);
        let tx = match reader.address_txs_in(address, *block..=*block, Order::OldestFirst).next() {
            Some(row) => reader.get::<Transactions>(&row?.0.pos)?.map(|tx| hash_hex(&tx.hash)),
            None => None,
        };
        items.push(json!({
            "transaction_hash": tx,
            "block_number": block,
            "delta": signed_change(*value, before),
            "value": value.to_string(),
            "block_timestamp": iso_timestamp(header.timestamp),
        }));
    }
    let next = (rows.len() > page.size).then(|| BlockCursor(rows[shown - 1].0));
    let first = if rows.len() <= page.size { rows.last().copied() } else { None };
    Ok((items, next, first))
}

/// Days `/coin-balance-history-by-day` covers, today included (Blockscout's default).
pub const BALANCE_HISTORY_DAYS: u32 = 10;

/// `GET /api/v2/addresses/:a/coin-balance-history-by-day`: for each UTC day of the last ten on which the address's
/// indexed balance changed, the balance after its last block that day, oldest first; today always has an entry
/// (the latest balance) once the address has one. At most [`super::SCAN_BUDGET`] balances are read.
pub fn coin_balance_history_by_day(reader: &Reader<'_>, address: Address) -> Result<Response<Body>, ApiError> {
    let today = DayKey::of_timestamp(super::unix_now()).0;
    let first = today.saturating_sub(BALANCE_HISTORY_DAYS - 1);
    let mut by_day: BTreeMap<u32, U256> = BTreeMap::new();
    let mut latest = None;
    for row in reader.coin_balances(address, None).take(super::SCAN_BUDGET) {
        let (key, amount) = row?;
        latest.get_or_insert(amount.0);
        let Some(header) = reader.block(key.pos.block)? else { continue };
        let day = DayKey::of_timestamp(header.timestamp).0;
        if day < first {
            break;
        }
        // Newest first: the first row of a day is its closing balance.
        by_day.entry(day).or_insert(amount.0);
    }
    if let Some(latest) = latest {
        by_day.entry(today).or_insert(latest);
    }
    let items: Vec<Value> =
        by_day.iter().map(|(day, value)| json!({"date": iso_date(*day), "value": value.to_string()})).collect();
    Ok(ok(&json!({"items": items, "days": BALANCE_HISTORY_DAYS})))
}

/// `GET /api/v2/addresses`: addresses by indexed native balance, richest first, with their transaction counts.
pub fn top_accounts(reader: &Reader<'_>, page: Page<CoinRankCursor>) -> Result<Response<Body>, ApiError> {
    let rows = take_page(reader.coin_ranks(page.after.map(|c| c.0)), page.size, |_, ()| Ok(true))?;
    let keys: Vec<CoinRankKey> = rows.items.iter().map(|(key, ())| *key).collect();
    let addresses: Vec<Address> = keys.iter().map(|k| k.address).collect();
    let contracts = super::contracts(reader, addresses.iter().copied())?;
    let accounts = reader.multi_get::<Accounts>(&addresses)?;
    let mut items = Vec::with_capacity(keys.len());
    for (key, account) in keys.iter().zip(accounts) {
        let mut item = serde_json::to_value(contracts.address(&key.address)).expect("address object serializes");
        let fields = item.as_object_mut().expect("an object");
        fields.insert("coin_balance".into(), json!(key.balance.to_string()));
        fields.insert("transactions_count".into(), json!(account.map_or(0, |a| a.tx_count).to_string()));
        items.push(item);
    }
    let mut body = serde_json::to_value(envelope(items, rows.next.map(CoinRankCursor), page.size, &[]))
        .expect("envelope serializes");
    let fields = body.as_object_mut().expect("an object");
    fields.insert("exchange_rate".into(), Value::Null);
    fields.insert("total_supply".into(), Value::Null);
    Ok(ok(&body))
}

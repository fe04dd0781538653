//! Transactions: `/transactions`, `/transactions/:hash` and its sub-resources, `/main-page/transactions`.

use super::blocks::kinds_match;
use super::{contracts, next_params, take_page, tx_envelope, tx_items};
use crate::api::body::{ok, Body};
use crate::api::json::{hash_hex, iso_timestamp_ms, Envelope, LogJson, TxJson};
use crate::api::router::{Page, TxKinds};
use crate::api::{ApiError, AppState};
use crate::store::keys::{BlockKey, BlockPos, Key, PendingKey};
use crate::store::records::{PendingTxRecord, TxRecord};
use crate::store::tables::{Headers, Logs, Pending, PendingByTime, Transactions, TxHashes};
use crate::store::{Direction, KeyRange, Reader, StoreResult};
use alloy::primitives::{Bytes, B256};
use hyper::Response;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

/// Token transfers embedded in a transaction's detail (Blockscout shows the first 10).
const TRANSFERS_SHOWN: usize = 10;

/// How long a transaction page waits for the node to replay a failed transaction.
const REVERT_LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /api/v2/transactions`.
pub fn list(
    state: &AppState,
    kinds: TxKinds,
    methods: Option<Vec<[u8; 4]>>,
    page: Page<BlockPos>,
) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let range = match page.after {
        Some(pos) => KeyRange::all().after(&pos.encode()),
        None => KeyRange::all(),
    };
    let mut cache = HashMap::new();
    let rows = take_page(reader.scan::<Transactions>(range, Direction::Forward), page.size, |_, tx| {
        let method_ok = methods.as_ref().is_none_or(|m| tx.selector().is_some_and(|s| m.contains(&s)));
        method_ok && kinds_match(&kinds, tx, &reader, &mut cache)
    })?;
    Ok(ok(&tx_envelope(&reader, rows, page.size, &[])?))
}

/// Pending transaction objects for pool records (those mined meanwhile are left out).
pub fn pending_items(reader: &Reader<'_>, records: &[PendingTxRecord]) -> StoreResult<Vec<TxJson>> {
    let contracts = contracts(reader, records.iter().flat_map(|t| [Some(t.from), t.to].into_iter().flatten()))?;
    let mut items = Vec::with_capacity(records.len());
    for record in records {
        if reader.get::<TxHashes>(&record.hash)?.is_none() {
            items.push(TxJson::pending(record, &contracts));
        }
    }
    Ok(items)
}

/// `GET /api/v2/transactions?filter=pending`: the node's pool, newest first.
pub fn pending(state: &AppState, page: Page<PendingKey>) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let range = match page.after {
        Some(key) => KeyRange::all().after(&key.encode()),
        None => KeyRange::all(),
    };
    let rows = take_page(reader.scan::<PendingByTime>(range, Direction::Forward), page.size, |_, _| true)?;
    let keys: Vec<B256> = rows.items.iter().map(|(k, ())| k.hash).collect();
    let records: Vec<PendingTxRecord> = reader.multi_get::<Pending>(&keys)?.into_iter().flatten().collect();
    let items = pending_items(&reader, &records)?;
    let next_page_params = rows.next.map(|k| {
        next_params(
            &[
                ("inserted_at", json!(iso_timestamp_ms(k.seen_ms))),
                ("hash", json!(hash_hex(&k.hash))),
                ("filter", json!("pending")),
            ],
            page.size,
        )
    });
    Ok(ok(&Envelope { items, next_page_params }))
}

/// The stored transaction with this hash.
pub fn find_tx(reader: &Reader<'_>, hash: B256) -> StoreResult<Option<(BlockPos, TxRecord)>> {
    let Some(pos) = reader.get::<TxHashes>(&hash)? else {
        return Ok(None);
    };
    Ok(reader.get::<Transactions>(&pos)?.map(|tx| (pos, tx)))
}

/// `revert_reason`: `Error(string)` and `Panic(uint256)` decoded, other data raw, nothing when the node gave none.
pub fn revert_reason(data: &Bytes) -> Option<Value> {
    use alloy::sol_types::{Panic, Revert, SolError};
    if data.is_empty() {
        return None;
    }
    if let Ok(revert) = Revert::abi_decode(data) {
        return Some(json!({
            "method_call": "Error(string reason)",
            "method_id": alloy::hex::encode(Revert::SELECTOR),
            "parameters": [{"name": "reason", "type": "string", "value": revert.reason}],
        }));
    }
    if let Ok(panic) = Panic::abi_decode(data) {
        return Some(json!({
            "method_call": "Panic(uint256 code)",
            "method_id": alloy::hex::encode(Panic::SELECTOR),
            "parameters": [{"name": "code", "type": "uint256", "value": panic.code.to_string()}],
        }));
    }
    Some(json!({"raw": format!("{data:#x}")}))
}

/// `GET /api/v2/transactions/:hash`: the detail form, with the revert reason replayed from the node for a failed
/// transaction (omitted when the node cannot answer quickly).
pub async fn detail(state: &AppState, hash: B256) -> Result<Response<Body>, ApiError> {
    let (item, replay) = {
        let reader = state.store.view();
        let Some((pos, tx)) = find_tx(&reader, hash)? else {
            // Not mined: perhaps still in the node's pool.
            let Some(record) = reader.get::<Pending>(&hash)? else {
                return Err(ApiError::NotFound);
            };
            let item = pending_items(&reader, &[record])?.pop().ok_or(ApiError::NotFound)?;
            return Ok(ok(&item.with_detail(Vec::new(), false, None)));
        };
        let item = tx_items(&reader, &[(pos, tx.clone())])?.pop().ok_or(ApiError::NotFound)?;
        let transfers = super::tokens::tx_transfers(&reader, pos.block, tx.first_log, tx.log_count)?;
        let overflow = transfers.len() > TRANSFERS_SHOWN;
        let shown = super::tokens::transfer_items(&reader, &transfers[..transfers.len().min(TRANSFERS_SHOWN)])?;
        let item = (item, shown, overflow);
        let replay = (!tx.succeeded()).then(|| {
            let call = json!({"from": tx.from, "to": tx.to, "data": tx.input, "value": tx.value, "gas": tx.gas_limit});
            (call, pos.block)
        });
        (item, replay)
    };
    let reason = match replay {
        Some((call, block)) => {
            match tokio::time::timeout(REVERT_LOOKUP_TIMEOUT, state.node.revert_data(call, block)).await {
                Ok(Ok(Some(data))) => revert_reason(&data),
                _ => None,
            }
        }
        None => None,
    };
    let (item, transfers, overflow) = item;
    let item: TxJson = item.with_detail(transfers, overflow, reason);
    Ok(ok(&item))
}

/// `GET /api/v2/transactions/:hash/logs`.
pub fn logs(state: &AppState, hash: B256, page: Page<u32>) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let Some((pos, tx)) = find_tx(&reader, hash)? else {
        return Err(ApiError::NotFound);
    };
    let start = page.after.map_or(tx.first_log, |i| i.saturating_add(1).max(tx.first_log));
    let end = tx.first_log + tx.log_count;
    let keys: Vec<BlockPos> =
        (start..end).take(page.size + 1).map(|index| BlockPos { block: pos.block, index }).collect();
    let mut found: Vec<(BlockPos, _)> =
        keys.iter().copied().zip(reader.multi_get::<Logs>(&keys)?).filter_map(|(k, l)| Some((k, l?))).collect();
    let more = found.len() > page.size;
    found.truncate(page.size);
    let header = reader.get::<Headers>(&BlockKey(pos.block))?.ok_or(ApiError::NotFound)?;
    let contracts = contracts(&reader, found.iter().map(|(_, l)| l.address))?;
    let items: Vec<LogJson> = found.iter().map(|(k, log)| LogJson::new(log, *k, &header, &contracts)).collect();
    let next_page_params = match (more, found.last()) {
        (true, Some((k, _))) => {
            Some(next_params(&[("block_number", json!(k.block)), ("index", json!(k.index))], page.size))
        }
        _ => None,
    };
    Ok(ok(&Envelope { items, next_page_params }))
}

/// `GET /api/v2/main-page/transactions`: the 6 newest transactions.
pub fn main_page(state: &AppState) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let rows: Vec<(BlockPos, TxRecord)> =
        reader.scan::<Transactions>(KeyRange::all(), Direction::Forward).take(6).collect::<StoreResult<_>>()?;
    Ok(ok(&tx_items(&reader, &rows)?))
}

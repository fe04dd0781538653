//! Transactions: `/transactions`, `/transactions/:hash` and its sub-resources, `/main-page/transactions`.

use super::blocks::types_match;
use super::{contracts, envelope, take_page, tokens, tx_envelope, tx_items, tx_items_in, tx_parties, ItemContext};
use crate::api::body::{ok, Body};
use crate::api::cursor::{IndexCursor, PendingCursor, PosCursor};
use crate::api::json::{ContractInfo, LogJson, TxJson};
use crate::api::router::Page;
use crate::api::{ApiError, AppState};
use crate::chain::TxTypes;
use crate::contracts::abi::revert_reason;
use crate::store::keys::BlockPos;
use crate::store::records::{PendingTxRecord, TxRecord};
use crate::store::tables::Pending;
use crate::store::{FoundTx, Reader, StoreResult};
use alloy::primitives::B256;
use hyper::Response;
use serde_json::json;
use std::collections::HashMap;

/// Token transfers embedded in a transaction's detail (Blockscout shows the first 10).
const TRANSFERS_SHOWN: usize = 10;

/// `GET /api/v2/transactions`.
pub fn list(
    reader: &Reader<'_>,
    filter: TxTypes,
    methods: Option<Vec<[u8; 4]>>,
    page: Page<PosCursor>,
) -> Result<Response<Body>, ApiError> {
    let mut cache = HashMap::new();
    let rows = take_page(reader.txs(page.after.map(|c| c.0)), page.size, |_, tx| {
        let method_ok = methods.as_ref().is_none_or(|m| tx.selector().is_some_and(|s| m.contains(&s)));
        Ok(method_ok && types_match(filter, tx, reader, &mut cache)?)
    })?;
    Ok(ok(&tx_envelope(reader, rows, page.size, &[])?))
}

/// Newest blocks `/transactions/stats` reads for its 24-hour window (a chain faster than one block per 1.7 s has
/// its window cut to these).
const STATS_BLOCK_BUDGET: usize = 50_000;

/// `GET /api/v2/transactions/stats`: transactions and their fees (gas used × effective price) in blocks of the
/// last 24 hours by block timestamp, from the block headers' counts and fee totals, and the pool's size.
pub fn stats(reader: &Reader<'_>) -> Result<Response<Body>, ApiError> {
    let since = super::unix_now().saturating_sub(24 * 3600);
    let (mut count, mut fees) = (0u64, alloy::primitives::U256::ZERO);
    for row in reader.blocks(None).take(STATS_BLOCK_BUDGET) {
        let (_, header) = row?;
        if header.timestamp < since {
            break;
        }
        count += u64::from(header.tx_count);
        fees = fees.saturating_add(header.fees);
    }
    let mut pending = 0u64;
    for row in reader.pending(None).take(super::SCAN_BUDGET) {
        let (key, ()) = row?;
        if !reader.is_mined(key.hash)? {
            pending += 1;
        }
    }
    let average = if count == 0 { alloy::primitives::U256::ZERO } else { fees / alloy::primitives::U256::from(count) };
    Ok(ok(&json!({
        "transactions_count_24h": count.to_string(),
        "pending_transactions_count": pending.to_string(),
        "transaction_fees_sum_24h": fees.to_string(),
        "transaction_fees_avg_24h": average.to_string(),
    })))
}

/// Pending transaction objects for pool records (those mined meanwhile are left out).
pub fn pending_items(reader: &Reader<'_>, records: &[PendingTxRecord]) -> StoreResult<Vec<TxJson>> {
    let contracts = contracts(reader, records.iter().flat_map(|t| [Some(t.from), t.to].into_iter().flatten()))?;
    let mut items = Vec::with_capacity(records.len());
    for record in records {
        if !reader.is_mined(record.hash)? {
            items.push(TxJson::pending(record, &contracts));
        }
    }
    Ok(items)
}

/// `GET /api/v2/transactions?filter=pending`: the node's pool, newest first.
pub fn pending(reader: &Reader<'_>, page: Page<PendingCursor>) -> Result<Response<Body>, ApiError> {
    let rows = take_page(reader.pending(page.after.map(|c| c.0)), page.size, |_, _| Ok(true))?;
    let keys: Vec<B256> = rows.items.iter().map(|(k, ())| k.hash).collect();
    let records: Vec<PendingTxRecord> = reader.multi_get::<Pending>(&keys)?.into_iter().flatten().collect();
    let items = pending_items(reader, &records)?;
    Ok(ok(&envelope(items, rows.next.map(PendingCursor), page.size, &[("filter", json!("pending"))])))
}

/// A failed mined transaction's call, replayed on the node for its revert reason.
#[derive(Debug)]
pub struct Replay {
    call: serde_json::Value,
    block: u64,
    called: Option<ContractInfo>,
}

impl Replay {
    /// The replay of the transaction `tx` at `pos`; `None` when it succeeded.
    pub fn of(reader: &Reader<'_>, pos: BlockPos, tx: &TxRecord) -> StoreResult<Option<Replay>> {
        if tx.succeeded() {
            return Ok(None);
        }
        let called = match tx.to {
            Some(to) => super::smart_contracts::contract_info(reader, &to)?,
            None => None,
        };
        let call = json!({"from": tx.from, "to": tx.to, "data": tx.input, "value": tx.value, "gas": tx.gas_limit});
        Ok(Some(Replay { call, block: pos.block, called }))
    }

    /// The revert reason the node gives, decoded with the called contract's ABIs (`Error`, `Panic`, custom
    /// errors); `None` when the node gives none within `node_read_timeout`.
    pub async fn reason(self, state: &AppState) -> Option<serde_json::Value> {
        let data = tokio::time::timeout(state.config.node_read_timeout, state.node.revert_data(self.call, self.block));
        match data.await {
            Ok(Ok(Some(data))) => revert_reason(&self.called.as_ref().map(|c| c.abis()).unwrap_or_default(), &data),
            _ => None,
        }
    }
}

/// `GET /api/v2/transactions/:hash`: the detail form, with the revert reason replayed from the node for a failed
/// transaction (omitted when the node cannot answer quickly).
pub async fn detail(state: &AppState, hash: B256) -> Result<Response<Body>, ApiError> {
    let (item, replay) = {
        let reader = state.store.view();
        let (pos, tx) = match reader.tx_or_pending(hash)? {
            Some(FoundTx::Mined(pos, tx)) => (pos, tx),
            Some(FoundTx::Pending(record)) => {
                let item = pending_items(&reader, &[record])?.pop().ok_or(ApiError::NotFound)?;
                return Ok(ok(&item.with_detail(Vec::new(), false, None)));
            }
            None => return Err(ApiError::NotFound),
        };
        let transfers = tokens::tx_transfers(&reader, pos.block, &tx)?;
        let overflow = transfers.len() > TRANSFERS_SHOWN;
        let shown = &transfers[..transfers.len().min(TRANSFERS_SHOWN)];
        // The transaction and its transfers share one block, one call and most addresses: read them once.
        let context = ItemContext::read(&reader, [pos.block], tx_parties(&tx).chain(tokens::transfer_parties(shown)))?;
        let calls = tokens::Calls::from([(pos, Some((tx.input.clone(), tx.to)))]);
        let shown = tokens::transfer_items_in(&reader, shown, &calls, &context)?;
        let item = tx_items_in(&reader, &[(pos, tx.clone())], &context)?.pop().ok_or(ApiError::NotFound)?;
        ((item, shown, overflow), Replay::of(&reader, pos, &tx)?)
    };
    let reason = match replay {
        Some(replay) => replay.reason(state).await,
        None => None,
    };
    let (item, transfers, overflow) = item;
    let item: TxJson = item.with_detail(transfers, overflow, reason);
    Ok(ok(&item))
}

/// `GET /api/v2/transactions/:hash/logs`.
pub fn logs(reader: &Reader<'_>, hash: B256, page: Page<IndexCursor>) -> Result<Response<Body>, ApiError> {
    let Some((pos, tx)) = reader.tx(hash)? else {
        return Err(ApiError::NotFound);
    };
    let start = page.after.map_or(tx.first_log, |c| c.0.index.saturating_add(1).max(tx.first_log));
    let mut found = reader.tx_logs(pos.block, &tx, start, page.size + 1)?;
    let more = found.len() > page.size;
    found.truncate(page.size);
    let header = reader.block(pos.block)?.ok_or(ApiError::NotFound)?;
    let contracts = contracts(reader, found.iter().map(|(_, l)| l.address))?;
    let items: Vec<LogJson> = found.iter().map(|(k, log)| LogJson::new(log, *k, &header, &contracts)).collect();
    let next = found.last().filter(|_| more).map(|(k, _)| IndexCursor(*k));
    Ok(ok(&envelope(items, next, page.size, &[])))
}

/// `GET /api/v2/main-page/transactions`: the 6 newest transactions.
pub fn main_page(reader: &Reader<'_>) -> Result<Response<Body>, ApiError> {
    let rows: Vec<(BlockPos, TxRecord)> = reader.txs(None).take(6).collect::<StoreResult<_>>()?;
    Ok(ok(&tx_items(reader, &rows)?))
}

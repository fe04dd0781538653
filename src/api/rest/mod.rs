//! Handlers of the Blockscout-compatible REST surface under `/api/v2`, and what they share: keyset paging over
//! the store's named queries, address objects with contract flags, transaction items.
//!
//! List handlers read through the `Reader` they are given (on the blocking pool, under the request's deadline:
//! see `api::dispatch`); they never build keys: positions come in as cursors and go out as `next_page_params`.

pub mod account;
pub mod addresses;
pub mod advanced;
pub mod blocks;
pub mod csv;
pub mod search;
pub mod smart_contracts;
pub mod stats;
pub mod summary;
pub mod tokens;
pub mod traces;
pub mod transactions;
pub mod verification;

use super::cursor::{next_page_params, Cursor, PosCursor};
use super::json::{Contracts, Envelope, TxJson};
use super::{ApiError, AppState};
use crate::store::keys::{BlockKey, BlockPos, TracePos};
use crate::store::records::{BlockRecord, TxRecord};
use crate::store::tables::{Accounts, Contracts as ContractRows, Headers, InternalTxs, Tokens};
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, KECCAK256_EMPTY};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Most rows a filtered list examines per request; a sparse filter returns a short page with a cursor.
pub const SCAN_BUDGET: usize = 10_000;

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// Chain statistics at the current tip, computed once per tip.
pub fn chain_stats(state: &AppState, reader: &Reader<'_>) -> Result<Arc<stats::ChainStats>, ApiError> {
    let tip = reader.tip()?;
    let mut cache = state.stats.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(cached) = cache.as_ref().filter(|c| c.tip == tip.map(|t| t.hash)) {
        return Ok(cached.clone());
    }
    let fresh = Arc::new(stats::compute(reader, tip)?);
    *cache = Some(fresh.clone());
    Ok(fresh)
}

/// A page of rows and, when more may follow, the key to continue after.
#[derive(Debug)]
pub struct PageRows<K, V> {
    /// The rows shown.
    pub items: Vec<(K, V)>,
    /// Continue after this key.
    pub next: Option<K>,
}

/// Takes up to `size` rows that `keep` accepts. After a full page it looks for one more accepted row, so the last
/// page has no cursor. At most [`SCAN_BUDGET`] rows are examined; when the budget runs out the cursor is the last
/// examined key (a filtered page may then be short, never wrong). A read that `keep` fails fails the page.
pub fn take_page<K: Copy, V>(
    rows: impl Iterator<Item = StoreResult<(K, V)>>,
    size: usize,
    mut keep: impl FnMut(&K, &V) -> StoreResult<bool>,
) -> StoreResult<PageRows<K, V>> {
    let mut items: Vec<(K, V)> = Vec::with_capacity(size);
    for (examined, row) in rows.enumerate() {
        let (key, value) = row?;
        let accepted = keep(&key, &value)?;
        if accepted && items.len() == size {
            let next = items.last().map(|(k, _)| *k);
            return Ok(PageRows { items, next });
        }
        if accepted {
            items.push((key, value));
        }
        if examined + 1 >= SCAN_BUDGET {
            return Ok(PageRows { items, next: Some(key) });
        }
    }
    Ok(PageRows { items, next: None })
}

/// A page of `rows` in the order `compare` gives: the first `size` after `after` (the cursor's row), and whether
/// more follow. For lists no index orders, sorted whole for each page.
pub fn sorted_page<T>(
    mut rows: Vec<T>,
    compare: impl Fn(&T, &T) -> std::cmp::Ordering,
    after: Option<T>,
    size: usize,
) -> (Vec<T>, bool) {
    rows.sort_unstable_by(&compare);
    let start = after.map_or(0, |after| rows.partition_point(|row| compare(row, &after).is_le()));
    let mut page: Vec<T> = rows.into_iter().skip(start).take(size + 1).collect();
    let more = page.len() > size;
    page.truncate(size);
    (page, more)
}

/// A page of items whose next page continues after `next`, echoing `echo` filters.
pub fn envelope<T, C: Cursor>(
    items: Vec<T>,
    next: Option<C>,
    size: usize,
    echo: &[(&'static str, Value)],
) -> Envelope<T> {
    Envelope { items, next_page_params: next.map(|c| next_page_params(&c, size, echo)) }
}

/// Contract flags of `addresses` from the account index, from the contracts created inside transactions once the
/// trace pass has run, and from EIP-7702 delegations (accounts whose code designates another's); for contracts with
/// stored code, what is known about them (name, ABI, proxy).
pub fn contracts(reader: &Reader<'_>, addresses: impl IntoIterator<Item = Address>) -> StoreResult<Contracts> {
    let traced = reader.trace_tip()?.is_some();
    contracts_of(reader, addresses, traced)
}

/// [`contracts`], told whether the trace pass has run (its internal creations then count).
fn contracts_of(
    reader: &Reader<'_>,
    addresses: impl IntoIterator<Item = Address>,
    traced: bool,
) -> StoreResult<Contracts> {
    let unique: Vec<Address> = addresses.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
    let accounts = reader.multi_get::<Accounts>(&unique)?;
    let names = reader.primary_names(&unique)?;
    let (mut found, mut others) = (Vec::new(), Vec::new());
    for (address, account) in unique.into_iter().zip(accounts) {
        let mut is_contract = account.is_some_and(|r| r.is_contract());
        if !is_contract && traced {
            is_contract = traces::internal_creation(reader, address)?.is_some_and(|c| c.success);
        }
        if is_contract {
            found.push(address)
        } else {
            others.push(address)
        }
    }
    // The rest hold code only when an EIP-7702 delegation gave them some (their `contracts` row).
    let rows = reader.multi_get::<ContractRows>(&others)?;
    let mut flags = HashMap::with_capacity(found.len() + others.len());
    for (address, row) in others.into_iter().zip(rows) {
        if row.is_some_and(|row| row.code_hash != KECCAK256_EMPTY) {
            found.push(address);
        } else {
            flags.insert(address, false);
        }
    }
    let mut known = HashMap::new();
    for address in found {
        if let Some(info) = smart_contracts::contract_info(reader, &address)? {
            known.insert(address, info);
        }
        flags.insert(address, true);
    }
    Ok(Contracts::new(flags, known).with_names(names))
}

/// Headers of the given blocks.
pub fn headers(reader: &Reader<'_>, blocks: impl IntoIterator<Item = u64>) -> StoreResult<HashMap<u64, BlockRecord>> {
    let numbers: Vec<u64> = blocks.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
    let keys: Vec<BlockKey> = numbers.iter().map(|n| BlockKey(*n)).collect();
    let found = reader.multi_get::<Headers>(&keys)?;
    Ok(numbers.into_iter().zip(found).filter_map(|(n, h)| Some((n, h?))).collect())
}

/// What the items of one response share, each read once: the tip (confirmations), how far the trace pass has
/// run, the headers of the rows' blocks and what is known about the addresses the rows mention.
pub struct ItemContext {
    tip: u64,
    traced_to: Option<u64>,
    /// Headers of the rows' blocks.
    pub headers: HashMap<u64, BlockRecord>,
    /// Contract flags, contract details and names of the rows' addresses.
    pub contracts: Contracts,
}

impl ItemContext {
    /// Reads the context of rows in `blocks` mentioning `addresses`.
    pub fn read(
        reader: &Reader<'_>,
        blocks: impl IntoIterator<Item = u64>,
        addresses: impl IntoIterator<Item = Address>,
    ) -> StoreResult<Self> {
        let (tip, trace_tip) = reader.tips()?;
        let headers = headers(reader, blocks)?;
        let contracts = contracts_of(reader, addresses, trace_tip.is_some())?;
        Ok(ItemContext { tip: tip.map_or(0, |t| t.number), traced_to: trace_tip.map(|t| t.number), headers, contracts })
    }

    /// Whether the trace pass has run over `block`.
    fn traced(&self, block: u64) -> bool {
        self.traced_to.is_some_and(|t| t >= block)
    }
}

/// The addresses a transaction item shows: sender, recipient, and for a creation the created contract.
pub fn tx_parties(tx: &TxRecord) -> impl Iterator<Item = Address> {
    let created = tx.to.is_none().then(|| tx.created_or_computed());
    [Some(tx.from), tx.to, created].into_iter().flatten()
}

/// List-form transaction objects for stored rows (rows whose block vanished in a concurrent reorg are dropped).
/// `has_error_in_internal_transactions` is set once the block is traced.
pub fn tx_items(reader: &Reader<'_>, rows: &[(BlockPos, TxRecord)]) -> StoreResult<Vec<TxJson>> {
    let context = ItemContext::read(
        reader,
        rows.iter().map(|(pos, _)| pos.block),
        rows.iter().flat_map(|(_, tx)| tx_parties(tx)),
    )?;
    tx_items_in(reader, rows, &context)
}

/// Whether `tx` created a contract the index knows as a token (a point read, for successful creations only).
pub fn creates_token(reader: &Reader<'_>, tx: &TxRecord) -> StoreResult<bool> {
    match tx.created.filter(|_| tx.to.is_none() && tx.succeeded()) {
        Some(created) => Ok(reader.get::<Tokens>(&created)?.is_some()),
        None => Ok(false),
    }
}

/// [`tx_items`] with the context already read (it must cover the rows' blocks and parties).
pub fn tx_items_in(
    reader: &Reader<'_>,
    rows: &[(BlockPos, TxRecord)],
    context: &ItemContext,
) -> StoreResult<Vec<TxJson>> {
    let mut summaries = HashMap::new();
    let mut items = Vec::with_capacity(rows.len());
    for (pos, tx) in rows {
        let Some(header) = context.headers.get(&pos.block) else { continue };
        let (has_error, failure) = if context.traced(pos.block) {
            let summary = match summaries.entry(pos.block) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(reader.trace_summary(pos.block)?.map(|s| s.txs))
                }
            };
            let has_error = summary.as_ref().and_then(|s| s.get(pos.index as usize)).map(|(_, e)| *e);
            // A failed transaction's top call (frame 0) holds the reason it failed.
            let failure = if tx.succeeded() {
                None
            } else {
                reader.get::<InternalTxs>(&TracePos { block: pos.block, tx: pos.index, index: 0 })?
            };
            (has_error, failure.and_then(|root| root.error))
        } else {
            (None, None)
        };
        items.push(
            TxJson::new(tx, *pos, header, context.tip, &context.contracts)
                .with_trace(has_error, failure)
                .with_created_token(creates_token(reader, tx)?),
        );
    }
    Ok(items)
}

/// An envelope of transaction items continuing at a (block, index) position, echoing `echo` query fields.
pub fn tx_envelope(
    reader: &Reader<'_>,
    page: PageRows<BlockPos, TxRecord>,
    size: usize,
    echo: &[(&'static str, Value)],
) -> StoreResult<Envelope<TxJson>> {
    Ok(envelope(tx_items(reader, &page.items)?, page.next.map(PosCursor), size, echo))
}

//! Blocks: `/blocks` (canonical, reorged, uncles), `/blocks/:id`, `/blocks/:id/transactions`,
//! `/main-page/blocks`.

use super::{contracts, envelope, take_page, tx_envelope, PageRows};
use crate::api::body::{ok, Body};
use crate::api::cursor::{BlockCursor, IndexCursor, ReorgCursor};
use crate::api::json::{BlockJson, BlockKind, Envelope};
use crate::api::router::{BlockId, Page};
use crate::api::{ApiError, AppState};
use crate::chain::{TxType, TxTypes};
use crate::store::keys::BlockPos;
use crate::store::records::{BlockRecord, TxRecord};
use crate::store::tables::{Accounts, Transactions};
use crate::store::{Reader, StoreResult};
use alloy::primitives::Address;
use hyper::Response;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

fn block_items(
    reader: &Reader<'_>,
    blocks: &[BlockRecord],
    kind: BlockKind,
    detail: bool,
) -> StoreResult<Vec<BlockJson>> {
    let contracts = contracts(reader, blocks.iter().map(|b| b.miner))?;
    Ok(blocks.iter().map(|b| BlockJson::new(b, kind, contracts.address(&b.miner), b.blob_tx_count, detail)).collect())
}

/// `GET /api/v2/blocks`.
pub fn list(reader: &Reader<'_>, kind: BlockKind, page: Page<ReorgCursor>) -> Result<Response<Body>, ApiError> {
    let envelope = match kind {
        BlockKind::Block => {
            let rows = take_page(reader.blocks(page.after.map(|c| c.number)), page.size, |_, _| Ok(true))?;
            let blocks: Vec<BlockRecord> = rows.items.into_iter().map(|(_, b)| b).collect();
            let next = rows.next.map(|k| BlockCursor(k.0));
            envelope(block_items(reader, &blocks, kind, false)?, next, page.size, &[])
        }
        BlockKind::Reorg => {
            let rows = take_page(reader.reorged(page.after.map(|c| (c.number, c.hash))), page.size, |_, _| Ok(true))?;
            let blocks: Vec<BlockRecord> = rows.items.into_iter().map(|(_, b)| b).collect();
            let next = rows.next.map(|k| ReorgCursor { number: k.number, hash: Some(k.hash) });
            envelope(block_items(reader, &blocks, kind, false)?, next, page.size, &[])
        }
        // Uncles are not indexed (proof-of-stake and BFT chains have none).
        BlockKind::Uncle => Envelope::empty(),
    };
    Ok(ok(&envelope))
}

/// `GET /api/v2/addresses/:a/blocks-validated`: blocks whose miner (fee recipient) is `miner`, newest first. An
/// address that mined nothing answers at once; otherwise headers are scanned (at most `SCAN_BUDGET` per page).
pub fn validated_by(reader: &Reader<'_>, miner: Address, page: Page<BlockCursor>) -> Result<Response<Body>, ApiError> {
    if reader.get::<Accounts>(&miner)?.is_none_or(|a| a.blocks_mined == 0) {
        return Ok(ok(&Envelope::<BlockJson>::empty()));
    }
    let rows = take_page(reader.blocks(page.after.map(|c| c.0)), page.size, |_, b| Ok(b.miner == miner))?;
    let blocks: Vec<BlockRecord> = rows.items.into_iter().map(|(_, b)| b).collect();
    let next = rows.next.map(|k| BlockCursor(k.0));
    Ok(ok(&envelope(block_items(reader, &blocks, BlockKind::Block, false)?, next, page.size, &[])))
}

/// Resolves a block id to a canonical block, or a reorged one (by hash).
pub fn find_block(reader: &Reader<'_>, id: BlockId) -> StoreResult<Option<(BlockRecord, BlockKind)>> {
    let kind = |canonical| if canonical { BlockKind::Block } else { BlockKind::Reorg };
    match id {
        BlockId::Number(n) => Ok(reader.block(n)?.map(|b| (b, BlockKind::Block))),
        BlockId::Hash(hash) => Ok(reader.block_by_hash(hash)?.map(|(b, canonical)| (b, kind(canonical)))),
    }
}

/// Blocks whose timestamps give the average block time a countdown estimates with.
const BLOCK_TIME_SAMPLE: u64 = 100;

/// How far a block is from the indexed tip.
#[derive(Debug, PartialEq)]
pub enum Countdown {
    /// Nothing (or too little) is indexed to estimate from.
    Indexing,
    /// The block is at or below the tip.
    Passed,
    /// The block is `remaining` blocks past `tip`, about `seconds` away at the recent average block time.
    Ahead {
        /// The indexed tip.
        tip: u64,
        /// Blocks to go.
        remaining: u64,
        /// Estimated seconds to go.
        seconds: f64,
    },
}

impl Countdown {
    /// The countdown to `target` from the indexed tip.
    pub fn to(reader: &Reader<'_>, target: u64) -> StoreResult<Countdown> {
        let Some(tip) = reader.tip()?.map(|t| t.number) else { return Ok(Countdown::Indexing) };
        if target <= tip {
            return Ok(Countdown::Passed);
        }
        let back = tip.saturating_sub(BLOCK_TIME_SAMPLE);
        let (Some(newest), Some(oldest)) = (reader.block(tip)?, reader.block(back)?) else {
            return Ok(Countdown::Indexing);
        };
        let average = newest.timestamp.saturating_sub(oldest.timestamp) as f64 / (tip - back).max(1) as f64;
        let remaining = target - tip;
        Ok(Countdown::Ahead { tip, remaining, seconds: average * remaining as f64 })
    }
}

/// `GET /api/v2/blocks/:number/countdown`: Blockscout's `BlockCountdown` (decimal strings); a block already
/// indexed is a 422, and 404 while nothing is indexed.
pub fn countdown(reader: &Reader<'_>, target: u64) -> Result<Response<Body>, ApiError> {
    match Countdown::to(reader, target)? {
        Countdown::Indexing => Err(ApiError::NotFound),
        Countdown::Passed => Err(ApiError::invalid("block_number_param", "Block number already passed")),
        Countdown::Ahead { tip, remaining, seconds } => Ok(ok(&serde_json::json!({
            "countdown_block_number": target.to_string(),
            "current_block_number": tip.to_string(),
            "remaining_blocks_count": remaining.to_string(),
            "estimated_time_in_seconds": format!("{seconds:.1}"),
        }))),
    }
}

/// `GET /api/v2/blocks/:id`.
pub fn detail(state: &AppState, id: BlockId) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    match find_block(&reader, id)? {
        Some((block, kind)) => {
            let item = block_items(&reader, std::slice::from_ref(&block), kind, true)?.remove(0);
            let internal = match kind {
                // A block the trace pass passed untraced (the node refused) has an empty summary: unknown.
                BlockKind::Block => reader
                    .trace_summary(block.number)?
                    .filter(|s| !s.txs.is_empty() || block.tx_count == 0)
                    .map(|s| s.internal_count()),
                _ => None,
            };
            Ok(ok(&item.with_internal_count(internal)))
        }
        None => match id {
            BlockId::Number(n) => match reader.reorged_at(n)? {
                Some(lost) => Err(ApiError::BlockLostConsensus { hash: format!("{:#x}", lost.hash) }),
                None => Err(ApiError::NotFound),
            },
            BlockId::Hash(_) => Err(ApiError::NotFound),
        },
    }
}

/// Whether a transaction passes a `type` filter (no filter: every transaction); `cache` remembers which
/// recipients are contracts.
pub fn types_match(
    filter: TxTypes,
    tx: &TxRecord,
    reader: &Reader<'_>,
    cache: &mut HashMap<Address, bool>,
) -> StoreResult<bool> {
    if filter.is_empty() {
        return Ok(true);
    }
    let Some(to) = tx.to else {
        // Whether the created contract is a token is read only when the filter asks.
        let created_token = filter.contains(TxType::TokenCreation) && super::creates_token(reader, tx)?;
        return Ok(filter.admits(tx, false, created_token));
    };
    let to_is_contract = match cache.entry(to) {
        Entry::Occupied(known) => *known.get(),
        Entry::Vacant(slot) => *slot.insert(super::contracts(reader, [to])?.is_contract(&to)),
    };
    Ok(filter.admits(tx, to_is_contract, false))
}

/// `GET /api/v2/blocks/:id/transactions`: the block's transactions in index order.
pub fn transactions(
    reader: &Reader<'_>,
    id: BlockId,
    filter: TxTypes,
    page: Page<IndexCursor>,
) -> Result<Response<Body>, ApiError> {
    let Some((block, kind)) = find_block(reader, id)? else {
        return Err(ApiError::NotFound);
    };
    if kind != BlockKind::Block {
        // A reorged block's transactions are not kept.
        return Ok(ok(&Envelope::<()>::empty()));
    }
    let after = page.after.map(|c| c.0.index);
    let rows = if filter.is_empty() {
        block_page_txs(reader, &block, after, page.size)?
    } else {
        let mut cache = HashMap::new();
        take_page(reader.block_txs(block.number, after), page.size, |_, tx| {
            types_match(filter, tx, reader, &mut cache)
        })?
    };
    Ok(ok(&tx_envelope(reader, rows, page.size, &[])?))
}

/// An unfiltered page of a block's transactions in index order, after index `after`: the positions are known
/// from the block's transaction count, so the page is one multi-get instead of a range scan (creating and seeking
/// the scan's iterator was a third of this handler's time in a profile of the block page, an eighth of the page).
fn block_page_txs(
    reader: &Reader<'_>,
    block: &BlockRecord,
    after: Option<u32>,
    size: usize,
) -> Result<PageRows<BlockPos, TxRecord>, ApiError> {
    let first = after.map_or(0, |index| index.saturating_add(1));
    // One more than the page, to know whether another page follows.
    let positions: Vec<BlockPos> =
        (first..block.tx_count).take(size + 1).map(|index| BlockPos { block: block.number, index }).collect();
    let found = reader.multi_get::<Transactions>(&positions)?;
    let mut items: Vec<(BlockPos, TxRecord)> =
        positions.into_iter().zip(found).filter_map(|(pos, tx)| Some((pos, tx?))).collect();
    let next = if items.len() > size { size.checked_sub(1).map(|last| items[last].0) } else { None };
    items.truncate(size);
    Ok(PageRows { items, next })
}

/// `GET /api/v2/main-page/blocks`: the 4 newest blocks.
pub fn main_page(reader: &Reader<'_>) -> Result<Response<Body>, ApiError> {
    let blocks: Vec<BlockRecord> =
        reader.blocks(None).take(4).map(|r| r.map(|(_, b)| b)).collect::<StoreResult<_>>()?;
    Ok(ok(&block_items(reader, &blocks, BlockKind::Block, false)?))
}

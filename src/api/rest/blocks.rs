//! Blocks: `/blocks` (canonical, reorged, uncles), `/blocks/:id`, `/blocks/:id/transactions`,
//! `/main-page/blocks`.

use super::{contracts, next_params, take_page, tx_envelope, PageRows};
use crate::api::body::{ok, Body};
use crate::api::json::{BlockJson, BlockKind, Envelope};
use crate::api::router::{BlockId, Page, TxKinds};
use crate::api::{ApiError, AppState};
use crate::indexer::apply::block_range;
use crate::store::keys::{BlockKey, BlockPos, Key, ReorgedKey};
use crate::store::records::{BlockRecord, TxRecord};
use crate::store::tables::{Accounts, BlockHashes, Headers, Reorged, Transactions};
use crate::store::{Direction, KeyRange, Reader, StoreResult};
use alloy::primitives::{Address, B256};
use hyper::Response;
use serde_json::json;
use std::collections::HashMap;

/// Most reorged rows examined when looking one up by hash.
const REORGED_LOOKUP_BUDGET: usize = 100_000;

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
pub fn list(state: &AppState, kind: BlockKind, page: Page<(u64, Option<B256>)>) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let envelope = match kind {
        BlockKind::Block => {
            let range = match page.after {
                Some((number, _)) => KeyRange::all().after(&BlockKey(number).encode()),
                None => KeyRange::all(),
            };
            let rows = take_page(reader.scan::<Headers>(range, Direction::Forward), page.size, |_, _| true)?;
            let blocks: Vec<BlockRecord> = rows.items.into_iter().map(|(_, b)| b).collect();
            Envelope {
                items: block_items(&reader, &blocks, kind, false)?,
                next_page_params: rows.next.map(|k| next_params(&[("block_number", json!(k.0))], page.size)),
            }
        }
        BlockKind::Reorg => {
            let range = match page.after {
                Some((number, Some(hash))) => KeyRange::all().after(&ReorgedKey { number, hash }.encode()),
                Some((number, None)) => {
                    KeyRange::all().after(&ReorgedKey { number, hash: B256::repeat_byte(0xff) }.encode())
                }
                None => KeyRange::all(),
            };
            let rows = take_page(reader.scan::<Reorged>(range, Direction::Forward), page.size, |_, _| true)?;
            let blocks: Vec<BlockRecord> = rows.items.into_iter().map(|(_, b)| b).collect();
            let next = rows.next.map(|k| {
                next_params(&[("block_number", json!(k.number)), ("hash", json!(format!("{:#x}", k.hash)))], page.size)
            });
            Envelope { items: block_items(&reader, &blocks, kind, false)?, next_page_params: next }
        }
        // Uncles are not indexed (proof-of-stake and BFT chains have none).
        BlockKind::Uncle => Envelope::empty(),
    };
    Ok(ok(&envelope))
}

/// A reorged block with this hash, if one is recorded.
fn reorged_by_hash(reader: &Reader<'_>, hash: B256) -> StoreResult<Option<BlockRecord>> {
    for row in reader.scan::<Reorged>(KeyRange::all(), Direction::Forward).take(REORGED_LOOKUP_BUDGET) {
        let (key, block) = row?;
        if key.hash == hash {
            return Ok(Some(block));
        }
    }
    Ok(None)
}

/// The newest reorged block at `number`, if any.
fn reorged_at(reader: &Reader<'_>, number: u64) -> StoreResult<Option<BlockRecord>> {
    let range = KeyRange::prefix(&BlockKey(number).encode());
    Ok(reader.scan::<Reorged>(range, Direction::Forward).next().transpose()?.map(|(_, b)| b))
}

/// Resolves a block id to a canonical block, or a reorged one (by hash).
pub fn find_block(reader: &Reader<'_>, id: BlockId) -> StoreResult<Option<(BlockRecord, BlockKind)>> {
    match id {
        BlockId::Number(n) => Ok(reader.get::<Headers>(&BlockKey(n))?.map(|b| (b, BlockKind::Block))),
        BlockId::Hash(hash) => match reader.get::<BlockHashes>(&hash)? {
            Some(n) => Ok(reader.get::<Headers>(&BlockKey(n))?.map(|b| (b, BlockKind::Block))),
            None => Ok(reorged_by_hash(reader, hash)?.map(|b| (b, BlockKind::Reorg))),
        },
    }
}

/// `GET /api/v2/blocks/:id`.
pub fn detail(state: &AppState, id: BlockId) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    match find_block(&reader, id)? {
        Some((block, kind)) => {
            let item = block_items(&reader, std::slice::from_ref(&block), kind, true)?.remove(0);
            let internal = match kind {
                BlockKind::Block => super::traces::internal_count(&reader, block.number)?,
                _ => None,
            };
            Ok(ok(&item.with_internal_count(internal)))
        }
        None => match id {
            BlockId::Number(n) => match reorged_at(&reader, n)? {
                Some(lost) => Err(ApiError::BlockLostConsensus { hash: format!("{:#x}", lost.hash) }),
                None => Err(ApiError::NotFound),
            },
            BlockId::Hash(_) => Err(ApiError::NotFound),
        },
    }
}

/// Whether a transaction is of one of the requested kinds (no filter: every transaction).
pub fn kinds_match(kinds: &TxKinds, tx: &TxRecord, reader: &Reader<'_>, cache: &mut HashMap<Address, bool>) -> bool {
    if !kinds.any() {
        return true;
    }
    let to_is_contract = tx.to.is_some_and(|to| {
        *cache.entry(to).or_insert_with(|| reader.get::<Accounts>(&to).ok().flatten().is_some_and(|a| a.is_contract()))
    });
    let types = crate::api::json::tx_types(tx, to_is_contract);
    (kinds.coin_transfer && types.contains(&"coin_transfer"))
        || (kinds.contract_call && types.contains(&"contract_call"))
        || (kinds.contract_creation && types.contains(&"contract_creation"))
        || (kinds.token_transfer && types.contains(&"token_transfer"))
        || (kinds.token_creation && types.contains(&"token_creation"))
        || (kinds.blob_transaction && tx.tx_type == 3)
}

/// `GET /api/v2/blocks/:id/transactions`: the block's transactions in index order.
pub fn transactions(
    state: &AppState,
    id: BlockId,
    kinds: TxKinds,
    page: Page<u32>,
) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let Some((block, kind)) = find_block(&reader, id)? else {
        return Err(ApiError::NotFound);
    };
    if kind != BlockKind::Block {
        // A reorged block's transactions are not kept.
        return Ok(ok(&Envelope::<()>::empty()));
    }
    let number = block.number;
    // Indexes are complemented: ascending order is a reverse scan, "after index i" is "before key (n, i)".
    let mut range = block_range(number);
    if let Some(index) = page.after {
        range = range.before(&BlockPos { block: number, index }.encode());
    }
    let mut cache = HashMap::new();
    let rows: PageRows<BlockPos, TxRecord> =
        take_page(reader.scan::<Transactions>(range, Direction::Reverse), page.size, |_, tx| {
            kinds_match(&kinds, tx, &reader, &mut cache)
        })?;
    Ok(ok(&tx_envelope(&reader, rows, page.size, &[])?))
}

/// `GET /api/v2/main-page/blocks`: the 4 newest blocks.
pub fn main_page(state: &AppState) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let blocks: Vec<BlockRecord> = reader
        .scan::<Headers>(KeyRange::all(), Direction::Forward)
        .take(4)
        .map(|r| r.map(|(_, b)| b))
        .collect::<StoreResult<_>>()?;
    Ok(ok(&block_items(&reader, &blocks, BlockKind::Block, false)?))
}

//! Turning the pure core's output into batches: apply a chunk of blocks, revert one block, read a stored block back.

use super::bundle::Bundle;
use super::rows::{block_day, block_rows, derive, touched_accounts, DeleteRows, PutRows};
use crate::store::keys::{BlockKey, DayKey, Key, MetaKey, ReorgedKey};
use crate::store::records::{AccountRecord, Counters, DayStats, Meta, Tip, Undo};
use crate::store::tables::{Accounts, Daily, Headers, Logs, Reorged, Transactions, UndoLog};
use crate::store::{Batch, Direction, KeyRange, Reader, Store, StoreError, StoreResult};
use alloy::primitives::Address;
use std::collections::HashMap;

/// Derived state written by earlier blocks of the same (uncommitted) chunk.
#[derive(Debug, Default)]
pub struct Overlay {
    accounts: HashMap<Address, Option<AccountRecord>>,
    counters: Option<Counters>,
    days: HashMap<u32, Option<DayStats>>,
}

/// Adds block `block` to `batch`: its rows, its derived rows, the new tip and (if `keep_undo`) its undo data.
/// `overlay` carries derived state between blocks of one batch.
pub fn apply_block(
    batch: &mut Batch<'_>,
    reader: &Reader<'_>,
    overlay: &mut Overlay,
    block: &Bundle,
    keep_undo: bool,
) -> StoreResult<()> {
    let touched: Vec<Address> = touched_accounts(block).into_iter().collect();
    let missing: Vec<Address> = touched.iter().filter(|a| !overlay.accounts.contains_key(*a)).copied().collect();
    for (address, record) in missing.iter().zip(reader.multi_get::<Accounts>(&missing)?) {
        overlay.accounts.insert(*address, record);
    }
    let counters = match overlay.counters {
        Some(c) => Some(c),
        None => reader.stored_counters()?,
    };
    let day = block_day(block);
    let day_before = match overlay.days.get(&day) {
        Some(stats) => *stats,
        None => reader.get::<Daily>(&DayKey(day))?,
    };
    let prior = Undo {
        accounts: touched.iter().map(|a| (*a, overlay.accounts[a].clone())).collect(),
        counters,
        day: (day, day_before),
    };
    let derived = derive(block, &prior).map_err(|e| StoreError::Inconsistent(e.to_string()))?;

    block_rows(block, &mut PutRows(batch))?;
    for (address, record) in &derived.accounts {
        batch.put::<Accounts>(address, record)?;
    }
    batch.put_meta(&Meta::Counters(derived.counters))?;
    batch.put::<Daily>(&DayKey(derived.day.0), &derived.day.1)?;
    batch.put_meta(&Meta::Tip(Tip { number: block.number(), hash: block.header.hash }))?;
    batch.delete::<Reorged>(&ReorgedKey { number: block.number(), hash: block.header.hash });
    if keep_undo {
        batch.put::<UndoLog>(&BlockKey(block.number()), &prior)?;
    }
    overlay.accounts.extend(derived.accounts.into_iter().map(|(a, r)| (a, Some(r))));
    overlay.counters = Some(derived.counters);
    overlay.days.insert(derived.day.0, Some(derived.day.1));
    Ok(())
}

/// Deletes the undo data of every block at or below `last_kept - depth` (undo is kept for `depth` blocks).
pub fn prune_undo(batch: &mut Batch<'_>, tip: u64, depth: u64) {
    if let Some(cut) = tip.checked_sub(depth) {
        // Keys are newest first: blocks `cut, cut-1, …, 1` encode in [BlockKey(cut), BlockKey(0)).
        batch.delete_range::<UndoLog>(&BlockKey(cut), &BlockKey(0));
        batch.delete::<UndoLog>(&BlockKey(0));
    }
}

/// Why a block could not be reverted.
#[derive(Debug, thiserror::Error)]
pub enum RevertError {
    /// Its undo data was already pruned (the reorg is deeper than `--undo-depth`).
    #[error("block {0} has no undo data left (reorg deeper than the undo depth)")]
    NoUndo(u64),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Adds the revert of the stored tip block `block` to `batch`: deletes its rows, restores the derived rows from its
/// undo data, moves the tip to its parent and records it as reorged.
pub fn revert_block(batch: &mut Batch<'_>, reader: &Reader<'_>, block: &Bundle) -> Result<(), RevertError> {
    let number = block.number();
    let undo = reader.get::<UndoLog>(&BlockKey(number))?.ok_or(RevertError::NoUndo(number))?;
    block_rows(block, &mut DeleteRows(batch))?;
    for (address, before) in &undo.accounts {
        batch.set::<Accounts>(address, before.as_ref())?;
    }
    match undo.counters {
        Some(counters) => batch.put_meta(&Meta::Counters(counters))?,
        None => batch.delete_meta(MetaKey::Counters),
    }
    batch.set::<Daily>(&DayKey(undo.day.0), undo.day.1.as_ref())?;
    match number.checked_sub(1) {
        Some(parent) => batch.put_meta(&Meta::Tip(Tip { number: parent, hash: block.header.parent_hash }))?,
        None => batch.delete_meta(MetaKey::Tip),
    }
    batch.put::<Reorged>(&ReorgedKey { number, hash: block.header.hash }, &block.header)?;
    batch.delete::<UndoLog>(&BlockKey(number));
    Ok(())
}

/// The range of keys of block `number` in a table keyed by [`BlockPos`].
pub fn block_range(number: u64) -> KeyRange {
    KeyRange::prefix(&BlockKey(number).encode())
}

/// Reads block `number` back from the store in the shape it was indexed from.
pub fn load_block(reader: &Reader<'_>, number: u64) -> StoreResult<Option<Bundle>> {
    let Some(header) = reader.get::<Headers>(&BlockKey(number))? else {
        return Ok(None);
    };
    // Index fields are complemented, so ascending positions come from a reverse scan.
    let txs = reader
        .scan::<Transactions>(block_range(number), Direction::Reverse)
        .map(|r| r.map(|(_, tx)| tx))
        .collect::<StoreResult<Vec<_>>>()?;
    let logs = reader
        .scan::<Logs>(block_range(number), Direction::Reverse)
        .map(|r| r.map(|(_, log)| log))
        .collect::<StoreResult<Vec<_>>>()?;
    if txs.len() != header.tx_count as usize || logs.len() != header.log_count as usize {
        return Err(StoreError::Inconsistent(format!(
            "block {number}: {} of {} transactions and {} of {} logs stored",
            txs.len(),
            header.tx_count,
            logs.len(),
            header.log_count
        )));
    }
    Ok(Some(Bundle { header, txs, logs }))
}

/// Applies blocks in one atomic batch (used by tests and benchmarks; the follower batches the same way).
pub fn apply_blocks(store: &Store, blocks: &[Bundle], keep_undo: bool) -> StoreResult<()> {
    let reader = store.reader();
    let mut batch = store.batch();
    let mut overlay = Overlay::default();
    for block in blocks {
        apply_block(&mut batch, &reader, &mut overlay, block, keep_undo)?;
    }
    store.write(batch, crate::store::Durability::Buffered)
}

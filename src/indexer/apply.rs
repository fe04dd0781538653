//! Turning the core's output into batches: apply a chunk of blocks, revert one block, read a stored block back.

use super::bundle::Bundle;
use super::derived::{Changes, PriorSource};
use super::rows::{block_rows, derive, DeleteRows, PutRows};
use crate::store::keys::{BlockKey, Key, MetaKey, ReorgedKey};
use crate::store::records::{Meta, Tip};
use crate::store::tables::{Headers, Logs, Reorged, Transactions, UndoLog};
use crate::store::{Batch, Direction, Durability, KeyRange, Reader, Store, StoreError, StoreResult};
use alloy::primitives::map::HashMap;

/// Derived rows written by earlier blocks of the same (uncommitted) batch, per table id (looked up by the
/// encoded key without copying it).
#[derive(Debug, Default)]
pub struct Overlay {
    tables: Vec<HashMap<Vec<u8>, Option<Vec<u8>>>>,
}

impl Overlay {
    fn get(&self, table: u8, key: &[u8]) -> Option<&Option<Vec<u8>>> {
        self.tables.get(usize::from(table))?.get(key)
    }

    fn insert(&mut self, table: u8, key: Vec<u8>, value: Option<Vec<u8>>) {
        let table = usize::from(table);
        if self.tables.len() <= table {
            self.tables.resize_with(table + 1, HashMap::default);
        }
        self.tables[table].insert(key, value);
    }
}

/// Prior values: the overlay first, then the store.
struct Priors<'o, 'r, 's> {
    overlay: &'o Overlay,
    reader: &'r Reader<'s>,
}

impl PriorSource for Priors<'_, '_, '_> {
    fn prior(&self, table: u8, key: &[u8]) -> StoreResult<Option<Vec<u8>>> {
        match self.overlay.get(table, key) {
            Some(value) => Ok(value.clone()),
            None => self.reader.get_raw(table, key),
        }
    }
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
    let outcome = {
        let priors = Priors { overlay, reader };
        let mut changes = Changes::new(&priors);
        derive(block, &mut changes)?;
        changes.finish()
    };
    block_rows(block, &mut PutRows(batch))?;
    for (table, key, value) in &outcome.writes {
        batch.set_raw(*table, key, value.as_deref())?;
    }
    batch.put_meta(&Meta::Tip(Tip { number: block.number(), hash: block.header.hash }))?;
    batch.delete::<Reorged>(&ReorgedKey { number: block.number(), hash: block.header.hash });
    if keep_undo {
        batch.put::<UndoLog>(&BlockKey(block.number()), &outcome.undo)?;
    }
    for (table, key, value) in outcome.writes {
        overlay.insert(table, key, value);
    }
    Ok(())
}

/// Deletes the undo data of every block at or below `tip - depth` (undo is kept for `depth` blocks).
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
    for row in &undo.rows {
        batch.set_raw(row.table, &row.key, row.before.as_deref())?;
    }
    match number.checked_sub(1) {
        Some(parent) => batch.put_meta(&Meta::Tip(Tip { number: parent, hash: block.header.parent_hash }))?,
        None => batch.delete_meta(MetaKey::Tip),
    }
    batch.put::<Reorged>(&ReorgedKey { number, hash: block.header.hash }, &block.header)?;
    batch.delete::<UndoLog>(&BlockKey(number));
    Ok(())
}

/// The range of keys of block `number` in a table keyed by block position.
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

/// Writes a chunk of consecutive blocks in one atomic batch, the follower's write path: undo data only for blocks
/// within `undo_depth` of the node's `head`, older undo pruned, synced to disk only near the head. Returns the
/// batch's size in bytes.
pub fn write_chunk(store: &Store, chunk: &[Bundle], head: u64, undo_depth: u64) -> StoreResult<usize> {
    let reader = store.reader();
    let mut batch = store.batch();
    let mut overlay = Overlay::default();
    for block in chunk {
        // Undo data is only needed for blocks a reorg could still reach.
        let keep_undo = block.number() + undo_depth > head;
        apply_block(&mut batch, &reader, &mut overlay, block, keep_undo)?;
    }
    let last = chunk.last().map(|b| b.number()).unwrap_or_default();
    prune_undo(&mut batch, last, undo_depth);
    let durability = if last + 2 >= head { Durability::Sync } else { Durability::Buffered };
    let bytes = batch.size_in_bytes();
    store.write(batch, durability)?;
    Ok(bytes)
}

/// Applies blocks in one atomic batch (used by tests; the follower writes through [`write_chunk`]).
pub fn apply_blocks(store: &Store, blocks: &[Bundle], keep_undo: bool) -> StoreResult<()> {
    let reader = store.reader();
    let mut batch = store.batch();
    let mut overlay = Overlay::default();
    for block in blocks {
        apply_block(&mut batch, &reader, &mut overlay, block, keep_undo)?;
    }
    store.write(batch, Durability::Buffered)
}

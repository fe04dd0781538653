//! Turning the core's output into batches: apply a chunk of blocks, revert one block.

use super::rows::{block_rows, derive, DeleteRows, PutRows};
use crate::store::keys::{BlockKey, MetaKey, ReorgedKey};
use crate::store::records::{Bundle, Meta, Tip};
use crate::store::tables::{Reorged, UndoLog};
use crate::store::{Batch, Durability, Overlay, Reader, Store, StoreError, StoreResult};

/// Adds block `block` to `batch`: its rows, its derived rows, the new tip and (if `keep_undo`) its undo data.
/// `overlay` carries derived state between blocks of one batch.
pub fn apply_block(
    batch: &mut Batch<'_>,
    reader: &Reader<'_>,
    overlay: &mut Overlay,
    block: &Bundle,
    keep_undo: bool,
) -> StoreResult<()> {
    block_rows(block, &mut PutRows(batch))?;
    let registry = reader.name_registry();
    let undo = overlay.record(reader, batch, |changes| {
        derive(block, changes)?;
        match registry {
            Some(registry) => crate::chain::names::derive(block, registry, changes),
            None => Ok(()),
        }
    })?;
    batch.put_meta(&Meta::Tip(Tip { number: block.number(), hash: block.header.hash }))?;
    batch.delete::<Reorged>(&ReorgedKey { number: block.number(), hash: block.header.hash });
    if keep_undo {
        batch.put::<UndoLog>(&BlockKey(block.number()), &undo)?;
    }
    Ok(())
}

/// Deletes the undo data of every block at or below `tip - depth` (undo is kept for `depth` blocks).
pub fn prune_undo(batch: &mut Batch<'_>, tip: u64, depth: u64) {
    if let Some(cut) = tip.checked_sub(depth) {
        batch.delete_undo_through(cut);
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

/// The lowest block of `blocks` without undo data (pruned below `--undo-depth`, or written while catching up far
/// behind the head), if any: a reorg reaching it cannot be reverted.
pub fn first_without_undo(reader: &Reader<'_>, blocks: std::ops::RangeInclusive<u64>) -> StoreResult<Option<u64>> {
    for number in blocks {
        if reader.get::<UndoLog>(&BlockKey(number))?.is_none() {
            return Ok(Some(number));
        }
    }
    Ok(None)
}

/// Adds the revert of the stored tip block `block` to `batch`: deletes its rows, restores the derived rows from its
/// undo data, moves the tip to its parent and records it as reorged.
pub fn revert_block(batch: &mut Batch<'_>, reader: &Reader<'_>, block: &Bundle) -> Result<(), RevertError> {
    let number = block.number();
    let undo = reader.get::<UndoLog>(&BlockKey(number))?.ok_or(RevertError::NoUndo(number))?;
    block_rows(block, &mut DeleteRows(batch))?;
    batch.restore(&undo)?;
    match number.checked_sub(1) {
        Some(parent) => batch.put_meta(&Meta::Tip(Tip { number: parent, hash: block.header.parent_hash }))?,
        None => batch.delete_meta(MetaKey::Tip),
    }
    batch.put::<Reorged>(&ReorgedKey { number, hash: block.header.hash }, &block.header)?;
    batch.delete::<UndoLog>(&BlockKey(number));
    Ok(())
}

/// Writes a chunk of consecutive blocks in one atomic batch, the follower's write path: undo data only for blocks
/// within `undo_depth` of the node's `head`, older undo pruned, synced to disk only near the head. Returns the
/// batch's size in bytes.
pub fn write_chunk(store: &Store, chunk: &[Bundle], head: u64, undo_depth: u64) -> StoreResult<usize> {
    let last = chunk.last().map(|b| b.number()).unwrap_or_default();
    let durability = if last + 2 >= head { Durability::Sync } else { Durability::Buffered };
    // Far behind the head, writing outruns flushing on a busy machine: a chunk waits for the memtables the earlier
    // ones filled (before it writes, so that a failed wait never reports a chunk that landed as failed).
    if durability == Durability::Buffered {
        store.wait_for_memtables()?;
    }
    // Late-row writers (balances, traces, contract code) read and write derived rows too: one at a time.
    let _writes = store.lock_writes();
    let reader = store.reader();
    let mut batch = store.batch();
    let mut overlay = Overlay::default();
    for block in chunk {
        // Undo data is only needed for blocks a reorg could still reach.
        let keep_undo = block.number() + undo_depth > head;
        apply_block(&mut batch, &reader, &mut overlay, block, keep_undo)?;
    }
    prune_undo(&mut batch, last, undo_depth);
    let bytes = batch.size_in_bytes();
    store.write(batch, durability)?;
    Ok(bytes)
}

/// Applies blocks in one atomic batch (used by tests; the follower writes through [`write_chunk`]).
pub fn apply_blocks(store: &Store, blocks: &[Bundle], keep_undo: bool) -> StoreResult<()> {
    let _writes = store.lock_writes();
    let reader = store.reader();
    let mut batch = store.batch();
    let mut overlay = Overlay::default();
    for block in blocks {
        apply_block(&mut batch, &reader, &mut overlay, block, keep_undo)?;
    }
    store.write(batch, Durability::Buffered)
}

/// An empty block `number` of branch `branch` (its hash tells branches apart), on `parent`, mined by `0x07…07`.
#[cfg(test)]
pub(crate) fn empty_block(number: u64, branch: u64, parent: alloy::primitives::B256) -> Bundle {
    use crate::store::records::BlockRecord;
    use alloy::primitives::{Address, Bytes, B256, B64, U256};
    let header = BlockRecord {
        number,
        hash: B256::from(U256::from(branch * 1_000_000 + number + 1)),
        parent_hash: parent,
        timestamp: 1_700_000_000 + number * 12,
        miner: Address::repeat_byte(7),
        gas_used: 0,
        gas_limit: 30_000_000,
        base_fee: Some(5),
        size: Some(500),
        difficulty: U256::ZERO,
        total_difficulty: None,
        nonce: B64::ZERO,
        extra_data: Bytes::new(),
        uncles: vec![],
        withdrawals_count: None,
        blob_gas_used: None,
        excess_blob_gas: None,
        tx_count: 0,
        blob_tx_count: 0,
        log_count: 0,
        fees: U256::ZERO,
        burnt_fees: U256::ZERO,
        priority_fees: U256::ZERO,
    };
    Bundle { header, txs: vec![], logs: vec![], balances: vec![] }
}

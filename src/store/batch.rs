//! `Batch`: a typed RocksDB write batch, committed atomically by `Store::write`.

use super::codec;
use super::error::{StoreError, StoreResult};
use super::keys::{BlockKey, Key, MetaKey};
use super::records::{Meta, Tip};
use super::row_cache::Written;
use super::tables::{self, Access, Cached, MetaTable, Table, UndoLog};
use super::Store;
use rocksdb::WriteBatch;

/// Whether a commit waits for the WAL to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync the WAL before returning (blocks at the head of the chain).
    Sync,
    /// Leave the WAL in the OS page cache (catch-up): survives a process kill, not a power loss. Either way a
    /// batch is all-or-nothing.
    Buffered,
}

/// A point put (`Some`) or delete (`None`) waiting to be sorted into the write batch.
struct PointOp {
    table: &'static str,
    /// The table's id, what the row cache keeps of it and how it is read (the cache entry the key stales is listed
    /// in [`Written`]).
    cache: (u8, Cached, Access),
    key: Vec<u8>,
    value: Option<Vec<u8>>,
}

/// Typed puts and deletes, applied together or not at all.
///
/// Point operations are collected and handed to RocksDB sorted by (table, key) when the batch is committed (or
/// before a range delete, which keeps its place): a memtable takes keys in ascending order far faster than in
/// random order (hashes and addresses are random), and the sort is stable, so two operations on one key keep
/// their order.
pub struct Batch<'a> {
    store: &'a Store,
    inner: WriteBatch,
    pending: Vec<PointOp>,
    written: Written,
}

impl std::fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch").field("ops", &self.len()).finish()
    }
}

impl<'a> Batch<'a> {
    pub(super) fn new(store: &'a Store) -> Self {
        Batch { store, inner: WriteBatch::default(), pending: Vec::new(), written: Written::default() }
    }

    /// The RocksDB batch and the keys it writes in cached tables.
    pub(super) fn into_parts(mut self) -> (WriteBatch, Written) {
        self.flush_pending();
        (self.inner, self.written)
    }

    fn flush_pending(&mut self) {
        self.pending.sort_by(|a, b| (a.table, &a.key).cmp(&(b.table, &b.key)));
        let mut current: Option<(&'static str, &rocksdb::ColumnFamily)> = None;
        for op in self.pending.drain(..) {
            let cf = match current {
                Some((table, cf)) if table == op.table => cf,
                _ => {
                    let cf = self.store.cf(op.table);
                    current = Some((op.table, cf));
                    cf
                }
            };
            match op.value {
                Some(value) => self.inner.put_cf(cf, &op.key, value),
                None => self.inner.delete_cf(cf, &op.key),
            }
            // The key itself names the stale entry, cut to its prefix for a prefix entry: no copy.
            let (table, cache, access) = op.cache;
            if let Some(len) = cache.entry_of(access, &op.key).map(<[u8]>::len) {
                let mut entry = op.key;
                entry.truncate(len);
                self.written.keys.push((table, entry));
            }
        }
    }

    /// Number of operations in the batch.
    pub fn len(&self) -> usize {
        self.inner.len() + self.pending.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the batch occupies in RocksDB's encoding.
    pub fn size_in_bytes(&mut self) -> usize {
        self.flush_pending();
        self.inner.size_in_bytes()
    }

    /// Puts a row.
    pub fn put<T: Table>(&mut self, key: &T::Key, value: &T::Value) -> StoreResult<()> {
        let bytes = codec::encode(value).map_err(|source| StoreError::Encode { table: T::NAME, source })?;
        self.pending.push(PointOp {
            table: T::NAME,
            cache: (T::ID, T::CACHE, T::ACCESS),
            key: key.encode().as_ref().to_vec(),
            value: Some(bytes),
        });
        Ok(())
    }

    /// Puts or deletes a row.
    pub fn set<T: Table>(&mut self, key: &T::Key, value: Option<&T::Value>) -> StoreResult<()> {
        match value {
            Some(value) => self.put::<T>(key, value),
            None => {
                self.delete::<T>(key);
                Ok(())
            }
        }
    }

    /// Deletes a row (absent rows are fine).
    pub fn delete<T: Table>(&mut self, key: &T::Key) {
        self.pending.push(PointOp {
            table: T::NAME,
            cache: (T::ID, T::CACHE, T::ACCESS),
            key: key.encode().as_ref().to_vec(),
            value: None,
        });
    }

    /// Deletes every row of `T` with a key in `[from, to)`, after the operations added before it.
    fn delete_range<T: Table>(&mut self, from: &T::Key, to: &T::Key) {
        self.flush_pending();
        self.written.everything |= T::CACHE != Cached::No;
        self.inner.delete_range_cf(self.store.cf(T::NAME), from.encode(), to.encode());
    }

    /// Deletes the undo data of block `cut` and every block below it.
    pub fn delete_undo_through(&mut self, cut: u64) {
        // Keys are newest first: blocks `cut, cut-1, …, 1` encode in [BlockKey(cut), BlockKey(0)).
        self.delete_range::<UndoLog>(&BlockKey(cut), &BlockKey(0));
        self.delete::<UndoLog>(&BlockKey(0));
    }

    /// Puts (`Some`) or deletes (`None`) an already encoded row of the table with id `table` (undo data).
    pub(super) fn set_raw(&mut self, table: u8, key: &[u8], value: Option<&[u8]>) -> StoreResult<()> {
        let def = tables::by_id(table)
            .ok_or_else(|| StoreError::Inconsistent(format!("undo data names table {table}, which does not exist")))?;
        let cache = (def.id, def.cache, def.access);
        self.pending.push(PointOp { table: def.name, cache, key: key.to_vec(), value: value.map(<[u8]>::to_vec) });
        Ok(())
    }

    /// Puts a meta row under the tag its variant belongs to.
    pub fn put_meta(&mut self, meta: &Meta) -> StoreResult<()> {
        let key = match meta {
            Meta::SchemaVersion(_) => MetaKey::SchemaVersion,
            Meta::DbState(_) => MetaKey::DbState,
            Meta::ChainId(_) => MetaKey::ChainId,
            Meta::Genesis(_) => MetaKey::Genesis,
            Meta::Tip(_) => MetaKey::Tip,
            Meta::Counters(_) => MetaKey::Counters,
            Meta::TraceTip(_) => MetaKey::TraceTip,
            Meta::BalanceTip(_) => MetaKey::BalanceTip,
            Meta::NameRegistry(_) => MetaKey::NameRegistry,
        };
        self.put::<MetaTable>(&key, meta)
    }

    /// Moves a late writer's tip (`MetaKey::TraceTip` or `MetaKey::BalanceTip`) below block `block`, whose parent
    /// is `parent`, when the writer had passed it (part of the block's revert). Returns whether it had.
    pub fn lower_tip_below(
        &mut self,
        reader: &super::Reader<'_>,
        key: MetaKey,
        block: u64,
        parent: alloy::primitives::B256,
    ) -> StoreResult<bool> {
        let row: fn(Tip) -> Meta = match key {
            MetaKey::TraceTip => Meta::TraceTip,
            MetaKey::BalanceTip => Meta::BalanceTip,
            other => return Err(StoreError::Inconsistent(format!("{other:?} is not a late writer's tip"))),
        };
        if super::tip_row(key, reader.meta(key)?)?.is_none_or(|tip| tip.number < block) {
            return Ok(false);
        }
        match block.checked_sub(1) {
            Some(number) => self.put_meta(&row(Tip { number, hash: parent }))?,
            None => self.delete_meta(key),
        }
        Ok(true)
    }

    /// Deletes a meta row.
    pub fn delete_meta(&mut self, key: MetaKey) {
        self.delete::<MetaTable>(&key);
    }

    /// Deletes every indexed row: all tables except `meta` and the account data, plus the meta rows that describe
    /// the chain. Used when the node's chain was replaced (a new genesis), so nothing of the old chain survives.
    pub fn clear_index(&mut self) {
        let past_every_key = vec![0xff; tables::max_key_len() + 1];
        self.flush_pending();
        for def in tables::ALL.iter().filter(|t| t.name != MetaTable::NAME && !tables::is_account_data(t)) {
            self.written.everything |= def.cache != Cached::No;
            self.inner.delete_range_cf(self.store.cf(def.name), [].as_slice(), past_every_key.as_slice());
        }
        // Every meta row but the store's own (schema version, open state) describes the indexed chain.
        for key in MetaKey::ALL.into_iter().filter(|k| !matches!(k, MetaKey::SchemaVersion | MetaKey::DbState)) {
            self.delete_meta(key);
        }
    }
}

//! Reads over account data (tables 40–49) that need scans, and the reindex that keeps account data: everything
//! else about accounts (tokens, tags, watchlists) is plain point reads and batches, done by `crate::account`.

use super::error::StoreResult;
use super::keys::{ItemKey, ItemPos, Key, SerialKey};
use super::records::{AccountItem, ItemKind};
use super::tables::{self, ItemOwners, Table};
use super::{Direction, KeyRange, Reader, Store};
use alloy::primitives::Address;
use rocksdb::{Options, WriteBatch, DB};
use std::path::Path;

impl Reader<'_> {
    /// `owner`'s items of `kind`, newest first, after item id `after`, at most `limit`.
    pub fn account_items(
        &self,
        owner: Address,
        kind: ItemKind,
        after: Option<u64>,
        limit: usize,
    ) -> StoreResult<Vec<(u64, AccountItem)>> {
        let mut prefix = owner.to_vec();
        prefix.push(kind as u8);
        let mut range = KeyRange::prefix(&prefix);
        if let Some(id) = after {
            range = range.after(ItemKey { address: owner, pos: ItemPos { kind: kind as u8, id } }.encode().as_ref());
        }
        self.scan::<tables::AccountItems>(range, Direction::Forward)
            .take(limit)
            .map(|row| row.map(|(key, item)| (key.pos.id, item)))
            .collect()
    }

    /// The highest item id handed out so far (0 before the first).
    pub fn last_item_id(&self) -> StoreResult<u64> {
        match self.scan::<ItemOwners>(KeyRange::all(), Direction::Reverse).next() {
            Some(row) => Ok(row?.0 .0),
            None => Ok(0),
        }
    }

    /// Every row of a credential table (tokens or API keys), by id, for the operator's `account list`.
    pub fn credentials<T: Table<Key = SerialKey>>(&self) -> super::Scan<'_, T> {
        self.rows::<T>()
    }
}

impl Store {
    /// `--reindex`: deletes every chain row of the store at `path` in one atomic batch (the next open sees a new,
    /// empty index) and keeps the account data. Column families the current schema no longer has are dropped.
    /// Unlike deleting the directory this works on a store of another schema version, since it only needs to
    /// list and open its column families.
    pub fn clear_chain_data(path: &Path) -> StoreResult<()> {
        if !Store::holds_store(path) {
            return Ok(());
        }
        let names = DB::list_cf(&Options::default(), path)?;
        let mut db = DB::open_cf(&Options::default(), path, &names)?;
        let past_every_key = vec![0xff; tables::max_key_len().max(64) + 1];
        let kept = |name: &str| tables::ALL.iter().any(|t| t.name == name && tables::is_account_data(t));
        let mut batch = WriteBatch::default();
        for name in names.iter().filter(|n| !kept(n) && n.as_str() != "default") {
            if let Some(cf) = db.cf_handle(name) {
                batch.delete_range_cf(cf, [].as_slice(), past_every_key.as_slice());
            }
        }
        let mut sync = rocksdb::WriteOptions::default();
        sync.set_sync(true);
        db.write_opt(batch, &sync)?;
        for name in names.iter().filter(|n| n.as_str() != "default" && !tables::ALL.iter().any(|t| t.name == *n)) {
            db.drop_cf(name)?;
        }
        for name in names.iter().filter(|n| !kept(n)) {
            if let Some(cf) = db.cf_handle(name) {
                db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
            }
        }
        Ok(())
    }
}

//! Derived rows as one block reads and rewrites them: accounts, global counters, day statistics and token state.
//!
//! [`Changes`] reads each row's prior value once (from the store, or from earlier blocks of the same batch through
//! the [`Overlay`]), keeps the latest value the block gives it, and at the end yields the writes and the undo data
//! (every prior value, byte for byte). Reverting a block writes its undo data back ([`Batch::restore`]).

use super::codec;
use super::keys::BlockKey;
use super::keys::Key;
use super::records::{Undo, UndoRow};
use super::tables::{Table, UndoLog};
use super::{Batch, Reader, StoreError, StoreResult};
use alloy::primitives::map::HashMap;
use std::collections::BTreeMap;

/// Derived rows written by earlier blocks of the same (uncommitted) batch, per table id.
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

    /// Runs `derive` for one block against the state before it (this overlay, then `reader`), adds the rows it
    /// changed to `batch`, remembers them for the next blocks of the batch, and returns the block's undo data.
    pub fn record(
        &mut self,
        reader: &Reader<'_>,
        batch: &mut Batch<'_>,
        derive: impl FnOnce(&mut Changes<'_>) -> StoreResult<()>,
    ) -> StoreResult<Undo> {
        let outcome = {
            let priors = Priors { overlay: self, reader };
            let mut changes = Changes::new(&priors);
            derive(&mut changes)?;
            changes.finish()
        };
        for (table, key, value) in outcome.writes {
            batch.set_raw(table, &key, value.as_deref())?;
            self.insert(table, key, value);
        }
        Ok(outcome.undo)
    }
}

/// Where prior values come from.
trait PriorSource {
    /// The encoded value of `key` in the table with id `table` before the block.
    fn prior(&self, table: u8, key: &[u8]) -> StoreResult<Option<Vec<u8>>>;
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

impl Batch<'_> {
    /// Writes a block's undo data back: every derived row it changed returns to its prior bytes.
    pub fn restore(&mut self, undo: &Undo) -> StoreResult<()> {
        for row in &undo.rows {
            self.set_raw(row.table, &row.key, row.before.as_deref())?;
        }
        Ok(())
    }
}

impl Batch<'_> {
    /// Sets derived rows of block `block` after that block was committed (rows a background writer derives, such
    /// as a contract's code): each row's prior value joins the block's undo data when the block still has some, so
    /// reverting the block restores it like any derived row. A block without undo data is below the undo depth and
    /// can no longer be reverted. The caller holds the store's write lock, has checked that `block` is canonical,
    /// and sets each block's late rows in one call per batch.
    pub fn set_late<T: Table>(
        &mut self,
        reader: &Reader<'_>,
        block: u64,
        rows: &[(T::Key, Option<T::Value>)],
    ) -> StoreResult<()> {
        let mut late = LateRows::default();
        for (key, value) in rows {
            late.set::<T>(key, value.as_ref())?;
        }
        self.set_late_rows(reader, block, &late)
    }

    /// [`Batch::set_late`] for rows of several tables at once (one call per block and batch).
    pub fn set_late_rows(&mut self, reader: &Reader<'_>, block: u64, rows: &LateRows) -> StoreResult<()> {
        let mut undo = reader.get::<UndoLog>(&BlockKey(block))?;
        let mut undo_changed = false;
        for (table, key, after) in &rows.0 {
            let before = reader.get_raw(*table, key)?;
            if before == *after {
                continue;
            }
            if let Some(undo) = undo.as_mut() {
                // A row already in the block's undo data keeps its first prior value.
                if !undo.rows.iter().any(|r| r.table == *table && r.key == *key) {
                    undo.rows.push(UndoRow { table: *table, key: key.clone(), before });
                    undo_changed = true;
                }
            }
            self.set_raw(*table, key, after.as_deref())?;
        }
        if let (Some(mut undo), true) = (undo, undo_changed) {
            // Late writers (code, balances, traces) run independently: in (table, key) order, the block's undo data
            // does not depend on which came first (restoring is order-free: one row per key).
            undo.rows.sort_by(|a, b| (a.table, &a.key).cmp(&(b.table, &b.key)));
            self.put::<UndoLog>(&BlockKey(block), &undo)?;
        }
        Ok(())
    }
}

/// Late derived rows of one block, of any tables, encoded: (table id, key, new value or deletion).
#[derive(Debug, Default)]
pub struct LateRows(Vec<(u8, Vec<u8>, Option<Vec<u8>>)>);

impl LateRows {
    /// Sets (`Some`) or deletes (`None`) a row.
    pub fn set<T: Table>(&mut self, key: &T::Key, value: Option<&T::Value>) -> StoreResult<()> {
        let after = value
            .map(|v| codec::encode(v).map_err(|source| StoreError::Encode { table: T::NAME, source }))
            .transpose()?;
        self.0.push((T::ID, key.encode().as_ref().to_vec(), after));
        Ok(())
    }
}

#[derive(Debug)]
struct Row {
    before: Option<Vec<u8>>,
    after: Option<Vec<u8>>,
}

/// The derived rows one block touched.
pub struct Changes<'s> {
    source: &'s dyn PriorSource,
    rows: BTreeMap<(u8, Vec<u8>), Row>,
}

impl std::fmt::Debug for Changes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").field("rows", &self.rows.len()).finish()
    }
}

/// What a block does to derived rows.
#[derive(Debug, Default)]
struct Outcome {
    /// (table id, key, new value or deletion), in key order.
    pub writes: Vec<(u8, Vec<u8>, Option<Vec<u8>>)>,
    /// The prior values.
    pub undo: Undo,
}

impl<'s> Changes<'s> {
    /// No rows touched yet.
    fn new(source: &'s dyn PriorSource) -> Self {
        Changes { source, rows: BTreeMap::new() }
    }

    fn row(&mut self, table: u8, key: Vec<u8>) -> StoreResult<&mut Row> {
        use std::collections::btree_map::Entry;
        Ok(match self.rows.entry((table, key)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let before = self.source.prior(table, &e.key().1)?;
                e.insert(Row { after: before.clone(), before })
            }
        })
    }

    /// The current value of a row (as earlier changes of this block left it).
    pub fn get<T: Table>(&mut self, key: &T::Key) -> StoreResult<Option<T::Value>> {
        let encoded = key.encode().as_ref().to_vec();
        let row = self.row(T::ID, encoded.clone())?;
        match &row.after {
            Some(bytes) => codec::decode(bytes).map(Some).map_err(|source| StoreError::Decode {
                table: T::NAME,
                key: alloy::hex::encode(&encoded),
                source,
            }),
            None => Ok(None),
        }
    }

    /// Sets (`Some`) or deletes (`None`) a row.
    pub fn set<T: Table>(&mut self, key: &T::Key, value: Option<&T::Value>) -> StoreResult<()> {
        let after = value
            .map(|v| codec::encode(v).map_err(|source| StoreError::Encode { table: T::NAME, source }))
            .transpose()?;
        self.row(T::ID, key.encode().as_ref().to_vec())?.after = after;
        Ok(())
    }

    /// The writes (rows whose value changed) and the undo data (prior values of those rows).
    fn finish(self) -> Outcome {
        let mut outcome = Outcome::default();
        for ((table, key), row) in self.rows {
            if row.before == row.after {
                continue;
            }
            outcome.undo.rows.push(UndoRow { table, key: key.clone(), before: row.before });
            outcome.writes.push((table, key, row.after));
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::super::keys::BeaconProxyKey;
    use super::super::records::ContractRecord;
    use super::super::tables::{BeaconProxies, Contracts};
    use super::super::{Durability, Store, StoreOptions};
    use super::*;
    use alloy::primitives::{Address, B256};

    fn record(n: u8) -> ContractRecord {
        ContractRecord { code_hash: B256::repeat_byte(n), creation_tx: B256::repeat_byte(n + 1), block: 5, proxy: None }
    }

    /// A late row joins its block's undo data, and restoring that undo deletes it (or brings back its prior value);
    /// a block without undo data (below the undo depth) gets the row without undo.
    #[test]
    fn late_rows_are_undone_with_their_block() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let (new, old) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let mut batch = store.batch();
        batch.put::<Contracts>(&old, &record(9)).unwrap();
        let kept = UndoRow { table: 8, key: vec![7], before: None };
        batch.put::<UndoLog>(&BlockKey(5), &Undo { rows: vec![kept.clone()] }).unwrap();
        store.write(batch, Durability::Buffered).unwrap();

        let reader = store.reader();
        let mut batch = store.batch();
        let pair = BeaconProxyKey { beacon: old, proxy: new };
        let mut rows = LateRows::default();
        rows.set::<Contracts>(&new, Some(&record(1))).unwrap();
        rows.set::<Contracts>(&old, Some(&record(3))).unwrap();
        rows.set::<BeaconProxies>(&pair, Some(&())).unwrap();
        batch.set_late_rows(&reader, 5, &rows).unwrap();
        store.write(batch, Durability::Buffered).unwrap();
        let reader = store.reader();
        assert_eq!(reader.get::<Contracts>(&new).unwrap(), Some(record(1)));
        assert_eq!(reader.get::<BeaconProxies>(&pair).unwrap(), Some(()));
        let undo = reader.get::<UndoLog>(&BlockKey(5)).unwrap().unwrap();
        assert_eq!(undo.rows.len(), 4, "rows of both tables join the block's undo data");
        assert_eq!(undo.rows[0], kept);

        let mut batch = store.batch();
        batch.restore(&undo).unwrap();
        store.write(batch, Durability::Buffered).unwrap();
        let reader = store.reader();
        assert_eq!(reader.get::<Contracts>(&new).unwrap(), None, "the revert removes the contract");
        assert_eq!(reader.get::<Contracts>(&old).unwrap(), Some(record(9)), "the prior value returns");
        assert_eq!(reader.get::<BeaconProxies>(&pair).unwrap(), None);

        // Block 6 has no undo data: the row is written, nothing else.
        let mut batch = store.batch();
        batch.set_late::<Contracts>(&reader, 6, &[(new, Some(record(1)))]).unwrap();
        store.write(batch, Durability::Buffered).unwrap();
        let reader = store.reader();
        assert_eq!(reader.get::<Contracts>(&new).unwrap(), Some(record(1)));
        assert_eq!(reader.get::<UndoLog>(&BlockKey(6)).unwrap(), None);
    }
}

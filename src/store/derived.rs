//! Derived rows as one block reads and rewrites them: accounts, global counters, day statistics and token state.
//!
//! [`Changes`] reads each row's prior value once (from the store, or from earlier blocks of the same batch through
//! the [`Overlay`]), keeps the latest value the block gives it, and at the end yields the writes and the undo data
//! (every prior value, byte for byte). Reverting a block writes its undo data back ([`Batch::restore`]).

use super::codec;
use super::keys::Key;
use super::records::{Undo, UndoRow};
use super::tables::Table;
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

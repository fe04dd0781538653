//! Derived rows as one block reads and rewrites them: accounts, global counters, day statistics and token state.
//!
//! [`Changes`] reads each row's prior value once (from the store, or from earlier blocks of the same batch), keeps
//! the latest value the block gives it, and at the end yields the writes and the undo data (every prior value,
//! byte for byte). Reverting a block writes its undo data back.

use crate::store::codec;
use crate::store::keys::Key;
use crate::store::records::{Undo, UndoRow};
use crate::store::tables::{id_of, Table};
use crate::store::{StoreError, StoreResult};
use std::collections::BTreeMap;

/// Where prior values come from.
pub trait PriorSource {
    /// The encoded value of `key` in the table with id `table` before the block.
    fn prior(&self, table: u8, key: &[u8]) -> StoreResult<Option<Vec<u8>>>;
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
pub struct Outcome {
    /// (table id, key, new value or deletion), in key order.
    pub writes: Vec<(u8, Vec<u8>, Option<Vec<u8>>)>,
    /// The prior values.
    pub undo: Undo,
}

impl<'s> Changes<'s> {
    /// No rows touched yet.
    pub fn new(source: &'s dyn PriorSource) -> Self {
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
        let row = self.row(id_of(T::NAME), encoded.clone())?;
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
        self.row(id_of(T::NAME), key.encode().as_ref().to_vec())?.after = after;
        Ok(())
    }

    /// The writes (rows whose value changed) and the undo data (prior values of those rows).
    pub fn finish(self) -> Outcome {
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

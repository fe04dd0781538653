//! Named queries of the name tables (ids 45–49): a node's record, names by prefix, the verified primary name of
//! addresses, and how many names point at an address.

use super::keys::{search_text, Key, NameSearchKey};
use super::records::NameRecord;
use super::tables::{AddressNames, NameSearch, Names, ReverseNames};
use super::{Direction, KeyRange, Reader, StoreResult};
use crate::chain::names::namehash;
use alloy::primitives::{Address, B256};
use std::collections::HashMap;

/// Names found by [`Reader::names_starting`], with the key to continue after when its scan ran out of budget.
pub type NamesStarting = (Vec<(NameSearchKey, NameRecord)>, Option<NameSearchKey>);

/// Most rows examined by one prefix search or one count.
const NAME_SCAN_BUDGET: usize = 1_000;

impl Reader<'_> {
    /// The record of a registry node.
    pub fn name_record(&self, node: B256) -> StoreResult<Option<NameRecord>> {
        self.get::<Names>(&node)
    }

    /// Up to `limit` named nodes whose lowercase name starts with `text` and whose address record is set, in name
    /// order, after `after`, with their search keys (a cursor can continue after any of them). When the scan's
    /// budget ran out before `limit` were found and before the names ended, the last key it examined: the search
    /// continues after it.
    pub fn names_starting(&self, text: &str, after: Option<NameSearchKey>, limit: usize) -> StoreResult<NamesStarting> {
        let (padded, len) = search_text(text);
        if len == 0 {
            return Ok((Vec::new(), None));
        }
        let mut range = KeyRange::prefix(&padded[..len]);
        if let Some(key) = after {
            range = range.after(&key.encode());
        }
        let lowercase = text.to_lowercase();
        let mut found = Vec::new();
        let mut last = None;
        for (examined, row) in self.scan::<NameSearch>(range, Direction::Forward).enumerate() {
            let (key, ()) = row?;
            if examined == NAME_SCAN_BUDGET {
                // More rows than the budget: the search continues after the last one examined.
                return Ok((found, last));
            }
            last = Some(key);
            if let Some(record) = self.get::<Names>(&key.node)? {
                // The key holds 32 bytes of the name: longer names are checked whole.
                let starts = record.name.as_deref().is_some_and(|n| n.starts_with(&lowercase));
                if starts && record.resolved.is_some() {
                    found.push((key, record));
                }
            }
            if found.len() >= limit {
                break;
            }
        }
        Ok((found, None))
    }

    /// How many names' address records hold `address` (counted up to a bound).
    pub fn names_count(&self, address: Address) -> StoreResult<usize> {
        let mut count = 0;
        for row in
            self.scan::<AddressNames>(KeyRange::prefix(address.as_slice()), Direction::Forward).take(NAME_SCAN_BUDGET)
        {
            row?;
            count += 1;
        }
        Ok(count)
    }

    /// The primary names of `addresses`: the name each one's reverse record claims, kept only when that name's
    /// address record points back at the address (a reverse record can claim any name). Two point reads per
    /// address with a reverse record, one for the others.
    pub fn primary_names(&self, addresses: &[Address]) -> StoreResult<HashMap<Address, String>> {
        let mut names = HashMap::new();
        if self.name_registry().is_none() {
            return Ok(names);
        }
        let claims = self.multi_get::<ReverseNames>(addresses)?;
        // As ENS clients do, a claim counts only when it is already in normalised form: `CAROL.eth` is another node
        // than `carol.eth`, shown beside an address it would be a look-alike of the name `carol.eth`.
        let claimed: Vec<(Address, String)> = addresses
            .iter()
            .zip(claims)
            .filter_map(|(a, claim)| Some((*a, claim.filter(|name| crate::chain::names::is_normal(name))?)))
            .collect();
        let nodes: Vec<B256> = claimed.iter().map(|(_, name)| namehash(name)).collect();
        let records = self.multi_get::<Names>(&nodes)?;
        for ((address, name), record) in claimed.into_iter().zip(records) {
            if record.is_some_and(|r| r.resolved == Some(address)) {
                names.insert(address, name);
            }
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Durability, Store, StoreOptions};

    fn record(name: &str, resolved: Option<Address>) -> NameRecord {
        NameRecord {
            name: Some(name.to_owned()),
            owner: Address::repeat_byte(1),
            resolver: Address::repeat_byte(2),
            resolved,
            expires: None,
            reverse_of: None,
            first_block: 0,
        }
    }

    /// More names without an address record than one scan examines, then one with it: a search comes back with
    /// where it stopped, and the next one from there finds the name.
    #[test]
    fn a_prefix_search_past_its_budget_says_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut batch = store.batch();
        let mut names: Vec<(String, Option<Address>)> =
            (0..NAME_SCAN_BUDGET + 5).map(|i| (format!("spam{i:05}.dev"), None)).collect();
        names.push(("spam99999.dev".into(), Some(Address::repeat_byte(9))));
        for (name, resolved) in &names {
            let node = namehash(name);
            batch.put::<NameSearch>(&NameSearchKey::new(name, node), &()).unwrap();
            batch.put::<Names>(&node, &record(name, *resolved)).unwrap();
        }
        store.write(batch, Durability::Buffered).unwrap();
        let reader = store.reader();

        let (found, stopped) = reader.names_starting("spam", None, 10).unwrap();
        assert!(found.is_empty());
        let stopped = stopped.expect("the budget ran out before the names ended");
        assert_eq!(
            stopped,
            NameSearchKey::new(&names[NAME_SCAN_BUDGET - 1].0, namehash(&names[NAME_SCAN_BUDGET - 1].0))
        );
        let (found, stopped) = reader.names_starting("spam", Some(stopped), 10).unwrap();
        let shown: Vec<_> = found.iter().map(|(_, r)| r.name.clone().unwrap()).collect();
        assert_eq!(shown, ["spam99999.dev"]);
        assert_eq!(stopped, None, "the names ended within the budget");

        // A search that finds what it asked for within the budget gives no place to go on from.
        let (found, stopped) = reader.names_starting("spam9", None, 1).unwrap();
        assert_eq!((found.len(), stopped), (1, None));
    }
}

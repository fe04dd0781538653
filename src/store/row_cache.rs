//! The row cache: rows that API readers ([`super::Store::view`]) found by key in the tables declared `cached`, kept
//! in memory so the pages people open again and again (recent blocks and transactions, busy addresses) skip
//! RocksDB's filter, index and block lookups. Absent rows are kept too (an address with no contract row). For the
//! tables declared `presence` or `places` it keeps, under a bare key prefix (an address, the first bytes of a
//! transaction hash), the first keys found under it: a write to such a table names that prefix's entry as the key
//! it wrote.
//!
//! RocksDB's own row cache would do this, but RocksDB then refuses every write batch holding a range deletion, and
//! the chain reset is one (docs/benchmarks.md §3). This one stays correct under any write by two rules:
//! - every commit removes, after it lands, each key it wrote in a cached table (a range deletion over a cached table
//!   empties the cache), holding the cache's write lock, and counts itself in `started` before and `finished` after;
//! - a reader uses the cache only while no commit has started since it was created: it keeps the count of finished
//!   commits at creation (and nothing when one was running), checks it after each lookup and, under the read lock,
//!   before each insert.
//!
//! So an entry a reader sees matches the state its snapshot holds, and a value read before a commit never outlives
//! the commit's removals. Indexer readers ([`super::Store::reader`]) never touch the cache: the writer's own lookups
//! would fill it with rows nobody asks for. On a read replica a catch-up that moved the state counts as a commit
//! that empties the cache.

use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, RwLock};

/// Longest key a cached table has (a hash); a longer one is never cached.
const MAX_KEY: usize = 32;

/// A cached row: the table's stable id and the encoded key, held inline so that a lookup compares keys without
/// following a pointer (a transaction page makes about ten lookups, most of them in memory no CPU cache holds).
#[derive(Clone, PartialEq, Eq)]
struct RowKey {
    table: u8,
    len: u8,
    bytes: [u8; MAX_KEY],
}

impl RowKey {
    fn new(table: u8, key: &[u8]) -> Option<RowKey> {
        let mut bytes = [0; MAX_KEY];
        bytes.get_mut(..key.len())?.copy_from_slice(key);
        Some(RowKey { table, len: key.len() as u8, bytes })
    }

    fn key(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl Hash for RowKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        RowRef(self.table, self.key()).hash(state)
    }
}

/// The encoded value, or `None` for a key the table does not hold.
type RowValue = Option<Arc<[u8]>>;

/// A lookup key borrowed from the caller (hashes as [`RowKey`] does).
#[derive(Hash)]
struct RowRef<'k>(u8, &'k [u8]);

impl Equivalent<RowKey> for RowRef<'_> {
    fn equivalent(&self, key: &RowKey) -> bool {
        self.0 == key.table && self.1 == key.key()
    }
}

/// Bookkeeping bytes of one entry beside its key and value (the map's slot, the `Arc`'s counts).
const ENTRY_OVERHEAD: u64 = 64;

#[derive(Clone)]
struct RowWeight;

impl Weighter<RowKey, RowValue> for RowWeight {
    fn weight(&self, _key: &RowKey, value: &RowValue) -> u64 {
        (MAX_KEY + value.as_ref().map_or(0, |v| v.len())) as u64 + ENTRY_OVERHEAD
    }
}

/// The keys a committed batch wrote in cached tables.
#[derive(Debug, Default)]
pub(super) struct Written {
    /// (table id, encoded key) of each put or delete.
    pub keys: Vec<(u8, Vec<u8>)>,
    /// A range deletion covered a cached table: every entry may be stale.
    pub everything: bool,
}

/// Rows API readers found, bounded by bytes; see the module docs for when an entry may be used.
pub(super) struct RowCache {
    rows: Option<Cache<RowKey, RowValue, RowWeight>>,
    started: AtomicU64,
    finished: AtomicU64,
    /// Inserts hold it shared; a commit's removals hold it exclusively.
    removals: RwLock<()>,
}

impl std::fmt::Debug for RowCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowCache").field("capacity", &self.capacity()).field("bytes", &self.bytes()).finish()
    }
}

/// A commit in progress: counted in `finished` (after its removals) when dropped, whether the write landed or not.
pub(super) struct Commit<'c> {
    cache: &'c RowCache,
    written: Written,
}

impl Commit<'_> {
    /// Makes the commit empty the cache, for writes whose keys are not known (a replica's catch-up).
    pub fn empties(&mut self) {
        self.written.everything = true;
    }
}

impl Drop for Commit<'_> {
    fn drop(&mut self) {
        let cache = self.cache;
        if let Some(rows) = &cache.rows {
            let _exclusive = cache.removals.write().unwrap_or_else(|p| p.into_inner());
            if self.written.everything {
                rows.clear();
            } else if !rows.is_empty() {
                for (table, key) in &self.written.keys {
                    rows.remove(&RowRef(*table, key));
                }
            }
            cache.finished.fetch_add(1, SeqCst);
        }
    }
}

impl RowCache {
    /// A cache of at most `bytes` (0: no cache; every lookup misses and nothing is kept).
    pub fn new(bytes: usize) -> Self {
        let rows = (bytes > 0).then(|| {
            let estimated_items = (bytes / 256).max(16);
            Cache::with_weighter(estimated_items, bytes as u64, RowWeight)
        });
        RowCache { rows, started: AtomicU64::new(0), finished: AtomicU64::new(0), removals: RwLock::new(()) }
    }

    /// What a new reader keeps: the count of finished commits, or `None` (no cache for this reader) while a commit
    /// runs or when there is no cache.
    pub fn epoch(&self) -> Option<u64> {
        self.rows.as_ref()?;
        let finished = self.finished.load(SeqCst);
        (self.started.load(SeqCst) == finished).then_some(finished)
    }

    /// Starts a commit that writes `written`: call before the write reaches RocksDB, drop after.
    pub fn commit(&self, written: Written) -> Commit<'_> {
        if self.rows.is_some() {
            self.started.fetch_add(1, SeqCst);
        }
        Commit { cache: self, written }
    }

    /// The cached row of `table` at `key`, for a reader of `epoch`: `None` when it is not cached or may be stale for
    /// that reader, `Some(None)` when the table is known not to hold the key.
    pub fn get(&self, epoch: Option<u64>, table: u8, key: &[u8]) -> Option<RowValue> {
        let (rows, epoch) = (self.rows.as_ref()?, epoch?);
        let value = rows.get(&RowRef(table, key))?;
        (self.started.load(SeqCst) == epoch).then_some(value)
    }

    /// Keeps what a reader of `epoch` read, unless a commit started since it was created.
    pub fn insert(&self, epoch: Option<u64>, table: u8, key: &[u8], value: Option<&[u8]>) {
        let (Some(rows), Some(epoch)) = (self.rows.as_ref(), epoch) else {
            return;
        };
        let _shared = self.removals.read().unwrap_or_else(|p| p.into_inner());
        if let Some(key) = RowKey::new(table, key).filter(|_| self.started.load(SeqCst) == epoch) {
            rows.insert(key, value.map(Arc::from));
        }
    }

    /// Bytes the entries weigh now.
    pub fn bytes(&self) -> u64 {
        self.rows.as_ref().map_or(0, |rows| rows.weight())
    }

    /// The budget in bytes (`--row-cache-mb`).
    pub fn capacity(&self) -> u64 {
        self.rows.as_ref().map_or(0, |rows| rows.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(keys: &[(u8, &[u8])]) -> Written {
        Written { keys: keys.iter().map(|(t, k)| (*t, k.to_vec())).collect(), everything: false }
    }

    #[test]
    fn a_commit_removes_the_keys_it_wrote_and_only_those() {
        let cache = RowCache::new(1 << 20);
        let epoch = cache.epoch();
        cache.insert(epoch, 3, b"a", Some(b"old"));
        cache.insert(epoch, 3, b"b", None);
        cache.insert(epoch, 4, b"a", Some(b"other table"));
        assert_eq!(cache.get(epoch, 3, b"a"), Some(Some(Arc::from(&b"old"[..]))));
        assert_eq!(cache.get(epoch, 3, b"b"), Some(None));
        drop(cache.commit(written(&[(3, b"a"), (3, b"b")])));
        let epoch = cache.epoch();
        assert_eq!(cache.get(epoch, 3, b"a"), None);
        assert_eq!(cache.get(epoch, 3, b"b"), None);
        assert_eq!(cache.get(epoch, 4, b"a"), Some(Some(Arc::from(&b"other table"[..]))));
        drop(cache.commit(Written { keys: Vec::new(), everything: true }));
        assert_eq!(cache.get(cache.epoch(), 4, b"a"), None, "a range deletion empties the cache");
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn a_reader_older_than_a_commit_neither_uses_nor_fills_the_cache() {
        let cache = RowCache::new(1 << 20);
        let before = cache.epoch();
        cache.insert(before, 3, b"kept", Some(b"v"));
        let commit = cache.commit(written(&[(3, b"x")]));
        assert_eq!(cache.epoch(), None, "no cache for a reader created while a commit runs");
        assert_eq!(cache.get(before, 3, b"kept"), None, "the commit may have changed what the entry holds");
        cache.insert(before, 3, b"x", Some(b"read before the commit"));
        drop(commit);
        let after = cache.epoch();
        assert!(after.is_some() && after != before);
        assert_eq!(cache.get(after, 3, b"x"), None, "a value read before the commit is not kept");
        assert_eq!(cache.get(before, 3, b"kept"), None);
        assert_eq!(cache.get(after, 3, b"kept"), Some(Some(Arc::from(&b"v"[..]))), "untouched keys stay");
    }

    #[test]
    fn every_cached_tables_entries_fit_inline() {
        for def in super::super::tables::ALL {
            let key = vec![7; def.key_len];
            if let Some(entry) = def.cache.entry_of(def.access, &key) {
                assert!(RowKey::new(def.id, entry).is_some(), "{}: {}-byte entries", def.name, entry.len());
            }
        }
        assert!(RowKey::new(1, &[0; MAX_KEY + 1]).is_none(), "a longer key is not cached");
    }

    #[test]
    fn the_budget_bounds_the_entries_and_zero_means_no_cache() {
        let cache = RowCache::new(64 << 10);
        let epoch = cache.epoch();
        for i in 0u32..10_000 {
            cache.insert(epoch, 1, &i.to_be_bytes(), Some(&[0u8; 100]));
        }
        assert!(cache.bytes() <= 64 << 10, "{} bytes", cache.bytes());
        assert!(cache.bytes() > 32 << 10, "{} bytes", cache.bytes());
        let off = RowCache::new(0);
        assert_eq!(off.epoch(), None);
        off.insert(Some(0), 1, b"k", Some(b"v"));
        assert_eq!(off.get(Some(0), 1, b"k"), None);
        assert_eq!((off.bytes(), off.capacity()), (0, 0));
    }
}

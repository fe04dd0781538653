//! The store: the only module that imports `rocksdb`.
//!
//! One RocksDB instance, one column family per table of `tables::ALL`. Reads go through a [`Reader`] (optionally
//! pinned to a snapshot so one API response sees one consistent state); writes go through a typed [`Batch`]
//! committed atomically, always carrying the tip row of the block(s) it writes. The `meta` table holds the schema
//! version and the open/clean state, both checked when the store opens.

mod accounts;
mod batch;
pub mod codec;
mod derived;
mod error;
#[cfg(test)]
pub(crate) mod golden;
pub mod keys;
mod names;
mod query;
pub mod records;
mod row_cache;
pub mod tables;

pub use batch::{Batch, Durability};
pub use derived::{Changes, LateRows, Overlay};
pub use error::{StoreError, StoreResult};
pub use query::{FoundTx, Order};

use crate::contracts::Knowledge;
use alloy::primitives::Address;
use keys::{Key, MetaKey};
use records::{Counters, DbState, Meta, Tip};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, BottommostLevelCompaction, Cache, ColumnFamily, ColumnFamilyDescriptor,
    CompactOptions, DBCompressionType, DataBlockIndexType, FlushOptions, Options, ReadOptions, SliceTransform,
    SnapshotWithThreadMode, DB,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tables::{Access, Cached, MetaTable, Table, TableDef};

/// One stored row as raw bytes: table name, key, value.
pub type RawRow = (&'static str, Vec<u8>, Vec<u8>);

/// Version of the on-disk layout; bump on any change to keys, values or the rows a block writes.
pub const SCHEMA_VERSION: u32 = 6;

/// How to open the store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Open without writing anything (for tools and tests inspecting a stopped daemon's data).
    pub read_only: bool,
    /// Size of the block cache shared by all column families.
    pub cache_bytes: usize,
    /// Size of the row cache of API reads (`row_cache`; 0: none).
    pub row_cache_bytes: usize,
    /// The ENS-compatible registry whose events feed the name tables (`--name-registry`); none: no names.
    pub name_registry: Option<Address>,
    /// Collect RocksDB's statistics (tickers such as compaction bytes and stall time, read through
    /// [`Store::rocksdb_property`] `rocksdb.options-statistics`); off by default, benchmarks turn it on.
    pub statistics: bool,
    /// What every table's memtables may hold together: RocksDB flushes the largest as they near it, and the
    /// catch-up writer waits for flushes past it ([`Store::wait_for_memtables`]).
    pub memtable_bytes: usize,
    /// The tables whose bottom level is compressed with a Zstd dictionary trained for each file
    /// (`--zstd-dictionary`).
    pub zstd_dictionary: ZstdDictionary,
}

/// Which tables compress their bottom level (where nearly all data ends up) with a Zstd dictionary trained for each
/// file ([`ZSTD_DICTIONARY`]). A dictionary learns what a whole file's rows share (busy senders, token contracts,
/// the rows' layout), which a 4 KiB block compressed alone cannot, and costs compaction time (docs/benchmarks.md §2).
/// It is also the daemon's `--zstd-dictionary` value; the values of the switch it was before still parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ZstdDictionary {
    /// No table: Zstd alone.
    #[value(aliases = ["false", "no", "0"])]
    Off,
    /// `txs` alone: the largest table, and the one a dictionary shrinks most (by about a fifth).
    #[default]
    Transactions,
    /// Every table whose rows repeat content: all but the address histories and `tx_hashes`, whose rows are
    /// positions under random keys (there a dictionary saves nothing and costs compaction).
    #[value(aliases = ["true", "yes", "on", "1"])]
    All,
}

impl ZstdDictionary {
    /// Whether `def`'s bottom level is compressed with a dictionary.
    fn applies_to(self, def: &TableDef) -> bool {
        match self {
            Self::Off => false,
            Self::Transactions => def.id == tables::Transactions::ID,
            Self::All => !matches!(def.access, Access::AddressHistory | Access::HashPrefix),
        }
    }
}

/// The bottom level's Zstd dictionary ([`ZstdDictionary`]), in RocksDB's options syntax: 64 KiB,
/// trained from the first 1 MiB of each file's data blocks. RocksDB holds a file's blocks uncompressed until it has
/// the dictionary, so `max_dict_buffer_bytes` bounds that buffer (without it, the whole file: 80–150 MiB more
/// resident while compacting). The Rust bindings have no setter for that bound, hence the string.
const ZSTD_DICTIONARY: &str =
    "bottommost_compression_opts={max_dict_bytes=65536;zstd_max_train_bytes=1048576;max_dict_buffer_bytes=1048576;enabled=true}";

/// The block cache's default size (the daemon's `--cache-mb`).
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// The row cache's default size (the daemon's `--row-cache-mb`).
pub const DEFAULT_ROW_CACHE_BYTES: usize = 32 << 20;

/// The memtables' default budget (the daemon's `--memtable-mb`).
pub const DEFAULT_MEMTABLE_BYTES: usize = 128 << 20;

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            read_only: false,
            cache_bytes: DEFAULT_CACHE_BYTES,
            row_cache_bytes: DEFAULT_ROW_CACHE_BYTES,
            name_registry: None,
            statistics: false,
            memtable_bytes: DEFAULT_MEMTABLE_BYTES,
            zstd_dictionary: ZstdDictionary::default(),
        }
    }
}

/// What opening found about the previous run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenState {
    /// A new, empty store.
    Created,
    /// The previous run closed the store cleanly.
    Clean,
    /// The previous run stopped without closing (crash, kill -9, power loss).
    Unclean,
}

/// The RocksDB-backed index.
#[derive(Debug)]
pub struct Store {
    db: DB,
    path: PathBuf,
    read_only: bool,
    /// Opened as a RocksDB secondary instance of another process's store ([`Store::open_secondary`]).
    secondary: bool,
    open_state: OpenState,
    closed: bool,
    writes: std::sync::Mutex<()>,
    knowledge: Arc<Knowledge>,
    name_registry: Option<Address>,
    rows: row_cache::RowCache,
    /// See [`StoreOptions::memtable_bytes`].
    memtable_budget: u64,
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Err(e) = self.mark_clean() {
            tracing::warn!(error = %e, "closing the index failed");
        }
    }
}

/// A memtable's bloom filter as a share of the write buffer (64 MiB): 0.01 is 640 KiB, ~8 bits per key of a full
/// memtable of 100-byte rows. RocksDB allocates and zeroes it whenever a memtable is created, for every table at
/// open: at 0.05 (3.2 MiB, 40 bits per key) the ~33 filtered tables zeroed ~100 MiB, most of the daemon's start
/// (0.3–0.6 s in `benches/catchup.rs`).
const MEMTABLE_BLOOM_RATIO: f64 = 0.01;

fn table_options(def: &TableDef, cache: &Cache, zstd_dictionary: ZstdDictionary) -> Options {
    let mut block = BlockBasedOptions::default();
    block.set_block_cache(cache);
    // Index and filter blocks are cached with the data (bounded memory), partitioned: a lookup caches the 4 KiB
    // partitions it touches, not a file's whole filter and index (MiBs each). Whole ones cost less per lookup
    // while they all fit in the cache (12.1k against 8.6k `/transactions/:hash` per second at 10M transactions),
    // but past ~20M they no longer do: the write path then re-read a whole filter from the file for most prior
    // values it looked up (88 % of the writer's samples at ~23M, docs/benchmarks.md §6). RocksDB's defaults keep
    // each file's top level pinned and the partitions in the cache's high-priority pool.
    block.set_cache_index_and_filter_blocks(true);
    block.set_pin_l0_filter_and_index_blocks_in_cache(true);
    block.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
    block.set_partition_filters(true);
    let mut opts = if zstd_dictionary.applies_to(def) {
        Options::default().get_options_from_string(ZSTD_DICTIONARY).expect("a valid options string")
    } else {
        Options::default()
    };
    opts.set_compression_type(DBCompressionType::Lz4);
    opts.set_bottommost_compression_type(DBCompressionType::Zstd);
    opts.set_level_compaction_dynamic_level_bytes(true);
    match def.access {
        Access::Lookup => {
            block.set_bloom_filter(10.0, false);
            // Point lookups find their key in a data block through a small hash index instead of a binary search.
            block.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
            // Most lookups while indexing miss (a new address, a first balance): a memtable bloom filter answers
            // them without walking the skip list.
            opts.set_memtable_whole_key_filtering(true);
            opts.set_memtable_prefix_bloom_ratio(MEMTABLE_BLOOM_RATIO);
        }
        Access::AddressHistory | Access::AddressRows | Access::HashPrefix => {
            let prefix = def.access.prefix_len().expect("these kinds are read by prefix");
            opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(prefix));
            block.set_bloom_filter(10.0, false);
            // The filter holds the prefixes; whole keys too where rows are read one by one.
            block.set_whole_key_filtering(def.access == Access::AddressRows);
            opts.set_memtable_whole_key_filtering(def.access != Access::HashPrefix);
            opts.set_memtable_prefix_bloom_ratio(MEMTABLE_BLOOM_RATIO);
        }
        Access::Ordered => {}
    }
    opts.set_block_based_table_factory(&block);
    opts
}

/// The block cache every table shares: RocksDB's HyperClockCache, whose lookups take no lock (a point read
/// looks up three to four blocks: filter and index partitions, then data), with its entry size estimated
/// automatically.
fn block_cache(bytes: usize) -> Cache {
    Cache::new_hyper_clock_cache(bytes, 0)
}

/// Every table's column family, sharing one block cache of `options.cache_bytes`.
fn column_families(options: &StoreOptions) -> Vec<ColumnFamilyDescriptor> {
    let cache = block_cache(options.cache_bytes);
    tables::ALL
        .iter()
        .map(|def| ColumnFamilyDescriptor::new(def.name, table_options(def, &cache, options.zstd_dictionary)))
        .collect()
}

/// RocksDB's C++ code allocates with glibc's `malloc` (Rust code uses mimalloc). glibc raises its mmap threshold
/// each time a large mapped block is freed, up to 32 MiB, after which memtable arena blocks and compaction buffers
/// come from the heap and stay resident once freed. Setting the threshold fixes it (at 1 MiB: 128 KiB kept no less),
/// so such blocks are mapped and returned to the kernel when freed: 50-80 MiB less resident set while catching up
/// far behind the head, for 6-9 % of its speed past 100M transactions, partly page faults (`docs/benchmarks.md` §6,
/// "glibc's mmap threshold").
fn keep_large_allocations_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of glibc's allocator, under its own lock; any thread may call it at any
    // time. A refusal (0) leaves glibc's default, which only means a larger resident set.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// The tip a meta row holds, checked against the kind of tip its key names.
fn tip_row(key: MetaKey, row: Option<Meta>) -> StoreResult<Option<Tip>> {
    match (key, row) {
        (_, None) => Ok(None),
        (MetaKey::Tip, Some(Meta::Tip(tip)))
        | (MetaKey::TraceTip, Some(Meta::TraceTip(tip)))
        | (MetaKey::BalanceTip, Some(Meta::BalanceTip(tip))) => Ok(Some(tip)),
        (_, Some(other)) => Err(StoreError::Inconsistent(format!("{key:?} row holds {other:?}"))),
    }
}

impl Store {
    /// Opens (or creates) the store at `path`, checking the schema version and recording the open state.
    pub fn open(path: &Path, options: &StoreOptions) -> StoreResult<Store> {
        keep_large_allocations_mapped();
        if !options.read_only && !path.exists() {
            // Owner-only: the store holds account data (private tags, watchlists, custom ABIs).
            std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
                .create(path)
                .map_err(|e| StoreError::Dir(path.to_owned(), e))?;
        }
        let mut db_opts = Options::default();
        db_opts.create_if_missing(!options.read_only);
        db_opts.create_missing_column_families(!options.read_only);
        db_opts.increase_parallelism(2);
        db_opts.set_max_background_jobs(2);
        db_opts.set_keep_log_file_num(4);
        db_opts.set_bytes_per_sync(1 << 20);
        // All memtables share one budget (the largest is flushed early): without a shared limit each busy table
        // fills its own 64 MiB pair, and catching up a million transactions peaked 90 MiB higher.
        db_opts.set_db_write_buffer_size(options.memtable_bytes);
        if options.statistics {
            db_opts.enable_statistics();
        }
        let cfs = column_families(options);
        let db = if options.read_only {
            DB::open_cf_descriptors_read_only(&db_opts, path, cfs, false)?
        } else {
            // A directory another process (or this one) has open: RocksDB says so in these words (other errors about
            // the lock file, such as one that cannot be opened, are I/O). No probe of the lock file comes first: a
            // process that closes any descriptor of a file drops all its POSIX locks on it, RocksDB's included.
            DB::open_cf_descriptors(&db_opts, path, cfs).map_err(|e| {
                let text = e.to_string();
                if text.contains("lock hold by current process") || text.contains("While lock file") {
                    StoreError::InUse(path.to_path_buf())
                } else {
                    e.into()
                }
            })?
        };
        Store::checked(db, path, options.read_only, false, options)
    }

    /// The store over an opened `db`, once its schema version and open state check out.
    fn checked(db: DB, path: &Path, read_only: bool, secondary: bool, options: &StoreOptions) -> StoreResult<Store> {
        let mut store = Store {
            db,
            path: path.to_path_buf(),
            read_only,
            secondary,
            open_state: OpenState::Created,
            closed: true,
            writes: std::sync::Mutex::new(()),
            knowledge: Arc::default(),
            name_registry: options.name_registry,
            rows: row_cache::RowCache::new(options.row_cache_bytes),
            memtable_budget: options.memtable_bytes as u64,
        };
        // `closed` stays set until the checks pass, so a refused store is left exactly as it was found.
        store.open_state = store.check_meta()?;
        store.closed = false;
        Ok(store)
    }

    /// Whether `path` holds a store (RocksDB's `CURRENT` file names its manifest).
    pub fn holds_store(path: &Path) -> bool {
        path.join("CURRENT").is_file()
    }

    /// Opens the store at `path`, which must already hold one: for commands that act on an existing data
    /// directory (a snapshot, account tokens), where a mistyped path must not become a new empty store.
    pub fn open_existing(path: &Path, options: &StoreOptions) -> StoreResult<Store> {
        if !Store::holds_store(path) {
            return Err(StoreError::NotAStore(path.to_path_buf()));
        }
        Store::open(path, options)
    }

    /// Opens the store of a running (or stopped) primary at `primary` as a RocksDB secondary instance: read-only,
    /// never locking or writing the primary's directory, with its own info log and state in `secondary_dir`. It
    /// sees what the primary had written when it opened; [`Store::catch_up`] moves it to the primary's latest
    /// state. The schema version is checked as for [`Store::open`].
    pub fn open_secondary(primary: &Path, secondary_dir: &Path, options: &StoreOptions) -> StoreResult<Store> {
        if !Store::holds_store(primary) {
            return Err(StoreError::NotAStore(primary.to_path_buf()));
        }
        keep_large_allocations_mapped();
        let mut db_opts = Options::default();
        // A secondary keeps every table file open: the primary's compactions delete files it may still read.
        db_opts.set_max_open_files(-1);
        // RocksDB opens the table files of each version a catch-up builds with this many threads, starting them
        // anew every time, even for no file: with the default 16 a catch-up took 45 ms at the median beside a
        // primary indexing a block every 250 ms, and an idle replica used 65-70 % of a core (docs/benchmarks.md §5).
        db_opts.set_max_file_opening_threads(1);
        db_opts.set_keep_log_file_num(2);
        let cfs = column_families(options);
        let db = DB::open_cf_descriptors_as_secondary(&db_opts, primary, secondary_dir, cfs)?;
        Store::checked(db, primary, true, true, options)
    }

    /// Whether this is a secondary instance (see [`Store::open_secondary`]).
    pub fn is_secondary(&self) -> bool {
        self.secondary
    }

    /// Moves a secondary instance to the primary's latest committed state (RocksDB's
    /// `TryCatchUpWithPrimary`: new table files and the primary's write-ahead log since the last call). Every
    /// batch of the primary becomes visible whole. Does nothing on a primary.
    ///
    /// To the row cache a catch-up is a commit of unknown keys: it empties the cache when it moved the state.
    /// Returns whether it did (new writes of the primary became visible).
    pub fn catch_up(&self) -> StoreResult<bool> {
        if !self.secondary {
            return Ok(false);
        }
        let mut commit = self.rows.commit(row_cache::Written::default());
        let before = self.db.latest_sequence_number();
        let caught_up = self.db.try_catch_up_with_primary();
        let moved = self.db.latest_sequence_number() != before;
        if caught_up.is_err() || moved {
            commit.empties();
        }
        caught_up?;
        Ok(moved)
    }

    fn check_meta(&self) -> StoreResult<OpenState> {
        let reader = self.reader();
        let state = match reader.get::<MetaTable>(&MetaKey::SchemaVersion)? {
            None if self.read_only => return Err(StoreError::Inconsistent("no schema version row".into())),
            None => OpenState::Created,
            Some(Meta::SchemaVersion(found)) if found != SCHEMA_VERSION => {
                return Err(StoreError::SchemaMismatch { found, expected: SCHEMA_VERSION })
            }
            Some(Meta::SchemaVersion(_)) => match reader.get::<MetaTable>(&MetaKey::DbState)? {
                Some(Meta::DbState(DbState::Clean)) => OpenState::Clean,
                _ => OpenState::Unclean,
            },
            Some(other) => return Err(StoreError::Inconsistent(format!("schema version row holds {other:?}"))),
        };
        if !self.read_only {
            let mut batch = self.batch();
            batch.put_meta(&Meta::SchemaVersion(SCHEMA_VERSION))?;
            batch.put_meta(&Meta::DbState(DbState::Open))?;
            self.write(batch, Durability::Sync)?;
        }
        Ok(state)
    }

    /// What opening found about the previous run.
    pub fn open_state(&self) -> OpenState {
        self.open_state
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Marks the store cleanly closed and flushes memtables, reporting failures. Dropping the store does the same,
    /// logging failures; only a crash or kill leaves it marked open ([`OpenState::Unclean`] at the next open).
    pub fn close(mut self) -> StoreResult<()> {
        self.mark_clean()
    }

    fn mark_clean(&mut self) -> StoreResult<()> {
        if self.read_only || self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut batch = self.batch();
        batch.put_meta(&Meta::DbState(DbState::Clean))?;
        self.write(batch, Durability::Sync)?;
        self.db.flush()?;
        Ok(())
    }

    /// Drops the store as a crash would: without marking it clean (for tests of the recovery path).
    #[cfg(test)]
    fn crash(mut self) {
        self.closed = true;
    }

    fn cf(&self, name: &'static str) -> &ColumnFamily {
        self.db.cf_handle(name).expect("every table's column family is created at open")
    }

    /// A reader of the latest committed data.
    pub fn reader(&self) -> Reader<'_> {
        Reader { store: self, snapshot: None, deadline: None, epoch: None }
    }

    /// A reader pinned to a snapshot: every read sees the same committed state.
    ///
    /// A secondary instance has no snapshots (RocksDB refuses them there): its readers read the latest caught-up
    /// state, so a catch-up during a response can show it the next committed state (see `docs/operations.md`).
    ///
    /// It reads through the row cache: the cache's epoch is taken before the snapshot (see `row_cache`).
    pub fn view(&self) -> Reader<'_> {
        let epoch = self.rows.epoch();
        let snapshot = (!self.secondary).then(|| self.db.snapshot());
        Reader { store: self, snapshot, deadline: None, epoch }
    }

    /// Serializes read-check-write sequences of different writers (the follower, the trace pass, the code and
    /// balance writers): a writer holds this while it reads what its batch depends on and commits the batch.
    pub fn lock_writes(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What is known about contract code beyond the chain (local artifacts matched with deployed code): kept with
    /// the store so every reader sees the daemon's one set.
    pub fn knowledge(&self) -> &Arc<Knowledge> {
        &self.knowledge
    }

    /// The name registry whose events the indexer derives names from.
    pub fn name_registry(&self) -> Option<Address> {
        self.name_registry
    }

    /// Checks this process's name registry against the one the name tables were derived from: records it when
    /// none is recorded (a new store, or one written before the record existed), and returns the recorded one when
    /// it differs (the tables then hold another registry's names, or none of this one's earlier names).
    pub fn check_name_registry(&self) -> StoreResult<Option<Option<Address>>> {
        match self.reader().meta(MetaKey::NameRegistry)? {
            Some(Meta::NameRegistry(indexed)) => Ok((indexed != self.name_registry).then_some(indexed)),
            None => {
                let mut batch = self.batch();
                batch.put_meta(&Meta::NameRegistry(self.name_registry))?;
                self.write(batch, Durability::Sync)?;
                Ok(None)
            }
            Some(other) => Err(StoreError::Inconsistent(format!("name registry row holds {other:?}"))),
        }
    }

    /// A new, empty write batch.
    pub fn batch(&self) -> Batch<'_> {
        Batch::new(self)
    }

    /// Commits a batch atomically.
    pub fn write(&self, batch: Batch<'_>, durability: Durability) -> StoreResult<()> {
        if self.secondary {
            return Err(StoreError::Inconsistent("a read replica never writes: writes go to the primary".into()));
        }
        let mut opts = rocksdb::WriteOptions::default();
        opts.set_sync(durability == Durability::Sync);
        let (batch, written) = batch.into_parts();
        let _commit = self.rows.commit(written);
        self.db.write_opt(batch, &opts)?;
        Ok(())
    }

    /// Blocks until the memtables hold no more than their budget, flushing the tables whose memtables are largest
    /// (each at most once) and waiting for them: the catch-up writer calls it before each chunk. RocksDB's budget
    /// only starts flushes; on a machine whose cores are busy, flushing fell behind writing and the memtables
    /// waiting for it grew to nearly twice the budget (docs/benchmarks.md §6). Waiting here turns that backlog
    /// into the writer's time. A flush itself first waits until it would not stall writes (level 0 is not full),
    /// so this can also wait for compaction. Not for a thread that must not block.
    pub fn wait_for_memtables(&self) -> StoreResult<()> {
        let memtables = |name: &'static str| -> StoreResult<u64> {
            Ok(self.db.property_int_value_cf(self.cf(name), "rocksdb.cur-size-all-mem-tables")?.unwrap_or(0))
        };
        let mut sizes =
            tables::ALL.iter().map(|def| Ok((memtables(def.name)?, def.name))).collect::<StoreResult<Vec<_>>>()?;
        let mut total: u64 = sizes.iter().map(|(size, _)| size).sum();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let mut flush = FlushOptions::default();
        flush.set_wait(true);
        for (size, name) in sizes {
            if total <= self.memtable_budget {
                break;
            }
            self.db.flush_cf_opt(self.cf(name), &flush)?;
            total = total - size + memtables(name)?;
        }
        Ok(())
    }

    /// Approximate on-disk size of every column family (live SST files), for stats and benchmarks.
    pub fn disk_usage(&self) -> StoreResult<Vec<(&'static str, u64)>> {
        let mut out = Vec::new();
        for def in tables::ALL {
            let size = self.db.property_int_value_cf(self.cf(def.name), "rocksdb.total-sst-files-size")?.unwrap_or(0);
            out.push((def.name, size));
        }
        Ok(out)
    }

    /// Where each table's SST bytes go (data blocks, index, filter), from RocksDB's aggregated table properties,
    /// for benchmarks.
    pub fn sst_parts(&self) -> StoreResult<Vec<(&'static str, SstParts)>> {
        let mut out = Vec::new();
        for def in tables::ALL {
            let text = self.db.property_value_cf(self.cf(def.name), "rocksdb.aggregated-table-properties")?;
            out.push((def.name, SstParts::parse(text.as_deref().unwrap_or(""))));
        }
        Ok(out)
    }

    /// Size on disk and RocksDB's stall and compaction figures, summed over every table (for `/metrics`).
    pub fn disk_figures(&self) -> StoreResult<DiskFigures> {
        let db_int = |name: &str| -> StoreResult<u64> { Ok(self.db.property_int_value(name)?.unwrap_or(0)) };
        let sum_cfs = |name: &str| self.rocksdb_property_sum(name);
        Ok(DiskFigures {
            disk_bytes: directory_bytes(&self.path),
            sst_bytes: sum_cfs("rocksdb.total-sst-files-size")?,
            memtable_bytes: sum_cfs("rocksdb.cur-size-all-mem-tables")?,
            pending_compaction_bytes: sum_cfs("rocksdb.estimate-pending-compaction-bytes")?,
            running_compactions: db_int("rocksdb.num-running-compactions")?,
            running_flushes: db_int("rocksdb.num-running-flushes")?,
            write_stopped: db_int("rocksdb.is-write-stopped")? != 0,
            delayed_write_rate: db_int("rocksdb.actual-delayed-write-rate")?,
            block_cache_bytes: self.block_cache_property("rocksdb.block-cache-usage")?,
            block_cache_capacity: self.block_cache_property("rocksdb.block-cache-capacity")?,
            row_cache_bytes: self.rows.bytes(),
            row_cache_capacity: self.rows.capacity(),
        })
    }

    /// A property of the block cache every table shares (read through the first table).
    fn block_cache_property(&self, name: &str) -> StoreResult<u64> {
        Ok(self.db.property_int_value_cf(self.cf(tables::ALL[0].name), name)?.unwrap_or(0))
    }

    /// A RocksDB property of the whole database as text (e.g. `rocksdb.stats`, `rocksdb.options-statistics`), for
    /// benchmarks that report RocksDB's own figures.
    pub fn rocksdb_property(&self, name: &str) -> StoreResult<Option<String>> {
        Ok(self.db.property_value(name)?)
    }

    /// An integer RocksDB property summed over every table (e.g. `rocksdb.live-sst-files-size`), for benchmarks.
    pub fn rocksdb_property_sum(&self, name: &str) -> StoreResult<u64> {
        let mut total = 0u64;
        for def in tables::ALL {
            total = total.saturating_add(self.db.property_int_value_cf(self.cf(def.name), name)?.unwrap_or(0));
        }
        Ok(total)
    }

    /// Every row of every table as raw bytes, in key order (for tests that compare whole stores, and tools).
    pub fn raw_rows(&self) -> StoreResult<Vec<RawRow>> {
        let mut out = Vec::new();
        for def in tables::ALL {
            let mut iter = self.db.raw_iterator_cf(self.cf(def.name));
            iter.seek_to_first();
            while iter.valid() {
                out.push((
                    def.name,
                    iter.key().unwrap_or_default().to_vec(),
                    iter.value().unwrap_or_default().to_vec(),
                ));
                iter.next();
            }
            iter.status()?;
        }
        Ok(out)
    }

    /// Writes a consistent copy of the store into the new directory `to` (a RocksDB checkpoint: memtables flushed,
    /// SST files hard-linked when `to` is on the same file system), owner-only since account data is copied too.
    pub fn checkpoint(&self, to: &Path) -> StoreResult<()> {
        let checkpoint = rocksdb::checkpoint::Checkpoint::new(&self.db)?;
        checkpoint.create_checkpoint(to)?;
        std::fs::set_permissions(to, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(|e| StoreError::Dir(to.to_owned(), e))?;
        Ok(())
    }

    /// Flushes memtables and compacts every column family fully (benchmarks, after bulk loads), the bottom level
    /// included: files a compaction only moved there keep the compression they were written with (LZ4 above the
    /// bottom level), which left `txs` at 94 B/tx in some runs of `benches/write_path.rs` and at 83 (68 with its
    /// dictionary) in others.
    pub fn compact(&self) -> StoreResult<()> {
        let mut options = CompactOptions::default();
        options.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        for def in tables::ALL {
            self.db.flush_cf(self.cf(def.name))?;
            self.db.compact_range_cf_opt(self.cf(def.name), None::<&[u8]>, None::<&[u8]>, &options);
        }
        Ok(())
    }
}

/// Size and RocksDB health figures of the store, from [`Store::disk_figures`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskFigures {
    /// Bytes of every file in the data directory (SST files, WAL, manifest, logs).
    pub disk_bytes: u64,
    /// Bytes of live SST files.
    pub sst_bytes: u64,
    /// Bytes of memtables.
    pub memtable_bytes: u64,
    /// Bytes compaction still has to rewrite (RocksDB's estimate).
    pub pending_compaction_bytes: u64,
    /// Compactions running now.
    pub running_compactions: u64,
    /// Memtable flushes running now.
    pub running_flushes: u64,
    /// Whether RocksDB stops writes now (too many level-0 files or pending compaction bytes).
    pub write_stopped: bool,
    /// Bytes per second RocksDB slows writes to while it delays them (0: not delayed).
    pub delayed_write_rate: u64,
    /// Bytes the block cache holds now.
    pub block_cache_bytes: u64,
    /// The block cache's size (`--cache-mb`).
    pub block_cache_capacity: u64,
    /// Bytes the row cache's entries weigh now.
    pub row_cache_bytes: u64,
    /// The row cache's size (`--row-cache-mb`).
    pub row_cache_capacity: u64,
}

/// A table's SST bytes by kind of block ([`Store::sst_parts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SstParts {
    /// Data blocks, compressed.
    pub data: u64,
    /// Index blocks (both levels of a partitioned index), as RocksDB counts them: before their compression, so the
    /// three parts can add up to a little more than the files.
    pub index: u64,
    /// Filter blocks (both levels of a partitioned filter).
    pub filter: u64,
    /// Rows (entries) in the files.
    pub entries: u64,
}

impl SstParts {
    /// Reads RocksDB's `TableProperties` text (`name=value; name=value; ...`); a name it lacks counts 0.
    fn parse(text: &str) -> SstParts {
        let mut parts = SstParts::default();
        for (name, value) in text.split(';').filter_map(|field| field.split_once('=')) {
            let Ok(value) = value.trim().parse::<u64>() else { continue };
            let name = name.trim();
            match name {
                "data block size" => parts.data = value,
                "filter block size" => parts.filter = value,
                "# entries" => parts.entries = value,
                _ if name.starts_with("index block size") => parts.index = value,
                _ => {}
            }
        }
        parts
    }
}

/// Bytes of the files under `dir` (one level of subdirectories deep; RocksDB keeps its files flat).
fn directory_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            if meta.is_dir() {
                let inner = std::fs::read_dir(entry.path()).ok()?;
                Some(inner.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
            } else {
                Some(meta.len())
            }
        })
        .sum()
}

/// A key range of one table: `lower` inclusive, `upper` exclusive (`None`: to the end).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KeyRange {
    lower: Vec<u8>,
    upper: Option<Vec<u8>>,
    prefix: bool,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> Self {
        KeyRange::default()
    }

    /// Every key starting with `prefix`.
    pub fn prefix(prefix: &[u8]) -> Self {
        KeyRange { lower: prefix.to_vec(), upper: next_prefix(prefix), prefix: true }
    }

    /// Keys in `[lower, upper)`.
    pub fn between(lower: &[u8], upper: &[u8]) -> Self {
        KeyRange { lower: lower.to_vec(), upper: Some(upper.to_vec()), prefix: false }
    }

    /// Narrows the range to keys strictly after `key` (for cursors: the last key already shown).
    pub fn after(mut self, key: &[u8]) -> Self {
        let mut successor = key.to_vec();
        successor.push(0);
        if successor > self.lower {
            self.lower = successor;
        }
        self
    }

    /// Narrows the range to keys strictly before `key`.
    pub fn before(mut self, key: &[u8]) -> Self {
        if self.upper.as_deref().is_none_or(|u| key < u) {
            self.upper = Some(key.to_vec());
        }
        self
    }
}

/// The smallest byte string greater than every string starting with `prefix`, if any.
fn next_prefix(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xff {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// Scan direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Ascending key order (for newest-first tables: newest first).
    Forward,
    /// Descending key order.
    Reverse,
}

/// Reads typed rows, at the latest state or at a snapshot; scans give up once a deadline passes.
pub struct Reader<'a> {
    store: &'a Store,
    snapshot: Option<SnapshotWithThreadMode<'a, DB>>,
    deadline: Option<Instant>,
    /// The row cache's epoch when the reader was made (`None`: it does not use the cache).
    epoch: Option<u64>,
}

/// The first keys of a table under a prefix ([`Reader::under`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Under<K> {
    /// The keys, in key order.
    pub keys: Vec<K>,
    /// Whether more keys follow them.
    pub more: bool,
}

/// Rows a scan reads between two looks at the clock.
const DEADLINE_EVERY: u32 = 256;

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("snapshot", &self.snapshot.is_some()).finish()
    }
}

fn decode_value<T: Table>(key: &[u8], bytes: &[u8]) -> StoreResult<T::Value> {
    codec::decode(bytes).map_err(|source| StoreError::Decode { table: T::NAME, key: alloy::hex::encode(key), source })
}

/// A row read by key, decoded when present.
fn decode_row<T: Table>(key: &[u8], row: Option<&[u8]>) -> StoreResult<Option<T::Value>> {
    row.map(|bytes| decode_value::<T>(key, bytes)).transpose()
}

impl<'a> Reader<'a> {
    /// The store's contract knowledge (see [`Store::knowledge`]).
    pub fn knowledge(&self) -> &'a Knowledge {
        &self.store.knowledge
    }

    /// The store's name registry (see [`Store::name_registry`]).
    pub fn name_registry(&self) -> Option<Address> {
        self.store.name_registry
    }

    /// The same reader, whose scans end with [`StoreError::Deadline`] once `deadline` has passed (a request's
    /// time limit reaches into its scans).
    pub fn until(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    fn read_options(&self) -> ReadOptions {
        let mut opts = ReadOptions::default();
        if let Some(snapshot) = &self.snapshot {
            opts.set_snapshot(snapshot);
        }
        opts
    }

    /// One row.
    pub fn get<T: Table>(&self, key: &T::Key) -> StoreResult<Option<T::Value>> {
        let key = key.encode();
        let key = key.as_ref();
        let epoch = self.epoch.filter(|_| T::CACHE == Cached::Rows);
        if let Some(row) = self.store.rows.get(epoch, T::ID, key) {
            return decode_row::<T>(key, row.as_deref());
        }
        let cf = self.store.cf(T::NAME);
        let row = self.store.db.get_pinned_cf_opt(cf, key, &self.read_options())?;
        self.store.rows.insert(epoch, T::ID, key, row.as_deref());
        decode_row::<T>(key, row.as_deref())
    }

    /// One already encoded row of the table with stable id `table`.
    fn get_raw(&self, table: u8, key: &[u8]) -> StoreResult<Option<Vec<u8>>> {
        let def = tables::by_id(table).ok_or_else(|| StoreError::Inconsistent(format!("no table with id {table}")))?;
        Ok(self.store.db.get_cf_opt(self.store.cf(def.name), key, &self.read_options())?)
    }

    /// Several rows of one table in one call, in the order of `keys`.
    pub fn multi_get<T: Table>(&self, keys: &[T::Key]) -> StoreResult<Vec<Option<T::Value>>> {
        let encoded: Vec<_> = keys.iter().map(|k| k.encode()).collect();
        let epoch = self.epoch.filter(|_| T::CACHE == Cached::Rows);
        let cached: Vec<_> = encoded.iter().map(|key| self.store.rows.get(epoch, T::ID, key.as_ref())).collect();
        let missed = encoded.iter().zip(&cached).filter(|(_, row)| row.is_none()).map(|(key, _)| key.as_ref());
        let mut found = if cached.iter().any(Option::is_none) {
            self.store.db.batched_multi_get_cf_opt(self.store.cf(T::NAME), missed, false, &self.read_options())
        } else {
            Vec::new()
        }
        .into_iter();
        encoded
            .iter()
            .zip(cached)
            .map(|(key, cached)| {
                let key = key.as_ref();
                if let Some(row) = cached {
                    return decode_row::<T>(key, row.as_deref());
                }
                let row = found.next().ok_or_else(|| StoreError::Inconsistent("a key went unread".into()))??;
                self.store.rows.insert(epoch, T::ID, key, row.as_deref());
                decode_row::<T>(key, row.as_deref())
            })
            .collect()
    }

    /// Whether `T` holds any row under `address` (every key of `T` starts with an address). The answer is kept in
    /// the row cache, so pages asking it of the same addresses again (an address's tabs, the contract flags of
    /// a list's addresses) skip the iterator.
    pub fn holds_any<T: Table>(&self, address: &Address) -> StoreResult<bool> {
        let under = self.under::<T>(address.as_slice())?;
        Ok(under.more || !under.keys.is_empty())
    }

    /// The first keys of `T` under `prefix` (as long as `T`'s prefix extractor cuts), as many as `T`'s
    /// [`Cached::Prefix`] keeps, and whether there are more. The answer is kept in the row cache: a commit that
    /// writes any key under the prefix stales it.
    pub fn under<T: Table>(&self, prefix: &[u8]) -> StoreResult<Under<T::Key>> {
        let Cached::Prefix { keys: most } = T::CACHE else {
            return Err(StoreError::Inconsistent(format!("{} keeps no keys by prefix", T::NAME)));
        };
        if T::ACCESS.prefix_len() != Some(prefix.len()) {
            return Err(StoreError::Inconsistent(format!("a {}-byte prefix of {}", prefix.len(), T::NAME)));
        }
        // An entry: 1 when there are more keys, then the rest of each key after the prefix.
        let decode = |entry: &[u8]| -> StoreResult<Under<T::Key>> {
            let (more, rests) = entry.split_first().ok_or_else(|| StoreError::Inconsistent("an empty entry".into()))?;
            let keys = rests
                .chunks(T::Key::LEN - prefix.len())
                .map(|rest| {
                    T::Key::decode(&[prefix, rest].concat())
                        .map_err(|source| StoreError::Key { table: T::NAME, source })
                })
                .collect::<StoreResult<_>>()?;
            Ok(Under { keys, more: *more == 1 })
        };
        if let Some(Some(entry)) = self.store.rows.get(self.epoch, T::ID, prefix) {
            return decode(&entry);
        }
        let mut entry = vec![0];
        for (found, row) in self.scan::<T>(KeyRange::prefix(prefix), Direction::Forward).take(most + 1).enumerate() {
            if found == most {
                entry[0] = 1;
                break;
            }
            entry.extend_from_slice(&row?.0.encode().as_ref()[prefix.len()..]);
        }
        self.store.rows.insert(self.epoch, T::ID, prefix, Some(&entry));
        decode(&entry)
    }

    /// Iterates the rows of `range` in `direction`.
    fn scan<T: Table>(&self, range: KeyRange, direction: Direction) -> Scan<'_, T> {
        let mut opts = self.read_options();
        // Prefix mode (and its bloom filter) fits forward scans inside one prefix; a reverse scan starts from the
        // next prefix, so it needs total order.
        if range.prefix && T::ACCESS.prefix_len() == Some(range.lower.len()) && direction == Direction::Forward {
            opts.set_prefix_same_as_start(true);
        } else {
            opts.set_total_order_seek(true);
        }
        opts.set_iterate_lower_bound(range.lower.clone());
        if let Some(upper) = &range.upper {
            opts.set_iterate_upper_bound(upper.clone());
        }
        let mut iter = self.store.db.raw_iterator_cf_opt(self.store.cf(T::NAME), opts);
        match direction {
            Direction::Forward => iter.seek(&range.lower),
            Direction::Reverse => match &range.upper {
                Some(upper) => iter.seek_for_prev(upper),
                None => iter.seek_to_last(),
            },
        }
        // `seek_for_prev(upper)` may land on `upper` itself, which is outside the range.
        if direction == Direction::Reverse
            && iter.valid()
            && Some(iter.key().unwrap_or_default()) == range.upper.as_deref()
        {
            iter.prev();
        }
        Scan { iter, direction, done: false, deadline: self.deadline, read: 0, table: std::marker::PhantomData }
    }

    /// Reads a typed meta row.
    pub fn meta(&self, key: MetaKey) -> StoreResult<Option<Meta>> {
        self.get::<MetaTable>(&key)
    }

    /// The highest indexed block.
    pub fn tip(&self) -> StoreResult<Option<Tip>> {
        tip_row(MetaKey::Tip, self.meta(MetaKey::Tip)?)
    }

    /// Global counters (zero before the first block).
    pub fn counters(&self) -> StoreResult<Counters> {
        Ok(self.stored_counters()?.unwrap_or_default())
    }

    /// The counters row, if one was written.
    pub fn stored_counters(&self) -> StoreResult<Option<Counters>> {
        match self.meta(MetaKey::Counters)? {
            Some(Meta::Counters(c)) => Ok(Some(c)),
            None => Ok(None),
            Some(other) => Err(StoreError::Inconsistent(format!("counters row holds {other:?}"))),
        }
    }

    /// The highest block whose call traces are stored.
    pub fn trace_tip(&self) -> StoreResult<Option<Tip>> {
        tip_row(MetaKey::TraceTip, self.meta(MetaKey::TraceTip)?)
    }

    /// The highest block up to which every block's native balances were asked for (the balance writer's).
    pub fn balance_tip(&self) -> StoreResult<Option<Tip>> {
        tip_row(MetaKey::BalanceTip, self.meta(MetaKey::BalanceTip)?)
    }

    /// The indexed tip and the trace tip, in one read.
    pub fn tips(&self) -> StoreResult<(Option<Tip>, Option<Tip>)> {
        let keys = [MetaKey::Tip, MetaKey::TraceTip];
        let mut rows = self.multi_get::<MetaTable>(&keys)?.into_iter();
        let mut next = |key| tip_row(key, rows.next().flatten());
        Ok((next(keys[0])?, next(keys[1])?))
    }

    /// Chain id and genesis hash of the indexed chain, once known.
    pub fn chain_identity(&self) -> StoreResult<Option<(u64, alloy::primitives::B256)>> {
        match (self.meta(MetaKey::ChainId)?, self.meta(MetaKey::Genesis)?) {
            (Some(Meta::ChainId(id)), Some(Meta::Genesis(hash))) => Ok(Some((id, hash))),
            (None, None) => Ok(None),
            other => Err(StoreError::Inconsistent(format!("chain identity rows hold {other:?}"))),
        }
    }
}

/// A typed iterator over one table.
pub struct Scan<'r, T: Table> {
    iter: rocksdb::DBRawIteratorWithThreadMode<'r, DB>,
    direction: Direction,
    done: bool,
    deadline: Option<Instant>,
    read: u32,
    table: std::marker::PhantomData<T>,
}

impl<T: Table> std::fmt::Debug for Scan<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan").field("table", &T::NAME).field("direction", &self.direction).finish()
    }
}

impl<T: Table> Iterator for Scan<'_, T> {
    type Item = StoreResult<(T::Key, T::Value)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.read = self.read.wrapping_add(1);
        if self.read.is_multiple_of(DEADLINE_EVERY) && self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.done = true;
            return Some(Err(StoreError::Deadline));
        }
        if !self.iter.valid() {
            self.done = true;
            return self.iter.status().err().map(|e| Err(e.into()));
        }
        let (key, value) = (self.iter.key().unwrap_or_default(), self.iter.value().unwrap_or_default());
        let item = T::Key::decode(key)
            .map_err(|source| StoreError::Key { table: T::NAME, source })
            .and_then(|k| Ok((k, decode_value::<T>(key, value)?)));
        match self.direction {
            Direction::Forward => self.iter.next(),
            Direction::Reverse => self.iter.prev(),
        }
        if item.is_err() {
            self.done = true;
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keys::BlockKey;
    use tables::Headers;

    /// A new data directory and a checkpoint are owner-only (account data is in them); an existing directory keeps
    /// the mode its operator gave it.
    #[test]
    fn new_store_directories_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("new/data");
        let store = Store::open(&data, &StoreOptions::default()).unwrap();
        assert_eq!(mode(&data), 0o700);
        let copy = dir.path().join("copy");
        store.checkpoint(&copy).unwrap();
        assert_eq!(mode(&copy), 0o700);
        drop(store);
        let existing = dir.path().join("existing");
        std::fs::create_dir(&existing).unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o750)).unwrap();
        drop(Store::open(&existing, &StoreOptions::default()).unwrap());
        assert_eq!(mode(&existing), 0o750);
    }

    #[test]
    fn a_store_remembers_the_name_registry_its_names_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let with = |registry: Option<Address>| {
            let store =
                Store::open(dir.path(), &StoreOptions { name_registry: registry, ..Default::default() }).unwrap();
            store.check_name_registry().unwrap()
        };
        let (first, second) = (Address::repeat_byte(1), Address::repeat_byte(2));
        assert_eq!(with(Some(first)), None, "recorded at the first start");
        assert_eq!(with(Some(first)), None);
        assert_eq!(with(Some(second)), Some(Some(first)), "another registry: the recorded one");
        assert_eq!(with(None), Some(Some(first)), "none now: still the recorded one");
        Store::clear_chain_data(dir.path()).unwrap();
        assert_eq!(with(Some(second)), None, "a reindex forgets it");
        assert_eq!(with(Some(second)), None);
    }

    #[test]
    fn a_directory_another_process_holds_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("LOCK");
        std::fs::write(&lock, b"").unwrap();
        // Python's `lockf` takes the same POSIX record lock RocksDB takes, from another process.
        let script = "import fcntl,sys,time\nf=open(sys.argv[1],'r+')\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint('held',flush=True)\ntime.sleep(60)";
        let mut holder = std::process::Command::new("python3")
            .args(["-c", script, lock.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 (scripts/setup installs it)");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "held");
        let Err(refused) = Store::open(dir.path(), &StoreOptions::default()) else { panic!("opened a locked store") };
        assert!(matches!(refused, StoreError::InUse(_)), "{refused}");
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(Store::open(dir.path(), &StoreOptions::default()).is_ok(), "free once the holder is gone");
    }

    /// Reverting block `n` moves a late writer's tip to `n - 1` (the block's parent) only when the tip had reached
    /// `n`; below block 1 the tip row goes; the follower's own tip is not a late writer's.
    #[test]
    fn a_revert_lowers_a_late_writers_tip_only_when_it_had_passed_the_block() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let parent = alloy::primitives::B256::repeat_byte(4);
        let set = |key: MetaKey, number: u64| {
            let mut batch = store.batch();
            let tip = Tip { number, hash: alloy::primitives::B256::repeat_byte(9) };
            batch
                .put_meta(&if key == MetaKey::TraceTip { Meta::TraceTip(tip) } else { Meta::BalanceTip(tip) })
                .unwrap();
            store.write(batch, Durability::Buffered).unwrap();
        };
        let lower = |key: MetaKey, block: u64| {
            let mut batch = store.batch();
            let lowered = batch.lower_tip_below(&store.reader(), key, block, parent);
            store.write(batch, Durability::Buffered).unwrap();
            lowered
        };
        for key in [MetaKey::TraceTip, MetaKey::BalanceTip] {
            let tip = || store.reader().meta(key).unwrap();
            set(key, 5);
            assert!(!lower(key, 6).unwrap(), "{key:?}: a tip below the block stays");
            assert_eq!(tip().and_then(|m| tip_row(key, Some(m)).unwrap()).map(|t| t.number), Some(5));
            assert!(lower(key, 5).unwrap());
            assert_eq!(tip().and_then(|m| tip_row(key, Some(m)).unwrap()), Some(Tip { number: 4, hash: parent }));
            set(key, 3);
            assert!(lower(key, 0).unwrap(), "{key:?}: a tip above block 0 had passed it");
            assert_eq!(tip(), None, "{key:?}: reverting block 0 leaves no tip");
            assert!(!lower(key, 0).unwrap(), "{key:?}: no tip, nothing passed");
        }
        assert!(matches!(lower(MetaKey::Tip, 1), Err(StoreError::Inconsistent(_))));
    }

    /// With the Zstd dictionary, a table whose rows repeat content (here 20-byte "senders" from a set of 500, as in
    /// `txs`) takes markedly less disk once compacted to the bottom level, and reads back the same.
    #[test]
    fn the_zstd_dictionary_shrinks_tables_whose_rows_repeat_content() {
        use alloy::primitives::keccak256;
        // Row `i`: a hash, a sender of 500, and `i`.
        let row = |i: u64| {
            [keccak256(i.to_be_bytes()).as_slice(), &keccak256((i * 7 % 500).to_be_bytes())[..20], &i.to_le_bytes()]
                .concat()
        };
        let data_bytes = |zstd_dictionary: ZstdDictionary| {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), &StoreOptions { zstd_dictionary, ..Default::default() }).unwrap();
            let mut batch = store.batch();
            for i in 0..40_000u64 {
                let row = row(i);
                batch.put::<tables::Code>(&keccak256(row.as_slice()), &row.into()).unwrap();
            }
            store.write(batch, Durability::Buffered).unwrap();
            store.compact().unwrap();
            let row = row(7);
            assert_eq!(store.view().get::<tables::Code>(&keccak256(row.as_slice())).unwrap(), Some(row.into()));
            store.sst_parts().unwrap().into_iter().find(|(name, _)| *name == tables::Code::NAME).unwrap().1.data
        };
        let (plain, with_dictionary) = (data_bytes(ZstdDictionary::Off), data_bytes(ZstdDictionary::All));
        assert!(with_dictionary * 100 < plain * 90, "{with_dictionary} bytes with the dictionary, {plain} without");
        let only_txs = data_bytes(ZstdDictionary::Transactions);
        assert!(only_txs * 100 > plain * 95, "{only_txs} bytes with the dictionary in txs alone, {plain} without");
    }

    /// The default dictionary is `txs`'s alone; `All` leaves out the tables whose rows are positions under random
    /// keys; `Off` is none.
    #[test]
    fn each_dictionary_setting_names_its_tables() {
        let with = |setting: ZstdDictionary| -> Vec<&str> {
            tables::ALL.iter().filter(|def| setting.applies_to(def)).map(|def| def.name).collect()
        };
        assert_eq!(StoreOptions::default().zstd_dictionary, ZstdDictionary::Transactions);
        assert_eq!(with(ZstdDictionary::Transactions), ["txs"]);
        assert!(with(ZstdDictionary::Off).is_empty());
        let all = with(ZstdDictionary::All);
        for name in ["txs", "accounts", "logs", "transfers", "token_balances", "headers"] {
            assert!(all.contains(&name), "{name} has a dictionary with All");
        }
        for name in ["address_txs", "tx_hashes", "address_transfers"] {
            assert!(!all.contains(&name), "{name} has none, even with All");
        }
    }

    /// The split of a table's files into data, index and filter bytes comes to about the files' size (the data
    /// blocks as stored, the index before compression) and counts the rows written.
    #[test]
    fn sst_parts_split_a_tables_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let blob = alloy::primitives::Bytes::from((0..512u32).map(|i| (i * 7919 % 251) as u8).collect::<Vec<_>>());
        let mut batch = store.batch();
        for i in 0..2_000u64 {
            let mut key = [0u8; 32];
            key[24..].copy_from_slice(&i.to_be_bytes());
            batch.put::<tables::Code>(&key.into(), &blob).unwrap();
        }
        store.write(batch, Durability::Buffered).unwrap();
        store.compact().unwrap();
        let parts = store.sst_parts().unwrap();
        let (_, code) = parts.iter().find(|(name, _)| *name == tables::Code::NAME).unwrap();
        assert_eq!(code.entries, 2_000);
        assert!(code.data > 0 && code.index > 0 && code.filter > 0, "{code:?}");
        let files = store.disk_usage().unwrap().into_iter().find(|(name, _)| *name == tables::Code::NAME).unwrap().1;
        let parts_sum = code.data + code.index + code.filter;
        assert!(code.data < files && parts_sum * 10 >= files * 9, "{parts_sum} of {files} bytes: {code:?}");
        let (_, headers) = parts.iter().find(|(name, _)| *name == Headers::NAME).unwrap();
        assert_eq!(*headers, SstParts::default(), "a table never written has no files");
    }

    /// However much a catch-up write adds, the writer's wait leaves the memtables within their budget (without it
    /// they run past it while flushes catch up).
    #[test]
    fn waiting_for_memtables_keeps_them_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 32 << 20;
        let store = Store::open(dir.path(), &StoreOptions { memtable_bytes: budget, ..Default::default() }).unwrap();
        let memtables = || store.rocksdb_property_sum("rocksdb.cur-size-all-mem-tables").unwrap();
        let blob = alloy::primitives::Bytes::from(vec![0x5a; 16 << 10]);
        let mut over_before_waiting = 0;
        for round in 0..8u32 {
            let mut batch = store.batch();
            for i in 0..1_000u32 {
                let mut key = [0u8; 32];
                key[..8].copy_from_slice(&(u64::from(round) << 32 | u64::from(i)).to_be_bytes());
                batch.put::<tables::Code>(&key.into(), &blob).unwrap();
            }
            store.write(batch, Durability::Buffered).unwrap();
            over_before_waiting += usize::from(memtables() > budget as u64);
            store.wait_for_memtables().unwrap();
            assert!(memtables() <= budget as u64, "round {round}: {} bytes in memtables", memtables());
        }
        assert!(over_before_waiting > 0, "the writes went past the budget, so the wait had work to do");
    }

    /// Once a store is open, freeing a large block no longer raises glibc's mmap threshold: the next block of a
    /// size just freed is mapped again (glibc marks a mapped chunk with bit 0x2 of its size word), not taken from
    /// the heap, where it would stay resident after it is freed. The check runs in a process of its own: the heaps
    /// of this one hold whatever other tests freed, and glibc serves a block from a free chunk that fits before it
    /// considers mapping one.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn large_blocks_stay_mapped_after_the_store_opens() {
        const IN_CHILD: &str = "ROCKSCOUT_TEST_MMAP_THRESHOLD_CHILD";
        let name = "store::tests::large_blocks_stay_mapped_after_the_store_opens";
        if std::env::var_os(IN_CHILD).is_none() {
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads", "1"])
                .env(IN_CHILD, "1")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&child.stdout);
            assert!(child.status.success() && stdout.contains("1 passed"), "{stdout}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let _store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        // SAFETY: plain malloc and free of blocks this test owns; the size word read is the one glibc keeps just
        // before every block it hands out.
        unsafe {
            let larger = libc::malloc(4 << 20);
            assert!(!larger.is_null());
            libc::free(larger);
            let block = libc::malloc(2 << 20);
            assert!(!block.is_null());
            let size_word = *(block as *const usize).sub(1);
            libc::free(block);
            assert_ne!(size_word & 0x2, 0, "a 2 MiB block came from the heap: the mmap threshold rose");
        }
    }

    #[test]
    fn every_table_uses_the_block_cache_of_the_size_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions { cache_bytes: 16 << 20, ..Default::default() }).unwrap();
        let capacity = store.rocksdb_property_sum("rocksdb.block-cache-capacity").unwrap();
        assert_eq!(capacity, tables::ALL.len() as u64 * (16 << 20));
    }

    mod row_cache {
        use super::super::*;
        use alloy::primitives::{B256, U256};
        use keys::BalanceKey;
        use proptest::prelude::*;
        use records::Amount;
        use std::collections::{BTreeMap, BTreeSet};
        use tables::{BlockHashes, TokenBalances};

        #[derive(Debug, Clone)]
        enum Op {
            Put(u8, u64),
            Delete(u8),
            /// A token balance row of holder `.0` in token `.1` (a table whose presence under an address is cached).
            Hold(u8, u8),
            /// Deletes that balance row; `true`: through `set_raw`, as a revert from undo data does.
            Release(u8, u8, bool),
            /// The chain reset's range deletion over every chain table.
            ClearIndex,
            /// A new view, kept open beside the two before it.
            View,
            /// Reads through every open view, one key at a time and all keys at once.
            Read,
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                3 => (0u8..6, any::<u64>()).prop_map(|(k, v)| Op::Put(k, v)),
                1 => (0u8..6).prop_map(Op::Delete),
                2 => (0u8..3, 0u8..2).prop_map(|(h, t)| Op::Hold(h, t)),
                2 => (0u8..3, 0u8..2, any::<bool>()).prop_map(|(h, t, raw)| Op::Release(h, t, raw)),
                1 => Just(Op::ClearIndex),
                2 => Just(Op::View),
                4 => Just(Op::Read),
            ]
        }

        fn key(k: u8) -> B256 {
            B256::with_last_byte(k)
        }

        fn balance(holder: u8, token: u8) -> BalanceKey {
            let address = |b: u8| Address::with_last_byte(b);
            BalanceKey { holder: address(holder), token: address(100 + token), id: U256::ZERO }
        }

        fn write(store: &Store, fill: impl FnOnce(&mut Batch<'_>)) {
            let mut batch = store.batch();
            fill(&mut batch);
            store.write(batch, Durability::Buffered).unwrap();
        }

        /// What the store holds: rows of one cached table, and which (holder, token) balance rows exist.
        #[derive(Debug, Clone, Default)]
        struct Model {
            rows: BTreeMap<u8, u64>,
            holdings: BTreeSet<(u8, u8)>,
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]

            /// Every view reads what its snapshot holds, through the cache or not, after any mix of puts, deletes
            /// and resets: a model of the tables at each view's creation is the expected answer, for rows read
            /// by key and for whether an address has any row.
            #[test]
            fn views_read_their_snapshot_through_the_row_cache(ops in proptest::collection::vec(op(), 1..60)) {
                let dir = tempfile::tempdir().unwrap();
                let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
                let mut model = Model::default();
                let mut views: Vec<(Reader<'_>, Model)> = vec![(store.view(), model.clone())];
                for op in ops {
                    match op {
                        Op::Put(k, v) => {
                            write(&store, |b| b.put::<BlockHashes>(&key(k), &v).unwrap());
                            model.rows.insert(k, v);
                        }
                        Op::Delete(k) => {
                            write(&store, |b| b.delete::<BlockHashes>(&key(k)));
                            model.rows.remove(&k);
                        }
                        Op::Hold(h, t) => {
                            write(&store, |b| b.put::<TokenBalances>(&balance(h, t), &Amount(U256::from(1))).unwrap());
                            model.holdings.insert((h, t));
                        }
                        Op::Release(h, t, raw) => {
                            let key = balance(h, t);
                            write(&store, |b| match raw {
                                true => b.set_raw(TokenBalances::ID, key.encode().as_ref(), None).unwrap(),
                                false => b.delete::<TokenBalances>(&key),
                            });
                            model.holdings.remove(&(h, t));
                        }
                        Op::ClearIndex => {
                            write(&store, |b| b.clear_index());
                            model = Model::default();
                        }
                        Op::View => {
                            views.push((store.view(), model.clone()));
                            if views.len() > 3 {
                                views.remove(0);
                            }
                        }
                        Op::Read => {
                            let keys: Vec<B256> = (0u8..6).map(key).collect();
                            for (view, seen) in &views {
                                for k in 0u8..6 {
                                    prop_assert_eq!(view.get::<BlockHashes>(&key(k)).unwrap(), seen.rows.get(&k).copied());
                                }
                                let all = view.multi_get::<BlockHashes>(&keys).unwrap();
                                let expected: Vec<Option<u64>> = (0u8..6).map(|k| seen.rows.get(&k).copied()).collect();
                                prop_assert_eq!(all, expected);
                                for h in 0u8..3 {
                                    let holds = view.holds_any::<TokenBalances>(&balance(h, 0).holder).unwrap();
                                    prop_assert_eq!(holds, seen.holdings.iter().any(|(holder, _)| *holder == h), "holder {}", h);
                                }
                            }
                        }
                    }
                }
            }
        }

        /// The presence of an address's rows, once cached, follows each way a row comes and goes: a put, a delete,
        /// a revert's raw delete from undo data, a reset.
        #[test]
        fn presence_follows_puts_deletes_reverts_and_resets() {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
            let (first, second) = (balance(1, 0), balance(1, 1));
            let holds = || store.view().holds_any::<TokenBalances>(&first.holder).unwrap();
            let one = Amount(U256::from(1));
            assert!(!holds());
            write(&store, |b| b.put::<TokenBalances>(&first, &one).unwrap());
            assert!(holds(), "a put");
            write(&store, |b| b.put::<TokenBalances>(&second, &one).unwrap());
            write(&store, |b| b.delete::<TokenBalances>(&first));
            assert!(holds(), "one row of two deleted");
            write(&store, |b| b.set_raw(TokenBalances::ID, second.encode().as_ref(), None).unwrap());
            assert!(!holds(), "a revert's raw delete");
            let encoded = codec::encode(&one).unwrap();
            write(&store, |b| b.set_raw(TokenBalances::ID, first.encode().as_ref(), Some(&encoded)).unwrap());
            assert!(holds(), "a revert's raw put");
            assert!(store.rows.bytes() > 0, "the answers were cached");
            write(&store, |b| b.clear_index());
            assert!(!holds(), "a reset");
        }

        /// Transactions are filed under the first 8 bytes of their hash: ones sharing them (here six, more than a
        /// cached entry keeps) are each found by their whole hash, and the places cached for a prefix follow every
        /// put, delete, raw revert and reset under it.
        #[test]
        fn transactions_sharing_a_hash_prefix_are_each_found() {
            use keys::{BlockPos, TxHashKey};
            use tables::{Transactions, TxHashes};
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
            let hash = |i: u8| {
                let mut bytes = [0x5a; 32];
                bytes[31] = i;
                B256::from(bytes)
            };
            let pos = |i: u8| BlockPos { block: 10 + u64::from(i % 3), index: u32::from(i) };
            let file = |b: &mut Batch<'_>, i: u8| {
                let tx = records::TxRecord {
                    body: records::TxBody { hash: hash(i), ..golden::sample_tx().body },
                    ..golden::sample_tx()
                };
                b.put::<Transactions>(&pos(i), &tx).unwrap();
                b.put::<TxHashes>(&TxHashKey::new(&hash(i), pos(i)), &()).unwrap();
            };
            let found = |i: u8| store.view().tx(hash(i)).unwrap().map(|(p, tx)| (p, tx.hash));
            assert_eq!(found(0), None);
            write(&store, |b| file(b, 0));
            assert_eq!(found(0), Some((pos(0), hash(0))), "a put stales the cached absence");
            assert_eq!(found(1), None, "a hash sharing the prefix is not the one stored");
            write(&store, |b| (1..6).for_each(|i| file(b, i)));
            for i in 0..6 {
                assert_eq!(found(i), Some((pos(i), hash(i))), "hash {i} of six under one prefix");
            }
            let under = store.view().under::<TxHashes>(&TxHashKey::prefix_of(&hash(0))).unwrap();
            assert_eq!((under.keys.len(), under.more), (4, true), "an entry keeps four places and says more follow");
            write(&store, |b| b.delete::<TxHashes>(&TxHashKey::new(&hash(2), pos(2))));
            assert_eq!(found(2), None, "a delete");
            assert_eq!(found(5), Some((pos(5), hash(5))));
            let raw = TxHashKey::new(&hash(2), pos(2)).encode();
            write(&store, |b| b.set_raw(TxHashes::ID, &raw, Some(&[])).unwrap());
            assert_eq!(found(2), Some((pos(2), hash(2))), "a revert's raw put");
            assert!(store.rows.bytes() > 0, "the places were cached");
            write(&store, |b| b.clear_index());
            assert_eq!(found(3), None, "a reset");
        }

        /// Writers and readers race: each commit writes one value to two keys, so a view that sees the two keys
        /// differ, or a value older than one it saw before, read a row its snapshot does not hold.
        #[test]
        fn racing_commits_never_show_a_view_a_stale_row() {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
            let commits = 3_000u64;
            let (a, b) = (key(1), key(2));
            std::thread::scope(|scope| {
                let readers: Vec<_> = (0..3)
                    .map(|reader| {
                        let store = &store;
                        scope.spawn(move || {
                            let (mut last, mut reads) = (0u64, 0u64);
                            while last < commits {
                                let view = store.view();
                                let pair = match reader {
                                    0 => (view.get::<BlockHashes>(&a).unwrap(), view.get::<BlockHashes>(&b).unwrap()),
                                    1 => (view.get::<BlockHashes>(&b).unwrap(), view.get::<BlockHashes>(&a).unwrap()),
                                    _ => {
                                        let both = view.multi_get::<BlockHashes>(&[a, b]).unwrap();
                                        (both[0], both[1])
                                    }
                                };
                                assert_eq!(pair.0, pair.1, "one snapshot, two values");
                                let value = pair.0.unwrap_or(0);
                                assert!(value >= last, "went back from {last} to {value}");
                                (last, reads) = (value, reads + 1);
                            }
                            reads
                        })
                    })
                    .collect();
                for value in 1..=commits {
                    write(&store, |batch| {
                        batch.put::<BlockHashes>(&a, &value).unwrap();
                        batch.put::<BlockHashes>(&b, &value).unwrap();
                    });
                }
                for reader in readers {
                    assert!(reader.join().unwrap() > 0);
                }
            });
            assert!(store.rows.bytes() > 0, "the views filled the cache");
        }

        /// A replica's state moves at each catch-up, which no commit of its own announces: a catch-up that brings
        /// new writes empties its cache, and one that brings none keeps it.
        #[test]
        fn a_replica_serves_what_it_caught_up_with_not_what_it_cached() {
            let (dir, own) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let primary = Store::open(dir.path(), &StoreOptions::default()).unwrap();
            write(&primary, |b| b.put::<BlockHashes>(&key(1), &1).unwrap());
            let replica = Store::open_secondary(dir.path(), own.path(), &StoreOptions::default()).unwrap();
            assert_eq!(replica.view().get::<BlockHashes>(&key(1)).unwrap(), Some(1));
            assert_eq!(replica.view().get::<BlockHashes>(&key(2)).unwrap(), None);
            assert!(!replica.catch_up().unwrap(), "nothing new");
            assert!(replica.rows.bytes() > 0, "a catch-up with nothing new keeps the cache");
            for value in 2..5u64 {
                write(&primary, |b| {
                    b.put::<BlockHashes>(&key(1), &value).unwrap();
                    b.put::<BlockHashes>(&key(2), &value).unwrap();
                });
                assert_eq!(replica.view().get::<BlockHashes>(&key(1)).unwrap(), Some(value - 1), "not caught up yet");
                assert!(replica.catch_up().unwrap(), "the primary's write is new");
                let view = replica.view();
                assert_eq!(view.get::<BlockHashes>(&key(1)).unwrap(), Some(value));
                assert_eq!(view.multi_get::<BlockHashes>(&[key(2)]).unwrap(), vec![Some(value)]);
            }
        }

        #[test]
        fn indexer_readers_leave_the_cache_alone() {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
            write(&store, |b| b.put::<BlockHashes>(&key(1), &7).unwrap());
            assert_eq!(store.reader().get::<BlockHashes>(&key(1)).unwrap(), Some(7));
            assert_eq!(store.rows.bytes(), 0, "an indexer read is not kept");
            assert_eq!(store.view().get::<BlockHashes>(&key(1)).unwrap(), Some(7));
            assert!(store.rows.bytes() > 0, "a view's read is kept");
            let own = tempfile::tempdir().unwrap();
            let replica = Store::open_secondary(dir.path(), own.path(), &StoreOptions::default()).unwrap();
            assert_eq!(replica.reader().get::<BlockHashes>(&key(1)).unwrap(), Some(7));
            assert_eq!(replica.rows.bytes(), 0, "a replica's indexer-side read is not kept either");
            let off = tempfile::tempdir().unwrap();
            let off = Store::open(off.path(), &StoreOptions { row_cache_bytes: 0, ..Default::default() }).unwrap();
            write(&off, |b| b.put::<BlockHashes>(&key(1), &7).unwrap());
            assert_eq!(off.view().get::<BlockHashes>(&key(1)).unwrap(), Some(7));
            assert_eq!(off.disk_figures().unwrap().row_cache_capacity, 0);
            assert_eq!(store.disk_figures().unwrap().row_cache_capacity, DEFAULT_ROW_CACHE_BYTES as u64);
        }
    }

    #[test]
    fn next_prefix_handles_carries() {
        assert_eq!(next_prefix(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(next_prefix(&[1, 0xff]), Some(vec![2]));
        assert_eq!(next_prefix(&[0xff, 0xff]), None);
    }

    #[test]
    fn schema_mismatch_refuses_to_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        assert_eq!(store.open_state(), OpenState::Created);
        let mut batch = store.batch();
        batch.put_meta(&Meta::SchemaVersion(SCHEMA_VERSION + 1)).unwrap();
        store.write(batch, Durability::Sync).unwrap();
        drop(store);
        let err = Store::open(dir.path(), &StoreOptions::default()).unwrap_err();
        assert!(
            matches!(err, StoreError::SchemaMismatch { found, expected } if found == SCHEMA_VERSION + 1 && expected == SCHEMA_VERSION)
        );
        assert!(err.to_string().contains("--reindex"));
    }

    #[test]
    fn tips_reads_both_tips_and_refuses_a_misplaced_row() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        assert_eq!(store.reader().tips().unwrap(), (None, None));
        let tip = Tip { number: 7, hash: alloy::primitives::B256::with_last_byte(7) };
        let traced = Tip { number: 5, hash: alloy::primitives::B256::with_last_byte(5) };
        let mut batch = store.batch();
        batch.put_meta(&Meta::Tip(tip)).unwrap();
        store.write(batch, Durability::Sync).unwrap();
        assert_eq!(store.reader().tips().unwrap(), (Some(tip), None));
        let mut batch = store.batch();
        batch.put_meta(&Meta::TraceTip(traced)).unwrap();
        store.write(batch, Durability::Sync).unwrap();
        let reader = store.reader();
        assert_eq!(reader.tips().unwrap(), (Some(tip), Some(traced)));
        assert_eq!(reader.tips().unwrap(), (reader.tip().unwrap(), reader.trace_tip().unwrap()));
        // A trace tip stored under the tip's key is an inconsistency, not a tip.
        let mut batch = store.batch();
        batch.put::<MetaTable>(&MetaKey::Tip, &Meta::TraceTip(traced)).unwrap();
        store.write(batch, Durability::Sync).unwrap();
        assert!(matches!(store.reader().tips(), Err(StoreError::Inconsistent(_))));
    }

    #[test]
    fn transfers_in_logs_come_in_log_and_item_order_inside_the_range() {
        use keys::TransferPos;
        use records::{TokenKind, TokenTransferRecord};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let record = |amount: u64| TokenTransferRecord {
            token: alloy::primitives::Address::with_last_byte(1),
            from: alloy::primitives::Address::with_last_byte(2),
            to: alloy::primitives::Address::with_last_byte(3),
            kind: TokenKind::Erc1155,
            token_id: Some(alloy::primitives::U256::from(amount)),
            amount: alloy::primitives::U256::from(amount),
            tx_index: 0,
            tx_hash: alloy::primitives::B256::ZERO,
        };
        // Blocks 4 to 6, logs 0 to 3, two items in each log.
        let positions: Vec<TransferPos> = (4..=6)
            .flat_map(|block| (0..4).flat_map(move |log| (0..2).map(move |item| TransferPos { block, log, item })))
            .collect();
        let mut batch = store.batch();
        for (i, pos) in positions.iter().enumerate() {
            batch.put::<tables::Transfers>(pos, &record(i as u64)).unwrap();
        }
        store.write(batch, Durability::Sync).unwrap();
        let found: Vec<TransferPos> =
            store.reader().transfers_in_logs(5, 1..3).unwrap().into_iter().map(|(pos, _)| pos).collect();
        let expected: Vec<TransferPos> =
            positions.iter().copied().filter(|p| p.block == 5 && (1..3).contains(&p.log)).collect();
        assert_eq!(found, expected);
        assert!(store.reader().transfers_in_logs(5, 2..2).unwrap().is_empty());
    }

    /// ERC-20 logs (one item), ERC-1155 batches (several), logs without transfers and the blocks around: reading a
    /// transaction's logs by key gives exactly what a scan of them gives, through the row cache or not.
    #[test]
    fn transfers_in_logs_by_key_match_the_scan() {
        use keys::TransferPos;
        use records::{TokenKind, TokenTransferRecord};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let record = |kind: TokenKind, amount: u64| TokenTransferRecord {
            token: alloy::primitives::Address::with_last_byte(1),
            from: alloy::primitives::Address::with_last_byte(2),
            to: alloy::primitives::Address::with_last_byte(3),
            kind,
            token_id: (kind == TokenKind::Erc1155).then(|| alloy::primitives::U256::from(amount)),
            amount: alloy::primitives::U256::from(amount),
            tx_index: 0,
            tx_hash: alloy::primitives::B256::ZERO,
        };
        let mut all = Vec::new();
        for block in 4..=6u64 {
            for log in 0..12u32 {
                let (kind, items) = match log % 3 {
                    0 => (TokenKind::Erc20, 1),
                    1 => continue,
                    _ => (TokenKind::Erc1155, (log % 4) as u16 + 1),
                };
                for item in 0..items {
                    all.push((TransferPos { block, log, item }, record(kind, all.len() as u64)));
                }
            }
        }
        let mut batch = store.batch();
        for (pos, transfer) in &all {
            batch.put::<tables::Transfers>(pos, transfer).unwrap();
        }
        store.write(batch, Durability::Sync).unwrap();
        for start in 0..=12u32 {
            for end in start..=12u32 {
                let expected: Vec<_> =
                    all.iter().filter(|(p, _)| p.block == 5 && (start..end).contains(&p.log)).cloned().collect();
                for reader in [store.reader(), store.view(), store.view()] {
                    assert_eq!(reader.transfers_in_logs(5, start..end).unwrap(), expected, "logs {start}..{end}");
                    assert_eq!(reader.scan_transfers_in_logs(5, start..end).unwrap(), expected);
                }
            }
        }
    }

    #[test]
    fn open_state_tells_clean_from_unclean() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        store.close().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        assert_eq!(store.open_state(), OpenState::Clean);
        store.crash();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        assert_eq!(store.open_state(), OpenState::Unclean);
    }

    #[test]
    fn a_secondary_sees_the_primarys_commits_after_catching_up_and_never_writes() {
        let (dir, own) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let primary = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let put = |n: u64| {
            let mut batch = primary.batch();
            batch.put::<tables::BlockHashes>(&alloy::primitives::B256::with_last_byte(n as u8), &n).unwrap();
            primary.write(batch, Durability::Sync).unwrap();
        };
        put(1);
        let secondary = Store::open_secondary(dir.path(), own.path(), &StoreOptions::default()).unwrap();
        assert!(secondary.is_secondary());
        let count = |store: &Store| store.view().rows::<tables::BlockHashes>().count();
        assert_eq!(count(&secondary), 1);
        put(2);
        assert_eq!(count(&secondary), 1, "not before catching up");
        secondary.catch_up().unwrap();
        assert_eq!(count(&secondary), 2);
        let mut batch = secondary.batch();
        batch.put::<tables::BlockHashes>(&alloy::primitives::B256::with_last_byte(9), &9).unwrap();
        assert!(secondary.write(batch, Durability::Sync).unwrap_err().to_string().contains("never writes"));
        drop(secondary);
        assert_eq!(count(&primary), 2);
    }

    /// RocksDB starts `max_file_opening_threads - 1` threads for every version a secondary's catch-up builds, even
    /// with no table file to open; a secondary must open them in the catch-up's own thread. The setting is read
    /// back from the options RocksDB writes to the secondary's info log.
    #[test]
    fn a_secondary_opens_table_files_in_the_catch_up_thread() {
        let (dir, own) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        drop(Store::open(dir.path(), &StoreOptions::default()).unwrap());
        let _secondary = Store::open_secondary(dir.path(), own.path(), &StoreOptions::default()).unwrap();
        let log = std::fs::read_to_string(own.path().join("LOG")).unwrap();
        let threads: Vec<&str> = log
            .lines()
            .filter_map(|line| line.split_once("Options.max_file_opening_threads:").map(|(_, v)| v.trim()))
            .collect();
        assert!(!threads.is_empty(), "the info log lists the options");
        assert!(threads.iter().all(|v| *v == "1"), "max_file_opening_threads {threads:?}");
    }

    /// A view without a snapshot (a replica's) can read a hash's height before a reorg and the height after it: the
    /// block there, of another hash, is not the one asked for, which the reorged rows hold.
    #[test]
    fn a_block_by_hash_carries_the_hash_asked_for() {
        use alloy::primitives::B256;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let (lost, won) = (B256::repeat_byte(0xa1), B256::repeat_byte(0xb2));
        let block = |hash: B256| records::BlockRecord { number: 7, hash, ..golden::sample_block() };
        let mut batch = store.batch();
        batch.put::<tables::Headers>(&BlockKey(7), &block(won)).unwrap();
        batch.put::<tables::BlockHashes>(&lost, &7).unwrap();
        batch.put::<tables::Reorged>(&keys::ReorgedKey { number: 7, hash: lost }, &block(lost)).unwrap();
        store.write(batch, Durability::Sync).unwrap();
        let reader = store.reader();
        assert_eq!(reader.block_by_hash(lost).unwrap(), Some((block(lost), false)));
        assert_eq!(reader.block_by_hash(won).unwrap(), None, "no hash row for it yet");
        let mut batch = store.batch();
        batch.put::<tables::BlockHashes>(&won, &7).unwrap();
        store.write(batch, Durability::Sync).unwrap();
        assert_eq!(store.reader().block_by_hash(won).unwrap(), Some((block(won), true)));
    }

    #[test]
    fn a_secondary_refuses_another_schema_version_like_the_primary() {
        let (dir, own) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let primary = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut batch = primary.batch();
        batch.put_meta(&Meta::SchemaVersion(SCHEMA_VERSION - 1)).unwrap();
        primary.write(batch, Durability::Sync).unwrap();
        let err = Store::open_secondary(dir.path(), own.path(), &StoreOptions::default()).unwrap_err();
        assert!(matches!(err, StoreError::SchemaMismatch { found, .. } if found == SCHEMA_VERSION - 1), "{err}");
        assert!(err.to_string().contains("--reindex"));
    }

    #[test]
    fn undecodable_value_is_reported_with_table_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        store.db.put_cf(store.cf(Headers::NAME), BlockKey(7).encode(), [0xff, 0xff]).unwrap();
        let err = store.reader().get::<Headers>(&BlockKey(7)).unwrap_err();
        match err {
            StoreError::Decode { table, key, .. } => {
                assert_eq!(table, "headers");
                assert_eq!(key, "fffffffffffffff8");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn scans_respect_bounds_cursor_and_direction() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut batch = store.batch();
        for n in 0..10u64 {
            batch.put::<tables::BlockHashes>(&alloy::primitives::B256::with_last_byte(n as u8), &n).unwrap();
        }
        store.write(batch, Durability::Buffered).unwrap();
        let reader = store.reader();
        let numbers = |range: KeyRange, dir: Direction| -> Vec<u64> {
            reader.scan::<tables::BlockHashes>(range, dir).map(|r| r.unwrap().1).collect()
        };
        assert_eq!(numbers(KeyRange::all(), Direction::Forward), (0..10).collect::<Vec<_>>());
        assert_eq!(numbers(KeyRange::all(), Direction::Reverse), (0..10).rev().collect::<Vec<_>>());
        let three = alloy::primitives::B256::with_last_byte(3);
        let seven = alloy::primitives::B256::with_last_byte(7);
        assert_eq!(numbers(KeyRange::all().after(three.as_slice()), Direction::Forward), vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(
            numbers(KeyRange::all().after(three.as_slice()).before(seven.as_slice()), Direction::Reverse),
            vec![6, 5, 4]
        );
        assert_eq!(numbers(KeyRange::all().before(three.as_slice()), Direction::Reverse), vec![2, 1, 0]);
    }

    #[test]
    fn scans_stop_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut batch = store.batch();
        for n in 0..1000u64 {
            batch
                .put::<tables::BlockHashes>(&alloy::primitives::B256::left_padding_from(&n.to_be_bytes()), &n)
                .unwrap();
        }
        store.write(batch, Durability::Buffered).unwrap();
        assert_eq!(store.reader().rows::<tables::BlockHashes>().count(), 1000);
        let late = store.reader().until(Instant::now());
        let rows: Vec<_> = late.rows::<tables::BlockHashes>().collect();
        assert_eq!(rows.len(), DEADLINE_EVERY as usize, "stops at the first look at the clock");
        assert!(matches!(rows.last(), Some(Err(StoreError::Deadline))));
        let timely = store.reader().until(Instant::now() + std::time::Duration::from_secs(60));
        assert!(timely.rows::<tables::BlockHashes>().all(|r| r.is_ok()));
    }

    #[test]
    fn address_prefix_scans_work_in_both_directions() {
        use keys::{AddressPos, BlockPos};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut batch = store.batch();
        for a in 1..=3u8 {
            for block in 0..4u64 {
                let key = AddressPos {
                    address: alloy::primitives::Address::repeat_byte(a),
                    pos: BlockPos { block, index: 0 },
                };
                batch.put::<tables::AddressTxs>(&key, &a).unwrap();
            }
        }
        store.write(batch, Durability::Buffered).unwrap();
        let reader = store.reader();
        let two = alloy::primitives::Address::repeat_byte(2);
        let blocks = |dir: Direction| -> Vec<u64> {
            reader
                .scan::<tables::AddressTxs>(KeyRange::prefix(two.as_slice()), dir)
                .map(|r| r.unwrap().0.pos.block)
                .collect()
        };
        assert_eq!(blocks(Direction::Forward), vec![3, 2, 1, 0]);
        assert_eq!(blocks(Direction::Reverse), vec![0, 1, 2, 3]);
    }
}

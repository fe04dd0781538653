//! Every column family, declared once as data: name, key type, value type, tuning and what it is for.
//!
//! `ALL` drives column-family creation at open time, the per-CF options and the schema document test.

use super::keys::{
    AddressNodeKey, AddressPos, AddressTracePos, AddressTransferPos, BalanceKey, BeaconProxyKey, BlockKey, BlockPos,
    CoinRankKey, DayKey, HolderKey, HolderRankKey, InstanceKey, ItemKey, Key, MetaKey, NameSearchKey, PendingKey,
    ReorgedKey, SearchKey, SerialKey, TokenRankKey, TracePos, TransferPos, TxHashKey,
};
use super::records::{
    AccountItem, AccountRecord, Amount, BlockRecord, CoinBalance, ContractRecord, CredentialRecord, DayStats,
    InstanceRecord, InternalCreation, InternalTxRecord, ItemOwner, LogRecord, Meta, NameRecord, PendingTxRecord,
    TokenMetadata, TokenRecord, TokenTransferRecord, TraceSummary, TxRecord, Undo, UserRecord, VerificationJob,
    VerifiedSource,
};
use alloy::primitives::{Address, Bytes, B256};
use serde::{de::DeserializeOwned, Serialize};

/// A column family with a fixed key type and value type.
pub trait Table {
    /// Stable id, recorded in undo data: never reused or changed (a change is a schema change).
    const ID: u8;
    /// Column family name (never renamed: a rename is a schema change).
    const NAME: &'static str;
    /// Key type.
    type Key: Key;
    /// Value type (encoded by `codec`).
    type Value: Serialize + DeserializeOwned;
    /// How the table is read (its RocksDB options and prefix length).
    const ACCESS: Access;
    /// What API readers keep of the table in the row cache (see `row_cache`).
    const CACHE: Cached;
}

/// What the row cache keeps of a table for API readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cached {
    /// Nothing.
    No,
    /// Rows read by key, and keys found absent.
    Rows,
    /// The keys under each prefix (of the table's [`Access::prefix_len`]) readers asked about, at most `keys` of
    /// them and whether there are more ([`super::Reader::under`]): whether an address holds any row (`keys: 0`,
    /// only whether there are more), or where the transactions whose hashes start with some 8 bytes are.
    Prefix {
        /// How many keys an entry keeps.
        keys: usize,
    },
}

/// Whether any row starts with a given address ([`super::Reader::holds_any`]).
const PRESENCE: Cached = Cached::Prefix { keys: 0 };

/// Where the transactions under one hash prefix are: one, nearly always.
const HASH_PLACES: Cached = Cached::Prefix { keys: 4 };

impl Cached {
    /// The part of a written `key` of a table read as `access` whose cache entry the write makes stale, if the
    /// table is cached.
    pub fn entry_of(self, access: Access, key: &[u8]) -> Option<&[u8]> {
        match self {
            Cached::No => None,
            Cached::Rows => Some(key),
            Cached::Prefix { .. } => key.get(..access.prefix_len()?),
        }
    }
}

/// How a column family is read, which decides its RocksDB options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Point lookups by hash, often for keys that do not exist: bloom filter on the whole key.
    Lookup,
    /// Histories scanned under a 20-byte address prefix: prefix extractor and prefix bloom.
    AddressHistory,
    /// Derived rows under a 20-byte address prefix that are also read one key at a time (every change reads the
    /// row's prior value, and most such reads miss: a new holder, a new rank): the prefix bloom plus a bloom
    /// filter on the whole key.
    AddressRows,
    /// Keys led by the first 8 bytes of a hash ([`super::keys::TX_HASH_PREFIX`]), found by a scan of that prefix:
    /// prefix extractor and prefix bloom.
    HashPrefix,
    /// Block-ordered rows read by point or range.
    Ordered,
}

impl Access {
    /// The length of the prefix RocksDB's prefix extractor and bloom filter work on, if any.
    pub const fn prefix_len(self) -> Option<usize> {
        match self {
            Access::AddressHistory | Access::AddressRows => Some(20),
            Access::HashPrefix => Some(super::keys::TX_HASH_PREFIX),
            Access::Lookup | Access::Ordered => None,
        }
    }
}

/// Runtime description of one column family.
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    /// Stable id (see [`Table::ID`]).
    pub id: u8,
    /// Column family name.
    pub name: &'static str,
    /// Key length in bytes.
    pub key_len: usize,
    /// Read pattern.
    pub access: Access,
    /// See [`Table::CACHE`].
    pub cache: Cached,
}

macro_rules! tables {
    (@cache) => { Cached::No };
    (@cache cached) => { Cached::Rows };
    (@cache presence) => { PRESENCE };
    (@cache places) => { HASH_PLACES };
    ($( $(#[$doc:meta])* $ty:ident = $id:literal $name:literal : $key:ty => $value:ty, $access:ident $(, $cache:ident)?; )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $ty;
            impl Table for $ty {
                const ID: u8 = $id;
                const NAME: &'static str = $name;
                type Key = $key;
                type Value = $value;
                const ACCESS: Access = Access::$access;
                const CACHE: Cached = tables!(@cache $($cache)?);
            }
        )*
        /// Every column family of the schema, in id order.
        pub const ALL: &[TableDef] = &[
            $( TableDef { id: $id, name: $name, key_len: <$key as Key>::LEN, access: Access::$access, cache: tables!(@cache $($cache)?) }, )*
        ];
    };
}

tables! {
    /// One-byte tag → schema version, db state, chain id, genesis hash, tip, global counters.
    MetaTable = 0 "meta": MetaKey => Meta, Ordered, cached;
    /// Block number (newest first) → block record.
    Headers = 1 "headers": BlockKey => BlockRecord, Ordered, cached;
    /// Block hash → block number (canonical blocks only).
    BlockHashes = 2 "block_hashes": B256 => u64, Lookup, cached;
    /// (block, index), newest first → transaction with receipt summary.
    Transactions = 3 "txs": BlockPos => TxRecord, Ordered, cached;
    /// First 8 bytes of a transaction hash ‖ (block, index) → nothing: where the transaction is.
    TxHashes = 4 "tx_hashes": TxHashKey => (), HashPrefix, places;
    /// (block, log index), newest first → log.
    Logs = 5 "logs": BlockPos => LogRecord, Ordered;
    /// address ‖ (block, index) newest first → role bits (from / to / created).
    AddressTxs = 6 "address_txs": AddressPos => u8, AddressHistory;
    /// emitter ‖ (block, log index) newest first → nothing.
    AddressLogs = 7 "address_logs": AddressPos => (), AddressHistory;
    /// Address → account summary (derived).
    Accounts = 8 "accounts": Address => AccountRecord, Lookup, cached;
    /// (number newest first, hash) → record of a block that lost consensus.
    Reorged = 9 "reorged": ReorgedKey => BlockRecord, Ordered;
    /// (block, log, item), newest first → token transfer.
    Transfers = 10 "transfers": TransferPos => TokenTransferRecord, Ordered, cached;
    /// holder ‖ (block, log, item) newest first → direction bits (1 sent, 2 received).
    AddressTransfers = 11 "address_transfers": AddressTransferPos => u8, AddressHistory;
    /// token ‖ (block, log, item) newest first → nothing.
    TokenTransfers = 12 "token_transfers": AddressTransferPos => (), AddressHistory;
    /// Token contract → kind, holders, transfers, total supply (derived).
    Tokens = 13 "tokens": Address => TokenRecord, Lookup, cached;
    /// (holders, most first, ‖ token) → nothing: the token list order (derived).
    TokenRanks = 14 "token_ranks": TokenRankKey => (), Ordered;
    /// holder ‖ token ‖ id → amount (derived).
    TokenBalances = 15 "token_balances": BalanceKey => Amount, AddressRows, presence;
    /// token ‖ holder → the holder's total (derived).
    TokenHolders = 16 "token_holders": HolderKey => Amount, AddressRows;
    /// token ‖ (amount, largest first) ‖ holder → nothing: holders in display order (derived).
    HolderRanks = 17 "holder_ranks": HolderRankKey => (), AddressRows;
    /// token ‖ id → owner and supply of one NFT id (derived).
    NftInstances = 18 "nft_instances": InstanceKey => InstanceRecord, AddressRows;
    /// Token contract → name, symbol, decimals read from the contract (not chain state).
    TokenMetadatas = 19 "token_metadata": Address => TokenMetadata, Lookup, cached;
    /// (lowercase name or symbol, 32 bytes) ‖ token → nothing: prefix search (not chain state).
    TokenSearch = 20 "token_search": SearchKey => (), Ordered;
    /// (block, transaction, call index), newest first → call frame (written by the trace pass).
    InternalTxs = 21 "internal_txs": TracePos => InternalTxRecord, Ordered;
    /// address ‖ (block, transaction, call) newest first → role bits (from / to / created), calls below the top.
    AddressInternal = 22 "address_internal": AddressTracePos => u8, AddressHistory;
    /// created contract ‖ (block, transaction, call) → who created it inside a transaction.
    InternalCreations = 23 "internal_creations": AddressTracePos => InternalCreation, AddressHistory, presence;
    /// Block number (newest first) → per-transaction internal call counts and error flags of a traced block.
    TraceBlocks = 24 "trace_blocks": BlockKey => TraceSummary, Ordered, cached;
    /// UTC day (newest first) → blocks, transactions and gas of the day (derived).
    Daily = 25 "daily": DayKey => DayStats, Ordered;
    /// Transaction hash → transaction waiting in the node's pool (not chain state: kept by the pool follower).
    Pending = 26 "pending": B256 => PendingTxRecord, Lookup;
    /// (first seen newest first, hash) → nothing: pending transactions in arrival order.
    PendingByTime = 27 "pending_by_time": PendingKey => (), Ordered;
    /// Block number (newest first) → prior values of the derived rows the block changed.
    UndoLog = 28 "undo": BlockKey => Undo, Ordered;
    /// keccak256 of runtime code → the code, stored once however many contracts share it (content-addressed).
    Code = 29 "code": B256 => Bytes, Lookup, cached;
    /// Contract → its code hash and creation (written by the code writer; reverted with the creation's block).
    Contracts = 30 "contracts": Address => ContractRecord, Lookup, cached;
    /// Contract → the source the verifier matched with its code (not chain state: no undo; hidden while the
    /// address has no `contracts` row).
    VerifiedSources = 31 "verified_sources": Address => VerifiedSource, Lookup, cached;
    /// Job id → a verification request and its state (not chain state: pending jobs are re-queued at start).
    VerificationJobs = 32 "verification_jobs": SerialKey => VerificationJob, Ordered;
    /// address ‖ (block, 0) newest first → the address's native balance after the block (derived, from the node).
    CoinBalances = 33 "coin_balances": AddressPos => Amount, AddressHistory;
    /// Address → its latest indexed native balance and that block (derived).
    CoinBalanceNow = 34 "coin_balance_now": Address => CoinBalance, Lookup, cached;
    /// (balance, largest first, ‖ address) → nothing: addresses with a non-zero balance, richest first (derived).
    CoinRanks = 35 "coin_ranks": CoinRankKey => (), Ordered;
    /// Account address → account (account data: kept across resets and reindexing).
    Users = 40 "users": Address => UserRecord, Lookup;
    /// Token id → account token, its secret as a hash (account data).
    UserTokens = 41 "user_tokens": SerialKey => CredentialRecord, Lookup;
    /// Key id → API key, its secret as a hash (account data).
    ApiKeys = 42 "api_keys": SerialKey => CredentialRecord, Lookup;
    /// owner ‖ kind ‖ id newest first → private tag, watchlist entry or API key of an account (account data).
    AccountItems = 43 "account_items": ItemKey => AccountItem, AddressHistory;
    /// Item id → its owner and kind (account data).
    ItemOwners = 44 "item_owners": SerialKey => ItemOwner, Lookup;
    /// Node (namehash) → plaintext name, owner, resolver and address record of a registry node (derived).
    Names = 45 "names": B256 => NameRecord, Lookup, cached;
    /// keccak256 of a label → its plaintext, from registrations (derived).
    NameLabels = 46 "name_labels": B256 => String, Lookup;
    /// (lowercase name, 32 bytes) ‖ node → nothing: prefix search of names (derived).
    NameSearch = 47 "name_search": NameSearchKey => (), Ordered;
    /// Address → the name its reverse record claims (derived; shown only when the name resolves back).
    ReverseNames = 48 "reverse_names": Address => String, Lookup, cached;
    /// address ‖ node → nothing: the names whose address record holds the address (derived).
    AddressNames = 49 "address_names": AddressNodeKey => (), AddressHistory;
    /// resolver ‖ node → the address record a resolver announced for a node, its current resolver or not (derived), so
    /// a node that switches to a resolver already holding its record resolves at once.
    ResolverAddrs = 50 "resolver_addrs": AddressNodeKey => Address, Lookup;
    /// resolver ‖ node → the name record a resolver announced for a node (derived): a reverse node's claim.
    ResolverNames = 51 "resolver_names": AddressNodeKey => String, Lookup;
    /// beacon ‖ proxy → nothing: the beacon proxies that named each beacon (written with the proxy's `contracts`
    /// row, reverted with it), so a beacon's own upgrade re-reads its proxies.
    BeaconProxies = 56 "beacon_proxies": BeaconProxyKey => (), Ordered;
    /// keccak256 of runtime code → the contract whose verified source matched that code, so other contracts with
    /// the same code show it as a similar match (not chain state: no undo; checked against `contracts` on read).
    VerifiedCode = 57 "verified_code": B256 => Address, Lookup, cached;
}

/// Account data (ids 40–44): written by people through the account API, not derived from the chain. Reorgs never
/// touch it, and resets and `--reindex` keep it.
pub fn is_account_data(def: &TableDef) -> bool {
    (40..45).contains(&def.id)
}

/// The table with stable id `id`.
pub fn by_id(id: u8) -> Option<&'static TableDef> {
    ALL.iter().find(|t| t.id == id)
}

/// The longest key of any table; used to build a range bound past every key.
pub fn max_key_len() -> usize {
    ALL.iter().map(|t| t.key_len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case() {
        let mut names: Vec<_> = ALL.iter().map(|t| t.name).collect();
        assert!(names.iter().all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
    }

    /// Undo data on disk names tables by id: an id must never change or move to another table. Reordering,
    /// inserting or renaming a declaration fails here.
    #[test]
    fn table_ids_are_pinned() {
        let pinned = [
            "meta",
            "headers",
            "block_hashes",
            "txs",
            "tx_hashes",
            "logs",
            "address_txs",
            "address_logs",
            "accounts",
            "reorged",
            "transfers",
            "address_transfers",
            "token_transfers",
            "tokens",
            "token_ranks",
            "token_balances",
            "token_holders",
            "holder_ranks",
            "nft_instances",
            "token_metadata",
            "token_search",
            "internal_txs",
            "address_internal",
            "internal_creations",
            "trace_blocks",
            "daily",
            "pending",
            "pending_by_time",
            "undo",
            "code",
            "contracts",
            "verified_sources",
            "verification_jobs",
            "coin_balances",
            "coin_balance_now",
            "coin_ranks",
        ];
        let accounts =
            [(40, "users"), (41, "user_tokens"), (42, "api_keys"), (43, "account_items"), (44, "item_owners")];
        let names =
            [(45, "names"), (46, "name_labels"), (47, "name_search"), (48, "reverse_names"), (49, "address_names")];
        let declared: Vec<(u8, &str)> = ALL.iter().map(|t| (t.id, t.name)).collect();
        let mut expected: Vec<(u8, &str)> = pinned.iter().enumerate().map(|(i, n)| (i as u8, *n)).collect();
        expected.extend(accounts);
        expected.extend(names);
        expected.extend([
            (50, "resolver_addrs"),
            (51, "resolver_names"),
            (56, "beacon_proxies"),
            (57, "verified_code"),
        ]);
        assert_eq!(declared, expected, "a table id changed: undo data already on disk would be misread");
        for def in ALL {
            assert_eq!(by_id(def.id).map(|t| t.name), Some(def.name));
        }
        assert!(by_id(pinned.len() as u8).is_none());
        let kept: Vec<&str> = ALL.iter().filter(|t| is_account_data(t)).map(|t| t.name).collect();
        assert_eq!(kept, accounts.map(|(_, n)| n), "exactly the account tables survive a reindex");
        assert_eq!(<UndoLog as Table>::ID, 28);
        assert_eq!(<Accounts as Table>::ID, 8);
    }

    /// A prefix entry is keyed by the prefix RocksDB's own prefix extractor cuts, a shorter key than any row's, so it
    /// never stands for a row; presence is asked of tables keyed by address first.
    #[test]
    fn prefix_entries_are_cached_only_for_tables_with_a_prefix_extractor() {
        for def in ALL.iter().filter(|t| matches!(t.cache, Cached::Prefix { .. })) {
            let len = def.access.prefix_len().unwrap_or_else(|| panic!("{} has no prefix", def.name));
            assert!(def.key_len > len, "{}", def.name);
            if def.cache == PRESENCE {
                assert_eq!(len, 20, "{} is not keyed by address", def.name);
            }
        }
        assert_eq!(<TxHashes as Table>::CACHE, HASH_PLACES);
        let key: Vec<u8> = (0..32).collect();
        assert_eq!(PRESENCE.entry_of(Access::AddressRows, &key), Some(&key[..20]));
        assert_eq!(HASH_PLACES.entry_of(Access::HashPrefix, &key), Some(&key[..8]));
        assert_eq!(PRESENCE.entry_of(Access::Lookup, &key), None);
        assert_eq!(Cached::Rows.entry_of(Access::Lookup, &key), Some(&key[..]));
        assert_eq!(Cached::No.entry_of(Access::Lookup, &key), None);
    }

    #[test]
    fn every_table_is_documented_in_schema_md() {
        let doc = include_str!("../../docs/schema.md");
        for t in ALL {
            assert!(doc.contains(&format!("### `{}`", t.name)), "docs/schema.md lacks a section for `{}`", t.name);
        }
    }
}

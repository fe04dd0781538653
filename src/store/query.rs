//! The read layer: named queries over the tables, in the logical order each surface shows (newest first, or
//! ascending inside a block or transaction), continuing strictly after a typed cursor. Callers name positions
//! (block numbers, `BlockPos`, `TransferPos`, …); how keys are encoded and which way a scan runs to produce that
//! order stays here.

use super::keys::{
    AddressPos, AddressTracePos, AddressTransferPos, BalanceKey, BlockKey, BlockPos, CoinRankKey, DayKey,
    HolderRankKey, InstanceKey, Key, PendingKey, ReorgedKey, SearchKey, TokenRankKey, TracePos, TransferPos, TxHashKey,
};
use super::records::{
    BlockRecord, Bundle, InternalCreation, LogRecord, PendingTxRecord, TokenKind, TraceSummary, TxRecord,
};
use super::tables::{
    AddressInternal, AddressLogs, AddressTransfers, AddressTxs, BlockHashes, Daily, Headers, HolderRanks,
    InternalCreations, InternalTxs, Logs, NftInstances, Pending, PendingByTime, Reorged, TokenBalances, TokenRanks,
    TokenSearch, TokenTransfers, TraceBlocks, Transactions, Transfers, TxHashes,
};
use super::tables::{BeaconProxies, Contracts, Table};
use super::tables::{CoinBalances, CoinRanks};
use super::{Direction, KeyRange, Reader, Scan, StoreError, StoreResult};
use alloy::primitives::{Address, B256, U256};
use std::ops::{Range, RangeInclusive};

/// Order of an address history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Newest first (the default of every list).
    NewestFirst,
    /// Oldest first.
    OldestFirst,
}

/// Most reorged rows examined when looking one up by hash.
const REORGED_LOOKUP_BUDGET: usize = 100_000;

/// Most logs whose token transfers [`Reader::transfers_in_logs`] reads by key; more are scanned.
const TRANSFER_LOGS_READ_BY_KEY: usize = 64;

/// A transaction found by hash: mined and indexed, or still waiting in the node's pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundTx {
    /// Mined at this position.
    Mined(BlockPos, TxRecord),
    /// In the pool.
    Pending(PendingTxRecord),
}

/// Every key of block `number` in a table keyed by block position (its rows sort together).
fn block_rows(number: u64) -> KeyRange {
    KeyRange::prefix(&BlockKey(number).encode())
}

/// A newest-first table from its start, or strictly after `cursor`.
fn after<K: Key>(cursor: Option<K>) -> KeyRange {
    match cursor {
        Some(key) => KeyRange::all().after(key.encode().as_ref()),
        None => KeyRange::all(),
    }
}

/// The rows of an address-prefixed table strictly after `cursor` in key order.
fn prefixed_after<K: Key>(address: &Address, cursor: Option<K>) -> KeyRange {
    let range = KeyRange::prefix(address.as_slice());
    match cursor {
        Some(key) => range.after(key.encode().as_ref()),
        None => range,
    }
}

/// The rows under `prefix` whose position lies in `blocks` (positions of every keyed-by-position table start with
/// the block number, newest first).
fn block_window(prefix: &[u8], blocks: &RangeInclusive<u64>) -> KeyRange {
    let at = |number: u64| [prefix, &BlockKey(number).encode()[..]].concat();
    let lower = at(*blocks.end());
    match super::next_prefix(&at(*blocks.start())) {
        Some(upper) => KeyRange::between(&lower, &upper),
        None => KeyRange { lower, upper: None, prefix: false },
    }
}

/// `Forward` for newest first, `Reverse` for oldest first (every block-ordered key sorts newest first).
fn scan_direction(order: Order) -> Direction {
    match order {
        Order::NewestFirst => Direction::Forward,
        Order::OldestFirst => Direction::Reverse,
    }
}

impl Reader<'_> {
    /// The rows of an address-prefixed table in `order`, continuing past `cursor` (keys sort newest first within
    /// the address, so oldest first is a reverse scan).
    fn history<T: Table>(&self, address: &Address, cursor: Option<T::Key>, order: Order) -> Scan<'_, T> {
        let range = KeyRange::prefix(address.as_slice());
        match (cursor, order) {
            (None, Order::NewestFirst) => self.scan(range, Direction::Forward),
            (None, Order::OldestFirst) => self.scan(range, Direction::Reverse),
            (Some(key), Order::NewestFirst) => self.scan(range.after(key.encode().as_ref()), Direction::Forward),
            (Some(key), Order::OldestFirst) => self.scan(range.before(key.encode().as_ref()), Direction::Reverse),
        }
    }

    /// Every row of table `T` in key order.
    pub fn rows<T: Table>(&self) -> Scan<'_, T> {
        self.scan(KeyRange::all(), Direction::Forward)
    }

    // Blocks.

    /// A canonical block.
    pub fn block(&self, number: u64) -> StoreResult<Option<BlockRecord>> {
        self.get::<Headers>(&BlockKey(number))
    }

    /// A block by hash: the canonical one (`true`), else a block that lost consensus in a reorg (`false`). The block
    /// found at the hash's height must carry the hash: a view without a snapshot (a read replica's) can see the
    /// height after a reorg replaced or removed its block, and then the reorged rows hold it.
    pub fn block_by_hash(&self, hash: B256) -> StoreResult<Option<(BlockRecord, bool)>> {
        if let Some(number) = self.get::<BlockHashes>(&hash)? {
            if let Some(block) = self.block(number)?.filter(|b| b.hash == hash) {
                return Ok(Some((block, true)));
            }
        }
        for row in self.scan::<Reorged>(KeyRange::all(), Direction::Forward).take(REORGED_LOOKUP_BUDGET) {
            let (key, block) = row?;
            if key.hash == hash {
                return Ok(Some((block, false)));
            }
        }
        Ok(None)
    }

    /// Canonical blocks, newest first, below `after`.
    pub fn blocks(&self, cursor: Option<u64>) -> Scan<'_, Headers> {
        self.scan(after(cursor.map(BlockKey)), Direction::Forward)
    }

    /// Blocks that lost consensus, newest first, after `(number, hash)` (a number alone: below that height).
    pub fn reorged(&self, after_pos: Option<(u64, Option<B256>)>) -> Scan<'_, Reorged> {
        let cursor =
            after_pos.map(|(number, hash)| ReorgedKey { number, hash: hash.unwrap_or(B256::repeat_byte(0xff)) });
        self.scan(after(cursor), Direction::Forward)
    }

    /// The newest block at `number` that lost consensus, if any.
    pub fn reorged_at(&self, number: u64) -> StoreResult<Option<BlockRecord>> {
        Ok(self.scan::<Reorged>(block_rows(number), Direction::Forward).next().transpose()?.map(|(_, b)| b))
    }

    /// Block `number` as it was indexed (header, transactions, logs), checked for completeness.
    pub fn load_block(&self, number: u64) -> StoreResult<Option<Bundle>> {
        let Some(header) = self.block(number)? else {
            return Ok(None);
        };
        let txs = self.block_txs(number, None).map(|r| r.map(|(_, tx)| tx)).collect::<StoreResult<Vec<_>>>()?;
        let logs = self
            .scan::<Logs>(block_rows(number), Direction::Reverse)
            .map(|r| r.map(|(_, log)| log))
            .collect::<StoreResult<Vec<_>>>()?;
        if txs.len() != header.tx_count as usize || logs.len() != header.log_count as usize {
            return Err(StoreError::Inconsistent(format!(
                "block {number}: {} of {} transactions and {} of {} logs stored",
                txs.len(),
                header.tx_count,
                logs.len(),
                header.log_count
            )));
        }
        Ok(Some(Bundle { header, txs, logs, balances: Vec::new() }))
    }

    // Transactions.

    /// A mined transaction by hash: the places filed under its first bytes, then the one whose row holds the
    /// whole hash (nearly always the only place).
    pub fn tx(&self, hash: B256) -> StoreResult<Option<(BlockPos, TxRecord)>> {
        let prefix = TxHashKey::prefix_of(&hash);
        let under = self.under::<TxHashes>(&prefix)?;
        let places: Vec<BlockPos> = if under.more {
            self.scan::<TxHashes>(KeyRange::prefix(&prefix), Direction::Forward)
                .map(|row| row.map(|(key, ())| key.pos))
                .collect::<StoreResult<_>>()?
        } else {
            under.keys.iter().map(|key| key.pos).collect()
        };
        for pos in places {
            if let Some(tx) = self.get::<Transactions>(&pos)?.filter(|tx| tx.hash == hash) {
                return Ok(Some((pos, tx)));
            }
        }
        Ok(None)
    }

    /// A transaction by hash: the chain first, else the pool.
    pub fn tx_or_pending(&self, hash: B256) -> StoreResult<Option<FoundTx>> {
        if let Some((pos, tx)) = self.tx(hash)? {
            return Ok(Some(FoundTx::Mined(pos, tx)));
        }
        Ok(self.get::<Pending>(&hash)?.map(FoundTx::Pending))
    }

    /// Up to `limit` logs of the transaction `tx` of block `block`, from log index `from` on (log indexes below the
    /// transaction's first are skipped), in log order.
    pub fn tx_logs(
        &self,
        block: u64,
        tx: &TxRecord,
        from: u32,
        limit: usize,
    ) -> StoreResult<Vec<(BlockPos, LogRecord)>> {
        let end = tx.first_log.saturating_add(tx.log_count);
        let keys: Vec<BlockPos> =
            (from.max(tx.first_log)..end).take(limit).map(|index| BlockPos { block, index }).collect();
        let found = self.multi_get::<Logs>(&keys)?;
        Ok(keys.into_iter().zip(found).filter_map(|(k, log)| Some((k, log?))).collect())
    }

    /// Whether a transaction with this hash is mined and indexed.
    pub fn is_mined(&self, hash: B256) -> StoreResult<bool> {
        Ok(self.tx(hash)?.is_some())
    }

    /// Every transaction, newest first, after `after`.
    pub fn txs(&self, cursor: Option<BlockPos>) -> Scan<'_, Transactions> {
        self.scan(after(cursor), Direction::Forward)
    }

    /// Transactions of blocks `oldest` and newer, newest first.
    pub fn txs_since(&self, oldest: u64) -> Scan<'_, Transactions> {
        let range = match oldest.checked_sub(1) {
            Some(below) => KeyRange::all().before(&BlockKey(below).encode()),
            None => KeyRange::all(),
        };
        self.scan(range, Direction::Forward)
    }

    /// A block's transactions in index order, after index `after`.
    pub fn block_txs(&self, number: u64, after: Option<u32>) -> Scan<'_, Transactions> {
        let mut range = block_rows(number);
        if let Some(index) = after {
            range = range.before(&BlockPos { block: number, index }.encode());
        }
        self.scan(range, Direction::Reverse)
    }

    /// Pool transactions in arrival order, newest first, after `after`.
    pub fn pending(&self, cursor: Option<PendingKey>) -> Scan<'_, PendingByTime> {
        self.scan(after(cursor), Direction::Forward)
    }

    // Address histories.

    /// The transactions an address sent, received or created (role bits), in `order`, continuing past `after`.
    pub fn address_txs(&self, address: Address, after: Option<BlockPos>, order: Order) -> Scan<'_, AddressTxs> {
        let cursor = after.map(|pos| AddressPos { address, pos });
        self.history(&address, cursor, order)
    }

    /// The logs an address emitted, newest first, after `after`.
    pub fn address_logs(&self, address: Address, after: Option<BlockPos>) -> Scan<'_, AddressLogs> {
        let cursor = after.map(|pos| AddressPos { address, pos });
        self.history(&address, cursor, Order::NewestFirst)
    }

    /// The token transfers an address sent or received (direction bits), newest first, after `after`.
    pub fn address_transfers(&self, address: Address, after: Option<TransferPos>) -> Scan<'_, AddressTransfers> {
        let cursor = after.map(|pos| AddressTransferPos { address, pos });
        self.history(&address, cursor, Order::NewestFirst)
    }

    /// The internal calls from, to or creating an address (role bits), newest first, after `after`.
    pub fn address_calls(&self, address: Address, after: Option<TracePos>) -> Scan<'_, AddressInternal> {
        let cursor = after.map(|pos| AddressTracePos { address, pos });
        self.history(&address, cursor, Order::NewestFirst)
    }

    /// How a contract was created inside transactions, newest first. Most addresses were not: the row cache
    /// answers that for them without an iterator.
    pub fn internal_creations(&self, address: Address) -> StoreResult<Vec<InternalCreation>> {
        if !self.holds_any::<InternalCreations>(&address)? {
            return Ok(Vec::new());
        }
        self.scan::<InternalCreations>(KeyRange::prefix(address.as_slice()), Direction::Forward)
            .map(|row| row.map(|(_, creation)| creation))
            .collect()
    }

    /// A holder's token balances (one row per token and id), in token order, after `after`.
    pub fn balances(&self, holder: Address, after: Option<BalanceKey>) -> Scan<'_, TokenBalances> {
        self.scan(prefixed_after(&holder, after), Direction::Forward)
    }

    /// A holder's balances of one token, one row per id, in id order.
    pub fn holdings_of(&self, holder: Address, token: Address) -> Scan<'_, TokenBalances> {
        let prefix = [holder.as_slice(), token.as_slice()].concat();
        self.scan(KeyRange::prefix(&prefix), Direction::Forward)
    }

    /// Whether an address holds any token (answered from the row cache when it can be).
    pub fn has_tokens(&self, holder: Address) -> StoreResult<bool> {
        self.holds_any::<TokenBalances>(&holder)
    }

    // Token transfers and tokens.

    /// Every token transfer, newest first, after `after`.
    pub fn transfers(&self, cursor: Option<TransferPos>) -> Scan<'_, Transfers> {
        self.scan(after(cursor), Direction::Forward)
    }

    /// The transfers decoded from logs `logs` of block `block`, in log and item order.
    ///
    /// A few logs (a transaction's) are read by key: only an ERC-1155 log can hold more than its item 0, so the
    /// first items of all logs come in one `multi_get` (which the row cache answers for pages opened again) and
    /// only ERC-1155 logs are scanned. An iterator costs more than several point reads.
    pub fn transfers_in_logs(
        &self,
        block: u64,
        logs: Range<u32>,
    ) -> StoreResult<Vec<(TransferPos, super::records::TokenTransferRecord)>> {
        if logs.len() > TRANSFER_LOGS_READ_BY_KEY {
            return self.scan_transfers_in_logs(block, logs);
        }
        let firsts: Vec<TransferPos> = logs.map(|log| TransferPos { block, log, item: 0 }).collect();
        let found = self.multi_get::<Transfers>(&firsts)?;
        let mut out = Vec::new();
        for (pos, first) in firsts.into_iter().zip(found) {
            match first {
                Some(record) if record.kind == TokenKind::Erc1155 => {
                    out.extend(self.scan_transfers_in_logs(block, pos.log..pos.log + 1)?)
                }
                Some(record) => out.push((pos, record)),
                None => {}
            }
        }
        Ok(out)
    }

    /// [`Self::transfers_in_logs`] by one scan over the logs' range (wide ranges, ERC-1155 logs).
    pub(super) fn scan_transfers_in_logs(
        &self,
        block: u64,
        logs: Range<u32>,
    ) -> StoreResult<Vec<(TransferPos, super::records::TokenTransferRecord)>> {
        if logs.is_empty() {
            return Ok(Vec::new());
        }
        let lowest = TransferPos { block, log: logs.end - 1, item: u16::MAX }.encode();
        let mut upper = TransferPos { block, log: logs.start, item: 0 }.encode().to_vec();
        upper.push(0);
        self.scan::<Transfers>(KeyRange::between(&lowest, &upper), Direction::Reverse).collect()
    }

    /// A token's transfers, newest first, after `after`.
    pub fn token_transfers(&self, token: Address, after: Option<TransferPos>) -> Scan<'_, TokenTransfers> {
        let cursor = after.map(|pos| AddressTransferPos { address: token, pos });
        self.history(&token, cursor, Order::NewestFirst)
    }

    /// Tokens by holder count, most held first (or fewest first), continuing past `cursor`.
    pub fn token_ranks(&self, cursor: Option<TokenRankKey>, fewest_first: bool) -> Scan<'_, TokenRanks> {
        match (cursor, fewest_first) {
            (cursor, false) => self.scan(after(cursor), Direction::Forward),
            (None, true) => self.scan(KeyRange::all(), Direction::Reverse),
            (Some(key), true) => self.scan(KeyRange::all().before(key.encode().as_ref()), Direction::Reverse),
        }
    }

    /// Tokens whose name or symbol starts with `text` (lowercased, cut at 32 bytes), after `after`.
    pub fn token_search(&self, text: &str, after: Option<SearchKey>) -> Scan<'_, TokenSearch> {
        let (padded, len) = super::keys::search_text(text);
        let mut range = KeyRange::prefix(&padded[..len]);
        if let Some(key) = after {
            range = range.after(&key.encode());
        }
        self.scan(range, Direction::Forward)
    }

    /// A token's holders, largest amount first, after `after`.
    pub fn holders(&self, token: Address, after: Option<HolderRankKey>) -> Scan<'_, HolderRanks> {
        self.scan(prefixed_after(&token, after), Direction::Forward)
    }

    /// The ids of an NFT collection, highest first, below `below`.
    pub fn instances(&self, token: Address, below: Option<U256>) -> Scan<'_, NftInstances> {
        let mut range = KeyRange::prefix(token.as_slice());
        if let Some(id) = below {
            range = range.before(&InstanceKey { token, id }.encode());
        }
        self.scan(range, Direction::Reverse)
    }

    // Internal transactions.

    /// Every stored call frame, newest first, after `after` (top-level calls included: index 0).
    pub fn calls(&self, cursor: Option<TracePos>) -> Scan<'_, InternalTxs> {
        self.scan(after(cursor), Direction::Forward)
    }

    /// Contracts with stored code, by address, strictly after `cursor`.
    pub fn contracts_after(&self, cursor: Option<Address>) -> Scan<'_, Contracts> {
        self.scan(after(cursor), Direction::Forward)
    }

    /// The proxies that named `beacon` as their beacon (a proxy that moved to another beacon since stays listed:
    /// its `contracts` row says which beacon it reads now).
    pub fn beacon_proxies(&self, beacon: Address) -> impl Iterator<Item = StoreResult<Address>> + '_ {
        let rows: Scan<'_, BeaconProxies> = self.scan(KeyRange::prefix(beacon.as_slice()), Direction::Forward);
        rows.map(|row| row.map(|(key, ())| key.proxy))
    }

    /// A block's call frames in (transaction, call) order, after `after`.
    pub fn block_calls(&self, number: u64, after: Option<TracePos>) -> Scan<'_, InternalTxs> {
        let mut range = block_rows(number);
        if let Some(pos) = after.filter(|p| p.block == number) {
            range = range.before(&pos.encode());
        }
        self.scan(range, Direction::Reverse)
    }

    /// The calls of the transaction at `tx` below its top-level call, in call order, after call index `after`.
    pub fn tx_calls(&self, tx: BlockPos, after: Option<u32>) -> Scan<'_, InternalTxs> {
        let at = |index: u32| TracePos { block: tx.block, tx: tx.index, index };
        let prefix = at(0).encode();
        let range = KeyRange::prefix(&prefix[..12]).before(&at(after.unwrap_or(0)).encode());
        self.scan(range, Direction::Reverse)
    }

    /// Per transaction of a traced block: `(internal calls, some call failed)`; `None` until it is traced.
    pub fn trace_summary(&self, number: u64) -> StoreResult<Option<TraceSummary>> {
        self.get::<TraceBlocks>(&BlockKey(number))
    }

    // Statistics.

    // Block windows (the Etherscan-style API's `startblock`/`endblock`): a list of rows inside a block range, in
    // either order, without a cursor.

    /// The transactions of an address (role bits) in blocks `blocks`, in `order`.
    pub fn address_txs_in(&self, address: Address, blocks: RangeInclusive<u64>, order: Order) -> Scan<'_, AddressTxs> {
        self.scan(block_window(address.as_slice(), &blocks), scan_direction(order))
    }

    /// The logs an address emitted in blocks `blocks`, oldest first.
    pub fn address_logs_in(&self, address: Address, blocks: RangeInclusive<u64>) -> Scan<'_, AddressLogs> {
        self.scan(block_window(address.as_slice(), &blocks), Direction::Reverse)
    }

    /// Every log of blocks `blocks`, oldest first.
    pub fn logs_in(&self, blocks: RangeInclusive<u64>) -> Scan<'_, Logs> {
        self.scan(block_window(&[], &blocks), Direction::Reverse)
    }

    /// The token transfers an address sent or received (direction bits) in blocks `blocks`, in `order`.
    pub fn address_transfers_in(
        &self,
        address: Address,
        blocks: RangeInclusive<u64>,
        order: Order,
    ) -> Scan<'_, AddressTransfers> {
        self.scan(block_window(address.as_slice(), &blocks), scan_direction(order))
    }

    /// A token's transfers in blocks `blocks`, in `order`.
    pub fn token_transfers_in(
        &self,
        token: Address,
        blocks: RangeInclusive<u64>,
        order: Order,
    ) -> Scan<'_, TokenTransfers> {
        self.scan(block_window(token.as_slice(), &blocks), scan_direction(order))
    }

    /// The internal calls from, to or creating an address (role bits) in blocks `blocks`, in `order`.
    pub fn address_calls_in(
        &self,
        address: Address,
        blocks: RangeInclusive<u64>,
        order: Order,
    ) -> Scan<'_, AddressInternal> {
        self.scan(block_window(address.as_slice(), &blocks), scan_direction(order))
    }

    /// Every stored call frame of blocks `blocks`, in `order` (top-level calls included: index 0).
    pub fn calls_in(&self, blocks: RangeInclusive<u64>, order: Order) -> Scan<'_, InternalTxs> {
        self.scan(block_window(&[], &blocks), scan_direction(order))
    }

    /// Block headers of blocks `blocks`, in `order`.
    pub fn blocks_in(&self, blocks: RangeInclusive<u64>, order: Order) -> Scan<'_, Headers> {
        self.scan(block_window(&[], &blocks), scan_direction(order))
    }

    /// Day statistics of days `first..=last`, newest first.
    pub fn days(&self, first: u32, last: u32) -> Scan<'_, Daily> {
        // Newest-first keys: from `last`'s key up to the key of the day before `first`, or past every key.
        let end = match first.checked_sub(1) {
            Some(before) => DayKey(before).encode().to_vec(),
            None => vec![0xff; DayKey::LEN + 1],
        };
        let range = KeyRange::between(&DayKey(last).encode(), &end);
        self.scan(range, Direction::Forward)
    }

    // Native balances.

    /// An address's indexed native balances, one per block that named it, newest first, below block `below`.
    pub fn coin_balances(&self, address: Address, below: Option<u64>) -> Scan<'_, CoinBalances> {
        let cursor = below.map(|block| AddressPos { address, pos: BlockPos { block, index: 0 } });
        self.history(&address, cursor, Order::NewestFirst)
    }

    /// Addresses with a non-zero indexed balance, richest first (ties by address), after `after`.
    pub fn coin_ranks(&self, after_pos: Option<CoinRankKey>) -> Scan<'_, CoinRanks> {
        self.scan(after(after_pos), Direction::Forward)
    }
}

//! The pure core of indexing: what a block writes, with no I/O.
//!
//! * [`block_rows`] enumerates every row a block owns (headers, hashes, transactions, logs, address indexes).
//!   Applying a block puts exactly these rows; reverting it deletes exactly these rows, recomputed from the stored
//!   copy of the block. One function, both directions.
//! * [`derive`] computes the derived rows (account summaries, global counters) from the block and their prior
//!   values. The prior values are the block's undo data: reverting restores them verbatim.

use super::bundle::Bundle;
use crate::store::keys::{AddressPos, BlockKey, BlockPos, DayKey};
use crate::store::records::{role, AccountRecord, Counters, Creation, DayStats, Seen, Undo};
use crate::store::tables::{AddressLogs, AddressTxs, BlockHashes, Headers, Logs, Table, Transactions, TxHashes};
use crate::store::{Batch, StoreResult};
use alloy::primitives::Address;
use std::collections::{BTreeMap, BTreeSet};

/// Receives the rows of a block: a put when applying, a delete when reverting.
pub trait RowSink {
    /// One row.
    fn row<T: Table>(&mut self, key: &T::Key, value: &T::Value) -> StoreResult<()>;
}

/// Puts every row into a batch.
#[derive(Debug)]
pub struct PutRows<'b, 'a>(pub &'b mut Batch<'a>);

impl RowSink for PutRows<'_, '_> {
    fn row<T: Table>(&mut self, key: &T::Key, value: &T::Value) -> StoreResult<()> {
        self.0.put::<T>(key, value)
    }
}

/// Deletes every row from a batch.
#[derive(Debug)]
pub struct DeleteRows<'b, 'a>(pub &'b mut Batch<'a>);

impl RowSink for DeleteRows<'_, '_> {
    fn row<T: Table>(&mut self, key: &T::Key, _value: &T::Value) -> StoreResult<()> {
        self.0.delete::<T>(key);
        Ok(())
    }
}

/// The addresses of one transaction with their role bits, in address order.
pub fn tx_participants(tx: &crate::store::records::TxRecord) -> BTreeMap<Address, u8> {
    let mut roles = BTreeMap::new();
    *roles.entry(tx.from).or_insert(0) |= role::FROM;
    if let Some(to) = tx.to {
        *roles.entry(to).or_insert(0) |= role::TO;
    }
    if let Some(created) = tx.created {
        *roles.entry(created).or_insert(0) |= role::CREATED;
    }
    roles
}

/// Every row the block owns, fed to `sink` in a fixed order.
pub fn block_rows(block: &Bundle, sink: &mut impl RowSink) -> StoreResult<()> {
    let number = block.number();
    sink.row::<Headers>(&BlockKey(number), &block.header)?;
    sink.row::<BlockHashes>(&block.header.hash, &number)?;
    for (index, tx) in block.txs.iter().enumerate() {
        let pos = BlockPos { block: number, index: index as u32 };
        sink.row::<Transactions>(&pos, tx)?;
        sink.row::<TxHashes>(&tx.hash, &pos)?;
        for (address, roles) in tx_participants(tx) {
            sink.row::<AddressTxs>(&AddressPos { address, pos }, &roles)?;
        }
    }
    for (index, log) in block.logs.iter().enumerate() {
        let pos = BlockPos { block: number, index: index as u32 };
        sink.row::<Logs>(&pos, log)?;
        sink.row::<AddressLogs>(&AddressPos { address: log.address, pos }, &())?;
    }
    Ok(())
}

/// The addresses whose account rows the block rewrites: miner, transaction participants and log emitters.
pub fn touched_accounts(block: &Bundle) -> BTreeSet<Address> {
    let mut out = BTreeSet::from([block.header.miner]);
    for tx in &block.txs {
        out.extend(tx_participants(tx).into_keys());
    }
    out.extend(block.logs.iter().map(|l| l.address));
    out
}

/// Derived rows after a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    /// New account records, one per touched address.
    pub accounts: BTreeMap<Address, AccountRecord>,
    /// New global counters.
    pub counters: Counters,
    /// The block's day and its new statistics.
    pub day: (u32, DayStats),
}

/// The prior values given to [`derive`] do not cover what the block touches (a bug in the caller, reported,
/// never ignored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MissingPrior {
    /// No prior account value for a touched address.
    #[error("no prior account value for {0}")]
    Account(Address),
    /// The prior day statistics are for another day.
    #[error("prior day statistics are for day {given}, the block is on day {expected}")]
    Day {
        /// The block's day.
        expected: u32,
        /// The day given.
        given: u32,
    },
}

/// The UTC day of a block.
pub fn block_day(block: &Bundle) -> u32 {
    DayKey::of_timestamp(block.header.timestamp).0
}

/// Computes the derived rows from the block and `prior`, the values before it (which must cover
/// [`touched_accounts`] and [`block_day`]).
pub fn derive(block: &Bundle, prior: &Undo) -> Result<Derived, MissingPrior> {
    let expected = block_day(block);
    if prior.day.0 != expected {
        return Err(MissingPrior::Day { expected, given: prior.day.0 });
    }
    let mut touched = Touched {
        accounts: BTreeMap::new(),
        prior: prior.accounts.iter().map(|(a, r)| (*a, r)).collect(),
        seen: Seen { block: block.number(), timestamp: block.header.timestamp },
        new_addresses: 0,
    };
    touched.get(block.header.miner)?.blocks_mined += 1;
    for tx in &block.txs {
        for (address, roles) in tx_participants(tx) {
            let account = touched.get(address)?;
            account.tx_count += 1;
            if roles & role::FROM != 0 {
                account.gas_used += u128::from(tx.gas_used);
            }
            if roles & role::CREATED != 0 {
                account.creation = Some(Creation { creator: tx.from, tx: tx.hash, success: tx.succeeded() });
            }
        }
    }
    for log in &block.logs {
        touched.get(log.address)?.log_count += 1;
    }
    let tx_count = block.txs.len() as u64;
    let gas_used = u128::from(block.header.gas_used);
    let before = prior.counters.unwrap_or_default();
    let counters = Counters {
        blocks: before.blocks + 1,
        txs: before.txs + tx_count,
        addresses: before.addresses + touched.new_addresses,
        gas_used: before.gas_used + gas_used,
    };
    let before = prior.day.1.unwrap_or_default();
    let day = DayStats { blocks: before.blocks + 1, txs: before.txs + tx_count, gas_used: before.gas_used + gas_used };
    Ok(Derived { accounts: touched.accounts, counters, day: (expected, day) })
}

/// Account records being rewritten by one block.
struct Touched<'p> {
    accounts: BTreeMap<Address, AccountRecord>,
    prior: BTreeMap<Address, &'p Option<AccountRecord>>,
    seen: Seen,
    new_addresses: u64,
}

impl Touched<'_> {
    /// The record of `address` as this block leaves it, starting from its prior value.
    fn get(&mut self, address: Address) -> Result<&mut AccountRecord, MissingPrior> {
        use std::collections::btree_map::Entry;
        match self.accounts.entry(address) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let before = self.prior.get(&address).ok_or(MissingPrior::Account(address))?;
                let record = match before {
                    Some(r) => AccountRecord { last_seen: self.seen, ..r.clone() },
                    None => {
                        self.new_addresses += 1;
                        AccountRecord::new(self.seen)
                    }
                };
                Ok(e.insert(record))
            }
        }
    }
}

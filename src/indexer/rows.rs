//! The core of indexing: what a block writes.
//!
//! * [`block_rows`] enumerates every row a block owns (headers, hashes, transactions, logs, token transfers and
//!   the address and token indexes). It is pure: applying a block puts exactly these rows; reverting it deletes
//!   exactly these rows, recomputed from the stored copy of the block. One function, both directions.
//! * [`derive`] updates the derived rows (account summaries, global counters, day statistics, token balances,
//!   holders, NFT owners, token records, EIP-7702 delegations) through [`Changes`], which records their prior
//!   values as the block's undo data; reverting restores them verbatim.

use crate::chain::{block_transfers, transfer_parties, tx_participants};
use crate::contracts::proxy::{delegate_of, delegation_designator};
use crate::store::keys::{
    AddressPos, AddressTransferPos, BalanceKey, BlockKey, BlockPos, DayKey, HolderKey, HolderRankKey, InstanceKey,
    MetaKey, TokenRankKey, TxHashKey,
};
use crate::store::records::{
    role, AccountRecord, Amount, AuthorizationStatus, Bundle, ContractRecord, Counters, Creation, DayStats,
    InstanceRecord, Meta, Seen, TokenKind, TokenRecord, TokenTransferRecord,
};
use crate::store::tables::{
    Accounts, AddressLogs, AddressTransfers, AddressTxs, BlockHashes, Code, CoinBalances, Contracts, Daily, Headers,
    HolderRanks, Logs, MetaTable, NftInstances, Table, TokenBalances, TokenHolders, TokenRanks, TokenTransfers, Tokens,
    Transactions, Transfers, TxHashes,
};
use crate::store::Changes;
use crate::store::{Batch, StoreError, StoreResult};
use alloy::primitives::{keccak256, Address, B256, U256};
use std::collections::BTreeMap;

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

/// Every row the block owns, fed to `sink` in a fixed order.
pub fn block_rows(block: &Bundle, sink: &mut impl RowSink) -> StoreResult<()> {
    let number = block.number();
    sink.row::<Headers>(&BlockKey(number), &block.header)?;
    sink.row::<BlockHashes>(&block.header.hash, &number)?;
    for (index, tx) in block.txs.iter().enumerate() {
        let pos = BlockPos { block: number, index: index as u32 };
        sink.row::<Transactions>(&pos, tx)?;
        sink.row::<TxHashes>(&TxHashKey::new(&tx.hash, pos), &())?;
        for (address, roles) in tx_participants(tx) {
            sink.row::<AddressTxs>(&AddressPos { address, pos }, &roles)?;
        }
    }
    for (index, log) in block.logs.iter().enumerate() {
        let pos = BlockPos { block: number, index: index as u32 };
        sink.row::<Logs>(&pos, log)?;
        sink.row::<AddressLogs>(&AddressPos { address: log.address, pos }, &())?;
    }
    for (pos, transfer) in block_transfers(block) {
        sink.row::<Transfers>(&pos, &transfer)?;
        sink.row::<TokenTransfers>(&AddressTransferPos { address: transfer.token, pos }, &())?;
        for (address, bits) in transfer_parties(&transfer) {
            sink.row::<AddressTransfers>(&AddressTransferPos { address, pos }, &bits)?;
        }
    }
    Ok(())
}

/// The UTC day of a block.
pub fn block_day(block: &Bundle) -> u32 {
    DayKey::of_timestamp(block.header.timestamp).0
}

/// Updates every derived row the block affects.
pub fn derive(block: &Bundle, changes: &mut Changes<'_>) -> StoreResult<()> {
    let seen = Seen { block: block.number(), timestamp: block.header.timestamp };
    let transfers = block_transfers(block);

    // Accounts: what each touched address did in this block.
    let mut activity: BTreeMap<Address, AccountDelta> = BTreeMap::new();
    activity.entry(block.header.miner).or_default().blocks_mined += 1;
    for tx in &block.txs {
        for (address, roles) in tx_participants(tx) {
            let delta = activity.entry(address).or_default();
            delta.txs += 1;
            if roles & role::FROM != 0 {
                delta.gas_used = delta.gas_used.saturating_add(u128::from(tx.gas_used));
            }
            if roles & role::TO != 0 {
                delta.gas_received = delta.gas_received.saturating_add(u128::from(tx.gas_used));
            }
            if roles & role::CREATED != 0 {
                delta.creation = Some(Creation { creator: tx.from, tx: tx.hash, success: tx.succeeded() });
            }
        }
    }
    for log in &block.logs {
        activity.entry(log.address).or_default().logs += 1;
    }
    for (_, transfer) in &transfers {
        for address in transfer_parties(transfer).into_keys() {
            activity.entry(address).or_default().token_transfers += 1;
        }
    }
    let mut new_addresses = 0;
    for (address, delta) in activity {
        let record = match changes.get::<Accounts>(&address)? {
            Some(record) => AccountRecord { last_seen: seen, ..record },
            None => {
                new_addresses += 1;
                AccountRecord::new(seen)
            }
        };
        changes.set::<Accounts>(&address, Some(&delta.apply(record)))?;
    }

    // Global counters and the block's day.
    let tx_count = block.txs.len() as u64;
    let gas_used = u128::from(block.header.gas_used);
    let before = match changes.get::<MetaTable>(&MetaKey::Counters)? {
        Some(Meta::Counters(c)) => c,
        None => Counters::default(),
        Some(other) => return Err(StoreError::Inconsistent(format!("counters row holds {other:?}"))),
    };
    let counters = Counters {
        blocks: before.blocks + 1,
        txs: before.txs + tx_count,
        addresses: before.addresses + new_addresses,
        gas_used: before.gas_used.saturating_add(gas_used),
    };
    changes.set::<MetaTable>(&MetaKey::Counters, Some(&Meta::Counters(counters)))?;
    let day = DayKey(block_day(block));
    let stats = changes.get::<Daily>(&day)?.unwrap_or_default();
    let stats = DayStats {
        blocks: stats.blocks + 1,
        txs: stats.txs + tx_count,
        gas_used: stats.gas_used.saturating_add(gas_used),
    };
    changes.set::<Daily>(&day, Some(&stats))?;

    // Token state, transfer by transfer.
    for (_, transfer) in &transfers {
        apply_transfer(changes, transfer, block.number())?;
    }

    delegate(block, changes)?;

    // Native balances the node reported after this block (their history rows; the latest balance and the ranking
    // follow in block order from the balance writer).
    for (address, value) in &block.balances {
        let pos = AddressPos { address: *address, pos: BlockPos { block: block.number(), index: 0 } };
        changes.set::<CoinBalances>(&pos, Some(&Amount(*value)))?;
    }
    Ok(())
}

/// EIP-7702: each authority's last applied authorization of the block decides its code. Its `contracts` row holds
/// the delegation designator as code (written by the set-code transaction, at its block), so the account shows as
/// a contract delegating to its delegate; a delegation to address 0 clears it. A row of a contract created at that
/// address is never replaced.
fn delegate(block: &Bundle, changes: &mut Changes<'_>) -> StoreResult<()> {
    let mut last: BTreeMap<Address, (Address, B256)> = BTreeMap::new();
    for tx in &block.txs {
        for auth in tx.authorizations.iter().filter(|a| a.status == Some(AuthorizationStatus::Ok)) {
            if let Some(authority) = auth.authority {
                last.insert(authority, (auth.address, tx.hash));
            }
        }
    }
    for (authority, (delegate, tx)) in last {
        let delegated = match changes.get::<Contracts>(&authority)? {
            None => false,
            Some(row) => match changes.get::<Code>(&row.code_hash)? {
                Some(code) if delegate_of(&code).is_some() => true,
                _ => continue,
            },
        };
        if delegate.is_zero() {
            if delegated {
                changes.set::<Contracts>(&authority, None)?;
            }
            continue;
        }
        let code = delegation_designator(delegate);
        let code_hash = keccak256(&code);
        if changes.get::<Code>(&code_hash)?.is_none() {
            changes.set::<Code>(&code_hash, Some(&code))?;
        }
        let row = ContractRecord { code_hash, creation_tx: tx, block: block.number(), proxy: None };
        changes.set::<Contracts>(&authority, Some(&row))?;
    }
    Ok(())
}

/// What one block adds to an account.
#[derive(Debug, Default)]
struct AccountDelta {
    txs: u64,
    gas_used: u128,
    gas_received: u128,
    blocks_mined: u64,
    logs: u64,
    token_transfers: u64,
    creation: Option<Creation>,
}

impl AccountDelta {
    fn apply(self, mut record: AccountRecord) -> AccountRecord {
        record.tx_count += self.txs;
        record.gas_used = record.gas_used.saturating_add(self.gas_used);
        record.gas_received = record.gas_received.saturating_add(self.gas_received);
        record.blocks_mined += self.blocks_mined;
        record.log_count += self.logs;
        record.token_transfer_count += self.token_transfers;
        if self.creation.is_some() {
            record.creation = self.creation;
        }
        record
    }
}

/// The token a transfer belongs to, created on its first transfer.
fn token_record(changes: &mut Changes<'_>, t: &TokenTransferRecord, block: u64) -> StoreResult<TokenRecord> {
    if let Some(record) = changes.get::<Tokens>(&t.token)? {
        return Ok(record);
    }
    let record = TokenRecord { kind: t.kind, holders: 0, transfers: 0, total_supply: U256::ZERO, first_block: block };
    changes.set::<TokenRanks>(&TokenRankKey { holders: 0, token: t.token }, Some(&()))?;
    Ok(record)
}

fn apply_transfer(changes: &mut Changes<'_>, t: &TokenTransferRecord, block: u64) -> StoreResult<()> {
    let mut token = token_record(changes, t, block)?;
    let holders_before = token.holders;
    token.transfers += 1;
    if t.kind != token.kind {
        // A contract that emits transfers of two standards (an ERC-404 hybrid's unit transfer and its NFT transfer
        // share `Transfer`'s signature): holdings follow the token's own standard, its first transfer's; the other
        // transfers are listed but would add ids to amounts.
        return changes.set::<Tokens>(&t.token, Some(&token));
    }
    let id = t.token_id.unwrap_or(U256::ZERO);
    // ERC-721 moves one id: the holder totals count ids held.
    let amount = if t.kind == TokenKind::Erc721 { U256::from(1) } else { t.amount };
    if !t.from.is_zero() {
        let key = BalanceKey { holder: t.from, token: t.token, id };
        let left = changes.get::<TokenBalances>(&key)?.unwrap_or_default().0.saturating_sub(amount);
        changes.set::<TokenBalances>(&key, (!left.is_zero()).then_some(&Amount(left)))?;
        change_holding(changes, &mut token, t.token, t.from, amount, false)?;
    } else {
        token.total_supply = token.total_supply.saturating_add(amount);
    }
    if !t.to.is_zero() {
        let key = BalanceKey { holder: t.to, token: t.token, id };
        let now = changes.get::<TokenBalances>(&key)?.unwrap_or_default().0.saturating_add(amount);
        // A transfer of nothing gives a new recipient no holding (anyone can send 0 of any token to anyone).
        changes.set::<TokenBalances>(&key, (!now.is_zero()).then_some(&Amount(now)))?;
        change_holding(changes, &mut token, t.token, t.to, amount, true)?;
    } else {
        token.total_supply = token.total_supply.saturating_sub(amount);
    }
    if t.kind != TokenKind::Erc20 {
        let key = InstanceKey { token: t.token, id };
        let mut instance =
            changes.get::<NftInstances>(&key)?.unwrap_or(InstanceRecord { owner: None, supply: U256::ZERO });
        if t.from.is_zero() {
            instance.supply = instance.supply.saturating_add(amount);
        }
        if t.to.is_zero() {
            instance.supply = instance.supply.saturating_sub(amount);
        }
        if t.kind == TokenKind::Erc721 {
            instance.owner = (!t.to.is_zero()).then_some(t.to);
        }
        changes.set::<NftInstances>(&key, Some(&instance))?;
    }
    if token.holders != holders_before {
        changes.set::<TokenRanks>(&TokenRankKey { holders: holders_before, token: t.token }, None)?;
        changes.set::<TokenRanks>(&TokenRankKey { holders: token.holders, token: t.token }, Some(&()))?;
    }
    changes.set::<Tokens>(&t.token, Some(&token))
}

/// Adds to or takes from a holder's total of a token, keeping the holder ranking and the holder count in step.
fn change_holding(
    changes: &mut Changes<'_>,
    token: &mut TokenRecord,
    address: Address,
    holder: Address,
    amount: U256,
    add: bool,
) -> StoreResult<()> {
    let key = HolderKey { token: address, holder };
    let before = changes.get::<TokenHolders>(&key)?.unwrap_or_default().0;
    let after = if add { before.saturating_add(amount) } else { before.saturating_sub(amount) };
    if before == after {
        return Ok(());
    }
    if !before.is_zero() {
        changes.set::<HolderRanks>(&HolderRankKey { token: address, amount: before, holder }, None)?;
    }
    if after.is_zero() {
        changes.set::<TokenHolders>(&key, None)?;
        token.holders = token.holders.saturating_sub(1);
    } else {
        changes.set::<TokenHolders>(&key, Some(&Amount(after)))?;
        changes.set::<HolderRanks>(&HolderRankKey { token: address, amount: after, holder }, Some(&()))?;
        if before.is_zero() {
            token.holders += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::chain::tokens::TRANSFER;
    use crate::indexer::apply::{apply_blocks, empty_block};
    use crate::store::keys::BalanceKey;
    use crate::store::records::{LogRecord, TokenKind};
    use crate::store::tables::{NftInstances, TokenBalances, Tokens};
    use crate::store::{Store, StoreOptions};
    use alloy::primitives::{Address, Bytes, B256, U256};

    /// An ERC-404 hybrid: each move of whole units emits an ERC-20 `Transfer` (amount in the data) and an ERC-721
    /// `Transfer` per unit (id in a fourth topic). Its holdings are the ERC-20 amounts, as `balanceOf` answers.
    #[test]
    fn a_token_s_transfers_of_another_standard_leave_its_holdings_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let (token, alice) = (Address::repeat_byte(0x40), Address::repeat_byte(0xaa));
        let unit = U256::from(10).pow(U256::from(18));
        let log = |topics: Vec<B256>, data: Vec<u8>| LogRecord {
            address: token,
            topics,
            data: Bytes::from(data),
            tx_index: 0,
            tx_hash: B256::repeat_byte(1),
        };
        let mut block = empty_block(0, 0, B256::ZERO);
        let (from, to) = (Address::ZERO.into_word(), alice.into_word());
        block.logs = vec![
            log(vec![TRANSFER, from, to], (unit * U256::from(2)).to_be_bytes_vec()),
            log(vec![TRANSFER, from, to, B256::with_last_byte(1)], vec![]),
            log(vec![TRANSFER, from, to, B256::with_last_byte(2)], vec![]),
        ];
        apply_blocks(&store, &[block], true).unwrap();
        let reader = store.reader();
        let record = reader.get::<Tokens>(&token).unwrap().unwrap();
        assert_eq!(
            (record.kind, record.total_supply, record.holders, record.transfers),
            (TokenKind::Erc20, unit * U256::from(2), 1, 3)
        );
        let held = reader.get::<TokenBalances>(&BalanceKey { holder: alice, token, id: U256::ZERO }).unwrap();
        assert_eq!(held.map(|a| a.0), Some(unit * U256::from(2)), "no id added to the amount");
        assert_eq!(reader.rows::<NftInstances>().count(), 0, "no instances of an ERC-20");
    }
}

//! Deep comparison of a store with the node's canonical chain: every block, transaction, receipt summary, log,
//! hash lookup, per-address index, account counter and global counter.

use alloy::consensus::Transaction as _;
use alloy::eips::BlockNumberOrTag;
use alloy::network::{ReceiptResponse, TransactionResponse};
use alloy::primitives::{Address, B256};
use alloy::providers::{Provider, RootProvider};
use rockscout::store::keys::{BlockKey, BlockPos, TxHashKey};
use rockscout::store::records::role;
use rockscout::store::tables::{
    Accounts, AddressLogs, AddressTxs, BlockHashes, Headers, Logs, Reorged, Transactions, TxHashes,
};
use rockscout::store::{Order, Store};
use std::collections::{BTreeMap, BTreeSet};

/// What the comparison found, for further assertions.
#[derive(Debug, Default)]
pub struct Compared {
    pub blocks: u64,
    pub txs: u64,
    pub logs: u64,
    pub addresses: usize,
}

/// Asserts that `store` holds exactly the node's canonical chain up to the node's head.
pub async fn assert_store_matches_node(store: &Store, node: &RootProvider) -> Compared {
    let reader = store.reader();
    let head = node.get_block_number().await.unwrap();
    let tip = reader.tip().unwrap().expect("a tip is stored");
    assert_eq!(tip.number, head, "stored tip number");

    let mut address_txs: BTreeMap<Address, Vec<(BlockPos, u8)>> = BTreeMap::new();
    let mut address_logs: BTreeMap<Address, Vec<BlockPos>> = BTreeMap::new();
    let mut miners: BTreeMap<Address, u64> = BTreeMap::new();
    let mut out = Compared::default();
    let mut gas_used_total: u128 = 0;
    // Gas of the transactions each address sent and of those sent to it, from the node's receipts.
    let mut gas_sent: BTreeMap<Address, u128> = BTreeMap::new();
    let mut gas_received: BTreeMap<Address, u128> = BTreeMap::new();
    let mut seen_in: BTreeMap<Address, (u64, u64)> = BTreeMap::new();
    let mut saw = |address: Address, n: u64| {
        let entry = seen_in.entry(address).or_insert((n, n));
        entry.0 = entry.0.min(n);
        entry.1 = entry.1.max(n);
    };

    for n in 0..=head {
        let block = node.get_block_by_number(BlockNumberOrTag::Number(n)).full().await.unwrap().expect("node block");
        let receipts = node.get_block_receipts(n.into()).await.unwrap().expect("node receipts");
        let stored = reader.get::<Headers>(&BlockKey(n)).unwrap().unwrap_or_else(|| panic!("block {n} missing"));
        let h = &block.header;
        assert_eq!(stored.hash, h.hash, "block {n} hash");
        assert_eq!(stored.parent_hash, h.parent_hash, "block {n} parent");
        assert_eq!(stored.timestamp, h.timestamp, "block {n} timestamp");
        assert_eq!(stored.miner, h.beneficiary, "block {n} miner");
        assert_eq!(stored.gas_used, h.gas_used, "block {n} gas used");
        assert_eq!(stored.gas_limit, h.gas_limit, "block {n} gas limit");
        assert_eq!(stored.base_fee, h.base_fee_per_gas.map(u128::from), "block {n} base fee");
        assert_eq!(reader.get::<BlockHashes>(&h.hash).unwrap(), Some(n), "block {n} hash lookup");
        *miners.entry(h.beneficiary).or_default() += 1;
        saw(h.beneficiary, n);
        gas_used_total += u128::from(h.gas_used);

        let txs = block.transactions.as_transactions().expect("full transactions");
        assert_eq!(stored.tx_count as usize, txs.len(), "block {n} tx count");
        let stored_txs: Vec<_> = reader.block_txs(n, None).map(|r| r.unwrap()).collect();
        assert_eq!(stored_txs.len(), txs.len(), "block {n} stored tx rows");
        let mut log_index = 0u32;
        for (i, ((pos, stx), (tx, receipt))) in stored_txs.iter().zip(txs.iter().zip(&receipts)).enumerate() {
            let want_pos = BlockPos { block: n, index: i as u32 };
            assert_eq!(*pos, want_pos);
            assert_eq!(stx.hash, tx.tx_hash(), "tx {n}/{i} hash");
            assert_eq!(stx.from, tx.from(), "tx {n}/{i} from");
            assert_eq!(stx.to, tx.to(), "tx {n}/{i} to");
            assert_eq!(stx.value, tx.value(), "tx {n}/{i} value");
            assert_eq!(stx.input, *tx.input(), "tx {n}/{i} input");
            assert_eq!(stx.nonce, tx.nonce(), "tx {n}/{i} nonce");
            assert_eq!(stx.gas_limit, tx.gas_limit(), "tx {n}/{i} gas");
            assert_eq!(stx.status, Some(receipt.status()), "tx {n}/{i} status");
            assert_eq!(stx.gas_used, receipt.gas_used(), "tx {n}/{i} gas used");
            assert_eq!(stx.effective_gas_price, receipt.effective_gas_price(), "tx {n}/{i} price");
            assert_eq!(stx.created, receipt.contract_address(), "tx {n}/{i} created");
            assert_eq!(reader.tx(stx.hash).unwrap().map(|(pos, _)| pos), Some(want_pos), "tx {n}/{i} hash lookup");
            let filed = TxHashKey::new(&stx.hash, want_pos);
            assert_eq!(reader.get::<TxHashes>(&filed).unwrap(), Some(()), "tx {n}/{i} filed under its hash");
            assert_eq!(stx.first_log, log_index, "tx {n}/{i} first log");
            assert_eq!(stx.log_count as usize, receipt.inner.logs().len(), "tx {n}/{i} log count");
            for log in receipt.inner.logs() {
                let pos = BlockPos { block: n, index: log.log_index.expect("log index") as u32 };
                assert_eq!(pos.index, log_index, "log index of {n}/{i}");
                let slog = reader.get::<Logs>(&pos).unwrap().unwrap_or_else(|| panic!("log {pos:?} missing"));
                assert_eq!(slog.address, log.address(), "log {pos:?} address");
                assert_eq!(slog.topics, log.topics(), "log {pos:?} topics");
                assert_eq!(slog.data, log.data().data, "log {pos:?} data");
                assert_eq!(slog.tx_hash, stx.hash, "log {pos:?} tx");
                address_logs.entry(log.address()).or_default().push(pos);
                saw(log.address(), n);
                log_index += 1;
                out.logs += 1;
            }
            *gas_sent.entry(tx.from()).or_default() += u128::from(receipt.gas_used());
            if let Some(to) = tx.to() {
                *gas_received.entry(to).or_default() += u128::from(receipt.gas_used());
            }
            let mut roles: BTreeMap<Address, u8> = BTreeMap::new();
            *roles.entry(tx.from()).or_default() |= role::FROM;
            if let Some(to) = tx.to() {
                *roles.entry(to).or_default() |= role::TO;
            }
            if let Some(created) = receipt.contract_address() {
                *roles.entry(created).or_default() |= role::CREATED;
            }
            for (address, r) in roles {
                saw(address, n);
                address_txs.entry(address).or_default().push((want_pos, r));
            }
            out.txs += 1;
        }
        assert_eq!(stored.log_count, log_index, "block {n} log count");
        out.blocks += 1;
    }

    // Nothing beyond the canonical chain is stored.
    let stored_blocks = reader.rows::<Headers>().count() as u64;
    assert_eq!(stored_blocks, head + 1, "stored header rows");
    assert_eq!(reader.rows::<BlockHashes>().count() as u64, head + 1);
    assert_eq!(reader.rows::<Transactions>().count() as u64, out.txs);
    assert_eq!(reader.rows::<TxHashes>().count() as u64, out.txs);
    assert_eq!(reader.rows::<Logs>().count() as u64, out.logs);

    // Per-address indexes: exactly the expected rows, newest first.
    let stored_address_txs: Vec<_> = reader.rows::<AddressTxs>().map(|r| r.unwrap()).collect();
    let mut expected_rows = 0;
    for (address, rows) in &address_txs {
        let stored: Vec<(BlockPos, u8)> = reader
            .address_txs(*address, None, Order::NewestFirst)
            .map(|r| r.map(|(k, roles)| (k.pos, roles)).unwrap())
            .collect();
        let mut want = rows.clone();
        want.reverse();
        assert_eq!(stored, want, "address_txs of {address}");
        expected_rows += rows.len();
    }
    assert_eq!(stored_address_txs.len(), expected_rows, "no stray address_txs rows");
    for (address, rows) in &address_logs {
        let stored: Vec<BlockPos> =
            reader.address_logs(*address, None).map(|r| r.map(|(k, ())| k.pos).unwrap()).collect();
        let mut want = rows.clone();
        want.reverse();
        assert_eq!(stored, want, "address_logs of {address}");
    }
    let stored_log_rows = reader.rows::<AddressLogs>().count();
    assert_eq!(stored_log_rows, address_logs.values().map(Vec::len).sum::<usize>(), "no stray address_logs rows");

    // Accounts: one per seen address, with counters matching the node's data.
    let seen: BTreeSet<Address> = seen_in.keys().copied().collect();
    for address in &seen {
        let account = reader.get::<Accounts>(address).unwrap().unwrap_or_else(|| panic!("account {address} missing"));
        let txs = address_txs.get(address).map(Vec::len).unwrap_or(0) as u64;
        assert_eq!(account.tx_count, txs, "tx count of {address}");
        assert_eq!(account.log_count, address_logs.get(address).map(Vec::len).unwrap_or(0) as u64);
        assert_eq!(account.blocks_mined, miners.get(address).copied().unwrap_or(0), "blocks mined by {address}");
        assert_eq!(account.gas_used, gas_sent.get(address).copied().unwrap_or(0), "gas sent by {address}");
        assert_eq!(account.gas_received, gas_received.get(address).copied().unwrap_or(0), "gas sent to {address}");
        let (first, last) = seen_in[address];
        assert_eq!((account.first_seen.block, account.last_seen.block), (first, last), "first/last seen of {address}");
    }
    let stored_accounts = reader.rows::<Accounts>().count();
    assert_eq!(stored_accounts, seen.len(), "no stray accounts");

    let counters = reader.counters().unwrap();
    assert_eq!(counters.blocks, head + 1, "block counter");
    assert_eq!(counters.txs, out.txs, "tx counter");
    assert_eq!(counters.addresses, seen.len() as u64, "address counter");
    assert_eq!(counters.gas_used, gas_used_total, "gas counter");
    out.addresses = seen.len();
    out
}

/// Hashes of the blocks stored as reorged.
pub fn reorged_hashes(store: &Store) -> BTreeSet<B256> {
    store.reader().rows::<Reorged>().map(|r| r.unwrap().0.hash).collect()
}

/// Stored canonical hashes by number.
pub fn stored_hashes(store: &Store) -> BTreeMap<u64, B256> {
    store.reader().rows::<Headers>().map(|r| r.map(|(k, h)| (k.0, h.hash)).unwrap()).collect()
}

/// Asserts that the native balance index holds exactly the node's balance after each block of every address the
/// block names (miner, senders, recipients, created contracts), that each address's latest balance is its newest
/// row, and that the ranking holds exactly the non-zero latest balances. For chains where no call moves ether to an
/// address its block does not name (the trace pass would add rows for it).
pub async fn assert_coin_balances_match_node(store: &Store, node: &RootProvider) {
    use alloy::primitives::U256;
    use rockscout::store::tables::{CoinBalanceNow, CoinBalances, CoinRanks};
    let reader = store.reader();
    let head = node.get_block_number().await.unwrap();
    let mut want: BTreeMap<(Address, u64), U256> = BTreeMap::new();
    for n in 0..=head {
        let block = node.get_block_by_number(BlockNumberOrTag::Number(n)).full().await.unwrap().expect("node block");
        let receipts = node.get_block_receipts(n.into()).await.unwrap().expect("node receipts");
        let mut named = BTreeSet::from([block.header.beneficiary]);
        for (tx, receipt) in block.transactions.txns().zip(&receipts) {
            named.extend([Some(tx.from()), tx.to(), receipt.contract_address()].into_iter().flatten());
        }
        for address in named {
            let balance = node.get_balance(address).block_id(block.header.hash.into()).await.unwrap();
            want.insert((address, n), balance);
        }
    }
    let stored: BTreeMap<(Address, u64), U256> = reader
        .rows::<CoinBalances>()
        .map(|row| row.map(|(key, amount)| ((key.address, key.pos.block), amount.0)).unwrap())
        .collect();
    assert_eq!(stored, want, "coin balance history rows");
    let mut latest: BTreeMap<Address, (u64, U256)> = BTreeMap::new();
    for ((address, n), value) in &want {
        latest.insert(*address, (*n, *value));
    }
    let now: BTreeMap<Address, (u64, U256)> = reader
        .rows::<CoinBalanceNow>()
        .map(|row| row.map(|(address, now)| (address, (now.block, now.value))).unwrap())
        .collect();
    assert_eq!(now, latest, "latest coin balances");
    let ranks: BTreeSet<(U256, Address)> =
        reader.rows::<CoinRanks>().map(|row| row.unwrap().0).map(|k| (k.balance, k.address)).collect();
    let want_ranks: BTreeSet<(U256, Address)> = latest
        .iter()
        .filter(|(_, (_, value))| !value.is_zero())
        .map(|(address, (_, value))| (*value, *address))
        .collect();
    assert_eq!(ranks, want_ranks, "coin balance ranking");
}

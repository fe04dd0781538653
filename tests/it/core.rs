//! The pure core on a real store: applying blocks and reverting them newest-first leaves every column family
//! byte-identical (only `reorged` gains the reverted headers), for generated chains.

use alloy::primitives::{Address, Bytes, B256, B64, U256};
use proptest::prelude::*;
use rockscout::indexer::apply::{apply_blocks, load_block, revert_block};
use rockscout::indexer::bundle::Bundle;
use rockscout::store::records::{BlockRecord, LogRecord, TxRecord};
use rockscout::store::{Durability, Store, StoreOptions};
use std::collections::BTreeMap;

const POOL: u8 = 6;

#[derive(Debug, Clone)]
struct TxSpec {
    from: u8,
    to: Option<u8>,
    ok: bool,
    gas: u64,
    value: u64,
    logs: Vec<u8>,
}

fn tx_spec() -> impl Strategy<Value = TxSpec> {
    (
        0..POOL,
        proptest::option::weighted(0.8, 0..POOL),
        any::<bool>(),
        21_000u64..200_000,
        any::<u64>(),
        proptest::collection::vec(0..POOL, 0..3),
    )
        .prop_map(|(from, to, ok, gas, value, logs)| TxSpec { from, to, ok, gas, value, logs })
}

fn chain_spec() -> impl Strategy<Value = Vec<(u8, Vec<TxSpec>)>> {
    proptest::collection::vec((0..POOL, proptest::collection::vec(tx_spec(), 0..5)), 1..7)
}

fn address(i: u8) -> Address {
    Address::repeat_byte(i + 1)
}

/// Builds consistent bundles (linked hashes, log positions, counts) from the specs, starting at block 0.
fn build_chain(spec: &[(u8, Vec<TxSpec>)]) -> Vec<Bundle> {
    let mut parent = B256::ZERO;
    let mut out = Vec::new();
    for (number, (miner, txs)) in spec.iter().enumerate() {
        let number = number as u64;
        let hash = B256::from(U256::from(number * 1_000_003 + 17));
        let mut records = Vec::new();
        let mut logs = Vec::new();
        for (index, t) in txs.iter().enumerate() {
            let tx_hash = B256::from(U256::from(number * 10_000 + index as u64 + 1) << 8);
            let first_log = logs.len() as u32;
            for emitter in &t.logs {
                logs.push(LogRecord {
                    address: address(*emitter),
                    topics: vec![B256::repeat_byte(*emitter)],
                    data: Bytes::from(vec![*emitter; 3]),
                    tx_index: index as u32,
                    tx_hash,
                });
            }
            records.push(TxRecord {
                hash: tx_hash,
                from: address(t.from),
                to: t.to.map(address),
                value: U256::from(t.value),
                input: Bytes::new(),
                nonce: index as u64,
                gas_limit: t.gas * 2,
                gas_price: Some(7),
                max_fee_per_gas: None,
                max_priority_fee_per_gas: None,
                tx_type: 0,
                status: Some(t.ok),
                gas_used: t.gas,
                effective_gas_price: 7,
                created: t.to.is_none().then(|| Address::from_word(tx_hash)),
                first_log,
                log_count: logs.len() as u32 - first_log,
                authorizations: vec![],
            });
        }
        let gas_used = records.iter().map(|t| t.gas_used).sum();
        let header = BlockRecord {
            number,
            hash,
            parent_hash: parent,
            // Blocks 11 hours apart, so they spread over several days.
            timestamp: 1_700_000_000 + number * 40_000,
            miner: address(*miner),
            gas_used,
            gas_limit: 30_000_000,
            base_fee: Some(5),
            size: Some(1000),
            difficulty: U256::ZERO,
            total_difficulty: None,
            nonce: B64::ZERO,
            extra_data: Bytes::new(),
            uncles: vec![],
            withdrawals_count: None,
            blob_gas_used: None,
            excess_blob_gas: None,
            tx_count: records.len() as u32,
            blob_tx_count: 0,
            log_count: logs.len() as u32,
            fees: U256::from(gas_used * 7),
            burnt_fees: U256::from(gas_used * 5),
            priority_fees: U256::from(gas_used * 2),
        };
        parent = hash;
        out.push(Bundle { header, txs: records, logs });
    }
    out
}

type Rows = BTreeMap<(&'static str, Vec<u8>), Vec<u8>>;

fn rows(store: &Store) -> Rows {
    store.raw_rows().unwrap().into_iter().map(|(t, k, v)| ((t, k), v)).collect()
}

fn without_reorged(rows: &Rows) -> Rows {
    rows.iter().filter(|((t, _), _)| *t != "reorged").map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn revert_tip(store: &Store, number: u64) {
    let reader = store.reader();
    let block = load_block(&reader, number).unwrap().expect("stored block");
    let mut batch = store.batch();
    revert_block(&mut batch, &reader, &block).unwrap();
    store.write(batch, Durability::Buffered).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn apply_then_revert_leaves_every_table_byte_identical(spec in chain_spec(), split in 0usize..7) {
        let chain = build_chain(&spec);
        let split = split.min(chain.len() - 1);
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        apply_blocks(&store, &chain[..split], true).unwrap();
        let before = rows(&store);

        // The rest of the chain in one chunk, as catch-up writes it.
        apply_blocks(&store, &chain[split..], true).unwrap();
        let applied = rows(&store);
        for block in &chain[split..] {
            prop_assert_eq!(&load_block(&store.reader(), block.number()).unwrap().unwrap(), block, "stored block reads back");
        }
        for block in chain[split..].iter().rev() {
            revert_tip(&store, block.number());
        }
        let after = rows(&store);
        prop_assert_eq!(without_reorged(&after), without_reorged(&before));
        let reorged: Vec<_> = after.keys().filter(|(t, _)| *t == "reorged").collect();
        prop_assert_eq!(reorged.len(), chain.len() - split, "each reverted block is recorded once");

        // The same blocks coming back (a reorg back to the old branch) leave no reorged trace.
        apply_blocks(&store, &chain[split..], true).unwrap();
        prop_assert_eq!(rows(&store), applied);
    }
}

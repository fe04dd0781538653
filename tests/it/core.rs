//! The core on a real store, for generated chains with transactions, logs and token transfers of every standard
//! (mints, burns, malformed events): applying blocks and reverting them newest first leaves every column family
//! byte-identical (only `reorged` gains the reverted headers), re-applying gives the same bytes again, and the token
//! indexes stay consistent with each other.

use alloy::primitives::{Address, Bytes, B256, B64, U256};
use proptest::prelude::*;
use rockscout::chain::tokens::{decode, TRANSFER, TRANSFER_SINGLE};
use rockscout::indexer::apply::{apply_blocks, revert_block, write_chunk};
use rockscout::store::keys::{BlockKey, HolderRankKey, Key, TokenRankKey};
use rockscout::store::records::Bundle;
use rockscout::store::records::{BlockRecord, LogRecord, TxBody, TxRecord};
use rockscout::store::tables::{HolderRanks, TokenHolders, TokenRanks, Tokens};
use rockscout::store::{Durability, Store, StoreOptions};
use std::collections::{BTreeMap, BTreeSet};

const POOL: u8 = 6;

/// A log: emitter, shape (0 plain, 1 ERC-20 transfer, 2 ERC-721 transfer, 3 ERC-1155 single, 4 malformed
/// transfer), sender and recipient (0 = the zero address: mint or burn), amount or id.
type LogSpec = (u8, u8, u8, u8, u64);

#[derive(Debug, Clone)]
struct TxSpec {
    from: u8,
    to: Option<u8>,
    ok: bool,
    gas: u64,
    value: u64,
    logs: Vec<LogSpec>,
}

fn tx_spec() -> impl Strategy<Value = TxSpec> {
    let log = (0..POOL, 0u8..5, 0..POOL, 0..POOL, 0u64..4);
    (
        0..POOL,
        proptest::option::weighted(0.8, 0..POOL),
        any::<bool>(),
        21_000u64..200_000,
        any::<u64>(),
        proptest::collection::vec(log, 0..4),
    )
        .prop_map(|(from, to, ok, gas, value, logs)| TxSpec { from, to, ok, gas, value, logs })
}

fn chain_spec() -> impl Strategy<Value = Vec<(u8, Vec<TxSpec>)>> {
    proptest::collection::vec((0..POOL, proptest::collection::vec(tx_spec(), 0..5)), 1..8)
}

fn address(i: u8) -> Address {
    Address::repeat_byte(i + 1)
}

/// Address 0 is the zero address (a mint when it sends, a burn when it receives).
fn party(i: u8) -> Address {
    if i == 0 {
        Address::ZERO
    } else {
        address(i)
    }
}

fn spec_log(spec: &LogSpec, tx_index: u32, tx_hash: B256) -> LogRecord {
    let &(emitter, shape, from, to, n) = spec;
    let word = |v: u64| U256::from(v).to_be_bytes_vec();
    let (topics, data) = match shape {
        1 => (vec![TRANSFER, party(from).into_word(), party(to).into_word()], word(n * 1000)),
        2 => (vec![TRANSFER, party(from).into_word(), party(to).into_word(), B256::from(U256::from(n))], vec![]),
        3 => {
            let mut data = word(n);
            data.extend(word(n + 5));
            (vec![TRANSFER_SINGLE, party(from).into_word(), party(from).into_word(), party(to).into_word()], data)
        }
        4 => (vec![TRANSFER, party(from).into_word()], word(n)),
        _ => (vec![B256::repeat_byte(emitter)], vec![emitter; 3]),
    };
    // Each standard has its own two token contracts, so a contract keeps one standard.
    let address =
        if (1..=3).contains(&shape) { Address::repeat_byte(0x40 + shape * 8 + emitter % 2) } else { address(emitter) };
    LogRecord { address, topics, data: Bytes::from(data), tx_index, tx_hash }
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
            for spec in &t.logs {
                logs.push(spec_log(spec, index as u32, tx_hash));
            }
            let token_transfers = logs[first_log as usize..].iter().map(|l| decode(l).len() as u32).sum();
            records.push(TxRecord {
                body: TxBody {
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
                },
                status: Some(t.ok),
                gas_used: t.gas,
                effective_gas_price: 7,
                created: t.to.is_none().then(|| Address::from_word(tx_hash)),
                first_log,
                log_count: logs.len() as u32 - first_log,
                authorizations: vec![],
                token_transfers,
                token_creation: false,
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
        out.push(Bundle { header, txs: records, logs, balances: Vec::new() });
    }
    out
}

type Rows = BTreeMap<(&'static str, Vec<u8>), Vec<u8>>;

fn rows(store: &Store) -> Rows {
    store.raw_rows().unwrap().into_iter().map(|(t, k, v)| ((t, k), v)).collect()
}

/// The blocks whose undo data the store holds, oldest first.
fn undo_blocks(store: &Store) -> Vec<u64> {
    let mut blocks: Vec<u64> =
        rows(store).keys().filter(|(t, _)| *t == "undo").map(|(_, k)| BlockKey::decode(k).unwrap().0).collect();
    blocks.sort_unstable();
    blocks
}

fn without_reorged(rows: &Rows) -> Rows {
    rows.iter().filter(|((t, _), _)| *t != "reorged").map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn revert_tip(store: &Store, number: u64) {
    let reader = store.reader();
    let block = reader.load_block(number).unwrap().expect("stored block");
    let mut batch = store.batch();
    revert_block(&mut batch, &reader, &block).unwrap();
    store.write(batch, Durability::Buffered).unwrap();
}

/// The token tables agree with each other: one rank row per token at its holder count, one holder-rank row per
/// holder at its total, and holder counts equal to the holders listed.
fn assert_token_indexes_consistent(store: &Store) {
    let reader = store.reader();
    let holders: Vec<_> = reader.rows::<TokenHolders>().map(|r| r.unwrap()).collect();
    let ranks: BTreeSet<Vec<u8>> =
        reader.rows::<HolderRanks>().map(|r| rockscout::store::keys::Key::encode(&r.unwrap().0).to_vec()).collect();
    let expected: BTreeSet<Vec<u8>> = holders
        .iter()
        .map(|(k, a)| {
            rockscout::store::keys::Key::encode(&HolderRankKey { token: k.token, amount: a.0, holder: k.holder })
                .to_vec()
        })
        .collect();
    assert_eq!(ranks, expected, "holder ranks mirror holder totals");
    assert!(holders.iter().all(|(_, a)| !a.0.is_zero()), "no zero holdings are kept");
    let token_ranks: BTreeSet<Vec<u8>> =
        reader.rows::<TokenRanks>().map(|r| rockscout::store::keys::Key::encode(&r.unwrap().0).to_vec()).collect();
    let mut expected_ranks = BTreeSet::new();
    for row in reader.rows::<Tokens>() {
        let (token, record) = row.unwrap();
        let listed = holders.iter().filter(|(k, _)| k.token == token).count() as u64;
        assert_eq!(record.holders, listed, "holder count of {token}");
        expected_ranks
            .insert(rockscout::store::keys::Key::encode(&TokenRankKey { holders: record.holders, token }).to_vec());
    }
    assert_eq!(token_ranks, expected_ranks, "one rank row per token");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn apply_then_revert_leaves_every_table_byte_identical(spec in chain_spec(), split in 0usize..8) {
        let chain = build_chain(&spec);
        let split = split.min(chain.len() - 1);
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        apply_blocks(&store, &chain[..split], true).unwrap();
        let before = rows(&store);

        // The rest of the chain in one chunk, as catch-up writes it.
        apply_blocks(&store, &chain[split..], true).unwrap();
        let applied = rows(&store);
        assert_token_indexes_consistent(&store);
        for block in &chain[split..] {
            prop_assert_eq!(&store.reader().load_block(block.number()).unwrap().unwrap(), block, "stored block reads back");
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

    #[test]
    fn one_batch_or_one_block_at_a_time_write_the_same_bytes(spec in chain_spec()) {
        let chain = build_chain(&spec);
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (chunked, single) = (Store::open(a.path(), &StoreOptions::default()).unwrap(), Store::open(b.path(), &StoreOptions::default()).unwrap());
        apply_blocks(&chunked, &chain, true).unwrap();
        for block in &chain {
            apply_blocks(&single, std::slice::from_ref(block), true).unwrap();
        }
        prop_assert_eq!(rows(&chunked), rows(&single));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The follower's write path at the head (every block within the window when written, in chunks) keeps undo
    /// data for exactly the last `depth` blocks, the kept data reverts the tip, and writing again with a smaller
    /// depth drops what lies below the smaller window.
    #[test]
    fn undo_is_kept_for_exactly_the_last_depth_blocks(spec in chain_spec(), depth in 1u64..5, chunk in 1usize..4, smaller in 1u64..5) {
        let chain = build_chain(&spec);
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        for part in chain.chunks(chunk) {
            let head = part.last().unwrap().number();
            write_chunk(&store, part, head, depth).unwrap();
        }
        let tip = chain.last().unwrap().number();
        let window = |depth: u64| (tip.saturating_sub(depth - 1)..=tip).collect::<Vec<u64>>();
        prop_assert_eq!(undo_blocks(&store), window(depth));
        // The kept undo data reverts the tip; the tip written again with a smaller depth prunes to that depth.
        revert_tip(&store, tip);
        prop_assert_eq!(store.reader().tip().unwrap().map(|t| t.number), tip.checked_sub(1));
        let smaller = smaller.min(depth);
        write_chunk(&store, &chain[chain.len() - 1..], tip, smaller).unwrap();
        prop_assert_eq!(undo_blocks(&store), window(smaller));
    }
}

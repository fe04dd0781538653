//! The REST API against anvil-made data: values compared with the node's own answers, whole lists walked with
//! cursors (also while blocks arrive), and bad input checked by status and body.

use crate::support::*;
use alloy::consensus::Transaction as _;
use alloy::eips::BlockNumberOrTag;
use alloy::network::ReceiptResponse;
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::rpc::types::Log;
use alloy::sol_types::SolEvent;
use hyper::Method;
use rockscout::dev::contracts::Demo;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::support::http::{get_json as get, walk};

fn decimal(v: &Value) -> U256 {
    v.as_str().unwrap_or_else(|| panic!("decimal string expected, got {v}")).parse().unwrap()
}

fn checksummed(a: Address) -> String {
    a.to_checksum(None)
}

/// A transaction as the node reports it.
struct ChainTx {
    hash: B256,
    block: u64,
    index: u64,
    from: Address,
    to: Option<Address>,
    created: Option<Address>,
}

struct Chain {
    /// Every transaction, newest first.
    txs: Vec<ChainTx>,
    head: u64,
}

async fn chain(node: &RootProvider) -> Chain {
    let head = node.get_block_number().await.unwrap();
    let mut txs = Vec::new();
    for n in 0..=head {
        let receipts = node.get_block_receipts(n.into()).await.unwrap().unwrap();
        for r in receipts {
            txs.push(ChainTx {
                hash: r.transaction_hash,
                block: n,
                index: r.transaction_index.unwrap(),
                from: r.from,
                to: r.to,
                created: r.contract_address,
            });
        }
    }
    txs.reverse();
    Chain { txs, head }
}

/// Identifies a log of an API list: (transaction hash, log index in its block).
fn log_ids(items: &[Value]) -> Vec<(String, u64)> {
    items.iter().map(|l| (l["transaction_hash"].as_str().unwrap().to_owned(), l["index"].as_u64().unwrap())).collect()
}

/// The logs `address` emitted, newest first, as the node's `eth_getLogs` finds them: all of them, or those with
/// `topic` in any of the four positions (one query per position).
async fn node_logs(node: &RootProvider, address: Address, topic: Option<B256>) -> Vec<(String, u64)> {
    let queries: Vec<Value> = match topic {
        None => vec![json!([])],
        Some(topic) => (0..4)
            .map(|position| {
                let mut topics = vec![Value::Null; position];
                topics.push(json!(topic));
                Value::Array(topics)
            })
            .collect(),
    };
    let mut found = BTreeSet::new();
    for topics in queries {
        let filter = json!({"address": address, "fromBlock": "0x0", "toBlock": "latest", "topics": topics});
        let logs: Vec<Log> = node.raw_request("eth_getLogs".into(), json!([filter])).await.unwrap();
        for log in logs {
            let hash = format!("{:#x}", log.transaction_hash.unwrap());
            found.insert((log.block_number.unwrap(), log.log_index.unwrap(), hash));
        }
    }
    found.into_iter().rev().map(|(_, index, hash)| (hash, index)).collect()
}

/// One gas price tier in wei.
struct GasTier {
    price: u128,
    base_fee: u128,
    priority_fee: u128,
}

/// The slow, average and fast tiers `/api/v2/stats` should report, from the node's blocks and receipts (the rule of
/// src/api/rest/stats.rs): over the transactions of the last 200 blocks, the 35th, 60th and 90th percentiles
/// (the element at `(len - 1) * p / 100` of the sorted values) of the effective gas prices and of the priority fees
/// (effective price minus the block's base fee); a tier's price is its price percentile, but at least the latest
/// base fee plus its priority fee percentile.
async fn node_gas_tiers(node: &RootProvider, head: u64) -> [GasTier; 3] {
    let mut prices = Vec::new();
    let mut tips = Vec::new();
    let mut latest_base_fee = None;
    for n in (head.saturating_sub(199)..=head).rev() {
        let block = node.get_block_by_number(BlockNumberOrTag::Number(n)).await.unwrap().unwrap();
        let base_fee = u128::from(block.header.base_fee_per_gas.unwrap());
        latest_base_fee.get_or_insert(base_fee);
        for receipt in node.get_block_receipts(n.into()).await.unwrap().unwrap() {
            prices.push(receipt.effective_gas_price);
            tips.push(receipt.effective_gas_price - base_fee);
        }
    }
    assert!(!prices.is_empty() && prices.len() <= 1000, "the whole window fits the 1,000-transaction sample");
    let base_fee = latest_base_fee.unwrap();
    prices.sort_unstable();
    tips.sort_unstable();
    let at = |sorted: &[u128], p: usize| sorted[(sorted.len() - 1) * p / 100];
    [35, 60, 90].map(|p| {
        let priority_fee = at(&tips, p);
        GasTier { price: at(&prices, p).max(base_fee + priority_fee), base_fee, priority_fee }
    })
}

/// Wei in gwei, rounded up to two decimals (whole hundredths of a gwei are exact in `f64`).
fn gwei(wei: u128) -> f64 {
    wei.div_ceil(10_000_000) as f64 / 100.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_values_match_the_node_and_lists_page_exactly() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 24, 5).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    let c = chain(&node).await;

    // Blocks: every field the node knows, and the list walked in pages of 7.
    for n in 0..=c.head {
        let b = node.get_block_by_number(BlockNumberOrTag::Number(n)).await.unwrap().unwrap();
        let by_number = get(addr, &format!("/api/v2/blocks/{n}")).await;
        let by_hash = get(addr, &format!("/api/v2/blocks/{:#x}", b.header.hash)).await;
        assert_eq!(by_number, by_hash);
        assert_eq!(by_number["height"], n);
        assert_eq!(by_number["hash"], format!("{:#x}", b.header.hash));
        assert_eq!(by_number["parent_hash"], format!("{:#x}", b.header.parent_hash));
        assert_eq!(decimal(&by_number["gas_used"]), U256::from(b.header.gas_used));
        assert_eq!(decimal(&by_number["gas_limit"]), U256::from(b.header.gas_limit));
        assert_eq!(decimal(&by_number["base_fee_per_gas"]), U256::from(b.header.base_fee_per_gas.unwrap()));
        assert_eq!(by_number["miner"]["hash"], checksummed(b.header.beneficiary));
        assert_eq!(by_number["transactions_count"], b.transactions.len());
        assert_eq!(by_number["type"], "block");
    }
    let heights: Vec<u64> =
        walk(addr, "/api/v2/blocks?items_count=7").await.iter().map(|b| b["height"].as_u64().unwrap()).collect();
    assert_eq!(heights, (0..=c.head).rev().collect::<Vec<_>>());

    // Transactions: detail fields against the node's transaction and receipt; logs against the receipt.
    for ChainTx { hash, block, index, from, to, created } in &c.txs {
        let tx = node.get_transaction_by_hash(*hash).await.unwrap().unwrap();
        let receipt = node.get_transaction_receipt(*hash).await.unwrap().unwrap();
        let d = get(addr, &format!("/api/v2/transactions/{hash:#x}")).await;
        // Blockscout 11 dropped `actions` and its published schema refuses the field (rest-v2.md asks for it for
        // frontend v2.0.x; the schema the conformance check holds wins).
        assert!(d.get("actions").is_none());
        assert_eq!(d["block_number"], *block);
        assert_eq!(d["position"], *index);
        assert_eq!(d["from"]["hash"], checksummed(*from));
        match (to, created) {
            (Some(to), _) => assert_eq!(d["to"]["hash"], checksummed(*to)),
            (None, Some(created)) => {
                assert_eq!(d["created_contract"]["hash"], checksummed(*created));
                assert_eq!(d["created_contract"]["is_contract"], receipt.status());
                assert!(d["transaction_types"].as_array().unwrap().contains(&json!("contract_creation")));
            }
            (None, None) => panic!("creation without address"),
        }
        assert_eq!(decimal(&d["value"]), tx.value());
        assert_eq!(decimal(&d["gas_used"]), U256::from(receipt.gas_used()));
        assert_eq!(decimal(&d["gas_limit"]), U256::from(tx.gas_limit()));
        assert_eq!(decimal(&d["gas_price"]), U256::from(receipt.effective_gas_price()));
        assert_eq!(
            decimal(&d["fee"]["value"]),
            U256::from(receipt.gas_used()) * U256::from(receipt.effective_gas_price())
        );
        assert_eq!(d["nonce"], tx.nonce());
        assert_eq!(d["status"], if receipt.status() { "ok" } else { "error" });
        assert_eq!(d["raw_input"], format!("{:#x}", tx.input()));
        assert!(d["token_transfers"].is_array() && d["token_transfers_overflow"] == json!(false));
        if !receipt.status() {
            assert_eq!(d["revert_reason"]["parameters"][0]["value"], "Demo: multiple of five");
        }
        let logs = walk(addr, &format!("/api/v2/transactions/{hash:#x}/logs?items_count=1")).await;
        let want = receipt.inner.logs();
        assert_eq!(logs.len(), want.len());
        for (got, want) in logs.iter().zip(want) {
            assert_eq!(got["address"]["hash"], checksummed(want.address()));
            assert_eq!(got["index"], want.log_index.unwrap());
            assert_eq!(got["data"], format!("{:#x}", want.data().data));
            assert_eq!(got["topics"][0], format!("{:#x}", want.topics()[0]));
            assert_eq!(got["transaction_hash"], format!("{hash:#x}"));
        }
    }
    let items = walk(addr, "/api/v2/transactions?items_count=13").await;
    // List items follow the published schema, which has no `actions` either.
    assert!(items.iter().all(|t| t.get("actions").is_none()), "{:?}", items[0]);
    let listed: Vec<String> = items.iter().map(|t| t["hash"].as_str().unwrap().to_owned()).collect();
    assert_eq!(
        listed,
        c.txs.iter().map(|t| format!("{:#x}", t.hash)).collect::<Vec<_>>(),
        "all transactions, newest first"
    );

    // A block's transactions, in index order across pages.
    let busiest = c.txs.iter().map(|t| t.block).max_by_key(|b| c.txs.iter().filter(|t| t.block == *b).count()).unwrap();
    let in_block: Vec<u64> = walk(addr, &format!("/api/v2/blocks/{busiest}/transactions?items_count=2"))
        .await
        .iter()
        .map(|t| t["position"].as_u64().unwrap())
        .collect();
    assert_eq!(in_block, (0..in_block.len() as u64).collect::<Vec<_>>());
    assert_eq!(in_block.len(), c.txs.iter().filter(|t| t.block == busiest).count());

    // Addresses: balance at the tip from the node, history and counters from the chain.
    let mut per_address: BTreeMap<Address, Vec<B256>> = BTreeMap::new();
    for ChainTx { hash, from, to, created, .. } in &c.txs {
        let mut parties: HashSet<Address> = [*from].into();
        parties.extend(to.iter().chain(created.iter()));
        for p in parties {
            per_address.entry(p).or_default().push(*hash);
        }
    }
    for (address, hashes) in &per_address {
        let a = get(addr, &format!("/api/v2/addresses/{address}")).await;
        let balance = node.get_balance(*address).block_id(c.head.into()).await.unwrap();
        assert_eq!(decimal(&a["coin_balance"]), balance, "balance of {address}");
        assert_eq!(a["block_number_balance_updated_at"], c.head);
        let history: Vec<String> = walk(addr, &format!("/api/v2/addresses/{address}/transactions?items_count=4"))
            .await
            .iter()
            .map(|t| t["hash"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(history, hashes.iter().map(|h| format!("{h:#x}")).collect::<Vec<_>>(), "history of {address}");
        let counters = get(addr, &format!("/api/v2/addresses/{address}/counters")).await;
        assert_eq!(counters["transactions_count"], hashes.len().to_string());
        let tabs = get(addr, &format!("/api/v2/addresses/{address}/tabs-counters")).await;
        assert_eq!(tabs["transactions_count"], hashes.len());
        let sent: Vec<String> =
            walk(addr, &format!("/api/v2/addresses/{address}/transactions?filter=from&items_count=3"))
                .await
                .iter()
                .map(|t| t["hash"].as_str().unwrap().to_owned())
                .collect();
        let want_sent: Vec<String> =
            c.txs.iter().filter(|t| t.from == *address).map(|t| format!("{:#x}", t.hash)).collect();
        assert_eq!(sent, want_sent, "sent by {address}");
        let oldest_first: Vec<String> =
            walk(addr, &format!("/api/v2/addresses/{address}/transactions?order=asc&items_count=5"))
                .await
                .iter()
                .map(|t| t["hash"].as_str().unwrap().to_owned())
                .collect();
        assert_eq!(oldest_first, history.iter().rev().cloned().collect::<Vec<_>>());
        // Sorted by value or fee (the frontend's column sort): the node's amounts, ties by position.
        let mut amounts = Vec::new();
        for tx in c.txs.iter().filter(|t| hashes.contains(&t.hash)) {
            let value = node.get_transaction_by_hash(tx.hash).await.unwrap().unwrap().value();
            let receipt = node.get_transaction_receipt(tx.hash).await.unwrap().unwrap();
            let fee = U256::from(receipt.gas_used()) * U256::from(receipt.effective_gas_price());
            amounts.push((value, fee, tx.block, tx.index, format!("{:#x}", tx.hash)));
        }
        for (sort, order) in [("value", "desc"), ("value", "asc"), ("fee", "desc"), ("fee", "asc")] {
            let path = format!("/api/v2/addresses/{address}/transactions?sort={sort}&order={order}&items_count=2");
            let got: Vec<String> =
                walk(addr, &path).await.iter().map(|t| t["hash"].as_str().unwrap().to_owned()).collect();
            // The amount in the order asked for; equal amounts newest first either way (as Blockscout).
            let mut want = amounts.clone();
            want.sort_by(|a, b| {
                let (x, y) = if sort == "value" { (a.0, b.0) } else { (a.1, b.1) };
                let by_amount = if order == "asc" { x.cmp(&y) } else { y.cmp(&x) };
                by_amount.then((b.2, b.3).cmp(&(a.2, a.3)))
            });
            let want: Vec<String> = want.into_iter().map(|(.., hash)| hash).collect();
            assert_eq!(got, want, "{path}");
            // A cursor as Blockscout writes it, with both amounts: the sorted one counts.
            let first = get(addr, &path).await;
            if let Some(next) = first["next_page_params"].as_object() {
                let other = if sort == "value" { "fee" } else { "value" };
                let query: Vec<String> = next
                    .iter()
                    .filter(|(k, _)| *k != other)
                    .map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                    .collect();
                let plain = get(addr, &format!("{path}&{}", query.join("&"))).await;
                let both = get(addr, &format!("{path}&{}&{other}=1", query.join("&"))).await;
                assert_eq!(plain, both, "{path}: a cursor with both amounts");
                assert_eq!(plain["items"][0]["hash"].as_str(), want.get(2).map(String::as_str), "{path}: page 2");
            }
        }
    }
    // Coin balance history: each value is the node's balance after that block.
    let sender = accounts[0];
    let history = walk(addr, &format!("/api/v2/addresses/{sender}/coin-balance-history?items_count=3")).await;
    assert!(!history.is_empty());
    for entry in &history {
        let block = entry["block_number"].as_u64().unwrap();
        let at = node.get_balance(sender).block_id(block.into()).await.unwrap();
        let before = node.get_balance(sender).block_id((block - 1).into()).await.unwrap();
        assert_eq!(decimal(&entry["value"]), at);
        let delta: i128 = entry["delta"].as_str().unwrap().parse().unwrap();
        assert_eq!(delta, at.to::<i128>() - before.to::<i128>());
    }
    // The Demo contract's logs: all of them newest first, and filtered by a topic exactly those the node finds with
    // that topic in some position (Demo emits two event kinds, so a filter has logs to leave out).
    let demo = c.txs.iter().find_map(|t| t.created).expect("the demo deployment");
    let logs = walk(addr, &format!("/api/v2/addresses/{demo}/logs?items_count=5")).await;
    let account = t.daemon.store().reader().get::<rockscout::store::tables::Accounts>(&demo).unwrap().unwrap();
    assert_eq!(logs.len() as u64, account.log_count);
    assert_eq!(log_ids(&logs), node_logs(&node, demo, None).await, "every Demo log, newest first");
    let added = node_logs(&node, demo, Some(Demo::Added::SIGNATURE_HASH)).await;
    let (added_tx, added_index) = added.first().expect("a successful mayFail call logged an addition");
    let added_log = logs.iter().find(|l| l["transaction_hash"] == *added_tx && l["index"] == *added_index).unwrap();
    let topic_at = |position: usize| added_log["topics"][position].as_str().unwrap().parse::<B256>().unwrap();
    // The two event signatures (position 0), a caller (position 1) and an added amount (position 2).
    for topic in [Demo::Poked::SIGNATURE_HASH, Demo::Added::SIGNATURE_HASH, topic_at(1), topic_at(2)] {
        let want = node_logs(&node, demo, Some(topic)).await;
        assert!(!want.is_empty() && want.len() < logs.len(), "{topic} is on some Demo logs, not all");
        let filtered = walk(addr, &format!("/api/v2/addresses/{demo}/logs?topic={topic}&items_count=2")).await;
        assert_eq!(log_ids(&filtered), want, "Demo logs with topic {topic}");
    }
    let nowhere = B256::repeat_byte(0xee);
    assert!(walk(addr, &format!("/api/v2/addresses/{demo}/logs?topic={nowhere}")).await.is_empty());
    let unknown = get(addr, "/api/v2/addresses/0x000000000000000000000000000000000000dEaD").await;
    assert_eq!(unknown["coin_balance"], "0");
    assert_eq!(unknown["is_contract"], false);
    assert_eq!(
        get(addr, "/api/v2/addresses/0x000000000000000000000000000000000000dEaD/transactions").await,
        json!({"items": [], "next_page_params": null})
    );

    // Search and redirects.
    let (tx_hash, tx_block) = (c.txs[0].hash, c.txs[0].block);
    let block_hash = node.get_block_by_number(BlockNumberOrTag::Number(tx_block)).await.unwrap().unwrap().header.hash;
    let found = get(addr, &format!("/api/v2/search?q={tx_block}")).await;
    assert_eq!(found["items"][0]["block_hash"], format!("{block_hash:#x}"));
    let redirect = get(addr, &format!("/api/v2/search/check-redirect?q={tx_hash:#x}")).await;
    assert_eq!(redirect, json!({"redirect": true, "type": "transaction", "parameter": format!("{tx_hash:#x}")}));
    let redirect = get(addr, &format!("/api/v2/search/check-redirect?q={tx_block}")).await;
    assert_eq!(redirect["parameter"], format!("{block_hash:#x}"));
    let quick = get(addr, &format!("/api/v2/search/quick?q={demo}")).await;
    assert_eq!(quick[0]["type"], "contract");
    let nothing = get(addr, "/api/v2/search/check-redirect?q=nothing-matches-this").await;
    assert_eq!(nothing, json!({"redirect": false, "type": null, "parameter": null}));

    // Home page and stats.
    let newest: Vec<u64> = get(addr, "/api/v2/main-page/blocks")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["height"].as_u64().unwrap())
        .collect();
    assert_eq!(newest, (c.head - 3..=c.head).rev().collect::<Vec<_>>());
    let latest = get(addr, "/api/v2/main-page/transactions").await;
    assert_eq!(latest.as_array().unwrap().len(), 6);
    assert_eq!(latest[0]["hash"], format!("{:#x}", c.txs[0].hash));
    let stats = get(addr, "/api/v2/stats").await;
    assert_eq!(stats["total_transactions"], c.txs.len().to_string());
    assert_eq!(stats["total_blocks"], (c.head + 1).to_string());
    let tiers = node_gas_tiers(&node, c.head).await;
    let names = ["slow", "average", "fast"];
    for (name, tier) in names.iter().zip(&tiers) {
        assert_eq!(stats["gas_prices"][name], json!(gwei(tier.price)), "{name} gas price without the oracle header");
    }
    let detailed =
        http::request(addr, Method::GET, "/api/v2/stats", &[("updated-gas-oracle", "true")], "").await.json();
    let block_time = detailed["average_block_time"].as_f64().unwrap();
    for (i, (name, tier)) in names.iter().zip(&tiers).enumerate() {
        let mut got = detailed["gas_prices"][name].clone();
        // The wait: that many mean block times (compared apart, as a float computed on both sides).
        let time = got.as_object_mut().unwrap().remove("time").unwrap().as_f64().unwrap();
        assert!((time - block_time * (3 - i) as f64).abs() <= 1e-9 * time.abs(), "{name} wait {time} ms");
        let want = json!({
            "price": gwei(tier.price),
            "fiat_price": null,
            "base_fee": gwei(tier.base_fee),
            "priority_fee": gwei(tier.priority_fee),
            "priority_fee_wei": tier.priority_fee.to_string(),
            "wei": tier.price.to_string(),
        });
        assert_eq!(got, want, "{name} gas price with the oracle header");
    }
    let chart = get(addr, "/api/v2/stats/charts/transactions").await;
    let charted: u64 =
        chart["chart_data"].as_array().unwrap().iter().map(|d| d["transactions_count"].as_u64().unwrap()).sum();
    assert_eq!(charted as usize, c.txs.len());
    let status = get(addr, "/api/v2/main-page/indexing-status").await;
    assert_eq!(status["finished_indexing_blocks"], true);
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_stay_exact_while_blocks_arrive() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 10, 4).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    let before = chain(&node).await;

    // Walk page by page, mining new transactions between pages.
    let mut seen = Vec::new();
    let mut url = "/api/v2/transactions?items_count=6".to_owned();
    loop {
        let page = get(addr, &url).await;
        seen.extend(page["items"].as_array().unwrap().iter().map(|t| t["hash"].as_str().unwrap().to_owned()));
        transfer(&node, accounts[1], accounts[2], 1).await;
        mine(&node, 1).await;
        wait_synced(&t.daemon, &node).await;
        let Some(next) = page["next_page_params"].as_object() else { break };
        url =
            format!("/api/v2/transactions?items_count=6&block_number={}&index={}", next["block_number"], next["index"]);
    }
    let want: Vec<String> = before.txs.iter().map(|t| format!("{:#x}", t.hash)).collect();
    assert_eq!(seen, want, "the pages hold exactly the transactions that existed when the walk began");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_the_right_status_and_body() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    mine(&node, 3).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    let invalid = |pointer: &str| json!({"errors": [{"title": "Invalid value", "source": {"pointer": pointer}}]});
    let zero = Address::ZERO;
    let cases: Vec<(Method, String, u16, Value)> = vec![
        (Method::GET, "/api/v2/blocks/999999999999".into(), 404, json!({"message": "Not found"})),
        (Method::GET, format!("/api/v2/blocks/0x{}", "cd".repeat(32)), 404, json!({"message": "Not found"})),
        (Method::GET, "/api/v2/blocks/not-a-block".into(), 422, invalid("/block_hash_or_number_param")),
        (Method::GET, format!("/api/v2/transactions/0x{}", "ab".repeat(32)), 404, json!({"message": "Not found"})),
        (Method::GET, format!("/api/v2/transactions/0x{}/logs", "ab".repeat(32)), 404, json!({"message": "Not found"})),
        (Method::GET, "/api/v2/transactions/0x1234".into(), 422, invalid("/transaction_hash_param")),
        (Method::GET, "/api/v2/addresses/0xnothex".into(), 422, invalid("/address_hash_param")),
        (Method::GET, "/api/v2/addresses/0xnothex/transactions".into(), 422, invalid("/address_hash_param")),
        (Method::GET, "/api/v2/blocks?items_count=0".into(), 422, invalid("/items_count")),
        (Method::GET, format!("/api/v2/addresses/{zero}/transactions?sort=fee&order=asc&fee=x"), 422, invalid("/fee")),
        (
            Method::GET,
            format!("/api/v2/addresses/{zero}/transactions?sort=fee&order=asc&fee=5"),
            422,
            invalid("/block_number"),
        ),
        (Method::GET, format!("/api/v2/addresses/{zero}/transactions?sort=size"), 422, invalid("/sort")),
        (Method::GET, "/api/v2/stats/hot-smart-contracts".into(), 422, invalid("/scale")),
        (Method::GET, "/api/v2/stats/hot-smart-contracts?scale=2d".into(), 422, invalid("/scale")),
        (Method::GET, "/api/v2/stats/hot-smart-contracts?scale=1d&sort=balance".into(), 422, invalid("/sort")),
        (Method::GET, "/api/v2/transactions?items_count=101".into(), 422, invalid("/items_count")),
        (Method::GET, "/api/v2/blocks?type=nope".into(), 422, invalid("/type")),
        (Method::GET, "/api/v2/blocks?block_number=abc".into(), 422, invalid("/block_number")),
        (Method::GET, "/api/v2/search".into(), 422, invalid("/q")),
        (Method::GET, "/api/v2/no-such-thing".into(), 400, json!({"message": "Unknown API v2 action"})),
        // Unknown paths outside the API are explorer pages (an HTML 404: tests/it/ui.rs); under /api they stay JSON.
        (Method::GET, "/api/no-such-page".into(), 404, json!({"message": "Not found"})),
        (Method::POST, "/api/v2/blocks".into(), 405, json!({"message": "Method not allowed; use GET"})),
        (Method::DELETE, "/api/v2/stats".into(), 405, json!({"message": "Method not allowed; use GET"})),
    ];
    for (method, path, status, body) in cases {
        let reply = http::request(addr, method.clone(), &path, &[], "").await;
        assert_eq!(reply.status.as_u16(), status, "{method} {path}: {}", String::from_utf8_lossy(&reply.body));
        assert_eq!(reply.headers["content-type"], "application/json; charset=utf-8", "{path}");
        let got = reply.json();
        // Compare every key the expectation names (422 details are free text).
        match (&got["errors"], &body["errors"]) {
            (Value::Array(g), Value::Array(w)) => {
                assert_eq!(g[0]["title"], w[0]["title"], "{path}");
                assert_eq!(g[0]["source"], w[0]["source"], "{path}");
                assert!(g[0]["detail"].as_str().is_some_and(|d| !d.is_empty()), "{path}");
            }
            _ => assert_eq!(got, body, "{method} {path}"),
        }
    }
    t.daemon.shutdown().await.unwrap();
}

//! Reorgs driven by anvil (`anvil_reorg`, `anvil_rollback`, `evm_snapshot`/`evm_revert`): afterwards the store
//! equals the node's canonical chain exactly and the replaced blocks are recorded as reorged.

use crate::support::compare::{assert_store_matches_node, reorged_hashes, stored_hashes};
use crate::support::*;
use alloy::primitives::{Address, U256};
use alloy::providers::{Provider, RootProvider};
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;

/// A fresh address that only the new branch of a reorg pays.
fn newcomer(seed: u8) -> Address {
    Address::repeat_byte(seed)
}

async fn synced_daemon_with_history(blocks: u64) -> (rockscout::dev::anvil::Anvil, RootProvider, TestDaemon) {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    generate_traffic(&node, &anvil.addresses(), blocks, 4).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;
    assert_store_matches_node(t.daemon.store(), &node).await;
    (anvil, node, t)
}

async fn reorg_with_anvil_reorg(depth: u64) {
    let (anvil, node, t) = synced_daemon_with_history(depth + 8).await;
    let before = stored_hashes(t.daemon.store());
    let tip = *before.keys().last().unwrap();
    let accounts = anvil.addresses();
    // Pages of the replaced blocks and of the payees-to-be, read before the reorg, are in the row cache: after it
    // the API must answer from the new branch, not from the cache.
    let addr = t.daemon.addr();
    let api = move |path: String| async move { http::get(addr, &path).await.json() };
    let counted = |seed: u8| format!("/api/v2/addresses/{}/counters", newcomer(seed));
    for n in tip - depth + 1..=tip {
        assert_eq!(api(format!("/api/v2/blocks/{n}")).await["hash"], json!(format!("{:#x}", before[&n])));
    }
    assert_eq!(api(counted(0xa1)).await["transactions_count"], "0");
    // Native balances come from the node at the indexed tip, cached per tip: the reorg keeps the tip's height, so
    // the cache must tell the new tip block from the old one.
    let watched = [newcomer(0xa1), accounts[1]];
    let coin_balance = |a: Address| async move { api(format!("/api/v2/addresses/{a}")).await["coin_balance"].clone() };
    let etherscan = |a: Address| async move { api(format!("/api?module=account&action=balance&address={a}")).await };
    for a in watched {
        let node_balance = node.get_balance(a).await.unwrap().to_string();
        assert_eq!(coin_balance(a).await, json!(node_balance), "{a} before the reorg");
        assert_eq!(etherscan(a).await["result"], json!(node_balance), "{a} before the reorg (etherscan)");
    }
    // The new branch pays addresses the old chain never saw, in its first and last block.
    let pairs = json!([
        [{"from": accounts[1], "to": newcomer(0xa1), "value": U256::from(777u64)}, 0],
        [{"from": accounts[2], "to": newcomer(0xa2), "value": U256::from(888u64)}, depth - 1],
    ]);
    let _: serde_json::Value = node.raw_request("anvil_reorg".into(), json!([depth, pairs])).await.unwrap();
    assert_eq!(node.get_block_number().await.unwrap(), tip, "anvil_reorg keeps the height");

    wait_synced(&t.daemon, &node).await;
    assert_store_matches_node(t.daemon.store(), &node).await;
    let replaced: BTreeSet<_> = before.range(tip - depth + 1..).map(|(_, h)| *h).collect();
    assert_eq!(replaced.len() as u64, depth);
    assert_eq!(reorged_hashes(t.daemon.store()), replaced, "exactly the replaced blocks are recorded as reorged");
    let after = stored_hashes(t.daemon.store());
    assert_eq!(before.range(..=tip - depth).collect::<Vec<_>>(), after.range(..=tip - depth).collect::<Vec<_>>());
    for seed in [0xa1, 0xa2] {
        let account = t.daemon.store().reader().get::<rockscout::store::tables::Accounts>(&newcomer(seed)).unwrap();
        assert_eq!(account.map(|a| a.tx_count), Some(1), "the new branch's payee {seed:#x} is indexed");
        assert_eq!(api(counted(seed)).await["transactions_count"], "1", "the API shows payee {seed:#x}");
    }
    for a in watched {
        let node_balance = node.get_balance(a).await.unwrap();
        assert_eq!(coin_balance(a).await, json!(node_balance.to_string()), "{a} after the reorg");
        assert_eq!(etherscan(a).await["result"], json!(node_balance.to_string()), "{a} after the reorg (etherscan)");
    }
    assert_eq!(node.get_balance(newcomer(0xa1)).await.unwrap(), U256::from(777u64), "the new branch paid it");
    for n in tip - depth + 1..=tip {
        let hash = node.get_block_by_number(n.into()).await.unwrap().unwrap().header.hash;
        assert_eq!(api(format!("/api/v2/blocks/{n}")).await["hash"], json!(format!("{hash:#x}")), "block {n}");
    }
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reorg_of_depth_one() {
    reorg_with_anvil_reorg(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reorg_of_depth_two() {
    reorg_with_anvil_reorg(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reorg_of_depth_twelve() {
    reorg_with_anvil_reorg(12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_then_a_new_branch() {
    let (anvil, node, t) = synced_daemon_with_history(10).await;
    let before = stored_hashes(t.daemon.store());
    let tip = *before.keys().last().unwrap();
    let _: serde_json::Value = node.raw_request("anvil_rollback".into(), json!([3])).await.unwrap();
    // The node is now shorter than the index: the index follows it down.
    assert_eq!(wait_synced(&t.daemon, &node).await, tip - 3);
    assert_store_matches_node(t.daemon.store(), &node).await;
    let rolled_back: BTreeSet<_> = before.range(tip - 2..).map(|(_, h)| *h).collect();
    assert_eq!(reorged_hashes(t.daemon.store()), rolled_back);
    // The API shows them as reorged blocks, and their heights as lost consensus.
    let listed = http::get(t.daemon.addr(), "/api/v2/blocks?type=reorg").await.json();
    let listed: BTreeSet<_> =
        listed["items"].as_array().unwrap().iter().map(|b| b["hash"].as_str().unwrap().parse().unwrap()).collect();
    assert_eq!(listed, rolled_back);
    let lost = http::get(t.daemon.addr(), &format!("/api/v2/blocks/{tip}")).await;
    assert_eq!(lost.status, 404);
    assert_eq!(lost.json(), json!({"message": "Block lost consensus", "hash": format!("{:#x}", before[&tip])}));
    let by_hash = http::get(t.daemon.addr(), &format!("/api/v2/blocks/{:#x}", before[&tip])).await.json();
    assert_eq!(by_hash["type"], "reorg");

    // A different branch grows past the old tip.
    let accounts = anvil.addresses();
    for i in 0..5u64 {
        transfer(&node, accounts[3], newcomer(0xb0 + i as u8), 5 + i).await;
        mine(&node, 1).await;
    }
    assert_eq!(wait_synced(&t.daemon, &node).await, tip + 2);
    assert_store_matches_node(t.daemon.store(), &node).await;
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_revert_replaces_a_branch() {
    let (anvil, node, t) = synced_daemon_with_history(4).await;
    let accounts = anvil.addresses();
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    generate_traffic(&node, &accounts, 6, 3).await;
    wait_synced(&t.daemon, &node).await;
    let old_branch: BTreeSet<_> = stored_hashes(t.daemon.store()).into_values().collect();
    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    for i in 0..9u64 {
        transfer(&node, accounts[4], newcomer(0xc0 + i as u8), 1 + i).await;
        mine(&node, 1).await;
    }
    wait_synced(&t.daemon, &node).await;
    assert_store_matches_node(t.daemon.store(), &node).await;
    let now: BTreeSet<_> = stored_hashes(t.daemon.store()).into_values().collect();
    let replaced: BTreeSet<_> = old_branch.difference(&now).copied().collect();
    assert_eq!(replaced.len(), 7, "the deploy block's successors on the old branch");
    assert_eq!(reorged_hashes(t.daemon.store()), replaced);
    t.daemon.shutdown().await.unwrap();
}

/// A token whose creation a reorg replaced with another token at the same address (same sender and nonce) shows the
/// new contract's name and symbol, and is found by them only (the old branch's were kept and never read again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_recreated_by_a_reorg_is_read_again() {
    use alloy::primitives::Bytes;
    use alloy::sol_types::{SolCall, SolConstructor};
    use rockscout::dev::contracts::DemoToken;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let token = |name: &str, symbol: &str| {
        let args = DemoToken::constructorCall {
            name_: name.into(),
            symbol_: symbol.into(),
            initialSupply: U256::from(10u64).pow(U256::from(24)),
        };
        Bytes::from([&DemoToken::BYTECODE[..], &args.abi_encode()].concat())
    };
    let named = |address: Address, name: &'static str| async move {
        let answer = http::get_json(addr, &format!("/api/v2/tokens/{address}")).await;
        (answer["name"] == name).then_some(answer)
    };
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    let deployed = deploy(&node, a[5], &token("OldTok", "OLD")).await;
    mine(&node, 1).await;
    let old = created_address(&node, deployed).await;
    call(&node, a[5], old, DemoToken::transferCall { to: a[6], value: U256::from(7) }.abi_encode()).await;
    mine(&node, 2).await;
    wait_synced(&t.daemon, &node).await;
    poll_until("the old token's name", Duration::from_secs(30), || named(old, "OldTok")).await;

    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    let deployed = deploy(&node, a[5], &token("NewTok", "NEW")).await;
    mine(&node, 1).await;
    let new = created_address(&node, deployed).await;
    assert_eq!(new, old, "same sender and nonce, same address");
    call(&node, a[5], new, DemoToken::transferCall { to: a[6], value: U256::from(8) }.abi_encode()).await;
    mine(&node, 3).await;
    wait_synced(&t.daemon, &node).await;
    let token = poll_until("the new token's name", Duration::from_secs(30), || named(new, "NewTok")).await;
    assert_eq!(token["symbol"], "NEW");
    let found = |q: &'static str| async move {
        let items = http::get_json(addr, &format!("/api/v2/search?q={q}")).await["items"].clone();
        items.as_array().unwrap().iter().any(|i| i["address_hash"] == new.to_checksum(None))
    };
    assert!(found("NewTok").await, "found by its new name");
    assert!(!found("OldTok").await, "not by the replaced one");
    t.daemon.shutdown().await.unwrap();
}

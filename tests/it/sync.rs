//! Catch-up and live following: the store equals the node's chain, block by block and address by address.

use crate::support::compare::{assert_coin_balances_match_node, assert_store_matches_node};
use crate::support::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_and_live_following_match_the_node() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    let sent = generate_traffic(&node, &accounts, 60, 6).await;
    assert!(sent >= 300, "hundreds of transactions: {sent}");

    // Small chunks so catch-up commits many batches, each carrying its tip.
    let t = start_daemon(&anvil.http_url(), |c| {
        c.indexer.chunk_blocks = 7;
        c.indexer.fetch_concurrency = 4;
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    let first = assert_store_matches_node(t.daemon.store(), &node).await;
    assert_eq!(first.txs as usize, sent);
    assert!(first.logs >= 60, "pokes and successful mayFail calls emit logs: {}", first.logs);
    let failed = t
        .daemon
        .store()
        .reader()
        .rows::<rockscout::store::tables::Transactions>()
        .filter(|r| r.as_ref().unwrap().1.status == Some(false))
        .count();
    assert!(failed > 0, "mayFail reverted some transactions");

    // Live: new blocks arrive while the daemon runs.
    let more = generate_traffic(&node, &accounts, 5, 3).await;
    wait_synced(&t.daemon, &node).await;
    let second = assert_store_matches_node(t.daemon.store(), &node).await;
    assert_eq!(second.txs as usize, sent + more);

    // The stats endpoint reports the same counts.
    let stats = http::get(t.daemon.addr(), "/api/v2/stats").await.json();
    assert_eq!(stats["total_transactions"], (sent + more).to_string());
    assert_eq!(stats["total_blocks"], second.blocks.to_string());
    assert_eq!(stats["total_addresses"], second.addresses.to_string());
    let health = http::get(t.daemon.addr(), "/health").await.json();
    assert_eq!(health["indexed_tip"], second.blocks - 1);
    assert_eq!(health["lag"], 0);
    t.daemon.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_chain_is_healthy_and_empty_blocks_are_indexed() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    mine(&node, 25).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    assert_eq!(wait_synced(&t.daemon, &node).await, 25);
    let compared = assert_store_matches_node(t.daemon.store(), &node).await;
    assert_eq!((compared.blocks, compared.txs), (26, 0));
    let reply = http::get(t.daemon.addr(), "/health").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["status"], "ok");
    t.daemon.shutdown().await.unwrap();
}

/// Blocks far below the node's head are committed without their native balances, and the balance writer reads
/// them afterwards: the balance index equals the node's, it fills an index built with `--coin-balances false` once
/// turned on, a reorg deeper than the blocks that came with their balances removes the writer's rows, and a reorg
/// of a live block restores the latest balances exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_balance_writer_fills_old_blocks_and_reverts_with_them() {
    use alloy::primitives::{Address, U256};
    use alloy::providers::Provider;
    use rockscout::indexer::balances::YIELD_LAG;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 6, 4).await;
    mine(&node, YIELD_LAG + 20).await;
    let head = node.get_block_number().await.unwrap();

    // Indexed without balances first: nothing in the balance index, and no balance tip.
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&anvil.http_url(), dir.path());
    config.indexer.coin_balances = false;
    let daemon = rockscout::Daemon::start(&config).await.unwrap();
    wait_synced(&daemon, &node).await;
    let reader = daemon.store().reader();
    assert_eq!(reader.rows::<rockscout::store::tables::CoinBalances>().count(), 0);
    assert_eq!(reader.balance_tip().unwrap(), None);
    drop(reader);
    daemon.shutdown().await.unwrap();

    // Turned on: the writer reads every block's balances, from block 0. With tracing, the trace pass stays behind it.
    config.indexer.coin_balances = true;
    config.tracing = true;
    let daemon = rockscout::Daemon::start(&config).await.unwrap();
    poll_until("the trace pass to reach the head, never ahead of the balance writer", Duration::from_secs(60), || {
        let reader = daemon.store().reader();
        let (traced, balanced) = (reader.trace_tip().unwrap(), reader.balance_tip().unwrap());
        let behind = traced.is_none_or(|t| balanced.is_some_and(|b| t.number <= b.number));
        assert!(behind, "trace tip {traced:?} ahead of balance tip {balanced:?}");
        std::future::ready(traced.filter(|t| t.number == head))
    })
    .await;
    assert_eq!(wait_synced(&daemon, &node).await, head);
    assert_coin_balances_match_node(daemon.store(), &node).await;
    let health = http::get(daemon.addr(), "/health").await.json();
    assert_eq!((health["balanced_tip"].as_u64(), health["balance_lag"].as_u64()), (Some(head), Some(0)), "{health}");

    // A reorg replaces every block above the first transfers, those the writer filled included; the new branch
    // pays an address the old one never saw, in a block the writer fills.
    let newcomer = Address::repeat_byte(0xd1);
    let depth = head - 3;
    let pairs = serde_json::json!([[{"from": accounts[5], "to": newcomer, "value": U256::from(4242u64)}, 0]]);
    let _: serde_json::Value = node.raw_request("anvil_reorg".into(), serde_json::json!([depth, pairs])).await.unwrap();
    wait_synced(&daemon, &node).await;
    assert_store_matches_node(daemon.store(), &node).await;
    assert_coin_balances_match_node(daemon.store(), &node).await;
    let page = http::get_json(daemon.addr(), &format!("/api/v2/addresses/{newcomer}/coin-balance-history")).await;
    assert_eq!(page["items"][0]["value"], "4242", "{page}");
    assert_eq!(page["items"][0]["block_number"], 4, "{page}");

    // A live block moves the latest balance of an address the writer filled in older blocks; a reorg of that block
    // puts back the balance after the block before it, wherever the writer was when the live block was committed.
    transfer(&node, accounts[1], newcomer, 77).await;
    mine(&node, 1).await;
    wait_synced(&daemon, &node).await;
    let pairs = serde_json::json!([[{"from": accounts[2], "to": newcomer, "value": U256::from(88u64)}, 0]]);
    let _: serde_json::Value = node.raw_request("anvil_reorg".into(), serde_json::json!([1, pairs])).await.unwrap();
    wait_synced(&daemon, &node).await;
    assert_coin_balances_match_node(daemon.store(), &node).await;
    daemon.shutdown().await.unwrap();
}

//! Catch-up and live following: the store equals the node's chain, block by block and address by address.

use crate::support::compare::assert_store_matches_node;
use crate::support::*;

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

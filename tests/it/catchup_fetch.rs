//! Catch-up in JSON-RPC batches: stretches of empty blocks and blocks with transactions, fetched several blocks per
//! request, give the same store as the node's chain, in far fewer requests than two per block.

use crate::support::compare::assert_store_matches_node;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_catch_up_over_empty_and_full_stretches_matches_the_node() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    // Empty, busy, empty, busy: each change of shape changes what a batch asks for.
    mine(&node, 40).await;
    let mut sent = generate_traffic(&node, &accounts, 12, 5).await;
    mine(&node, 40).await;
    sent += generate_traffic(&node, &accounts, 6, 3).await;

    let t = start_daemon(&anvil.http_url(), |c| {
        c.indexer.fetch_batch = 8;
        c.indexer.fetch_concurrency = 3;
        c.indexer.chunk_blocks = 9;
    })
    .await;
    let head = wait_synced(&t.daemon, &node).await;
    let compared = assert_store_matches_node(t.daemon.store(), &node).await;
    assert_eq!(compared.txs as usize, sent);
    assert_eq!(compared.blocks, head + 1);

    let report = t.daemon.status().last_sync.expect("the catch-up reported");
    assert_eq!((report.from, report.to, report.blocks), (0, head, head + 1));
    assert_eq!(report.txs as usize, sent);
    // Without batching: a request per block, one per block's receipts and one per block's balances.
    assert!(report.requests * 2 < report.blocks, "{} requests for {} blocks", report.requests, report.blocks);
    assert!(report.batches * 4 < report.blocks, "{} batches for {} blocks", report.batches, report.blocks);
    assert!(report.last_block.is_some() && report.first_block.is_some() && report.commits >= head / 9);

    // Live blocks after the catch-up: one block a request, receipts with it.
    let more = generate_traffic(&node, &accounts, 2, 2).await;
    wait_synced(&t.daemon, &node).await;
    let compared = assert_store_matches_node(t.daemon.store(), &node).await;
    assert_eq!(compared.txs as usize, sent + more);
    t.daemon.shutdown().await.expect("clean shutdown");
}

//! `anvil_reset` replaces the node's chain: with `--on-reset=reindex` the index is rebuilt from the new chain,
//! with `--on-reset=exit` the daemon stops with a clear error and the old index is left intact. Never mixed.

use crate::support::compare::{assert_store_matches_node, reorged_hashes, stored_hashes};
use crate::support::*;
use alloy::providers::Provider;
use rockscout::indexer::{IndexerError, ResetPolicy};
use rockscout::store::{Store, StoreOptions};
use rockscout::RunError;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_with_reindex_policy_rebuilds_from_the_new_chain() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 8, 3).await;
    let t = start_daemon(&anvil.http_url(), |c| c.indexer.on_reset = ResetPolicy::Reindex).await;
    wait_synced(&t.daemon, &node).await;
    let old: Vec<_> = stored_hashes(t.daemon.store()).into_values().collect();
    // Read the old chain through the API first, so its rows sit in the row cache when the reset wipes the index.
    let addr = t.daemon.addr();
    let api = move |path: String| async move { http::get(addr, &path).await };
    let old_tx = node.get_block_by_number(1.into()).await.unwrap().unwrap().transactions.hashes().next().unwrap();
    assert_eq!(api(format!("/api/v2/transactions/{old_tx:#x}")).await.status, 200);
    for (n, hash) in old.iter().enumerate() {
        assert_eq!(api(format!("/api/v2/blocks/{n}")).await.json()["hash"], json!(format!("{hash:#x}")));
    }

    let _: serde_json::Value = node.raw_request("anvil_reset".into(), json!([])).await.unwrap();
    let new_chain_id = node.get_chain_id().await.unwrap();
    generate_traffic(&node, &accounts, 3, 2).await;
    poll_until("the index to hold the new chain", Duration::from_secs(60), || async {
        let identity = t.daemon.store().reader().chain_identity().ok()??;
        (identity.0 == new_chain_id).then_some(())
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    assert_store_matches_node(t.daemon.store(), &node).await;
    let now = stored_hashes(t.daemon.store());
    assert!(old.iter().skip(1).all(|h| !now.values().any(|n| n == h)), "no block of the old chain survives");
    assert!(reorged_hashes(t.daemon.store()).is_empty(), "a replaced chain is not a reorg");
    // The API answers from the new chain: the old chain's first transaction is shown where the new chain has it
    // (the same sender, nonce and payload give the same hash in a new block), heights past the new tip are gone.
    let page = api(format!("/api/v2/transactions/{old_tx:#x}")).await;
    match node.get_transaction_by_hash(old_tx).await.unwrap().and_then(|tx| tx.block_number) {
        Some(number) => {
            let tip = node.get_block_number().await.unwrap();
            assert_eq!(page.json()["block_number"], json!(number), "{}", page.json());
            assert_eq!(page.json()["confirmations"], json!(tip - number + 1), "{}", page.json());
        }
        None => assert_eq!(page.status, 404),
    }
    assert!(!now.values().any(|h| *h == old[1]), "block 1 was replaced, so its transaction moved");
    for n in 0..old.len() as u64 {
        let page = api(format!("/api/v2/blocks/{n}")).await;
        match now.get(&n) {
            Some(hash) => assert_eq!(page.json()["hash"], json!(format!("{hash:#x}")), "block {n}"),
            None => assert_eq!(page.status, 404, "block {n} is past the new chain's tip"),
        }
    }
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_with_exit_policy_stops_and_keeps_the_old_index() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    generate_traffic(&node, &anvil.addresses(), 6, 2).await;
    let t = start_daemon(&anvil.http_url(), |c| c.indexer.on_reset = ResetPolicy::Exit).await;
    wait_synced(&t.daemon, &node).await;
    let old = stored_hashes(t.daemon.store());

    let _: serde_json::Value = node.raw_request("anvil_reset".into(), json!([])).await.unwrap();
    mine(&node, 2).await;
    let TestDaemon { daemon, dir } = t;
    let never = tokio_util::sync::CancellationToken::new();
    let result = tokio::time::timeout(Duration::from_secs(60), daemon.run_until(never)).await.expect("daemon stops");
    match result {
        Err(RunError::Indexer(IndexerError::ChainReplaced { reason })) => {
            assert!(reason.contains("chain id"), "{reason}");
            let message = RunError::Indexer(IndexerError::ChainReplaced { reason }).to_string();
            assert!(message.contains("--on-reset=reindex"), "the error says what to do: {message}");
        }
        other => panic!("expected ChainReplaced, got {other:?}"),
    }
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    assert_eq!(stored_hashes(&store), old, "the old index is intact, nothing of the new chain was written");
}

/// A synced daemon keeping undo data for the last 4 blocks, on 12 blocks of traffic, and the node's chain after an
/// `anvil_reorg` of 8 blocks (past that undo data). Returns the index's block hashes before the reorg.
async fn reorg_past_the_undo_data(
    policy: ResetPolicy,
) -> (
    rockscout::dev::anvil::Anvil,
    alloy::providers::RootProvider,
    TestDaemon,
    std::collections::BTreeMap<u64, alloy::primitives::B256>,
) {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 12, 2).await;
    let t = start_daemon(&anvil.http_url(), |c| {
        c.indexer.on_reset = policy;
        c.indexer.undo_depth = 4;
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    let before = stored_hashes(t.daemon.store());
    let pairs = json!([[{"from": accounts[3], "to": accounts[4], "value": "0x7"}, 0]]);
    let _: serde_json::Value = node.raw_request("anvil_reorg".into(), json!([8, pairs])).await.unwrap();
    (anvil, node, t, before)
}

/// Undo data is kept only for the blocks near the head: a deeper reorg cannot be reverted block by block. With
/// `--on-reset=exit` the daemon stops before it reverts anything (the index stays a whole prefix of the old branch,
/// with its tip) and says which block has no undo data; with `--on-reset=reindex` it rebuilds the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reorg_past_the_undo_data_stops_before_reverting_or_reindexes() {
    let (_anvil, _node, t, before) = reorg_past_the_undo_data(ResetPolicy::Exit).await;
    let tip = *before.keys().last().unwrap();
    let TestDaemon { daemon, dir } = t;
    let never = tokio_util::sync::CancellationToken::new();
    let result = tokio::time::timeout(Duration::from_secs(60), daemon.run_until(never)).await.expect("daemon stops");
    match result {
        Err(RunError::Indexer(IndexerError::ChainReplaced { reason })) => {
            let missing = format!("reaches block {}, but block {} has no undo data", tip - 7, tip - 7);
            assert!(reason.contains(&missing) && reason.contains("now 4"), "{reason}");
        }
        other => panic!("expected ChainReplaced, got {other:?}"),
    }
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    assert_eq!(stored_hashes(&store), before, "nothing was reverted");
    assert!(reorged_hashes(&store).is_empty());

    let (_anvil, node, t, before) = reorg_past_the_undo_data(ResetPolicy::Reindex).await;
    let tip = *before.keys().last().unwrap();
    poll_until("the reindexed tip to be the node's", Duration::from_secs(60), || async {
        let head = node.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.ok()??.header.hash;
        let stored = t.daemon.store().reader().tip().ok()??;
        (stored.hash == head && before[&tip] != head).then_some(())
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    assert_store_matches_node(t.daemon.store(), &node).await;
    t.daemon.shutdown().await.unwrap();
}

/// A node restarted with another chain id on the same blocks (its state file loaded under a new id) extends the
/// indexed tip, so no fork shows the change: the follow loop asks for the chain's identity again while it runs, and
/// with `--on-reset=reindex` the index is rebuilt as the new chain's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_id_changed_under_the_same_blocks_is_noticed_while_following() {
    use rockscout::dev::anvil::AnvilOptions;
    let state = tempfile::tempdir().unwrap();
    let state_file = state.path().join("anvil-state.json");
    let options = |port, chain_id| AnvilOptions {
        port,
        chain_id,
        extra_args: vec!["--no-mining".into(), "--state".into(), state_file.display().to_string()],
        ..Default::default()
    };
    let anvil = start_anvil_with(options(0, 713714));
    let port = anvil.port();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 4, 2).await;
    let t = start_daemon(&anvil.http_url(), |c| {
        c.indexer.on_reset = ResetPolicy::Reindex;
        c.indexer.identity_check = Duration::from_millis(500);
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    let indexed = stored_hashes(t.daemon.store());

    anvil.stop();
    let anvil = start_anvil_with(options(port, 999));
    let node = provider(&anvil.http_url());
    assert_eq!(node.get_chain_id().await.unwrap(), 999);
    let head = node.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap();
    assert_eq!(indexed.get(&head.header.number), Some(&head.header.hash), "the node kept the indexed blocks");
    generate_traffic(&node, &accounts, 2, 1).await;
    poll_until("the index to hold chain 999", Duration::from_secs(60), || async {
        let identity = t.daemon.store().reader().chain_identity().ok()??;
        (identity.0 == 999).then_some(())
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    assert_store_matches_node(t.daemon.store(), &node).await;
    t.daemon.shutdown().await.unwrap();
}

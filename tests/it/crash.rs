//! kill -9 of the daemon process at arbitrary moments of a catch-up, then restart: nothing lost, nothing
//! duplicated.

use crate::support::compare::assert_store_matches_node;
use crate::support::*;
use alloy::eips::BlockNumberOrTag;
use alloy::primitives::B256;
use alloy::providers::{Provider, RootProvider};
use rockscout::store::keys::BlockKey;
use rockscout::store::tables::{Headers, Transactions};
use rockscout::store::{Store, StoreOptions};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spawn_daemon(rpc_url: &str, data_dir: &std::path::Path, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_rockscout"))
        .args(["run", "--rpc-url", rpc_url, "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--poll-interval-ms", "20", "--fetch-concurrency", "8", "--metrics-listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn rockscout")
}

/// The indexed tip the daemon reports on /health, once it answers.
async fn indexed_tip(port: u16) -> Option<u64> {
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    drop(stream);
    http::get(addr, "/health").await.json()["indexed_tip"].as_u64()
}

/// The node's chain from block 0 to `head`: each block's hash and transaction count.
async fn node_chain(node: &RootProvider, head: u64) -> Vec<(B256, u64)> {
    let mut chain = Vec::new();
    for n in 0..=head {
        let block = node.get_block_by_number(BlockNumberOrTag::Number(n)).await.unwrap().expect("node block");
        chain.push((block.header.hash, block.transactions.len() as u64));
    }
    chain
}

/// Opens the store a killed daemon left behind and asserts it holds a prefix of `chain`: each stored block is the
/// node's, nothing is stored above the tip, and the transactions and counters are exactly those of blocks 0 to the
/// tip. Returns the tip.
fn assert_prefix_of_chain(dir: &std::path::Path, chain: &[(B256, u64)]) -> u64 {
    let store = Store::open(dir, &StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let reader = store.reader();
    let tip = reader.tip().unwrap().expect("the daemon committed a tip before it was killed");
    assert_eq!(tip.hash, chain[tip.number as usize].0, "the stored tip {} is the node's block", tip.number);
    for (n, (hash, _)) in chain.iter().enumerate().take(tip.number as usize + 1) {
        let header = reader.get::<Headers>(&BlockKey(n as u64)).unwrap().unwrap_or_else(|| panic!("block {n} lost"));
        assert_eq!(header.hash, *hash, "stored block {n} is the node's");
    }
    assert!(reader.get::<Headers>(&BlockKey(tip.number + 1)).unwrap().is_none(), "a block above the tip");
    let txs: u64 = chain[..=tip.number as usize].iter().map(|(_, count)| count).sum();
    let stored_txs = reader.rows::<Transactions>().count() as u64;
    assert_eq!(stored_txs, txs, "transactions of blocks 0..={}: none lost, none duplicated", tip.number);
    let counters = reader.counters().unwrap();
    assert_eq!((counters.blocks, counters.txs), (tip.number + 1, txs), "counters match the tip");
    tip.number
}

/// The first indexed tip a (re)started daemon reports.
async fn first_reported_tip(port: u16) -> u64 {
    poll_until("the daemon to report its indexed tip", Duration::from_secs(60), || indexed_tip(port)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_during_catch_up_loses_and_duplicates_nothing() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    generate_traffic(&node, &anvil.addresses(), 120, 8).await;
    mine(&node, 1500).await;
    let head = node.get_block_number().await.unwrap();
    let chain = node_chain(&node, head).await;
    let dir = tempfile::tempdir().unwrap();

    // Kill at rising targets; the first kill comes as soon as the daemon reports any indexed block. After each
    // kill the store is a prefix of the chain holding at least what /health reported before the kill, and the
    // next run resumes from there.
    let targets = [0, head / 10, head / 4, head / 3, head / 2, head * 3 / 4];
    let mut committed: Option<u64> = None;
    for target in targets {
        let port = free_port();
        let mut child = spawn_daemon(&anvil.http_url(), dir.path(), port);
        let resumed = first_reported_tip(port).await;
        if let Some(committed) = committed {
            assert!(resumed >= committed, "restarted at {resumed}, below the {committed} stored before the kill");
        }
        let reached = poll_until("the daemon to index up to the kill point", Duration::from_secs(120), || async {
            indexed_tip(port).await.filter(|tip| *tip >= target)
        })
        .await;
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        let stored = assert_prefix_of_chain(dir.path(), &chain);
        eprintln!("killed at reported tip {reached}, stored tip {stored} (target {target}, head {head})");
        assert!(stored >= reached, "the kill lost committed blocks: /health reported {reached}, {stored} is stored");
        committed = Some(stored);
    }
    let committed = committed.unwrap();

    // A last run to the head, stopped cleanly, then the whole store is compared with the node.
    let port = free_port();
    let mut child = spawn_daemon(&anvil.http_url(), dir.path(), port);
    let resumed = first_reported_tip(port).await;
    assert!(resumed >= committed, "restarted at {resumed}, below the {committed} stored before the last kill");
    poll_until("the daemon to reach the head", Duration::from_secs(120), || async {
        (indexed_tip(port).await == Some(head)).then_some(())
    })
    .await;
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "SIGTERM exits 0: {status}");
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    assert_eq!(store.open_state(), rockscout::store::OpenState::Clean, "SIGTERM closed the store cleanly");
    assert_store_matches_node(&store, &node).await;
}

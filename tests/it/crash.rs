//! kill -9 of the daemon process at arbitrary moments of a catch-up, then restart: nothing lost, nothing
//! duplicated.

use crate::support::compare::assert_store_matches_node;
use crate::support::*;
use alloy::providers::Provider;
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
        .args(["--poll-interval-ms", "20", "--fetch-concurrency", "8"])
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_during_catch_up_loses_and_duplicates_nothing() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    generate_traffic(&node, &anvil.addresses(), 120, 8).await;
    mine(&node, 1500).await;
    let head = node.get_block_number().await.unwrap();
    let dir = tempfile::tempdir().unwrap();

    // Kill at rising targets; the first kill comes as soon as the daemon answers at all.
    let targets = [0, head / 10, head / 4, head / 3, head / 2, head * 3 / 4];
    let mut kills = 0;
    for target in targets {
        let port = free_port();
        let mut child = spawn_daemon(&anvil.http_url(), dir.path(), port);
        let reached = poll_until("the daemon to index up to the kill point", Duration::from_secs(120), || async {
            indexed_tip(port).await.filter(|tip| *tip >= target)
        })
        .await;
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        kills += 1;
        assert!(reached >= target);
        eprintln!("killed at indexed tip {reached} (target {target}, head {head})");
        // Between kills the data is always a consistent prefix of the chain.
        let store = Store::open(dir.path(), &StoreOptions { read_only: true, ..Default::default() }).unwrap();
        let tip = store.reader().tip().unwrap();
        if let Some(tip) = tip {
            assert_eq!(store.reader().counters().unwrap().blocks, tip.number + 1, "counters match the tip");
        }
    }
    assert_eq!(kills, targets.len());

    // A last run to the head, stopped cleanly, then the whole store is compared with the node.
    let port = free_port();
    let mut child = spawn_daemon(&anvil.http_url(), dir.path(), port);
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

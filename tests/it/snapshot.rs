//! `rockscout snapshot`: a copy of a live data directory taken while the daemon indexes (through its control
//! socket) starts a second daemon at the copy's tip, and both converge to the same stored bytes; without a daemon
//! the command copies the directory itself; an existing target is refused.

use crate::support::*;
use alloy::providers::Provider;
use rockscout::store::{Store, StoreOptions};
use std::process::Command;
use std::time::Duration;

/// Every stored row except what is not the chain's: the pool's pending rows and the database state.
fn chain_rows(store: &Store) -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    let skipped = ["pending", "pending_by_time"];
    use rockscout::store::keys::Key;
    let state_key = rockscout::store::keys::MetaKey::DbState;
    store
        .raw_rows()
        .unwrap()
        .into_iter()
        .filter(|(table, key, _)| {
            let state = *table == "meta" && key.as_slice() == state_key.encode().as_ref();
            !skipped.contains(table) && !state
        })
        .collect()
}

fn snapshot(data_dir: &std::path::Path, to: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rockscout"))
        .args(["snapshot", "--data-dir"])
        .arg(data_dir)
        .arg("--to")
        .arg(to)
        .output()
        .expect("the rockscout binary runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_taken_while_indexing_starts_a_replica_that_converges() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    generate_traffic(&node, &accounts, 10, 4).await;
    let primary = start_daemon(&anvil.http_url(), |_| {}).await;
    let copies = tempfile::tempdir().unwrap();
    let replica_dir = copies.path().join("replica");

    // Blocks keep coming while the copy is taken.
    let (busy_node, busy_accounts) = (node.clone(), accounts.clone());
    let traffic = tokio::spawn(async move { generate_traffic(&busy_node, &busy_accounts, 10, 4).await });
    wait_synced(&primary.daemon, &node).await;
    let taken = snapshot(primary.dir.path(), &replica_dir);
    assert!(taken.status.success(), "snapshot failed: {}", String::from_utf8_lossy(&taken.stderr));
    let said = String::from_utf8_lossy(&taken.stdout).to_string();
    traffic.await.unwrap();
    let copy_tip = {
        let copy = Store::open(&replica_dir, &StoreOptions { read_only: true, ..StoreOptions::default() }).unwrap();
        let tip = copy.reader().tip().unwrap().expect("the copy holds blocks").number;
        tip
    };
    assert!(copy_tip > 10, "the copy was taken while indexing, past the first traffic: {copy_tip}");
    assert!(said.contains(&format!("tip {copy_tip}")), "{said}");

    let again = snapshot(primary.dir.path(), &replica_dir);
    assert!(!again.status.success(), "an existing target is refused");
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    // A mistyped data directory is refused (not created empty and copied), and so is a target inside the data.
    let typo = copies.path().join("no-such-data-dir");
    let refused = snapshot(&typo, &copies.path().join("from-typo"));
    assert!(!refused.status.success() && !typo.exists(), "a missing data directory is refused, not created");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not a rockscout data directory"));
    let inside = snapshot(primary.dir.path(), &primary.dir.path().join("copy"));
    assert!(!inside.status.success(), "a target inside the data directory is refused");
    assert!(String::from_utf8_lossy(&inside.stderr).contains("inside the data directory"));

    let mut config = test_config(&anvil.http_url(), &replica_dir);
    config.listen = "127.0.0.1:0".parse().unwrap();
    let replica = rockscout::Daemon::start(&config).await.expect("a daemon starts on the copy");
    let started_at = replica.store().reader().tip().unwrap().unwrap().number;
    assert!(started_at >= copy_tip, "the replica resumes from the copy's tip, it does not start over");
    mine(&node, 3).await;
    wait_synced(&primary.daemon, &node).await;
    wait_synced(&replica, &node).await;
    // Contract code arrives from a background writer: wait until both stores say the same.
    let converged = poll_until("the two indexes to hold the same rows", Duration::from_secs(60), || async {
        let (a, b) = (chain_rows(primary.daemon.store()), chain_rows(replica.store()));
        (a == b).then_some(a.len())
    })
    .await;
    assert!(converged > 100, "{converged} rows compared");

    // A stopped daemon's directory is copied by the command itself.
    primary.daemon.shutdown().await.unwrap();
    let offline = copies.path().join("offline");
    let taken = snapshot(primary.dir.path(), &offline);
    assert!(taken.status.success(), "{}", String::from_utf8_lossy(&taken.stderr));
    let copy = Store::open(&offline, &StoreOptions { read_only: true, ..StoreOptions::default() }).unwrap();
    assert!(copy.reader().tip().unwrap().unwrap().number >= started_at);
    replica.shutdown().await.unwrap();

    // A daemon that holds its directory but does not answer on its socket yet (it is starting, recovering after a
    // crash): the command waits for it instead of refusing with "stop it first".
    let store = std::sync::Arc::new(Store::open(&replica_dir, &StoreOptions::default()).unwrap());
    let (dir, target) = (replica_dir.clone(), copies.path().join("while-starting"));
    let waiting = tokio::task::spawn_blocking(move || snapshot(&dir, &target));
    // The daemon's start-up, as long as the command needs to find the directory held.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(rockscout::snapshot::serve(store.clone(), replica_dir.clone(), cancel.clone()));
    let taken = waiting.await.unwrap();
    assert!(taken.status.success(), "{}", String::from_utf8_lossy(&taken.stderr));
    let copy = Store::open(&copies.path().join("while-starting"), &StoreOptions::default()).unwrap();
    assert_eq!(copy.reader().tip().unwrap(), store.reader().tip().unwrap());
    cancel.cancel();
    serving.await.unwrap();
}

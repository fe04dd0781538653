//! `rockscout dev` as a newcomer runs it: anvil starts, the daemon indexes it, demo traffic shows up in the API.

use crate::support::{http, poll_until};
use std::process::{Command, Stdio};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_mode_serves_a_devnet_with_demo_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rockscout"))
        .args(["dev", "--listen", &format!("127.0.0.1:{port}"), "--poll-interval-ms", "50"])
        .arg("--data-dir")
        .arg(dir.path())
        .env("ANVIL_BIN", crate::support::anvil_bin())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn rockscout dev");
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let stats = poll_until("demo transactions to be indexed", Duration::from_secs(60), || async {
        tokio::net::TcpStream::connect(addr).await.ok()?;
        let stats = http::get(addr, "/api/v2/stats").await.json();
        let txs: u64 = stats["total_transactions"].as_str()?.parse().ok()?;
        // Transfers, the demo contract's deployment and calls to it arrive within a few blocks.
        (txs >= 6).then_some(stats)
    })
    .await;
    // The demo contract was deployed and is being called, some calls reverting.
    let (creation, created) = poll_until("the demo contract deployment", Duration::from_secs(30), || async {
        let list = http::get(addr, "/api/v2/transactions?type=contract_creation").await.json();
        let first = list["items"].as_array()?.first()?.clone();
        Some((first["hash"].as_str()?.to_owned(), first["created_contract"]["hash"].as_str()?.to_owned()))
    })
    .await;
    // Once its code is stored and matched with dev's own artifacts, the creation shows the contract as its page does.
    let page = poll_until("the demo contract's name", Duration::from_secs(30), || async {
        let page = http::get(addr, &format!("/api/v2/addresses/{created}")).await.json();
        page["name"].is_string().then_some(page)
    })
    .await;
    let detail = http::get(addr, &format!("/api/v2/transactions/{creation}")).await.json();
    let listed = http::get(addr, "/api/v2/transactions?type=contract_creation").await.json();
    let listed = listed["items"].as_array().unwrap().iter().find(|t| t["hash"] == creation.as_str()).unwrap().clone();
    for shown in [&detail["to"], &detail["created_contract"], &listed["to"], &listed["created_contract"]] {
        assert_eq!((&shown["name"], &shown["is_verified"]), (&page["name"], &page["is_verified"]), "{shown}");
    }
    poll_until("calls to the demo contract", Duration::from_secs(30), || async {
        let calls = http::get(addr, &format!("/api/v2/addresses/{created}/transactions")).await.json();
        (calls["items"].as_array()?.len() >= 3).then_some(())
    })
    .await;
    // One token of each standard is deployed and moving.
    poll_until("demo tokens of all three standards", Duration::from_secs(60), || async {
        let tokens = http::get(addr, "/api/v2/tokens").await.json();
        let kinds: std::collections::BTreeSet<String> =
            tokens["items"].as_array()?.iter().filter_map(|t| Some(t["type"].as_str()?.to_owned())).collect();
        (kinds.len() == 3).then_some(())
    })
    .await;
    // The factory's calls are traced: creations inside calls show up as internal transactions.
    poll_until("internal transactions from the demo factory", Duration::from_secs(60), || async {
        let list = http::get(addr, "/api/v2/internal-transactions").await.json();
        list["items"].as_array()?.iter().any(|i| i["type"] == "create" && i["success"] == true).then_some(())
    })
    .await;
    let health = http::get(addr, "/health").await.json();
    assert_eq!(health["node_reachable"], true);
    assert_eq!(health["tracing"], true);
    assert!(stats["total_addresses"].as_str().unwrap().parse::<u64>().unwrap() >= 3);
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(child.wait().unwrap().success(), "Ctrl-C stops dev mode with exit code 0");
}

/// Anvil persists the states of old blocks to disk and never removes them itself: each node the harness (or `dev`)
/// starts gets its own directory for them, removed with the node, so long test runs do not fill the disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_node_leaves_no_persisted_states_behind() {
    let anvil = crate::support::start_anvil();
    let node = crate::support::provider(&anvil.http_url());
    let dir = anvil.state_dir().to_path_buf();
    // A few hundred blocks are more than anvil keeps in memory: the oldest states go to the directory.
    let _: serde_json::Value =
        alloy::providers::Provider::raw_request(&node, "anvil_mine".into(), (1_000u64,)).await.unwrap();
    let persisted = std::fs::read_dir(&dir).unwrap().count();
    assert!(persisted > 0, "anvil persisted no states in {}", dir.display());
    drop(anvil);
    assert!(!dir.exists(), "{} outlived its node", dir.display());
}

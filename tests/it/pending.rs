//! The node's pending pool mirrored into the index: listed by `/transactions?filter=pending`, shown by
//! `/transactions/:hash`, and gone once mined.

use crate::support::*;
use serde_json::{json, Value};
use std::time::Duration;

async fn pending_hashes(addr: std::net::SocketAddr) -> Vec<String> {
    let page = http::get(addr, "/api/v2/transactions?filter=pending&items_count=100").await.json();
    page["items"].as_array().unwrap().iter().map(|t| t["hash"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_transactions_are_listed_until_mined() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let mut sent = Vec::new();
    for i in 0..5u64 {
        sent.push(format!("{:#x}", transfer(&node, accounts[i as usize], accounts[9], 1000 + i).await));
    }
    let listed = poll_until("the pool to be mirrored", Duration::from_secs(30), || async {
        let listed = pending_hashes(addr).await;
        (listed.len() == sent.len()).then_some(listed)
    })
    .await;
    let mut sorted_listed = listed.clone();
    sorted_listed.sort();
    let mut sorted_sent = sent.clone();
    sorted_sent.sort();
    assert_eq!(sorted_listed, sorted_sent);

    // Pending detail: no block yet, a maximum fee.
    let detail: Value = http::get(addr, &format!("/api/v2/transactions/{}", sent[0])).await.json();
    assert_eq!(detail["result"], "pending");
    assert!(detail["block_number"].is_null() && detail["status"].is_null());
    assert_eq!(detail["fee"]["type"], "maximum");
    assert_eq!(detail["confirmations"], 0);
    // An ether transfer to an account: only what the call shows, no receipt-derived types.
    assert_eq!(detail["transaction_types"], json!(["coin_transfer"]));

    // Pages of 2 walk the whole pool exactly.
    let mut walked = Vec::new();
    let mut url = "/api/v2/transactions?filter=pending&items_count=2".to_owned();
    loop {
        let page = http::get(addr, &url).await.json();
        walked.extend(page["items"].as_array().unwrap().iter().map(|t| t["hash"].as_str().unwrap().to_owned()));
        let Some(next) = page["next_page_params"].as_object() else { break };
        url = format!(
            "/api/v2/transactions?filter=pending&items_count=2&inserted_at={}&hash={}",
            next["inserted_at"].as_str().unwrap(),
            next["hash"].as_str().unwrap()
        );
    }
    assert_eq!(walked, listed);

    // Mined: they leave the pending list and are validated transactions.
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    poll_until("the mined transactions to leave the pending list", Duration::from_secs(30), || async {
        pending_hashes(addr).await.is_empty().then_some(())
    })
    .await;
    let detail: Value = http::get(addr, &format!("/api/v2/transactions/{}", sent[0])).await.json();
    assert_eq!(detail["result"], "success");
    t.daemon.shutdown().await.unwrap();
}

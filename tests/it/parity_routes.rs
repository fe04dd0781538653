//! Blockscout routes added for parity (issue 17, part A): the `/api/eth-rpc` alias of the passthrough, the
//! transaction statistics, the market chart, and the native balance index with the routes that read it. Values are
//! compared with the node.

use crate::support::*;
use alloy::primitives::U256;
use alloy::providers::Provider;
use hyper::Method;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

async fn post(addr: SocketAddr, path: &str, body: String) -> (u16, Value) {
    let reply = http::request(addr, Method::POST, path, &[("content-type", "application/json")], body).await;
    (reply.status.as_u16(), if reply.body.is_empty() { Value::Null } else { reply.json() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eth_rpc_is_the_same_passthrough_as_api_eth() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    mine(&node, 3).await;
    let t = start_daemon(&anvil.http_url(), |c| c.api.rpc.max_body = 4096).await;
    let addr = t.daemon.addr();
    wait_synced(&t.daemon, &node).await;
    let head = node.get_block_number().await.unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "anvil_mine", "params": ["0x5"]}),
        json!([{"jsonrpc": "2.0", "id": 3, "method": "eth_chainId"}, {"jsonrpc": "2.0", "id": 4, "method": "admin_peers"}]),
    ];
    for request in requests {
        let eth = post(addr, "/api/eth", request.to_string()).await;
        let eth_rpc = post(addr, "/api/eth-rpc", request.to_string()).await;
        assert_eq!(eth, eth_rpc, "{request}");
    }
    let (status, answer) =
        post(addr, "/api/eth-rpc", json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber"}).to_string()).await;
    assert_eq!((status, answer["result"].clone()), (200, json!(format!("{head:#x}"))));
    let (status, refused) =
        post(addr, "/api/eth-rpc", json!({"jsonrpc": "2.0", "id": 2, "method": "anvil_mine"}).to_string()).await;
    assert_eq!((status, refused["error"]["code"].clone()), (200, json!(-32601)));
    assert_eq!(node.get_block_number().await.unwrap(), head, "the refused call never reached the node");
    // The same body limit, answered as a JSON-RPC error.
    let (status, too_large) = post(addr, "/api/eth-rpc", "x".repeat(5000)).await;
    assert_eq!(status, 413, "{too_large}");
    assert!(too_large["error"]["message"].as_str().unwrap().contains("too large"), "{too_large}");
    let get = http::get(addr, "/api/eth-rpc").await;
    assert_eq!(get.status, 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_stats_count_the_last_day_and_the_pool() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let mut hashes = Vec::new();
    for i in 0..3u64 {
        hashes.push(transfer(&node, accounts[0], accounts[1], 1000 + i).await);
    }
    mine(&node, 1).await;
    hashes.push(transfer(&node, accounts[2], accounts[3], 77).await);
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let mut fees = U256::ZERO;
    for hash in &hashes {
        let receipt = node.get_transaction_receipt(*hash).await.unwrap().unwrap();
        fees += U256::from(receipt.gas_used) * U256::from(receipt.effective_gas_price);
    }
    // One transaction waits in the pool (no mining): the pool follower sees it.
    transfer(&node, accounts[4], accounts[5], 5).await;
    let stats = poll_until("the pending transaction in the stats", Duration::from_secs(30), || async {
        let stats = http::get_json(addr, "/api/v2/transactions/stats").await;
        (stats["pending_transactions_count"] == "1").then_some(stats)
    })
    .await;
    assert_eq!(stats["transactions_count_24h"], "4", "{stats}");
    assert_eq!(stats["transaction_fees_sum_24h"], fees.to_string(), "{stats}");
    assert_eq!(stats["transaction_fees_avg_24h"], (fees / U256::from(4)).to_string(), "{stats}");
    assert_eq!(stats.as_object().unwrap().len(), 4, "{stats}");

    let market = http::get_json(addr, "/api/v2/stats/charts/market").await;
    assert_eq!(market, json!({"chart_data": [], "available_supply": "0"}));
    // A hash-shaped path is still a transaction; `stats` is no longer read as one.
    let bad = http::get(addr, "/api/v2/transactions/0x12").await;
    assert_eq!(bad.status, 422);
    let unknown =
        http::get(addr, &format!("/api/v2/transactions/{:#x}", alloy::primitives::B256::repeat_byte(7))).await;
    assert_eq!(unknown.status, 404);
}

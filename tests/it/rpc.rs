//! The JSON-RPC passthrough at /api/eth, driven by a client no one here wrote (Foundry's `cast`), plus the
//! allow-list, malformed input, limits and a node outage.

use crate::support::*;
use alloy::primitives::{Address, U256};
use alloy::providers::Provider;
use hyper::Method;
use rockscout::dev::anvil::AnvilOptions;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Foundry's cast, from the project's npm install (or `CAST_BIN`); missing cast fails with instructions.
fn cast_bin() -> PathBuf {
    let path = std::env::var_os("CAST_BIN").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("scripts/tools/node_modules/@foundry-rs/cast-linux-amd64/bin/cast")
    });
    assert!(path.is_file(), "cast was not found at {}: run scripts/setup (npm installs @foundry-rs/cast-linux-amd64 into scripts/tools) or set CAST_BIN", path.display());
    path
}

fn cast(args: &[&str]) -> Result<String, String> {
    let out = Command::new(cast_bin()).args(args).env("NO_COLOR", "1").output().expect("run cast");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

async fn rpc(addr: SocketAddr, body: &str) -> (u16, Value) {
    let reply =
        http::request(addr, Method::POST, "/api/eth", &[("content-type", "application/json")], body.to_owned()).await;
    let value = if reply.body.is_empty() { Value::Null } else { reply.json() };
    (reply.status.as_u16(), value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cast_reads_and_sends_through_the_passthrough() {
    // Automining, as a wallet user would see the chain.
    let anvil = start_anvil_with(AnvilOptions::default());
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let url = format!("http://{}/api/eth", t.daemon.addr());
    let key = format!("{:#x}", anvil.signers()[0].to_bytes());
    let to = Address::repeat_byte(0x42);

    assert_eq!(cast(&["chain-id", "--rpc-url", &url]).unwrap(), "713714");
    assert_eq!(cast(&["block-number", "--rpc-url", &url]).unwrap(), node.get_block_number().await.unwrap().to_string());
    let sender = anvil.addresses()[0];
    let balance = node.get_balance(sender).await.unwrap();
    assert_eq!(cast(&["balance", &sender.to_string(), "--rpc-url", &url]).unwrap(), balance.to_string());

    // A transaction signed by cast, sent with eth_sendRawTransaction through the passthrough.
    let receipt =
        cast(&["send", "--private-key", &key, "--rpc-url", &url, "--value", "12345", &to.to_string(), "--json"])
            .unwrap();
    let receipt: Value = serde_json::from_str(&receipt).unwrap();
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(node.get_balance(to).await.unwrap(), U256::from(12345));
    let hash = receipt["transactionHash"].as_str().unwrap().to_owned();
    // The indexer picks it up.
    let path = format!("/api/v2/transactions/{hash}");
    poll_until("the sent transaction to be indexed", Duration::from_secs(30), || async {
        (http::get(t.daemon.addr(), &path).await.status == 200).then_some(())
    })
    .await;

    // A contract read with eth_call.
    let deployed = cast(&[
        "send",
        "--private-key",
        &key,
        "--rpc-url",
        &url,
        "--create",
        &rockscout::dev::contracts::Demo::BYTECODE.to_string(),
        "--json",
    ])
    .unwrap();
    let demo: Value = serde_json::from_str(&deployed).unwrap();
    let demo = demo["contractAddress"].as_str().unwrap().to_owned();
    cast(&["send", "--private-key", &key, "--rpc-url", &url, &demo, "poke(string)", "hi"]).unwrap();
    assert_eq!(cast(&["call", "--rpc-url", &url, &demo, "count()(uint256)"]).unwrap(), "1");

    // A dev-namespace method is refused and never reaches the node.
    let height = node.get_block_number().await.unwrap();
    let refused = cast(&["rpc", "--rpc-url", &url, "anvil_mine", "5"]).unwrap_err();
    assert!(refused.contains("does not exist/is not available"), "{refused}");
    assert_eq!(node.get_block_number().await.unwrap(), height);
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_json_rpc_errors_and_never_reach_the_node() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |c| c.api.rpc.max_batch = 5).await;
    let addr = t.daemon.addr();
    let sender = anvil.addresses()[0];
    let height = node.get_block_number().await.unwrap();
    let nonce = node.get_transaction_count(sender).await.unwrap();

    let refused = [
        ("eth_sendTransaction", json!([{"from": sender, "to": sender, "value": "0x1"}])),
        ("eth_sign", json!([sender, "0xdeadbeef"])),
        ("eth_signTransaction", json!([{"from": sender}])),
        ("eth_signTypedData_v4", json!([sender, {}])),
        ("anvil_mine", json!(["0x5"])),
        ("hardhat_mine", json!(["0x5"])),
        ("evm_mine", json!([])),
        ("evm_snapshot", json!([])),
        ("admin_peers", json!([])),
        ("personal_sign", json!(["0xdeadbeef", sender])),
        ("miner_start", json!([])),
        ("txpool_content", json!([])),
        ("engine_forkchoiceUpdatedV3", json!([])),
        ("debug_traceTransaction", json!(["0x00"])),
        ("eth_subscribe", json!(["newHeads"])),
        ("no_such_method", json!([])),
    ];
    for (i, (method, params)) in refused.iter().enumerate() {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).to_string();
        let (status, reply) = rpc(addr, &body).await;
        assert_eq!(status, 200, "{method}");
        assert_eq!(reply["id"], i, "{method}: id echoed");
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
        assert!(reply["error"]["message"].as_str().unwrap().contains(method), "{method}: {reply}");
    }
    assert_eq!(node.get_block_number().await.unwrap(), height, "no refused call mined a block");
    assert_eq!(node.get_transaction_count(sender).await.unwrap(), nonce, "no refused call sent a transaction");

    // eth_accounts is answered locally, empty; allowed calls come back exactly as the node sent them.
    let (_, accounts) = rpc(addr, r#"{"jsonrpc":"2.0","id":"a","method":"eth_accounts","params":[]}"#).await;
    assert_eq!(accounts, json!({"jsonrpc": "2.0", "id": "a", "result": []}));
    let (_, chain) = rpc(addr, r#"{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}"#).await;
    assert_eq!(chain, json!({"jsonrpc": "2.0", "id": 7, "result": "0xae3f2"}));

    // A mixed batch: forwarded and refused answers, every id present.
    let (_, batch) = rpc(addr, r#"[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"anvil_mine"},{"jsonrpc":"2.0","id":3,"method":"eth_accounts"},{"jsonrpc":"2.0","method":"anvil_mine"}]"#).await;
    let mut by_id: Vec<(i64, Value)> =
        batch.as_array().unwrap().iter().map(|r| (r["id"].as_i64().unwrap(), r.clone())).collect();
    by_id.sort_by_key(|(id, _)| *id);
    assert_eq!(by_id.len(), 3, "the notification gets no answer: {batch}");
    assert_eq!(by_id[0].1["result"], "0xae3f2");
    assert_eq!(by_id[1].1["error"]["code"], -32601);
    assert_eq!(by_id[2].1["result"], json!([]));
    assert_eq!(node.get_block_number().await.unwrap(), height);

    // Malformed input.
    let cases: &[(&str, i64)] = &[
        ("{not json", -32700),
        ("[{\"jsonrpc\":\"2.0\"", -32700),
        ("\"hello\"", -32600),
        ("{\"foo\": 1}", -32600),
        ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"eth_chainId\"}", -32600),
        ("[]", -32600),
    ];
    for (body, code) in cases {
        let (status, reply) = rpc(addr, body).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(reply["error"]["code"], *code, "{body}: {reply}");
    }
    let (_, invalid_items) = rpc(addr, "[1, {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_chainId\"}]").await;
    assert_eq!(invalid_items.as_array().unwrap().len(), 2);
    let too_many = format!("[{}]", [r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#; 6].join(","));
    let (_, reply) = rpc(addr, &too_many).await;
    assert_eq!(reply["error"]["code"], -32600);
    assert!(reply["error"]["message"].as_str().unwrap().contains("limit of 5"), "{reply}");
    // The server refuses a body over the limit as soon as its length is declared, and reads the rest of it, so the
    // client reads the answer even when it is still writing when the answer comes.
    let huge = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_call","params":["{}"]}}"#, "a".repeat(2 << 20));
    let headers = [("content-type", "application/json")];
    let refused = http::request(addr, Method::POST, "/api/eth", &headers, huge).await;
    assert_eq!(refused.status, 413);
    assert_eq!(refused.json()["error"]["code"], -32600);
    let get = http::get(addr, "/api/eth").await;
    assert_eq!(get.status, 405);
    assert_eq!(get.headers["allow"], "POST");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_node_gives_a_prompt_json_rpc_error() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| c.api.rpc.upstream_timeout = Duration::from_millis(500)).await;
    anvil.stop();
    let addr = t.daemon.addr();
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        rpc(addr, r#"{"jsonrpc":"2.0","id":4,"method":"eth_blockNumber"}"#),
    )
    .await
    .expect("an answer, not a hang");
    let (status, reply) = answer;
    assert_eq!(status, 502);
    assert_eq!(reply["id"], 4);
    assert_eq!(reply["error"]["code"], -32000);
    assert!(reply["error"]["message"].as_str().unwrap().contains("unreachable"), "{reply}");
    let (status, batch) = rpc(
        addr,
        r#"[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"},{"jsonrpc":"2.0","id":2,"method":"anvil_mine"}]"#,
    )
    .await;
    assert_eq!(status, 502);
    assert_eq!(batch.as_array().unwrap().len(), 2);
    t.daemon.shutdown().await.unwrap();
}

//! Hardening of `/api/eth` and `/health` (issue 12): node-held keys and look-alike method names never reach the
//! node; calls, log queries, traces, per-client concurrency and answer bytes are bounded; rate-limit refusals on the
//! passthrough are JSON-RPC errors and preflights count; `/health` notices a silent or stalled node.

use crate::support::*;
use alloy::primitives::{Address, U256};
use alloy::providers::Provider;
use hyper::Method;
use rockscout::api::limits::RateLimitConfig;
use rockscout::dev::anvil::{Anvil, AnvilOptions};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Init code that loops forever (JUMPDEST PUSH1 0 JUMP): an `eth_call` without `to` runs it until out of gas.
const ENDLESS_LOOP: &str = "0x5b600056";
/// Init code that counts down from 0xffff and stops: about 1.75M gas, more than the tests' 1M cap.
const HEAVY_LOOP: &str = "0x61ffff5b600190038060035700";

async fn rpc_as(addr: SocketAddr, client: &str, body: &str) -> http::Reply {
    let headers = [("content-type", "application/json"), ("x-forwarded-for", client)];
    http::request(addr, Method::POST, "/api/eth", &headers, body.to_owned()).await
}

async fn rpc(addr: SocketAddr, body: &str) -> Value {
    let reply = rpc_as(addr, "10.9.9.9", body).await;
    assert_eq!(reply.status, 200, "{body}: {}", String::from_utf8_lossy(&reply.body));
    reply.json()
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Pauses a node process (SIGSTOP) until dropped (SIGCONT), so a failing test never leaves it stopped.
pub(crate) struct Paused(u32);

impl Paused {
    /// Stops the node and returns once every one of its threads is stopped: `kill` returns when the signal is
    /// sent, and a thread still running can answer a request that arrives in that moment.
    pub(crate) fn new(anvil: &Anvil) -> Paused {
        let pid = anvil.pid();
        signal(pid, "-STOP");
        let paused = Paused(pid);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !all_threads_stopped(pid) {
            assert!(std::time::Instant::now() < deadline, "node {pid} did not stop within 10 s of SIGSTOP");
            std::thread::yield_now();
        }
        paused
    }
}

/// Whether every thread of process `pid` is stopped (state `T` in `/proc/PID/task/TID/stat`).
fn all_threads_stopped(pid: u32) -> bool {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the node's /proc entry");
    tasks.flatten().all(|task| {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // The state follows the command name, which is in parentheses and may hold spaces.
        stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) == Some("T")
    })
}

impl Drop for Paused {
    fn drop(&mut self) {
        signal(self.0, "-CONT");
    }
}

fn signal(pid: u32, which: &str) {
    let status = std::process::Command::new("kill").args([which, &pid.to_string()]).status().expect("run kill");
    assert!(status.success(), "kill {which} {pid}");
}

/// Waits until the daemon's metrics show `n` passthrough requests waiting for the node.
async fn passthrough_in_flight(metrics: SocketAddr, n: usize) {
    let line = format!("\nrockscout_rpc_passthrough_in_flight {n}\n");
    poll_until(&format!("{n} passthrough requests in flight"), Duration::from_secs(30), || async {
        http::metrics_text(metrics).await.contains(&line).then_some(())
    })
    .await
}

fn trusted_loopback() -> RateLimitConfig {
    RateLimitConfig { trusted_proxies: vec!["127.0.0.1".parse().unwrap()], ..RateLimitConfig::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_keys_and_look_alike_methods_never_reach_the_node() {
    use alloy::eips::eip2718::Encodable2718;
    use alloy::network::{Ethereum, EthereumWallet, NetworkTransactionBuilder, TransactionBuilder};
    use alloy::rpc::types::TransactionRequest;
    // Automining: anything that reached the node as a transaction would be mined at once.
    let anvil = start_anvil_with(AnvilOptions::default());
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rpc.allow_debug = true;
        c.api.rpc.allow_send_raw = false;
    })
    .await;
    let addr = t.daemon.addr();
    let sender = anvil.addresses()[0];
    let to = Address::repeat_byte(0x42);
    let height = node.get_block_number().await.unwrap();
    let nonce = node.get_transaction_count(sender).await.unwrap();
    let balance = node.get_balance(sender).await.unwrap();
    let tx = json!([{"from": sender, "to": to, "value": "0x1"}]);
    let signed = TransactionRequest::default()
        .with_from(sender)
        .with_to(to)
        .with_value(U256::from(1))
        .with_nonce(nonce)
        .with_chain_id(713_714)
        .with_gas_limit(21_000)
        .with_max_fee_per_gas(100_000_000_000)
        .with_max_priority_fee_per_gas(1_000_000_000);
    let wallet = EthereumWallet::from(anvil.signers()[0].clone());
    let envelope = <TransactionRequest as NetworkTransactionBuilder<Ethereum>>::build(signed, &wallet).await.unwrap();
    let raw = json!([format!("0x{}", alloy::hex::encode(envelope.encoded_2718()))]);

    let refused = [
        ("eth_sendTransactionSync", tx.clone()),
        ("eth_sendUnsignedTransaction", tx.clone()),
        ("eth_sendTransaction ", tx.clone()),
        ("eth_sendTransaction\u{0}", tx.clone()),
        ("eth_sendTransaction\u{200b}", tx.clone()),
        ("ETH_SENDTRANSACTION", tx.clone()),
        ("eth_sendRawTransactionSync", raw.clone()),
        ("eth_sendRawTransaction", raw.clone()),
        ("debug_setHead", json!(["0x0"])),
        ("eth_newPendingTransactionFilter", json!([])),
    ];
    for (i, (method, params)) in refused.iter().enumerate() {
        let reply = rpc(addr, &request(i as u64, method, params.clone())).await;
        assert_eq!(reply["id"], i, "{method:?}: {reply}");
        assert_eq!(reply["error"]["code"], -32601, "{method:?}: {reply}");
    }
    // A request smuggling a second, differently cased `method` member is not a valid request.
    let smuggled =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_chainId","METHOD":"eth_sendTransaction","params":{tx}}}"#);
    assert_eq!(rpc(addr, &smuggled).await["error"]["code"], -32600);
    // The node's accounts are not listed.
    let accounts = rpc(addr, &request(5, "eth_requestAccounts", json!([]))).await;
    assert_eq!(accounts, json!({"jsonrpc": "2.0", "id": 5, "result": []}));

    assert_eq!(node.get_block_number().await.unwrap(), height, "nothing was mined");
    assert_eq!(node.get_transaction_count(sender).await.unwrap(), nonce, "no transaction was sent");
    assert_eq!(node.get_balance(sender).await.unwrap(), balance);
    let pool: Value = node.raw_request("txpool_status".into(), json!([])).await.unwrap();
    assert_eq!(pool["pending"], "0x0", "{pool}");
    // The read-only tracing family is still forwarded with tracing on.
    let trace =
        rpc(addr, &request(6, "debug_traceCall", json!([{"to": to}, "latest", {"tracer": "callTracer"}]))).await;
    assert_eq!(trace["result"]["to"].as_str().map(str::to_lowercase), Some(format!("{to:#x}")), "{trace}");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_with_at_most_the_gas_cap() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rpc.gas_cap = 1_000_000;
        c.api.rpc.allow_debug = true;
    })
    .await;
    let addr = t.daemon.addr();
    let heavy = json!({"data": HEAVY_LOOP, "gas": "0x4c4b40"});

    // The node itself runs the heavy call with 5M gas, and estimates it above the cap.
    let direct: String = node.raw_request("eth_call".into(), json!([heavy, "latest"])).await.unwrap();
    assert_eq!(direct, "0x");
    let needed: U256 = node.raw_request("eth_estimateGas".into(), json!([{"data": HEAVY_LOOP}])).await.unwrap();
    assert!(needed > U256::from(1_000_000), "{needed}");

    // Through the passthrough it gets at most the cap, asked for or not, and runs out of gas.
    for (i, call) in [heavy.clone(), json!({"data": HEAVY_LOOP})].into_iter().enumerate() {
        let reply = rpc(addr, &request(i as u64, "eth_call", json!([call, "latest"]))).await;
        assert!(reply["error"]["message"].as_str().unwrap().to_lowercase().contains("gas"), "{reply}");
    }
    let estimate = rpc(addr, &request(3, "eth_estimateGas", json!([{"data": HEAVY_LOOP}]))).await;
    assert!(estimate["error"].is_object(), "{estimate}");
    let trace = rpc(addr, &request(4, "debug_traceCall", json!([heavy, "latest", {"tracer": "callTracer"}]))).await;
    let traced_gas = trace["result"]["gas"].as_str().unwrap_or_else(|| panic!("{trace}"));
    assert!(u64::from_str_radix(&traced_gas[2..], 16).unwrap() <= 1_000_000, "{trace}");
    assert!(trace["result"]["error"].is_string(), "the traced call runs out of gas: {trace}");

    // An endless loop asked to run with 1e9 gas comes back promptly with an out-of-gas error.
    let started = Instant::now();
    let endless =
        rpc(addr, &request(5, "eth_call", json!([{"data": ENDLESS_LOOP, "gas": "0x3b9aca00"}, "latest"]))).await;
    assert!(endless["error"]["message"].as_str().unwrap().to_lowercase().contains("gas"), "{endless}");
    assert!(started.elapsed() < Duration::from_secs(10), "answered in {:?}", started.elapsed());

    // Calls within the cap are untouched, alone and in a batch.
    let small =
        rpc(addr, &request(6, "eth_call", json!([{"to": Address::repeat_byte(1), "gas": "0x5208"}, "latest"]))).await;
    assert_eq!(small["result"], "0x", "{small}");
    let batch =
        format!("[{},{}]", request(7, "eth_call", json!([heavy, "latest"])), request(8, "eth_chainId", json!([])));
    let answers = rpc(addr, &batch).await;
    let by_id = |id: u64| answers.as_array().unwrap().iter().find(|a| a["id"] == id).cloned().unwrap();
    assert!(by_id(7)["error"].is_object(), "{answers}");
    assert_eq!(by_id(8)["result"], "0xae3f2");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_queries_are_bounded_in_range_and_results() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    generate_traffic(&node, &anvil.addresses(), 4, 4).await;
    mine(&node, 300).await;
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rpc.max_log_range = 100;
        c.api.rpc.max_log_results = 2;
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    let early = json!([{"fromBlock": "0x0", "toBlock": "0x20"}]);
    let direct: Vec<Value> = node.raw_request("eth_getLogs".into(), early.clone()).await.unwrap();
    assert!(direct.len() > 2, "the traffic logged more than the cap: {}", direct.len());

    let too_many = rpc(addr, &request(1, "eth_getLogs", early.clone())).await;
    assert_eq!(too_many["error"]["code"], -32005, "{too_many}");
    assert!(too_many["error"]["message"].as_str().unwrap().contains("more than 2 results"), "{too_many}");
    for filter in [
        json!({"fromBlock": "0x0"}),
        json!({"fromBlock": "earliest", "toBlock": "latest"}),
        json!({"fromBlock": "0x0", "toBlock": "0x3e8"}),
        json!({"fromBlock": "0x0", "TOBLOCK": "0x3e8"}),
    ] {
        let reply = rpc(addr, &request(2, "eth_getLogs", json!([filter]))).await;
        assert_eq!(reply["error"]["code"], -32005, "{filter}: {reply}");
        assert!(reply["error"]["message"].as_str().unwrap().contains("more than 100 blocks"), "{reply}");
    }
    let bad = rpc(addr, &request(3, "eth_getLogs", json!([{"fromBlock": "soon"}]))).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    // Narrow queries pass: the latest block, one block by hash.
    let latest = rpc(addr, &request(4, "eth_getLogs", json!([{"fromBlock": "latest"}]))).await;
    assert_eq!(latest["result"], json!([]), "{latest}");
    let hash = direct[0]["blockHash"].clone();
    let by_hash: Vec<Value> = node.raw_request("eth_getLogs".into(), json!([{"blockHash": hash}])).await.unwrap();
    let reply = rpc(addr, &request(5, "eth_getLogs", json!([{"blockHash": hash}]))).await;
    if by_hash.len() <= 2 {
        assert_eq!(reply["result"].as_array().unwrap().len(), by_hash.len(), "{reply}");
    } else {
        assert_eq!(reply["error"]["code"], -32005, "{reply}");
    }
    // In a batch the oversized answer alone is replaced.
    let batch = format!("[{},{}]", request(6, "eth_getLogs", early), request(7, "eth_chainId", json!([])));
    let answers = rpc(addr, &batch).await;
    let by_id = |id: u64| answers.as_array().unwrap().iter().find(|a| a["id"] == id).cloned().unwrap();
    assert_eq!(by_id(6)["error"]["code"], -32005, "{answers}");
    assert_eq!(by_id(7)["result"], "0xae3f2");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_has_a_bounded_number_of_passthrough_requests_in_flight() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rpc.max_concurrent_per_client = 2;
        c.api.rpc.upstream_timeout = Duration::from_secs(60);
        c.api.rate_limit = trusted_loopback();
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    let body = request(1, "eth_blockNumber", json!([]));
    let metrics = t.daemon.metrics_addr().expect("the harness serves metrics");
    let paused = Paused::new(&anvil);
    // Two requests of one client wait for the stopped node...
    let held: Vec<_> = (0..2)
        .map(|_| {
            let body = body.clone();
            tokio::spawn(async move { rpc_as(addr, "10.0.0.1", &body).await })
        })
        .collect();
    passthrough_in_flight(metrics, 2).await;
    // ...so its next one is refused at once, while another client is still let through to the node.
    let refused = tokio::time::timeout(Duration::from_secs(10), rpc_as(addr, "10.0.0.1", &body))
        .await
        .expect("a request over the client's limit is answered at once, not queued");
    assert_eq!(refused.status, 429, "{}", String::from_utf8_lossy(&refused.body));
    assert_eq!(refused.json()["error"]["code"], -32005, "{}", String::from_utf8_lossy(&refused.body));
    assert!(refused.json()["error"]["message"].as_str().unwrap().contains("limit 2"));
    let other = {
        let body = body.clone();
        tokio::spawn(async move { rpc_as(addr, "10.0.0.2", &body).await })
    };
    passthrough_in_flight(metrics, 3).await;
    drop(paused);
    for task in held {
        assert_eq!(task.await.unwrap().status, 200);
    }
    assert_eq!(other.await.unwrap().status, 200, "another client's request was forwarded and answered");
    passthrough_in_flight(metrics, 0).await;
    // The slots are free again.
    let reply = rpc_as(addr, "10.0.0.1", &body).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    assert!(reply.json()["result"].is_string());
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_answers_beyond_the_byte_budget_are_refused() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| c.api.rpc.max_inflight_bytes = 8192).await;
    let addr = t.daemon.addr();
    let blocks = |n: u64| {
        let items: Vec<String> = (0..n).map(|i| request(i, "eth_getBlockByNumber", json!(["0x0", false]))).collect();
        format!("[{}]", items.join(","))
    };
    // Answers within the budget pass, one after the other: each gives its share back once sent.
    for _ in 0..3 {
        let reply = rpc_as(addr, "10.0.0.1", &blocks(3)).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json().as_array().unwrap().len(), 3);
    }
    let reply = rpc_as(addr, "10.0.0.1", &blocks(30)).await;
    assert_eq!(reply.status, 503, "{}", String::from_utf8_lossy(&reply.body));
    let answers = reply.json();
    assert_eq!(answers.as_array().unwrap().len(), 30);
    assert!(answers.as_array().unwrap().iter().all(|a| a["error"]["code"] == -32005), "{answers}");
    assert_eq!(rpc(addr, &request(1, "eth_chainId", json!([]))).await["result"], "0xae3f2");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reports_a_stalled_and_an_unresponsive_node() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |c| {
        // Node requests wait long: only the health thresholds can notice the silence in time.
        c.rpc_timeout = Duration::from_secs(60);
        c.api.health.unresponsive_after = Duration::from_secs(1);
        // Long enough for `ok` to be seen after each block on a machine loaded by the whole suite.
        c.api.health.stalled_after = Some(Duration::from_secs(6));
        // Shorter than the passthrough's wait for the node (10 s): a silent node's call runs into it.
        c.api.request_timeout = Duration::from_secs(2);
    })
    .await;
    let addr = t.daemon.addr();
    // `/health` (liveness) stays 200 and names the problem; `/health/ready` (readiness) turns 503 with it.
    let health_is = |wanted: &'static str| async move {
        poll_until(&format!("/health to say {wanted}"), Duration::from_secs(30), || async {
            let reply = http::get(addr, "/health").await;
            (reply.json()["status"] == wanted).then_some(reply)
        })
        .await
    };
    let readiness = |code: u16, reason: serde_json::Value| async move {
        poll_until(&format!("/health/ready to answer {code} {reason}"), Duration::from_secs(30), || async {
            let reply = http::get(addr, "/health/ready").await;
            (reply.status == code && reply.json()["reason"] == reason).then_some(())
        })
        .await
    };
    mine(&node, 1).await;
    assert_eq!(health_is("ok").await.status, 200);
    readiness(200, serde_json::Value::Null).await;
    // No block for longer than the stall threshold.
    let stalled = health_is("node_stalled").await;
    assert_eq!(stalled.status, 200);
    assert!(stalled.json()["ms_since_new_head"].as_u64().unwrap() >= 6000, "{}", stalled.json());
    readiness(503, "node_stalled".into()).await;
    mine(&node, 1).await;
    assert_eq!(health_is("ok").await.status, 200);
    // A node that stops answering (paused) is noticed long before a request to it times out.
    let paused = Paused::new(&anvil);
    let silent = health_is("node_unresponsive").await;
    assert_eq!(silent.status, 200);
    assert!(silent.json()["ms_since_node_answer"].as_u64().unwrap() >= 1000, "{}", silent.json());
    readiness(503, "node_unresponsive".into()).await;
    // A passthrough call that outlives the request timeout gets a JSON-RPC error, as every answer on /api/eth.
    let reply = rpc_as(addr, "10.0.0.9", &request(7, "eth_blockNumber", json!([]))).await;
    assert_eq!(reply.status, 503);
    let answer = reply.json();
    assert_eq!(
        (answer["jsonrpc"].as_str(), answer["error"]["message"].as_str()),
        (Some("2.0"), Some("Request timed out"))
    );
    drop(paused);
    mine(&node, 1).await;
    assert_eq!(health_is("ok").await.status, 200);
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_passthrough_calls_get_json_rpc_errors_and_preflights_count() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rate_limit = RateLimitConfig { per_second: 1, burst: 3, ..trusted_loopback() };
    })
    .await;
    let addr = t.daemon.addr();
    let body = request(1, "eth_chainId", json!([]));
    let mut limited = None;
    for _ in 0..20 {
        let reply = rpc_as(addr, "10.0.0.1", &body).await;
        if reply.status == 429 {
            limited = Some(reply);
            break;
        }
    }
    let limited = limited.expect("the passthrough flood is refused");
    assert_eq!(
        limited.json(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32005, "message": "Too many requests"}})
    );
    assert_eq!(limited.headers["x-ratelimit-remaining"], "0");
    assert!(limited.headers.contains_key("retry-after"));

    // CORS preflights take tokens, and are refused once the bucket is empty.
    let preflight = || async {
        let headers = [("x-forwarded-for", "10.0.0.2"), ("access-control-request-method", "GET")];
        http::request(addr, Method::OPTIONS, "/api/v2/stats", &headers, "").await
    };
    let mut statuses = Vec::new();
    for _ in 0..20 {
        statuses.push(preflight().await.status.as_u16());
        if statuses.last() == Some(&429) {
            break;
        }
    }
    assert_eq!(statuses.first(), Some(&204));
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    let get = http::request(addr, Method::GET, "/api/v2/stats", &[("x-forwarded-for", "10.0.0.2")], "").await;
    assert_eq!(get.status, 429, "the preflights used the client's tokens");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_size_with_a_plus_sign_is_read_as_the_number() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    mine(&node, 3).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    // `%2B1` is "+1", which Rust's and Elixir's (Blockscout's) integer parsers both read as 1.
    let page = http::get_json(addr, "/api/v2/blocks?items_count=%2B1").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
    // A bare `+` in a query string is a space; signs other than `+` are refused.
    for query in ["items_count=+1", "items_count=-1", "items_count=%2B-1", "items_count=1e0"] {
        assert_eq!(http::get(addr, &format!("/api/v2/blocks?{query}")).await.status, 422, "{query}");
    }
    t.daemon.shutdown().await.unwrap();
}

/// One client's node answers hold at most its share of the byte budget (a quarter of it, or one whole answer if that
/// is more): while one of its large answers is still held (not yet sent), its next is refused with 429, another
/// client's is answered, and the share comes back with the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_holds_at_most_its_share_of_node_answers() {
    use http_body_util::BodyExt;
    use rockscout::api::rpc::{Passthrough, RpcConfig};
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    // A client's share: 8 MiB, one whole answer (a quarter of the budget is 5 MiB).
    let config = RpcConfig { max_response: 8 << 20, max_inflight_bytes: 20 << 20, ..RpcConfig::default() };
    let passthrough = Passthrough::new(config, std::sync::Arc::new(tokio::sync::Semaphore::new(2)));
    // A contract that returns as many zero bytes as its call data's first word says: 7 MiB of hex.
    let returner = Address::repeat_byte(0xbe);
    let _: Value = node.raw_request("anvil_setCode".into(), json!([returner, "0x6000356000f3"])).await.unwrap();
    let zeros: u64 = 7 << 19;
    let call = request(1, "eth_call", json!([{"to": returner, "data": format!("0x{zeros:064x}")}, "latest"]));
    let url = anvil.http_url();
    let ask = |client: &str| passthrough.call(&url, call.clone().into(), None, client.parse().unwrap());
    let held = ask("203.0.113.1").await;
    assert_eq!(held.status(), 200);
    let refused = ask("203.0.113.1").await;
    assert_eq!(refused.status(), 429);
    let refused: Value = serde_json::from_slice(&refused.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(refused["error"]["code"], -32005, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("this client holds too many node answers"));
    let other = ask("203.0.113.2").await;
    assert_eq!(other.status(), 200, "another client's answer fits in the budget");
    let body = held.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["result"].as_str().unwrap().len(),
        2 + 2 * zeros as usize
    );
    drop(body);
    assert_eq!(ask("203.0.113.1").await.status(), 200, "the share came back with the answer");
}

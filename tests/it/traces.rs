//! Internal transactions on a real chain: a factory that creates contracts inside calls (CREATE and CREATE2),
//! reverts inside nested calls (caught and not), moves value in inner calls, delegate-calls, static-calls and
//! self-destructs. Every list the API serves is compared with the node's own `callTracer` traces; raw traces and
//! state changes with the node's traces and balances; the trace pass's progress (WebSocket, REST, `/health`) is
//! checked exactly while a relay holds the node's tracer back; a reorg takes the traced blocks away exactly; and
//! without `--tracing` the views answer as Blockscout does with tracing off.

use crate::support::http::{get_json as get, walk};
use crate::support::ws::WsClient;
use crate::support::*;
use alloy::primitives::{Address, Bytes, B256, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::sol_types::{SolCall, SolConstructor};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Method;
use hyper_util::rt::TokioIo;
use rockscout::dev::contracts::{DemoFactory, DemoToken};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// One internal call as both sides describe it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Frame {
    tx: String,
    index: u64,
    kind: String,
    from: String,
    to: Option<String>,
    created: Option<String>,
    value: String,
    gas: String,
    error: Option<String>,
    success: bool,
}

fn hex_decimal(v: &Value) -> String {
    v.as_str().map_or_else(|| "0".into(), |s| U256::from_str_radix(s.trim_start_matches("0x"), 16).unwrap().to_string())
}

/// The internal calls of `tx` from the node's `callTracer`, depth-first, without the top-level call; a call inside
/// a failed call failed too.
async fn node_frames(node: &RootProvider, tx: B256) -> Vec<Frame> {
    // Parsed without serde_json's depth limit: the calls can nest deeper than its 128 levels.
    let raw: Box<serde_json::value::RawValue> =
        node.raw_request("debug_traceTransaction".into(), json!([tx, {"tracer": "callTracer"}])).await.unwrap();
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    deserializer.disable_recursion_limit();
    let top: Value = serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut deserializer)).unwrap();
    let mut out = Vec::new();
    let mut stack = vec![(top, true)];
    while let Some((frame, parent_ok)) = stack.pop() {
        let kind = frame["type"].as_str().unwrap().to_ascii_lowercase();
        let creates = kind.starts_with("create");
        let to = frame["to"].as_str().map(str::to_ascii_lowercase);
        let ok = parent_ok && frame["error"].is_null();
        out.push(Frame {
            tx: format!("{tx:#x}"),
            index: out.len() as u64,
            kind: kind.clone(),
            from: frame["from"].as_str().unwrap().to_ascii_lowercase(),
            to: if creates { None } else { to.clone() },
            created: if creates { to } else { None },
            value: hex_decimal(&frame["value"]),
            gas: hex_decimal(&frame["gas"]),
            error: frame["error"].as_str().map(str::to_owned),
            success: ok,
        });
        for child in frame["calls"].as_array().cloned().unwrap_or_default().into_iter().rev() {
            stack.push((child, ok));
        }
    }
    out.remove(0);
    out
}

fn lower(v: &Value) -> Option<String> {
    v["hash"].as_str().map(str::to_ascii_lowercase)
}

fn api_frame(item: &Value) -> Frame {
    Frame {
        tx: item["transaction_hash"].as_str().unwrap().to_owned(),
        index: item["index"].as_u64().unwrap(),
        kind: item["type"].as_str().unwrap().to_owned(),
        from: lower(&item["from"]).unwrap(),
        to: lower(&item["to"]),
        created: lower(&item["created_contract"]),
        value: item["value"].as_str().unwrap().to_owned(),
        gas: item["gas_limit"].as_str().unwrap().to_owned(),
        error: item["error"].as_str().map(str::to_owned),
        success: item["success"].as_bool().unwrap(),
    }
}

async fn api_frames(addr: SocketAddr, path: &str) -> Vec<Frame> {
    walk(addr, path).await.iter().map(api_frame).collect()
}

async fn wait_traced(addr: SocketAddr, node: &RootProvider) {
    poll_until("the trace pass to reach the head", Duration::from_secs(60), || async {
        let head = node.get_block_number().await.ok()?;
        let health = http::get(addr, "/health").await.json();
        (health["traced_tip"] == json!(head) && health["indexed_tip"] == json!(head)).then_some(())
    })
    .await;
}

async fn send_call(node: &RootProvider, from: Address, to: Address, data: Vec<u8>, value: u64) -> B256 {
    let tx = json!({"from": from, "to": to, "data": Bytes::from(data), "gas": "0x100000", "value": U256::from(value)});
    send(node, tx).await
}

async fn balance_at(node: &RootProvider, address: Address, block: u64) -> U256 {
    node.raw_request("eth_getBalance".into(), json!([address, format!("{block:#x}")])).await.unwrap()
}

async fn token_balance_at(node: &RootProvider, token: Address, holder: Address, block: u64) -> U256 {
    let data = Bytes::from(DemoToken::balanceOfCall::new((holder,)).abi_encode());
    let out: Bytes =
        node.raw_request("eth_call".into(), json!([{"to": token, "data": data}, format!("{block:#x}")])).await.unwrap();
    U256::from_be_slice(&out)
}

fn trace_rows(t: &TestDaemon) -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    let tables = ["internal_txs", "address_internal", "internal_creations", "trace_blocks"];
    t.daemon.store().raw_rows().unwrap().into_iter().filter(|(name, _, _)| tables.contains(name)).collect()
}

/// A JSON-RPC relay to the node that can hold back tracing: while held, requests of the held methods
/// (`debug_trace*`, or only whole-block traces) wait until it is released (the daemon's node timeout ends the wait
/// first); every other request passes straight through.
struct TraceGate {
    addr: SocketAddr,
    open: watch::Sender<Option<&'static [u8]>>,
    /// Trace requests naming any of these (a block number, a transaction hash) get an error answer with its message.
    refused: Arc<Mutex<Vec<(String, &'static str)>>>,
    /// Every trace request's body, in arrival order.
    seen: Arc<Mutex<Vec<String>>>,
}

impl TraceGate {
    async fn start(node_port: u16) -> TraceGate {
        let node: SocketAddr = ([127, 0, 0, 1], node_port).into();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (open, opened) = watch::channel(None::<&'static [u8]>);
        let refused = Arc::new(Mutex::new(Vec::<(String, &'static str)>::new()));
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let (refusing, seeing) = (refused.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (opened, refusing, seeing) = (opened.clone(), refusing.clone(), seeing.clone());
                let relay = service_fn(move |request: hyper::Request<Incoming>| {
                    let (mut opened, refusing, seeing) = (opened.clone(), refusing.clone(), seeing.clone());
                    async move {
                        let body = request.into_body().collect().await?.to_bytes();
                        let text = String::from_utf8_lossy(&body).into_owned();
                        if text.contains("debug_trace") {
                            seeing.lock().unwrap().push(text.clone());
                        }
                        let refusal = refusing
                            .lock()
                            .unwrap()
                            .iter()
                            .find(|(pattern, _)| text.contains("debug_trace") && text.contains(pattern.as_str()))
                            .map(|(_, message)| *message);
                        if let Some(message) = refusal {
                            let id =
                                serde_json::from_slice::<Value>(&body).map(|v| v["id"].clone()).unwrap_or_default();
                            let error =
                                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}});
                            let response = hyper::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(bytes::Bytes::from(error.to_string())))
                                .unwrap();
                            return Ok::<_, hyper::Error>(response);
                        }
                        let held =
                            |methods: &Option<&[u8]>| methods.is_some_and(|m| body.windows(m.len()).any(|w| w == m));
                        let _ = opened.wait_for(|methods| !held(methods)).await;
                        let headers = [("content-type", "application/json")];
                        // A node gone (the test ended) is a bad gateway, not a panic.
                        let (status, body) = match http::try_request(node, Method::POST, "/", &headers, body).await {
                            Ok(reply) => (reply.status, reply.body),
                            Err(e) => (hyper::StatusCode::BAD_GATEWAY, e.into()),
                        };
                        let response = hyper::Response::builder()
                            .status(status)
                            .header("content-type", "application/json")
                            .body(Full::new(body))
                            .unwrap();
                        Ok::<_, hyper::Error>(response)
                    }
                });
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), relay));
            }
        });
        TraceGate { addr, open, refused, seen }
    }

    /// Refuses, from now on, every trace request that names `pattern`.
    fn refuse(&self, pattern: String) {
        self.refused.lock().unwrap().push((pattern, "historical state not available"));
    }

    /// Answers, from now on, every trace request that names `pattern` as geth does when its tracer's `timeout`
    /// passed.
    fn time_out(&self, pattern: String) {
        self.refused.lock().unwrap().push((pattern, "execution timeout"));
    }

    /// Refuses no trace request from now on.
    fn refuse_none(&self) {
        self.refused.lock().unwrap().clear();
    }

    /// How many trace requests so far called `method` naming `pattern`.
    fn requests(&self, method: &str, pattern: &str) -> usize {
        let method = format!("\"{method}\"");
        self.seen.lock().unwrap().iter().filter(|body| body.contains(&method) && body.contains(pattern)).count()
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn hold(&self) {
        self.open.send_replace(Some(b"debug_trace"));
    }

    /// Holds `debug_traceBlock*` only: a node that cannot trace a whole block within the daemon's timeout.
    fn hold_block_traces(&self) {
        self.open.send_replace(Some(b"debug_traceBlock"));
    }

    fn release(&self) {
        self.open.send_replace(None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_transactions_match_the_node_and_reorg_away() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let gate = TraceGate::start(anvil.port()).await;
    let t = start_daemon(&gate.url(), |c| {
        c.tracing = true;
        c.api.rpc.allow_debug = true;
    })
    .await;
    let addr = t.daemon.addr();

    // Block 1: the factory and a token.
    let factory_tx = deploy(&node, a[0], &DemoFactory::BYTECODE).await;
    let mut token_code = DemoToken::BYTECODE.to_vec();
    token_code.extend(
        DemoToken::constructorCall { name_: "T".into(), symbol_: "T".into(), initialSupply: U256::from(10u64.pow(9)) }
            .abi_encode(),
    );
    let token_tx = deploy(&node, a[0], &Bytes::from(token_code)).await;
    mine(&node, 1).await;
    let factory = created_address(&node, factory_tx).await;
    let token = created_address(&node, token_tx).await;
    // Block 2: creations inside calls, with value and with a salt.
    let spawn = send_call(&node, a[1], factory, DemoFactory::spawnCall { v: U256::from(5) }.abi_encode(), 1_000).await;
    mine(&node, 1).await;
    let child: Address = {
        let out: Bytes = node
            .raw_request(
                "eth_call".into(),
                json!([{"to": factory, "data": Bytes::from(DemoFactory::lastCall {}.abi_encode())}, "latest"]),
            )
            .await
            .unwrap();
        Address::from_slice(&out[12..32])
    };
    let spawn2 =
        send_call(&node, a[2], factory, DemoFactory::spawn2Call { salt: B256::repeat_byte(7) }.abi_encode(), 0).await;
    mine(&node, 1).await;
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    // Block 4: a caught nested revert, inner value transfer with a static call, a delegate call, an uncaught
    // nested revert, a creation undone by a revert, a self-destruct; and a token transfer.
    let try_boom = send_call(&node, a[3], factory, DemoFactory::tryBoomCall { child }.abi_encode(), 0).await;
    let relay = send_call(&node, a[4], factory, DemoFactory::relayCall { child, to: a[5] }.abi_encode(), 777).await;
    let delegate =
        send_call(&node, a[3], factory, DemoFactory::delegateCall { child, v: U256::from(9) }.abi_encode(), 0).await;
    let boom = send_call(&node, a[3], factory, DemoFactory::boomCall { child }.abi_encode(), 0).await;
    let undone = send_call(&node, a[3], factory, DemoFactory::spawnAndRevertCall {}.abi_encode(), 0).await;
    let destroy = send_call(&node, a[3], factory, DemoFactory::destroyCall { child, to: a[6] }.abi_encode(), 0).await;
    let pay =
        send_call(&node, a[0], token, DemoToken::transferCall { to: a[7], value: U256::from(1234) }.abi_encode(), 0)
            .await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    wait_traced(addr, &node).await;

    // Per transaction: exactly the node's frames, paged two at a time.
    let txs = [spawn, spawn2, try_boom, relay, delegate, boom, undone, destroy, pay];
    let mut everything = Vec::new();
    for tx in txs {
        let want = node_frames(&node, tx).await;
        let got = api_frames(addr, &format!("/api/v2/transactions/{tx:#x}/internal-transactions?items_count=2")).await;
        assert_eq!(got, want, "internal transactions of {tx:#x}");
        everything.extend(want);
    }
    let kinds = |tx: B256| -> Vec<(String, bool)> {
        everything.iter().filter(|f| f.tx == format!("{tx:#x}")).map(|f| (f.kind.clone(), f.success)).collect()
    };
    assert_eq!(kinds(spawn), [("create".to_owned(), true), ("call".to_owned(), true)]);
    assert_eq!(kinds(spawn2), [("create2".to_owned(), true)]);
    assert_eq!(
        kinds(try_boom),
        [("staticcall".to_owned(), false), ("call".to_owned(), true)],
        "caught revert (of a pure function), then a call"
    );
    assert_eq!(kinds(relay), [("call".to_owned(), true), ("staticcall".to_owned(), true)]);
    assert_eq!(kinds(delegate), [("delegatecall".to_owned(), true)]);
    assert_eq!(kinds(boom), [("call".to_owned(), false), ("staticcall".to_owned(), false)], "all undone by the revert");
    assert_eq!(kinds(undone), [("create".to_owned(), false)]);
    assert_eq!(kinds(destroy), [("call".to_owned(), true), ("selfdestruct".to_owned(), true)]);
    assert!(kinds(pay).is_empty());
    let spawned = everything.iter().find(|f| f.tx == format!("{spawn:#x}") && f.kind == "create").unwrap();
    assert_eq!(spawned.created, Some(format!("{child:#x}")));
    assert_eq!(spawned.value, "1000");

    // Per block, in (transaction, index) order; with a type filter.
    let block4: Vec<Frame> =
        everything.iter().filter(|f| txs[2..].iter().any(|t| f.tx == format!("{t:#x}"))).cloned().collect();
    assert_eq!(api_frames(addr, "/api/v2/blocks/4/internal-transactions?items_count=3").await, block4);
    let creates = api_frames(addr, "/api/v2/blocks/4/internal-transactions?internal_type=create").await;
    assert_eq!(creates, block4.iter().filter(|f| f.kind == "create").cloned().collect::<Vec<_>>());
    let block = get(addr, "/api/v2/blocks/4").await;
    assert_eq!(block["internal_transactions_count"], json!(block4.len()));
    assert_eq!(get(addr, "/api/v2/blocks/1").await["internal_transactions_count"], json!(0));

    // Per address, newest first, with the direction filters.
    let child_hex = format!("{child:#x}");
    let newest_first = |mut frames: Vec<Frame>| {
        frames.sort_by_key(|f| {
            let pos = txs.iter().position(|t| f.tx == format!("{t:#x}")).unwrap();
            (std::cmp::Reverse(pos), std::cmp::Reverse(f.index))
        });
        frames
    };
    let touching =
        |keep: &dyn Fn(&Frame) -> bool| newest_first(everything.iter().filter(|f| keep(f)).cloned().collect());
    let path = format!("/api/v2/addresses/{child}/internal-transactions");
    assert_eq!(
        api_frames(addr, &format!("{path}?items_count=3")).await,
        touching(&|f| f.from == child_hex
            || f.to.as_ref() == Some(&child_hex)
            || f.created.as_ref() == Some(&child_hex))
    );
    assert_eq!(api_frames(addr, &format!("{path}?filter=from")).await, touching(&|f| f.from == child_hex));
    assert_eq!(
        api_frames(addr, &format!("{path}?filter=to")).await,
        touching(&|f| f.to.as_ref() == Some(&child_hex) || f.created.as_ref() == Some(&child_hex))
    );
    let counters = get(addr, &format!("/api/v2/addresses/{child}/tabs-counters")).await;
    assert_eq!(
        counters["internal_transactions_count"],
        json!(touching(&|f| f.from == child_hex
            || f.to.as_ref() == Some(&child_hex)
            || f.created.as_ref() == Some(&child_hex))
        .len())
    );

    // Transaction flags and the internally created contract's page.
    let flag = |v: Value| v["has_error_in_internal_transactions"].clone();
    assert_eq!(flag(get(addr, &format!("/api/v2/transactions/{spawn:#x}")).await), json!(false));
    assert_eq!(flag(get(addr, &format!("/api/v2/transactions/{try_boom:#x}")).await), json!(true));
    // A failed transaction's result is its top call's error, as the node's tracer has it, in lists too.
    let root: Value =
        node.raw_request("debug_traceTransaction".into(), json!([boom, {"tracer": "callTracer"}])).await.unwrap();
    let reason = json!(root["error"].as_str().expect("the top call failed"));
    let failed = get(addr, &format!("/api/v2/transactions/{boom:#x}")).await;
    assert_eq!((&failed["status"], &failed["result"]), (&json!("error"), &reason));
    let listed = walk(addr, "/api/v2/blocks/4/transactions").await;
    let item = listed.iter().find(|t| t["hash"] == json!(format!("{boom:#x}"))).unwrap();
    assert_eq!(item["result"], reason);
    let page = get(addr, &format!("/api/v2/addresses/{child}")).await;
    assert_eq!(page["is_contract"], json!(true));
    assert_eq!(page["creator_address_hash"], json!(factory.to_checksum(None)));
    assert_eq!(page["creation_transaction_hash"], json!(format!("{spawn:#x}")));
    let listed = walk(addr, &format!("/api/v2/transactions/{spawn:#x}/internal-transactions")).await;
    assert_eq!(listed[0]["created_contract"]["is_contract"], json!(true));

    // Raw trace: one Parity entry per frame of the node's trace, top-level call included.
    let raw = get(addr, &format!("/api/v2/transactions/{destroy:#x}/raw-trace")).await;
    let raw = raw.as_array().unwrap();
    assert_eq!(raw.len(), node_frames(&node, destroy).await.len() + 1);
    assert_eq!(raw[0]["traceAddress"], json!([]));
    assert_eq!(raw[0]["subtraces"], json!(1));
    assert_eq!(raw[2]["type"], json!("selfdestruct"));
    assert_eq!(raw[2]["traceAddress"], json!([0, 0]));
    assert_eq!(raw[2]["action"]["to"].as_str().map(str::to_ascii_lowercase), Some(format!("{:#x}", a[6])));

    // State changes: balances before and after, as the node has them (a[5] and a[7] only move in block 4).
    let changes = walk(addr, &format!("/api/v2/transactions/{relay:#x}/state-changes")).await;
    // A page size alone is no cursor (Blockscout's cursor is `items_count` next to `state_changes`): the first page.
    let sized = get(addr, &format!("/api/v2/transactions/{relay:#x}/state-changes?items_count=1")).await;
    assert_eq!(sized["items"].as_array().unwrap(), &changes, "{sized}");
    let coin = changes.iter().find(|c| c["address"]["hash"] == json!(a[5].to_checksum(None))).expect("receiver");
    assert_eq!(coin["type"], json!("coin"));
    assert_eq!(coin["balance_before"], json!(balance_at(&node, a[5], 3).await.to_string()));
    assert_eq!(coin["balance_after"], json!(balance_at(&node, a[5], 4).await.to_string()));
    assert_eq!(coin["change"], json!("777"));
    let sender = changes.iter().find(|c| c["address"]["hash"] == json!(a[4].to_checksum(None))).expect("sender");
    assert!(sender["change"].as_str().unwrap().starts_with('-'), "the sender paid value and fee: {sender}");
    let changes = walk(addr, &format!("/api/v2/transactions/{pay:#x}/state-changes")).await;
    let tokens: Vec<&Value> = changes.iter().filter(|c| c["type"] == "token").collect();
    assert_eq!(tokens.len(), 2);
    for (holder, change) in [(a[0], "-1234"), (a[7], "1234")] {
        let entry = tokens.iter().find(|c| c["address"]["hash"] == json!(holder.to_checksum(None))).unwrap();
        assert_eq!(entry["change"], json!(change));
        assert_eq!(entry["balance_before"], json!(token_balance_at(&node, token, holder, 3).await.to_string()));
        assert_eq!(entry["balance_after"], json!(token_balance_at(&node, token, holder, 4).await.to_string()));
    }

    // The passthrough forwards debug_* with tracing on.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "debug_traceTransaction", "params": [relay, {"tracer": "callTracer"}]});
    let reply =
        http::request(addr, Method::POST, "/api/eth", &[("content-type", "application/json")], call.to_string()).await;
    assert_eq!(reply.json()["result"]["to"].as_str().map(str::to_ascii_lowercase), Some(format!("{factory:#x}")));

    // The trace pass's progress on the WebSocket, exactly: with the node's tracer held back, blocks 5 to 7 are
    // indexed one at a time but not traced, so each block's ratio is (4 + 1) traced / (n + 1) indexed blocks, and
    // the pass is finished while it is at most 2 blocks behind. The REST status and /health say the same.
    let mut ws = WsClient::connect(addr, "/socket/v2/websocket?vsn=2.0.0").await;
    ws.send(&json!(["1", "1", "blocks:indexing_internal_transactions", "phx_join", {}])).await;
    assert_eq!(ws.frame().await[4]["status"], "ok");
    gate.hold();
    // Block 5 also creates a contract inside a transaction, at a fresh address; its page is opened before the trace
    // pass reaches it.
    let late_spawn =
        send_call(&node, a[1], factory, DemoFactory::spawn2Call { salt: B256::repeat_byte(9) }.abi_encode(), 0).await;
    for (n, ratio, rest_ratio, finished) in
        [(5, "0.8333", 0.83, true), (6, "0.7143", 0.71, true), (7, "0.6250", 0.62, false)]
    {
        mine(&node, 1).await;
        let status = ws.until(Duration::from_secs(30), |f| f[3] == "index_status").await;
        assert_eq!(status[4], json!({"ratio": ratio, "finished": finished}), "block {n}");
        let health = http::get(addr, "/health").await.json();
        assert_eq!((&health["indexed_tip"], &health["traced_tip"]), (&json!(n), &json!(4)), "block {n}");
        let rest = get(addr, "/api/v2/main-page/indexing-status").await;
        assert_eq!(rest["indexed_internal_transactions_ratio"], json!(rest_ratio), "block {n}");
        assert_eq!(rest["finished_indexing"], json!(finished), "block {n}");
    }
    let created = |frames: Vec<Frame>| frames.into_iter().find_map(|f| f.created).unwrap();
    let late_child = created(node_frames(&node, late_spawn).await);
    let late_page = format!("/api/v2/addresses/{late_child}");
    assert_eq!(get(addr, &late_page).await["creation_transaction_hash"], Value::Null, "not traced yet");
    gate.release();
    wait_traced(addr, &node).await;
    // What that page's reads left in the row cache does not hide the creation the trace pass found since.
    let page = get(addr, &late_page).await;
    assert_eq!(page["creator_address_hash"], json!(factory.to_checksum(None)));
    assert_eq!(page["creation_transaction_hash"], json!(format!("{late_spawn:#x}")));

    // Reorg block 4 away: its internal transactions go, and the trace tables equal a fresh index of the new chain
    // (longer than the old one, which reached block 7).
    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    let respawn = send_call(&node, a[8], factory, DemoFactory::spawnCall { v: U256::from(1) }.abi_encode(), 0).await;
    mine(&node, 5).await;
    wait_synced(&t.daemon, &node).await;
    wait_traced(addr, &node).await;
    assert_eq!(http::get(addr, &format!("/api/v2/transactions/{try_boom:#x}/internal-transactions")).await.status, 404);
    let remaining = api_frames(addr, &path).await;
    let before_fork: Vec<Frame> = touching(&|f| {
        (f.tx == format!("{spawn:#x}")) && (f.to.as_ref() == Some(&child_hex) || f.created.as_ref() == Some(&child_hex))
    });
    assert_eq!(remaining, before_fork, "only the child's block-2 calls are left");
    let new_block4 = node_frames(&node, respawn).await;
    assert_eq!(api_frames(addr, "/api/v2/blocks/4/internal-transactions").await, new_block4);
    assert_eq!(get(addr, "/api/v2/blocks/4").await["internal_transactions_count"], json!(new_block4.len()));
    // Block 5 went with the reorg: the late child has the creation the new chain gave it, if any.
    let recreated = created(node_frames(&node, respawn).await) == late_child;
    let want = if recreated { json!(format!("{respawn:#x}")) } else { Value::Null };
    assert_eq!(get(addr, &late_page).await["creation_transaction_hash"], want, "recreated: {recreated}");
    let fresh = start_daemon(&anvil.http_url(), |c| c.tracing = true).await;
    wait_synced(&fresh.daemon, &node).await;
    wait_traced(fresh.daemon.addr(), &node).await;
    assert_eq!(trace_rows(&t), trace_rows(&fresh), "reverting traces left exactly a fresh index's rows");
    let tables: BTreeSet<&str> = trace_rows(&t).iter().map(|r| r.0).collect();
    assert_eq!(tables.len(), 4, "every trace table has rows");
    fresh.daemon.shutdown().await.unwrap();
    t.daemon.shutdown().await.unwrap();
}

/// A transaction whose calls nest hundreds deep (a contract that calls itself with its gas until the gas runs out)
/// is traced whole: its `callTracer` answer nests two JSON levels per call, far past serde_json's default limit of
/// 128 levels, which had the trace pass retry the block for its refusal window and then leave it untraced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_nested_hundreds_deep_are_traced_whole() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let from = node.get_accounts().await.unwrap()[0];
    let t = start_daemon(&anvil.http_url(), |c| c.tracing = true).await;
    let addr = t.daemon.addr();
    // Runtime code: CALL(GAS, ADDRESS, value 0, no input, no output), then STOP.
    let runtime = [0x60, 0x00, 0x80, 0x80, 0x80, 0x80, 0x30, 0x5a, 0xf1, 0x00];
    // Creation code: PUSH10 runtime, MSTORE at 0 (right-aligned in the word), RETURN its 10 bytes from offset 22.
    let mut init = vec![0x69];
    init.extend(runtime);
    init.extend([0x60, 0x00, 0x52, 0x60, 0x0a, 0x60, 0x16, 0xf3]);
    let recursive = deploy_code(&node, from, init).await;
    let tx = send(&node, json!({"from": from, "to": recursive, "gas": "0x989680"})).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    wait_traced(addr, &node).await;
    let want = node_frames(&node, tx).await;
    assert!(want.len() > 300, "the calls nest {} deep", want.len());
    let got = api_frames(addr, &format!("/api/v2/transactions/{tx:#x}/internal-transactions")).await;
    assert_eq!(got, want);
    let raw = get(addr, &format!("/api/v2/transactions/{tx:#x}/raw-trace")).await;
    assert_eq!(raw.as_array().map(Vec::len), Some(want.len() + 1), "the raw trace has every call and the top one");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tracing_the_views_answer_empty_and_a_node_without_tracing_is_detected() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let factory = deploy_factory(&node, a[0]).await;
    let spawn = send_call(&node, a[1], factory, DemoFactory::spawnCall { v: U256::from(5) }.abi_encode(), 0).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;

    let empty = json!({"items": [], "next_page_params": null});
    assert_eq!(get(addr, &format!("/api/v2/transactions/{spawn:#x}/internal-transactions")).await, empty);
    assert_eq!(get(addr, &format!("/api/v2/transactions/{spawn:#x}/state-changes")).await, empty);
    assert_eq!(get(addr, &format!("/api/v2/transactions/{spawn:#x}/raw-trace")).await, json!([]));
    assert_eq!(get(addr, &format!("/api/v2/addresses/{factory}/internal-transactions")).await, empty);
    assert_eq!(get(addr, "/api/v2/blocks/2/internal-transactions").await, empty);
    assert_eq!(get(addr, "/api/v2/internal-transactions").await, empty);
    assert_eq!(get(addr, "/api/v2/blocks/2").await["internal_transactions_count"], Value::Null);
    assert_eq!(
        get(addr, &format!("/api/v2/transactions/{spawn:#x}")).await["has_error_in_internal_transactions"],
        Value::Null
    );
    assert_eq!(
        get(addr, "/api/v2/main-page/indexing-status").await["indexed_internal_transactions_ratio"],
        Value::Null
    );
    let unknown = format!("/api/v2/transactions/{:#x}/raw-trace", B256::repeat_byte(1));
    assert_eq!(http::get(addr, &unknown).await.status, 404);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "debug_traceTransaction", "params": [spawn, {}]});
    let reply =
        http::request(addr, Method::POST, "/api/eth", &[("content-type", "application/json")], call.to_string()).await;
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("tracing is not enabled"), "{:?}", reply.body);

    // A daemon asked to trace a node that refuses debug_* (this daemon's passthrough) says so and keeps indexing.
    let tracer = start_daemon(&format!("http://{addr}/api/eth"), |c| c.tracing = true).await;
    let health = poll_until("the trace pass to find no tracing", Duration::from_secs(30), || async {
        let health = http::get(tracer.daemon.addr(), "/health").await.json();
        (health["tracing"] == json!(false)).then_some(health)
    })
    .await;
    assert_eq!(health["trace_lag"], Value::Null);
    wait_synced(&tracer.daemon, &node).await;
    let status = get(tracer.daemon.addr(), "/api/v2/main-page/indexing-status").await;
    assert_eq!(status["indexed_internal_transactions_ratio"], Value::Null);
    tracer.daemon.shutdown().await.unwrap();
    t.daemon.shutdown().await.unwrap();
}

/// A node and a relay to it that can hold back or refuse its traces.
async fn gated_node() -> (rockscout::dev::anvil::Anvil, RootProvider, Vec<Address>, TraceGate) {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let gate = TraceGate::start(anvil.port()).await;
    let accounts = anvil.addresses();
    (anvil, node, accounts, gate)
}

/// Deploys the demo factory from `from` in a block of its own.
async fn deploy_factory(node: &RootProvider, from: Address) -> Address {
    let tx = deploy(node, from, &DemoFactory::BYTECODE).await;
    mine(node, 1).await;
    created_address(node, tx).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_whose_trace_times_out_are_traced_one_transaction_at_a_time() {
    let (_anvil, node, a, gate) = gated_node().await;
    // The node never answers a whole-block trace within the daemon's timeout (not even block 0's, which tells the
    // daemon that the node traces); single transactions it does.
    gate.hold_block_traces();
    let t = start_daemon(&gate.url(), |c| {
        c.tracing = true;
        c.rpc_timeout = Duration::from_secs(2);
    })
    .await;
    let addr = t.daemon.addr();
    let factory = deploy_factory(&node, a[0]).await;
    let spawn = send_call(&node, a[1], factory, DemoFactory::spawnCall { v: U256::from(5) }.abi_encode(), 1_000).await;
    let spawn2 =
        send_call(&node, a[2], factory, DemoFactory::spawn2Call { salt: B256::repeat_byte(9) }.abi_encode(), 0).await;
    // The second transaction's trace fails for a while: the pass resumes after the first, and does not ask for the
    // whole block again.
    gate.refuse(format!("{spawn2:#x}"));
    mine(&node, 1).await;
    let block = node.get_block_number().await.unwrap();
    wait_synced(&t.daemon, &node).await;
    poll_until("the second transaction's trace to be refused", Duration::from_secs(60), || async {
        (gate.requests("debug_traceTransaction", &format!("{spawn2:#x}")) > 0).then_some(())
    })
    .await;
    gate.refuse_none();
    wait_traced(addr, &node).await;
    for tx in [spawn, spawn2] {
        let want = node_frames(&node, tx).await;
        assert!(!want.is_empty());
        let got = api_frames(addr, &format!("/api/v2/transactions/{tx:#x}/internal-transactions")).await;
        assert_eq!(got, want, "internal transactions of {tx:#x}");
    }
    let whole = format!("\"{block:#x}\"");
    assert_eq!(gate.requests("debug_traceBlockByNumber", &whole), 1, "the block was asked for whole once");
    assert_eq!(gate.requests("debug_traceTransaction", &format!("{spawn:#x}")), 1, "the first trace was kept");
    t.daemon.shutdown().await.unwrap();
}

/// A transaction the node cannot trace within a request (geth's tracer `timeout`, which every trace request
/// carries, answers `execution timeout`) is not asked for again and again: after a few rounds, at growing intervals,
/// its block is passed like a refused one, and later blocks are traced (a transaction of 95,000 calls once held
/// the pass, asking anvil for the same trace every second, for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_the_node_cannot_trace_in_time_is_passed() {
    let (_anvil, node, a, gate) = gated_node().await;
    let factory = deploy_factory(&node, a[0]).await;
    let slow = send_call(&node, a[1], factory, DemoFactory::spawnCall { v: U256::from(5) }.abi_encode(), 1_000).await;
    mine(&node, 1).await;
    let slow_block = node.get_transaction_receipt(slow).await.unwrap().unwrap().block_number.unwrap();
    gate.hold_block_traces();
    gate.time_out(format!("{slow:#x}"));
    let later = send_call(&node, a[2], factory, DemoFactory::spawnCall { v: U256::from(6) }.abi_encode(), 1_000).await;
    mine(&node, 1).await;
    let t = start_daemon(&gate.url(), |c| {
        c.tracing = true;
        c.rpc_timeout = Duration::from_secs(2);
        c.trace_refusal_window = Duration::from_secs(2);
    })
    .await;
    let addr = t.daemon.addr();
    wait_synced(&t.daemon, &node).await;
    wait_traced(addr, &node).await;

    let want = node_frames(&node, later).await;
    assert!(!want.is_empty());
    assert_eq!(api_frames(addr, &format!("/api/v2/transactions/{later:#x}/internal-transactions")).await, want);
    let passed = get(addr, &format!("/api/v2/transactions/{slow:#x}/internal-transactions")).await;
    assert_eq!(passed["items"], json!([]), "the block of the transaction that never traces in time is passed");
    let block = get(addr, &format!("/api/v2/blocks/{slow_block}")).await;
    assert_eq!(block["internal_transactions_count"], Value::Null, "unknown, not 0: {block}");
    // Asked once per round until passed (5 rounds), not once a second; each request named the daemon's timeout.
    let asked = gate.requests("debug_traceTransaction", &format!("{slow:#x}"));
    assert_eq!(asked, 5, "trace requests for the slow transaction");
    let seen = gate.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|body| body.contains(r#""timeout":"2000ms""#)), "{seen:?}");
    t.daemon.shutdown().await.unwrap();
}

/// A block the node refuses to trace (its state gone: errors for the block and for each of its transactions) is
/// left without internal transactions after a few rounds, and the pass goes on: later blocks are traced as the
/// node traces them (it once retried the refused block forever, and nothing after it was ever traced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_the_node_refuses_to_trace_is_passed() {
    let (_anvil, node, a, gate) = gated_node().await;
    let factory = deploy_factory(&node, a[0]).await;
    let refused =
        send_call(&node, a[1], factory, DemoFactory::spawnCall { v: U256::from(5) }.abi_encode(), 1_000).await;
    mine(&node, 1).await;
    let refused_block = node.get_transaction_receipt(refused).await.unwrap().unwrap().block_number.unwrap();
    gate.refuse(format!("\"{refused_block:#x}\""));
    gate.refuse(format!("{refused:#x}"));
    let later = send_call(&node, a[2], factory, DemoFactory::spawnCall { v: U256::from(6) }.abi_encode(), 1_000).await;
    mine(&node, 1).await;
    let t = start_daemon(&gate.url(), |c| {
        c.tracing = true;
        c.trace_refusal_window = Duration::from_secs(2);
    })
    .await;
    let addr = t.daemon.addr();
    wait_synced(&t.daemon, &node).await;
    // Held at the refused block for the window: nothing after it is traced meanwhile.
    let health = get(addr, "/health").await;
    assert!(health["traced_tip"].as_u64().is_none_or(|tip| tip < refused_block), "{health}");
    wait_traced(addr, &node).await;

    let want = node_frames(&node, later).await;
    assert!(!want.is_empty());
    assert_eq!(api_frames(addr, &format!("/api/v2/transactions/{later:#x}/internal-transactions")).await, want);
    assert!(!node_frames(&node, refused).await.is_empty(), "the node itself traces it (only the gate refuses)");
    let passed = get(addr, &format!("/api/v2/transactions/{refused:#x}/internal-transactions")).await;
    assert_eq!(passed["items"], json!([]), "the refused block has no internal transactions");
    let tx = get(addr, &format!("/api/v2/transactions/{refused:#x}")).await;
    assert_eq!(tx["has_error_in_internal_transactions"], Value::Null, "unknown, not false");
    let block = get(addr, &format!("/api/v2/blocks/{refused_block}")).await;
    assert_eq!(block["internal_transactions_count"], Value::Null, "unknown, not 0: {block}");
    t.daemon.shutdown().await.unwrap();
}

//! Read replicas: `rockscout serve --secondary-of` (a process on a primary's data directory) answers REST pages,
//! WebSocket events and `/api/eth` like the primary and refuses writes; a directory that is not a store is refused.
//! Cursor portability: two daemons that index one chain independently answer the same pages, and a cursor of one
//! fetches the same next page from the other.

use crate::support::http::{self, get_json};
use crate::support::phoenix::Listener;
use crate::support::*;
use alloy::primitives::{Address, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::sol_types::{SolCall, SolConstructor};
use hyper::Method;
use rockscout::dev::contracts::DemoToken;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `rockscout serve --secondary-of` process, killed on drop.
struct Secondary {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Secondary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_command(primary_dir: &std::path::Path, rpc_url: &str, port: u16) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rockscout"));
    command
        .arg("serve")
        .arg("--secondary-of")
        .arg(primary_dir)
        .args(["--rpc-url", rpc_url, "--listen", &format!("127.0.0.1:{port}")])
        .args(["--rate-limit", "0", "--poll-interval-ms", "50", "--catch-up-interval-ms", "50"])
        .env("RUST_LOG", "warn");
    command
}

async fn start_secondary(primary_dir: &std::path::Path, rpc_url: &str) -> Secondary {
    let port = free_port();
    spawn_secondary(serve_command(primary_dir, rpc_url, port), port).await
}

/// Spawns `command`, a replica listening on `port`, and waits until it answers.
async fn spawn_secondary(mut command: Command, port: u16) -> Secondary {
    let child = command.stdout(Stdio::null()).stderr(Stdio::inherit()).spawn().expect("spawn rockscout serve");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    poll_until("the secondary to answer /health", Duration::from_secs(30), || async move {
        http::try_request(addr, Method::GET, "/health", &[], bytes::Bytes::new()).await.ok().filter(|r| r.status == 200)
    })
    .await;
    Secondary { child, addr }
}

/// Waits until the server at `addr` reports `tip` as its indexed tip and as the node's head on `/health`.
async fn wait_tip(addr: SocketAddr, tip: u64) {
    poll_until(&format!("{addr} to see tip {tip}"), Duration::from_secs(30), || async move {
        let health = get_json(addr, "/health").await;
        (health["indexed_tip"] == json!(tip) && health["node_tip"] == json!(tip)).then_some(())
    })
    .await
}

/// Polls until `path` answers the same JSON on both servers (answers that read the node, such as balances, can
/// differ for a moment while one server has not seen the node's newest head); fails with both answers.
async fn assert_same(a: SocketAddr, b: SocketAddr, path: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (left, right) = (get_json(a, path).await, get_json(b, path).await);
        if left == right {
            return left;
        }
        assert!(std::time::Instant::now() < deadline, "{path} differs:\n{left}\n{right}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The query string of a page's `next_page_params`.
fn next_query(page: &Value) -> String {
    let params = page["next_page_params"].as_object().unwrap_or_else(|| panic!("no next page: {page}"));
    params.iter().map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"'))).collect::<Vec<_>>().join("&")
}

async fn transfers_block(node: &RootProvider, accounts: &[Address], n: usize) {
    for i in 0..n {
        transfer(node, accounts[i % 5], accounts[5 + i % 4], 1_000 + i as u64).await;
    }
    mine(node, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secondary_serves_the_primarys_pages_events_and_rpc_and_refuses_writes() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses().to_vec();
    let primary = start_daemon(&anvil.http_url(), |_| {}).await;
    generate_traffic(&node, &accounts, 4, 4).await;
    let tip = wait_synced(&primary.daemon, &node).await;
    let secondary = start_secondary(primary.dir.path(), &anvil.http_url()).await;
    wait_tip(secondary.addr, tip).await;

    // Blocks mined after the secondary opened reach it through catch-up.
    for _ in 0..3 {
        transfers_block(&node, &accounts, 3).await;
    }
    let tip = wait_synced(&primary.daemon, &node).await;
    wait_tip(secondary.addr, tip).await;
    let (p, s) = (primary.daemon.addr(), secondary.addr);
    let health = get_json(s, "/health").await;
    assert_eq!(health["indexed_tip"], json!(tip), "{health}");
    assert_eq!(health["node_tip"], json!(tip), "{health}");
    assert_eq!(health["lag"], json!(0), "{health}");
    assert_eq!(health["read_replica"], json!(true), "{health}");
    assert_eq!(get_json(primary.daemon.addr(), "/health").await["read_replica"], json!(false));
    // The balance writer's progress shows too, as the replica reads it from the store (a catch-up may have seen the
    // tip before the writer passed it: the next one shows it).
    let balanced = primary.daemon.store().reader().balance_tip().unwrap().map(|t| t.number);
    assert_eq!(balanced, Some(tip));
    poll_until("the secondary to show the balance tip", Duration::from_secs(30), || async move {
        let health = get_json(s, "/health").await;
        (health["balanced_tip"] == json!(tip) && health["balance_lag"] == json!(0)).then_some(())
    })
    .await;

    let block = assert_same(p, s, &format!("/api/v2/blocks/{tip}")).await;
    assert_eq!(block["transactions_count"], json!(3), "{block}");
    let tx = block_tx(&node, tip).await;
    let shown = assert_same(p, s, &format!("/api/v2/transactions/{tx}")).await;
    assert_eq!(shown["hash"], json!(tx.to_string()));
    let address = assert_same(p, s, &format!("/api/v2/addresses/{}", accounts[5])).await;
    assert_eq!(address["hash"].as_str().map(str::to_lowercase), Some(accounts[5].to_string().to_lowercase()));
    let main_page = assert_same(p, s, "/api/v2/main-page/blocks").await;
    assert_eq!(main_page[0]["height"], json!(tip));
    let first = assert_same(p, s, "/api/v2/transactions?items_count=5").await;
    let second = assert_same(p, s, &format!("/api/v2/transactions?{}", next_query(&first))).await;
    assert_eq!(second["items"].as_array().map(Vec::len), Some(5), "{second}");
    assert_ne!(first["items"][0], second["items"][0]);

    // /api/eth goes to the node.
    let rpc = http::request(
        s,
        Method::POST,
        "/api/eth",
        &[("content-type", "application/json")],
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}).to_string(),
    )
    .await
    .json();
    let head = node.get_block_number().await.unwrap();
    assert_eq!(rpc["result"], json!(format!("{head:#x}")), "{rpc}");

    // Writes are refused with a message that says where they go.
    let refused = http::request(
        s,
        Method::POST,
        "/api/account/v2/user/watchlist",
        &[("content-type", "application/json"), ("authorization", "Bearer nothing")],
        json!({"address_hash": accounts[1], "name": "w"}).to_string(),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", String::from_utf8_lossy(&refused.body));
    assert!(refused.json()["message"].as_str().unwrap().contains("primary"), "{:?}", refused.body);
    let verify = http::request(
        s,
        Method::POST,
        &format!("/api/v2/smart-contracts/{}/verification/via/standard-input", accounts[1]),
        &[],
        bytes::Bytes::new(),
    )
    .await;
    assert_eq!(verify.status, 403);
    let sign_in = http::request(s, Method::POST, "/api/account/v2/authenticate_via_wallet", &[], "{}").await;
    assert_eq!(sign_in.status, 403);
    let message = http::get(s, &format!("/api/account/v2/siwe_message?address={}", accounts[1])).await;
    assert_eq!(message.status, 403, "a sign-in starts and ends on the primary");
    // The primary still takes them (an unauthenticated watchlist write is a 401 there, not a replica refusal).
    let on_primary = http::request(p, Method::POST, "/api/account/v2/user/watchlist", &[], "{}").await;
    assert_eq!(on_primary.status, 401);

    // A block mined after a WebSocket client joined on the secondary is pushed with the node's hash.
    let mut listener = Listener::join(s, &["blocks:new_block".to_owned()]).await;
    transfers_block(&node, &accounts, 2).await;
    let mined = node.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap();
    let pushed = listener.event("blocks:new_block", "new_block").await;
    assert_eq!(pushed["block"]["hash"], json!(mined.header.hash.to_string()), "{pushed}");
    assert_eq!(pushed["block"]["height"], json!(mined.header.number));
    listener.finish().await;

    // A reorg on the primary replaces the block the secondary shows at that height.
    let before = get_json(s, &format!("/api/v2/blocks/{}", mined.header.number)).await;
    let _: Value = node
        .raw_request("anvil_reorg".into(), json!([2, [[{"from": accounts[2], "to": accounts[3], "value": "0x7"}, 0]]]))
        .await
        .expect("anvil_reorg");
    let tip = wait_synced(&primary.daemon, &node).await;
    wait_tip(s, tip).await;
    let after = assert_same(p, s, &format!("/api/v2/blocks/{}", mined.header.number)).await;
    assert_ne!(before["hash"], after["hash"], "the reorged block is replaced on the secondary");

    // Its own directory is a private temporary one, removed when it stops on SIGTERM (exit status 0).
    let own = secondary_dirs(secondary.child.id());
    assert_eq!(own.len(), 1, "{own:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&own[0]).unwrap().permissions().mode() & 0o777, 0o700);
    stop(secondary).await;
    assert!(!own[0].exists(), "{} is removed on exit", own[0].display());
    primary.daemon.shutdown().await.unwrap();
}

/// The default secondary directories of process `pid`.
fn secondary_dirs(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("rockscout-secondary-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path())
        .collect()
}

/// Stops a secondary with SIGTERM and waits for a clean exit.
async fn stop(mut secondary: Secondary) {
    let pid = secondary.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = poll_until("the secondary to exit", Duration::from_secs(30), || {
        let exited = secondary.child.try_wait().unwrap();
        async move { exited }
    })
    .await;
    assert!(status.success(), "{status}");
}

/// The hash of the first transaction of block `number`.
async fn block_tx(node: &RootProvider, number: u64) -> alloy::primitives::B256 {
    let block = node.get_block_by_number(number.into()).await.unwrap().expect("block");
    *block.transactions.hashes().collect::<Vec<_>>().first().expect("the block has transactions")
}

/// The primary's pool follower and trace pass write rows that a replica finds at its catch-ups: a transaction left
/// in the pool is announced on the replica (`pending_transaction` to the counter topic and to its sender's), and once
/// it is mined and traced its `raw_trace` is pushed, equal to the replica's REST raw trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secondary_announces_pool_transactions_and_finished_traces() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses().to_vec();
    let primary = start_daemon(&anvil.http_url(), |c| c.tracing = true).await;
    generate_traffic(&node, &accounts, 2, 2).await;
    let tip = wait_synced(&primary.daemon, &node).await;
    let port = free_port();
    let mut command = serve_command(primary.dir.path(), &anvil.http_url(), port);
    command.arg("--tracing");
    let secondary = spawn_secondary(command, port).await;
    wait_tip(secondary.addr, tip).await;
    let s = secondary.addr;

    let (counter, sender) =
        ("transactions:new_pending_transaction".to_owned(), format!("addresses:{:#x}", accounts[7]));
    let mut listener = Listener::join(s, &[counter.clone(), sender.clone()]).await;
    let pending = transfer(&node, accounts[7], accounts[8], 4_321).await;
    assert_eq!(listener.event(&counter, "pending_transaction").await, json!({"pending_transaction": 1}));
    let pushed = listener.event(&sender, "pending_transaction").await;
    assert_eq!(pushed["transactions"][0]["hash"], json!(pending.to_string()), "{pushed}");
    listener.finish().await;

    let (topic, internal) = (format!("transactions:{pending:#x}"), "blocks:indexing_internal_transactions".to_owned());
    let mut listener = Listener::join(s, &[topic.clone(), internal.clone()]).await;
    mine(&node, 1).await;
    let status = listener.event(&internal, "index_status").await;
    assert!(status["ratio"].is_string() && status["finished"].is_boolean(), "{status}");
    let raw = listener.event(&topic, "raw_trace").await;
    let rest = get_json(s, &format!("/api/v2/transactions/{pending:#x}/raw-trace")).await;
    assert_eq!(raw, json!({"raw_trace": rest}));
    assert_eq!(raw["raw_trace"][0]["action"]["value"], json!(format!("{:#x}", 4_321)), "{raw}");
    listener.finish().await;
    stop(secondary).await;
    primary.daemon.shutdown().await.unwrap();
}

/// Local build artifacts are matched in memory, not stored: a replica given the primary's `--artifacts` names a
/// deployed contract and decodes its calls as the primary does (the same pages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secondary_given_the_primarys_artifacts_names_and_decodes_the_same_contracts() {
    use crate::contracts::{addCall, counter_chain, CounterChain};
    let CounterChain { work: _work, out, anvil, node, accounts, daemon: primary, counter, .. } = counter_chain().await;
    let tx = call(&node, accounts[1], counter, addCall { value: U256::from(5) }.abi_encode()).await;
    mine(&node, 1).await;
    let tip = wait_synced(&primary.daemon, &node).await;
    stored_contract(&primary.daemon, counter).await;

    let port = free_port();
    let mut command = serve_command(primary.dir.path(), &anvil.http_url(), port);
    command.arg("--artifacts").arg(&out);
    let secondary = spawn_secondary(command, port).await;
    wait_tip(secondary.addr, tip).await;
    let (p, s) = (primary.daemon.addr(), secondary.addr);
    let contract = assert_same(p, s, &format!("/api/v2/smart-contracts/{counter}")).await;
    assert_eq!((contract["name"].clone(), contract["is_verified"].clone()), (json!("Counter"), json!(true)));
    let page = assert_same(p, s, &format!("/api/v2/transactions/{tx}")).await;
    assert_eq!(page["method"], "add");
    assert_eq!(page["decoded_input"]["parameters"][0]["value"], "5");
    stop(secondary).await;
    primary.daemon.shutdown().await.unwrap();
}

/// A replica killed with SIGKILL leaves its temporary directory; the next one to start removes it, and leaves the
/// directory of one still running alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_secondary_removes_the_directory_a_killed_one_left() {
    let anvil = start_anvil();
    let primary = start_daemon(&anvil.http_url(), |_| {}).await;
    let temp = tempfile::tempdir().unwrap();
    let start = || async {
        let port = free_port();
        let mut command = serve_command(primary.dir.path(), &anvil.http_url(), port);
        command.env("TMPDIR", temp.path());
        spawn_secondary(command, port).await
    };
    let dirs = || -> Vec<std::path::PathBuf> {
        let mut dirs: Vec<_> = std::fs::read_dir(temp.path()).unwrap().map(|e| e.unwrap().path()).collect();
        dirs.sort();
        dirs
    };
    let mut killed = start().await;
    let left = dirs();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].join("LOG").exists(), "RocksDB's info log of the secondary is in {}", left[0].display());
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    assert_eq!(dirs(), left, "SIGKILL leaves the directory behind");

    let running = start().await;
    let now = dirs();
    assert_eq!(now.len(), 1, "only the running replica's directory is left: {now:?}");
    assert_ne!(now, left);
    assert!(now[0].file_name().unwrap().to_string_lossy().contains(&format!("-{}-", running.child.id())));
    // A third replica leaves the running one's directory alone, and the second's is removed when it stops.
    let third = start().await;
    assert_eq!(dirs().len(), 2);
    stop(running).await;
    stop(third).await;
    assert_eq!(dirs(), Vec::<std::path::PathBuf>::new());
    primary.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secondary_of_a_directory_that_is_not_a_store_fails_with_a_clear_message() {
    let empty = tempfile::tempdir().unwrap();
    let output = serve_command(empty.path(), "http://127.0.0.1:9", free_port()).output().expect("run rockscout serve");
    assert!(!output.status.success(), "a replica of nothing must not start");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("is not a rockscout data directory"), "{said}");
    assert!(said.contains(&empty.path().display().to_string()), "the message names the directory: {said}");
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0, "nothing is written into it");

    let reindex = serve_command(empty.path(), "http://127.0.0.1:9", free_port()).arg("--reindex").output().unwrap();
    assert!(!reindex.status.success());
    assert!(String::from_utf8_lossy(&reindex.stderr).contains("--reindex does not apply"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_are_portable_between_two_independently_built_indexes() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses().to_vec();
    generate_traffic(&node, &a, 6, 4).await;
    let mut code = DemoToken::BYTECODE.to_vec();
    let unit = U256::from(10u64).pow(U256::from(18));
    code.extend(
        DemoToken::constructorCall {
            name_: "Demo".into(),
            symbol_: "DEMO".into(),
            initialSupply: unit * U256::from(1000),
        }
        .abi_encode(),
    );
    let token = deploy_code(&node, a[0], code).await;
    for round in 0..4u64 {
        for (i, to) in a[1..6].iter().enumerate() {
            let value = unit * U256::from(round * 10 + i as u64 + 1);
            call(&node, a[0], token, DemoToken::transferCall { to: *to, value }.abi_encode()).await;
        }
        transfer(&node, a[0], a[1], 5 + round).await;
        mine(&node, 1).await;
    }
    let (one, two) = (start_daemon(&anvil.http_url(), |_| {}).await, start_daemon(&anvil.http_url(), |_| {}).await);
    let tip = wait_synced(&one.daemon, &node).await;
    assert_eq!(wait_synced(&two.daemon, &node).await, tip);
    let (x, y) = (one.daemon.addr(), two.daemon.addr());

    // The blocks list followed two pages on each, and a cursor of one asked of the other.
    let first = assert_same(x, y, "/api/v2/blocks?items_count=4").await;
    let second = assert_same(x, y, &format!("/api/v2/blocks?{}", next_query(&first))).await;
    let third = assert_same(x, y, &format!("/api/v2/blocks?{}", next_query(&second))).await;
    assert_eq!(third["items"].as_array().map(Vec::len), Some(4), "{third}");
    assert_eq!(third["items"][0]["height"], json!(tip - 8));
    let sender = format!("/api/v2/addresses/{}/transactions", a[0]);
    let page = assert_same(x, y, &format!("{sender}?items_count=3")).await;
    let next = assert_same(x, y, &format!("{sender}?{}", next_query(&page))).await;
    assert_eq!(next["items"].as_array().map(Vec::len), Some(3), "{next}");
    let transfers = format!("/api/v2/tokens/{token}/transfers");
    let page = assert_same(x, y, &format!("{transfers}?items_count=5")).await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(5), "{page}");
    let next = assert_same(x, y, &format!("{transfers}?{}", next_query(&page))).await;
    assert!(!next["items"].as_array().unwrap().is_empty(), "{next}");
    let holder = format!("/api/v2/addresses/{}/token-transfers", a[1]);
    assert_same(x, y, &holder).await;
    let tx = block_tx(&node, tip).await;
    assert_same(x, y, &format!("/api/v2/transactions/{tx}")).await;
    assert_same(x, y, &format!("/api/v2/transactions/{tx}/token-transfers")).await;

    // Stored rows too, apart from the pool and the open state (the pages above follow from them).
    let rows = |daemon: &rockscout::Daemon| -> Vec<_> {
        daemon
            .store()
            .raw_rows()
            .unwrap()
            .into_iter()
            .filter(|(table, _, _)| !matches!(*table, "pending" | "pending_by_time" | "meta"))
            .collect()
    };
    let same_rows = poll_until("both indexes to hold the same rows", Duration::from_secs(30), || async {
        let (left, right) = (rows(&one.daemon), rows(&two.daemon));
        (left == right).then_some(left.len())
    })
    .await;
    assert!(same_rows > 100, "{same_rows}");
    one.daemon.shutdown().await.unwrap();
    two.daemon.shutdown().await.unwrap();
}

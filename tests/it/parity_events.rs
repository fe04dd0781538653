//! Live events the Blockscout frontend listens for, received by the real `phoenix` npm client: `collated` and
//! `raw_trace` on `transactions:<hash>`, `fetched_bytecode`, `token_balance` and `updated_token_balances_erc_20`
//! on `addresses:<a>`, and `total_supply` on `tokens:<t>`; every payload compared with the node or the REST view.

use crate::support::*;
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::Provider;
use alloy::sol_types::{SolCall, SolConstructor};
use rockscout::dev::contracts::DemoToken;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `phoenix` client process and what it printed so far.
struct Listener {
    child: Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<Value>,
}

impl Listener {
    /// Starts the client on `topics` and waits for every join to succeed.
    async fn join(addr: std::net::SocketAddr, topics: &[String]) -> Listener {
        let found = Command::new("node").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
        assert!(
            found,
            "node was not found: run scripts/setup (installs Node.js and the pinned phoenix and ws packages)"
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let modules = root.join("scripts/tools/node_modules");
        assert!(modules.join("phoenix").is_dir(), "phoenix was not found: run scripts/setup");
        let mut child = Command::new("node")
            .arg(root.join("tests/it/phoenix_events.js"))
            .arg(format!("ws://{addr}/socket/v2"))
            .args(topics)
            .env("NODE_PATH", &modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run node");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut listener = Listener { child, lines, seen: Vec::new() };
        let mut joined = 0;
        while joined < topics.len() {
            let line = listener.next_line(Duration::from_secs(30)).await;
            assert!(!line.starts_with("join_") && line != "timeout", "the client failed: {line}");
            joined += usize::from(line.starts_with("joined "));
        }
        listener
    }

    async fn next_line(&mut self, timeout: Duration) -> String {
        tokio::time::timeout(timeout, self.lines.recv())
            .await
            .expect("the client printed nothing in time")
            .expect("the client exited")
    }

    /// The payload of the first `event` on `topic` (waiting up to 30 s for it).
    async fn event(&mut self, topic: &str, event: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let matching = |m: &&Value| m["topic"] == topic && m["event"] == event;
            if let Some(found) = self.seen.iter().find(matching) {
                return found["payload"].clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {event} on {topic}; received {:#?}", self.seen);
            let line = self.next_line(left).await;
            if let Ok(message) = serde_json::from_str::<Value>(&line) {
                self.seen.push(message);
            }
        }
    }

    /// Forgets what was received so far (the next `event` waits for a new one).
    fn clear(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            if let Ok(message) = serde_json::from_str::<Value>(&line) {
                self.seen.push(message);
            }
        }
        self.seen.clear();
    }

    /// Closes the client's stdin and checks that it exits cleanly.
    async fn finish(mut self) {
        drop(self.child.stdin.take());
        let status = tokio::task::spawn_blocking(move || self.child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "the phoenix client failed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phoenix_client_receives_transaction_code_token_and_supply_events() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |c| c.tracing = true).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();

    // A token deployment waits in the pool; its address follows from the deployer's nonce.
    let nonce = node.get_transaction_count(a[0]).await.unwrap();
    let token = a[0].create(nonce);
    let supply = U256::from(1_000_000u64);
    let mut code = DemoToken::BYTECODE.to_vec();
    code.extend(
        DemoToken::constructorCall { name_: "Live".into(), symbol_: "LIVE".into(), initialSupply: supply }.abi_encode(),
    );
    let deployment = deploy(&node, a[0], &Bytes::from(code)).await;
    let lower = |address: Address| format!("{address:#x}");
    let (tx_topic, token_topic) = (format!("transactions:{deployment:#x}"), format!("tokens:{}", lower(token)));
    let (contract_topic, owner_topic) = (format!("addresses:{}", lower(token)), format!("addresses:{}", lower(a[0])));
    let topics = [tx_topic.clone(), token_topic.clone(), contract_topic.clone(), owner_topic.clone()];
    let mut client = Listener::join(addr, &topics).await;

    mine(&node, 1).await;
    let head = wait_synced(&t.daemon, &node).await;
    assert_eq!(client.event(&tx_topic, "collated").await, json!({}));
    let on_chain: Bytes = node.get_code_at(token).await.unwrap();
    assert!(on_chain.len() > 100, "the token was deployed");
    assert_eq!(
        client.event(&contract_topic, "fetched_bytecode").await,
        json!({"fetched_bytecode": on_chain.to_string()})
    );
    assert_eq!(client.event(&token_topic, "total_supply").await, json!({"total_supply": supply.to_string()}));
    assert_eq!(client.event(&owner_topic, "token_balance").await, json!({"block_number": head}));
    let balances = client.event(&owner_topic, "updated_token_balances_erc_20").await;
    assert_eq!(balances["overflow"], false);
    let rest = http::get_json(addr, &format!("/api/v2/addresses/{}/token-balances", a[0])).await;
    // Name and symbol arrive later (the metadata fetcher); the rest is the REST item.
    let chain_fields = |item: &Value| {
        let t = &item["token"];
        json!([item["value"], item["token_id"], t["address_hash"], t["type"], t["total_supply"], t["holders_count"]])
    };
    let pushed: Vec<Value> = balances["token_balances"].as_array().unwrap().iter().map(chain_fields).collect();
    let listed: Vec<Value> = rest.as_array().unwrap().iter().map(chain_fields).collect();
    assert_eq!(pushed, listed, "the pushed balances are the REST items");
    assert_eq!(balances["token_balances"][0]["value"], supply.to_string());
    let raw = client.event(&tx_topic, "raw_trace").await;
    let rest_trace = http::get_json(addr, &format!("/api/v2/transactions/{deployment:#x}/raw-trace")).await;
    assert_eq!(raw, json!({"raw_trace": rest_trace}));
    assert_eq!(raw["raw_trace"][0]["type"], "create");
    assert_eq!(raw["raw_trace"][0]["action"]["to"], lower(token));

    // A burn: the supply push follows the contract's totalSupply, the balance push the new balance.
    client.clear();
    let burned = U256::from(250_000u64);
    call(&node, a[0], token, DemoToken::burnCall { value: burned }.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let supply_call = DemoToken::totalSupplyCall {}.abi_encode();
    let raw_supply: Bytes = node
        .raw_request("eth_call".into(), json!([{"to": token, "data": Bytes::from(supply_call)}, "latest"]))
        .await
        .unwrap();
    let after = U256::from_be_slice(&raw_supply);
    assert_eq!(after, supply - burned);
    assert_eq!(client.event(&token_topic, "total_supply").await, json!({"total_supply": after.to_string()}));
    let balances = client.event(&owner_topic, "updated_token_balances_erc_20").await;
    assert_eq!(balances["token_balances"][0]["value"], after.to_string());
    client.finish().await;
    t.daemon.shutdown().await.unwrap();
}

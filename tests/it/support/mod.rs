//! Test harness: real anvil processes, in-process daemons on 127.0.0.1:0 with temporary data dirs, chain
//! drivers, deadline polling, and a deep comparison of the store with the node's canonical chain.

pub mod compare;
pub mod http;
pub mod phoenix;
pub mod refusing_relay;
pub mod ws;

use alloy::primitives::{Address, Bytes, B256, U256};
use alloy::providers::{Provider, RootProvider};
use rockscout::dev::anvil::{self, Anvil, AnvilOptions};
use rockscout::{Config, Daemon};
use serde_json::json;
use std::future::Future;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The anvil binary; a missing anvil fails the test with install instructions (never a skip).
pub fn anvil_bin() -> std::path::PathBuf {
    anvil::locate(None).unwrap_or_else(|e| panic!("{e}"))
}

/// Starts anvil with on-demand mining (blocks only when a test mines them).
pub fn start_anvil() -> Anvil {
    start_anvil_with(AnvilOptions { extra_args: vec!["--no-mining".into()], ..Default::default() })
}

/// Starts anvil with `options`.
pub fn start_anvil_with(options: AnvilOptions) -> Anvil {
    Anvil::spawn(&anvil_bin(), &options).unwrap_or_else(|e| panic!("{e}"))
}

/// An HTTP provider for `anvil`.
pub fn provider(url: &str) -> RootProvider {
    RootProvider::new_http(url.parse().expect("anvil url"))
}

/// A daemon running in this process with its own data dir.
pub struct TestDaemon {
    pub daemon: Daemon,
    pub dir: TempDir,
}

/// The configuration tests use: fast polling, no WebSocket, free ports for the API and the metrics.
pub fn test_config(rpc_url: &str, dir: &std::path::Path) -> Config {
    let mut config = Config::new(rpc_url, dir);
    config.listen = "127.0.0.1:0".parse().unwrap();
    // Many daemons run at once: metrics on a free port each (served, so every test exercises the listener).
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    config.indexer.poll_interval = Duration::from_millis(20);
    config.rpc_timeout = Duration::from_secs(5);
    // Tests compare the values pages and pushes read from the node with the node's own; on a machine loaded by the
    // whole suite a read can take longer than the 2 s after which they are left out.
    config.api.node_read_timeout = Duration::from_secs(10);
    config
}

/// Starts a daemon following `rpc_url`; `tweak` adjusts the configuration.
pub async fn start_daemon(rpc_url: &str, tweak: impl FnOnce(&mut Config)) -> TestDaemon {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(rpc_url, dir.path());
    tweak(&mut config);
    let daemon = Daemon::start(&config).await.expect("daemon starts");
    TestDaemon { daemon, dir }
}

/// Polls `check` every 20 ms until it returns `Some`, failing after `timeout`.
pub async fn poll_until<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the daemon's stored tip is the node's head (same number and hash), and, with the native balance
/// index, until the balance writer has passed it too.
pub async fn wait_synced(daemon: &Daemon, node: &RootProvider) -> u64 {
    poll_until("the index to reach the node's head", Duration::from_secs(60), || async {
        let head = node.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.ok()??;
        let reader = daemon.store().reader();
        let tip = reader.tip().ok()??;
        let balanced = !daemon.status().coin_balances || reader.balance_tip().ok()? == Some(tip);
        (tip.number == head.header.number && tip.hash == head.header.hash && balanced).then_some(tip.number)
    })
    .await
}

/// Mines `n` blocks.
pub async fn mine(node: &RootProvider, n: u64) {
    let _: serde_json::Value = node.raw_request("anvil_mine".into(), json!([n])).await.expect("anvil_mine");
}

/// Sends a transaction from an unlocked dev account (anvil fills nonce and gas unless given).
pub async fn send(node: &RootProvider, tx: serde_json::Value) -> B256 {
    node.raw_request("eth_sendTransaction".into(), json!([tx])).await.expect("eth_sendTransaction")
}

/// An ether transfer.
pub async fn transfer(node: &RootProvider, from: Address, to: Address, wei: u64) -> B256 {
    send(node, json!({"from": from, "to": to, "value": U256::from(wei)})).await
}

/// Deploys `bytecode` from `from`.
pub async fn deploy(node: &RootProvider, from: Address, bytecode: &Bytes) -> B256 {
    send(node, json!({"from": from, "data": bytecode, "gas": "0x2000000"})).await
}

/// A call with explicit gas (so a reverting call is still mined).
pub async fn call(node: &RootProvider, from: Address, to: Address, data: Vec<u8>) -> B256 {
    send(node, json!({"from": from, "to": to, "data": Bytes::from(data), "gas": "0x100000"})).await
}

/// Deploys `code` (creation code and arguments) from `from`, mines it and returns the created contract.
pub async fn deploy_code(node: &RootProvider, from: Address, code: Vec<u8>) -> Address {
    let tx = deploy(node, from, &Bytes::from(code)).await;
    mine(node, 1).await;
    created_address(node, tx).await
}

/// The `contracts` row of `address`, once the code writer has stored it (polled for 30 s).
pub async fn stored_contract(daemon: &Daemon, address: Address) -> rockscout::store::records::ContractRecord {
    poll_until("the contract's code row", Duration::from_secs(30), || async {
        daemon.store().reader().get::<rockscout::store::tables::Contracts>(&address).ok().flatten()
    })
    .await
}

/// The address a deployment created, from its receipt.
pub async fn created_address(node: &RootProvider, tx: B256) -> Address {
    let receipt = node.get_transaction_receipt(tx).await.unwrap().expect("deployment mined");
    receipt.contract_address.expect("a contract was created")
}

/// Fills the chain with `blocks` blocks of mixed traffic: transfers, a Demo contract, pokes (with logs) and
/// calls that revert. Returns the number of transactions sent.
pub async fn generate_traffic(node: &RootProvider, accounts: &[Address], blocks: u64, txs_per_block: usize) -> usize {
    use alloy::sol_types::SolCall;
    use rockscout::dev::contracts::Demo;
    let deploy_tx = deploy(node, accounts[0], &Demo::BYTECODE).await;
    mine(node, 1).await;
    let demo = created_address(node, deploy_tx).await;
    let mut sent = 1;
    for block in 0..blocks {
        for i in 0..txs_per_block {
            let from = accounts[(block as usize + i) % accounts.len()];
            let to = accounts[(block as usize * 3 + i + 1) % accounts.len()];
            match i % 4 {
                0 | 1 => {
                    transfer(node, from, to, 1_000 + block * 10 + i as u64).await;
                }
                2 => {
                    let data = Demo::pokeCall { note: format!("b{block} t{i}") }.abi_encode();
                    call(node, from, demo, data).await;
                }
                _ => {
                    let data = Demo::mayFailCall { x: U256::from(block + i as u64) }.abi_encode();
                    call(node, from, demo, data).await;
                }
            }
            sent += 1;
        }
        mine(node, 1).await;
    }
    sent
}

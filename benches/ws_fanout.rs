//! WebSocket fan-out and live latency. N clients join `blocks:new_block`; blocks are mined on anvil one at a time.
//! For every block it measures (a) from the indexer's commit event to each subscriber receiving the `new_block`
//! frame (the last subscriber is the fan-out figure), and (b) from `anvil_mine` returning to the first subscriber
//! receiving the frame (live latency: head notification, fetch, commit, publish, delivery). Clients run in the
//! same process, on the same two cores, as the daemon.
//!
//!     cargo bench --bench ws_fanout -- --subscribers 1000 --blocks 30
//!
//! `--peak` runs the reference chain's peak instead: a block every `--block-ms` (400) with `--txs` (2,000) ether
//! transfers each (anvil's gas limit is 1,000,000,000), pushed into anvil's pool while the previous block is
//! indexed (auto-impersonated senders, so anvil signs nothing), `--rest` (4) connections requesting
//! `/api/v2/blocks` and `/api/v2/main-page/transactions` in a loop, and the subscribers. It prints mined
//! (`evm_mine` returns) → first `new_block` frame p50/p99, the transactions per second the chain really carried,
//! the REST figures, the indexer's lag behind the mined head sampled every 100 ms (first quarter against last
//! quarter of the run), and from the daemon's `/metrics` why a block did not reach a subscriber: connections
//! dropped as too slow, blocks indexed too far behind the head to be broadcast (catch-up), events the publisher
//! missed, idle closes. The subscribers only read, so the daemon's idle timeout is set past the run (a Phoenix
//! client heartbeats every 30 s and is never idle-closed).
//!
//!     cargo bench --bench ws_fanout -- --peak --subscribers 1000 --blocks 75 [--block-ms 400] [--txs 2000]
//!         [--rest 4] [--coin-balances false]

mod common;

use alloy::providers::{Provider, RootProvider};
use common::ws::{Received, WsClient};
use common::{arg, figure, percentile, start_anvil, start_anvil_with};
use rockscout::events::ChainEvent;
use rockscout::Config;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long a subscriber waits for its next frame before giving up (longer than any run).
const SUBSCRIBER_PATIENCE: Duration = Duration::from_secs(3600);

fn main() {
    if std::env::args().any(|a| a == "--peak") {
        return peak::run();
    }
    let subscribers: usize = arg("subscribers", 1000);
    let blocks: u64 = arg("blocks", 30);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let anvil = start_anvil();
        let node: RootProvider = RootProvider::new_http(anvil.http_url().parse().unwrap());
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::new(anvil.http_url(), dir.path());
        config.ws_url = Some(anvil.ws_url());
        config.listen = "127.0.0.1:0".parse().unwrap();
        config.indexer.poll_interval = Duration::from_millis(50);
        config.api.max_connections = subscribers + 64;
        config.api.ws.max_connections = subscribers + 64;
        let daemon = rockscout::Daemon::start(&config).await.unwrap();
        let addr = daemon.addr();

        let (arrivals_tx, mut arrivals) = mpsc::unbounded_channel::<(u64, Instant)>();
        let connected = Instant::now();
        for _ in 0..subscribers {
            let mut client = WsClient::connect(addr, "/socket/v2/websocket?vsn=2.0.0").await;
            client.send_text(r#"["1","1","blocks:new_block","phx_join",{}]"#).await;
            let reply = client.frame().await;
            assert_eq!(reply[4]["status"], "ok");
            let tx = arrivals_tx.clone();
            tokio::spawn(async move {
                while let Received::Frame(frame) = client.recv(SUBSCRIBER_PATIENCE).await {
                    if frame[3] == "new_block" {
                        let height = frame[4]["block"]["height"].as_u64().unwrap();
                        let _ = tx.send((height, Instant::now()));
                    }
                }
            });
        }
        println!(
            "\n{subscribers} subscribers joined in {:.1?}; mining {blocks} blocks one at a time",
            connected.elapsed()
        );
        let mut events = daemon.subscribe();
        let (mut fanout_last, mut fanout_all, mut live) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..blocks {
            let mined_at = {
                let _: serde_json::Value = node.raw_request("anvil_mine".into(), json!([1])).await.unwrap();
                Instant::now()
            };
            let height = node.get_block_number().await.unwrap();
            let committed_at = loop {
                match events.recv().await {
                    Ok(ChainEvent::Applied(block)) if block.number() == height => break Instant::now(),
                    Ok(_) => continue,
                    Err(e) => panic!("events: {e}"),
                }
            };
            let mut received = Vec::with_capacity(subscribers);
            while received.len() < subscribers {
                let (h, at) =
                    tokio::time::timeout(Duration::from_secs(30), arrivals.recv()).await.expect("all frames").unwrap();
                if h == height {
                    received.push(at);
                }
            }
            let first = *received.iter().min().unwrap();
            let last = *received.iter().max().unwrap();
            live.push(first.saturating_duration_since(mined_at).as_secs_f64() * 1000.0);
            fanout_last.push(last.saturating_duration_since(committed_at).as_secs_f64() * 1000.0);
            fanout_all
                .extend(received.iter().map(|at| at.saturating_duration_since(committed_at).as_secs_f64() * 1000.0));
        }
        for v in [&mut fanout_last, &mut fanout_all, &mut live] {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        }
        figure(&format!("fan-out to last of {subscribers}, p50"), percentile(&fanout_last, 50.0), "ms");
        figure(&format!("fan-out to last of {subscribers}, p99"), percentile(&fanout_last, 99.0), "ms");
        figure("fan-out, any subscriber, p50", percentile(&fanout_all, 50.0), "ms");
        figure("live latency mined -> first frame, p50", percentile(&live, 50.0), "ms");
        figure("live latency mined -> first frame, p99", percentile(&live, 99.0), "ms");
        daemon.shutdown().await.unwrap();
    });
}

/// The `--peak` mode.
mod peak {
    use super::*;
    use alloy::primitives::{Address, U256};
    use alloy::transports::http::reqwest;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    /// Senders of the transfers (auto-impersonated, funded with `anvil_setBalance`).
    const SENDERS: u64 = 20;
    /// Recipients the transfers cycle through.
    const RECIPIENTS: u64 = 5_000;
    /// Transfers per JSON-RPC batch pushed into anvil's pool.
    const PUSH_BATCH: usize = 250;

    pub fn run() {
        let subscribers: usize = arg("subscribers", 1000);
        let blocks: u64 = arg("blocks", 75);
        let block_ms: u64 = arg("block-ms", 400);
        let txs_per_block: usize = arg("txs", 2000);
        let rest_connections: usize = arg("rest", 4);
        let coin_balances: bool = arg("coin-balances", true);
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let anvil = start_anvil_with(&["--auto-impersonate", "--prune-history", "64"]);
            let node: RootProvider = RootProvider::new_http(anvil.http_url().parse().unwrap());
            let senders: Vec<Address> = (0..SENDERS).map(|i| Address::with_last_byte(0x10).create(i)).collect();
            for sender in &senders {
                let funds = U256::from(10u64).pow(U256::from(24));
                let _: serde_json::Value = node.raw_request("anvil_setBalance".into(), (sender, funds)).await.unwrap();
            }
            let dir = tempfile::tempdir().unwrap();
            let mut config = Config::new(anvil.http_url(), dir.path());
            config.ws_url = Some(anvil.ws_url());
            config.listen = "127.0.0.1:0".parse().unwrap();
            config.indexer.poll_interval = Duration::from_millis(50);
            config.indexer.coin_balances = coin_balances;
            config.api.max_connections = subscribers + rest_connections + 64;
            config.api.ws.max_connections = subscribers + 64;
            config.api.ws.idle_timeout = SUBSCRIBER_PATIENCE;
            config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
            let daemon = rockscout::Daemon::start(&config).await.unwrap();
            let addr = daemon.addr();
            let metrics = format!("http://{}/metrics", daemon.metrics_addr().unwrap());

            let (arrivals_tx, mut arrivals) = mpsc::unbounded_channel::<(u64, Instant)>();
            let joined = Instant::now();
            for _ in 0..subscribers {
                let mut client = WsClient::connect(addr, "/socket/v2/websocket?vsn=2.0.0").await;
                client.send_text(r#"["1","1","blocks:new_block","phx_join",{}]"#).await;
                assert_eq!(client.frame().await[4]["status"], "ok");
                let tx = arrivals_tx.clone();
                tokio::spawn(async move {
                    while let Received::Frame(frame) = client.recv(SUBSCRIBER_PATIENCE).await {
                        if frame[3] == "new_block" {
                            let _ = tx.send((frame[4]["block"]["height"].as_u64().unwrap(), Instant::now()));
                        }
                    }
                });
            }
            drop(arrivals_tx);
            println!(
                "\n{subscribers} subscribers joined in {:.1?}; {blocks} blocks every {block_ms} ms, {txs_per_block} \
                 transfers each, {rest_connections} REST connections, native balance index {}",
                joined.elapsed(),
                if coin_balances { "on" } else { "off" }
            );

            // Every frame's arrival, by height: the first is the live latency, the count says all got it.
            let collector = tokio::spawn(async move {
                let mut by_height: HashMap<u64, (Instant, usize)> = HashMap::new();
                while let Some((height, at)) = arrivals.recv().await {
                    let entry = by_height.entry(height).or_insert((at, 0));
                    entry.0 = entry.0.min(at);
                    entry.1 += 1;
                }
                by_height
            });
            let stop = Arc::new(AtomicBool::new(false));
            let pusher = tokio::spawn(push_transfers(anvil.http_url(), senders, txs_per_block, block_ms, stop.clone()));
            let rest: Vec<_> = (0..rest_connections)
                .map(|i| tokio::spawn(rest_load(format!("http://{addr}"), i, stop.clone())))
                .collect();
            let mined_head = AtomicU64::new(node.get_block_number().await.unwrap());
            let mining_done = AtomicBool::new(false);
            // The indexer's lag behind the mined head, every 100 ms while blocks are mined.
            let sampler = async {
                let mut lags = Vec::new();
                while !mining_done.load(Ordering::Relaxed) {
                    let indexed = daemon.status().indexed.unwrap_or(0);
                    lags.push(mined_head.load(Ordering::Relaxed).saturating_sub(indexed));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                lags
            };

            let started = Instant::now();
            let mining = async {
                let mut mined = Vec::new();
                let mut ticks = tokio::time::interval(Duration::from_millis(block_ms));
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticks.tick().await;
                for _ in 0..blocks {
                    ticks.tick().await;
                    let _: serde_json::Value = node.raw_request("evm_mine".into(), json!([])).await.unwrap();
                    let at = Instant::now();
                    let height = node.get_block_number().await.unwrap();
                    mined_head.store(height, Ordering::Relaxed);
                    mined.push((height, at));
                }
                mining_done.store(true, Ordering::Relaxed);
                mined
            };
            let (mined, lags) = tokio::join!(mining, sampler);
            let elapsed = started.elapsed();
            let last = mined.last().unwrap().0;
            let caught_up = Instant::now();
            // A box that cannot keep up is reported as such (the lag at the end), not waited for.
            while daemon.status().indexed != Some(last) && caught_up.elapsed() < Duration::from_secs(30) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let drained = caught_up.elapsed();
            let behind_at_end = last.saturating_sub(daemon.status().indexed.unwrap_or(0));
            stop.store(true, Ordering::Relaxed);
            let pushed = pusher.await.unwrap();
            let mut rest_ms: Vec<f64> = Vec::new();
            for task in rest {
                rest_ms.extend(task.await.unwrap());
            }
            // Give the last frames a moment to land, then close every subscription by stopping the daemon.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let scrape = reqwest::get(&metrics).await.unwrap().text().await.unwrap();
            daemon.shutdown().await.unwrap();
            let by_height = collector.await.unwrap();

            let mut live: Vec<f64> = mined
                .iter()
                .filter_map(|(h, at)| by_height.get(h).map(|(first, _)| first.saturating_duration_since(*at)))
                .map(|d| d.as_secs_f64() * 1000.0)
                .collect();
            live.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let complete =
                mined.iter().filter(|(h, _)| by_height.get(h).is_some_and(|(_, n)| *n == subscribers)).count();
            // What the chain carried, from the node (not the indexer, which may be behind).
            let mut carried = 0u64;
            for (height, _) in &mined {
                let count: alloy::primitives::U64 = node
                    .raw_request("eth_getBlockTransactionCountByNumber".into(), (format!("{height:#x}"),))
                    .await
                    .unwrap();
                carried += count.to::<u64>();
            }
            rest_ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let quarter = (lags.len() / 4).max(1);
            let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;

            figure("blocks mined", mined.len() as f64, "");
            figure("transfers pushed into the pool", pushed as f64, "");
            figure("transactions carried per second", carried as f64 / elapsed.as_secs_f64(), "tx/s");
            figure("transactions per block (mean)", carried as f64 / mined.len() as f64, "tx");
            figure("blocks every subscriber got", complete as f64, "");
            figure("live latency mined -> first frame, p50", percentile(&live, 50.0), "ms");
            figure("live latency mined -> first frame, p99", percentile(&live, 99.0), "ms");
            figure("live latency mined -> first frame, max", percentile(&live, 100.0), "ms");
            figure("indexer lag, mean of first quarter", mean(&lags[..quarter.min(lags.len())]), "blocks");
            figure("indexer lag, mean of last quarter", mean(&lags[lags.len().saturating_sub(quarter)..]), "blocks");
            figure("indexer lag, max", lags.iter().copied().max().unwrap_or(0) as f64, "blocks");
            figure("last block mined -> indexed (30 s at most)", drained.as_secs_f64() * 1000.0, "ms");
            figure("blocks still not indexed then", behind_at_end as f64, "blocks");
            figure("blocks no subscriber got", mined.len().saturating_sub(live.len()) as f64, "");
            for (name, what) in [
                ("rockscout_ws_dropped_slow_consumers_total", "subscribers dropped as too slow"),
                ("rockscout_ws_catch_up_blocks_total", "blocks too far behind the head to broadcast"),
                ("rockscout_ws_events_missed_total", "chain events the publisher missed"),
                ("rockscout_ws_idle_closed_total", "connections closed as idle"),
            ] {
                figure(what, counter(&scrape, name), "");
            }
            figure("REST requests answered", rest_ms.len() as f64, "");
            figure("REST req/s", rest_ms.len() as f64 / elapsed.as_secs_f64(), "req/s");
            figure("REST p50", percentile(&rest_ms, 50.0), "ms");
            figure("REST p99", percentile(&rest_ms, 99.0), "ms");
        });
    }

    /// The value of counter `name` in a `/metrics` scrape.
    fn counter(scrape: &str, name: &str) -> f64 {
        let line = scrape.lines().find(|l| l.split_whitespace().next() == Some(name));
        line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or_else(|| panic!("{name} not exported"))
    }

    /// Pushes `per_block` transfers every `block_ms` into anvil's pool (batched `eth_sendTransaction` with explicit
    /// nonces from auto-impersonated senders) until `stop`; returns how many it pushed. Behind schedule it sends at
    /// once, so its rate is the lower of the target and what anvil accepts.
    async fn push_transfers(
        url: String,
        senders: Vec<Address>,
        per_block: usize,
        block_ms: u64,
        stop: Arc<AtomicBool>,
    ) -> u64 {
        let client = alloy::rpc::client::RpcClient::new_http(url.parse().unwrap());
        let mut nonces = vec![0u64; senders.len()];
        let mut pushed = 0u64;
        let mut ticks = tokio::time::interval(Duration::from_millis(block_ms));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        while !stop.load(Ordering::Relaxed) {
            ticks.tick().await;
            for chunk in (0..per_block).collect::<Vec<_>>().chunks(PUSH_BATCH) {
                let mut batch = client.new_batch();
                let mut waiting = Vec::with_capacity(chunk.len());
                for _ in chunk {
                    let s = (pushed % SENDERS) as usize;
                    let to = Address::from_word(U256::from(0x1_0000 + pushed % RECIPIENTS).into());
                    let tx = json!({"from": senders[s], "to": to, "value": "0x1", "gas": "0x5208", "nonce": nonces[s]});
                    nonces[s] += 1;
                    pushed += 1;
                    waiting.push(batch.add_call::<_, serde_json::Value>("eth_sendTransaction", &(tx,)).unwrap());
                }
                batch.send().await.expect("batch sent");
                for w in waiting {
                    w.await.expect("transaction accepted");
                }
            }
        }
        pushed
    }

    /// One REST connection's loop until `stop`: block list and main-page transactions in turn; the latency of each
    /// answer in ms.
    async fn rest_load(base: String, connection: usize, stop: Arc<AtomicBool>) -> Vec<f64> {
        let client = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
        let paths = ["/api/v2/blocks", "/api/v2/main-page/transactions"];
        let mut latencies = Vec::new();
        let mut i = connection;
        while !stop.load(Ordering::Relaxed) {
            let started = Instant::now();
            let response = client.get(format!("{base}{}", paths[i % paths.len()])).send().await.expect("REST request");
            assert!(response.status().is_success(), "REST status {}", response.status());
            response.bytes().await.expect("REST body");
            latencies.push(started.elapsed().as_secs_f64() * 1000.0);
            i += 1;
        }
        latencies
    }
}

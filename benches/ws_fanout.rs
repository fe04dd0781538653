//! WebSocket fan-out and live latency. N clients join `blocks:new_block`; blocks are mined on anvil one at a time.
//! For every block it measures (a) from the indexer's commit event to each subscriber receiving the `new_block`
//! frame (the last subscriber is the fan-out figure), and (b) from `anvil_mine` returning to the first subscriber
//! receiving the frame (live latency: head notification, fetch, commit, publish, delivery). Clients run in the
//! same process, on the same two cores, as the daemon.
//!
//!     cargo bench --bench ws_fanout -- --subscribers 1000 --blocks 30

mod common;

use alloy::providers::{Provider, RootProvider};
use common::ws::{Received, WsClient};
use common::{arg, figure, percentile, start_anvil};
use rockscout::events::ChainEvent;
use rockscout::Config;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long a subscriber waits for its next frame before giving up (longer than any run).
const SUBSCRIBER_PATIENCE: Duration = Duration::from_secs(3600);

fn main() {
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

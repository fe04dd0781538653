//! Read replicas beside an indexing primary. An anvil mines a block of transfers at a steady rate; one
//! `rockscout run` process indexes it and N `rockscout serve --secondary-of` processes (the release binary, as
//! deployed) serve the same endpoint mix from its data directory. For N = 0 (the primary serves), 1, 2, 3, and for
//! two mixes (store reads only; with address pages, which ask the node for balances), it prints the total API
//! requests/s of the serving processes, p50/p99 latency, and the primary's indexing while they serve
//! (blocks/s indexed against blocks/s mined, its lag behind the head, the first replica's lag behind the primary,
//! all in blocks, sampled every 100 ms). On a 2-core machine the node, the primary,
//! the replicas and the load generator share the two cores: this shows what replicas cost, not a speed-up.
//!
//!     cargo bench --bench replicas -- [--secondaries 3 (largest N)] [--seconds 5] [--connections 16]
//!         [--history 200 (blocks mined before serving)] [--txs 50 (transfers per block)]
//!         [--block-ms 250 (time between mined blocks)] [--catch-up-ms 100 (the replicas' catch-up interval)]

mod common;

use alloy::primitives::{Address, B256};
use alloy::providers::RootProvider;
use bytes::Bytes;
use common::{arg, fill_transfers, percentile, start_anvil};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The release binary cargo built beside this bench.
const ROCKSCOUT: &str = env!("CARGO_BIN_EXE_rockscout");

/// A rockscout process, stopped on drop: SIGTERM, so that a replica removes its temporary directory, and SIGKILL
/// if it has not exited within 10 s.
struct Process {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

async fn spawn(args: &[&str], extra: &[std::ffi::OsString]) -> Process {
    let addr = free_addr();
    let child = Command::new(ROCKSCOUT)
        .args(args)
        .args(extra)
        .args(["--listen", &addr.to_string(), "--rate-limit", "0", "--metrics-listen", "off"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{ROCKSCOUT}: {e} (cargo bench builds it)"));
    let started = Instant::now();
    while get(addr, "/health").await.is_none() {
        assert!(started.elapsed() < Duration::from_secs(30), "{args:?} did not answer /health");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Process { child, addr }
}

/// One GET on a new connection: the JSON body of a 200, else `None`.
async fn get(addr: SocketAddr, path: &str) -> Option<Value> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.ok()?;
    tokio::spawn(connection);
    let request = hyper::Request::get(path).header("host", "bench").body(Empty::<Bytes>::new()).ok()?;
    let response = sender.send_request(request).await.ok()?;
    if response.status() != 200 {
        return None;
    }
    serde_json::from_slice(&response.into_body().collect().await.ok()?.to_bytes()).ok()
}

/// `(indexed tip, node head)` from `/health`.
async fn tips(addr: SocketAddr) -> (u64, u64) {
    let health = get(addr, "/health").await.expect("/health answers");
    (health["indexed_tip"].as_u64().unwrap_or(0), health["node_tip"].as_u64().unwrap_or(0))
}

/// Requests/s and sorted latencies (µs) of `connections` keep-alive clients spread evenly over `servers`, each
/// cycling through `paths`, sending its next request when the previous answer is complete.
async fn load(
    servers: &[SocketAddr],
    paths: Arc<Vec<String>>,
    connections: usize,
    duration: Duration,
) -> (f64, Vec<f64>) {
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (paths, server) = (paths.clone(), servers[c % servers.len()]);
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(server).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
            tokio::spawn(connection);
            let mut latencies = Vec::new();
            let mut i = c;
            while Instant::now() < deadline {
                let path = &paths[i % paths.len()];
                let request =
                    hyper::Request::get(path.as_str()).header("host", "bench").body(Empty::<Bytes>::new()).unwrap();
                let sent = Instant::now();
                let response = sender.send_request(request).await.unwrap();
                let status = response.status();
                let body = response.into_body().collect().await.unwrap().to_bytes();
                assert_eq!(status, 200, "{server}{path}: {}", String::from_utf8_lossy(&body));
                latencies.push(sent.elapsed().as_secs_f64() * 1e6);
                i += connections;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort_by(f64::total_cmp);
    (all.len() as f64 / started.elapsed().as_secs_f64(), all)
}

/// The endpoint mixes: block and transaction pages of the history, the home page's blocks and the first page of
/// the transactions list (store reads only); and the same with address pages, whose balance each serving process
/// asks the node for (cached per process and tip).
async fn endpoint_mixes(primary: SocketAddr, history: u64) -> [(&'static str, Arc<Vec<String>>); 2] {
    let mut txs: Vec<(B256, Address)> = Vec::new();
    let mut query = String::from("items_count=50");
    while txs.len() < 500 {
        let page = get(primary, &format!("/api/v2/transactions?{query}")).await.expect("transactions list");
        for item in page["items"].as_array().unwrap() {
            txs.push((
                item["hash"].as_str().unwrap().parse().unwrap(),
                item["to"]["hash"].as_str().unwrap().parse().unwrap(),
            ));
        }
        let Some(next) = page["next_page_params"].as_object() else { break };
        query =
            next.iter().map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"'))).collect::<Vec<_>>().join("&");
    }
    let (mut store, mut with_node) = (Vec::new(), Vec::new());
    for (i, (hash, to)) in txs.iter().enumerate() {
        let mut these = vec![format!("/api/v2/blocks/{}", 1 + (i as u64 * 7_919) % history)];
        these.push(format!("/api/v2/transactions/{hash}"));
        if i % 4 == 0 {
            these.push("/api/v2/main-page/blocks".into());
            these.push("/api/v2/transactions".into());
        }
        store.extend(these.iter().cloned());
        with_node.extend(these);
        with_node.push(format!("/api/v2/addresses/{to}"));
    }
    [("store", Arc::new(store)), ("+addresses", Arc::new(with_node))]
}

/// One measured run and what the primary's indexing did meanwhile.
struct Row {
    rate: f64,
    latencies: Vec<f64>,
    mined_per_s: f64,
    indexed_per_s: f64,
    lags: Vec<u64>,
    replica_behind: Vec<u64>,
}

/// Loads `servers` with `paths` for `seconds` (after a second of warm-up) while sampling, every 100 ms, the
/// primary's lag behind the node and `replica`'s behind the primary.
async fn measure(
    primary: SocketAddr,
    replica: Option<SocketAddr>,
    servers: &[SocketAddr],
    paths: Arc<Vec<String>>,
    connections: usize,
    seconds: u64,
) -> Row {
    load(servers, paths.clone(), connections, Duration::from_secs(1)).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let sampler = {
        let token = stop.clone();
        tokio::spawn(async move {
            let (mut lags, mut behind) = (Vec::new(), Vec::new());
            while !token.is_cancelled() {
                let (indexed, head) = tips(primary).await;
                lags.push(head.saturating_sub(indexed));
                if let Some(replica) = replica {
                    behind.push(indexed.saturating_sub(tips(replica).await.0));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (lags, behind)
        })
    };
    let (indexed_before, head_before) = tips(primary).await;
    let window = Instant::now();
    let (rate, latencies) = load(servers, paths, connections, Duration::from_secs(seconds)).await;
    let (indexed_after, head_after) = tips(primary).await;
    let elapsed = window.elapsed().as_secs_f64();
    stop.cancel();
    let (lags, replica_behind) = sampler.await.unwrap();
    Row {
        rate,
        latencies,
        mined_per_s: (head_after - head_before) as f64 / elapsed,
        indexed_per_s: (indexed_after - indexed_before) as f64 / elapsed,
        lags,
        replica_behind,
    }
}

fn main() {
    let most: usize = arg("secondaries", 3);
    let seconds: u64 = arg("seconds", 5);
    let connections: usize = arg("connections", 16);
    let history: u64 = arg("history", 200);
    let txs: usize = arg("txs", 50);
    let block_ms: u64 = arg("block-ms", 250);
    let catch_up_ms: u64 = arg("catch-up-ms", 100);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let anvil = start_anvil();
        let url = anvil.http_url();
        let node: RootProvider = RootProvider::new_http(url.parse().unwrap());
        let senders = anvil.addresses();
        fill_transfers(&node, &url, &senders, history, txs, None, 1_000).await;
        let dir = tempfile::tempdir().unwrap();
        let data_dir: std::ffi::OsString = dir.path().into();
        let primary =
            spawn(&["run", "--rpc-url", &url, "--poll-interval-ms", "50"], &["--data-dir".into(), data_dir.clone()])
                .await;
        while tips(primary.addr).await.0 < history {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mixes = endpoint_mixes(primary.addr, history).await;

        // Steady blocks while the API is measured: one block of `txs` transfers every `block_ms`.
        let feeding = tokio_util::sync::CancellationToken::new();
        let feeder = {
            let (node, url, senders, stop) = (node.clone(), url.clone(), senders.clone(), feeding.clone());
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval(Duration::from_millis(block_ms));
                while !stop.is_cancelled() {
                    ticker.tick().await;
                    fill_transfers(&node, &url, &senders, 1, txs, None, 1_000).await;
                }
            })
        };
        println!("history: {history} blocks of {txs} transfers; then a block every {block_ms} ms while serving");
        println!("{connections} connections over the serving processes, {seconds} s per run after 1 s of warm-up");
        println!("replicas catch up every {catch_up_ms} ms");
        println!("node, primary, replicas and load generator share this machine's cores\n");
        println!(
            "{:<26} {:>9} {:>8} {:>8} {:>12} {:>12} {:>9} {:>9} {:>12}",
            "serving, endpoint mix",
            "req/s",
            "p50 ms",
            "p99 ms",
            "mined blk/s",
            "indexed/s",
            "max lag",
            "mean lag",
            "replica lag"
        );
        for n in 0..=most {
            let mut replicas = Vec::new();
            for _ in 0..n {
                let interval = catch_up_ms.to_string();
                let args =
                    ["serve", "--rpc-url", &url, "--poll-interval-ms", "50", "--catch-up-interval-ms", &interval];
                replicas.push(spawn(&args, &["--secondary-of".into(), data_dir.clone()]).await);
            }
            let servers: Vec<SocketAddr> =
                if n == 0 { vec![primary.addr] } else { replicas.iter().map(|r| r.addr).collect() };
            let label = if n == 0 {
                "primary only".to_owned()
            } else {
                format!("{n} secondar{}", if n == 1 { "y" } else { "ies" })
            };
            for (mix, paths) in &mixes {
                let replica = replicas.first().map(|r| r.addr);
                let row = measure(primary.addr, replica, &servers, paths.clone(), connections, seconds).await;
                println!(
                    "{:<26} {:>9.0} {:>8.3} {:>8.3} {:>12.2} {:>12.2} {:>9} {:>9.1} {:>12}",
                    format!("{label}, {mix}"),
                    row.rate,
                    percentile(&row.latencies, 50.0) / 1000.0,
                    percentile(&row.latencies, 99.0) / 1000.0,
                    row.mined_per_s,
                    row.indexed_per_s,
                    row.lags.iter().max().copied().unwrap_or(0),
                    row.lags.iter().sum::<u64>() as f64 / row.lags.len().max(1) as f64,
                    row.replica_behind.iter().max().map_or("-".to_owned(), u64::to_string),
                );
            }
            drop(replicas);
        }
        feeding.cancel();
        let _ = feeder.await;
    });
}

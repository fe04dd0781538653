//! REST under load: a store of synthetic blocks (default 1,000,000 transactions, one address sending every 8th:
//! 125,000) is served by rockscout's HTTP server, and a load generator on loopback (keep-alive connections, each
//! sending its next request when the previous answer is complete) measures requests/s and latency percentiles for
//! block, transaction and address pages and for pages of that address's history at every depth. A bare hyper
//! server answering a fixed JSON body of the same size, measured in the same run, is the ceiling.
//!
//!     cargo bench --bench rest_load -- [--blocks 1000] [--txs 1000] [--hot-every 8] [--seconds 5]
//!         [--connections 16] [--store DIR (kept and reused between runs)] [--only TEXT (endpoints whose label
//!         contains TEXT, after the ceiling)] [--cache-mb 64 (block cache of the served store)]
//!         [--row-cache-mb 32 (row cache of the served store; 0: none)]
//!         [--sample-txs 2000 (distinct transactions the transaction endpoints request: the working set)]
//!         [--zstd-dictionary transactions (the tables of a store it builds; the daemon's --zstd-dictionary)]
//!
//! `--store DIR` may also be a store the growth bench wrote (`benches/growth.rs`, recognised by its marker file):
//! it is served as it is, at whatever height it reached, once RocksDB has no compaction pending, and the rows are
//! appended to `DIR/rest_load.jsonl`.

mod common;

use bytes::Bytes;
use common::growth_plot::{RestRow, GROWTH_MARKER};
use common::synth::{follower_chunks, sender, tx_hash, Chain, Shape, HOT};
use common::{arg, cpu_seconds, percentile, start_anvil_with, zstd_dictionary_arg};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rockscout::api::{self, ApiConfig, AppState};
use rockscout::indexer::apply::write_chunk;
use rockscout::indexer::IndexerConfig;
use rockscout::node::Node;
use rockscout::status::Status;
use rockscout::store::keys::AddressPos;
use rockscout::store::{Order, Store, StoreOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Writes the synthetic chain through the follower's write path, unless `dir` already holds it (or holds a store
/// written by the growth bench, used as it is whatever its height).
fn build_store(dir: &Path, blocks: u64, shape: Shape) -> Store {
    let options = StoreOptions {
        cache_bytes: arg("cache-mb", 64usize) << 20,
        row_cache_bytes: arg("row-cache-mb", 32usize) << 20,
        zstd_dictionary: zstd_dictionary_arg(),
        ..Default::default()
    };
    let store = Store::open(dir, &options).unwrap();
    if dir.join(GROWTH_MARKER).exists() {
        println!("serving the growth bench's store in {} as it is", dir.display());
        settle(&store);
        return store;
    }
    if store.reader().tip().unwrap().is_some_and(|t| t.number + 1 == blocks) {
        println!("reusing the store in {}", dir.display());
        return store;
    }
    let started = Instant::now();
    let config = IndexerConfig::default();
    let chain: Vec<_> = Chain::new(shape, 0, blocks).collect();
    for range in follower_chunks(&chain, &config) {
        write_chunk(&store, &chain[range], u64::MAX / 2, config.undo_depth).unwrap();
    }
    store.compact().unwrap();
    println!("built the store in {:.1?}", started.elapsed());
    store
}

/// Waits (at most ten minutes) until RocksDB has no compaction running or pending: a store the growth bench has
/// just written holds gigabytes of pending compaction, which would run in this process during the measurements and
/// count in its CPU per request.
fn settle(store: &Store) {
    let started = Instant::now();
    let busy = || {
        let figures = store.disk_figures().unwrap();
        figures.running_compactions > 0 || figures.pending_compaction_bytes > 0
    };
    while busy() && started.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(250));
    }
    let state = if busy() { "still compacting after" } else { "no compaction pending after" };
    println!("{state} {:.1?}", started.elapsed());
}

/// Cursors (`block_number`, `index`) that start pages of `address`'s history at 1%, 2%, … 99% of its depth.
fn deep_cursors(store: &Store, address: alloy::primitives::Address) -> (usize, Vec<String>) {
    let reader = store.reader();
    // Two passes (count, then pick) so that a history of millions is never held in memory.
    let count = reader.address_txs(address, None, Order::NewestFirst).count();
    let mut wanted = (1..100).map(|percent| count * percent / 100).peekable();
    let mut cursors = Vec::new();
    for (i, row) in reader.address_txs(address, None, Order::NewestFirst).enumerate() {
        while wanted.peek() == Some(&i) {
            let key: AddressPos = row.as_ref().unwrap().0;
            cursors.push(format!("block_number={}&index={}", key.pos.block, key.pos.index));
            wanted.next();
        }
        if wanted.peek().is_none() {
            break;
        }
    }
    (count, cursors)
}

/// A bare hyper server answering `body` to every request: the ceiling of this machine's HTTP stack.
async fn bare_server(body: Bytes) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let body = body.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_request| {
                    let body = body.clone();
                    async move {
                        let response = hyper::Response::builder()
                            .header("content-type", "application/json; charset=utf-8")
                            .body(Full::new(body))
                            .unwrap();
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
}

/// What one load run measured: requests/s, latencies seen by the client and the server's own time from its
/// `Server-Timing` header where it sends one (pages), both in µs and sorted.
struct Measured {
    rate: f64,
    /// CPU µs of the whole process (server and load generator) per request.
    cpu_per_request: f64,
    latencies: Vec<f64>,
    server: Vec<f64>,
}

/// The duration in a `Server-Timing: name;dur=MS` header, in µs.
fn server_time(response: &hyper::Response<hyper::body::Incoming>) -> Option<f64> {
    let value = response.headers().get("server-timing")?.to_str().ok()?;
    value.split(';').find_map(|part| part.trim().strip_prefix("dur=")?.parse::<f64>().ok()).map(|ms| ms * 1000.0)
}

/// Requests/s and latencies (µs, sorted) of `connections` keep-alive clients cycling through `paths`.
/// How long a load runs.
#[derive(Clone, Copy)]
enum Until {
    /// For a fixed time.
    Elapsed(Duration),
    /// Until every path was requested once (the connections share them out).
    EachPathOnce,
}

async fn load(addr: SocketAddr, paths: Arc<Vec<String>>, connections: usize, until: Until) -> Measured {
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    let deadline = match until {
        Until::Elapsed(duration) => Some(started + duration),
        Until::EachPathOnce => None,
    };
    let mut tasks = Vec::new();
    for c in 0..connections {
        let paths = paths.clone();
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
            tokio::spawn(connection);
            let (mut latencies, mut server) = (Vec::new(), Vec::new());
            let mut i = c;
            while deadline.map_or(i < paths.len(), |deadline| Instant::now() < deadline) {
                let request = hyper::Request::get(paths[i % paths.len()].as_str())
                    .header("host", "bench")
                    .body(Full::new(Bytes::new()))
                    .unwrap();
                let sent = Instant::now();
                let response = sender.send_request(request).await.unwrap();
                let status = response.status();
                server.extend(server_time(&response));
                let body = response.into_body().collect().await.unwrap().to_bytes();
                assert_eq!(status, 200, "{}: {}", paths[i % paths.len()], String::from_utf8_lossy(&body));
                latencies.push(sent.elapsed().as_secs_f64() * 1e6);
                i += connections;
            }
            (latencies, server)
        }));
    }
    let (mut latencies, mut server) = (Vec::new(), Vec::new());
    for task in tasks {
        let (client_side, server_side) = task.await.unwrap();
        latencies.extend(client_side);
        server.extend(server_side);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    server.sort_by(f64::total_cmp);
    let cpu_per_request = (cpu_seconds() - cpu_before) * 1e6 / latencies.len().max(1) as f64;
    Measured { rate: latencies.len() as f64 / elapsed, cpu_per_request, latencies, server }
}

fn main() {
    let blocks: u64 = arg("blocks", 1000);
    let txs: usize = arg("txs", 1000);
    let hot_every: usize = arg("hot-every", 8);
    let seconds: u64 = arg("seconds", 5);
    let connections: usize = arg("connections", 16);
    let kept: String = arg("store", String::new());
    let only: String = arg("only", String::new());
    let sample_txs: u64 = arg("sample-txs", 2000);
    let temp = tempfile::tempdir().unwrap();
    let dir = if kept.is_empty() { temp.path().to_path_buf() } else { kept.into() };
    let shape = Shape { txs_per_block: txs, erc20_every: 4, hot_every, hot_tail: 0 };
    let store = Arc::new(build_store(&dir, blocks, shape));
    let tip = store.reader().tip().unwrap().expect("a tip").number;
    let total = store.reader().counters().unwrap().txs;
    let (hot_count, deep) = deep_cursors(&store, HOT);
    println!("store: {total} transactions in {} blocks; {HOT} has {hot_count} transactions", tip + 1);

    // The server side: rockscout (with an anvil at the same height for balances) and the bare ceiling.
    let server = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // Balances are read at the tip only; without `--prune-history` anvil writes every mined block's state to disk
    // (about 320 KB each, 9 GB by block 28,000 of a 70M growth store) and mines at ~60 blocks/s.
    let anvil = start_anvil_with(&["--prune-history"]);
    let node = Node::new(&anvil.http_url(), None, Duration::from_secs(5)).unwrap();
    let cancel = CancellationToken::new();
    let rockscout_addr = server.block_on(async {
        let provider: alloy::providers::RootProvider =
            alloy::providers::RootProvider::new_http(anvil.http_url().parse().unwrap());
        let _: serde_json::Value =
            alloy::providers::Provider::raw_request(&provider, "anvil_mine".into(), (tip,)).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = AppState::new(
            store.clone(),
            Arc::new(Status::default()),
            node.clone(),
            anvil.http_url(),
            rockscout::events::channel(16),
            ApiConfig::default(),
            rockscout::contracts::jobs::Verifications::new(
                store.clone(),
                node,
                rockscout::contracts::verifier::Compilers::default(),
                std::time::Duration::from_secs(60),
            )
            .unwrap(),
        );
        tokio::spawn(api::serve(listener, state, cancel.clone()));
        addr
    });

    let client = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let sample = |n: u64, modulo: u64| (0..n).map(move |i| (i * 7_919 + 13) % modulo);
    let block_paths: Vec<String> = sample(1000, tip + 1).map(|n| format!("/api/v2/blocks/{n}")).collect();
    let tx_paths: Vec<String> =
        sample(sample_txs, total).map(|s| format!("/api/v2/transactions/{:#x}", tx_hash(s + 1))).collect();
    let mut address_paths: Vec<String> = (0..1000).map(|i| format!("/api/v2/addresses/{}", sender(i))).collect();
    address_paths.push(format!("/api/v2/addresses/{HOT}"));
    let history = format!("/api/v2/addresses/{HOT}/transactions?items_count=50");
    let deep_paths: Vec<String> = deep.iter().map(|cursor| format!("{history}&{cursor}")).collect();
    // The explorer pages of the same objects: the REST data plus HTML rendering (budget: p99 < 5 ms).
    let page = |paths: &[String], from: &str, to: &str| -> Vec<String> {
        paths.iter().map(|p| p.replacen(from, to, 1)).collect()
    };
    let block_pages = page(&block_paths, "/api/v2/blocks/", "/block/");
    let tx_pages = page(&tx_paths, "/api/v2/transactions/", "/tx/");
    let address_pages = page(&address_paths, "/api/v2/addresses/", "/address/");
    let duration = Duration::from_secs(seconds);
    println!("{connections} connections, {seconds} s per endpoint, server and load generator on the same 2 cores");
    println!("ceiling: a bare hyper server answering a fixed body as large as the endpoint's first response\n");
    println!("server p99: from the page's Server-Timing header: its handler's start to the rendered HTML, in ms\n");
    println!("cpu µs: the process's CPU time per request (server and load generator), rockscout / bare\n");
    println!(
        "{:<54} {:>7} {:>9} {:>8} {:>8} {:>9} {:>8} {:>8} {:>6} {:>10} {:>13}",
        "endpoint", "bytes", "req/s", "p50 ms", "p99 ms", "bare/s", "p50 ms", "p99 ms", "ratio", "server p99", "cpu µs"
    );
    let runs: Vec<(&str, Vec<String>)> = vec![
        ("/api/v2/config/backend-version (no store read)", vec!["/api/v2/config/backend-version".into()]),
        ("/api/v2/blocks/:n", block_paths),
        ("/api/v2/transactions/:hash", tx_paths),
        ("/api/v2/addresses/:a", address_paths),
        ("/api/v2/addresses/:hot/transactions (first page of 50)", vec![history]),
        ("  ... pages of 50 at 1%..99% depth", deep_paths),
        ("/block/:n (page)", block_pages),
        ("/tx/:hash (page)", tx_pages),
        ("/address/:a (page)", address_pages),
    ];
    let measure = |addr: SocketAddr, paths: Arc<Vec<String>>| async move {
        // Warm-up: every sampled path once (the block cache sees the whole sample: on a store of 10M, a fixed
        // second left most of it cold and the first 3 s ran at half speed), then a second for connections and the
        // node's balance cache.
        load(addr, paths.clone(), connections, Until::EachPathOnce).await;
        load(addr, paths.clone(), connections, Until::Elapsed(Duration::from_secs(1))).await;
        let run = load(addr, paths, connections, Until::Elapsed(duration)).await;
        let server = (!run.server.is_empty()).then(|| percentile(&run.server, 99.0) / 1000.0);
        let (p50, p99) = (percentile(&run.latencies, 50.0) / 1000.0, percentile(&run.latencies, 99.0) / 1000.0);
        (run.rate, p50, p99, server, run.cpu_per_request)
    };
    // Against a growth store, the rows are also appended to its `rest_load.jsonl` for the growth plot.
    let mut rest_rows = dir
        .join(GROWTH_MARKER)
        .exists()
        .then(|| std::fs::OpenOptions::new().create(true).append(true).open(dir.join("rest_load.jsonl")).unwrap());
    for (label, paths) in runs.into_iter().filter(|(label, _)| label.contains(only.as_str())) {
        let body = client.block_on(fetch(rockscout_addr, &paths[0]));
        let bare_addr = server.block_on(bare_server(body.clone()));
        let (rate, p50, p99, server, cpu) = client.block_on(measure(rockscout_addr, Arc::new(paths)));
        let (bare, bare_p50, bare_p99, _, bare_cpu) = client.block_on(measure(bare_addr, Arc::new(vec!["/".into()])));
        let server = server.map(|ms| format!("{ms:.3}")).unwrap_or_else(|| "-".into());
        let cpu = format!("{cpu:.0} / {bare_cpu:.0}");
        println!(
            "{label:<54} {:>7} {rate:>9.0} {p50:>8.3} {p99:>8.3} {bare:>9.0} {bare_p50:>8.3} {bare_p99:>8.3} {:>6.2} {server:>10} {cpu:>13}",
            body.len(),
            rate / bare
        );
        if let Some(out) = rest_rows.as_mut() {
            let row = RestRow {
                txs: total,
                endpoint: label.to_string(),
                req_per_s: rate,
                p50_ms: p50,
                p99_ms: p99,
                bare_req_per_s: bare,
                ratio: rate / bare,
            };
            writeln!(out, "{}", serde_json::to_string(&row).unwrap()).unwrap();
        }
    }
    cancel.cancel();
}

/// One response body.
async fn fetch(addr: SocketAddr, path: &str) -> Bytes {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::get(path).header("host", "bench").body(Full::new(Bytes::new())).unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.into_body().collect().await.unwrap().to_bytes()
}

//! Catch-up from a node: a fresh anvil is filled with N blocks of transfers, then (a) a raw fetch baseline issues
//! the same block + receipts requests with the same concurrency and discards the answers, and (b) rockscout
//! indexes the same range into an empty data dir. Prints blocks/s, tx/s and the ratio (b)/(a).
//!
//!     cargo bench --bench catchup -- --blocks 200 --txs 200 [--concurrency 8] [--empty 2000]

mod common;

use alloy::providers::{Provider, RootProvider};
use common::{arg, figure, fill_transfers, start_anvil};
use futures_util::StreamExt;
use rockscout::Config;
use serde_json::value::RawValue;
use std::time::{Duration, Instant};

async fn raw_fetch(node: &RootProvider, head: u64, concurrency: usize) -> Duration {
    let started = Instant::now();
    let fetches = futures_util::stream::iter(0..=head)
        .map(|n| async move {
            let number = format!("{n:#x}");
            let block = node.raw_request::<_, Box<RawValue>>("eth_getBlockByNumber".into(), (&number, true));
            let receipts = node.raw_request::<_, Box<RawValue>>("eth_getBlockReceipts".into(), (&number,));
            let (block, receipts) = tokio::join!(block, receipts);
            (block.expect("block"), receipts.expect("receipts"))
        })
        .buffered(concurrency);
    fetches.for_each(|_| async {}).await;
    started.elapsed()
}

async fn index(url: &str, head: u64, concurrency: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(url, dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.indexer.fetch_concurrency = concurrency;
    config.indexer.poll_interval = Duration::from_millis(5);
    let started = Instant::now();
    let daemon = rockscout::Daemon::start(&config).await.unwrap();
    loop {
        if daemon.store().reader().tip().unwrap().is_some_and(|t| t.number == head) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();
    daemon.shutdown().await.unwrap();
    elapsed
}

fn main() {
    let blocks: u64 = arg("blocks", 200);
    let txs: usize = arg("txs", 200);
    let empty: u64 = arg("empty", 2000);
    let concurrency: usize = arg("concurrency", 8);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        for (label, n, per_block) in [("transfers", blocks, txs), ("empty blocks", empty, 0)] {
            let anvil = start_anvil();
            let node = RootProvider::new_http(anvil.http_url().parse().unwrap());
            let filled = Instant::now();
            let sent = fill_transfers(&node, &anvil.http_url(), &anvil.addresses(), n, per_block).await;
            let head = node.get_block_number().await.unwrap();
            println!(
                "\n{label}: {n} blocks x {per_block} tx = {sent} tx (generated in {:.1?}), concurrency {concurrency}",
                filled.elapsed()
            );
            let baseline = raw_fetch(&node, head, concurrency).await;
            let indexed = index(&anvil.http_url(), head, concurrency).await;
            let blocks_total = (head + 1) as f64;
            figure("raw fetch baseline blocks/s", blocks_total / baseline.as_secs_f64(), "blocks/s");
            figure("raw fetch baseline tx/s", sent as f64 / baseline.as_secs_f64(), "tx/s");
            figure("rockscout catch-up blocks/s", blocks_total / indexed.as_secs_f64(), "blocks/s");
            figure("rockscout catch-up tx/s", sent as f64 / indexed.as_secs_f64(), "tx/s");
            figure("ratio rockscout / baseline", baseline.as_secs_f64() / indexed.as_secs_f64(), "x");
        }
    });
}

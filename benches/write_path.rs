//! Write-path ceiling: synthetic blocks (`common::synth`, built in memory before the clock starts) are written to
//! an empty store through the follower's own write path (`apply::write_chunk`, in the follower's chunks: up to 256
//! blocks or 10,000 transactions), with no node in the loop. Prints transactions/s, the bytes of the write batches per
//! transaction, the bytes on disk per transaction after a full compaction and how far the resident set grew above
//! the blocks already in memory (and, by table, how much of the disk is data, index and filter blocks); then the same
//! near the head, where every block also writes undo data and is synced. `--zstd-dictionary off|transactions|all` opens
//! the store as the daemon's `--zstd-dictionary` does (its default: `transactions`).
//!
//!     cargo bench --bench write_path -- --blocks 1000 --txs 1000 [--erc20-every 4] [--fill-row-cache 0]
//!         [--zstd-dictionary transactions]
//!
//! `--fill-row-cache N` first has API views look up N transaction hashes the chain does not hold, so the row cache
//! is not empty and every commit pays for removing the keys it writes from it, as when the API is in use.

mod common;

use common::synth::{follower_chunks, Chain, Shape};
use common::{arg, figure, peak_rss, reset_peak_rss, rss, zstd_dictionary_arg};
use rockscout::indexer::apply::write_chunk;
use rockscout::indexer::IndexerConfig;
use rockscout::store::records::Bundle;
use rockscout::store::{Store, StoreOptions};
use std::time::Instant;

/// Writes `blocks` as the follower would: in chunks far behind the head, or one synced block at a time (with
/// undo data) at the head.
fn run(label: &str, blocks: &[Bundle], at_head: bool) {
    let config = IndexerConfig::default();
    let dir = tempfile::tempdir().unwrap();
    let zstd_dictionary = zstd_dictionary_arg();
    let store = Store::open(dir.path(), &StoreOptions { zstd_dictionary, ..StoreOptions::default() }).unwrap();
    fill_row_cache(&store, arg("fill-row-cache", 0u64));
    let txs: usize = blocks.iter().map(|b| b.txs.len()).sum();
    reset_peak_rss();
    let resident_before = rss();
    let started = Instant::now();
    let mut written = 0usize;
    if at_head {
        for block in blocks {
            written += write_chunk(&store, std::slice::from_ref(block), block.number(), config.undo_depth).unwrap();
        }
    } else {
        for range in follower_chunks(blocks, &config) {
            written += write_chunk(&store, &blocks[range], u64::MAX / 2, config.undo_depth).unwrap();
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let peak_growth = peak_rss().saturating_sub(resident_before);
    let compacting = Instant::now();
    store.compact().unwrap();
    let compacted_in = compacting.elapsed().as_secs_f64();
    let disk: u64 = store.disk_usage().unwrap().iter().map(|(_, bytes)| bytes).sum();
    let per_table: Vec<String> = store
        .disk_usage()
        .unwrap()
        .iter()
        .filter(|(_, bytes)| *bytes * 100 >= disk)
        .map(|(name, bytes)| format!("{name} {:.0}", *bytes as f64 / txs as f64))
        .collect();
    println!("\n{label}: {} blocks, {txs} transactions", blocks.len());
    figure("write path tx/s", txs as f64 / elapsed, "tx/s");
    figure("write path blocks/s", blocks.len() as f64 / elapsed, "blocks/s");
    figure("batch bytes written per tx", written as f64 / txs as f64, "B/tx");
    figure("disk bytes per tx after compaction", disk as f64 / txs as f64, "B/tx");
    figure("full compaction afterwards", compacted_in, "s");
    figure("peak RSS above the pre-built blocks", peak_growth as f64 / (1 << 20) as f64, "MiB");
    println!("  by table (B/tx): {}", per_table.join(", "));
    let per_tx = |bytes: u64| bytes as f64 / txs as f64;
    for (name, parts) in store.sst_parts().unwrap().iter().filter(|(_, p)| (p.data + p.index + p.filter) * 20 >= disk) {
        println!(
            "    {name}: data {:.1}, index {:.1}, filter {:.1} B/tx; {:.2} rows/tx",
            per_tx(parts.data),
            per_tx(parts.index),
            per_tx(parts.filter),
            per_tx(parts.entries)
        );
    }
    let cache = store.disk_figures().unwrap().row_cache_bytes;
    println!("  row cache after writing: {:.1} MiB", cache as f64 / (1 << 20) as f64);
}

/// Caches `count` absent transaction hash prefixes (0xee, then a counter: not hashes the chain holds).
fn fill_row_cache(store: &Store, count: u64) {
    for i in 0..count {
        let mut hash = [0xeeu8; 32];
        hash[..8].copy_from_slice(&(i | 0xee << 56).to_be_bytes());
        assert_eq!(store.view().tx(hash.into()).unwrap(), None);
    }
}

fn main() {
    let blocks: u64 = arg("blocks", 1000);
    let txs: usize = arg("txs", 1000);
    let erc20_every: usize = arg("erc20-every", 4);
    let generated = Instant::now();
    let transfers: Vec<Bundle> =
        Chain::new(Shape { txs_per_block: txs, erc20_every: 0, hot_every: 0, hot_tail: 0 }, 0, blocks).collect();
    let mixed: Vec<Bundle> =
        Chain::new(Shape { txs_per_block: txs, erc20_every, hot_every: 0, hot_tail: 0 }, 0, blocks).collect();
    println!("generated 2 x {blocks} blocks of {txs} transactions in memory in {:.1?}", generated.elapsed());
    run("ether transfers, catching up (chunks, no undo, WAL not synced)", &transfers, false);
    run(&format!("1 in {erc20_every} an ERC-20 transfer, catching up"), &mixed, false);
    let near = (blocks / 10).max(1) as usize;
    run("ether transfers at the head (one block per batch, undo, WAL synced)", &transfers[..near], true);
}

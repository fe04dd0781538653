//! Growth: how the write path, the disk and the memory behave as the store grows to 100M transactions. A generator
//! thread streams synthetic blocks (`common::synth`: ether transfers, 1 in 4 an ERC-20 transfer with its log, one
//! hot address and a long tail of busy senders) in the follower's catch-up chunks through a bounded channel; the
//! writer commits them with `indexer::apply::write_chunk` exactly as the follower does far behind the head. Per
//! segment it prints tx/s, how long the writer waited for the generator, the longest `write_chunk` call, RocksDB's
//! own write amplification, compaction debt and stall time (its statistics and properties), live SST bytes per
//! transaction and the resident set. Each row is also written as one JSON line (`--out`). At the end the store is
//! compacted fully (unless `--compact false`) and the bytes per transaction are printed by table.
//!
//!     cargo bench --bench growth -- --total 100000000 --segment 10000000 [--txs 1000] [--erc20-every 4]
//!         [--hot-every 10] [--hot-tail 12] [--store DIR (kept; default a temporary dir)] [--out FILE
//!         (default STORE/growth.jsonl)] [--compact true] [--chunk-txs N (most transactions in one chunk; the
//!         follower's default)] [--cache-mb N (the block cache; the daemon's default)] [--memtable-mb N (the
//!         memtables' budget; the daemon's default)] [--zstd-dictionary transactions (the
//!         daemon's --zstd-dictionary: off, transactions or all)] [--deadline-minutes M
//!         (stop after the last segment that can end within M minutes of the start)] [--resume true (continue a
//!         kept store of the same shape from its tip, at the end of the last row of --out or inside the segment
//!         after it; the rows go on from that row, whose cumulative counters and clock they add to)]
//!
//! `--lookups N --store DIR [--cache-mb N]` writes nothing either: against a store this bench wrote, it times the
//! write path's prior-value reads of `accounts` (N addresses the store holds, N it does not, as a new recipient
//! is), one `get` at a time and in one `multi_get`, in alternating rounds.
//!
//! `--plot ROWS.jsonl [--rest REST.jsonl] [--svg docs/growth.svg]` writes no store: it draws the rows of an
//! earlier run (and `rest_load`'s rows against its store) as an SVG and prints them as a markdown table.

mod common;

use common::growth_plot::{self, SegmentRow, GROWTH_MARKER};
use common::synth::{self, Chain, Shape};
use common::{arg, peak_rss, reset_peak_rss, rss, zstd_dictionary_arg};
use rockscout::indexer::apply::write_chunk;
use rockscout::indexer::IndexerConfig;
use rockscout::store::records::Bundle;
use rockscout::store::{tables, Store, StoreOptions};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// RocksDB's statistics tickers (`rocksdb.options-statistics`: lines `name COUNT : value`).
fn tickers(store: &Store) -> HashMap<String, u64> {
    let text = store.rocksdb_property("rocksdb.options-statistics").unwrap().unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [name, "COUNT", ":", value] => Some((name.to_string(), value.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// The tickers the rows use, as a snapshot to take differences of.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    user_bytes: u64,
    wal_bytes: u64,
    flush_bytes: u64,
    compact_write_bytes: u64,
    compact_read_bytes: u64,
    stall_micros: u64,
}

impl Counters {
    fn read(store: &Store) -> Counters {
        let t = tickers(store);
        let get = |name: &str| t.get(name).copied().unwrap_or(0);
        Counters {
            user_bytes: get("rocksdb.bytes.written"),
            wal_bytes: get("rocksdb.wal.bytes"),
            flush_bytes: get("rocksdb.flush.write.bytes"),
            compact_write_bytes: get("rocksdb.compact.write.bytes"),
            compact_read_bytes: get("rocksdb.compact.read.bytes"),
            stall_micros: get("rocksdb.stall.micros"),
        }
    }

    /// Bytes RocksDB wrote to SST files (flushes and compactions) per byte the batches carried.
    fn write_amplification(&self) -> f64 {
        (self.flush_bytes + self.compact_write_bytes) as f64 / self.user_bytes.max(1) as f64
    }

    /// The cumulative counters an earlier run's last row recorded (RocksDB's statistics restart with the process).
    fn of_row(row: &SegmentRow) -> Counters {
        Counters {
            user_bytes: row.user_bytes,
            wal_bytes: row.wal_bytes,
            flush_bytes: row.flush_bytes,
            compact_write_bytes: row.compact_write_bytes,
            compact_read_bytes: row.compact_read_bytes,
            stall_micros: 0,
        }
    }

    fn plus(&self, other: &Counters) -> Counters {
        Counters {
            user_bytes: self.user_bytes + other.user_bytes,
            wal_bytes: self.wal_bytes + other.wal_bytes,
            flush_bytes: self.flush_bytes + other.flush_bytes,
            compact_write_bytes: self.compact_write_bytes + other.compact_write_bytes,
            compact_read_bytes: self.compact_read_bytes + other.compact_read_bytes,
            stall_micros: self.stall_micros + other.stall_micros,
        }
    }

    fn minus(&self, earlier: &Counters) -> Counters {
        Counters {
            user_bytes: self.user_bytes - earlier.user_bytes,
            wal_bytes: self.wal_bytes - earlier.wal_bytes,
            flush_bytes: self.flush_bytes - earlier.flush_bytes,
            compact_write_bytes: self.compact_write_bytes - earlier.compact_write_bytes,
            compact_read_bytes: self.compact_read_bytes - earlier.compact_read_bytes,
            stall_micros: self.stall_micros - earlier.stall_micros,
        }
    }
}

/// The generator: `shape`'s chain from block `from` up to `blocks`, cut as the follower cuts chunks while catching up
/// (`chunk_blocks` blocks or `chunk_txs` transactions at most) and never across a segment boundary, sent through a
/// channel of `depth` chunks. Returns the receiving end and how long generation took in all (from the thread).
fn generate(
    shape: Shape,
    from: u64,
    blocks: u64,
    blocks_per_segment: u64,
    config: &IndexerConfig,
    depth: usize,
) -> (mpsc::Receiver<Vec<Bundle>>, std::thread::JoinHandle<Duration>) {
    let (sender, receiver) = mpsc::sync_channel(depth);
    let (chunk_blocks, chunk_txs) = (config.chunk_blocks, config.chunk_txs);
    let thread = std::thread::spawn(move || {
        let mut busy = Duration::ZERO;
        let mut started = Instant::now();
        let mut chunk: Vec<Bundle> = Vec::new();
        let mut txs = 0;
        for block in Chain::new(shape, from, blocks - from) {
            let segment_starts = block.number() % blocks_per_segment == 0;
            if !chunk.is_empty() && (segment_starts || chunk.len() == chunk_blocks || txs + block.txs.len() > chunk_txs)
            {
                busy += started.elapsed();
                if sender.send(std::mem::take(&mut chunk)).is_err() {
                    return busy;
                }
                started = Instant::now();
                txs = 0;
            }
            txs += block.txs.len();
            chunk.push(block);
        }
        busy += started.elapsed();
        let _ = sender.send(chunk);
        busy
    });
    (receiver, thread)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// `--lookups`: µs per `accounts` read of addresses the store holds (earlier recipients) and of new ones.
fn time_lookups(dir: &Path, n: usize) {
    assert!(dir.join(GROWTH_MARKER).exists(), "--lookups reads a store this bench wrote (--store DIR)");
    let cache_bytes = arg("cache-mb", StoreOptions::default().cache_bytes >> 20) << 20;
    let store = Store::open(dir, &StoreOptions { read_only: true, cache_bytes, ..Default::default() }).unwrap();
    let reader = store.reader();
    let txs = reader.counters().unwrap().txs;
    println!("{txs} transactions; {n} addresses per round; block cache {} MiB", cache_bytes >> 20);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..8 {
        let held = round < 4;
        let keys: Vec<_> = (0..n)
            .map(|_| match held {
                true => synth::recipient(1 + next() % txs),
                false => synth::recipient(txs + 1 + next() % (1 << 40)),
            })
            .collect();
        let one_by_one = round % 2 == 0;
        let started = Instant::now();
        let found = match one_by_one {
            true => keys.iter().filter(|k| reader.get::<tables::Accounts>(k).unwrap().is_some()).count(),
            false => reader.multi_get::<tables::Accounts>(&keys).unwrap().iter().flatten().count(),
        };
        let took = started.elapsed();
        let expected = if held { n } else { 0 };
        assert_eq!(found, expected, "the store holds every earlier recipient and no new one");
        println!(
            "{:<8} {:<10} {:>8.2} µs per address",
            if held { "held" } else { "new" },
            if one_by_one { "get" } else { "multi_get" },
            took.as_secs_f64() * 1e6 / n as f64
        );
    }
}

fn main() {
    let plot: String = arg("plot", String::new());
    if !plot.is_empty() {
        let rest: String = arg("rest", String::new());
        let svg: String = arg("svg", "docs/growth.svg".to_string());
        growth_plot::render(Path::new(&plot), (!rest.is_empty()).then(|| Path::new(&rest)), Path::new(&svg));
        return;
    }
    let lookups: usize = arg("lookups", 0);
    if lookups > 0 {
        time_lookups(Path::new(&arg("store", String::new())), lookups);
        return;
    }
    let total: u64 = arg("total", 2_000_000);
    let segment: u64 = arg("segment", 500_000);
    let txs_per_block: usize = arg("txs", 1000);
    let shape = Shape {
        txs_per_block,
        erc20_every: arg("erc20-every", 4),
        hot_every: arg("hot-every", 10),
        hot_tail: arg("hot-tail", 12),
    };
    let compact_at_end: bool = arg("compact", true);
    let deadline_minutes: f64 = arg("deadline-minutes", f64::INFINITY);
    let resume: bool = arg("resume", false);
    assert!(
        segment.is_multiple_of(txs_per_block as u64) && total.is_multiple_of(segment),
        "--segment must be a multiple of --txs and --total a multiple of --segment"
    );
    let kept: String = arg("store", String::new());
    let temp = tempfile::tempdir().unwrap();
    let dir: PathBuf = if kept.is_empty() { temp.path().to_path_buf() } else { kept.into() };
    std::fs::create_dir_all(&dir).unwrap();
    let marker = format!("{shape:?}\n");
    if resume {
        let kept_shape = std::fs::read_to_string(dir.join(GROWTH_MARKER)).unwrap_or_default();
        assert_eq!(kept_shape, marker, "--resume continues a growth store of the same shape");
    } else {
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_none(),
            "{} is not empty: the growth bench writes a new store (or continues it with --resume true)",
            dir.display()
        );
    }
    let out_path: PathBuf = match arg("out", String::new()) {
        path if path.is_empty() => dir.join("growth.jsonl"),
        path => path.into(),
    };
    let defaults = StoreOptions::default();
    let cache_bytes = arg("cache-mb", defaults.cache_bytes >> 20) << 20;
    let memtable_bytes = arg("memtable-mb", defaults.memtable_bytes >> 20) << 20;
    let zstd_dictionary = zstd_dictionary_arg();
    let store =
        Store::open(&dir, &StoreOptions { statistics: true, cache_bytes, memtable_bytes, zstd_dictionary, ..defaults })
            .unwrap();
    std::fs::write(dir.join(GROWTH_MARKER), &marker).unwrap();
    let config =
        IndexerConfig { chunk_txs: arg("chunk-txs", IndexerConfig::default().chunk_txs), ..Default::default() };
    let blocks = total / txs_per_block as u64;
    let blocks_per_segment = segment / txs_per_block as u64;
    // A resumed run starts after the store's tip: at the end of a segment an earlier run recorded, or inside the
    // next one when that run was stopped before the segment ended.
    let tip = if resume { store.reader().tip().unwrap() } else { None };
    let first_block = tip.as_ref().map_or(0, |t| t.number + 1);
    let first_tx = first_block * txs_per_block as u64;
    // The continued chain must hang off the stored one (same shape, nothing else written to the store since).
    let mut expected_parent = tip.map(|t| t.hash);
    let earlier: Option<SegmentRow> = resume
        .then(|| growth_plot::read_rows::<SegmentRow>(&out_path).into_iter().last())
        .flatten()
        .filter(|row| (row.txs..row.txs + segment).contains(&first_tx));
    assert!(
        first_block == 0 || earlier.is_some(),
        "--resume: the store's tip (block {first_block}) is not within the segment after the last row of {}",
        out_path.display()
    );
    let unrecorded = earlier.as_ref().map_or(0, |row| first_tx - row.txs);
    if unrecorded > 0 {
        println!(
            "--resume: {unrecorded} transactions past the last row were written by a run stopped mid-segment; that \
             segment's tx/s counts this run's writes only, and RocksDB's counters and the clock miss that run's"
        );
    }
    let base = earlier.as_ref().map(Counters::of_row).unwrap_or_default();
    let base_elapsed = earlier.as_ref().map_or(0.0, |row| row.elapsed_s);
    let mut out =
        std::fs::OpenOptions::new().create(true).append(resume).write(true).truncate(!resume).open(&out_path).unwrap();
    println!(
        "growth: {total} transactions in blocks of {txs_per_block}, segments of {segment}; {shape:?}; store {}; rows \
         to {}",
        dir.display(),
        out_path.display()
    );
    println!(
        "{:>7} {:>8} {:>8} {:>6} {:>9} {:>6} {:>6} {:>9} {:>9} {:>9} {:>8} {:>7} {:>7}",
        "Mtx",
        "tx/s",
        "writer",
        "wait%",
        "max ms",
        "WA seg",
        "WA",
        "stall ms",
        "pend MiB",
        "delay/s",
        "live B/tx",
        "RSS MiB",
        "peak"
    );
    reset_peak_rss();
    let started = Instant::now();
    // One chunk queued: the generator is ~15 times faster than the writer, so a deeper queue only adds the bench's
    // own memory to the RSS it reports (four queued chunks cost 20-50 MiB of peak RSS, docs/benchmarks.md section 6).
    let (chunks, generator) = generate(shape, first_block, blocks, blocks_per_segment, &config, 1);
    let mut written_txs = first_tx;
    // Written by this run in the current segment (less than a segment only in the first one of a resumed run).
    let mut segment_txs = 0;
    let mut segment_started = Instant::now();
    let mut segment_waited = Duration::ZERO;
    let mut segment_writing = Duration::ZERO;
    let mut longest_chunk = Duration::ZERO;
    let mut before = Counters::read(&store).plus(&base);
    let mut rows: Vec<SegmentRow> = Vec::new();
    loop {
        let waiting = Instant::now();
        let Ok(chunk) = chunks.recv() else { break };
        segment_waited += waiting.elapsed();
        if let (Some(parent), Some(first)) = (expected_parent.take(), chunk.first()) {
            assert_eq!(first.header.parent_hash, parent, "--resume: the generated chain does not continue the store's");
        }
        let chunk_txs: u64 = chunk.iter().map(|b| b.txs.len() as u64).sum();
        let last_block = chunk.last().map(|b| b.number()).unwrap_or_default();
        let writing = Instant::now();
        write_chunk(&store, &chunk, u64::MAX / 2, config.undo_depth).unwrap();
        let took = writing.elapsed();
        drop(chunk);
        segment_writing += took;
        longest_chunk = longest_chunk.max(took);
        written_txs += chunk_txs;
        segment_txs += chunk_txs;
        if (last_block + 1) % blocks_per_segment != 0 {
            continue;
        }
        let wall = segment_started.elapsed();
        let now = Counters::read(&store).plus(&base);
        let delta = now.minus(&before);
        let live = store.rocksdb_property_sum("rocksdb.live-sst-files-size").unwrap();
        let row = SegmentRow {
            txs: written_txs,
            tx_per_s: segment_txs as f64 / wall.as_secs_f64(),
            writer_tx_per_s: segment_txs as f64 / segment_writing.as_secs_f64(),
            waited_share: segment_waited.as_secs_f64() / wall.as_secs_f64(),
            longest_chunk_ms: longest_chunk.as_secs_f64() * 1e3,
            write_amp_segment: delta.write_amplification(),
            write_amp: now.write_amplification(),
            user_bytes: now.user_bytes,
            wal_bytes: now.wal_bytes,
            flush_bytes: now.flush_bytes,
            compact_write_bytes: now.compact_write_bytes,
            compact_read_bytes: now.compact_read_bytes,
            stall_ms_segment: delta.stall_micros as f64 / 1e3,
            pending_compaction_bytes: store.rocksdb_property_sum("rocksdb.estimate-pending-compaction-bytes").unwrap(),
            delayed_write_rate: store
                .rocksdb_property("rocksdb.actual-delayed-write-rate")
                .unwrap()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            live_sst_bytes: live,
            live_bytes_per_tx: live as f64 / written_txs as f64,
            rss_bytes: rss(),
            peak_rss_bytes: peak_rss(),
            memtable_bytes: store.rocksdb_property_sum("rocksdb.size-all-mem-tables").unwrap(),
            // Every table shares one cache and reports its usage: the sum counts it once per table.
            block_cache_bytes: store.rocksdb_property_sum("rocksdb.block-cache-usage").unwrap()
                / tables::ALL.len() as u64,
            table_readers_bytes: store.rocksdb_property_sum("rocksdb.estimate-table-readers-mem").unwrap(),
            elapsed_s: base_elapsed + started.elapsed().as_secs_f64(),
            load_average: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|l| l.split_whitespace().next()?.parse().ok())
                .unwrap_or(f64::NAN),
        };
        println!(
            "{:>7.1} {:>8.0} {:>8.0} {:>6.1} {:>9.0} {:>6.2} {:>6.2} {:>9.0} {:>9.0} {:>9} {:>8.1} {:>7.0} {:>7.0}   load {:.1}",
            row.txs as f64 / 1e6,
            row.tx_per_s,
            row.writer_tx_per_s,
            row.waited_share * 100.0,
            row.longest_chunk_ms,
            row.write_amp_segment,
            row.write_amp,
            row.stall_ms_segment,
            mib(row.pending_compaction_bytes),
            row.delayed_write_rate,
            row.live_bytes_per_tx,
            mib(row.rss_bytes),
            mib(row.peak_rss_bytes),
            row.load_average,
        );
        writeln!(out, "{}", serde_json::to_string(&row).unwrap()).unwrap();
        out.flush().unwrap();
        // Stop early if the next segment, at this one's speed, would end past the deadline.
        let projected = started.elapsed() + wall.mul_f64(segment as f64 / segment_txs.max(1) as f64);
        rows.push(row);
        if projected.as_secs_f64() > deadline_minutes * 60.0 && written_txs < total {
            println!("stopping at {written_txs} transactions: the next segment would end past --deadline-minutes");
            break;
        }
        before = now;
        segment_started = Instant::now();
        segment_waited = Duration::ZERO;
        segment_writing = Duration::ZERO;
        segment_txs = 0;
        longest_chunk = Duration::ZERO;
    }
    drop(chunks);
    let generation = generator.join().unwrap();
    println!(
        "\nwrote {written_txs} transactions in {:.1?}; the generator thread was busy {generation:.1?} of it",
        started.elapsed()
    );
    let by_table = |store: &Store| -> String {
        let usage = store.disk_usage().unwrap();
        let sum: u64 = usage.iter().map(|(_, b)| b).sum();
        usage
            .iter()
            .filter(|(_, bytes)| *bytes * 100 >= sum)
            .map(|(name, bytes)| format!("{name} {:.1}", *bytes as f64 / written_txs as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("live SST by table before compaction (B/tx): {}", by_table(&store));
    if compact_at_end {
        let compacting = Instant::now();
        store.compact().unwrap();
        let live = store.rocksdb_property_sum("rocksdb.live-sst-files-size").unwrap();
        println!(
            "after a full compaction ({:.1?}): {:.1} B/tx live SST; by table (B/tx): {}",
            compacting.elapsed(),
            live as f64 / written_txs as f64,
            by_table(&store)
        );
        let summary = serde_json::json!({"compacted_txs": written_txs, "compacted_bytes_per_tx": live as f64 / written_txs as f64});
        writeln!(out, "{summary}").unwrap();
    }
    growth_plot::print_table(&rows);
}

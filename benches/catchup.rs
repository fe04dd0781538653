//! Catch-up from a node: a fresh anvil is filled with N blocks, then (a) a raw fetch baseline issues the same
//! block + receipts requests with the same concurrency and discards the answers, and (b) rockscout indexes the
//! same range into an empty data dir. Prints blocks/s, tx/s and the ratio (b)/(a), the peak resident memory of
//! the process while it indexed, and the bytes on disk per transaction after a full compaction. Three workloads:
//! ether transfers, the same with every 4th transaction an ERC-20 transfer, and empty blocks. With `--cryo`,
//! (c) Paradigm's cryo (its PyPI package, installed by `scripts/setup` into `scripts/tools/venv`) extracts the
//! blocks, transactions and logs datasets of the same range with the same request concurrency, between (a) and
//! (b). For rockscout it also prints where the time went (the median run's `SyncReport`): the daemon's start, the
//! round trips before the first fetch, the fetching, the commit after the last block, the requests per block; and,
//! for the median raw fetch and catch-up, the CPU seconds the node's process and this one used (on shared cores,
//! what the indexer spends is taken from the node). With the native balance index on, rockscout's time is until
//! the block index reaches the head; the balance writer, which reads the balances of blocks caught up from far
//! behind afterwards, is timed until it passes the head too (the `balances complete` lines).
//!
//!     cargo bench --bench catchup -- --blocks 200 --txs 200 [--erc20-every 4] [--empty 2000] [--concurrency 8]
//!         [--cryo] [--fetch-batch 32 (most blocks per JSON-RPC batch; 1 = a request per block)]
//!         [--chunk-txs N (most transactions committed in one write batch; the follower's default)]
//!         [--repeat 3 (alternating runs of each; medians)] [--only TEXT (workloads whose label contains TEXT)]
//!         [--recipients N (cycle through N recipients instead of a fresh one per transfer; for long runs)]
//!         [--coin-balances false (index without the native balance index, to measure what it costs)]
//!         [--keep-states (anvil keeps every block's state instead of the last 16: needed for the balance index
//!         to read balances at past blocks during catch-up; memory grows with the chain)]

mod common;

use alloy::providers::{Provider, RootProvider};
use common::{
    arg, cpu_seconds, deploy_token, figure, fill_transfers, peak_rss, process_cpu_seconds, reset_peak_rss,
    start_anvil_with,
};
use futures_util::StreamExt;
use rockscout::indexer::SyncReport;
use rockscout::Config;
use serde_json::value::RawValue;
use std::path::PathBuf;
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

/// The Python of the project's tool venv, where `scripts/setup` installs cryo.
fn cryo_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/tools/venv/bin/python");
    let installed =
        std::process::Command::new(&python).args(["-c", "import cryo"]).output().is_ok_and(|out| out.status.success());
    assert!(
        installed,
        "cryo is not installed in {}: run scripts/setup (it installs cryo==0.3.2 from PyPI)",
        python.display()
    );
    python
}

/// Extracts blocks 0..=head (blocks, transactions and logs datasets, parquet) with cryo into a temporary dir, at
/// most `concurrency` requests in flight. Returns the time of cryo's own extraction, measured inside the Python
/// process (its interpreter start and import are left out, as rockscout's process start is).
fn cryo(python: &PathBuf, url: &str, head: u64, concurrency: usize) -> Duration {
    let out = tempfile::tempdir().unwrap();
    const SCRIPT: &str = "import sys, time, cryo\n\
        url, end, concurrency, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]\n\
        started = time.monotonic()\n\
        cryo.freeze(['blocks', 'transactions', 'logs'], start_block=0, end_block=end, rpc=url, \
        max_concurrent_requests=concurrency, output_dir=out, verbose=False)\n\
        print(time.monotonic() - started)\n";
    let run = std::process::Command::new(python)
        .args(["-c", SCRIPT, url, &(head + 1).to_string(), &concurrency.to_string()])
        .arg(out.path())
        .output()
        .expect("run cryo");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "cryo failed: {}{}", stdout, String::from_utf8_lossy(&run.stderr));
    let written: Vec<String> =
        std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for dataset in ["__blocks__", "__transactions__", "__logs__"] {
        assert!(written.iter().any(|name| name.contains(dataset)), "cryo wrote no {dataset} file: {written:?}");
    }
    Duration::from_secs_f64(stdout.trim().parse().expect("cryo's time"))
}

/// What one catch-up run measured.
struct Indexed {
    elapsed: Duration,
    /// How long `Daemon::start` took (opening the store, binding, spawning the tasks).
    daemon_start: Duration,
    /// From `Daemon::start` until every index, the native balances included, reached the head.
    complete: Duration,
    /// When the daemon was asked to start.
    began: Instant,
    /// The follower's account of the sync that reached the head.
    report: SyncReport,
    /// Peak resident set of this process while the daemon caught up (the node runs in its own process).
    peak_rss_bytes: u64,
    /// Bytes of the data dir's tables after a full compaction.
    disk_bytes: u64,
    /// CPU the node and this process (the daemon) used until the tip reached the head.
    cpu: Cpu,
}

/// CPU seconds the node's process and this one used during a phase.
#[derive(Debug, Clone, Copy)]
struct Cpu {
    node: f64,
    own: f64,
}

impl Cpu {
    /// Both processes' CPU seconds so far.
    fn now(node_pid: u32) -> Cpu {
        Cpu { node: process_cpu_seconds(node_pid), own: cpu_seconds() }
    }

    /// What both used since `start`.
    fn since(start: Cpu, node_pid: u32) -> Cpu {
        let now = Cpu::now(node_pid);
        Cpu { node: now.node - start.node, own: now.own - start.own }
    }

    /// Prints the split of a phase of `elapsed`, with `own` naming this process's part.
    fn print(&self, phase: &str, own: &str, elapsed: Duration) {
        figure(&format!("  {phase}: node CPU"), self.node, "s");
        figure(&format!("  {phase}: {own} CPU"), self.own, "s");
        figure(&format!("  {phase}: cores busy (node and {own})"), (self.node + self.own) / elapsed.as_secs_f64(), "");
        figure(&format!("  {phase}: {own}'s share of that CPU"), 100.0 * self.own / (self.node + self.own), "%");
    }
}

async fn index(
    url: &str,
    node_pid: u32,
    head: u64,
    concurrency: usize,
    fetch_batch: usize,
    chunk_txs: usize,
    coin_balances: bool,
) -> Indexed {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(url, dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.indexer.fetch_concurrency = concurrency;
    config.indexer.fetch_batch = fetch_batch;
    config.indexer.chunk_txs = chunk_txs;
    config.indexer.coin_balances = coin_balances;
    config.indexer.poll_interval = Duration::from_millis(5);
    reset_peak_rss();
    let cpu_start = Cpu::now(node_pid);
    let started = Instant::now();
    let daemon = rockscout::Daemon::start(&config).await.unwrap();
    let daemon_start = started.elapsed();
    loop {
        if daemon.store().reader().tip().unwrap().is_some_and(|t| t.number == head) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();
    let cpu = Cpu::since(cpu_start, node_pid);
    // The balance writer reads the balances of blocks caught up from far behind after them.
    while coin_balances && daemon.store().reader().balance_tip().unwrap().is_none_or(|t| t.number != head) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let complete = started.elapsed();
    let peak_rss_bytes = peak_rss();
    let report = loop {
        match daemon.status().last_sync {
            Some(report) if report.to == head => break report,
            _ => tokio::time::sleep(Duration::from_millis(2)).await,
        }
    };
    daemon.store().compact().unwrap();
    let disk_bytes = daemon.store().disk_usage().unwrap().iter().map(|(_, bytes)| bytes).sum();
    daemon.shutdown().await.unwrap();
    Indexed { elapsed, complete, daemon_start, began: started, report, peak_rss_bytes, disk_bytes, cpu }
}

fn main() {
    let blocks: u64 = arg("blocks", 200);
    let txs: usize = arg("txs", 200);
    let erc20_every: usize = arg("erc20-every", 4);
    let empty: u64 = arg("empty", 2000);
    let concurrency: usize = arg("concurrency", 8);
    let repeat: usize = arg("repeat", 3).max(1);
    let recipients: u64 = arg("recipients", 0);
    let only: String = arg("only", String::new());
    let coin_balances: bool = arg("coin-balances", true);
    let keep_states = std::env::args().any(|a| a == "--keep-states");
    let fetch_batch: usize = arg("fetch-batch", 32);
    let chunk_txs: usize = arg("chunk-txs", rockscout::indexer::IndexerConfig::default().chunk_txs);
    let cryo_python = std::env::args().any(|a| a == "--cryo").then(cryo_python);
    let workloads = [
        ("ether transfers".to_string(), blocks, txs, false),
        (format!("1 in {erc20_every} an ERC-20 transfer"), blocks, txs, true),
        ("empty blocks".to_string(), empty, 0, false),
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        for (label, n, per_block, with_token) in workloads.into_iter().filter(|w| w.0.contains(&only)) {
            // Blocks and receipts are all kept; only old states are dropped (anvil keeps one state per block in
            // memory otherwise: gigabytes for a million transactions).
            let anvil = start_anvil_with(if keep_states { &[] } else { &["--prune-history", "16"] });
            let node = RootProvider::new_http(anvil.http_url().parse().unwrap());
            let senders = anvil.addresses();
            let filled = Instant::now();
            let erc20 = match with_token {
                true => Some((deploy_token(&node, &senders).await, erc20_every)),
                false => None,
            };
            let sent = fill_transfers(&node, &anvil.http_url(), &senders, n, per_block, erc20, recipients).await;
            let head = node.get_block_number().await.unwrap();
            let all_txs = sent + if with_token { 1 + senders.len() as u64 } else { 0 };
            println!(
                "\n{label}: {n} blocks x {per_block} tx = {sent} tx (generated in {:.1?}), concurrency {concurrency}, \
                 median of {repeat} runs, native balance index {}",
                filled.elapsed(),
                if coin_balances { "on" } else { "off" }
            );
            // Alternating runs, medians reported: one short run of each is at the mercy of the other process on
            // the same two cores.
            let (mut baselines, mut cryos, mut runs) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..repeat {
                let cpu_start = Cpu::now(anvil.pid());
                let fetched = raw_fetch(&node, head, concurrency).await;
                baselines.push((fetched, Cpu::since(cpu_start, anvil.pid())));
                if let Some(python) = &cryo_python {
                    let url = anvil.http_url();
                    let python = python.clone();
                    cryos.push(
                        tokio::task::spawn_blocking(move || cryo(&python, &url, head, concurrency)).await.unwrap(),
                    );
                }
                runs.push(
                    index(&anvil.http_url(), anvil.pid(), head, concurrency, fetch_batch, chunk_txs, coin_balances)
                        .await,
                );
            }
            baselines.sort_by_key(|(elapsed, _)| *elapsed);
            cryos.sort();
            runs.sort_by_key(|run| run.elapsed);
            let (baseline, baseline_cpu) = baselines[repeat / 2];
            let peak_rss_bytes = runs.iter().map(|run| run.peak_rss_bytes).max().unwrap();
            let indexed = &runs[repeat / 2];
            let blocks_total = (head + 1) as f64;
            let seconds = indexed.elapsed.as_secs_f64();
            figure("raw fetch baseline blocks/s", blocks_total / baseline.as_secs_f64(), "blocks/s");
            figure("rockscout catch-up blocks/s", blocks_total / seconds, "blocks/s");
            if all_txs > 0 {
                figure("raw fetch baseline tx/s", all_txs as f64 / baseline.as_secs_f64(), "tx/s");
                figure("rockscout catch-up tx/s", all_txs as f64 / seconds, "tx/s");
            }
            figure("ratio rockscout / baseline", baseline.as_secs_f64() / seconds, "x");
            if coin_balances {
                let complete = indexed.complete.as_secs_f64();
                figure("  then the native balances complete after", complete - seconds, "s");
                figure("ratio rockscout with balances complete / baseline", baseline.as_secs_f64() / complete, "x");
            }
            if let Some(cryo) = cryos.get(repeat / 2) {
                figure("cryo blocks/s", blocks_total / cryo.as_secs_f64(), "blocks/s");
                if all_txs > 0 {
                    figure("cryo tx/s", all_txs as f64 / cryo.as_secs_f64(), "tx/s");
                }
                figure("ratio rockscout / cryo", cryo.as_secs_f64() / seconds, "x");
                figure("ratio cryo / baseline", baseline.as_secs_f64() / cryo.as_secs_f64(), "x");
            }
            breakdown(indexed, blocks_total);
            // Both tools are bound by the node on the same cores: what the indexer spends is taken from the node.
            baseline_cpu.print("raw fetch", "fetcher", baseline);
            indexed.cpu.print("catch-up", "rockscout", indexed.elapsed);
            figure("peak RSS while catching up (highest run)", peak_rss_bytes as f64 / (1 << 20) as f64, "MiB");
            if all_txs > 0 {
                figure("disk bytes per tx after compaction", indexed.disk_bytes as f64 / all_txs as f64, "B/tx");
            } else {
                figure("disk bytes per block after compaction", indexed.disk_bytes as f64 / blocks_total, "B/block");
            }
        }
    });
}

/// Where the median run's time went, from `Daemon::start` to the tip at the head.
fn breakdown(run: &Indexed, blocks: f64) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let report = &run.report;
    let since = |at: Option<Instant>| at.map(|at| at.saturating_duration_since(report.started)).unwrap_or_default();
    figure("  daemon start (store open, tasks)", ms(run.daemon_start), "ms");
    figure(
        "  then until the first fetch (identity, head)",
        ms(report.started.saturating_duration_since(run.began).saturating_sub(run.daemon_start)),
        "ms",
    );
    figure("  first fetch -> first block at the writer", ms(since(report.first_block)), "ms");
    figure("  first fetch -> last block at the writer", ms(since(report.last_block)), "ms");
    figure(
        "  last block -> last commit done",
        ms(report.finished.saturating_duration_since(report.last_block.unwrap_or(report.started))),
        "ms",
    );
    figure("  last commit", ms(report.last_commit), "ms");
    figure("  commits", report.commits as f64, "");
    figure("  time in commits (overlaps fetching)", ms(report.commit_time), "ms");
    figure("  fetch requests (HTTP, each a JSON-RPC batch)", report.requests as f64, "");
    figure("  fetch requests per block", report.requests as f64 / blocks, "");
}

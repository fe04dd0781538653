//! The indexer: follows the node's canonical chain into the store.
//!
//! One loop serves catch-up and live following: read the node's head, compare it with the stored tip, then
//! either fetch the missing range (several blocks in flight, committed strictly in order, in chunks), resolve a
//! fork (walk back to the common ancestor, revert newest first, re-apply), or wait for the next head. The tip moves
//! only inside the batch that writes its block, so a kill at any moment loses nothing and duplicates nothing.
//! When the store refuses a write (disk full), the follower pauses (see `pause`) and retries from the stored tip.

pub mod apply;
pub mod balances;
pub mod bundle;
pub mod contracts;
mod fetch;
pub mod metadata;
mod pause;
pub mod pending;
pub mod rows;
pub mod traces;

use crate::events::{ChainEvent, EventSender};
use crate::node::{Backoff, HeadSignal, Node, NodeError};
use crate::status::{Status, Writer};
use crate::store::keys::{BlockKey, MetaKey};
use crate::store::records::Bundle;
use crate::store::records::Meta;
use crate::store::tables::Headers;
use crate::store::{Durability, Store, StoreError};
use alloy::primitives::B256;
use apply::{revert_block, RevertError};
use fetch::{Fetched, Fetcher};
use pause::Pauser;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Blocks this far (or less) behind the node's head are live: the WebSocket publisher broadcasts them, and the
/// fetch task reads their native balances with them (older ones are catch-up; see `balances`).
pub const LIVE_WINDOW: u64 = 10;

/// What to do when the node's chain is not the indexed chain any more (new genesis, e.g. `anvil_reset`), or a
/// reorg reaches deeper than the kept undo data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ResetPolicy {
    /// Wipe the index in one atomic batch and index the node's chain from block 0.
    Reindex,
    /// Stop the daemon with an error that says what happened.
    Exit,
}

/// Indexer tuning.
#[derive(Debug, Clone)]
pub struct IndexerConfig {
    /// JSON-RPC batches of blocks in flight during catch-up.
    pub fetch_concurrency: usize,
    /// Most blocks in one JSON-RPC batch (fewer when blocks carry many transactions; see `fetch`).
    pub fetch_batch: usize,
    /// Most blocks committed in one batch.
    pub chunk_blocks: usize,
    /// Most transactions committed in one batch (a chunk closes once it reaches this). It bounds how long one write
    /// takes and the memory a chunk holds: 10,000 wrote at the rate of 20,000, with the longest write at 0.6–0.95 s
    /// instead of 1.0–1.15 s past 100M transactions and 45–60 MiB less peak memory (docs/benchmarks.md §6,
    /// "Smaller chunks").
    pub chunk_txs: usize,
    /// How often to ask for a new head when no WebSocket notification arrives.
    pub poll_interval: Duration,
    /// Blocks whose undo data is kept (the deepest reorg that can be reverted exactly).
    pub undo_depth: u64,
    /// Policy for a replaced chain or a too-deep reorg.
    pub on_reset: ResetPolicy,
    /// Fetch the native balance of every address a block names, after the block, while fetching the block.
    pub coin_balances: bool,
    /// How often the follow loop asks the node for its chain id and genesis again. A node restarted with another
    /// chain id on the same blocks (a state file loaded under a new id, or a fresh genesis that does not depend on
    /// the id) extends the indexed tip, so no fork shows it.
    pub identity_check: Duration,
}

impl Default for IndexerConfig {
    fn default() -> Self {
        IndexerConfig {
            fetch_concurrency: 8,
            fetch_batch: 32,
            chunk_blocks: 256,
            chunk_txs: 10_000,
            poll_interval: Duration::from_millis(250),
            undo_depth: 1024,
            on_reset: ResetPolicy::Exit,
            coin_balances: true,
            identity_check: Duration::from_secs(30),
        }
    }
}

/// Why the indexer stopped.
#[derive(Debug, thiserror::Error)]
pub enum IndexerError {
    /// The store failed; nothing can be indexed safely.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node now serves a different chain and the policy is `exit`.
    #[error(
        "the node serves another chain than the index holds ({reason}); restart with --on-reset=reindex to index \
         the new chain from scratch, or point --rpc-url at the original node"
    )]
    ChainReplaced {
        /// What differs.
        reason: String,
    },
    /// A background task failed.
    #[error("indexer task failed: {0}")]
    Task(String),
}

/// The follower. Cheap to clone into tasks.
#[derive(Debug, Clone)]
pub struct Indexer {
    store: Arc<Store>,
    node: Node,
    config: IndexerConfig,
    status: Arc<Status>,
    events: EventSender,
}

enum Step {
    Sync { from: u64, to: u64 },
    Fork,
    Idle,
}

enum SyncEnd {
    /// The range is indexed.
    Done,
    /// A fetched block does not extend the stored tip.
    Fork,
    /// The node no longer has a block of the range: look at the head again.
    Restart,
    /// Cancelled.
    Cancelled,
}

/// How one sync (the indexing of a range of blocks) spent its time: what the catch-up benchmark prints and the
/// follower logs at debug level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReport {
    /// First block of the range.
    pub from: u64,
    /// Last block of the range.
    pub to: u64,
    /// When the sync began; its fetch task starts at once.
    pub started: Instant,
    /// When the writer had the range's first block.
    pub first_block: Option<Instant>,
    /// When the writer had the range's last block: every fetch is over.
    pub last_block: Option<Instant>,
    /// When the last commit ended.
    pub finished: Instant,
    /// HTTP requests to the node (each a JSON-RPC batch), retries included.
    pub requests: u64,
    /// Batches of blocks asked for.
    pub batches: u64,
    /// Blocks committed.
    pub blocks: u64,
    /// Transactions committed.
    pub txs: u64,
    /// Commits (one write batch each).
    pub commits: u64,
    /// Time spent in commits, which overlap the fetching of later blocks.
    pub commit_time: Duration,
    /// The last commit's time.
    pub last_commit: Duration,
}

impl SyncReport {
    fn new(from: u64, to: u64) -> Self {
        let now = Instant::now();
        SyncReport {
            from,
            to,
            started: now,
            first_block: None,
            last_block: None,
            finished: now,
            requests: 0,
            batches: 0,
            blocks: 0,
            txs: 0,
            commits: 0,
            commit_time: Duration::ZERO,
            last_commit: Duration::ZERO,
        }
    }

    fn record_commit(&mut self, blocks: &[Bundle], took: Duration) {
        self.blocks += blocks.len() as u64;
        self.txs += blocks.iter().map(|b| b.txs.len() as u64).sum::<u64>();
        self.commits += 1;
        self.commit_time += took;
        self.last_commit = took;
    }
}

impl Indexer {
    /// A follower of `node` into `store`, reporting through `status` and `events`.
    pub fn new(store: Arc<Store>, node: Node, config: IndexerConfig, status: Arc<Status>, events: EventSender) -> Self {
        Indexer { store, node, config, status, events }
    }

    /// Follows the chain until `cancel` fires (`Ok`) or an unrecoverable error occurs. While the store refuses
    /// writes (disk full, I/O error) it pauses and retries from the stored tip, so a failed commit is neither lost
    /// nor applied twice.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), IndexerError> {
        let mut pauser = Pauser::new(self.status.clone(), Writer::Follower);
        loop {
            match self.start(&cancel).await {
                Ok(true) => break,
                Ok(false) => return Ok(()),
                Err(e) => {
                    if !self.pause(&mut pauser, e, &cancel).await? {
                        return Ok(());
                    }
                }
            }
        }
        let mut signal = self.node.head_signal(self.config.poll_interval, cancel.clone());
        loop {
            match self.follow(&mut signal, &cancel).await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    if !self.pause(&mut pauser, e, &cancel).await? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Waits out a store that refuses writes; any other error is returned. `Ok(false)` on cancellation.
    async fn pause(
        &self,
        pauser: &mut Pauser,
        error: IndexerError,
        cancel: &CancellationToken,
    ) -> Result<bool, IndexerError> {
        match error {
            IndexerError::Store(e) if e.is_io() => Ok(pauser.wait_after(&e, cancel).await),
            other => Err(other),
        }
    }

    /// Records a successful write.
    fn wrote(&self) {
        pause::resumed(&self.status, Writer::Follower);
    }

    /// Reads the stored tip and checks the node serves the indexed chain. `Ok(false)` on cancellation.
    async fn start(&self, cancel: &CancellationToken) -> Result<bool, IndexerError> {
        if let Some(tip) = self.store.reader().tip()? {
            self.status.set_indexed(Some(tip.number));
        }
        self.check_chain(cancel, true).await
    }

    /// The follow loop proper: returns `Ok` on cancellation, or the first error. Every pass starts from the tip
    /// the store holds.
    async fn follow(&self, signal: &mut HeadSignal, cancel: &CancellationToken) -> Result<(), IndexerError> {
        let mut identity_checked = Instant::now();
        loop {
            if identity_checked.elapsed() >= self.config.identity_check {
                identity_checked = Instant::now();
                if !self.check_chain(cancel, false).await? {
                    return Ok(());
                }
            }
            let Some(head) = self.ask("head", cancel, || self.node.head()).await else {
                return Ok(());
            };
            let head_number = head.number.to::<u64>();
            self.status.set_node_head(head_number);
            self.status.metrics().node_head(head.timestamp.to());
            let step = match self.store.reader().tip()? {
                None => Step::Sync { from: 0, to: head_number },
                Some(tip) if head_number < tip.number || (head_number == tip.number && head.hash != tip.hash) => {
                    Step::Fork
                }
                Some(tip) if head_number > tip.number => Step::Sync { from: tip.number + 1, to: head_number },
                Some(_) => Step::Idle,
            };
            match step {
                Step::Sync { from, to } => match self.sync(from, to, cancel).await? {
                    SyncEnd::Done => {}
                    SyncEnd::Fork => {
                        if !self.resolve_fork(cancel).await? {
                            return Ok(());
                        }
                    }
                    SyncEnd::Restart => tokio::select! {
                        _ = cancel.cancelled() => return Ok(()),
                        _ = signal.wait() => {}
                    },
                    SyncEnd::Cancelled => return Ok(()),
                },
                Step::Fork => {
                    if !self.resolve_fork(cancel).await? {
                        return Ok(());
                    }
                }
                Step::Idle => {
                    // At the node's head nothing waits to be written: no pause to report.
                    self.wrote();
                    tokio::select! {
                        _ = cancel.cancelled() => return Ok(()),
                        _ = signal.wait() => {}
                    }
                }
            }
        }
    }

    /// Calls the node until it answers, recording reachability; `None` on cancellation.
    async fn ask<T, F, Fut>(&self, what: &'static str, cancel: &CancellationToken, op: F) -> Option<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, NodeError>>,
    {
        ask(Some(&self.status), what, cancel, op).await
    }

    /// Compares the node's chain id and genesis hash with the stored ones (at start, then every
    /// `identity_check`); records them on first start. Returns `false` on cancellation.
    async fn check_chain(&self, cancel: &CancellationToken, at_start: bool) -> Result<bool, IndexerError> {
        let Some((chain_id, genesis)) = self.node_identity(cancel).await else {
            return Ok(false);
        };
        match self.store.reader().chain_identity()? {
            None => {
                self.write_identity(chain_id, genesis, false)?;
                tracing::info!(chain_id, %genesis, "indexing a new chain");
            }
            Some((id, hash)) if id == chain_id && hash == genesis => {
                if at_start {
                    tracing::info!(chain_id, %genesis, "resuming the indexed chain");
                }
            }
            Some((id, hash)) => {
                let reason =
                    format!("index: chain id {id}, genesis {hash}; node: chain id {chain_id}, genesis {genesis}");
                self.replace_chain(reason, chain_id, genesis)?;
            }
        }
        Ok(true)
    }

    async fn node_identity(&self, cancel: &CancellationToken) -> Option<(u64, B256)> {
        // Both at once: one round trip less before the first fetch.
        let chain_id = self.ask("chain id", cancel, || self.node.chain_id());
        let genesis = self.ask("genesis", cancel, || async {
            self.node.block_hash(0).await?.ok_or_else(|| NodeError::Invalid("node has no block 0".into()))
        });
        let (chain_id, genesis) = tokio::join!(chain_id, genesis);
        Some((chain_id?, genesis?))
    }

    fn write_identity(&self, chain_id: u64, genesis: B256, clear: bool) -> Result<(), StoreError> {
        let _writes = self.store.lock_writes();
        let mut batch = self.store.batch();
        if clear {
            batch.clear_index();
        }
        batch.put_meta(&Meta::ChainId(chain_id))?;
        batch.put_meta(&Meta::Genesis(genesis))?;
        self.store.write(batch, Durability::Sync)?;
        self.wrote();
        Ok(())
    }

    /// Applies the reset policy: wipe and start over, or stop with a clear error.
    fn replace_chain(&self, reason: String, chain_id: u64, genesis: B256) -> Result<(), IndexerError> {
        match self.config.on_reset {
            ResetPolicy::Exit => Err(IndexerError::ChainReplaced { reason }),
            ResetPolicy::Reindex => {
                tracing::warn!(%reason, "the node's chain was replaced: wiping the index and starting over");
                self.write_identity(chain_id, genesis, true)?;
                self.status.set_indexed(None);
                let _ = self.events.send(ChainEvent::Reset);
                Ok(())
            }
        }
    }

    /// Indexes `from..=to`, fetching concurrently and committing in order.
    async fn sync(&self, from: u64, to: u64, cancel: &CancellationToken) -> Result<SyncEnd, IndexerError> {
        let mut report = SyncReport::new(from, to);
        let end = self.sync_range(from, to, cancel, &mut report).await?;
        report.finished = Instant::now();
        if report.blocks > 1 {
            tracing::debug!(?report, "range indexed");
        }
        self.status.set_last_sync(report);
        Ok(end)
    }

    async fn sync_range(
        &self,
        from: u64,
        to: u64,
        cancel: &CancellationToken,
        report: &mut SyncReport,
    ) -> Result<SyncEnd, IndexerError> {
        let fetcher = Fetcher::new(
            self.node.clone(),
            self.status.clone(),
            self.config.fetch_concurrency,
            self.config.fetch_batch,
            self.config.coin_balances,
        );
        let counts = fetcher.counts.clone();
        // Room for a batch per batch in flight (fetching goes on during a commit), at most a chunk's worth.
        let room = (self.config.fetch_concurrency.max(1) * self.config.fetch_batch.max(1))
            .clamp(2, self.config.chunk_blocks.max(2));
        let (tx, mut rx) = mpsc::channel::<Fetched>(room);
        let fetch_cancel = cancel.child_token();
        let _stop_fetcher = fetch_cancel.clone().drop_guard();
        tokio::spawn(fetcher.run(from, to, tx, fetch_cancel));

        let mut parent = match from {
            0 => None,
            n => self.store.reader().get::<Headers>(&BlockKey(n - 1))?.map(|h| h.hash),
        };
        let mut progress = Progress::new(from, to);
        let end = loop {
            let first = tokio::select! {
                _ = cancel.cancelled() => break SyncEnd::Cancelled,
                item = rx.recv() => item,
            };
            let Some(first) = first else {
                break SyncEnd::Done;
            };
            report.first_block.get_or_insert_with(Instant::now);
            let mut chunk = Vec::new();
            let mut end = None;
            let mut next = Some(first);
            let mut txs = 0;
            while let Some(item) = next.take() {
                match item {
                    Fetched::Missing(n) => {
                        tracing::debug!(block = n, "node no longer has the block; re-reading the head");
                        end = Some(SyncEnd::Restart);
                    }
                    Fetched::Block(block) if parent.is_some_and(|p| p != block.header.parent_hash) => {
                        tracing::info!(block = block.number(), "block does not extend the indexed tip: reorg");
                        end = Some(SyncEnd::Fork);
                    }
                    Fetched::Block(block) => {
                        parent = Some(block.header.hash);
                        txs += block.txs.len();
                        if block.number() == to {
                            report.last_block = Some(Instant::now());
                        }
                        chunk.push(*block);
                        if chunk.len() < self.config.chunk_blocks && txs < self.config.chunk_txs {
                            next = rx.try_recv().ok();
                        }
                    }
                }
            }
            if !chunk.is_empty() {
                let last = chunk.last().map(|b| b.number()).unwrap_or(from);
                let started = Instant::now();
                let blocks = self.commit(chunk, to).await?;
                report.record_commit(&blocks, started.elapsed());
                self.wrote();
                self.status.set_indexed(Some(last));
                progress.record(&blocks, to);
                if let Some(newest) = blocks.last() {
                    let txs = blocks.iter().map(|b| b.txs.len() as u64).sum();
                    self.status.metrics().indexed(blocks.len() as u64, txs, newest.number(), newest.header.timestamp);
                }
                for block in blocks {
                    let _ = self.events.send(ChainEvent::Applied(Arc::new(block)));
                }
            }
            if let Some(end) = end {
                break end;
            }
        };
        report.requests = counts.requests.load(Ordering::Relaxed);
        report.batches = counts.batches.load(Ordering::Relaxed);
        Ok(end)
    }

    /// Writes a chunk of consecutive blocks in one atomic batch (off the async threads).
    async fn commit(&self, chunk: Vec<Bundle>, head: u64) -> Result<Vec<Bundle>, IndexerError> {
        let store = self.store.clone();
        let undo_depth = self.config.undo_depth;
        let task = tokio::task::spawn_blocking(move || -> Result<Vec<Bundle>, StoreError> {
            apply::write_chunk(&store, &chunk, head, undo_depth)?;
            Ok(chunk)
        });
        task.await.map_err(|e| IndexerError::Task(e.to_string()))?.map_err(Into::into)
    }

    /// Walks back to the last block the node and the index agree on and reverts everything above it, newest
    /// first. A node that now serves another chain (new chain id or genesis) gets the reset policy instead.
    /// Returns `false` on cancellation.
    async fn resolve_fork(&self, cancel: &CancellationToken) -> Result<bool, IndexerError> {
        let Some(tip) = self.store.reader().tip()? else {
            return Ok(true);
        };
        // A reset node (e.g. `anvil_reset`) may keep block 0 and change its chain id: check the identity first.
        let Some((chain_id, genesis)) = self.node_identity(cancel).await else {
            return Ok(false);
        };
        if let Some((id, hash)) = self.store.reader().chain_identity()? {
            if id != chain_id || hash != genesis {
                let reason =
                    format!("index: chain id {id}, genesis {hash}; node: chain id {chain_id}, genesis {genesis}");
                self.replace_chain(reason, chain_id, genesis)?;
                return Ok(true);
            }
        }
        let Some(head) = self.ask("head", cancel, || self.node.head()).await else {
            return Ok(false);
        };
        let mut n = tip.number.min(head.number.to());
        let ancestor = loop {
            let stored = self.store.reader().get::<Headers>(&BlockKey(n))?.map(|h| h.hash);
            let Some(canonical) = self.ask("block hash", cancel, || self.node.block_hash(n)).await else {
                return Ok(false);
            };
            if stored.is_some() && stored == canonical {
                break n;
            }
            if n == 0 {
                // Block 0 passed the identity check above: the walk ends here at the latest.
                break 0;
            }
            n -= 1;
        };
        // Checked before anything is reverted: a revert that stopped halfway would leave the index on the replaced
        // branch, below its tip.
        if let Some(missing) = apply::first_without_undo(&self.store.reader(), ancestor + 1..=tip.number)? {
            let reason = format!(
                "a reorg of {} blocks reaches block {}, but block {missing} has no undo data (it is kept for blocks \
                 written within --undo-depth, now {}, of the node's head: not for blocks written while catching up, \
                 nor past a smaller --undo-depth of an earlier run)",
                tip.number - ancestor,
                ancestor + 1,
                self.config.undo_depth
            );
            self.replace_chain(reason, chain_id, genesis)?;
            return Ok(true);
        }
        tracing::warn!(
            tip = tip.number,
            ancestor,
            depth = tip.number - ancestor,
            "reorg: reverting to the common ancestor"
        );
        for number in (ancestor + 1..=tip.number).rev() {
            match self.revert(number).await? {
                Ok(hash) => {
                    self.wrote();
                    self.status.set_indexed(number.checked_sub(1));
                    let _ = self.events.send(ChainEvent::Reverted { number, hash });
                }
                Err(RevertError::NoUndo(_)) => {
                    let reason = format!(
                        "a reorg reaches block {}, deeper than the {} blocks of kept undo data",
                        ancestor + 1,
                        self.config.undo_depth
                    );
                    self.replace_chain(reason, chain_id, genesis)?;
                    return Ok(true);
                }
                Err(RevertError::Store(e)) => return Err(e.into()),
            }
        }
        if tip.number > ancestor {
            self.status.metrics().reorg(tip.number - ancestor);
        }
        Ok(true)
    }

    /// Reverts the stored tip block `number` in one batch; returns its hash.
    async fn revert(&self, number: u64) -> Result<Result<B256, RevertError>, IndexerError> {
        let store = self.store.clone();
        let task = tokio::task::spawn_blocking(move || -> Result<B256, RevertError> {
            // Locked: no late-row writer (traces, balances, code) may commit rows of this block while it is reverted.
            let _writes = store.lock_writes();
            let reader = store.reader();
            let block = reader
                .load_block(number)?
                .ok_or_else(|| StoreError::Inconsistent(format!("tip block {number} is not stored")))?;
            let mut batch = store.batch();
            revert_block(&mut batch, &reader, &block)?;
            traces::revert_traces(&mut batch, &reader, &block)?;
            batch.lower_tip_below(&reader, MetaKey::BalanceTip, number, block.header.parent_hash)?;
            store.write(batch, Durability::Sync)?;
            Ok(block.header.hash)
        });
        task.await.map_err(|e| IndexerError::Task(e.to_string()))
    }
}

/// Calls the node until it answers, recording reachability in `status` when given (the follower's requests; a
/// background writer's failures say nothing about the follower's node); `None` on cancellation. Failures are
/// logged and retried with capped exponential backoff.
async fn ask<T, F, Fut>(status: Option<&Status>, what: &'static str, cancel: &CancellationToken, mut op: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, NodeError>>,
{
    let mut backoff = Backoff::new();
    loop {
        let result = tokio::select! {
            _ = cancel.cancelled() => return None,
            r = op() => r,
        };
        match result {
            Ok(value) => {
                status.inspect(|s| s.set_node_ok());
                return Some(value);
            }
            Err(e) => {
                let delay = backoff.next_delay();
                tracing::warn!(what, error = %e, retry_in = ?delay, "node request failed");
                status.inspect(|s| s.set_node_error(e.to_string()));
                tokio::select! {
                    _ = cancel.cancelled() => return None,
                    _ = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
}

/// The catch-up progress line.
struct Progress {
    started: Instant,
    last_log: Instant,
    blocks: u64,
    txs: u64,
    total: u64,
}

impl Progress {
    const EVERY: Duration = Duration::from_secs(5);

    fn new(from: u64, to: u64) -> Self {
        let now = Instant::now();
        Progress { started: now, last_log: now, blocks: 0, txs: 0, total: to - from + 1 }
    }

    fn record(&mut self, chunk: &[Bundle], head: u64) {
        self.blocks += chunk.len() as u64;
        self.txs += chunk.iter().map(|b| b.txs.len() as u64).sum::<u64>();
        if self.last_log.elapsed() < Self::EVERY || self.total < 2 {
            return;
        }
        self.last_log = Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let (bps, tps) = (self.blocks as f64 / secs, self.txs as f64 / secs);
        let indexed = chunk.last().map(|b| b.number()).unwrap_or_default();
        let lag = head.saturating_sub(indexed);
        let eta = if bps > 0.0 { Duration::from_secs_f64(lag as f64 / bps) } else { Duration::ZERO };
        tracing::info!(
            block = indexed,
            head,
            lag,
            blocks_per_s = format!("{bps:.1}"),
            tx_per_s = format!("{tps:.0}"),
            eta = format!("{}s", eta.as_secs()),
            "catching up"
        );
    }
}

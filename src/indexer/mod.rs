//! The indexer: follows the node's canonical chain into the store.
//!
//! One loop serves catch-up and live following: read the node's head, compare it with the stored tip, then
//! either fetch the missing range (several blocks in flight, committed strictly in order, in chunks), resolve a
//! fork (walk back to the common ancestor, revert newest first, re-apply), or wait for the next head. The tip moves
//! only inside the batch that writes its block, so a kill at any moment loses nothing and duplicates nothing.
//! When the store refuses a write (disk full), the follower pauses (see `pause`) and retries from the stored tip.

pub mod apply;
pub mod bundle;
pub mod contracts;
pub mod metadata;
mod pause;
pub mod pending;
pub mod rows;
pub mod traces;

use crate::events::{ChainEvent, EventSender};
use crate::node::{Backoff, HeadSignal, Node, NodeError};
use crate::status::{Status, Writer};
use crate::store::keys::BlockKey;
use crate::store::records::Bundle;
use crate::store::records::Meta;
use crate::store::tables::Headers;
use crate::store::{Durability, Store, StoreError};
use alloy::primitives::{Address, B256, U256};
use apply::{revert_block, RevertError};
use futures_util::StreamExt;
use pause::Pauser;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
    /// Blocks fetched concurrently during catch-up.
    pub fetch_concurrency: usize,
    /// Most blocks committed in one batch.
    pub chunk_blocks: usize,
    /// Most transactions committed in one batch (a chunk closes once it reaches this).
    pub chunk_txs: usize,
    /// How often to ask for a new head when no WebSocket notification arrives.
    pub poll_interval: Duration,
    /// Blocks whose undo data is kept (the deepest reorg that can be reverted exactly).
    pub undo_depth: u64,
    /// Policy for a replaced chain or a too-deep reorg.
    pub on_reset: ResetPolicy,
    /// Fetch the native balance of every address a block names, after the block, while fetching the block.
    pub coin_balances: bool,
}

impl Default for IndexerConfig {
    fn default() -> Self {
        IndexerConfig {
            fetch_concurrency: 8,
            chunk_blocks: 256,
            chunk_txs: 20_000,
            poll_interval: Duration::from_millis(250),
            undo_depth: 1024,
            on_reset: ResetPolicy::Exit,
            coin_balances: true,
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

enum Fetched {
    Block(Box<Bundle>),
    Missing(u64),
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
        self.check_chain(cancel).await
    }

    /// The follow loop proper: returns `Ok` on cancellation, or the first error. Every pass starts from the tip
    /// the store holds.
    async fn follow(&self, signal: &mut HeadSignal, cancel: &CancellationToken) -> Result<(), IndexerError> {
        loop {
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
        ask(&self.status, what, cancel, op).await
    }

    /// Compares the node's chain id and genesis hash with the stored ones; records them on first start. Returns
    /// `false` on cancellation.
    async fn check_chain(&self, cancel: &CancellationToken) -> Result<bool, IndexerError> {
        let Some((chain_id, genesis)) = self.node_identity(cancel).await else {
            return Ok(false);
        };
        match self.store.reader().chain_identity()? {
            None => {
                self.write_identity(chain_id, genesis, false)?;
                tracing::info!(chain_id, %genesis, "indexing a new chain");
            }
            Some((id, hash)) if id == chain_id && hash == genesis => {
                tracing::info!(chain_id, %genesis, "resuming the indexed chain");
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
        let chain_id = self.ask("chain id", cancel, || self.node.chain_id()).await?;
        let genesis = self
            .ask("genesis", cancel, || async {
                self.node.block_hash(0).await?.ok_or_else(|| NodeError::Invalid("node has no block 0".into()))
            })
            .await?;
        Some((chain_id, genesis))
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
        let (tx, mut rx) = mpsc::channel::<Fetched>(self.config.fetch_concurrency * 2);
        let fetch_cancel = cancel.child_token();
        let _stop_fetcher = fetch_cancel.clone().drop_guard();
        let fetcher = Fetcher {
            node: self.node.clone(),
            status: self.status.clone(),
            concurrency: self.config.fetch_concurrency.max(1),
            coin_balances: self.config.coin_balances,
        };
        tokio::spawn(fetcher.run(from, to, tx, fetch_cancel));

        let mut parent = match from {
            0 => None,
            n => self.store.reader().get::<Headers>(&BlockKey(n - 1))?.map(|h| h.hash),
        };
        let mut progress = Progress::new(from, to);
        loop {
            let first = tokio::select! {
                _ = cancel.cancelled() => return Ok(SyncEnd::Cancelled),
                item = rx.recv() => item,
            };
            let Some(first) = first else {
                return Ok(SyncEnd::Done);
            };
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
                        chunk.push(*block);
                        if chunk.len() < self.config.chunk_blocks && txs < self.config.chunk_txs {
                            next = rx.try_recv().ok();
                        }
                    }
                }
            }
            if !chunk.is_empty() {
                let last = chunk.last().map(|b| b.number()).unwrap_or(from);
                let blocks = self.commit(chunk, to).await?;
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
                return Ok(end);
            }
        }
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
            // Locked: the trace pass must not commit traces of this block while it is being reverted.
            let _writes = store.lock_writes();
            let reader = store.reader();
            let block = reader
                .load_block(number)?
                .ok_or_else(|| StoreError::Inconsistent(format!("tip block {number} is not stored")))?;
            let mut batch = store.batch();
            revert_block(&mut batch, &reader, &block)?;
            traces::revert_traces(&mut batch, &reader, &block)?;
            store.write(batch, Durability::Sync)?;
            Ok(block.header.hash)
        });
        task.await.map_err(|e| IndexerError::Task(e.to_string()))
    }
}

/// Calls the node until it answers, recording reachability in `status`; `None` on cancellation. Failures are
/// logged and retried with capped exponential backoff.
async fn ask<T, F, Fut>(status: &Status, what: &'static str, cancel: &CancellationToken, mut op: F) -> Option<T>
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
                status.set_node_ok();
                return Some(value);
            }
            Err(e) => {
                let delay = backoff.next_delay();
                tracing::warn!(what, error = %e, retry_in = ?delay, "node request failed");
                status.set_node_error(e.to_string());
                tokio::select! {
                    _ = cancel.cancelled() => return None,
                    _ = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
}

/// The fetch task of a sync: only the node and the status, never the store, so it cannot outlive the store's
/// last real user.
struct Fetcher {
    node: Node,
    status: Arc<Status>,
    concurrency: usize,
    coin_balances: bool,
}

impl Fetcher {
    /// Fetches `from..=to` with `concurrency` requests in flight, delivering blocks in order. Stops after a
    /// missing block, on cancellation, or when the receiver is gone.
    async fn run(self, from: u64, to: u64, tx: mpsc::Sender<Fetched>, cancel: CancellationToken) {
        let fetches = futures_util::stream::iter(from..=to)
            .map(|n| {
                let cancel = cancel.clone();
                let this = &self;
                async move { this.block(n, &cancel).await }
            })
            .buffered(self.concurrency);
        let mut fetches = std::pin::pin!(fetches);
        loop {
            let item = tokio::select! {
                _ = cancel.cancelled() => return,
                item = fetches.next() => item,
            };
            let Some(Some(item)) = item else {
                return;
            };
            let stop = matches!(item, Fetched::Missing(_));
            if tx.send(item).await.is_err() || stop {
                return;
            }
        }
    }

    /// One block and its receipts; `None` on cancellation.
    async fn block(&self, number: u64, cancel: &CancellationToken) -> Option<Fetched> {
        let raw = ask(&self.status, "block", cancel, || self.node.bundle(number)).await?;
        let Some(raw) = raw else {
            return Some(Fetched::Missing(number));
        };
        match bundle::from_rpc(raw) {
            Ok(mut block) => {
                if self.coin_balances {
                    block.balances = self.balances(&block, cancel).await?;
                }
                Some(Fetched::Block(Box::new(block)))
            }
            Err(e) => {
                // Typically the chain moved between the block and receipts requests.
                tracing::warn!(error = %e, "inconsistent block from node");
                Some(Fetched::Missing(number))
            }
        }
    }

    /// The native balances after `block` of the addresses it names (miner, senders, recipients, created
    /// contracts), in batches at the block's hash. A node that refuses (state of old blocks pruned, the block
    /// replaced meanwhile) leaves the block without balances rather than stopping indexing; transport failures are
    /// retried like every node call. `None` on cancellation.
    async fn balances(&self, block: &Bundle, cancel: &CancellationToken) -> Option<Vec<(Address, U256)>> {
        let addresses: Vec<Address> = crate::chain::balance_addresses(block).into_iter().collect();
        let hash = block.header.hash;
        let answer = ask(&self.status, "balances", cancel, || async {
            match self.node.balances_after(&addresses, hash).await {
                Ok(values) => Ok(Some(values)),
                Err(NodeError::Rpc { code, message }) => {
                    tracing::debug!(block = block.number(), code, %message, "node refused balances; block kept without");
                    Ok(None)
                }
                Err(e) => Err(e),
            }
        })
        .await?;
        Some(answer.map(|values| addresses.into_iter().zip(values).collect()).unwrap_or_default())
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

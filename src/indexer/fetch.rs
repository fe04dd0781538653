//! The follower's fetch task: blocks and receipts (and, with the native balance index, the balances of blocks near
//! the sync's target: see `balances`) of a range, asked for in JSON-RPC batches of several blocks, several batches
//! in flight, delivered in order.
//!
//! A batch asks for each block's receipts together with the block (one round trip) while the chain's blocks carry
//! transactions, and for the blocks alone while they are empty, then for the receipts of the few that are not
//! (an empty block needs none). Its size follows the transactions per block seen last: about
//! [`BATCH_TXS`] transactions per batch, never more than `--fetch-batch` blocks, so a stretch of empty blocks costs
//! one request per block and a few round trips in all.

use super::balances::balances_after;
use super::{ask, bundle, LIVE_WINDOW};
use crate::node::{Node, RawBundle};
use crate::status::Status;
use crate::store::records::Bundle;
use alloy::primitives::{Address, B256};
use futures_util::StreamExt;
use std::collections::{HashMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Transactions one batch aims at (its blocks' transactions as last seen): bounds what one answer holds. A node
/// answers a batch's calls one after the other, so smaller batches keep more of its cores busy: against anvil,
/// 200-transaction blocks caught up at 0.94-0.95 of the raw per-block fetch four to a batch, 0.86-0.89 ten to one.
pub const BATCH_TXS: u64 = 800;

/// Times an authority's nonce is asked for before its authorizations stay unsettled.
const NONCE_ATTEMPTS: u32 = 3;
/// Pause before asking again for nonces the node refused.
const NONCE_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

/// What the fetch task delivers, in block order.
pub(super) enum Fetched {
    Block(Box<Bundle>),
    /// The node has no such block (any more), or its answers did not fit together: look at the head again.
    Missing(u64),
}

/// Counts of a fetch task's work, read by the sync's report.
#[derive(Debug, Default)]
pub(super) struct FetchCounts {
    /// HTTP requests sent to the node (each a JSON-RPC batch), retries included.
    pub requests: AtomicU64,
    /// Batches of blocks asked for.
    pub batches: AtomicU64,
}

/// The fetch task of a sync: only the node and the status, never the store, so it cannot outlive the store's
/// last real user.
pub(super) struct Fetcher {
    pub node: Node,
    pub status: Arc<Status>,
    /// Batches in flight.
    pub concurrency: usize,
    /// Most blocks in one batch.
    pub batch_blocks: usize,
    pub coin_balances: bool,
    pub counts: Arc<FetchCounts>,
    /// Transactions per block in the last answered batch, rounded up (`u64::MAX` before the first).
    txs_per_block: AtomicU64,
}

impl Fetcher {
    pub fn new(node: Node, status: Arc<Status>, concurrency: usize, batch_blocks: usize, coin_balances: bool) -> Self {
        Fetcher {
            node,
            status,
            concurrency: concurrency.max(1),
            batch_blocks: batch_blocks.max(1),
            coin_balances,
            counts: Arc::default(),
            txs_per_block: AtomicU64::new(u64::MAX),
        }
    }

    /// Fetches `from..=to` with `concurrency` batches in flight, delivering blocks in order. Stops after a
    /// missing block, on cancellation, or when the receiver is gone.
    pub async fn run(self, from: u64, to: u64, tx: mpsc::Sender<Fetched>, cancel: CancellationToken) {
        let this = &self;
        // Each range is cut when the stream asks for it, so its size follows the latest answers.
        let mut next = Some(from);
        let ranges = futures_util::stream::iter(std::iter::from_fn(move || {
            let start = next.filter(|n| *n <= to)?;
            let end = start.saturating_add(this.batch_size() - 1).min(to);
            next = end.checked_add(1);
            Some(start..=end)
        }));
        let fetches = ranges
            .map(|numbers| {
                let cancel = cancel.clone();
                async move { this.batch(numbers, to, &cancel).await }
            })
            .buffered(self.concurrency);
        let mut fetches = std::pin::pin!(fetches);
        loop {
            let items = tokio::select! {
                _ = cancel.cancelled() => return,
                items = fetches.next() => items,
            };
            let Some(Some(items)) = items else {
                return;
            };
            for item in items {
                let stop = matches!(item, Fetched::Missing(_));
                if tx.send(item).await.is_err() || stop {
                    return;
                }
            }
        }
    }

    /// Blocks in the next batch: about [`BATCH_TXS`] transactions at the last seen rate, one block before any
    /// answer, at most `batch_blocks`.
    fn batch_size(&self) -> u64 {
        let max = self.batch_blocks as u64;
        match self.txs_per_block.load(Ordering::Relaxed) {
            u64::MAX => 1,
            0 => max,
            per_block => (BATCH_TXS / per_block).clamp(1, max),
        }
    }

    /// One batch of blocks with their receipts (and balances, within [`LIVE_WINDOW`] of the sync's target `to`),
    /// in order, ending at the first missing or inconsistent block; `None` on cancellation.
    async fn batch(&self, numbers: RangeInclusive<u64>, to: u64, cancel: &CancellationToken) -> Option<Vec<Fetched>> {
        // Receipts ride with the blocks unless the chain was empty at the last look.
        let receipts_with_blocks = self.txs_per_block.load(Ordering::Relaxed) != 0;
        self.counts.batches.fetch_add(1, Ordering::Relaxed);
        let raws = ask(Some(&self.status), "blocks", cancel, || {
            let requests = if receipts_with_blocks { 1 } else { 2 };
            self.counts.requests.fetch_add(requests, Ordering::Relaxed);
            self.node.bundles(numbers.clone(), receipts_with_blocks)
        })
        .await?;
        self.observe(&raws);
        let mut blocks = Vec::with_capacity(raws.len());
        let mut end = None;
        for (number, raw) in numbers.zip(raws) {
            match raw.map(bundle::from_rpc) {
                None => end = Some(number),
                Some(Ok(block)) => blocks.push(block),
                Some(Err(e)) => {
                    // Typically the chain moved between the block and receipts requests.
                    tracing::warn!(error = %e, "inconsistent block from node");
                    end = Some(number);
                }
            }
            if end.is_some() {
                break;
            }
        }
        let live = blocks.iter().position(|b| to.saturating_sub(b.number()) <= LIVE_WINDOW).unwrap_or(blocks.len());
        self.settle_authorizations(&mut blocks, live, cancel).await?;
        // Live blocks (a suffix of the batch) come with their balances; the balance writer reads the others later,
        // the same rows either way.
        if self.coin_balances && live < blocks.len() {
            self.add_balances(&mut blocks[live..], cancel).await?;
        }
        let mut items: Vec<Fetched> = blocks.into_iter().map(|block| Fetched::Block(Box::new(block))).collect();
        items.extend(end.map(Fetched::Missing));
        Some(items)
    }

    /// Remembers the transactions per block of an answer, for the next batches' size and shape.
    fn observe(&self, raws: &[Option<RawBundle>]) {
        let (blocks, txs) = raws
            .iter()
            .flatten()
            .fold((0u64, 0u64), |(blocks, txs), raw| (blocks + 1, txs + raw.block.transactions.len() as u64));
        if blocks > 0 {
            self.txs_per_block.store(txs.div_ceil(blocks), Ordering::Relaxed);
        }
    }

    /// Settles the EIP-7702 authorizations of `blocks` from their authorities' nonces before each block (one
    /// batched `eth_getTransactionCount` per authority, only for blocks that carry authorizations). A block whose
    /// state the node refuses keeps those statuses unknown; only live blocks (from index `live` on) are asked
    /// again. `None` on cancellation.
    async fn settle_authorizations(
        &self,
        blocks: &mut [Bundle],
        live: usize,
        cancel: &CancellationToken,
    ) -> Option<()> {
        let wanted: Vec<(usize, Vec<Address>)> = blocks
            .iter()
            .enumerate()
            .map(|(i, block)| (i, bundle::unsettled_authorities(block)))
            .filter(|(_, authorities)| !authorities.is_empty())
            .collect();
        if wanted.is_empty() {
            return Some(());
        }
        let mut queries: Vec<(Address, B256)> = wanted
            .iter()
            .flat_map(|(i, authorities)| authorities.iter().map(|a| (*a, blocks[*i].header.parent_hash)))
            .collect();
        // A refused call of a live block is asked again twice (a node behind a balancer may not know the newest
        // parent yet); an older block's refusal is a pruned state, not asked again (catching up would wait on it).
        let live_parents: HashSet<B256> = blocks[live..].iter().map(|b| b.header.parent_hash).collect();
        let mut known: HashMap<(Address, B256), u64> = HashMap::new();
        for attempt in 0..NONCE_ATTEMPTS {
            if attempt > 0 {
                tokio::select! {
                    _ = cancel.cancelled() => return None,
                    _ = tokio::time::sleep(NONCE_RETRY_DELAY) => {}
                }
            }
            let answers = ask(Some(&self.status), "authority nonces", cancel, || {
                self.counts.requests.fetch_add(1, Ordering::Relaxed);
                self.node.nonces_at(&queries)
            })
            .await?;
            let mut refused = Vec::new();
            for (query, answer) in queries.into_iter().zip(answers) {
                match answer {
                    Ok(nonce) => {
                        known.insert(query, nonce);
                    }
                    Err(_) if live_parents.contains(&query.1) => refused.push(query),
                    Err(_) => {}
                }
            }
            queries = refused;
            if queries.is_empty() {
                break;
            }
        }
        for (i, authorities) in wanted {
            let parent = blocks[i].header.parent_hash;
            let nonces: HashMap<Address, u64> =
                authorities.into_iter().filter_map(|a| Some((a, *known.get(&(a, parent))?))).collect();
            bundle::settle_authorizations(&mut blocks[i], &nonces);
        }
        Some(())
    }

    /// The native balances after each block of the addresses it names. A block whose balances the node refuses
    /// (state pruned, the block replaced meanwhile) is kept without them rather than stopping indexing; the balance
    /// writer passes it later. `None` on cancellation.
    async fn add_balances(&self, blocks: &mut [Bundle], cancel: &CancellationToken) -> Option<()> {
        let named: Vec<(B256, Vec<Address>)> = blocks
            .iter()
            .map(|block| (block.header.hash, crate::chain::balance_addresses(block).into_iter().collect()))
            .collect();
        let follower = Some((&*self.status, &self.counts.requests));
        let answers = balances_after(&self.node, follower, &named, cancel).await?;
        for ((block, (_, addresses)), values) in blocks.iter_mut().zip(named).zip(answers) {
            if let Some(values) = values {
                block.balances = addresses.into_iter().zip(values).collect();
            }
        }
        Some(())
    }
}

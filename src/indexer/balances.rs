//! The native balance index behind the block path: the balance writer, and the balance reads it shares with the
//! fetch task.
//!
//! With `--coin-balances` (on by default), every block's named addresses (miner, senders, recipients, created
//! contracts) get their balance after the block, read from the node at the block's hash. For live blocks (at most
//! [`super::LIVE_WINDOW`] below the head a sync runs to) the fetch task asks for them with the block, so a new
//! block's balances are committed with it. Blocks further behind (catching up, or a burst the follower is working
//! off) are committed without them, so the block index gets back to the head without waiting for the node's balance
//! reads (about one per transaction). The balance writer reads them afterwards, while the follower is within
//! [`YIELD_LAG`] blocks of the node's head (further behind, the node's time goes to the blocks first; a node whose
//! head keeps running away from the follower leaves the balances waiting). It follows the indexed tip from its own
//! tip (`BalanceTip` in `meta`), in block order, and writes each block's balances as late rows of that block
//! (`Batch::set_late_rows`, joined to the block's undo data), so reverting the block removes them. A reorg moves the
//! balance tip below the reverted block.
//!
//! The fetch task's balances are only history rows (`coin_balances`). Each address's latest balance
//! (`coin_balance_now`) and the ranking (`coin_ranks`) are written by the writer alone, for every block in block
//! order, from the node's answers or from the history rows a block came with. So each block's undo data holds the
//! state after the block before it, and reverting blocks newest first restores them exactly, however the follower's
//! commits and the writer's interleaved. The trace pass's balances of addresses only calls name move a latest
//! balance too, when no newer block recorded one; it stays behind the writer, so these come in block order as well.

use super::pause::run_rounds;
use super::{ask, traces::coin_balance_rows};
use crate::events::{ChainEvent, EventSender};
use crate::node::{Node, NodeError, BALANCE_BATCH, BALANCE_BATCHES_IN_FLIGHT};
use crate::status::{Status, Writer};
use crate::store::keys::{AddressPos, BlockKey, BlockPos};
use crate::store::records::{Meta, Tip};
use crate::store::tables::{CoinBalances, Headers};
use crate::store::{Durability, Reader, Store, StoreError, StoreResult};
use alloy::primitives::{Address, B256, U256};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The writer waits while the follower is more than this many blocks behind the node's head (catching up): the
/// node's time goes to the blocks first. Closer, it reads alongside the follower, in time for the states a full
/// node keeps by default (geth keeps the latest 128).
pub const YIELD_LAG: u64 = 64;
/// Blocks the writer looks at per round.
const ROUND_BLOCKS: u64 = 64;
/// Balances the writer asks for per round, about (a round holds whole blocks, at least one).
const ROUND_BALANCES: usize = 4 * BALANCE_BATCHES_IN_FLIGHT * BALANCE_BATCH;
/// How long the writer waits for a new block before it looks at the store again.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// The balance after each block of the addresses it names, asked for at the block's hash: `blocks` holds each
/// block's hash and addresses. Per block, the answers in its addresses' order, or `None` when the node refused the
/// block's state (pruned, or the block was replaced meanwhile). All blocks share JSON-RPC batches. With several
/// blocks, one address per block is asked first, then the rest only for the blocks whose state proved there, so a
/// node that pruned old states costs one call per block. Transport failures are retried like every node call.
/// `follower` is the fetch task's status and request counter: its requests record the node's reachability and are
/// counted, the balance writer's are not. `None` on cancellation.
pub(super) async fn balances_after(
    node: &Node,
    follower: Option<(&Status, &AtomicU64)>,
    blocks: &[(B256, Vec<Address>)],
    cancel: &CancellationToken,
) -> Option<Vec<Option<Vec<U256>>>> {
    // A lone block (at the head, where states are kept) is asked for in one round.
    let first = if blocks.len() == 1 { usize::MAX } else { 1 };
    let split = |addresses: &[Address]| first.min(addresses.len());
    let queries = |probe: bool, wanted: &[bool]| -> Vec<(Address, B256)> {
        blocks
            .iter()
            .zip(wanted)
            .filter(|(_, wanted)| **wanted)
            .flat_map(|((hash, addresses), _)| {
                let (probes, rest) = addresses.split_at(split(addresses));
                let part = if probe { probes } else { rest };
                part.iter().map(|address| (*address, *hash))
            })
            .collect()
    };
    let ask_node = |queries: Vec<(Address, B256)>| async move {
        if queries.is_empty() {
            return Some(Vec::new());
        }
        ask(follower.map(|(status, _)| status), "balances", cancel, || {
            if let Some((_, requests)) = follower {
                requests.fetch_add(queries.len().div_ceil(BALANCE_BATCH) as u64, Ordering::Relaxed);
            }
            node.balances_at(&queries)
        })
        .await
    };
    let mut probed = ask_node(queries(true, &vec![true; blocks.len()])).await?.into_iter();
    // Per block: its first answers, or the node's refusal of its state.
    let firsts: Vec<Result<Vec<U256>, NodeError>> =
        blocks.iter().map(|(_, addresses)| probed.by_ref().take(split(addresses)).collect()).collect();
    let has_state: Vec<bool> = firsts.iter().map(Result::is_ok).collect();
    let mut rest = ask_node(queries(false, &has_state)).await?.into_iter();
    let answers = blocks
        .iter()
        .zip(firsts)
        .map(|((hash, addresses), first)| {
            let values = first.and_then(|mut values| {
                let more: Result<Vec<U256>, NodeError> =
                    rest.by_ref().take(addresses.len() - split(addresses)).collect();
                values.extend(more?);
                Ok(values)
            });
            values.inspect_err(|e| tracing::debug!(block = %hash, error = %e, "node refused balances")).ok()
        })
        .collect();
    Some(answers)
}

/// A block the writer looks at: its addresses, and their balances once read.
struct Pending {
    number: u64,
    hash: B256,
    addresses: Vec<Address>,
    /// Whether the block's balances came with it (read from its history rows, not asked for).
    inline: bool,
    /// The answers, in `addresses` order; `None` when the node refused the block's state (the block is passed
    /// without balances).
    balances: Option<Vec<U256>>,
}

/// The balance writer.
#[derive(Debug)]
pub struct BalanceWriter {
    store: Arc<Store>,
    node: Node,
    status: Arc<Status>,
    events: EventSender,
}

impl BalanceWriter {
    /// A balance writer over `store`; `status` shows its progress from now on.
    pub fn new(store: Arc<Store>, node: Node, status: Arc<Status>, events: EventSender) -> Self {
        status.set_coin_balances(true);
        BalanceWriter { store, node, status, events }
    }

    /// Runs until cancelled.
    pub async fn run(self, cancel: CancellationToken) {
        let (status, events) = (self.status.clone(), &self.events);
        run_rounds(status, Writer::Balances, events, IDLE_POLL, &cancel, |e| Some(e), || self.round(&cancel)).await;
    }

    /// Reads and writes the balances of the next blocks; returns whether the balance tip moved.
    async fn round(&self, cancel: &CancellationToken) -> StoreResult<bool> {
        let reader = self.store.reader();
        let balanced = reader.balance_tip()?;
        self.status.set_balanced(balanced.map(|t| t.number));
        if self.status.snapshot().lag() > YIELD_LAG {
            // The follower is catching up: the node's time goes to the blocks first.
            return Ok(false);
        }
        let Some(mut blocks) = next_blocks(&reader, balanced)? else { return Ok(false) };
        drop(reader);
        let wanted: Vec<(B256, Vec<Address>)> =
            blocks.iter().filter(|b| !b.inline).map(|b| (b.hash, b.addresses.clone())).collect();
        // The writer's requests are its own: a failed balance read does not make `/health` report the follower's
        // node unreachable, nor does an answer hide a stalled follower.
        let Some(answers) = balances_after(&self.node, None, &wanted, cancel).await else {
            return Ok(false);
        };
        let mut answers = answers.into_iter();
        for block in blocks.iter_mut().filter(|b| !b.inline) {
            block.balances = answers.next().flatten();
        }
        let store = self.store.clone();
        let done = tokio::task::spawn_blocking(move || commit(&store, &blocks))
            .await
            .map_err(|e| StoreError::Inconsistent(format!("balance commit task failed: {e}")))??;
        if let Some(done) = done {
            self.status.set_balanced(Some(done));
            let _ = self.events.send(ChainEvent::Balanced { number: done });
        }
        Ok(done.is_some())
    }
}

/// The blocks above the balance tip `balanced` to look at in the next round (`None`: caught up with the indexed tip).
fn next_blocks(reader: &Reader<'_>, balanced: Option<Tip>) -> StoreResult<Option<Vec<Pending>>> {
    let Some(tip) = reader.tip()? else { return Ok(None) };
    let from = balanced.map_or(0, |t| t.number + 1);
    if from > tip.number {
        return Ok(None);
    }
    let mut blocks = Vec::new();
    let mut balances = 0;
    for number in from..=tip.number.min(from + ROUND_BLOCKS - 1) {
        let Some(block) = reader.load_block(number)? else { break };
        let named: Vec<Address> = crate::chain::balance_addresses(&block).into_iter().collect();
        let row = |address: Address| AddressPos { address, pos: BlockPos { block: number, index: 0 } };
        // Every block names its miner: a balance of the miner at the block means the block's came with it.
        let inline = reader.get::<CoinBalances>(&row(block.header.miner))?.is_some();
        let (addresses, values) = if inline {
            let keys: Vec<AddressPos> = named.iter().map(|a| row(*a)).collect();
            let stored = reader.multi_get::<CoinBalances>(&keys)?;
            let found = named.into_iter().zip(stored).filter_map(|(a, v)| Some((a, v?.0)));
            let (addresses, values): (Vec<Address>, Vec<U256>) = found.unzip();
            (addresses, Some(values))
        } else {
            balances += named.len();
            (named, None)
        };
        blocks.push(Pending { number, hash: block.header.hash, addresses, inline, balances: values });
        if balances >= ROUND_BALANCES {
            break;
        }
    }
    Ok(Some(blocks).filter(|b| !b.is_empty()))
}

/// Writes each block's balances as late rows of the block and moves the balance tip over it, one block per write
/// (a block's rows read what the previous block's wrote), while the block is still the stored one and the balance
/// tip is just below it. Returns the new balance tip, if it moved.
fn commit(store: &Store, blocks: &[Pending]) -> StoreResult<Option<u64>> {
    let mut done = None;
    for block in blocks {
        let _writes = store.lock_writes();
        let reader = store.reader();
        let stored = reader.get::<Headers>(&BlockKey(block.number))?.map(|h| h.hash);
        let next = reader.balance_tip()?.map_or(0, |t| t.number + 1);
        if stored != Some(block.hash) || next != block.number {
            break;
        }
        let mut batch = store.batch();
        if let Some(values) = &block.balances {
            let balances: Vec<(Address, U256)> = block.addresses.iter().copied().zip(values.iter().copied()).collect();
            batch.set_late_rows(&reader, block.number, &coin_balance_rows(&reader, block.number, &balances)?)?;
        }
        batch.put_meta(&Meta::BalanceTip(Tip { number: block.number, hash: block.hash }))?;
        store.write(batch, Durability::Buffered)?;
        done = Some(block.number);
    }
    Ok(done)
}

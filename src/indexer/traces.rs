//! Internal transactions from call traces, in a second pass behind the head.
//!
//! With `--tracing`, the trace pass follows the indexed tip: for each block above the stored trace tip it fetches
//! `debug_traceBlockByNumber` with `callTracer` (per transaction with `debug_traceTransaction` when a node cannot
//! trace whole blocks), checks the traces belong to the stored block, and commits the block's trace rows together
//! with the new trace tip. It never holds back head following; `/health` and the indexing status show how far it
//! is. Trace rows are a pure function of a block's traces ([`trace_rows`]), so reverting a block deletes exactly
//! what was written, recomputed from the stored call frames; the follower does that inside its revert batch.

use super::pause::run_rounds;
use super::rows::RowSink;
use crate::events::{ChainEvent, EventSender};
use crate::node::wire::RpcCallFrame;
use crate::node::{Node, NodeError};
use crate::status::{Status, Writer};
use crate::store::keys::{AddressPos, AddressTracePos, BlockKey, BlockPos, CoinRankKey, MetaKey, TracePos};
use crate::store::records::{
    role, Amount, Bundle, CallKind, CoinBalance, InternalCreation, InternalTxRecord, Meta, Tip, TraceSummary,
};
use crate::store::tables::{
    AddressInternal, CoinBalanceNow, CoinBalances, CoinRanks, Headers, InternalCreations, InternalTxs, TraceBlocks,
};
use crate::store::{Batch, Durability, LateRows, Reader, Store, StoreError, StoreResult};
use alloy::primitives::{Address, B256, U256};
use futures_util::StreamExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Deepest nesting kept from a trace (deeper frames are cut; the EVM allows 1024).
pub const MAX_DEPTH: u16 = 1024;

fn kind_of(name: &str) -> CallKind {
    match name.to_ascii_uppercase().as_str() {
        "DELEGATECALL" => CallKind::DelegateCall,
        "STATICCALL" => CallKind::StaticCall,
        "CALLCODE" => CallKind::CallCode,
        "CREATE" => CallKind::Create,
        "CREATE2" => CallKind::Create2,
        "SELFDESTRUCT" | "SUICIDE" => CallKind::SelfDestruct,
        _ => CallKind::Call,
    }
}

/// The frames of one transaction's trace, depth-first (index 0 is the top-level call). A frame inside a failed
/// frame is marked unsuccessful too: its effects were rolled back with its caller's.
pub fn flatten(tx_hash: B256, top: &RpcCallFrame) -> Vec<InternalTxRecord> {
    let mut out = Vec::new();
    let mut stack: Vec<(&RpcCallFrame, u16, bool)> = vec![(top, 0, true)];
    while let Some((frame, depth, caller_ok)) = stack.pop() {
        let kind = kind_of(&frame.kind);
        let success = caller_ok && frame.error.is_none();
        out.push(InternalTxRecord {
            tx_hash,
            kind,
            from: frame.from,
            to: if kind.creates() { None } else { frame.to },
            created: if kind.creates() { frame.to } else { None },
            value: frame.value.unwrap_or(U256::ZERO),
            gas: frame.gas.map(|g| g.saturating_to()).unwrap_or(0),
            gas_used: frame.gas_used.map(|g| g.saturating_to()).unwrap_or(0),
            error: frame.error.clone(),
            success,
            depth,
        });
        if depth < MAX_DEPTH {
            stack.extend(frame.calls.iter().rev().map(|c| (c, depth + 1, success)));
        }
    }
    out
}

/// The call frames of each transaction of a block, in transaction order.
pub type BlockTraces = Vec<Vec<InternalTxRecord>>;

/// Every row the traces of block `number` own, fed to `sink`.
pub fn trace_rows(number: u64, traces: &[Vec<InternalTxRecord>], sink: &mut impl RowSink) -> StoreResult<()> {
    let mut summary = TraceSummary::default();
    for (tx, frames) in traces.iter().enumerate() {
        let mut has_error = false;
        for (index, frame) in frames.iter().enumerate() {
            let pos = TracePos { block: number, tx: tx as u32, index: index as u32 };
            sink.row::<InternalTxs>(&pos, frame)?;
            if index == 0 {
                continue;
            }
            has_error |= !frame.success;
            let mut roles: BTreeMap<alloy::primitives::Address, u8> = BTreeMap::new();
            *roles.entry(frame.from).or_default() |= role::FROM;
            if let Some(to) = frame.to {
                *roles.entry(to).or_default() |= role::TO;
            }
            if let Some(created) = frame.created {
                *roles.entry(created).or_default() |= role::CREATED;
                let creation = InternalCreation { creator: frame.from, tx: frame.tx_hash, success: frame.success };
                sink.row::<InternalCreations>(&AddressTracePos { address: created, pos }, &creation)?;
            }
            for (address, bits) in roles {
                sink.row::<AddressInternal>(&AddressTracePos { address, pos }, &bits)?;
            }
        }
        summary.txs.push((frames.len().saturating_sub(1) as u32, has_error));
    }
    sink.row::<TraceBlocks>(&BlockKey(number), &summary)
}

/// The stored call frames of block `number`, per transaction.
pub fn load_traces(reader: &Reader<'_>, number: u64) -> StoreResult<BlockTraces> {
    let mut traces: BlockTraces = Vec::new();
    for row in reader.block_calls(number, None) {
        let (pos, frame) = row?;
        while traces.len() <= pos.tx as usize {
            traces.push(Vec::new());
        }
        traces[pos.tx as usize].push(frame);
    }
    let summary = reader.get::<TraceBlocks>(&BlockKey(number))?;
    if let Some(summary) = summary {
        traces.resize(summary.txs.len(), Vec::new());
    }
    Ok(traces)
}

/// Adds the deletion of block `number`'s trace rows to a revert batch, when its traces are stored, and moves the
/// trace tip below it. Called with the store's write lock held.
pub fn revert_traces(batch: &mut Batch<'_>, reader: &Reader<'_>, block: &Bundle) -> StoreResult<()> {
    let number = block.number();
    if batch.lower_tip_below(reader, MetaKey::TraceTip, number, block.header.parent_hash)? {
        let traces = load_traces(reader, number)?;
        trace_rows(number, &traces, &mut super::rows::DeleteRows(batch))?;
    }
    Ok(())
}

/// Blocks the node could not trace whole whose tracing one transaction at a time failed part-way, each with the
/// traces fetched so far. The next attempt resumes after them, without asking for the whole block again (that would
/// only make the node work on an answer nobody waits for). Entries leave as their blocks are traced; at most one
/// round's blocks are held.
#[derive(Debug, Default)]
struct OneByOne(std::sync::Mutex<BTreeMap<u64, Vec<(B256, RpcCallFrame)>>>);

impl OneByOne {
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Vec<(B256, RpcCallFrame)>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets the blocks up to `traced` (traced, or passed).
    fn forget_through(&self, traced: u64) {
        let mut entries = self.entries();
        *entries = entries.split_off(&(traced + 1));
    }
}

/// Traces of `number`, checked against the stored block's transactions (`None`: they do not match, e.g. the node
/// reorged meanwhile).
async fn fetch(
    node: &Node,
    number: u64,
    tx_hashes: &[B256],
    one_by_one: &OneByOne,
) -> Result<Option<BlockTraces>, NodeError> {
    let stored = one_by_one.entries().remove(&number);
    let mut done = match stored {
        Some(done) => done,
        None => match node.trace_block(number).await {
            Ok(traces) => return Ok(matched(traces.into_iter().map(|t| (t.tx_hash, t.result)).collect(), tx_hashes)),
            // Some nodes cannot trace whole blocks (or answer errors in place of some transactions' traces), and a
            // full block can take a node longer than one request may: one transaction at a time then (each within
            // the request timeout), or the same block would time out forever.
            Err(e @ (NodeError::Rpc { .. } | NodeError::Timeout(_) | NodeError::Invalid(_))) => {
                tracing::debug!(block = number, error = %e, "tracing the block's transactions one by one");
                Vec::new()
            }
            Err(e) => return Err(e),
        },
    };
    // Traces of another block at this height (a reorg) are not this block's.
    if done.len() > tx_hashes.len() || done.iter().zip(tx_hashes).any(|((have, _), want)| have != want) {
        done.clear();
    }
    for hash in &tx_hashes[done.len()..] {
        match node.trace_transaction(*hash).await {
            Ok(frame) => done.push((*hash, frame)),
            Err(e) => {
                one_by_one.entries().insert(number, done);
                return Err(e);
            }
        }
    }
    Ok(matched(done.into_iter().map(|(hash, frame)| (Some(hash), frame)).collect(), tx_hashes))
}

/// `frames` as the block's traces, when they are its transactions' in order (`None` otherwise).
fn matched(frames: Vec<(Option<B256>, RpcCallFrame)>, tx_hashes: &[B256]) -> Option<BlockTraces> {
    if frames.len() != tx_hashes.len()
        || frames.iter().zip(tx_hashes).any(|((h, _), want)| h.is_some_and(|h| h != *want))
    {
        return None;
    }
    Some(frames.iter().zip(tx_hashes).map(|((_, frame), hash)| flatten(*hash, frame)).collect())
}

/// Whether the node can trace (tried on block 0). When block 0's trace does not come in time, a transaction trace
/// tells: a node without the method refuses it as unknown (-32601), one with it refuses only the unknown
/// transaction (blocks are then traced one transaction at a time, see `fetch`).
pub async fn supported(node: &Node) -> Result<bool, NodeError> {
    match node.trace_block(0).await {
        Ok(_) => Ok(true),
        Err(NodeError::Timeout(_)) => match node.trace_transaction(B256::ZERO).await {
            Err(NodeError::Rpc { code: METHOD_NOT_FOUND, .. }) => Ok(false),
            Ok(_) | Err(NodeError::Rpc { .. } | NodeError::Invalid(_)) => Ok(true),
            Err(e) => Err(e),
        },
        Err(NodeError::Rpc { .. } | NodeError::Invalid(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// JSON-RPC's code for a method the node does not have.
const METHOD_NOT_FOUND: i64 = -32601;

/// The trace pass.
#[derive(Debug)]
pub struct TraceFollower {
    store: Arc<Store>,
    node: Node,
    status: Arc<Status>,
    events: EventSender,
    concurrency: usize,
    coin_balances: bool,
    /// How long the node must refuse a block before it is passed.
    refused_for: Duration,
    /// The block the node last refused to trace, in how many rounds in a row, since when.
    refusals: std::sync::Mutex<Option<(u64, u32, std::time::Instant)>>,
    /// Blocks traced one transaction at a time.
    one_by_one: OneByOne,
}

/// Blocks traced per round.
const ROUND: u64 = 64;
/// Rounds in a row the node must refuse to trace one block (or fail to trace one of its transactions in time), over
/// at least the refusal window (`--trace-refusal-window-ms`), before the pass leaves it untraced and goes on.
const REFUSALS_BEFORE_SKIP: u32 = 5;

/// Whether the node refused to trace (an error answer, or an answer without traces: its state is gone, the block
/// is not traceable) rather than failing to answer for now (transport, timeout, a rate limit, a busy or lagging
/// backend: tried again as long as it takes).
fn refused(e: &NodeError) -> bool {
    match e {
        NodeError::Invalid(_) => true,
        NodeError::Rpc { code, message } => {
            let message = message.to_ascii_lowercase();
            let passing = ["timeout", "timed out", "rate", "limit", "busy", "try again", "header not found"];
            *code != LIMIT_EXCEEDED && !passing.iter().any(|word| message.contains(word))
        }
        NodeError::Transport(_) | NodeError::Timeout(_) => false,
    }
}

/// Whether the node did not finish a trace in time: no answer within the request, or its own tracer `timeout`.
fn timed_out(e: &NodeError) -> bool {
    match e {
        NodeError::Timeout(_) => true,
        NodeError::Rpc { message, .. } => {
            let message = message.to_ascii_lowercase();
            message.contains("timeout") || message.contains("timed out")
        }
        NodeError::Invalid(_) | NodeError::Transport(_) => false,
    }
}

/// JSON-RPC's code for a request over the provider's limits (EIP-1474).
const LIMIT_EXCEEDED: i64 = -32005;

impl TraceFollower {
    /// A trace pass over `store`, tracing with `concurrency` blocks in flight.
    pub fn new(store: Arc<Store>, node: Node, status: Arc<Status>, events: EventSender, concurrency: usize) -> Self {
        let refusals = std::sync::Mutex::new(None);
        let refused_for = Duration::from_millis(crate::config::DEFAULT_TRACE_REFUSAL_WINDOW_MS);
        let concurrency = concurrency.max(1);
        let one_by_one = OneByOne::default();
        TraceFollower {
            store,
            node,
            status,
            events,
            concurrency,
            coin_balances: true,
            refused_for,
            refusals,
            one_by_one,
        }
    }

    /// Whether traced blocks also index the native balances of addresses only their calls name (as the block
    /// path does for the addresses the block names: `--coin-balances`). The pass then stays behind the balance
    /// writer, which must run too.
    pub fn with_coin_balances(mut self, on: bool) -> Self {
        self.coin_balances = on;
        self
    }

    /// How long the node must keep refusing to trace one block before the pass leaves it untraced (default 10
    /// minutes).
    pub fn with_refusal_window(mut self, window: Duration) -> Self {
        self.refused_for = window;
        self
    }

    /// Runs until cancelled. A node without debug tracing is noted once and left alone.
    pub async fn run(self, cancel: CancellationToken) {
        match self.store.reader().trace_tip() {
            Ok(traced) => self.status.set_traced(traced.map(|t| t.number)),
            Err(e) => tracing::warn!(error = %e, "cannot read the trace tip"),
        }
        loop {
            match supported(&self.node).await {
                Ok(true) => break,
                Ok(false) => {
                    tracing::warn!(
                        "the node does not support debug_traceBlockByNumber: internal transactions are not indexed"
                    );
                    self.status.set_tracing(false);
                    return;
                }
                Err(e) => tracing::debug!(error = %e, "cannot tell yet whether the node traces"),
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
        self.status.set_tracing(true);
        tracing::info!("tracing enabled: indexing internal transactions behind the head");
        let (status, events, idle) = (self.status.clone(), &self.events, Duration::from_secs(1));
        run_rounds(status, Writer::Traces, events, idle, &cancel, RoundError::store, || self.round(&cancel)).await;
    }

    /// Counts one more refusal of block `n`; true once it has been refused [`REFUSALS_BEFORE_SKIP`] rounds in a row
    /// over at least the refusal window.
    fn refused_again(&self, n: u64) -> bool {
        let mut refusals = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let (count, since) = match *refusals {
            Some((block, count, since)) if block == n => (count + 1, since),
            _ => (1, std::time::Instant::now()),
        };
        *refusals = Some((n, count, since));
        count >= REFUSALS_BEFORE_SKIP && since.elapsed() >= self.refused_for
    }

    /// The block the node keeps refusing, if any: rounds go no further until it is traced or passed.
    fn refused_block(&self) -> Option<u64> {
        self.refusals.lock().unwrap_or_else(|p| p.into_inner()).map(|(block, _, _)| block)
    }

    /// Traces the next blocks; returns whether any was committed.
    async fn round(&self, cancel: &CancellationToken) -> Result<bool, RoundError> {
        let reader = self.store.reader();
        let traced = reader.trace_tip()?;
        self.status.set_traced(traced.map(|t| t.number));
        // With the native balance index, the pass stays behind the balance writer: its balances of addresses only
        // calls name then move latest balances in block order too (see `commit`).
        let ready = if self.coin_balances { reader.balance_tip()? } else { reader.tip()? };
        let Some(ready) = ready else { return Ok(false) };
        let from = traced.map_or(0, |t| t.number + 1);
        if let Some(traced) = traced {
            self.one_by_one.forget_through(traced.number);
        }
        if from > ready.number {
            return Ok(false);
        }
        let to = ready.number.min(from + ROUND - 1);
        // While the node refuses a block, the blocks after it wait without being traced again and again.
        let to = self.refused_block().filter(|b| *b >= from).map_or(to, |b| to.min(b));
        let mut targets = Vec::new();
        for n in from..=to {
            let Some(block) = reader.load_block(n)? else { break };
            let named = crate::chain::balance_addresses(&block);
            targets.push((n, block.header.hash, block.txs.iter().map(|t| t.hash).collect::<Vec<_>>(), named));
        }
        drop(reader);
        let (node, coin_balances, one_by_one) = (&self.node, self.coin_balances, &self.one_by_one);
        let fetched = futures_util::stream::iter(targets)
            .map(|(n, hash, txs, named)| async move {
                // Whether a failure may count toward passing the block: the node refused, or could not trace one
                // transaction within a request (`fetch` asks for single transactions only after the whole block
                // timed out), which it may never do.
                let traces = match fetch(node, n, &txs, one_by_one).await {
                    Ok(Some(traces)) => traces,
                    Ok(None) => return (n, hash, txs, Ok(None)),
                    Err(e) => {
                        let passable = refused(&e) || timed_out(&e);
                        return (n, hash, txs, Err((e, passable)));
                    }
                };
                let balances =
                    if coin_balances { call_balances(node, &traces, &named, hash).await } else { Ok(Vec::new()) };
                let outcome = match balances {
                    Ok(balances) => Ok(Some((traces, balances))),
                    Err(e) => {
                        let passable = refused(&e);
                        Err((e, passable))
                    }
                };
                (n, hash, txs, outcome)
            })
            .buffered(self.concurrency);
        let mut fetched = std::pin::pin!(fetched);
        let mut committed = false;
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Ok(committed),
                next = fetched.next() => next,
            };
            let Some((n, hash, txs, traces)) = next else { break };
            let (traces, balances) = match traces {
                Ok(Some((traces, balances))) => (Some(traces), balances),
                Ok(None) => return Ok(committed), // the chain moved: the follower reverts, then we retry
                // A node that keeps refusing one block (its state pruned, a transaction it cannot replay) would
                // hold back every later block: after a few rounds the block is committed without traces (its
                // transactions then show no internal transactions and an unknown internal error flag).
                Err((e, true)) if self.refused_again(n) => {
                    tracing::warn!(block = n, error = %e, "the node refuses to trace this block: left without internal transactions");
                    (None, Vec::new())
                }
                Err((e, _)) => return Err(RoundError::Node(e)),
            };
            let store = self.store.clone();
            let done = tokio::task::spawn_blocking(move || commit(&store, n, hash, traces.as_ref(), &balances))
                .await
                .map_err(|e| RoundError::Task(e.to_string()))??;
            if !done {
                return Ok(committed);
            }
            self.status.set_traced(Some(n));
            self.refusals.lock().unwrap_or_else(|p| p.into_inner()).take_if(|(block, _, _)| *block <= n);
            let _ = self.events.send(ChainEvent::Traced { number: n, txs: Arc::new(txs) });
            committed = true;
        }
        Ok(committed)
    }
}

/// Why a round of the trace pass failed.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    /// Reading or writing the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Tracing failed.
    #[error(transparent)]
    Node(NodeError),
    /// The commit task failed.
    #[error("trace commit task failed: {0}")]
    Task(String),
}

impl RoundError {
    /// The store's error, when the store failed.
    fn store(&self) -> Option<&StoreError> {
        match self {
            RoundError::Store(e) => Some(e),
            _ => None,
        }
    }
}

/// The native balances after block `hash` of the addresses only its calls name: senders, recipients and created
/// contracts of value-moving, creating or self-destructing frames below the top level, less `named` (the block's
/// own, fetched with it). A node that refuses gives none.
async fn call_balances(
    node: &Node,
    traces: &BlockTraces,
    named: &BTreeSet<Address>,
    hash: B256,
) -> Result<Vec<(Address, U256)>, NodeError> {
    let mut addresses = BTreeSet::new();
    for frame in traces.iter().flatten().filter(|f| f.depth > 0) {
        let moves = !frame.value.is_zero() || frame.created.is_some() || frame.kind == CallKind::SelfDestruct;
        if moves {
            addresses.extend([Some(frame.from), frame.to, frame.created].into_iter().flatten());
        }
    }
    let addresses: Vec<Address> = addresses.difference(named).copied().collect();
    if addresses.is_empty() {
        return Ok(Vec::new());
    }
    match node.balances_after(&addresses, hash).await {
        Ok(values) => Ok(addresses.into_iter().zip(values).collect()),
        // A refusal, or an answer that makes no sense, gives none: the traces are kept all the same.
        Err(NodeError::Rpc { .. } | NodeError::Invalid(_)) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The late rows of native balances after block `n` (found through its calls, or left by catch-up to the balance
/// writer): each history row, and the latest balance and its ranking unless a newer block already recorded one.
pub(super) fn coin_balance_rows(reader: &Reader<'_>, n: u64, balances: &[(Address, U256)]) -> StoreResult<LateRows> {
    let mut late = LateRows::default();
    for (address, value) in balances {
        let (address, value) = (*address, *value);
        late.set::<CoinBalances>(&AddressPos { address, pos: BlockPos { block: n, index: 0 } }, Some(&Amount(value)))?;
        let now = reader.get::<CoinBalanceNow>(&address)?;
        if now.is_some_and(|c| c.block > n) {
            continue;
        }
        if let Some(prior) = now.filter(|c| c.value != value) {
            late.set::<CoinRanks>(&CoinRankKey { balance: prior.value, address }, None)?;
        }
        late.set::<CoinBalanceNow>(&address, Some(&CoinBalance { block: n, value }))?;
        if !value.is_zero() {
            late.set::<CoinRanks>(&CoinRankKey { balance: value, address }, Some(&()))?;
        }
    }
    Ok(late)
}

/// Writes the traces of block `n` (and the balances its calls changed, as late rows of the block) if the stored
/// block is still the one traced and the trace tip is just below it.
fn commit(
    store: &Store,
    n: u64,
    hash: B256,
    traces: Option<&BlockTraces>,
    balances: &[(Address, U256)],
) -> StoreResult<bool> {
    let _writes = store.lock_writes();
    let reader = store.reader();
    let header = reader.get::<Headers>(&BlockKey(n))?;
    let below = reader.trace_tip()?.map(|t| t.number + 1).unwrap_or(0);
    if header.as_ref().map(|h| h.hash) != Some(hash) || below != n {
        return Ok(false);
    }
    // Balances move an address's latest balance only once the balance writer has passed the block: a latest
    // balance moved ahead of it would hide the writer's older ones, and a revert would then restore one too old.
    if !balances.is_empty() && reader.balance_tip()?.is_none_or(|t| t.number < n) {
        return Ok(false);
    }
    // The transaction count must match what is stored (checked by hashes already); keep the rows consistent. A
    // block the node refused to trace gets an empty summary: passed, without internal transactions.
    let stored_txs = reader.block_txs(n, None).count();
    if traces.is_some_and(|t| t.len() != stored_txs) {
        let count = traces.map_or(0, Vec::len);
        return Err(StoreError::Inconsistent(format!("block {n}: {count} traces for {stored_txs} transactions")));
    }
    let mut batch = store.batch();
    trace_rows(n, traces.map_or(&[][..], Vec::as_slice), &mut super::rows::PutRows(&mut batch))?;
    batch.set_late_rows(&reader, n, &coin_balance_rows(&reader, n, balances)?)?;
    batch.put_meta(&Meta::TraceTip(Tip { number: n, hash }))?;
    store.write(batch, Durability::Buffered)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::Address;

    fn frame(kind: &str, from: u8, to: u8, error: Option<&str>, calls: Vec<RpcCallFrame>) -> RpcCallFrame {
        RpcCallFrame {
            kind: kind.into(),
            from: Address::repeat_byte(from),
            to: Some(Address::repeat_byte(to)),
            value: Some(U256::from(u64::from(to))),
            gas: None,
            gas_used: None,
            error: error.map(str::to_owned),
            calls,
        }
    }

    #[test]
    fn call_found_balances_wait_until_the_balance_writer_passed_the_block() {
        use crate::indexer::apply::{apply_blocks, empty_block};
        use crate::store::StoreOptions;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let block = empty_block(0, 0, B256::ZERO);
        let hash = block.header.hash;
        apply_blocks(&store, &[block], true).unwrap();
        let (callee, value) = (Address::repeat_byte(9), U256::from(5));
        assert!(
            !commit(&store, 0, hash, Some(&Vec::new()), &[(callee, value)]).unwrap(),
            "the writer is not past block 0"
        );
        let reader = store.reader();
        assert_eq!((reader.trace_tip().unwrap(), reader.get::<CoinBalanceNow>(&callee).unwrap()), (None, None));
        drop(reader);
        let mut batch = store.batch();
        batch.put_meta(&Meta::BalanceTip(Tip { number: 0, hash })).unwrap();
        store.write(batch, Durability::Buffered).unwrap();
        assert!(commit(&store, 0, hash, Some(&Vec::new()), &[(callee, value)]).unwrap());
        let now = store.reader().get::<CoinBalanceNow>(&callee).unwrap();
        assert_eq!(now, Some(CoinBalance { block: 0, value }));
    }

    #[test]
    fn frames_flatten_depth_first_and_failures_propagate_down() {
        let top = frame(
            "CALL",
            1,
            2,
            None,
            vec![
                frame("CREATE2", 2, 3, None, vec![]),
                frame("CALL", 2, 4, Some("execution reverted"), vec![frame("DELEGATECALL", 4, 5, None, vec![])]),
                frame("staticcall", 2, 6, None, vec![]),
            ],
        );
        let frames = flatten(B256::ZERO, &top);
        let shape: Vec<(CallKind, u16)> = frames.iter().map(|f| (f.kind, f.depth)).collect();
        assert_eq!(
            shape,
            vec![
                (CallKind::Call, 0),
                (CallKind::Create2, 1),
                (CallKind::Call, 1),
                (CallKind::DelegateCall, 2),
                (CallKind::StaticCall, 1)
            ]
        );
        assert_eq!((frames[1].to, frames[1].created), (None, Some(Address::repeat_byte(3))));
        let ok: Vec<bool> = frames.iter().map(|f| f.success).collect();
        assert_eq!(ok, vec![true, true, false, false, true], "the delegatecall inside the reverted call failed too");
    }
}

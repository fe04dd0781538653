//! Turns chain events into WebSocket broadcasts, with the payloads Blockscout sends (objects rendered by the same
//! code as the REST lists). Payloads are computed only for topics someone listens to, and blocks indexed while
//! catching up (more than [`BROADCAST_WINDOW`] behind the node's head) are not broadcast one by one.
//!
//! | topic | event | payload |
//! |---|---|---|
//! | `blocks:new_block`, `blocks:<miner>` | `new_block` | `{average_block_time: "<ms>", block: <REST block item>}` |
//! | `blocks:indexing` | `index_status` | `{ratio: "<0..1>", finished: bool}` |
//! | `blocks:indexing_internal_transactions` | `index_status` | the trace pass's ratio, with `--tracing` |
//! | `transactions:new_transaction` | `transaction` | `{transaction: N}` (validated transactions of the block) |
//! | `transactions:new_pending_transaction` | `pending_transaction` | `{pending_transaction: N}` |
//! | `transactions:<hash>` | `collated` | `{}` when the transaction is mined |
//! | `addresses:<hash>` | `transaction`, `pending_transaction` | `{transactions: [<REST transaction items>]}` |
//! | `addresses:<hash>` | `token_transfer` | `{token_transfers: [<REST token transfer items>]}` |
//! | `tokens:<hash>` | `token_transfer` | `{token_transfer: N}` (transfers of the token in the block) |
//! | `watchlist:<account>` | `transaction` | `{transactions: [<REST transaction items>]}` touching the account's watched addresses; joinable only with that account's token |
//! | `addresses:<hash>` | `balance` | `{balance, block_number, exchange_rate: null}` after each block touching it |
//! | `addresses:<hash>` | `current_coin_balance`, `coin_balance` | the new balance and its coin-balance-history item, when it changed |
//! | `addresses:<hash>` | `token_balance` | `{block_number}` after a block with a token transfer of the address |
//! | `addresses:<hash>` | `updated_token_balances_erc_20` (`_erc_721`, `_erc_1155`) | `{token_balances: [<token-balances items>, ≤ 50, largest first], overflow}` per standard the block's transfers touched |
//! | `addresses:<hash>` | `fetched_bytecode`, `changed_bytecode` | `{fetched_bytecode: "0x…"}` when the code writer stores the contract's code; `{}` too when the address held other code before |
//! | `tokens:<hash>` | `total_supply` | `{total_supply: "<decimal>"}` after a block that minted or burned the token |
//! | `transactions:<hash>` | `raw_trace` | `{raw_trace: [<raw-trace items>]}` once the trace pass stored the transaction's block |
//!
//! After a reorg, the subscribers of what the reverted blocks pushed (coin balances, token balances, supplies) get
//! the state after the new branch's next block, or after the index's tip when no block follows the revert within
//! [`CORRECTION_WAIT`], so a client's last push is never one of a replaced branch.

use super::super::json::{hash_hex, iso_timestamp, BlockJson, BlockKind};
use super::super::rest::tokens::{balance_items, transfer_items};
use super::super::rest::traces::{parity_traces, MAX_RAW_FRAMES};
use super::super::rest::{chain_stats, contracts, transactions::pending_items, tx_items};
use super::super::AppState;
use super::topic::Topic;
use crate::chain::{block_transfers, transfer_parties, tx_participants};
use crate::events::ChainEvent;
use crate::store::keys::{BlockPos, TransferPos};
use crate::store::records::{AccountItem, BlockRecord, Bundle, ItemKind, TokenKind};
use crate::store::records::{PendingTxRecord, TokenTransferRecord, TxRecord};
use crate::store::tables::Tokens;
use crate::store::Reader;
use crate::store::StoreResult;
use alloy::primitives::{Address, Bytes, B256, U256};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// Blocks further than this behind the node's head are indexed while catching up and not broadcast one by one.
/// Wide enough for a burst (`anvil_mine 100`, a node that stalled and produced many blocks at once, a client
/// restart a minute behind a 400 ms chain): every block of it is broadcast.
const BROADCAST_WINDOW: u64 = 256;

/// How long pushes the node was too slow for wait for the next block before they are sent at the newest block the
/// publisher has seen (a quiet chain, such as a devnet that mines on demand, may not make one for a long time).
const STRANDED_RETRY: Duration = Duration::from_secs(1);
/// How long a `raw_trace` push waits for the node's trace.
const TRACE_TIMEOUT: Duration = Duration::from_secs(10);
/// Times a `raw_trace` push asks the node (a trace the node failed is asked again after 1 s, then 2 s, while
/// someone still listens), so a node's hiccup does not leave a transaction page waiting for good.
const TRACE_ATTEMPTS: u32 = 3;
/// Most items in one `updated_token_balances_<type>` push (Blockscout's limit; `overflow` says there are more).
const PUSHED_BALANCES: usize = 50;

fn address_topic(address: &Address) -> String {
    Topic::Address(*address).to_string()
}

/// Blocks whose balance pushes may wait for the node at once; past them the oldest waiting block's are dropped
/// (the newer ones carry the later balances).
const BALANCE_QUEUE: usize = 64;

/// The blocks whose balance pushes wait for the worker, oldest first (bounded by [`BALANCE_QUEUE`]).
#[derive(Default)]
struct BalanceQueue {
    jobs: std::sync::Mutex<std::collections::VecDeque<BalanceJob>>,
    ready: tokio::sync::Notify,
    /// Addresses whose push failed (the node was slow, or the block left the chain): the next block's job takes
    /// them, a block that touches no subscribed address makes a job for them alone, and when no block comes within
    /// [`STRANDED_RETRY`] they are pushed at the newest block announced.
    stranded: std::sync::Mutex<Vec<Address>>,
    /// The newest block the publisher has seen (the tip of the chain it has announced): where stranded pushes go
    /// when no block comes, never past a block whose own pushes are still to be sent.
    announced: std::sync::Mutex<Option<BlockHeader>>,
}

/// A block's number, hash, parent hash and timestamp: what its balance pushes need.
type BlockHeader = (u64, B256, B256, u64);

/// The part of `header` a block's balance pushes need.
fn push_header(header: &BlockRecord) -> BlockHeader {
    (header.number, header.hash, header.parent_hash, header.timestamp)
}

impl BalanceQueue {
    fn strand(&self, addresses: Vec<Address>) {
        self.stranded.lock().unwrap_or_else(|p| p.into_inner()).extend(addresses);
    }

    fn has_stranded(&self) -> bool {
        !self.stranded.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    fn take_stranded(&self) -> Vec<Address> {
        std::mem::take(&mut *self.stranded.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn announce(&self, header: Option<BlockHeader>) {
        *self.announced.lock().unwrap_or_else(|p| p.into_inner()) = header;
    }

    /// A job with no addresses of its own at the newest announced block, for pushes that missed their block.
    fn announced_job(&self) -> Option<BalanceJob> {
        let announced = *self.announced.lock().unwrap_or_else(|p| p.into_inner());
        Some(BalanceJob::at(announced?, Vec::new(), Vec::new()))
    }

    fn push(&self, job: BalanceJob) {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.push_back(job);
        if jobs.len() > BALANCE_QUEUE {
            if let Some(dropped) = jobs.pop_front() {
                tracing::debug!(block = dropped.number, "balance pushes dropped: the node is behind on later blocks'");
                let next = jobs.front_mut().expect("the queue held more than one job");
                next.carry(dropped.addresses.into_iter().map(|(address, _)| address).chain(dropped.corrections));
            }
        }
        drop(jobs);
        self.ready.notify_one();
    }

    async fn pop(&self) -> BalanceJob {
        loop {
            if let Some(job) = self.jobs.lock().unwrap_or_else(|p| p.into_inner()).pop_front() {
                return job;
            }
            self.ready.notified().await;
        }
    }
}

/// The balance pushes of one block: read from the node by the block's and its parent's hashes.
struct BalanceJob {
    number: u64,
    hash: B256,
    parent_hash: B256,
    timestamp: u64,
    addresses: Vec<(Address, Option<B256>)>,
    /// Addresses whose last push came from a reverted block: their balance after this block, without a history
    /// item (the block did not change it).
    corrections: Vec<Address>,
}

impl BalanceJob {
    /// The pushes at block `header` of its own `addresses` (with the transaction each first took part in) and of
    /// `corrections`.
    fn at(
        (number, hash, parent_hash, timestamp): BlockHeader,
        addresses: Vec<(Address, Option<B256>)>,
        corrections: Vec<Address>,
    ) -> BalanceJob {
        BalanceJob { number, hash, parent_hash, timestamp, addresses, corrections }
    }

    /// Makes `addresses`, whose pushes of an earlier block were not sent, corrections of this one: their balance
    /// after this block (the one they missed is stale by now).
    fn carry(&mut self, addresses: impl IntoIterator<Item = Address>) {
        let mut pushed: std::collections::HashSet<Address> =
            self.addresses.iter().map(|(a, _)| *a).chain(self.corrections.iter().copied()).collect();
        for address in addresses {
            if pushed.insert(address) {
                self.corrections.push(address);
            }
        }
    }
}

/// Blocks whose pushes are remembered for a reorg to correct: as deep as the undo data a revert needs by default
/// (`--undo-depth`).
const REMEMBERED_BLOCKS: usize = 1024;
/// Most addresses and tokens remembered over all those blocks; past it the oldest blocks are forgotten.
const REMEMBERED_ENTRIES: usize = 100_000;
/// How long the corrections of a revert wait for the new branch's next block before they are pushed at the index's
/// tip (a rollback that no block follows).
const CORRECTION_WAIT: Duration = Duration::from_millis(500);

/// What pushes of a block were about: subscribed addresses' coin balances, holders' token balances (by standard)
/// and tokens' supplies.
#[derive(Debug, Default, PartialEq)]
struct Touched {
    addresses: BTreeSet<Address>,
    holders: BTreeMap<Address, Vec<TokenKind>>,
    supplies: BTreeSet<Address>,
}

impl Touched {
    fn len(&self) -> usize {
        self.addresses.len() + self.holders.len() + self.supplies.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn absorb(&mut self, other: Touched) {
        self.addresses.extend(other.addresses);
        self.supplies.extend(other.supplies);
        for (holder, kinds) in other.holders {
            let known = self.holders.entry(holder).or_default();
            for kind in kinds {
                if !known.contains(&kind) {
                    known.push(kind);
                }
            }
        }
    }
}

/// The recent blocks' pushes, and what reverted ones pushed that is not corrected yet.
#[derive(Default)]
struct Remembered {
    blocks: std::collections::VecDeque<(u64, B256, Touched)>,
    entries: usize,
    reverted: Touched,
}

impl Remembered {
    fn applied(&mut self, number: u64, hash: B256, touched: Touched) {
        if touched.is_empty() {
            return;
        }
        self.entries += touched.len();
        self.blocks.push_back((number, hash, touched));
        while self.blocks.len() > REMEMBERED_BLOCKS || self.entries > REMEMBERED_ENTRIES {
            let Some((_, _, forgotten)) = self.blocks.pop_front() else { break };
            self.entries -= forgotten.len();
        }
    }

    fn reverted(&mut self, number: u64, hash: B256) {
        if let Some(at) = self.blocks.iter().rposition(|(n, h, _)| *n == number && *h == hash) {
            let (_, _, touched) = self.blocks.remove(at).expect("found above");
            self.entries -= touched.len();
            self.reverted.absorb(touched);
        }
    }
}

/// Publishes chain events until `cancel` fires.
pub async fn run(state: AppState, cancel: CancellationToken) {
    let mut events = state.events.subscribe();
    // Balance pushes need the node, so they leave the event loop; one worker sends them block after block, so an
    // address's last push is its latest balance.
    let balances = std::sync::Arc::new(BalanceQueue::default());
    tokio::spawn(publish_balances(state.clone(), balances.clone(), cancel.clone()));
    let mut remembered = Remembered::default();
    // When the corrections of a revert go out at the tip if no block came first.
    let mut correct_at: Option<tokio::time::Instant> = None;
    loop {
        let wait = tokio::time::sleep_until(correct_at.unwrap_or_else(tokio::time::Instant::now));
        let event = tokio::select! {
            _ = cancel.cancelled() => return,
            event = events.recv() => event,
            _ = wait, if correct_at.is_some() => {
                correct_at = None;
                let reverted = std::mem::take(&mut remembered.reverted);
                if let Err(e) = publish_corrections_at_tip(&state, reverted, &balances) {
                    tracing::warn!(error = %e, "building corrections after a reorg failed");
                }
                continue;
            }
        };
        match event {
            Ok(ChainEvent::Applied(block)) => {
                correct_at = None;
                match publish_block(&state, &block, &balances, &mut remembered.reverted) {
                    Ok(touched) => remembered.applied(block.number(), block.header.hash, touched),
                    Err(e) => tracing::warn!(error = %e, block = block.number(), "building broadcasts failed"),
                }
                // After the block's own job is queued, so a retry at this block never goes before that job.
                balances.announce(Some(push_header(&block.header)));
            }
            Ok(ChainEvent::Reverted { number, hash }) => {
                // Reverts come newest first and leave the stored block below them in place.
                let below = number.checked_sub(1).map(|n| stored_header(&state.store.reader(), n));
                balances.announce(below.and_then(|header| header.ok().flatten()));
                remembered.reverted(number, hash);
                correct_at = Some(tokio::time::Instant::now() + CORRECTION_WAIT);
            }
            Ok(ChainEvent::Reset) => {
                balances.announce(None);
                (remembered, correct_at) = (Remembered::default(), None);
            }
            Ok(ChainEvent::Pending(txs)) => {
                if let Err(e) = publish_pending(&state, &txs) {
                    tracing::warn!(error = %e, "building pending broadcasts failed");
                }
            }
            Ok(ChainEvent::Traced { txs, .. }) => {
                let wanted: Vec<B256> =
                    txs.iter().copied().filter(|h| state.ws.hub.wants(&Topic::transaction(h).to_string())).collect();
                if !wanted.is_empty() {
                    tokio::spawn(publish_raw_traces(state.clone(), wanted));
                }
            }
            Ok(ChainEvent::CodeStored { address, code, changed }) => publish_code(&state, address, &code, changed),
            Ok(ChainEvent::Balanced { .. } | ChainEvent::ProxyUpgraded { .. }) => {}
            Err(RecvError::Lagged(missed)) => {
                state.status.metrics().ws_events_missed(missed);
                tracing::warn!(missed, "chain events not broadcast: the publisher fell behind the indexer");
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Broadcasts what `block` changed, then corrects what `reverted` blocks had pushed; returns what it pushed.
fn publish_block(
    state: &AppState,
    block: &Bundle,
    balances_queue: &BalanceQueue,
    reverted: &mut Touched,
) -> StoreResult<Touched> {
    let hub = &state.ws.hub;
    if hub.connections() == 0 {
        *reverted = Touched::default();
        return Ok(Touched::default());
    }
    let status = state.status.snapshot();
    let indexing = Topic::BlockIndexing.to_string();
    if hub.wants(&indexing) {
        let ratio = match status.node_head {
            Some(head) => ((block.number() + 1) as f64 / (head + 1) as f64).min(1.0),
            None => 1.0,
        };
        let finished = status.node_head.is_some_and(|head| block.number() + 2 >= head);
        hub.publish(&indexing, "index_status", &json!({"ratio": format!("{ratio:.4}"), "finished": finished}));
    }
    let internal_indexing = Topic::InternalIndexing.to_string();
    if let (Some(ratio), true) = (status.trace_ratio(), hub.wants(&internal_indexing)) {
        let finished = status.trace_lag().is_some_and(|lag| lag <= 2);
        let payload = json!({"ratio": format!("{ratio:.4}"), "finished": finished});
        hub.publish(&internal_indexing, "index_status", &payload);
    }
    if status.node_head.is_some_and(|head| block.number() + BROADCAST_WINDOW < head) {
        state.status.metrics().ws_catch_up_block();
        return Ok(Touched::default());
    }
    let number = block.number();
    let reader = state.store.reader();
    let (new_block, miner_topic) = (Topic::NewBlock.to_string(), Topic::MinedBy(block.header.miner).to_string());
    if hub.wants(&new_block) || hub.wants(&miner_topic) {
        let average = chain_stats(state, &reader).map(|s| s.average_block_time_ms).unwrap_or(0.0);
        let miner = contracts(&reader, [block.header.miner])?.address(&block.header.miner);
        let item = BlockJson::new(&block.header, BlockKind::Block, miner, block.header.blob_tx_count, false);
        let payload = json!({"average_block_time": format!("{average:?}"), "block": item});
        hub.publish(&new_block, "new_block", &payload);
        hub.publish(&miner_topic, "new_block", &payload);
    }
    if !block.txs.is_empty() {
        let topic = Topic::NewTransaction.to_string();
        hub.publish(&topic, "transaction", &json!({"transaction": block.txs.len()}));
    }
    // Per address: the block's transactions it took part in, for subscribed addresses only.
    let mut per_address: BTreeMap<Address, Vec<(BlockPos, TxRecord)>> = BTreeMap::new();
    for (index, tx) in block.txs.iter().enumerate() {
        let pos = BlockPos { block: number, index: index as u32 };
        for address in tx_participants(tx).into_keys() {
            if hub.wants(&address_topic(&address)) {
                per_address.entry(address).or_default().push((pos, tx.clone()));
            }
        }
        let tx_topic = Topic::transaction(&tx.hash).to_string();
        if hub.wants(&tx_topic) {
            hub.publish(&tx_topic, "collated", &json!({}));
        }
    }
    // Token transfers: a count per token, the transfer objects per subscribed address.
    let transfers = block_transfers(block);
    let mut per_token: BTreeMap<Address, usize> = BTreeMap::new();
    let mut per_party: BTreeMap<Address, Vec<(TransferPos, TokenTransferRecord)>> = BTreeMap::new();
    for (pos, transfer) in &transfers {
        *per_token.entry(transfer.token).or_default() += 1;
        for address in transfer_parties(transfer).into_keys() {
            if hub.wants(&address_topic(&address)) {
                per_party.entry(address).or_default().push((*pos, transfer.clone()));
            }
        }
    }
    for (token, count) in per_token {
        let topic = Topic::token(&token).to_string();
        if hub.wants(&topic) {
            hub.publish(&topic, "token_transfer", &json!({"token_transfer": count}));
        }
    }
    for (address, rows) in &per_party {
        let items = transfer_items(&reader, rows)?;
        hub.publish(&address_topic(address), "token_transfer", &json!({"token_transfers": items}));
    }
    let holders: BTreeMap<Address, Vec<TokenKind>> =
        per_party.iter().map(|(address, rows)| (*address, rows.iter().map(|(_, t)| t.kind).collect())).collect();
    publish_token_balances(state, &reader, number, &holders)?;
    let supplies = publish_supplies(state, &reader, transfers.iter().map(|(_, t)| t))?;
    let mut balances: Vec<(Address, Option<B256>)> = Vec::new();
    for (address, rows) in &per_address {
        let items = tx_items(&reader, rows)?;
        hub.publish(&address_topic(address), "transaction", &json!({"transactions": items}));
        balances.push((*address, rows.first().map(|(_, tx)| tx.hash)));
    }
    publish_watchlists(state, block)?;
    if hub.wants(&address_topic(&block.header.miner)) && !per_address.contains_key(&block.header.miner) {
        balances.push((block.header.miner, None));
    }
    let touched = Touched { addresses: balances.iter().map(|(a, _)| *a).collect(), holders, supplies };
    let header = push_header(&block.header);
    if !balances.is_empty() || balances_queue.has_stranded() {
        balances_queue.push(BalanceJob::at(header, balances, Vec::new()));
    }
    publish_corrections(state, &reader, header, std::mem::take(reverted), &touched, balances_queue)?;
    Ok(touched)
}

/// The number, hash, parent hash and timestamp of the stored block `number`.
fn stored_header(reader: &Reader<'_>, number: u64) -> StoreResult<Option<BlockHeader>> {
    Ok(reader.block(number)?.as_ref().map(push_header))
}

/// Corrects what reverted blocks pushed with the state after the index's tip (no block followed the revert).
fn publish_corrections_at_tip(state: &AppState, reverted: Touched, balances_queue: &BalanceQueue) -> StoreResult<()> {
    let reader = state.store.reader();
    let Some(tip) = reader.tip()? else { return Ok(()) };
    let Some(header) = stored_header(&reader, tip.number)? else { return Ok(()) };
    publish_corrections(state, &reader, header, reverted, &Touched::default(), balances_queue)
}

/// Pushes, for what `reverted` blocks had pushed and `pushed` (the pushes of the block `header` names) did not
/// cover, the state after that block: coin balances (through the balance worker, after the block's own), token
/// balances of the standards the reverted blocks moved, and supplies. Only for topics someone still listens to.
fn publish_corrections(
    state: &AppState,
    reader: &Reader<'_>,
    header: BlockHeader,
    reverted: Touched,
    pushed: &Touched,
    balances_queue: &BalanceQueue,
) -> StoreResult<()> {
    let hub = &state.ws.hub;
    let listened = |address: &Address| hub.wants(&address_topic(address));
    let corrections: Vec<Address> =
        reverted.addresses.into_iter().filter(|a| !pushed.addresses.contains(a) && listened(a)).collect();
    if !corrections.is_empty() {
        balances_queue.push(BalanceJob::at(header, Vec::new(), corrections));
    }
    let holders: BTreeMap<Address, Vec<TokenKind>> = reverted
        .holders
        .into_iter()
        .filter(|(holder, _)| listened(holder))
        .map(|(holder, kinds)| {
            let done = pushed.holders.get(&holder);
            let kinds: Vec<TokenKind> = kinds.into_iter().filter(|k| done.is_none_or(|d| !d.contains(k))).collect();
            (holder, kinds)
        })
        .filter(|(_, kinds)| !kinds.is_empty())
        .collect();
    publish_token_balances(state, reader, header.0, &holders)?;
    for token in reverted.supplies.difference(&pushed.supplies) {
        publish_supply(state, reader, token)?;
    }
    Ok(())
}

/// `watchlist:<account>`: the block's transactions that touch an address on the account's watchlist (only the
/// account's own authenticated connections can join the topic).
fn publish_watchlists(state: &AppState, block: &Bundle) -> StoreResult<()> {
    let hub = &state.ws.hub;
    for topic in hub.topics_with_prefix("watchlist:") {
        let Ok(Topic::Watchlist(account)) = Topic::parse(&topic) else { continue };
        let watched: std::collections::HashSet<Address> =
            match state.accounts.items(account, ItemKind::Watch, None, crate::account::MAX_WATCHLIST) {
                Ok(items) => items
                    .into_iter()
                    .filter_map(|(_, item)| match item {
                        AccountItem::Watch { address, .. } => Some(address),
                        _ => None,
                    })
                    .collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "reading a watchlist failed");
                    continue;
                }
            };
        let rows: Vec<(BlockPos, TxRecord)> = block
            .txs
            .iter()
            .enumerate()
            .filter(|(_, tx)| tx_participants(tx).into_keys().any(|a| watched.contains(&a)))
            .map(|(index, tx)| (BlockPos { block: block.number(), index: index as u32 }, tx.clone()))
            .collect();
        if !rows.is_empty() {
            let items = tx_items(&state.store.reader(), &rows)?;
            hub.publish(&topic, "transaction", &json!({"transactions": items}));
        }
    }
    Ok(())
}

/// Sends each queued block's balance pushes, in block order, until `cancel` fires. Balances are read by block hash
/// (EIP-1898), so a block a reorg replaced meanwhile pushes nothing rather than another branch's balance.
async fn publish_balances(state: AppState, jobs: std::sync::Arc<BalanceQueue>, cancel: CancellationToken) {
    loop {
        let mut job = tokio::select! {
            _ = cancel.cancelled() => return,
            job = jobs.pop() => job,
            _ = tokio::time::sleep(STRANDED_RETRY), if jobs.has_stranded() => match jobs.announced_job() {
                Some(job) => job,
                None => continue,
            },
        };
        // Only addresses someone still listens to (a node that stays down must not keep a departed client's
        // retries going).
        let stranded = jobs.take_stranded().into_iter().filter(|a| state.ws.hub.wants(&address_topic(a)));
        job.carry(stranded);
        if job.addresses.is_empty() && job.corrections.is_empty() {
            continue;
        }
        // Every address of the block in one batch per block hash (the index's own batched balance reads).
        let addresses: Vec<Address> = job.addresses.iter().map(|(address, _)| *address).collect();
        let asked: Vec<Address> = addresses.iter().chain(&job.corrections).copied().collect();
        let fetch = async {
            let after = state.node.balances_after(&asked, job.hash).await?;
            let before = match (job.number, addresses.is_empty()) {
                (_, true) => Vec::new(),
                (0, false) => vec![U256::ZERO; addresses.len()],
                _ => state.node.balances_after(&addresses, job.parent_hash).await?,
            };
            Ok::<_, crate::node::NodeError>((after, before))
        };
        let Ok(Ok((after, before))) = tokio::time::timeout(state.config.node_read_timeout, fetch).await else {
            jobs.strand(asked);
            continue;
        };
        let hub = &state.ws.hub;
        // The block's addresses, then its corrections: a correction has no balance before the block, so it gets its
        // balance and current balance and no history item.
        let befores = before.into_iter().map(Some).chain(std::iter::repeat(None));
        let txs = job.addresses.iter().map(|(_, tx)| *tx).chain(std::iter::repeat(None));
        for (((address, after), before), tx) in asked.iter().zip(after).zip(befores).zip(txs) {
            let number = job.number;
            let topic = address_topic(address);
            hub.publish(
                &topic,
                "balance",
                &json!({"balance": after.to_string(), "block_number": number, "exchange_rate": null}),
            );
            if before == Some(after) {
                continue;
            }
            hub.publish(
                &topic,
                "current_coin_balance",
                &json!({"coin_balance": after.to_string(), "exchange_rate": null, "block_number": number}),
            );
            let Some(before) = before else { continue };
            let delta = if after >= before { (after - before).to_string() } else { format!("-{}", before - after) };
            let item = json!({
                "transaction_hash": tx.map(|h| hash_hex(&h)),
                "block_number": number,
                "delta": delta,
                "value": after.to_string(),
                "block_timestamp": iso_timestamp(job.timestamp),
            });
            hub.publish(&topic, "coin_balance", &json!({"coin_balance": item}));
        }
    }
}

fn publish_pending(state: &AppState, txs: &[PendingTxRecord]) -> StoreResult<()> {
    let hub = &state.ws.hub;
    if hub.connections() == 0 {
        return Ok(());
    }
    hub.publish(
        &Topic::NewPendingTransaction.to_string(),
        "pending_transaction",
        &json!({"pending_transaction": txs.len()}),
    );
    let mut per_address: BTreeMap<Address, Vec<PendingTxRecord>> = BTreeMap::new();
    for tx in txs {
        // A transaction to its own sender is pushed to that address once.
        let recipient = tx.to.filter(|to| *to != tx.from);
        for address in [Some(tx.from), recipient].into_iter().flatten() {
            if hub.wants(&address_topic(&address)) {
                per_address.entry(address).or_default().push(tx.clone());
            }
        }
    }
    if per_address.is_empty() {
        return Ok(());
    }
    let reader = state.store.reader();
    for (address, records) in per_address {
        let items: Vec<Value> = pending_items(&reader, &records)?
            .into_iter()
            .map(|i| serde_json::to_value(i).expect("serializes"))
            .collect();
        hub.publish(&address_topic(&address), "pending_transaction", &json!({"transactions": items}));
    }
    Ok(())
}

/// `token_balance` and `updated_token_balances_<type>` for subscribed addresses whose balances the block moved: the
/// address's `/token-balances` items of each standard the block's transfers touched, largest first.
fn publish_token_balances(
    state: &AppState,
    reader: &Reader<'_>,
    number: u64,
    holders: &BTreeMap<Address, Vec<TokenKind>>,
) -> StoreResult<()> {
    let hub = &state.ws.hub;
    for (address, kinds) in holders {
        let topic = address_topic(address);
        hub.publish(&topic, "token_balance", &json!({"block_number": number}));
        let mut kinds = kinds.clone();
        kinds.sort_by_key(|k| k.label());
        kinds.dedup();
        let items = balance_items(reader, *address)?;
        for kind in kinds {
            let mut of_kind: Vec<&Value> = items.iter().filter(|(k, _)| *k == kind).map(|(_, item)| item).collect();
            let value = |item: &Value| item["value"].as_str().and_then(|v| v.parse::<U256>().ok()).unwrap_or_default();
            of_kind.sort_by_key(|item| std::cmp::Reverse(value(item)));
            let overflow = of_kind.len() > PUSHED_BALANCES;
            of_kind.truncate(PUSHED_BALANCES);
            let event = format!("updated_token_balances_{}", kind.label().to_lowercase().replace('-', "_"));
            hub.publish(&topic, &event, &json!({"token_balances": of_kind, "overflow": overflow}));
        }
    }
    Ok(())
}

/// `total_supply` for subscribed tokens the block minted or burned (the supply after the block); returns them.
fn publish_supplies<'a>(
    state: &AppState,
    reader: &Reader<'_>,
    transfers: impl Iterator<Item = &'a TokenTransferRecord>,
) -> StoreResult<BTreeSet<Address>> {
    let hub = &state.ws.hub;
    let changed: BTreeSet<Address> = transfers
        .filter(|t| t.from == Address::ZERO || t.to == Address::ZERO)
        .map(|t| t.token)
        .filter(|token| hub.wants(&Topic::token(token).to_string()))
        .collect();
    for token in &changed {
        publish_supply(state, reader, token)?;
    }
    Ok(changed)
}

/// `total_supply` of `token` as the index holds it now, to its subscribers.
fn publish_supply(state: &AppState, reader: &Reader<'_>, token: &Address) -> StoreResult<()> {
    let topic = Topic::token(token).to_string();
    if let (true, Some(record)) = (state.ws.hub.wants(&topic), reader.get::<Tokens>(token)?) {
        state.ws.hub.publish(&topic, "total_supply", &json!({"total_supply": record.total_supply.to_string()}));
    }
    Ok(())
}

/// `raw_trace` for traced transactions someone watches: the same items as `/transactions/:hash/raw-trace`.
async fn publish_raw_traces(state: AppState, txs: Vec<B256>) {
    for hash in txs {
        let topic = Topic::transaction(&hash).to_string();
        for attempt in 0..TRACE_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(1 << (attempt - 1))).await;
                if !state.ws.hub.wants(&topic) {
                    break;
                }
            }
            let trace = state.node.trace_transaction_with(hash, "callTracer", json!({}));
            if let Ok(Ok(trace)) = tokio::time::timeout(TRACE_TIMEOUT, trace).await {
                let items = parity_traces(&trace, hash, MAX_RAW_FRAMES);
                state.ws.hub.publish(&topic, "raw_trace", &json!({"raw_trace": items}));
                break;
            }
        }
    }
}

/// `fetched_bytecode` (and `changed_bytecode` when the address held other code) once a contract's code is stored.
fn publish_code(state: &AppState, address: Address, code: &Bytes, changed: bool) {
    let hub = &state.ws.hub;
    let topic = address_topic(&address);
    if !hub.wants(&topic) {
        return;
    }
    hub.publish(&topic, "fetched_bytecode", &json!({"fetched_bytecode": code.to_string()}));
    if changed {
        hub.publish(&topic, "changed_bytecode", &json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(number: u64) -> BalanceJob {
        let (hash, parent_hash, addresses) = (B256::ZERO, B256::ZERO, vec![(Address::repeat_byte(number as u8), None)]);
        BalanceJob { number, hash, parent_hash, timestamp: 0, addresses, corrections: Vec::new() }
    }

    fn touched(addresses: &[u8]) -> Touched {
        Touched { addresses: addresses.iter().map(|b| Address::repeat_byte(*b)).collect(), ..Touched::default() }
    }

    /// A revert hands over what that very block pushed (by height and hash), once; memory stays bounded.
    #[test]
    fn a_reverted_block_hands_over_what_it_pushed() {
        let mut remembered = Remembered::default();
        remembered.applied(10, B256::repeat_byte(10), touched(&[1, 2]));
        remembered.applied(11, B256::repeat_byte(11), touched(&[2, 3]));
        remembered.applied(12, B256::repeat_byte(12), Touched::default());
        remembered.reverted(11, B256::repeat_byte(0xee));
        assert!(remembered.reverted.is_empty(), "another branch's block 11 pushed nothing here");
        remembered.reverted(11, B256::repeat_byte(11));
        remembered.reverted(11, B256::repeat_byte(11));
        remembered.reverted(10, B256::repeat_byte(10));
        assert_eq!(remembered.reverted, touched(&[1, 2, 3]));
        assert_eq!((remembered.blocks.len(), remembered.entries), (0, 0));
        for n in 0..REMEMBERED_BLOCKS as u64 + 5 {
            remembered.applied(n, B256::ZERO, touched(&[1]));
        }
        assert_eq!((remembered.blocks.len(), remembered.entries), (REMEMBERED_BLOCKS, REMEMBERED_BLOCKS));
        let many = Touched {
            addresses: (0..REMEMBERED_ENTRIES as u64).map(|n| Address::left_padding_from(&n.to_be_bytes())).collect(),
            ..Touched::default()
        };
        remembered.applied(9_999, B256::ZERO, many);
        assert_eq!((remembered.blocks.len(), remembered.entries), (1, REMEMBERED_ENTRIES), "older blocks make room");
    }

    #[tokio::test]
    async fn a_full_balance_queue_drops_its_oldest_block_and_keeps_the_order() {
        let queue = BalanceQueue::default();
        let pushed = BALANCE_QUEUE as u64 + 3;
        for number in 0..pushed {
            queue.push(job(number));
        }
        let mut popped = Vec::new();
        let mut first = queue.pop().await;
        first.corrections.sort();
        let carried: Vec<Address> = (0..3).map(Address::repeat_byte).collect();
        assert_eq!(first.corrections, carried, "the dropped blocks' addresses are pushed with the next block");
        popped.push(first.number);
        for _ in 1..BALANCE_QUEUE {
            popped.push(queue.pop().await.number);
        }
        assert_eq!(popped, (3..pushed).collect::<Vec<_>>(), "the three oldest blocks are dropped, the rest in order");
        assert!(queue.jobs.lock().unwrap().is_empty());
        // A failed read's addresses wait, whole, for the next job.
        queue.strand(vec![Address::repeat_byte(7), Address::repeat_byte(8)]);
        assert!(queue.has_stranded());
        assert_eq!(queue.take_stranded(), vec![Address::repeat_byte(7), Address::repeat_byte(8)]);
        assert!(!queue.has_stranded());
    }
}

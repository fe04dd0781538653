//! The code writer: fetches each new contract's runtime code with `eth_getCode` at its creating block, off the
//! block path (catch-up never waits for it), and stores it once per code hash (`code`) with the contract's row
//! (`contracts`). Contracts come from each committed block's creations, from the trace pass's internal creations
//! as it advances, and at start from what an earlier run left unfetched.
//!
//! A `contracts` row is a late derived row: it is committed under the store's write lock only while its creating
//! block is canonical, and its prior value joins that block's undo data (`Batch::set_late`), so a reorg that
//! removes the creation removes the row. While the store refuses writes (disk full) the writer pauses (see `pause`)
//! and keeps the unsaved contracts for a retry.

use super::pause::Pauser;
use crate::events::{ChainEvent, EventSender};
use crate::node::Node;
use crate::status::{Status, Writer};
use crate::store::keys::BlockKey;
use crate::store::records::{Bundle, ContractRecord};
use crate::store::tables::{Accounts, Code, Contracts, Headers, TxHashes};
use crate::store::{Durability, Reader, Store, StoreResult};
use alloy::primitives::{keccak256, Address, Bytes, B256};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// How often contracts whose code could not be read (node down) are tried again.
const RETRY_EVERY: Duration = Duration::from_secs(10);
/// How often the trace pass's new internal creations are looked for when no block arrives.
const TRACE_POLL: Duration = Duration::from_secs(2);
/// Traced blocks examined per look at the trace pass (the rest wait for the next look).
const TRACED_BLOCKS_PER_ROUND: u64 = 256;

/// A contract whose code is to be fetched: where and by what it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NewContract {
    /// The creating block.
    pub block: u64,
    /// That block's hash (the row is written only while it is canonical).
    pub block_hash: B256,
    /// The contract.
    pub address: Address,
    /// The creating transaction.
    pub tx: B256,
}

/// The contracts a block's transactions created (successful top-level creations).
pub fn block_creations(block: &Bundle) -> Vec<NewContract> {
    block
        .txs
        .iter()
        .filter(|tx| tx.to.is_none() && tx.succeeded())
        .map(|tx| NewContract {
            block: block.number(),
            block_hash: block.header.hash,
            address: tx.created_or_computed(),
            tx: tx.hash,
        })
        .collect()
}

/// Contracts created inside the traced block `number` (successful creation frames below the top).
fn traced_creations(reader: &Reader<'_>, number: u64) -> StoreResult<Vec<NewContract>> {
    let Some(header) = reader.block(number)? else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    for row in reader.block_calls(number, None) {
        let (_, frame) = row?;
        if let (true, true, Some(address)) = (frame.depth > 0, frame.kind.creates() && frame.success, frame.created) {
            found.push(NewContract { block: number, block_hash: header.hash, address, tx: frame.tx_hash });
        }
    }
    Ok(found)
}

/// Writes `code` as the code of `contract` if its block is still canonical; returns whether it did.
pub fn commit(store: &Store, contract: &NewContract, code: &Bytes) -> StoreResult<bool> {
    let _writes = store.lock_writes();
    let reader = store.reader();
    let canonical = reader.get::<Headers>(&BlockKey(contract.block))?.is_some_and(|h| h.hash == contract.block_hash);
    if !canonical {
        return Ok(false);
    }
    let code_hash = keccak256(code);
    let mut batch = store.batch();
    if reader.get::<Code>(&code_hash)?.is_none() {
        batch.put::<Code>(&code_hash, code)?;
    }
    let record = ContractRecord { code_hash, creation_tx: contract.tx, block: contract.block };
    batch.set_late::<Contracts>(&reader, contract.block, &[(contract.address, Some(record))])?;
    store.write(batch, Durability::Buffered)?;
    Ok(true)
}

/// Follows new contracts and stores their code.
#[derive(Debug)]
pub struct CodeWriter {
    store: Arc<Store>,
    node: Node,
    events: EventSender,
    pauser: Pauser,
    /// Set while the store refuses writes: when to try saving again.
    store_retry: Option<Duration>,
    /// Traced blocks at or below this one were looked at for internal creations.
    traced_through: Option<u64>,
}

impl CodeWriter {
    /// A writer for contracts of `store`, reading code from `node`, reporting pauses through `status`.
    pub fn new(store: Arc<Store>, node: Node, status: Arc<Status>, events: EventSender) -> Self {
        let pauser = Pauser::new(status, Writer::ContractCode);
        CodeWriter { store, node, events, pauser, store_retry: None, traced_through: None }
    }

    /// Fetches and saves the code of `contracts`; returns those the node or the store could not handle now.
    async fn fetch(&mut self, contracts: BTreeSet<NewContract>) -> BTreeSet<NewContract> {
        let mut failed = BTreeSet::new();
        self.store_retry = None;
        for contract in contracts {
            if self.store_retry.is_some() {
                failed.insert(contract);
                continue;
            }
            match self.store.reader().get::<Contracts>(&contract.address) {
                Ok(Some(known)) if known.creation_tx == contract.tx => continue,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, address = %contract.address, "reading a contract failed");
                    continue;
                }
            }
            let code = match self.node.code(contract.address, contract.block).await {
                Ok(code) => code,
                Err(e) => {
                    tracing::debug!(error = %e, address = %contract.address, "contract code unavailable for now");
                    failed.insert(contract);
                    continue;
                }
            };
            let store = self.store.clone();
            let saved = tokio::task::spawn_blocking(move || commit(&store, &contract, &code))
                .await
                .unwrap_or_else(|e| Err(crate::store::StoreError::Inconsistent(format!("code writer task: {e}"))));
            match saved {
                Ok(_) => self.pauser.succeeded(),
                Err(e) if e.is_io() => {
                    self.store_retry = Some(self.pauser.failed(&e));
                    failed.insert(contract);
                }
                Err(e) => tracing::warn!(error = %e, address = %contract.address, "saving contract code failed"),
            }
        }
        failed
    }

    /// Internal creations of blocks the trace pass committed since the last look (bounded per call).
    fn new_traced(&mut self) -> StoreResult<BTreeSet<NewContract>> {
        let reader = self.store.reader();
        let Some(tip) = reader.trace_tip()? else { return Ok(BTreeSet::new()) };
        if self.traced_through.is_some_and(|n| n > tip.number) {
            // A reorg moved the trace tip below what was looked at: the new branch's blocks are looked at again.
            self.traced_through = Some(tip.number);
            return Ok(BTreeSet::new());
        }
        let from = self.traced_through.map_or(0, |n| n + 1);
        let to = tip.number.min(from.saturating_add(TRACED_BLOCKS_PER_ROUND - 1));
        let mut found = BTreeSet::new();
        for number in from..=to {
            found.extend(traced_creations(&reader, number)?);
        }
        if from <= to {
            self.traced_through = Some(to);
        }
        Ok(found)
    }

    /// Contracts an earlier run indexed but whose code is not stored: top-level creations from account records.
    fn unfetched(store: &Store) -> StoreResult<BTreeSet<NewContract>> {
        let reader = store.reader();
        let mut missing = BTreeSet::new();
        for row in reader.rows::<Accounts>() {
            let (address, account) = row?;
            let Some(creation) = account.creation.filter(|c| c.success) else { continue };
            if reader.get::<Contracts>(&address)?.is_some() {
                continue;
            }
            let Some(pos) = reader.get::<TxHashes>(&creation.tx)? else { continue };
            let Some(header) = reader.block(pos.block)? else { continue };
            missing.insert(NewContract { block: pos.block, block_hash: header.hash, address, tx: creation.tx });
        }
        Ok(missing)
    }

    /// Runs until cancelled.
    pub async fn run(mut self, cancel: CancellationToken) {
        let mut events = self.events.subscribe();
        let store = self.store.clone();
        let mut retry = match tokio::task::spawn_blocking(move || Self::unfetched(&store)).await {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "listing contracts without code failed");
                BTreeSet::new()
            }
            Err(e) => {
                tracing::warn!(error = %e, "listing contracts without code failed");
                BTreeSet::new()
            }
        };
        let mut next_retry = tokio::time::Instant::now();
        let mut next_trace_look = tokio::time::Instant::now();
        loop {
            let event = tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep_until(next_retry), if !retry.is_empty() => {
                    retry = self.fetch(std::mem::take(&mut retry)).await;
                    next_retry = tokio::time::Instant::now() + self.store_retry.unwrap_or(RETRY_EVERY);
                    continue;
                }
                _ = tokio::time::sleep_until(next_trace_look) => None,
                event = events.recv() => Some(event),
            };
            let mut found: BTreeSet<NewContract> = BTreeSet::new();
            match event {
                Some(Ok(ChainEvent::Applied(block))) => found.extend(block_creations(&block)),
                Some(Ok(ChainEvent::Reset)) => {
                    self.traced_through = None;
                    retry.clear();
                }
                Some(Ok(_)) => {}
                Some(Err(RecvError::Lagged(_))) => {
                    let store = self.store.clone();
                    if let Ok(Ok(missed)) = tokio::task::spawn_blocking(move || Self::unfetched(&store)).await {
                        found.extend(missed);
                    }
                }
                Some(Err(RecvError::Closed)) => return,
                None => {}
            }
            if tokio::time::Instant::now() >= next_trace_look || !found.is_empty() {
                match self.new_traced() {
                    Ok(traced) => found.extend(traced),
                    Err(e) => tracing::warn!(error = %e, "reading internal creations failed"),
                }
                next_trace_look = tokio::time::Instant::now() + TRACE_POLL;
            }
            if !found.is_empty() {
                retry.extend(self.fetch(found).await);
                next_retry = next_retry.min(tokio::time::Instant::now() + self.store_retry.unwrap_or(RETRY_EVERY));
            }
        }
    }
}

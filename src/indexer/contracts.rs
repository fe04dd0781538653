//! The code writer: fetches each new contract's runtime code with `eth_getCode` at its creating block, off the
//! block path (catch-up never waits for it), and stores it once per code hash (`code`) with the contract's row
//! (`contracts`). Contracts come from each committed block's creations, from the trace pass's internal creations
//! as it advances, and at start from what an earlier run left unfetched.
//!
//! With the code it reads the proxy slots (EIP-1967 logic and beacon, EIP-1822) at the creating block, and again
//! at each block where the contract emits `Upgraded(address)` or `BeaconUpgraded(address)`; when a beacon emits
//! `Upgraded(address)`, the beacon proxies that read it (`beacon_proxies`) are read again at that block too.
//!
//! A `contracts` row is a late derived row: it is committed under the store's write lock only while its creating
//! block is canonical, and its prior value joins that block's undo data (`Batch::set_late`), so a reorg that
//! removes the creation removes the row. While the store refuses writes (disk full) the writer pauses (see `pause`)
//! and keeps the unsaved contracts for a retry.

use super::pause::Pauser;
use crate::contracts::proxy::{
    address_in_slot, EIP1822_PROXIABLE, EIP1967_BEACON, EIP1967_IMPLEMENTATION, IMPLEMENTATION_SELECTOR,
};
use crate::events::{ChainEvent, EventSender};
use crate::node::{Node, NodeError};
use crate::status::{Status, Writer};
use crate::store::keys::{BeaconProxyKey, BlockKey};
use crate::store::records::{Bundle, ContractRecord, ProxyKind, ProxyRecord};
use crate::store::tables::{Accounts, BeaconProxies, Code, Contracts, Headers};
use crate::store::{Durability, LateRows, Reader, Store, StoreResult};
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
/// Proxies of one beacon read again when the beacon announces an upgrade.
const MAX_PROXIES_PER_BEACON: usize = 10_000;
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
    /// The creating transaction (zero for an upgrade: the stored row's is kept).
    pub tx: B256,
    /// Whether this is a proxy's upgrade at `block` rather than its creation: only the proxy's implementation is
    /// read again.
    pub upgrade: bool,
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
            upgrade: false,
        })
        .collect()
}

/// Proxies that announced a new implementation or beacon in the block (`Upgraded`, `BeaconUpgraded`).
pub fn block_upgrades(block: &Bundle) -> Vec<NewContract> {
    let upgraded = keccak256("Upgraded(address)");
    let beacon_upgraded = keccak256("BeaconUpgraded(address)");
    block
        .logs
        .iter()
        .filter(|log| log.topics.first().is_some_and(|t| *t == upgraded || *t == beacon_upgraded))
        .map(|log| NewContract {
            block: block.number(),
            block_hash: block.header.hash,
            address: log.address,
            tx: B256::ZERO,
            upgrade: true,
        })
        .collect()
}

/// What the proxy slots of `address` hold at the end of block `number`.
pub async fn read_proxy(node: &Node, address: Address, number: u64) -> Result<Option<ProxyRecord>, NodeError> {
    let (logic, beacon, proxiable) = tokio::try_join!(
        node.storage(address, EIP1967_IMPLEMENTATION, number),
        node.storage(address, EIP1967_BEACON, number),
        node.storage(address, EIP1822_PROXIABLE, number),
    )?;
    if let Some(implementation) = address_in_slot(logic) {
        return Ok(Some(ProxyRecord { kind: ProxyKind::Eip1967, implementation, beacon: None }));
    }
    if let Some(beacon) = address_in_slot(beacon) {
        let answer = node.call_contract(beacon, Bytes::copy_from_slice(&IMPLEMENTATION_SELECTOR), Some(number)).await?;
        let implementation = answer.filter(|a| a.len() == 32).and_then(|a| address_in_slot(B256::from_slice(&a)));
        return Ok(implementation.map(|implementation| ProxyRecord {
            kind: ProxyKind::Eip1967Beacon,
            implementation,
            beacon: Some(beacon),
        }));
    }
    Ok(address_in_slot(proxiable).map(|implementation| ProxyRecord {
        kind: ProxyKind::Eip1822,
        implementation,
        beacon: None,
    }))
}

/// The beacon proxies that read their implementation from `beacon`, which announced an upgrade: each to be read
/// again at the same block (at most [`MAX_PROXIES_PER_BEACON`]).
fn proxies_of_beacon(store: &Store, beacon: &NewContract) -> StoreResult<Vec<NewContract>> {
    let reader = store.reader();
    let mut found = Vec::new();
    for proxy in reader.beacon_proxies(beacon.address) {
        let proxy = proxy?;
        let current = reader.get::<Contracts>(&proxy)?.and_then(|row| row.proxy).and_then(|p| p.beacon);
        if current == Some(beacon.address) && proxy != beacon.address {
            found.push(NewContract { address: proxy, ..*beacon });
        }
        if found.len() == MAX_PROXIES_PER_BEACON {
            tracing::warn!(beacon = %beacon.address, "a beacon with more proxies than are followed: the rest keep their implementation");
            break;
        }
    }
    Ok(found)
}

/// Contracts created inside the traced block `number` (successful creation frames below the top).
fn traced_creations(reader: &Reader<'_>, number: u64) -> StoreResult<Vec<NewContract>> {
    let Some(header) = reader.block(number)? else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    for row in reader.block_calls(number, None) {
        let (_, frame) = row?;
        if let (true, true, Some(address)) = (frame.depth > 0, frame.kind.creates() && frame.success, frame.created) {
            found.push(NewContract {
                block: number,
                block_hash: header.hash,
                address,
                tx: frame.tx_hash,
                upgrade: false,
            });
        }
    }
    Ok(found)
}

/// Writes `code` and `proxy` as what `contract` holds (for an upgrade: `proxy` into the stored row) if its block is
/// still canonical; returns whether it did.
pub fn commit(store: &Store, contract: &NewContract, code: &Bytes, proxy: Option<ProxyRecord>) -> StoreResult<Saved> {
    let _writes = store.lock_writes();
    let reader = store.reader();
    let canonical = reader.get::<Headers>(&BlockKey(contract.block))?.is_some_and(|h| h.hash == contract.block_hash);
    if !canonical {
        return Ok(Saved::NotCanonical);
    }
    let stored = reader.get::<Contracts>(&contract.address)?;
    // A row a later block wrote (an EIP-7702 delegation, written with its block) is newer than what this writer read
    // at an older block: overwriting it would also make that older block's undo data restore the later row.
    if stored.as_ref().is_some_and(|row| row.block > contract.block) {
        return Ok(Saved::NotCanonical);
    }
    let before = stored.map(|c| c.code_hash);
    let mut batch = store.batch();
    let beacon = proxy.as_ref().and_then(|p| p.beacon);
    let record = if contract.upgrade {
        let Some(stored) = reader.get::<Contracts>(&contract.address)? else { return Ok(Saved::NotCanonical) };
        ContractRecord { proxy, ..stored }
    } else {
        let code_hash = keccak256(code);
        if reader.get::<Code>(&code_hash)?.is_none() {
            batch.put::<Code>(&code_hash, code)?;
        }
        ContractRecord { code_hash, creation_tx: contract.tx, block: contract.block, proxy }
    };
    let saved = match before {
        _ if contract.upgrade => Saved::Upgrade,
        Some(old) if old != record.code_hash => Saved::Code { changed: true },
        _ => Saved::Code { changed: false },
    };
    let mut rows = LateRows::default();
    rows.set::<Contracts>(&contract.address, Some(&record))?;
    if let Some(beacon) = beacon {
        rows.set::<BeaconProxies>(&BeaconProxyKey { beacon, proxy: contract.address }, Some(&()))?;
    }
    batch.set_late_rows(&reader, contract.block, &rows)?;
    store.write(batch, Durability::Buffered)?;
    Ok(saved)
}

/// What [`commit`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// Nothing: the creating block is no longer canonical (or an upgraded contract is unknown, or a later block
    /// wrote the row).
    NotCanonical,
    /// A contract's code; `changed` when the address held other code before.
    Code {
        /// Whether the address's code hash differs from the stored one.
        changed: bool,
    },
    /// A proxy's new implementation.
    Upgrade,
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
    async fn fetch(&mut self, mut contracts: BTreeSet<NewContract>) -> BTreeSet<NewContract> {
        let mut failed = BTreeSet::new();
        self.store_retry = None;
        // Proxies of a beacon that announced an upgrade are read again after it (they are upgrades too).
        let mut followers = BTreeSet::new();
        while let Some(contract) = contracts.pop_first().or_else(|| {
            contracts.append(&mut followers);
            contracts.pop_first()
        }) {
            if self.store_retry.is_some() {
                failed.insert(contract);
                continue;
            }
            match self.store.reader().get::<Contracts>(&contract.address) {
                Ok(Some(known)) if !contract.upgrade && known.creation_tx == contract.tx => continue,
                Ok(None) if contract.upgrade => continue,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, address = %contract.address, "reading a contract failed");
                    continue;
                }
            }
            let code = if contract.upgrade {
                Ok(Bytes::new())
            } else {
                self.node.code(contract.address, contract.block).await
            };
            let read = match code {
                Ok(code) => read_proxy(&self.node, contract.address, contract.block).await.map(|proxy| (code, proxy)),
                Err(e) => Err(e),
            };
            let (code, proxy) = match read {
                Ok(read) => read,
                Err(e) => {
                    tracing::debug!(error = %e, address = %contract.address, "contract code unavailable for now");
                    failed.insert(contract);
                    continue;
                }
            };
            let store = self.store.clone();
            let stored_code = code.clone();
            let saved = tokio::task::spawn_blocking(move || commit(&store, &contract, &stored_code, proxy))
                .await
                .unwrap_or_else(|e| Err(crate::store::StoreError::Inconsistent(format!("code writer task: {e}"))));
            match saved {
                Ok(saved) => {
                    self.pauser.succeeded();
                    match saved {
                        Saved::Code { changed } => {
                            let _ =
                                self.events.send(ChainEvent::CodeStored { address: contract.address, code, changed });
                        }
                        Saved::Upgrade => {
                            let _ = self.events.send(ChainEvent::ProxyUpgraded { address: contract.address });
                            match proxies_of_beacon(&self.store, &contract) {
                                Ok(proxies) => followers.extend(proxies),
                                Err(e) => {
                                    tracing::warn!(error = %e, beacon = %contract.address, "listing a beacon's proxies failed")
                                }
                            }
                        }
                        Saved::NotCanonical => {}
                    }
                }
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
            let Some((pos, _)) = reader.tx(creation.tx)? else { continue };
            let Some(header) = reader.block(pos.block)? else { continue };
            missing.insert(NewContract {
                block: pos.block,
                block_hash: header.hash,
                address,
                tx: creation.tx,
                upgrade: false,
            });
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
                Some(Ok(ChainEvent::Applied(block))) => {
                    found.extend(block_creations(&block));
                    found.extend(block_upgrades(&block));
                }
                Some(Ok(ChainEvent::Reset)) => {
                    self.traced_through = None;
                    retry.clear();
                }
                // The new branch's internal creations are looked at once traced, even when the trace pass is past
                // the reverted height again by the next look (a contract re-created at the same address by CREATE2).
                Some(Ok(ChainEvent::Reverted { number, .. })) if self.traced_through.is_some_and(|n| n >= number) => {
                    self.traced_through = number.checked_sub(1);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::apply::{apply_blocks, empty_block};
    use crate::store::StoreOptions;

    #[test]
    fn code_read_at_an_older_block_never_overwrites_a_row_a_later_block_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let genesis = empty_block(0, 0, B256::ZERO);
        let child = empty_block(1, 0, genesis.header.hash);
        let (hash0, hash1) = (genesis.header.hash, child.header.hash);
        apply_blocks(&store, &[genesis, child], true).unwrap();
        let address = Address::repeat_byte(3);
        let later = ContractRecord { code_hash: B256::repeat_byte(1), creation_tx: B256::ZERO, block: 1, proxy: None };
        let mut batch = store.batch();
        batch.put::<Contracts>(&address, &later).unwrap();
        store.write(batch, Durability::Buffered).unwrap();

        let older = NewContract { block: 0, block_hash: hash0, address, tx: B256::repeat_byte(2), upgrade: false };
        let code = Bytes::from_static(&[0x60, 0x00]);
        assert_eq!(commit(&store, &older, &code, None).unwrap(), Saved::NotCanonical);
        assert_eq!(store.reader().get::<Contracts>(&address).unwrap(), Some(later));

        let same = NewContract { block: 1, block_hash: hash1, ..older };
        assert_eq!(commit(&store, &same, &code, None).unwrap(), Saved::Code { changed: true });
        let stored = store.reader().get::<Contracts>(&address).unwrap().unwrap();
        assert_eq!((stored.code_hash, stored.block), (keccak256(&code), 1));
    }
}

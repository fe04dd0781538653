//! Chain events the indexer publishes after each commit, for live consumers (WebSocket stream, caches).
//!
//! A bounded `tokio::sync::broadcast`: a consumer that falls behind loses events (and learns it), the indexer
//! never waits for anyone.

use crate::store::records::Bundle;
use crate::store::records::PendingTxRecord;
use alloy::primitives::{Address, Bytes, B256};
use std::sync::Arc;

/// Something that changed in the index.
#[derive(Debug, Clone)]
pub enum ChainEvent {
    /// A block was committed (a new head, or a block of the new branch after a reorg).
    Applied(Arc<Bundle>),
    /// A block was reverted by a reorg.
    Reverted {
        /// Height.
        number: u64,
        /// Hash of the reverted block.
        hash: B256,
    },
    /// The index was wiped because the node's chain was replaced.
    Reset,
    /// Transactions newly seen in the node's pool.
    Pending(Arc<Vec<PendingTxRecord>>),
    /// The trace pass stored the traces of a block's transactions.
    Traced {
        /// Height.
        number: u64,
        /// The block's transactions, in order.
        txs: Arc<Vec<B256>>,
    },
    /// The balance writer passed blocks up to `number` (the trace pass, which stays behind it, may go on).
    Balanced {
        /// Its new tip.
        number: u64,
    },
    /// The code writer stored a contract's runtime code.
    CodeStored {
        /// The contract.
        address: Address,
        /// Its runtime code.
        code: Bytes,
        /// Whether the address held other code before (a re-creation at the same address).
        changed: bool,
    },
    /// The code writer read a proxy's slots again after it announced an upgrade (`Upgraded`, `BeaconUpgraded`, or
    /// its beacon's `Upgraded`): what it answers (a token's name, symbol, decimals) may have changed.
    ProxyUpgraded {
        /// The proxy.
        address: Address,
    },
}

/// Sender side of the event stream.
pub type EventSender = tokio::sync::broadcast::Sender<ChainEvent>;

/// A new event channel holding at most `capacity` undelivered events per consumer.
pub fn channel(capacity: usize) -> EventSender {
    tokio::sync::broadcast::channel(capacity).0
}

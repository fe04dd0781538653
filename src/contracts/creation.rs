//! A contract's creation input (init code followed by constructor arguments): the transaction's input when the
//! transaction itself created the contract, else the input of the `CREATE`/`CREATE2` frame that did, which only the
//! node's call trace of the transaction has (the index keeps no inputs of inner calls).

use crate::node::Node;
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, Bytes, B256};
use std::time::Duration;

/// Where the creation input of one contract is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreationInput {
    /// The creating transaction was the creation: its input.
    Stored(Bytes),
    /// A frame inside the transaction created the contract (a factory's call, a constructor creating another
    /// contract): its input is in the node's trace of the transaction.
    Traced(B256),
    /// The creating transaction is not indexed.
    Unknown,
}

impl CreationInput {
    /// Where the creation input of `address`, created by transaction `tx`, is.
    pub fn of(reader: &Reader<'_>, tx: B256, address: Address) -> StoreResult<CreationInput> {
        Ok(match reader.tx(tx)? {
            Some((_, record)) if record.to.is_none() && record.body.creation_address() == address => {
                CreationInput::Stored(record.body.input)
            }
            Some(_) => CreationInput::Traced(tx),
            None => CreationInput::Unknown,
        })
    }

    /// The input when the index has it.
    pub fn stored(self) -> Option<Bytes> {
        match self {
            CreationInput::Stored(input) => Some(input),
            _ => None,
        }
    }

    /// The input, from the node's trace for a creation inside a transaction; `None` when it is unknown, or the node
    /// does not trace the transaction within `limit`.
    pub async fn resolve(self, node: &Node, address: Address, limit: Duration) -> Option<Bytes> {
        match self {
            CreationInput::Stored(input) => Some(input),
            CreationInput::Traced(tx) => match tokio::time::timeout(limit, node.init_code(tx, address)).await {
                Ok(Ok(input)) => input,
                Ok(Err(e)) => {
                    tracing::debug!(%tx, %address, error = %e, "no init code from the node's trace");
                    None
                }
                Err(_) => None,
            },
            CreationInput::Unknown => None,
        }
    }
}

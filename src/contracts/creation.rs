//! A contract's creation input (init code followed by constructor arguments): the transaction's input when the
//! transaction itself created the contract, else the input of the `CREATE`/`CREATE2` frame that did, which only the
//! node's call trace of the transaction has (the index keeps no inputs of inner calls).

use crate::node::Node;
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, Bytes, B256};
use std::collections::{BTreeSet, HashMap};
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
}

/// Whether the constructor arguments `args` a verified source holds are those of the contract's current creation
/// `input` (a reorg can put another creation of the same code at the address); with the input unknown, taken so.
pub fn args_belong(args: &[u8], input: Option<&Bytes>) -> bool {
    input.is_none_or(|input| input.ends_with(args))
}

/// The creation inputs of `creations` (contract and where its input is), in order: stored ones as they are, the
/// others from the node's trace of their transaction, each transaction traced once and all of them within `limit`;
/// `None` where the input is unknown or the node gave no trace in time.
pub async fn inputs(node: &Node, creations: Vec<(Address, CreationInput)>, limit: Duration) -> Vec<Option<Bytes>> {
    let deadline = tokio::time::Instant::now() + limit;
    let traced: BTreeSet<B256> = creations
        .iter()
        .filter_map(|(_, input)| match input {
            CreationInput::Traced(tx) => Some(*tx),
            _ => None,
        })
        .collect();
    let traces = futures_util::future::join_all(traced.into_iter().map(|tx| async move {
        match tokio::time::timeout_at(deadline, node.creation_trace(tx, limit)).await {
            Ok(Ok(trace)) => Some((tx, trace)),
            Ok(Err(e)) => {
                tracing::debug!(%tx, error = %e, "no trace of a creating transaction");
                None
            }
            Err(_) => None,
        }
    }));
    let traces: HashMap<B256, _> = traces.await.into_iter().flatten().collect();
    creations
        .into_iter()
        .map(|(address, input)| match input {
            CreationInput::Stored(input) => Some(input),
            CreationInput::Traced(tx) => traces.get(&tx).and_then(|trace| trace.init_code_of(address).cloned()),
            CreationInput::Unknown => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_belong_to_an_input_that_ends_with_them() {
        let args = [0u8, 0, 0, 9];
        let code = |tail: &[u8]| Bytes::from([&[0x60, 0x80][..], tail].concat());
        assert!(args_belong(&args, Some(&code(&args))));
        assert!(!args_belong(&args, Some(&code(&[0, 0, 0, 8]))), "another creation's arguments");
        assert!(args_belong(&args, None), "an unknown input cannot tell");
    }
}

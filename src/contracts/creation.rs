//! A contract's creation input (init code followed by constructor arguments): the transaction's input when the
//! transaction itself created the contract, else the input of the `CREATE`/`CREATE2` frame that did, which only the
//! node's call trace of the transaction has (the index keeps no inputs of inner calls).

use crate::node::Node;
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, Bytes, B256};
use quick_cache::sync::Cache;
use quick_cache::Weighter;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

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

/// Traces this process asks the node for at once on its clients' behalf: the API's (`raw-trace`, `state-changes`,
/// `debug_trace*` through `/api/eth`, creation inputs) and verification's, all together. A trace of a large
/// transaction costs the node seconds (anvil minutes, as it ignores the tracer's `timeout`), and a dozen at once left
/// it unable to answer the indexer. A trace holds its place until the node answers (or its request times out), not
/// only while someone waits for it.
pub const NODE_TRACES: usize = 2;

/// Creation inputs found in traces kept (most bytes; an init code is at most 48 KiB).
const FOUND_BYTES: u64 = 8 << 20;

/// The creation inputs of contracts created inside transactions, from the node's traces: within the
/// [`NODE_TRACES`] places shared with the API, each found one kept (a transaction creates the same contracts with
/// the same code every time it is traced) so that pages opened again do not trace again.
#[derive(Debug, Clone)]
pub struct CreationTraces {
    node: Node,
    permits: Arc<Semaphore>,
    found: Arc<Cache<(B256, Address), Option<Bytes>, FoundWeight>>,
}

#[derive(Debug, Clone)]
struct FoundWeight;

impl Weighter<(B256, Address), Option<Bytes>> for FoundWeight {
    fn weight(&self, _key: &(B256, Address), input: &Option<Bytes>) -> u64 {
        64 + input.as_ref().map_or(0, |i| i.len() as u64)
    }
}

impl CreationTraces {
    /// Traces of `node`'s, [`NODE_TRACES`] at once.
    pub fn new(node: Node) -> CreationTraces {
        CreationTraces {
            node,
            permits: Arc::new(Semaphore::new(NODE_TRACES)),
            found: Arc::new(Cache::with_weighter(1_024, FOUND_BYTES, FoundWeight)),
        }
    }

    /// The places for node traces, for the API's other traces to share.
    pub fn permits(&self) -> Arc<Semaphore> {
        self.permits.clone()
    }

    /// The creation inputs of `creations` (contract and where its input is), in order: stored ones as they are, the
    /// others from the node's trace of their transaction (each traced once, in a free place), all within `limit`;
    /// `None` where the input is unknown, or no place came free or the node gave no trace in time.
    pub async fn inputs(&self, creations: Vec<(Address, CreationInput)>, limit: Duration) -> Vec<Option<Bytes>> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut known: HashMap<(B256, Address), Option<Bytes>> = HashMap::new();
        let mut wanted: BTreeMap<B256, BTreeSet<Address>> = BTreeMap::new();
        for (address, input) in &creations {
            if let CreationInput::Traced(tx) = input {
                match self.found.get(&(*tx, *address)) {
                    Some(input) => {
                        known.insert((*tx, *address), input);
                    }
                    None => {
                        wanted.entry(*tx).or_default().insert(*address);
                    }
                }
            }
        }
        let traces = wanted.into_iter().map(|(tx, addresses)| {
            // The trace runs on its own: when the waiting ends, it keeps its place until the node has answered.
            let trace = tokio::spawn(self.clone().trace(tx, addresses, deadline, limit));
            async move { tokio::time::timeout_at(deadline, trace).await.ok().and_then(Result::ok).flatten() }
        });
        for (tx, found) in futures_util::future::join_all(traces).await.into_iter().flatten() {
            known.extend(found.into_iter().map(|(address, input)| ((tx, address), input)));
        }
        creations
            .into_iter()
            .map(|(address, input)| match input {
                CreationInput::Stored(input) => Some(input),
                CreationInput::Traced(tx) => known.get(&(tx, address)).cloned().flatten(),
                CreationInput::Unknown => None,
            })
            .collect()
    }

    /// The init codes of `addresses` in the node's trace of `tx`, kept for later; `None` when no place came free
    /// before `deadline` or the node gave no trace.
    async fn trace(
        self,
        tx: B256,
        addresses: BTreeSet<Address>,
        deadline: tokio::time::Instant,
        limit: Duration,
    ) -> Option<(B256, Vec<(Address, Option<Bytes>)>)> {
        let _place = tokio::time::timeout_at(deadline, self.permits.acquire_owned()).await.ok()?.ok()?;
        match self.node.creation_trace(tx, limit).await {
            Ok(trace) => {
                let found: Vec<(Address, Option<Bytes>)> =
                    addresses.into_iter().map(|address| (address, trace.init_code_of(address).cloned())).collect();
                for (address, input) in &found {
                    self.found.insert((tx, *address), input.clone());
                }
                Some((tx, found))
            }
            Err(e) => {
                tracing::debug!(%tx, error = %e, "no trace of a creating transaction");
                None
            }
        }
    }
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

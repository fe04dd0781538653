//! The JSON-RPC shapes we read from the node: only the fields the index stores, every optional field optional.
//!
//! Deliberately leaner than alloy's full RPC types: a node that returns a transaction type alloy does not know
//! (chain-specific envelopes) or omits a field we do not need must not stop indexing.

use alloy::primitives::{Address, Bytes, B256, B64, U128, U256, U64, U8};
use serde::Deserialize;

/// `eth_getBlockByNumber(n, true)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcBlock {
    /// Height.
    pub number: U64,
    /// Hash.
    pub hash: B256,
    /// Parent hash.
    pub parent_hash: B256,
    /// Unix seconds.
    pub timestamp: U64,
    /// Fee recipient.
    #[serde(default)]
    pub miner: Address,
    /// Gas used.
    pub gas_used: U64,
    /// Gas limit.
    pub gas_limit: U64,
    /// Base fee.
    #[serde(default)]
    pub base_fee_per_gas: Option<U128>,
    /// Size in bytes.
    #[serde(default)]
    pub size: Option<U64>,
    /// Difficulty.
    #[serde(default)]
    pub difficulty: Option<U256>,
    /// Total difficulty.
    #[serde(default)]
    pub total_difficulty: Option<U256>,
    /// Nonce.
    #[serde(default)]
    pub nonce: Option<B64>,
    /// Extra data.
    #[serde(default)]
    pub extra_data: Bytes,
    /// Uncle hashes.
    #[serde(default)]
    pub uncles: Vec<B256>,
    /// EIP-4844 blob gas used.
    #[serde(default)]
    pub blob_gas_used: Option<U64>,
    /// EIP-4844 excess blob gas.
    #[serde(default)]
    pub excess_blob_gas: Option<U64>,
    /// Withdrawals (only counted).
    #[serde(default)]
    pub withdrawals: Option<Vec<serde::de::IgnoredAny>>,
    /// Full transactions.
    pub transactions: Vec<RpcTransaction>,
}

/// A transaction object inside a full block.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcTransaction {
    /// Hash.
    pub hash: B256,
    /// Sender.
    pub from: Address,
    /// Recipient.
    #[serde(default)]
    pub to: Option<Address>,
    /// Value.
    #[serde(default)]
    pub value: U256,
    /// Call data.
    #[serde(default)]
    pub input: Bytes,
    /// Nonce.
    pub nonce: U64,
    /// Gas limit.
    pub gas: U64,
    /// Gas price (legacy, or the effective price some nodes report).
    #[serde(default)]
    pub gas_price: Option<U128>,
    /// EIP-1559 max fee.
    #[serde(default)]
    pub max_fee_per_gas: Option<U128>,
    /// EIP-1559 max priority fee.
    #[serde(default)]
    pub max_priority_fee_per_gas: Option<U128>,
    /// Envelope type.
    #[serde(default, rename = "type")]
    pub tx_type: Option<U8>,
    /// Chain id (absent on pre-EIP-155 legacy transactions).
    #[serde(default)]
    pub chain_id: Option<U64>,
    /// EIP-7702 authorizations.
    #[serde(default)]
    pub authorization_list: Vec<RpcAuthorization>,
}

/// One EIP-7702 authorization.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcAuthorization {
    /// Chain id.
    pub chain_id: U256,
    /// Delegate address.
    pub address: Address,
    /// Nonce.
    pub nonce: U64,
    /// Parity.
    #[serde(alias = "v")]
    pub y_parity: U8,
    /// r.
    pub r: U256,
    /// s.
    pub s: U256,
}

/// One receipt of `eth_getBlockReceipts`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcReceipt {
    /// Transaction hash.
    pub transaction_hash: B256,
    /// Block hash (checked against the block: a mismatch means the chain moved between the two requests).
    #[serde(default)]
    pub block_hash: Option<B256>,
    /// 1 success, 0 failure; absent before Byzantium.
    #[serde(default)]
    pub status: Option<U64>,
    /// Gas used by this transaction.
    pub gas_used: U64,
    /// Effective gas price.
    #[serde(default)]
    pub effective_gas_price: Option<U128>,
    /// Created contract.
    #[serde(default)]
    pub contract_address: Option<Address>,
    /// Logs.
    #[serde(default)]
    pub logs: Vec<RpcLog>,
}

/// One log inside a receipt.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcLog {
    /// Emitter.
    pub address: Address,
    /// Topics.
    #[serde(default)]
    pub topics: Vec<B256>,
    /// Data.
    #[serde(default)]
    pub data: Bytes,
    /// Block-wide log index.
    #[serde(default)]
    pub log_index: Option<U64>,
}

/// A block header as `eth_getBlockByNumber(n, false)` returns it (only the fields the follower needs).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcHead {
    /// Height.
    pub number: U64,
    /// Hash.
    pub hash: B256,
    /// Parent hash.
    pub parent_hash: B256,
    /// Unix seconds.
    #[serde(default)]
    pub timestamp: U64,
}

/// `txpool_content`: the node's pool, by sender and nonce.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RpcPool {
    /// Executable transactions.
    #[serde(default)]
    pub pending: std::collections::HashMap<Address, std::collections::HashMap<String, RpcTransaction>>,
    /// Transactions waiting for a nonce gap to close.
    #[serde(default)]
    pub queued: std::collections::HashMap<Address, std::collections::HashMap<String, RpcTransaction>>,
}

/// One frame of `callTracer` output.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcCallFrame {
    /// `CALL`, `DELEGATECALL`, `STATICCALL`, `CALLCODE`, `CREATE`, `CREATE2`, `SELFDESTRUCT`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// Caller.
    pub from: Address,
    /// Callee, or the created contract.
    #[serde(default)]
    pub to: Option<Address>,
    /// Value moved.
    #[serde(default)]
    pub value: Option<U256>,
    /// Gas given.
    #[serde(default)]
    pub gas: Option<U64>,
    /// Gas used.
    #[serde(default)]
    pub gas_used: Option<U64>,
    /// Error, if the frame failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Nested frames.
    #[serde(default)]
    pub calls: Vec<RpcCallFrame>,
}

/// One frame of `callTracer` output as far as a creation's init code needs it.
#[derive(Debug, Deserialize)]
pub struct RpcInitFrame {
    /// `CREATE`, `CREATE2`, or another kind of frame.
    #[serde(rename = "type")]
    pub kind: String,
    /// The created contract, for a creation.
    #[serde(default)]
    pub to: Option<Address>,
    /// The init code, for a creation.
    #[serde(default)]
    pub input: Option<Bytes>,
    /// Error, if the frame failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Nested frames.
    #[serde(default)]
    pub calls: Vec<RpcInitFrame>,
}

impl RpcInitFrame {
    /// The init code of the frame that created `address`: the last creation of it whose effects stand (neither it
    /// nor a frame above it failed; a creation a reverted call undid leaves the address to a later one), else the
    /// last attempt.
    pub fn init_code_of(&self, address: Address) -> Option<&Bytes> {
        let (mut standing, mut attempted) = (None, None);
        let mut frames = vec![(self, false)];
        while let Some((frame, failed_above)) = frames.pop() {
            let failed = failed_above || frame.error.is_some();
            if frame.kind.starts_with("CREATE") && frame.to == Some(address) {
                attempted = frame.input.as_ref();
                if !failed {
                    standing = frame.input.as_ref();
                }
            }
            frames.extend(frame.calls.iter().rev().map(|call| (call, failed)));
        }
        standing.or(attempted)
    }
}

/// One transaction's entry of `debug_traceBlockByNumber` with `callTracer`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcBlockTrace {
    /// The transaction (not every node sends it).
    #[serde(default)]
    pub tx_hash: Option<B256>,
    /// The top-level frame.
    pub result: RpcCallFrame,
}

//! The record types stored as values, one per table (the API's JSON shapes live in `api/`, not here).
//!
//! Amounts use the compact codec of `codec::amount`; everything goes through `codec` to become bytes.

use super::codec::amount;
use alloy::primitives::{Address, Bytes, B256, B64, U256};
use serde::{Deserialize, Serialize};

/// One block: header fields the explorer shows, plus counts and fee totals computed at indexing time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockRecord {
    /// Height.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// Parent hash.
    pub parent_hash: B256,
    /// Unix seconds.
    pub timestamp: u64,
    /// Fee recipient.
    pub miner: Address,
    /// Gas used by all transactions.
    pub gas_used: u64,
    /// Block gas limit.
    pub gas_limit: u64,
    /// EIP-1559 base fee per gas (wei); `None` before London.
    pub base_fee: Option<u128>,
    /// Encoded size in bytes, when the node reports it.
    pub size: Option<u64>,
    /// Difficulty (0 after the merge).
    #[serde(with = "amount")]
    pub difficulty: U256,
    /// Total difficulty, when the node reports it.
    #[serde(with = "amount::option")]
    pub total_difficulty: Option<U256>,
    /// Header nonce.
    pub nonce: B64,
    /// Extra data.
    pub extra_data: Bytes,
    /// Uncle (ommer) hashes.
    pub uncles: Vec<B256>,
    /// Number of withdrawals, when the block has a withdrawals list.
    pub withdrawals_count: Option<u32>,
    /// EIP-4844 blob gas used, when the node reports it.
    pub blob_gas_used: Option<u64>,
    /// EIP-4844 excess blob gas, when the node reports it.
    pub excess_blob_gas: Option<u64>,
    /// Number of transactions.
    pub tx_count: u32,
    /// Number of EIP-4844 (type 3) transactions.
    pub blob_tx_count: u32,
    /// Number of logs.
    pub log_count: u32,
    /// Sum of gas used × effective gas price.
    #[serde(with = "amount")]
    pub fees: U256,
    /// Base fee × gas used.
    #[serde(with = "amount")]
    pub burnt_fees: U256,
    /// Sum of (effective price − base fee) × gas used.
    #[serde(with = "amount")]
    pub priority_fees: U256,
}

/// An EIP-7702 authorization carried by a set-code transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizationRecord {
    /// Chain id the authorization is valid on (0 = any).
    #[serde(with = "amount")]
    pub chain_id: U256,
    /// Address whose code is delegated to.
    pub address: Address,
    /// Nonce of the authority.
    pub nonce: u64,
    /// Signature parity.
    pub y_parity: u8,
    /// Signature r.
    #[serde(with = "amount")]
    pub r: U256,
    /// Signature s.
    #[serde(with = "amount")]
    pub s: U256,
    /// The signer, recovered from the signature (`None` when the signature is invalid).
    pub authority: Option<Address>,
    /// Whether the chain applied it, as far as the indexer could tell (`None`: the node did not serve the
    /// authority's nonce before the block).
    pub status: Option<AuthorizationStatus>,
}

/// What became of an EIP-7702 authorization when its transaction ran (Blockscout's `status` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthorizationStatus {
    /// Applied: the authority's code now delegates to the authorization's address (or was cleared by address 0).
    Ok,
    /// Signed for another chain.
    InvalidChainId,
    /// No authority recovers from the signature (or its `s` is in the upper half).
    InvalidSignature,
    /// The authority's nonce was another one at that point (or the nonce is 2^64 − 1).
    InvalidNonce,
}

impl AuthorizationStatus {
    /// The wire name.
    pub fn label(self) -> &'static str {
        match self {
            AuthorizationStatus::Ok => "ok",
            AuthorizationStatus::InvalidChainId => "invalid_chain_id",
            AuthorizationStatus::InvalidSignature => "invalid_signature",
            AuthorizationStatus::InvalidNonce => "invalid_nonce",
        }
    }
}

/// What a transaction says before it is mined: shared by mined ([`TxRecord`]) and pool ([`PendingTxRecord`])
/// transactions. Stored nested, which bincode encodes as its fields in order (the golden tests pin it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxBody {
    /// Transaction hash.
    pub hash: B256,
    /// Sender.
    pub from: Address,
    /// Recipient; `None` for a contract creation.
    pub to: Option<Address>,
    /// Value in wei.
    #[serde(with = "amount")]
    pub value: U256,
    /// Call data.
    pub input: Bytes,
    /// Sender nonce.
    pub nonce: u64,
    /// Gas limit.
    pub gas_limit: u64,
    /// Legacy gas price (or the node's reported price).
    pub gas_price: Option<u128>,
    /// EIP-1559 max fee per gas.
    pub max_fee_per_gas: Option<u128>,
    /// EIP-1559 max priority fee per gas.
    pub max_priority_fee_per_gas: Option<u128>,
    /// Envelope type (0 legacy, 1, 2, 3, 4, or chain-specific).
    pub tx_type: u8,
}

impl TxBody {
    /// The 4-byte selector of a call, if the input has one.
    pub fn selector(&self) -> Option<[u8; 4]> {
        self.input.get(..4).map(|s| s.try_into().expect("4 bytes"))
    }

    /// The address a contract creation by this transaction gets (sender and nonce).
    pub fn creation_address(&self) -> Address {
        self.from.create(self.nonce)
    }
}

/// One transaction with the summary of its receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxRecord {
    /// The transaction as sent.
    pub body: TxBody,
    /// Receipt status; `None` for pre-Byzantium receipts.
    pub status: Option<bool>,
    /// Gas used by this transaction.
    pub gas_used: u64,
    /// Price actually paid per gas.
    pub effective_gas_price: u128,
    /// Contract created by this transaction.
    pub created: Option<Address>,
    /// Block-wide index of this transaction's first log.
    pub first_log: u32,
    /// Number of logs it emitted.
    pub log_count: u32,
    /// EIP-7702 authorizations.
    pub authorizations: Vec<AuthorizationRecord>,
    /// Token transfers decoded from its logs.
    pub token_transfers: u32,
    /// Whether the contract it created emitted token transfers in it.
    pub token_creation: bool,
}

impl std::ops::Deref for TxRecord {
    type Target = TxBody;
    fn deref(&self) -> &TxBody {
        &self.body
    }
}

impl TxRecord {
    /// Whether the transaction succeeded (pre-Byzantium receipts count as success).
    pub fn succeeded(&self) -> bool {
        self.status != Some(false)
    }

    /// Fee paid: gas used × effective gas price.
    pub fn fee(&self) -> U256 {
        U256::from(self.gas_used) * U256::from(self.effective_gas_price)
    }

    /// The contract a creation made: from the receipt, else computed from sender and nonce.
    pub fn created_or_computed(&self) -> Address {
        self.created.unwrap_or_else(|| self.body.creation_address())
    }
}

/// One event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRecord {
    /// Emitting contract.
    pub address: Address,
    /// Topics (0–4).
    pub topics: Vec<B256>,
    /// Data.
    pub data: Bytes,
    /// Index of the transaction in the block.
    pub tx_index: u32,
    /// Hash of that transaction.
    pub tx_hash: B256,
}

/// A transaction waiting in the node's pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTxRecord {
    /// The transaction as sent.
    pub body: TxBody,
    /// When the index first saw it in the pool (Unix milliseconds).
    pub first_seen_ms: u64,
}

impl std::ops::Deref for PendingTxRecord {
    type Target = TxBody;
    fn deref(&self) -> &TxBody {
        &self.body
    }
}

/// The kind of a call frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallKind {
    /// `CALL`.
    Call,
    /// `DELEGATECALL`.
    DelegateCall,
    /// `STATICCALL`.
    StaticCall,
    /// `CALLCODE`.
    CallCode,
    /// `CREATE`.
    Create,
    /// `CREATE2`.
    Create2,
    /// `SELFDESTRUCT`.
    SelfDestruct,
}

impl CallKind {
    /// Blockscout's name: `call`, `delegatecall`, `staticcall`, `callcode`, `create`, `create2`, `selfdestruct`.
    pub fn label(self) -> &'static str {
        match self {
            CallKind::Call => "call",
            CallKind::DelegateCall => "delegatecall",
            CallKind::StaticCall => "staticcall",
            CallKind::CallCode => "callcode",
            CallKind::Create => "create",
            CallKind::Create2 => "create2",
            CallKind::SelfDestruct => "selfdestruct",
        }
    }

    /// Whether the frame creates a contract.
    pub fn creates(self) -> bool {
        matches!(self, CallKind::Create | CallKind::Create2)
    }
}

/// One call frame of a transaction's trace (index 0 is the transaction itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InternalTxRecord {
    /// The transaction.
    pub tx_hash: B256,
    /// Frame kind.
    pub kind: CallKind,
    /// Caller.
    pub from: Address,
    /// Callee (the beneficiary for `selfdestruct`); `None` for creations.
    pub to: Option<Address>,
    /// Created contract, for creations.
    pub created: Option<Address>,
    /// Value moved.
    #[serde(with = "amount")]
    pub value: U256,
    /// Gas given to the frame.
    pub gas: u64,
    /// Gas it used.
    pub gas_used: u64,
    /// Error of the frame (`execution reverted`, `out of gas`, …).
    pub error: Option<String>,
    /// Whether the frame's effects stand: it and every frame above it finished without error.
    pub success: bool,
    /// Call depth (0 for the transaction).
    pub depth: u16,
}

/// A contract created by an internal call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InternalCreation {
    /// The creating contract.
    pub creator: Address,
    /// The transaction.
    pub tx: B256,
    /// Whether the creating frame succeeded.
    pub success: bool,
}

/// Per transaction of a traced block: internal calls (without the top-level one) and whether one failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// `(internal calls, some call failed)` per transaction index.
    pub txs: Vec<(u32, bool)>,
}

impl TraceSummary {
    /// Internal calls of the whole block.
    pub fn internal_count(&self) -> u64 {
        self.txs.iter().map(|(n, _)| u64::from(*n)).sum()
    }
}

/// Where an address appeared: block number and timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// Block number.
    pub block: u64,
    /// Block timestamp (unix seconds).
    pub timestamp: u64,
}

/// How a contract came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Creation {
    /// The account that created it.
    pub creator: Address,
    /// The creating transaction.
    pub tx: B256,
    /// Whether the creation succeeded (code exists).
    pub success: bool,
}

/// What the index knows about one address; derived state, restored from undo data on revert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRecord {
    /// First block the address appeared in.
    pub first_seen: Seen,
    /// Latest block the address appeared in.
    pub last_seen: Seen,
    /// Transactions the address sent, received or created.
    pub tx_count: u64,
    /// Gas used by the transactions it sent.
    pub gas_used: u128,
    /// Gas used by the transactions sent to it (a contract's gas usage, as Blockscout counts it).
    pub gas_received: u128,
    /// Blocks it mined (as fee recipient).
    pub blocks_mined: u64,
    /// Logs it emitted.
    pub log_count: u64,
    /// Token transfers it sent or received.
    pub token_transfer_count: u64,
    /// Set when the address was created by an indexed transaction.
    pub creation: Option<Creation>,
}

impl AccountRecord {
    /// A record for an address first seen at `seen`.
    pub fn new(seen: Seen) -> Self {
        AccountRecord {
            first_seen: seen,
            last_seen: seen,
            tx_count: 0,
            gas_used: 0,
            gas_received: 0,
            blocks_mined: 0,
            log_count: 0,
            token_transfer_count: 0,
            creation: None,
        }
    }

    /// Whether the address holds code created by an indexed transaction.
    pub fn is_contract(&self) -> bool {
        self.creation.is_some_and(|c| c.success)
    }
}

/// Role bits of an `address_txs` row.
pub mod role {
    /// The address sent the transaction.
    pub const FROM: u8 = 1;
    /// The address received the transaction.
    pub const TO: u8 = 2;
    /// The address was created by the transaction.
    pub const CREATED: u8 = 4;
}

/// Direction bits of an `address_transfers` row.
pub mod direction {
    /// The address sent.
    pub const SENT: u8 = 1;
    /// The address received.
    pub const RECEIVED: u8 = 2;
}

/// One block as the index stores it: header record (with counts and fee totals), transactions with receipt
/// summaries and logs, in block order. Written by the indexer, read back whole to revert a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// Header record.
    pub header: BlockRecord,
    /// Transactions, in block order.
    pub txs: Vec<TxRecord>,
    /// Logs, in block order (index = position).
    pub logs: Vec<LogRecord>,
    /// Native balances after the block of the addresses it names, as the node answered them while indexing (empty
    /// when not fetched; not part of the stored block, so a block read back for a revert has none).
    pub balances: Vec<(Address, U256)>,
}

impl Bundle {
    /// Height.
    pub fn number(&self) -> u64 {
        self.header.number
    }
}

/// Global counters shown by `/stats`; derived state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Indexed blocks.
    pub blocks: u64,
    /// Indexed transactions.
    pub txs: u64,
    /// Distinct addresses seen.
    pub addresses: u64,
    /// Gas used by all indexed transactions.
    pub gas_used: u128,
}

/// Activity of one UTC day; derived state, for `/stats` and the transactions chart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayStats {
    /// Blocks with a timestamp in the day.
    pub blocks: u64,
    /// Transactions in those blocks.
    pub txs: u64,
    /// Gas they used.
    pub gas_used: u128,
}

/// The highest indexed block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tip {
    /// Height.
    pub number: u64,
    /// Hash.
    pub hash: B256,
}

/// Whether the process that last had the store open closed it cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DbState {
    /// Open, or the last run stopped without closing.
    Open,
    /// Closed cleanly.
    Clean,
}

/// The value a derived row had before a block rewrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoRow {
    /// Stable id of the table (`Table::ID`).
    pub table: u8,
    /// Encoded key.
    pub key: Vec<u8>,
    /// Encoded value before the block; `None`: the row did not exist.
    pub before: Option<Vec<u8>>,
}

/// Prior values of every derived row one block touched (accounts, counters, day statistics, token state): the
/// block's undo data. Reverting writes them back byte for byte.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undo {
    /// One entry per touched row, in key order.
    pub rows: Vec<UndoRow>,
}

/// Where a contract's runtime code is and which creation it belongs to (written by the code writer, reverted with
/// the creation's block through its undo data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractRecord {
    /// keccak256 of the runtime code: the key of the `code` table.
    pub code_hash: B256,
    /// The creating transaction.
    pub creation_tx: B256,
    /// The block of that transaction.
    pub block: u64,
    /// The implementation a storage-slot proxy pointed to (at its creation or its latest upgrade).
    pub proxy: Option<ProxyRecord>,
}

/// Storage-slot proxy patterns (EIP-1167 clones are recognized from their code instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProxyKind {
    /// EIP-1967 implementation slot.
    Eip1967,
    /// EIP-1967 beacon slot.
    Eip1967Beacon,
    /// EIP-1822 `PROXIABLE` slot.
    Eip1822,
}

/// What a proxy's storage said, read by the code writer at the proxy's creation and at each `Upgraded` or
/// `BeaconUpgraded` event it emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyRecord {
    /// The pattern.
    pub kind: ProxyKind,
    /// The implementation (for a beacon proxy, the beacon's `implementation()` then).
    pub implementation: Address,
    /// The beacon, for beacon proxies.
    pub beacon: Option<Address>,
}

/// The token standards the index recognizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TokenKind {
    /// Fungible (`Transfer` with 3 topics).
    Erc20,
    /// Non-fungible (`Transfer` with 4 topics).
    Erc721,
    /// Multi-token (`TransferSingle`, `TransferBatch`).
    Erc1155,
}

impl TokenKind {
    /// Blockscout's name: `ERC-20`, `ERC-721`, `ERC-1155`.
    pub fn label(self) -> &'static str {
        match self {
            TokenKind::Erc20 => "ERC-20",
            TokenKind::Erc721 => "ERC-721",
            TokenKind::Erc1155 => "ERC-1155",
        }
    }

    /// Parses Blockscout's name (case-insensitive).
    pub fn parse(label: &str) -> Option<TokenKind> {
        [TokenKind::Erc20, TokenKind::Erc721, TokenKind::Erc1155]
            .into_iter()
            .find(|k| k.label().eq_ignore_ascii_case(label))
    }
}

/// One token transfer, decoded from a log (an ERC-1155 batch gives one per item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenTransferRecord {
    /// Token contract (the log's emitter).
    pub token: Address,
    /// Sender (zero for a mint).
    pub from: Address,
    /// Recipient (zero for a burn).
    pub to: Address,
    /// Standard, from the event's shape.
    pub kind: TokenKind,
    /// Token id (ERC-721, ERC-1155).
    #[serde(with = "amount::option")]
    pub token_id: Option<U256>,
    /// Amount (1 for ERC-721).
    #[serde(with = "amount")]
    pub amount: U256,
    /// Index of the transaction in the block.
    pub tx_index: u32,
    /// Hash of that transaction.
    pub tx_hash: B256,
}

/// An address's latest indexed native balance and the block it is the balance after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoinBalance {
    /// The block.
    pub block: u64,
    /// Balance in wei after that block.
    #[serde(with = "amount")]
    pub value: U256,
}

/// A token amount as a stored value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amount(#[serde(with = "amount")] pub U256);

/// What the index derived about a token contract from its transfers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Standard, from its first transfer.
    pub kind: TokenKind,
    /// Addresses holding a positive amount.
    pub holders: u64,
    /// Transfers (batch items counted one by one).
    pub transfers: u64,
    /// Minted minus burned.
    #[serde(with = "amount")]
    pub total_supply: U256,
    /// Block of its first transfer.
    pub first_block: u64,
}

/// One id of an NFT collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// Current owner (ERC-721); `None` for ERC-1155 ids and burned ERC-721 ids.
    pub owner: Option<Address>,
    /// Amount in existence (1 or 0 for ERC-721).
    #[serde(with = "amount")]
    pub supply: U256,
}

/// What the token's contract says about itself (read with `eth_call`; not chain-derived, never reverted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenMetadata {
    /// `name()`.
    pub name: Option<String>,
    /// `symbol()`.
    pub symbol: Option<String>,
    /// `decimals()`.
    pub decimals: Option<u8>,
}

/// A typed value of the `meta` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Meta {
    /// Schema version of the stored data.
    SchemaVersion(u32),
    /// Open or clean.
    DbState(DbState),
    /// Chain id.
    ChainId(u64),
    /// Genesis hash.
    Genesis(B256),
    /// Highest indexed block.
    Tip(Tip),
    /// Global counters.
    Counters(Counters),
    /// Highest block whose call traces are stored.
    TraceTip(Tip),
    /// Highest block up to which every block's native balances were asked for.
    BalanceTip(Tip),
    /// The name registry (`--name-registry`) whose events the name tables were derived from (`None`: none).
    NameRegistry(Option<Address>),
}

/// An account: an Ethereum address that signed in or was given a token (account data, never chain-derived).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UserRecord {
    /// When the account was created (Unix milliseconds).
    pub created_ms: u64,
    /// Ids of its tokens in `user_tokens`, oldest first (at most `account::MAX_TOKENS`; revoked and expired ones
    /// are dropped at the next mint).
    pub tokens: Vec<u64>,
}

/// A bearer credential (an account token or an API key). Only the SHA-256 of its secret is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialRecord {
    /// The account it acts for.
    pub owner: Address,
    /// A name its owner chose (e.g. `ci`, `browser`).
    pub name: String,
    /// SHA-256 of the secret part.
    pub secret_hash: B256,
    /// Creation time (Unix milliseconds).
    pub created_ms: u64,
    /// Expiry (Unix milliseconds); `None`: until revoked.
    pub expires_ms: Option<u64>,
}

/// The kinds of account items; the byte is part of `account_items` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum ItemKind {
    /// A private address tag.
    AddressTag = 1,
    /// A private transaction tag.
    TransactionTag = 2,
    /// A watchlist entry.
    Watch = 3,
    /// An API key.
    ApiKey = 4,
    /// A custom ABI for a contract.
    CustomAbi = 5,
}

/// Watchlist notification switches: one bit per (asset, direction), Blockscout's `notification_settings`.
pub mod watch_flags {
    /// Native coin received.
    pub const NATIVE_IN: u16 = 1;
    /// Native coin sent.
    pub const NATIVE_OUT: u16 = 1 << 1;
    /// ERC-20 received.
    pub const ERC20_IN: u16 = 1 << 2;
    /// ERC-20 sent.
    pub const ERC20_OUT: u16 = 1 << 3;
    /// ERC-721 received.
    pub const ERC721_IN: u16 = 1 << 4;
    /// ERC-721 sent.
    pub const ERC721_OUT: u16 = 1 << 5;
    /// ERC-404 received.
    pub const ERC404_IN: u16 = 1 << 6;
    /// ERC-404 sent.
    pub const ERC404_OUT: u16 = 1 << 7;
}

/// One item an account owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccountItem {
    /// A private name for an address.
    AddressTag {
        /// The tagged address.
        address: Address,
        /// The tag.
        name: String,
    },
    /// A private name for a transaction.
    TransactionTag {
        /// The tagged transaction.
        hash: B256,
        /// The tag.
        name: String,
    },
    /// A watched address.
    Watch {
        /// The address.
        address: Address,
        /// The owner's name for it.
        name: String,
        /// Notification switches (`watch_flags`).
        flags: u16,
        /// Notify by email.
        email: bool,
    },
    /// An API key (its secret lives in `api_keys` under `key_id`).
    ApiKey {
        /// Row of `api_keys`.
        key_id: u64,
        /// The owner's name for it.
        name: String,
    },
    /// An ABI the owner gives for a contract: the owner's views decode calls to it and its logs with it.
    CustomAbi {
        /// The contract.
        address: Address,
        /// The owner's name for it.
        name: String,
        /// The ABI as compact JSON text (an array of fragments).
        abi: String,
    },
}

impl AccountItem {
    /// The kind of the item.
    pub fn kind(&self) -> ItemKind {
        match self {
            AccountItem::AddressTag { .. } => ItemKind::AddressTag,
            AccountItem::TransactionTag { .. } => ItemKind::TransactionTag,
            AccountItem::Watch { .. } => ItemKind::Watch,
            AccountItem::ApiKey { .. } => ItemKind::ApiKey,
            AccountItem::CustomAbi { .. } => ItemKind::CustomAbi,
        }
    }
}

/// Who owns the account item with a given id (so another account's id is told from a missing one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemOwner {
    /// The owning account.
    pub owner: Address,
    /// The item's kind.
    pub kind: ItemKind,
}

/// A contract source checked by the verifier: what the contract page and decoding show for that address (kept
/// across reorgs of other blocks; shown only while the address's contract row has the same code hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifiedSource {
    /// keccak256 of the runtime code it was verified against (other code at the address later is not covered).
    pub code_hash: B256,
    /// Contract name.
    pub name: String,
    /// The file that declares it.
    pub file_path: String,
    /// The ABI as compact JSON text.
    pub abi: String,
    /// Every source (path, content), the contract's own file first.
    pub sources: Vec<(String, String)>,
    /// Compiler version as the compiler reported it (`0.8.37+commit.…`).
    pub compiler_version: String,
    /// Compiler settings as compact JSON text.
    pub settings: String,
    /// Whether the metadata hash agreed too (full match) or only the code (partial match).
    pub full_match: bool,
    /// Constructor arguments: the creation input after the creation code.
    pub constructor_args: Bytes,
    /// SPDX license of the contract's file.
    pub license: Option<String>,
    /// Unix seconds of the verification.
    pub verified_at: u64,
}

/// Where a verification job is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    /// Waiting for a compile slot.
    Queued,
    /// Being compiled (re-queued if the process stops meanwhile).
    Running,
    /// Matched: the source is in `verified_sources`.
    Verified,
    /// Not verified, with the reason.
    Failed(String),
}

/// A verification request and its state (kept across restarts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationJob {
    /// The contract to verify.
    pub address: Address,
    /// Compiler version as asked.
    pub compiler_version: String,
    /// Contract name (`Name` or `path:Name`).
    pub contract_name: String,
    /// The standard-JSON input as text.
    pub input: String,
    /// Progress.
    pub state: JobState,
    /// Unix milliseconds of the request.
    pub created_ms: u64,
}

/// One node of the name registry (`names`, derived): its plaintext name once the chain published it, its owner,
/// resolver and address record, and for a reverse node the address that claimed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameRecord {
    /// Plaintext name (`alice.dev`), when a registration, a known label or a resolver announced it.
    pub name: Option<String>,
    /// Owner in the registry.
    pub owner: Address,
    /// Resolver set in the registry (zero when none).
    pub resolver: Address,
    /// Address record announced by that resolver (`AddrChanged`).
    pub resolved: Option<Address>,
    /// Expiry (unix seconds) announced by the registration, if any.
    pub expires: Option<u64>,
    /// For `<address>.addr.reverse`: that address (`ReverseClaimed`).
    pub reverse_of: Option<Address>,
    /// Block of the node's first event.
    pub first_block: u64,
}

impl NameRecord {
    /// A node first seen in block `block`, with nothing known yet.
    pub fn new(block: u64) -> Self {
        NameRecord {
            name: None,
            owner: Address::ZERO,
            resolver: Address::ZERO,
            resolved: None,
            expires: None,
            reverse_of: None,
            first_block: block,
        }
    }
}

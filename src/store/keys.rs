//! Fixed-width, order-preserving key encodings for every column family.
//!
//! Rules (see `docs/schema.md`): every key has one fixed length, integers are big-endian, and block-ordered
//! fields are stored as their bitwise complement so that a forward scan yields the newest rows first. A
//! pagination cursor is therefore always "the encoded key to start after", never an offset. Decoding a slice of
//! the wrong length is an error, never a panic.

use alloy::primitives::{Address, B256, U256};

/// A key that encodes to exactly `LEN` bytes, with byte order equal to the key's logical order.
pub trait Key: Sized {
    /// Encoded length in bytes.
    const LEN: usize;
    /// The encoded form; a stack array.
    type Bytes: AsRef<[u8]>;
    /// Encodes the key.
    fn encode(&self) -> Self::Bytes;
    /// Decodes a key, refusing a slice of the wrong length.
    fn decode(bytes: &[u8]) -> Result<Self, KeyError>;
}

/// A key slice had the wrong length for its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key of {kind} must be {expected} bytes, got {got}")]
pub struct KeyError {
    /// The key type's name.
    pub kind: &'static str,
    /// The expected length.
    pub expected: usize,
    /// The length seen.
    pub got: usize,
}

fn exact<const N: usize>(kind: &'static str, bytes: &[u8]) -> Result<[u8; N], KeyError> {
    bytes.try_into().map_err(|_| KeyError { kind, expected: N, got: bytes.len() })
}

fn desc64(n: u64) -> [u8; 8] {
    (!n).to_be_bytes()
}

fn desc32(n: u32) -> [u8; 4] {
    (!n).to_be_bytes()
}

fn read_desc64(bytes: &[u8]) -> u64 {
    !u64::from_be_bytes(bytes[..8].try_into().expect("caller passes 8 bytes"))
}

fn read_desc32(bytes: &[u8]) -> u32 {
    !u32::from_be_bytes(bytes[..4].try_into().expect("caller passes 4 bytes"))
}

/// One-byte tags of the `meta` column family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum MetaKey {
    /// Schema version (u32).
    SchemaVersion = 1,
    /// Database state: open or clean.
    DbState = 2,
    /// Chain id of the indexed chain.
    ChainId = 3,
    /// Hash of block 0 of the indexed chain.
    Genesis = 4,
    /// Highest indexed block (number, hash).
    Tip = 5,
    /// Global counters (blocks, transactions, addresses).
    Counters = 6,
    /// Highest block whose call traces are stored (number, hash).
    TraceTip = 7,
    /// Highest block up to which every block's native balances were asked for (number, hash).
    BalanceTip = 8,
    /// The name registry the name tables were derived from.
    NameRegistry = 9,
}

impl MetaKey {
    /// Every tag, in key order.
    pub const ALL: [MetaKey; 9] = [
        MetaKey::SchemaVersion,
        MetaKey::DbState,
        MetaKey::ChainId,
        MetaKey::Genesis,
        MetaKey::Tip,
        MetaKey::Counters,
        MetaKey::TraceTip,
        MetaKey::BalanceTip,
        MetaKey::NameRegistry,
    ];
}

impl Key for MetaKey {
    const LEN: usize = 1;
    type Bytes = [u8; 1];
    fn encode(&self) -> [u8; 1] {
        [*self as u8]
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let [tag] = exact::<1>("MetaKey", bytes)?;
        MetaKey::ALL.into_iter().find(|k| *k as u8 == tag).ok_or(KeyError { kind: "MetaKey", expected: 1, got: 1 })
    }
}

/// A UTC day (days since the Unix epoch), newest first: `!be32(day)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DayKey(pub u32);

impl DayKey {
    /// The day a Unix timestamp falls on.
    pub fn of_timestamp(seconds: u64) -> DayKey {
        DayKey(u32::try_from(seconds / 86_400).unwrap_or(u32::MAX))
    }
}

impl Key for DayKey {
    const LEN: usize = 4;
    type Bytes = [u8; 4];
    fn encode(&self) -> [u8; 4] {
        desc32(self.0)
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        Ok(DayKey(read_desc32(&exact::<4>("DayKey", bytes)?)))
    }
}

/// A block number, newest first: `!be64(number)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey(pub u64);

impl Key for BlockKey {
    const LEN: usize = 8;
    type Bytes = [u8; 8];
    fn encode(&self) -> [u8; 8] {
        desc64(self.0)
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        Ok(BlockKey(read_desc64(&exact::<8>("BlockKey", bytes)?)))
    }
}

impl Key for B256 {
    const LEN: usize = 32;
    type Bytes = [u8; 32];
    fn encode(&self) -> [u8; 32] {
        self.0
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        Ok(B256::new(exact::<32>("Hash", bytes)?))
    }
}

impl Key for Address {
    const LEN: usize = 20;
    type Bytes = [u8; 20];
    fn encode(&self) -> [u8; 20] {
        self.0 .0
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        Ok(Address::new(exact::<20>("Address", bytes)?))
    }
}

/// Position of a row inside a block (transaction index or log index), newest first:
/// `!be64(block) ‖ !be32(index)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct BlockPos {
    /// Block number.
    pub block: u64,
    /// Index inside the block.
    pub index: u32,
}

impl BlockPos {
    /// Orders positions newest first, the order their encodings sort in.
    pub fn newest_first(&self, other: &Self) -> std::cmp::Ordering {
        (other.block, other.index).cmp(&(self.block, self.index))
    }
}

impl Key for BlockPos {
    const LEN: usize = 12;
    type Bytes = [u8; 12];
    fn encode(&self) -> [u8; 12] {
        let mut out = [0u8; 12];
        out[..8].copy_from_slice(&desc64(self.block));
        out[8..].copy_from_slice(&desc32(self.index));
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<12>("BlockPos", bytes)?;
        Ok(BlockPos { block: read_desc64(&b), index: read_desc32(&b[8..]) })
    }
}

/// Bytes of a transaction hash that key the `tx_hashes` table.
pub const TX_HASH_PREFIX: usize = 8;

/// Where a transaction is, filed under the first [`TX_HASH_PREFIX`] bytes of its hash: `hash[..8] ‖ !be64(block) ‖
/// !be32(index)`. The rest of the hash is stored once, in the `txs` row the key points to, which a lookup reads
/// anyway and compares; transactions whose hashes share the 8 bytes are each a key of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TxHashKey {
    /// The first bytes of the hash.
    pub prefix: [u8; TX_HASH_PREFIX],
    /// The transaction's place.
    pub pos: BlockPos,
}

impl TxHashKey {
    /// The key of the transaction `hash` at `pos`.
    pub fn new(hash: &B256, pos: BlockPos) -> Self {
        TxHashKey { prefix: Self::prefix_of(hash), pos }
    }

    /// The bytes of `hash` that lead its keys.
    pub fn prefix_of(hash: &B256) -> [u8; TX_HASH_PREFIX] {
        hash.0[..TX_HASH_PREFIX].try_into().expect("a hash is longer than its prefix")
    }
}

impl Key for TxHashKey {
    const LEN: usize = TX_HASH_PREFIX + BlockPos::LEN;
    type Bytes = [u8; 20];
    fn encode(&self) -> [u8; 20] {
        let mut out = [0u8; 20];
        out[..TX_HASH_PREFIX].copy_from_slice(&self.prefix);
        out[TX_HASH_PREFIX..].copy_from_slice(&self.pos.encode());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<20>("TxHashKey", bytes)?;
        let prefix = b[..TX_HASH_PREFIX].try_into().expect("8 bytes");
        Ok(TxHashKey { prefix, pos: BlockPos::decode(&b[TX_HASH_PREFIX..])? })
    }
}

/// A row of an address's history: `addr20 ‖ position`, the address's rows together and, within them, in the
/// position's own order (newest first). One generic for transactions, transfers and internal calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressKey<P> {
    /// The address the history belongs to.
    pub address: Address,
    /// Where in the chain.
    pub pos: P,
}

/// An address's transactions or logs: `addr20 ‖ !be64(block) ‖ !be32(index)`.
pub type AddressPos = AddressKey<BlockPos>;
/// An address's (or a token's) transfers: `addr20 ‖ TransferPos`.
pub type AddressTransferPos = AddressKey<TransferPos>;
/// An address's internal transactions: `addr20 ‖ TracePos`.
pub type AddressTracePos = AddressKey<TracePos>;

/// The encoded form of a composite key: a stack buffer of up to [`KeyBytes::CAPACITY`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBytes {
    buf: [u8; KeyBytes::CAPACITY],
    len: usize,
}

impl KeyBytes {
    /// The longest composite key.
    pub const CAPACITY: usize = 40;

    fn of(parts: &[&[u8]]) -> KeyBytes {
        let mut out = KeyBytes { buf: [0; KeyBytes::CAPACITY], len: 0 };
        for part in parts {
            out.buf[out.len..out.len + part.len()].copy_from_slice(part);
            out.len += part.len();
        }
        out
    }
}

impl AsRef<[u8]> for KeyBytes {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<P: Key> Key for AddressKey<P> {
    const LEN: usize = 20 + P::LEN;
    type Bytes = KeyBytes;
    fn encode(&self) -> KeyBytes {
        KeyBytes::of(&[self.address.as_slice(), self.pos.encode().as_ref()])
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() != Self::LEN {
            return Err(KeyError { kind: "AddressKey", expected: Self::LEN, got: bytes.len() });
        }
        Ok(AddressKey { address: Address::from_slice(&bytes[..20]), pos: P::decode(&bytes[20..])? })
    }
}

/// A token transfer's position: `!be64(block) ‖ !be32(log index) ‖ !be16(item)`, newest first (the item index
/// splits an ERC-1155 batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TransferPos {
    /// Block number.
    pub block: u64,
    /// Log index in the block.
    pub log: u32,
    /// Item inside the log (0 except for batches).
    pub item: u16,
}

impl TransferPos {
    /// Orders positions newest first, the order their encodings sort in.
    pub fn newest_first(&self, other: &Self) -> std::cmp::Ordering {
        (other.block, other.log, other.item).cmp(&(self.block, self.log, self.item))
    }
}

impl Key for TransferPos {
    const LEN: usize = 14;
    type Bytes = [u8; 14];
    fn encode(&self) -> [u8; 14] {
        let mut out = [0u8; 14];
        out[..8].copy_from_slice(&desc64(self.block));
        out[8..12].copy_from_slice(&desc32(self.log));
        out[12..].copy_from_slice(&(!self.item).to_be_bytes());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<14>("TransferPos", bytes)?;
        Ok(TransferPos { block: read_desc64(&b), log: read_desc32(&b[8..]), item: !u16::from_be_bytes([b[12], b[13]]) })
    }
}

/// A holder's balance of one token id: `holder20 ‖ token20 ‖ be256(id)` (id 0 for fungible tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BalanceKey {
    /// Holder.
    pub holder: Address,
    /// Token contract.
    pub token: Address,
    /// Token id.
    pub id: U256,
}

impl Key for BalanceKey {
    const LEN: usize = 72;
    type Bytes = [u8; 72];
    fn encode(&self) -> [u8; 72] {
        let mut out = [0u8; 72];
        out[..20].copy_from_slice(self.holder.as_slice());
        out[20..40].copy_from_slice(self.token.as_slice());
        out[40..].copy_from_slice(&self.id.to_be_bytes::<32>());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<72>("BalanceKey", bytes)?;
        Ok(BalanceKey {
            holder: Address::from_slice(&b[..20]),
            token: Address::from_slice(&b[20..40]),
            id: U256::from_be_slice(&b[40..]),
        })
    }
}

/// A token's holder: `token20 ‖ holder20`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HolderKey {
    /// Token contract.
    pub token: Address,
    /// Holder.
    pub holder: Address,
}

impl Key for HolderKey {
    const LEN: usize = 40;
    type Bytes = [u8; 40];
    fn encode(&self) -> [u8; 40] {
        let mut out = [0u8; 40];
        out[..20].copy_from_slice(self.token.as_slice());
        out[20..].copy_from_slice(self.holder.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<40>("HolderKey", bytes)?;
        Ok(HolderKey { token: Address::from_slice(&b[..20]), holder: Address::from_slice(&b[20..]) })
    }
}

/// A proxy that reads its implementation from a beacon: `beacon20 ‖ proxy20`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BeaconProxyKey {
    /// The beacon.
    pub beacon: Address,
    /// The proxy.
    pub proxy: Address,
}

impl Key for BeaconProxyKey {
    const LEN: usize = 40;
    type Bytes = [u8; 40];
    fn encode(&self) -> [u8; 40] {
        let mut out = [0u8; 40];
        out[..20].copy_from_slice(self.beacon.as_slice());
        out[20..].copy_from_slice(self.proxy.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<40>("BeaconProxyKey", bytes)?;
        Ok(BeaconProxyKey { beacon: Address::from_slice(&b[..20]), proxy: Address::from_slice(&b[20..]) })
    }
}

/// A token's holders by amount, largest first: `token20 ‖ !be256(amount) ‖ holder20`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HolderRankKey {
    /// Token contract.
    pub token: Address,
    /// The holder's total.
    pub amount: U256,
    /// Holder.
    pub holder: Address,
}

impl Key for HolderRankKey {
    const LEN: usize = 72;
    type Bytes = [u8; 72];
    fn encode(&self) -> [u8; 72] {
        let mut out = [0u8; 72];
        out[..20].copy_from_slice(self.token.as_slice());
        out[20..52].copy_from_slice(&(!self.amount).to_be_bytes::<32>());
        out[52..].copy_from_slice(self.holder.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<72>("HolderRankKey", bytes)?;
        Ok(HolderRankKey {
            token: Address::from_slice(&b[..20]),
            amount: !U256::from_be_slice(&b[20..52]),
            holder: Address::from_slice(&b[52..]),
        })
    }
}

/// One token id of an NFT collection: `token20 ‖ be256(id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceKey {
    /// Token contract.
    pub token: Address,
    /// Token id.
    pub id: U256,
}

impl Key for InstanceKey {
    const LEN: usize = 52;
    type Bytes = [u8; 52];
    fn encode(&self) -> [u8; 52] {
        let mut out = [0u8; 52];
        out[..20].copy_from_slice(self.token.as_slice());
        out[20..].copy_from_slice(&self.id.to_be_bytes::<32>());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<52>("InstanceKey", bytes)?;
        Ok(InstanceKey { token: Address::from_slice(&b[..20]), id: U256::from_be_slice(&b[20..]) })
    }
}

/// Tokens by holder count, most held first: `!be64(holders) ‖ token20`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenRankKey {
    /// Holder count.
    pub holders: u64,
    /// Token contract.
    pub token: Address,
}

impl Key for TokenRankKey {
    const LEN: usize = 28;
    type Bytes = [u8; 28];
    fn encode(&self) -> [u8; 28] {
        let mut out = [0u8; 28];
        out[..8].copy_from_slice(&desc64(self.holders));
        out[8..].copy_from_slice(self.token.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<28>("TokenRankKey", bytes)?;
        Ok(TokenRankKey { holders: read_desc64(&b), token: Address::from_slice(&b[8..]) })
    }
}

/// Addresses by native balance, largest first: `!be256(balance) ‖ address20`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CoinRankKey {
    /// The address's latest indexed balance (wei).
    pub balance: U256,
    /// The address.
    pub address: Address,
}

impl Key for CoinRankKey {
    const LEN: usize = 52;
    type Bytes = [u8; 52];
    fn encode(&self) -> [u8; 52] {
        let mut out = [0u8; 52];
        out[..32].copy_from_slice(&(!self.balance).to_be_bytes::<32>());
        out[32..].copy_from_slice(self.address.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<52>("CoinRankKey", bytes)?;
        Ok(CoinRankKey { balance: !U256::from_be_slice(&b[..32]), address: Address::from_slice(&b[32..]) })
    }
}

/// Width of the text part of a search key.
pub const SEARCH_TEXT: usize = 32;

/// A token name or symbol for prefix search: its lowercase first 32 bytes, zero-padded, then `token20`.
/// Ordered as encoded: text, then token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SearchKey {
    /// Lowercase text, zero-padded.
    pub text: [u8; SEARCH_TEXT],
    /// Token contract.
    pub token: Address,
}

impl SearchKey {
    /// The key of `text` (lowercased, cut to 32 bytes at a character boundary) for `token`.
    pub fn new(text: &str, token: Address) -> Self {
        SearchKey { text: search_text(text).0, token }
    }
}

/// The search-key form of a query: lowercased, cut at 32 bytes; returns the padded text and its length.
pub fn search_text(text: &str) -> ([u8; SEARCH_TEXT], usize) {
    let lower = text.to_lowercase();
    let mut end = lower.len().min(SEARCH_TEXT);
    while !lower.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = [0u8; SEARCH_TEXT];
    out[..end].copy_from_slice(&lower.as_bytes()[..end]);
    (out, end)
}

impl Key for SearchKey {
    const LEN: usize = 52;
    type Bytes = [u8; 52];
    fn encode(&self) -> [u8; 52] {
        let mut out = [0u8; 52];
        out[..SEARCH_TEXT].copy_from_slice(&self.text);
        out[SEARCH_TEXT..].copy_from_slice(self.token.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<52>("SearchKey", bytes)?;
        let mut text = [0u8; SEARCH_TEXT];
        text.copy_from_slice(&b[..SEARCH_TEXT]);
        Ok(SearchKey { text, token: Address::from_slice(&b[SEARCH_TEXT..]) })
    }
}

/// An internal transaction's position: `!be64(block) ‖ !be32(transaction index) ‖ !be32(trace index)`, newest
/// first (trace index 0 is the transaction's top-level call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TracePos {
    /// Block number.
    pub block: u64,
    /// Transaction index in the block.
    pub tx: u32,
    /// Call index in the transaction, depth-first.
    pub index: u32,
}

impl TracePos {
    /// Orders positions newest first, the order their encodings sort in.
    pub fn newest_first(&self, other: &Self) -> std::cmp::Ordering {
        (other.block, other.tx, other.index).cmp(&(self.block, self.tx, self.index))
    }
}

impl Key for TracePos {
    const LEN: usize = 16;
    type Bytes = [u8; 16];
    fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&desc64(self.block));
        out[8..12].copy_from_slice(&desc32(self.tx));
        out[12..].copy_from_slice(&desc32(self.index));
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<16>("TracePos", bytes)?;
        Ok(TracePos { block: read_desc64(&b), tx: read_desc32(&b[8..]), index: read_desc32(&b[12..]) })
    }
}

/// A pending transaction in arrival order, newest first: `!be64(first seen, Unix ms) ‖ hash32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PendingKey {
    /// When the transaction was first seen in the pool (Unix milliseconds).
    pub seen_ms: u64,
    /// Its hash.
    pub hash: B256,
}

impl Key for PendingKey {
    const LEN: usize = 40;
    type Bytes = [u8; 40];
    fn encode(&self) -> [u8; 40] {
        let mut out = [0u8; 40];
        out[..8].copy_from_slice(&desc64(self.seen_ms));
        out[8..].copy_from_slice(self.hash.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<40>("PendingKey", bytes)?;
        Ok(PendingKey { seen_ms: read_desc64(&b), hash: B256::from_slice(&b[8..]) })
    }
}

/// A reorged-out block: `!be64(number) ‖ hash32`, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReorgedKey {
    /// Height of the block that lost consensus.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
}

impl Key for ReorgedKey {
    const LEN: usize = 40;
    type Bytes = [u8; 40];
    fn encode(&self) -> [u8; 40] {
        let mut out = [0u8; 40];
        out[..8].copy_from_slice(&desc64(self.number));
        out[8..].copy_from_slice(self.hash.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<40>("ReorgedKey", bytes)?;
        Ok(ReorgedKey { number: read_desc64(&b), hash: B256::from_slice(&b[8..]) })
    }
}

/// A serial number in ascending order: `be64(n)` (account data: item ids, token and API key ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SerialKey(pub u64);

impl Key for SerialKey {
    const LEN: usize = 8;
    type Bytes = [u8; 8];
    fn encode(&self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        Ok(SerialKey(u64::from_be_bytes(exact::<8>("SerialKey", bytes)?)))
    }
}

/// An account's item of one kind, newest first: `kind8 ‖ !be64(id)` (after the owner's address in [`ItemKey`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ItemPos {
    /// What the item is (see `records::ItemKind`).
    pub kind: u8,
    /// Its id (unique across all accounts).
    pub id: u64,
}

impl Key for ItemPos {
    const LEN: usize = 9;
    type Bytes = [u8; 9];
    fn encode(&self) -> [u8; 9] {
        let mut out = [0u8; 9];
        out[0] = self.kind;
        out[1..].copy_from_slice(&desc64(self.id));
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<9>("ItemPos", bytes)?;
        Ok(ItemPos { kind: b[0], id: read_desc64(&b[1..]) })
    }
}

/// An account's item: `owner20 ‖ kind8 ‖ !be64(id)`; one account's items of one kind together, newest first.
pub type ItemKey = AddressKey<ItemPos>;

/// A name in the prefix index: `lowercase name (32 bytes, zero-padded) ‖ node32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameSearchKey {
    /// Lowercase name, zero-padded.
    pub text: [u8; SEARCH_TEXT],
    /// The name's node (namehash).
    pub node: B256,
}

impl NameSearchKey {
    /// The key of `name` (lowercased, cut to 32 bytes at a character boundary) for `node`.
    pub fn new(name: &str, node: B256) -> Self {
        NameSearchKey { text: search_text(name).0, node }
    }
}

impl Key for NameSearchKey {
    const LEN: usize = 64;
    type Bytes = [u8; 64];
    fn encode(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[..SEARCH_TEXT].copy_from_slice(&self.text);
        out[SEARCH_TEXT..].copy_from_slice(self.node.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<64>("NameSearchKey", bytes)?;
        let mut text = [0u8; SEARCH_TEXT];
        text.copy_from_slice(&b[..SEARCH_TEXT]);
        Ok(NameSearchKey { text, node: B256::from_slice(&b[SEARCH_TEXT..]) })
    }
}

/// A name pointing at an address: `address20 ‖ node32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AddressNodeKey {
    /// The address the name's address record holds.
    pub address: Address,
    /// The name's node.
    pub node: B256,
}

impl Key for AddressNodeKey {
    const LEN: usize = 52;
    type Bytes = [u8; 52];
    fn encode(&self) -> [u8; 52] {
        let mut out = [0u8; 52];
        out[..20].copy_from_slice(self.address.as_slice());
        out[20..].copy_from_slice(self.node.as_slice());
        out
    }
    fn decode(bytes: &[u8]) -> Result<Self, KeyError> {
        let b = exact::<52>("AddressNodeKey", bytes)?;
        Ok(AddressNodeKey { address: Address::from_slice(&b[..20]), node: B256::from_slice(&b[20..]) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(bytes: impl AsRef<[u8]>) -> String {
        alloy::hex::encode(bytes)
    }

    #[test]
    fn golden_bytes() {
        assert_eq!(hex(BlockKey(1).encode()), "fffffffffffffffe");
        assert_eq!(hex(BlockKey(0x0102).encode()), "fffffffffffffefd");
        assert_eq!(hex(BlockPos { block: 5, index: 2 }.encode()), "fffffffffffffffafffffffd");
        let addr: Address = "0x00000000000000000000000000000000000000aa".parse().unwrap();
        assert_eq!(
            hex(AddressPos { address: addr, pos: BlockPos { block: 0, index: 0 } }.encode()),
            "00000000000000000000000000000000000000aaffffffffffffffffffffffff"
        );
        let hash = B256::repeat_byte(0x11);
        assert_eq!(hex(ReorgedKey { number: 255, hash }.encode()), format!("ffffffffffffff00{}", "11".repeat(32)));
        assert_eq!(MetaKey::Tip.encode(), [5]);
        assert_eq!(hex(SerialKey(0x0102).encode()), "0000000000000102");
        assert_eq!(
            hex(ItemKey { address: addr, pos: ItemPos { kind: 2, id: 1 } }.encode()),
            format!("{}aa02fffffffffffffffe", "00".repeat(19))
        );
        assert_eq!(hex(TransferPos { block: 1, log: 2, item: 3 }.encode()), "fffffffffffffffefffffffdfffc");
        let holder = Address::repeat_byte(0xaa);
        let token = Address::repeat_byte(0xbb);
        assert_eq!(
            hex(HolderRankKey { token, amount: U256::from(1), holder }.encode()),
            format!("{}{}fe{}", "bb".repeat(20), "ff".repeat(31), "aa".repeat(20))
        );
        assert_eq!(hex(TokenRankKey { holders: 2, token }.encode()), format!("fffffffffffffffd{}", "bb".repeat(20)));
        let search = SearchKey::new("ÉTher-Token", token);
        assert_eq!(&search.text[..12], "éther-token".as_bytes());
        assert_eq!(search_text(&"x".repeat(40)).1, 32);
        assert_eq!(hex(DayKey(19_000).encode()), "ffffb5c7");
        let tx = B256::from_slice(&(1..=32).collect::<Vec<u8>>());
        assert_eq!(
            hex(TxHashKey::new(&tx, BlockPos { block: 5, index: 2 }).encode()),
            "0102030405060708fffffffffffffffafffffffd"
        );
        assert_eq!(DayKey::of_timestamp(86_400 * 3 + 5), DayKey(3));
    }

    #[test]
    fn address_keys_fit_their_buffer() {
        assert_eq!(AddressPos::LEN, 32);
        assert_eq!(AddressTransferPos::LEN, 34);
        assert_eq!(AddressTracePos::LEN, 36);
        const { assert!(AddressTracePos::LEN <= KeyBytes::CAPACITY) };
        let key = AddressTracePos { address: Address::repeat_byte(7), pos: TracePos { block: 1, tx: 2, index: 3 } };
        assert_eq!(key.encode().as_ref().len(), 36);
    }

    #[test]
    fn wrong_lengths_are_errors() {
        assert_eq!(BlockKey::decode(&[0; 7]).unwrap_err(), KeyError { kind: "BlockKey", expected: 8, got: 7 });
        assert!(BlockPos::decode(&[0; 13]).is_err());
        assert!(DayKey::decode(&[0; 3]).is_err());
        assert!(AddressPos::decode(&[]).is_err());
        assert!(ReorgedKey::decode(&[0; 39]).is_err());
        assert!(B256::decode(&[0; 31]).is_err());
        assert!(TxHashKey::decode(&[0; 19]).is_err());
        assert!(TxHashKey::decode(&[0; 21]).is_err());
        assert!(<Address as Key>::decode(&[0; 21]).is_err());
        assert!(MetaKey::decode(&[0]).is_err());
        assert!(MetaKey::decode(&[1, 2]).is_err());
    }

    #[test]
    fn meta_tags_round_trip() {
        for tag in MetaKey::ALL {
            assert_eq!(MetaKey::decode(&tag.encode()).unwrap(), tag);
        }
    }

    fn address() -> impl Strategy<Value = Address> {
        // A small alphabet makes equal addresses (and so the block/index tie-breaks) common.
        prop_oneof![any::<[u8; 20]>().prop_map(Address::new), (0u8..3).prop_map(Address::repeat_byte)]
    }

    fn pos() -> impl Strategy<Value = BlockPos> {
        (prop_oneof![any::<u64>(), 0u64..4], prop_oneof![any::<u32>(), 0u32..4])
            .prop_map(|(block, index)| BlockPos { block, index })
    }

    proptest! {
        #[test]
        fn account_keys_round_trip_and_sort(a: u64, b: u64, kind: u8, owner in address()) {
            prop_assert_eq!(SerialKey::decode(&SerialKey(a).encode()).unwrap(), SerialKey(a));
            prop_assert_eq!(SerialKey(a).encode().cmp(&SerialKey(b).encode()), a.cmp(&b));
            let (ka, kb) = (ItemKey { address: owner, pos: ItemPos { kind, id: a } }, ItemKey { address: owner, pos: ItemPos { kind, id: b } });
            prop_assert_eq!(ItemKey::decode(ka.encode().as_ref()).unwrap(), ka);
            prop_assert_eq!(ka.encode().as_ref().cmp(kb.encode().as_ref()), b.cmp(&a));
        }

        #[test]
        fn coin_rank_key_round_trips_and_sorts_richest_first(b1: [u8; 32], a1 in address(), b2: [u8; 32], a2 in address()) {
            let (v1, v2) = (U256::from_be_bytes(b1), U256::from_be_bytes(b2));
            let (k1, k2) = (CoinRankKey { balance: v1, address: a1 }, CoinRankKey { balance: v2, address: a2 });
            prop_assert_eq!(CoinRankKey::decode(&k1.encode()).unwrap(), k1);
            prop_assert_eq!(k1.encode().cmp(&k2.encode()), v2.cmp(&v1).then(a1.cmp(&a2)));
        }

        #[test]
        fn block_key_round_trips_and_sorts_newest_first(a: u64, b: u64) {
            prop_assert_eq!(BlockKey::decode(&BlockKey(a).encode()).unwrap(), BlockKey(a));
            prop_assert_eq!(BlockKey(a).encode().cmp(&BlockKey(b).encode()), b.cmp(&a));
        }

        #[test]
        fn day_key_round_trips_and_sorts_newest_first(a: u32, b: u32) {
            prop_assert_eq!(DayKey::decode(&DayKey(a).encode()).unwrap(), DayKey(a));
            prop_assert_eq!(DayKey(a).encode().cmp(&DayKey(b).encode()), b.cmp(&a));
        }

        #[test]
        fn block_pos_round_trips_and_sorts_newest_first(a in pos(), b in pos()) {
            prop_assert_eq!(BlockPos::decode(&a.encode()).unwrap(), a);
            prop_assert_eq!(a.encode().cmp(&b.encode()), a.newest_first(&b));
        }

        #[test]
        fn address_pos_groups_by_address_then_newest_first(a1 in address(), p1 in pos(), a2 in address(), p2 in pos()) {
            let (k1, k2) = (AddressPos { address: a1, pos: p1 }, AddressPos { address: a2, pos: p2 });
            prop_assert_eq!(AddressPos::decode(k1.encode().as_ref()).unwrap(), k1);
            let expected = a1.cmp(&a2).then(p1.newest_first(&p2));
            prop_assert_eq!(k1.encode().as_ref().cmp(k2.encode().as_ref()), expected);
            prop_assert!(k1.encode().as_ref().starts_with(a1.as_slice()));
        }

        #[test]
        fn tx_hash_key_round_trips_and_groups_by_hash_prefix(h1: [u8; 32], p1 in pos(), h2: [u8; 32], p2 in pos()) {
            let (h1, h2) = (B256::from(h1), B256::from(h2));
            let (k1, k2) = (TxHashKey::new(&h1, p1), TxHashKey::new(&h2, p2));
            prop_assert_eq!(TxHashKey::decode(&k1.encode()).unwrap(), k1);
            let expected = h1[..TX_HASH_PREFIX].cmp(&h2[..TX_HASH_PREFIX]).then(p1.newest_first(&p2));
            prop_assert_eq!(k1.encode().cmp(&k2.encode()), expected);
            prop_assert!(k1.encode().starts_with(&h1[..TX_HASH_PREFIX]));
        }

        #[test]
        fn reorged_key_round_trips_and_sorts(n1: u64, h1: [u8; 32], n2: u64, h2: [u8; 32]) {
            let (k1, k2) = (ReorgedKey { number: n1, hash: h1.into() }, ReorgedKey { number: n2, hash: h2.into() });
            prop_assert_eq!(ReorgedKey::decode(&k1.encode()).unwrap(), k1);
            prop_assert_eq!(k1.encode().cmp(&k2.encode()), n2.cmp(&n1).then(h1.cmp(&h2)));
        }

        #[test]
        fn pending_key_round_trips_and_sorts_newest_first(t1: u64, h1: [u8; 32], t2: u64, h2: [u8; 32]) {
            let (k1, k2) = (PendingKey { seen_ms: t1, hash: h1.into() }, PendingKey { seen_ms: t2, hash: h2.into() });
            prop_assert_eq!(PendingKey::decode(&k1.encode()).unwrap(), k1);
            prop_assert_eq!(k1.encode().cmp(&k2.encode()), t2.cmp(&t1).then(h1.cmp(&h2)));
        }

        #[test]
        fn transfer_keys_round_trip_and_sort_newest_first(a in address(), p1 in pos(), i1: u16, p2 in pos(), i2: u16) {
            let (t1, t2) = (TransferPos { block: p1.block, log: p1.index, item: i1 }, TransferPos { block: p2.block, log: p2.index, item: i2 });
            prop_assert_eq!(TransferPos::decode(&t1.encode()).unwrap(), t1);
            prop_assert_eq!(t1.encode().cmp(&t2.encode()), t1.newest_first(&t2));
            let k = AddressTransferPos { address: a, pos: t1 };
            prop_assert_eq!(AddressTransferPos::decode(k.encode().as_ref()).unwrap(), k);
            prop_assert!(k.encode().as_ref().starts_with(a.as_slice()));
        }

        #[test]
        fn token_keys_round_trip_and_order(h: [u8; 20], t: [u8; 20], a1: [u8; 32], a2: [u8; 32]) {
            let (holder, token) = (Address::from(h), Address::from(t));
            let (x, y) = (U256::from_be_bytes(a1), U256::from_be_bytes(a2));
            let b = BalanceKey { holder, token, id: x };
            prop_assert_eq!(BalanceKey::decode(&b.encode()).unwrap(), b);
            let hk = HolderKey { token, holder };
            prop_assert_eq!(HolderKey::decode(&hk.encode()).unwrap(), hk);
            let bp = BeaconProxyKey { beacon: token, proxy: holder };
            prop_assert_eq!(BeaconProxyKey::decode(&bp.encode()).unwrap(), bp);
            prop_assert!(bp.encode().starts_with(token.as_slice()), "a beacon's proxies sort together");
            let (r1, r2) = (HolderRankKey { token, amount: x, holder }, HolderRankKey { token, amount: y, holder });
            prop_assert_eq!(HolderRankKey::decode(&r1.encode()).unwrap(), r1);
            prop_assert_eq!(r1.encode().cmp(&r2.encode()), y.cmp(&x), "largest amount first");
            let (i1, i2) = (InstanceKey { token, id: x }, InstanceKey { token, id: y });
            prop_assert_eq!(InstanceKey::decode(&i1.encode()).unwrap(), i1);
            prop_assert_eq!(i1.encode().cmp(&i2.encode()), x.cmp(&y));
            let (k1, k2) = (TokenRankKey { holders: x.as_limbs()[0], token }, TokenRankKey { holders: y.as_limbs()[0], token });
            prop_assert_eq!(TokenRankKey::decode(&k1.encode()).unwrap(), k1);
            prop_assert_eq!(k1.encode().cmp(&k2.encode()), k2.holders.cmp(&k1.holders));
            let s = SearchKey::new("abc", token);
            prop_assert_eq!(SearchKey::decode(&s.encode()).unwrap(), s);
            let n = NameSearchKey::new("Alice.dev", B256::from(a1));
            prop_assert_eq!(NameSearchKey::decode(&n.encode()).unwrap(), n);
            prop_assert!(n.encode().starts_with(b"alice.dev"));
            let an = AddressNodeKey { address: holder, node: B256::from(a2) };
            prop_assert_eq!(AddressNodeKey::decode(&an.encode()).unwrap(), an);
            prop_assert!(an.encode().starts_with(holder.as_slice()));
        }

        #[test]
        fn trace_keys_round_trip_and_sort_newest_first(a in address(), p1 in pos(), i1: u32, p2 in pos(), i2: u32) {
            let (t1, t2) = (TracePos { block: p1.block, tx: p1.index, index: i1 }, TracePos { block: p2.block, tx: p2.index, index: i2 });
            prop_assert_eq!(TracePos::decode(&t1.encode()).unwrap(), t1);
            prop_assert_eq!(t1.encode().cmp(&t2.encode()), t1.newest_first(&t2));
            let k = AddressTracePos { address: a, pos: t1 };
            prop_assert_eq!(AddressTracePos::decode(k.encode().as_ref()).unwrap(), k);
        }

        #[test]
        fn hash_and_address_keys_round_trip(h: [u8; 32], a: [u8; 20]) {
            prop_assert_eq!(B256::decode(&B256::from(h).encode()).unwrap(), B256::from(h));
            prop_assert_eq!(<Address as Key>::decode(&Address::from(a).encode()).unwrap(), Address::from(a));
        }

        #[test]
        fn decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = BlockKey::decode(&bytes);
            let _ = DayKey::decode(&bytes);
            let _ = BlockPos::decode(&bytes);
            let _ = AddressPos::decode(&bytes);
            let _ = ReorgedKey::decode(&bytes);
            let _ = PendingKey::decode(&bytes);
            let _ = TransferPos::decode(&bytes);
            let _ = AddressTransferPos::decode(&bytes);
            let _ = BalanceKey::decode(&bytes);
            let _ = HolderKey::decode(&bytes);
            let _ = HolderRankKey::decode(&bytes);
            let _ = InstanceKey::decode(&bytes);
            let _ = TokenRankKey::decode(&bytes);
            let _ = SearchKey::decode(&bytes);
            let _ = NameSearchKey::decode(&bytes);
            let _ = AddressNodeKey::decode(&bytes);
            let _ = TracePos::decode(&bytes);
            let _ = AddressTracePos::decode(&bytes);
            let _ = MetaKey::decode(&bytes);
        }
    }
}

//! The JSON shapes of the REST API (Blockscout's wire format), built from stored records.
//!
//! Rules: every key is always present (`null` when unknown); wei, gas and other big integers are decimal strings,
//! small integers are numbers; addresses in address objects are EIP-55 checksummed; hashes are lowercase hex;
//! timestamps are ISO-8601 UTC with microseconds. These types are separate from the stored records so the wire
//! format can evolve without a schema change.

use super::methods;
use crate::chain::tokens::transfer_type;
use crate::chain::{TxType, TxTypes};
use crate::contracts::abi::Abi;
use crate::contracts::proxy::ProxyType;
use crate::store::keys::{BlockPos, TracePos};
use crate::store::records::{
    AuthorizationRecord, AuthorizationStatus, BlockRecord, InternalTxRecord, LogRecord, PendingTxRecord, TokenKind,
    TokenMetadata, TokenRecord, TokenTransferRecord, TxBody, TxRecord,
};
use alloy::primitives::{Address, AddressChecksumBuffer, Bytes, B256, U256};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// `2024-05-01T12:34:56.000000Z` from Unix seconds (proleptic Gregorian, UTC).
pub fn iso_timestamp(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let secs = seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.000000Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// `2024-05-01T12:34:56.123456Z` from Unix milliseconds.
pub fn iso_timestamp_ms(ms: u64) -> String {
    let base = iso_timestamp(ms / 1000);
    format!("{}.{:03}000Z", base.split_once('.').map_or(base.as_str(), |(whole, _)| whole), ms % 1000)
}

/// Unix milliseconds from an ISO-8601 UTC timestamp `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
pub fn parse_iso_ms(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = clock.splitn(3, ':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis: u64 = format!("{fraction:0<3}")[..3].parse().ok()?;
    // A user-supplied year: only four digits (0000–9999) are a timestamp; anything else would overflow below.
    if !(0..=9999).contains(&year) {
        return None;
    }
    // Days from civil date (Howard Hinnant's algorithm, inverse of `iso_timestamp`).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = u64::try_from(era * 146_097 + doe - 719_468).ok()?;
    days.checked_mul(86_400)?.checked_add(h * 3600 + m * 60 + sec)?.checked_mul(1000)?.checked_add(millis)
}

/// `YYYY-MM-DD` of a UTC day number.
pub fn iso_date(day: u32) -> String {
    let mut date = iso_timestamp(u64::from(day) * 86_400);
    date.truncate(date.find('T').unwrap_or(date.len()));
    date
}

/// `after - before` as a signed decimal string (`"-5"`, `"0"`, `"12"`).
pub fn signed_change(after: U256, before: U256) -> String {
    if after >= before {
        (after - before).to_string()
    } else {
        format!("-{}", before - after)
    }
}

/// EIP-55 checksummed address.
pub fn checksum(address: &Address) -> String {
    ChecksumHex::of(address).0.to_string()
}

/// Slots of each thread's memo of checksummed addresses (62 bytes each, allocated on a thread's first use).
const CHECKSUM_MEMO_SLOTS: usize = 2048;

/// The longest trace error shown as a transaction's `result` (the node's text; geth's are a few words).
const MAX_RESULT_CHARS: usize = 256;

thread_local! {
    /// The checksummed forms this thread computed last, one slot per value of an address's last 11 bits (addresses
    /// are hashes, so they spread evenly): a checksum costs a Keccak (~0.2 µs), and the same contracts, tokens and
    /// senders appear in response after response. Unused slots hold the zero address's (correct) checksum.
    static CHECKSUM_MEMO: std::cell::RefCell<Vec<(Address, AddressChecksumBuffer)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// An EIP-55 checksummed address held inline (no allocation), serialised as a JSON string: the `hash` of an
/// address object.
#[derive(Clone)]
pub struct ChecksumHex(AddressChecksumBuffer);

impl ChecksumHex {
    /// The checksummed form of `address`, from this thread's memo when it holds it.
    pub fn of(address: &Address) -> Self {
        CHECKSUM_MEMO.with_borrow_mut(|memo| {
            if memo.is_empty() {
                memo.resize(CHECKSUM_MEMO_SLOTS, (Address::ZERO, Address::ZERO.to_checksum_buffer(None)));
            }
            let slot = &mut memo[usize::from(u16::from_be_bytes([address[18], address[19]])) % CHECKSUM_MEMO_SLOTS];
            if slot.0 != *address {
                *slot = (*address, address.to_checksum_buffer(None));
            }
            ChecksumHex(slot.1.clone())
        })
    }
}

impl std::fmt::Debug for ChecksumHex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.as_str())
    }
}

impl Serialize for ChecksumHex {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

/// Lowercase `0x` hex of a hash.
pub fn hash_hex(hash: &B256) -> String {
    format!("{hash:#x}")
}

/// `0x` hex of bytes (`"0x"` when empty).
pub fn bytes_hex(bytes: &Bytes) -> String {
    format!("{bytes:#x}")
}

/// What is known about a contract beyond its code: its artifact's name and ABI, and for a proxy its
/// implementations.
#[derive(Debug, Clone, Default)]
pub struct ContractInfo {
    /// Contract name (from the matched artifact).
    pub name: Option<String>,
    /// Whether source and ABI are known (matched with a local artifact).
    pub verified: bool,
    /// The contract's own ABI.
    pub abi: Option<Arc<Abi>>,
    /// Proxy pattern, when the contract is a proxy.
    pub proxy_type: Option<ProxyType>,
    /// Implementations of a proxy: address, name and ABI when known.
    pub implementations: Vec<Implementation>,
}

/// One implementation behind a proxy.
#[derive(Debug, Clone)]
pub struct Implementation {
    /// Its address.
    pub address: Address,
    /// Its name, when its code matches an artifact.
    pub name: Option<String>,
    /// Its ABI, when known.
    pub abi: Option<Arc<Abi>>,
}

impl ContractInfo {
    /// ABIs that decode calls to this contract: the implementations' first (a proxy forwards every call it does
    /// not know), then its own.
    pub fn abis(&self) -> Vec<&Abi> {
        self.implementations.iter().filter_map(|i| i.abi.as_deref()).chain(self.abi.as_deref()).collect()
    }

    /// `implementations` as Blockscout shows them.
    pub fn implementations_json(&self) -> Vec<Value> {
        self.implementations.iter().map(|i| json!({"address_hash": checksum(&i.address), "name": i.name})).collect()
    }
}

/// Whether each address holds a contract, as far as the index knows, and what is known about those contracts.
#[derive(Debug, Default, Clone)]
pub struct Contracts {
    /// Per address: whether it holds a contract.
    flags: HashMap<Address, bool>,
    known: HashMap<Address, ContractInfo>,
    names: HashMap<Address, String>,
}

impl Contracts {
    /// Contract flags and knowledge of some addresses.
    pub fn new(flags: HashMap<Address, bool>, known: HashMap<Address, ContractInfo>) -> Self {
        Contracts { flags, known, names: HashMap::new() }
    }

    /// The same, with the verified primary names of the addresses (`ens_domain_name`).
    pub fn with_names(mut self, names: HashMap<Address, String>) -> Self {
        self.names = names;
        self
    }

    /// The primary name of `address`, if it has a verified one.
    pub fn name_of(&self, address: &Address) -> Option<String> {
        self.names.get(address).cloned()
    }

    /// Whether `address` is a contract.
    pub fn is_contract(&self, address: &Address) -> bool {
        self.flags.get(address).is_some_and(|flag| *flag)
    }

    /// What is known about the contract at `address`.
    pub fn info(&self, address: &Address) -> Option<&ContractInfo> {
        self.known.get(address)
    }

    /// ABIs that decode calls to `address` (none for unknown contracts).
    pub fn abis(&self, address: Option<&Address>) -> Vec<&Abi> {
        address.and_then(|a| self.known.get(a)).map(ContractInfo::abis).unwrap_or_default()
    }

    /// `method` of a call with `input` to `to`.
    pub fn method(&self, input: &[u8], to: Option<&Address>) -> Option<String> {
        methods::method_label(&self.abis(to), input, to.is_some_and(|a| self.is_contract(a)))
    }

    /// `decoded_input` of a call with `input` to `to`; none for creations and calls to accounts without code.
    pub fn decode_input(&self, input: &[u8], to: Option<&Address>) -> Option<Value> {
        to.filter(|a| self.is_contract(a)).and_then(|_| methods::decode_input(&self.abis(to), input))
    }

    /// `decoded` of a log emitted by `address`: its own ABI (a proxy's implementation's), then well-known events.
    pub fn decode_log(&self, address: &Address, topics: &[B256], data: &[u8]) -> Option<Value> {
        let abis = self.abis(Some(address));
        abis.into_iter().chain([&**Abi::well_known()]).find_map(|abi| abi.decode_log(topics, data))
    }

    /// The address object for `address`.
    pub fn address(&self, address: &Address) -> AddressJson {
        AddressJson::new(address, self.is_contract(address))
            .with_info(self.known.get(address))
            .with_ens(self.name_of(address))
    }
}

/// The address object embedded wherever an address appears (Blockscout's `Address`).
#[derive(Debug, Clone, Serialize)]
pub struct AddressJson {
    hash: ChecksumHex,
    is_contract: bool,
    is_verified: Option<bool>,
    name: Option<String>,
    ens_domain_name: Option<String>,
    implementations: Vec<Value>,
    proxy_type: Option<&'static str>,
    is_scam: bool,
    reputation: &'static str,
    metadata: Option<Value>,
    private_tags: [(); 0],
    watchlist_names: [(); 0],
    public_tags: [(); 0],
}

impl AddressJson {
    /// An address object.
    pub fn new(address: &Address, is_contract: bool) -> Self {
        AddressJson {
            hash: ChecksumHex::of(address),
            is_contract,
            is_verified: if is_contract { Some(false) } else { None },
            name: None,
            ens_domain_name: None,
            implementations: Vec::new(),
            proxy_type: None,
            is_scam: false,
            reputation: "ok",
            metadata: None,
            private_tags: [],
            watchlist_names: [],
            public_tags: [],
        }
    }

    /// Sets `ens_domain_name`: the address's verified primary name.
    pub fn with_ens(mut self, name: Option<String>) -> Self {
        self.ens_domain_name = name;
        self
    }

    /// Adds the contract's name, verification and implementations.
    pub fn with_info(mut self, info: Option<&ContractInfo>) -> Self {
        if let Some(info) = info {
            self.is_contract = true;
            self.is_verified = Some(info.verified);
            self.name = info.name.clone();
            self.implementations = info.implementations_json();
            self.proxy_type = info.proxy_type.map(ProxyType::label);
        }
        self
    }
}

/// Consensus state of a block in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockKind {
    /// Canonical.
    Block,
    /// Lost consensus in a reorg.
    Reorg,
    /// An ommer.
    Uncle,
}

/// A block, in list form or detail form (Blockscout's `Block`).
#[derive(Debug, Clone, Serialize)]
pub struct BlockJson {
    height: u64,
    hash: String,
    parent_hash: String,
    timestamp: String,
    transactions_count: u32,
    internal_transactions_count: Option<u64>,
    miner: AddressJson,
    size: Option<u64>,
    gas_used: String,
    gas_limit: String,
    gas_used_percentage: f64,
    gas_target_percentage: f64,
    base_fee_per_gas: Option<String>,
    burnt_fees: Option<String>,
    burnt_fees_percentage: Option<f64>,
    priority_fee: Option<String>,
    transaction_fees: String,
    difficulty: Option<String>,
    total_difficulty: Option<String>,
    nonce: String,
    #[serde(rename = "type")]
    kind: BlockKind,
    uncles_hashes: Vec<Value>,
    rewards: [(); 0],
    withdrawals_count: Option<u32>,
    is_pending_update: bool,
    blob_transactions_count: u32,
    blob_gas_used: Option<String>,
    excess_blob_gas: Option<String>,
    beacon_deposits_count: Option<u64>,
}

impl BlockJson {
    /// A block object. `blob_txs` is the number of its EIP-4844 transactions; `detail` adds the counts that
    /// lists leave `null`.
    pub fn new(h: &BlockRecord, kind: BlockKind, miner: AddressJson, blob_txs: u32, detail: bool) -> Self {
        let gas_used_percentage = if h.gas_limit == 0 { 0.0 } else { h.gas_used as f64 * 100.0 / h.gas_limit as f64 };
        // Target = half the limit (EIP-1559 elasticity 2).
        let target = h.gas_limit as f64 / 2.0;
        let gas_target_percentage = if target == 0.0 { 0.0 } else { (h.gas_used as f64 / target - 1.0) * 100.0 };
        let burnt_fees_percentage = (!h.fees.is_zero())
            .then(|| h.burnt_fees.saturating_to::<u128>() as f64 * 100.0 / h.fees.saturating_to::<u128>() as f64);
        BlockJson {
            height: h.number,
            hash: hash_hex(&h.hash),
            parent_hash: hash_hex(&h.parent_hash),
            timestamp: iso_timestamp(h.timestamp),
            transactions_count: h.tx_count,
            internal_transactions_count: None,
            miner,
            size: h.size,
            gas_used: h.gas_used.to_string(),
            gas_limit: h.gas_limit.to_string(),
            gas_used_percentage,
            gas_target_percentage,
            base_fee_per_gas: h.base_fee.map(|f| f.to_string()),
            burnt_fees: Some(h.burnt_fees.to_string()),
            burnt_fees_percentage,
            priority_fee: Some(h.priority_fees.to_string()),
            transaction_fees: h.fees.to_string(),
            difficulty: Some(h.difficulty.to_string()),
            total_difficulty: h.total_difficulty.map(|d| d.to_string()),
            nonce: format!("{:#x}", h.nonce),
            kind,
            uncles_hashes: h.uncles.iter().map(|u| json!({"hash": hash_hex(u)})).collect(),
            rewards: [],
            withdrawals_count: if detail { Some(h.withdrawals_count.unwrap_or(0)) } else { None },
            is_pending_update: false,
            blob_transactions_count: blob_txs,
            blob_gas_used: h.blob_gas_used.map(|g| g.to_string()),
            excess_blob_gas: h.excess_blob_gas.map(|g| g.to_string()),
            beacon_deposits_count: None,
        }
    }

    /// Sets the internal-transaction count (detail form, traced blocks).
    pub fn with_internal_count(mut self, count: Option<u64>) -> Self {
        self.internal_transactions_count = count;
        self
    }
}

/// `{"type": "actual" | "maximum", "value": "…"}`.
#[derive(Debug, Clone, Serialize)]
pub struct FeeJson {
    #[serde(rename = "type")]
    kind: &'static str,
    value: String,
}

/// One EIP-7702 authorization.
#[derive(Debug, Clone, Serialize)]
pub struct AuthorizationJson {
    address_hash: String,
    authority: Option<String>,
    chain_id: u64,
    nonce: String,
    r: String,
    s: String,
    v: u8,
    status: Option<&'static str>,
}

impl AuthorizationJson {
    fn new(a: &AuthorizationRecord) -> Self {
        AuthorizationJson {
            address_hash: checksum(&a.address),
            authority: a.authority.as_ref().map(checksum),
            chain_id: a.chain_id.saturating_to(),
            nonce: a.nonce.to_string(),
            r: a.r.to_string(),
            s: a.s.to_string(),
            v: a.y_parity,
            status: a.status.map(AuthorizationStatus::label),
        }
    }
}

/// A transaction (Blockscout's `Transaction`): list form, or detail form with token transfers and revert reason.
#[derive(Debug, Clone, Serialize)]
pub struct TxJson {
    hash: String,
    result: String,
    status: Option<&'static str>,
    block_number: Option<u64>,
    timestamp: Option<String>,
    from: AddressJson,
    to: AddressJson,
    created_contract: Option<AddressJson>,
    confirmations: u64,
    confirmation_duration: [u64; 0],
    value: String,
    fee: FeeJson,
    gas_price: Option<String>,
    #[serde(rename = "type")]
    tx_type: Option<u8>,
    gas_used: Option<String>,
    gas_limit: String,
    max_fee_per_gas: Option<String>,
    max_priority_fee_per_gas: Option<String>,
    base_fee_per_gas: Option<String>,
    priority_fee: Option<String>,
    transaction_burnt_fee: Option<String>,
    nonce: u64,
    position: Option<u32>,
    revert_reason: Option<Value>,
    raw_input: String,
    decoded_input: Option<Value>,
    token_transfers: Option<Vec<TransferJson>>,
    token_transfers_overflow: Option<bool>,
    exchange_rate: Option<String>,
    historic_exchange_rate: Option<String>,
    method: Option<String>,
    transaction_types: TxTypes,
    transaction_tag: Option<String>,
    has_error_in_internal_transactions: Option<bool>,
    authorization_list: Vec<AuthorizationJson>,
    is_pending_update: bool,
    fhe_operations_count: u64,
}

impl TxJson {
    /// What a transaction shows from its body, given the fields whose pool and mined forms differ and that cost
    /// work to build (`to`, the fee, the gas price): the base of both constructors.
    fn from_body(tx: &TxBody, contracts: &Contracts, to: AddressJson, fee: FeeJson, gas_price: Option<String>) -> Self {
        let to_is_contract = tx.to.is_some_and(|a| contracts.is_contract(&a));
        TxJson {
            hash: hash_hex(&tx.hash),
            result: "pending".into(),
            status: None,
            block_number: None,
            timestamp: None,
            from: contracts.address(&tx.from),
            to,
            created_contract: None,
            confirmations: 0,
            confirmation_duration: [],
            value: tx.value.to_string(),
            fee,
            gas_price,
            tx_type: Some(tx.tx_type),
            gas_used: None,
            gas_limit: tx.gas_limit.to_string(),
            max_fee_per_gas: tx.max_fee_per_gas.map(|f| f.to_string()),
            max_priority_fee_per_gas: tx.max_priority_fee_per_gas.map(|f| f.to_string()),
            base_fee_per_gas: None,
            priority_fee: None,
            transaction_burnt_fee: None,
            nonce: tx.nonce,
            position: None,
            revert_reason: None,
            raw_input: bytes_hex(&tx.input),
            decoded_input: contracts.decode_input(&tx.input, tx.to.as_ref()),
            token_transfers: None,
            token_transfers_overflow: None,
            exchange_rate: None,
            historic_exchange_rate: None,
            method: contracts.method(&tx.input, tx.to.as_ref()),
            transaction_types: TxTypes::of_call(tx, to_is_contract),
            transaction_tag: None,
            has_error_in_internal_transactions: None,
            authorization_list: Vec::new(),
            is_pending_update: false,
            fhe_operations_count: 0,
        }
    }

    /// A transaction at `pos` of block `header`, with the chain tip `tip` (for confirmations).
    pub fn new(tx: &TxRecord, pos: BlockPos, header: &BlockRecord, tip: u64, contracts: &Contracts) -> Self {
        let base_fee = header.base_fee;
        let (to, created) = match tx.to {
            Some(to) => (contracts.address(&to), None),
            // The published schema requires an address object in `to`: a creation shows the created contract.
            None => {
                let created = tx.created_or_computed();
                let object = AddressJson::new(&created, tx.succeeded())
                    .with_info(contracts.info(&created))
                    .with_ens(contracts.name_of(&created));
                (object.clone(), Some(object))
            }
        };
        let to_is_contract = tx.to.is_some_and(|a| contracts.is_contract(&a));
        let gas_used = U256::from(tx.gas_used);
        let fee = FeeJson { kind: "actual", value: tx.fee().to_string() };
        let gas_price = Some(tx.effective_gas_price.to_string());
        TxJson {
            result: if tx.succeeded() { "success".into() } else { "Reverted".into() },
            status: Some(if tx.succeeded() { "ok" } else { "error" }),
            block_number: Some(pos.block),
            timestamp: Some(iso_timestamp(header.timestamp)),
            created_contract: created,
            confirmations: tip.saturating_sub(pos.block) + 1,
            gas_used: Some(tx.gas_used.to_string()),
            base_fee_per_gas: base_fee.map(|f| f.to_string()),
            priority_fee: base_fee
                .map(|b| (gas_used * U256::from(tx.effective_gas_price.saturating_sub(b))).to_string()),
            transaction_burnt_fee: base_fee.map(|b| (gas_used * U256::from(b)).to_string()),
            position: Some(pos.index),
            transaction_types: TxTypes::of_mined(tx, to_is_contract, false),
            authorization_list: tx.authorizations.iter().map(AuthorizationJson::new).collect(),
            ..TxJson::from_body(&tx.body, contracts, to, fee, gas_price)
        }
    }

    /// A transaction still in the node's pool.
    pub fn pending(tx: &PendingTxRecord, contracts: &Contracts) -> Self {
        let to = match tx.to {
            Some(to) => contracts.address(&to),
            None => AddressJson::new(&tx.creation_address(), false),
        };
        let max_price = tx.max_fee_per_gas.or(tx.gas_price).unwrap_or(0);
        let fee = FeeJson { kind: "maximum", value: (U256::from(tx.gas_limit) * U256::from(max_price)).to_string() };
        let gas_price = tx.gas_price.or(tx.max_fee_per_gas).map(|p| p.to_string());
        TxJson::from_body(&tx.body, contracts, to, fee, gas_price)
    }

    /// Adds what only the detail view carries: token transfers (first 10) and the revert reason.
    pub fn with_detail(
        mut self,
        token_transfers: Vec<TransferJson>,
        overflow: bool,
        revert_reason: Option<Value>,
    ) -> Self {
        self.token_transfers = Some(token_transfers);
        self.token_transfers_overflow = Some(overflow);
        self.revert_reason = revert_reason;
        self
    }

    /// What the trace pass found: whether an internal call failed (`None` until the transaction's block is
    /// traced) and, for a failed transaction, the error of its top call (`execution reverted`, `out of gas`, …),
    /// which becomes its `result` as in Blockscout (`Reverted` until then).
    pub fn with_trace(mut self, has_error: Option<bool>, failure: Option<String>) -> Self {
        self.has_error_in_internal_transactions = has_error;
        if let Some(failure) = failure.filter(|_| self.status == Some("error")) {
            self.result = failure.chars().take(MAX_RESULT_CHARS).collect();
        }
        self
    }

    /// Marks a creation whose contract is known as a token (`token_creation`).
    pub fn with_created_token(mut self, created_token: bool) -> Self {
        if created_token {
            self.transaction_types = self.transaction_types.with(TxType::TokenCreation);
        }
        self
    }
}

/// An internal transaction (Blockscout's `InternalTransaction`): one call frame below a transaction's top call.
#[derive(Debug, Clone, Serialize)]
pub struct InternalJson {
    index: u32,
    transaction_hash: String,
    transaction_index: u32,
    block_number: u64,
    timestamp: String,
    #[serde(rename = "type")]
    kind: &'static str,
    from: AddressJson,
    to: Option<AddressJson>,
    created_contract: Option<AddressJson>,
    value: String,
    gas_limit: String,
    success: bool,
    error: Option<String>,
}

impl InternalJson {
    /// The frame at `pos` of a block with timestamp `timestamp`.
    pub fn new(frame: &InternalTxRecord, pos: TracePos, timestamp: u64, contracts: &Contracts) -> Self {
        InternalJson {
            index: pos.index,
            transaction_hash: hash_hex(&frame.tx_hash),
            transaction_index: pos.tx,
            block_number: pos.block,
            timestamp: iso_timestamp(timestamp),
            kind: frame.kind.label(),
            from: contracts.address(&frame.from),
            to: frame.to.map(|a| contracts.address(&a)),
            created_contract: frame.created.map(|a| contracts.address(&a)),
            value: frame.value.to_string(),
            gas_limit: frame.gas.to_string(),
            success: frame.success,
            error: frame.error.clone(),
        }
    }
}

/// An event log (Blockscout's `Log`).
#[derive(Debug, Clone, Serialize)]
pub struct LogJson {
    transaction_hash: String,
    address: AddressJson,
    topics: [Option<String>; 4],
    data: String,
    index: u32,
    decoded: Option<Value>,
    smart_contract: Option<AddressJson>,
    block_number: u64,
    block_hash: String,
    block_timestamp: Option<String>,
}

impl LogJson {
    /// The log at `pos` of block `header`.
    pub fn new(log: &LogRecord, pos: BlockPos, header: &BlockRecord, contracts: &Contracts) -> Self {
        let mut topics: [Option<String>; 4] = Default::default();
        for (slot, topic) in topics.iter_mut().zip(&log.topics) {
            *slot = Some(hash_hex(topic));
        }
        LogJson {
            transaction_hash: hash_hex(&log.tx_hash),
            address: contracts.address(&log.address),
            topics,
            data: bytes_hex(&log.data),
            index: pos.index,
            decoded: contracts.decode_log(&log.address, &log.topics, &log.data),
            smart_contract: Some(contracts.address(&log.address)),
            block_number: pos.block,
            block_hash: hash_hex(&header.hash),
            block_timestamp: Some(iso_timestamp(header.timestamp)),
        }
    }
}

/// A token object (Blockscout's `Token`).
#[derive(Debug, Clone, Serialize)]
pub struct TokenJson {
    address_hash: String,
    #[serde(rename = "type")]
    kind: &'static str,
    name: Option<String>,
    symbol: Option<String>,
    decimals: Option<String>,
    holders_count: Option<String>,
    total_supply: Option<String>,
    exchange_rate: Option<String>,
    circulating_market_cap: Option<String>,
    icon_url: Option<String>,
    volume_24h: Option<String>,
    circulating_supply: Option<String>,
    reputation: &'static str,
}

impl TokenJson {
    /// The token object from what the index derived and what the contract said about itself.
    pub fn new(address: &Address, record: &TokenRecord, metadata: Option<&TokenMetadata>) -> Self {
        let metadata = metadata.cloned().unwrap_or_default();
        TokenJson {
            address_hash: checksum(address),
            kind: record.kind.label(),
            name: metadata.name,
            symbol: metadata.symbol,
            decimals: match record.kind {
                TokenKind::Erc20 => metadata.decimals.map(|d| d.to_string()),
                TokenKind::Erc721 | TokenKind::Erc1155 => None,
            },
            holders_count: Some(record.holders.to_string()),
            total_supply: Some(record.total_supply.to_string()),
            exchange_rate: None,
            circulating_market_cap: None,
            icon_url: None,
            volume_24h: None,
            circulating_supply: None,
            reputation: "ok",
        }
    }

    /// The token's decimals, if known.
    pub fn decimals(&self) -> Option<&str> {
        self.decimals.as_deref()
    }
}

/// A token transfer (Blockscout's `TokenTransfer`).
#[derive(Debug, Clone, Serialize)]
pub struct TransferJson {
    transaction_hash: String,
    block_hash: String,
    block_number: u64,
    log_index: u32,
    timestamp: Option<String>,
    from: AddressJson,
    to: AddressJson,
    token: TokenJson,
    token_type: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    method: Option<String>,
    total: Value,
}

impl TransferJson {
    /// The transfer at `log` of block `header`, of token `token`, made by a transaction that called `tx_to`
    /// with `tx_input`.
    pub fn new(
        t: &TokenTransferRecord,
        log: u32,
        header: &BlockRecord,
        token: TokenJson,
        tx_call: Option<(&Bytes, Option<&Address>)>,
        contracts: &Contracts,
    ) -> Self {
        let id = t.token_id.map(|id| id.to_string());
        let total = match t.kind {
            TokenKind::Erc20 => json!({"value": t.amount.to_string(), "decimals": token.decimals()}),
            TokenKind::Erc721 => json!({"token_id": id, "token_instance": null}),
            TokenKind::Erc1155 => {
                json!({"token_id": id, "value": t.amount.to_string(), "decimals": null, "token_instance": null})
            }
        };
        TransferJson {
            transaction_hash: hash_hex(&t.tx_hash),
            block_hash: hash_hex(&header.hash),
            block_number: header.number,
            log_index: log,
            timestamp: Some(iso_timestamp(header.timestamp)),
            from: contracts.address(&t.from),
            to: contracts.address(&t.to),
            token,
            token_type: t.kind.label(),
            kind: transfer_type(t),
            method: tx_call.and_then(|(input, to)| methods::method_label(&contracts.abis(to), input, true)),
            total,
        }
    }
}

/// A paginated list: `{"items": […], "next_page_params": {…} | null}`.
#[derive(Debug, Clone, Serialize)]
pub struct Envelope<T> {
    /// The page.
    pub items: Vec<T>,
    /// Query parameters of the next page, `None` on the last page.
    pub next_page_params: Option<Map<String, Value>>,
}

impl<T> Envelope<T> {
    /// An empty list.
    pub fn empty() -> Self {
        Envelope { items: Vec::new(), next_page_params: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_objects_carry_the_eip55_form_whether_known_or_not() {
        // EIP-55's own test vectors.
        let mixed = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
        let other = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359";
        let (known, unknown): (Address, Address) = (mixed.parse().unwrap(), other.parse().unwrap());
        let contracts = Contracts::new(HashMap::from([(known, true)]), HashMap::new());
        let shown = serde_json::to_value(contracts.address(&known)).unwrap();
        assert_eq!((shown["hash"].as_str(), shown["is_contract"].as_bool()), (Some(mixed), Some(true)));
        let shown = serde_json::to_value(contracts.address(&unknown)).unwrap();
        assert_eq!((shown["hash"].as_str(), shown["is_contract"].as_bool()), (Some(other), Some(false)));
        assert_eq!(format!("{:?}", ChecksumHex::of(&known)), mixed);
    }

    #[test]
    fn the_checksum_memo_gives_each_address_its_own_form_when_addresses_share_a_slot() {
        // Same last two bytes, so the same slot; the zero address is what an unused slot holds.
        let sharing = (0u8..6).map(|first| {
            let mut bytes = [0xa7; 20];
            bytes[0] = first;
            bytes[19] = 0x37;
            Address::from(bytes)
        });
        let addresses: Vec<Address> = sharing.chain([Address::ZERO, Address::with_last_byte(0x37)]).collect();
        for _ in 0..3 {
            for address in &addresses {
                assert_eq!(checksum(address), address.to_checksum(None));
                assert_eq!(format!("{:?}", ChecksumHex::of(address)), address.to_checksum(None));
            }
        }
    }

    #[test]
    fn timestamps_are_iso_utc_with_microseconds() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso_timestamp(951_782_400), "2000-02-29T00:00:00.000000Z");
        assert_eq!(iso_timestamp(1_668_167_975), "2022-11-11T11:59:35.000000Z");
        assert_eq!(iso_timestamp(4_102_444_799), "2099-12-31T23:59:59.000000Z");
        assert_eq!(iso_date(19_000), "2022-01-08");
        // Years past 9999 (a node may set any timestamp) keep their whole date.
        assert_eq!(iso_date(3_472_222), "11476-08-15");
        assert_eq!(iso_timestamp_ms(300_000_000_000_123), "11476-08-15T05:20:00.123000Z");
    }

    #[test]
    fn changes_are_signed() {
        assert_eq!(signed_change(U256::from(5), U256::from(3)), "2");
        assert_eq!(signed_change(U256::from(3), U256::from(5)), "-2");
        assert_eq!(signed_change(U256::ZERO, U256::ZERO), "0");
    }

    #[test]
    fn iso_timestamps_parse_back() {
        for ms in [0u64, 951_782_400_123, 1_668_167_975_474, 4_102_444_799_999] {
            assert_eq!(parse_iso_ms(&iso_timestamp_ms(ms)), Some(ms), "{ms}");
        }
        assert_eq!(parse_iso_ms("2025-05-26T10:26:51.474448Z"), Some(1_748_255_211_474));
        assert_eq!(parse_iso_ms("2025-05-26T10:26:51Z"), Some(1_748_255_211_000));
        for bad in [
            "",
            "2025-05-26",
            "2025-13-01T00:00:00Z",
            "2025-05-26T10:26:51.x1Z",
            "2025-05-26T10:26:51.47",
            "1234567-01-01T00:00:00Z",
            "9223372036854775807-01-01T00:00:00Z",
            "-5-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_iso_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn address_objects_are_checksummed_and_complete() {
        let a: Address = "0xdad49e6cbde849353ab27dec6319e687bfc91a41".parse().unwrap();
        let v = serde_json::to_value(AddressJson::new(&a, false)).unwrap();
        assert_eq!(v["hash"], "0xdAd49e6CbDE849353ab27DeC6319E687BFc91A41");
        for key in ["is_verified", "name", "ens_domain_name", "proxy_type", "metadata"] {
            assert!(v[key].is_null(), "{key}");
        }
        assert_eq!(v["implementations"], json!([]));
        assert_eq!(v["reputation"], "ok");
        assert_eq!(v.as_object().unwrap().len(), 13);
    }
}

//! What the chain's data means, computed from stored records alone (pure, no I/O): token transfers decoded from
//! logs, and who takes part in a transaction or a transfer. The indexer writes rows from these; the API and the
//! WebSocket publisher read with them, so both sides agree by construction.

pub mod names;
pub mod tokens;

use crate::store::keys::TransferPos;
use crate::store::records::{direction, role, Bundle, TokenTransferRecord, TxBody, TxRecord};
use alloy::primitives::{Address, U256};
use std::collections::{BTreeMap, BTreeSet};

/// Characters that change how text around them is shown without showing themselves, or show as nothing: zero-width
/// and joining controls, bidirectional marks, overrides and isolates, the soft hyphen, line and paragraph separators,
/// fillers that render blank (Hangul, Braille), interlinear annotations, musical formatting and tag characters (a
/// name or a token symbol could otherwise display as another, or as empty).
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// Whether `text` shows nothing: only whitespace and variation selectors (which select a glyph's form, as in the
/// emoji `❤️`, and are kept inside text, but make no text of their own).
pub fn shows_nothing(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}'))
}

/// `amount` of a token with `decimals` as a decimal string (`1.5` for 15 with 1 decimal), exact for any decimals.
pub fn decimal_amount(amount: U256, decimals: u8) -> String {
    let digits = amount.to_string();
    let decimals = usize::from(decimals);
    if decimals == 0 {
        return digits;
    }
    // Scaled as text: 10^decimals is past U256 from 78 decimals on, and a token may declare up to 255.
    let padded = format!("{digits:0>width$}", width = decimals + 1);
    let (whole, fraction) = padded.split_at(padded.len() - decimals);
    match fraction.trim_end_matches('0') {
        "" => whole.to_owned(),
        fraction => format!("{whole}.{fraction}"),
    }
}

/// The addresses of one transaction with their role bits (`records::role`), in address order.
pub fn tx_participants(tx: &TxRecord) -> BTreeMap<Address, u8> {
    let mut roles = BTreeMap::new();
    *roles.entry(tx.from).or_insert(0) |= role::FROM;
    if let Some(to) = tx.to {
        *roles.entry(to).or_insert(0) |= role::TO;
    }
    if let Some(created) = tx.created {
        *roles.entry(created).or_insert(0) |= role::CREATED;
    }
    roles
}

/// The addresses whose native balance a block's own data says may have changed: its miner (fees) and every
/// transaction's sender, recipient and created contract, in address order.
pub fn balance_addresses(block: &Bundle) -> BTreeSet<Address> {
    let mut addresses = BTreeSet::from([block.header.miner]);
    for tx in &block.txs {
        addresses.extend(tx_participants(tx).into_keys());
    }
    addresses
}

/// The token transfers of a block, with their positions, in log order.
pub fn block_transfers(block: &Bundle) -> Vec<(TransferPos, TokenTransferRecord)> {
    let mut out = Vec::new();
    for (log_index, log) in block.logs.iter().enumerate() {
        for (item, transfer) in tokens::decode(log).into_iter().enumerate() {
            out.push((TransferPos { block: block.number(), log: log_index as u32, item: item as u16 }, transfer));
        }
    }
    out
}

/// The non-zero parties of a transfer with their direction bits (`records::direction`).
pub fn transfer_parties(t: &TokenTransferRecord) -> BTreeMap<Address, u8> {
    let mut parties = BTreeMap::new();
    if !t.from.is_zero() {
        *parties.entry(t.from).or_insert(0) |= direction::SENT;
    }
    if !t.to.is_zero() {
        *parties.entry(t.to).or_insert(0) |= direction::RECEIVED;
    }
    parties
}

/// Token contracts a block's transfers involve.
pub fn block_tokens(block: &Bundle) -> BTreeSet<Address> {
    block_transfers(block).into_iter().map(|(_, t)| t.token).collect()
}

/// Blockscout's transaction types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxType {
    /// Moves a token (a transfer decoded from its logs).
    TokenTransfer,
    /// Created a contract that moved tokens in the same transaction.
    TokenCreation,
    /// Moves ether.
    CoinTransfer,
    /// Creates a contract.
    ContractCreation,
    /// Calls a contract (or carries call data).
    ContractCall,
    /// Carries EIP-4844 blobs (envelope type 3).
    BlobTransaction,
    /// Sets EOA code by EIP-7702 authorizations (envelope type 4).
    SetCodeTransaction,
}

impl TxType {
    /// Every type, in the order Blockscout lists them.
    pub const ALL: [TxType; 7] = [
        TxType::TokenTransfer,
        TxType::TokenCreation,
        TxType::CoinTransfer,
        TxType::ContractCreation,
        TxType::ContractCall,
        TxType::BlobTransaction,
        TxType::SetCodeTransaction,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            TxType::TokenTransfer => "token_transfer",
            TxType::TokenCreation => "token_creation",
            TxType::CoinTransfer => "coin_transfer",
            TxType::ContractCreation => "contract_creation",
            TxType::ContractCall => "contract_call",
            TxType::BlobTransaction => "blob_transaction",
            TxType::SetCodeTransaction => "set_code_transaction",
        }
    }

    /// The type with this wire name.
    pub fn parse(name: &str) -> Option<TxType> {
        TxType::ALL.into_iter().find(|t| t.name() == name)
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of transaction types (a transaction's types, or a list filter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxTypes(u8);

impl TxTypes {
    /// The set with `t` added.
    pub fn with(self, t: TxType) -> Self {
        TxTypes(self.0 | t.bit())
    }

    /// Whether `t` is in the set.
    pub fn contains(self, t: TxType) -> bool {
        self.0 & t.bit() != 0
    }

    /// Whether the set is empty (as a filter: no filter).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the sets share a type.
    pub fn intersects(self, other: TxTypes) -> bool {
        self.0 & other.0 != 0
    }

    /// The types in the set, in Blockscout's order.
    pub fn iter(self) -> impl Iterator<Item = TxType> {
        TxType::ALL.into_iter().filter(move |t| self.contains(*t))
    }

    /// The types a mined transaction shows; `to_is_contract` tells whether its recipient holds code,
    /// `created_token` whether the contract it created is known as a token (Blockscout's rule; a token that minted
    /// in its constructor is marked so at indexing, others once they have transferred).
    pub fn of_mined(tx: &TxRecord, to_is_contract: bool, created_token: bool) -> Self {
        let mut types = TxTypes::of_call(tx, to_is_contract);
        if tx.token_transfers > 0 {
            types = types.with(TxType::TokenTransfer);
        }
        if tx.token_creation || created_token {
            types = types.with(TxType::TokenCreation);
        }
        types
    }

    /// Whether a mined transaction passes this filter (an empty filter passes everything).
    pub fn admits(self, tx: &TxRecord, to_is_contract: bool, created_token: bool) -> bool {
        self.is_empty() || self.intersects(TxTypes::of_mined(tx, to_is_contract, created_token))
    }

    /// The types a transaction has from its call and envelope alone, before any receipt (all a pool transaction
    /// shows).
    pub fn of_call(tx: &TxBody, to_is_contract: bool) -> Self {
        let mut types = match tx.tx_type {
            3 => TxTypes::default().with(TxType::BlobTransaction),
            4 => TxTypes::default().with(TxType::SetCodeTransaction),
            _ => TxTypes::default(),
        };
        if !tx.value.is_zero() {
            types = types.with(TxType::CoinTransfer);
        }
        match tx.to {
            None => types.with(TxType::ContractCreation),
            // Calldata sent to an account without code calls nothing (Blockscout: a contract call needs code).
            Some(_) if to_is_contract => types.with(TxType::ContractCall),
            Some(_) => types,
        }
    }
}

impl serde::Serialize for TxTypes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(TxType::name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::{Bytes, B256};

    fn call(tx_type: u8, value: u64) -> TxBody {
        TxBody {
            hash: B256::ZERO,
            from: Address::repeat_byte(1),
            to: Some(Address::repeat_byte(2)),
            value: U256::from(value),
            input: Bytes::new(),
            nonce: 0,
            gas_limit: 21_000,
            gas_price: None,
            max_fee_per_gas: Some(1),
            max_priority_fee_per_gas: Some(1),
            tx_type,
        }
    }

    #[test]
    fn blob_and_set_code_envelopes_are_transaction_types() {
        let names = |types: TxTypes| types.iter().map(TxType::name).collect::<Vec<_>>();
        assert_eq!(names(TxTypes::of_call(&call(2, 5), false)), ["coin_transfer"]);
        assert_eq!(names(TxTypes::of_call(&call(3, 5), false)), ["coin_transfer", "blob_transaction"]);
        assert_eq!(names(TxTypes::of_call(&call(4, 0), false)), ["set_code_transaction"]);
        let transfer_call = TxBody { input: Bytes::from_static(&[0xa9, 0x05, 0x9c, 0xbb, 0, 1]), ..call(2, 0) };
        assert!(names(TxTypes::of_call(&transfer_call, false)).is_empty(), "calldata to an account calls nothing");
        assert_eq!(names(TxTypes::of_call(&transfer_call, true)), ["contract_call"]);
        let filter = TxTypes::default().with(TxType::parse("set_code_transaction").unwrap());
        assert!(filter.intersects(TxTypes::of_call(&call(4, 0), false)));
        assert!(!filter.intersects(TxTypes::of_call(&call(2, 0), false)));
    }

    #[test]
    fn amounts_are_scaled_by_decimals_without_trailing_zeros() {
        assert_eq!(decimal_amount(U256::from(15u8), 1), "1.5");
        assert_eq!(decimal_amount(U256::from(1_000_000u64), 6), "1");
        assert_eq!(decimal_amount(U256::from(1_234_500u64), 6), "1.2345");
        assert_eq!(decimal_amount(U256::from(5u8), 18), "0.000000000000000005");
        assert_eq!(decimal_amount(U256::from(42u8), 0), "42");
        let max = U256::MAX.to_string();
        assert_eq!(decimal_amount(U256::MAX, 255), format!("0.{}{max}", "0".repeat(255 - max.len())));
        assert_eq!(decimal_amount(U256::from(5u8), 100), format!("0.{}5", "0".repeat(99)));
        assert_eq!(decimal_amount(U256::from(10u8).pow(U256::from(77)), 77), "1");
    }
}

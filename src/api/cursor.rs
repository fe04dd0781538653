//! Keyset cursors: one type per list spelling of `next_page_params`. Each reads itself from a request's query
//! ([`Cursor::from_query`]) and writes the fields that continue after it ([`Cursor::to_params`]); the two are one
//! definition, round-trip tested, so a list can never emit a cursor it cannot read back.
//!
//! Lists that emit more fields than they need (a block's transactions emit `block_number` as Blockscout does)
//! read the extra fields leniently and only the key field strictly.

use super::error::ApiError;
use super::json::{checksum, hash_hex, iso_timestamp_ms, parse_iso_ms};
use super::query::Query;
use super::router::parse_address;
use crate::store::keys::{
    BlockPos, CoinRankKey, HolderRankKey, NameSearchKey, PendingKey, SearchKey, TokenRankKey, TracePos, TransferPos,
};
use alloy::primitives::{Address, B256, U256};
use serde_json::{json, Map, Value};

/// A position in a list, spelled as query fields.
pub trait Cursor: Sized {
    /// The cursor of a request (`None`: the first page).
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError>;
    /// The query fields that continue after this position.
    fn to_params(&self) -> Vec<(&'static str, Value)>;
}

/// `next_page_params`: the cursor's fields, the echoed filters and `items_count`.
pub fn next_page_params<C: Cursor>(cursor: &C, size: usize, echo: &[(&'static str, Value)]) -> Map<String, Value> {
    let mut map: Map<String, Value> = cursor.to_params().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    map.extend(echo.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    map.insert("items_count".into(), json!(size));
    map
}

fn small<T: TryFrom<u64>>(q: &Query, key: &'static str) -> Result<Option<T>, ApiError> {
    q.u64(key)?.map(|n| T::try_from(n).map_err(|_| ApiError::invalid(key, "Invalid value: too large"))).transpose()
}

/// An index read the way Blockscout's frontend sends it back (out of range saturates: past every row).
fn saturating_index(q: &Query) -> Result<Option<u32>, ApiError> {
    Ok(q.u64("index")?.map(|i| u32::try_from(i).unwrap_or(u32::MAX)))
}

/// A context field that lists emit but do not filter by: read when well-formed, else zero.
fn lenient(q: &Query, key: &'static str) -> u64 {
    q.u64(key).ok().flatten().unwrap_or(0)
}

fn decimal(q: &Query, key: &'static str) -> Result<Option<U256>, ApiError> {
    q.get(key)
        .map(|v| v.parse::<U256>().map_err(|_| ApiError::invalid(key, "Invalid value: expected a decimal integer")))
        .transpose()
}

/// The sort of `sorts` a request's `sort` names and the amount its cursor carries under that name (`None`: another
/// sort, or the first page).
fn sorted_amount<S: Copy, const N: usize>(
    q: &Query,
    sorts: [S; N],
    name: fn(S) -> &'static str,
) -> Result<Option<(S, U256)>, ApiError> {
    let Some(by) = sorts.into_iter().find(|s| q.get("sort") == Some(name(*s))) else { return Ok(None) };
    Ok(decimal(q, name(by))?.map(|amount| (by, amount)))
}

/// Lists ordered by address (the smart-contract list): the last `hash` shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressCursor(pub Address);

impl Cursor for AddressCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        Ok(q.get("hash").map(|h| parse_address(h, "hash")).transpose()?.map(AddressCursor))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("hash", json!(checksum(&self.0)))]
    }
}

/// What the contract list can be sorted by besides the address; its name is the cursor's field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContractSort {
    /// The newest indexed native balance (`balance`).
    Balance,
    /// The transactions sent to or from the contract (`transactions_count`).
    TransactionsCount,
}

impl ContractSort {
    /// The query field (`sort=` and the cursor's).
    pub fn name(self) -> &'static str {
        match self {
            ContractSort::Balance => "balance",
            ContractSort::TransactionsCount => "transactions_count",
        }
    }
}

/// The contract list sorted by an amount: `sort`, the amount under that name, then the address (`hash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContractSortCursor {
    /// What the list is sorted by.
    pub by: ContractSort,
    /// The last item's amount.
    pub amount: U256,
    /// The last item's address (ties of the amount).
    pub address: Address,
}

impl Cursor for ContractSortCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let sorts = [ContractSort::Balance, ContractSort::TransactionsCount];
        let Some((by, amount)) = sorted_amount(q, sorts, ContractSort::name)? else { return Ok(None) };
        let address = q.get("hash").map(|h| parse_address(h, "hash")).transpose()?;
        let address =
            address.ok_or_else(|| ApiError::invalid("hash", format!("Invalid value: required with {}", by.name())))?;
        Ok(Some(ContractSortCursor { by, amount, address }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("sort", json!(self.by.name())),
            (self.by.name(), json!(self.amount.to_string())),
            ("hash", json!(checksum(&self.address))),
        ]
    }
}

/// Hot contracts: `transactions_count`, `total_gas_used` and `contract_address_hash` of the last item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotCursor {
    /// Transactions sent to the contract in the window.
    pub transactions: u64,
    /// Their gas used.
    pub gas: u64,
    /// The contract.
    pub address: Address,
}

impl Cursor for HotCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(address) = q.get("contract_address_hash") else { return Ok(None) };
        let address = parse_address(address, "contract_address_hash")?;
        let required = |key: &'static str| {
            q.u64(key)?.ok_or_else(|| ApiError::invalid(key, "Invalid value: required with contract_address_hash"))
        };
        Ok(Some(HotCursor { transactions: required("transactions_count")?, gas: required("total_gas_used")?, address }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("transactions_count", json!(self.transactions)),
            ("total_gas_used", json!(self.gas)),
            ("contract_address_hash", json!(checksum(&self.address))),
        ]
    }
}

/// Newest-first block lists (`/blocks`, coin balance history): `block_number`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockCursor(pub u64);

impl Cursor for BlockCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        Ok(q.u64("block_number")?.map(BlockCursor))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("block_number", json!(self.0))]
    }
}

/// Reorged blocks: `block_number` and `hash` (a number alone continues below that height).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReorgCursor {
    /// Height.
    pub number: u64,
    /// Hash of the last block shown at that height.
    pub hash: Option<B256>,
}

impl Cursor for ReorgCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let hash = q.get("hash").map(|h| super::router::parse_hash(h, "hash")).transpose()?;
        Ok(q.u64("block_number")?.map(|number| ReorgCursor { number, hash }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        let mut fields = vec![("block_number", json!(self.number))];
        fields.extend(self.hash.map(|h| ("hash", json!(hash_hex(&h)))));
        fields
    }
}

/// Chain-wide and address transaction and log lists: `block_number`, `index` (a block alone continues below it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PosCursor(pub BlockPos);

impl Cursor for PosCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(block) = q.u64("block_number")? else { return Ok(None) };
        Ok(Some(PosCursor(BlockPos { block, index: small(q, "index")?.unwrap_or(0) })))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("block_number", json!(self.0.block)), ("index", json!(self.0.index))]
    }
}

/// What an address's transactions can be sorted by besides their position; its name is the cursor's field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxAmount {
    /// The ether sent (`value`).
    Value,
    /// Gas used times the effective gas price (`fee`).
    Fee,
}

impl TxAmount {
    /// The query field (`sort=` and the cursor's).
    pub fn name(self) -> &'static str {
        match self {
            TxAmount::Value => "value",
            TxAmount::Fee => "fee",
        }
    }
}

/// An address's transactions sorted by an amount: `sort` (`value` or `fee`), the amount under that name, then
/// `block_number` and `index`. Only the field `sort` names is read: Blockscout's cursors carry both amounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmountCursor {
    /// What the list is sorted by.
    pub by: TxAmount,
    /// The last item's amount.
    pub amount: U256,
    /// The last item's position (ties of the amount).
    pub pos: BlockPos,
}

impl Cursor for AmountCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let sorts = [TxAmount::Value, TxAmount::Fee];
        let Some((by, amount)) = sorted_amount(q, sorts, TxAmount::name)? else { return Ok(None) };
        let block = q
            .u64("block_number")?
            .ok_or_else(|| ApiError::invalid("block_number", format!("Invalid value: required with {}", by.name())))?;
        Ok(Some(AmountCursor { by, amount, pos: BlockPos { block, index: small(q, "index")?.unwrap_or(0) } }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        let mut fields = vec![("sort", json!(self.by.name())), (self.by.name(), json!(self.amount.to_string()))];
        fields.extend(PosCursor(self.pos).to_params());
        fields
    }
}

/// Lists inside one block or transaction (a block's transactions, a transaction's logs): the `index`, with the
/// `block_number` context Blockscout also sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexCursor(pub BlockPos);

impl Cursor for IndexCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        Ok(saturating_index(q)?.map(|index| IndexCursor(BlockPos { block: lenient(q, "block_number"), index })))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        PosCursor(self.0).to_params()
    }
}

/// Internal transactions of chain, block and address lists: `block_number`, `transaction_index`, `index` (a
/// block alone continues below it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceCursor(pub TracePos);

impl Cursor for TraceCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(block) = q.u64("block_number")? else { return Ok(None) };
        let tx = small(q, "transaction_index")?.unwrap_or(0);
        Ok(Some(TraceCursor(TracePos { block, tx, index: small(q, "index")?.unwrap_or(0) })))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        let p = self.0;
        vec![("block_number", json!(p.block)), ("transaction_index", json!(p.tx)), ("index", json!(p.index))]
    }
}

/// A transaction's internal transactions: the call `index`, with its block and transaction as context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCursor(pub TracePos);

impl Cursor for CallCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let context = |key| u32::try_from(lenient(q, key)).unwrap_or(0);
        Ok(saturating_index(q)?.map(|index| {
            CallCursor(TracePos { block: lenient(q, "block_number"), tx: context("transaction_index"), index })
        }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        TraceCursor(self.0).to_params()
    }
}

/// Token transfers: `block_number`, `index` (the log), `index_in_batch` (a block alone continues below it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferCursor(pub TransferPos);

impl Cursor for TransferCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(block) = q.u64("block_number")? else { return Ok(None) };
        let log = small(q, "index")?;
        let item = if log.is_some() { small(q, "index_in_batch")?.unwrap_or(0) } else { 0 };
        Ok(Some(TransferCursor(TransferPos { block, log: log.unwrap_or(0), item })))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        let p = self.0;
        vec![("block_number", json!(p.block)), ("index", json!(p.log)), ("index_in_batch", json!(p.item))]
    }
}

/// The pool: `inserted_at` (ISO time first seen) and `hash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingCursor(pub PendingKey);

impl Cursor for PendingCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let (Some(at), Some(hash)) = (q.get("inserted_at"), q.get("hash")) else { return Ok(None) };
        let seen_ms = parse_iso_ms(at)
            .ok_or_else(|| ApiError::invalid("inserted_at", "Invalid format. Expected an ISO-8601 UTC timestamp"))?;
        Ok(Some(PendingCursor(PendingKey { seen_ms, hash: super::router::parse_hash(hash, "hash")? })))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("inserted_at", json!(iso_timestamp_ms(self.0.seen_ms))), ("hash", json!(hash_hex(&self.0.hash)))]
    }
}

/// `/tokens`: by holder count (`holders_count`, `contract_address_hash`), or with `q` by name (`name`,
/// `contract_address_hash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCursor {
    /// After this token in holder order.
    Rank(TokenRankKey),
    /// After this search key.
    Search(SearchKey),
}

impl Cursor for TokenCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(token) = q.get("contract_address_hash") else { return Ok(None) };
        let token = parse_address(token, "contract_address_hash")?;
        let searching = q.get("q").is_some_and(|t| !t.trim().is_empty());
        Ok(Some(if searching {
            TokenCursor::Search(SearchKey::new(q.get("name").unwrap_or_default(), token))
        } else {
            TokenCursor::Rank(TokenRankKey { holders: q.u64("holders_count")?.unwrap_or(0), token })
        }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        match self {
            TokenCursor::Rank(k) => {
                vec![("holders_count", json!(k.holders)), ("contract_address_hash", json!(checksum(&k.token)))]
            }
            TokenCursor::Search(k) => {
                vec![("name", json!(key_text(&k.text))), ("contract_address_hash", json!(checksum(&k.token)))]
            }
        }
    }
}

/// `/search` text hits: tokens first (`token_text`, `token_address_hash`: the matched name, word or symbol), then
/// registry names (`ens_name`, `ens_node`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchCursor {
    /// After this token search key.
    Token(SearchKey),
    /// After this name search key (every token hit was shown).
    Name(NameSearchKey),
}

fn key_text(text: &[u8]) -> String {
    String::from_utf8_lossy(text).trim_end_matches('\0').to_owned()
}

impl Cursor for SearchCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        if let Some(token) = q.get("token_address_hash") {
            let token = parse_address(token, "token_address_hash")?;
            return Ok(Some(SearchCursor::Token(SearchKey::new(q.get("token_text").unwrap_or_default(), token))));
        }
        let Some(node) = q.get("ens_node") else { return Ok(None) };
        let node = super::router::parse_hash(node, "ens_node")?;
        Ok(Some(SearchCursor::Name(NameSearchKey::new(q.get("ens_name").unwrap_or_default(), node))))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        match self {
            SearchCursor::Token(k) => {
                vec![("token_text", json!(key_text(&k.text))), ("token_address_hash", json!(checksum(&k.token)))]
            }
            SearchCursor::Name(k) => {
                vec![("ens_name", json!(key_text(&k.text))), ("ens_node", json!(hash_hex(&k.node)))]
            }
        }
    }
}

/// A token's holders: `address_hash`, `value`, and for an ERC-1155 collection's rows `token_id` (the token comes
/// from the path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HolderCursor {
    /// The holder shown last.
    pub holder: Address,
    /// Its amount.
    pub amount: U256,
    /// The id of the row shown last, in a list with one row per holder and id.
    pub id: Option<U256>,
}

impl HolderCursor {
    /// The ranking key of this position in `token`'s holders.
    pub fn key(&self, token: Address) -> HolderRankKey {
        HolderRankKey { token, amount: self.amount, holder: self.holder }
    }
}

impl Cursor for HolderCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        match (q.get("address_hash"), decimal(q, "value")?) {
            (Some(holder), Some(amount)) => Ok(Some(HolderCursor {
                holder: parse_address(holder, "address_hash")?,
                amount,
                id: decimal(q, "token_id")?,
            })),
            _ => Ok(None),
        }
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        let mut params =
            vec![("address_hash", json!(checksum(&self.holder))), ("value", json!(self.amount.to_string()))];
        if let Some(id) = self.id {
            params.push(("token_id", json!(id.to_string())));
        }
        params
    }
}

/// An address's token holdings: `token_address_hash`, `token_id` (the holder comes from the path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldingCursor {
    /// Token shown last.
    pub token: Address,
    /// Its id (0 for fungible tokens).
    pub id: U256,
}

impl Cursor for HoldingCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(token) = q.get("token_address_hash") else { return Ok(None) };
        let id = q.get("token_id").map(|i| i.parse().map_err(|_| ApiError::invalid("token_id", "Invalid value")));
        Ok(Some(HoldingCursor {
            token: parse_address(token, "token_address_hash")?,
            id: id.transpose()?.unwrap_or_default(),
        }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("token_address_hash", json!(checksum(&self.token))), ("token_id", json!(self.id.to_string()))]
    }
}

/// An NFT collection's instances, highest id first: `unique_token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceCursor(pub U256);

impl Cursor for InstanceCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        Ok(decimal(q, "unique_token")?.map(InstanceCursor))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("unique_token", json!(self.0.to_string()))]
    }
}

/// Top accounts, richest first: `fetched_coin_balance` and `hash` (both required to continue). Blockscout also
/// sends `transactions_count` back; it is read leniently and ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoinRankCursor(pub CoinRankKey);

impl Cursor for CoinRankCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let balance = decimal(q, "fetched_coin_balance")?;
        let hash = q.get("hash").map(|h| parse_address(h, "hash")).transpose()?;
        Ok(match (balance, hash) {
            (Some(balance), Some(address)) => Some(CoinRankCursor(CoinRankKey { balance, address })),
            (None, None) => None,
            (None, Some(_)) => return Err(ApiError::invalid("fetched_coin_balance", "Missing parameter")),
            (Some(_), None) => return Err(ApiError::invalid("hash", "Missing parameter")),
        })
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("fetched_coin_balance", json!(self.0.balance.to_string())), ("hash", json!(checksum(&self.0.address)))]
    }
}

/// An address's NFTs, by collection then id: `token_contract_address_hash` and `token_id` (Blockscout also sends
/// `token_type`, which is not needed to continue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NftCursor {
    /// Collection shown last.
    pub token: Address,
    /// Its id shown last.
    pub id: U256,
}

impl Cursor for NftCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let Some(token) = q.get("token_contract_address_hash") else { return Ok(None) };
        let token = parse_address(token, "token_contract_address_hash")?;
        let id = decimal(q, "token_id")?.ok_or_else(|| ApiError::invalid("token_id", "Missing parameter"))?;
        Ok(Some(NftCursor { token, id }))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("token_contract_address_hash", json!(checksum(&self.token))), ("token_id", json!(self.id.to_string()))]
    }
}

/// An address's NFT collections: `token_contract_address_hash` of the last one shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectionCursor(pub Address);

impl Cursor for CollectionCursor {
    fn from_query(q: &Query) -> Result<Option<Self>, ApiError> {
        let token = q.get("token_contract_address_hash");
        Ok(token.map(|t| parse_address(t, "token_contract_address_hash")).transpose()?.map(CollectionCursor))
    }
    fn to_params(&self) -> Vec<(&'static str, Value)> {
        vec![("token_contract_address_hash", json!(checksum(&self.0)))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query a client sends back for `next_page_params`.
    fn query_of(params: &Map<String, Value>) -> Query {
        let raw: Vec<String> = params
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={}", s.replace('+', "%2B")),
                other => format!("{k}={other}"),
            })
            .collect();
        Query::parse(Some(&raw.join("&")))
    }

    fn round_trip<C: Cursor + PartialEq + std::fmt::Debug>(cursor: C, echo: &[(&'static str, Value)]) {
        let params = next_page_params(&cursor, 25, echo);
        assert_eq!(params["items_count"], 25);
        assert_eq!(C::from_query(&query_of(&params)).unwrap(), Some(cursor), "{params:?}");
        assert_eq!(C::from_query(&Query::parse(None)).unwrap(), None);
    }

    #[test]
    fn every_cursor_reads_back_what_it_writes() {
        let a = Address::repeat_byte(0xab);
        round_trip(AddressCursor(Address::repeat_byte(0xab)), &[("q", json!("demo"))]);
        round_trip(BlockCursor(u64::MAX), &[]);
        round_trip(ReorgCursor { number: 7, hash: Some(B256::repeat_byte(3)) }, &[]);
        round_trip(ReorgCursor { number: 7, hash: None }, &[]);
        round_trip(PosCursor(BlockPos { block: 9, index: 4 }), &[("filter", json!("to"))]);
        round_trip(IndexCursor(BlockPos { block: 9, index: u32::MAX }), &[]);
        round_trip(TraceCursor(TracePos { block: 9, tx: 2, index: 5 }), &[]);
        round_trip(CallCursor(TracePos { block: 9, tx: 2, index: 5 }), &[]);
        round_trip(TransferCursor(TransferPos { block: 1, log: 2, item: 3 }), &[]);
        round_trip(PendingCursor(PendingKey { seen_ms: 1_748_255_211_474, hash: B256::repeat_byte(1) }), &[]);
        round_trip(TokenCursor::Rank(TokenRankKey { holders: 12, token: a }), &[]);
        round_trip(TokenCursor::Search(SearchKey::new("demo token", a)), &[("q", json!("demo"))]);
        let search = [("next_page_params_type", json!("search")), ("q", json!("dem"))];
        round_trip(SearchCursor::Token(SearchKey::new("démo token", a)), &search);
        round_trip(SearchCursor::Name(NameSearchKey::new("demo.sei", B256::repeat_byte(7))), &search);
        round_trip(HolderCursor { holder: a, amount: U256::MAX, id: None }, &[]);
        let pos = BlockPos { block: 7, index: 3 };
        round_trip(AmountCursor { by: TxAmount::Value, amount: U256::MAX, pos }, &[]);
        round_trip(AmountCursor { by: TxAmount::Fee, amount: U256::ZERO, pos }, &[]);
        let contract = Address::repeat_byte(0x11);
        round_trip(ContractSortCursor { by: ContractSort::Balance, amount: U256::MAX, address: contract }, &[]);
        round_trip(
            ContractSortCursor { by: ContractSort::TransactionsCount, amount: U256::ZERO, address: contract },
            &[],
        );
        round_trip(HotCursor { transactions: 3, gas: u64::MAX, address: a }, &[("scale", json!("1d"))]);
        // Blockscout's cursor carries both amounts: the one `sort` names counts.
        let both = Query::parse(Some("sort=fee&order=asc&fee=7&value=9&block_number=7&index=3"));
        let fee = AmountCursor { by: TxAmount::Fee, amount: U256::from(7), pos };
        assert_eq!(AmountCursor::from_query(&both).unwrap(), Some(fee));
        round_trip(HolderCursor { holder: a, amount: U256::from(5), id: Some(U256::ZERO) }, &[]);
        round_trip(HoldingCursor { token: a, id: U256::from(77) }, &[]);
        round_trip(InstanceCursor(U256::from(10).pow(U256::from(70))), &[]);
        round_trip(NftCursor { token: a, id: U256::MAX }, &[("type", json!("ERC-721"))]);
        round_trip(CollectionCursor(a), &[]);
        round_trip(CoinRankCursor(CoinRankKey { balance: U256::from(10).pow(U256::from(24)), address: a }), &[]);
    }

    #[test]
    fn partial_cursors_continue_below_a_block() {
        let q = Query::parse(Some("block_number=5"));
        assert_eq!(PosCursor::from_query(&q).unwrap(), Some(PosCursor(BlockPos { block: 5, index: 0 })));
        assert_eq!(
            TransferCursor::from_query(&q).unwrap(),
            Some(TransferCursor(TransferPos { block: 5, log: 0, item: 0 }))
        );
        assert_eq!(TraceCursor::from_query(&q).unwrap(), Some(TraceCursor(TracePos { block: 5, tx: 0, index: 0 })));
        let q = Query::parse(Some("index=3"));
        assert_eq!(CallCursor::from_query(&q).unwrap().map(|c| c.0.index), Some(3));
        assert!(TraceCursor::from_query(&Query::parse(Some("block_number=1&transaction_index=99999999999"))).is_err());
    }
}

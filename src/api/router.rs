//! `Route`: every endpoint in one place. A request is parsed from (method, path, query) into a typed endpoint,
//! before any I/O (pure and table-tested), and [`Route::dispatch`] is the one `match` that serves it. A new
//! endpoint is a variant with its parameters and cursor type here, its parse and dispatch arms, and its handler.
//!
//! Path and query parameters are validated here: a malformed hash, number or address, or a page size outside
//! 1–100, is a 422 with Blockscout's `errors` body; handlers only see typed values.

use super::body::Body;
use super::cursor::{
    AddressCursor, AmountCursor, BlockCursor, CallCursor, CoinRankCursor, CollectionCursor, ContractSort,
    ContractSortCursor, Cursor, HolderCursor, HoldingCursor, HotCursor, IndexCursor, InstanceCursor, NftCursor,
    PendingCursor, PosCursor, ReorgCursor, SearchCursor, TokenCursor, TraceCursor, TransferCursor, TxAmount,
};
use super::error::ApiError;
use super::json::BlockKind;
use super::methods::selectors_for;
use super::query::{percent_decode, Query};
use super::{blocking_read as read, read_body, AppState};
use crate::api::request_body::RequestBody;
use crate::chain::{TxType, TxTypes};
use crate::store::records::{CallKind, ItemKind, TokenKind};
use alloy::primitives::{Address, B256, U256};
use hyper::{Method, Request, Response, StatusCode};
use std::net::IpAddr;

/// Default page size (the seed's 25).
pub const DEFAULT_PAGE: usize = 25;
/// Hits per `/search` page without `items_count`.
const SEARCH_PAGE: usize = 50;
/// Largest page size.
pub const MAX_PAGE: usize = 100;

/// A block named by number or hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockId {
    /// Height.
    Number(u64),
    /// Block hash.
    Hash(B256),
}

/// The `type=a,b` filter of transaction lists (`[a,b]` accepted too); empty when absent.
fn tx_types(q: &Query) -> Result<TxTypes, ApiError> {
    let mut types = TxTypes::default();
    let Some(raw) = q.get("type") else {
        return Ok(types);
    };
    for name in raw.trim_start_matches('[').trim_end_matches(']').split(',').filter(|k| !k.is_empty()) {
        let t = TxType::parse(name.trim()).ok_or_else(|| ApiError::invalid("type", "Invalid value for enum"))?;
        types = types.with(t);
    }
    Ok(types)
}

/// `filter=to|from` on address lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Rows where the address receives.
    To,
    /// Rows where the address sends.
    From,
}

/// A paginated request: page size and whether a cursor continues a previous page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page<C> {
    /// Items per page (1–100).
    pub size: usize,
    /// Continue after this position.
    pub after: Option<C>,
}

fn page_size(q: &Query, default: usize) -> Result<usize, ApiError> {
    match q.u64("items_count")? {
        None => Ok(default),
        Some(n) if (1..=MAX_PAGE as u64).contains(&n) => Ok(n as usize),
        Some(_) => Err(ApiError::invalid("items_count", format!("Invalid value: must be between 1 and {MAX_PAGE}"))),
    }
}

fn page<C: Cursor>(q: &Query) -> Result<Page<C>, ApiError> {
    Ok(Page { size: page_size(q, DEFAULT_PAGE)?, after: C::from_query(q)? })
}

/// Parses a 32-byte `0x` hash.
pub fn parse_hash(raw: &str, param: &'static str) -> Result<B256, ApiError> {
    hex_bytes(raw)
        .map(B256::new)
        .ok_or_else(|| ApiError::invalid(param, "Invalid format. Expected ~r/^0x([A-Fa-f0-9]{64})$/"))
}

/// Parses a 20-byte `0x` address (any letter case).
pub fn parse_address(raw: &str, param: &'static str) -> Result<Address, ApiError> {
    hex_bytes(raw)
        .map(Address::new)
        .ok_or_else(|| ApiError::invalid(param, "Invalid format. Expected ~r/^0x([A-Fa-f0-9]{40})$/"))
}

/// The `N` bytes of `0x` followed by exactly `2 * N` hex digits (any letter case). The length is checked here:
/// the decoder would take a second `0x` in front of the digits.
fn hex_bytes<const N: usize>(raw: &str) -> Option<[u8; N]> {
    let digits = raw.strip_prefix("0x").filter(|digits| digits.len() == 2 * N)?;
    let mut bytes = [0; N];
    alloy::hex::decode_to_slice(digits, &mut bytes).ok()?;
    Some(bytes)
}

fn parse_block_id(raw: &str) -> Result<BlockId, ApiError> {
    if raw.starts_with("0x") {
        return parse_hash(raw, "block_hash_or_number_param").map(BlockId::Hash);
    }
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = raw.parse::<u64>() {
            return Ok(BlockId::Number(n));
        }
    }
    Err(ApiError::invalid(
        "block_hash_or_number_param",
        "Invalid format. Expected a non-negative integer or ~r/^0x([A-Fa-f0-9]{64})$/",
    ))
}

/// Call kinds kept by `internal_type` and `call_type` (`None`: every kind).
fn call_kinds(q: &Query) -> Result<Option<Vec<CallKind>>, ApiError> {
    use CallKind::*;
    let internal = match q.get("internal_type") {
        None => None,
        Some("call") => Some(vec![Call, DelegateCall, StaticCall, CallCode]),
        Some("create") => Some(vec![Create]),
        Some("create2") => Some(vec![Create2]),
        Some("selfdestruct") => Some(vec![SelfDestruct]),
        // Block rewards and `stop` frames are not call frames of an EVM trace.
        Some("reward") | Some("stop") => Some(vec![]),
        Some(_) => return Err(ApiError::invalid("internal_type", "Invalid value for enum")),
    };
    let call = match q.get("call_type") {
        None => None,
        Some("call") => Some(vec![Call]),
        Some("callcode") => Some(vec![CallCode]),
        Some("delegatecall") => Some(vec![DelegateCall]),
        Some("staticcall") => Some(vec![StaticCall]),
        Some(_) => return Err(ApiError::invalid("call_type", "Invalid value for enum")),
    };
    Ok(match (internal, call) {
        (None, only) | (only, None) => only,
        (Some(internal), Some(call)) => Some(internal.into_iter().filter(|k| call.contains(k)).collect()),
    })
}

/// A token id path segment: a decimal integer below 2^256.
fn token_id(raw: &str) -> Result<U256, ApiError> {
    let digits = !raw.is_empty() && raw.len() <= 78 && raw.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| raw.parse::<U256>().ok())
        .flatten()
        .ok_or_else(|| ApiError::invalid("token_id_param", "Invalid format. Expected a non-negative integer"))
}

/// `order`: `asc` is true, `desc` (the default) false.
fn ascending(q: &Query) -> Result<bool, ApiError> {
    match q.get("order") {
        None | Some("desc") => Ok(false),
        Some("asc") => Ok(true),
        Some(_) => Err(ApiError::invalid("order", "Invalid value for enum")),
    }
}

fn direction(q: &Query) -> Result<Option<Direction>, ApiError> {
    match q.get("filter") {
        None => Ok(None),
        Some("to") => Ok(Some(Direction::To)),
        Some("from") => Ok(Some(Direction::From)),
        Some(_) => Err(ApiError::invalid("filter", "Invalid value for enum")),
    }
}

/// Token standards Blockscout's `type` filters accept that this index never holds: a filter of only these matches
/// nothing (the stock frontend offers ERC-404 on every chain).
const NEVER_INDEXED_KINDS: [&str; 3] = ["ERC-404", "ERC-7984", "ERC-8056"];

/// The `type` filter: every kind when empty; `None` when it names only [`NEVER_INDEXED_KINDS`].
fn token_kinds(q: &Query) -> Result<Option<Vec<TokenKind>>, ApiError> {
    let Some(raw) = q.get("type") else {
        return Ok(Some(Vec::new()));
    };
    let mut kinds = Vec::new();
    let mut named = false;
    for label in raw.trim_start_matches('[').trim_end_matches(']').split(',').map(str::trim).filter(|k| !k.is_empty()) {
        named = true;
        match TokenKind::parse(label) {
            Some(kind) => kinds.push(kind),
            None if NEVER_INDEXED_KINDS.iter().any(|k| k.eq_ignore_ascii_case(label)) => {}
            None => return Err(ApiError::invalid("type", "Invalid value for enum")),
        }
    }
    Ok((!named || !kinds.is_empty()).then_some(kinds))
}

/// Every endpoint, with its typed parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /health`: liveness.
    Health,
    /// `GET /health/ready`: readiness.
    Ready,
    /// `POST /api/eth`: the JSON-RPC passthrough.
    Rpc,
    /// `GET /socket/v2/websocket`: the Phoenix V2 WebSocket.
    Socket,
    /// `GET /api/v2/stats`.
    Stats,
    /// A list whose `type` filter names only standards the index never holds (ERC-404…): an empty page.
    NoItems,
    /// `GET /api/v2/withdrawals`, `/blocks/:b/withdrawals`, `/addresses/:a/withdrawals`: beacon-chain
    /// withdrawals, which this chain has none of: an empty page.
    Withdrawals,
    /// `GET /api/v2/blocks`.
    Blocks {
        /// `type`.
        kind: BlockKind,
        /// Size and cursor (`block_number`, and `hash` for reorgs).
        page: Page<ReorgCursor>,
    },
    /// `GET /api/v2/blocks/:id`.
    Block(BlockId),
    /// `GET /api/v2/blocks/:number/countdown`: when a future block is expected.
    BlockCountdown(u64),
    /// `GET /api/v2/blocks/:id/transactions`.
    BlockTransactions {
        /// The block.
        id: BlockId,
        /// `type` filter.
        kinds: TxTypes,
        /// Size and cursor (transaction index).
        page: Page<IndexCursor>,
    },
    /// `GET /api/v2/transactions?filter=pending`.
    PendingTransactions {
        /// Size and cursor (`inserted_at`, `hash`).
        page: Page<PendingCursor>,
    },
    /// `GET /api/v2/transactions`.
    Transactions {
        /// `type` filter.
        kinds: TxTypes,
        /// `method` filter (selectors).
        methods: Option<Vec<[u8; 4]>>,
        /// Size and cursor.
        page: Page<PosCursor>,
    },
    /// `GET /api/v2/transactions/:hash`.
    Transaction(B256),
    /// `GET /api/v2/transactions/:hash/logs`.
    TransactionLogs {
        /// The transaction.
        hash: B256,
        /// Size and cursor (log index).
        page: Page<IndexCursor>,
    },
    /// `GET /api/v2/transactions/:hash/token-transfers`.
    TransactionTokenTransfers {
        /// The transaction.
        hash: B256,
        /// `type` filter (`None`: only standards never indexed, nothing matches).
        kinds: Option<Vec<TokenKind>>,
        /// Size and cursor.
        page: Page<TransferCursor>,
    },
    /// `GET /api/v2/transactions/:hash/internal-transactions`.
    TransactionInternal {
        /// The transaction.
        hash: B256,
        /// Size and cursor (trace index).
        page: Page<CallCursor>,
    },
    /// `GET /api/v2/transactions/:hash/state-changes`.
    StateChanges {
        /// The transaction.
        hash: B256,
        /// Items already shown (Blockscout's `items_count` cursor).
        offset: usize,
    },
    /// `/api?module=…&action=…` (also `/api/v1`): the Etherscan-style API, GET or POST.
    Etherscan,
    /// `GET /api/v2/transactions/:hash/raw-trace` (a bare array).
    RawTrace(B256),
    /// `GET /api/v2/addresses/:a`.
    Address(Address),
    /// `GET /api/v2/addresses/:a/transactions`.
    AddressTransactions {
        /// The address.
        address: Address,
        /// `filter=to|from`.
        direction: Option<Direction>,
        /// `order=asc` (oldest first).
        ascending: bool,
        /// Size and cursor.
        page: Page<PosCursor>,
    },
    /// `GET /api/v2/addresses/:a/transactions?sort=value|fee&order=`.
    AddressTransactionsByAmount {
        /// The address.
        address: Address,
        /// `filter=to|from`.
        direction: Option<Direction>,
        /// `sort=`.
        by: TxAmount,
        /// `order=asc` (smallest first).
        ascending: bool,
        /// Size and cursor.
        page: Page<AmountCursor>,
    },
    /// `GET /api/v2/addresses/:a/logs`.
    AddressLogs {
        /// The emitter.
        address: Address,
        /// `topic` filter (any position).
        topic: Option<B256>,
        /// Size and cursor.
        page: Page<PosCursor>,
    },
    /// `GET /api/v2/addresses/:a/counters`.
    AddressCounters(Address),
    /// `GET /api/v2/addresses/:a/tabs-counters`.
    AddressTabsCounters(Address),
    /// `GET /api/v2/addresses/:a/coin-balance-history`.
    CoinBalanceHistory {
        /// The address.
        address: Address,
        /// Size and cursor (block number).
        page: Page<BlockCursor>,
    },
    /// `GET /api/v2/addresses/:a/token-transfers`.
    AddressTokenTransfers {
        /// The address.
        address: Address,
        /// `filter=to|from`.
        direction: Option<Direction>,
        /// `type` filter (empty: all).
        kinds: Vec<TokenKind>,
        /// `token` filter.
        token: Option<Address>,
        /// Size and cursor.
        page: Page<TransferCursor>,
    },
    /// `GET /api/v2/addresses/:a/token-balances` (a bare array).
    AddressTokenBalances(Address),
    /// `GET /api/v2/addresses/:a/tokens`.
    AddressTokens {
        /// The holder.
        address: Address,
        /// `type` filter.
        kinds: Vec<TokenKind>,
        /// Size and cursor.
        page: Page<HoldingCursor>,
    },
    /// `GET /api/v2/addresses/:a/internal-transactions`.
    AddressInternal {
        /// The address.
        address: Address,
        /// `filter=to|from` (`to` includes created contracts).
        direction: Option<Direction>,
        /// Size and cursor.
        page: Page<TraceCursor>,
    },
    /// `GET /api/v2/blocks/:id/internal-transactions`.
    BlockInternal {
        /// The block.
        id: BlockId,
        /// `internal_type` and `call_type` filters.
        kinds: Option<Vec<CallKind>>,
        /// Size and cursor.
        page: Page<TraceCursor>,
    },
    /// `GET /api/v2/internal-transactions`: every internal transaction, newest first.
    InternalTransactions {
        /// Size and cursor.
        page: Page<TraceCursor>,
    },
    /// `GET /api/v2/tokens`.
    Tokens {
        /// `type` filter.
        kinds: Vec<TokenKind>,
        /// `q`: name or symbol prefix.
        q: Option<String>,
        /// `sort=holders_count&order=asc`: fewest holders first (most first otherwise).
        fewest_first: bool,
        /// Size and cursor.
        page: Page<TokenCursor>,
    },
    /// `GET /api/v2/tokens/:a`.
    Token(Address),
    /// `GET /api/v2/tokens/:a/transfers`.
    TokenTransfersOf {
        /// The token.
        token: Address,
        /// Size and cursor.
        page: Page<TransferCursor>,
    },
    /// `GET /api/v2/tokens/:a/holders`.
    TokenHolders {
        /// The token.
        token: Address,
        /// Size and cursor.
        page: Page<HolderCursor>,
    },
    /// `GET /api/v2/tokens/:a/counters`.
    TokenCounters(Address),
    /// `GET /api/v2/tokens/:a/instances`.
    TokenInstances {
        /// The token.
        token: Address,
        /// `holder_address_hash` filter.
        holder: Option<Address>,
        /// Size and cursor (`unique_token`: the last id shown).
        page: Page<InstanceCursor>,
    },
    /// `GET /api/v2/search`.
    Search { q: String, page: Page<SearchCursor> },
    /// `GET /api/v2/search/quick`.
    SearchQuick(String),
    /// `GET /api/v2/search/check-redirect`.
    SearchRedirect(String),
    /// `GET /api/v2/main-page/blocks`.
    MainPageBlocks,
    /// `GET /api/v2/main-page/transactions`.
    MainPageTransactions,
    /// `GET /api/v2/main-page/indexing-status`.
    IndexingStatus,
    /// `GET /api/v2/config/backend-version`.
    BackendVersion,
    /// `GET /api/v2/config/backend`: the backend's non-secret settings (no chain type).
    BackendConfig,
    /// `GET /api/v2/config/db-background-migrations`: migrations still running (none: the store has none).
    BackgroundMigrations,
    /// `GET /api/v2/withdrawals/counters`: zero, as the chain has no beacon-chain withdrawals.
    WithdrawalCounters,
    /// `GET /api/v2/stats/hot-smart-contracts?scale=&sort=&order=`.
    HotContracts {
        /// `scale=` and its length in seconds.
        scale: (&'static str, u64),
        /// `sort=total_gas_used` (else transactions).
        by_gas: bool,
        /// `order=asc` (fewest first).
        ascending: bool,
        /// Size and cursor.
        page: Page<HotCursor>,
    },
    /// `GET /api/v2/smart-contracts/:a`.
    SmartContract(Address),
    /// `GET /api/v2/smart-contracts`: contracts with known source.
    SmartContracts {
        /// `q`: part of a name or address.
        q: Option<String>,
        /// `filter`: a language.
        language: Option<String>,
        /// Size and cursor.
        page: Page<AddressCursor>,
    },
    /// `GET /api/v2/smart-contracts?sort=balance|transactions_count&order=`.
    SmartContractsSorted {
        /// Name or address filter.
        q: Option<String>,
        /// `filter=` language.
        language: Option<String>,
        /// `sort=`.
        by: ContractSort,
        /// `order=asc` (smallest first).
        ascending: bool,
        /// Size and cursor.
        page: Page<ContractSortCursor>,
    },
    /// `GET /api/v2/smart-contracts/counters`.
    SmartContractCounters,
    /// `GET /api/v2/smart-contracts/verification/config`.
    VerificationConfig,
    /// `GET /api/v2/config/smart-contracts/languages`.
    ContractLanguages,
    /// `GET /api/v2/stats/charts/transactions`.
    TransactionsChart,
    /// `/api/account/v2/...`: the account API.
    Account(AccountRoute),
    /// `POST /api/v2/smart-contracts/:hash/verification/via/{standard-input,flattened-code,multi-part}` (an
    /// account token is required).
    Verify(Address, super::rest::verification::Via),
    /// `GET /api/v2/transactions/watchlist`: transactions of the caller's watched addresses (token required).
    WatchlistTransactions {
        /// Size and cursor.
        page: Page<PosCursor>,
    },
    /// `GET /api/v2/main-page/transactions/watchlist`: the newest six of them.
    MainPageWatchlistTransactions,
    /// `POST /api/eth-rpc`: the JSON-RPC passthrough under Blockscout's documented path (served as [`Route::Rpc`]).
    EthRpc,
    /// `GET /api/v2/transactions/stats`: 24-hour counts and fee sums, pending count.
    TransactionStats,
    /// `GET /api/v2/stats/charts/market`: the market chart (empty: rockscout has no price source).
    MarketChart,
    /// `GET /api/v2/addresses/:a/coin-balance-history-by-day`.
    CoinBalanceHistoryByDay(Address),
    /// `GET /api/v2/addresses`: top accounts by native balance.
    TopAccounts {
        /// Size and cursor (`fetched_coin_balance`, `hash`).
        page: Page<CoinRankCursor>,
    },
    /// `GET /api/v2/addresses/:a/blocks-validated`.
    BlocksValidated {
        /// The miner.
        address: Address,
        /// Size and cursor (`block_number`).
        page: Page<BlockCursor>,
    },
    /// `GET /api/v2/addresses/:a/nft`.
    AddressNfts {
        /// The holder.
        address: Address,
        /// `type` filter (ERC-721, ERC-1155; empty: both).
        kinds: Vec<TokenKind>,
        /// Size and cursor.
        page: Page<NftCursor>,
    },
    /// `GET /api/v2/addresses/:a/nft/collections`.
    AddressNftCollections {
        /// The holder.
        address: Address,
        /// `type` filter (ERC-721, ERC-1155; empty: both).
        kinds: Vec<TokenKind>,
        /// Size and cursor.
        page: Page<CollectionCursor>,
    },
    /// `GET /api/v2/tokens/:a/instances/:id`.
    TokenInstance(Address, U256),
    /// `PATCH /api/v2/tokens/:a/instances/:id/refetch-metadata`: the instance's metadata is read again.
    RefetchMetadata(Address, U256),
    /// `GET /api/v2/tokens/:a/instances/:id/transfers`.
    TokenInstanceTransfers {
        /// The collection.
        token: Address,
        /// The id.
        id: U256,
        /// Size and cursor.
        page: Page<TransferCursor>,
    },
    /// `GET /api/v2/tokens/:a/instances/:id/transfers-count`.
    TokenInstanceTransfersCount(Address, U256),
    /// `GET /api/v2/tokens/:a/instances/:id/holders`.
    TokenInstanceHolders {
        /// The collection.
        token: Address,
        /// The id.
        id: U256,
        /// Size and cursor (`address_hash`, `value`).
        page: Page<HolderCursor>,
    },
    /// `GET /api/v2/token-transfers`: every token transfer, newest first.
    TokenTransfers {
        /// `type` filter (empty: all).
        kinds: Vec<TokenKind>,
        /// Size and cursor.
        page: Page<TransferCursor>,
    },
    /// `GET /api/v2/transactions/:hash/summary`: what the transaction did, as interpreter summaries.
    TransactionSummary(B256),
    /// `GET /api/v2/advanced-filters`: transactions, internal transactions and token transfers, filtered.
    AdvancedFilters {
        /// The filters.
        filter: Box<super::rest::advanced::AdvancedFilter>,
        /// Size and cursor.
        page: Page<super::rest::advanced::AdvancedCursor>,
    },
    /// `GET /api/v2/advanced-filters/methods?q=`.
    AdvancedFilterMethods(Option<String>),
    /// `GET /api/v2/config/csv-export`.
    CsvConfig,
    /// `GET /api/v2/addresses/:a/{transactions,internal-transactions,token-transfers,logs}/csv`,
    /// `/api/v2/tokens/:t/holders/csv`.
    Csv(super::rest::csv::Export, super::rest::csv::CsvParams),
    /// `GET /api/v2/addresses/:name`: the address a name resolves to, in place of the hash.
    AddressByName(String),
    /// `POST /api/v2/smart-contracts/:hash/query-read-method`: a read-only call encoded and decoded by the server.
    QueryReadMethod(Address),
}

/// What an account route does with an account's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemAction {
    /// `GET` the list, newest first.
    List {
        /// Items per page.
        size: usize,
        /// Continue after this item id.
        after: Option<u64>,
    },
    /// `POST` a new item.
    Create,
    /// `GET` one item.
    Get(ItemRef),
    /// `PUT` new contents of an item.
    Update(ItemRef),
    /// `DELETE` an item.
    Delete(ItemRef),
}

/// How a path names one account item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemRef {
    /// By its item id.
    Id(u64),
    /// An API key by its key's id, as the key (`rsk_<16 hex id>_…`, whole or as the list masks it) shows it:
    /// Blockscout's frontend names keys by their `api_key`.
    ApiKey(u64),
}

impl ItemRef {
    /// The item `segment` names in a list of `kind`.
    fn parse(kind: ItemKind, segment: &str) -> Result<ItemRef, ApiError> {
        if let Ok(id) = segment.parse::<u64>() {
            return Ok(ItemRef::Id(id));
        }
        let key_id = (kind == ItemKind::ApiKey)
            .then(|| segment.strip_prefix(crate::account::API_KEY_PREFIX)?.strip_prefix('_'))
            .flatten()
            .and_then(|rest| rest.get(..16).filter(|_| rest.as_bytes().get(16) == Some(&b'_')))
            .and_then(|hex| u64::from_str_radix(hex, 16).ok());
        key_id.map(ItemRef::ApiKey).ok_or_else(|| ApiError::invalid("id", "Invalid format. Expected an integer"))
    }
}

/// Every route of the account API (`/api/account/v2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountRoute {
    /// `GET /user/info`.
    UserInfo,
    /// `GET /siwe_message?address=`.
    SiweMessage(Address),
    /// `POST /authenticate_via_wallet`.
    AuthenticateViaWallet,
    /// `GET /get_csrf`: answered 200 without a token (the account API's CSRF defence is its JSON bodies).
    Csrf,
    /// `GET|POST /api/account/auth/logout` (outside `v2`, as Blockscout has it): revokes the presented token.
    Logout,
    /// `/user/tags/address`, `/user/tags/transaction`, `/user/watchlist`, `/user/api_keys`, `/user/custom_abis`
    /// (and `/:id`).
    Items {
        /// Which list.
        kind: ItemKind,
        /// What to do.
        action: ItemAction,
    },
}

/// Default page size of account lists.
pub const ACCOUNT_PAGE: usize = 50;

fn parse_account(method: &Method, segments: &[&str], q: &Query) -> Result<AccountRoute, ApiError> {
    // The method is checked before any parameter, as on every route.
    let only = |allowed: Method, allow: &'static str| {
        if *method == allowed || (allowed == Method::GET && *method == Method::HEAD) {
            Ok(())
        } else {
            Err(ApiError::MethodNotAllowed { allow })
        }
    };
    let kind = match segments {
        ["user", "info"] => return only(Method::GET, "GET").map(|()| AccountRoute::UserInfo),
        ["siwe_message"] => {
            only(Method::GET, "GET")?;
            let raw = q.get("address").ok_or_else(|| ApiError::invalid("address", "Missing parameter: address"))?;
            return Ok(AccountRoute::SiweMessage(parse_address(raw, "address")?));
        }
        ["authenticate_via_wallet"] => return only(Method::POST, "POST").map(|()| AccountRoute::AuthenticateViaWallet),
        ["get_csrf"] => return only(Method::GET, "GET").map(|()| AccountRoute::Csrf),
        ["user", "tags", "address", ..] => ItemKind::AddressTag,
        ["user", "tags", "transaction", ..] => ItemKind::TransactionTag,
        ["user", "watchlist", ..] => ItemKind::Watch,
        ["user", "api_keys", ..] => ItemKind::ApiKey,
        ["user", "custom_abis", ..] => ItemKind::CustomAbi,
        _ => return Err(ApiError::NoRoute),
    };
    let base = if kind == ItemKind::AddressTag || kind == ItemKind::TransactionTag { 3 } else { 2 };
    let action = match &segments[base..] {
        [] => match *method {
            Method::GET | Method::HEAD => {
                let size = match q.u64("items_count")? {
                    None => ACCOUNT_PAGE,
                    Some(n) if (1..=MAX_PAGE as u64).contains(&n) => n as usize,
                    Some(_) => {
                        return Err(ApiError::invalid(
                            "items_count",
                            format!("Invalid value: must be between 1 and {MAX_PAGE}"),
                        ))
                    }
                };
                ItemAction::List { size, after: q.u64("id")? }
            }
            Method::POST => ItemAction::Create,
            _ => return Err(ApiError::MethodNotAllowed { allow: "GET, POST" }),
        },
        [id] => {
            let id = || ItemRef::parse(kind, id);
            match *method {
                Method::GET | Method::HEAD => ItemAction::Get(id()?),
                Method::PUT | Method::PATCH => ItemAction::Update(id()?),
                Method::DELETE => ItemAction::Delete(id()?),
                _ => return Err(ApiError::MethodNotAllowed { allow: "GET, PUT, DELETE" }),
            }
        }
        _ => return Err(ApiError::NoRoute),
    };
    Ok(AccountRoute::Items { kind, action })
}

fn search_query(q: &Query) -> Result<String, ApiError> {
    match q.get("q") {
        Some(text) if text.len() <= 256 => Ok(text.trim().to_owned()),
        Some(_) => Err(ApiError::invalid("q", "Invalid value: longer than 256 characters")),
        None => Err(ApiError::invalid("q", "Missing parameter: q")),
    }
}

impl Route {
    /// Parses a request line. Unknown `/api/v2/*` GETs are 400 (Blockscout's "Unknown API v2 action"), other
    /// unknown paths 404, known paths with another method 405.
    pub fn parse(method: &Method, path: &str, query: Option<&str>) -> Result<Route, ApiError> {
        let q = Query::parse(query);
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        let route = match segments.as_slice() {
            ["health"] => Route::Health,
            ["health", "ready"] => Route::Ready,
            ["socket", "v2", "websocket"] => Route::Socket,
            ["api", "eth"] => {
                return match *method {
                    Method::POST => Ok(Route::Rpc),
                    _ => Err(ApiError::MethodNotAllowed { allow: "POST" }),
                }
            }
            ["api", "eth-rpc"] => {
                return match *method {
                    Method::POST => Ok(Route::EthRpc),
                    _ => Err(ApiError::MethodNotAllowed { allow: "POST" }),
                }
            }
            // The Etherscan-style API: clients GET and POST alike, parameters read when served.
            ["api"] | ["api", "v1"] => {
                return match *method {
                    Method::GET | Method::HEAD | Method::POST => Ok(Route::Etherscan),
                    _ => Err(ApiError::MethodNotAllowed { allow: "GET, POST" }),
                }
            }
            ["api", "account", "v2", rest @ ..] => return parse_account(method, rest, &q).map(Route::Account),
            ["api", "account", "auth", "logout"] => {
                return match *method {
                    Method::GET | Method::HEAD | Method::POST => Ok(Route::Account(AccountRoute::Logout)),
                    _ => Err(ApiError::MethodNotAllowed { allow: "GET, POST" }),
                }
            }
            ["api", "v2", "smart-contracts", hash, "verification", "via", via]
                if super::rest::verification::Via::parse(via).is_some() =>
            {
                let address = parse_address(hash, "address_hash_param")?;
                let via =
                    super::rest::verification::Via::parse(via).unwrap_or(super::rest::verification::Via::StandardInput);
                return match *method {
                    Method::POST => Ok(Route::Verify(address, via)),
                    _ => Err(ApiError::MethodNotAllowed { allow: "POST" }),
                };
            }
            // Blockscout's other methods (Vyper, Sourcify, Solidity's standard input as Vyper…): named, not 405.
            ["api", "v2", "smart-contracts", hash, "verification", "via", via] if *method == Method::POST => {
                parse_address(hash, "address_hash_param")?;
                return Err(ApiError::invalid(
                    "via",
                    format!(
                        "verification via {via} is not supported: use standard-input, flattened-code or multi-part"
                    ),
                ));
            }
            ["api", "v2", "smart-contracts", hash, "query-read-method"] => {
                let address = parse_address(hash, "address_hash_param")?;
                return match *method {
                    Method::POST => Ok(Route::QueryReadMethod(address)),
                    _ => Err(ApiError::MethodNotAllowed { allow: "POST" }),
                };
            }
            ["api", "v2", "tokens", token, "instances", id, "refetch-metadata"] => {
                return match *method {
                    Method::PATCH => {
                        Ok(Route::RefetchMetadata(parse_address(token, "address_hash_param")?, token_id(id)?))
                    }
                    _ => Err(ApiError::MethodNotAllowed { allow: "PATCH" }),
                };
            }
            // Every other `/api/v2` route is read-only: another method is refused before its parameters are read.
            ["api", "v2", ..] if method != Method::GET && method != Method::HEAD => {
                return Err(ApiError::MethodNotAllowed { allow: "GET" })
            }
            ["api", "v2", rest @ ..] => match Self::parse_v2(rest, &q)? {
                Some(route) => route,
                None => return Err(ApiError::UnknownAction),
            },
            _ => return Err(ApiError::NoRoute),
        };
        if method != Method::GET && method != Method::HEAD {
            return Err(ApiError::MethodNotAllowed { allow: "GET" });
        }
        Ok(route)
    }

    fn parse_v2(segments: &[&str], q: &Query) -> Result<Option<Route>, ApiError> {
        let tx = |raw: &str| parse_hash(raw, "transaction_hash_param");
        let addr = |raw: &str| parse_address(raw, "address_hash_param");
        let route = match segments {
            ["stats"] => Route::Stats,
            ["blocks"] => {
                let kind = match q.get("type") {
                    None | Some("block") => BlockKind::Block,
                    Some("reorg") => BlockKind::Reorg,
                    Some("uncle") => BlockKind::Uncle,
                    Some(_) => return Err(ApiError::invalid("type", "Invalid value for enum")),
                };
                Route::Blocks { kind, page: page(q)? }
            }
            ["blocks", id] => Route::Block(parse_block_id(id)?),
            ["blocks", id, "internal-transactions"] => {
                let id = parse_block_id(id)?;
                Route::BlockInternal { id, kinds: call_kinds(q)?, page: page(q)? }
            }
            ["blocks", n, "countdown"] => match parse_block_id(n) {
                Ok(BlockId::Number(n)) => Route::BlockCountdown(n),
                _ => {
                    return Err(ApiError::invalid(
                        "block_number_param",
                        "Invalid format. Expected a non-negative integer",
                    ))
                }
            },
            ["blocks", id, "transactions"] => {
                let id = parse_block_id(id)?;
                Route::BlockTransactions { id, kinds: tx_types(q)?, page: page(q)? }
            }
            ["transactions"] => match q.get("filter") {
                Some("pending") => Route::PendingTransactions { page: page(q)? },
                None | Some("validated") => {
                    let methods = q.get("method").map(|m| m.split(',').flat_map(selectors_for).collect());
                    Route::Transactions { kinds: tx_types(q)?, methods, page: page(q)? }
                }
                Some(_) => return Err(ApiError::invalid("filter", "Invalid value for enum")),
            },
            ["transactions", "watchlist"] => Route::WatchlistTransactions { page: page(q)? },
            ["transactions", "stats"] => Route::TransactionStats,
            ["transactions", hash] => Route::Transaction(tx(hash)?),
            ["transactions", hash, "logs"] => Route::TransactionLogs { hash: tx(hash)?, page: page(q)? },
            ["transactions", hash, "token-transfers"] => {
                Route::TransactionTokenTransfers { hash: tx(hash)?, page: page(q)?, kinds: token_kinds(q)? }
            }
            ["transactions", hash, "internal-transactions"] => {
                Route::TransactionInternal { hash: tx(hash)?, page: page(q)? }
            }
            // Blockscout's cursor here is `items_count` (the rows shown so far) next to a `state_changes` key; without
            // that key `items_count` is no cursor and the list starts at its first row.
            ["transactions", hash, "state-changes"] => {
                let offset = if q.has("state_changes") {
                    q.u64("items_count")?.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
                } else {
                    0
                };
                Route::StateChanges { hash: tx(hash)?, offset }
            }
            ["transactions", hash, "raw-trace"] => Route::RawTrace(tx(hash)?),
            ["internal-transactions"] => match q.get("transaction_hash") {
                Some(hash) => {
                    Route::TransactionInternal { hash: parse_hash(hash, "transaction_hash")?, page: page(q)? }
                }
                None => Route::InternalTransactions { page: page(q)? },
            },
            // A name may start with `0x` (`0xsplits.eth`); an address has no dot.
            ["addresses", a] if crate::chain::names::looks_like_name(&percent_decode(a)) => {
                Route::AddressByName(percent_decode(a))
            }
            ["addresses", a] => Route::Address(addr(a)?),
            ["addresses", a, "transactions"] => {
                let direction = direction(q)?;
                let by = match q.get("sort") {
                    None | Some("block_number") => None,
                    Some("value") => Some(TxAmount::Value),
                    Some("fee") => Some(TxAmount::Fee),
                    Some(_) => return Err(ApiError::invalid("sort", "Invalid value for enum")),
                };
                let (address, ascending) = (addr(a)?, ascending(q)?);
                match by {
                    // As in Blockscout, a sort applies together with its order.
                    Some(by) if q.get("order").is_some() => {
                        Route::AddressTransactionsByAmount { address, direction, by, ascending, page: page(q)? }
                    }
                    _ => Route::AddressTransactions { address, direction, ascending, page: page(q)? },
                }
            }
            ["addresses", a, "logs"] => {
                let topic = q.get("topic").map(|t| parse_hash(t, "topic")).transpose()?;
                Route::AddressLogs { address: addr(a)?, topic, page: page(q)? }
            }
            ["addresses", a, "counters"] => Route::AddressCounters(addr(a)?),
            ["addresses", a, "tabs-counters"] => Route::AddressTabsCounters(addr(a)?),
            ["addresses", a, "coin-balance-history"] => Route::CoinBalanceHistory { address: addr(a)?, page: page(q)? },
            ["addresses", a, "token-transfers"] => {
                let (address, direction, page) = (addr(a)?, direction(q)?, page(q)?);
                let token = q.get("token").map(|t| parse_address(t, "token")).transpose()?;
                let Some(kinds) = token_kinds(q)? else { return Ok(Some(Route::NoItems)) };
                Route::AddressTokenTransfers { address, direction, kinds, token, page }
            }
            ["addresses", a, "internal-transactions"] => {
                Route::AddressInternal { address: addr(a)?, direction: direction(q)?, page: page(q)? }
            }
            ["addresses", a, "tokens"] => {
                let (address, page) = (addr(a)?, page(q)?);
                let Some(kinds) = token_kinds(q)? else { return Ok(Some(Route::NoItems)) };
                Route::AddressTokens { address, kinds, page }
            }
            ["addresses", a, "token-balances"] => Route::AddressTokenBalances(addr(a)?),
            ["tokens"] => {
                let text = q.get("q").map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
                if text.as_ref().is_some_and(|t| t.len() > 256) {
                    return Err(ApiError::invalid("q", "Invalid value: longer than 256 characters"));
                }
                let page = page(q)?;
                // Without market data every token's fiat value and market cap are null: sorting by them keeps the
                // holder order.
                let by_holders = match q.get("sort") {
                    None | Some("") | Some("fiat_value") | Some("circulating_market_cap") => false,
                    // `holder_count`: the spelling of Blockscout and its frontend before 7.0.
                    Some("holders_count") | Some("holder_count") => true,
                    Some(_) => return Err(ApiError::invalid("sort", "Invalid value for enum")),
                };
                let fewest_first = by_holders && ascending(q)?;
                let Some(kinds) = token_kinds(q)? else { return Ok(Some(Route::NoItems)) };
                Route::Tokens { kinds, q: text, fewest_first, page }
            }
            ["tokens", a] => Route::Token(addr(a)?),
            ["tokens", a, "transfers"] => Route::TokenTransfersOf { token: addr(a)?, page: page(q)? },
            ["tokens", a, "holders"] => Route::TokenHolders { token: addr(a)?, page: page(q)? },
            ["tokens", a, "counters"] => Route::TokenCounters(addr(a)?),
            ["tokens", a, "instances"] => {
                let holder =
                    q.get("holder_address_hash").map(|h| parse_address(h, "holder_address_hash")).transpose()?;
                Route::TokenInstances { token: addr(a)?, holder, page: page(q)? }
            }
            ["search"] => {
                // Blockscout's search pages hold 50 hits.
                let page = Page { size: page_size(q, SEARCH_PAGE)?, after: SearchCursor::from_query(q)? };
                Route::Search { q: search_query(q)?, page }
            }
            ["search", "quick"] => Route::SearchQuick(search_query(q)?),
            ["search", "check-redirect"] => Route::SearchRedirect(search_query(q)?),
            ["main-page", "blocks"] => Route::MainPageBlocks,
            ["main-page", "transactions"] => Route::MainPageTransactions,
            ["main-page", "transactions", "watchlist"] => Route::MainPageWatchlistTransactions,
            ["main-page", "indexing-status"] => Route::IndexingStatus,
            ["config", "backend-version"] => Route::BackendVersion,
            ["config", "backend"] => Route::BackendConfig,
            ["config", "db-background-migrations"] => Route::BackgroundMigrations,
            ["config", "smart-contracts", "languages"] => Route::ContractLanguages,
            ["smart-contracts"] => {
                let text = match q.get("q") {
                    Some(text) if text.len() > 256 => {
                        return Err(ApiError::invalid("q", "Invalid value: longer than 256 characters"))
                    }
                    text => text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()),
                };
                let language = match q.get("filter") {
                    None | Some("") => None,
                    Some(l @ ("solidity" | "vyper" | "yul" | "geas")) => Some(l.to_owned()),
                    Some(_) => return Err(ApiError::invalid("filter", "Invalid value for enum")),
                };
                let by = match q.get("sort") {
                    None | Some("") => None,
                    Some("balance") => Some(ContractSort::Balance),
                    Some("transactions_count") => Some(ContractSort::TransactionsCount),
                    Some(_) => return Err(ApiError::invalid("sort", "Invalid value for enum")),
                };
                let ascending = ascending(q)?;
                match by {
                    // As in Blockscout, a sort applies together with its order.
                    Some(by) if q.get("order").is_some() => {
                        Route::SmartContractsSorted { q: text, language, by, ascending, page: page(q)? }
                    }
                    _ => Route::SmartContracts { q: text, language, page: page(q)? },
                }
            }
            ["smart-contracts", "counters"] => Route::SmartContractCounters,
            ["smart-contracts", "verification", "config"] => Route::VerificationConfig,
            ["smart-contracts", a] => Route::SmartContract(addr(a)?),
            ["stats", "charts", "transactions"] => Route::TransactionsChart,
            ["stats", "charts", "market"] => Route::MarketChart,
            ["addresses", a, "coin-balance-history-by-day"] => Route::CoinBalanceHistoryByDay(addr(a)?),
            ["tokens", a, "instances", id] => Route::TokenInstance(addr(a)?, token_id(id)?),
            ["tokens", a, "instances", id, "transfers"] => {
                Route::TokenInstanceTransfers { token: addr(a)?, id: token_id(id)?, page: page(q)? }
            }
            ["tokens", a, "instances", id, "transfers-count"] => {
                Route::TokenInstanceTransfersCount(addr(a)?, token_id(id)?)
            }
            ["tokens", a, "instances", id, "holders"] => {
                Route::TokenInstanceHolders { token: addr(a)?, id: token_id(id)?, page: page(q)? }
            }
            ["withdrawals"] => Route::Withdrawals,
            ["withdrawals", "counters"] => Route::WithdrawalCounters,
            ["stats", "hot-smart-contracts"] => {
                let scale = match q.get("scale") {
                    Some("5m") => ("5m", 300),
                    Some("1h") => ("1h", 3_600),
                    Some("3h") => ("3h", 3 * 3_600),
                    Some("1d") => ("1d", 86_400),
                    Some("7d") => ("7d", 7 * 86_400),
                    Some("30d") => ("30d", 30 * 86_400),
                    Some(_) => return Err(ApiError::invalid("scale", "Invalid value for enum")),
                    None => return Err(ApiError::invalid("scale", "Missing field: scale")),
                };
                let by_gas = match q.get("sort") {
                    None | Some("transactions_count") => false,
                    Some("total_gas_used") => true,
                    Some(_) => return Err(ApiError::invalid("sort", "Invalid value for enum")),
                };
                Route::HotContracts { scale, by_gas, ascending: ascending(q)?, page: page(q)? }
            }
            ["blocks", id, "withdrawals"] => {
                parse_block_id(id)?;
                Route::Withdrawals
            }
            ["addresses", a, "withdrawals"] => {
                addr(a)?;
                Route::Withdrawals
            }
            ["token-transfers"] => {
                let page = page(q)?;
                match token_kinds(q)? {
                    Some(kinds) => Route::TokenTransfers { kinds, page },
                    None => Route::NoItems,
                }
            }
            ["addresses", a, "blocks-validated"] => Route::BlocksValidated { address: addr(a)?, page: page(q)? },
            ["addresses", a, "nft"] => {
                let (address, page) = (addr(a)?, page(q)?);
                let Some(kinds) = token_kinds(q)? else { return Ok(Some(Route::NoItems)) };
                Route::AddressNfts { address, kinds, page }
            }
            ["addresses", a, "nft", "collections"] => {
                let (address, page) = (addr(a)?, page(q)?);
                let Some(kinds) = token_kinds(q)? else { return Ok(Some(Route::NoItems)) };
                Route::AddressNftCollections { address, kinds, page }
            }
            ["addresses"] => {
                let ascending = ascending(q)?;
                match q.get("sort") {
                    None | Some("balance") if !ascending => {}
                    None | Some("balance") | Some("transactions_count") => {
                        return Err(ApiError::invalid("sort", "Only the richest-first order is supported"))
                    }
                    Some(_) => return Err(ApiError::invalid("sort", "Invalid value for enum")),
                }
                Route::TopAccounts { page: page(q)? }
            }
            ["transactions", hash, "summary"] => Route::TransactionSummary(tx(hash)?),
            ["advanced-filters"] => Route::AdvancedFilters {
                filter: Box::new(super::rest::advanced::AdvancedFilter::from_query(q)?),
                page: page(q)?,
            },
            ["advanced-filters", "methods"] => Route::AdvancedFilterMethods(q.get("q").map(str::to_owned)),
            ["advanced-filters", "csv"] => Route::Csv(
                super::rest::csv::Export::AdvancedFilters(Box::new(super::rest::advanced::AdvancedFilter::from_query(
                    q,
                )?)),
                super::rest::csv::CsvParams::from_query(q)?,
            ),
            ["config", "csv-export"] => Route::CsvConfig,
            ["addresses", a, list, "csv"] => {
                use super::rest::csv::Export;
                let export = match *list {
                    "transactions" => Export::Transactions(addr(a)?),
                    "internal-transactions" => Export::InternalTransactions(addr(a)?),
                    "token-transfers" => Export::TokenTransfers(addr(a)?),
                    "logs" => Export::Logs(addr(a)?),
                    _ => return Ok(None),
                };
                Route::Csv(export, super::rest::csv::CsvParams::from_query(q)?)
            }
            ["tokens", a, "holders", "csv"] => {
                Route::Csv(super::rest::csv::Export::Holders(addr(a)?), super::rest::csv::CsvParams::from_query(q)?)
            }
            _ => return Ok(None),
        };
        Ok(Some(route))
    }
}

/// The `route` label of the HTTP metrics for a request of `method` that parsed into `parsed`: the route's
/// template, `preflight` for CORS preflights, `other` for every request no route accepts (unknown paths, bad
/// parameters, wrong methods). Never a raw path.
pub fn route_label(method: &Method, parsed: &Result<Route, ApiError>) -> &'static str {
    match parsed {
        _ if method == Method::OPTIONS => "preflight",
        Ok(route) => route.template(),
        Err(_) => "other",
    }
}

impl Route {
    /// The route's path template, the `route` label of the HTTP metrics: parameters are named, never valued, so
    /// the label set stays finite whatever clients send.
    pub fn template(&self) -> &'static str {
        match self {
            Route::Health => "/health",
            Route::Ready => "/health/ready",
            Route::Rpc => "/api/eth",
            Route::Etherscan => "/api",
            Route::Socket => "/socket/v2/websocket",
            Route::Stats => "/api/v2/stats",
            Route::NoItems => "/api/v2 (a type filter of standards never indexed)",
            Route::Withdrawals => "/api/v2/withdrawals (none on this chain)",
            Route::Blocks { .. } => "/api/v2/blocks",
            Route::Block(_) => "/api/v2/blocks/:number_or_hash",
            Route::BlockTransactions { .. } => "/api/v2/blocks/:number_or_hash/transactions",
            Route::BlockCountdown(_) => "/api/v2/blocks/:number/countdown",
            Route::BlockInternal { .. } => "/api/v2/blocks/:number_or_hash/internal-transactions",
            Route::PendingTransactions { .. } => "/api/v2/transactions?filter=pending",
            Route::Transactions { .. } => "/api/v2/transactions",
            Route::Transaction(_) => "/api/v2/transactions/:hash",
            Route::TransactionLogs { .. } => "/api/v2/transactions/:hash/logs",
            Route::TransactionTokenTransfers { .. } => "/api/v2/transactions/:hash/token-transfers",
            Route::TransactionInternal { .. } => "/api/v2/transactions/:hash/internal-transactions",
            Route::StateChanges { .. } => "/api/v2/transactions/:hash/state-changes",
            Route::RawTrace(_) => "/api/v2/transactions/:hash/raw-trace",
            Route::InternalTransactions { .. } => "/api/v2/internal-transactions",
            Route::Address(_) => "/api/v2/addresses/:address_hash",
            Route::AddressTransactions { .. } | Route::AddressTransactionsByAmount { .. } => {
                "/api/v2/addresses/:address_hash/transactions"
            }
            Route::AddressLogs { .. } => "/api/v2/addresses/:address_hash/logs",
            Route::AddressCounters(_) => "/api/v2/addresses/:address_hash/counters",
            Route::AddressTabsCounters(_) => "/api/v2/addresses/:address_hash/tabs-counters",
            Route::CoinBalanceHistory { .. } => "/api/v2/addresses/:address_hash/coin-balance-history",
            Route::AddressTokenTransfers { .. } => "/api/v2/addresses/:address_hash/token-transfers",
            Route::AddressTokenBalances(_) => "/api/v2/addresses/:address_hash/token-balances",
            Route::AddressTokens { .. } => "/api/v2/addresses/:address_hash/tokens",
            Route::AddressInternal { .. } => "/api/v2/addresses/:address_hash/internal-transactions",
            Route::Tokens { .. } => "/api/v2/tokens",
            Route::Token(_) => "/api/v2/tokens/:address_hash",
            Route::TokenTransfersOf { .. } => "/api/v2/tokens/:address_hash/transfers",
            Route::TokenHolders { .. } => "/api/v2/tokens/:address_hash/holders",
            Route::TokenCounters(_) => "/api/v2/tokens/:address_hash/counters",
            Route::TokenInstances { .. } => "/api/v2/tokens/:address_hash/instances",
            Route::Search { .. } => "/api/v2/search",
            Route::SearchQuick(_) => "/api/v2/search/quick",
            Route::SearchRedirect(_) => "/api/v2/search/check-redirect",
            Route::MainPageBlocks => "/api/v2/main-page/blocks",
            Route::MainPageTransactions => "/api/v2/main-page/transactions",
            Route::IndexingStatus => "/api/v2/main-page/indexing-status",
            Route::BackendVersion => "/api/v2/config/backend-version",
            Route::BackendConfig => "/api/v2/config/backend",
            Route::BackgroundMigrations => "/api/v2/config/db-background-migrations",
            Route::WithdrawalCounters => "/api/v2/withdrawals/counters",
            Route::HotContracts { .. } => "/api/v2/stats/hot-smart-contracts",
            Route::TransactionsChart => "/api/v2/stats/charts/transactions",
            Route::WatchlistTransactions { .. } => "/api/v2/transactions/watchlist",
            Route::MainPageWatchlistTransactions => "/api/v2/main-page/transactions/watchlist",
            Route::AddressByName(_) => "/api/v2/addresses/:name",
            Route::Account(_) => "/api/account/v2",
            Route::Verify(_, via) => via.path(),
            Route::QueryReadMethod(_) => "/api/v2/smart-contracts/:hash/query-read-method",
            Route::SmartContract(_) => "/api/v2/smart-contracts/:address_hash",
            Route::SmartContracts { .. } | Route::SmartContractsSorted { .. } => "/api/v2/smart-contracts",
            Route::SmartContractCounters => "/api/v2/smart-contracts/counters",
            Route::VerificationConfig => "/api/v2/smart-contracts/verification/config",
            Route::ContractLanguages => "/api/v2/config/smart-contracts/languages",
            Route::EthRpc => "/api/eth-rpc",
            Route::TransactionStats => "/api/v2/transactions/stats",
            Route::MarketChart => "/api/v2/stats/charts/market",
            Route::CoinBalanceHistoryByDay(_) => "/api/v2/addresses/:address_hash/coin-balance-history-by-day",
            Route::TopAccounts { .. } => "/api/v2/addresses",
            Route::BlocksValidated { .. } => "/api/v2/addresses/:address_hash/blocks-validated",
            Route::TokenTransfers { .. } => "/api/v2/token-transfers",
            Route::TokenInstance(..) => "/api/v2/tokens/:address_hash/instances/:token_id",
            Route::RefetchMetadata(..) => "/api/v2/tokens/:address_hash/instances/:token_id/refetch-metadata",
            Route::TokenInstanceTransfers { .. } => "/api/v2/tokens/:address_hash/instances/:token_id/transfers",
            Route::TokenInstanceTransfersCount(..) => {
                "/api/v2/tokens/:address_hash/instances/:token_id/transfers-count"
            }
            Route::TokenInstanceHolders { .. } => "/api/v2/tokens/:address_hash/instances/:token_id/holders",
            Route::AddressNfts { .. } => "/api/v2/addresses/:address_hash/nft",
            Route::AddressNftCollections { .. } => "/api/v2/addresses/:address_hash/nft/collections",
            Route::TransactionSummary(_) => "/api/v2/transactions/:hash/summary",
            Route::AdvancedFilters { .. } => "/api/v2/advanced-filters",
            Route::AdvancedFilterMethods(_) => "/api/v2/advanced-filters/methods",
            Route::CsvConfig => "/api/v2/config/csv-export",
            Route::Csv(export, _) => match export {
                super::rest::csv::Export::Transactions(_) => "/api/v2/addresses/:address_hash/transactions/csv",
                super::rest::csv::Export::InternalTransactions(_) => {
                    "/api/v2/addresses/:address_hash/internal-transactions/csv"
                }
                super::rest::csv::Export::TokenTransfers(_) => "/api/v2/addresses/:address_hash/token-transfers/csv",
                super::rest::csv::Export::Logs(_) => "/api/v2/addresses/:address_hash/logs/csv",
                super::rest::csv::Export::Holders(_) => "/api/v2/tokens/:address_hash/holders/csv",
                super::rest::csv::Export::AdvancedFilters(_) => "/api/v2/advanced-filters/csv",
            },
        }
    }

    /// Whether the route is a read of the caller's own data under `/api/v2` (a valid token is required).
    pub fn needs_account(&self) -> bool {
        matches!(self, Route::WatchlistTransactions { .. } | Route::MainPageWatchlistTransactions)
    }

    /// Whether the route's answer may carry the viewer's private tags and watchlist names (the `/api/v2` reads).
    pub fn shows_private_data(&self) -> bool {
        !matches!(
            self,
            Route::Health
                | Route::Ready
                | Route::Rpc
                | Route::Etherscan
                | Route::Socket
                | Route::Account(_)
                | Route::Verify(..)
                | Route::QueryReadMethod(_)
                | Route::EthRpc
        )
    }

    /// Whether the route stores something (sign-in, account items, verification submissions): a read replica
    /// refuses these with [`ApiError::ReadReplica`]. The sign-in message is one of them: its nonce lives in the
    /// process that issued it, so the whole sign-in happens on the primary. The Etherscan API's `verifysourcecode` is refused by its handler.
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Route::Account(AccountRoute::AuthenticateViaWallet | AccountRoute::SiweMessage(_) | AccountRoute::Logout)
                | Route::Account(AccountRoute::Items {
                    action: ItemAction::Create | ItemAction::Update(_) | ItemAction::Delete(_),
                    ..
                })
                | Route::Verify(..)
        )
    }

    /// Whether the route is the JSON-RPC passthrough (under either path): its refusals are JSON-RPC errors.
    pub fn is_rpc(&self) -> bool {
        matches!(self, Route::Rpc | Route::EthRpc)
    }

    /// Serves the route: the one `match` from endpoints to handlers. Handlers that scan run through [`read`] on
    /// the blocking pool under the request's deadline; single objects are a few point reads and stay inline.
    pub async fn dispatch(
        self,
        req: Request<RequestBody>,
        state: &AppState,
        client: IpAddr,
    ) -> Result<Response<Body>, ApiError> {
        use super::rest::{addresses, blocks, search, smart_contracts, stats, summary, tokens, traces, transactions};
        use super::{health, rpc, ws};
        let deadline = tokio::time::Instant::now() + state.config.request_timeout;
        match self {
            Route::Health => Ok(health::health(state)),
            Route::Ready => Ok(health::ready(state)),
            Route::Socket => ws::upgrade(req, state, client),
            Route::Rpc | Route::EthRpc => {
                // Held until the answer is built: a client has a bounded number of passthrough requests in flight.
                let _slot = match state.rpc.admit(client) {
                    Ok(slot) => slot,
                    Err(refused) => return Ok(*refused),
                };
                let limit = state.rpc.config().max_body;
                match read_body(state, req, limit, client).await {
                    Ok(body) => {
                        Ok(state.rpc.call(&state.rpc_url, body, state.status.snapshot().node_head, client).await)
                    }
                    Err(ApiError::PayloadTooLarge { limit }) => Ok(rpc::error_response(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        serde_json::Value::Null,
                        rpc::code::INVALID_REQUEST,
                        &format!("request body too large (limit {limit} bytes)"),
                    )),
                    Err(ApiError::BodyTimeout { within }) => Ok(rpc::error_response(
                        StatusCode::REQUEST_TIMEOUT,
                        serde_json::Value::Null,
                        rpc::code::INVALID_REQUEST,
                        &format!("request body not received within {} s", within.as_secs_f64()),
                    )),
                    Err(ApiError::Busy(what)) => Ok(rpc::error_response(
                        StatusCode::SERVICE_UNAVAILABLE,
                        serde_json::Value::Null,
                        rpc::code::LIMIT_EXCEEDED,
                        &format!("service busy: {what}"),
                    )),
                    Err(ApiError::Throttled(why)) => Ok(rpc::error_response(
                        StatusCode::TOO_MANY_REQUESTS,
                        serde_json::Value::Null,
                        rpc::code::LIMIT_EXCEEDED,
                        &why,
                    )),
                    Err(e) => Err(e),
                }
            }
            Route::Etherscan => Ok(super::etherscan::serve(req, state, deadline, client).await),
            // Single objects: a few point reads, served inline.
            Route::Block(id) => blocks::detail(state, id),
            Route::Transaction(hash) => transactions::detail(state, hash).await,
            Route::Address(address) => addresses::detail(state, address).await,
            Route::StateChanges { hash, offset } => traces::state_changes(state, hash, offset).await,
            Route::RawTrace(hash) => traces::raw_trace(state, hash).await,
            Route::TransactionSummary(hash) => read(state, deadline, move |r| summary::summary(r, hash)).await,
            Route::AdvancedFilters { filter, page } => {
                read(state, deadline, move |r| super::rest::advanced::advanced_filters(r, &filter, page)).await
            }
            Route::AdvancedFilterMethods(q) => super::rest::advanced::methods(q.as_deref()),
            Route::CsvConfig => Ok(super::rest::csv::config()),
            Route::Csv(export, params) => super::rest::csv::export(state, client, export, params).await,
            Route::IndexingStatus => Ok(stats::indexing_status(state)),
            Route::BackendVersion => Ok(stats::backend_version()),
            Route::BackendConfig => Ok(stats::backend_config()),
            Route::BackgroundMigrations => Ok(stats::background_migrations()),
            Route::WithdrawalCounters => Ok(stats::withdrawal_counters()),
            Route::HotContracts { scale, by_gas, ascending, page } => {
                read(state, deadline, move |r| stats::hot_contracts(r, scale, by_gas, ascending, page)).await
            }
            Route::SmartContract(address) => smart_contracts::detail(state, address).await,
            Route::VerificationConfig => Ok(smart_contracts::verification_config(state).await),
            Route::ContractLanguages => Ok(smart_contracts::languages()),
            Route::SmartContractCounters => read(state, deadline, smart_contracts::counters).await,
            Route::SmartContracts { q, language, page } => {
                read(state, deadline, move |r| smart_contracts::list(r, q, language, page)).await
            }
            Route::SmartContractsSorted { q, language, by, ascending, page } => {
                read(state, deadline, move |r| smart_contracts::list_sorted(r, q, language, ascending, page, by)).await
            }
            Route::NoItems | Route::Withdrawals => Ok(super::body::json_response(
                StatusCode::OK,
                &serde_json::json!({"items": [], "next_page_params": null}),
            )),
            // Everything that scans runs on the blocking pool under the request's deadline.
            Route::Stats => {
                let (state2, detailed) = (state.clone(), stats::wants_detailed_gas(req.headers()));
                read(state, deadline, move |r| stats::handler(&state2, r, detailed)).await
            }
            Route::TransactionsChart => read(state, deadline, stats::transactions_chart).await,
            Route::TransactionStats => read(state, deadline, transactions::stats).await,
            Route::MarketChart => Ok(stats::market_chart()),
            Route::CoinBalanceHistory { address, page } => {
                addresses::coin_balance_history(state, address, page, deadline).await
            }
            Route::CoinBalanceHistoryByDay(address) => {
                read(state, deadline, move |r| addresses::coin_balance_history_by_day(r, address)).await
            }
            Route::TopAccounts { page } => read(state, deadline, move |r| addresses::top_accounts(r, page)).await,
            Route::TokenInstance(token, id) => tokens::instance(state, token, id, deadline).await,
            Route::RefetchMetadata(token, id) => tokens::refetch_metadata(state, token, id, deadline).await,
            Route::TokenInstanceTransfers { token, id, page } => {
                read(state, deadline, move |r| tokens::instance_transfers(r, token, id, page)).await
            }
            Route::TokenInstanceTransfersCount(token, id) => {
                read(state, deadline, move |r| tokens::instance_transfers_count(r, token, id)).await
            }
            Route::TokenInstanceHolders { token, id, page } => {
                read(state, deadline, move |r| tokens::instance_holders(r, token, id, page)).await
            }
            Route::TokenTransfers { kinds, page } => {
                read(state, deadline, move |r| tokens::all_transfers(r, &kinds, page)).await
            }
            Route::BlocksValidated { address, page } => {
                read(state, deadline, move |r| blocks::validated_by(r, address, page)).await
            }
            Route::AddressNfts { address, kinds, page } => {
                let list = read(state, deadline, move |r| tokens::nfts(r, address, &kinds, page)).await?;
                Ok(tokens::with_list_metadata(state, list).await)
            }
            Route::AddressNftCollections { address, kinds, page } => {
                let list = read(state, deadline, move |r| tokens::nft_collections(r, address, &kinds, page)).await?;
                Ok(tokens::with_list_metadata(state, list).await)
            }
            Route::Blocks { kind, page } => read(state, deadline, move |r| blocks::list(r, kind, page)).await,
            Route::BlockTransactions { id, kinds, page } => {
                read(state, deadline, move |r| blocks::transactions(r, id, kinds, page)).await
            }
            Route::BlockCountdown(target) => read(state, deadline, move |r| blocks::countdown(r, target)).await,
            Route::MainPageBlocks => read(state, deadline, blocks::main_page).await,
            Route::PendingTransactions { page } => read(state, deadline, move |r| transactions::pending(r, page)).await,
            Route::Transactions { kinds, methods, page } => {
                read(state, deadline, move |r| transactions::list(r, kinds, methods, page)).await
            }
            Route::MainPageTransactions => read(state, deadline, transactions::main_page).await,
            Route::TransactionLogs { hash, page } => {
                read(state, deadline, move |r| transactions::logs(r, hash, page)).await
            }
            Route::TransactionTokenTransfers { hash, kinds, page } => {
                read(state, deadline, move |r| tokens::of_transaction(r, hash, kinds.as_deref(), page)).await
            }
            Route::TransactionInternal { hash, page } => {
                read(state, deadline, move |r| traces::of_transaction(r, hash, page)).await
            }
            Route::AddressTransactions { address, direction, ascending, page } => {
                read(state, deadline, move |r| addresses::transactions(r, address, direction, ascending, page)).await
            }
            Route::AddressTransactionsByAmount { address, direction, by, ascending, page } => {
                let sorted = move |r: &crate::store::Reader<'_>| {
                    addresses::transactions_by(r, address, direction, by, ascending, page)
                };
                read(state, deadline, sorted).await
            }
            Route::AddressLogs { address, topic, page } => {
                read(state, deadline, move |r| addresses::logs(r, address, topic, page)).await
            }
            Route::AddressCounters(address) => read(state, deadline, move |r| addresses::counters(r, address)).await,
            Route::AddressTabsCounters(address) => {
                read(state, deadline, move |r| addresses::tabs_counters(r, address)).await
            }
            Route::AddressTokenTransfers { address, direction, kinds, token, page } => {
                read(state, deadline, move |r| tokens::of_address(r, address, direction, &kinds, token, page)).await
            }
            Route::AddressTokenBalances(address) => read(state, deadline, move |r| tokens::balances(r, address)).await,
            Route::AddressTokens { address, kinds, page } => {
                read(state, deadline, move |r| tokens::holdings(r, address, &kinds, page)).await
            }
            Route::AddressInternal { address, direction, page } => {
                read(state, deadline, move |r| traces::of_address(r, address, direction, page)).await
            }
            Route::BlockInternal { id, kinds, page } => {
                read(state, deadline, move |r| traces::of_block(r, id, kinds, page)).await
            }
            Route::InternalTransactions { page } => read(state, deadline, move |r| traces::all(r, page)).await,
            Route::Tokens { kinds, q, fewest_first, page } => {
                read(state, deadline, move |r| tokens::list(r, &kinds, q.as_deref(), fewest_first, page)).await
            }
            Route::Token(token) => read(state, deadline, move |r| tokens::detail(r, token)).await,
            Route::TokenTransfersOf { token, page } => {
                read(state, deadline, move |r| tokens::transfers(r, token, page)).await
            }
            Route::TokenHolders { token, page } => {
                read(state, deadline, move |r| tokens::holders(r, token, page)).await
            }
            Route::TokenCounters(token) => read(state, deadline, move |r| tokens::counters(r, token)).await,
            Route::TokenInstances { token, holder, page } => {
                let list = read(state, deadline, move |r| tokens::instances(r, token, holder, page)).await?;
                Ok(tokens::with_list_metadata(state, list).await)
            }
            Route::Search { q, page } => {
                let name = search::named(state, &q).await;
                read(state, deadline, move |r| search::search(r, &q, name.as_ref(), page)).await
            }
            Route::SearchQuick(q) => {
                let name = search::named(state, &q).await;
                read(state, deadline, move |r| search::quick(r, &q, name.as_ref())).await
            }
            Route::SearchRedirect(q) => {
                let name = search::named(state, &q).await;
                read(state, deadline, move |r| search::redirect(r, &q, name.as_ref())).await
            }
            Route::Account(route) => super::rest::account::serve(route, req, state, client).await,
            Route::Verify(address, via) => super::rest::verification::verify(req, state, client, address, via).await,
            Route::QueryReadMethod(address) => smart_contracts::query_read_method(req, state, client, address).await,
            Route::WatchlistTransactions { page } => {
                let watched = super::rest::account::watched(req.headers(), state, client)?;
                read(state, deadline, move |r| super::rest::account::watchlist_transactions(r, &watched, page, true))
                    .await
            }
            Route::MainPageWatchlistTransactions => {
                let watched = super::rest::account::watched(req.headers(), state, client)?;
                let page = Page { size: 6, after: None };
                read(state, deadline, move |r| super::rest::account::watchlist_transactions(r, &watched, page, false))
                    .await
            }
            Route::AddressByName(name) => {
                let resolved = state.resolve_name(&name, "address_hash_param").await?;
                match resolved.and_then(|r| r.address) {
                    Some(address) => addresses::detail(state, address).await,
                    None => Err(ApiError::NotFound),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::keys::{BlockPos, TracePos};

    fn parse(method: Method, path_and_query: &str) -> Result<Route, ApiError> {
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        Route::parse(&method, path, query)
    }

    fn invalid(param: &'static str) -> impl Fn(&Result<Route, ApiError>) -> bool {
        move |r| matches!(r, Err(ApiError::InvalidParam { param: p, .. }) if *p == param)
    }

    #[test]
    fn parse_table() {
        let hash = format!("0x{}", "ab".repeat(32));
        let address = "0x000000000000000000000000000000000000dEaD";
        let dead: Address = address.parse().unwrap();
        let cases: Vec<(Method, String, Result<Route, ApiError>)> = vec![
            (Method::GET, "/health".into(), Ok(Route::Health)),
            (Method::POST, "/api/eth".into(), Ok(Route::Rpc)),
            (Method::GET, "/api/eth".into(), Err(ApiError::MethodNotAllowed { allow: "POST" })),
            (Method::POST, "/api/eth-rpc".into(), Ok(Route::EthRpc)),
            (Method::GET, "/api/eth-rpc".into(), Err(ApiError::MethodNotAllowed { allow: "POST" })),
            (Method::POST, "/api/v1?module=block".into(), Ok(Route::Etherscan)),
            (Method::DELETE, "/api?module=block".into(), Err(ApiError::MethodNotAllowed { allow: "GET, POST" })),
            (Method::CONNECT, "/api".into(), Err(ApiError::MethodNotAllowed { allow: "GET, POST" })),
            (Method::POST, "/api/v2/blocks/xyz".into(), Err(ApiError::MethodNotAllowed { allow: "GET" })),
            (Method::HEAD, "/api/v2/nonsense".into(), Err(ApiError::UnknownAction)),
            (
                Method::POST,
                "/api/account/v2/user/watchlist/abc".into(),
                Err(ApiError::MethodNotAllowed { allow: "GET, PUT, DELETE" }),
            ),
            (
                Method::POST,
                "/api/account/v2/siwe_message?address=0x12".into(),
                Err(ApiError::MethodNotAllowed { allow: "GET" }),
            ),
            (Method::GET, "/api/v2/token-transfers?type=ERC-404".into(), Ok(Route::NoItems)),
            (Method::GET, "/api/v2/withdrawals".into(), Ok(Route::Withdrawals)),
            (Method::GET, format!("/api/v2/blocks/{hash}/withdrawals"), Ok(Route::Withdrawals)),
            (Method::GET, format!("/api/v2/addresses/{address}/withdrawals"), Ok(Route::Withdrawals)),
            (Method::GET, "/api/v2/transactions/stats".into(), Ok(Route::TransactionStats)),
            (Method::GET, "/api/v2/stats/charts/market".into(), Ok(Route::MarketChart)),
            (Method::GET, "/api/v2/stats".into(), Ok(Route::Stats)),
            (Method::GET, "/api/v2/stats/".into(), Ok(Route::Stats)),
            (
                Method::GET,
                "/api/v2/blocks".into(),
                Ok(Route::Blocks { kind: BlockKind::Block, page: Page { size: 25, after: None } }),
            ),
            (
                Method::GET,
                "/api/v2/blocks?type=reorg&items_count=2&block_number=7".into(),
                Ok(Route::Blocks {
                    kind: BlockKind::Reorg,
                    page: Page { size: 2, after: Some(ReorgCursor { number: 7, hash: None }) },
                }),
            ),
            (Method::GET, "/api/v2/blocks/12".into(), Ok(Route::Block(BlockId::Number(12)))),
            (Method::GET, format!("/api/v2/blocks/{hash}"), Ok(Route::Block(BlockId::Hash(hash.parse().unwrap())))),
            (
                Method::GET,
                "/api/v2/transactions?block_number=9&index=3&filter=validated&items_count=null".into(),
                Ok(Route::Transactions {
                    kinds: TxTypes::default(),
                    methods: None,
                    page: Page { size: 25, after: Some(PosCursor(BlockPos { block: 9, index: 3 })) },
                }),
            ),
            (Method::GET, format!("/api/v2/transactions/{hash}"), Ok(Route::Transaction(hash.parse().unwrap()))),
            (Method::GET, format!("/api/v2/addresses/{address}"), Ok(Route::Address(dead))),
            (
                Method::GET,
                format!("/api/v2/addresses/{}/counters", address.to_lowercase()),
                Ok(Route::AddressCounters(dead)),
            ),
            (Method::POST, "/api/v2/stats".into(), Err(ApiError::MethodNotAllowed { allow: "GET" })),
            (Method::GET, "/api/v2/nonsense".into(), Err(ApiError::UnknownAction)),
            (Method::DELETE, "/api/v2/nonsense".into(), Err(ApiError::MethodNotAllowed { allow: "GET" })),
            (Method::GET, "/favicon.ico".into(), Err(ApiError::NoRoute)),
        ];
        for (method, path, expected) in cases {
            assert_eq!(parse(method.clone(), &path), expected, "{method} {path}");
        }
    }

    #[test]
    fn bad_input_is_422_with_the_parameter_named() {
        let checks: &[(&str, &'static str)] = &[
            ("/api/v2/blocks/not-a-block", "block_hash_or_number_param"),
            ("/api/v2/blocks/-1", "block_hash_or_number_param"),
            ("/api/v2/blocks/0x1234", "block_hash_or_number_param"),
            ("/api/v2/blocks/99999999999999999999999", "block_hash_or_number_param"),
            ("/api/v2/transactions/0x1234", "transaction_hash_param"),
            ("/api/v2/transactions/0xzz", "transaction_hash_param"),
            ("/api/v2/addresses/0xnothex", "address_hash_param"),
            ("/api/v2/addresses/0x000000000000000000000000000000000000dEaG", "address_hash_param"),
            ("/api/v2/addresses/0X000000000000000000000000000000000000dEaD", "address_hash_param"),
            ("/api/v2/addresses/0x0x0000000000000000000000000000000000dEaD", "address_hash_param"),
            ("/api/v2/addresses/00000000000000000000000000000000000000dEaD", "address_hash_param"),
            ("/api/v2/addresses/0x000000000000000000000000000000000000dEé", "address_hash_param"),
            ("/api/v2/addresses/0x000000000000000000000000000000000000dEaDD", "address_hash_param"),
            (
                "/api/v2/transactions/0xabababababababababababababababababababababababababababababababag",
                "transaction_hash_param",
            ),
            ("/api/v2/blocks?items_count=0", "items_count"),
            ("/api/v2/blocks?items_count=101", "items_count"),
            ("/api/v2/blocks?items_count=abc", "items_count"),
            ("/api/v2/blocks?type=sideways", "type"),
            ("/api/v2/blocks?block_number=-5", "block_number"),
            ("/api/v2/transactions?filter=maybe", "filter"),
            ("/api/v2/transactions?type=weird", "type"),
            ("/api/v2/search", "q"),
            ("/api/v2/blocks/1/internal-transactions?internal_type=jump", "internal_type"),
            ("/api/v2/blocks/1/internal-transactions?call_type=create", "call_type"),
            ("/api/v2/addresses/0x000000000000000000000000000000000000dEaD/internal-transactions?filter=up", "filter"),
            ("/api/v2/internal-transactions?block_number=1&transaction_index=99999999999", "transaction_index"),
        ];
        for (path, param) in checks {
            let result = parse(Method::GET, path);
            assert!(invalid(param)(&result), "{path}: {result:?}");
        }
        let dead = "0x000000000000000000000000000000000000dEaD";
        for via in ["vyper-code", "sourcify", "vyper-standard-input"] {
            let result = parse(Method::POST, &format!("/api/v2/smart-contracts/{dead}/verification/via/{via}"));
            assert!(invalid("via")(&result), "{via}: {result:?}");
        }
    }

    #[test]
    fn internal_transaction_routes_take_trace_cursors_and_kind_filters() {
        let hash = format!("0x{}", "cd".repeat(32));
        let h: B256 = hash.parse().unwrap();
        let dead: Address = "0x000000000000000000000000000000000000dEaD".parse().unwrap();
        let cases: Vec<(String, Route)> = vec![
            (
                format!("/api/v2/transactions/{hash}/internal-transactions?index=3&items_count=10"),
                Route::TransactionInternal {
                    hash: h,
                    page: Page { size: 10, after: Some(CallCursor(TracePos { block: 0, tx: 0, index: 3 })) },
                },
            ),
            (
                format!("/api/v2/transactions/{hash}/state-changes?items_count=50&state_changes=null"),
                Route::StateChanges { hash: h, offset: 50 },
            ),
            // Without Blockscout's `state_changes` key, `items_count` is no cursor.
            (format!("/api/v2/transactions/{hash}/state-changes?items_count=7"), Route::StateChanges { hash: h, offset: 0 }),
            (format!("/api/v2/transactions/{hash}/raw-trace"), Route::RawTrace(h)),
            (
                format!("/api/v2/internal-transactions?transaction_hash={hash}"),
                Route::TransactionInternal { hash: h, page: Page { size: 25, after: None } },
            ),
            (
                format!("/api/v2/addresses/{dead}/internal-transactions?filter=to&block_number=9&transaction_index=2&index=4"),
                Route::AddressInternal {
                    address: dead,
                    direction: Some(Direction::To),
                    page: Page { size: 25, after: Some(TraceCursor(TracePos { block: 9, tx: 2, index: 4 })) },
                },
            ),
            (
                "/api/v2/blocks/7/internal-transactions?internal_type=call&call_type=delegatecall".into(),
                Route::BlockInternal {
                    id: BlockId::Number(7),
                    kinds: Some(vec![CallKind::DelegateCall]),
                    page: Page { size: 25, after: None },
                },
            ),
            (
                "/api/v2/internal-transactions?block_number=5".into(),
                Route::InternalTransactions {
                    page: Page { size: 25, after: Some(TraceCursor(TracePos { block: 5, tx: 0, index: 0 })) },
                },
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(parse(Method::GET, &path), Ok(expected), "{path}");
        }
    }

    #[test]
    fn account_routes_parse_with_their_methods() {
        let items = |kind, action| Ok(Route::Account(AccountRoute::Items { kind, action }));
        let full_key = format!("/api/account/v2/user/api_keys/rsk_0000000000000010_{}", "ab".repeat(32));
        let cases: Vec<(Method, &str, Result<Route, ApiError>)> = vec![
            (Method::GET, "/api/account/v2/user/info", Ok(Route::Account(AccountRoute::UserInfo))),
            (Method::POST, "/api/account/v2/user/info", Err(ApiError::MethodNotAllowed { allow: "GET" })),
            (
                Method::GET,
                "/api/account/v2/siwe_message?address=0x000000000000000000000000000000000000dEaD",
                Ok(Route::Account(AccountRoute::SiweMessage(
                    "0x000000000000000000000000000000000000dEaD".parse().unwrap(),
                ))),
            ),
            (
                Method::GET,
                "/api/account/v2/siwe_message",
                Err(ApiError::invalid("address", "Missing parameter: address")),
            ),
            (
                Method::POST,
                "/api/account/v2/authenticate_via_wallet",
                Ok(Route::Account(AccountRoute::AuthenticateViaWallet)),
            ),
            (Method::GET, "/api/account/v2/authenticate_via_wallet", Err(ApiError::MethodNotAllowed { allow: "POST" })),
            (
                Method::GET,
                "/api/account/v2/user/tags/address?items_count=2&id=9",
                items(ItemKind::AddressTag, ItemAction::List { size: 2, after: Some(9) }),
            ),
            (
                Method::POST,
                "/api/account/v2/user/tags/transaction",
                items(ItemKind::TransactionTag, ItemAction::Create),
            ),
            (
                Method::PUT,
                "/api/account/v2/user/watchlist/3",
                items(ItemKind::Watch, ItemAction::Update(ItemRef::Id(3))),
            ),
            (
                Method::DELETE,
                "/api/account/v2/user/api_keys/4",
                items(ItemKind::ApiKey, ItemAction::Delete(ItemRef::Id(4))),
            ),
            (
                Method::GET,
                "/api/account/v2/user/custom_abis/5",
                items(ItemKind::CustomAbi, ItemAction::Get(ItemRef::Id(5))),
            ),
            (Method::DELETE, "/api/account/v2/user/watchlist", Err(ApiError::MethodNotAllowed { allow: "GET, POST" })),
            (
                Method::POST,
                "/api/account/v2/user/watchlist/3",
                Err(ApiError::MethodNotAllowed { allow: "GET, PUT, DELETE" }),
            ),
            (
                Method::GET,
                "/api/account/v2/user/watchlist/x",
                Err(ApiError::invalid("id", "Invalid format. Expected an integer")),
            ),
            (Method::GET, "/api/account/v2/nothing", Err(ApiError::NoRoute)),
            (Method::GET, "/api/account/v2/get_csrf", Ok(Route::Account(AccountRoute::Csrf))),
            (Method::GET, "/api/account/auth/logout", Ok(Route::Account(AccountRoute::Logout))),
            (Method::DELETE, "/api/account/auth/logout", Err(ApiError::MethodNotAllowed { allow: "GET, POST" })),
            (
                Method::DELETE,
                "/api/account/v2/user/api_keys/rsk_00000000000000ff_%E2%80%A6",
                items(ItemKind::ApiKey, ItemAction::Delete(ItemRef::ApiKey(255))),
            ),
            (Method::PUT, &full_key, items(ItemKind::ApiKey, ItemAction::Update(ItemRef::ApiKey(16)))),
            (
                Method::GET,
                "/api/account/v2/user/watchlist/rsk_00000000000000ff_x",
                Err(ApiError::invalid("id", "Invalid format. Expected an integer")),
            ),
            (
                Method::GET,
                "/api/account/v2/user/api_keys/rsk_ff_x",
                Err(ApiError::invalid("id", "Invalid format. Expected an integer")),
            ),
            (
                Method::GET,
                "/api/v2/transactions/watchlist",
                Ok(Route::WatchlistTransactions { page: Page { size: 25, after: None } }),
            ),
            (Method::GET, "/api/v2/main-page/transactions/watchlist", Ok(Route::MainPageWatchlistTransactions)),
            (Method::GET, "/api/v2/addresses/alice.dev", Ok(Route::AddressByName("alice.dev".into()))),
            (Method::GET, "/api/v2/addresses/M%C3%9Cnchen.dev", Ok(Route::AddressByName("MÜnchen.dev".into()))),
        ];
        for (method, path, expected) in cases {
            assert_eq!(parse(method.clone(), path), expected, "{method} {path}");
        }
    }

    #[test]
    fn parity_routes_parse_with_blockscout_parameters() {
        use crate::store::keys::{CoinRankKey, TransferPos};
        let dead: Address = "0x000000000000000000000000000000000000dEaD".parse().unwrap();
        let cases: Vec<(String, Route)> = vec![
            (format!("/api/v2/addresses/{dead}/coin-balance-history-by-day"), Route::CoinBalanceHistoryByDay(dead)),
            (
                format!("/api/v2/addresses?fetched_coin_balance=1000&hash={dead}&transactions_count=3&items_count=50"),
                Route::TopAccounts {
                    page: Page {
                        size: 50,
                        after: Some(CoinRankCursor(CoinRankKey { balance: U256::from(1000), address: dead })),
                    },
                },
            ),
            (
                "/api/v2/addresses?sort=balance&order=desc".into(),
                Route::TopAccounts { page: Page { size: 25, after: None } },
            ),
            (
                format!("/api/v2/addresses/{dead}/blocks-validated?block_number=9"),
                Route::BlocksValidated { address: dead, page: Page { size: 25, after: Some(BlockCursor(9)) } },
            ),
            (
                format!("/api/v2/addresses/{dead}/nft?type=ERC-721&token_contract_address_hash={dead}&token_id=5"),
                Route::AddressNfts {
                    address: dead,
                    kinds: vec![TokenKind::Erc721],
                    page: Page { size: 25, after: Some(NftCursor { token: dead, id: U256::from(5) }) },
                },
            ),
            (
                format!(
                    "/api/v2/addresses/{dead}/nft/collections?token_contract_address_hash={dead}&token_type=ERC-1155"
                ),
                Route::AddressNftCollections {
                    address: dead,
                    kinds: vec![],
                    page: Page { size: 25, after: Some(CollectionCursor(dead)) },
                },
            ),
            (
                "/api/v2/token-transfers?type=ERC-1155&block_number=4&index=2&index_in_batch=1".into(),
                Route::TokenTransfers {
                    kinds: vec![TokenKind::Erc1155],
                    page: Page { size: 25, after: Some(TransferCursor(TransferPos { block: 4, log: 2, item: 1 })) },
                },
            ),
            (format!("/api/v2/tokens/{dead}/instances/{}", U256::MAX), Route::TokenInstance(dead, U256::MAX)),
            (
                format!("/api/v2/tokens/{dead}/instances/7/holders"),
                Route::TokenInstanceHolders { token: dead, id: U256::from(7), page: Page { size: 25, after: None } },
            ),
            (
                format!("/api/v2/tokens/{dead}/instances/7/transfers-count"),
                Route::TokenInstanceTransfersCount(dead, U256::from(7)),
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(parse(Method::GET, &path), Ok(expected), "{path}");
        }
        let bad: &[(String, &'static str)] = &[
            (format!("/api/v2/tokens/{dead}/instances/{}0", U256::MAX), "token_id_param"),
            (format!("/api/v2/tokens/{dead}/instances/0x10"), "token_id_param"),
            ("/api/v2/addresses?hash=0x000000000000000000000000000000000000dEaD".into(), "fetched_coin_balance"),
            ("/api/v2/addresses?sort=transactions_count".into(), "sort"),
            (format!("/api/v2/addresses/{dead}/nft?token_contract_address_hash={dead}"), "token_id"),
            ("/api/v2/token-transfers?type=ERC-9".into(), "type"),
            ("/api/v2/tokens?type=ERC-404&items_count=abc".into(), "items_count"),
        ];
        for (path, param) in bad {
            let result = parse(Method::GET, path);
            assert!(invalid(param)(&result), "{path}: {result:?}");
        }
    }

    #[test]
    fn type_lists_accept_commas_and_brackets() {
        let route = parse(Method::GET, "/api/v2/transactions?type=%5Bcoin_transfer,contract_creation%5D").unwrap();
        let Route::Transactions { kinds, .. } = route else { panic!("{route:?}") };
        assert!(kinds.contains(TxType::CoinTransfer) && kinds.contains(TxType::ContractCreation));
        assert!(!kinds.contains(TxType::ContractCall));
    }

    #[test]
    fn metric_labels_are_templates_never_raw_paths() {
        let hash = format!("0x{}", "ab".repeat(32));
        let address = "0x000000000000000000000000000000000000dEaD";
        let cases = [
            (Method::GET, "/health".to_owned(), "/health"),
            (Method::GET, "/health/ready".to_owned(), "/health/ready"),
            (Method::POST, "/api/eth".to_owned(), "/api/eth"),
            (Method::GET, "/api/v2/blocks/12345".to_owned(), "/api/v2/blocks/:number_or_hash"),
            (Method::GET, format!("/api/v2/blocks/{hash}"), "/api/v2/blocks/:number_or_hash"),
            (
                Method::GET,
                "/api/v2/blocks/77/transactions?items_count=3".to_owned(),
                "/api/v2/blocks/:number_or_hash/transactions",
            ),
            (Method::GET, format!("/api/v2/transactions/{hash}/logs"), "/api/v2/transactions/:hash/logs"),
            (
                Method::GET,
                format!("/api/v2/internal-transactions?transaction_hash={hash}"),
                "/api/v2/transactions/:hash/internal-transactions",
            ),
            (Method::GET, "/api/v2/transactions?filter=pending".to_owned(), "/api/v2/transactions?filter=pending"),
            (
                Method::GET,
                format!("/api/v2/addresses/{address}/transactions?filter=to"),
                "/api/v2/addresses/:address_hash/transactions",
            ),
            (Method::GET, format!("/api/v2/tokens/{address}/holders"), "/api/v2/tokens/:address_hash/holders"),
            (Method::GET, "/api/v2/search?q=secret-user-text".to_owned(), "/api/v2/search"),
            // Unknown paths, bad parameters and wrong methods share one label.
            (Method::GET, "/wp-admin/0xdeadbeef/../../etc/passwd".to_owned(), "other"),
            (Method::GET, "/api/v2/no-such-thing/123".to_owned(), "other"),
            (Method::GET, "/api/v2/blocks/not-a-number".to_owned(), "other"),
            (Method::DELETE, "/api/v2/stats".to_owned(), "other"),
            (Method::OPTIONS, format!("/api/v2/addresses/{address}"), "preflight"),
        ];
        for (method, raw, want) in cases {
            let (path, query) = raw.split_once('?').map_or((raw.as_str(), None), |(p, q)| (p, Some(q)));
            let label = route_label(&method, &Route::parse(&method, path, query));
            assert_eq!(label, want, "{method} {raw}");
            for value in [hash.as_str(), address, "12345", "77", "secret-user-text", "passwd"] {
                assert!(!label.contains(value), "{label} carries {value}");
            }
        }
    }
}

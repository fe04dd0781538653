//! Tokens: `/tokens` and a token's detail, transfers, holders, counters and NFT instances; the token parts of
//! addresses (`/token-transfers`, `/token-balances`, `/tokens`) and transactions (`/token-transfers`).

use super::{contracts, envelope, take_page, ItemContext, PageRows, SCAN_BUDGET};
use crate::api::body::{ok, Body};
use crate::api::cursor::{
    CollectionCursor, HolderCursor, HoldingCursor, InstanceCursor, NftCursor, TokenCursor, TransferCursor,
};
use crate::api::json::{AddressJson, TokenJson, TransferJson};
use crate::api::nft_metadata::{self, InstanceMetadata};
use crate::api::router::{Direction as Filter, Page};
use crate::api::{ApiError, AppState};
use crate::indexer::metadata::search_texts;
use crate::store::keys::{BalanceKey, BlockPos, HolderKey, InstanceKey, SearchKey, TransferPos};
use crate::store::records::{direction, InstanceRecord, TokenKind, TokenRecord, TokenTransferRecord, TxRecord};
use crate::store::tables::{
    NftInstances, TokenBalances, TokenHolders, TokenMetadatas, Tokens, Transactions, Transfers,
};
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, Bytes, B256, U256};
use futures_util::StreamExt;
use hyper::Response;
use serde_json::{json, Value};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

/// The token object of `token`, if it is a token.
pub fn token_json(reader: &Reader<'_>, token: &Address) -> StoreResult<Option<TokenJson>> {
    let Some(record) = reader.get::<Tokens>(token)? else {
        return Ok(None);
    };
    Ok(Some(TokenJson::new(token, &record, reader.get::<TokenMetadatas>(token)?.as_ref())))
}

fn token_jsons(
    reader: &Reader<'_>,
    tokens: impl IntoIterator<Item = Address>,
) -> StoreResult<HashMap<Address, TokenJson>> {
    let mut out = HashMap::new();
    for token in tokens.into_iter().collect::<BTreeSet<_>>() {
        if let Some(json) = token_json(reader, &token)? {
            out.insert(token, json);
        }
    }
    Ok(out)
}

/// The calls (input and `to`) of the transactions whose transfers are shown, by position: a transfer shows the
/// method its transaction called.
pub type Calls = HashMap<BlockPos, Option<(Bytes, Option<Address>)>>;

/// The addresses a transfer item shows.
pub fn transfer_parties(rows: &[(TransferPos, TokenTransferRecord)]) -> impl Iterator<Item = Address> + '_ {
    rows.iter().flat_map(|(_, t)| [t.from, t.to])
}

/// Transfer objects for stored transfers (rows whose block vanished in a concurrent reorg are dropped).
pub fn transfer_items(
    reader: &Reader<'_>,
    rows: &[(TransferPos, TokenTransferRecord)],
) -> StoreResult<Vec<TransferJson>> {
    let mut calls = Calls::new();
    for (pos, t) in rows {
        let tx_pos = BlockPos { block: pos.block, index: t.tx_index };
        if let std::collections::hash_map::Entry::Vacant(slot) = calls.entry(tx_pos) {
            slot.insert(reader.get::<Transactions>(&tx_pos)?.map(|tx| (tx.body.input, tx.body.to)));
        }
    }
    let called = calls.values().flatten().filter_map(|(_, to)| *to);
    let context = ItemContext::read(reader, rows.iter().map(|(p, _)| p.block), transfer_parties(rows).chain(called))?;
    transfer_items_in(reader, rows, &calls, &context)
}

/// [`transfer_items`] with the calls and the context already read (they must cover the rows).
pub fn transfer_items_in(
    reader: &Reader<'_>,
    rows: &[(TransferPos, TokenTransferRecord)],
    calls: &Calls,
    context: &ItemContext,
) -> StoreResult<Vec<TransferJson>> {
    let tokens = token_jsons(reader, rows.iter().map(|(_, t)| t.token))?;
    let mut items = Vec::with_capacity(rows.len());
    for (pos, t) in rows {
        let (Some(header), Some(token)) = (context.headers.get(&pos.block), tokens.get(&t.token)) else { continue };
        let tx_pos = BlockPos { block: pos.block, index: t.tx_index };
        let call = calls.get(&tx_pos).and_then(|c| c.as_ref()).map(|(input, to)| (input, to.as_ref()));
        items.push(TransferJson::new(t, pos.log, header, token.clone(), call, &context.contracts));
    }
    Ok(items)
}

/// The transfers of the transaction `tx` of block `block`, in log order.
pub fn tx_transfers(
    reader: &Reader<'_>,
    block: u64,
    tx: &TxRecord,
) -> StoreResult<Vec<(TransferPos, TokenTransferRecord)>> {
    reader.transfers_in_logs(block, tx.first_log..tx.first_log.saturating_add(tx.log_count))
}

/// `GET /api/v2/transactions/:hash/token-transfers`, of the `kinds` standards (all when empty, none when `None`).
pub fn of_transaction(
    reader: &Reader<'_>,
    hash: B256,
    kinds: Option<&[TokenKind]>,
    page: Page<TransferCursor>,
) -> Result<Response<Body>, ApiError> {
    let Some((pos, tx)) = reader.tx(hash)? else {
        return Err(ApiError::NotFound);
    };
    let Some(kinds) = kinds else {
        return Ok(ok(&envelope(Vec::<Value>::new(), None::<TransferCursor>, page.size, &[])));
    };
    let mut token_kinds: HashMap<Address, Option<TokenKind>> = HashMap::new();
    let mut all = Vec::new();
    for (pos, transfer) in tx_transfers(reader, pos.block, &tx)? {
        if kinds.is_empty() || token_kind(reader, &mut token_kinds, transfer.token)?.is_some_and(|k| kinds.contains(&k))
        {
            all.push((pos, transfer));
        }
    }
    let start = page.after.map_or(0, |after| all.iter().position(|(p, _)| *p == after.0).map_or(all.len(), |i| i + 1));
    let rows: Vec<_> = all[start..].iter().take(page.size).cloned().collect();
    let more = start + rows.len() < all.len();
    let next = rows.last().filter(|_| more).map(|(p, _)| TransferCursor(*p));
    Ok(ok(&envelope(transfer_items(reader, &rows)?, next, page.size, &type_echo(kinds))))
}

/// `GET /api/v2/tokens`: most held first, or name/symbol prefix matches with `q`.
pub fn list(
    reader: &Reader<'_>,
    kinds: &[TokenKind],
    q: Option<&str>,
    fewest_first: bool,
    page: Page<TokenCursor>,
) -> Result<Response<Body>, ApiError> {
    let wanted = |record: &TokenRecord| kinds.is_empty() || kinds.contains(&record.kind);
    let mut items = Vec::new();
    let envelope = match q {
        None => {
            let after = match page.after {
                Some(TokenCursor::Rank(key)) => Some(key),
                _ => None,
            };
            let rows = take_page(reader.token_ranks(after, fewest_first), page.size, |key, ()| {
                Ok(reader.get::<Tokens>(&key.token)?.is_some_and(|r| wanted(&r)))
            })?;
            for (key, ()) in &rows.items {
                items.extend(token_json(reader, &key.token)?);
            }
            envelope(items, rows.next.map(TokenCursor::Rank), page.size, &type_echo(kinds))
        }
        Some(q) => {
            let after = match page.after {
                Some(TokenCursor::Search(key)) => Some(key),
                _ => None,
            };
            let rows = search_page(reader, q, after, page.size, |r| wanted(r))?;
            for (key, ()) in &rows.items {
                items.extend(token_json(reader, &key.token)?);
            }
            let mut echo = type_echo(kinds);
            echo.push(("q", json!(q)));
            envelope(items, rows.next.map(TokenCursor::Search), page.size, &echo)
        }
    };
    Ok(ok(&envelope))
}

/// Tokens whose name, a later word of their name, or symbol starts with `q`, in search-key order after `after`: up
/// to `size` of those `wanted` keeps. A token `q` finds by several texts is listed once, at the first of them, on
/// whichever page that falls; texts are compared whole (a key holds their first 32 bytes).
pub fn search_page(
    reader: &Reader<'_>,
    q: &str,
    after: Option<SearchKey>,
    size: usize,
    wanted: impl Fn(&TokenRecord) -> bool,
) -> StoreResult<PageRows<SearchKey, ()>> {
    let q = q.to_lowercase();
    take_page(reader.token_search(&q, after), size, |key, ()| {
        if !reader.get::<Tokens>(&key.token)?.is_some_and(|r| wanted(&r)) {
            return Ok(false);
        }
        let Some(metadata) = reader.get::<TokenMetadatas>(&key.token)? else { return Ok(false) };
        let first = search_texts(&metadata)
            .into_iter()
            .filter(|text| text.to_lowercase().starts_with(&q))
            .map(|text| SearchKey::new(text, key.token))
            .min();
        Ok(first == Some(*key))
    })
}

/// `GET /api/v2/tokens/:a`.
pub fn detail(reader: &Reader<'_>, token: Address) -> Result<Response<Body>, ApiError> {
    Ok(ok(&token_json(reader, &token)?.ok_or(ApiError::NotFound)?))
}

/// `GET /api/v2/tokens/:a/counters`.
pub fn counters(reader: &Reader<'_>, token: Address) -> Result<Response<Body>, ApiError> {
    let record = reader.get::<Tokens>(&token)?.ok_or(ApiError::NotFound)?;
    Ok(ok(&json!({"token_holders_count": record.holders.to_string(), "transfers_count": record.transfers.to_string()})))
}

/// `GET /api/v2/tokens/:a/transfers`.
pub fn transfers(reader: &Reader<'_>, token: Address, page: Page<TransferCursor>) -> Result<Response<Body>, ApiError> {
    if reader.get::<Tokens>(&token)?.is_none() {
        return Err(ApiError::NotFound);
    }
    let keys = take_page(reader.token_transfers(token, page.after.map(|c| c.0)), page.size, |_, _| Ok(true))?;
    let positions: Vec<TransferPos> = keys.items.iter().map(|(k, ())| k.pos).collect();
    let rows: Vec<_> = positions
        .iter()
        .copied()
        .zip(reader.multi_get::<Transfers>(&positions)?)
        .filter_map(|(p, t)| Some((p, t?)))
        .collect();
    let next = keys.next.map(|k| TransferCursor(k.pos));
    Ok(ok(&envelope(transfer_items(reader, &rows)?, next, page.size, &[])))
}

/// The fields of an instance object that come from its metadata document: `metadata`, `image_url`,
/// `animation_url`, `external_app_url` (string members of the document only).
fn with_metadata(item: &mut Value, metadata: Option<&InstanceMetadata>) {
    let Some(document) = metadata.and_then(|m| m.document.as_ref()) else { return };
    let text = |key: &str| document.get(key).and_then(Value::as_str).map(str::to_owned);
    let fields = item.as_object_mut().expect("an object");
    fields.insert("image_url".into(), json!(text("image").or_else(|| text("image_url"))));
    fields.insert("animation_url".into(), json!(text("animation_url")));
    fields.insert("external_app_url".into(), json!(text("external_url")));
    fields.insert("metadata".into(), document.clone());
}

/// The token object, kind and instance record of an NFT id, if the collection and the id are indexed.
fn indexed_instance(
    reader: &Reader<'_>,
    token: Address,
    id: U256,
) -> Result<(TokenJson, TokenKind, InstanceRecord), ApiError> {
    let record = reader.get::<Tokens>(&token)?.filter(|r| r.kind != TokenKind::Erc20).ok_or(ApiError::NotFound)?;
    let json = token_json(reader, &token)?.ok_or(ApiError::NotFound)?;
    let instance = reader.get::<NftInstances>(&InstanceKey { token, id })?.ok_or(ApiError::NotFound)?;
    Ok((json, record.kind, instance))
}

/// `GET /api/v2/tokens/:a/instances/:id`: the instance with its owner and, where the contract names a readable
/// document (`tokenURI`/`uri`, see `nft_metadata`), its metadata. 404 for an id the index has not seen.
pub async fn instance(
    state: &AppState,
    token: Address,
    id: U256,
    deadline: tokio::time::Instant,
) -> Result<Response<Body>, ApiError> {
    let (json, kind, record, owner) = crate::api::blocking_read(state, deadline, move |r| {
        let (json, kind, record) = indexed_instance(r, token, id)?;
        let owner = match record.owner {
            Some(owner) => Some(contracts(r, [owner])?.address(&owner)),
            None => None,
        };
        Ok((json, kind, record, owner))
    })
    .await?;
    let config = &state.config.nft_metadata;
    let metadata = nft_metadata::instance_metadata(&state.nft_metadata, &state.node, token, kind, id, config).await;
    let mut item = instance_json(&json, kind, id, owner, record.supply);
    with_metadata(&mut item, metadata.as_ref());
    item.as_object_mut().expect("an object").insert("token_type".into(), json!(kind.label()));
    Ok(ok(&item))
}

/// `PATCH …/instances/:id/refetch-metadata`: forgets the instance's metadata so that the next request reads it from
/// the contract and its document again (Blockscout's answer, `{"message": "OK"}`); 404 for an instance the index
/// does not hold.
pub async fn refetch_metadata(
    state: &AppState,
    token: Address,
    id: U256,
    deadline: tokio::time::Instant,
) -> Result<Response<Body>, ApiError> {
    crate::api::blocking_read(state, deadline, move |r| indexed_instance(r, token, id).map(|_| ())).await?;
    state.nft_metadata.forget(token, id);
    Ok(ok(&json!({"message": "OK"})))
}

/// Transfers of one NFT id, newest first: the collection's transfers filtered by id (at most `SCAN_BUDGET` read
/// per page).
pub fn instance_transfers(
    reader: &Reader<'_>,
    token: Address,
    id: U256,
    page: Page<TransferCursor>,
) -> Result<Response<Body>, ApiError> {
    indexed_instance(reader, token, id)?;
    let mut fetched = HashMap::new();
    let keys = take_page(reader.token_transfers(token, page.after.map(|c| c.0)), page.size, |key, ()| {
        match reader.get::<Transfers>(&key.pos)? {
            Some(t) if t.token_id == Some(id) => {
                fetched.insert(key.pos, t);
                Ok(true)
            }
            _ => Ok(false),
        }
    })?;
    let rows: Vec<_> = keys.items.iter().filter_map(|(k, ())| Some((k.pos, fetched.remove(&k.pos)?))).collect();
    let next = keys.next.map(|k| TransferCursor(k.pos));
    Ok(ok(&envelope(transfer_items(reader, &rows)?, next, page.size, &[])))
}

/// Most transfers of a collection `/transfers-count` reads.
const COUNT_BUDGET: usize = 10 * SCAN_BUDGET;

/// `GET /api/v2/tokens/:a/instances/:id/transfers-count`: `{"transfers_count": n}` over the collection's newest
/// 100,000 transfers.
pub fn instance_transfers_count(reader: &Reader<'_>, token: Address, id: U256) -> Result<Response<Body>, ApiError> {
    indexed_instance(reader, token, id)?;
    let mut count = 0u64;
    for row in reader.token_transfers(token, None).take(COUNT_BUDGET) {
        let (key, ()) = row?;
        if reader.get::<Transfers>(&key.pos)?.is_some_and(|t| t.token_id == Some(id)) {
            count += 1;
        }
    }
    Ok(ok(&json!({"transfers_count": count})))
}

/// `GET /api/v2/tokens/:a/instances/:id/holders`: who holds the id (the owner of an ERC-721 id; every holder of an
/// ERC-1155 id), largest amount first, then by address. The collection's holders are read (at most `SCAN_BUDGET`).
pub fn instance_holders(
    reader: &Reader<'_>,
    token: Address,
    id: U256,
    page: Page<HolderCursor>,
) -> Result<Response<Body>, ApiError> {
    indexed_instance(reader, token, id)?;
    let mut held: Vec<(U256, Address)> = Vec::new();
    for row in reader.holders(token, None).take(SCAN_BUDGET) {
        let (key, ()) = row?;
        if let Some(amount) = reader.get::<TokenBalances>(&BalanceKey { holder: key.holder, token, id })? {
            held.push((amount.0, key.holder));
        }
    }
    held.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
    // Rows up to and including the cursor's position in this order come before the page.
    let start = page.after.map_or(0, |c| {
        held.iter()
            .take_while(|(amount, holder)| {
                (*amount, std::cmp::Reverse(*holder)) >= (c.amount, std::cmp::Reverse(c.holder))
            })
            .count()
    });
    let shown: Vec<(U256, Address)> = held.iter().skip(start).take(page.size).copied().collect();
    let more = start + shown.len() < held.len();
    let contracts = contracts(reader, shown.iter().map(|(_, holder)| *holder))?;
    let items: Vec<Value> = shown
        .iter()
        .map(|(amount, holder)| {
            json!({"address": contracts.address(holder), "value": amount.to_string(), "token_id": id.to_string()})
        })
        .collect();
    let next = shown.last().filter(|_| more).map(|(amount, holder)| HolderCursor {
        holder: *holder,
        amount: *amount,
        id: None,
    });
    Ok(ok(&envelope(items, next, page.size, &[])))
}

/// `GET /api/v2/token-transfers?type=`: every token transfer, newest first, optionally of some token kinds only.
pub fn all_transfers(
    reader: &Reader<'_>,
    kinds: &[TokenKind],
    page: Page<TransferCursor>,
) -> Result<Response<Body>, ApiError> {
    let rows = take_page(reader.transfers(page.after.map(|c| c.0)), page.size, |_, t| {
        Ok(kinds.is_empty() || kinds.contains(&t.kind))
    })?;
    let next = rows.next.map(TransferCursor);
    Ok(ok(&envelope(transfer_items(reader, &rows.items)?, next, page.size, &type_echo(kinds))))
}

/// `GET /api/v2/tokens/:a/holders`: largest holders first.
pub fn holders(reader: &Reader<'_>, token: Address, page: Page<HolderCursor>) -> Result<Response<Body>, ApiError> {
    let Some(record) = reader.get::<Tokens>(&token)? else {
        return Err(ApiError::NotFound);
    };
    if record.kind == TokenKind::Erc1155 {
        return holders_by_id(reader, token, page);
    }
    let rows = take_page(reader.holders(token, page.after.map(|c| c.key(token))), page.size, |_, _| Ok(true))?;
    let contracts = contracts(reader, rows.items.iter().map(|(k, ())| k.holder))?;
    let items: Vec<Value> = rows
        .items
        .iter()
        .map(
            |(k, ())| json!({"address": contracts.address(&k.holder), "value": k.amount.to_string(), "token_id": null}),
        )
        .collect();
    let next = rows.next.map(|k| HolderCursor { holder: k.holder, amount: k.amount, id: None });
    Ok(ok(&envelope(items, next, page.size, &[])))
}

/// An ERC-1155 collection's holders as Blockscout lists them: one row per holder and id, largest amount first, then
/// by address and id. Holders are read largest total first, and a holder's amount of one id is at most its total,
/// so the read stops once the page (and one more row) is filled with rows no holder still unread can come before;
/// at most `SCAN_BUDGET` holders are read.
fn holders_by_id(reader: &Reader<'_>, token: Address, page: Page<HolderCursor>) -> Result<Response<Body>, ApiError> {
    type Row = (U256, Address, U256);
    let rank = |r: &Row| (std::cmp::Reverse(r.0), r.1, r.2);
    let after = page.after.map(|c| (c.amount, c.holder, c.id.unwrap_or_default()));
    let wanted = |r: &Row| after.is_none_or(|c| rank(r) > rank(&c));
    let mut rows: Vec<Row> = Vec::new();
    for holder in reader.holders(token, None).take(SCAN_BUDGET) {
        let (key, ()) = holder?;
        // Rows above this holder's total come before any row of it or of the holders after it.
        if rows.iter().filter(|r| r.0 > key.amount).count() > page.size {
            break;
        }
        for balance in reader.holdings_of(key.holder, token) {
            let (at, amount) = balance?;
            let row = (amount.0, key.holder, at.id);
            if !amount.0.is_zero() && wanted(&row) {
                rows.push(row);
            }
        }
        // Only the page and one more row can be shown: the rest is dropped as it piles up.
        if rows.len() > 4 * (page.size + 1) {
            rows.sort_by_key(rank);
            rows.truncate(page.size + 1);
        }
    }
    rows.sort_by_key(rank);
    let more = rows.len() > page.size;
    rows.truncate(page.size);
    let contracts = contracts(reader, rows.iter().map(|(_, holder, _)| *holder))?;
    let items: Vec<Value> = rows
        .iter()
        .map(|(amount, holder, id)| {
            json!({"address": contracts.address(holder), "value": amount.to_string(), "token_id": id.to_string()})
        })
        .collect();
    let next = rows.last().filter(|_| more).map(|&(amount, holder, id)| HolderCursor { holder, amount, id: Some(id) });
    Ok(ok(&envelope(items, next, page.size, &[])))
}

fn instance_json(token: &TokenJson, kind: TokenKind, id: U256, owner: Option<AddressJson>, supply: U256) -> Value {
    json!({
        "id": id.to_string(),
        "metadata": null,
        "owner": owner,
        "token": token,
        "external_app_url": null,
        "animation_url": null,
        "image_url": null,
        "is_unique": kind == TokenKind::Erc721 || supply == U256::from(1),
        "thumbnails": null,
        "media_type": null,
        "media_url": null,
    })
}

/// `GET /api/v2/tokens/:a/instances`: the ids of an NFT collection, highest first, with their owners (the metadata
/// is added by [`with_list_metadata`]).
pub fn instances(
    reader: &Reader<'_>,
    token: Address,
    holder: Option<Address>,
    page: Page<InstanceCursor>,
) -> Result<Value, ApiError> {
    let Some(json) = token_json(reader, &token)? else {
        return Err(ApiError::NotFound);
    };
    let kind = reader.get::<Tokens>(&token)?.map(|r| r.kind).unwrap_or(TokenKind::Erc20);
    let rows = take_page(reader.instances(token, page.after.map(|c| c.0)), page.size, |key, instance| match holder {
        None => Ok(true),
        Some(h) => Ok(instance.owner == Some(h)
            || reader.get::<TokenBalances>(&BalanceKey { holder: h, token, id: key.id })?.is_some()),
    })?;
    let contracts = contracts(reader, rows.items.iter().filter_map(|(_, i)| i.owner))?;
    let items: Vec<Value> = rows
        .items
        .iter()
        .map(|(k, i)| instance_json(&json, kind, k.id, i.owner.map(|o| contracts.address(&o)), i.supply))
        .collect();
    let envelope = envelope(items, rows.next.map(|k| InstanceCursor(k.id)), page.size, &[]);
    Ok(serde_json::to_value(envelope).expect("envelope serializes"))
}

/// `GET /api/v2/addresses/:a/token-transfers`.
pub fn of_address(
    reader: &Reader<'_>,
    address: Address,
    filter: Option<Filter>,
    kinds: &[TokenKind],
    token: Option<Address>,
    page: Page<TransferCursor>,
) -> Result<Response<Body>, ApiError> {
    let wanted_bits = match filter {
        None => direction::SENT | direction::RECEIVED,
        Some(Filter::From) => direction::SENT,
        Some(Filter::To) => direction::RECEIVED,
    };
    let mut fetched = HashMap::new();
    let scan = reader.address_transfers(address, page.after.map(|c| c.0));
    let keys = take_page(scan, page.size, |key, bits| {
        if bits & wanted_bits == 0 {
            return Ok(false);
        }
        if kinds.is_empty() && token.is_none() {
            return Ok(true);
        }
        match reader.get::<Transfers>(&key.pos)? {
            Some(t) if (kinds.is_empty() || kinds.contains(&t.kind)) && token.is_none_or(|tk| tk == t.token) => {
                fetched.insert(key.pos, t);
                Ok(true)
            }
            _ => Ok(false),
        }
    })?;
    let mut rows = Vec::with_capacity(keys.items.len());
    for (key, _) in &keys.items {
        match fetched.remove(&key.pos) {
            Some(t) => rows.push((key.pos, t)),
            None => rows.extend(reader.get::<Transfers>(&key.pos)?.map(|t| (key.pos, t))),
        }
    }
    let mut extra = Vec::new();
    if let Some(f) = filter {
        extra.push(("filter", json!(if f == Filter::To { "to" } else { "from" })));
    }
    let next = keys.next.map(|k| TransferCursor(k.pos));
    Ok(ok(&envelope(transfer_items(reader, &rows)?, next, page.size, &extra)))
}

fn balance_item(token: TokenJson, id: Option<U256>, value: U256) -> Value {
    json!({"token": token, "token_id": id.map(|i| i.to_string()), "token_instance": null, "value": value.to_string()})
}

/// Most balance rows read for `/token-balances`.
const BALANCES_LIMIT: usize = 5_000;

/// Most ids of one ERC-1155 token listed by `/token-balances`, so one token (a batch of thousands of ids anyone can
/// send) does not crowd the address's other tokens out of the list. The paginated `/tokens` lists them all.
const IDS_PER_TOKEN: usize = 100;

/// `GET /api/v2/addresses/:a/token-balances`: every token held (a bare array). An ERC-721 collection is one item
/// (the number of ids held); ERC-1155 holdings are listed per id, at most [`IDS_PER_TOKEN`] of one token.
pub fn balances(reader: &Reader<'_>, address: Address) -> Result<Response<Body>, ApiError> {
    let items: Vec<Value> = balance_items(reader, address)?.into_iter().map(|(_, item)| item).collect();
    Ok(ok(&items))
}

/// The `/token-balances` items of `address` with each token's standard (also pushed on its WebSocket topic).
pub fn balance_items(reader: &Reader<'_>, address: Address) -> StoreResult<Vec<(TokenKind, Value)>> {
    let mut grouped: Vec<((Address, Option<U256>), U256)> = Vec::new();
    let mut token_kinds: HashMap<Address, Option<TokenKind>> = HashMap::new();
    let (mut after, mut read) = (None, 0);
    // One pass over the address's balance rows, skipping past a token's remaining ids (a new scan from its last
    // id) once its item is known: an ERC-721 collection's count is the holder's total, an ERC-1155 token's list
    // ends at `IDS_PER_TOKEN` ids.
    'tokens: loop {
        let mut ids_of_token = 0;
        for row in reader.balances(address, after.take()) {
            if read == BALANCES_LIMIT {
                break 'tokens;
            }
            read += 1;
            let (key, amount) = row?;
            let kind = token_kind(reader, &mut token_kinds, key.token)?;
            let past_token = BalanceKey { holder: address, token: key.token, id: U256::MAX };
            match kind {
                Some(TokenKind::Erc721) => {
                    let held = reader.get::<TokenHolders>(&HolderKey { token: key.token, holder: address })?;
                    grouped.push(((key.token, None), held.map_or(amount.0, |total| total.0)));
                    after = Some(past_token);
                    continue 'tokens;
                }
                Some(TokenKind::Erc1155) => {
                    if grouped.last().is_none_or(|((token, _), _)| *token != key.token) {
                        ids_of_token = 0;
                    }
                    grouped.push(((key.token, Some(key.id)), amount.0));
                    ids_of_token += 1;
                    if ids_of_token == IDS_PER_TOKEN {
                        after = Some(past_token);
                        continue 'tokens;
                    }
                }
                // ERC-20: one row (id 0); a token not known as any standard: its ids summed.
                _ => match grouped.last_mut() {
                    Some((last, sum)) if *last == (key.token, None) => *sum += amount.0,
                    _ => grouped.push(((key.token, None), amount.0)),
                },
            }
        }
        break;
    }
    let tokens = token_jsons(reader, grouped.iter().map(|((token, _), _)| *token))?;
    let kind = |token: &Address| token_kinds.get(token).copied().flatten().unwrap_or(TokenKind::Erc20);
    Ok(grouped
        .into_iter()
        .filter_map(|((token, id), value)| Some((kind(&token), balance_item(tokens.get(&token)?.clone(), id, value))))
        .collect())
}

/// The `/token-balances` item a balance row belongs to: one per ERC-1155 id, one per token otherwise (an
/// ERC-721 collection's ids add up to a count).
fn listed_as(kind: Option<TokenKind>, key: &BalanceKey) -> (Address, Option<U256>) {
    (key.token, (kind == Some(TokenKind::Erc1155)).then_some(key.id))
}

/// `GET /api/v2/addresses/:a/tokens`: holdings one row per balance (per id for NFTs), paginated.
pub fn holdings(
    reader: &Reader<'_>,
    address: Address,
    kinds: &[TokenKind],
    page: Page<HoldingCursor>,
) -> Result<Response<Body>, ApiError> {
    let after = page.after.map(|c| BalanceKey { holder: address, token: c.token, id: c.id });
    let mut token_kinds: HashMap<Address, Option<TokenKind>> = HashMap::new();
    let rows: PageRows<BalanceKey, _> = take_page(reader.balances(address, after), page.size, |key, _| {
        let kind = token_kind(reader, &mut token_kinds, key.token)?;
        Ok(kind.is_some_and(|k| kinds.is_empty() || kinds.contains(&k)))
    })?;
    let tokens = token_jsons(reader, rows.items.iter().map(|(k, _)| k.token))?;
    let items: Vec<Value> = rows
        .items
        .iter()
        .filter_map(|(k, amount)| {
            let kind = token_kinds.get(&k.token).copied().flatten()?;
            let id = (kind != TokenKind::Erc20).then_some(k.id);
            Some(balance_item(tokens.get(&k.token)?.clone(), id, amount.0))
        })
        .collect();
    let next = rows.next.map(|k| HoldingCursor { token: k.token, id: k.id });
    Ok(ok(&envelope(items, next, page.size, &[])))
}

/// A collection an address holds: the token, its kind, and the held ids with their amounts.
type HeldCollection = (Address, TokenKind, Vec<(U256, U256)>);

/// Instances of an address's NFTs shown in one collection of `/nft/collections`.
const COLLECTION_INSTANCES: usize = 9;

/// An NFT the address holds: the instance object plus its `token_type` and the amount held (`value`).
fn held_nft_json(token: &TokenJson, kind: TokenKind, id: U256, holder: AddressJson, supply: U256, held: U256) -> Value {
    let owner = (kind == TokenKind::Erc721).then_some(holder);
    let mut item = instance_json(token, kind, id, owner, supply);
    let fields = item.as_object_mut().expect("an object");
    fields.insert("token_type".into(), json!(kind.label()));
    fields.insert("value".into(), json!(held.to_string()));
    item
}

/// The NFT kind of `token` if it is one and `kinds` (empty: any) admits it; kinds are cached in `seen`.
fn nft_kind(
    reader: &Reader<'_>,
    seen: &mut HashMap<Address, Option<TokenKind>>,
    token: Address,
    kinds: &[TokenKind],
) -> StoreResult<Option<TokenKind>> {
    let kind = token_kind(reader, seen, token)?;
    Ok(kind.filter(|k| *k != TokenKind::Erc20 && (kinds.is_empty() || kinds.contains(k))))
}

/// The kind of `token` (`None`: not a token the index knows), read once per page into `seen`.
fn token_kind(
    reader: &Reader<'_>,
    seen: &mut HashMap<Address, Option<TokenKind>>,
    token: Address,
) -> StoreResult<Option<TokenKind>> {
    Ok(match seen.entry(token) {
        Entry::Occupied(known) => *known.get(),
        Entry::Vacant(slot) => *slot.insert(reader.get::<Tokens>(&token)?.map(|r| r.kind)),
    })
}

/// `GET /api/v2/addresses/:a/nft?type=`: the NFT ids (ERC-721, ERC-1155) the address holds, by collection then id.
pub fn nfts(
    reader: &Reader<'_>,
    address: Address,
    kinds: &[TokenKind],
    page: Page<NftCursor>,
) -> Result<Value, ApiError> {
    let after = page.after.map(|c| BalanceKey { holder: address, token: c.token, id: c.id });
    let mut seen = HashMap::new();
    let rows = take_page(reader.balances(address, after), page.size, |key, _| {
        Ok(nft_kind(reader, &mut seen, key.token, kinds)?.is_some())
    })?;
    let tokens = token_jsons(reader, rows.items.iter().map(|(k, _)| k.token))?;
    let holder = contracts(reader, [address])?.address(&address);
    let mut items = Vec::with_capacity(rows.items.len());
    for (key, held) in &rows.items {
        let (Some(token), Some(kind)) = (tokens.get(&key.token), seen.get(&key.token).copied().flatten()) else {
            continue;
        };
        let supply =
            reader.get::<NftInstances>(&InstanceKey { token: key.token, id: key.id })?.map_or(held.0, |i| i.supply);
        items.push(held_nft_json(token, kind, key.id, holder.clone(), supply, held.0));
    }
    let next = rows.next.map(|k| NftCursor { token: k.token, id: k.id });
    Ok(serde_json::to_value(envelope(items, next, page.size, &type_echo(kinds))).expect("envelope serializes"))
}

/// `GET /api/v2/addresses/:a/nft/collections?type=`: the NFT collections the address holds, each with the amount
/// held (ids for ERC-721, units for ERC-1155) and its first nine ids. At most `SCAN_BUDGET` balance rows are read.
pub fn nft_collections(
    reader: &Reader<'_>,
    address: Address,
    kinds: &[TokenKind],
    page: Page<CollectionCursor>,
) -> Result<Value, ApiError> {
    let after = page.after.map(|c| BalanceKey { holder: address, token: c.0, id: U256::MAX });
    let mut seen = HashMap::new();
    // (token, kind, ids with amounts) in token order; a collection past the page means more follow.
    let mut collections: Vec<HeldCollection> = Vec::new();
    let mut last_examined = None;
    let (mut budget_spent, mut more) = (false, false);
    for (examined, row) in reader.balances(address, after).enumerate() {
        let (key, held) = row?;
        if examined >= SCAN_BUDGET {
            budget_spent = true;
            break;
        }
        last_examined = Some(key.token);
        let Some(kind) = nft_kind(reader, &mut seen, key.token, kinds)? else { continue };
        if let Some((_, _, ids)) = collections.last_mut().filter(|(token, _, _)| *token == key.token) {
            ids.push((key.id, held.0));
            continue;
        }
        if collections.len() == page.size {
            more = true;
            break;
        }
        collections.push((key.token, kind, vec![(key.id, held.0)]));
    }
    let next = if more {
        collections.last().map(|(token, _, _)| CollectionCursor(*token))
    } else if budget_spent {
        // The budget ran out inside the scan: continue after the last collection examined (its ids are skipped).
        last_examined.map(CollectionCursor)
    } else {
        None
    };
    let tokens = token_jsons(reader, collections.iter().map(|(t, _, _)| *t))?;
    let holder = contracts(reader, [address])?.address(&address);
    let mut items = Vec::with_capacity(collections.len());
    for (token, kind, ids) in &collections {
        let Some(json) = tokens.get(token) else { continue };
        let amount =
            reader.get::<TokenHolders>(&HolderKey { token: *token, holder: address })?.map_or(U256::ZERO, |a| a.0);
        let mut instances = Vec::new();
        for (id, held) in ids.iter().take(COLLECTION_INSTANCES) {
            let supply =
                reader.get::<NftInstances>(&InstanceKey { token: *token, id: *id })?.map_or(*held, |i| i.supply);
            instances.push(held_nft_json(json, *kind, *id, holder.clone(), supply, *held));
        }
        items.push(json!({"token": json, "amount": amount.to_string(), "token_instances": instances}));
    }
    Ok(serde_json::to_value(envelope(items, next, page.size, &type_echo(kinds))).expect("envelope serializes"))
}

/// Most instances of one list answer whose metadata is fetched.
const LIST_METADATA: usize = 50;

/// Adds metadata to the NFT instance objects of a list answer (`items`, or each item's `token_instances`): the
/// first [`LIST_METADATA`] are resolved, eight at a time, all within one metadata timeout; the rest keep `null`.
pub async fn with_list_metadata(state: &AppState, mut body: Value) -> Response<Body> {
    let mut slots: Vec<&mut Value> = Vec::new();
    for item in body.get_mut("items").and_then(Value::as_array_mut).into_iter().flatten() {
        if item.get("token_instances").is_some() {
            slots.extend(item["token_instances"].as_array_mut().into_iter().flatten());
        } else {
            slots.push(item);
        }
    }
    slots.truncate(LIST_METADATA);
    let key = |slot: &Value| -> Option<(Address, TokenKind, U256)> {
        let token = slot["token"]["address_hash"].as_str()?.parse().ok()?;
        // Address NFT lists name the type on the item, a collection's instances on their token.
        let kind = TokenKind::parse(slot["token_type"].as_str().or_else(|| slot["token"]["type"].as_str())?)?;
        Some((token, kind, slot["id"].as_str()?.parse().ok()?))
    };
    let keys: Vec<Option<(Address, TokenKind, U256)>> = slots.iter().map(|slot| key(slot)).collect();
    let config = &state.config.nft_metadata;
    // One deadline for the whole list: what has not resolved by then stays without metadata.
    let deadline = tokio::time::Instant::now() + config.timeout;
    let fetches = futures_util::stream::iter(keys).map(|key| async move {
        let (token, kind, id) = key?;
        // Its own task: a fetch the list stops waiting for still finishes and is kept for the next visit.
        let state = state.clone();
        let fetch = tokio::spawn(async move {
            let config = &state.config.nft_metadata;
            nft_metadata::instance_metadata(&state.nft_metadata, &state.node, token, kind, id, config).await
        });
        tokio::time::timeout_at(deadline, fetch).await.ok()?.ok().flatten()
    });
    let resolved: Vec<Option<InstanceMetadata>> = fetches.buffered(8).collect().await;
    for (slot, metadata) in slots.into_iter().zip(&resolved) {
        with_metadata(slot, metadata.as_ref());
    }
    ok(&body)
}

/// The `type` filter echoed into `next_page_params`.
fn type_echo(kinds: &[TokenKind]) -> Vec<(&'static str, Value)> {
    if kinds.is_empty() {
        return Vec::new();
    }
    let labels: Vec<&str> = kinds.iter().map(|k| k.label()).collect();
    vec![("type", json!(labels.join(",")))]
}

/// The `/token-balances` items `address` has, counted as that list shows them: one per ERC-20 and ERC-721 token,
/// one per ERC-1155 id (up to `cap`, for tab counters).
pub fn holdings_count(reader: &Reader<'_>, address: Address, cap: usize) -> StoreResult<usize> {
    let mut items = BTreeSet::new();
    let mut token_kinds: HashMap<Address, Option<TokenKind>> = HashMap::new();
    for row in reader.balances(address, None).take(SCAN_BUDGET) {
        let key = row?.0;
        items.insert(listed_as(token_kind(reader, &mut token_kinds, key.token)?, &key));
        if items.len() >= cap {
            break;
        }
    }
    Ok(items.len())
}

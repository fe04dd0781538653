//! Search: `/search`, `/search/quick`, `/search/check-redirect`. A query is a block number, a block or
//! transaction hash, an address (a token contract's address also finds the token), or the start of a token's
//! name or symbol (case-insensitive), or a name of the name registry: a whole name resolved with `eth_call` at the
//! indexed tip, and the indexed names starting with the query.

use super::blocks::find_block;
use super::smart_contracts::contract_info;
use super::tokens::{search as token_search, token_json};
use crate::api::body::{ok, Body};
use crate::api::json::{checksum, hash_hex, iso_timestamp, BlockKind, Envelope};
use crate::api::names::ResolvedName;
use crate::api::router::{parse_address, parse_hash, BlockId};
use crate::api::{ApiError, AppState};
use crate::chain::names::{looks_like_name, namehash};
use crate::store::tables::Accounts;
use crate::store::{Reader, StoreResult};
use hyper::Response;
use serde_json::{json, Value};

/// One search hit, in Blockscout's search item shape, with its redirect target (exact matches only).
struct Hit {
    item: Value,
    redirect: Option<(&'static str, String)>,
}

/// Most token hits of a text query.
const TOKEN_HITS: usize = 50;

/// Most name hits of a text query.
const NAME_HITS: usize = 50;

/// The whole name a query names, resolved live (none when the query is no valid name or names are off). Search is
/// lenient: a query that is not a valid name is still searched as text.
pub async fn named(state: &AppState, q: &str) -> Option<ResolvedName> {
    if !looks_like_name(q) {
        return None;
    }
    state.resolve_name(q, "q").await.ok().flatten()
}

/// Blockscout's `ens_domain` item for `name`, whose address record holds `address`.
fn name_hit(
    reader: &Reader<'_>,
    name: &str,
    address: alloy::primitives::Address,
    expires: Option<u64>,
) -> StoreResult<Hit> {
    let hash = checksum(&address);
    let info = contract_info(reader, &address)?;
    let is_contract = info.is_some() || reader.get::<Accounts>(&address)?.is_some_and(|a| a.is_contract());
    Ok(Hit {
        item: json!({
            "type": "ens_domain",
            "name": null,
            "address_hash": hash,
            "address": hash,
            "url": format!("/address/{hash}"),
            "is_smart_contract_verified": info.is_some_and(|i| i.verified),
            "is_smart_contract_address": is_contract,
            "certified": false,
            "ens_info": {
                "address_hash": hash,
                "expiry_date": expires.map(iso_timestamp),
                "name": name,
                "names_count": reader.names_count(address)?.max(1),
                "protocol": null,
            },
            "reputation": "ok",
            "priority": 4,
        }),
        redirect: Some(("address", hash)),
    })
}

/// Name hits: the whole name asked for (resolved live) first, then indexed names starting with the query.
fn name_hits(reader: &Reader<'_>, q: &str, whole: Option<&ResolvedName>) -> StoreResult<Vec<Hit>> {
    let mut hits = Vec::new();
    if reader.name_registry().is_none() {
        return Ok(hits);
    }
    let mut exact = None;
    if let Some(ResolvedName { name, address: Some(address) }) = whole {
        let node = namehash(name);
        let expires = reader.name_record(node)?.and_then(|r| r.expires);
        hits.push(name_hit(reader, name, *address, expires)?);
        exact = Some(node);
    }
    let prefix = whole.map_or(q, |w| w.name.as_str());
    for (node, record) in reader.names_starting(prefix, NAME_HITS)? {
        let (Some(name), Some(address)) = (record.name, record.resolved) else { continue };
        if Some(node) != exact {
            let mut hit = name_hit(reader, &name, address, record.expires)?;
            hit.redirect = None;
            hits.push(hit);
        }
    }
    Ok(hits)
}

fn token_hit(address: &alloy::primitives::Address, token: &crate::api::json::TokenJson, verified: bool) -> Hit {
    let hash = checksum(address);
    let mut item = serde_json::to_value(token).expect("token serializes");
    let fields = item.as_object_mut().expect("an object");
    let token_type = fields.remove("type").unwrap_or(Value::Null);
    for unused in ["decimals", "holders_count", "volume_24h", "circulating_supply"] {
        fields.remove(unused);
    }
    fields.extend(
        json!({
            "type": "token",
            "token_type": token_type,
            "token_url": format!("/token/{hash}"),
            "address_url": format!("/address/{hash}"),
            "is_smart_contract_verified": verified,
            "is_smart_contract_address": true,
            "is_verified_via_admin_panel": false,
            "certified": false,
            "priority": 2,
        })
        .as_object()
        .expect("an object")
        .clone(),
    );
    Hit { item, redirect: None }
}

fn find(reader: &Reader<'_>, q: &str, name: Option<&ResolvedName>) -> StoreResult<Vec<Hit>> {
    let mut hits = Vec::new();
    if !q.is_empty() && q.bytes().all(|b| b.is_ascii_digit()) {
        if let Some((block, kind)) =
            q.parse().ok().map(BlockId::Number).map(|id| find_block(reader, id)).transpose()?.flatten()
        {
            hits.push(block_hit(&block.hash, block.number, block.timestamp, kind));
        }
    } else if let Ok(hash) = parse_hash(q, "q") {
        if let Some((pos, tx)) = reader.tx(hash)? {
            let timestamp = reader.block(pos.block)?.map(|h| iso_timestamp(h.timestamp));
            let hash = hash_hex(&tx.hash);
            hits.push(Hit {
                item: json!({"type": "transaction", "transaction_hash": hash, "url": format!("/tx/{hash}"), "timestamp": timestamp, "priority": 0}),
                redirect: Some(("transaction", hash)),
            });
        }
        if let Some((block, kind)) = find_block(reader, BlockId::Hash(hash))? {
            hits.push(block_hit(&block.hash, block.number, block.timestamp, kind));
        }
    } else if let Ok(address) = parse_address(q, "q") {
        let info = contract_info(reader, &address)?;
        let verified = info.as_ref().is_some_and(|i| i.verified);
        if let Some(token) = token_json(reader, &address)? {
            hits.push(token_hit(&address, &token, verified));
        }
        let is_contract = info.is_some() || reader.get::<Accounts>(&address)?.is_some_and(|a| a.is_contract());
        let hash = checksum(&address);
        hits.push(Hit {
            item: json!({
                "type": if is_contract { "contract" } else { "address" },
                "name": info.and_then(|i| i.name),
                "address_hash": hash,
                "url": format!("/address/{hash}"),
                "is_smart_contract_verified": verified,
                "is_smart_contract_address": is_contract,
                "certified": false,
                "ens_info": null,
                "reputation": "ok",
                "priority": 0,
            }),
            redirect: Some(("address", hash)),
        });
    } else {
        for (address, token) in token_search(reader, q, TOKEN_HITS)? {
            let verified = contract_info(reader, &address)?.is_some_and(|i| i.verified);
            hits.push(token_hit(&address, &token, verified));
        }
        hits.extend(name_hits(reader, q, name)?);
    }
    Ok(hits)
}

fn block_hit(hash: &alloy::primitives::B256, number: u64, timestamp: u64, kind: BlockKind) -> Hit {
    let hash = hash_hex(hash);
    Hit {
        item: json!({
            "type": "block",
            "block_number": number,
            "block_hash": hash,
            "url": format!("/block/{hash}"),
            "timestamp": iso_timestamp(timestamp),
            "block_type": kind,
            "priority": 3,
        }),
        redirect: Some(("block", hash)),
    }
}

/// `GET /api/v2/search?q=`.
pub fn search(reader: &Reader<'_>, q: &str, name: Option<&ResolvedName>) -> Result<Response<Body>, ApiError> {
    let hits = find(reader, q, name)?;
    Ok(ok(&Envelope { items: hits.into_iter().map(|h| h.item).collect(), next_page_params: None }))
}

/// `GET /api/v2/search/quick?q=`: the same hits as a bare array.
pub fn quick(reader: &Reader<'_>, q: &str, name: Option<&ResolvedName>) -> Result<Response<Body>, ApiError> {
    // The header's search box asks as the user types: under three characters there is nothing to suggest yet.
    if q.trim().chars().count() < QUICK_MIN_CHARS {
        return Ok(ok(&json!([])));
    }
    let hits = find(reader, q, name)?;
    Ok(ok(&hits.into_iter().map(|h| h.item).collect::<Vec<_>>()))
}

/// The shortest query the quick search answers.
const QUICK_MIN_CHARS: usize = 3;

/// `GET /api/v2/search/check-redirect?q=`: where an exact match leads.
pub fn redirect(reader: &Reader<'_>, q: &str, name: Option<&ResolvedName>) -> Result<Response<Body>, ApiError> {
    let hits = find(reader, q, name)?;
    Ok(ok(&match hits.into_iter().find_map(|h| h.redirect) {
        Some((kind, parameter)) => json!({"redirect": true, "type": kind, "parameter": parameter}),
        None => json!({"redirect": false, "type": null, "parameter": null}),
    }))
}

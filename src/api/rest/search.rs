//! Search: `/search`, `/search/quick`, `/search/check-redirect`. A query is a block number, a block or
//! transaction hash, an address (a token contract's address also finds the token), or the start of a token's
//! name or symbol (case-insensitive).

use super::blocks::find_block;
use super::smart_contracts::contract_info;
use super::tokens::{search as token_search, token_json};
use crate::api::body::{ok, Body};
use crate::api::json::{checksum, hash_hex, iso_timestamp, BlockKind, Envelope};
use crate::api::router::{parse_address, parse_hash, BlockId};
use crate::api::ApiError;
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

fn find(reader: &Reader<'_>, q: &str) -> StoreResult<Vec<Hit>> {
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
pub fn search(reader: &Reader<'_>, q: &str) -> Result<Response<Body>, ApiError> {
    let hits = find(reader, q)?;
    Ok(ok(&Envelope { items: hits.into_iter().map(|h| h.item).collect(), next_page_params: None }))
}

/// `GET /api/v2/search/quick?q=`: the same hits as a bare array.
pub fn quick(reader: &Reader<'_>, q: &str) -> Result<Response<Body>, ApiError> {
    let hits = find(reader, q)?;
    Ok(ok(&hits.into_iter().map(|h| h.item).collect::<Vec<_>>()))
}

/// `GET /api/v2/search/check-redirect?q=`: where an exact match leads.
pub fn redirect(reader: &Reader<'_>, q: &str) -> Result<Response<Body>, ApiError> {
    let hits = find(reader, q)?;
    Ok(ok(&match hits.into_iter().find_map(|h| h.redirect) {
        Some((kind, parameter)) => json!({"redirect": true, "type": kind, "parameter": parameter}),
        None => json!({"redirect": false, "type": null, "parameter": null}),
    }))
}

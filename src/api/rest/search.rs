//! Search: `/search`, `/search/quick`, `/search/check-redirect`. A query is a block number, a block or
//! transaction hash, an address (a token contract's address also finds the token), or the start of a token's
//! name or symbol (case-insensitive), or a name of the name registry: a whole name resolved with `eth_call` at the
//! indexed tip, and the indexed names starting with the query.

use super::blocks::find_block;
use super::envelope;
use super::smart_contracts::contract_info;
use super::tokens::{search_page as token_search, token_json};
use crate::api::body::{ok, Body};
use crate::api::cursor::SearchCursor;
use crate::api::json::{checksum, hash_hex, iso_timestamp, BlockKind};
use crate::api::names::ResolvedName;
use crate::api::router::{parse_address, parse_hash, BlockId, Page};
use crate::api::{ApiError, AppState};
use crate::chain::names::{looks_like_name, namehash};
use crate::store::keys::NameSearchKey;
use crate::store::tables::Accounts;
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, B256};
use hyper::Response;
use serde_json::{json, Value};

/// One search hit, in Blockscout's search item shape, with its redirect target (exact matches only).
struct Hit {
    item: Value,
    redirect: Option<(&'static str, String)>,
}

/// Most text hits of a quick search (and of what a redirect is looked for in).
const QUICK_HITS: usize = 50;

/// The whole name a query names, resolved live (none when the query is no valid name or names are off). Search is
/// lenient: a query that is not a valid name is still searched as text.
pub async fn named(state: &AppState, q: &str) -> Option<ResolvedName> {
    if !looks_like_name(q) {
        return None;
    }
    state.resolve_name(q, "q").await.ok().flatten()
}

/// Blockscout's `ens_domain` item for `name`, whose address record holds `address`.
fn name_hit(reader: &Reader<'_>, name: &str, address: Address, expires: Option<u64>) -> StoreResult<Hit> {
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

fn token_hit(address: &Address, token: &crate::api::json::TokenJson, verified: bool) -> Hit {
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

/// The hits of `q` after `after`, at most `size` text hits, and where the next page continues. The first page starts
/// with what `q` names exactly (a block, a transaction, an address and its token); a query of text (a number of three
/// or more digits too) finds tokens, then registry names.
fn find(
    reader: &Reader<'_>,
    q: &str,
    name: Option<&ResolvedName>,
    after: Option<SearchCursor>,
    size: usize,
) -> StoreResult<(Vec<Hit>, Option<SearchCursor>)> {
    let mut hits = Vec::new();
    let digits = !q.is_empty() && q.bytes().all(|b| b.is_ascii_digit());
    if digits {
        if let Some((block, kind)) = q
            .parse()
            .ok()
            .filter(|_| after.is_none())
            .map(BlockId::Number)
            .map(|id| find_block(reader, id))
            .transpose()?
            .flatten()
        {
            hits.push(block_hit(&block.hash, block.number, block.timestamp, kind));
        }
        if q.len() < QUICK_MIN_CHARS {
            return Ok((hits, None));
        }
    } else if let Ok(hash) = parse_hash(q, "q") {
        if after.is_none() {
            hits.extend(hash_hits(reader, hash)?);
        }
        return Ok((hits, None));
    } else if let Ok(address) = parse_address(q, "q") {
        if after.is_none() {
            hits.extend(address_hits(reader, address)?);
        }
        return Ok((hits, None));
    }
    // The block a number names takes a place of the page (keeping at least one for the text).
    let room = size.saturating_sub(hits.len()).max(1);
    let (text_hits, next) = text_hits(reader, q, name, after, room)?;
    hits.extend(text_hits);
    Ok((hits, next))
}

/// The transaction and the block a 32-byte hash names.
fn hash_hits(reader: &Reader<'_>, hash: B256) -> StoreResult<Vec<Hit>> {
    let mut hits = Vec::new();
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
    Ok(hits)
}

/// An address: its token, if it is one, and the address itself.
fn address_hits(reader: &Reader<'_>, address: Address) -> StoreResult<Vec<Hit>> {
    let mut hits = Vec::new();
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
    Ok(hits)
}

/// Up to `size` text hits after `after`: tokens whose name, a later word of it or symbol starts with `q` (each
/// token once), then registry names: the whole name asked for (resolved live) first, then the indexed names starting
/// with the query.
fn text_hits(
    reader: &Reader<'_>,
    q: &str,
    whole: Option<&ResolvedName>,
    after: Option<SearchCursor>,
    size: usize,
) -> StoreResult<(Vec<Hit>, Option<SearchCursor>)> {
    let mut hits = Vec::new();
    if q.is_empty() {
        return Ok((hits, None));
    }
    // The whole name asked for, when it resolves, and the prefix the other names are looked up by.
    let exact = whole.filter(|w| w.address.is_some()).map(|w| namehash(&w.name));
    let prefix = whole.map_or(q, |w| w.name.as_str());
    let names_after = match after {
        Some(SearchCursor::Name(key)) => Some(key),
        after => {
            let tokens_after = match after {
                Some(SearchCursor::Token(key)) => Some(key),
                _ => None,
            };
            let rows = token_search(reader, q, tokens_after, size, |_| true)?;
            for (key, ()) in &rows.items {
                if let Some(token) = token_json(reader, &key.token)? {
                    let verified = contract_info(reader, &key.token)?.is_some_and(|i| i.verified);
                    hits.push(token_hit(&key.token, &token, verified));
                }
            }
            let last = rows.items.last().map(|(key, ())| SearchCursor::Token(*key));
            match rows.next {
                Some(next) => return Ok((hits, Some(SearchCursor::Token(next)))),
                // A full page of tokens continues with the names on the next page, when there are any.
                None if rows.items.len() >= size => {
                    let names = reader.name_registry().is_some()
                        && (exact.is_some() || {
                            // A probe that ran out of budget cannot tell: the next page looks.
                            let (found, unfinished) = reader.names_starting(prefix, None, 2)?;
                            unfinished.is_some() || found.iter().any(|(k, _)| Some(k.node) != exact)
                        });
                    return Ok((hits, last.filter(|_| names)));
                }
                None => None,
            }
        }
    };
    if reader.name_registry().is_none() {
        return Ok((hits, None));
    }
    if let (Some(whole), None) = (whole, names_after) {
        hits.extend(whole_name_hit(reader, whole)?);
    }
    let room = size.saturating_sub(hits.len());
    let mut shown = None;
    let (found, unfinished) = reader.names_starting(prefix, names_after, room + 2)?;
    for (key, record) in found {
        let (Some(name), Some(address)) = (record.name, record.resolved) else { continue };
        if Some(key.node) == exact {
            continue;
        }
        if hits.len() >= size {
            // A page the whole name filled continues with the first of the others: from before every key.
            let after = shown.unwrap_or_else(|| NameSearchKey::new(prefix, B256::ZERO));
            return Ok((hits, Some(SearchCursor::Name(after))));
        }
        let mut hit = name_hit(reader, &name, address, record.expires)?;
        hit.redirect = None;
        hits.push(hit);
        shown = Some(key);
    }
    // The scan's budget ran out: the next page goes on from where it stopped (a short page, never a lost name).
    Ok((hits, unfinished.map(SearchCursor::Name)))
}

/// The hit of the whole name asked for, when it resolves to an address.
fn whole_name_hit(reader: &Reader<'_>, whole: &ResolvedName) -> StoreResult<Option<Hit>> {
    let Some(address) = whole.address else { return Ok(None) };
    let expires = reader.name_record(namehash(&whole.name))?.and_then(|r| r.expires);
    Ok(Some(name_hit(reader, &whole.name, address, expires)?))
}

/// The first page's hits for the quick search and the redirect check, with the whole name asked for among them
/// even when more tokens match than the page holds (it would come after them).
fn first_hits(reader: &Reader<'_>, q: &str, name: Option<&ResolvedName>) -> StoreResult<Vec<Hit>> {
    let (mut hits, _) = find(reader, q, name, None, QUICK_HITS)?;
    // Only the whole name's hit carries its name (the others under the prefix skip it): read it only when missing.
    let missing = name.filter(|w| !hits.iter().any(|h| h.item["ens_info"]["name"] == w.name.as_str()));
    if let Some(whole) = missing.map(|w| whole_name_hit(reader, w)).transpose()?.flatten() {
        hits.truncate(QUICK_HITS - 1);
        hits.push(whole);
    }
    Ok(hits)
}

fn block_hit(hash: &B256, number: u64, timestamp: u64, kind: BlockKind) -> Hit {
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

/// `GET /api/v2/search?q=`: a page of hits; the next continues after the last text hit shown.
pub fn search(
    reader: &Reader<'_>,
    q: &str,
    name: Option<&ResolvedName>,
    page: Page<SearchCursor>,
) -> Result<Response<Body>, ApiError> {
    let (hits, next) = find(reader, q, name, page.after, page.size)?;
    let echo = [("next_page_params_type", json!("search")), ("q", json!(q))];
    let mut list = envelope(hits.into_iter().map(|h| h.item).collect(), next, page.size, &echo);
    // Blockscout's search cursor holds strings only.
    for value in list.next_page_params.iter_mut().flat_map(|params| params.values_mut()) {
        if !value.is_string() {
            *value = json!(value.to_string());
        }
    }
    Ok(ok(&list))
}

/// `GET /api/v2/search/quick?q=`: the first page's hits as a bare array.
pub fn quick(reader: &Reader<'_>, q: &str, name: Option<&ResolvedName>) -> Result<Response<Body>, ApiError> {
    // The header's search box asks as the user types: under three characters there is nothing to suggest yet.
    if q.trim().chars().count() < QUICK_MIN_CHARS {
        return Ok(ok(&json!([])));
    }
    let hits = first_hits(reader, q, name)?;
    Ok(ok(&hits.into_iter().map(|h| h.item).collect::<Vec<_>>()))
}

/// The shortest query the quick search answers.
const QUICK_MIN_CHARS: usize = 3;

/// `GET /api/v2/search/check-redirect?q=`: where an exact match leads.
pub fn redirect(reader: &Reader<'_>, q: &str, name: Option<&ResolvedName>) -> Result<Response<Body>, ApiError> {
    let hits = first_hits(reader, q, name)?;
    Ok(ok(&match hits.into_iter().find_map(|h| h.redirect) {
        Some((kind, parameter)) => json!({"redirect": true, "type": kind, "parameter": parameter}),
        None => json!({"redirect": false, "type": null, "parameter": null}),
    }))
}

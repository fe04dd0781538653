//! The account API under `/api/account/v2` (Blockscout's shapes, as its frontend calls them): user info,
//! sign-in with Ethereum, and the account's lists (private address and transaction tags, watchlist, API keys)
//! with create, read, update and delete. Every route but the sign-in ones needs an account token
//! ([`require_account`]); another account's item is a 403.

use crate::account::{check_name, now_ms, AccountError, Accounts, API_KEY_PREFIX};
use crate::api::auth::{require_account, COOKIE_NAME};
use crate::api::body::{json_response, ok, Body};
use crate::api::cursor::PosCursor;
use crate::api::json::{checksum, hash_hex, AddressJson};
use crate::api::request_body::RequestBody;
use crate::api::router::Page;
use crate::api::router::{parse_address, parse_hash, AccountRoute, ItemAction, ItemRef};
use crate::api::{read_body, ApiError, AppState};
use crate::store::keys::{BlockPos, SerialKey};
use crate::store::records::TxRecord;
use crate::store::records::{watch_flags as flag, AccountItem, ItemKind};
use crate::store::tables::Transactions;
use crate::store::tables::{ApiKeys, CoinBalanceNow};
use crate::store::{Order, Reader};
use alloy::primitives::Address;
use hyper::header::{HeaderValue, CONTENT_TYPE, HOST, ORIGIN, SET_COOKIE};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use std::net::IpAddr;

/// Largest request body of the account API (custom ABIs: [`MAX_ABI_BODY`]).
pub const MAX_BODY: usize = 16 << 10;
/// Largest request body of a custom ABI.
pub const MAX_ABI_BODY: usize = 128 << 10;

impl From<AccountError> for ApiError {
    fn from(e: AccountError) -> Self {
        match e {
            AccountError::NotFound => ApiError::NotFound,
            AccountError::LimitReached { limit } => {
                ApiError::invalid("name", format!("Limit reached: at most {limit} per account"))
            }
            AccountError::Invalid { field, detail } => ApiError::invalid(field, detail),
            AccountError::Store(e) => e.into(),
        }
    }
}

/// Serves one account route.
pub async fn serve(
    route: AccountRoute,
    req: Request<RequestBody>,
    state: &AppState,
    client: IpAddr,
) -> Result<Response<Body>, ApiError> {
    match route {
        AccountRoute::SiweMessage(address) => siwe_message(state, &req, client, address),
        AccountRoute::AuthenticateViaWallet => authenticate(state, req, client).await,
        AccountRoute::Csrf => Ok(ok(&json!({}))),
        AccountRoute::Logout => {
            if let Some(token) = crate::api::auth::presented_token(req.headers()) {
                let (accounts, token) = (state.accounts.clone(), token.to_owned());
                tokio::task::spawn_blocking(move || accounts.sign_out(&token))
                    .await
                    .map_err(|e| ApiError::Internal(format!("account task failed: {e}")))??;
            }
            let mut response = ok(&json!({"message": "OK"}));
            let expired = HeaderValue::from_str(&format!("{COOKIE_NAME}=; Path=/; SameSite=Lax; Max-Age=0"))
                .map_err(|e| ApiError::Internal(e.to_string()))?;
            response.headers_mut().insert(SET_COOKIE, expired);
            Ok(response)
        }
        AccountRoute::UserInfo => {
            let account = require_account(req.headers(), state, client)?;
            Ok(ok(&user_info(account)))
        }
        AccountRoute::Items { kind, action } => {
            let account = require_account(req.headers(), state, client)?;
            let accounts = state.accounts.clone();
            let body = match action {
                ItemAction::Create | ItemAction::Update(_) => {
                    let limit = if kind == ItemKind::CustomAbi { MAX_ABI_BODY } else { MAX_BODY };
                    Some(body_json(state, req, limit, client).await?)
                }
                _ => None,
            };
            tokio::task::spawn_blocking(move || items(&accounts, account, kind, action, body))
                .await
                .map_err(|e| ApiError::Internal(format!("account task failed: {e}")))?
        }
    }
}

fn user_info(account: Address) -> Value {
    json!({
        "name": null,
        "nickname": null,
        "email": null,
        "avatar": null,
        "address_hash": checksum(&account),
    })
}

fn siwe_message(
    state: &AppState,
    req: &Request<RequestBody>,
    client: IpAddr,
    address: Address,
) -> Result<Response<Body>, ApiError> {
    let domain = match &state.config.auth.siwe_domain {
        Some(domain) => domain.clone(),
        // Without a configured domain the message names the host asked, but only a loopback one asked from this
        // machine: a page elsewhere could otherwise fetch a message naming its own domain (or, with a forged Host
        // header, `localhost`) for a visitor's address, have the visitor's wallet sign it there, and sign in as the
        // visitor.
        None => {
            let host = req.headers().get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
            // A proxy in front (not configured as trusted) makes every client look local: forwarded requests
            // never count as local.
            let forwarded = ["x-forwarded-for", "forwarded"].iter().any(|h| req.headers().contains_key(*h));
            if !is_loopback_host(host) || !client.is_loopback() || forwarded {
                return Err(ApiError::Refused(format!(
                    "Sign-in with Ethereum on {host} needs the explorer's public host name: start it with --siwe-domain"
                )));
            }
            host.to_owned()
        }
    };
    let chain_id = state.store.reader().chain_identity()?.map_or(1, |(id, _)| id);
    let message = state
        .auth
        .nonces
        .issue(client, address, &domain, &format!("http://{domain}"), chain_id)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(ok(&json!({ "siwe_message": message })))
}

/// Whether a `Host` header names this machine: `localhost` or a loopback address, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => host
            .rsplit_once(':')
            .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

async fn authenticate(state: &AppState, req: Request<RequestBody>, client: IpAddr) -> Result<Response<Body>, ApiError> {
    let now = std::time::Instant::now();
    if let Some(seconds) = state.auth.failures.locked_for(client, now) {
        return Err(ApiError::AuthBudget(seconds));
    }
    // A page served over HTTPS (through a TLS proxy: this server speaks plain HTTP) gets a cookie browsers send
    // only over HTTPS.
    let secure = req.headers().get(ORIGIN).is_some_and(|o| o.as_bytes().starts_with(b"https://"));
    let body = body_json(state, req, MAX_BODY, client).await?;
    let field = |name: &'static str| {
        body.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::invalid(name, format!("Missing parameter: {name}")))
    };
    let (message, signature) = (field("message")?, field("signature")?);
    let signed = match state.auth.nonces.verify(message, signature) {
        Ok(signed) => signed,
        Err(e) => {
            state.auth.failures.record(client, now);
            return Err(ApiError::Refused(format!("Sign-in refused: {e}")));
        }
    };
    let lifetime = state.config.auth.session_lifetime;
    let expires_ms = now_ms() + lifetime.as_millis() as u64;
    let accounts = state.accounts.clone();
    let token =
        tokio::task::spawn_blocking(move || accounts.mint_token(signed.address, "wallet", Some(expires_ms), true))
            .await
            .map_err(|e| ApiError::Internal(format!("account task failed: {e}")))??;
    let mut info = user_info(signed.address);
    info["token"] = Value::String(token.clone());
    info["expires_at"] = Value::String(crate::api::json::iso_timestamp_ms(expires_ms));
    let mut response = ok(&info);
    // Not HttpOnly: Blockscout's frontend reads this cookie to know it is signed in (as Blockscout sets it). The
    // pages' Content-Security-Policy allows no inline or foreign script to read it instead.
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{COOKIE_NAME}={token}; Path=/; SameSite=Lax; Max-Age={}{secure}", lifetime.as_secs());
    let cookie = HeaderValue::from_str(&cookie).map_err(|e| ApiError::Internal(e.to_string()))?;
    response.headers_mut().insert(SET_COOKIE, cookie);
    Ok(response)
}

/// The request's JSON object body. It must say it is JSON: a page on another site can make a browser send a
/// form or plain text with the sign-in cookie, but not a JSON request without the CORS preflight this API does not
/// grant to credentials.
async fn body_json(
    state: &AppState,
    req: Request<RequestBody>,
    limit: usize,
    client: IpAddr,
) -> Result<Value, ApiError> {
    let declared = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let media = declared.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if media != "application/json" && !media.ends_with("+json") {
        return Err(ApiError::invalid("body", "Expected a JSON body (Content-Type: application/json)"));
    }
    let bytes = read_body(state, req, limit, client).await?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err(ApiError::invalid("body", "Expected a JSON object")),
    }
}

fn text<'a>(body: &'a Value, field: &'static str) -> Result<&'a str, ApiError> {
    body.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid(field, format!("Missing parameter: {field}")))
}

fn direction(settings: &Value, asset: &str, incoming: u16, outgoing: u16) -> Result<u16, ApiError> {
    let dirs = match settings.get(asset) {
        None | Some(Value::Null) => return Ok(0),
        Some(dirs @ Value::Object(_)) => dirs,
        Some(_) => return Err(ApiError::invalid("notification_settings", format!("{asset} must be an object"))),
    };
    let bit = |name: &str, value: u16| match dirs.get(name) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Bool(on)) => Ok(if *on { value } else { 0 }),
        Some(_) => Err(ApiError::invalid("notification_settings", format!("{asset}.{name} must be a boolean"))),
    };
    Ok(bit("incoming", incoming)? | bit("outcoming", outgoing)?)
}

/// The item a create or update body describes.
fn item_from_body(kind: ItemKind, body: &Value) -> Result<AccountItem, ApiError> {
    Ok(match kind {
        ItemKind::AddressTag => AccountItem::AddressTag {
            address: parse_address(text(body, "address_hash")?, "address_hash")?,
            name: check_name("name", text(body, "name")?)?,
        },
        ItemKind::TransactionTag => AccountItem::TransactionTag {
            hash: parse_hash(text(body, "transaction_hash")?, "transaction_hash")?,
            name: check_name("name", text(body, "name")?)?,
        },
        ItemKind::Watch => {
            let settings = body.get("notification_settings").cloned().unwrap_or(Value::Null);
            if !(settings.is_null() || settings.is_object()) {
                return Err(ApiError::invalid("notification_settings", "Expected an object"));
            }
            let flags = direction(&settings, "native", flag::NATIVE_IN, flag::NATIVE_OUT)?
                | direction(&settings, "ERC-20", flag::ERC20_IN, flag::ERC20_OUT)?
                | direction(&settings, "ERC-721", flag::ERC721_IN, flag::ERC721_OUT)?
                | direction(&settings, "ERC-404", flag::ERC404_IN, flag::ERC404_OUT)?;
            let email = match body.pointer("/notification_methods/email") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(on)) => *on,
                Some(_) => return Err(ApiError::invalid("notification_methods", "email must be a boolean")),
            };
            AccountItem::Watch {
                address: parse_address(text(body, "address_hash")?, "address_hash")?,
                name: check_name("name", text(body, "name")?)?,
                flags,
                email,
            }
        }
        ItemKind::ApiKey => AccountItem::ApiKey { key_id: 0, name: check_name("name", text(body, "name")?)? },
        ItemKind::CustomAbi => AccountItem::CustomAbi {
            address: parse_address(text(body, "contract_address_hash")?, "contract_address_hash")?,
            name: check_name("name", text(body, "name")?)?,
            abi: abi_text(body.get("abi"))?,
        },
    })
}

/// A custom ABI as compact JSON: an array of fragments, each an object with a string `type` (an ABI given as a
/// JSON string is read too); at most [`MAX_ABI_BYTES`].
fn abi_text(abi: Option<&Value>) -> Result<String, ApiError> {
    let invalid = |detail: &str| ApiError::invalid("abi", detail.to_owned());
    let parsed;
    let abi = match abi {
        Some(Value::String(text)) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|_| invalid("Invalid JSON"))?;
            &parsed
        }
        Some(value) => value,
        None => return Err(invalid("Missing parameter: abi")),
    };
    let fragments = abi.as_array().ok_or_else(|| invalid("Expected an array of ABI fragments"))?;
    if fragments.is_empty() || !fragments.iter().all(|f| f.get("type").is_some_and(Value::is_string)) {
        return Err(invalid("Every ABI fragment must be an object with a string `type`"));
    }
    let text = abi.to_string();
    if text.len() > crate::account::MAX_ABI_BYTES {
        return Err(invalid(&format!("At most {} bytes", crate::account::MAX_ABI_BYTES)));
    }
    let json = serde_json::from_value::<alloy::json_abi::JsonAbi>(abi.clone())
        .map_err(|e| invalid(&format!("Not an ABI: {e}")))?;
    let undecodable = crate::contracts::abi::Abi::undecodable(&json);
    if !undecodable.is_empty() {
        let list = undecodable.iter().take(5).map(String::as_str).collect::<Vec<_>>().join(", ");
        return Err(invalid(&format!(
            "Types that do not resolve or are too large to decode (fixed-size arrays of over 16384 values, or over 16 levels of arrays and tuples): {list}"
        )));
    }
    Ok(text)
}

fn items(
    accounts: &Accounts,
    account: Address,
    kind: ItemKind,
    action: ItemAction,
    body: Option<Value>,
) -> Result<Response<Body>, ApiError> {
    let body = body.unwrap_or(Value::Null);
    let item_id = |named: ItemRef| match named {
        ItemRef::Id(id) => Ok(id),
        ItemRef::ApiKey(key_id) => accounts.api_key_item(account, key_id),
    };
    match action {
        ItemAction::List { size, after } => {
            let mut rows = accounts.items(account, kind, after, size + 1)?;
            let more = rows.len() > size;
            rows.truncate(size);
            let next = match rows.last() {
                Some((id, _)) if more => json!({"id": id, "items_count": size}),
                _ => Value::Null,
            };
            let items =
                rows.iter().map(|(id, item)| render(accounts, *id, item, None)).collect::<Result<Vec<_>, _>>()?;
            // Blockscout answers these two (bounded by their per-account limits) as bare arrays.
            if kind == ItemKind::ApiKey || kind == ItemKind::CustomAbi {
                return Ok(ok(&items));
            }
            Ok(ok(&json!({"items": items, "next_page_params": next})))
        }
        ItemAction::Get(named) => {
            let id = item_id(named)?;
            Ok(ok(&render(accounts, id, &accounts.item(account, kind, id)?, None)?))
        }
        ItemAction::Create if kind == ItemKind::ApiKey => {
            let AccountItem::ApiKey { name, .. } = item_from_body(kind, &body)? else { unreachable!("an API key") };
            let (id, key) = accounts.create_api_key(account, &name)?;
            let item = accounts.item(account, kind, id)?;
            Ok(ok(&render(accounts, id, &item, Some(key))?))
        }
        ItemAction::Create => {
            let item = item_from_body(kind, &body)?;
            let id = accounts.add_item(account, item.clone(), |other| same_target(other, &item))?;
            Ok(ok(&render(accounts, id, &item, None)?))
        }
        ItemAction::Update(named) => {
            let id = item_id(named)?;
            let mut item = item_from_body(kind, &body)?;
            let current = accounts.item(account, kind, id)?;
            if let (AccountItem::ApiKey { key_id, .. }, AccountItem::ApiKey { key_id: new, .. }) = (&current, &mut item)
            {
                *new = *key_id;
            }
            accounts.update_item(account, id, item.clone(), |other| same_target(other, &item))?;
            Ok(ok(&render(accounts, id, &item, None)?))
        }
        ItemAction::Delete(named) => {
            let id = item_id(named)?;
            accounts.delete_item(account, kind, id)?;
            Ok(json_response(StatusCode::OK, &json!({"message": "OK"})))
        }
    }
}

/// Whether two items are about the same address or transaction (one tag or watch entry each).
fn same_target(a: &AccountItem, b: &AccountItem) -> bool {
    match (a, b) {
        (AccountItem::AddressTag { address: x, .. }, AccountItem::AddressTag { address: y, .. }) => x == y,
        (AccountItem::TransactionTag { hash: x, .. }, AccountItem::TransactionTag { hash: y, .. }) => x == y,
        (AccountItem::Watch { address: x, .. }, AccountItem::Watch { address: y, .. }) => x == y,
        (AccountItem::CustomAbi { address: x, .. }, AccountItem::CustomAbi { address: y, .. }) => x == y,
        _ => false,
    }
}

fn address_object(accounts: &Accounts, address: &Address) -> Result<AddressJson, ApiError> {
    Ok(super::contracts(&accounts.store().reader(), [*address])?.address(address))
}

fn directions(flags: u16, incoming: u16, outgoing: u16) -> Value {
    json!({"incoming": flags & incoming != 0, "outcoming": flags & outgoing != 0})
}

/// Most token holdings a watchlist entry counts (Blockscout's cap; more sets `tokens_overflow`).
const WATCHED_TOKENS: usize = 150;

/// The JSON of one item; `key` is an API key's full text, shown only in the answer that created it.
fn render(accounts: &Accounts, id: u64, item: &AccountItem, key: Option<String>) -> Result<Value, ApiError> {
    Ok(match item {
        AccountItem::AddressTag { address, name } => json!({
            "id": id,
            "address_hash": checksum(address),
            "address": address_object(accounts, address)?,
            "name": name,
        }),
        AccountItem::TransactionTag { hash, name } => json!({
            "id": id,
            "transaction_hash": hash_hex(hash),
            "name": name,
        }),
        AccountItem::Watch { address, name, flags, email } => {
            let reader = accounts.store().reader();
            let balance = reader.get::<CoinBalanceNow>(address)?.map(|b| b.value.to_string());
            let tokens = super::tokens::holdings_count(&reader, *address, WATCHED_TOKENS + 1)?;
            json!({
            "id": id,
            "address_hash": checksum(address),
            "address": address_object(accounts, address)?,
            "name": name,
            "notification_settings": {
                "native": directions(*flags, flag::NATIVE_IN, flag::NATIVE_OUT),
                "ERC-20": directions(*flags, flag::ERC20_IN, flag::ERC20_OUT),
                "ERC-721": directions(*flags, flag::ERC721_IN, flag::ERC721_OUT),
                "ERC-404": directions(*flags, flag::ERC404_IN, flag::ERC404_OUT),
            },
            "notification_methods": {"email": email},
            "address_balance": balance,
            "exchange_rate": null,
            "tokens_count": tokens.min(WATCHED_TOKENS),
            "tokens_fiat_value": null,
            "tokens_overflow": tokens > WATCHED_TOKENS,
            })
        }
        AccountItem::CustomAbi { address, name, abi } => json!({
            "id": id,
            "contract_address_hash": checksum(address),
            "contract_address": address_object(accounts, address)?,
            "name": name,
            "abi": serde_json::from_str::<Value>(abi).unwrap_or(Value::Null),
        }),
        AccountItem::ApiKey { key_id, name } => {
            let created = accounts.store().reader().get::<ApiKeys>(&SerialKey(*key_id))?.map(|r| r.created_ms);
            json!({
                "id": id,
                "api_key": key.unwrap_or_else(|| format!("{API_KEY_PREFIX}_{key_id:016x}_…")),
                "name": name,
                "inserted_at": created.map(crate::api::json::iso_timestamp_ms),
            })
        }
    })
}

/// The addresses on the caller's watchlist (the caller must present a valid token).
pub fn watched(headers: &hyper::HeaderMap, state: &AppState, client: IpAddr) -> Result<Vec<Address>, ApiError> {
    let account = require_account(headers, state, client)?;
    let items = state.accounts.items(account, ItemKind::Watch, None, crate::account::MAX_WATCHLIST)?;
    Ok(items
        .into_iter()
        .filter_map(|(_, item)| if let AccountItem::Watch { address, .. } = item { Some(address) } else { None })
        .collect())
}

/// Transactions of any of `watched`, newest first, after the page's cursor: a page as an envelope
/// (`/transactions/watchlist`) or a bare array (the main page's six).
pub fn watchlist_transactions(
    reader: &Reader<'_>,
    watched: &[Address],
    page: Page<PosCursor>,
    envelope: bool,
) -> Result<Response<Body>, ApiError> {
    let mut positions = std::collections::BTreeSet::new();
    for address in watched {
        for row in reader.address_txs(*address, page.after.map(|c| c.0), Order::NewestFirst).take(page.size + 1) {
            let pos = row?.0.pos;
            positions.insert(std::cmp::Reverse((pos.block, pos.index)));
        }
    }
    let positions: Vec<BlockPos> =
        positions.into_iter().take(page.size + 1).map(|p| BlockPos { block: p.0 .0, index: p.0 .1 }).collect();
    let txs = reader.multi_get::<Transactions>(&positions)?;
    let mut rows: Vec<(BlockPos, TxRecord)> =
        positions.into_iter().zip(txs).filter_map(|(pos, tx)| Some((pos, tx?))).collect();
    let more = rows.len() > page.size;
    rows.truncate(page.size);
    if !envelope {
        return Ok(ok(&super::tx_items(reader, &rows)?));
    }
    let next = if more { rows.last().map(|(pos, _)| *pos) } else { None };
    let page_rows = super::PageRows { items: rows, next };
    Ok(ok(&super::tx_envelope(reader, page_rows, page.size, &[])?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_become_items_or_422() {
        let tag = item_from_body(
            ItemKind::AddressTag,
            &json!({"address_hash": "0x000000000000000000000000000000000000dead", "name": " cold wallet "}),
        )
        .unwrap();
        assert!(matches!(tag, AccountItem::AddressTag { ref name, .. } if name == "cold wallet"));
        let watch = |settings: Value| json!({"address_hash": "0x000000000000000000000000000000000000dead", "name": "w", "notification_settings": settings});
        let bad = [
            (ItemKind::AddressTag, json!({"address_hash": "0x12", "name": "x"}), "address_hash"),
            (ItemKind::AddressTag, json!({"address_hash": "0x000000000000000000000000000000000000dead"}), "name"),
            (ItemKind::TransactionTag, json!({"transaction_hash": "0x12", "name": "x"}), "transaction_hash"),
            (ItemKind::Watch, watch(json!({"native": {"incoming": "yes"}})), "notification_settings"),
            (ItemKind::Watch, watch(json!({"native": "x"})), "notification_settings"),
            (ItemKind::Watch, watch(json!({"ERC-20": []})), "notification_settings"),
            (ItemKind::ApiKey, json!({"name": "x".repeat(36)}), "name"),
        ];
        for (kind, body, param) in bad {
            let err = item_from_body(kind, &body).unwrap_err();
            assert!(matches!(err, ApiError::InvalidParam { param: p, .. } if p == param), "{body}: {err:?}");
            assert_eq!(err.status(), StatusCode::UNPROCESSABLE_ENTITY);
        }
        let watch = item_from_body(
            ItemKind::Watch,
            &json!({"address_hash": "0x000000000000000000000000000000000000dead", "name": "w",
                    "notification_settings": {"native": {"incoming": true, "outcoming": false}, "ERC-20": {"outcoming": true}},
                    "notification_methods": {"email": true}}),
        )
        .unwrap();
        assert!(
            matches!(watch, AccountItem::Watch { flags, email: true, .. } if flags == flag::NATIVE_IN | flag::ERC20_OUT)
        );
    }
}

//! Who is asking: the account token check every write route calls ([`require_account`]), the optional viewer of
//! read routes ([`viewer`]), a per-IP budget of failed authentications, and the personalisation of read
//! responses with the viewer's own private tags and watchlist names ([`personalize`]).
//!
//! A token is sent as `Authorization: Bearer <token>` or as the `_explorer_key` cookie set by the wallet
//! sign-in. Tokens are never logged: only the outcome is.

use super::error::ApiError;
use super::AppState;
use crate::account::{Personal, API_KEY_PREFIX};
use crate::api::json::checksum;
use alloy::primitives::{Address, B256};
use hyper::header::{HeaderMap, AUTHORIZATION, COOKIE};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Name of the cookie that carries the account token in browsers.
pub const COOKIE_NAME: &str = "_explorer_key";

/// Settings of authentication.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// Failed authentications an IP may make per [`AuthConfig::failure_window`] before every authenticated
    /// request from it is refused with 429 until the window ends.
    pub failure_budget: u32,
    /// Window of the failure budget.
    pub failure_window: Duration,
    /// The domain sign-in messages name (default: the `Host` of the request asking for the message).
    pub siwe_domain: Option<String>,
    /// Lifetime of a sign-in message.
    pub siwe_lifetime: Duration,
    /// Most sign-in messages outstanding at once.
    pub siwe_max_outstanding: usize,
    /// Lifetime of a token obtained by signing in.
    pub session_lifetime: Duration,
    /// Requests per second of one API key (its own bucket, instead of the client IP's).
    pub api_key_per_second: u32,
    /// Burst of one API key's bucket.
    pub api_key_burst: u32,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            failure_budget: 20,
            failure_window: Duration::from_secs(60),
            siwe_domain: None,
            siwe_lifetime: Duration::from_secs(300),
            siwe_max_outstanding: 10_000,
            session_lifetime: Duration::from_secs(30 * 86_400),
            api_key_per_second: 500,
            api_key_burst: 1000,
        }
    }
}

/// Most IPs whose failures are tracked at once (older windows are dropped first).
const MAX_TRACKED_IPS: usize = 100_000;

/// Failed authentications per client IP in fixed windows.
#[derive(Debug)]
pub struct FailureBudget {
    budget: u32,
    window: Duration,
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl FailureBudget {
    /// `budget` failures per `window`.
    pub fn new(budget: u32, window: Duration) -> Self {
        FailureBudget { budget, window, failures: Mutex::new(HashMap::new()) }
    }

    /// Whether `ip` has used up its budget: the whole seconds until its window ends (at least 1), if it has.
    pub fn locked_for(&self, ip: IpAddr, now: Instant) -> Option<u64> {
        let ip = super::limits::client_bucket(ip);
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let (count, start) = failures.get(&ip)?;
        let left = self.window.checked_sub(now.duration_since(*start)).filter(|left| !left.is_zero())?;
        (*count >= self.budget).then(|| left.as_secs() + u64::from(left.subsec_nanos() > 0))
    }

    /// Counts one failure of `ip`.
    pub fn record(&self, ip: IpAddr, now: Instant) {
        let ip = super::limits::client_bucket(ip);
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() >= MAX_TRACKED_IPS && !failures.contains_key(&ip) {
            failures.retain(|_, (_, start)| now.duration_since(*start) < self.window);
            if failures.len() >= MAX_TRACKED_IPS {
                failures.clear();
            }
        }
        let entry = failures.entry(ip).or_insert((0, now));
        if now.duration_since(entry.1) >= self.window {
            *entry = (0, now);
        }
        entry.0 = entry.0.saturating_add(1);
    }
}

/// The account token a request presents: `Authorization: Bearer …`, else the `_explorer_key` cookie.
pub fn presented_token(headers: &HeaderMap) -> Option<&str> {
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme is case-insensitive (RFC 9110).
        .and_then(|v| v.get(..7).filter(|scheme| scheme.eq_ignore_ascii_case("bearer ")).map(|_| &v[7..]))
        .map(str::trim);
    bearer.or_else(|| {
        headers.get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE_NAME).then_some(value.trim())
        })
    })
}

/// Whether a request carries any credential (token, cookie or API key): its response must not be cached by
/// shared caches.
pub fn carries_credentials(headers: &HeaderMap, query: Option<&str>) -> bool {
    headers.contains_key(AUTHORIZATION)
        || headers.contains_key(COOKIE)
        || headers.contains_key(API_KEY_HEADER)
        || query.is_some_and(|q| q.split('&').any(|p| p.starts_with("apikey=")))
}

/// Header that may carry an API key (the `apikey` query parameter works too).
pub const API_KEY_HEADER: &str = "x-api-key";

/// The account a request acts for. Every write route calls this first:
/// - no token → 401 `{"message": "Unauthorized"}`;
/// - a token that is malformed, unknown, expired or revoked → 401, and one failure counted against the client IP;
/// - a client IP past its failure budget → 429 `{"message": "Too many failed authentications"}`, even with a
///   valid token, until its window ends.
///
/// Objects of another account are answered as missing (404), like objects that do not exist.
pub fn require_account(headers: &HeaderMap, state: &AppState, client: IpAddr) -> Result<Address, ApiError> {
    if let Some(seconds) = state.auth.failures.locked_for(client, Instant::now()) {
        return Err(ApiError::AuthBudget(seconds));
    }
    token_account(presented_token(headers).ok_or(ApiError::Unauthorized)?, state, client)
}

/// The account of `token`, under the client's failure budget: past it 429 without a look at the token; an invalid
/// token is 401 and counts as a failure.
pub fn token_account(token: &str, state: &AppState, client: IpAddr) -> Result<Address, ApiError> {
    let now = Instant::now();
    if let Some(seconds) = state.auth.failures.locked_for(client, now) {
        return Err(ApiError::AuthBudget(seconds));
    }
    match state.accounts.verify_token(token) {
        Ok(Some(account)) => Ok(account),
        Ok(None) => {
            state.auth.failures.record(client, now);
            tracing::debug!(%client, "refused an invalid account token");
            Err(ApiError::Unauthorized)
        }
        Err(e) => Err(ApiError::Internal(e.to_string())),
    }
}

/// The account of a read request, if it presents a token: `None` without one. An invalid token counts as a
/// failure and the request is served anonymously; past the failure budget it is refused with 429.
pub fn viewer(headers: &HeaderMap, state: &AppState, client: IpAddr) -> Result<Option<Address>, ApiError> {
    if presented_token(headers).is_none() {
        return Ok(None);
    }
    match require_account(headers, state, client) {
        Ok(account) => Ok(Some(account)),
        Err(ApiError::Unauthorized) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An API key presented by `apikey=` or the `x-api-key` header, if any.
pub fn presented_api_key<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<std::borrow::Cow<'a, str>> {
    if let Some(key) = headers.get(API_KEY_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(key.trim().into());
    }
    let pair = query?.split('&').find_map(|p| p.strip_prefix("apikey="))?;
    Some(super::query::percent_decode(pair).into())
}

/// Whether `text` looks like one of our API keys (cheap check before a store read).
pub fn looks_like_api_key(text: &str) -> bool {
    text.starts_with(API_KEY_PREFIX)
}

/// Whether a response body mentions any address or transaction of `personal` (one linear pass over the `0x…` hex
/// strings in it), so answers that show none of them skip the JSON rewrite.
pub fn mentions(body: &[u8], personal: &Personal) -> bool {
    let mut i = 0;
    while i + 2 <= body.len() {
        if body[i] != b'0' || body[i + 1] != b'x' {
            i += 1;
            continue;
        }
        let start = i + 2;
        let end = start + body[start..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
        let hex = &body[start..end];
        let found = match hex.len() {
            40 => std::str::from_utf8(hex).ok().and_then(|h| h.parse::<Address>().ok()).is_some_and(|a| {
                personal.address_tags.contains_key(&a)
                    || personal.watched.contains_key(&a)
                    || personal.custom_abis.contains_key(&a)
            }),
            64 => std::str::from_utf8(hex)
                .ok()
                .and_then(|h| h.parse::<B256>().ok())
                .is_some_and(|h| personal.transaction_tags.contains_key(&h)),
            _ => false,
        };
        if found {
            return true;
        }
        i = end.max(i + 1);
    }
    false
}

fn tag_json(address: &str, name: &str) -> Value {
    json!({"address_hash": address, "display_name": name, "label": name})
}

/// Writes the viewer's own data into a read response: `private_tags` and `watchlist_names` of every address
/// object it tagged or watches, `transaction_tag` of every transaction it tagged, `watchlist_address_id` of an
/// address it watches, `private_tags` on address search results, and calls and logs of contracts it gave an ABI
/// for decoded with that ABI where nothing else decoded them. Nothing else changes.
pub fn personalize(value: &mut Value, personal: &Personal) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| personalize(v, personal)),
        Value::Object(fields) => {
            let hash = fields.get("hash").and_then(Value::as_str).map(str::to_owned);
            if let Some(hash) = hash {
                if let Ok(address) = hash.parse::<Address>() {
                    if hash.len() == 42 && fields.contains_key("private_tags") {
                        mark_address(fields, address, personal);
                    }
                } else if let Ok(tx) = hash.parse::<B256>() {
                    if let (Some(name), true) =
                        (personal.transaction_tags.get(&tx), fields.contains_key("transaction_tag"))
                    {
                        fields.insert("transaction_tag".into(), Value::String(name.clone()));
                    }
                }
            }
            let search_hit = matches!(fields.get("type").and_then(Value::as_str), Some("address" | "contract"));
            if search_hit {
                if let Some(address) = fields.get("address_hash").and_then(Value::as_str).and_then(|a| a.parse().ok()) {
                    if let Some(name) = personal.address_tags.get(&address) {
                        let tag = tag_json(&checksum(&address), name);
                        fields.insert("private_tags".into(), Value::Array(vec![tag]));
                    }
                }
            }
            decode_with_custom_abi(fields, personal);
            fields.values_mut().for_each(|v| personalize(v, personal));
        }
        _ => {}
    }
}

/// The `hash` of the address object in `field`, if any.
fn address_in(fields: &serde_json::Map<String, Value>, field: &str) -> Option<Address> {
    fields.get(field)?.get("hash")?.as_str()?.parse().ok()
}

fn hex_bytes(value: Option<&Value>) -> Option<Vec<u8>> {
    alloy::hex::decode(value?.as_str()?).ok()
}

/// A call to (a transaction: `to`, `raw_input`, `decoded_input`) or a log of (`address`, `topics`, `data`,
/// `decoded`) a contract the viewer gave an ABI for, decoded with it where no other ABI could.
fn decode_with_custom_abi(fields: &mut serde_json::Map<String, Value>, personal: &Personal) {
    if personal.custom_abis.is_empty() {
        return;
    }
    if fields.get("decoded_input").is_some_and(Value::is_null) {
        let abi = address_in(fields, "to").and_then(|to| personal.custom_abis.get(&to)?.abi());
        if let (Some(abi), Some(input)) = (abi, hex_bytes(fields.get("raw_input"))) {
            if let (Some(decoded), Some(function)) = (abi.decode_input(&input), abi.function(&input)) {
                fields.insert("method".into(), Value::String(function.name.clone()));
                fields.insert("decoded_input".into(), decoded);
            }
        }
    }
    if fields.get("decoded").is_some_and(Value::is_null) {
        let abi = address_in(fields, "address").and_then(|a| personal.custom_abis.get(&a)?.abi());
        let topics: Option<Vec<B256>> = fields
            .get("topics")
            .and_then(Value::as_array)
            .map(|topics| topics.iter().filter_map(|t| t.as_str()?.parse().ok()).collect());
        if let (Some(abi), Some(topics), Some(data)) = (abi, topics, hex_bytes(fields.get("data"))) {
            if let Some(decoded) = abi.decode_log(&topics, &data) {
                fields.insert("decoded".into(), decoded);
            }
        }
    }
}

fn mark_address(fields: &mut serde_json::Map<String, Value>, address: Address, personal: &Personal) {
    if let Some(name) = personal.address_tags.get(&address) {
        fields.insert("private_tags".into(), Value::Array(vec![tag_json(&checksum(&address), name)]));
    }
    if let Some((id, name)) = personal.watched.get(&address) {
        fields.insert("watchlist_names".into(), json!([{"display_name": name, "label": name}]));
        if fields.contains_key("watchlist_address_id") {
            fields.insert("watchlist_address_id".into(), json!(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn tokens_come_from_the_bearer_header_or_the_cookie() {
        let mut headers = HeaderMap::new();
        assert_eq!(presented_token(&headers), None);
        headers.insert(COOKIE, HeaderValue::from_static("a=b; _explorer_key=rst_cookie; c=d"));
        assert_eq!(presented_token(&headers), Some("rst_cookie"));
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer rst_header"));
        assert_eq!(presented_token(&headers), Some("rst_header"));
        for scheme in ["bearer", "BEARER", "bEaReR"] {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(&format!("{scheme} rst_header")).unwrap());
            assert_eq!(presented_token(&headers), Some("rst_header"), "{scheme}");
        }
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Basic rst_header"));
        assert_eq!(presented_token(&headers), Some("rst_cookie"), "another scheme is no token: the cookie is");
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer rst_header"));
        assert!(carries_credentials(&headers, None));
        assert!(carries_credentials(&HeaderMap::new(), Some("a=1&apikey=x")));
        assert!(!carries_credentials(&HeaderMap::new(), Some("a=1")));
    }

    #[test]
    fn the_failure_budget_refills_after_its_window() {
        let budget = FailureBudget::new(2, Duration::from_secs(60));
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        budget.record(ip, t0);
        assert_eq!(budget.locked_for(ip, t0), None);
        budget.record(ip, t0);
        assert_eq!(budget.locked_for(ip, t0), Some(60), "the whole window is left");
        assert_eq!(budget.locked_for(ip, t0 + Duration::from_millis(59_500)), Some(1), "rounded up");
        assert_eq!(budget.locked_for(IpAddr::from([10, 0, 0, 2]), t0), None, "per IP");
        assert_eq!(budget.locked_for(ip, t0 + Duration::from_secs(60)), None);
    }

    #[test]
    fn mentions_finds_tagged_hashes_only() {
        let mut personal = Personal::default();
        personal.address_tags.insert(Address::repeat_byte(0xaa), "a".into());
        personal.transaction_tags.insert(B256::repeat_byte(0xcc), "t".into());
        let body = |hex: String| format!(r#"{{"items":[{{"hash":"0x{hex}","n":"0x12"}}]}}"#).into_bytes();
        assert!(mentions(&body("AA".repeat(20)), &personal), "any letter case");
        assert!(mentions(&body("cc".repeat(32)), &personal));
        assert!(!mentions(&body("bb".repeat(20)), &personal));
        assert!(!mentions(&body("aa".repeat(32)), &personal), "a 32-byte hash is not an address");
        assert!(!mentions(b"0x", &personal));
    }

    #[test]
    fn personalisation_marks_only_the_viewers_own_objects() {
        let tagged = Address::repeat_byte(0xaa);
        let other = Address::repeat_byte(0xbb);
        let tx = B256::repeat_byte(0xcc);
        let mut personal = Personal::default();
        personal.address_tags.insert(tagged, "mine".into());
        personal.watched.insert(tagged, (7, "watched".into()));
        personal.transaction_tags.insert(tx, "payday".into());
        let address = |a: &Address| json!({"hash": checksum(a), "private_tags": [], "watchlist_names": []});
        let mut body = json!({"items": [{
            "hash": format!("{tx:#x}"), "transaction_tag": null, "from": address(&tagged), "to": address(&other)
        }]});
        personalize(&mut body, &personal);
        let item = &body["items"][0];
        assert_eq!(item["transaction_tag"], "payday");
        assert_eq!(item["from"]["private_tags"][0]["display_name"], "mine");
        assert_eq!(item["from"]["watchlist_names"][0]["label"], "watched");
        assert_eq!(item["to"]["private_tags"], json!([]));
    }
}

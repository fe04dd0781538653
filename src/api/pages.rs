//! The explorer pages over HTTP: Blockscout's page URLs (`/`, `/blocks`, `/block/:id`, `/txs`, `/tx/:hash`,
//! `/address/:a`, `/tokens`, `/token/:t`, `/token/:t/instance/:id`, `/search-results?q=`) and the embedded assets.
//!
//! Each page reads its data with the REST handlers themselves (the same named queries, cursors and JSON), parses
//! the request's query string as the matching `/api/v2` route does (so a page's `next_page_params` link is the
//! API's cursor), and renders with `crate::ui`. Unknown pages are an HTML 404. Every page carries a strict
//! Content-Security-Policy: scripts, styles, images and connections from this origin only, no inline script.

use super::body::Body;
use super::body::{as_values, JsonValue};
use super::error::ApiError;
use super::rest::{addresses, blocks, search, smart_contracts, stats, tokens, traces, transactions};
use super::router::Route;
use super::AppState;
use crate::store::Reader;
use crate::ui::{self, pages, pages::List, Ctx};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use hyper::{HeaderMap, Method, Response, StatusCode};
use maud::Markup;
use serde_json::Value;
use tokio::time::Instant;

/// The Content-Security-Policy of every page.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Whether `path` may be a page: everything outside the API, the socket and the health checks.
pub fn is_page_path(path: &str) -> bool {
    !["/api", "/socket", "/health"].iter().any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

/// Serves the page or asset at `path` (a GET or HEAD that no API route took).
pub async fn serve(state: &AppState, path: &str, query: Option<&str>, headers: &HeaderMap) -> Response<Body> {
    if let Some(asset) = ui::assets::find(path) {
        return asset_response(asset, headers);
    }
    if path.trim_end_matches('/') == "/search-results" {
        if let Some(location) = exact_match(state, query).await {
            let mut response = html_response(StatusCode::FOUND, pages::moved(&location));
            if let Ok(value) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(hyper::header::LOCATION, value);
            }
            return response;
        }
    }
    let started = std::time::Instant::now();
    let ctx = Ctx { now: super::rest::unix_now() };
    let mut response = match render(state, ctx, path, query).await {
        Ok(markup) => html_response(StatusCode::OK, markup),
        Err(ApiError::NotFound | ApiError::NoRoute) => html_response(
            StatusCode::NOT_FOUND,
            pages::not_found("There is no page here, or the index does not have it."),
        ),
        Err(e) => html_response(e.status(), pages::failed(&e.to_string())),
    };
    // The server's own time for the page (reads and rendering), for browsers' developer tools and the load bench.
    let timing = format!("page;dur={:.3}", started.elapsed().as_secs_f64() * 1e3);
    if let Ok(value) = HeaderValue::from_str(&timing) {
        response.headers_mut().insert("server-timing", value);
    }
    response
}

/// The answer to a page request refused by the rate limit: a page saying so (the `Retry-After` header is added with
/// the other rate-limit headers).
pub fn rate_limited() -> Response<Body> {
    html_response(
        StatusCode::TOO_MANY_REQUESTS,
        pages::failed("Too many requests from your address: wait a moment, then reload."),
    )
}

/// The answer to a page that was not built within the request timeout: a page saying so, with the API's status.
pub fn timed_out() -> Response<Body> {
    html_response(ApiError::Timeout.status(), pages::failed("The page took too long to build: reload it in a moment."))
}

fn asset_response(asset: &'static ui::assets::Asset, headers: &HeaderMap) -> Response<Body> {
    let fresh = headers.get_all(IF_NONE_MATCH).iter().any(|v| etag_matches(v.as_bytes(), &asset.etag));
    let mut response = Response::new(if fresh { Body::default() } else { Body::new(Bytes::from_static(asset.bytes)) });
    if fresh {
        *response.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    if let Ok(etag) = HeaderValue::from_str(&asset.etag) {
        h.insert(ETAG, etag);
    }
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    response
}

/// Whether an `If-None-Match` value names `etag`: `*`, or a list of tags compared weakly (RFC 9110 §13.1.2: a `W/`
/// prefix is ignored).
fn etag_matches(header: &[u8], etag: &str) -> bool {
    let Ok(header) = std::str::from_utf8(header) else { return false };
    let bare = etag.trim_start_matches("W/");
    header.trim() == "*" || header.split(',').any(|tag| tag.trim().trim_start_matches("W/") == bare)
}

/// Removes Unicode's bidirectional embedding, override and isolate controls: chain text (metadata, revert strings,
/// decoded values) could otherwise show reversed and pass for other text; no page template uses them.
fn strip_bidi_controls(page: &mut String) {
    let control = |c: char| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    if page.contains(control) {
        page.retain(|c| !control(c));
    }
}

fn html_response(status: StatusCode, markup: Markup) -> Response<Body> {
    let mut page = markup.into_string();
    strip_bidi_controls(&mut page);
    let mut response = Response::new(Body::new(Bytes::from(page)));
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The page a search leads to directly (a transaction, block or address hash, or a block number), as
/// `/search/check-redirect` decides.
async fn exact_match(state: &AppState, query: Option<&str>) -> Option<String> {
    let Ok(Route::SearchRedirect(q)) = api_route("/api/v2/search/check-redirect", query) else {
        return None;
    };
    let deadline = Instant::now() + state.config.request_timeout;
    let name = search::named(state, &q).await;
    let answer = json(read(state, deadline, move |r| search::redirect(r, &q, name.as_ref())).await).await.ok()?;
    let parameter = answer["parameter"].as_str()?;
    // Only hex hashes and numbers go into the header.
    if !parameter.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    match answer["type"].as_str()? {
        "transaction" => Some(format!("/tx/{parameter}")),
        "block" => Some(format!("/block/{parameter}")),
        "address" => Some(format!("/address/{parameter}")),
        _ => None,
    }
}

/// Runs the synchronous handler calls of `f` on a store reader as the API does, with their answers as values.
async fn read<T, F>(state: &AppState, deadline: Instant, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Reader<'_>) -> Result<T, ApiError> + Send + 'static,
{
    super::blocking_read(state, deadline, move |reader| as_values(|| f(reader))).await
}

/// The JSON value of a handler's answer: the value itself when it was built by [`read`] or [`as_values`], else
/// its body parsed (the asynchronous handlers).
async fn json(answer: Result<Response<Body>, ApiError>) -> Result<Value, ApiError> {
    let mut response = answer?;
    if let Some(JsonValue(value)) = response.extensions_mut().remove::<JsonValue>() {
        return Ok(value);
    }
    let body = response.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    serde_json::from_slice(&body).map_err(|e| ApiError::Internal(format!("handler answered with bad JSON: {e}")))
}

/// The API route a page's data comes from, parsed from the page's own query string (cursor, filters).
fn api_route(path: &str, query: Option<&str>) -> Result<Route, ApiError> {
    Route::parse(&Method::GET, path, query)
}

/// The `tab` parameter of a page's query.
fn tab(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("tab="))
}

/// The data a list page's handler answers for `route`.
async fn list(state: &AppState, deadline: Instant, route: Route) -> Result<Value, ApiError> {
    let answer = match route {
        Route::Blocks { kind, page } => read(state, deadline, move |r| blocks::list(r, kind, page)).await,
        Route::BlockTransactions { id, kinds, page } => {
            read(state, deadline, move |r| blocks::transactions(r, id, kinds, page)).await
        }
        Route::Transactions { kinds, methods, page } => {
            read(state, deadline, move |r| transactions::list(r, kinds, methods, page)).await
        }
        Route::PendingTransactions { page } => read(state, deadline, move |r| transactions::pending(r, page)).await,
        Route::TransactionTokenTransfers { hash, kinds, page } => {
            read(state, deadline, move |r| tokens::of_transaction(r, hash, kinds.as_deref(), page)).await
        }
        Route::TransactionInternal { hash, page } => {
            read(state, deadline, move |r| traces::of_transaction(r, hash, page)).await
        }
        Route::TransactionLogs { hash, page } => {
            read(state, deadline, move |r| transactions::logs(r, hash, page)).await
        }
        Route::StateChanges { hash, offset } => traces::state_changes(state, hash, offset).await,
        Route::RawTrace(hash) => traces::raw_trace(state, hash).await,
        Route::AddressTransactions { address, direction, ascending, page } => {
            read(state, deadline, move |r| addresses::transactions(r, address, direction, ascending, page)).await
        }
        Route::AddressTransactionsByAmount { address, direction, by, ascending, page } => {
            read(state, deadline, move |r| addresses::transactions_by(r, address, direction, by, ascending, page)).await
        }
        Route::AddressTokenTransfers { address, direction, kinds, token, page } => {
            read(state, deadline, move |r| tokens::of_address(r, address, direction, &kinds, token, page)).await
        }
        Route::AddressTokens { address, kinds, page } => {
            read(state, deadline, move |r| tokens::holdings(r, address, &kinds, page)).await
        }
        Route::AddressInternal { address, direction, page } => {
            read(state, deadline, move |r| traces::of_address(r, address, direction, page)).await
        }
        Route::AddressLogs { address, topic, page } => {
            read(state, deadline, move |r| addresses::logs(r, address, topic, page)).await
        }
        Route::SmartContract(address) => smart_contracts::detail(state, address).await,
        Route::Tokens { kinds, q, fewest_first, page } => {
            read(state, deadline, move |r| tokens::list(r, &kinds, q.as_deref(), fewest_first, page)).await
        }
        Route::TokenTransfersOf { token, page } => {
            read(state, deadline, move |r| tokens::transfers(r, token, page)).await
        }
        Route::TokenHolders { token, page } => read(state, deadline, move |r| tokens::holders(r, token, page)).await,
        Route::TokenInstanceTransfers { token, id, page } => {
            read(state, deadline, move |r| tokens::instance_transfers(r, token, id, page)).await
        }
        Route::TokenInstances { token, holder, page } => {
            let list = read(state, deadline, move |r| tokens::instances(r, token, holder, page)).await?;
            Ok(tokens::with_list_metadata(state, list).await)
        }
        Route::Search { q, page } => {
            let name = search::named(state, &q).await;
            read(state, deadline, move |r| search::search(r, &q, name.as_ref(), page)).await
        }
        _ => Err(ApiError::NoRoute),
    };
    json(answer).await
}

/// A tab's data; a tab the node cannot fill (no tracing, node away) shows as empty instead of failing the page.
async fn tab_data(state: &AppState, deadline: Instant, route: Route) -> Result<Value, ApiError> {
    match list(state, deadline, route).await {
        Err(ApiError::NodeUnavailable(_) | ApiError::NotFound) => Ok(Value::Null),
        Err(e) if e.status() == StatusCode::NOT_IMPLEMENTED || e.status() == StatusCode::SERVICE_UNAVAILABLE => {
            Ok(Value::Null)
        }
        other => other,
    }
}

async fn render(state: &AppState, ctx: Ctx, path: &str, query: Option<&str>) -> Result<Markup, ApiError> {
    let deadline = Instant::now() + state.config.request_timeout;
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segments.as_slice() {
        [] => {
            let state2 = state.clone();
            let (s, b, t, c) = read(state, deadline, move |r| {
                Ok((
                    stats::handler(&state2, r, false),
                    blocks::main_page(r),
                    transactions::main_page(r),
                    stats::transactions_chart(r),
                ))
            })
            .await?;
            let (s, b, t, c) = (json(s).await?, json(b).await?, json(t).await?, json(c).await?);
            Ok(pages::home(ctx, &s, &b, &t, &c))
        }
        ["blocks"] => {
            let data = list(state, deadline, api_route("/api/v2/blocks", query)?).await?;
            Ok(pages::blocks(ctx, List { envelope: &data, query }))
        }
        ["block", id] => {
            let block = match api_route(&format!("/api/v2/blocks/{id}"), None)? {
                Route::Block(id) => json(as_values(|| blocks::detail(state, id))).await?,
                _ => return Err(ApiError::NoRoute),
            };
            let txs = list(state, deadline, api_route(&format!("/api/v2/blocks/{id}/transactions"), query)?).await?;
            Ok(pages::block(ctx, &block, List { envelope: &txs, query }))
        }
        ["txs"] => {
            let pending = tab(query) == Some("pending");
            let api = if pending {
                format!("filter=pending&{}", query.unwrap_or_default())
            } else {
                query.unwrap_or_default().replace("filter=pending", "")
            };
            let data = list(state, deadline, api_route("/api/v2/transactions", Some(&api))?).await?;
            Ok(pages::txs(ctx, List { envelope: &data, query }, pending))
        }
        ["tx", hash] => {
            let tx = match api_route(&format!("/api/v2/transactions/{hash}"), None)? {
                Route::Transaction(hash) => json(transactions::detail(state, hash).await).await?,
                _ => return Err(ApiError::NoRoute),
            };
            let current =
                tab(query).filter(|t| pages::TX_TABS.iter().any(|(k, _)| k == t)).unwrap_or("token_transfers");
            let api = match current {
                "internal" => "internal-transactions",
                "logs" => "logs",
                "state" => "state-changes",
                "raw_trace" => "raw-trace",
                _ => "token-transfers",
            };
            let data =
                tab_data(state, deadline, api_route(&format!("/api/v2/transactions/{hash}/{api}"), query)?).await?;
            Ok(pages::tx(ctx, &tx, current, List { envelope: &data, query }))
        }
        ["address", a] => {
            let address = match api_route(&format!("/api/v2/addresses/{a}"), None)? {
                Route::Address(address) => address,
                _ => return Err(ApiError::NoRoute),
            };
            let addr = json(addresses::detail(state, address).await).await?;
            let counters = json(read(state, deadline, move |r| addresses::counters(r, address)).await).await?;
            let current = tab(query).filter(|t| pages::ADDRESS_TABS.iter().any(|(k, _)| k == t)).unwrap_or("txs");
            let api = match current {
                "token_transfers" => format!("/api/v2/addresses/{a}/token-transfers"),
                "tokens" => format!("/api/v2/addresses/{a}/tokens"),
                "internal_txns" => format!("/api/v2/addresses/{a}/internal-transactions"),
                "logs" => format!("/api/v2/addresses/{a}/logs"),
                "contract" => format!("/api/v2/smart-contracts/{a}"),
                _ => format!("/api/v2/addresses/{a}/transactions"),
            };
            let data = tab_data(state, deadline, api_route(&api, query)?).await?;
            Ok(pages::address_page(ctx, &addr, &counters, current, List { envelope: &data, query }))
        }
        ["tokens"] => {
            let data = list(state, deadline, api_route("/api/v2/tokens", query)?).await?;
            Ok(pages::tokens(List { envelope: &data, query }))
        }
        ["token", t] => {
            let token = match api_route(&format!("/api/v2/tokens/{t}"), None)? {
                Route::Token(token) => token,
                _ => return Err(ApiError::NoRoute),
            };
            let (detail, counters) =
                read(state, deadline, move |r| Ok((tokens::detail(r, token), tokens::counters(r, token)))).await?;
            let (detail, counters) = (json(detail).await?, json(counters).await?);
            let current =
                tab(query).filter(|t| pages::TOKEN_TABS.iter().any(|(k, _)| k == t)).unwrap_or("token_transfers");
            let api = match current {
                "holders" => "holders",
                "inventory" => "instances",
                _ => "transfers",
            };
            let data = list(state, deadline, api_route(&format!("/api/v2/tokens/{t}/{api}"), query)?).await?;
            Ok(pages::token(ctx, &detail, &counters, current, List { envelope: &data, query }))
        }
        ["token", t, "instance", id] => {
            let (token, id) = match api_route(&format!("/api/v2/tokens/{t}/instances/{id}"), None)? {
                Route::TokenInstance(token, id) => (token, id),
                _ => return Err(ApiError::NoRoute),
            };
            let detail = json(read(state, deadline, move |r| Ok(tokens::detail(r, token))).await?).await?;
            // The API's instance object: owner, and the metadata (fetched and cached like the API's).
            let instance = json(tokens::instance(state, token, id, deadline).await).await?;
            let transfers = api_route(&format!("/api/v2/tokens/{token}/instances/{id}/transfers"), query)?;
            let transfers = list(state, deadline, transfers).await?;
            Ok(pages::instance(ctx, &detail, &instance, List { envelope: &transfers, query }))
        }
        ["search-results"] => {
            let q = crate::api::query::Query::parse(query).get("q").map(|q| q.trim().to_owned()).unwrap_or_default();
            let results = match api_route("/api/v2/search", query) {
                Ok(route) => list(state, deadline, route).await?,
                Err(refused) => serde_json::json!({ "refused": refused.message() }),
            };
            Ok(pages::search(&q, List { envelope: &results, query }))
        }
        _ => Err(ApiError::NoRoute),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_never_shadow_the_api() {
        for path in ["/api", "/api/v2/blocks", "/socket/v2/websocket", "/health", "/health/ready"] {
            assert!(!is_page_path(path), "{path}");
        }
        for path in ["/", "/blocks", "/tx/0x12", "/apis", "/healthy", "/assets/app-00.css"] {
            assert!(is_page_path(path), "{path}");
        }
    }

    #[test]
    fn pages_carry_no_bidirectional_controls() {
        let mut page = "<dd>\u{202E} RTL </pre>\u{2066}x\u{2069} é</dd>".to_owned();
        strip_bidi_controls(&mut page);
        assert_eq!(page, "<dd> RTL </pre>x é</dd>");
    }

    #[test]
    fn asset_tags_match_lists_weak_tags_and_any() {
        let tag = "\"60313a2b3c81\"";
        for header in ["\"60313a2b3c81\"", "\"x\", \"60313a2b3c81\"", "*", "W/\"60313a2b3c81\""] {
            assert!(etag_matches(header.as_bytes(), tag), "{header}");
        }
        for header in ["\"x\"", "\"60313a2b3c8\"", "", "60313a2b3c81"] {
            assert!(!etag_matches(header.as_bytes(), tag), "{header}");
        }
    }

    #[test]
    fn tabs_are_read_from_the_query() {
        assert_eq!(tab(Some("tab=logs&index=3")), Some("logs"));
        assert_eq!(tab(None), None);
    }
}

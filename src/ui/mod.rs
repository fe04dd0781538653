//! The explorer pages: pure functions from the REST layer's JSON values to HTML, written as `maud` templates
//! (compile-time, escaped by default: every string from the chain is text, never markup). No I/O and no HTTP here;
//! `api/pages.rs` gathers the data with the REST handlers and serves what these functions return.
//!
//! Shared pieces live here (the layout, links to blocks, transactions and addresses, times, pagers, tables); the
//! pages themselves are in `pages.rs`.

pub mod assets;
pub mod format;
pub mod pages;

use format::{ago, parse_iso, short_hash, thousands};
use maud::{html, Markup, DOCTYPE};
use serde_json::Value;

/// What every page knows besides its data.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// The time of rendering (Unix seconds), for relative times.
    pub now: u64,
}

/// A field of a JSON object as display text: strings as they are, numbers and booleans written out, else empty.
pub fn text(v: &Value, key: &str) -> String {
    value_text(&v[key])
}

/// A JSON value as display text.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The whole document around a page's `body`.
pub fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · rockscout" }
                link rel="stylesheet" href=(assets::css().path);
                link rel="icon" type="image/svg+xml" href=(assets::favicon().path);
                script src=(assets::js().path) defer {}
            }
            body {
                a.skip-link href="#main" { "Skip to content" }
                header {
                    a.brand href="/" { "rockscout" }
                    nav aria-label="Main" {
                        a href="/blocks" { "Blocks" }
                        a href="/txs" { "Transactions" }
                        a href="/txs?tab=pending" { "Pending" }
                        a href="/tokens" { "Tokens" }
                    }
                    form action="/search-results" method="get" role="search" {
                        label.visually-hidden for="search-q" { "Search by address, transaction, block or token" }
                        input #search-q type="search" name="q" autocomplete="off"
                            placeholder="Address, tx hash, block, token";
                        ul #suggestions aria-label="Suggestions" {}
                        button type="submit" { "Search" }
                    }
                    button #theme-toggle type="button" aria-label="Dark theme" aria-pressed="false" { "◐" }
                }
                main #main tabindex="-1" { (body) }
            }
        }
    }
}

/// A link to an address page, showing the name (or ENS name) when the API knows one. `v` is an address object
/// (`{"hash": …, "name": …, "ens_domain_name": …}`); anything else renders as nothing.
pub fn address(v: &Value) -> Markup {
    let hash = text(v, "hash");
    if hash.is_empty() {
        return html! { span.muted { "—" } };
    }
    let name = text(v, "name");
    let ens = text(v, "ens_domain_name");
    html! {
        a.mono href={ "/address/" (hash) } title=(hash) data-hash=(hash) {
            @if name.is_empty() { (short_hash(&hash)) } @else { (name) }
        }
        @if !ens.is_empty() { span.ens { "(" (ens) ")" } }
    }
}

/// A link to an address page showing the full hash.
pub fn address_full(hash: &str) -> Markup {
    html! { a.mono href={ "/address/" (hash) } data-hash=(hash) { (hash) } }
}

/// A link to a transaction page.
pub fn tx_link(hash: &str) -> Markup {
    html! { a.mono href={ "/tx/" (hash) } title=(hash) data-hash=(hash) { (short_hash(hash)) } }
}

/// A link to a block page.
pub fn block_link(number: &Value) -> Markup {
    let n = value_text(number);
    if n.is_empty() {
        return html! { span.muted { "pending" } };
    }
    html! { a href={ "/block/" (n) } { (n) } }
}

/// A link to a token page with its name and symbol.
pub fn token_link(token: &Value) -> Markup {
    let hash = text(token, "address_hash");
    let name = text(token, "name");
    let symbol = text(token, "symbol");
    html! {
        a href={ "/token/" (hash) } title=(hash) {
            @if name.is_empty() { (short_hash(&hash)) } @else { (name) }
        }
        @if !symbol.is_empty() { " " span.muted { "(" (symbol) ")" } }
    }
}

/// A relative time with the exact time on hover (the script keeps it current).
pub fn time(iso: &str, ctx: Ctx) -> Markup {
    match parse_iso(iso) {
        Some(at) => html! { time datetime=(iso) title=(iso) { (ago(at, ctx.now)) } },
        None => html! { span.muted { "—" } },
    }
}

/// A decimal number with thousands separators.
pub fn number(v: &Value) -> String {
    thousands(&value_text(v))
}

/// Percent-encodes a query value.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parameters of a list page that choose what it lists, kept on every link to its other pages (the rest of a page's
/// query is its cursor).
pub const LIST_FILTERS: &[&str] = &["type", "filter", "method", "token", "topic", "q", "sort", "order"];

/// The filters of a page's raw query, decoded and encoded again as `k=v&…`, in the order given (empty when none).
pub fn list_filters(query: Option<&str>) -> String {
    let pairs = query.unwrap_or_default().split('&').filter_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = crate::api::query::percent_decode(key);
        LIST_FILTERS
            .contains(&key.as_str())
            .then(|| format!("{}={}", encode(&key), encode(&crate::api::query::percent_decode(value))))
    });
    pairs.collect::<Vec<_>>().join("&")
}

/// Whether a page's raw query continues a list: it holds a cursor (a parameter besides `tab` and the filters).
pub fn continued(query: Option<&str>) -> bool {
    let cursor = |kv: &&str| {
        let key = kv.split('=').next().unwrap_or_default();
        !kv.is_empty() && key != "tab" && !LIST_FILTERS.contains(&key)
    };
    query.is_some_and(|q| q.split('&').any(|kv| cursor(&kv)))
}

/// `base` with `query` added (`?` or `&`); `base` alone when `query` is empty.
fn with_query(base: &str, query: &str) -> String {
    match (query.is_empty(), base.contains('?')) {
        (true, _) => base.to_owned(),
        (false, true) => format!("{base}&{query}"),
        (false, false) => format!("{base}?{query}"),
    }
}

/// The URL of the next page of a list: `base` (a path, maybe with fixed parameters such as `tab`) and the page's
/// `filters`, followed by the REST envelope's `next_page_params` (those the filters already name are not repeated).
pub fn next_url(base: &str, filters: &str, next_page_params: &Value) -> Option<String> {
    let params = next_page_params.as_object()?;
    let named: Vec<&str> = filters.split('&').filter_map(|pair| pair.split('=').next()).collect();
    let query: Vec<String> = params
        .iter()
        .filter(|(k, v)| !v.is_null() && !named.contains(&encode(k).as_str()))
        .map(|(k, v)| format!("{}={}", encode(k), encode(&value_text(v))))
        .collect();
    Some(with_query(&with_query(base, filters), &query.join("&")))
}

/// The links under a list: back to its first page, and the next page when the envelope has one; both keep the
/// list's filters.
pub fn pager(base: &str, list: &pages::List<'_>) -> Markup {
    let (filters, continued) = (list_filters(list.query), continued(list.query));
    let next = next_url(base, &filters, &list.envelope["next_page_params"]);
    html! {
        @if continued || next.is_some() {
            nav.pager aria-label="Pages" {
                @if continued { a href=(with_query(base, &filters)) { "First page" } }
                @if let Some(next) = next { a rel="next" href=(next) { "Next page" } }
            }
        }
    }
}

/// The `items` array of a REST envelope (or the value itself when it is a bare array).
pub fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) => a,
        other => other["items"].as_array().map(Vec::as_slice).unwrap_or(&[]),
    }
}

/// A transaction's status as a word with its colour.
pub fn status(tx: &Value) -> Markup {
    match tx["status"].as_str() {
        Some("ok") => html! { span.ok { "Success" } },
        Some("error") => html! { span.bad { "Failed" } },
        _ => html! { span.muted { "Pending" } },
    }
}

/// A table of transactions (REST transaction items).
pub fn tx_table(txs: &[Value], ctx: Ctx) -> Markup {
    html! {
        @if txs.is_empty() { p.muted { "No transactions." } } @else {
            table {
                thead { tr { th { "Hash" } th { "Method" } th { "Block" } th.hide-narrow { "Age" } th { "From" } th { "To" } th { "Value" } th.hide-narrow { "Fee" } } }
                tbody {
                    @for tx in txs {
                        tr {
                            td { (tx_link(&text(tx, "hash"))) " " (status(tx)) }
                            td { (text(tx, "method")) }
                            td { (block_link(&tx["block_number"])) }
                            td.hide-narrow { (time(&text(tx, "timestamp"), ctx)) }
                            td { (address(&tx["from"])) }
                            td {
                                @if tx["to"].is_object() { (address(&tx["to"])) }
                                @else if tx["created_contract"].is_object() { "Create: " (address(&tx["created_contract"])) }
                            }
                            td { (format::ether(&text(tx, "value"))) }
                            td.hide-narrow { (format::ether(&text(&tx["fee"], "value"))) }
                        }
                    }
                }
            }
        }
    }
}

/// A table of blocks (REST block items).
pub fn block_table(blocks: &[Value], ctx: Ctx) -> Markup {
    html! {
        @if blocks.is_empty() { p.muted { "No blocks." } } @else {
            table {
                thead { tr { th { "Block" } th { "Age" } th { "Txs" } th.hide-narrow { "Gas used" } th { "Miner" } } }
                tbody {
                    @for b in blocks {
                        tr {
                            td { (block_link(&b["height"])) }
                            td { (time(&text(b, "timestamp"), ctx)) }
                            td { (number(&b["transactions_count"])) }
                            td.hide-narrow { (number(&b["gas_used"])) }
                            td { (address(&b["miner"])) }
                        }
                    }
                }
            }
        }
    }
}

/// The amount of a token transfer in the token's units (or the NFT id).
pub fn transfer_amount(t: &Value) -> Markup {
    let total = &t["total"];
    let decimals = text(total, "decimals").parse::<u32>().ok().or_else(|| text(&t["token"], "decimals").parse().ok());
    let id = text(total, "token_id");
    let value = text(total, "value");
    html! {
        @if !id.is_empty() {
            a href={ "/token/" (text(&t["token"], "address_hash")) "/instance/" (id) } { "#" (id) }
            @if !value.is_empty() && value != "1" { " × " (thousands(&value)) }
        }
        @else if !value.is_empty() { (format::units(&value, decimals.unwrap_or(0), 8)) }
    }
}

/// A table of token transfers (REST transfer items).
pub fn transfer_table(transfers: &[Value], ctx: Ctx) -> Markup {
    html! {
        @if transfers.is_empty() { p.muted { "No token transfers." } } @else {
            table {
                thead { tr { th { "Transaction" } th.hide-narrow { "Age" } th { "From" } th { "To" } th { "Amount" } th { "Token" } } }
                tbody {
                    @for t in transfers {
                        tr {
                            td { (tx_link(&text(t, "transaction_hash"))) }
                            td.hide-narrow { (time(&text(t, "timestamp"), ctx)) }
                            td { (address(&t["from"])) }
                            td { (address(&t["to"])) }
                            td { (transfer_amount(t)) }
                            td { (token_link(&t["token"])) }
                        }
                    }
                }
            }
        }
    }
}

/// A table of internal transactions (REST internal transaction items).
pub fn internal_table(calls: &[Value]) -> Markup {
    html! {
        @if calls.is_empty() { p.muted { "No internal transactions." } } @else {
            table {
                thead { tr { th { "Parent transaction" } th { "Type" } th { "From" } th { "To" } th { "Value" } th { "Result" } } }
                tbody {
                    @for c in calls {
                        tr {
                            td { (tx_link(&text(c, "transaction_hash"))) }
                            td { (text(c, "type")) }
                            td { (address(&c["from"])) }
                            td {
                                @if c["to"].is_object() { (address(&c["to"])) }
                                @else { (address(&c["created_contract"])) }
                            }
                            td { (format::ether(&text(c, "value"))) }
                            td {
                                @if c["success"] == Value::Bool(true) { span.ok { "Success" } }
                                @else { span.bad { "Failed" } " " (text(c, "error")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Decoded parameters (`[{name, type, value}]`) as a table.
pub fn parameters(params: &Value) -> Markup {
    let list = params.as_array().map(Vec::as_slice).unwrap_or(&[]);
    html! {
        @if !list.is_empty() {
            table {
                thead { tr { th { "Name" } th { "Type" } th { "Value" } } }
                tbody {
                    @for p in list {
                        tr {
                            td { (text(p, "name")) }
                            td.mono { (text(p, "type")) }
                            td.mono {
                                @let value = value_text(&p["value"]);
                                @if text(p, "type") == "address" { (address_full(&value)) } @else { (value) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A list of logs (REST log items), decoded where the API decoded them.
pub fn log_list(logs: &[Value]) -> Markup {
    html! {
        @if logs.is_empty() { p.muted { "No logs." } } @else {
            @for log in logs {
                div.panel {
                    dl.overview {
                        dt { "Index" } dd { (text(log, "index")) }
                        dt { "Address" } dd { (address(&log["address"])) }
                        dt { "Transaction" } dd { (tx_link(&text(log, "transaction_hash"))) }
                        @if log["decoded"].is_object() {
                            dt { "Decoded" } dd { code { (text(&log["decoded"], "method_call")) } (parameters(&log["decoded"]["parameters"])) }
                        }
                        dt { "Topics" }
                        dd { @for t in log["topics"].as_array().map(Vec::as_slice).unwrap_or(&[]) { @if !t.is_null() { div.mono { (value_text(t)) } } } }
                        dt { "Data" } dd.mono { (text(log, "data")) }
                    }
                }
            }
        }
    }
}

/// The tabs of a page: `(key, label)` pairs linking to `base?tab=key`, the current one marked.
pub fn tabs(base: &str, current: &str, list: &[(&str, &str)]) -> Markup {
    html! {
        ul.tabs {
            @for (key, label) in list {
                li {
                    @if *key == current { a href={ (base) "?tab=" (key) } aria-current="page" { (label) } }
                    @else { a href={ (base) "?tab=" (key) } { (label) } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chain_text_is_escaped() {
        let token = json!({"address_hash": "0x01", "name": "<img src=x onerror=alert(1)>", "symbol": "\"><script>alert(2)</script>"});
        let html = token_link(&token).into_string();
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
    }

    #[test]
    fn next_page_links_carry_the_cursor() {
        let params = json!({"block_number": 7, "index": 2, "items_count": 25, "hash": null});
        let url = next_url("/address/0xab?tab=txs", "", &params).unwrap();
        assert!(url.starts_with("/address/0xab?tab=txs&"), "{url}");
        for part in ["block_number=7", "index=2", "items_count=25"] {
            assert!(url.contains(part), "{url}");
        }
        assert!(!url.contains("hash"), "{url}");
        assert_eq!(next_url("/blocks", "", &Value::Null), None);
        assert_eq!(next_url("/tokens", "", &json!({"name": "a b&c"})).unwrap(), "/tokens?name=a%20b%26c");
    }

    #[test]
    fn page_links_keep_the_list_s_filters() {
        let filters = list_filters(Some("tab=token_transfers&type=ERC-721&block_number=9&index=1&q=a%20b&x=1"));
        assert_eq!(filters, "type=ERC-721&q=a%20b");
        let params = json!({"block_number": 7, "index": 2, "q": "a b"});
        let url = next_url("/address/0xab?tab=token_transfers", &filters, &params).unwrap();
        assert_eq!(url, "/address/0xab?tab=token_transfers&type=ERC-721&q=a%20b&block_number=7&index=2");
        assert_eq!(list_filters(None), "");
        assert!(!continued(Some("tab=logs")) && !continued(Some("tab=logs&type=ERC-20")) && !continued(None));
        assert!(continued(Some("tab=logs&index=3")));
        assert_eq!(list_filters(Some("method=%3Cx%3E")), "method=%3Cx%3E");
    }
}

//! One function per page: the REST layer's JSON values in, the whole HTML document out.

use super::format::{ether, ether_exact, gwei, short_hash, thousands, units};
use super::{
    address, address_full, block_link, block_table, internal_table, items, layout, log_list, number, pager, parameters,
    status, tabs, text, time, token_link, transfer_table, tx_link, tx_table, value_text, Ctx,
};
use maud::{html, Markup};
use serde_json::Value;

/// A list page's data: the REST envelope and whether it continues an earlier page (a cursor was given).
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    /// `{items, next_page_params}` (or a bare array).
    pub envelope: &'a Value,
    /// The page's own query: its filters ([`super::LIST_FILTERS`]) are kept on the links to its other pages, and
    /// any other parameter but `tab` is a cursor.
    pub query: Option<&'a str>,
}

fn tile(label: &str, id: &str, value: String) -> Markup {
    html! { div.tile { div.label { (label) } div.value id=(id) { (value) } } }
}

/// The daily transactions chart as an SVG drawn here (no script, no other origin): one bar per day.
pub fn chart(chart: &Value) -> Markup {
    let days = chart["chart_data"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let counts: Vec<u64> = days.iter().map(|d| d["transactions_count"].as_u64().unwrap_or(0)).collect();
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let (width, height, top) = (600u64, 100u64, 14u64);
    let slot = width / (counts.len().max(1) as u64);
    let summary = format!("Transactions per day over the last {} days, at most {} a day", counts.len(), max);
    html! {
        svg.chart viewBox={ "0 0 " (width) " " (height + 16) } role="img" aria-label=(summary) {
            title { (summary) }
            @for (i, (day, count)) in days.iter().zip(&counts).enumerate() {
                @let bar = (count * (height - top)) / max;
                rect x=(i as u64 * slot + 1) y=(height - bar) width=(slot.saturating_sub(2).max(1)) height=(bar) {
                    title { (text(day, "date")) ": " (count) }
                }
            }
            text x="0" y="12" { (thousands(&max.to_string())) }
            @if let Some(first) = days.first() { text x="0" y=(height + 14) { (text(first, "date")) } }
            @if let Some(last) = days.last() { text x=(width) y=(height + 14) text-anchor="end" { (text(last, "date")) } }
        }
    }
}

/// `/`: network stats, the chart, the latest blocks and transactions (kept current by the script).
pub fn home(ctx: Ctx, stats: &Value, blocks: &Value, txs: &Value, tx_chart: &Value) -> Markup {
    let height = items(blocks).first().map(|b| number(&b["height"])).unwrap_or_else(|| "0".into());
    let block_time = stats["average_block_time"].as_f64().map(|ms| format!("{:.1} s", ms / 1000.0)).unwrap_or_default();
    let gas = stats["gas_prices"]["average"].as_f64().map(|g| format!("{g} Gwei")).unwrap_or_else(|| "—".into());
    layout(
        "Home",
        html! {
            h1 { "Explorer" }
            div.tiles {
                (tile("Latest block", "tile-height", height))
                (tile("Total blocks", "tile-blocks", number(&stats["total_blocks"])))
                (tile("Total transactions", "tile-transactions", number(&stats["total_transactions"])))
                (tile("Transactions today", "tile-today", number(&stats["transactions_today"])))
                (tile("Total addresses", "tile-addresses", number(&stats["total_addresses"])))
                (tile("Average block time", "tile-block-time", block_time))
                (tile("Gas price", "tile-gas", gas))
                (tile("Network utilization", "tile-utilization", format!("{:.2} %", stats["network_utilization_percentage"].as_f64().unwrap_or(0.0))))
            }
            section.panel aria-labelledby="chart-title" {
                h2 #chart-title { "Daily transactions" }
                (chart(tx_chart))
            }
            div.columns {
                section.panel aria-labelledby="blocks-title" {
                    h2 #blocks-title { "Latest blocks" }
                    table {
                        thead { tr { th { "Block" } th { "Age" } th { "Txs" } th { "Miner" } } }
                        tbody #latest-blocks {
                            @for b in items(blocks).iter().take(6) {
                                tr data-height=(value_text(&b["height"])) data-hash=(text(b, "hash")) {
                                    td { (block_link(&b["height"])) }
                                    td { (time(&text(b, "timestamp"), ctx)) }
                                    td { (number(&b["transactions_count"])) }
                                    td { (address(&b["miner"])) }
                                }
                            }
                        }
                    }
                    p { a href="/blocks" { "All blocks" } }
                }
                section.panel aria-labelledby="txs-title" {
                    h2 #txs-title { "Latest transactions" }
                    table {
                        thead { tr { th { "Hash" } th { "From" } th { "To" } th { "Block" } } }
                        tbody #latest-txs {
                            @for tx in items(txs).iter().take(6) {
                                tr {
                                    td { (tx_link(&text(tx, "hash"))) }
                                    td { (address(&tx["from"])) }
                                    td { (address(&tx["to"])) }
                                    td { (block_link(&tx["block_number"])) }
                                }
                            }
                        }
                    }
                    p { a href="/txs" { "All transactions" } }
                }
            }
        },
    )
}

/// `/blocks`.
pub fn blocks(ctx: Ctx, list: List<'_>) -> Markup {
    layout(
        "Blocks",
        html! {
            h1 { "Blocks" }
            section.panel { (block_table(items(list.envelope), ctx)) (pager("/blocks", &list)) }
        },
    )
}

/// `/block/:id`: overview and transactions.
pub fn block(ctx: Ctx, block: &Value, txs: List<'_>) -> Markup {
    let height = value_text(&block["height"]);
    let base = format!("/block/{height}");
    layout(
        &format!("Block {height}"),
        html! {
            h1 { "Block " (thousands(&height)) }
            section.panel {
                dl.overview {
                    dt { "Height" } dd #block-height { (height) }
                    dt { "Hash" } dd.mono #block-hash { (text(block, "hash")) }
                    @if block["height"].as_u64().is_some_and(|h| h > 0) {
                        dt { "Parent" } dd.mono { a href={ "/block/" (text(block, "parent_hash")) } { (text(block, "parent_hash")) } }
                    }
                    dt { "Timestamp" } dd { (time(&text(block, "timestamp"), ctx)) " · " (text(block, "timestamp")) }
                    dt { "Transactions" } dd #block-tx-count { (number(&block["transactions_count"])) }
                    dt { "Miner" } dd { (address(&block["miner"])) }
                    dt { "Gas used" } dd #block-gas-used { (number(&block["gas_used"])) " / " (number(&block["gas_limit"])) }
                    @if !block["base_fee_per_gas"].is_null() { dt { "Base fee" } dd { (gwei(&text(block, "base_fee_per_gas"))) } }
                    @if !block["burnt_fees"].is_null() { dt { "Burnt fees" } dd { (ether(&text(block, "burnt_fees"))) } }
                    dt { "Size" } dd { (number(&block["size"])) " bytes" }
                }
            }
            h2 { "Transactions" }
            section.panel { (tx_table(items(txs.envelope), ctx)) (pager(&base, &txs)) }
        },
    )
}

/// `/txs` (validated) and `/txs?tab=pending`.
pub fn txs(ctx: Ctx, list: List<'_>, pending: bool) -> Markup {
    let (title, base) = if pending { ("Pending transactions", "/txs?tab=pending") } else { ("Transactions", "/txs") };
    layout(
        title,
        html! {
            h1 { (title) }
            (tabs("/txs", if pending { "pending" } else { "validated" }, &[("validated", "Validated"), ("pending", "Pending")]))
            section.panel { (tx_table(items(list.envelope), ctx)) (pager(base, &list)) }
        },
    )
}

/// The tabs of a transaction page.
pub const TX_TABS: &[(&str, &str)] = &[
    ("token_transfers", "Token transfers"),
    ("internal", "Internal transactions"),
    ("logs", "Logs"),
    ("state", "State changes"),
    ("raw_trace", "Raw trace"),
];

/// `/tx/:hash`: overview (status, fee, gas, decoded input) and one tab.
pub fn tx(ctx: Ctx, tx: &Value, tab: &str, data: List<'_>) -> Markup {
    let hash = text(tx, "hash");
    let base = format!("/tx/{hash}");
    let tab_base = format!("{base}?tab={tab}");
    let decoded = &tx["decoded_input"];
    layout(
        "Transaction",
        html! {
            h1 { "Transaction" }
            section.panel {
                dl.overview {
                    dt { "Hash" } dd.mono #tx-hash { (hash) }
                    dt { "Status" } dd #tx-status { (status(tx)) }
                    @if !tx["revert_reason"].is_null() {
                        dt { "Revert reason" } dd.mono #tx-revert { (revert_reason(&tx["revert_reason"])) }
                    }
                    dt { "Block" } dd #tx-block { (block_link(&tx["block_number"])) }
                    dt { "Timestamp" } dd { (time(&text(tx, "timestamp"), ctx)) " · " (text(tx, "timestamp")) }
                    dt { "From" } dd { (address(&tx["from"])) }
                    @if tx["created_contract"].is_object() {
                        // The API also puts the new contract in `to` (the schema wants an object there): shown once.
                        dt { "Contract creation" } dd #tx-created {
                            (address(&tx["created_contract"]))
                            @if tx["status"] == "error" { " " span.muted { "(creation failed: no contract)" } }
                        }
                    } @else {
                        dt { "To" } dd { (address(&tx["to"])) }
                    }
                    dt { "Value" } dd #tx-value data-wei=(text(tx, "value")) { (ether_exact(&text(tx, "value"))) }
                    dt { "Fee" } dd #tx-fee data-wei=(text(&tx["fee"], "value")) {
                        (ether_exact(&text(&tx["fee"], "value")))
                        @if tx["fee"]["type"] == "maximum" { " " span.muted { "(maximum: not mined yet)" } }
                    }
                    dt { "Gas used / limit" } dd #tx-gas { (number(&tx["gas_used"])) " / " (number(&tx["gas_limit"])) }
                    @if !tx["gas_price"].is_null() { dt { "Gas price" } dd { (gwei(&text(tx, "gas_price"))) } }
                    dt { "Nonce" } dd #tx-nonce { (text(tx, "nonce")) }
                    dt { "Position" } dd { (text(tx, "position")) }
                    @if let Some(list) = tx["authorization_list"].as_array().filter(|l| !l.is_empty()) {
                        dt { "Authorizations" } dd #tx-authorizations { (authorizations(list)) }
                    }
                    @if decoded.is_object() {
                        dt { "Decoded input" } dd #tx-decoded { code { (text(decoded, "method_call")) } (parameters(&decoded["parameters"])) }
                    }
                    dt { "Raw input" } dd.mono { pre tabindex="0" { (text(tx, "raw_input")) } }
                }
            }
            (tabs(&base, tab, TX_TABS))
            section.panel #tab {
                @match tab {
                    "internal" => { (internal_table(items(data.envelope))) (pager(&tab_base, &data)) },
                    "logs" => { (log_list(items(data.envelope))) (pager(&tab_base, &data)) },
                    "state" => { (state_changes(items(data.envelope))) },
                    "raw_trace" => { pre.mono tabindex="0" { (serde_json::to_string_pretty(data.envelope).unwrap_or_default()) } },
                    _ => { (transfer_table(items(data.envelope), ctx)) (pager(&tab_base, &data)) },
                }
            }
        },
    )
}

/// A revert reason: the decoded error with its parameters (`Error(string)`'s message, `Panic(uint256)`'s code),
/// or the raw data.
fn revert_reason(reason: &Value) -> Markup {
    html! {
        @if reason["method_call"].is_string() {
            code { (text(reason, "method_call")) } (parameters(&reason["parameters"]))
        } @else if reason["raw"].is_string() {
            (text(reason, "raw"))
        } @else {
            (value_text(reason))
        }
    }
}

/// A set-code transaction's EIP-7702 authorizations: who delegates to whom, and whether the chain applied it.
fn authorizations(list: &[Value]) -> Markup {
    html! {
        table {
            thead { tr { th { "Authority" } th { "Delegate" } th { "Nonce" } th { "Chain" } th { "Status" } } }
            tbody {
                @for a in list {
                    tr {
                        td { @if a["authority"].is_string() { (address_full(&text(a, "authority"))) } @else { "—" } }
                        td { (address_full(&text(a, "address_hash"))) }
                        td.mono { (text(a, "nonce")) }
                        td.mono { (text(a, "chain_id")) }
                        td { @if a["status"].is_string() { (text(a, "status").replace('_', " ")) } @else { "unknown" } }
                    }
                }
            }
        }
    }
}

fn state_changes(changes: &[Value]) -> Markup {
    html! {
        @if changes.is_empty() { p.muted { "No state changes." } } @else {
            table {
                thead { tr { th { "Address" } th { "Kind" } th { "Before" } th { "After" } th { "Change" } } }
                tbody {
                    @for c in changes {
                        tr {
                            td { (address(&c["address"])) }
                            td { @if c["token"].is_object() { (token_link(&c["token"])) } @else { (text(c, "type")) } }
                            td.mono { (change_amount(c, &c["balance_before"])) }
                            td.mono { (change_amount(c, &c["balance_after"])) }
                            td.mono { (change_amount(c, &c["change"])) }
                        }
                    }
                }
            }
        }
    }
}

fn change_amount(change: &Value, amount: &Value) -> String {
    let raw = value_text(amount);
    if change["token"].is_object() {
        let decimals = text(&change["token"], "decimals").parse().unwrap_or(0);
        match raw.strip_prefix('-') {
            Some(neg) => format!("-{}", units(neg, decimals, 8)),
            None => units(&raw, decimals, 8),
        }
    } else {
        match raw.strip_prefix('-') {
            Some(neg) => format!("-{}", ether(neg)),
            None if raw.is_empty() => String::new(),
            None => ether(&raw),
        }
    }
}

/// The tabs of an address page (contracts add `contract`).
pub const ADDRESS_TABS: &[(&str, &str)] = &[
    ("txs", "Transactions"),
    ("token_transfers", "Token transfers"),
    ("tokens", "Tokens"),
    ("internal_txns", "Internal txns"),
    ("logs", "Logs"),
    ("contract", "Contract"),
];

/// `/address/:a`: balance, counters and one tab.
pub fn address_page(ctx: Ctx, addr: &Value, counters: &Value, tab: &str, data: List<'_>) -> Markup {
    let hash = text(addr, "hash");
    let base = format!("/address/{hash}");
    let tab_base = format!("{base}?tab={tab}");
    // An account an EIP-7702 authorization delegates holds code but is no contract: its delegate's code runs.
    let delegate = (addr["proxy_type"] == "eip7702").then(|| &addr["implementations"][0]);
    let is_contract = addr["is_contract"] == Value::Bool(true) && delegate.is_none();
    let shown: Vec<(&str, &str)> =
        ADDRESS_TABS.iter().copied().filter(|(k, _)| is_contract || *k != "contract").collect();
    let title = if is_contract { "Contract" } else { "Address" };
    layout(
        title,
        html! {
            h1 { (title) " " span.mono { (hash) } }
            section.panel {
                dl.overview {
                    @if !addr["name"].is_null() { dt { "Name" } dd #address-name { (text(addr, "name")) } }
                    @if !addr["ens_domain_name"].is_null() { dt { "Name service" } dd #address-ens { (text(addr, "ens_domain_name")) } }
                    dt { "Balance" } dd #address-balance data-wei=(text(addr, "coin_balance")) { (ether_exact(&text(addr, "coin_balance"))) }
                    dt { "Transactions" } dd #address-tx-count { (number(&counters["transactions_count"])) }
                    dt { "Token transfers" } dd { (number(&counters["token_transfers_count"])) }
                    dt { "Gas used" } dd { (number(&counters["gas_usage_count"])) }
                    @if let Some(delegate) = delegate {
                        dt { "Delegates to" } dd #address-delegate {
                            (address_full(&text(delegate, "address_hash")))
                            @if delegate["name"].is_string() { " (" (text(delegate, "name")) ")" }
                            " " span.muted { "(EIP-7702)" }
                        }
                    }
                    @if is_contract {
                        dt { "Verified" } dd #address-verified { @if addr["is_verified"] == Value::Bool(true) { "Yes" } @else { "No" } }
                        @if addr["creator_address_hash"].is_string() {
                            dt { "Creator" } dd { (address_full(&text(addr, "creator_address_hash"))) " at " (tx_link(&text(addr, "creation_transaction_hash"))) }
                        }
                    }
                    @if addr["token"].is_object() { dt { "Token" } dd { (token_link(&addr["token"])) } }
                }
            }
            (tabs(&base, tab, &shown))
            section.panel #tab {
                @match tab {
                    "token_transfers" => { (transfer_table(items(data.envelope), ctx)) (pager(&tab_base, &data)) },
                    "tokens" => { (holdings(items(data.envelope))) (pager(&tab_base, &data)) },
                    "internal_txns" => { (internal_table(items(data.envelope))) (pager(&tab_base, &data)) },
                    "logs" => { (log_list(items(data.envelope))) (pager(&tab_base, &data)) },
                    "contract" => { (contract(&hash, data.envelope)) },
                    _ => { (tx_table(items(data.envelope), ctx)) (pager(&tab_base, &data)) },
                }
            }
        },
    )
}

fn holdings(rows: &[Value]) -> Markup {
    html! {
        @if rows.is_empty() { p.muted { "No tokens." } } @else {
            table {
                thead { tr { th { "Token" } th { "Type" } th { "Balance" } th { "Id" } } }
                tbody {
                    @for h in rows {
                        tr {
                            td { (token_link(&h["token"])) }
                            td { (text(&h["token"], "type")) }
                            td { (units(&text(h, "value"), text(&h["token"], "decimals").parse().unwrap_or(0), 8)) }
                            td { (text(h, "token_id")) }
                        }
                    }
                }
            }
        }
    }
}

/// A read form: a view or pure function's name, selector and parameters (name, type).
struct ReadFunction {
    name: String,
    selector: String,
    inputs: Vec<(String, String)>,
}

/// The view and pure functions of an ABI, for the read forms (at most 64).
fn readable_functions(abi: &Value) -> Vec<ReadFunction> {
    let Ok(abi) = <alloy::json_abi::JsonAbi as serde::Deserialize>::deserialize(abi) else { return Vec::new() };
    abi.functions()
        .filter(|f| {
            matches!(
                f.state_mutability,
                alloy::json_abi::StateMutability::View | alloy::json_abi::StateMutability::Pure
            )
        })
        .map(|f| ReadFunction {
            name: f.name.clone(),
            selector: format!("0x{}", alloy::primitives::hex::encode(f.selector())),
            inputs: f.inputs.iter().map(|p| (p.name.clone(), p.selector_type().into_owned())).collect(),
        })
        .take(64)
        .collect()
}

fn contract(hash: &str, contract: &Value) -> Markup {
    let reads = readable_functions(&contract["abi"]);
    html! {
        @if contract.is_null() { p.muted { "Nothing is known about this contract's source." } } @else {
            dl.overview {
                dt { "Name" } dd #contract-name { (text(contract, "name")) }
                dt { "Verified" } dd { @if contract["is_verified"] == Value::Bool(true) { "Yes" } @else { "No" } }
                @if !contract["compiler_version"].is_null() { dt { "Compiler" } dd { (text(contract, "compiler_version")) } }
                @if !contract["language"].is_null() { dt { "Language" } dd { (text(contract, "language")) } }
            }
            @if !reads.is_empty() {
                h2 { "Read contract" }
                @for read in &reads {
                    form.call data-to=(hash) data-selector=(read.selector) {
                        @for (i, (name, kind)) in read.inputs.iter().enumerate() {
                            @let label = if name.is_empty() { format!("argument {}", i + 1) } else { name.clone() };
                            input.arg type="text" name=(label) placeholder=(format!("{label} ({kind})")) aria-label=(format!("{} {label} ({kind})", read.name));
                        }
                        button type="submit" { (read.name) "(" (read.inputs.iter().map(|(_, k)| k.as_str()).collect::<Vec<_>>().join(", ")) ")" }
                        " → " output aria-live="polite" {}
                    }
                }
            }
            @if contract["source_code"].is_string() {
                h2 { "Source" }
                pre.mono #contract-source tabindex="0" { (text(contract, "source_code")) }
            }
            @if !contract["abi"].is_null() {
                h2 { "ABI" }
                pre.mono tabindex="0" { (serde_json::to_string_pretty(&contract["abi"]).unwrap_or_default()) }
            }
        }
    }
}

/// `/tokens`.
pub fn tokens(list: List<'_>) -> Markup {
    let rows = items(list.envelope);
    layout(
        "Tokens",
        html! {
            h1 { "Tokens" }
            section.panel {
                @if rows.is_empty() { p.muted { "No tokens." } } @else {
                    table {
                        thead { tr { th { "Token" } th { "Type" } th { "Holders" } th { "Total supply" } } }
                        tbody {
                            @for t in rows {
                                tr {
                                    td { (token_link(t)) }
                                    td { (text(t, "type")) }
                                    td { (number(&t["holders_count"])) }
                                    td { (units(&text(t, "total_supply"), text(t, "decimals").parse().unwrap_or(0), 4)) }
                                }
                            }
                        }
                    }
                }
                (pager("/tokens", &list))
            }
        },
    )
}

/// The tabs of a token page (NFTs add `inventory`).
pub const TOKEN_TABS: &[(&str, &str)] =
    &[("token_transfers", "Transfers"), ("holders", "Holders"), ("inventory", "Inventory")];

/// `/token/:t`: overview and one tab.
pub fn token(ctx: Ctx, token: &Value, counters: &Value, tab: &str, data: List<'_>) -> Markup {
    let hash = text(token, "address_hash");
    let base = format!("/token/{hash}");
    let tab_base = format!("{base}?tab={tab}");
    let nft = text(token, "type") != "ERC-20";
    let shown: Vec<(&str, &str)> = TOKEN_TABS.iter().copied().filter(|(k, _)| nft || *k != "inventory").collect();
    let decimals = text(token, "decimals").parse().unwrap_or(0);
    // A token without a name is shown by its address, as in lists.
    let name = Some(text(token, "name")).filter(|n| !n.is_empty()).unwrap_or_else(|| short_hash(&hash));
    layout(
        "Token",
        html! {
            h1 { "Token " span #token-name { (name) } }
            section.panel {
                dl.overview {
                    dt { "Symbol" } dd #token-symbol { (text(token, "symbol")) }
                    dt { "Contract" } dd { (address_full(&hash)) }
                    dt { "Type" } dd { (text(token, "type")) }
                    dt { "Decimals" } dd { (text(token, "decimals")) }
                    dt { "Total supply" } dd #token-supply { (units(&text(token, "total_supply"), decimals, 8)) }
                    dt { "Holders" } dd #token-holders { (number(&token["holders_count"])) }
                    dt { "Transfers" } dd { (number(&counters["transfers_count"])) }
                }
            }
            (tabs(&base, tab, &shown))
            section.panel #tab {
                @match tab {
                    "holders" => {
                        @if items(data.envelope).is_empty() { p.muted { "No holders." } } @else {
                            // An ERC-1155 collection's holders come one row per holder and id.
                            @let by_id = items(data.envelope).iter().any(|h| !h["token_id"].is_null());
                            table {
                                thead { tr { th { "Holder" } @if by_id { th { "Id" } } th { "Balance" } } }
                                tbody {
                                    @for h in items(data.envelope) {
                                        tr {
                                            td { (address(&h["address"])) }
                                            @if by_id {
                                                td { a href={ (base) "/instance/" (text(h, "token_id")) } { "#" (text(h, "token_id")) } }
                                            }
                                            td { (units(&text(h, "value"), decimals, 8)) }
                                        }
                                    }
                                }
                            }
                        }
                        (pager(&tab_base, &data))
                    },
                    "inventory" => {
                        @if items(data.envelope).is_empty() { p.muted { "No tokens." } } @else {
                            table {
                                thead { tr { th { "Id" } th { "Owner" } } }
                                tbody {
                                    @for i in items(data.envelope) {
                                        tr {
                                            td { a href={ (base) "/instance/" (text(i, "id")) } { "#" (text(i, "id")) } }
                                            td { (address(&i["owner"])) }
                                        }
                                    }
                                }
                            }
                        }
                        (pager(&tab_base, &data))
                    },
                    _ => { (transfer_table(items(data.envelope), ctx)) (pager(&tab_base, &data)) },
                }
            }
        },
    )
}

/// `/token/:t/instance/:id`: one NFT.
pub fn instance(ctx: Ctx, token: &Value, instance: &Value, transfers: List<'_>) -> Markup {
    let hash = text(token, "address_hash");
    let id = text(instance, "id");
    let base = format!("/token/{hash}/instance/{id}");
    layout(
        "Token instance",
        html! {
            h1 { (token_link(token)) " #" span #instance-id { (id) } }
            section.panel {
                dl.overview {
                    dt { "Token" } dd { (address_full(&hash)) }
                    dt { "Id" } dd { (id) }
                    dt { "Owner" } dd #instance-owner { (address(&instance["owner"])) }
                    @if !instance["metadata"].is_null() {
                        dt { "Metadata" } dd { pre.mono tabindex="0" { (serde_json::to_string_pretty(&instance["metadata"]).unwrap_or_default()) } }
                    }
                }
            }
            h2 { "Transfers" }
            section.panel #instance-transfers {
                (transfer_table(items(transfers.envelope), ctx)) (pager(&base, &transfers))
            }
        },
    )
}

/// `/search-results?q=`: a page of hits, with the pager.
pub fn search(q: &str, list: List<'_>) -> Markup {
    let results = list.envelope;
    let rows = items(results);
    layout(
        "Search",
        html! {
            h1 { "Search results for " q { (q) } }
            section.panel {
                @if let Some(reason) = results["refused"].as_str() { p.muted #no-results { "Not searched: " (reason) } }
                @else if rows.is_empty() { p.muted #no-results { "Nothing found." } } @else {
                    ul #results {
                        @for r in rows {
                            li {
                                (text(r, "type")) ": "
                                @match r["type"].as_str().unwrap_or_default() {
                                    "block" => { (block_link(&r["block_number"])) },
                                    "transaction" => { (tx_link(&text(r, "transaction_hash"))) },
                                    "token" => { (token_link(r)) },
                                    _ => {
                                        (address_full(&text(r, "address_hash")))
                                        @if r["name"].is_string() { " " (text(r, "name")) }
                                        @else if r["ens_info"]["name"].is_string() { " " (text(&r["ens_info"], "name")) }
                                    },
                                }
                            }
                        }
                    }
                }
                (pager("/search-results", &list))
            }
        },
    )
}

/// The page for anything that is not a page, or asks for something the index does not have.
pub fn not_found(what: &str) -> Markup {
    layout(
        "Not found",
        html! {
            h1 { "Not found" }
            section.panel { p { (what) } p { a href="/" { "Back to the home page" } } }
        },
    )
}

/// The page for a request that failed (bad parameters, overload, timeout): the API's message, as text.
pub fn failed(message: &str) -> Markup {
    layout(
        "Error",
        html! {
            h1 { "Something went wrong" }
            section.panel { p #error-message { (message) } p { a href="/" { "Back to the home page" } } }
        },
    )
}

/// The body of a redirect (browsers follow the `Location` header; this is for anything that does not).
pub fn moved(location: &str) -> Markup {
    layout(
        "Found",
        html! {
            h1 { "Found" }
            section.panel { p { a href=(location) { (location) } } }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_erc1155_collection_s_holders_show_their_ids() {
        let multi = json!({"address_hash": "0x5FbDB2315678afecb367f032d93F642f64180aa3", "type": "ERC-1155",
                           "name": "Multi", "decimals": null, "holders_count": "1"});
        let holder = json!({"hash": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"});
        let by_id = json!({"items": [{"address": holder, "value": "70", "token_id": "7"}], "next_page_params": null});
        let html = token(Ctx { now: 0 }, &multi, &json!({}), "holders", List { envelope: &by_id, query: None });
        let html = html.into_string();
        assert!(html.contains("<th>Id</th>"), "{html}");
        assert!(html.contains("/instance/7\">#7</a>"), "{html}");
        let summed = json!({"items": [{"address": holder, "value": "70", "token_id": null}], "next_page_params": null});
        let html = token(Ctx { now: 0 }, &multi, &json!({}), "holders", List { envelope: &summed, query: None });
        assert!(!html.into_string().contains("<th>Id</th>"), "no id column without ids");
    }
}

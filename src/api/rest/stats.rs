//! `/api/v2/stats` and the home-page companions (`/main-page/indexing-status`, `/config/backend-version`,
//! `/stats/charts/transactions`). Network statistics come from indexed data, computed once per indexed tip.
//!
//! * average block time: mean interval over the last 100 blocks, in milliseconds;
//! * network utilization: mean of gas used / gas limit over the same blocks, in percent;
//! * gas price tiers: the 35th, 60th and 90th percentiles of the effective gas prices of up to 1,000 transactions
//!   of the last 200 blocks (the latest base fee when they hold none), in gwei.

use crate::api::body::{ok, Body};
use crate::api::cursor::HotCursor;
use crate::api::json::iso_date;
use crate::api::router::Page;
use crate::api::{ApiError, AppState};
use crate::store::keys::DayKey;
use crate::store::records::{BlockRecord, Tip};
use crate::store::tables::{CoinBalanceNow, Daily};
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, B256};
use hyper::header::HeaderMap;
use hyper::Response;
use serde_json::{json, Value};
use std::collections::HashMap;

const BLOCK_WINDOW: usize = 100;
const GAS_BLOCK_WINDOW: usize = 200;
const GAS_TX_SAMPLE: usize = 1000;

/// One gas price tier, in wei.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GasTier {
    /// Effective price per gas.
    pub price: u128,
    /// The base fee part of it.
    pub base_fee: u128,
    /// The priority fee part of it.
    pub priority_fee: u128,
}

/// Statistics of the chain near the indexed tip.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainStats {
    /// The tip they were computed at.
    pub tip: Option<B256>,
    /// Mean block interval, ms.
    pub average_block_time_ms: f64,
    /// Mean gas used / gas limit, percent.
    pub utilization_percent: f64,
    /// slow, average, fast.
    pub gas: Option<[GasTier; 3]>,
}

/// Headers of the newest `limit` blocks, newest first.
pub fn recent_headers(reader: &Reader<'_>, limit: usize) -> StoreResult<Vec<BlockRecord>> {
    reader.blocks(None).take(limit).map(|r| r.map(|(_, h)| h)).collect()
}

fn percentile(sorted: &[u128], p: usize) -> u128 {
    sorted[(sorted.len() - 1) * p / 100]
}

/// Computes the statistics at the current tip.
pub fn compute(reader: &Reader<'_>, tip: Option<Tip>) -> StoreResult<ChainStats> {
    let gas_window = recent_headers(reader, GAS_BLOCK_WINDOW)?;
    let headers = &gas_window[..gas_window.len().min(BLOCK_WINDOW)];
    let average_block_time_ms = match (headers.first(), headers.last()) {
        (Some(newest), Some(oldest)) if headers.len() > 1 => {
            newest.timestamp.saturating_sub(oldest.timestamp) as f64 * 1000.0 / (headers.len() - 1) as f64
        }
        _ => 0.0,
    };
    let utilization_percent = if headers.is_empty() {
        0.0
    } else {
        let sum: f64 = headers.iter().map(|h| h.gas_used as f64 / (h.gas_limit.max(1)) as f64).sum();
        sum * 100.0 / headers.len() as f64
    };
    let gas = gas_tiers(reader, &gas_window)?;
    Ok(ChainStats { tip: tip.map(|t| t.hash), average_block_time_ms, utilization_percent, gas })
}

fn gas_tiers(reader: &Reader<'_>, headers: &[BlockRecord]) -> StoreResult<Option<[GasTier; 3]>> {
    let Some(latest) = headers.first() else {
        return Ok(None);
    };
    let oldest = headers.last().map(|h| h.number).unwrap_or_default();
    let base_fees: HashMap<u64, u128> = headers.iter().filter_map(|h| Some((h.number, h.base_fee?))).collect();
    let mut prices = Vec::new();
    let mut tips = Vec::new();
    for row in reader.txs_since(oldest).take(GAS_TX_SAMPLE) {
        let (pos, tx) = row?;
        let base = base_fees.get(&pos.block).copied().unwrap_or(0);
        prices.push(tx.effective_gas_price);
        tips.push(tx.effective_gas_price.saturating_sub(base));
    }
    let latest_base = latest.base_fee.unwrap_or(0);
    if prices.is_empty() {
        return Ok(latest.base_fee.map(|b| [GasTier { price: b, base_fee: b, priority_fee: 0 }; 3]));
    }
    prices.sort_unstable();
    tips.sort_unstable();
    Ok(Some([35, 60, 90].map(|p| {
        let priority_fee = percentile(&tips, p);
        GasTier {
            price: percentile(&prices, p).max(latest_base.saturating_add(priority_fee)),
            base_fee: latest_base,
            priority_fee,
        }
    })))
}

fn gwei(wei: u128) -> f64 {
    // Rounded up to two decimals, as Blockscout's oracle does.
    (wei as f64 / 1e7).ceil() / 100.0
}

/// The `gas_prices` value: numeric tiers, or objects when the client sent `updated-gas-oracle: true`.
pub fn gas_prices_json(stats: &ChainStats, detailed: bool) -> Value {
    let Some(tiers) = stats.gas else {
        return Value::Null;
    };
    let names = ["slow", "average", "fast"];
    let mut out = serde_json::Map::new();
    for (i, (name, tier)) in names.iter().zip(tiers).enumerate() {
        let value = if detailed {
            json!({
                "price": gwei(tier.price),
                "time": stats.average_block_time_ms * (3 - i) as f64,
                "fiat_price": null,
                "base_fee": gwei(tier.base_fee),
                "priority_fee": gwei(tier.priority_fee),
                "priority_fee_wei": tier.priority_fee.to_string(),
                "wei": tier.price.to_string(),
            })
        } else {
            json!(gwei(tier.price))
        };
        out.insert((*name).to_owned(), value);
    }
    Value::Object(out)
}

/// The whole `/stats` body.
pub fn stats_json(reader: &Reader<'_>, stats: &ChainStats, detailed: bool, now: u64) -> StoreResult<Value> {
    let counters = reader.counters()?;
    let today = reader.get::<Daily>(&DayKey::of_timestamp(now))?.unwrap_or_default();
    Ok(json!({
        "total_blocks": counters.blocks.to_string(),
        "total_addresses": counters.addresses.to_string(),
        "total_transactions": counters.txs.to_string(),
        "average_block_time": stats.average_block_time_ms,
        "coin_image": null,
        "coin_price": null,
        "coin_price_change_percentage": null,
        "secondary_coin_image": null,
        "secondary_coin_price": null,
        "total_gas_used": counters.gas_used.to_string(),
        "transactions_today": today.txs.to_string(),
        "gas_used_today": today.gas_used.to_string(),
        "gas_prices": gas_prices_json(stats, detailed),
        "gas_price_updated_at": null,
        "gas_prices_update_in": 0,
        "static_gas_price": null,
        "market_cap": "0",
        "tvl": null,
        "network_utilization_percentage": stats.utilization_percent,
    }))
}

/// `GET /api/v2/stats`; the object form of `gas_prices` when the request carries `updated-gas-oracle: true`.
pub fn handler(state: &AppState, reader: &Reader<'_>, detailed: bool) -> Result<Response<Body>, ApiError> {
    let chain = super::chain_stats(state, reader)?;
    Ok(ok(&stats_json(reader, &chain, detailed, super::unix_now())?))
}

/// Whether a `/stats` request asks for the object form of `gas_prices` (`updated-gas-oracle: true`).
pub fn wants_detailed_gas(headers: &HeaderMap) -> bool {
    headers.get("updated-gas-oracle").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"))
}

/// Blocks behind the node's head still counted as "finished indexing".
const FINISHED_LAG: u64 = 2;

/// `GET /api/v2/main-page/indexing-status`: not finished while the node's head cannot be refreshed (the last
/// request failed, or no answer within `--health-unresponsive-ms`).
pub fn indexing_status(state: &AppState) -> Response<Body> {
    let status = state.status.snapshot();
    let ratio = match (status.indexed, status.node_head) {
        (Some(indexed), Some(head)) => ((indexed + 1) as f64 / (head + 1) as f64).min(1.0),
        (None, _) => 0.0,
        (Some(_), None) => 1.0,
    };
    let current = crate::api::health::head_is_current(&status, &state.config.health, std::time::Instant::now());
    let finished = status.node_head.is_some() && status.lag() <= FINISHED_LAG && current;
    // With tracing: traced blocks over indexed blocks; `null` when internal transactions are not indexed.
    let traced_ratio = status.trace_ratio();
    let traces_finished = status.trace_lag().is_none_or(|lag| lag <= FINISHED_LAG);
    ok(&json!({
        "finished_indexing_blocks": finished,
        "finished_indexing": finished && traces_finished,
        "indexed_blocks_ratio": (ratio * 100.0).floor() / 100.0,
        "indexed_internal_transactions_ratio": traced_ratio.map(|r| (r * 100.0).floor() / 100.0),
    }))
}

/// `GET /api/v2/config/backend-version`.
pub fn backend_version() -> Response<Body> {
    ok(&json!({"backend_version": format!("rockscout v{}", env!("CARGO_PKG_VERSION"))}))
}

/// `GET /api/v2/config/backend`: no chain type (a plain EVM chain) and no OpenAPI folder of one.
pub fn backend_config() -> Response<Body> {
    ok(&json!({"chain_type": null, "openapi_spec_folder_name": null}))
}

/// `GET /api/v2/config/db-background-migrations`: none, as the store has no background migrations (a data directory
/// of another schema version is refused at start-up).
pub fn background_migrations() -> Response<Body> {
    ok(&json!({"migrations": []}))
}

/// `GET /api/v2/withdrawals/counters`: the chain has no beacon-chain withdrawals (as `/api/v2/withdrawals`).
pub fn withdrawal_counters() -> Response<Body> {
    ok(&json!({"withdrawals_count": "0", "withdrawals_sum": "0"}))
}

/// Most blocks the hot-contract list reads for one window; a longer window is refused with 422.
const HOT_BLOCK_BUDGET: usize = 50_000;

/// Most transactions the hot-contract list reads for one window; a busier window is refused with 422.
const HOT_TX_BUDGET: u64 = 100_000;

/// `GET /api/v2/stats/hot-smart-contracts?scale=`: contracts by the transactions sent to them in the last `window`
/// seconds (block time against the wall clock), with those transactions' gas and the contract's indexed balance.
/// No aggregate is kept: each page reads the window's transactions, at most [`HOT_BLOCK_BUDGET`] blocks and
/// [`HOT_TX_BUDGET`] transactions.
pub fn hot_contracts(
    reader: &Reader<'_>,
    (scale, window): (&'static str, u64),
    by_gas: bool,
    ascending: bool,
    page: Page<HotCursor>,
) -> Result<Response<Body>, ApiError> {
    let since = super::unix_now().saturating_sub(window);
    let (mut oldest, mut txs) = (None, 0u64);
    for (examined, row) in reader.blocks(None).enumerate() {
        let (number, header) = row?;
        if header.timestamp < since {
            break;
        }
        txs += u64::from(header.tx_count);
        if examined == HOT_BLOCK_BUDGET || txs > HOT_TX_BUDGET {
            let detail = format!(
                "The last {scale} hold more than {HOT_BLOCK_BUDGET} blocks or {HOT_TX_BUDGET} transactions; choose a \
                 shorter scale"
            );
            return Err(ApiError::invalid("scale", detail));
        }
        oldest = Some(number.0);
    }
    let mut sent: HashMap<Address, (u64, u64)> = HashMap::new();
    if let Some(oldest) = oldest {
        for row in reader.txs_since(oldest) {
            let (_, tx) = row?;
            if let Some(to) = tx.body.to {
                let entry = sent.entry(to).or_default();
                entry.0 += 1;
                entry.1 = entry.1.saturating_add(tx.gas_used);
            }
        }
    }
    let contracts = super::contracts(reader, sent.keys().copied())?;
    let rows: Vec<HotCursor> = sent
        .into_iter()
        .filter(|(address, _)| contracts.is_contract(address))
        .map(|(address, (transactions, gas))| HotCursor { transactions, gas, address })
        .collect();
    let compare = |a: &HotCursor, b: &HotCursor| {
        let (x, y) = if by_gas {
            ((a.gas, a.transactions), (b.gas, b.transactions))
        } else {
            ((a.transactions, a.gas), (b.transactions, b.gas))
        };
        let by_amount = if ascending { x.cmp(&y) } else { y.cmp(&x) };
        by_amount.then_with(|| a.address.cmp(&b.address))
    };
    let (shown, more) = super::sorted_page(rows, compare, page.after, page.size);
    let mut items = Vec::with_capacity(shown.len());
    for row in &shown {
        let balance = reader.get::<CoinBalanceNow>(&row.address)?.map(|b| b.value);
        items.push(json!({
            "contract_address": contracts.address(&row.address),
            "transactions_count": row.transactions,
            "total_gas_used": row.gas,
            "balance": balance.map(|b| b.to_string()),
        }));
    }
    let mut echo = vec![("scale", json!(scale))];
    echo.extend(by_gas.then(|| ("sort", json!("total_gas_used"))));
    echo.extend(ascending.then(|| ("order", json!("asc"))));
    let next = shown.last().filter(|_| more).copied();
    Ok(ok(&super::envelope(items, next, page.size, &echo)))
}

/// Days in the transactions chart.
const CHART_DAYS: u32 = 30;

/// `GET /api/v2/stats/charts/transactions`: transactions per UTC day for the last 30 days, oldest first.
pub fn transactions_chart(reader: &Reader<'_>) -> Result<Response<Body>, ApiError> {
    let today = DayKey::of_timestamp(super::unix_now()).0;
    let first = today.saturating_sub(CHART_DAYS - 1);
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for row in reader.days(first, today) {
        let (day, stats) = row?;
        counts.insert(day.0, stats.txs);
    }
    let chart: Vec<Value> = (first..=today)
        .map(|day| json!({"date": iso_date(day), "transactions_count": counts.get(&day).copied().unwrap_or(0)}))
        .collect();
    Ok(ok(&json!({"chart_data": chart})))
}

/// `GET /api/v2/stats/charts/market`: what Blockscout answers without a price source: no daily prices and no
/// available supply, so the home page's market chart renders empty.
pub fn market_chart() -> Response<Body> {
    ok(&json!({"chart_data": [], "available_supply": "0"}))
}

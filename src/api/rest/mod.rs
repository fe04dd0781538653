//! Handlers of the Blockscout-compatible REST surface under `/api/v2`.

pub mod stats;

use super::body::{ok, Body};
use super::{ApiError, AppState};
use hyper::header::HeaderMap;
use hyper::Response;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// Chain statistics at the current tip, computed once per tip.
pub fn chain_stats(state: &AppState, reader: &crate::store::Reader<'_>) -> Result<Arc<stats::ChainStats>, ApiError> {
    let tip = reader.tip()?;
    let mut cache = state.stats.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(cached) = cache.as_ref().filter(|c| c.tip == tip.map(|t| t.hash)) {
        return Ok(cached.clone());
    }
    let fresh = Arc::new(stats::compute(reader, tip)?);
    *cache = Some(fresh.clone());
    Ok(fresh)
}

/// `GET /api/v2/stats`.
pub fn stats_handler(state: &AppState, headers: &HeaderMap) -> Result<Response<Body>, ApiError> {
    let detailed = headers.get("updated-gas-oracle").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
    let reader = state.store.view();
    let chain = chain_stats(state, &reader)?;
    Ok(ok(&stats::stats_json(&reader, &chain, detailed, unix_now())?))
}

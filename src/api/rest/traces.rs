//! Internal transactions and the trace views of a transaction.
//!
//! The lists (`/transactions/:h`, `/addresses/:a`, `/blocks/:id` `/internal-transactions`, and
//! `/internal-transactions`) read what the trace pass stored; they leave out each transaction's top-level call as
//! Blockscout does. `/raw-trace` and `/state-changes` are fetched from the node when asked (`callTracer`,
//! `prestateTracer` in diff mode, `balanceOf` at the parent block): storing them for every transaction would
//! cost more disk than the whole index for views that are rarely opened. Without tracing all of them answer
//! empty, like Blockscout with its internal-transaction fetcher off.

use super::blocks::find_block;
use super::{contracts, envelope, headers, take_page, PageRows};
use crate::api::body::{ok, Body};
use crate::api::cursor::{CallCursor, Cursor, TraceCursor};
use crate::api::json::{signed_change, Envelope, InternalJson, TokenJson};
use crate::api::router::{BlockId, Direction as Filter, Page};
use crate::api::{ApiError, AppState};
use crate::store::keys::TracePos;
use crate::store::records::{role, CallKind, InternalCreation, InternalTxRecord, TokenKind, TokenTransferRecord};
use crate::store::tables::InternalTxs;
use crate::store::{Reader, StoreResult};
use alloy::primitives::{Address, Bytes, B256, U256};
use futures_util::{stream, StreamExt};
use hyper::Response;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Most entries of a raw trace sent (a transaction can make hundreds of thousands of calls).
pub const MAX_RAW_FRAMES: usize = 10_000;

/// State changes per page (Blockscout's page of 50).
pub const STATE_CHANGES_PAGE: usize = 50;

/// `balanceOf` calls in flight for one state-changes page.
const BALANCE_CALLS: usize = 8;

/// How a contract was created inside a transaction, if the trace pass saw it: the newest successful creation,
/// else the newest attempt.
pub fn internal_creation(reader: &Reader<'_>, address: Address) -> StoreResult<Option<InternalCreation>> {
    let mut newest = None;
    for creation in reader.internal_creations(address)? {
        if creation.success {
            return Ok(Some(creation));
        }
        newest.get_or_insert(creation);
    }
    Ok(newest)
}

fn items(reader: &Reader<'_>, rows: &[(TracePos, InternalTxRecord)]) -> StoreResult<Vec<InternalJson>> {
    let headers = headers(reader, rows.iter().map(|(pos, _)| pos.block))?;
    let addresses = rows.iter().flat_map(|(_, f)| [Some(f.from), f.to, f.created].into_iter().flatten());
    let contracts = contracts(reader, addresses)?;
    Ok(rows
        .iter()
        .filter_map(|(pos, frame)| Some(InternalJson::new(frame, *pos, headers.get(&pos.block)?.timestamp, &contracts)))
        .collect())
}

fn page_of<C: Cursor>(
    reader: &Reader<'_>,
    rows: PageRows<TracePos, InternalTxRecord>,
    cursor: impl Fn(TracePos) -> C,
    size: usize,
    echo: &[(&'static str, Value)],
) -> StoreResult<Envelope<InternalJson>> {
    Ok(envelope(items(reader, &rows.items)?, rows.next.map(cursor), size, echo))
}

/// `GET /api/v2/transactions/:hash/internal-transactions`: the calls below the top one, in trace order.
pub fn of_transaction(reader: &Reader<'_>, hash: B256, page: Page<CallCursor>) -> Result<Response<Body>, ApiError> {
    let Some((pos, _)) = reader.tx(hash)? else {
        return Err(ApiError::NotFound);
    };
    let rows = take_page(reader.tx_calls(pos, page.after.map(|c| c.0.index)), page.size, |_, _| Ok(true))?;
    Ok(ok(&page_of(reader, rows, CallCursor, page.size, &[])?))
}

/// `GET /api/v2/addresses/:a/internal-transactions`: calls from, to or creating the address, newest first.
pub fn of_address(
    reader: &Reader<'_>,
    address: Address,
    filter: Option<Filter>,
    page: Page<TraceCursor>,
) -> Result<Response<Body>, ApiError> {
    let wanted = match filter {
        None => role::FROM | role::TO | role::CREATED,
        Some(Filter::To) => role::TO | role::CREATED,
        Some(Filter::From) => role::FROM,
    };
    let keys = take_page(reader.address_calls(address, page.after.map(|c| c.0)), page.size, |_, roles| {
        Ok(roles & wanted != 0)
    })?;
    let positions: Vec<TracePos> = keys.items.iter().map(|(k, _)| k.pos).collect();
    let frames = reader.multi_get::<InternalTxs>(&positions)?;
    let rows = PageRows {
        items: positions.into_iter().zip(frames).filter_map(|(p, f)| Some((p, f?))).collect(),
        next: keys.next.map(|k| k.pos),
    };
    let extra: Vec<(&'static str, Value)> = match filter {
        Some(Filter::To) => vec![("filter", json!("to"))],
        Some(Filter::From) => vec![("filter", json!("from"))],
        None => Vec::new(),
    };
    Ok(ok(&page_of(reader, rows, TraceCursor, page.size, &extra)?))
}

/// `GET /api/v2/blocks/:id/internal-transactions`: the block's calls in (transaction, trace) order.
pub fn of_block(
    reader: &Reader<'_>,
    id: BlockId,
    kinds: Option<Vec<CallKind>>,
    page: Page<TraceCursor>,
) -> Result<Response<Body>, ApiError> {
    let Some((block, kind)) = find_block(reader, id)? else {
        return Err(ApiError::NotFound);
    };
    if kind != crate::api::json::BlockKind::Block {
        return Ok(ok(&Envelope::<()>::empty()));
    }
    let keep = |pos: &TracePos, frame: &InternalTxRecord| {
        Ok(pos.index > 0 && kinds.as_ref().is_none_or(|k| k.contains(&frame.kind)))
    };
    let rows = take_page(reader.block_calls(block.number, page.after.map(|c| c.0)), page.size, keep)?;
    Ok(ok(&page_of(reader, rows, TraceCursor, page.size, &[])?))
}

/// `GET /api/v2/internal-transactions`: every stored internal call, newest first.
pub fn all(reader: &Reader<'_>, page: Page<TraceCursor>) -> Result<Response<Body>, ApiError> {
    let rows = take_page(reader.calls(page.after.map(|c| c.0)), page.size, |pos, _| Ok(pos.index > 0))?;
    Ok(ok(&page_of(reader, rows, TraceCursor, page.size, &[])?))
}

fn tracing_on(state: &AppState) -> bool {
    state.status.snapshot().tracing == Some(true)
}

fn hex_or(frame: &Value, key: &str, default: &'static str) -> Value {
    frame.get(key).and_then(Value::as_str).map_or_else(|| json!(default), |s| json!(s))
}

/// Parity-style trace entries (`trace_transaction`'s shape, as Blockscout serves it) from a `callTracer` tree,
/// depth-first. Calls carry `callType`; creations carry the init code as `init` (Parity) and `input`
/// (Blockscout's schema) and the new contract as `to`; the frame's error text is not part of this shape (it is in
/// `/internal-transactions`).
pub fn parity_traces(top: &Value, tx_hash: B256, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack: Vec<(&Value, Vec<usize>)> = vec![(top, Vec::new())];
    while let Some((frame, trace_address)) = stack.pop() {
        if out.len() == limit {
            break;
        }
        let calls: &[Value] = frame.get("calls").and_then(Value::as_array).map_or(&[], Vec::as_slice);
        let kind = frame.get("type").and_then(Value::as_str).unwrap_or("CALL").to_ascii_lowercase();
        let (from, to) = (hex_or(frame, "from", "0x"), frame.get("to").cloned().unwrap_or(Value::Null));
        let (gas, value) = (hex_or(frame, "gas", "0x0"), hex_or(frame, "value", "0x0"));
        let input = hex_or(frame, "input", "0x");
        let (entry_type, action) = match kind.as_str() {
            "create" | "create2" => (
                kind.clone(),
                json!({"from": from, "to": to, "gas": gas, "init": input, "input": input, "value": value}),
            ),
            "selfdestruct" | "suicide" => {
                ("selfdestruct".to_owned(), json!({"from": from, "to": to, "gas": gas, "input": "0x", "value": value}))
            }
            call_type => {
                let call_type = match call_type {
                    "delegatecall" | "staticcall" | "callcode" => call_type,
                    _ => "call",
                };
                (
                    "call".to_owned(),
                    json!({"callType": call_type, "from": from, "to": to, "gas": gas, "input": input, "value": value}),
                )
            }
        };
        let mut entry = Map::new();
        entry.insert("type".into(), json!(entry_type));
        entry.insert("action".into(), action);
        entry.insert(
            "result".into(),
            json!({"gasUsed": hex_or(frame, "gasUsed", "0x0"), "output": hex_or(frame, "output", "0x")}),
        );
        entry.insert("subtraces".into(), json!(calls.len()));
        entry.insert("traceAddress".into(), json!(trace_address));
        entry.insert("transactionHash".into(), json!(format!("{tx_hash:#x}")));
        out.push(Value::Object(entry));
        for (i, child) in calls.iter().enumerate().rev() {
            let mut child_address = trace_address.clone();
            child_address.push(i);
            stack.push((child, child_address));
        }
    }
    out
}

/// `GET /api/v2/transactions/:hash/raw-trace`: the node's `callTracer` trace in Parity form (`[]` without
/// tracing).
pub async fn raw_trace(state: &AppState, hash: B256) -> Result<Response<Body>, ApiError> {
    if state.store.view().tx(hash)?.is_none() {
        return Err(ApiError::NotFound);
    }
    if !tracing_on(state) {
        return Ok(ok(&json!([])));
    }
    let trace = state.node_trace(hash, "callTracer", json!({})).await?;
    Ok(ok(&parity_traces(&trace, hash, MAX_RAW_FRAMES)))
}

fn quantity(value: Option<&Value>) -> Option<U256> {
    value.and_then(Value::as_str).and_then(|s| U256::from_str_radix(s.trim_start_matches("0x"), 16).ok())
}

/// Native balance changes from a `prestateTracer` diff: `(address, before, after)` for every account whose
/// balance changed, in address order. An account only in `pre` was deleted; one only in `post` is new.
pub fn coin_changes(diff: &Value) -> Vec<(Address, U256, U256)> {
    let side = |key: &str| -> BTreeMap<Address, &Value> {
        diff.get(key)
            .and_then(Value::as_object)
            .map(|accounts| accounts.iter().filter_map(|(a, v)| Some((a.parse().ok()?, v))).collect())
            .unwrap_or_default()
    };
    let (pre, post) = (side("pre"), side("post"));
    let addresses: std::collections::BTreeSet<Address> = pre.keys().chain(post.keys()).copied().collect();
    addresses
        .into_iter()
        .filter_map(|address| {
            let before = quantity(pre.get(&address).and_then(|a| a.get("balance"))).unwrap_or_default();
            let after = match post.get(&address) {
                Some(account) => quantity(account.get("balance")).unwrap_or(before),
                None => U256::ZERO,
            };
            (before != after).then_some((address, before, after))
        })
        .collect()
}

/// A holder's token balance moved by transfers: what it gained and lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Received.
    pub gained: U256,
    /// Sent.
    pub lost: U256,
}

impl Moved {
    /// `balance` after the move, if it stays in range.
    pub fn apply(&self, balance: U256) -> Option<U256> {
        balance.checked_add(self.gained)?.checked_sub(self.lost)
    }

    fn is_zero(&self) -> bool {
        self.gained == self.lost
    }
}

/// Whose token balance a transfer list moves: token, holder and (ERC-1155) id. ERC-721 counts per holder.
pub type HolderKey = (Address, Address, Option<U256>);

/// Net balance moves of `transfers` per holder (the zero address is not a holder). The ERC-721 ids each holder
/// received or sent come along, for `token_id`.
pub fn token_moves(transfers: &[TokenTransferRecord]) -> BTreeMap<HolderKey, (Moved, Vec<U256>)> {
    let mut moves: BTreeMap<HolderKey, (Moved, Vec<U256>)> = BTreeMap::new();
    for t in transfers {
        let id = if t.kind == TokenKind::Erc1155 { t.token_id } else { None };
        for (holder, received) in [(t.from, false), (t.to, true)] {
            if holder == Address::ZERO {
                continue;
            }
            let entry = moves.entry((t.token, holder, id)).or_default();
            if received {
                entry.0.gained += t.amount;
            } else {
                entry.0.lost += t.amount;
            }
            if let (TokenKind::Erc721, Some(nft)) = (t.kind, t.token_id) {
                entry.1.push(nft);
            }
        }
    }
    moves
}

fn balance_call(holder: Address, id: Option<U256>) -> Bytes {
    // balanceOf(address) = 0x70a08231, balanceOf(address,uint256) = 0x00fdd58e.
    let mut data = Vec::with_capacity(68);
    data.extend_from_slice(if id.is_some() { &[0x00, 0xfd, 0xd5, 0x8e] } else { &[0x70, 0xa0, 0x82, 0x31] });
    data.extend_from_slice(&[0u8; 12]);
    data.extend_from_slice(holder.as_slice());
    if let Some(id) = id {
        data.extend_from_slice(&id.to_be_bytes::<32>());
    }
    data.into()
}

struct TokenChange {
    key: HolderKey,
    token: TokenJson,
    moved: Moved,
    earlier: Moved,
    nft_ids: Vec<U256>,
}

/// `GET /api/v2/transactions/:hash/state-changes`: native balance changes from the node's `prestateTracer` diff,
/// then token balance changes from the transaction's transfers, each with the balance before and after (the
/// token balance before is `balanceOf` at the parent block plus the block's earlier transfers). Pages of 50;
/// empty without tracing.
pub async fn state_changes(state: &AppState, hash: B256, offset: usize) -> Result<Response<Body>, ApiError> {
    let (pos, miner, tokens) = {
        let reader = state.store.view();
        let Some((pos, tx)) = reader.tx(hash)? else {
            return Err(ApiError::NotFound);
        };
        let header = reader.block(pos.block)?.ok_or(ApiError::NotFound)?;
        let mine = super::tokens::tx_transfers(&reader, pos.block, &tx)?;
        let before = reader.transfers_in_logs(pos.block, 0..tx.first_log)?;
        let earlier = token_moves(&before.into_iter().map(|(_, t)| t).collect::<Vec<_>>());
        let mut tokens = Vec::new();
        for (key, (moved, nft_ids)) in token_moves(&mine.into_iter().map(|(_, t)| t).collect::<Vec<_>>()) {
            if moved.is_zero() {
                continue;
            }
            let Some(token) = super::tokens::token_json(&reader, &key.0)? else { continue };
            let earlier = earlier.get(&key).map(|(m, _)| *m).unwrap_or_default();
            tokens.push(TokenChange { key, token, moved, earlier, nft_ids });
        }
        (pos, header.miner, tokens)
    };
    if !tracing_on(state) {
        return Ok(ok(&Envelope::<()>::empty()));
    }
    let diff = state.node_trace(hash, "prestateTracer", json!({"diffMode": true})).await?;
    let coins = coin_changes(&diff);
    let total = coins.len() + tokens.len();
    let end = total.min(offset.saturating_add(STATE_CHANGES_PAGE));
    let mut addresses: Vec<Address> = coins.iter().map(|c| c.0).collect();
    addresses.extend(tokens.iter().map(|t| t.key.1));
    let contracts = contracts(&state.store.view(), addresses)?;
    let mut items = Vec::new();
    for (address, before, after) in coins.iter().skip(offset).take(end.saturating_sub(offset)) {
        items.push(json!({
            "address": contracts.address(address),
            "is_miner": *address == miner,
            "type": "coin",
            "token": null,
            "token_id": null,
            "balance_before": before.to_string(),
            "balance_after": after.to_string(),
            "change": signed_change(*after, *before),
        }));
    }
    let token_slice = &tokens[offset.saturating_sub(coins.len()).min(tokens.len())..end.saturating_sub(coins.len())];
    let node = &state.node;
    let parent = pos.block.checked_sub(1);
    let keys: Vec<HolderKey> = token_slice.iter().map(|c| c.key).collect();
    let balances: Vec<Option<U256>> = stream::iter(keys)
        .map(|(token, holder, id)| async move {
            let parent = parent?;
            let data = node.call_contract(token, balance_call(holder, id), Some(parent)).await.ok()??;
            (data.len() >= 32).then(|| U256::from_be_slice(&data[..32]))
        })
        .buffered(BALANCE_CALLS)
        .collect()
        .await;
    for (change, at_parent) in token_slice.iter().zip(balances) {
        let (_, holder, id) = change.key;
        let before = at_parent.and_then(|b| change.earlier.apply(b));
        let after = before.and_then(|b| change.moved.apply(b));
        let token_id = id.or_else(|| (change.nft_ids.len() == 1).then(|| change.nft_ids[0]));

        items.push(json!({
            "address": contracts.address(&holder),
            "is_miner": holder == miner,
            "type": "token",
            "token": change.token,
            "token_id": token_id.map(|i| i.to_string()),
            "balance_before": before.map(|b| b.to_string()),
            "balance_after": after.map(|b| b.to_string()),
            "change": signed_change(change.moved.gained, change.moved.lost),
        }));
    }
    let next_page_params = (end < total).then(|| {
        let mut params = Map::new();
        params.insert("state_changes".into(), Value::Null);
        params.insert("items_count".into(), json!(end));
        params
    });

    Ok(ok(&Envelope { items, next_page_params }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_trees_become_parity_entries_depth_first() {
        let tree = json!({
            "type": "CALL", "from": "0x01", "to": "0x02", "gas": "0x100", "gasUsed": "0x80", "input": "0xab",
            "value": "0x5", "output": "0x",
            "calls": [
                {"type": "CREATE2", "from": "0x02", "to": "0x03", "gas": "0x10", "gasUsed": "0x8", "input": "0x60",
                 "output": "0x6001"},
                {"type": "DELEGATECALL", "from": "0x02", "to": "0x04", "gas": "0x10", "gasUsed": "0x8",
                 "input": "0x", "error": "execution reverted",
                 "calls": [{"type": "STATICCALL", "from": "0x04", "to": "0x05", "gas": "0x1", "gasUsed": "0x1",
                            "input": "0x"}]}
            ]
        });
        let entries = parity_traces(&tree, B256::ZERO, 100);
        let shape: Vec<(String, Value, Value)> = entries
            .iter()
            .map(|e| (e["type"].as_str().unwrap().to_owned(), e["traceAddress"].clone(), e["subtraces"].clone()))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("call".into(), json!([]), json!(2)),
                ("create2".into(), json!([0]), json!(0)),
                ("call".into(), json!([1]), json!(1)),
                ("call".into(), json!([1, 0]), json!(0)),
            ]
        );
        assert_eq!(entries[0]["action"]["callType"], "call");
        assert_eq!(entries[0]["action"]["value"], "0x5");
        assert_eq!(entries[1]["action"]["init"], "0x60");
        assert_eq!(entries[1]["result"]["output"], "0x6001");
        assert_eq!(entries[2]["action"]["callType"], "delegatecall");
        assert_eq!(entries[2]["action"]["value"], "0x0", "a missing value is zero");
        assert_eq!(entries[3]["action"]["callType"], "staticcall");
        assert_eq!(parity_traces(&tree, B256::ZERO, 2).len(), 2, "the entry count is bounded");
    }

    #[test]
    fn coin_changes_follow_the_diff_semantics() {
        let diff = json!({
            "pre": {
                "0x0000000000000000000000000000000000000001": {"balance": "0x10", "nonce": 1},
                "0x0000000000000000000000000000000000000002": {"balance": "0x5"},
                "0x0000000000000000000000000000000000000003": {"balance": "0x7"},
            },
            "post": {
                "0x0000000000000000000000000000000000000001": {"balance": "0x4", "nonce": 2},
                "0x0000000000000000000000000000000000000003": {"storage": {}},
                "0x0000000000000000000000000000000000000004": {"balance": "0x9"},
            }
        });
        let a = |n: u8| Address::with_last_byte(n);
        assert_eq!(
            coin_changes(&diff),
            vec![
                (a(1), U256::from(16), U256::from(4)),
                (a(2), U256::from(5), U256::ZERO),
                (a(4), U256::ZERO, U256::from(9)),
            ],
            "deleted accounts end at zero, storage-only changes are not balance changes, new accounts start at zero"
        );
    }

    #[test]
    fn token_moves_net_out_per_holder_and_skip_the_zero_address() {
        let token = Address::with_last_byte(9);
        let (a, b) = (Address::with_last_byte(1), Address::with_last_byte(2));
        let transfer = |from, to, kind, id: Option<u64>, amount: u64| TokenTransferRecord {
            token,
            from,
            to,
            kind,
            token_id: id.map(U256::from),
            amount: U256::from(amount),
            tx_index: 0,
            tx_hash: B256::ZERO,
        };
        let moves = token_moves(&[
            transfer(Address::ZERO, a, TokenKind::Erc20, None, 10),
            transfer(a, b, TokenKind::Erc20, None, 3),
            transfer(b, a, TokenKind::Erc1155, Some(7), 2),
        ]);
        assert_eq!(moves.len(), 4);
        assert_eq!(moves[&(token, a, None)].0, Moved { gained: U256::from(10), lost: U256::from(3) });
        assert_eq!(moves[&(token, b, None)].0, Moved { gained: U256::from(3), lost: U256::ZERO });
        assert_eq!(moves[&(token, a, Some(U256::from(7)))].0.gained, U256::from(2));
        assert_eq!(Moved { gained: U256::from(1), lost: U256::from(5) }.apply(U256::from(3)), None);
        assert_eq!(Moved { gained: U256::from(1), lost: U256::from(5) }.apply(U256::from(9)), Some(U256::from(5)));
    }
}

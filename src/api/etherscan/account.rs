//! `module=account`: balances, an address's transactions, internal transactions and token transfers, its token
//! holdings and the blocks it mined.

use super::{bad, filter_by, lower, read, Answer, HexBudget, Outcome, Params, Refusal};
use crate::api::json::Contracts;
use crate::api::rest::contracts;
use crate::api::rest::headers;
use crate::api::rest::tokens::token_json;
use crate::api::router::Direction;
use crate::api::AppState;
use crate::store::keys::{BlockPos, HolderKey, TracePos, TransferPos};
use crate::store::records::{
    direction, role, BlockRecord, CallKind, InternalTxRecord, TokenKind, TokenTransferRecord, TxBody, TxRecord,
};
use crate::store::tables::{Accounts, InternalTxs, Pending, TokenHolders, Transactions, Transfers};
use crate::store::{Order, Reader, StoreResult};
use alloy::primitives::{Address, U256};
use serde_json::{json, Map, Value};
use std::collections::hash_map::{Entry, HashMap};

/// Most addresses of one `balancemulti`.
const BALANCE_MULTI_LIMIT: usize = 20;

/// `listaccounts` (Blockscout's): addresses by indexed native balance, richest first, in pages of `offset`
/// (default and most 10,000) within the result window; addresses without a balance are not listed.
pub(super) async fn listaccounts(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let (skip, take) = params.window(super::RESULT_WINDOW, super::RESULT_WINDOW, true)?;
    read(state, deadline, move |r| {
        let mut items = Vec::new();
        for row in r.coin_ranks(None).skip(skip).take(take) {
            let (rank, ()) = row?;
            items.push(json!({"address": lower(&rank.address), "balance": rank.balance.to_string(), "stale": false}));
        }
        Ok(Answer::list(items, "No accounts found"))
    })
    .await
}

/// `balance` and `balancemulti`: native balances from the node at the indexed tip.
pub(super) async fn balance(params: &Params, state: &AppState, multi: bool) -> Outcome {
    let raw = params.get("address").ok_or_else(|| bad("Query parameter 'address' is required"))?;
    let addresses: Vec<Address> = raw
        .split(',')
        .take(BALANCE_MULTI_LIMIT)
        .map(|a| super::parse_address(a.trim()).ok_or_else(|| bad("Invalid address hash")))
        .collect::<Result<_, _>>()?;
    let tip = state.store.view().tip()?;
    let lookups = addresses.iter().map(|a| state.account_state(*a, tip));
    let found = futures_util::future::try_join_all(lookups)
        .await
        .map_err(|e| Refusal::Server(crate::api::ApiError::NodeUnavailable(e.to_string())))?;
    if !multi && addresses.len() == 1 {
        return Ok(Answer::Ok(json!(found[0].balance.to_string())));
    }
    let items = addresses
        .iter()
        .zip(found)
        .map(|(a, s)| json!({"account": lower(a), "balance": s.balance.to_string(), "stale": false}))
        .collect();
    Ok(Answer::Ok(Value::Array(items)))
}

/// The `0x` selector of a call, `"0x"` for creations and short inputs.
fn method_id(tx: &TxBody) -> String {
    match (tx.to, tx.input.get(..4)) {
        (Some(_), Some(selector)) => format!("0x{}", alloy::hex::encode(selector)),
        _ => "0x".to_string(),
    }
}

/// The decoded function signature where an ABI knows the selector (the called contract's matched artifact, else
/// the well-known signatures), else `""`.
fn function_name(tx: &TxBody, contracts: &Contracts) -> String {
    tx.to
        .and_then(|to| contracts.decode_input(&tx.input, Some(&to)))
        .and_then(|d| d["method_call"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Receipts' `cumulativeGasUsed`, summed from the block's stored transactions once per block and request.
#[derive(Default)]
pub(super) struct CumulativeGas(HashMap<u64, Vec<u64>>);

impl CumulativeGas {
    /// Gas used by the transactions of the block up to and including `pos`.
    pub(super) fn at(&mut self, reader: &Reader<'_>, pos: BlockPos) -> StoreResult<u64> {
        let sums = self.0.entry(pos.block).or_default();
        if sums.len() <= pos.index as usize {
            let mut total = sums.last().copied().unwrap_or(0);
            let after = sums.len().checked_sub(1).map(|i| i as u32);
            for row in reader.block_txs(pos.block, after) {
                let (at, tx) = row?;
                total = total.saturating_add(tx.gas_used);
                sums.push(total);
                if at.index >= pos.index {
                    break;
                }
            }
        }
        Ok(sums.get(pos.index as usize).copied().unwrap_or(0))
    }
}

/// One `txlist` item.
fn tx_item(
    tx: &TxRecord,
    input: String,
    pos: BlockPos,
    header: &BlockRecord,
    tip: u64,
    cumulative: u64,
    contracts: &Contracts,
) -> Value {
    json!({
        "blockNumber": pos.block.to_string(),
        "timeStamp": header.timestamp.to_string(),
        "hash": format!("{:#x}", tx.hash),
        "nonce": tx.nonce.to_string(),
        "blockHash": format!("{:#x}", header.hash),
        "transactionIndex": pos.index.to_string(),
        "from": lower(&tx.from),
        "to": tx.to.as_ref().map(lower).unwrap_or_default(),
        "value": tx.value.to_string(),
        "gas": tx.gas_limit.to_string(),
        "gasPrice": tx.effective_gas_price.to_string(),
        "isError": if tx.succeeded() { "0" } else { "1" },
        "txreceipt_status": match tx.status { Some(true) => "1", Some(false) => "0", None => "" },
        "input": input,
        "contractAddress": tx.created.as_ref().map(lower).unwrap_or_default(),
        "cumulativeGasUsed": cumulative.to_string(),
        "gasUsed": tx.gas_used.to_string(),
        "confirmations": tip.saturating_sub(pos.block).to_string(),
        "methodId": method_id(tx),
        "functionName": function_name(tx, contracts),
    })
}

/// `txlist`: an address's transactions, newest first unless `sort=asc`.
pub(super) async fn txlist(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let address = params.address("address", "Query parameter 'address' is required", "Invalid address format")?;
    let mut paging = params.paging(super::RESULT_WINDOW, true)?;
    let filter = filter_by(&params);
    let times = (params.lenient_u64("start_timestamp"), params.lenient_u64("end_timestamp"));
    read(state, deadline, move |r| {
        let tip = r.tip()?.map(|t| t.number);
        if times != (None, None) {
            let first = match times.0 {
                Some(t) => super::chain::block_at_time(r, t, super::chain::Closest::After)?,
                None => Some(0),
            };
            let last = match times.1 {
                Some(t) => super::chain::block_at_time(r, t, super::chain::Closest::Before)?,
                None => tip,
            };
            let (Some(first), Some(last)) = (first, last) else {
                return Ok(Answer::list(vec![], "No transactions found"));
            };
            paging.blocks = (*paging.blocks.start()).max(first)..=(*paging.blocks.end()).min(last);
        }
        let Some(blocks) = paging.blocks_upto(tip) else {
            return Ok(Answer::list(vec![], "No transactions found"));
        };
        let wanted = match filter {
            Some(Direction::From) => role::FROM,
            Some(Direction::To) => role::TO | role::CREATED,
            None => u8::MAX,
        };
        let rows = paging.page(r.address_txs_in(address, blocks, paging.order), |(_, roles)| roles & wanted != 0)?;
        let positions: Vec<BlockPos> = rows.iter().map(|(key, _)| key.pos).collect();
        let txs = r.multi_get::<Transactions>(&positions)?;
        let headers = headers(r, positions.iter().map(|p| p.block))?;
        let called = contracts(r, txs.iter().flatten().filter_map(|tx| tx.to))?;
        let mut cumulative = CumulativeGas::default();
        let mut inputs = HexBudget::default();
        let mut items = Vec::with_capacity(positions.len());
        for (pos, tx) in positions.into_iter().zip(txs) {
            let (Some(tx), Some(header)) = (tx, headers.get(&pos.block)) else { continue };
            let Some(input) = inputs.hex(&tx.input) else { return Ok(Answer::refuse(HexBudget::EXCEEDED)) };
            let gas = cumulative.at(r, pos)?;
            items.push(tx_item(&tx, input, pos, header, tip.unwrap_or(0), gas, &called));
        }
        Ok(Answer::list(items, "No transactions found"))
    })
    .await
}

/// `pendingtxlist`: the pool's transactions from or to an address, newest first.
pub(super) async fn pendingtxlist(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let address = params.address("address", "Query parameter 'address' is required", "Invalid address format")?;
    let paging = params.paging(super::RESULT_WINDOW, true)?;
    read(state, deadline, move |r| {
        // The address's transactions still waiting (one mined meanwhile is left out).
        let waiting = r
            .pending(None)
            .map(|row| {
                let hash = row?.0.hash;
                match r.get::<Pending>(&hash)? {
                    Some(tx) if (tx.from == address || tx.to == Some(address)) && !r.is_mined(hash)? => Ok(Some(tx)),
                    _ => Ok(None),
                }
            })
            .filter_map(Result::transpose);
        let mut inputs = HexBudget::default();
        let items: Option<Vec<Value>> = paging
            .page(waiting, |_| true)?
            .iter()
            .map(|tx| {
                Some(json!({
                    "hash": format!("{:#x}", tx.hash),
                    "nonce": tx.nonce.to_string(),
                    "from": lower(&tx.from),
                    "to": tx.to.as_ref().map(lower).unwrap_or_default(),
                    "value": tx.value.to_string(),
                    "gas": tx.gas_limit.to_string(),
                    "gasPrice": tx.gas_price.or(tx.max_fee_per_gas).map(|p| p.to_string()).unwrap_or_default(),
                    "input": inputs.hex(&tx.input)?,
                    "contractAddress": "",
                    "cumulativeGasUsed": "",
                    "gasUsed": "",
                }))
            })
            .collect();
        let Some(items) = items else { return Ok(Answer::refuse(HexBudget::EXCEEDED)) };
        Ok(Answer::list(items, "No transactions found"))
    })
    .await
}

/// `txlistinternal`: internal calls of a transaction (`txhash`), of an address, or of a block range.
pub(super) async fn txlistinternal(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let address = params.opt_address("address", "Invalid address format")?;
    let tx_hash = match (address, params.get("txhash")) {
        (None, Some(_)) => Some(params.tx_hash()?),
        _ => None,
    };
    let paging = params.paging(super::RESULT_WINDOW, true)?;
    let with_zero_value = params.get("include_zero_value") == Some("true");
    if state.status.snapshot().tracing != Some(true) {
        return Ok(Answer::NotOk(
            "Internal transactions are not indexed here: this explorer runs without --tracing".into(),
            json!([]),
        ));
    }
    read(state, deadline, move |r| {
        let tip = r.tip()?.map(|t| t.number);
        let keep = |kind: CallKind, value: U256, index: u32| {
            index > 0 && (with_zero_value || !value.is_zero() || kind_creates(kind))
        };
        let wanted = |(pos, frame): &(TracePos, InternalTxRecord)| keep(frame.kind, frame.value, pos.index);
        let frames = match (tx_hash, paging.blocks_upto(tip), address) {
            (Some(hash), _, _) => match r.tx(hash)? {
                Some((pos, _)) => paging.page(r.tx_calls(pos, None), wanted)?,
                None => Vec::new(),
            },
            (None, None, _) => Vec::new(),
            (None, Some(blocks), Some(address)) => {
                let calls = r
                    .address_calls_in(address, blocks, paging.order)
                    .map(|row| {
                        let pos = row?.0.pos;
                        Ok(r.get::<InternalTxs>(&pos)?.map(|frame| (pos, frame)))
                    })
                    .filter_map(Result::transpose);
                paging.page(calls, wanted)?
            }
            (None, Some(blocks), None) => paging.page(r.calls_in(blocks, paging.order), wanted)?,
        };
        let headers = headers(r, frames.iter().map(|(p, _)| p.block))?;
        let items = frames
            .iter()
            .filter_map(|(pos, f)| {
                let header = headers.get(&pos.block)?;
                let creates = kind_creates(f.kind);
                Some(json!({
                    "blockNumber": pos.block.to_string(),
                    "timeStamp": header.timestamp.to_string(),
                    "transactionHash": format!("{:#x}", f.tx_hash),
                    "index": pos.index.to_string(),
                    "from": lower(&f.from),
                    "to": if creates { String::new() } else { f.to.as_ref().map(lower).unwrap_or_default() },
                    "contractAddress": f.created.as_ref().map(lower).unwrap_or_default(),
                    "value": f.value.to_string(),
                    "gas": f.gas.to_string(),
                    "gasUsed": f.gas_used.to_string(),
                    "input": "",
                    "type": call_type(f.kind).0,
                    "callType": call_type(f.kind).1,
                    "isError": if f.success { "0" } else { "1" },
                    "errCode": f.error.clone().unwrap_or_default(),
                }))
            })
            .collect();
        Ok(Answer::list(items, "No internal transactions found"))
    })
    .await
}

fn kind_creates(kind: CallKind) -> bool {
    matches!(kind, CallKind::Create | CallKind::Create2)
}

/// Etherscan's `type` and `callType` of a frame.
fn call_type(kind: CallKind) -> (&'static str, &'static str) {
    match kind {
        CallKind::Create => ("create", ""),
        CallKind::Create2 => ("create2", ""),
        CallKind::SelfDestruct => ("selfdestruct", ""),
        other => ("call", other.label()),
    }
}

/// The token standard of `tokentx`, `tokennfttx` and `token1155tx`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Standard {
    Erc20,
    Erc721,
    Erc1155,
}

impl Standard {
    fn kind(self) -> TokenKind {
        match self {
            Standard::Erc20 => TokenKind::Erc20,
            Standard::Erc721 => TokenKind::Erc721,
            Standard::Erc1155 => TokenKind::Erc1155,
        }
    }
}

/// `tokentx`, `tokennfttx`, `token1155tx`: token transfers of an address, of a token, or of both.
pub(super) async fn tokentx(
    params: Params,
    state: &AppState,
    deadline: tokio::time::Instant,
    standard: Standard,
) -> Outcome {
    let address = params.opt_address("address", "Invalid address format")?;
    let token = params.opt_address("contractaddress", "Invalid contract address format")?;
    if address.is_none() && token.is_none() {
        return Err(bad("Query parameter address or contractaddress is required"));
    }
    let paging = params.paging(super::RESULT_WINDOW, true)?;
    read(state, deadline, move |r| {
        let tip = r.tip()?.map(|t| t.number);
        let Some(blocks) = paging.blocks_upto(tip) else {
            return Ok(Answer::list(vec![], "No token transfers found"));
        };
        let positions: Box<dyn Iterator<Item = StoreResult<TransferPos>>> = match address {
            Some(address) => Box::new(
                r.address_transfers_in(address, blocks, paging.order)
                    .map(|row| row.map(|(k, bits)| (k.pos, bits)))
                    .filter(|row| {
                        row.as_ref().map_or(true, |(_, bits)| bits & (direction::SENT | direction::RECEIVED) != 0)
                    })
                    .map(|row| row.map(|(pos, _)| pos)),
            ),
            None => Box::new(
                r.token_transfers_in(token.expect("checked above"), blocks, paging.order)
                    .map(|row| row.map(|(k, ())| k.pos)),
            ),
        };
        let transfers = positions
            .map(|pos| {
                let pos = pos?;
                Ok(r.get::<Transfers>(&pos)?.map(|t| (pos, t)))
            })
            .filter_map(Result::transpose);
        let rows: Vec<(TransferPos, TokenTransferRecord)> =
            paging.page(transfers, |(_, t)| t.kind == standard.kind() && token.is_none_or(|token| token == t.token))?;
        let tip = tip.unwrap_or(0);
        let headers = headers(r, rows.iter().map(|(p, _)| p.block))?;
        let mut tokens = HashMap::new();
        let mut txs: HashMap<BlockPos, Option<TxRecord>> = HashMap::new();
        let called = contracts(r, rows.iter().map(|(_, t)| t.token))?;
        let mut cumulative = CumulativeGas::default();
        let mut items = Vec::with_capacity(rows.len());
        for (pos, t) in &rows {
            let tx_pos = BlockPos { block: pos.block, index: t.tx_index };
            if let Entry::Vacant(slot) = txs.entry(tx_pos) {
                slot.insert(r.get::<Transactions>(&tx_pos)?);
            }
            if let Entry::Vacant(slot) = tokens.entry(t.token) {
                slot.insert(token_json(r, &t.token)?);
            }
            let (Some(Some(tx)), Some(header)) = (txs.get(&tx_pos), headers.get(&pos.block)) else { continue };
            let meta =
                tokens.get(&t.token).and_then(|m| m.as_ref()).map(|m| serde_json::to_value(m).unwrap_or_default());
            let text = |field: &str| meta.as_ref().and_then(|m| m[field].as_str()).unwrap_or_default().to_string();
            let mut item = Map::new();
            let fields = [
                ("blockNumber", json!(pos.block.to_string())),
                ("timeStamp", json!(header.timestamp.to_string())),
                ("hash", json!(format!("{:#x}", tx.hash))),
                ("nonce", json!(tx.nonce.to_string())),
                ("blockHash", json!(format!("{:#x}", header.hash))),
                ("from", json!(lower(&t.from))),
                ("contractAddress", json!(lower(&t.token))),
                ("to", json!(lower(&t.to))),
                ("tokenName", json!(text("name"))),
                ("tokenSymbol", json!(text("symbol"))),
                // NFTs have no decimals: Etherscan says "0" (Blockscout ""), which clients parse as a number.
                ("tokenDecimal", json!(if t.kind == TokenKind::Erc20 { text("decimals") } else { "0".into() })),
                ("transactionIndex", json!(t.tx_index.to_string())),
                ("logIndex", json!(pos.log.to_string())),
                ("gas", json!(tx.gas_limit.to_string())),
                ("gasPrice", json!(tx.effective_gas_price.to_string())),
                ("gasUsed", json!(tx.gas_used.to_string())),
                ("cumulativeGasUsed", json!(cumulative.at(r, tx_pos)?.to_string())),
                // Etherscan's answer: the transaction's input once per transfer made an airdrop's 5,000
                // transfers 1.6 GB.
                ("input", json!("deprecated")),
                ("methodId", json!(method_id(tx))),
                ("functionName", json!(function_name(tx, &called))),
                ("confirmations", json!(tip.saturating_sub(pos.block).to_string())),
            ];
            item.extend(fields.into_iter().map(|(k, v)| (k.to_string(), v)));
            let id = t.token_id.map(|id| id.to_string()).unwrap_or_default();
            match standard {
                Standard::Erc20 => item.insert("value".into(), json!(t.amount.to_string())),
                Standard::Erc721 => item.insert("tokenID".into(), json!(id)),
                Standard::Erc1155 => {
                    item.insert("tokenID".into(), json!(id));
                    item.insert("tokenValue".into(), json!(t.amount.to_string()))
                }
            };
            items.push(Value::Object(item));
        }
        Ok(Answer::list(items, "No token transfers found"))
    })
    .await
}

/// `tokenbalance`: what an address holds of one token (ERC-721: the number of ids).
pub(super) async fn tokenbalance(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let missing: Vec<&str> = ["address", "contractaddress"].into_iter().filter(|k| params.get(k).is_none()).collect();
    if !missing.is_empty() {
        return Err(bad(format!("Required query parameters missing: {}", missing.join(", "))));
    }
    let token = params.address("contractaddress", "", "Invalid contractaddress format")?;
    let holder = params.address("address", "", "Invalid address format")?;
    read(state, deadline, move |r| {
        let held = r.get::<TokenHolders>(&HolderKey { token, holder })?.map(|a| a.0).unwrap_or_default();
        Ok(Answer::Ok(json!(held.to_string())))
    })
    .await
}

/// `tokenlist`: every token an address holds a positive balance of.
pub(super) async fn tokenlist(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let holder = params.address("address", "Query parameter address is required", "Invalid address format")?;
    read(state, deadline, move |r| {
        let mut items = Vec::new();
        let mut tokens = HashMap::new();
        for row in r.balances(holder, None).take(super::RESULT_WINDOW as usize) {
            let (key, amount) = row?;
            if amount.0.is_zero() {
                continue;
            }
            if let Entry::Vacant(slot) = tokens.entry(key.token) {
                slot.insert(token_json(r, &key.token)?.map(|t| serde_json::to_value(t).unwrap_or_default()));
            }
            let Some(Some(meta)) = tokens.get(&key.token) else { continue };
            let mut item = json!({
                "balance": amount.0.to_string(),
                "contractAddress": lower(&key.token),
                "decimals": meta["decimals"].as_str().unwrap_or_default(),
                "name": meta["name"].as_str().unwrap_or_default(),
                "symbol": meta["symbol"].as_str().unwrap_or_default(),
                "type": meta["type"].as_str().unwrap_or_default(),
            });
            if meta["type"].as_str() != Some("ERC-20") {
                item["id"] = json!(key.id.to_string());
            }
            items.push(item);
        }
        Ok(Answer::list(items, "No tokens found"))
    })
    .await
}

/// `getminedblocks`: blocks whose fee recipient is the address, newest first. Without an index by miner this walks
/// the headers (each one a cached read), and only when the account record says the address mined something.
pub(super) async fn getminedblocks(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let address = params.address("address", "Query parameter 'address' is required", "Invalid address format")?;
    let paging = params.paging(super::RESULT_WINDOW, false)?;
    read(state, deadline, move |r| {
        let mined = r.get::<Accounts>(&address)?.map_or(0, |a| a.blocks_mined);
        let tip = r.tip()?.map(|t| t.number);
        let (true, Some(tip)) = (mined > 0, tip) else {
            return Ok(Answer::list(vec![], "No blocks found"));
        };
        let rows = paging.page(r.blocks_in(0..=tip, Order::NewestFirst), |(_, h)| h.miner == address)?;
        let items = rows
            .iter()
            .map(|(_, h)| {
                json!({
                    "blockNumber": h.number.to_string(),
                    "timeStamp": h.timestamp.to_string(),
                    "blockReward": h.priority_fees.to_string(),
                })
            })
            .collect();
        Ok(Answer::list(items, "No blocks found"))
    })
    .await
}

//! `module=logs`, `token`, `stats`, `block`, `transaction` and the read actions of `contract`.

use super::{bad, lower, read, Answer, HexBudget, Outcome, Params, Refusal};
use crate::api::rest::blocks::Countdown;
use crate::api::rest::headers;
use crate::api::rest::smart_contracts::{contract_info, matched_artifact, stored_facts};
use crate::api::rest::tokens::token_json;
use crate::api::rest::transactions::Replay;
use crate::api::AppState;
use crate::contracts::creation::{args_belong, CreationInput};
use crate::store::keys::BlockPos;
use crate::store::records::{ContractRecord, LogRecord};
use crate::store::tables::{Accounts, CoinBalanceNow, Contracts as ContractRows, Logs, Tokens};
use crate::store::{Order, Reader, StoreResult};
use alloy::primitives::{Address, B256, U256};
use serde_json::{json, Value};

/// Logs per page of `gettxinfo`.
const TX_INFO_LOGS: usize = 50;

/// Which side of a timestamp `getblocknobytime` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closest {
    /// The last block at or before the time.
    Before,
    /// The first block at or after the time.
    After,
}

/// The block nearest `time` on the `closest` side among the indexed blocks (timestamps never decrease along the
/// chain), by binary search over headers.
pub(super) fn block_at_time(r: &Reader<'_>, time: u64, closest: Closest) -> StoreResult<Option<u64>> {
    let Some(tip) = r.tip()?.map(|t| t.number) else { return Ok(None) };
    let Some((_, first)) = r.blocks_in(0..=tip, Order::OldestFirst).next().transpose()? else { return Ok(None) };
    let timestamp = |n: u64| -> StoreResult<u64> { Ok(r.block(n)?.map_or(u64::MAX, |h| h.timestamp)) };
    // The first block whose timestamp is past `time` (Before) or at least `time` (After).
    let (mut lo, mut hi) = (first.number, tip + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let t = timestamp(mid)?;
        let past = match closest {
            Closest::Before => t > time,
            Closest::After => t >= time,
        };
        if past {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(match closest {
        Closest::Before => lo.checked_sub(1).filter(|n| *n >= first.number),
        Closest::After => (lo <= tip).then_some(lo),
    })
}

/// A `fromBlock`/`toBlock` value: a number or `latest`.
fn block_param(params: &Params, key: &str, tip: u64) -> Result<Option<u64>, Refusal> {
    match params.get(key) {
        None => Ok(None),
        Some("latest") => Ok(Some(tip)),
        Some(raw) => raw.parse::<u64>().map(Some).map_err(|_| bad(format!("Invalid {key} format"))),
    }
}

fn hex_u64(n: u64) -> String {
    format!("{n:#x}")
}

/// `getLogs`: logs of a block range (default: every indexed block) by emitter and topics (`topicX_Y_opr` joins two
/// topic conditions), oldest first, a page of at most [`super::MAX_LOGS`].
pub(super) async fn getlogs(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let tip = state.store.view().tip()?.map(|t| t.number).unwrap_or(0);
    let from = block_param(&params, "fromBlock", tip)?;
    let to = block_param(&params, "toBlock", tip)?;
    let address = params.opt_address("address", "Invalid address format")?;
    let mut topics: [Option<B256>; 4] = [None; 4];
    for (i, slot) in topics.iter_mut().enumerate() {
        let key = format!("topic{i}");
        if let Some(raw) = params.get(&key) {
            *slot = Some(super::parse_hash(raw).ok_or_else(|| bad(format!("Invalid {key} format")))?);
        }
    }
    // Blockscout requires both block bounds; clients that leave one out (blockparty sends no `toBlock` by default)
    // get the whole indexed chain on that side instead of a refusal.
    let mut missing = Vec::new();
    if address.is_none() && topics.iter().all(Option::is_none) {
        missing.push("address and/or topic{x}".to_string());
    }
    // Every pair of given topics needs its operator.
    let mut operators = Vec::new();
    for a in 0..4 {
        for b in a + 1..4 {
            if topics[a].is_none() || topics[b].is_none() {
                continue;
            }
            let key = format!("topic{a}_{b}_opr");
            match params.get(&key) {
                None => missing.push(key),
                Some("and") => operators.push((a, b, true)),
                Some("or") => operators.push((a, b, false)),
                Some(_) => return Err(bad(format!("Invalid {key} format"))),
            }
        }
    }
    if !missing.is_empty() {
        return Err(bad(format!("Required query parameters missing: {}", missing.join(", "))));
    }
    let (from, to) = (from.unwrap_or(0), to.unwrap_or(tip).min(tip));
    // Etherscan's paging: `offset` logs (at most 1,000, the default) of page `page`, within the window.
    let (skip, take) = params.window(super::MAX_LOGS as u64, super::MAX_LOGS as u64, true)?;
    let matches = move |log: &LogRecord| -> bool {
        if address.is_some_and(|a| a != log.address) {
            return false;
        }
        let hit = |i: usize| topics[i].is_none_or(|t| log.topics.get(i) == Some(&t));
        // Blockscout's rule: one clause per pair of given topics, `a and b` or `a or b` by the pair's operator,
        // and a log satisfies every clause. With one topic or none there are no pairs.
        if operators.is_empty() {
            (0..4).all(hit)
        } else {
            operators.iter().all(|&(a, b, and)| if and { hit(a) && hit(b) } else { hit(a) || hit(b) })
        }
    };
    read(state, deadline, move |r| {
        if from > to {
            return Ok(Answer::list(vec![], "No logs found"));
        }
        let emitted: Box<dyn Iterator<Item = StoreResult<(BlockPos, LogRecord)>>> = match address {
            Some(address) => Box::new(
                r.address_logs_in(address, from..=to)
                    .map(|row| {
                        let pos = row?.0.pos;
                        Ok(r.get::<Logs>(&pos)?.map(|log| (pos, log)))
                    })
                    .filter_map(Result::transpose),
            ),
            None => Box::new(r.logs_in(from..=to)),
        };
        let found: Vec<(BlockPos, LogRecord)> = emitted
            .filter(|row| row.as_ref().map_or(true, |(_, log)| matches(log)))
            .skip(skip)
            .take(take)
            .collect::<StoreResult<_>>()?;
        let headers = headers(r, found.iter().map(|(p, _)| p.block))?;
        let mut txs = std::collections::HashMap::new();
        let mut items = Vec::with_capacity(found.len());
        let mut budget = HexBudget::default();
        for (pos, log) in &found {
            let Some(header) = headers.get(&pos.block) else { continue };
            let Some(data) = budget.hex(&log.data) else { return Ok(Answer::refuse(HexBudget::EXCEEDED)) };
            let tx_pos = BlockPos { block: pos.block, index: log.tx_index };
            if let std::collections::hash_map::Entry::Vacant(slot) = txs.entry(tx_pos) {
                slot.insert(r.get::<crate::store::tables::Transactions>(&tx_pos)?);
            }
            let tx = txs.get(&tx_pos).and_then(|t| t.as_ref());
            // Only the topics the log has (Etherscan's form; Blockscout pads to four with nulls, which typed
            // Etherscan clients refuse).
            let topics: Vec<String> = log.topics.iter().map(|t| format!("{t:#x}")).collect();
            items.push(json!({
                "address": lower(&log.address),
                "topics": topics,
                "data": data,
                "blockNumber": hex_u64(pos.block),
                "timeStamp": hex_u64(header.timestamp),
                "gasPrice": tx.map(|t| format!("{:#x}", t.effective_gas_price)).unwrap_or_default(),
                "gasUsed": tx.map(|t| hex_u64(t.gas_used)).unwrap_or_default(),
                "logIndex": hex_u64(pos.index as u64),
                "transactionHash": format!("{:#x}", log.tx_hash),
                "transactionIndex": hex_u64(log.tx_index as u64),
                "blockHash": format!("{:#x}", header.hash),
            }));
        }
        Ok(Answer::list(items, "No logs found"))
    })
    .await
}

fn contract_param(params: &Params, invalid: &str) -> Result<Address, Refusal> {
    params.address("contractaddress", "Query parameter contract address is required", invalid)
}

/// `getToken`: a token's kind, name, symbol, supply and decimals.
pub(super) async fn gettoken(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let token = contract_param(&params, "Invalid contract address hash")?;
    read(state, deadline, move |r| {
        let Some(json) = token_json(r, &token)? else { return Ok(Answer::refuse("Contract address not found")) };
        let meta = serde_json::to_value(json).unwrap_or_default();
        Ok(Answer::Ok(json!({
            "type": meta["type"],
            "name": meta["name"],
            "symbol": meta["symbol"],
            "totalSupply": meta["total_supply"],
            "decimals": meta["decimals"],
            "contractAddress": lower(&token),
            "cataloged": true,
        })))
    })
    .await
}

/// `getTokenHolders`: holders, largest first (default page of 10).
pub(super) async fn gettokenholders(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let token = contract_param(&params, "Invalid contract address hash")?;
    let paging = params.paging(10, false)?;
    read(state, deadline, move |r| {
        if r.get::<Tokens>(&token)?.is_none() {
            return Ok(Answer::refuse("Contract address not found"));
        }
        let rows = paging.page(r.holders(token, None), |_| true)?;
        let items =
            rows.iter().map(|(k, ())| json!({"address": lower(&k.holder), "value": k.amount.to_string()})).collect();
        Ok(Answer::Ok(Value::Array(items)))
    })
    .await
}

/// `stats/tokensupply`.
pub(super) async fn tokensupply(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let token = contract_param(&params, "Invalid contract address format")?;
    read(state, deadline, move |r| match r.get::<Tokens>(&token)? {
        Some(record) => Ok(Answer::Ok(json!(record.total_supply.to_string()))),
        None => Ok(Answer::refuse("contract address not found")),
    })
    .await
}

/// `stats/ethsupply`: the native coin's supply as Blockscout computes it: the sum of the latest indexed balance of
/// every address the index has seen (`coin_balance_now`), in wei. Addresses never named by an indexed block (an
/// untouched genesis allocation) are not in it. A scan of one row per address, bounded by the request's deadline.
pub(super) async fn ethsupply(state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    read(state, deadline, |r| {
        let mut total = U256::ZERO;
        for row in r.rows::<CoinBalanceNow>() {
            total = total.saturating_add(row?.1.value);
        }
        Ok(Answer::Ok(json!(total.to_string())))
    })
    .await
}

/// `stats/coinprice`: this explorer has no price feed, so every price is `null` (as Blockscout answers without one).
pub(super) fn coinprice() -> Answer {
    Answer::Ok(json!({"coin_btc": null, "coin_btc_timestamp": null, "coin_usd": null, "coin_usd_timestamp": null}))
}

/// `stats/ethprice` (Etherscan's name, gone from newest Blockscout): `null` prices, no feed.
pub(super) fn ethprice() -> Answer {
    Answer::Ok(json!({"ethbtc": null, "ethbtc_timestamp": null, "ethusd": null, "ethusd_timestamp": null}))
}

fn blockno(params: &Params) -> Result<u64, Refusal> {
    let raw = params.get("blockno").ok_or_else(|| bad("Query parameter 'blockno' is required"))?;
    raw.parse::<u64>().map_err(|_| bad("Invalid block number"))
}

/// `getblockreward`: the fee recipient and what it earned in priority fees (no issuance is known to the index).
pub(super) async fn getblockreward(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let number = blockno(&params)?;
    read(state, deadline, move |r| {
        let Some(h) = r.block(number)? else { return Ok(Answer::refuse("Block does not exist")) };
        Ok(Answer::Ok(json!({
            "blockNumber": h.number.to_string(),
            "timeStamp": h.timestamp,
            "blockMiner": lower(&h.miner),
            "blockReward": h.priority_fees.to_string(),
            "uncles": [],
            "uncleInclusionReward": "0",
        })))
    })
    .await
}

/// `getblocknobytime`: the block nearest a unix time, before or after it.
pub(super) async fn getblocknobytime(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let raw = params.get("timestamp").ok_or_else(|| bad("Query parameter 'timestamp' is required"))?;
    let time = raw.parse::<u64>().map_err(|_| bad("Invalid `timestamp` param"))?;
    let closest = match params.get("closest") {
        None => return Err(bad("Query parameter 'closest' is required")),
        Some("before") => Closest::Before,
        Some("after") => Closest::After,
        Some(_) => return Err(bad("Invalid `closest` param")),
    };
    read(state, deadline, move |r| match block_at_time(r, time, closest)? {
        Some(number) => Ok(Answer::Ok(json!(number.to_string()))),
        None => Ok(Answer::refuse("Block does not exist")),
    })
    .await
}

/// `getblockcountdown`: blocks and estimated seconds until a future block, from the recent average block time.
pub(super) async fn getblockcountdown(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let target = blockno(&params)?;
    read(state, deadline, move |r| {
        Ok(match Countdown::to(r, target)? {
            Countdown::Indexing => Answer::refuse("Chain is indexing now, try again later"),
            Countdown::Passed => Answer::refuse("Error! Block number already pass"),
            Countdown::Ahead { tip, remaining, seconds } => Answer::Ok(json!({
                "CurrentBlock": tip.to_string(),
                "CountdownBlock": target.to_string(),
                "RemainingBlock": remaining.to_string(),
                "EstimateTimeInSec": format!("{seconds:.1}"),
            })),
        })
    })
    .await
}

/// `eth_block_number`: the indexed tip, JSON-RPC style.
pub(super) fn eth_block_number(params: &Params, state: &AppState) -> Outcome {
    let tip = state.store.view().tip()?.map(|t| t.number).unwrap_or(0);
    Ok(Answer::Rpc(json!({"jsonrpc": "2.0", "result": hex_u64(tip), "id": params.rpc_id()})))
}

/// A revert reason as Etherscan's text: an `Error(string)`'s message or a `Panic`'s code, else the decoded form;
/// empty when the node gave none.
async fn revert_text(replay: Option<Replay>, state: &AppState) -> String {
    let Some(replay) = replay else { return String::new() };
    replay.reason(state).await.map(|reason| reason_text(&reason)).unwrap_or_default()
}

/// A decoded revert reason as one line of text: an `Error(string)`'s message, a panic's code with what Solidity
/// means by it, a custom error as `Name(values…)`, else the raw revert data.
fn reason_text(reason: &Value) -> String {
    let values: Vec<String> = reason["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["value"].as_str().map_or_else(|| p["value"].to_string(), str::to_owned))
        .collect();
    let call = reason["method_call"].as_str().unwrap_or_default();
    let name = call.split('(').next().unwrap_or_default();
    match (name, values.as_slice()) {
        ("Error", [message]) => message.clone(),
        ("Panic", [code]) => {
            let code = code.parse::<alloy::primitives::U256>().unwrap_or(alloy::primitives::U256::MAX);
            let meaning = match code.saturating_to::<u64>() {
                0x01 => "assertion failed",
                0x11 => "arithmetic underflow or overflow",
                0x12 => "division or modulo by zero",
                0x21 => "invalid enum value",
                0x22 => "invalid storage byte array",
                0x31 => "pop from an empty array",
                0x32 => "array index out of bounds",
                0x41 => "out of memory",
                0x51 => "call to an uninitialized function",
                _ => "panic",
            };
            format!("Panic({code:#04x}): {meaning}")
        }
        ("", _) => reason["raw"].as_str().map_or_else(String::new, |raw| format!("Reverted with {raw}")),
        (name, values) => format!("{name}({})", values.join(", ")),
    }
}

/// `gettxinfo`: a mined transaction with its logs (50 per page, `index` continues).
pub(super) async fn gettxinfo(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let hash = params.tx_hash()?;
    let after = params.lenient_u64("index");
    let (mut answer, replay) = read(state, deadline, move |r| {
        let Some((pos, tx)) = r.tx(hash)? else { return Ok((Answer::refuse("Transaction not found"), None)) };
        let Some(header) = r.block(pos.block)? else { return Ok((Answer::refuse("Transaction not found"), None)) };
        let tip = r.tip()?.map(|t| t.number).unwrap_or(0);
        let start = after.map_or(tx.first_log, |i| u32::try_from(i).unwrap_or(u32::MAX).saturating_add(1));
        let logs = r.tx_logs(pos.block, &tx, start, TX_INFO_LOGS + 1)?;
        // The input, then as many logs as fit in the budget (the next page starts after the last shown).
        let mut budget = HexBudget::default();
        let Some(input) = budget.hex(&tx.input) else { return Ok((Answer::refuse(HexBudget::EXCEEDED), None)) };
        let mut log_items = Vec::new();
        for (k, log) in logs.iter().take(TX_INFO_LOGS) {
            let Some(data) = budget.hex(&log.data) else { break };
            let topics: Vec<Value> =
                (0..4).map(|i| log.topics.get(i).map_or(Value::Null, |t| json!(format!("{t:#x}")))).collect();
            log_items.push(
                json!({"address": lower(&log.address), "data": data, "topics": topics, "index": k.index.to_string()}),
            );
        }
        if log_items.is_empty() && !logs.is_empty() {
            return Ok((Answer::refuse(HexBudget::EXCEEDED), None));
        }
        let shown = &logs[..log_items.len()];
        let more = logs.len() > shown.len();
        let next = shown.last().filter(|_| more).map(|(k, _)| {
            json!({"action": "gettxinfo", "index": k.index, "module": "transaction", "txhash": format!("{hash:#x}")})
        });
        let answer = Answer::Ok(json!({
            "hash": format!("{hash:#x}"),
            "timeStamp": header.timestamp.to_string(),
            "blockNumber": pos.block.to_string(),
            "confirmations": tip.saturating_sub(pos.block).to_string(),
            "success": tx.succeeded(),
            "from": lower(&tx.from),
            "to": tx.to.as_ref().map(lower).unwrap_or_default(),
            "value": tx.value.to_string(),
            "input": input,
            "gasLimit": tx.gas_limit.to_string(),
            "gasUsed": tx.gas_used.to_string(),
            "gasPrice": tx.effective_gas_price.to_string(),
            "revertReason": "",
            "logs": log_items,
            "next_page_params": next,
        }));
        Ok((answer, Replay::of(r, pos, &tx)?))
    })
    .await?;
    if let (Answer::Ok(value), Some(_)) = (&mut answer, &replay) {
        value["revertReason"] = json!(revert_text(replay, state).await);
    }
    Ok(answer)
}

/// `getstatus`: whether a transaction failed and why ("Reverted" when the node gives no reason).
pub(super) async fn getstatus(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let hash = params.tx_hash()?;
    let replay = read(state, deadline, move |r| match r.tx(hash)? {
        Some((pos, tx)) => Replay::of(r, pos, &tx),
        None => Ok(None),
    })
    .await?;
    let failed = replay.is_some();
    let reason = revert_text(replay, state).await;
    let description = match (failed, reason.is_empty()) {
        (false, _) => String::new(),
        (true, true) => "Reverted".to_string(),
        (true, false) => reason,
    };
    Ok(Answer::Ok(json!({"isError": if failed { "1" } else { "0" }, "errDescription": description})))
}

/// `gettxreceiptstatus`: `"1"` success, `"0"` failure, `""` unknown or pending.
pub(super) async fn gettxreceiptstatus(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let hash = params.tx_hash()?;
    read(state, deadline, move |r| {
        let status = match r.tx(hash)?.map(|(_, tx)| tx.status) {
            Some(Some(true)) => "1",
            Some(Some(false)) => "0",
            _ => "",
        };
        Ok(Answer::Ok(json!({"status": status})))
    })
    .await
}

/// Most addresses of one `getcontractcreation`.
const CREATION_LIMIT: usize = 10;

/// `getcontractcreation`: creator, creation transaction and creation input of up to 10 contracts.
pub(super) async fn getcontractcreation(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    const MISSING: &str = "Query parameter contractaddresses is required";
    let raw = params
        .get("contractaddresses")
        .ok_or_else(|| Refusal::Answer(Answer::NotOk(MISSING.into(), json!(MISSING))))?;
    // As Blockscout: the first ten entries, of which those that are no address are left out like unknown ones.
    let addresses: Vec<Address> =
        raw.split(',').take(CREATION_LIMIT).filter_map(|a| super::parse_address(a.trim())).collect();
    let found = read(state, deadline, move |r| {
        let mut items = Vec::new();
        for address in addresses {
            let direct = r.get::<Accounts>(&address)?.and_then(|a| a.creation);
            let (creator, tx_hash, factory) = match direct {
                Some(c) => (c.creator, c.tx, None),
                None => match crate::api::rest::traces::internal_creation(r, address)? {
                    Some(c) => (c.creator, c.tx, Some(c.creator)),
                    None => continue,
                },
            };
            let Some((pos, tx)) = r.tx(tx_hash)? else { continue };
            let Some(header) = r.block(pos.block)? else { continue };
            let input = CreationInput::of(r, tx_hash, address)?;
            let item = json!({
                "contractAddress": lower(&address),
                "contractCreator": lower(&if factory.is_some() { tx.from } else { creator }),
                "txHash": format!("{tx_hash:#x}"),
                "blockNumber": pos.block.to_string(),
                "timestamp": header.timestamp.to_string(),
                "contractFactory": factory.as_ref().map(lower).unwrap_or_default(),
            });
            items.push((address, item, input));
        }
        Ok(items)
    })
    .await?;
    // A creation inside a call has its init code in the node's trace of the transaction only: each transaction is
    // traced once, all within `node_read_timeout` (an empty string where the node gives none).
    let limit = state.config.node_read_timeout.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
    let creations = found.iter().map(|(address, _, input)| (*address, input.clone())).collect();
    let codes = state.creation_inputs(creations, limit).await;
    let items = found.into_iter().zip(codes).map(|((_, mut item, _), code)| {
        item["creationBytecode"] = json!(code.map(|c| format!("{c:#x}")).unwrap_or_default());
        item
    });
    Ok(Answer::Ok(Value::Array(items.collect())))
}

/// Etherscan's text for a contract without verified source (Foundry and Hardhat look for it).
const NOT_VERIFIED: &str = "Contract source code not verified";

/// `getabi`: the ABI (as a JSON string) of a contract whose code matched a local build artifact; this explorer
/// verifies nothing else yet, so every other address answers "not verified".
pub(super) async fn getabi(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let address = params.address("address", "Query parameter address is required", "Invalid address hash")?;
    read(state, deadline, move |r| match matched_artifact(r, &address)? {
        Some(known) => Ok(Answer::Ok(json!(serde_json::to_string(&known.artifact.abi.json).unwrap_or_default()))),
        None => Ok(Answer::refuse(NOT_VERIFIED)),
    })
    .await
}

/// `listcontracts`: contracts in address order, `filter=verified|unverified` (`1|2`); `empty` (`3`, contracts
/// without code) lists nothing, since only contracts with code are stored. Pages of `offset` (default 10).
pub(super) async fn listcontracts(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let wanted = match params.get("filter") {
        None => None,
        Some("verified" | "1") => Some(true),
        Some("unverified" | "2") => Some(false),
        Some("empty" | "3") => return Ok(Answer::Ok(json!([]))),
        Some(_) => {
            return Err(Refusal::Translator(
                hyper::StatusCode::BAD_REQUEST,
                "Not a valid value for `filter`. Please use one of: verified, unverified, empty, 1, 2, 3.",
            ))
        }
    };
    let paging = params.paging(10, true)?;
    read(state, deadline, move |r| {
        // Accounts an EIP-7702 authorization delegates hold code but are no contracts.
        let listed = |row: StoreResult<(Address, ContractRecord)>| -> StoreResult<Option<_>> {
            let address = row?.0;
            Ok(match stored_facts(r, &address)? {
                Some(facts) if facts.delegate_of.is_some() => None,
                facts => Some((address, facts.and_then(|f| f.known))),
            })
        };
        let contracts = r.contracts_after(None).filter_map(|row| listed(row).transpose());
        let shown = paging.page(contracts, |(_, known)| wanted.is_none_or(|verified| verified == known.is_some()))?;
        let items: Vec<Value> = shown
            .into_iter()
            .map(|(address, known)| match known {
                Some(known) => {
                    let artifact = &known.artifact;
                    json!({
                        "Address": lower(&address),
                        "ABI": serde_json::to_string(&artifact.abi.json).unwrap_or_default(),
                        "ContractName": artifact.name,
                        "CompilerVersion": artifact.compiler_version.as_ref().map(|v| format!("v{v}")).unwrap_or_default(),
                        "OptimizationUsed": if artifact.optimization().0 == Some(true) { "1" } else { "0" },
                    })
                }
                None => json!({"Address": lower(&address), "ABI": NOT_VERIFIED}),
            })
            .collect();
        Ok(Answer::Ok(Value::Array(items)))
    })
    .await
}

/// `SourceCode` in Etherscan's forms: one file as is, or a standard-JSON input in double braces (several files, or
/// settings the flat fields cannot say, such as `viaIR`), with the compiler `settings` the verifier was given.
fn source_code(sources: &[(String, String)], settings: Option<&Value>) -> String {
    let via_ir = settings.is_some_and(|s| s["viaIR"] == Value::Bool(true));
    match sources {
        [] => String::new(),
        [(_, only)] if !via_ir => only.clone(),
        many => {
            let files: serde_json::Map<String, Value> =
                many.iter().map(|(path, text)| (path.clone(), json!({"content": text}))).collect();
            let mut input = json!({"language": "Solidity", "sources": files});
            if let Some(settings) = settings {
                input["settings"] = settings.clone();
            }
            format!("{{{input}}}")
        }
    }
}

/// `getsourcecode`: what a verified source (first) or a matched local artifact says (name, ABI, sources, compiler, settings), else the full
/// "not verified" record that Etherscan clients parse.
pub(super) async fn getsourcecode(params: Params, state: &AppState, deadline: tokio::time::Instant) -> Outcome {
    let address = params.address("address", "Query parameter address is required", "Invalid address hash")?;
    let (mut answer, args) = read(state, deadline, move |r| {
        let info = contract_info(r, &address)?;
        let implementation = info.as_ref().and_then(|i| i.implementations.first()).map(|i| lower(&i.address));
        let proxy = if implementation.is_some() { "1" } else { "0" };
        let Some(known) = matched_artifact(r, &address)? else {
            return Ok((
                Answer::Ok(json!([{
                    "Address": lower(&address),
                    "SourceCode": "",
                    "ABI": NOT_VERIFIED,
                    "ContractName": "",
                    "CompilerVersion": "",
                    "OptimizationUsed": "",
                    "Runs": "",
                    "ConstructorArguments": "",
                    "EVMVersion": "",
                    "Library": "",
                    "LicenseType": "",
                    "Proxy": proxy,
                    "Implementation": implementation.unwrap_or_default(),
                    "SwarmSource": "",
                }])),
                None,
            ));
        };
        let artifact = &known.artifact;
        let (optimized, runs) = artifact.optimization();
        let evm = artifact.settings.as_ref().and_then(|s| s["evmVersion"].as_str()).unwrap_or("default");
        // Etherscan's form: `Name:address` pairs joined by `;`.
        let libraries = crate::api::rest::smart_contracts::external_libraries(artifact.settings.as_ref());
        let libraries: Vec<String> = libraries
            .iter()
            .map(|l| {
                format!("{}:{}", l["name"].as_str().unwrap_or_default(), l["address_hash"].as_str().unwrap_or_default())
            })
            .collect();
        // Arguments to check against the current creation (a reorg can put another creation of this code here).
        let args = match (known.verified_constructor_args(), r.get::<ContractRows>(&address)?) {
            (Some(args), Some(row)) if !args.is_empty() => {
                Some((alloy::primitives::Bytes::clone(args), CreationInput::of(r, row.creation_tx, address)?))
            }
            _ => None,
        };
        let answer = Answer::Ok(json!([{
            "Address": lower(&address),
            // A verified source's settings are its input's; a local artifact's come from metadata, in another form.
            "SourceCode": source_code(&artifact.sources, known.verified.as_ref().and(artifact.settings.as_ref())),
            "ABI": serde_json::to_string(&artifact.abi.json).unwrap_or_default(),
            "ContractName": artifact.name,
            "CompilerVersion": artifact.compiler_version.as_ref().map(|v| format!("v{v}")).unwrap_or_default(),
            "OptimizationUsed": if optimized == Some(true) { "1" } else { "0" },
            "Runs": runs.map(|r| r.to_string()).unwrap_or_default(),
            "ConstructorArguments": known.verified_constructor_args().map(alloy::hex::encode).unwrap_or_default(),
            "EVMVersion": evm,
            "Library": libraries.join(";"),
            "LicenseType": artifact.license.clone().unwrap_or_default(),
            "Proxy": proxy,
            "Implementation": implementation.unwrap_or_default(),
            "SwarmSource": "",
            "FileName": artifact.file_path.clone().unwrap_or_default(),
            "MatchType": format!("{:?}", known.kind).to_lowercase(),
            "VerificationSource": known.source_label(),
        }]));
        Ok((answer, args))
    })
    .await?;
    if let (Some((args, creation)), Answer::Ok(result)) = (args, &mut answer) {
        let input = state.creation_input(address, creation, state.config.node_read_timeout).await;
        if !args_belong(&args, input.as_ref()) {
            result[0]["ConstructorArguments"] = json!("");
        }
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_code_carries_the_settings_a_rebuild_needs() {
        let one = vec![("src/A.sol".to_owned(), "contract A {}".to_owned())];
        let plain = json!({"optimizer": {"enabled": true, "runs": 200}});
        assert_eq!(source_code(&one, Some(&plain)), "contract A {}");
        assert_eq!(source_code(&one, None), "contract A {}");
        // viaIR has no flat field: the whole input, settings included.
        let via_ir = json!({"optimizer": {"enabled": true, "runs": 1000}, "viaIR": true});
        let wrapped = source_code(&one, Some(&via_ir));
        let input: Value = serde_json::from_str(&wrapped[1..wrapped.len() - 1]).unwrap();
        assert_eq!(input["settings"], via_ir);
        assert_eq!(input["sources"]["src/A.sol"]["content"], "contract A {}");
        let two = vec![one[0].clone(), ("src/L.sol".to_owned(), "library L {}".to_owned())];
        let libraries = json!({"libraries": {"src/L.sol": {"L": "0x0000000000000000000000000000000000000001"}}});
        let wrapped = source_code(&two, Some(&libraries));
        let input: Value = serde_json::from_str(&wrapped[1..wrapped.len() - 1]).unwrap();
        assert_eq!((input["language"].as_str(), &input["settings"]), (Some("Solidity"), &libraries));
        assert_eq!(input["sources"].as_object().unwrap().len(), 2);
    }

    #[test]
    fn revert_reasons_read_as_one_line() {
        use crate::contracts::abi::{revert_reason, Abi};
        use alloy::sol_types::{Panic, Revert, SolError};
        let text = |data: &[u8]| reason_text(&revert_reason(&[], data).unwrap());
        assert_eq!(text(&Revert::from("nope").abi_encode()), "nope");
        let overflow = Panic { code: alloy::primitives::U256::from(0x11) }.abi_encode();
        assert_eq!(text(&overflow), "Panic(0x11): arithmetic underflow or overflow");
        assert_eq!(text(&[0x22, 0x02, 0xf1, 0xfa]), "Reverted with 0x2202f1fa");
        let custom = Abi::new(alloy::json_abi::JsonAbi::parse(["error Short(uint256 have, address who)"]).unwrap());
        let error = custom.json.errors().next().unwrap();
        let who = alloy::primitives::Address::repeat_byte(1);
        let args = alloy::sol_types::SolValue::abi_encode_params(&(alloy::primitives::U256::from(3), who));
        let data = [&error.selector()[..], &args].concat();
        assert_eq!(
            reason_text(&revert_reason(&[&custom], &data).unwrap()),
            format!("Short(3, {})", who.to_checksum(None))
        );
    }

    #[test]
    fn hex_numbers_are_lowercase_and_zero_is_0x0() {
        assert_eq!(hex_u64(0), "0x0");
        assert_eq!(hex_u64(255), "0xff");
    }
}

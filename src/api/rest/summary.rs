//! `GET /api/v2/transactions/:hash/summary`: what a transaction did, in the shape of Blockscout's transaction
//! interpreter (`{"success": true, "data": {"summaries": [{summary_template, summary_template_variables}]}}`),
//! built from the index alone: a contract creation, a call by method name (the contract's ABI or the well-known
//! signatures), a native transfer and every token transfer with its amount and token.
//!
//! Templates are fixed strings written here; everything taken from the chain (symbols, names, method names) is a
//! typed variable, never template text, so a token named `{sender}` stays a name.

use super::contracts;
use super::tokens::{token_json, tx_transfers};
use crate::api::body::{ok, Body};
use crate::api::json::Contracts;
use crate::api::ApiError;
use crate::chain::decimal_amount;
use crate::store::records::{TokenKind, TokenTransferRecord};
use crate::store::tables::TokenMetadatas;
use crate::store::Reader;
use alloy::primitives::{Address, B256};
use hyper::Response;
use serde_json::{json, Map, Value};

/// Token transfers summarised per transaction (the rest are left out, as the transaction page does).
pub const MAX_TRANSFER_SUMMARIES: usize = 50;

/// Decimals of the native coin.
const NATIVE_DECIMALS: u8 = 18;

/// One summary: a template and its variables.
struct Summary {
    template: &'static str,
    variables: Map<String, Value>,
}

impl Summary {
    fn new(template: &'static str) -> Self {
        Summary { template, variables: Map::new() }
    }

    fn var(mut self, name: &str, kind: &str, value: Value) -> Self {
        self.variables.insert(name.to_owned(), json!({"type": kind, "value": value}));
        self
    }

    fn address(self, name: &str, address: &Address, contracts: &Contracts) -> Self {
        let value = serde_json::to_value(contracts.address(address)).expect("serializes");
        self.var(name, "address", value)
    }

    fn into_json(self) -> Value {
        json!({"summary_template": self.template, "summary_template_variables": self.variables})
    }
}

/// The summary of one token transfer.
fn transfer_summary(
    reader: &Reader<'_>,
    t: &TokenTransferRecord,
    contracts: &Contracts,
) -> crate::store::StoreResult<Option<Summary>> {
    let Some(token) = token_json(reader, &t.token)? else { return Ok(None) };
    let token = serde_json::to_value(token).expect("serializes");
    let decimals = reader.get::<TokenMetadatas>(&t.token)?.and_then(|m| m.decimals).unwrap_or(0);
    let (mint, burn) = (t.from == Address::ZERO, t.to == Address::ZERO);
    let summary = match (t.kind, mint, burn) {
        (TokenKind::Erc721, true, _) => Summary::new("Mint {token} #{token_id} to {receiver}"),
        (TokenKind::Erc721, _, true) => Summary::new("Burn {token} #{token_id} of {sender}"),
        (TokenKind::Erc721, _, _) => Summary::new("Transfer {token} #{token_id} from {sender} to {receiver}"),
        (TokenKind::Erc1155, true, _) => Summary::new("Mint {amount} {token} #{token_id} to {receiver}"),
        (TokenKind::Erc1155, _, true) => Summary::new("Burn {amount} {token} #{token_id} of {sender}"),
        (TokenKind::Erc1155, _, _) => Summary::new("Transfer {amount} {token} #{token_id} from {sender} to {receiver}"),
        (TokenKind::Erc20, true, _) => Summary::new("Mint {amount} {token} to {receiver}"),
        (TokenKind::Erc20, _, true) => Summary::new("Burn {amount} {token} of {sender}"),
        (TokenKind::Erc20, _, _) => Summary::new("Transfer {amount} {token} from {sender} to {receiver}"),
    };
    let mut summary = summary.var("token", "token", token);
    if t.kind != TokenKind::Erc721 {
        summary = summary.var("amount", "currency", json!(decimal_amount(t.amount, decimals)));
    }
    if let Some(id) = t.token_id.filter(|_| t.kind != TokenKind::Erc20) {
        summary = summary.var("token_id", "string", json!(id.to_string()));
    }
    if !mint {
        summary = summary.address("sender", &t.from, contracts);
    }
    if !burn {
        summary = summary.address("receiver", &t.to, contracts);
    }
    Ok(Some(summary))
}

/// `GET /api/v2/transactions/:hash/summary`.
pub fn summary(reader: &Reader<'_>, hash: B256) -> Result<Response<Body>, ApiError> {
    let Some((pos, tx)) = reader.tx(hash)? else { return Err(ApiError::NotFound) };
    let transfers = tx_transfers(reader, pos.block, &tx)?;
    let transfers = &transfers[..transfers.len().min(MAX_TRANSFER_SUMMARIES)];
    let parties = [Some(tx.from), tx.to, tx.created].into_iter().flatten();
    let contracts = contracts(reader, parties.chain(transfers.iter().flat_map(|(_, t)| [t.from, t.to])))?;
    let mut summaries = Vec::new();
    let succeeded = tx.succeeded();
    match tx.to {
        None => {
            let summary = match tx.created.filter(|_| succeeded) {
                Some(created) => {
                    Summary::new("{sender} deployed contract {contract}").address("contract", &created, &contracts)
                }
                None => Summary::new("{sender} failed to deploy a contract"),
            };
            summaries.push(summary.address("sender", &tx.from, &contracts));
        }
        Some(to) if tx.input.len() >= 4 && contracts.is_contract(&to) => {
            let method = contracts.method(&tx.input, Some(&to)).unwrap_or_default();
            let template = if succeeded {
                "{sender} called {method} on {receiver}"
            } else {
                "{sender} failed to call {method} on {receiver}"
            };
            let summary = Summary::new(template).var("method", "method", json!(method));
            summaries.push(summary.address("sender", &tx.from, &contracts).address("receiver", &to, &contracts));
        }
        Some(_) => {}
    }
    if let (Some(to), true) = (tx.to, !tx.value.is_zero()) {
        let template = if succeeded {
            "Transfer {amount} {native} from {sender} to {receiver}"
        } else {
            "Failed to transfer {amount} {native} from {sender} to {receiver}"
        };
        let summary =
            Summary::new(template).var("amount", "currency", json!(decimal_amount(tx.value, NATIVE_DECIMALS)));
        summaries.push(summary.address("sender", &tx.from, &contracts).address("receiver", &to, &contracts));
    }
    for (_, transfer) in transfers {
        summaries.extend(transfer_summary(reader, transfer, &contracts)?);
    }
    let summaries: Vec<Value> = summaries.into_iter().map(Summary::into_json).collect();
    Ok(ok(&json!({"success": true, "data": {"summaries": summaries}})))
}

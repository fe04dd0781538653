//! Building a [`Bundle`] (one block as the index stores it) from the node's block and receipts, with
//! consistency checks, and the transaction body both mined and pool transactions share.

use crate::chain::tokens;
use crate::node::wire::{RpcReceipt, RpcTransaction};
use crate::node::RawBundle;
use crate::store::records::{
    AuthorizationRecord, AuthorizationStatus, BlockRecord, Bundle, LogRecord, TxBody, TxRecord,
};
use alloy::eips::eip7702::{Authorization, SignedAuthorization};
use alloy::primitives::{Address, B64, U256};
use std::collections::HashMap;

/// The node's block and receipts do not fit together (typically the chain moved between the two requests).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("block {number}: {problem}")]
pub struct BundleError {
    /// Block height.
    pub number: u64,
    /// What did not fit.
    pub problem: String,
}

/// The node's transaction as the index stores it, mined or pending.
pub fn tx_body(tx: &RpcTransaction) -> TxBody {
    TxBody {
        hash: tx.hash,
        from: tx.from,
        to: tx.to,
        value: tx.value,
        input: tx.input.clone(),
        nonce: tx.nonce.to(),
        gas_limit: tx.gas.to(),
        gas_price: tx.gas_price.map(|p| p.to()),
        max_fee_per_gas: tx.max_fee_per_gas.map(|p| p.to()),
        max_priority_fee_per_gas: tx.max_priority_fee_per_gas.map(|p| p.to()),
        tx_type: tx.tx_type.map(|t| t.to()).unwrap_or(0),
    }
}

/// Builds the bundle, checking that every receipt belongs to this block's transaction at the same position.
pub fn from_rpc(raw: RawBundle) -> Result<Bundle, BundleError> {
    let RawBundle { block, receipts } = raw;
    let number = block.number.to::<u64>();
    let fail = |problem: String| BundleError { number, problem };
    if receipts.len() != block.transactions.len() {
        return Err(fail(format!("{} receipts for {} transactions", receipts.len(), block.transactions.len())));
    }
    let base_fee = block.base_fee_per_gas.map(|f| f.to::<u128>());
    let mut txs = Vec::with_capacity(block.transactions.len());
    let mut logs = Vec::new();
    let (mut fees, mut priority_fees) = (U256::ZERO, U256::ZERO);
    for (index, (tx, receipt)) in block.transactions.into_iter().zip(receipts).enumerate() {
        check_receipt(&receipt, tx.hash, block.hash).map_err(fail)?;
        let body = tx_body(&tx);
        // Node-supplied prices: a sum that would overflow is capped, never wrapped.
        let effective_gas_price = receipt
            .effective_gas_price
            .map(|p| p.to::<u128>())
            .or(body.gas_price)
            .or_else(|| Some(body.max_fee_per_gas?.min(base_fee?.saturating_add(body.max_priority_fee_per_gas?))))
            .unwrap_or(0);
        let gas_used = receipt.gas_used.to::<u64>();
        fees += U256::from(gas_used) * U256::from(effective_gas_price);
        let tip = effective_gas_price.saturating_sub(base_fee.unwrap_or(0));
        priority_fees += U256::from(gas_used) * U256::from(tip);
        let first_log = u32::try_from(logs.len()).map_err(|_| fail("too many logs".into()))?;
        let created = receipt.contract_address.filter(|_| tx.to.is_none());
        let (mut token_transfers, mut token_creation) = (0u32, false);
        for log in receipt.logs {
            let log = LogRecord {
                address: log.address,
                topics: log.topics,
                data: log.data,
                tx_index: index as u32,
                tx_hash: tx.hash,
            };
            let transfers = tokens::decode(&log);
            token_transfers += transfers.len() as u32;
            token_creation |= created.is_some_and(|c| transfers.iter().any(|t| t.token == c));
            logs.push(log);
        }
        txs.push(TxRecord {
            body,
            status: receipt.status.map(|s| s.to::<u64>() == 1),
            gas_used,
            effective_gas_price,
            created,
            first_log,
            log_count: logs.len() as u32 - first_log,
            authorizations: tx
                .authorization_list
                .into_iter()
                .map(|a| {
                    let inner = Authorization { chain_id: a.chain_id, address: a.address, nonce: a.nonce.to() };
                    let signed = SignedAuthorization::new_unchecked(inner, a.y_parity.to(), a.r, a.s);
                    let authority = signed.recover_authority().ok();
                    // The transaction itself was valid on this chain, so its chain id is the chain's (set-code
                    // transactions always carry one; a node that leaves it out is not taken at its word).
                    let chain_ok = a.chain_id.is_zero() || tx.chain_id.is_none_or(|id| U256::from(id) == a.chain_id);
                    let status = match (chain_ok, authority) {
                        (false, _) => Some(AuthorizationStatus::InvalidChainId),
                        (true, None) => Some(AuthorizationStatus::InvalidSignature),
                        // Settled against the authority's nonce (`settle_authorizations`).
                        (true, Some(_)) => None,
                    };
                    AuthorizationRecord {
                        chain_id: a.chain_id,
                        address: a.address,
                        nonce: a.nonce.to(),
                        y_parity: a.y_parity.to(),
                        r: a.r,
                        s: a.s,
                        authority,
                        status,
                    }
                })
                .collect(),
            token_transfers,
            token_creation,
        });
    }
    let gas_used = block.gas_used.to::<u64>();
    let header = BlockRecord {
        number,
        hash: block.hash,
        parent_hash: block.parent_hash,
        timestamp: block.timestamp.to(),
        miner: block.miner,
        gas_used,
        gas_limit: block.gas_limit.to(),
        base_fee,
        size: block.size.map(|s| s.to()),
        difficulty: block.difficulty.unwrap_or_default(),
        total_difficulty: block.total_difficulty,
        nonce: block.nonce.unwrap_or(B64::ZERO),
        extra_data: block.extra_data,
        uncles: block.uncles,
        withdrawals_count: block.withdrawals.map(|w| w.len() as u32),
        blob_gas_used: block.blob_gas_used.map(|g| g.to()),
        excess_blob_gas: block.excess_blob_gas.map(|g| g.to()),
        tx_count: txs.len() as u32,
        blob_tx_count: txs.iter().filter(|t| t.tx_type == 3).count() as u32,
        log_count: logs.len() as u32,
        fees,
        burnt_fees: U256::from(base_fee.unwrap_or(0)) * U256::from(gas_used),
        priority_fees,
    };
    Ok(Bundle { header, txs, logs, balances: Vec::new() })
}

/// The authorities of `block` whose authorizations wait only for their nonce before the block (signed for this
/// chain by a recoverable key), each once.
pub fn unsettled_authorities(block: &Bundle) -> Vec<Address> {
    let mut found: Vec<Address> = block
        .txs
        .iter()
        .flat_map(|tx| &tx.authorizations)
        .filter(|a| a.status.is_none())
        .filter_map(|a| a.authority)
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// Settles the authorizations of `block` that wait for their authority's nonce, as the chain processes them: in
/// transaction order, each transaction's sender nonce taken first (a sender signing for itself authorizes its
/// nonce + 1), each applied authorization taking the authority's next nonce. `nonces` holds each authority's nonce
/// before the block; an authority missing from it (the node did not serve that state) keeps `None`. Nonces a
/// delegated account's own code spends inside the block (`CREATE`) are not seen.
pub fn settle_authorizations(block: &mut Bundle, nonces: &HashMap<Address, u64>) {
    let mut next = nonces.clone();
    for tx in &mut block.txs {
        if let Some(nonce) = next.get_mut(&tx.from) {
            *nonce = tx.nonce.saturating_add(1);
        }
        for auth in &mut tx.authorizations {
            let (None, Some(authority)) = (auth.status, auth.authority) else { continue };
            let Some(nonce) = next.get_mut(&authority) else { continue };
            auth.status = if auth.nonce == *nonce && auth.nonce != u64::MAX {
                *nonce += 1;
                Some(AuthorizationStatus::Ok)
            } else {
                Some(AuthorizationStatus::InvalidNonce)
            };
        }
    }
}

fn check_receipt(
    receipt: &RpcReceipt,
    tx_hash: alloy::primitives::B256,
    block_hash: alloy::primitives::B256,
) -> Result<(), String> {
    if receipt.transaction_hash != tx_hash {
        return Err(format!("receipt for {} where {} was expected", receipt.transaction_hash, tx_hash));
    }
    if receipt.block_hash.is_some_and(|h| h != block_hash) {
        return Err(format!("receipt of {tx_hash} belongs to another block"));
    }
    Ok(())
}

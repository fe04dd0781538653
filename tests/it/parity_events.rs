//! Live events the Blockscout frontend listens for, received by the real `phoenix` npm client: `collated` and
//! `raw_trace` on `transactions:<hash>`, `fetched_bytecode`, `token_balance` and `updated_token_balances_erc_20`
//! on `addresses:<a>`, and `total_supply` on `tokens:<t>`; every payload compared with the node or the REST view.

use crate::support::phoenix::Listener;
use crate::support::*;
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::Provider;
use alloy::sol_types::{SolCall, SolConstructor};
use rockscout::dev::contracts::DemoToken;
use serde_json::{json, Value};

/// Sends the deployment of a `DemoToken` named after `symbol` with `supply` for `from`: its address (from the
/// deployer's nonce) and the transaction.
pub(crate) async fn deploy_token(
    node: &alloy::providers::RootProvider,
    from: Address,
    symbol: &str,
    supply: U256,
) -> (Address, alloy::primitives::B256) {
    let token = from.create(node.get_transaction_count(from).await.unwrap());
    let mut code = DemoToken::BYTECODE.to_vec();
    let constructor =
        DemoToken::constructorCall { name_: symbol.into(), symbol_: symbol.into(), initialSupply: supply };
    code.extend(constructor.abi_encode());
    (token, deploy(node, from, &Bytes::from(code)).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phoenix_client_receives_transaction_code_token_and_supply_events() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |c| c.tracing = true).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();

    // A token deployment waits in the pool; its address follows from the deployer's nonce.
    let supply = U256::from(1_000_000u64);
    let (token, deployment) = deploy_token(&node, a[0], "LIVE", supply).await;
    let lower = |address: Address| format!("{address:#x}");
    let (tx_topic, token_topic) = (format!("transactions:{deployment:#x}"), format!("tokens:{}", lower(token)));
    let (contract_topic, owner_topic) = (format!("addresses:{}", lower(token)), format!("addresses:{}", lower(a[0])));
    let topics = [tx_topic.clone(), token_topic.clone(), contract_topic.clone(), owner_topic.clone()];
    let mut client = Listener::join(addr, &topics).await;

    mine(&node, 1).await;
    let head = wait_synced(&t.daemon, &node).await;
    assert_eq!(client.event(&tx_topic, "collated").await, json!({}));
    let on_chain: Bytes = node.get_code_at(token).await.unwrap();
    assert!(on_chain.len() > 100, "the token was deployed");
    assert_eq!(
        client.event(&contract_topic, "fetched_bytecode").await,
        json!({"fetched_bytecode": on_chain.to_string()})
    );
    assert_eq!(client.event(&token_topic, "total_supply").await, json!({"total_supply": supply.to_string()}));
    assert_eq!(client.event(&owner_topic, "token_balance").await, json!({"block_number": head}));
    let balances = client.event(&owner_topic, "updated_token_balances_erc_20").await;
    assert_eq!(balances["overflow"], false);
    let rest = http::get_json(addr, &format!("/api/v2/addresses/{}/token-balances", a[0])).await;
    // Name and symbol arrive later (the metadata fetcher); the rest is the REST item.
    let chain_fields = |item: &Value| {
        let t = &item["token"];
        json!([item["value"], item["token_id"], t["address_hash"], t["type"], t["total_supply"], t["holders_count"]])
    };
    let pushed: Vec<Value> = balances["token_balances"].as_array().unwrap().iter().map(chain_fields).collect();
    let listed: Vec<Value> = rest.as_array().unwrap().iter().map(chain_fields).collect();
    assert_eq!(pushed, listed, "the pushed balances are the REST items");
    assert_eq!(balances["token_balances"][0]["value"], supply.to_string());
    let raw = client.event(&tx_topic, "raw_trace").await;
    let rest_trace = http::get_json(addr, &format!("/api/v2/transactions/{deployment:#x}/raw-trace")).await;
    assert_eq!(raw, json!({"raw_trace": rest_trace}));
    assert_eq!(raw["raw_trace"][0]["type"], "create");
    assert_eq!(raw["raw_trace"][0]["action"]["to"], lower(token));

    // A burn: the supply push follows the contract's totalSupply, the balance push the new balance.
    client.clear();
    let burned = U256::from(250_000u64);
    call(&node, a[0], token, DemoToken::burnCall { value: burned }.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let supply_call = DemoToken::totalSupplyCall {}.abi_encode();
    let raw_supply: Bytes = node
        .raw_request("eth_call".into(), json!([{"to": token, "data": Bytes::from(supply_call)}, "latest"]))
        .await
        .unwrap();
    let after = U256::from_be_slice(&raw_supply);
    assert_eq!(after, supply - burned);
    assert_eq!(client.event(&token_topic, "total_supply").await, json!({"total_supply": after.to_string()}));
    let balances = client.event(&owner_topic, "updated_token_balances_erc_20").await;
    assert_eq!(balances["token_balances"][0]["value"], after.to_string());
    client.finish().await;
    t.daemon.shutdown().await.unwrap();
}

/// After a reorg, the subscribers of what the replaced block pushed (a coin balance, a token balance, a supply)
/// get the state of the chain that replaced it: with the new branch's first block, and when a rollback is followed
/// by no block at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reorg_corrects_what_the_replaced_blocks_pushed() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let supply = U256::from(1_000_000u64);
    let (token, _) = deploy_token(&node, a[0], "FORK", supply).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let lower = |address: Address| format!("{address:#x}");
    let (token_topic, owner_topic) = (format!("tokens:{}", lower(token)), format!("addresses:{}", lower(a[0])));
    let sender_topic = format!("addresses:{}", lower(a[5]));
    let topics = [token_topic.clone(), owner_topic.clone(), sender_topic.clone()];
    let mut client = Listener::join(t.daemon.addr(), &topics).await;
    let burned = U256::from(1_000u64);

    for rollback_only in [false, true] {
        let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
        transfer(&node, a[5], a[6], 1_000_000_000_000_000_000).await;
        call(&node, a[0], token, DemoToken::burnCall { value: burned }.abi_encode()).await;
        mine(&node, 1).await;
        let replaced = wait_synced(&t.daemon, &node).await;
        // Every push of the block about to be replaced has arrived before the reorg.
        assert_eq!(client.event(&sender_topic, "balance").await["block_number"], replaced);
        // (Not `coin_balance`: a block whose balance read the node was slow for gets no history item.)
        client.event(&sender_topic, "current_coin_balance").await;
        let stale = client.event(&token_topic, "total_supply").await;
        assert_eq!(stale, json!({"total_supply": (supply - burned).to_string()}));
        let stale = client.event(&owner_topic, "updated_token_balances_erc_20").await;
        assert_eq!(stale["token_balances"][0]["value"], (supply - burned).to_string());
        client.clear();

        let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
        assert!(reverted);
        if !rollback_only {
            mine(&node, 2).await;
        }
        let head = wait_synced(&t.daemon, &node).await;
        let balance = node.get_balance(a[5]).await.unwrap();
        let what = if rollback_only { "a rollback" } else { "a reorg" };
        let pushed = client.event(&sender_topic, "balance").await;
        assert_eq!(pushed["balance"], balance.to_string(), "{what}: {pushed}");
        let number = pushed["block_number"].as_u64().unwrap();
        assert!(number <= head && (rollback_only || number >= replaced), "{what}: pushed at {number}, head {head}");
        let current = client.event(&sender_topic, "current_coin_balance").await;
        assert_eq!(current["coin_balance"], balance.to_string(), "{what}");
        let pushed = client.event(&token_topic, "total_supply").await;
        assert_eq!(pushed, json!({"total_supply": supply.to_string()}), "{what}");
        let pushed = client.event(&owner_topic, "updated_token_balances_erc_20").await;
        assert_eq!(pushed["token_balances"][0]["value"], supply.to_string(), "{what}");
        client.clear();
    }
    client.finish().await;
    t.daemon.shutdown().await.unwrap();
}

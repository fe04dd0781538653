//! Contract knowledge on a real chain: runtime code stored once per code hash with its creation, reverted with the
//! creating block; `/smart-contracts/:hash` for verified and unverified contracts (and 404 without code), the
//! list, counters and config routes; names and decoding from the demo contracts' build artifacts, compared with
//! what the node says.

use crate::support::http::{get, get_json};
use crate::support::*;
use alloy::primitives::{keccak256, Address, Bytes, B256, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::sol_types::SolCall;
use rockscout::dev::contracts::Demo;
use rockscout::store::records::ContractRecord;
use rockscout::store::tables::{Code, Contracts};
use rockscout::Daemon;
use serde_json::json;
use std::time::Duration;

async fn code_at(node: &RootProvider, address: Address) -> Bytes {
    node.get_code_at(address).await.expect("eth_getCode")
}

/// Waits until the code writer stored `address`'s row.
async fn stored_contract(daemon: &Daemon, address: Address) -> ContractRecord {
    poll_until("the contract's code row", Duration::from_secs(30), || async {
        daemon.store().reader().get::<Contracts>(&address).ok().flatten()
    })
    .await
}

async fn deploy_demo(node: &RootProvider, from: Address) -> (Address, B256) {
    let tx = deploy(node, from, &Demo::BYTECODE).await;
    mine(node, 1).await;
    (created_address(node, tx).await, tx)
}

/// Same code twice: one `code` row, two `contracts` rows with their own creations; a reorg that removes the second
/// deployment's block removes its row (through the block's undo data) and keeps the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_is_stored_once_and_reverted_with_its_creation() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let (first, first_tx) = deploy_demo(&node, accounts[0]).await;
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    let (second, second_tx) = deploy_demo(&node, accounts[1]).await;
    wait_synced(&t.daemon, &node).await;

    let a = stored_contract(&t.daemon, first).await;
    let b = stored_contract(&t.daemon, second).await;
    let runtime = code_at(&node, first).await;
    assert!(!runtime.is_empty());
    assert_eq!(a.code_hash, keccak256(&runtime));
    assert_eq!(a.code_hash, b.code_hash, "same code, same hash");
    assert_eq!((a.creation_tx, b.creation_tx), (first_tx, second_tx));
    assert_eq!((a.block, b.block), (1, 2));
    let reader = t.daemon.store().reader();
    let codes: Vec<_> = reader.rows::<Code>().collect::<Result<_, _>>().unwrap();
    assert_eq!(codes, vec![(a.code_hash, runtime.clone())], "the code is stored once");

    // The second deployment's block leaves the chain: its contract goes, the first stays.
    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    mine(&node, 2).await;
    wait_synced(&t.daemon, &node).await;
    let reader = t.daemon.store().reader();
    assert_eq!(reader.get::<Contracts>(&second).unwrap(), None, "the reorg removed the contract");
    assert_eq!(reader.get::<Contracts>(&first).unwrap(), Some(a));
    let reply = get(t.daemon.addr(), &format!("/api/v2/smart-contracts/{second}")).await;
    assert_eq!(reply.status, 404, "{}", String::from_utf8_lossy(&reply.body));
}

/// Every contract answers with its code and creation, verified or not; an address without code is a 404 JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smart_contract_routes_answer_every_contract() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let (demo, tx) = deploy_demo(&node, accounts[0]).await;
    wait_synced(&t.daemon, &node).await;
    stored_contract(&t.daemon, demo).await;
    let addr = t.daemon.addr();

    let c = get_json(addr, &format!("/api/v2/smart-contracts/{demo}")).await;
    assert_eq!(c["deployed_bytecode"], format!("{:#x}", code_at(&node, demo).await));
    let sent = node.get_transaction_by_hash(tx).await.unwrap().unwrap();
    assert_eq!(c["creation_bytecode"], format!("{:#x}", alloy::consensus::Transaction::input(&sent)));
    assert_eq!(c["creation_status"], "success");
    assert_eq!(c["is_verified"], false);
    assert_eq!(c["proxy_type"], json!(null));
    assert_eq!(c["implementations"], json!([]));
    assert_eq!(c["abi"], json!(null));

    let eoa = get(addr, &format!("/api/v2/smart-contracts/{}", accounts[5])).await;
    assert_eq!(eoa.status, 404);
    assert_eq!(eoa.json()["message"], "Not found");
    assert_eq!(get(addr, "/api/v2/smart-contracts/0x12").await.status, 422);

    let counters = get_json(addr, "/api/v2/smart-contracts/counters").await;
    assert_eq!(counters["smart_contracts"], "1");
    assert_eq!(counters["verified_smart_contracts"], "0");
    assert_eq!(counters["new_smart_contracts_24h"], "1");
    let list = get_json(addr, "/api/v2/smart-contracts").await;
    assert_eq!(list["items"], json!([]), "no contract has known source");
    assert_eq!(get(addr, "/api/v2/smart-contracts?filter=cobol").await.status, 422);
    let languages = get_json(addr, "/api/v2/config/smart-contracts/languages").await;
    assert_eq!(languages["languages"], json!(["solidity"]));
    let config = get_json(addr, "/api/v2/smart-contracts/verification/config").await;
    assert!(config["solidity_evm_versions"].as_array().unwrap().contains(&json!("cancun")));
    let address = get_json(addr, &format!("/api/v2/addresses/{demo}")).await;
    assert_eq!((address["is_contract"].clone(), address["is_verified"].clone()), (json!(true), json!(false)));
}

/// With the demo artifacts, a Demo deployment is named and its calls and logs decode with its ABI; the values
/// are the ones sent and the ones the node's receipt holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_artifacts_name_contracts_and_decode_calls_and_logs() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |c| c.demo_artifacts = true).await;
    let (demo, _) = deploy_demo(&node, accounts[0]).await;
    let poke = call(&node, accounts[1], demo, Demo::pokeCall { note: "hello".into() }.abi_encode()).await;
    let fail = call(&node, accounts[1], demo, Demo::mayFailCall { x: U256::from(10) }.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    stored_contract(&t.daemon, demo).await;
    let addr = t.daemon.addr();

    let c = get_json(addr, &format!("/api/v2/smart-contracts/{demo}")).await;
    assert_eq!(c["is_verified"], true);
    assert_eq!(c["name"], "Demo");
    assert_eq!(c["is_fully_verified"], true);
    assert_eq!(c["verification_metadata"]["source"], "local-artifacts");
    let abi_names: Vec<_> = c["abi"].as_array().unwrap().iter().filter_map(|i| i["name"].as_str()).collect();
    assert!(abi_names.contains(&"poke") && abi_names.contains(&"Poked"), "{abi_names:?}");

    let tx = get_json(addr, &format!("/api/v2/transactions/{poke}")).await;
    assert_eq!(tx["method"], "poke");
    assert_eq!(tx["to"]["name"], "Demo");
    assert_eq!(tx["to"]["is_verified"], true);
    let input = &tx["decoded_input"];
    assert_eq!(input["method_call"], "poke(string note)");
    assert_eq!(input["parameters"], json!([{"name": "note", "type": "string", "value": "hello"}]));

    let receipt = node.get_transaction_receipt(poke).await.unwrap().unwrap();
    let node_log = &receipt.inner.logs()[0];
    let logs = get_json(addr, &format!("/api/v2/transactions/{poke}/logs")).await;
    let decoded = &logs["items"][0]["decoded"];
    assert_eq!(decoded["method_call"], "Poked(address indexed by, uint256 indexed count, string note)");
    assert_eq!(decoded["method_id"], alloy::hex::encode(node_log.topics()[0]));
    let by = Address::from_word(node_log.topics()[1]);
    assert_eq!(decoded["parameters"][0], json!({"name": "by", "type": "address", "indexed": true, "value": by.to_checksum(None)}));
    assert_eq!(decoded["parameters"][1]["value"], U256::from_be_bytes(node_log.topics()[2].0).to_string());
    assert_eq!(decoded["parameters"][2]["value"], "hello");

    let failed = get_json(addr, &format!("/api/v2/transactions/{fail}")).await;
    assert_eq!(failed["method"], "mayFail");
    assert_eq!(failed["revert_reason"]["parameters"][0]["value"], "Demo: multiple of five");

    let list = get_json(addr, "/api/v2/smart-contracts?q=dem").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(list["items"][0]["address"]["name"], "Demo");
    assert_eq!(get_json(addr, "/api/v2/smart-contracts?q=nothing").await["items"], json!([]));
    let counters = get_json(addr, "/api/v2/smart-contracts/counters").await;
    assert_eq!(counters["verified_smart_contracts"], "1");
}

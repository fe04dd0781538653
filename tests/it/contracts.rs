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
use rockscout::store::tables::{Code, Contracts};
use rockscout::Daemon;
use serde_json::{json, Value};
use std::time::Duration;

async fn code_at(node: &RootProvider, address: Address) -> Bytes {
    node.get_code_at(address).await.expect("eth_getCode")
}

/// Waits until the code writer stored `address`'s row.
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
    assert_eq!((&c["creation_status"], &c["is_self_destructed"]), (&json!("success"), &json!(false)));
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
    assert_eq!(address["creation_status"], "success");

    // A contract that destroys itself in its constructor (CALLER SELFDESTRUCT) is created and leaves no code; an ERC-20
    // transfer's calldata sent to an account without code calls nothing; a call to the Demo contract does.
    let gone_tx = deploy(&node, accounts[1], &Bytes::from_static(&[0x33, 0xff])).await;
    let transfer = [&[0xa9, 0x05, 0x9c, 0xbb][..], &[0u8; 12], accounts[2].as_slice(), &[0u8; 31], &[5]].concat();
    let to_account = send(&node, json!({"from": accounts[1], "to": accounts[5], "data": Bytes::from(transfer)})).await;
    let poke = Demo::pokeCall { note: "hi".into() }.abi_encode();
    let to_contract = send(&node, json!({"from": accounts[1], "to": demo, "data": Bytes::from(poke)})).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let gone = created_address(&node, gone_tx).await;
    assert!(code_at(&node, gone).await.is_empty(), "the node holds no code for it");
    let address = get_json(addr, &format!("/api/v2/addresses/{gone}")).await;
    assert_eq!(address["creation_status"], "selfdestructed");
    let call = get_json(addr, &format!("/api/v2/transactions/{to_account:#x}")).await;
    assert_eq!(call["transaction_types"], json!([]));
    assert_eq!((&call["method"], &call["decoded_input"]), (&Value::Null, &Value::Null));
    let call = get_json(addr, &format!("/api/v2/transactions/{to_contract:#x}")).await;
    assert_eq!(call["transaction_types"], json!(["contract_call"]));
    assert!(call["method"].is_string(), "{}", call["method"]);
    let calls = get_json(addr, "/api/v2/transactions?type=contract_call").await;
    let listed: Vec<&Value> = calls["items"].as_array().unwrap().iter().map(|t| &t["hash"]).collect();
    assert_eq!(listed, [&json!(format!("{to_contract:#x}"))]);
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
    assert_eq!(
        decoded["parameters"][0],
        json!({"name": "by", "type": "address", "indexed": true, "value": by.to_checksum(None)})
    );
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
    let search = get_json(addr, &format!("/api/v2/search?q={demo}")).await;
    let hit = search["items"].as_array().unwrap().iter().find(|i| i["type"] == "contract").expect("a contract hit");
    assert_eq!((hit["name"].clone(), hit["is_smart_contract_verified"].clone()), (json!("Demo"), json!(true)));
}

alloy::sol! {
    function add(uint256 value);
    function setValue(uint256 v);
    function upgradeTo(address logic);
    function clone(address target) returns (address result);
    function mint(address to, uint256 value);
    function name() returns (string);
    function symbol() returns (string);
    function decimals() returns (uint8);
    function make(bytes32 salt, string name) returns (address child);
}

/// A Foundry project in `dir` with `sources` (name, text) in `src/`, compiled offline by the pinned forge with the
/// pinned solc (through the `scripts/tools/solc-0.8.37` wrapper): `forge build --build-info`. Returns `out/`.
fn forge_build(dir: &std::path::Path, sources: &[(&str, String)]) -> std::path::PathBuf {
    let tools = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/tools");
    let forge = tools.join("node_modules/.bin/forge");
    assert!(forge.exists(), "forge is missing: run scripts/setup (installs the pinned Foundry 1.7.1 npm packages)");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let config = format!(
        "[profile.default]\nsrc = \"src\"\nout = \"out\"\nsolc = \"{}\"\noffline = true\noptimizer = true\n\
         optimizer_runs = 200\nevm_version = \"cancun\"\n",
        tools.join("solc-0.8.37").display()
    );
    std::fs::write(dir.join("foundry.toml"), config).unwrap();
    for (name, text) in sources {
        std::fs::write(dir.join("src").join(name), text).unwrap();
    }
    let output = std::process::Command::new(&forge)
        .args(["build", "--build-info"])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("running forge failed ({e}): run scripts/setup"));
    assert!(output.status.success(), "forge build failed: {}", String::from_utf8_lossy(&output.stderr));
    dir.join("out")
}

fn source(name: &str) -> (&str, String) {
    (name, std::fs::read_to_string(solidity(name)).unwrap())
}

/// `file` built by forge (kept in the returned directory), a fresh anvil, its provider and its first account.
async fn forged_chain(
    file: &str,
) -> (tempfile::TempDir, std::path::PathBuf, rockscout::dev::anvil::Anvil, RootProvider, Address) {
    let work = tempfile::tempdir().unwrap();
    let out = forge_build(work.path(), &[source(file)]);
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let from = node.get_accounts().await.unwrap()[0];
    (work, out, anvil, node, from)
}

fn solidity(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/solidity").join(name)
}

/// The creation code of `contract` in a Foundry `out/` folder.
fn creation_code(out: &std::path::Path, file: &str, contract: &str) -> Vec<u8> {
    let path = out.join(file).join(format!("{contract}.json"));
    let artifact: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    alloy::hex::decode(artifact["bytecode"]["object"].as_str().unwrap()).unwrap()
}

/// A daemon given a forge build of `Counter.sol` as `--artifacts`, on a fresh anvil where Counter is deployed (with
/// the constructor argument 7) and mined.
pub(crate) struct CounterChain {
    /// The Foundry project (a test may rebuild it) and its `out/`.
    pub work: tempfile::TempDir,
    pub out: std::path::PathBuf,
    pub anvil: rockscout::dev::anvil::Anvil,
    pub node: RootProvider,
    pub accounts: Vec<Address>,
    pub daemon: TestDaemon,
    pub counter: Address,
    /// The constructor arguments, ABI-encoded.
    pub args: Vec<u8>,
}

pub(crate) async fn counter_chain() -> CounterChain {
    let work = tempfile::tempdir().unwrap();
    let out = forge_build(work.path(), &[source("Counter.sol")]);
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let daemon = start_daemon(&anvil.http_url(), |c| c.artifacts = vec![out.clone()]).await;
    let args = alloy::sol_types::SolValue::abi_encode(&U256::from(7));
    let code = [creation_code(&out, "Counter.sol", "Counter"), args.clone()].concat();
    let counter = deploy_code(&node, accounts[0], code).await;
    CounterChain { work, out, anvil, node, accounts, daemon, counter, args }
}

/// Real compiler output (`forge build`): a deployed contract with an immutable and a constructor argument
/// matches fully, with sources, compiler and constructor arguments; its calls, logs and a custom-error revert
/// decode with the artifact's ABI (compared with the node's receipt and state); a rebuild while running (only a
/// comment changed, so the metadata hash differs) re-matches it as a partial match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foundry_artifacts_match_decode_and_rematch_after_a_rebuild() {
    let CounterChain { work, anvil: _anvil, node, accounts, daemon: t, counter, args, .. } = counter_chain().await;
    let addr = t.daemon.addr();
    let ok_tx = call(&node, accounts[1], counter, addCall { value: U256::from(5) }.abi_encode()).await;
    let bad_tx = call(&node, accounts[1], counter, addCall { value: U256::from(500) }.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    stored_contract(&t.daemon, counter).await;

    let c = get_json(addr, &format!("/api/v2/smart-contracts/{counter}")).await;
    assert_eq!(c["name"], "Counter");
    assert_eq!((c["is_verified"].clone(), c["is_fully_verified"].clone()), (json!(true), json!(true)));
    assert_eq!(c["file_path"], "src/Counter.sol");
    assert_eq!(c["source_code"], std::fs::read_to_string(solidity("Counter.sol")).unwrap());
    assert!(c["compiler_version"].as_str().unwrap().starts_with("0.8.37+commit."), "{}", c["compiler_version"]);
    assert_eq!((c["optimization_enabled"].clone(), c["optimization_runs"].clone()), (json!(true), json!(200)));
    assert_eq!(c["evm_version"], "cancun");
    assert_eq!(c["license_type"], "mit", "Blockscout's id of the SPDX license in the metadata");
    assert_eq!(c["constructor_args"], format!("0x{}", alloy::hex::encode(&args)));
    assert_eq!(c["decoded_constructor_args"][0][0], "7");
    assert_eq!(c["decoded_constructor_args"][0][1]["name"], "start");
    assert!(c["verification_metadata"]["artifact"].as_str().unwrap().contains("build-info"));

    let tx = get_json(addr, &format!("/api/v2/transactions/{ok_tx}")).await;
    assert_eq!(tx["method"], "add");
    assert_eq!(tx["decoded_input"]["parameters"][0], json!({"name": "value", "type": "uint256", "value": "5"}));
    let receipt = node.get_transaction_receipt(ok_tx).await.unwrap().unwrap();
    let node_log = &receipt.inner.logs()[0];
    let total = node.get_storage_at(counter, U256::ZERO).await.unwrap();
    let logs = get_json(addr, &format!("/api/v2/transactions/{ok_tx}/logs")).await;
    let decoded = &logs["items"][0]["decoded"];
    assert_eq!(decoded["method_call"], "Counted(address indexed by, uint256 value, uint256 total)");
    assert_eq!(decoded["parameters"][0]["value"], Address::from_word(node_log.topics()[1]).to_checksum(None));
    assert_eq!(decoded["parameters"][1]["value"], U256::from_be_slice(&node_log.data().data[..32]).to_string());
    assert_eq!(decoded["parameters"][2]["value"], total.to_string());
    assert_eq!(decoded["parameters"][2]["value"], "12");

    let failed = get_json(addr, &format!("/api/v2/transactions/{bad_tx}")).await;
    assert_eq!(failed["status"], "error");
    let reason = &failed["revert_reason"];
    assert_eq!(reason["method_call"], "TooLarge(uint256 value, uint256 limit)");
    assert_eq!(reason["parameters"][0]["value"], "500");
    assert_eq!(reason["parameters"][1]["value"], "100");

    // `forge build` while running: a changed comment changes only the metadata hash.
    let (name, text) = source("Counter.sol");
    forge_build(work.path(), &[(name, text.replace("what local-artifact", "what the local-artifact"))]);
    let rematched = poll_until("the rebuilt artifact to re-match", Duration::from_secs(30), || async {
        let c = get_json(addr, &format!("/api/v2/smart-contracts/{counter}")).await;
        (c["is_partially_verified"] == true).then_some(c)
    })
    .await;
    assert_eq!(rematched["name"], "Counter");
    assert_eq!(rematched["is_fully_verified"], false);
    assert!(rematched["source_code"].as_str().unwrap().contains("what the local-artifact"));
}

/// Real proxies on anvil: an EIP-1967 proxy and an EIP-1167 clone of the same logic show `proxy_type` and the
/// implementation (address and name); calls to them decode with the implementation's ABI; an upgrade moves the
/// implementation, and a reorg that removes the upgrade moves it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxies_show_implementations_and_decode_with_their_abi() {
    let work = tempfile::tempdir().unwrap();
    let out = forge_build(work.path(), &[source("Proxies.sol")]);
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.artifacts = vec![out.clone()];
        c.tracing = true;
    })
    .await;
    let addr = t.daemon.addr();
    let from = accounts[0];
    let logic = deploy_code(&node, from, creation_code(&out, "Proxies.sol", "Logic")).await;
    let logic2 = deploy_code(&node, from, creation_code(&out, "Proxies.sol", "LogicV2")).await;
    let proxy_code = [creation_code(&out, "Proxies.sol", "Proxy1967"), logic.into_word().to_vec()].concat();
    let proxy = deploy_code(&node, from, proxy_code).await;
    let cloner = deploy_code(&node, from, creation_code(&out, "Proxies.sol", "Cloner")).await;
    let clone_tx = call(&node, from, cloner, cloneCall { target: logic }.abi_encode()).await;
    mine(&node, 1).await;
    let receipt = node.get_transaction_receipt(clone_tx).await.unwrap().unwrap();
    let clone = Address::from_slice(&receipt.inner.logs()[0].data().data[12..32]);
    // A balance for the proxy, read by the index when the call below touches it (sorts the contract list).
    let rich = U256::from(5u64) * U256::from(10u64).pow(U256::from(18));
    let _: serde_json::Value = node.raw_request("anvil_setBalance".into(), (proxy, rich)).await.unwrap();
    let set = call(&node, from, proxy, setValueCall { v: U256::from(42) }.abi_encode()).await;
    let set_clone = call(&node, from, clone, setValueCall { v: U256::from(9) }.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    stored_contract(&t.daemon, proxy).await;
    stored_contract(&t.daemon, clone).await;
    let logic_json = json!([{"address_hash": logic.to_checksum(None), "name": "Logic"}]);

    let p = get_json(addr, &format!("/api/v2/smart-contracts/{proxy}")).await;
    assert_eq!((p["name"].clone(), p["proxy_type"].clone()), (json!("Proxy1967"), json!("eip1967")));
    assert_eq!(p["implementations"], logic_json);
    let c = get_json(addr, &format!("/api/v2/smart-contracts/{clone}")).await;
    assert_eq!(c["proxy_type"], "eip1167");
    assert_eq!(c["implementations"], logic_json);
    assert_eq!(c["is_verified"], false, "the clone's own code has no artifact");
    // Etherscan's proxy check names the clone's implementation too (its code names it, no storage slot does).
    let guid = get_json(addr, &format!("/api?module=contract&action=verifyproxycontract&address={clone}")).await;
    let guid = guid["result"].as_str().unwrap().to_owned();
    let check = get_json(addr, &format!("/api?module=contract&action=checkproxyverification&guid={guid}")).await;
    assert_eq!(check["status"], "1", "{check}");
    assert!(check["result"].as_str().unwrap().contains(&logic.to_checksum(None)), "{check}");

    for (tx, value) in [(set, "42"), (set_clone, "9")] {
        let item = get_json(addr, &format!("/api/v2/transactions/{tx}")).await;
        assert_eq!(item["method"], "setValue");
        assert_eq!(item["decoded_input"]["parameters"][0]["value"], value);
        assert_eq!(item["to"]["implementations"], logic_json);
        let logs = get_json(addr, &format!("/api/v2/transactions/{tx}/logs")).await;
        assert_eq!(logs["items"][0]["decoded"]["method_call"], "ValueSet(uint256 value)");
        assert_eq!(logs["items"][0]["decoded"]["parameters"][0]["value"], value);
    }
    let stored = node.get_storage_at(proxy, U256::ZERO).await.unwrap();
    assert_eq!(stored, U256::from(42), "the call went through the proxy");

    // Hot contracts of the last day: the transactions the node's blocks send to addresses holding code, and their gas.
    // Two cheap calls to Logic (reverted: it has no such function) give it more transactions than the cloner's one
    // but less gas, so the two sorts differ.
    for _ in 0..2 {
        call(&node, from, logic, vec![0xde, 0xad, 0xbe, 0xef]).await;
    }
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 86_400;
    let mut hot: std::collections::BTreeMap<Address, (u64, u64)> = std::collections::BTreeMap::new();
    for n in 0..=node.get_block_number().await.unwrap() {
        let block = node.get_block_by_number(n.into()).await.unwrap().unwrap();
        for receipt in node.get_block_receipts(n.into()).await.unwrap().unwrap() {
            let Some(to) = receipt.to.filter(|_| block.header.timestamp >= since) else { continue };
            if node.get_code_at(to).await.unwrap().is_empty() {
                continue;
            }
            let entry = hot.entry(to).or_default();
            *entry = (entry.0 + 1, entry.1 + receipt.gas_used);
        }
    }
    assert!(hot.len() >= 3, "the calls reach several contracts: {hot:?}");
    let (cheap, dear) = (hot[&logic], hot[&cloner]);
    assert!(cheap.0 > dear.0 && cheap.1 < dear.1, "more transactions, less gas: {cheap:?} against {dear:?}");
    for (sort, order) in [("transactions_count", "desc"), ("total_gas_used", "desc"), ("transactions_count", "asc")] {
        let path = format!("/api/v2/stats/hot-smart-contracts?scale=1d&sort={sort}&order={order}&items_count=1");
        let got: Vec<(Address, u64, u64)> = crate::support::http::walk(addr, &path)
            .await
            .iter()
            .map(|i| {
                let address = i["contract_address"]["hash"].as_str().unwrap().parse().unwrap();
                (address, i["transactions_count"].as_u64().unwrap(), i["total_gas_used"].as_u64().unwrap())
            })
            .collect();
        let mut want: Vec<(Address, u64, u64)> = hot.iter().map(|(a, (n, gas))| (*a, *n, *gas)).collect();
        want.sort_by(|x, y| {
            let (p, q) = if sort == "total_gas_used" { ((x.2, x.1), (y.2, y.1)) } else { ((x.1, x.2), (y.1, y.2)) };
            if order == "asc" { p.cmp(&q) } else { q.cmp(&p) }.then(x.0.cmp(&y.0))
        });
        assert_eq!(got, want, "{path}");
    }

    // The contract list sorted by balance or transactions (the frontend's sort menu): the same contracts, the
    // node's balances, ties by address.
    let listed = |items: &[serde_json::Value]| -> Vec<String> {
        items.iter().map(|i| i["address"]["hash"].as_str().unwrap().to_owned()).collect()
    };
    let mut all = listed(&crate::support::http::walk(addr, "/api/v2/smart-contracts").await);
    all.sort_by_key(|a| a.to_lowercase());
    assert!(all.len() >= 4, "{all:?}");
    for (sort, order) in
        [("balance", "desc"), ("balance", "asc"), ("transactions_count", "desc"), ("transactions_count", "asc")]
    {
        let path = format!("/api/v2/smart-contracts?sort={sort}&order={order}&items_count=2");
        let items = crate::support::http::walk(addr, &path).await;
        let mut amounts = Vec::new();
        for item in &items {
            let address: Address = item["address"]["hash"].as_str().unwrap().parse().unwrap();
            let amount = if sort == "balance" {
                let balance = node.get_balance(address).await.unwrap();
                assert!(item["coin_balance"].is_null() || item["coin_balance"] == balance.to_string(), "{item}");
                balance
            } else {
                U256::from(item["transactions_count"].as_u64().unwrap_or(0))
            };
            amounts.push((amount, address));
        }
        let mut want = amounts.clone();
        want.sort_by(|(x, a), (y, b)| if order == "asc" { x.cmp(y) } else { y.cmp(x) }.then(a.cmp(b)));
        assert_eq!(amounts, want, "{path}");
        let mut got = listed(&items);
        if sort == "balance" && order == "desc" {
            assert_eq!(got[0], proxy.to_checksum(None), "{path}: the richest first");
        }
        got.sort_by_key(|a| a.to_lowercase());
        assert_eq!(got, all, "{path}: every contract once");
    }

    // An upgrade moves the implementation; a reorg that removes it moves it back.
    let logic2_json = json!([{"address_hash": logic2.to_checksum(None), "name": "LogicV2"}]);
    upgrade_then_reorg(&t.daemon, &node, from, proxy, proxy, logic2, (&logic_json, &logic2_json)).await;

    // A beacon proxy follows its beacon: the beacon's own upgrade (an `Upgraded` the beacon emits, not the proxy)
    // moves the proxy's implementation, and a reorg that removes it moves it back.
    let beacon_code = [creation_code(&out, "Proxies.sol", "Beacon"), logic.into_word().to_vec()].concat();
    let beacon = deploy_code(&node, from, beacon_code).await;
    let beacon_proxy_code =
        [creation_code(&out, "Proxies.sol", "BeaconProxy1967"), beacon.into_word().to_vec()].concat();
    let beacon_proxy = deploy_code(&node, from, beacon_proxy_code).await;
    wait_synced(&t.daemon, &node).await;
    stored_contract(&t.daemon, beacon_proxy).await;
    let b = get_json(addr, &format!("/api/v2/smart-contracts/{beacon_proxy}")).await;
    assert_eq!((b["proxy_type"].clone(), b["implementations"].clone()), (json!("eip1967_beacon"), logic_json.clone()));
    upgrade_then_reorg(&t.daemon, &node, from, beacon, beacon_proxy, logic2, (&logic_json, &logic2_json)).await;
}

/// A token behind an EIP-1967 proxy is named by its logic: after `upgradeTo`, the token object shows the new logic's
/// name, symbol and decimals, as the node answers them through the proxy, and the old ones again once a reorg takes
/// the upgrade away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgraded_token_proxy_is_named_by_its_new_logic() {
    let (_work, out, anvil, node, from) = forged_chain("Proxies.sol").await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let v1 = deploy_code(&node, from, creation_code(&out, "Proxies.sol", "NamedTokenV1")).await;
    let v2 = deploy_code(&node, from, creation_code(&out, "Proxies.sol", "NamedTokenV2")).await;
    let proxy_code = [creation_code(&out, "Proxies.sol", "Proxy1967"), v1.into_word().to_vec()].concat();
    let proxy = deploy_code(&node, from, proxy_code).await;
    call(&node, from, proxy, mintCall { to: from, value: U256::from(5) }.abi_encode()).await;
    mine(&node, 1).await;
    let on_node = || async {
        let text = |data: Bytes| String::from_utf8_lossy(&data[64..]).trim_end_matches('\0').to_owned();
        let ask = |input: Vec<u8>| {
            let node = node.clone();
            async move {
                let request = json!([{"to": proxy, "data": Bytes::from(input)}, "latest"]);
                node.raw_request::<_, Bytes>("eth_call".into(), request).await.unwrap()
            }
        };
        let decimals = U256::from_be_slice(&ask(decimalsCall {}.abi_encode()).await).to_string();
        (
            json!(text(ask(nameCall {}.abi_encode()).await)),
            json!(text(ask(symbolCall {}.abi_encode()).await)),
            json!(decimals),
        )
    };
    let shown = || async {
        let token = get(t.daemon.addr(), &format!("/api/v2/tokens/{proxy}")).await;
        let token = if token.status == 200 { token.json() } else { Value::Null };
        (token["name"].clone(), token["symbol"].clone(), token["decimals"].clone())
    };
    // Before, after the upgrade, and after a reorg took the upgrade away.
    let mut snapshot = U256::ZERO;
    for (step, name) in [("deployed", "Proxied Alpha"), ("upgraded", "Proxied Beta"), ("reorged", "Proxied Alpha")] {
        match step {
            "upgraded" => {
                snapshot = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
                call(&node, from, proxy, upgradeToCall { logic: v2 }.abi_encode()).await;
                mine(&node, 1).await;
            }
            "reorged" => {
                let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
                assert!(reverted);
                mine(&node, 2).await;
            }
            _ => {}
        }
        let expected = on_node().await;
        assert_eq!(expected.0, name, "the node's answer through the proxy, {step}");
        poll_until("the token's metadata to follow its logic", Duration::from_secs(30), || async {
            (shown().await == expected).then_some(())
        })
        .await;
    }
    t.daemon.shutdown().await.unwrap();
}

/// A token a factory creates inside a call with CREATE2, in a block a reorg replaces with one that creates it at the
/// same address under another name: the token shows the new name, as the node answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_re_created_at_its_address_by_a_reorg_is_named_anew() {
    let (_work, out, anvil, node, from) = forged_chain("Recreated.sol").await;
    let t = start_daemon(&anvil.http_url(), |c| c.tracing = true).await;
    let factory = deploy_code(&node, from, creation_code(&out, "Recreated.sol", "NamingFactory")).await;
    let salt = B256::repeat_byte(0x31);
    let make = |name: &str| makeCall { salt, name: name.to_owned() }.abi_encode();
    let addr = t.daemon.addr();
    let shown_name = move |token: Address| async move {
        let reply = get(addr, &format!("/api/v2/tokens/{token}")).await;
        if reply.status == 200 {
            reply.json()["name"].clone()
        } else {
            Value::Null
        }
    };
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    let first = call(&node, from, factory, make("Alpha Branch")).await;
    mine(&node, 1).await;
    let receipt = node.get_transaction_receipt(first).await.unwrap().unwrap();
    let child = receipt.inner.logs()[0].address();
    poll_until("the first branch's name", Duration::from_secs(30), || async {
        (shown_name(child).await == "Alpha Branch").then_some(())
    })
    .await;
    // The code writer has found the creation in the traced block (the reorg comes after it looked).
    stored_contract(&t.daemon, child).await;

    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    let second = call(&node, from, factory, make("Beta Branch")).await;
    mine(&node, 2).await;
    let receipt = node.get_transaction_receipt(second).await.unwrap().unwrap();
    assert_eq!(receipt.inner.logs()[0].address(), child, "the same address on the new branch");
    let on_node: Bytes = node
        .raw_request("eth_call".into(), json!([{"to": child, "data": Bytes::from(nameCall {}.abi_encode())}, "latest"]))
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&on_node).contains("Beta Branch"));
    wait_synced(&t.daemon, &node).await;
    poll_until("the new branch's name", Duration::from_secs(30), || async {
        (shown_name(child).await == "Beta Branch").then_some(())
    })
    .await;
    let found = get_json(t.daemon.addr(), "/api/v2/search?q=Beta").await;
    assert_eq!(found["items"][0]["address_hash"], child.to_checksum(None), "{found}");
    t.daemon.shutdown().await.unwrap();
}

/// A token deployed in blocks a reorg removes, then, after a restart, another token deployed by the same sender at
/// the same nonce, so at the same address: the new token is named as the node answers. (The reorg's re-read saved
/// the vanished token's empty answers, which nothing read again once the restart forgot the reorg.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_deployed_again_at_an_address_a_reorg_emptied_is_named_after_a_restart() {
    use alloy::sol_types::SolConstructor;
    use rockscout::dev::contracts::DemoToken;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let from = anvil.addresses()[2];
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let token_code = |name: &str, symbol: &str| {
        let mut code = DemoToken::BYTECODE.to_vec();
        let supply = U256::from(10).pow(U256::from(20));
        code.extend(
            DemoToken::constructorCall { name_: name.into(), symbol_: symbol.into(), initialSupply: supply }
                .abi_encode(),
        );
        Bytes::from(code)
    };
    let addr = t.daemon.addr();
    let token_name = |addr: std::net::SocketAddr, token: Address| async move {
        let reply = get(addr, &format!("/api/v2/tokens/{token}")).await;
        (reply.status == 200).then(|| reply.json()["name"].clone())
    };
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    let ghost = deploy(&node, from, &token_code("Ghost Coin", "GHOST")).await;
    mine(&node, 3).await;
    let token = created_address(&node, ghost).await;
    poll_until("the vanishing token's name", Duration::from_secs(30), || async {
        (token_name(addr, token).await == Some(json!("Ghost Coin"))).then_some(())
    })
    .await;
    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    poll_until("the token to be gone", Duration::from_secs(30), || async {
        token_name(addr, token).await.is_none().then_some(())
    })
    .await;
    let TestDaemon { daemon, dir } = t;
    daemon.shutdown().await.unwrap();

    let daemon = Daemon::start(&test_config(&anvil.http_url(), dir.path())).await.expect("daemon restarts");
    let addr = daemon.addr();
    let real = deploy(&node, from, &token_code("Real Coin", "REAL")).await;
    mine(&node, 4).await;
    assert_eq!(created_address(&node, real).await, token, "the same address on the new branch");
    wait_synced(&daemon, &node).await;
    poll_until("the new token's name", Duration::from_secs(30), || async {
        (token_name(addr, token).await == Some(json!("Real Coin"))).then_some(())
    })
    .await;
    let found = get_json(addr, "/api/v2/search?q=REAL").await;
    assert_eq!(found["items"][0]["address_hash"], token.to_checksum(None), "{found}");
    daemon.shutdown().await.unwrap();
}

/// Calls `upgradeTo(logic)` on `upgrader` in a block that a reorg then removes: `shown`'s implementations move
/// from `before` to `after` and back.
async fn upgrade_then_reorg(
    daemon: &Daemon,
    node: &RootProvider,
    from: Address,
    upgrader: Address,
    shown: Address,
    logic: Address,
    (before, after): (&serde_json::Value, &serde_json::Value),
) {
    let path = format!("/api/v2/smart-contracts/{shown}");
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    call(node, from, upgrader, upgradeToCall { logic }.abi_encode()).await;
    mine(node, 1).await;
    poll_until("the upgrade to show", Duration::from_secs(30), || async {
        (get_json(daemon.addr(), &path).await["implementations"] == *after).then_some(())
    })
    .await;
    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    mine(node, 2).await;
    wait_synced(daemon, node).await;
    assert_eq!(get_json(daemon.addr(), &path).await["implementations"], *before, "the reorg removed the upgrade");
}

/// EIP-7702 authorizations of well-known dev keys, signed for `chain` (or another chain id).
fn authorization(key: &str, chain: u64, delegate: Address, nonce: u64) -> alloy::eips::eip7702::SignedAuthorization {
    use alloy::signers::SignerSync;
    let signer: alloy::signers::local::PrivateKeySigner = key.parse().unwrap();
    let auth = alloy::eips::eip7702::Authorization { chain_id: U256::from(chain), address: delegate, nonce };
    let signature = signer.sign_hash_sync(&auth.signature_hash()).unwrap();
    auth.into_signed(signature)
}

/// What the index and the API say of EIP-7702 authorizations and the accounts they delegate, against the node:
/// each authorization's status (applied, another chain, a signature nobody made, a nonce already used, a sender
/// signing for itself), the delegated account as a contract with `proxy_type` `eip7702` in lists and on its page,
/// cleared by a delegation to address 0, and a reorg that removes the clearing block restoring the delegation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eip7702_delegations_follow_the_node() {
    // anvil's dev keys 3, 4 and 5 (accounts[3..6]).
    const KEY3: &str = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
    const KEY4: &str = "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a";
    const KEY5: &str = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let chain = node.get_chain_id().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let (delegate, _) = deploy_demo(&node, accounts[0]).await;
    let (a3, a4, a5) = (accounts[3], accounts[4], accounts[5]);
    let nonce = |a: Address| {
        let node = node.clone();
        async move { node.get_transaction_count(a).await.unwrap() }
    };
    let (n3, n5) = (nonce(a3).await, nonce(a5).await);
    wait_synced(&t.daemon, &node).await;
    let counters =
        |addr| async move { get_json(addr, "/api/v2/smart-contracts/counters").await["smart_contracts"].clone() };
    // The delegate's code is stored by the code writer, after the block: counted before the delegations are.
    let contracts_before = poll_until("the delegate to be counted", Duration::from_secs(30), || async {
        let page = get_json(t.daemon.addr(), &format!("/api/v2/addresses/{delegate}")).await;
        let counted = counters(t.daemon.addr()).await;
        (page["is_contract"] == true && counted != "0").then_some(counted)
    })
    .await;

    // One block: a sponsored list (applied, same nonce again, another chain, a broken signature) and a sender
    // authorizing for itself (its nonce + 1).
    let signed = authorization(KEY4, chain, delegate, 0);
    let (y_parity, r) = (signed.y_parity(), signed.r());
    let broken = alloy::eips::eip7702::SignedAuthorization::new_unchecked(
        signed.strip_signature(),
        y_parity,
        r,
        U256::MAX - U256::from(1),
    );
    let list = vec![
        authorization(KEY3, chain, delegate, n3),
        authorization(KEY3, chain, delegate, n3),
        authorization(KEY4, chain + 1, delegate, 0),
        broken,
    ];
    let sponsored =
        send(&node, json!({"from": accounts[0], "to": a3, "authorizationList": list, "gas": "0x100000"})).await;
    let own = vec![authorization(KEY5, chain, delegate, n5 + 1)];
    let self_sponsored = send(&node, json!({"from": a5, "to": a5, "authorizationList": own, "gas": "0x100000"})).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let designator: Bytes = [&[0xef, 0x01, 0x00][..], delegate.as_slice()].concat().into();
    assert_eq!(code_at(&node, a3).await, designator, "the node applied the first authorization");
    assert_eq!(code_at(&node, a5).await, designator);
    assert_eq!(code_at(&node, a4).await, Bytes::new(), "the node refused key 4's authorizations");
    assert_eq!(nonce(a3).await, n3 + 1, "one of key 3's authorizations took its nonce");
    assert_eq!(nonce(a5).await, n5 + 2, "the transaction and its authorization took a nonce each");

    let addr = t.daemon.addr();
    let statuses = |tx: Value| -> Vec<String> {
        tx["authorization_list"].as_array().unwrap().iter().map(|a| a["status"].as_str().unwrap().to_owned()).collect()
    };
    let tx = get_json(addr, &format!("/api/v2/transactions/{sponsored}")).await;
    assert_eq!(statuses(tx.clone()), ["ok", "invalid_nonce", "invalid_chain_id", "invalid_signature"], "{tx}");
    assert_eq!(tx["authorization_list"][0]["authority"], a3.to_checksum(None));
    assert_eq!(tx["authorization_list"][3]["authority"], Value::Null);
    let tx = get_json(addr, &format!("/api/v2/transactions/{self_sponsored}")).await;
    assert_eq!(statuses(tx), ["ok"]);

    // The delegated accounts are contracts delegating to `delegate`, on their page and in lists.
    let delegated = |a: Address| {
        let path = format!("/api/v2/addresses/{a}");
        async move {
            let page = get_json(addr, &path).await;
            let listed = get_json(addr, &format!("{path}/transactions")).await["items"][0]["to"].clone();
            (page, listed)
        }
    };
    let (page, listed) = delegated(a3).await;
    assert_eq!((page["is_contract"].as_bool(), listed["is_contract"].as_bool()), (Some(true), Some(true)), "{page}");
    assert_eq!(page["proxy_type"], "eip7702");
    assert_eq!(page["implementations"][0]["address_hash"], delegate.to_checksum(None));
    assert_eq!(listed["proxy_type"], "eip7702", "{listed}");
    assert_eq!(page["creation_transaction_hash"], Value::Null, "a delegation creates nothing");
    // A delegating account's gas usage is what it sent (nothing), not the sponsored transaction sent to it.
    let gas = get_json(addr, &format!("/api/v2/addresses/{a3}/counters")).await["gas_usage_count"].clone();
    assert_eq!(gas, "0", "gas usage of the delegating account");
    let (page, _) = delegated(a4).await;
    assert_eq!(page["is_contract"], false, "{page}");
    assert_eq!(counters(addr).await, contracts_before, "delegated accounts are not counted as contracts");
    let listed = get_json(addr, "/api?module=contract&action=listcontracts&offset=100").await["result"].clone();
    let listed: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|c| c["Address"].as_str()).collect();
    let lower = |a: Address| format!("{a:#x}");
    assert!(listed.contains(&lower(delegate).as_str()), "the delegate itself is a contract: {listed:?}");
    assert!(!listed.contains(&lower(a3).as_str()) && !listed.contains(&lower(a5).as_str()), "{listed:?}");

    // Key 3 clears its delegation; a reorg removes that block again.
    let clear = vec![authorization(KEY3, chain, Address::ZERO, n3 + 1)];
    send(&node, json!({"from": accounts[0], "to": a4, "authorizationList": clear, "gas": "0x100000"})).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    assert_eq!(code_at(&node, a3).await, Bytes::new(), "the node cleared the delegation");
    let (page, listed) = delegated(a3).await;
    assert_eq!((page["is_contract"].as_bool(), listed["is_contract"].as_bool()), (Some(false), Some(false)), "{page}");
    assert_eq!(page["proxy_type"], Value::Null);

    let _: Value = node.raw_request("anvil_reorg".into(), json!([1, []])).await.unwrap();
    wait_synced(&t.daemon, &node).await;
    assert_eq!(code_at(&node, a3).await, designator, "the reorg dropped the clearing");
    let (page, listed) = delegated(a3).await;
    assert_eq!((page["is_contract"].as_bool(), listed["is_contract"].as_bool()), (Some(true), Some(true)), "{page}");
    assert_eq!(listed["proxy_type"], "eip7702");
}

//! Contract verification on a real chain with the real compiler (the pinned solcjs behind the
//! `scripts/tools/solc-0.8.37` wrapper): a contract compiled here and deployed on anvil, verified from its
//! standard-JSON input (full match, partial match, wrong source, unknown version), stored, and shown by the
//! contract resource with priority over artifacts and across a restart.

use crate::support::http::{get_json, request, try_request, Reply};
use crate::support::ws::WsClient;
use crate::support::*;
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::Provider;
use hyper::Method;
use rockscout::contracts::verifier::{self, Compilers, Deployed, Request, VerifyError};
use rockscout::store::records::JobState;
use rockscout::store::tables::Contracts;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The compilers folder of the tests: `scripts/tools` (holds `solc-0.8.37`, installed by scripts/setup).
pub fn compilers_dir() -> PathBuf {
    let tools = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/tools");
    assert!(
        tools.join("node_modules/solc").is_dir(),
        "the pinned solc is missing: run scripts/setup (installs npm `solc` into scripts/tools/node_modules)"
    );
    tools
}

/// Counter.sol, optionally changed by `edit`.
pub fn counter_source(edit: impl Fn(String) -> String) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/solidity/Counter.sol");
    edit(std::fs::read_to_string(path).unwrap())
}

/// A standard-JSON input with `source` as `src/Counter.sol`, optimizer on (200 runs), EVM cancun.
pub fn standard_input(source: &str) -> Value {
    json!({
        "language": "Solidity",
        "sources": {"src/Counter.sol": {"content": source}},
        "settings": {"optimizer": {"enabled": true, "runs": 200}, "evmVersion": "cancun",
                     "outputSelection": {"*": {"*": ["evm.bytecode.object"]}}}
    })
}

/// Counter's creation code compiled from `input` by the real compiler.
pub async fn compiled_creation_code(input: &Value) -> Vec<u8> {
    alloy::hex::decode(creation_hex(input, "src/Counter.sol", "Counter").await).unwrap()
}

fn verify_request(input: &Value, version: &str) -> Request {
    Request { compiler_version: version.into(), contract_name: "src/Counter.sol:Counter".into(), input: input.clone() }
}

/// Verified by the verifier core against the deployed code: the original source matches fully with the constructor
/// arguments and the immutable (the deployer) masked; a changed comment matches partially; a changed body and an
/// unknown compiler version do not verify, with the reason. The stored source is what the contract resource shows
/// (`verification_metadata.source = "verifier"`), and it survives a restart of the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifier_matches_full_partial_and_rejects_wrong_sources() {
    let compilers = Compilers::new(Some(compilers_dir()));
    let original = standard_input(&counter_source(|s| s));
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&anvil.http_url(), dir.path());
    let daemon = rockscout::Daemon::start(&config).await.expect("daemon starts");

    let args = alloy::sol_types::SolValue::abi_encode(&U256::from(7));
    let creation = [compiled_creation_code(&original).await, args.clone()].concat();
    let tx = deploy(&node, accounts[0], &Bytes::from(creation.clone())).await;
    mine(&node, 1).await;
    let counter = created_address(&node, tx).await;
    let deployed =
        Deployed { runtime: node.get_code_at(counter).await.unwrap(), creation_input: Some(Bytes::from(creation)) };
    let limit = Duration::from_secs(120);

    let full = verifier::verify(&compilers, &verify_request(&original, "v0.8.37+commit.a1b2c3d4"), &deployed, limit)
        .await
        .expect("the original source verifies");
    assert!(full.full_match);
    assert_eq!((full.name.as_str(), full.file_path.as_str()), ("Counter", "src/Counter.sol"));
    assert_eq!(full.constructor_args.as_ref(), &args[..]);
    assert!(full.compiler_version.starts_with("0.8.37+commit."), "{}", full.compiler_version);
    assert_eq!(full.license.as_deref(), Some("MIT"));

    let commented = standard_input(&counter_source(|s| s.replace("what local-artifact", "what the local-artifact")));
    let partial = verifier::verify(&compilers, &verify_request(&commented, "0.8.37"), &deployed, limit).await.unwrap();
    assert!(!partial.full_match, "a changed comment changes only the metadata hash");
    assert_eq!(partial.constructor_args.as_ref(), &args[..]);

    let wrong = standard_input(&counter_source(|s| s.replace("value > 100", "value > 101")));
    let err = verifier::verify(&compilers, &verify_request(&wrong, "0.8.37"), &deployed, limit).await.unwrap_err();
    assert!(matches!(err, VerifyError::Mismatch(_)), "{err}");
    assert!(err.to_string().contains("runtime code differs"), "{err}");

    let err = verifier::verify(&compilers, &verify_request(&original, "0.8.19"), &deployed, limit).await.unwrap_err();
    assert_eq!(err.to_string(), "compiler version 0.8.19 is not available (available: 0.8.37)");
    let broken = standard_input("contract {");
    let err = verifier::verify(&compilers, &verify_request(&broken, "0.8.37"), &deployed, limit).await.unwrap_err();
    assert!(matches!(err, VerifyError::Compilation(_)), "{err}");

    wait_synced(&daemon, &node).await;
    stored_contract(&daemon, counter).await;
    let before = get_json(daemon.addr(), &format!("/api/v2/smart-contracts/{counter}")).await;
    assert_eq!(before["is_verified"], false);
    verifier::save(daemon.store(), counter, &partial).unwrap();
    let shown = get_json(daemon.addr(), &format!("/api/v2/smart-contracts/{counter}")).await;
    assert_eq!((shown["is_verified"].clone(), shown["is_partially_verified"].clone()), (json!(true), json!(true)));
    assert_eq!(shown["verification_metadata"]["source"], "verifier");
    assert_eq!(shown["name"], "Counter");
    assert!(shown["source_code"].as_str().unwrap().contains("what the local-artifact"));
    assert_eq!(shown["decoded_constructor_args"][0][0], "7");
    assert!(shown["verified_at"].is_string());

    // Stored: a restart on the same data directory shows it again.
    daemon.shutdown().await.unwrap();
    config.listen = "127.0.0.1:0".parse().unwrap();
    let daemon = rockscout::Daemon::start(&config).await.expect("daemon restarts");
    let again = get_json(daemon.addr(), &format!("/api/v2/smart-contracts/{counter}")).await;
    assert_eq!(again["verification_metadata"]["source"], "verifier");
    assert_eq!(again["abi"], shown["abi"]);
    let info = get_json(daemon.addr(), &format!("/api/v2/addresses/{counter}")).await;
    assert_eq!(info["name"], "Counter");
    assert_eq!(info["is_verified"], true);
}

/// Deploys Counter (constructor argument 7) compiled from `input`; returns its address.
async fn deploy_counter(
    node: &alloy::providers::RootProvider,
    from: alloy::primitives::Address,
    input: &Value,
) -> alloy::primitives::Address {
    let args = alloy::sol_types::SolValue::abi_encode(&U256::from(7));
    deploy_code(node, from, [compiled_creation_code(input).await, args].concat()).await
}

/// A fresh anvil, a provider on it, its accounts and a daemon that verifies with the compilers of
/// `compilers_dir` (the anvil is returned to keep it alive).
async fn verifying_daemon() -> (rockscout::dev::anvil::Anvil, alloy::providers::RootProvider, Vec<Address>, TestDaemon)
{
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |c| c.compilers_dir = Some(compilers_dir())).await;
    (anvil, node, accounts, t)
}

/// An account token of `owner`, for the routes that store something.
fn account_token(t: &TestDaemon, owner: Address) -> String {
    rockscout::account::Accounts::new(t.daemon.store().clone()).mint_token(owner, "ci", None, false).unwrap()
}

/// `N` Counters deployed from `from` (compiled from `input`), once the daemon has indexed them and stored their code.
async fn indexed_counters<const N: usize>(
    t: &TestDaemon,
    node: &alloy::providers::RootProvider,
    from: Address,
    input: &Value,
) -> [Address; N] {
    let mut contracts = [Address::ZERO; N];
    for contract in &mut contracts {
        *contract = deploy_counter(node, from, input).await;
    }
    wait_synced(&t.daemon, node).await;
    for contract in contracts {
        stored_contract(&t.daemon, contract).await;
    }
    contracts
}

async fn post(addr: SocketAddr, path: &str, token: Option<&str>, content_type: &str, body: String) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", content_type)];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    request(addr, Method::POST, path, &headers, body).await
}

/// The standard-input route as Blockscout's frontend uses it: multipart/form-data with the input as `files[0]`
/// verifies (full match, announced on `addresses:<hash>` and shown by the contract resource); a JSON body with a
/// wrong source is accepted and fails with the reason; no token is 401, an unknown compiler, a malformed input and
/// a malformed form 422, an address without code 404, sources over 10 MB 413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standard_input_route_verifies_and_reports_errors() {
    let original = standard_input(&counter_source(|s| s));
    let (_anvil, node, accounts, t) = verifying_daemon().await;
    let addr = t.daemon.addr();
    let token = account_token(&t, accounts[0]);
    let [counter, other] = indexed_counters(&t, &node, accounts[0], &original).await;
    let path = |a: alloy::primitives::Address| format!("/api/v2/smart-contracts/{a}/verification/via/standard-input");
    let json_body = |input: &Value, version: &str| {
        json!({"compiler_version": version, "contract_name": "Counter", "input": input.to_string(),
               "license_type": "mit", "autodetect_constructor_args": true})
        .to_string()
    };
    const JSON: &str = "application/json";

    let anonymous = post(addr, &path(counter), None, JSON, json_body(&original, "0.8.37")).await;
    assert_eq!(anonymous.status, 401);
    let unknown = post(addr, &path(counter), Some(&token), JSON, json_body(&original, "0.8.19")).await;
    assert_eq!(unknown.status, 422);
    assert!(unknown.json().to_string().contains("available: 0.8.37"), "{}", unknown.json());
    let malformed = post(addr, &path(counter), Some(&token), JSON, json_body(&json!({"sources": {}}), "0.8.37")).await;
    assert_eq!(malformed.status, 422);
    assert!(malformed.json().to_string().contains("sources"), "{}", malformed.json());
    let not_json = post(addr, &path(counter), Some(&token), JSON, "{".into()).await;
    assert_eq!(not_json.status, 422);
    let bad_form = post(addr, &path(counter), Some(&token), "multipart/form-data; boundary=B", "--B\r\nx".into()).await;
    assert_eq!(bad_form.status, 422, "{}", String::from_utf8_lossy(&bad_form.body));
    let no_code = post(addr, &path(accounts[5]), Some(&token), JSON, json_body(&original, "0.8.37")).await;
    assert_eq!(no_code.status, 404);
    // The server refuses a body over the limit as soon as its length is declared, and reads the rest of it, so the
    // client reads the answer even if it is still writing when the answer comes.
    let (huge, bearer) = ("x".repeat(10 * 1024 * 1024 + 1), format!("Bearer {token}"));
    let headers = [("content-type", JSON), ("authorization", bearer.as_str())];
    let status = try_request(addr, Method::POST, &path(counter), &headers, huge).await.unwrap().status;
    assert_eq!(status, 413);

    let mut ws = WsClient::connect(addr, "/socket/v2/websocket?vsn=2.0.0").await;
    let topic = format!("addresses:{counter:#x}");
    ws.send(&json!(["1", "1", topic, "phx_join", {}])).await;
    ws.until(Duration::from_secs(10), |f| f[3] == "phx_reply").await;
    let form = format!(
        "--XyZ\r\nContent-Disposition: form-data; name=\"compiler_version\"\r\n\r\nv0.8.37+commit.1\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"contract_name\"\r\n\r\nCounter\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"input.json\"\r\n\
         Content-Type: application/json\r\n\r\n{original}\r\n--XyZ--\r\n"
    );
    let started = post(addr, &path(counter), Some(&token), "multipart/form-data; boundary=XyZ", form).await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    assert_eq!(started.json(), json!({"message": "Smart-contract verification started"}));
    let result = ws.until(Duration::from_secs(120), |f| f[3] == "verification_result").await;
    assert_eq!(result[4], json!({"status": "success"}));
    ws.until(Duration::from_secs(10), |f| f[3] == "smart_contract_was_verified").await;
    let shown = get_json(addr, &format!("/api/v2/smart-contracts/{counter}")).await;
    assert_eq!(shown["is_fully_verified"], true);
    assert_eq!(shown["verification_metadata"]["source"], "verifier");
    assert_eq!(shown["decoded_constructor_args"][0][0], "7");
    assert_eq!(
        shown["compiler_settings"],
        json!({"optimizer": {"enabled": true, "runs": 200}, "evmVersion": "cancun"})
    );

    let wrong = standard_input(&counter_source(|s| s.replace("value > 100", "value > 101")));
    let accepted = post(addr, &path(other), Some(&token), JSON, json_body(&wrong, "0.8.37")).await;
    assert_eq!(accepted.status, 200);
    let failed = failed_job(&t, other, "the wrong source's job to fail").await;
    assert!(failed.contains("runtime code differs"), "{failed}");
    // The failed job verified nothing; `other` has the same runtime code as `counter`, so it shows counter's
    // source as a similar match, labelled so, without counter's constructor arguments.
    let twin = get_json(addr, &format!("/api/v2/smart-contracts/{other}")).await;
    assert_eq!(twin["is_verified"], true);
    assert_eq!(twin["verification_metadata"]["source"], "similar-match");
    assert_eq!(twin["verified_twin_address_hash"], counter.to_checksum(None));
    assert_eq!(twin["is_verified_via_eth_bytecode_db"], true);
    assert_eq!(twin["name"], "Counter");
    assert_eq!(twin["source_code"], shown["source_code"]);
    assert_eq!(twin["constructor_args"], Value::Null);
    // The Etherscan-style record says the same: no arguments (counter's are not this contract's), labelled so.
    let etherscan = get_json(addr, &format!("/api?module=contract&action=getsourcecode&address={other}")).await;
    let record = &etherscan["result"][0];
    assert_eq!((&record["ContractName"], &record["ConstructorArguments"]), (&json!("Counter"), &json!("")), "{record}");
    assert_eq!(record["VerificationSource"], "similar-match", "{record}");
    let own = get_json(addr, &format!("/api/v2/smart-contracts/{counter}")).await;
    assert_eq!(
        (own["verified_twin_address_hash"].clone(), own["is_verified_via_eth_bytecode_db"].clone()),
        (Value::Null, json!(false))
    );
}

/// Contracts created inside transactions verify against their own creation input, not the transaction's: a Counter
/// a constructor creates (the deployment's input is the maker's code), one a factory call creates (the input is the
/// call's), and one created after a reverted call undid a creation at the same address (the undone one's input is
/// not it). They match fully, with the constructor arguments from the init code in the node's trace. While the node
/// gives no trace, a job fails with the reason instead of storing a match without arguments, and can be sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contracts_created_inside_transactions_verify_with_their_own_init_code() {
    let maker = "\ncontract CounterMaker {\n    Counter public first = new Counter(9);\n\n    \
                 function make(uint256 start) external returns (Counter) {\n        return new Counter(start);\n    }\n\n    \
                 function undone(uint256 start) external {\n        new Counter(start);\n        revert(\"undone\");\n    }\n\n    \
                 function retry(uint256 start) external returns (Counter) {\n        try this.undone(1) {} catch {}\n        \
                 return new Counter(start);\n    }\n}\n";
    let input = standard_input(&counter_source(|s| s + maker));
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.compilers_dir = Some(compilers_dir());
        c.tracing = true;
        // Pages give up on the stopped node below while its traces still wait for it (the node's 5 s).
        c.api.node_read_timeout = Duration::from_secs(2);
    })
    .await;
    let code = alloy::hex::decode(creation_hex(&input, "src/Counter.sol", "CounterMaker").await).unwrap();
    let factory = deploy_code(&node, accounts[0], code).await;
    let with_start = |signature: &str, start: u64| {
        [&alloy::primitives::keccak256(signature)[..4], &U256::from(start).to_be_bytes::<32>()[..]].concat()
    };
    call(&node, accounts[0], factory, with_start("make(uint256)", 11)).await;
    call(&node, accounts[0], factory, with_start("retry(uint256)", 13)).await;
    let unseen = call(&node, accounts[0], factory, with_start("make(uint256)", 15)).await;
    mine(&node, 1).await;
    let children = [(factory.create(1), 9), (factory.create(2), 11), (factory.create(3), 13)];
    for (child, start) in children {
        let count: U256 = node
            .raw_request("eth_call".into(), (json!({"to": child, "data": "0x06661abd"}), "latest"))
            .await
            .map(|b: Bytes| U256::from_be_slice(&b))
            .unwrap();
        assert_eq!(count, U256::from(start), "the node has {child} counting from {start}");
    }
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    let token = account_token(&t, accounts[0]);
    let submit = |child: Address| {
        let body = json!({"compiler_version": "0.8.37", "contract_name": "Counter", "input": input.to_string()});
        let (path, token) = (format!("/api/v2/smart-contracts/{child}/verification/via/standard-input"), &token);
        async move {
            let started = post(addr, &path, Some(token), "application/json", body.to_string()).await;
            assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
        }
    };
    for (child, _) in children {
        stored_contract(&t.daemon, child).await;
    }
    let (stalled, _) = children[2];
    {
        let _paused = crate::hardening_rpc::Paused::new(&anvil);
        submit(stalled).await;
        let JobState::Failed(reason) = ended_job(&t, stalled).await else {
            panic!("a job without the node's trace ended")
        };
        assert!(reason.contains("no trace"), "{reason}");
    }
    for (child, start) in children {
        submit(child).await;
        assert_eq!(ended_job(&t, child).await, JobState::Verified, "{child}");
        let shown = get_json(addr, &format!("/api/v2/smart-contracts/{child}")).await;
        assert_eq!(shown["is_fully_verified"], true, "{shown}");
        assert_eq!(shown["decoded_constructor_args"][0][0], start.to_string(), "{shown}");
        let args = alloy::hex::encode(U256::from(start).to_be_bytes::<32>());
        assert!(shown["creation_bytecode"].as_str().unwrap().ends_with(&args), "{shown}");
        let q = format!("/api?module=contract&action=getsourcecode&address={child}");
        assert_eq!(get_json(addr, &q).await["result"][0]["ConstructorArguments"], args, "{child}");
    }

    // A creation input once traced is kept: with the node stopped the page still shows it.
    let creation_bytecode = |child: Address| async move {
        get_json(addr, &format!("/api/v2/smart-contracts/{child}")).await["creation_bytecode"].clone()
    };
    let unseen_child = factory.create(4);
    let args = |start: u64| alloy::hex::encode(U256::from(start).to_be_bytes::<32>());
    {
        let _paused = crate::hardening_rpc::Paused::new(&anvil);
        let shown = creation_bytecode(children[1].0).await;
        assert!(shown.as_str().unwrap().ends_with(&args(11)), "{shown}");
        // Two pages of a child never traced give up waiting, and their traces keep both places until the node
        // answers: a raw trace is refused meanwhile rather than stacked on the stopped node.
        let (first, second) = tokio::join!(creation_bytecode(unseen_child), creation_bytecode(unseen_child));
        assert_eq!((first, second), (Value::Null, Value::Null));
        let refused = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            crate::support::http::get(addr, &format!("/api/v2/transactions/{unseen:#x}/raw-trace")),
        )
        .await
        .expect("a refusal, not a wait on the stopped node");
        assert_eq!(refused.status, 503, "{}", String::from_utf8_lossy(&refused.body));
    }
    poll_until("the traces of the stopped node's places", std::time::Duration::from_secs(30), || async {
        let shown = creation_bytecode(unseen_child).await;
        shown.as_str().is_some_and(|code| code.ends_with(&args(15))).then_some(())
    })
    .await;
    let raw = get_json(addr, &format!("/api/v2/transactions/{unseen:#x}/raw-trace")).await;
    assert!(raw.is_array(), "the places came free: {raw}");
}

/// The state of the newest verification job for `address` once it has ended.
async fn ended_job(t: &TestDaemon, address: Address) -> JobState {
    poll_until("the verification job to end", Duration::from_secs(120), || async {
        let reader = t.daemon.store().reader();
        let jobs = reader.rows::<rockscout::store::tables::VerificationJobs>().filter_map(Result::ok);
        let newest = jobs.filter(|(_, job)| job.address == address).last().map(|(_, job)| job.state);
        newest.filter(|state| !matches!(state, JobState::Queued | JobState::Running))
    })
    .await
}

/// The reason the verification job for `address` failed, once it has (polled in the store, for `what`).
async fn failed_job(t: &TestDaemon, address: Address, what: &str) -> String {
    poll_until(what, Duration::from_secs(120), || async {
        let reader = t.daemon.store().reader();
        let jobs: Vec<_> = reader.rows::<rockscout::store::tables::VerificationJobs>().filter_map(Result::ok).collect();
        jobs.into_iter().find_map(|(_, job)| match job.state {
            rockscout::store::records::JobState::Failed(reason) if job.address == address => Some(reason),
            _ => None,
        })
    })
    .await
}

/// Form-encodes `pairs` (what Etherscan clients POST).
fn form(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={}", crate::support::http::percent_encode(v))).collect::<Vec<_>>().join("&")
}

/// The Etherscan-style actions as Foundry and Hardhat send them (forge's form fields: `contractaddress`,
/// `sourceCode`, `codeformat`, `contractname`, `compilerversion`, `optimizationUsed`, `runs`,
/// `constructorArguements`, `evmversion`, `apikey`; forge itself cannot run offline here, see docs/api.md):
/// `verifysourcecode` with `apikey=` (a valid API key) queues a job whose `guid` `checkverifystatus` follows to "Pass - Verified",
/// and `getsourcecode` then returns the source; without a key it is 401, an unknown compiler is refused with the
/// versions available, a wrong source ends "Fail - Unable to verify", an unknown guid is "Unknown UID".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etherscan_verifysourcecode_and_checkverifystatus() {
    let original = standard_input(&counter_source(|s| s));
    let (_anvil, node, accounts, t) = verifying_daemon().await;
    let addr = t.daemon.addr();
    let (_, key) =
        rockscout::account::Accounts::new(t.daemon.store().clone()).create_api_key(accounts[0], "ci").unwrap();
    let [counter, other] = indexed_counters(&t, &node, accounts[0], &original).await;
    const FORM: &str = "application/x-www-form-urlencoded";
    let args = alloy::hex::encode(alloy::sol_types::SolValue::abi_encode(&U256::from(7)));
    let submit = |address: alloy::primitives::Address, input: &Value, version: &str, key: Option<&str>| {
        let (address, input, version) = (address.to_string(), input.to_string(), version.to_owned());
        let (key, args) = (key.map(str::to_owned), args.clone());
        async move {
            // In the order forge serializes its request: the query (apikey, module, action, chainid) and then
            // its `VerifyContract` fields (foundry-block-explorers), both constructor-argument spellings included.
            let mut pairs = Vec::new();
            if let Some(key) = &key {
                pairs.push(("apikey", key.as_str()));
            }
            pairs.extend([
                ("module", "contract"),
                ("action", "verifysourcecode"),
                ("chainid", "31337"),
                ("contractaddress", address.as_str()),
                ("sourceCode", input.as_str()),
                ("codeformat", "solidity-standard-json-input"),
                ("contractname", "src/Counter.sol:Counter"),
                ("compilerversion", version.as_str()),
                ("optimizationUsed", "1"),
                ("runs", "200"),
                ("constructorArguements", args.as_str()),
                ("constructorArguments", args.as_str()),
                ("evmversion", "cancun"),
            ]);
            post(addr, "/api", None, FORM, form(&pairs)).await
        }
    };
    // forge polls with a form POST too.
    let status = |guid: String| async move {
        let pairs = [("module", "contract"), ("action", "checkverifystatus"), ("chainid", "31337"), ("guid", &guid)];
        post(addr, "/api", None, FORM, form(&pairs)).await.json()
    };

    let anonymous = submit(counter, &original, "v0.8.37+commit.a1b2c3d4", None).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.json()["status"], "0");
    let wrong_key = submit(counter, &original, "v0.8.37+commit.a1b2c3d4", Some("nope")).await;
    assert_eq!(wrong_key.status, 401);
    // Refusals carry the reason as the `result` text, where Hardhat's and Foundry's verifiers read it (Hardhat fails
    // on a `null` result).
    let unknown = submit(counter, &original, "v0.8.19+commit.7dd6d404", Some(&key)).await.json();
    assert_eq!((&unknown["status"], &unknown["message"]), (&json!("0"), &json!("NOTOK")), "{unknown}");
    assert!(unknown["result"].as_str().unwrap().contains("available: 0.8.37"), "{unknown}");
    // No code at the address (an account, or a contract not indexed yet): Etherscan's words, on which both
    // verifiers wait and ask again.
    let account = submit(accounts[5], &original, "v0.8.37+commit.a1b2c3d4", Some(&key)).await.json();
    let expected = format!("Unable to locate ContractCode at {}", accounts[5].to_checksum(None));
    assert_eq!(account, json!({"status": "0", "message": "NOTOK", "result": expected}));
    // The key in the `x-api-key` header authorizes too (the request gets as far as the compiler check).
    let pairs = [
        ("module", "contract"),
        ("action", "verifysourcecode"),
        ("contractaddress", &counter.to_string()),
        ("sourceCode", &original.to_string()),
        ("codeformat", "solidity-standard-json-input"),
        ("contractname", "src/Counter.sol:Counter"),
        ("compilerversion", "v0.8.19+commit.7dd6d404"),
    ];
    let send = |headers: Vec<(&'static str, String)>| {
        let body = form(&pairs);
        async move {
            let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            crate::support::http::request(addr, hyper::Method::POST, "/api", &headers, body).await
        }
    };
    let by_header = send(vec![("content-type", FORM.into()), ("x-api-key", key.clone())]).await;
    assert_eq!(by_header.status, 200, "{}", String::from_utf8_lossy(&by_header.body));
    assert!(by_header.json()["result"].as_str().unwrap().contains("available: 0.8.37"), "{}", by_header.json());
    // An account token authorizes in the Authorization header, not as the sign-in cookie (which a link on another
    // site can make a browser send).
    let token =
        rockscout::account::Accounts::new(t.daemon.store().clone()).mint_token(accounts[0], "ci", None, false).unwrap();
    let by_cookie = send(vec![("content-type", FORM.into()), ("cookie", format!("_explorer_key={token}"))]).await;
    assert_eq!(by_cookie.status, 401, "{}", String::from_utf8_lossy(&by_cookie.body));
    let by_bearer = send(vec![("content-type", FORM.into()), ("authorization", format!("Bearer {token}"))]).await;
    assert!(by_bearer.json()["result"].as_str().unwrap().contains("available: 0.8.37"), "{}", by_bearer.json());

    let queued = submit(counter, &original, "v0.8.37+commit.a1b2c3d4", Some(&key)).await.json();
    assert_eq!(queued["status"], "1", "{queued}");
    let guid = queued["result"].as_str().unwrap().to_owned();
    let passed = poll_until("checkverifystatus to pass", Duration::from_secs(120), || async {
        let answer = status(guid.clone()).await;
        (answer["result"] != "Pending in queue").then_some(answer)
    })
    .await;
    assert_eq!(passed, json!({"status": "1", "message": "OK", "result": "Pass - Verified"}));
    let source = get_json(addr, &format!("/api?module=contract&action=getsourcecode&address={counter}")).await;
    assert_eq!(source["result"][0]["ContractName"], "Counter", "{source}");
    assert_eq!(source["result"][0]["ConstructorArguments"].as_str().unwrap().trim_start_matches("0x"), args);
    assert_eq!(source["result"][0]["VerificationSource"], "verifier");
    // One file with settings the flat fields can say (optimizer, runs, EVM version): the file as it is.
    assert_eq!(source["result"][0]["SourceCode"], original["sources"]["src/Counter.sol"]["content"]);
    assert_eq!((&source["result"][0]["Runs"], &source["result"][0]["EVMVersion"]), (&json!("200"), &json!("cancun")));
    // Submitted again, in the words forge reads as "already verified".
    let again = submit(counter, &original, "v0.8.37+commit.a1b2c3d4", Some(&key)).await.json();
    assert_eq!(again, json!({"status": "0", "message": "NOTOK", "result": "Smart-contract already verified."}));

    let wrong = standard_input(&counter_source(|s| s.replace("value > 100", "value > 101")));
    let queued = submit(other, &wrong, "0.8.37", Some(&key)).await.json();
    let guid = queued["result"].as_str().unwrap().to_owned();
    let failed = poll_until("checkverifystatus to fail", Duration::from_secs(120), || async {
        let answer = status(guid.clone()).await;
        (answer["result"] != "Pending in queue").then_some(answer)
    })
    .await;
    assert_eq!((failed["status"].clone(), failed["result"].clone()), (json!("0"), json!("Fail - Unable to verify")));
    assert!(failed["message"].as_str().unwrap().contains("runtime code differs"), "{failed}");
    assert_eq!(status("987654".into()).await["result"], "Unknown UID");

    // Requests for one contract cannot fill the queue: the same one while its job waits is that job, a third
    // different one while two wait is refused with that reason (compiling takes solcjs seconds).
    let variant = |n: u32| standard_input(&counter_source(|s| s.replace("value > 100", &format!("value > {n}"))));
    let first = submit(other, &variant(102), "0.8.37", Some(&key)).await.json();
    let same = submit(other, &variant(102), "0.8.37", Some(&key)).await.json();
    assert_eq!(same["result"], first["result"], "the same request is the same job");
    let second = submit(other, &variant(103), "0.8.37", Some(&key)).await.json();
    assert_ne!(second["result"], first["result"]);
    let third = submit(other, &variant(104), "0.8.37", Some(&key)).await;
    assert_eq!(third.status, 429);
    let third = third.json();
    assert_eq!((&third["status"], &third["message"]), (&json!("0"), &json!("NOTOK")), "{third}");
    assert!(third["result"].as_str().unwrap().contains("this contract has 2 verifications waiting"), "{third}");
}

/// The flattened-code route (one file as `source_code`, JSON body) and the multi-part route (the file as a form
/// part named by its path) turn the sources and the optimizer/EVM fields into a standard-JSON input: both verify
/// Counter (multi-part with the same file path fully; flattened under another file name, so only partially, as the
/// metadata names the file), and wrong optimizer settings fail with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flattened_code_and_multi_part_routes_verify() {
    let source = counter_source(|s| s);
    let original = standard_input(&source);
    let (_anvil, node, accounts, t) = verifying_daemon().await;
    let addr = t.daemon.addr();
    let token = account_token(&t, accounts[0]);
    let [flattened, multi, unoptimized] = indexed_counters(&t, &node, accounts[0], &original).await;
    let path = |a: alloy::primitives::Address, via: &str| format!("/api/v2/smart-contracts/{a}/verification/via/{via}");
    let flat_body = |enabled: bool| {
        json!({"compiler_version": "v0.8.37+commit.1", "contract_name": "Counter", "source_code": source,
               "is_optimization_enabled": enabled, "optimization_runs": 200, "evm_version": "cancun",
               "license_type": "mit"})
        .to_string()
    };
    let started =
        post(addr, &path(flattened, "flattened-code"), Some(&token), "application/json", flat_body(true)).await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    let started =
        post(addr, &path(unoptimized, "flattened-code"), Some(&token), "application/json", flat_body(false)).await;
    assert_eq!(started.status, 200);
    let form = format!(
        "--B0\r\nContent-Disposition: form-data; name=\"compiler_version\"\r\n\r\n0.8.37\r\n\
         --B0\r\nContent-Disposition: form-data; name=\"contract_name\"\r\n\r\nCounter\r\n\
         --B0\r\nContent-Disposition: form-data; name=\"is_optimization_enabled\"\r\n\r\ntrue\r\n\
         --B0\r\nContent-Disposition: form-data; name=\"optimization_runs\"\r\n\r\n200\r\n\
         --B0\r\nContent-Disposition: form-data; name=\"evm_version\"\r\n\r\ncancun\r\n\
         --B0\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"src/Counter.sol\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n{source}\r\n--B0--\r\n"
    );
    let started = post(addr, &path(multi, "multi-part"), Some(&token), "multipart/form-data; boundary=B0", form).await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    let anonymous = post(addr, &path(multi, "multi-part"), None, "application/json", "{}".into()).await;
    assert_eq!(anonymous.status, 401);

    let verified = |a: alloy::primitives::Address| async move {
        let c = get_json(addr, &format!("/api/v2/smart-contracts/{a}")).await;
        (c["verification_metadata"]["source"] == "verifier").then_some(c)
    };
    let multi_shown = poll_until("multi-part to verify", Duration::from_secs(120), || verified(multi)).await;
    assert_eq!(multi_shown["is_fully_verified"], true);
    assert_eq!(multi_shown["file_path"], "src/Counter.sol");
    let flat_shown = poll_until("flattened code to verify", Duration::from_secs(120), || verified(flattened)).await;
    assert_eq!(flat_shown["is_partially_verified"], true);
    assert_eq!(flat_shown["file_path"], "Counter.sol");
    assert_eq!(flat_shown["optimization_enabled"], true);
    let failed = failed_job(&t, unoptimized, "the unoptimized job to fail").await;
    assert!(failed.contains("code differs"), "{failed}");

    // A full match is final: another source for it is not even queued.
    let again = post(addr, &path(multi, "flattened-code"), Some(&token), "application/json", flat_body(true)).await;
    assert_eq!((again.status.as_u16(), again.json()), (200, json!({"message": "Already verified"})));
    // A partial match gives way to a full one only: the same partial source again fails, the full one replaces it.
    let again = post(addr, &path(flattened, "flattened-code"), Some(&token), "application/json", flat_body(true)).await;
    assert_eq!(again.json(), json!({"message": "Smart-contract verification started"}));
    let kept = failed_job(&t, flattened, "the second partial match to be refused").await;
    assert!(kept.contains("Already verified with a partial match"), "{kept}");
    let full_form = |boundary: &str| {
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"compiler_version\"\r\n\r\n0.8.37\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"contract_name\"\r\n\r\nCounter\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"is_optimization_enabled\"\r\n\r\ntrue\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"optimization_runs\"\r\n\r\n200\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"evm_version\"\r\n\r\ncancun\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"src/Counter.sol\"\r\n\r\n\
             {source}\r\n--{boundary}--\r\n"
        )
    };
    let started =
        post(addr, &path(flattened, "multi-part"), Some(&token), "multipart/form-data; boundary=B1", full_form("B1"))
            .await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    poll_until("the full match to replace the partial one", Duration::from_secs(120), || async {
        let c = get_json(addr, &format!("/api/v2/smart-contracts/{flattened}")).await;
        (c["is_fully_verified"] == true).then_some(())
    })
    .await;
    // Finished jobs keep their outcome, not their input.
    let reader = t.daemon.store().reader();
    for row in reader.rows::<rockscout::store::tables::VerificationJobs>() {
        let (_, job) = row.unwrap();
        let finished = !matches!(job.state, JobState::Queued | JobState::Running);
        assert!(!finished || job.input.is_empty(), "a finished job keeps {} bytes of input", job.input.len());
    }
}

/// A reorg: the verified source of a contract whose creation stays is kept (a reorg of later blocks does not touch
/// it); the one whose creation the reorg removes disappears (404), and other code deployed at the same address on
/// the new branch (same sender and nonce) is not shown as verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reorg_hides_the_source_of_a_removed_creation_only() {
    use alloy::primitives::U256 as Word;
    let original = standard_input(&counter_source(|s| s));
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let kept = deploy_counter(&node, accounts[0], &original).await;
    let snapshot: Word = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    let removed = deploy_counter(&node, accounts[1], &original).await;
    wait_synced(&t.daemon, &node).await;
    for contract in [kept, removed] {
        stored_contract(&t.daemon, contract).await;
    }
    let compilers = Compilers::new(Some(compilers_dir()));
    for contract in [kept, removed] {
        let tx = t.daemon.store().reader().get::<Contracts>(&contract).unwrap().unwrap().creation_tx;
        let input = node.get_transaction_by_hash(tx).await.unwrap().unwrap();
        let deployed = Deployed {
            runtime: node.get_code_at(contract).await.unwrap(),
            creation_input: Some(alloy::consensus::Transaction::input(&input).clone()),
        };
        let request = verify_request(&original, "0.8.37");
        let source = verifier::verify(&compilers, &request, &deployed, Duration::from_secs(120)).await.unwrap();
        verifier::save(t.daemon.store(), contract, &source).unwrap();
        assert_eq!(get_json(addr, &format!("/api/v2/smart-contracts/{contract}")).await["is_verified"], true);
    }

    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    // The new branch: the same sender and nonce deploy other code at the removed contract's address.
    let tx = deploy(&node, accounts[1], &rockscout::dev::contracts::Demo::BYTECODE).await;
    mine(&node, 2).await;
    let other_code = created_address(&node, tx).await;
    assert_eq!(other_code, removed, "same sender and nonce, same address");
    wait_synced(&t.daemon, &node).await;
    let new_row = poll_until("the new code's row", Duration::from_secs(30), || async {
        let row = t.daemon.store().reader().get::<Contracts>(&removed).ok().flatten()?;
        (row.creation_tx == tx).then_some(row)
    })
    .await;
    assert_ne!(new_row.code_hash, alloy::primitives::keccak256(node.get_code_at(kept).await.unwrap()));
    let shown = get_json(addr, &format!("/api/v2/smart-contracts/{removed}")).await;
    assert_eq!(shown["is_verified"], false, "{shown}");
    assert!(shown["name"].is_null());
    let kept_shown = get_json(addr, &format!("/api/v2/smart-contracts/{kept}")).await;
    assert_eq!(kept_shown["verification_metadata"]["source"], "verifier");
    assert_eq!(kept_shown["name"], "Counter");
}

/// Linked.sol as a standard-JSON input (`src/Linked.sol`), optimizer on, cancun; `libraries` as given.
fn linked_input(libraries: Value) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/solidity/Linked.sol");
    json!({
        "language": "Solidity",
        "sources": {"src/Linked.sol": {"content": std::fs::read_to_string(path).unwrap()}},
        "settings": {"optimizer": {"enabled": true, "runs": 200}, "evmVersion": "cancun", "libraries": libraries,
                     "outputSelection": {"*": {"*": ["evm.bytecode.object"]}}}
    })
}

/// Creation code (hex) of `name` in `file` compiled from `input` by the real compiler (library placeholders filled
/// by the compiler when the input names the libraries).
async fn creation_hex(input: &Value, file: &str, name: &str) -> String {
    let compiler = Compilers::new(Some(compilers_dir())).path("0.8.37").unwrap();
    let output = verifier::compile(&compiler, "0.8.37", &serde_json::to_vec(input).unwrap(), Duration::from_secs(120))
        .await
        .unwrap_or_else(|e| panic!("solc compiles {file}: {e}"));
    let object = output["contracts"][file][name]["evm"]["bytecode"]["object"].as_str();
    object.unwrap_or_else(|| panic!("no bytecode for {name} in {output}")).to_owned()
}

/// A contract linked to an external library verifies when the form names the library (flattened code and multi-part,
/// the frontend's `libraries` field) and with the standard-JSON input's `settings.libraries`; the contract resource
/// lists the library; naming another address for the library fails (linked code carries the address, so the
/// comparison checks it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contracts_linked_to_libraries_verify_with_the_library_named() {
    let (_anvil, node, accounts, t) = verifying_daemon().await;
    let addr = t.daemon.addr();
    let token = account_token(&t, accounts[0]);

    let library_code = creation_hex(&linked_input(json!({})), "src/Linked.sol", "Tally").await;
    let tally = deploy_code(&node, accounts[0], alloy::hex::decode(&library_code).unwrap()).await;
    let linked = linked_input(json!({"src/Linked.sol": {"Tally": tally.to_string()}}));
    let adder_code = creation_hex(&linked, "src/Linked.sol", "Adder").await;
    assert!(!adder_code.contains("__$"), "the compiler linked the library");
    let mut adders = Vec::new();
    for _ in 0..4 {
        adders.push(deploy_code(&node, accounts[0], alloy::hex::decode(&adder_code).unwrap()).await);
    }
    // The library is really used: bump(5) through it.
    let bump = [&alloy::primitives::keccak256("bump(uint256)")[..4], &U256::from(5).to_be_bytes::<32>()[..]].concat();
    let receipt_tx = call(&node, accounts[0], adders[0], bump).await;
    mine(&node, 1).await;
    let receipt = node.get_transaction_receipt(receipt_tx).await.unwrap().unwrap();
    assert!(receipt.status(), "bump through the library succeeds");
    wait_synced(&t.daemon, &node).await;
    for contract in &adders {
        stored_contract(&t.daemon, *contract).await;
    }

    let source =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/solidity/Linked.sol"))
            .unwrap();
    let flat = |library: Address| {
        json!({"compiler_version": "v0.8.37+commit.1", "contract_name": "Adder", "source_code": source,
               "is_optimization_enabled": true, "optimization_runs": 200, "evm_version": "cancun",
               "libraries": {"Tally": library.to_string()}})
        .to_string()
    };
    let path = |a: Address, via: &str| format!("/api/v2/smart-contracts/{a}/verification/via/{via}");
    let started = post(addr, &path(adders[0], "flattened-code"), Some(&token), "application/json", flat(tally)).await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    let standard = json!({"compiler_version": "0.8.37", "contract_name": "src/Linked.sol:Adder",
                          "input": linked.to_string()})
    .to_string();
    let started = post(addr, &path(adders[1], "standard-input"), Some(&token), "application/json", standard).await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    // Multi-part names the library without its file: it goes to the file that defines it, as the project's own
    // settings name it, so the match is full (an entry for each file naming it, here the note too, changed the
    // metadata hash).
    let note = "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.0;\n// Adder calls Tally.\n";
    let parts = json!({"compiler_version": "v0.8.37+commit.1", "contract_name": "Adder",
                       "files": {"src/Linked.sol": source, "src/Note.sol": note}, "is_optimization_enabled": true,
                       "optimization_runs": 200, "evm_version": "cancun", "libraries": {"Tally": tally.to_string()}})
    .to_string();
    let started = post(addr, &path(adders[3], "multi-part"), Some(&token), "application/json", parts).await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    let wrong =
        post(addr, &path(adders[2], "flattened-code"), Some(&token), "application/json", flat(accounts[3])).await;
    assert_eq!(wrong.status, 200);
    let bad_library = json!({"compiler_version": "0.8.37", "contract_name": "Adder", "source_code": "",
                             "libraries": {"Tally": "not an address"}})
    .to_string();
    let refused = post(addr, &path(adders[2], "flattened-code"), Some(&token), "application/json", bad_library).await;
    assert_eq!(refused.status, 422);
    assert!(refused.json().to_string().contains("libraries"), "{}", refused.json());

    for (adder, full) in [(adders[0], false), (adders[1], true), (adders[3], true)] {
        let shown = poll_until("the linked contract to verify", Duration::from_secs(120), || async {
            let c = get_json(addr, &format!("/api/v2/smart-contracts/{adder}")).await;
            (c["verification_metadata"]["source"] == "verifier").then_some(c)
        })
        .await;
        assert_eq!(shown["is_fully_verified"], full, "{adder}");
        assert_eq!(shown["name"], "Adder");
        assert_eq!(shown["external_libraries"], json!([{"name": "Tally", "address_hash": tally.to_checksum(None)}]));
        let source = get_json(addr, &format!("/api?module=contract&action=getsourcecode&address={adder}")).await;
        assert_eq!(source["result"][0]["Library"], format!("Tally:{}", tally.to_checksum(None)), "{source}");
    }
    let failed = failed_job(&t, adders[2], "the job naming another library address to fail").await;
    assert!(failed.contains("code differs"), "{failed}");
}

/// A small HTTP server for files (path → bytes) on a free loopback port; counts the requests per path.
async fn serve_files(
    files: std::collections::HashMap<String, Vec<u8>>,
) -> (SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (files, log) = (files.clone(), log.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let line = String::from_utf8_lossy(&head).lines().next().unwrap_or("").to_owned();
                let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
                log.lock().unwrap().push(path.clone());
                let answer = match files.get(&path) {
                    Some(body) => [
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len())
                            .into_bytes(),
                        body.clone(),
                    ]
                    .concat(),
                    None => b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec(),
                };
                let _ = socket.write_all(&answer).await;
            });
        }
    });
    (addr, asked)
}

/// A compiler missing from the compilers folder comes from the release list: the verification config lists the
/// list's releases; a verification with a listed version downloads the build once, checks its SHA-256 and installs
/// it (then verifies); a build whose bytes differ from the list's SHA-256 is refused (the job fails with the reason,
/// nothing installed); a version in neither is 422. The "release" served is a solc 0.8.37 program (the pinned
/// solcjs behind a small script) and the list is solc-bin's format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_compilers_are_downloaded_from_the_release_list_and_checked() {
    use sha2::Digest;
    let solcjs = compilers_dir().join("node_modules/solc");
    let program = format!(
        "#!/bin/sh\nSOLC_JS='{}' exec node -e \"let s = ''; process.stdin.on('data', (d) => (s += d)).on('end', () => \
         process.stdout.write(require(process.env.SOLC_JS).compile(s)))\"\n",
        solcjs.display()
    );
    let good = "solc-linux-amd64-v0.8.37+commit.c0ffee00";
    let tampered = "solc-linux-amd64-v0.8.36+commit.badbad00";
    let digest = format!("0x{}", alloy::hex::encode(sha2::Sha256::digest(program.as_bytes())));
    let list = json!({"builds": [
        {"path": good, "version": "0.8.37", "build": "commit.c0ffee00", "longVersion": "0.8.37+commit.c0ffee00",
         "keccak256": "0x00", "sha256": digest, "urls": []},
        {"path": tampered, "version": "0.8.36", "build": "commit.badbad00", "longVersion": "0.8.36+commit.badbad00",
         "keccak256": "0x00", "sha256": digest, "urls": []}
    ], "releases": {"0.8.37": good, "0.8.36": tampered}, "latestRelease": "0.8.37"});
    let files = std::collections::HashMap::from([
        ("/bin/list.json".to_owned(), list.to_string().into_bytes()),
        (format!("/bin/{good}"), program.clone().into_bytes()),
        (format!("/bin/{tampered}"), format!("{program}# changed\n").into_bytes()),
    ]);
    let (server, asked) = serve_files(files).await;

    let original = standard_input(&counter_source(|s| s));
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = node.get_accounts().await.unwrap();
    let empty = tempfile::tempdir().unwrap();
    let list_url = format!("http://{server}/bin/list.json").parse().unwrap();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.compilers_dir = Some(empty.path().to_owned());
        c.compiler_list_url = Some(list_url);
    })
    .await;
    let addr = t.daemon.addr();
    let token = account_token(&t, accounts[0]);
    let [counter, other] = indexed_counters(&t, &node, accounts[0], &original).await;

    let config = get_json(addr, "/api/v2/smart-contracts/verification/config").await;
    assert_eq!(
        config["solidity_compiler_versions"],
        json!(["v0.8.37+commit.c0ffee00", "v0.8.36+commit.badbad00"]),
        "nothing installed yet: the list's releases"
    );
    let path = |a: Address| format!("/api/v2/smart-contracts/{a}/verification/via/standard-input");
    let body = |version: &str| {
        json!({"compiler_version": version, "contract_name": "Counter", "input": original.to_string()}).to_string()
    };
    let unknown = post(addr, &path(counter), Some(&token), "application/json", body("0.8.19")).await;
    assert_eq!(unknown.status, 422, "neither installed nor listed");

    let started = post(addr, &path(counter), Some(&token), "application/json", body("v0.8.37+commit.c0ffee00")).await;
    assert_eq!(started.status, 200, "{}", String::from_utf8_lossy(&started.body));
    let shown = poll_until("verification with the downloaded compiler", Duration::from_secs(120), || async {
        let c = get_json(addr, &format!("/api/v2/smart-contracts/{counter}")).await;
        (c["verification_metadata"]["source"] == "verifier").then_some(c)
    })
    .await;
    assert_eq!(shown["is_fully_verified"], true);
    let installed = t.dir.path().join("compilers/solc-0.8.37");
    assert_eq!(std::fs::read(&installed).unwrap(), program.as_bytes(), "installed byte for byte");

    let started = post(addr, &path(other), Some(&token), "application/json", body("0.8.36")).await;
    assert_eq!(started.status, 200, "listed, so accepted: the download is checked in the job");
    let failed = failed_job(&t, other, "the tampered download's job to fail").await;
    assert!(failed.contains("SHA-256"), "{failed}");
    assert!(!t.dir.path().join("compilers/solc-0.8.36").exists(), "a build with the wrong digest is not installed");
    let leftovers: Vec<_> = std::fs::read_dir(t.dir.path().join("compilers")).unwrap().flatten().collect();
    assert_eq!(leftovers.len(), 1, "only the good build: {leftovers:?}");

    let downloads = asked.lock().unwrap().iter().filter(|p| p.ends_with(good)).count();
    assert_eq!(downloads, 1, "downloaded once");
    let config = get_json(addr, "/api/v2/smart-contracts/verification/config").await;
    assert_eq!(config["solidity_compiler_versions"][0], "0.8.37", "installed versions first");
}

/// Proxies through the Etherscan-style API: the logic and the EIP-1967 proxy verify from single files
/// (`codeformat=solidity-single-file`, the optimizer fields, the proxy's constructor argument); `verifyproxycontract`
/// answers a guid and `checkproxyverification` names the implementation the index found (an expected
/// implementation that differs is refused, a contract that is no proxy has none, an address without code is
/// refused); the proxy's contract resource lists the verified logic by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxies_verify_and_report_their_implementation_through_the_etherscan_api() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/solidity/Proxies.sol");
    let source = std::fs::read_to_string(path).unwrap();
    let input = json!({
        "language": "Solidity",
        "sources": {"Proxies.sol": {"content": source}},
        "settings": {"optimizer": {"enabled": true, "runs": 200}, "evmVersion": "cancun",
                     "outputSelection": {"*": {"*": ["evm.bytecode.object"]}}}
    });
    let (_anvil, node, accounts, t) = verifying_daemon().await;
    let addr = t.daemon.addr();
    let (_, key) =
        rockscout::account::Accounts::new(t.daemon.store().clone()).create_api_key(accounts[0], "ci").unwrap();
    let compiled = |name: &'static str| {
        let input = input.clone();
        async move { alloy::hex::decode(creation_hex(&input, "Proxies.sol", name).await).unwrap() }
    };
    let logic = deploy_code(&node, accounts[0], compiled("Logic").await).await;
    let args = alloy::hex::encode(logic.into_word());
    let proxy_code = [compiled("Proxy1967").await, logic.into_word().to_vec()].concat();
    let proxy = deploy_code(&node, accounts[0], proxy_code).await;
    wait_synced(&t.daemon, &node).await;
    for contract in [logic, proxy] {
        stored_contract(&t.daemon, contract).await;
    }

    const FORM: &str = "application/x-www-form-urlencoded";
    let (logic_s, proxy_s) = (logic.to_string(), proxy.to_string());
    for (address, name) in [(logic_s.as_str(), "Logic"), (proxy_s.as_str(), "Proxy1967")] {
        let pairs = [
            ("module", "contract"),
            ("action", "verifysourcecode"),
            ("apikey", key.as_str()),
            ("contractaddress", address),
            ("sourceCode", source.as_str()),
            ("codeformat", "solidity-single-file"),
            ("contractname", name),
            ("compilerversion", "v0.8.37+commit.a1b2c3d4"),
            ("optimizationUsed", "1"),
            ("runs", "200"),
            ("evmversion", "cancun"),
            ("constructorArguements", args.as_str()),
        ];
        let queued = post(addr, "/api", None, FORM, form(&pairs)).await.json();
        assert_eq!(queued["status"], "1", "{queued}");
        let guid = queued["result"].as_str().unwrap().to_owned();
        let done = poll_until("checkverifystatus to finish", Duration::from_secs(120), || async {
            let answer = get_json(addr, &format!("/api?module=contract&action=checkverifystatus&guid={guid}")).await;
            (answer["result"] != "Pending in queue").then_some(answer)
        })
        .await;
        assert_eq!(done["result"], "Pass - Verified", "{name}: {done}");
    }

    let ask = |query: String| async move { get_json(addr, &format!("/api?module=contract&{query}")).await };
    let guid = |answer: Value| answer["result"].as_str().unwrap().to_owned();
    let started = ask(format!("action=verifyproxycontract&address={proxy}")).await;
    assert_eq!(started["status"], "1", "{started}");
    let check = ask(format!("action=checkproxyverification&guid={}", guid(started))).await;
    let found = format!(
        "The proxy's ({}) implementation contract is found at {} and is successfully updated.",
        proxy.to_checksum(None),
        logic.to_checksum(None)
    );
    assert_eq!(check, json!({"status": "1", "message": "OK", "result": found}));
    let expecting_other =
        ask(format!("action=verifyproxycontract&address={proxy}&expectedimplementation={}", accounts[3])).await;
    let check = ask(format!("action=checkproxyverification&guid={}", guid(expecting_other))).await;
    assert_eq!(check["status"], "0");
    assert!(check["result"].as_str().unwrap().contains("does not match"), "{check}");
    let no_proxy = ask(format!("action=verifyproxycontract&address={logic}")).await;
    let check = ask(format!("action=checkproxyverification&guid={}", guid(no_proxy))).await;
    assert_eq!(
        check["result"],
        "A corresponding implementation contract was unfortunately not detected for the proxy address."
    );
    let eoa = ask(format!("action=verifyproxycontract&address={}", accounts[4])).await;
    let expected = format!("Unable to locate ContractCode at {}", accounts[4].to_checksum(None));
    assert_eq!(eoa, json!({"status": "0", "message": "NOTOK", "result": expected}));
    assert_eq!(ask("action=checkproxyverification&guid=zz".into()).await["result"], "Unknown UID");
    // 48 bytes with a two-byte character across the address's end: no slice may split it.
    let split = format!("{}%C3%A9{}", "a".repeat(39), "a".repeat(7));
    assert_eq!(ask(format!("action=checkproxyverification&guid={split}")).await["result"], "Unknown UID");

    let shown = get_json(addr, &format!("/api/v2/smart-contracts/{proxy}")).await;
    assert_eq!(shown["name"], "Proxy1967");
    assert_eq!(shown["proxy_type"], "eip1967");
    assert_eq!(shown["implementations"], json!([{"address_hash": logic.to_checksum(None), "name": "Logic"}]));
    assert_eq!(shown["decoded_constructor_args"][0][0], logic.to_checksum(None));
}

//! The Etherscan-style API (`/api?module=…&action=…`) on a real chain: every answer compared with what the node
//! says (balances, blocks, receipts, `eth_getLogs`, `balanceOf`, call traces), the error envelopes, GET and POST
//! forms answering alike, and an independent client from PyPI (blockparty) reading the same values.

use crate::support::http::{get, request};
use crate::support::*;
use alloy::primitives::{Address, Bytes, B256, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::rpc::types::{Block, TransactionReceipt};
use alloy::sol_types::{SolCall, SolConstructor, SolEvent};
use hyper::Method;
use rockscout::dev::contracts::{Demo, DemoChild, DemoFactory, DemoToken};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

/// The chain the tests read: three accounts trading ether and a token, a contract emitting events and failing on
/// demand, and a factory whose call creates a contract with value (internal transactions).
struct Chain {
    accounts: Vec<Address>,
    demo: Address,
    token: Address,
    factory: Address,
    demo_deploy: B256,
    failed: B256,
    spawn: B256,
    tip: u64,
}

async fn build_chain(node: &RootProvider) -> Chain {
    let a: Vec<Address> = node.get_accounts().await.unwrap();
    let demo_deploy = deploy(node, a[0], &Demo::BYTECODE).await;
    let factory_deploy = deploy(node, a[0], &DemoFactory::BYTECODE).await;
    let constructor = DemoToken::constructorCall {
        name_: "Scan".into(),
        symbol_: "SCN".into(),
        initialSupply: U256::from(10u64.pow(12)),
    };
    let token_deploy =
        deploy(node, a[0], &Bytes::from([&DemoToken::BYTECODE[..], &constructor.abi_encode()].concat())).await;
    mine(node, 1).await;
    let demo = created_address(node, demo_deploy).await;
    let factory = created_address(node, factory_deploy).await;
    let token = created_address(node, token_deploy).await;
    let mut failed = B256::ZERO;
    for round in 1..=5u64 {
        transfer(node, a[0], a[1], 1_000 * round).await;
        transfer(node, a[1], a[2], 7 * round).await;
        let amount = U256::from(round * 100);
        call(node, a[0], token, DemoToken::transferCall { to: a[1], value: amount }.abi_encode()).await;
        call(node, a[1], token, DemoToken::transferCall { to: a[2], value: U256::from(round) }.abi_encode()).await;
        call(node, a[1], demo, Demo::pokeCall { note: format!("round {round}") }.abi_encode()).await;
        // x = 5 reverts with a reason; the others succeed and log twice.
        let tx = call(node, a[2], demo, Demo::mayFailCall { x: U256::from(round + 2) }.abi_encode()).await;
        if round == 3 {
            failed = tx;
        }
        mine(node, 1).await;
    }
    let spawn = send(
        node,
        json!({"from": a[1], "to": factory, "value": U256::from(5_000),
               "data": Bytes::from(DemoFactory::spawnCall { v: U256::from(3) }.abi_encode()), "gas": "0x200000"}),
    )
    .await;
    mine(node, 1).await;
    let tip = node.get_block_number().await.unwrap();
    Chain { accounts: a[..3].to_vec(), demo, token, factory, demo_deploy, failed, spawn, tip }
}

const NOT_VERIFIED: &str = "Contract source code not verified";

async fn api(addr: SocketAddr, query: &str) -> Value {
    let reply = get(addr, &format!("/api?{query}")).await;
    assert_eq!(reply.status, 200, "{query}: {}", String::from_utf8_lossy(&reply.body));
    reply.json()
}

/// The `result` of a successful answer.
async fn ok(addr: SocketAddr, query: &str) -> Value {
    let answer = api(addr, query).await;
    assert_eq!((answer["status"].as_str(), answer["message"].as_str()), (Some("1"), Some("OK")), "{query}: {answer}");
    answer["result"].clone()
}

async fn block(node: &RootProvider, n: u64) -> Block {
    node.get_block_by_number(n.into()).full().await.unwrap().expect("block")
}

async fn receipt(node: &RootProvider, hash: B256) -> TransactionReceipt {
    node.get_transaction_receipt(hash).await.unwrap().expect("receipt")
}

fn lower(a: &Address) -> String {
    format!("{a:#x}")
}

/// Every transaction of the chain sent by, sent to or creating a contract for `who`, newest first, as the node
/// has them.
async fn node_history(node: &RootProvider, tip: u64, who: Address) -> Vec<(u64, B256)> {
    let mut out = Vec::new();
    for n in (0..=tip).rev() {
        let b = block(node, n).await;
        let txs: Vec<_> = b.transactions.txns().collect();
        for tx in txs.into_iter().rev() {
            let r = receipt(node, *tx.inner.tx_hash()).await;
            if r.from == who || r.to == Some(who) || r.contract_address == Some(who) {
                out.push((n, *tx.inner.tx_hash()));
            }
        }
    }
    out
}

async fn start(tracing: bool) -> (rockscout::dev::anvil::Anvil, RootProvider, TestDaemon, Chain) {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let daemon = start_daemon(&anvil.http_url(), |c| {
        c.tracing = tracing;
        c.demo_artifacts = true;
    })
    .await;
    let chain = build_chain(&node).await;
    wait_synced(&daemon.daemon, &node).await;
    (anvil, node, daemon, chain)
}

#[tokio::test(flavor = "multi_thread")]
async fn account_actions_match_the_node() {
    let (_anvil, node, daemon, chain) = start(true).await;
    let addr = daemon.daemon.addr();
    let [a0, a1, a2] = [chain.accounts[0], chain.accounts[1], chain.accounts[2]];

    // ethsupply: the latest indexed balance of every address the index saw, summed; each is the node's balance at
    // the block the index recorded it after (a contract's balance moved by calls alone is not re-read without
    // --tracing, so the tip's balance may differ). The trace pass may still add balances it found through calls:
    // compared once the store and the answer agree on the same set.
    let store = daemon.daemon.store().clone();
    let (supply, seen) = poll_until("ethsupply to match the indexed balances", Duration::from_secs(30), || {
        let (store, node) = (store.clone(), node.clone());
        async move {
            let read = || -> Vec<(Address, u64)> {
                let reader = store.reader();
                let rows = reader.rows::<rockscout::store::tables::CoinBalanceNow>();
                rows.map(|row| row.map(|(address, now)| (address, now.block)).unwrap()).collect()
            };
            let before = read();
            let supply = ok(addr, "module=stats&action=ethsupply").await;
            let mut expected = alloy::primitives::U256::ZERO;
            for (who, at) in &before {
                expected += node.get_balance(*who).block_id((*at).into()).await.unwrap();
            }
            (read() == before && supply == json!(expected.to_string())).then_some((supply, before))
        }
    })
    .await;
    assert!(seen.len() >= chain.accounts.len(), "{seen:?}");
    assert_ne!(supply, json!("0"));

    // Balances at the indexed tip, one by one and together.
    for who in &chain.accounts {
        let want = node.get_balance(*who).block_id(chain.tip.into()).await.unwrap();
        assert_eq!(ok(addr, &format!("module=account&action=balance&address={who}")).await, json!(want.to_string()));
    }
    let list = chain.accounts.iter().map(lower).collect::<Vec<_>>().join(",");
    let multi = ok(addr, &format!("module=account&action=balancemulti&address={list}")).await;
    for who in &chain.accounts {
        let want = node.get_balance(*who).block_id(chain.tip.into()).await.unwrap();
        let item = multi.as_array().unwrap().iter().find(|i| i["account"] == lower(who)).expect("listed");
        assert_eq!(item["balance"], want.to_string());
    }

    // txlist: the same transactions as the node's blocks, newest first, with receipt fields.
    let history = node_history(&node, chain.tip, a1).await;
    assert!(history.len() >= 20, "a1 has {} transactions", history.len());
    let txs = ok(addr, &format!("module=account&action=txlist&address={a1}")).await;
    let txs = txs.as_array().unwrap();
    let hashes: Vec<String> = txs.iter().map(|t| t["hash"].as_str().unwrap().to_string()).collect();
    let want: Vec<String> = history.iter().map(|(_, h)| format!("{h:#x}")).collect();
    assert_eq!(hashes, want);
    for item in txs {
        let hash: B256 = item["hash"].as_str().unwrap().parse().unwrap();
        let r = receipt(&node, hash).await;
        let tx = node.get_transaction_by_hash(hash).await.unwrap().unwrap();
        let b = block(&node, r.block_number.unwrap()).await;
        assert_eq!(item["blockNumber"], r.block_number.unwrap().to_string());
        assert_eq!(item["blockHash"], format!("{:#x}", b.header.hash));
        assert_eq!(item["timeStamp"], b.header.timestamp.to_string());
        assert_eq!(item["transactionIndex"], r.transaction_index.unwrap().to_string());
        assert_eq!(item["gasUsed"], r.gas_used.to_string());
        assert_eq!(item["cumulativeGasUsed"], r.inner.cumulative_gas_used().to_string(), "{hash}");
        assert_eq!(item["gasPrice"], r.effective_gas_price.to_string());
        assert_eq!(item["txreceipt_status"], if r.status() { "1" } else { "0" });
        assert_eq!(item["isError"], if r.status() { "0" } else { "1" });
        assert_eq!(item["from"], lower(&r.from));
        assert_eq!(item["to"], r.to.as_ref().map(lower).unwrap_or_default());
        assert_eq!(item["nonce"], alloy::consensus::Transaction::nonce(&tx).to_string());
        assert_eq!(item["value"], alloy::consensus::Transaction::value(&tx).to_string());
        assert_eq!(item["input"], format!("{}", alloy::consensus::Transaction::input(&tx)));
        assert_eq!(item["confirmations"], (chain.tip - r.block_number.unwrap()).to_string());
    }
    // Pages, order and block windows.
    let page2 = ok(addr, &format!("module=account&action=txlist&address={a1}&page=2&offset=3")).await;
    let page2: Vec<&str> = page2.as_array().unwrap().iter().map(|t| t["hash"].as_str().unwrap()).collect();
    assert_eq!(page2, hashes[3..6].iter().map(String::as_str).collect::<Vec<_>>());
    let asc = ok(addr, &format!("module=account&action=txlist&address={a1}&sort=asc")).await;
    let asc: Vec<String> = asc.as_array().unwrap().iter().map(|t| t["hash"].as_str().unwrap().to_string()).collect();
    assert_eq!(asc, hashes.iter().rev().cloned().collect::<Vec<_>>());
    let window = ok(addr, &format!("module=account&action=txlist&address={a1}&startblock=3&endblock=4&sort=asc")).await;
    let in_window: Vec<(u64, String)> =
        history.iter().rev().filter(|(n, _)| (3..=4).contains(n)).map(|(n, h)| (*n, format!("{h:#x}"))).collect();
    let got: Vec<(u64, String)> = window
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["blockNumber"].as_str().unwrap().parse().unwrap(), t["hash"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got, in_window);
    let sent = ok(addr, &format!("module=account&action=txlist&address={a1}&filter_by=from")).await;
    assert!(sent.as_array().unwrap().iter().all(|t| t["from"] == lower(&a1)));
    assert!(sent.as_array().unwrap().len() < txs.len());

    // Token transfers of a1 in the token: the node's Transfer logs.
    let transfers =
        ok(addr, &format!("module=account&action=tokentx&address={a1}&contractaddress={}", chain.token)).await;
    let filter = alloy::rpc::types::Filter::new()
        .address(chain.token)
        .event_signature(DemoToken::Transfer::SIGNATURE_HASH)
        .from_block(0);
    let mut want: Vec<(String, String, String, String)> = Vec::new();
    for log in node.get_logs(&filter).await.unwrap().iter().rev() {
        let event = DemoToken::Transfer::decode_log(&log.inner).unwrap();
        if event.from == a1 || event.to == a1 {
            let hash = format!("{:#x}", log.transaction_hash.unwrap());
            want.push((hash, lower(&event.from), lower(&event.to), event.value.to_string()));
        }
    }
    let got: Vec<(String, String, String, String)> = transfers
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let field = |k: &str| t[k].as_str().unwrap().to_string();
            (field("hash"), field("from"), field("to"), field("value"))
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(transfers[0]["tokenSymbol"], "SCN");
    assert_eq!(transfers[0]["functionName"], "transfer(address to, uint256 value)");
    // Etherscan's answer: a transaction's input is not repeated for each of its transfers.
    assert!(transfers.as_array().unwrap().iter().all(|t| t["input"] == "deprecated"));
    // No ERC-721 transfers exist: an empty list in Etherscan's form.
    let none = api(addr, &format!("module=account&action=tokennfttx&address={a1}")).await;
    assert_eq!(none, json!({"message": "No token transfers found", "result": [], "status": "0"}));

    // Token balances: balanceOf on the node.
    for who in &chain.accounts {
        let data = DemoToken::balanceOfCall::new((*who,)).abi_encode();
        let out: Bytes = node
            .raw_request("eth_call".into(), json!([{"to": chain.token, "data": Bytes::from(data)}, "latest"]))
            .await
            .unwrap();
        let want = U256::from_be_slice(&out).to_string();
        let q = format!("module=account&action=tokenbalance&address={who}&contractaddress={}", chain.token);
        assert_eq!(ok(addr, &q).await, json!(want));
    }
    let held = ok(addr, &format!("module=account&action=tokenlist&address={a2}")).await;
    assert_eq!(held[0]["contractAddress"], lower(&chain.token));
    assert_eq!(held[0]["type"], "ERC-20");

    // Internal transactions of the factory call, with zero-value frames: the node's call trace, depth first.
    let trace: Value = node
        .raw_request("debug_traceTransaction".into(), json!([chain.spawn, {"tracer": "callTracer"}]))
        .await
        .unwrap();
    fn flatten(frame: &Value, out: &mut Vec<(String, String, String)>) {
        for child in frame["calls"].as_array().into_iter().flatten() {
            let value =
                U256::from_str_radix(child["value"].as_str().unwrap_or("0x0").trim_start_matches("0x"), 16).unwrap();
            out.push((
                child["type"].as_str().unwrap().to_lowercase(),
                child["from"].as_str().unwrap().to_lowercase(),
                value.to_string(),
            ));
            flatten(child, out);
        }
    }
    let mut want = Vec::new();
    flatten(&trace, &mut want);
    let q = format!("module=account&action=txlistinternal&txhash={:#x}&include_zero_value=true", chain.spawn);
    let internal = poll_until("the trace pass to index the factory call", Duration::from_secs(30), || async {
        let answer = api(addr, &q).await;
        (answer["status"] == "1").then(|| answer["result"].clone())
    })
    .await;
    let got: Vec<(String, String, String)> = internal
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let kind = match f["type"].as_str().unwrap() {
                "call" => f["callType"].as_str().unwrap().to_string(),
                other => other.to_string(),
            };
            (kind, f["from"].as_str().unwrap().to_string(), f["value"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(got, want);
    assert!(got.iter().any(|(kind, _, value)| kind == "create" && value == "5000"), "{got:?}");
    // By address and without zero-value frames: the factory's frames that move value or create.
    let by_factory = ok(addr, &format!("module=account&action=txlistinternal&address={}", chain.factory)).await;
    let got: Vec<(String, String)> = by_factory
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["type"].as_str().unwrap().to_string(), f["value"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(String, String)> = want
        .iter()
        .filter(|(kind, from, value)| *from == lower(&chain.factory) && (value != "0" || kind.starts_with("create")))
        .map(|(kind, _, value)| (if kind.starts_with("create") { kind.clone() } else { "call".into() }, value.clone()))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    // The sender of the top-level call has no internal transactions of its own.
    let none = api(addr, &format!("module=account&action=txlistinternal&address={a0}")).await;
    assert_eq!(none["message"], "No internal transactions found");

    // The child the factory created: its creation names the factory, the call's sender, and the init code the
    // creating frame ran (the node's trace has it; the compiled child's creation code, as it takes no arguments).
    let frame = trace["calls"].as_array().unwrap().iter().find(|f| f["type"] == "CREATE").expect("a CREATE frame");
    let child = frame["to"].as_str().unwrap().to_lowercase();
    assert_eq!(frame["input"].as_str().unwrap(), format!("{:#x}", DemoChild::BYTECODE));
    // Entries that are no address are left out, as unknown ones are (Blockscout's answer).
    let q = format!("module=contract&action=getcontractcreation&contractaddresses={child},0x12,,{}", chain.demo);
    let created = ok(addr, &q).await;
    assert_eq!(created.as_array().unwrap().len(), 2, "{created}");
    assert_eq!(created[0]["contractAddress"], child.as_str());
    assert_eq!(created[0]["contractFactory"], lower(&chain.factory));
    assert_eq!(created[0]["contractCreator"], lower(&chain.accounts[1]));
    assert_eq!(created[0]["txHash"], format!("{:#x}", chain.spawn));
    assert_eq!(created[0]["creationBytecode"], frame["input"]);
    // A top-level creation's is the deployment's input, and it names no factory.
    let deployment: Value = node.raw_request("eth_getTransactionByHash".into(), (chain.demo_deploy,)).await.unwrap();
    assert_eq!(created[1]["creationBytecode"], deployment["input"]);
    assert_eq!(created[1]["contractFactory"], "");
    // The contract page shows the same init code.
    let page = get(addr, &format!("/api/v2/smart-contracts/{child}")).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.json()["creation_bytecode"], frame["input"]);
    // Its constructor takes no arguments: none shown, decoded or not (Blockscout's nulls).
    let page = page.json();
    assert_eq!((&page["constructor_args"], &page["decoded_constructor_args"]), (&Value::Null, &Value::Null), "{page}");
    assert_eq!(page["name"], "DemoChild", "the child matches its build artifact");
}

#[tokio::test(flavor = "multi_thread")]
async fn log_block_transaction_and_contract_actions_match_the_node() {
    let (_anvil, node, daemon, chain) = start(false).await;
    let addr = daemon.daemon.addr();
    let a1 = chain.accounts[1];

    // getLogs: the node's eth_getLogs with the same filters.
    let poked = Demo::Poked::SIGNATURE_HASH;
    let added = Demo::Added::SIGNATURE_HASH;
    let node_logs = node.get_logs(&alloy::rpc::types::Filter::new().address(chain.demo).from_block(0)).await.unwrap();
    let shape = |log: &alloy::rpc::types::Log| {
        json!({
            "address": lower(&log.address()),
            "topics": log.topics().iter().map(|t| format!("{t:#x}")).collect::<Vec<_>>(),
            "data": format!("{}", log.data().data),
            "blockNumber": format!("{:#x}", log.block_number.unwrap()),
            "blockHash": format!("{:#x}", log.block_hash.unwrap()),
            "logIndex": format!("{:#x}", log.log_index.unwrap()),
            "transactionHash": format!("{:#x}", log.transaction_hash.unwrap()),
            "transactionIndex": format!("{:#x}", log.transaction_index.unwrap()),
        })
    };
    let strip = |items: &Value| -> Vec<Value> {
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let mut l = l.clone();
                for k in ["timeStamp", "gasPrice", "gasUsed"] {
                    l.as_object_mut().unwrap().remove(k);
                }
                l
            })
            .collect()
    };
    let all = ok(addr, &format!("module=logs&action=getLogs&fromBlock=0&toBlock=latest&address={}", chain.demo)).await;
    assert_eq!(strip(&all), node_logs.iter().map(shape).collect::<Vec<_>>());
    // Etherscan's paging walks the same logs, page by page, without repeats.
    let mut paged = Vec::new();
    for page in 1.. {
        let q = format!(
            "module=logs&action=getLogs&fromBlock=0&toBlock=latest&address={}&page={page}&offset=2",
            chain.demo
        );
        let answer = api(addr, &q).await;
        let items = answer["result"].as_array().cloned().unwrap_or_default();
        assert!(items.len() <= 2, "{answer}");
        if items.is_empty() {
            break;
        }
        paged.extend(items);
    }
    assert_eq!(paged, all.as_array().unwrap().clone());
    let q = format!("module=logs&action=getLogs&fromBlock=0&address={}&page=11&offset=1000", chain.demo);
    assert_eq!(api(addr, &q).await["status"], "0", "past the result window");
    let by_a1 = format!("{:#x}", B256::left_padding_from(a1.as_slice()));
    let q =
        format!("module=logs&action=getLogs&fromBlock=2&toBlock=4&topic0={poked:#x}&topic1={by_a1}&topic0_1_opr=and");
    let want: Vec<Value> = node_logs
        .iter()
        .filter(|l| {
            (2..=4).contains(&l.block_number.unwrap())
                && l.topics()[0] == poked
                && l.topics()[1] == B256::left_padding_from(a1.as_slice())
        })
        .map(shape)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(strip(&ok(addr, &q).await), want);
    let q = format!(
        "module=logs&action=getLogs&fromBlock=0&toBlock=latest&topic0={added:#x}&topic1={by_a1}&topic0_1_opr=or"
    );
    let every_log = node.get_logs(&alloy::rpc::types::Filter::new().from_block(0)).await.unwrap();
    let want: Vec<Value> = every_log
        .iter()
        .filter(|l| l.topics().len() > 1)
        .filter(|l| l.topics()[0] == added || l.topics()[1] == B256::left_padding_from(a1.as_slice()))
        .map(shape)
        .collect();
    assert_eq!(strip(&ok(addr, &q).await), want);
    // Three topics: each pair's operator is a clause and a log satisfies them all (Blockscout's rule), here
    // (Transfer or from a2) and (from a2 or to a1) and (Transfer and to a1): the transfers to a1. Joining the
    // operators left to right instead would give every transfer.
    let padded = |a: Address| B256::left_padding_from(a.as_slice());
    let transfer = DemoToken::Transfer::SIGNATURE_HASH;
    let (a2, to) = (padded(chain.accounts[2]), padded(a1));
    let q = format!(
        "module=logs&action=getLogs&fromBlock=0&toBlock=latest&topic0={transfer:#x}&topic1={a2:#x}&topic2={to:#x}\
         &topic0_1_opr=or&topic1_2_opr=or&topic0_2_opr=and"
    );
    let want: Vec<Value> = every_log
        .iter()
        .filter(|l| l.topics().len() > 2 && l.topics()[0] == transfer && l.topics()[2] == to)
        .map(shape)
        .collect();
    let transfers = every_log.iter().filter(|l| l.topics().first() == Some(&transfer)).count();
    assert!(!want.is_empty() && want.len() < transfers, "{} of {transfers}", want.len());
    assert_eq!(strip(&ok(addr, &q).await), want);
    let q = format!("module=logs&action=getLogs&fromBlock=0&toBlock=latest&topic0={poked:#x}&topic1={by_a1}");
    assert_eq!(api(addr, &q).await["message"], "Required query parameters missing: topic0_1_opr");

    // getblocknobytime: the node's headers, on both sides of each block's time.
    let mut times = Vec::new();
    for n in 0..=chain.tip {
        times.push(block(&node, n).await.header.timestamp);
    }
    for (n, t) in times.iter().enumerate().skip(1) {
        let before = times.iter().rposition(|x| x <= t).unwrap();
        let after = times.iter().position(|x| x >= t).unwrap();
        let q = |side: &str| format!("module=block&action=getblocknobytime&timestamp={t}&closest={side}");
        assert_eq!(ok(addr, &q("before")).await, json!(before.to_string()), "block {n}");
        assert_eq!(ok(addr, &q("after")).await, json!(after.to_string()), "block {n}");
    }
    let past_tip = times.last().unwrap() + 1_000;
    let q = format!("module=block&action=getblocknobytime&timestamp={past_tip}&closest=after");
    assert_eq!(api(addr, &q).await["message"], "Block does not exist");
    let number = api(addr, "module=block&action=eth_block_number").await;
    assert_eq!(number, json!({"jsonrpc": "2.0", "result": format!("{:#x}", chain.tip), "id": 1}));
    let reward = ok(addr, "module=block&action=getblockreward&blockno=2").await;
    let b2 = block(&node, 2).await;
    assert_eq!(reward["blockMiner"], lower(&b2.header.beneficiary));
    assert_eq!(reward["timeStamp"], json!(b2.header.timestamp));
    // A future block's countdown, in both APIs, from the node's block times (the tip is the last block mined).
    let target = chain.tip + 10;
    let span = chain.tip.min(100);
    let average = (times[chain.tip as usize] - times[(chain.tip - span) as usize]) as f64 / span.max(1) as f64;
    let countdown = ok(addr, &format!("module=block&action=getblockcountdown&blockno={target}")).await;
    let estimate = format!("{:.1}", average * 10.0);
    assert_eq!(
        countdown,
        json!({"CurrentBlock": chain.tip.to_string(), "CountdownBlock": target.to_string(),
               "RemainingBlock": "10", "EstimateTimeInSec": estimate})
    );
    let rest = get(addr, &format!("/api/v2/blocks/{target}/countdown")).await.json();
    assert_eq!(
        rest,
        json!({"countdown_block_number": target.to_string(), "current_block_number": chain.tip.to_string(),
               "remaining_blocks_count": "10", "estimated_time_in_seconds": estimate})
    );
    let passed = get(addr, &format!("/api/v2/blocks/{}/countdown", chain.tip)).await;
    assert_eq!(passed.status, 422, "an indexed block has no countdown");
    assert_eq!(get(addr, "/api/v2/blocks/0xab/countdown").await.status, 422);
    let q = format!("module=block&action=getblockcountdown&blockno={}", chain.tip);
    assert_eq!(api(addr, &q).await["message"], "Error! Block number already pass");

    // Transactions: status, receipt status and the revert reason the node gives.
    let failed = format!("{:#x}", chain.failed);
    assert_eq!(
        ok(addr, &format!("module=transaction&action=gettxreceiptstatus&txhash={failed}")).await,
        json!({"status": "0"})
    );
    let status = ok(addr, &format!("module=transaction&action=getstatus&txhash={failed}")).await;
    assert_eq!(status, json!({"isError": "1", "errDescription": "Demo: multiple of five"}));
    let info = ok(addr, &format!("module=transaction&action=gettxinfo&txhash={failed}")).await;
    assert_eq!(
        (info["success"].clone(), info["revertReason"].clone()),
        (json!(false), json!("Demo: multiple of five"))
    );
    let deploy = format!("{:#x}", chain.demo_deploy);
    assert_eq!(
        ok(addr, &format!("module=transaction&action=gettxreceiptstatus&txhash={deploy}")).await,
        json!({"status": "1"})
    );
    let unknown = format!("{:#x}", B256::repeat_byte(9));
    assert_eq!(
        ok(addr, &format!("module=transaction&action=gettxreceiptstatus&txhash={unknown}")).await,
        json!({"status": ""})
    );

    // Contract creation: the deployment's receipt.
    let created =
        ok(addr, &format!("module=contract&action=getcontractcreation&contractaddresses={},{}", chain.demo, a1)).await;
    let r = receipt(&node, chain.demo_deploy).await;
    assert_eq!(created.as_array().unwrap().len(), 1, "an account without code is left out: {created}");
    assert_eq!(created[0]["contractCreator"], lower(&r.from));
    assert_eq!(created[0]["txHash"], deploy);
    assert_eq!(created[0]["blockNumber"], r.block_number.unwrap().to_string());

    // Contract source: the demo contracts match their own build artifacts, so their ABI and source are known.
    let q = format!("module=contract&action=getabi&address={}", chain.demo);
    let abi = poll_until("the code writer to store the demo contract", Duration::from_secs(30), || async {
        let answer = api(addr, &q).await;
        (answer["status"] == "1").then(|| answer["result"].clone())
    })
    .await;
    let artifact: Value =
        serde_json::from_str(include_str!("../../src/dev/contracts/Demo.json")).expect("the demo artifact parses");
    // The same ABI items (alloy's JsonAbi compares them whatever their order).
    let as_abi = |v: &Value| serde_json::from_value::<alloy::json_abi::JsonAbi>(v.clone()).unwrap();
    let served: Value = serde_json::from_str(abi.as_str().expect("the ABI is a JSON string")).unwrap();
    assert_eq!(as_abi(&served), as_abi(&artifact["abi"]));
    let source = ok(addr, &format!("module=contract&action=getsourcecode&address={}", chain.demo)).await;
    assert_eq!(source[0]["ContractName"], "Demo");
    assert!(source[0]["SourceCode"].as_str().unwrap().contains("contract Demo {"), "{source}");
    assert_eq!(as_abi(&serde_json::from_str(source[0]["ABI"].as_str().unwrap()).unwrap()), as_abi(&artifact["abi"]));
    let eoa = api(addr, &format!("module=contract&action=getabi&address={a1}")).await;
    assert_eq!(eoa, json!({"message": "Contract source code not verified", "result": null, "status": "0"}));
    let eoa = ok(addr, &format!("module=contract&action=getsourcecode&address={a1}")).await;
    assert_eq!(
        (eoa[0]["ABI"].as_str(), eoa[0]["SourceCode"].as_str()),
        (Some("Contract source code not verified"), Some(""))
    );

    // The contract list: every stored contract, the matched ones with their ABI.
    let all = ok(addr, "module=contract&action=listcontracts&offset=100").await;
    let listed: Vec<&str> = all.as_array().unwrap().iter().map(|c| c["Address"].as_str().unwrap()).collect();
    assert!(listed.contains(&lower(&chain.demo).as_str()) && listed.contains(&lower(&chain.token).as_str()), "{all}");
    let verified = ok(addr, "module=contract&action=listcontracts&filter=verified&offset=100").await;
    assert!(verified.as_array().unwrap().iter().all(|c| c["ABI"] != NOT_VERIFIED && c["ContractName"].is_string()));
    assert!(verified.as_array().unwrap().iter().any(|c| c["ContractName"] == "Demo"));
    let reply = get(addr, "/api?module=contract&action=listcontracts&filter=shiny").await;
    assert_eq!(reply.status, 400);

    // Tokens and supply.
    let token = ok(addr, &format!("module=token&action=getToken&contractaddress={}", chain.token)).await;
    assert_eq!((token["symbol"].as_str(), token["totalSupply"].as_str()), (Some("SCN"), Some("1000000000000")));
    let supply = ok(addr, &format!("module=stats&action=tokensupply&contractaddress={}", chain.token)).await;
    assert_eq!(supply, json!("1000000000000"));
    let holders =
        ok(addr, &format!("module=token&action=getTokenHolders&contractaddress={}&offset=2", chain.token)).await;
    assert_eq!(holders.as_array().unwrap().len(), 2);
    assert_eq!(holders[0]["address"], lower(&chain.accounts[0]), "largest holder first");

    // Envelopes: what a client gets wrong, it hears about in Etherscan's words.
    let reply = get(addr, "/api?module=account").await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["message"], "Params 'module' and 'action' are required parameters");
    let reply = get(addr, "/api?module=account&action=nosuchaction").await;
    assert_eq!((reply.status.as_u16(), reply.json()["message"].clone()), (400, json!("Unknown action")));
    let bad = api(addr, "module=account&action=txlist&address=0x1234").await;
    assert_eq!(bad, json!({"message": "Invalid address format", "result": null, "status": "0"}));
    let window = api(addr, &format!("module=account&action=txlist&address={a1}&page=2")).await;
    assert_eq!(
        window["message"],
        "Result window is too large, PageNo x Offset size must be less than or equal to 10000"
    );
    let stranger = api(addr, &format!("module=account&action=txlist&address={}", Address::repeat_byte(0x77))).await;
    assert_eq!(stranger, json!({"message": "No transactions found", "result": [], "status": "0"}));
    let missing = api(addr, "module=account&action=tokenbalance").await;
    assert_eq!(missing["message"], "Required query parameters missing: address, contractaddress");

    // GET, a form POST (module and action in the body, as forge sends them) and a JSON POST answer alike.
    let fields = format!("module=account&action=txlist&address={a1}&offset=4&sort=asc");
    let by_get = get(addr, &format!("/api?{fields}")).await.json();
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let by_form = request(addr, Method::POST, "/api/", &form, fields.clone()).await.json();
    let body = json!({"module": "account", "action": "txlist", "address": lower(&a1), "offset": 4, "sort": "asc"});
    let by_json =
        request(addr, Method::POST, "/api", &[("content-type", "application/json")], body.to_string()).await.json();
    assert_eq!(by_get["result"].as_array().map(Vec::len), Some(4));
    assert_eq!(by_form, by_get);
    assert_eq!(by_json, by_get);
    // A body over the bound is refused in the envelope too, as soon as its length is declared; the server reads the
    // rest, so the client reads the answer even if it is still writing when the answer comes.
    let huge = "x".repeat(10 * 1024 * 1024 + 1);
    let refused = crate::support::http::request(addr, Method::POST, "/api", &form, huge).await;
    assert_eq!(refused.status, 413);
    let envelope = refused.json();
    assert_eq!((envelope["status"].as_str(), envelope["result"].clone()), (Some("0"), Value::Null), "{envelope}");
    assert!(envelope["message"].as_str().unwrap().contains("too large"), "{envelope}");

    // module=proxy: the node's own JSON-RPC answers, through the passthrough's policy.
    let node_rpc = |method: &'static str, params: Value| {
        let node = node.clone();
        async move { node.raw_request::<_, Value>(method.into(), params).await.unwrap() }
    };
    let proxy = |query: String| async move { get(addr, &format!("/api?module=proxy&{query}")).await.json() };
    let tip = proxy("action=eth_blockNumber&id=7".into()).await;
    assert_eq!((&tip["id"], &tip["result"]), (&json!(7), &node_rpc("eth_blockNumber", json!([])).await));
    let tx = proxy(format!("action=eth_getTransactionByHash&txhash={:#x}", chain.failed)).await;
    assert_eq!(tx["result"], node_rpc("eth_getTransactionByHash", json!([chain.failed])).await);
    let block = proxy("action=eth_getBlockByNumber&tag=0x2&boolean=true".into()).await;
    assert_eq!(block["result"], node_rpc("eth_getBlockByNumber", json!(["0x2", true])).await);
    let balance_of = Bytes::from(DemoToken::balanceOfCall::new((a1,)).abi_encode());
    let call = proxy(format!("action=eth_call&to={}&data={balance_of}&tag=latest", chain.token)).await;
    let want = node_rpc("eth_call", json!([{"to": chain.token, "data": balance_of}, "latest"])).await;
    assert_eq!(call["result"], want);
    let missing = proxy("action=eth_getTransactionReceipt".into()).await;
    assert_eq!(missing["error"]["message"], "missing parameter txhash");
    // A raw transaction goes to the node, which judges it (as on /api/eth; refused with --no-send-raw-transaction).
    let sent = proxy("action=eth_sendRawTransaction&hex=0x02".into()).await;
    assert!(sent["error"]["message"].as_str().unwrap().contains("decode"), "{sent}");
    assert_eq!(get(addr, "/api?module=proxy&action=eth_accounts").await.status, 400, "not one of Etherscan's");

    // Blockscout's account/eth_get_balance and listaccounts: the node's balances.
    let at = |block: &str| format!("module=account&action=eth_get_balance&address={a1}&block={block}");
    for block in ["latest", "0x3"] {
        let answer = get(addr, &format!("/api?{}", at(block))).await.json();
        assert_eq!(answer["result"], node_rpc("eth_getBalance", json!([a1, block])).await, "{block}");
    }
    let listed = ok(addr, "module=account&action=listaccounts&offset=100").await;
    let listed = listed.as_array().unwrap();
    assert!(listed.len() >= 3, "{listed:?}");
    let mut previous = U256::MAX;
    for item in listed {
        let who: Address = item["address"].as_str().unwrap().parse().unwrap();
        let balance: U256 = item["balance"].as_str().unwrap().parse().unwrap();
        assert_eq!(balance, node.get_balance(who).await.unwrap(), "{who}");
        assert!(balance <= previous, "richest first");
        previous = balance;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pypi_client_reads_what_the_node_says() {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/tools/venv/bin/python");
    assert!(python.is_file(), "the pinned Python tools were not found: run scripts/setup (creates scripts/tools/venv)");
    let (_anvil, node, daemon, chain) = start(false).await;
    let a1 = chain.accounts[1];
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/etherscan_client.py");
    let base = format!("http://{}", daemon.daemon.addr());
    let out = tokio::process::Command::new(&python)
        .arg(&script)
        .args([&base, "713714", &lower(&a1), &lower(&chain.token), &lower(&chain.demo)])
        .output()
        .await
        .expect("python runs");
    assert!(out.status.success(), "blockparty failed: {}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the client prints JSON");

    let balance = node.get_balance(a1).block_id(chain.tip.into()).await.unwrap();
    assert_eq!(seen["balance"], balance.to_string());
    let history = node_history(&node, chain.tip, a1).await;
    let txs = seen["txs"].as_array().unwrap();
    assert_eq!(txs.len(), history.len());
    for (item, (number, hash)) in txs.iter().zip(history.iter().rev()) {
        let r = receipt(&node, *hash).await;
        assert_eq!(item[0], format!("{hash:#x}"));
        assert_eq!(item[1], *number);
        assert_eq!(item[2], r.gas_used);
        assert_eq!(item[3], r.inner.cumulative_gas_used());
        assert_eq!(item[4], !r.status());
    }
    let data = DemoToken::balanceOfCall::new((a1,)).abi_encode();
    let out: Bytes = node
        .raw_request("eth_call".into(), json!([{"to": chain.token, "data": Bytes::from(data)}, "latest"]))
        .await
        .unwrap();
    assert_eq!(seen["token_balance"], U256::from_be_slice(&out).to_string());
    let sent_or_received = seen["transfers"].as_array().unwrap();
    assert_eq!(sent_or_received.len(), 10, "5 rounds of one transfer in and one out: {sent_or_received:?}");
    let node_logs = node.get_logs(&alloy::rpc::types::Filter::new().address(chain.demo).from_block(0)).await.unwrap();
    let want: Vec<Value> = node_logs
        .iter()
        .map(|l| {
            json!([
                format!("{:#x}", l.transaction_hash.unwrap()),
                l.log_index.unwrap(),
                l.topics().iter().map(|t| format!("{t:#x}")).collect::<Vec<_>>()
            ])
        })
        .collect();
    assert_eq!(seen["logs"], json!(want));
}

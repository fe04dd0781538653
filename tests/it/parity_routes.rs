//! Blockscout routes added for parity (issue 17, part A): the `/api/eth-rpc` alias of the passthrough, the
//! transaction statistics, the market chart, and the native balance index with the routes that read it. Values are
//! compared with the node.

use crate::support::*;
use alloy::primitives::{Address, U256};
use alloy::providers::Provider;
use hyper::Method;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

async fn post(addr: SocketAddr, path: &str, body: String) -> (u16, Value) {
    let reply = http::request(addr, Method::POST, path, &[("content-type", "application/json")], body).await;
    (reply.status.as_u16(), if reply.body.is_empty() { Value::Null } else { reply.json() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eth_rpc_is_the_same_passthrough_as_api_eth() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    mine(&node, 3).await;
    let t = start_daemon(&anvil.http_url(), |c| c.api.rpc.max_body = 4096).await;
    let addr = t.daemon.addr();
    wait_synced(&t.daemon, &node).await;
    let head = node.get_block_number().await.unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "anvil_mine", "params": ["0x5"]}),
        json!([{"jsonrpc": "2.0", "id": 3, "method": "eth_chainId"}, {"jsonrpc": "2.0", "id": 4, "method": "admin_peers"}]),
    ];
    for request in requests {
        let eth = post(addr, "/api/eth", request.to_string()).await;
        let eth_rpc = post(addr, "/api/eth-rpc", request.to_string()).await;
        assert_eq!(eth, eth_rpc, "{request}");
    }
    let (status, answer) =
        post(addr, "/api/eth-rpc", json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber"}).to_string()).await;
    assert_eq!((status, answer["result"].clone()), (200, json!(format!("{head:#x}"))));
    let (status, refused) =
        post(addr, "/api/eth-rpc", json!({"jsonrpc": "2.0", "id": 2, "method": "anvil_mine"}).to_string()).await;
    assert_eq!((status, refused["error"]["code"].clone()), (200, json!(-32601)));
    assert_eq!(node.get_block_number().await.unwrap(), head, "the refused call never reached the node");
    // The same body limit, answered as a JSON-RPC error.
    let (status, too_large) = post(addr, "/api/eth-rpc", "x".repeat(5000)).await;
    assert_eq!(status, 413, "{too_large}");
    assert!(too_large["error"]["message"].as_str().unwrap().contains("too large"), "{too_large}");
    let get = http::get(addr, "/api/eth-rpc").await;
    assert_eq!(get.status, 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_stats_count_the_last_day_and_the_pool() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let mut hashes = Vec::new();
    for i in 0..3u64 {
        hashes.push(transfer(&node, accounts[0], accounts[1], 1000 + i).await);
    }
    mine(&node, 1).await;
    hashes.push(transfer(&node, accounts[2], accounts[3], 77).await);
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let mut fees = U256::ZERO;
    for hash in &hashes {
        let receipt = node.get_transaction_receipt(*hash).await.unwrap().unwrap();
        fees += U256::from(receipt.gas_used) * U256::from(receipt.effective_gas_price);
    }
    // One transaction waits in the pool (no mining): the pool follower sees it.
    transfer(&node, accounts[4], accounts[5], 5).await;
    let stats = poll_until("the pending transaction in the stats", Duration::from_secs(30), || async {
        let stats = http::get_json(addr, "/api/v2/transactions/stats").await;
        (stats["pending_transactions_count"] == "1").then_some(stats)
    })
    .await;
    assert_eq!(stats["transactions_count_24h"], "4", "{stats}");
    assert_eq!(stats["transaction_fees_sum_24h"], fees.to_string(), "{stats}");
    assert_eq!(stats["transaction_fees_avg_24h"], (fees / U256::from(4)).to_string(), "{stats}");
    assert_eq!(stats.as_object().unwrap().len(), 4, "{stats}");

    let market = http::get_json(addr, "/api/v2/stats/charts/market").await;
    assert_eq!(market, json!({"chart_data": [], "available_supply": "0"}));
    // A hash-shaped path is still a transaction; `stats` is no longer read as one.
    let bad = http::get(addr, "/api/v2/transactions/0x12").await;
    assert_eq!(bad.status, 422);
    let unknown =
        http::get(addr, &format!("/api/v2/transactions/{:#x}", alloy::primitives::B256::repeat_byte(7))).await;
    assert_eq!(unknown.status, 404);
}

/// The node's balance of `address` after block `block`.
async fn balance_at(node: &alloy::providers::RootProvider, address: Address, block: u64) -> U256 {
    node.get_balance(address).block_id(block.into()).await.unwrap()
}

fn decimal(value: &Value) -> U256 {
    value.as_str().unwrap_or_else(|| panic!("not a decimal string: {value}")).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_balances_are_indexed_with_their_blocks_and_reverted_with_them() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    let (a, b, c) = (accounts[0], accounts[1], Address::repeat_byte(0xc1));
    // a pays b in blocks 1 and 3, b pays a newcomer in block 2; block 4 names none of them.
    transfer(&node, a, b, 10u64.pow(18)).await;
    mine(&node, 1).await;
    transfer(&node, b, c, 5 * 10u64.pow(17)).await;
    mine(&node, 1).await;
    transfer(&node, a, b, 3).await;
    transfer(&node, a, c, 4).await;
    mine(&node, 1).await;
    transfer(&node, accounts[2], accounts[3], 9).await;
    mine(&node, 1).await;
    // The daemon starts on the finished blocks. anvil can answer a state read for its newest block with the next
    // block's state when that block is mined during the read (seen once under load: block 1's balance was the one
    // after block 2), so these blocks are not indexed while they are being mined.
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    wait_synced(&t.daemon, &node).await;

    // Every entry is the node's balance after that block, and its delta the change since the block before.
    let expected_blocks = [(a, vec![3, 1]), (b, vec![3, 2, 1]), (c, vec![3, 2])];
    for (address, blocks) in expected_blocks {
        let history =
            http::walk(addr, &format!("/api/v2/addresses/{address}/coin-balance-history?items_count=1")).await;
        let numbers: Vec<u64> = history.iter().map(|e| e["block_number"].as_u64().unwrap()).collect();
        assert_eq!(numbers, blocks, "{address}");
        for (i, entry) in history.iter().enumerate() {
            let block = entry["block_number"].as_u64().unwrap();
            let value = balance_at(&node, address, block).await;
            assert_eq!(decimal(&entry["value"]), value, "{address} after {block}");
            let before = match history.get(i + 1) {
                Some(older) => decimal(&older["value"]),
                None => balance_at(&node, address, block - 1).await,
            };
            let delta: i128 = entry["delta"].as_str().unwrap().parse().unwrap();
            assert_eq!(delta, value.to::<i128>() - before.to::<i128>(), "{address} at {block}");
            assert!(entry["transaction_hash"].as_str().is_some_and(|h| h.len() == 66), "{entry}");
            assert!(entry["block_timestamp"].as_str().is_some(), "{entry}");
        }
    }

    // By day: today's closing balance is the node's current one.
    let by_day = http::get_json(addr, &format!("/api/v2/addresses/{b}/coin-balance-history-by-day")).await;
    assert_eq!(by_day["days"], 10);
    let items = by_day["items"].as_array().unwrap();
    assert!(!items.is_empty() && items.len() <= 2, "{by_day}");
    let head = node.get_block_number().await.unwrap();
    assert_eq!(decimal(&items.last().unwrap()["value"]), balance_at(&node, b, head).await);
    assert_eq!(items.last().unwrap()["date"].as_str().unwrap().len(), 10);
    let nobody =
        http::get_json(addr, &format!("/api/v2/addresses/{}/coin-balance-history-by-day", Address::repeat_byte(9)))
            .await;
    assert_eq!(nobody, json!({"items": [], "days": 10}));

    // Top accounts: every indexed address with a balance, richest first, values and counts as the node has them.
    let top = top_accounts(addr, &node).await;
    let named: Vec<Address> = top.iter().map(|(address, _)| *address).collect();
    for address in [a, b, c, accounts[2], accounts[3]] {
        assert!(named.contains(&address), "{address} is ranked");
    }
    let first_page = http::get_json(addr, "/api/v2/addresses?items_count=2").await;
    assert_eq!(first_page["exchange_rate"], Value::Null);
    assert!(first_page.as_object().unwrap().contains_key("total_supply"));
    let next = &first_page["next_page_params"];
    assert!(next["fetched_coin_balance"].is_string() && next["hash"].is_string(), "{next}");
    let nonce_a = node.get_transaction_count(a).await.unwrap();
    assert_eq!(first_page["items"].as_array().unwrap().len(), 2);
    let a_item = http::walk(addr, "/api/v2/addresses?items_count=3")
        .await
        .into_iter()
        .find(|item| item["hash"] == a.to_checksum(None))
        .expect("a is listed");
    assert_eq!(a_item["transactions_count"], nonce_a.to_string(), "a sent every transaction it took part in");

    // A reorg replaces blocks 3 and 4: the balances they recorded go with them.
    let _: Value = node.raw_request("anvil_rollback".into(), json!([2])).await.unwrap();
    transfer(&node, a, c, 7).await;
    mine(&node, 3).await;
    wait_synced(&t.daemon, &node).await;
    let history = http::walk(addr, &format!("/api/v2/addresses/{b}/coin-balance-history")).await;
    let numbers: Vec<u64> = history.iter().map(|e| e["block_number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, vec![2, 1], "b's balance after the replaced block 3 is gone");
    let history = http::walk(addr, &format!("/api/v2/addresses/{c}/coin-balance-history")).await;
    assert_eq!(decimal(&history[0]["value"]), balance_at(&node, c, 3).await);
    let top = top_accounts(addr, &node).await;
    assert!(!top.iter().any(|(address, _)| *address == accounts[3]), "accounts[3] was only named on the old branch");

    // Bad input.
    for (path, param) in [
        (
            "/api/v2/addresses?fetched_coin_balance=abc&hash=0x0000000000000000000000000000000000000001",
            "fetched_coin_balance",
        ),
        ("/api/v2/addresses?fetched_coin_balance=5", "hash"),
        ("/api/v2/addresses?sort=transactions_count&order=desc", "sort"),
        ("/api/v2/addresses?order=sideways", "order"),
        ("/api/v2/addresses/0x12/coin-balance-history-by-day", "address_hash_param"),
    ] {
        let reply = http::get(addr, path).await;
        assert_eq!(reply.status, 422, "{path}");
        assert!(reply.json()["errors"].to_string().contains(param), "{path}: {}", reply.json());
    }
    t.daemon.shutdown().await.unwrap();
}

/// Every ranked address with its balance, checked against the node's current balances and the order.
async fn top_accounts(addr: SocketAddr, node: &alloy::providers::RootProvider) -> Vec<(Address, U256)> {
    let items = http::walk(addr, "/api/v2/addresses?items_count=2").await;
    let mut ranked = Vec::new();
    for item in &items {
        let address: Address = item["hash"].as_str().unwrap().parse().unwrap();
        let balance = decimal(&item["coin_balance"]);
        assert_eq!(balance, node.get_balance(address).await.unwrap(), "{address}");
        assert!(!balance.is_zero());
        ranked.push((address, balance));
    }
    assert!(ranked.windows(2).all(|w| w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0)), "{ranked:?}");
    ranked
}

async fn deploy_contract(
    node: &alloy::providers::RootProvider,
    from: Address,
    bytecode: &[u8],
    args: Vec<u8>,
) -> Address {
    let mut code = bytecode.to_vec();
    code.extend(args);
    let hash = deploy(node, from, &alloy::primitives::Bytes::from(code)).await;
    mine(node, 1).await;
    created_address(node, hash).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn address_tabs_list_validated_blocks_and_held_nfts() {
    use alloy::sol_types::{SolCall, SolConstructor};
    use rockscout::dev::contracts::{DemoMulti, DemoNft};
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let nft = deploy_contract(
        &node,
        a[0],
        &DemoNft::BYTECODE,
        DemoNft::constructorCall { name_: "Demo NFT".into(), symbol_: "DNFT".into() }.abi_encode(),
    )
    .await;
    let multi = deploy_contract(&node, a[0], &DemoMulti::BYTECODE, vec![]).await;
    for to in [a[1], a[1], a[2], a[1]] {
        call(&node, a[0], nft, DemoNft::mintCall { to }.abi_encode()).await;
    }
    let mint = DemoMulti::mintBatchCall {
        to: a[1],
        ids: vec![U256::from(7), U256::from(8)],
        values: vec![U256::from(40), U256::from(1)],
    };
    call(&node, a[0], multi, mint.abi_encode()).await;
    mine(&node, 1).await;
    // a[1] sends id 2 away.
    call(&node, a[1], nft, DemoNft::transferFromCall { from: a[1], to: a[3], id: U256::from(2) }.abi_encode()).await;
    mine(&node, 2).await;
    let head = wait_synced(&t.daemon, &node).await;

    // Blocks validated: anvil's coinbase mined every block; an address that mined none has an empty list.
    let coinbase = node.get_block_by_number(0.into()).await.unwrap().unwrap().header.beneficiary;
    let latest_miner = node.get_block_by_number(head.into()).await.unwrap().unwrap().header.beneficiary;
    let blocks = http::walk(addr, &format!("/api/v2/addresses/{latest_miner}/blocks-validated?items_count=2")).await;
    let mut want = Vec::new();
    for n in (0..=head).rev() {
        if node.get_block_by_number(n.into()).await.unwrap().unwrap().header.beneficiary == latest_miner {
            want.push(n);
        }
    }
    let got: Vec<u64> = blocks.iter().map(|b| b["height"].as_u64().unwrap()).collect();
    assert_eq!(got, want, "blocks mined by {latest_miner} (coinbase of block 0: {coinbase})");
    let page = http::get_json(addr, &format!("/api/v2/addresses/{latest_miner}/blocks-validated?items_count=1")).await;
    assert_eq!(page["next_page_params"]["block_number"], want[0]);
    let none = http::get_json(addr, &format!("/api/v2/addresses/{}/blocks-validated", a[5])).await;
    assert_eq!(none["items"], json!([]));

    // NFTs of a[1]: ERC-721 ids 1 and 4, ERC-1155 ids 7 (40 units) and 8 (1 unit), ids and amounts as strings.
    let held = http::walk(addr, &format!("/api/v2/addresses/{}/nft?items_count=1", a[1])).await;
    let mut got: Vec<(String, String, String, String)> = held
        .iter()
        .map(|i| {
            let token = i["token"]["address_hash"].as_str().unwrap().to_lowercase();
            (
                token,
                i["id"].as_str().unwrap().into(),
                i["value"].as_str().unwrap().into(),
                i["token_type"].as_str().unwrap().into(),
            )
        })
        .collect();
    got.sort();
    let mut want = vec![
        (format!("{nft:#x}"), "1".to_owned(), "1".to_owned(), "ERC-721".to_owned()),
        (format!("{nft:#x}"), "4".into(), "1".into(), "ERC-721".into()),
        (format!("{multi:#x}"), "7".into(), "40".into(), "ERC-1155".into()),
        (format!("{multi:#x}"), "8".into(), "1".into(), "ERC-1155".into()),
    ];
    want.sort();
    assert_eq!(got, want);
    for (token, id, value, _) in &want {
        let token: Address = token.parse().unwrap();
        let id = U256::from(id.parse::<u64>().unwrap());
        let on_chain = if token == nft {
            let owner = node
                .call(
                    alloy::rpc::types::TransactionRequest::default()
                        .to(token)
                        .input(DemoNft::ownerOfCall::new((id,)).abi_encode().into()),
                )
                .await
                .unwrap();
            assert_eq!(Address::from_slice(&owner[12..]), a[1]);
            U256::from(1)
        } else {
            let raw = node
                .call(
                    alloy::rpc::types::TransactionRequest::default()
                        .to(token)
                        .input(DemoMulti::balanceOfCall::new((a[1], id)).abi_encode().into()),
                )
                .await
                .unwrap();
            U256::from_be_slice(&raw)
        };
        assert_eq!(on_chain.to_string(), *value, "{token} {id}");
    }
    let only_1155 = http::walk(addr, &format!("/api/v2/addresses/{}/nft?type=ERC-1155", a[1])).await;
    assert_eq!(only_1155.len(), 2);
    let page = http::get_json(addr, &format!("/api/v2/addresses/{}/nft?items_count=1&type=ERC-721", a[1])).await;
    let next = &page["next_page_params"];
    assert!(
        next["token_contract_address_hash"].is_string() && next["token_id"] == "1" && next["type"] == "ERC-721",
        "{next}"
    );

    // Collections: one item per collection with the amount held and its ids.
    let collections = http::walk(addr, &format!("/api/v2/addresses/{}/nft/collections?items_count=1", a[1])).await;
    assert_eq!(collections.len(), 2, "{collections:?}");
    for c in &collections {
        let token: Address = c["token"]["address_hash"].as_str().unwrap().parse().unwrap();
        let ids: Vec<&str> =
            c["token_instances"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
        if token == nft {
            assert_eq!((c["amount"].as_str().unwrap(), ids), ("2", vec!["1", "4"]));
        } else {
            assert_eq!((c["amount"].as_str().unwrap(), ids), ("41", vec!["7", "8"]));
        }
    }
    // The global token transfer list: every transfer log of both collections, newest first (batch items apart).
    let filter = alloy::rpc::types::Filter::new().address(vec![nft, multi]).from_block(0);
    let mut logs: Vec<(u64, u64)> =
        node.get_logs(&filter).await.unwrap().iter().map(|l| (l.block_number.unwrap(), l.log_index.unwrap())).collect();
    logs.sort_by(|x, y| y.cmp(x));
    let transfers = http::walk(addr, "/api/v2/token-transfers?items_count=2").await;
    let mut seen: Vec<(u64, u64)> =
        transfers.iter().map(|t| (t["block_number"].as_u64().unwrap(), t["log_index"].as_u64().unwrap())).collect();
    assert_eq!(seen.len(), 7, "4 mints, a batch of 2, one transfer");
    seen.dedup();
    assert_eq!(seen, logs);
    let batch = http::walk(addr, "/api/v2/token-transfers?type=ERC-1155&items_count=1").await;
    assert_eq!(batch.len(), 2);
    assert!(batch.iter().all(|t| t["token_type"] == "ERC-1155" && t["total"]["value"].is_string()), "{batch:?}");
    let page = http::get_json(addr, "/api/v2/token-transfers?items_count=1&type=ERC-721").await;
    let next = &page["next_page_params"];
    assert!(next["block_number"].is_u64() && next["index"].is_u64() && next["type"] == "ERC-721", "{next}");
    assert_eq!(http::get(addr, "/api/v2/token-transfers?type=ERC-5").await.status, 422);
    // Standards Blockscout filters by and this index never holds (the stock frontend offers ERC-404 everywhere).
    let none = http::get_json(addr, "/api/v2/token-transfers?type=ERC-404").await;
    assert_eq!(none, json!({"items": [], "next_page_params": null}));
    let with_404 = http::walk(addr, "/api/v2/token-transfers?type=ERC-1155,ERC-404&items_count=1").await;
    assert_eq!(with_404, batch);
    let none = http::get_json(addr, &format!("/api/v2/addresses/{}/nft?type=ERC-404", a[1])).await;
    assert_eq!(none["items"], json!([]));
    // A transaction's transfers by standard.
    let batch_tx = batch[0]["transaction_hash"].as_str().unwrap();
    let of_tx = |kinds: &str| format!("/api/v2/transactions/{batch_tx}/token-transfers?type={kinds}");
    let by_id = |mut items: Vec<Value>| {
        items.sort_by_key(|t| t["total"]["token_id"].as_str().map(str::to_owned));
        items
    };
    assert_eq!(by_id(http::walk(addr, &of_tx("ERC-1155")).await), by_id(batch.clone()), "the batch, in log order");
    assert_eq!(http::walk(addr, &of_tx("ERC-721")).await, Vec::<Value>::new());
    assert_eq!(http::walk(addr, &of_tx("ERC-721,ERC-1155")).await.len(), 2);
    assert_eq!(http::get(addr, &of_tx("FOO")).await.status, 422);
    assert_eq!(http::walk(addr, &of_tx("ERC-404")).await, Vec::<Value>::new());
    let unknown = format!("/api/v2/transactions/0x{}/token-transfers?type=ERC-404", "ab".repeat(32));
    assert_eq!(http::get(addr, &unknown).await.status, 404, "an unknown transaction, whatever the filter");

    let erc721_only = http::get_json(addr, &format!("/api/v2/addresses/{}/nft/collections?type=ERC-721", a[1])).await;
    assert_eq!(erc721_only["items"].as_array().unwrap().len(), 1);
    for path in [
        format!("/api/v2/addresses/{}/nft?type=ERC-9", a[1]),
        format!("/api/v2/addresses/{}/nft?token_contract_address_hash=0x12&token_id=1", a[1]),
        format!("/api/v2/addresses/{}/nft?token_contract_address_hash={nft}&token_id=x", a[1]),
        format!("/api/v2/addresses/{}/nft/collections?token_contract_address_hash=nope", a[1]),
        "/api/v2/addresses/0x12/blocks-validated".to_owned(),
    ] {
        assert_eq!(http::get(addr, &path).await.status, 422, "{path}");
    }
    t.daemon.shutdown().await.unwrap();
}

/// A metadata server on 127.0.0.1 for the instance tests: `/meta/<n>.json` a small document, `/big.json` one over
/// the size limit, anything else 404. Counts the requests it gets; stops when dropped.
struct MetadataServer {
    addr: SocketAddr,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl MetadataServer {
    async fn start() -> MetadataServer {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = hits.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = vec![0u8; 4096];
                let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, body) = if path == "/big.json" {
                    ("200 OK", format!("{{\"pad\":\"{}\"}}", "x".repeat(300 * 1024)))
                } else if let Some(n) = path.strip_prefix("/meta/").and_then(|p| p.strip_suffix(".json")) {
                    (
                        "200 OK",
                        json!({"name": format!("Served {n}"), "image": format!("https://img.example/{n}.png")})
                            .to_string(),
                    )
                } else {
                    ("404 Not Found", "{}".to_owned())
                };
                let head = format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
            }
        });
        MetadataServer { addr, hits, task }
    }

    fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for MetadataServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_instances_with_metadata_transfers_and_holders() {
    use alloy::sol_types::SolCall;
    use base64::Engine;
    use rockscout::dev::contracts::{DemoMulti, DemoUriNft};
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let server = MetadataServer::start().await;
    let nft = deploy_contract(&node, a[0], &DemoUriNft::BYTECODE, vec![]).await;
    let multi = deploy_contract(&node, a[0], &DemoMulti::BYTECODE, vec![]).await;
    let doc = json!({"name": "One", "image": "ipfs://img/1", "external_url": "https://one.example", "animation_url": "https://one.example/a.mp4"});
    let uris = [
        format!("data:application/json;base64,{}", base64::engine::general_purpose::STANDARD.encode(doc.to_string())),
        "data:application/json,%7B%22name%22%3A%22Two%22%7D".to_owned(),
        format!("http://{}/meta/3.json", server.addr),
        format!("http://{}/big.json", server.addr),
        "data:application/json,not json".to_owned(),
        "ipfs://QmSomething/6.json".to_owned(),
    ];
    for uri in &uris {
        call(&node, a[0], nft, DemoUriNft::mintCall { to: a[1], uri: uri.clone() }.abi_encode()).await;
    }
    let mint = |to, value| DemoMulti::mintCall { to, id: U256::from(7), value: U256::from(value) }.abi_encode();
    call(&node, a[0], multi, mint(a[1], 40)).await;
    call(&node, a[0], multi, mint(a[2], 5)).await;
    call(&node, a[0], multi, mint(a[3], 5)).await;
    mine(&node, 1).await;
    call(&node, a[1], nft, DemoUriNft::transferFromCall { from: a[1], to: a[2], id: U256::from(1) }.abi_encode()).await;
    mine(&node, 1).await;

    let strict = start_daemon(&anvil.http_url(), |_| {}).await;
    let open = start_daemon(&anvil.http_url(), |c| c.api.nft_metadata.allow_private = true).await;
    wait_synced(&strict.daemon, &node).await;
    wait_synced(&open.daemon, &node).await;
    let (addr, open_addr) = (strict.daemon.addr(), open.daemon.addr());

    let instance = |n: u64| format!("/api/v2/tokens/{nft}/instances/{n}");
    let one = http::get_json(addr, &instance(1)).await;
    assert_eq!(one["id"], "1");
    assert_eq!(one["metadata"], doc);
    assert_eq!(one["image_url"], "ipfs://img/1");
    assert_eq!(one["external_app_url"], "https://one.example");
    assert_eq!(one["animation_url"], "https://one.example/a.mp4");
    assert_eq!(one["owner"]["hash"], a[2].to_checksum(None), "the owner after the transfer");
    assert_eq!(one["token"]["address_hash"], nft.to_checksum(None));
    assert_eq!(one["token_type"], "ERC-721");
    assert_eq!(http::get_json(addr, &instance(2)).await["metadata"], json!({"name": "Two"}));
    // Loopback is refused by default: no request reaches the server.
    assert_eq!(http::get_json(addr, &instance(3)).await["metadata"], Value::Null);
    assert_eq!(server.hits(), 0, "the default refuses loopback before connecting");
    let served = http::get_json(open_addr, &instance(3)).await;
    assert_eq!(served["metadata"]["name"], "Served 3");
    assert_eq!(served["image_url"], "https://img.example/3.png");
    assert_eq!(server.hits(), 1);
    // Over the size limit, not JSON, an unsupported scheme: no metadata, never an error.
    for n in [4, 5, 6] {
        let item = http::get_json(open_addr, &instance(n)).await;
        assert_eq!(item["metadata"], Value::Null, "{n}: {item}");
        assert_eq!(item["id"], n.to_string());
    }

    let fetched = server.hits(); // instances 3 and 4 (over the size limit)
                                 // Held NFTs carry their metadata too (a[1] still holds ids 2 to 6), in both list forms.
    let held = http::walk(open_addr, &format!("/api/v2/addresses/{}/nft?items_count=50", a[1])).await;
    let two = held.iter().find(|i| i["token"]["address_hash"] == nft.to_checksum(None) && i["id"] == "2").unwrap();
    assert_eq!(two["metadata"], json!({"name": "Two"}));
    let three = held.iter().find(|i| i["token"]["address_hash"] == nft.to_checksum(None) && i["id"] == "3").unwrap();
    assert_eq!(three["metadata"]["name"], "Served 3");
    let collections = http::get_json(open_addr, &format!("/api/v2/addresses/{}/nft/collections", a[1])).await;
    let ours = collections["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["token"]["address_hash"] == nft.to_checksum(None))
        .unwrap();
    assert_eq!(ours["token_instances"][0]["metadata"], json!({"name": "Two"}));
    // The collection's own instance list, and the instance's page.
    let listed = http::walk(open_addr, &format!("/api/v2/tokens/{nft}/instances")).await;
    let metadata = |id: &str| listed.iter().find(|i| i["id"] == id).map(|i| i["metadata"].clone());
    assert_eq!((metadata("1"), metadata("2")), (Some(doc.clone()), Some(json!({"name": "Two"}))));
    let page = http::get(open_addr, &format!("/token/{nft}/instance/1")).await;
    let page = String::from_utf8_lossy(&page.body);
    assert!(page.contains("Metadata") && page.contains("https://one.example"), "{page}");
    assert_eq!(server.hits(), fetched, "lists showing instances 3 and 4 again read their metadata from the cache");
    // Refetching forgets it: the next request reads the document again.
    let refetch = |n: u64| format!("/api/v2/tokens/{nft}/instances/{n}/refetch-metadata");
    let answer = http::request(open_addr, hyper::Method::PATCH, &refetch(3), &[], "").await;
    assert_eq!((answer.status.as_u16(), answer.json()), (200, json!({"message": "OK"})));
    assert_eq!(http::get_json(open_addr, &instance(3)).await["metadata"]["name"], "Served 3");
    assert_eq!(server.hits(), fetched + 1);
    let unknown = http::request(open_addr, hyper::Method::PATCH, &refetch(99), &[], "").await;
    assert_eq!(unknown.status, 404, "an instance the index does not hold");
    let get = http::get(open_addr, &refetch(3)).await;
    assert_eq!((get.status.as_u16(), get.headers["allow"].to_str().unwrap()), (405, "PATCH"));

    // Transfers of one id, their count, its holders.
    let transfers = http::walk(addr, &format!("/api/v2/tokens/{nft}/instances/1/transfers?items_count=1")).await;
    assert_eq!(transfers.len(), 2, "the mint and the transfer");
    assert!(transfers.iter().all(|t| t["total"]["token_id"] == "1"), "{transfers:?}");
    assert_eq!(transfers[0]["to"]["hash"], a[2].to_checksum(None), "newest first");
    let count = http::get_json(addr, &format!("/api/v2/tokens/{nft}/instances/1/transfers-count")).await;
    assert_eq!(count, json!({"transfers_count": 2}));
    let count = http::get_json(addr, &format!("/api/v2/tokens/{nft}/instances/2/transfers-count")).await;
    assert_eq!(count, json!({"transfers_count": 1}));
    let holders = http::walk(addr, &format!("/api/v2/tokens/{nft}/instances/1/holders")).await;
    assert_eq!(holders.len(), 1);
    assert_eq!(
        (holders[0]["address"]["hash"].clone(), holders[0]["value"].clone()),
        (json!(a[2].to_checksum(None)), json!("1"))
    );
    let holders = http::walk(addr, &format!("/api/v2/tokens/{multi}/instances/7/holders?items_count=1")).await;
    let got: Vec<(String, String)> = holders
        .iter()
        .map(|h| (h["address"]["hash"].as_str().unwrap().to_owned(), h["value"].as_str().unwrap().to_owned()))
        .collect();
    let (mut five_a, mut five_b) = (a[2].to_checksum(None), a[3].to_checksum(None));
    if a[3] < a[2] {
        std::mem::swap(&mut five_a, &mut five_b);
    }
    assert_eq!(got, vec![(a[1].to_checksum(None), "40".into()), (five_a, "5".into()), (five_b, "5".into())]);
    assert!(holders.iter().all(|h| h["token_id"] == "7"));

    // Unknown ids and collections are 404, malformed ids 422.
    for path in [
        instance(99),
        format!("/api/v2/tokens/{}/instances/1", Address::repeat_byte(3)),
        format!("/api/v2/tokens/{nft}/instances/99/transfers"),
    ] {
        assert_eq!(http::get(addr, &path).await.status, 404, "{path}");
    }
    for path in [
        format!("/api/v2/tokens/{nft}/instances/abc"),
        format!("/api/v2/tokens/{nft}/instances/-1/holders"),
        format!("/api/v2/tokens/{nft}/instances/{}", "9".repeat(80)),
    ] {
        assert_eq!(http::get(addr, &path).await.status, 422, "{path}");
    }
    strict.daemon.shutdown().await.unwrap();
    open.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balances_moved_by_calls_are_indexed_by_the_trace_pass() {
    use alloy::sol_types::SolCall;
    use rockscout::dev::contracts::DemoFactory;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |c| c.tracing = true).await;
    let addr = t.daemon.addr();
    let factory = deploy_contract(&node, a[0], &DemoFactory::BYTECODE, vec![]).await;
    let spawn = DemoFactory::spawnCall { v: U256::from(3) }.abi_encode();
    send(&node, json!({"from": a[0], "to": factory, "data": alloy::primitives::Bytes::from(spawn), "value": U256::from(5000), "gas": "0x1000000"})).await;
    mine(&node, 1).await;
    let spawn_block = node.get_block_number().await.unwrap();
    let child: Address = {
        let raw = node
            .call(
                alloy::rpc::types::TransactionRequest::default()
                    .to(factory)
                    .input(DemoFactory::lastCall {}.abi_encode().into()),
            )
            .await
            .unwrap();
        Address::from_slice(&raw[12..])
    };
    let newcomer = Address::repeat_byte(0xe7);
    let relay = DemoFactory::relayCall { child, to: newcomer }.abi_encode();
    send(&node, json!({"from": a[1], "to": factory, "data": alloy::primitives::Bytes::from(relay), "value": U256::from(777), "gas": "0x1000000"})).await;
    mine(&node, 1).await;
    let relay_block = node.get_block_number().await.unwrap();
    let traced = |target: u64| {
        let store = t.daemon.store().clone();
        move || {
            let store = store.clone();
            async move { store.reader().trace_tip().ok().flatten().filter(|tip| tip.number >= target).map(|_| ()) }
        }
    };
    wait_synced(&t.daemon, &node).await;
    poll_until("the trace pass to reach the head", Duration::from_secs(60), traced(relay_block)).await;

    // Neither the child (created inside a call) nor the newcomer (paid by one) is named by its block.
    let history = http::walk(addr, &format!("/api/v2/addresses/{newcomer}/coin-balance-history")).await;
    let entries: Vec<(u64, U256)> =
        history.iter().map(|e| (e["block_number"].as_u64().unwrap(), decimal(&e["value"]))).collect();
    assert_eq!(entries, vec![(relay_block, U256::from(777))]);
    assert_eq!(balance_at(&node, newcomer, relay_block).await, U256::from(777));
    let history = http::walk(addr, &format!("/api/v2/addresses/{child}/coin-balance-history")).await;
    assert_eq!(history[0]["block_number"], spawn_block);
    assert_eq!(decimal(&history[0]["value"]), balance_at(&node, child, spawn_block).await);
    let ranked = top_accounts(addr, &node).await;
    assert!(ranked.iter().any(|(address, _)| *address == newcomer), "{ranked:?}");
    assert!(ranked.iter().any(|(address, _)| *address == child), "{ranked:?}");

    // The relay's block is replaced: its late rows go with it.
    let _: Value = node.raw_request("anvil_rollback".into(), json!([1])).await.unwrap();
    mine(&node, 2).await;
    let head = wait_synced(&t.daemon, &node).await;
    poll_until("the trace pass to reach the new head", Duration::from_secs(60), traced(head)).await;
    let history = http::walk(addr, &format!("/api/v2/addresses/{newcomer}/coin-balance-history")).await;
    assert!(history.is_empty(), "{history:?}");
    let ranked = top_accounts(addr, &node).await;
    assert!(!ranked.iter().any(|(address, _)| *address == newcomer), "{ranked:?}");
    t.daemon.shutdown().await.unwrap();
}

//! Tokens on a real chain: an ERC-20, an ERC-721, an ERC-1155 and a token that lies, driven through mints,
//! transfers, batch transfers and burns. Every balance, holder count and total supply the API shows is compared
//! with what the contracts answer on the node (`balanceOf`, `ownerOf`, `totalSupply`), also after a reorg takes
//! blocks with transfers away; an ERC-721 of the form before the standard (values in the log data) is indexed.

use crate::support::*;
use alloy::consensus::Transaction as _;
use alloy::network::TransactionResponse;
use alloy::primitives::{Address, Bytes, B256, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::sol_types::{SolCall, SolConstructor};
use rockscout::dev::contracts::{DemoMulti, DemoNft, DemoToken, LiarToken};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

async fn eth_call(node: &RootProvider, to: Address, data: Vec<u8>) -> Option<Bytes> {
    node.raw_request::<_, Bytes>("eth_call".into(), json!([{"to": to, "data": Bytes::from(data)}, "latest"])).await.ok()
}

async fn call_u256(node: &RootProvider, to: Address, data: Vec<u8>) -> U256 {
    U256::from_be_slice(&eth_call(node, to, data).await.expect("call succeeds"))
}

async fn deploy_with(node: &RootProvider, from: Address, bytecode: &Bytes, args: Vec<u8>) -> Address {
    let mut code = bytecode.to_vec();
    code.extend(args);
    let hash = deploy(node, from, &Bytes::from(code)).await;
    mine(node, 1).await;
    created_address(node, hash).await
}

use crate::support::http::{get_json as get, walk};

/// The API's balance of `holder` for `token` (and `id`), from `/addresses/:a/token-balances`.
async fn api_balance(addr: SocketAddr, holder: Address, token: Address, id: Option<U256>) -> U256 {
    let balances = get(addr, &format!("/api/v2/addresses/{holder}/token-balances")).await;
    balances
        .as_array()
        .unwrap()
        .iter()
        .find(|b| {
            b["token"]["address_hash"] == token.to_checksum(None) && id.is_none_or(|id| b["token_id"] == id.to_string())
        })
        .map(|b| b["value"].as_str().unwrap().parse().unwrap())
        .unwrap_or(U256::ZERO)
}

struct Tokens {
    erc20: Address,
    erc721: Address,
    erc1155: Address,
    liar: Address,
}

/// Compares every holding of every party with the contracts on the node.
async fn assert_tokens_match_node(
    addr: SocketAddr,
    node: &RootProvider,
    t: &Tokens,
    parties: &[Address],
    nft_ids: &[U256],
    multi_ids: &[U256],
) {
    // ERC-20 and the liar: balances, holders, supply.
    for token in [t.erc20, t.liar] {
        let mut holders = 0;
        for holder in parties {
            let want = call_u256(node, token, DemoToken::balanceOfCall::new((*holder,)).abi_encode()).await;
            assert_eq!(api_balance(addr, *holder, token, None).await, want, "ERC-20 {token} balance of {holder}");
            holders += usize::from(!want.is_zero());
        }
        let info = get(addr, &format!("/api/v2/tokens/{token}")).await;
        assert_eq!(info["holders_count"], holders.to_string(), "holders of {token}");
        let supply = call_u256(node, token, DemoToken::totalSupplyCall {}.abi_encode()).await;
        assert_eq!(info["total_supply"], supply.to_string(), "supply of {token}");
        let counters = get(addr, &format!("/api/v2/tokens/{token}/counters")).await;
        assert_eq!(counters["token_holders_count"], holders.to_string());
        let listed = walk(addr, &format!("/api/v2/tokens/{token}/holders?items_count=2")).await;
        assert_eq!(listed.len(), holders);
        let values: Vec<U256> = listed.iter().map(|h| h["value"].as_str().unwrap().parse().unwrap()).collect();
        assert!(values.windows(2).all(|w| w[0] >= w[1]), "holders largest first: {values:?}");
    }
    // ERC-721: owners, counts per holder, supply.
    let instances = walk(addr, &format!("/api/v2/tokens/{}/instances?items_count=2", t.erc721)).await;
    let mut owners: BTreeMap<Address, u64> = BTreeMap::new();
    for id in nft_ids {
        let owner = eth_call(node, t.erc721, DemoNft::ownerOfCall::new((*id,)).abi_encode())
            .await
            .map(|b| Address::from_word(B256::from_slice(&b)));
        let listed = instances.iter().find(|i| i["id"] == id.to_string()).unwrap_or_else(|| panic!("instance {id}"));
        match owner.filter(|o| !o.is_zero()) {
            Some(owner) => {
                assert_eq!(listed["owner"]["hash"], owner.to_checksum(None), "owner of {id}");
                *owners.entry(owner).or_default() += 1;
            }
            None => assert!(listed["owner"].is_null(), "burned {id} has no owner"),
        }
    }
    for holder in parties {
        let want = call_u256(node, t.erc721, DemoNft::balanceOfCall::new((*holder,)).abi_encode()).await;
        assert_eq!(want, U256::from(owners.get(holder).copied().unwrap_or(0)));
        assert_eq!(api_balance(addr, *holder, t.erc721, None).await, want, "ERC-721 count of {holder}");
    }
    let info = get(addr, &format!("/api/v2/tokens/{}", t.erc721)).await;
    assert_eq!(info["holders_count"], owners.len().to_string());
    let supply = call_u256(node, t.erc721, DemoNft::totalSupplyCall {}.abi_encode()).await;
    assert_eq!(info["total_supply"], supply.to_string());
    // ERC-1155: per id and holder; holders hold any id; supply is the sum.
    let mut holders = BTreeSet::new();
    let mut supply = U256::ZERO;
    let mut by_id = Vec::new();
    for id in multi_ids {
        for holder in parties {
            let want = call_u256(node, t.erc1155, DemoMulti::balanceOfCall::new((*holder, *id)).abi_encode()).await;
            assert_eq!(api_balance(addr, *holder, t.erc1155, Some(*id)).await, want, "ERC-1155 id {id} of {holder}");
            if !want.is_zero() {
                holders.insert(*holder);
                by_id.push((std::cmp::Reverse(want), *holder, *id));
            }
            supply += want;
        }
    }
    let info = get(addr, &format!("/api/v2/tokens/{}", t.erc1155)).await;
    assert_eq!(info["holders_count"], holders.len().to_string());
    assert_eq!(info["total_supply"], supply.to_string());
    // Its holders list: one row per holder and id, largest first, then by address and id, across pages of two.
    by_id.sort();
    let want: Vec<(String, String, String)> = by_id
        .iter()
        .map(|(amount, holder, id)| (holder.to_checksum(None), amount.0.to_string(), id.to_string()))
        .collect();
    let listed = walk(addr, &format!("/api/v2/tokens/{}/holders?items_count=2", t.erc1155)).await;
    let got: Vec<(String, String, String)> = listed
        .iter()
        .map(|h| {
            let text = |v: &Value| v.as_str().unwrap().to_owned();
            (text(&h["address"]["hash"]), text(&h["value"]), text(&h["token_id"]))
        })
        .collect();
    assert_eq!(got, want);
    assert_address_flags(addr, node, t, parties).await;
}

/// `has_tokens` and `has_logs` of the address objects (answered from the row cache once asked, so asking again
/// after more blocks checks that it followed them): a holder the contracts give a balance has tokens, and
/// `has_tokens` says whether `/token-balances` lists anything; an address has logs when the node's `eth_getLogs`
/// finds any it emitted.
/// Also each address's `gas_usage_count`, from the node's receipts: the token contracts', the gas of the transactions
/// sent to them; the parties' (accounts), the gas of those they sent.
async fn assert_address_flags(addr: SocketAddr, node: &RootProvider, t: &Tokens, parties: &[Address]) {
    let (mut sent, mut received) = (BTreeMap::<Address, u64>::new(), BTreeMap::<Address, u64>::new());
    for n in 0..=node.get_block_number().await.unwrap() {
        let block = node.get_block_by_number(n.into()).full().await.unwrap().expect("node block");
        let receipts = node.get_block_receipts(n.into()).await.unwrap().expect("node receipts");
        for (tx, receipt) in block.transactions.txns().zip(&receipts) {
            *sent.entry(tx.from()).or_default() += receipt.gas_used;
            if let Some(to) = tx.to() {
                *received.entry(to).or_default() += receipt.gas_used;
            }
        }
    }
    let contracts = [t.erc20, t.erc721, t.erc1155, t.liar];
    for address in parties.iter().chain(&contracts) {
        let gas = if contracts.contains(address) { &received } else { &sent };
        let counters = get(addr, &format!("/api/v2/addresses/{address}/counters")).await;
        let want = gas.get(address).copied().unwrap_or(0);
        assert!(want > 0 || !contracts.contains(address), "{address} was sent transactions");
        assert_eq!(counters["gas_usage_count"], want.to_string(), "gas usage of {address}");
        let object = get(addr, &format!("/api/v2/addresses/{address}")).await;
        let listed = get(addr, &format!("/api/v2/addresses/{address}/token-balances")).await;
        let tabs = get(addr, &format!("/api/v2/addresses/{address}/tabs-counters")).await;
        let count = listed.as_array().unwrap().len();
        assert_eq!(tabs["token_balances_count"], json!(count), "the tab counts what the list shows, for {address}");
        let listed = count > 0;
        assert_eq!(object["has_tokens"], json!(listed), "has_tokens of {address}");
        let mut held = false;
        for token in [t.erc20, t.liar, t.erc721] {
            held |= !call_u256(node, token, DemoToken::balanceOfCall::new((*address,)).abi_encode()).await.is_zero();
        }
        assert!(listed || !held, "{address} holds tokens on the node");
        let filter = json!([{"address": address, "fromBlock": "0x0", "toBlock": "latest"}]);
        let logs: Vec<Value> = node.raw_request("eth_getLogs".into(), filter).await.unwrap();
        assert_eq!(object["has_logs"], json!(!logs.is_empty()), "has_logs of {address}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_balances_holders_and_supplies_match_the_contracts() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let owner = a[0];
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();

    let unit = U256::from(10u64).pow(U256::from(18));
    let erc20 = deploy_with(
        &node,
        owner,
        &DemoToken::BYTECODE,
        DemoToken::constructorCall {
            name_: "Demo Token".into(),
            symbol_: "DEMO".into(),
            initialSupply: unit * U256::from(1000),
        }
        .abi_encode(),
    )
    .await;
    let erc721 = deploy_with(
        &node,
        owner,
        &DemoNft::BYTECODE,
        DemoNft::constructorCall { name_: "Demo NFT".into(), symbol_: "DNFT".into() }.abi_encode(),
    )
    .await;
    let erc1155 = deploy_with(&node, owner, &DemoMulti::BYTECODE, vec![]).await;
    let liar = deploy_with(&node, owner, &LiarToken::BYTECODE, vec![]).await;
    let tokens = Tokens { erc20, erc721, erc1155, liar };

    // Block 1: ERC-20 spread, NFTs minted, 1155 ids minted, a liar's round.
    for (i, to) in a[1..5].iter().enumerate() {
        call(&node, owner, erc20, DemoToken::transferCall { to: *to, value: unit * U256::from(10 + i) }.abi_encode())
            .await;
        call(&node, owner, erc721, DemoNft::mintCall { to: *to }.abi_encode()).await;
    }
    call(
        &node,
        owner,
        erc1155,
        DemoMulti::mintBatchCall {
            to: owner,
            ids: vec![U256::from(1), U256::from(2), U256::from(3)],
            values: vec![U256::from(50), U256::from(60), U256::from(70)],
        }
        .abi_encode(),
    )
    .await;
    call(&node, owner, liar, LiarToken::lieCall { to: a[5], value: U256::from(777) }.abi_encode()).await;
    mine(&node, 1).await;
    // Block 2: transfers among holders, an approval spend, a burn, NFT moves and a burn, 1155 single and batch.
    call(&node, a[1], erc20, DemoToken::transferCall { to: a[2], value: unit * U256::from(10) }.abi_encode()).await;
    call(&node, a[3], erc20, DemoToken::approveCall { spender: a[4], value: unit }.abi_encode()).await;
    call(&node, a[4], erc20, DemoToken::transferFromCall { from: a[3], to: a[6], value: unit }.abi_encode()).await;
    call(&node, owner, erc20, DemoToken::burnCall { value: unit * U256::from(100) }.abi_encode()).await;
    call(&node, a[1], erc721, DemoNft::transferFromCall { from: a[1], to: a[6], id: U256::from(1) }.abi_encode()).await;
    call(&node, a[2], erc721, DemoNft::burnCall { id: U256::from(2) }.abi_encode()).await;
    call(
        &node,
        owner,
        erc1155,
        DemoMulti::safeTransferFromCall {
            from: owner,
            to: a[1],
            id: U256::from(1),
            value: U256::from(5),
            _4: Bytes::new(),
        }
        .abi_encode(),
    )
    .await;
    let batch = call(
        &node,
        owner,
        erc1155,
        DemoMulti::safeBatchTransferFromCall {
            from: owner,
            to: a[2],
            ids: vec![U256::from(2), U256::from(3)],
            values: vec![U256::from(6), U256::from(70)],
            _4: Bytes::new(),
        }
        .abi_encode(),
    )
    .await;
    call(&node, a[1], erc1155, DemoMulti::burnCall { id: U256::from(1), value: U256::from(2) }.abi_encode()).await;
    call(&node, owner, liar, LiarToken::lieCall { to: a[6], value: U256::from(5) }.abi_encode()).await;
    // Transfers of nothing to an address that holds nothing (anyone can send them to anyone).
    call(&node, a[1], erc20, DemoToken::transferCall { to: a[7], value: U256::ZERO }.abi_encode()).await;
    let nothing = DemoMulti::safeTransferFromCall {
        from: owner,
        to: a[7],
        id: U256::from(1),
        value: U256::ZERO,
        _4: Bytes::new(),
    };
    call(&node, owner, erc1155, nothing.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    // They are transfers, and give no holding.
    let moved = get(addr, &format!("/api/v2/addresses/{}/token-transfers", a[7])).await;
    assert_eq!(moved["items"].as_array().unwrap().len(), 2, "{moved}");
    assert_eq!(get(addr, &format!("/api/v2/addresses/{}/token-balances", a[7])).await, json!([]));
    assert_eq!(get(addr, &format!("/api/v2/addresses/{}/nft", a[7])).await["items"], json!([]));
    assert_eq!(get(addr, &format!("/api/v2/addresses/{}", a[7])).await["has_tokens"], false);
    let parties: Vec<Address> = a[..8].to_vec();
    let nft_ids: Vec<U256> = (1..=4u64).map(U256::from).collect();
    let multi_ids: Vec<U256> = (1..=3u64).map(U256::from).collect();
    // Metadata is read a token at a time: wait for every token whose metadata is looked at below.
    poll_until("token metadata", std::time::Duration::from_secs(60), || async {
        let field = |token: Address, name: &'static str| async move {
            get(addr, &format!("/api/v2/tokens/{token}")).await[name].clone()
        };
        let read = field(liar, "symbol").await == "LIAR"
            && field(erc20, "name").await == "Demo Token"
            && field(erc721, "name").await == "Demo NFT";
        read.then_some(())
    })
    .await;
    assert_tokens_match_node(addr, &node, &tokens, &parties, &nft_ids, &multi_ids).await;

    // The liar: indexed as an ERC-20 with what could be read; only its real transfers count.
    let info = get(addr, &format!("/api/v2/tokens/{liar}")).await;
    assert_eq!(
        (info["type"].clone(), info["name"].clone(), info["decimals"].clone()),
        (json!("ERC-20"), Value::Null, Value::Null)
    );
    assert_eq!(get(addr, &format!("/api/v2/tokens/{liar}/counters")).await["transfers_count"], "2");
    let demo = get(addr, &format!("/api/v2/tokens/{erc20}")).await;
    assert_eq!(
        (demo["name"].clone(), demo["symbol"].clone(), demo["decimals"].clone()),
        (json!("Demo Token"), json!("DEMO"), json!("18"))
    );

    // Lists, filters, search.
    let all = walk(addr, "/api/v2/tokens?items_count=3").await;
    assert_eq!(all.len(), 4);
    let holders = |list: &[Value]| -> Vec<u64> {
        list.iter().map(|t| t["holders_count"].as_str().unwrap().parse().unwrap()).collect()
    };
    let mut most_first = holders(&all);
    assert!(most_first.is_sorted_by(|a, b| a >= b), "{most_first:?}");
    let fewest = walk(addr, "/api/v2/tokens?items_count=3&sort=holders_count&order=asc").await;
    let key = |t: &Value| t["address_hash"].as_str().unwrap().to_owned();
    let (mut reversed, ascending): (Vec<String>, Vec<String>) =
        (all.iter().map(key).collect(), fewest.iter().map(key).collect());
    reversed.reverse();
    assert_eq!(ascending, reversed, "fewest holders first is the same order reversed, across pages");
    most_first.reverse();
    assert_eq!(holders(&fewest), most_first);
    // The spelling of older frontends.
    let old_spelling = walk(addr, "/api/v2/tokens?items_count=3&sort=holder_count&order=asc").await;
    assert_eq!(old_spelling.iter().map(key).collect::<Vec<_>>(), ascending);
    assert_eq!(http::get(addr, "/api/v2/tokens?sort=name").await.status, 422);
    let nfts = get(addr, "/api/v2/tokens?type=ERC-721,ERC-1155").await;
    let kinds: BTreeSet<String> =
        nfts["items"].as_array().unwrap().iter().map(|t| t["type"].as_str().unwrap().to_owned()).collect();
    assert_eq!(kinds, BTreeSet::from(["ERC-721".to_owned(), "ERC-1155".to_owned()]));
    let found = get(addr, "/api/v2/tokens?q=dem").await;
    let names: BTreeSet<String> =
        found["items"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, BTreeSet::from(["Demo Token".to_owned(), "Demo NFT".to_owned()]));
    // A later word of a name finds it too, in the list and in search.
    let by_word = get(addr, "/api/v2/tokens?q=tok").await;
    assert_eq!(by_word["items"].as_array().unwrap().len(), 1, "{by_word}");
    assert_eq!(by_word["items"][0]["name"], "Demo Token");
    // "demo" finds Demo Token by its name and by its symbol (DEMO), and Demo NFT by its name: each once, in the
    // list and in search, whatever the page size (the pages continue after the matched text).
    for path in ["/api/v2/tokens?q=demo", "/api/v2/search?q=demo"] {
        for size in [1, 2, 50] {
            let found = walk(addr, &format!("{path}&items_count={size}")).await;
            let mut hashes: Vec<&str> = found.iter().map(|t| t["address_hash"].as_str().unwrap()).collect();
            hashes.sort();
            let mut want = vec![erc20.to_checksum(None), erc721.to_checksum(None)];
            want.sort();
            assert_eq!(hashes, want, "{path} in pages of {size}: {found:?}");
        }
    }
    let first = get(addr, "/api/v2/search?q=demo&items_count=1").await;
    assert_eq!(first["next_page_params"]["next_page_params_type"], "search", "{first}");
    assert_eq!(first["next_page_params"]["q"], "demo", "{first}");
    assert_eq!(first["next_page_params"]["items_count"], "1", "Blockscout's search cursor holds strings: {first}");
    // The list's next page keeps its type filter.
    let typed = get(addr, "/api/v2/tokens?q=demo&type=ERC-20,ERC-721&items_count=1").await;
    assert_eq!(typed["next_page_params"]["type"], "ERC-20,ERC-721", "{typed}");
    let search = get(addr, "/api/v2/search?q=nft").await;
    assert_eq!((&search["items"][0]["type"], &search["items"][0]["name"]), (&json!("token"), &json!("Demo NFT")));
    let search = get(addr, "/api/v2/search?q=DNFT").await;
    assert_eq!(search["items"][0]["type"], "token");
    assert_eq!(search["items"][0]["address_hash"], erc721.to_checksum(None));

    // Every token's creation is a token creation, whether its constructor minted (the ERC-20) or not.
    let mut creations = BTreeSet::new();
    for token in [erc20, erc721, erc1155] {
        let page = get(addr, &format!("/api/v2/addresses/{token}")).await;
        let tx = page["creation_transaction_hash"].as_str().expect("a creation").to_owned();
        let types = get(addr, &format!("/api/v2/transactions/{tx}")).await["transaction_types"].clone();
        let types = types.as_array().unwrap();
        assert!(types.contains(&json!("token_creation")) && types.contains(&json!("contract_creation")), "{token}");
        creations.insert(tx);
    }
    let listed: BTreeSet<String> = walk(addr, "/api/v2/transactions?type=token_creation")
        .await
        .iter()
        .map(|t| t["hash"].as_str().unwrap().to_owned())
        .collect();
    assert!(creations.is_subset(&listed), "{creations:?} in {listed:?}");

    // The Etherscan-style NFT transfers say 0 decimals (Etherscan's form, which its clients parse as a number).
    let nft_moves = get(addr, &format!("/api?module=account&action=tokennfttx&contractaddress={erc721}")).await;
    let nft_moves = nft_moves["result"].as_array().unwrap();
    assert!(!nft_moves.is_empty() && nft_moves.iter().all(|t| t["tokenDecimal"] == "0"), "{nft_moves:?}");
    let erc20_moves = get(addr, &format!("/api?module=account&action=tokentx&contractaddress={erc20}")).await;
    assert_eq!(erc20_moves["result"][0]["tokenDecimal"], "18");

    // A batch transfer: two items in the transaction's transfers, typed as token transfer.
    let detail = get(addr, &format!("/api/v2/transactions/{batch:#x}")).await;
    assert!(detail["transaction_types"].as_array().unwrap().contains(&json!("token_transfer")));
    let items = detail["token_transfers"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["total"]["token_id"], "2");
    assert_eq!(items[1]["total"]["value"], "70");
    assert_eq!(items[0]["token_type"], "ERC-1155");
    let listed = walk(addr, &format!("/api/v2/transactions/{batch:#x}/token-transfers?items_count=1")).await;
    assert_eq!(listed.len(), 2);
    // An address's transfers: mints, transfers and burns it took part in, and the to/from filters.
    let history = walk(addr, &format!("/api/v2/addresses/{}/token-transfers?items_count=2", a[1])).await;
    let kinds: Vec<&str> = history.iter().map(|h| h["type"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"token_burning") && kinds.contains(&"token_transfer"), "{kinds:?}");
    let sent = walk(addr, &format!("/api/v2/addresses/{}/token-transfers?filter=from", a[1])).await;
    assert!(sent.iter().all(|h| h["from"]["hash"] == a[1].to_checksum(None)));
    let only_nft = walk(addr, &format!("/api/v2/addresses/{}/token-transfers?type=ERC-721", a[1])).await;
    assert_eq!(only_nft.len(), 2, "minted and passed on");
    let counters = get(addr, &format!("/api/v2/addresses/{}/counters", a[1])).await;
    assert_eq!(counters["token_transfers_count"], history.len().to_string());
    let typed = walk(addr, "/api/v2/transactions?type=token_transfer").await;
    assert!(typed.iter().any(|tx| tx["hash"] == format!("{batch:#x}")));

    // A reorg replaces the second block: the transfers in it are undone exactly.
    let replacement = json!([[{"from": a[7], "to": erc20, "data": Bytes::from(DemoToken::mintCall { to: a[7], value: unit }.abi_encode()), "gas": "0x100000"}, 0]]);
    let _: Value = node.raw_request("anvil_reorg".into(), json!([1, replacement])).await.unwrap();
    wait_synced(&t.daemon, &node).await;
    assert_tokens_match_node(addr, &node, &tokens, &parties, &nft_ids, &multi_ids).await;
    assert_eq!(get(addr, &format!("/api/v2/tokens/{liar}/counters")).await["transfers_count"], "1");
    assert_eq!(http::get(addr, &format!("/api/v2/transactions/{batch:#x}")).await.status, 404);
    t.daemon.shutdown().await.unwrap();
}

/// Creation code of a contract that emits `Transfer(address,address,uint256)` with one topic and its call data (the
/// three values) as the log data: how ERC-721 contracts older than the standard (CryptoKitties) announce moves.
fn legacy_nft_code() -> Vec<u8> {
    // Runtime: CALLDATACOPY(0, 0, CALLDATASIZE); LOG1(0, CALLDATASIZE, TRANSFER); STOP.
    let mut runtime = vec![0x36, 0x5f, 0x5f, 0x37, 0x7f];
    runtime.extend(rockscout::chain::tokens::TRANSFER.as_slice());
    runtime.extend([0x36, 0x5f, 0xa1, 0x00]);
    let len = runtime.len() as u8;
    // Init: CODECOPY(0, 10, len); RETURN(0, len).
    let mut code = vec![0x60, len, 0x60, 10, 0x5f, 0x39, 0x60, len, 0x5f, 0xf3];
    code.extend(runtime);
    code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erc721_transfers_with_their_values_in_the_data_are_indexed() {
    use alloy::sol_types::SolValue;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let a = anvil.addresses();
    let kitty = deploy_code(&node, a[0], legacy_nft_code()).await;
    let id = U256::from(77);
    let mint = call(&node, a[0], kitty, (Address::ZERO, a[1], id).abi_encode_params()).await;
    let pass = call(&node, a[1], kitty, (a[1], a[2], id).abi_encode_params()).await;
    mine(&node, 1).await;
    // The node's logs: one topic, the three values in the data.
    let receipt = node.get_transaction_receipt(pass).await.unwrap().expect("mined");
    let log = &receipt.inner.logs()[0];
    assert_eq!((log.topics().len(), log.data().data.len()), (1, 96));
    wait_synced(&t.daemon, &node).await;

    let token = get(addr, &format!("/api/v2/tokens/{kitty}")).await;
    assert_eq!((token["type"].as_str(), token["holders_count"].as_str()), (Some("ERC-721"), Some("1")), "{token}");
    let instance = get(addr, &format!("/api/v2/tokens/{kitty}/instances/77")).await;
    assert_eq!(instance["owner"]["hash"], a[2].to_checksum(None), "{instance}");
    for (tx, from, to, kind) in [(mint, Address::ZERO, a[1], "token_minting"), (pass, a[1], a[2], "token_transfer")] {
        let moves = get(addr, &format!("/api/v2/transactions/{tx:#x}/token-transfers")).await;
        let item = &moves["items"][0];
        assert_eq!(
            (&item["from"]["hash"], &item["to"]["hash"], &item["total"]["token_id"], &item["type"]),
            (&json!(from.to_checksum(None)), &json!(to.to_checksum(None)), &json!("77"), &json!(kind)),
            "{moves}"
        );
    }
    assert_eq!(api_balance(addr, a[2], kitty, None).await, U256::from(1), "one id held");
    t.daemon.shutdown().await.unwrap();
}

/// `/token-balances` lists at most 100 ids of one ERC-1155 token, so a batch of many ids (which anyone can send to
/// anyone) does not push the address's other tokens out; an ERC-721 collection is its count of ids. Values equal
/// the contracts' answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_balances_bound_each_token_s_ids() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let (owner, holder) = (anvil.addresses()[0], anvil.addresses()[1]);
    let constructor =
        DemoToken::constructorCall { name_: "Kept".into(), symbol_: "KEPT".into(), initialSupply: U256::from(1000) };
    let erc20 = deploy_with(&node, owner, &DemoToken::BYTECODE, constructor.abi_encode()).await;
    let nft = DemoNft::constructorCall { name_: "Counted".into(), symbol_: "CNT".into() }.abi_encode();
    let erc721 = deploy_with(&node, owner, &DemoNft::BYTECODE, nft).await;
    let erc1155 = deploy_with(&node, owner, &DemoMulti::BYTECODE, vec![]).await;
    let ids: Vec<U256> = (1..=150u64).map(U256::from).collect();
    let batch = DemoMulti::mintBatchCall { to: holder, ids: ids.clone(), values: vec![U256::from(1); ids.len()] };
    send(&node, json!({"from": owner, "to": erc1155, "data": Bytes::from(batch.abi_encode()), "gas": "0x2000000"}))
        .await;
    call(&node, owner, erc20, DemoToken::transferCall { to: holder, value: U256::from(7) }.abi_encode()).await;
    for _ in 0..2 {
        call(&node, owner, erc721, DemoNft::mintCall { to: holder }.abi_encode()).await;
    }
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;

    let items = get(addr, &format!("/api/v2/addresses/{holder}/token-balances")).await;
    let of = |token: Address| -> Vec<Value> {
        let token = token.to_checksum(None);
        items.as_array().unwrap().iter().filter(|i| i["token"]["address_hash"] == token).cloned().collect()
    };
    assert_eq!(of(erc1155).len(), 100, "at most 100 ids of one token");
    let on_chain = |token: Address| {
        let node = node.clone();
        async move { call_u256(&node, token, DemoToken::balanceOfCall::new((holder,)).abi_encode()).await }
    };
    assert_eq!(of(erc20)[0]["value"], json!(on_chain(erc20).await.to_string()));
    assert_eq!(of(erc721)[0]["value"], json!(on_chain(erc721).await.to_string()), "the collection's count");
    let listed = walk(addr, &format!("/api/v2/addresses/{holder}/tokens?type=ERC-1155")).await;
    assert_eq!(listed.len(), 150, "the paginated list has every id");
    t.daemon.shutdown().await.unwrap();
}

//! The explorer pages: served HTML checked over HTTP (status, headers, escaping, weight, 404, `--no-ui`), and the
//! same pages driven in headless Chromium by `ui_browser.js` (values against the node, links, live blocks, XSS
//! token, axe-core, screenshots). Chromium, playwright-core and axe-core come from `scripts/setup`.

use crate::support::{
    call, created_address, deploy, http, mine, poll_until, provider, start_anvil, start_daemon, transfer, wait_synced,
};
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::Provider;
use alloy::sol_types::{SolCall, SolConstructor};
use rockscout::dev::contracts::{DemoNft, DemoToken};
use rockscout::dev::traffic::{HOSTILE_NAME, HOSTILE_SYMBOL};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SETUP: &str = "run scripts/setup (it installs Debian's chromium with apt-get, and playwright-core and axe-core \
    with npm into scripts/tools/node_modules)";

/// Largest page, in bytes, without images.
const PAGE_BUDGET: usize = 100 * 1024;

struct Chain {
    accounts: Vec<Address>,
    tx: String,
    token: Address,
    hostile: Address,
    nft: Address,
}

async fn token(
    node: &alloy::providers::RootProvider,
    from: Address,
    name: &str,
    symbol: &str,
) -> alloy::primitives::B256 {
    let constructor = DemoToken::constructorCall {
        name_: name.into(),
        symbol_: symbol.into(),
        initialSupply: U256::from(10u64).pow(U256::from(24)),
    };
    deploy(node, from, &Bytes::from([&DemoToken::BYTECODE[..], &constructor.abi_encode()].concat())).await
}

/// A small chain with ether and token transfers, an NFT and the token whose name and symbol are markup.
async fn build_chain(node: &alloy::providers::RootProvider) -> Chain {
    let a: Vec<Address> = node.get_accounts().await.unwrap();
    let token_tx = token(node, a[0], "Page Token", "PAGE").await;
    let hostile_tx = token(node, a[0], HOSTILE_NAME, HOSTILE_SYMBOL).await;
    let nft_constructor = DemoNft::constructorCall { name_: "Page NFT".into(), symbol_: "PNFT".into() };
    let nft_tx =
        deploy(node, a[0], &Bytes::from([&DemoNft::BYTECODE[..], &nft_constructor.abi_encode()].concat())).await;
    mine(node, 1).await;
    let (token, hostile, nft) = (
        created_address(node, token_tx).await,
        created_address(node, hostile_tx).await,
        created_address(node, nft_tx).await,
    );
    let mut tx = Default::default();
    for round in 1..=3u64 {
        tx = transfer(node, a[0], a[1], 1_000_000_000_000_000 * round).await;
        call(
            node,
            a[0],
            token,
            DemoToken::transferCall { to: a[1], value: U256::from(round * 10u64.pow(18)) }.abi_encode(),
        )
        .await;
        call(node, a[0], hostile, DemoToken::transferCall { to: a[2], value: U256::from(round) }.abi_encode()).await;
        call(node, a[0], nft, DemoNft::mintCall { to: a[1] }.abi_encode()).await;
        mine(node, 1).await;
    }
    Chain { accounts: a, tx: format!("{tx}"), token, hostile, nft }
}

fn chromium() -> PathBuf {
    let path =
        std::env::var_os("CHROMIUM_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(path.exists(), "chromium not found at {}: {SETUP}", path.display());
    path
}

fn node_modules() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/tools/node_modules");
    for package in ["playwright-core", "axe-core"] {
        assert!(
            dir.join(package).join("package.json").exists(),
            "{package} is missing from {}: {SETUP}",
            dir.display()
        );
    }
    dir
}

async fn page(addr: SocketAddr, path: &str) -> http::Reply {
    let reply = http::get(addr, path).await;
    assert_eq!(reply.status, 200, "GET {path}: {}", String::from_utf8_lossy(&reply.body));
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_are_escaped_bounded_html_with_a_strict_policy() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let chain = build_chain(&node).await;
    let d = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&d.daemon, &node).await;
    let addr = d.daemon.addr();
    poll_until("the hostile token's metadata", Duration::from_secs(30), || async {
        let t = http::get(addr, &format!("/api/v2/tokens/{}", chain.hostile)).await.json();
        (t["name"] == HOSTILE_NAME).then_some(())
    })
    .await;

    let home = page(addr, "/").await;
    assert_eq!(home.headers["content-type"], "text/html; charset=utf-8");
    let csp = home.headers["content-security-policy"].to_str().unwrap();
    for directive in ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert_eq!(home.headers["x-content-type-options"], "nosniff");
    let html = String::from_utf8_lossy(&home.body);
    assert!(!html.contains("<script>") && !html.contains(" style="), "no inline script or style");

    // Every page of the chain answers 200 under the budget.
    let a = chain.accounts[1];
    let paths = [
        "/".to_owned(),
        "/blocks".into(),
        "/block/2".into(),
        "/txs".into(),
        format!("/tx/{}", chain.tx),
        format!("/address/{a}"),
        // The frontend's column sort, carried over to the page's query.
        format!("/address/{a}?sort=value&order=desc"),
        format!("/address/{a}?tab=token_transfers"),
        format!("/address/{a}?tab=tokens"),
        "/tokens".into(),
        format!("/token/{}", chain.token),
        format!("/token/{}?tab=holders", chain.token),
        format!("/token/{}?tab=inventory", chain.nft),
        "/search-results?q=Page".into(),
    ];
    for path in &paths {
        let reply = page(addr, path).await;
        assert!(reply.body.len() < PAGE_BUDGET, "{path}: {} bytes", reply.body.len());
    }

    // Large answers are gzipped for clients that accept it, and unpack to the same bytes.
    let gzip = [("accept-encoding", "br;q=1, gzip;q=0.8")];
    for path in ["/api/v2/transactions", "/txs"] {
        let plain = http::get(addr, path).await;
        let packed = http::request(addr, hyper::Method::GET, path, &gzip, bytes::Bytes::new()).await;
        assert!(plain.body.len() >= 8 << 10, "{path}: {} bytes, too small to test", plain.body.len());
        assert!(plain.headers.get("content-encoding").is_none(), "{path}");
        assert_eq!(packed.headers["content-encoding"], "gzip", "{path}");
        assert_eq!(packed.headers["vary"], "accept-encoding", "{path}");
        let mut unpacked = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&packed.body[..]), &mut unpacked).unwrap();
        assert!(packed.body.len() * 3 < unpacked.len(), "{path}: {} of {}", packed.body.len(), unpacked.len());
        if path.starts_with("/api/") {
            assert_eq!(unpacked, plain.body.to_vec(), "{path}");
        } else {
            assert!(unpacked.ends_with(b"</html>"), "{path}");
        }
    }

    // Chain text is text: the hostile token's name and symbol come out escaped wherever they show.
    for path in [
        format!("/token/{}", chain.hostile),
        "/tokens".into(),
        format!("/address/{}?tab=token_transfers", chain.accounts[2]),
    ] {
        let body = String::from_utf8(page(addr, &path).await.body.to_vec()).unwrap();
        assert!(body.contains("&lt;img src=x onerror=alert(1)&gt;"), "{path}: the name is shown escaped");
        assert!(!body.contains("<img src=x") && !body.contains("<script>alert"), "{path}: markup from the chain");
    }

    // The next-page link of a list is the API's cursor.
    let blocks = page(addr, "/blocks?items_count=2").await;
    let body = String::from_utf8_lossy(&blocks.body);
    let api = http::get_json(addr, "/api/v2/blocks?items_count=2").await;
    let next = api["next_page_params"]["block_number"].to_string();
    assert!(body.contains(&format!("block_number={next}")), "next link carries block_number={next}");

    // Links to a filtered list's other pages keep its filter: the second page of an address's ERC-721 transfers
    // lists only NFT transfers (its ERC-20 transfers sit between them).
    let next_link = |body: &str| {
        let start = body.find("rel=\"next\" href=\"").map(|i| i + 17)?;
        Some(body[start..].split('"').next()?.replace("&amp;", "&"))
    };
    let first = page(addr, &format!("/address/{a}?tab=token_transfers&type=ERC-721&items_count=1")).await;
    let next = next_link(&String::from_utf8_lossy(&first.body)).expect("a next page");
    assert!(next.contains("type=ERC-721"), "{next}");
    let second = String::from_utf8(page(addr, &next).await.body.to_vec()).unwrap();
    assert!(second.contains("Page NFT") && !second.contains("Page Token"), "{next}: only NFT transfers");
    assert!(second.contains(&format!("href=\"/address/{a}?tab=token_transfers&amp;type=ERC-721\"")), "first page");

    // A search for an exact hash leads to its page.
    let long = page(addr, &format!("/search-results?q={}", "a".repeat(300))).await;
    assert!(String::from_utf8_lossy(&long.body).contains("longer than 256 characters"), "the refusal is shown");
    let found = http::get(addr, &format!("/search-results?q={}", chain.tx)).await;
    assert_eq!(found.status, 302);
    assert_eq!(found.headers["location"].to_str().unwrap(), format!("/tx/{}", chain.tx));

    // Unknown pages are HTML 404s; bad ids are HTML 422s; the API keeps its JSON answers.
    let missing = http::get(addr, "/no/such/page").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(http::get(addr, "/block/not-a-block").await.status, 422);
    assert_eq!(http::get(addr, &format!("/tx/0x{}", "00".repeat(32))).await.status, 404);
    let posted = http::request(addr, hyper::Method::POST, "/blocks", &[], bytes::Bytes::new()).await;
    assert_eq!((posted.status.as_u16(), posted.headers["allow"].to_str().unwrap()), (405, "GET, HEAD"));
    let api_missing = http::get(addr, "/api/v2/nonsense").await;
    assert_eq!(api_missing.status, 400);
    assert_eq!(api_missing.headers["content-type"], "application/json; charset=utf-8");

    // Assets: content-hashed names, a year of caching, 304 on a matching ETag.
    let css =
        html.split("href=\"").filter_map(|s| s.split('"').next()).find(|h| h.ends_with(".css")).unwrap().to_owned();
    let reply = page(addr, &css).await;
    assert!(reply.headers["cache-control"].to_str().unwrap().contains("immutable"));
    let etag = reply.headers["etag"].to_str().unwrap().to_owned();
    let again = http::request(addr, hyper::Method::GET, &css, &[("if-none-match", &etag)], bytes::Bytes::new()).await;
    assert_eq!(again.status, 304);
    let listed = format!("\"other\", W/{etag}");
    let again = http::request(addr, hyper::Method::GET, &css, &[("if-none-match", &listed)], bytes::Bytes::new()).await;
    assert_eq!(again.status, 304, "a list with the weak tag");
    let script =
        html.split("src=\"").filter_map(|s| s.split('"').next()).find(|h| h.ends_with(".js")).unwrap().to_owned();
    let packed = http::request(addr, hyper::Method::GET, &script, &gzip, bytes::Bytes::new()).await;
    let weak = packed.headers["etag"].to_str().unwrap().to_owned();
    assert!(weak.starts_with("W/\""), "a gzipped asset's tag is weak: {weak}");
    let again =
        http::request(addr, hyper::Method::GET, &script, &[("if-none-match", &weak)], bytes::Bytes::new()).await;
    assert_eq!(again.status, 304, "the weak tag of the gzipped form validates");
    d.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_ui_serves_the_api_only() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    mine(&node, 1).await;
    let d = start_daemon(&anvil.http_url(), |c| c.api.ui = false).await;
    wait_synced(&d.daemon, &node).await;
    let addr = d.daemon.addr();
    let home = http::get(addr, "/").await;
    assert_eq!(home.status, 404);
    assert_eq!(home.headers["content-type"], "application/json; charset=utf-8");
    assert_eq!(http::get(addr, "/blocks").await.status, 404);
    assert_eq!(http::get_json(addr, "/api/v2/blocks").await["items"][0]["height"], 1);
    d.daemon.shutdown().await.unwrap();
}

/// What went wrong is on the transaction page: a revert's message (not only the error's signature), a failed
/// contract creation named once as a creation that made no contract; the genesis block links no parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_pages_say_what_happened() {
    use rockscout::dev::contracts::Demo;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a: Vec<Address> = node.get_accounts().await.unwrap();
    let demo_tx = deploy(&node, a[0], &Demo::BYTECODE).await;
    mine(&node, 1).await;
    let demo = created_address(&node, demo_tx).await;
    let reverted = call(&node, a[0], demo, Demo::mayFailCall { x: U256::from(5) }.abi_encode()).await;
    // Creation code that reverts at once (PUSH1 0, PUSH1 0, REVERT).
    let failed =
        crate::support::send(&node, serde_json::json!({"from": a[0], "data": "0x60006000fd", "gas": "0x100000"})).await;
    mine(&node, 1).await;
    let d = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&d.daemon, &node).await;
    let addr = d.daemon.addr();
    let body = |path: String| async move { String::from_utf8(page(addr, &path).await.body.to_vec()).unwrap() };

    let status = node.get_transaction_receipt(reverted).await.unwrap().unwrap().status();
    assert!(!status, "the node reverted the call");
    let html = body(format!("/tx/{reverted}")).await;
    assert!(html.contains("Demo: multiple of five"), "the revert's message is shown: {html}");

    let receipt = node.get_transaction_receipt(failed).await.unwrap().unwrap();
    let sent = node.get_transaction_by_hash(failed).await.unwrap().unwrap();
    let created = a[0].create(alloy::consensus::Transaction::nonce(&sent));
    assert!(!receipt.status() && node.get_code_at(created).await.unwrap().is_empty());
    let html = body(format!("/tx/{failed}")).await;
    let created = created.to_checksum(None);
    assert!(html.contains("Contract creation") && html.contains("creation failed"), "{html}");
    assert_eq!(html.matches(&format!("href=\"/address/{created}\"")).count(), 1, "the address once: {html}");
    assert!(!html.contains("<dt>To</dt>"), "a creation has no recipient row: {html}");

    let genesis = body("/block/0".into()).await;
    assert!(!genesis.contains("Parent"), "block 0 has no parent to link: {genesis}");
    assert!(body("/block/1".into()).await.contains("Parent"));
    d.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_in_a_real_browser() {
    let chromium = chromium();
    node_modules();
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let chain = build_chain(&node).await;
    // A name for the first account, which the header's suggestions must show.
    let names = rockscout::dev::names::deploy(&anvil.http_url(), &anvil.signers(), &["pagename"]).await.unwrap();
    let d = start_daemon(&anvil.http_url(), |c| {
        c.tracing = true;
        c.demo_artifacts = true;
        c.name_registry = Some(names.registry);
    })
    .await;
    wait_synced(&d.daemon, &node).await;
    let addr = d.daemon.addr();
    poll_until("token metadata", Duration::from_secs(30), || async {
        let t = http::get(addr, &format!("/api/v2/tokens/{}", chain.hostile)).await.json();
        (t["name"] == HOSTILE_NAME).then_some(())
    })
    .await;
    let instances = http::get_json(addr, &format!("/api/v2/tokens/{}/instances", chain.nft)).await;
    let nft_id = instances["items"][0]["id"].as_str().expect("an NFT instance").to_owned();
    let shots = std::env::var_os("ROCKSCOUT_UI_SHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("rockscout-ui-shots-{}", std::process::id())));
    let input = serde_json::json!({
        "base": format!("http://{addr}"),
        "rpc": anvil.http_url(),
        "shots": shots,
        "chromium": chromium,
        "tx": chain.tx,
        "address": chain.accounts[1],
        "token": chain.token,
        "hostile": chain.hostile,
        "hostileName": HOSTILE_NAME,
        "hostileSymbol": HOSTILE_SYMBOL,
        "nft": chain.nft,
        "nftId": nft_id,
        "selectors": {
            "name": format!("0x{}", alloy::primitives::hex::encode(DemoToken::nameCall::SELECTOR)),
            "symbol": format!("0x{}", alloy::primitives::hex::encode(DemoToken::symbolCall::SELECTOR)),
            "decimals": format!("0x{}", alloy::primitives::hex::encode(DemoToken::decimalsCall::SELECTOR)),
            "balanceOf": format!("0x{}", alloy::primitives::hex::encode(DemoToken::balanceOfCall::SELECTOR)),
        },
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/ui_browser.js");
    let output = tokio::process::Command::new("node")
        .arg(&script)
        .arg(input.to_string())
        .output()
        .await
        .unwrap_or_else(|e| panic!("node could not run ({e}): {SETUP}"));
    let report = String::from_utf8_lossy(&output.stdout);
    println!("{report}\nscreenshots: {}", shots.display());
    assert!(output.status.success(), "browser checks failed:\n{report}\n{}", String::from_utf8_lossy(&output.stderr));
    d.daemon.shutdown().await.unwrap();
}

/// `POST /smart-contracts/:a/query-read-method`, which the contract tab's read forms use: the server encodes the
/// arguments and decodes the answer with the matched ABI; the answers equal the node's own `eth_call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_reads_are_encoded_called_and_decoded_by_the_server() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let chain = build_chain(&node).await;
    let d = start_daemon(&anvil.http_url(), |c| c.demo_artifacts = true).await;
    wait_synced(&d.daemon, &node).await;
    let addr = d.daemon.addr();
    let path = format!("/api/v2/smart-contracts/{}/query-read-method", chain.token);
    let read = |body: serde_json::Value| {
        let path = path.clone();
        async move {
            let bytes = bytes::Bytes::from(body.to_string());
            http::request(addr, hyper::Method::POST, &path, &[("content-type", "application/json")], bytes).await
        }
    };
    let selector = |s: [u8; 4]| format!("0x{}", alloy::primitives::hex::encode(s));
    let holder = chain.accounts[1];

    // One argument, compared with the node's answer to the same call.
    let input = DemoToken::balanceOfCall::new((holder,)).abi_encode();
    let raw: Bytes = node
        .raw_request("eth_call".into(), (serde_json::json!({"to": chain.token, "data": Bytes::from(input)}), "latest"))
        .await
        .unwrap();
    let expected = U256::from_be_slice(&raw);
    assert!(expected > U256::ZERO, "the holder received tokens");
    // Right after the sync: the code writer may not have stored the token's code yet, and the read works either way
    // (the server then reads the code from the node, as the contract page does).
    let answer = read(
        serde_json::json!({"method_id": selector(DemoToken::balanceOfCall::SELECTOR), "args": [holder.to_string()]}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let answer = answer.json();
    assert_eq!(answer["is_error"], false);
    assert_eq!(answer["result"]["output"][0]["type"], "uint256");
    assert_eq!(answer["result"]["output"][0]["value"], expected.to_string());
    // Two arguments, and a string answer.
    let allowance = read(serde_json::json!({
        "method_id": selector(DemoToken::allowanceCall::SELECTOR),
        "args": [chain.accounts[0].to_string(), holder.to_string()],
    }))
    .await
    .json();
    assert_eq!(allowance["result"]["output"][0]["value"], "0");
    let name = read(serde_json::json!({"method_id": selector(DemoToken::nameCall::SELECTOR), "args": []})).await.json();
    assert_eq!(name["result"]["output"][0]["value"], "Page Token");

    // Code no creation put there (`anvil_setCode`), which the code writer never stores: read through the node's code.
    let twin = Address::repeat_byte(0x7e);
    let code = node.get_code_at(chain.token).await.unwrap();
    let _: serde_json::Value = node.raw_request("anvil_setCode".into(), (twin, code)).await.unwrap();
    let _: serde_json::Value = node.raw_request("anvil_mine".into(), (1u64,)).await.unwrap();
    wait_synced(&d.daemon, &node).await;
    let twin_path = format!("/api/v2/smart-contracts/{twin}/query-read-method");
    let body =
        bytes::Bytes::from(serde_json::json!({"method_id": selector(DemoToken::nameCall::SELECTOR)}).to_string());
    let twin_name = http::request(addr, hyper::Method::POST, &twin_path, &[], body).await;
    assert_eq!(twin_name.status, 200, "{}", String::from_utf8_lossy(&twin_name.body));
    let input = Bytes::from(DemoToken::nameCall::new(()).abi_encode());
    let raw: Bytes =
        node.raw_request("eth_call".into(), (serde_json::json!({"to": twin, "data": input}), "latest")).await.unwrap();
    let expected = DemoToken::nameCall::abi_decode_returns(&raw).unwrap();
    assert_eq!(
        twin_name.json()["result"]["output"][0]["value"],
        expected,
        "the twin's own storage, as the node reads it"
    );

    // Refusals: a function that writes, wrong arguments, an unknown selector, no contract, the wrong method.
    let refused = |answer: http::Reply, status: u16, why: &str| {
        assert_eq!(answer.status, status, "{why}: {}", String::from_utf8_lossy(&answer.body));
    };
    let transfer = selector(DemoToken::transferCall::SELECTOR);
    refused(read(serde_json::json!({"method_id": transfer, "args": [holder.to_string(), "1"]})).await, 422, "a write");
    let balance_of = selector(DemoToken::balanceOfCall::SELECTOR);
    refused(read(serde_json::json!({"method_id": balance_of, "args": []})).await, 422, "too few arguments");
    let bad = read(serde_json::json!({"method_id": balance_of, "args": ["not an address"]})).await;
    assert!(bad.json()["errors"][0]["detail"].as_str().unwrap().contains("address"), "the detail names the type");
    refused(read(serde_json::json!({"method_id": "0xdeadbeef", "args": []})).await, 422, "an unknown selector");
    refused(read(serde_json::json!({"method_id": "balanceOf", "args": []})).await, 422, "not a selector");
    refused(read(serde_json::json!({"args": []})).await, 400, "no selector");
    let no_contract = format!("/api/v2/smart-contracts/{holder}/query-read-method");
    let body = bytes::Bytes::from(serde_json::json!({"method_id": balance_of, "args": []}).to_string());
    refused(http::request(addr, hyper::Method::POST, &no_contract, &[], body).await, 404, "an account");
    refused(http::get(addr, &path).await, 405, "a GET");
    let huge = bytes::Bytes::from(vec![b' '; 70 * 1024]);
    refused(http::request(addr, hyper::Method::POST, &path, &[], huge).await, 413, "a body over the bound");
    d.daemon.shutdown().await.unwrap();
}

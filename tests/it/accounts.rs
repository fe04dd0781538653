//! Accounts on a real daemon: account tokens (CLI minted offline, checked, revoked, kept across `--reindex`),
//! the failed-authentication budget, sign-in with Ethereum signed by a dev account's key, private tags shown only
//! to their owner on every route, watchlists and API keys.

use crate::support::http::{request, Reply};
use crate::support::ws::{Received, WsClient};
use crate::support::*;
use alloy::primitives::{Address, U256};
use alloy::signers::{local::PrivateKeySigner, SignerSync};
use alloy::sol_types::SolConstructor;
use hyper::Method;
use rockscout::account::Accounts;
use rockscout::dev::contracts::DemoToken;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

/// anvil's first development key (its address is `anvil.addresses()[0]`).
const DEV_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn call(addr: SocketAddr, method: Method, path: &str, token: Option<&str>, body: Value) -> Reply {
    let auth = token.map(bearer);
    let mut headers = vec![("content-type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    let body = if body.is_null() { String::new() } else { body.to_string() };
    request(addr, method, path, &headers, body).await
}

/// Account tokens for two accounts, minted offline against the daemon's store.
fn alice_and_bob(t: &TestDaemon, alice: Address, bob: Address) -> (String, String) {
    let accounts = Accounts::new(t.daemon.store().clone());
    (accounts.mint_token(alice, "a", None, false).unwrap(), accounts.mint_token(bob, "b", None, false).unwrap())
}

async fn get_as(addr: SocketAddr, path: &str, token: Option<&str>) -> Value {
    let reply = call(addr, Method::GET, path, token, Value::Null).await;
    assert_eq!(reply.status, 200, "GET {path}: {}", String::from_utf8_lossy(&reply.body));
    reply.json()
}

fn rockscout(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rockscout")).args(args).output().expect("the rockscout binary runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_tokens_guard_account_routes_and_survive_reindex() {
    let anvil = start_anvil();
    let owner = anvil.addresses()[3];
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let dir = t.dir.path().to_str().unwrap().to_owned();
    let owner_text = owner.to_string();

    // The daemon holds the store: the offline command says so.
    let busy = rockscout(&["account", "--data-dir", &dir, "token", "--address", &owner_text, "--name", "ci"]);
    assert!(!busy.status.success());
    let stderr = String::from_utf8_lossy(&busy.stderr);
    assert!(stderr.contains("in use by a running rockscout"), "{stderr}");
    // A mistyped data directory is refused, not created with a token nobody's daemon will read.
    let typo = format!("{dir}-typo");
    let lost = rockscout(&["account", "--data-dir", &typo, "token", "--address", &owner_text, "--name", "ci"]);
    assert!(!lost.status.success() && !std::path::Path::new(&typo).exists());
    assert!(String::from_utf8_lossy(&lost.stderr).contains("is not a rockscout data directory"));

    let TestDaemon { daemon, dir: data } = t;
    daemon.shutdown().await.unwrap();
    let minted = rockscout(&["account", "--data-dir", &dir, "token", "--address", &owner_text, "--name", "ci"]);
    assert!(minted.status.success(), "{}", String::from_utf8_lossy(&minted.stderr));
    let token = String::from_utf8(minted.stdout).unwrap().trim().to_owned();
    assert!(token.starts_with("rst_"), "{token}");
    let listed = String::from_utf8(rockscout(&["account", "--data-dir", &dir, "list"]).stdout).unwrap();
    assert!(listed.contains(&owner.to_checksum(None)) && listed.contains("\tci\t"), "{listed}");
    assert!(!listed.contains(&token[21..]), "the list never shows a secret");
    let token_id = &token[4..20];
    assert!(listed.contains(token_id));

    // Restart with --reindex: the chain index is rebuilt, the account data stays.
    let mut config = test_config(&anvil.http_url(), data.path());
    config.reindex = true;
    let daemon = rockscout::Daemon::start(&config).await.unwrap();
    let addr = daemon.addr();
    let info = get_as(addr, "/api/account/v2/user/info", Some(&token)).await;
    assert_eq!(info["address_hash"], owner.to_checksum(None));
    let reply = call(addr, Method::GET, "/api/account/v2/user/info", None, Value::Null).await;
    assert_eq!((reply.status.as_u16(), reply.json()), (401, json!({"message": "Unauthorized"})));
    let forged = format!("{}{}", &token[..token.len() - 1], if token.ends_with('0') { '1' } else { '0' });
    let reply = call(addr, Method::GET, "/api/account/v2/user/info", Some(&forged), Value::Null).await;
    assert_eq!(reply.status, 401);
    let cookie = format!("_explorer_key={token}");
    let reply =
        request(addr, Method::GET, "/api/account/v2/user/info", &[("cookie", cookie.as_str())], String::new()).await;
    assert_eq!(reply.status, 200, "the sign-in cookie works like the header");
    assert_eq!(reply.headers["cache-control"], "private, no-store");

    // Revoked (offline again): refused.
    daemon.shutdown().await.unwrap();
    let revoked = rockscout(&["account", "--data-dir", &dir, "revoke", "--id", token_id]);
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    let daemon = rockscout::Daemon::start(&test_config(&anvil.http_url(), data.path())).await.unwrap();
    let reply = call(daemon.addr(), Method::GET, "/api/account/v2/user/info", Some(&token), Value::Null).await;
    assert_eq!(reply.status, 401, "a revoked token is refused");
    daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_bad_tokens_from_one_ip_is_limited() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.auth.failure_budget = 5;
        (c.api.rate_limit.per_second, c.api.rate_limit.burst) = (100, 200);
        (c.api.auth.api_key_per_second, c.api.auth.api_key_burst) = (500, 1000);
    })
    .await;
    let addr = t.daemon.addr();
    let accounts = Accounts::new(t.daemon.store().clone());
    let good = accounts.mint_token(Address::repeat_byte(1), "ok", None, false).unwrap();
    let (_, key) = accounts.create_api_key(Address::repeat_byte(1), "bot").unwrap();
    let limit_with_key = |key: String| async move {
        let reply = request(addr, Method::GET, "/api/v2/stats", &[("x-api-key", key.as_str())], String::new()).await;
        assert_eq!(reply.status, 200);
        reply.headers["x-ratelimit-limit"].clone()
    };
    assert_eq!(limit_with_key(key.clone()).await, "1000", "a valid key has its own limit");
    let bad = format!("rst_{:016x}_{}", 1, "00".repeat(32));
    let topic = format!("watchlist:{}", Address::repeat_byte(1).to_checksum(None));
    let join = |token: String| {
        let topic = topic.clone();
        async move {
            let path = format!("/socket/v2/websocket?vsn=2.0.0&token={token}");
            let mut ws = WsClient::connect(addr, &path).await;
            ws.send(&json!(["1", "1", topic, "phx_join", {}])).await;
            ws.frame().await[4]["status"].clone()
        }
    };
    assert_eq!(join(good.clone()).await, "ok");
    // Bad tokens over the WebSocket count as they do over HTTP.
    for _ in 0..2 {
        assert_eq!(join(bad.clone()).await, "error");
    }
    for _ in 0..3 {
        let reply = call(addr, Method::GET, "/api/account/v2/user/info", Some(&bad), Value::Null).await;
        assert_eq!(reply.status, 401);
    }
    let reply = call(addr, Method::GET, "/api/account/v2/user/info", Some(&good), Value::Null).await;
    assert_eq!(reply.status, 429, "past the budget even a good token waits: {}", String::from_utf8_lossy(&reply.body));
    assert!(reply.json()["message"].as_str().unwrap().contains("failed authentications"));
    let wait: u64 = reply.headers["retry-after"].to_str().unwrap().parse().expect("Retry-After in seconds");
    assert!((1..=60).contains(&wait), "the rest of the 60 s window: {wait}");
    let reply = call(addr, Method::GET, "/api/v2/stats", Some(&bad), Value::Null).await;
    assert_eq!(reply.status, 429, "reads presenting a token are refused too");
    assert_eq!(call(addr, Method::GET, "/api/v2/stats", None, Value::Null).await.status, 200, "anonymous reads go on");
    // Nor is any credential checked elsewhere until the window ends: the WebSocket connects anonymously, and a
    // valid API key gets the anonymous limit (its own would tell a guesser it is valid).
    assert_eq!(join(good.clone()).await, "error");
    assert_eq!(limit_with_key(key).await, "200");
    t.daemon.shutdown().await.unwrap();
}

/// Asks for a sign-in message for `address`.
async fn siwe_message(addr: SocketAddr, address: Address) -> String {
    let reply = get_as(addr, &format!("/api/account/v2/siwe_message?address={address}"), None).await;
    reply["siwe_message"].as_str().expect("a message").to_owned()
}

async fn authenticate(addr: SocketAddr, message: &str, signer: &PrivateKeySigner) -> Reply {
    let signature = signer.sign_message_sync(message.as_bytes()).unwrap().to_string();
    let body = json!({"message": message, "signature": signature});
    call(addr, Method::POST, "/api/account/v2/authenticate_via_wallet", None, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_ethereum_by_a_dev_key() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    // Behind a trusted proxy on loopback, so a request can come from another machine (X-Forwarded-For).
    let t = start_daemon(&anvil.http_url(), |c| c.api.rate_limit.trusted_proxies = vec!["127.0.0.1".parse().unwrap()])
        .await;
    wait_synced(&t.daemon, &node).await;
    let addr = t.daemon.addr();
    let signer: PrivateKeySigner = DEV_KEY.parse().unwrap();
    assert_eq!(signer.address(), anvil.addresses()[0]);

    let message = siwe_message(addr, signer.address()).await;
    assert!(message.starts_with(&format!("{addr} wants you to sign in with your Ethereum account:\n")), "{message}");
    assert!(message.contains(&format!("\n{}\n", signer.address().to_checksum(None))));
    assert!(
        message.contains(&format!("Chain ID: {}", rockscout::dev::anvil::DEV_CHAIN_ID))
            && message.contains("Nonce: ")
            && message.contains("Expiration Time: ")
    );
    let reply = authenticate(addr, &message, &signer).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.headers["cache-control"], "private, no-store", "a token is never kept by a cache");
    let cookie = reply.headers["set-cookie"].to_str().unwrap().to_owned();
    // Readable by the page's script: Blockscout's frontend checks it to know it is signed in.
    assert!(cookie.starts_with("_explorer_key=rst_") && cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(!cookie.contains("HttpOnly"), "{cookie}");
    assert!(!cookie.contains("Secure"), "a page served over plain HTTP could not send it back: {cookie}");
    let token = reply.json()["token"].as_str().unwrap().to_owned();
    assert_eq!(reply.json()["address_hash"], signer.address().to_checksum(None));
    let info = get_as(addr, "/api/account/v2/user/info", Some(&token)).await;
    assert_eq!(info["address_hash"], signer.address().to_checksum(None));
    // The cookie writes only with a JSON request, which another site's page cannot make a browser send with it.
    let pair = cookie.split(';').next().unwrap();
    let tag = r#"{"address_hash":"0x000000000000000000000000000000000000dEaD","name":"planted"}"#;
    let tags = "/api/account/v2/user/tags/address";
    for content_type in ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"] {
        let headers = [("cookie", pair), ("content-type", content_type)];
        let reply = request(addr, Method::POST, tags, &headers, tag.to_owned()).await;
        assert_eq!(reply.status, 422, "{content_type}: {}", String::from_utf8_lossy(&reply.body));
    }
    let listed = get_as(addr, tags, Some(&token)).await;
    assert_eq!(listed["items"], json!([]), "nothing was planted");
    let headers = [("cookie", pair), ("content-type", "application/json")];
    assert_eq!(request(addr, Method::POST, tags, &headers, tag.to_owned()).await.status, 200, "the site's own request");

    let replay = authenticate(addr, &message, &signer).await;
    assert_eq!(replay.status, 401, "a nonce signs in once");
    assert!(replay.json()["message"].as_str().unwrap().contains("nonce"));

    let fresh = siwe_message(addr, signer.address()).await;
    let expiry = fresh.lines().find(|l| l.starts_with("Expiration Time: ")).unwrap();
    let expired = fresh.replace(expiry, "Expiration Time: 2021-01-01T00:00:00.000Z");
    let reply = authenticate(addr, &expired, &signer).await;
    assert_eq!(reply.status, 401);
    assert!(reply.json()["message"].as_str().unwrap().contains("does not match"), "{}", reply.json());

    let fresh = siwe_message(addr, signer.address()).await;
    let foreign = fresh.replacen(&addr.to_string(), "phishing.example", 1);
    let reply = authenticate(addr, &foreign, &signer).await;
    assert_eq!(reply.status, 401);
    assert!(reply.json()["message"].as_str().unwrap().contains("does not match"), "{}", reply.json());
    // Without --siwe-domain only a loopback host gets a message: another page cannot have one made in its name.
    let (status, body) = {
        let path = format!("/api/account/v2/siwe_message?address={}", signer.address());
        let r =
            http::request(addr, hyper::Method::GET, &path, &[("host", "phishing.example")], bytes::Bytes::new()).await;
        (r.status, r.json())
    };
    assert_eq!(status, 401, "{body}");
    assert!(body["message"].as_str().unwrap().contains("--siwe-domain"), "{body}");
    // Nor does another machine claiming to ask for localhost.
    let path = format!("/api/account/v2/siwe_message?address={}", signer.address());
    let headers = [("host", "localhost"), ("x-forwarded-for", "203.0.113.7")];
    let remote = http::request(addr, hyper::Method::GET, &path, &headers, bytes::Bytes::new()).await;
    assert_eq!(remote.status, 401, "{}", remote.json());
    // A forwarded request is never local, whatever address it names.
    let headers = [("host", "localhost"), ("x-forwarded-for", "127.0.0.1")];
    let proxied = http::request(addr, hyper::Method::GET, &path, &headers, bytes::Bytes::new()).await;
    assert_eq!(proxied.status, 401, "{}", proxied.json());
    let local = http::request(addr, hyper::Method::GET, &path, &[("host", "localhost")], bytes::Bytes::new()).await;
    assert_eq!(local.status, 200, "{}", local.json());

    let fresh = siwe_message(addr, signer.address()).await;
    let other: PrivateKeySigner = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d".parse().unwrap();
    let reply = authenticate(addr, &fresh, &other).await;
    assert_eq!(reply.status, 401, "someone else's signature");

    // A page served over HTTPS (a TLS proxy in front of this server) gets a cookie sent only over HTTPS.
    let fresh = siwe_message(addr, signer.address()).await;
    let signature = signer.sign_message_sync(fresh.as_bytes()).unwrap().to_string();
    let body = json!({"message": fresh, "signature": signature}).to_string();
    let headers = [("content-type", "application/json"), ("origin", "https://explorer.example")];
    let reply = request(addr, Method::POST, "/api/account/v2/authenticate_via_wallet", &headers, body).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    let secure = reply.headers["set-cookie"].to_str().unwrap();
    assert!(secure.starts_with("_explorer_key=rst_") && secure.ends_with("; Secure"), "{secure}");

    // The frontend asks for a CSRF token on every page (a failure there is an error on its pages), then signs out.
    let csrf = request(addr, Method::GET, "/api/account/v2/get_csrf", &[], String::new()).await;
    assert_eq!((csrf.status.as_u16(), csrf.json()), (200, json!({})));
    let logout = request(addr, Method::GET, "/api/account/auth/logout", &[("cookie", pair)], String::new()).await;
    assert_eq!((logout.status.as_u16(), logout.json()), (200, json!({"message": "OK"})));
    let cleared = logout.headers["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with("_explorer_key=;") && cleared.contains("Max-Age=0"), "{cleared}");
    let after = request(addr, Method::GET, "/api/account/v2/user/info", &[("cookie", pair)], String::new()).await;
    assert_eq!(after.status, 401, "the signed-out token is revoked");
    let again = request(addr, Method::GET, "/api/account/auth/logout", &[], String::new()).await;
    assert_eq!(again.status, 200, "signing out without a token is not an error");
    t.daemon.shutdown().await.unwrap();
}

/// Picks the address object a test looks at out of a response.
type Pick = fn(&Value) -> Value;

fn tag_names(address_object: &Value) -> Vec<String> {
    let tags = address_object["private_tags"].as_array().unwrap_or_else(|| panic!("no private_tags: {address_object}"));
    tags.iter().map(|t| t["display_name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_tags_are_shown_only_to_their_owner() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let accounts = Accounts::new(t.daemon.store().clone());
    let (alice, bob) = (
        accounts.mint_token(a[8], "alice", None, false).unwrap(),
        accounts.mint_token(a[9], "bob", None, false).unwrap(),
    );
    let unit = U256::from(10u64).pow(U256::from(18));
    let mut code = DemoToken::BYTECODE.to_vec();
    code.extend(
        DemoToken::constructorCall { name_: "Tagged".into(), symbol_: "TAG".into(), initialSupply: unit }.abi_encode(),
    );
    let deployed = deploy(&node, a[0], &alloy::primitives::Bytes::from(code)).await;
    mine(&node, 1).await;
    let erc20 = created_address(&node, deployed).await;
    let paid = transfer(&node, a[0], a[1], 777).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    // The tag is on the token holder `a[0]`, who also sent `paid`.
    let tagged = a[0];

    let tags = "/api/account/v2/user/tags/address";
    let reply = call(addr, Method::POST, tags, None, json!({"address_hash": tagged, "name": "deployer"})).await;
    assert_eq!(reply.status, 401, "writes need a token");
    let reply = call(addr, Method::POST, tags, Some(&alice), json!({"address_hash": "0x12", "name": "x"})).await;
    assert_eq!(reply.status, 422);
    assert_eq!(reply.json()["errors"][0]["source"]["pointer"], "/address_hash");
    let long = "n".repeat(36);
    let reply = call(addr, Method::POST, tags, Some(&alice), json!({"address_hash": tagged, "name": long})).await;
    assert_eq!(reply.status, 422);
    let reply = call(addr, Method::POST, tags, Some(&alice), json!({"address_hash": tagged, "name": "deployer"})).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    let tag = reply.json();
    assert_eq!(
        (tag["name"].as_str(), tag["address_hash"].as_str()),
        (Some("deployer"), Some(&*tagged.to_checksum(None)))
    );
    let tag_id = tag["id"].as_u64().unwrap();
    let tx_tags = "/api/account/v2/user/tags/transaction";
    let body = json!({"transaction_hash": format!("{paid:#x}"), "name": "payday"});
    assert_eq!(call(addr, Method::POST, tx_tags, Some(&alice), body).await.status, 200);

    // Another account can neither see, change nor delete it, nor tell it from an item nobody has.
    let item = format!("{tags}/{tag_id}");
    let missing = call(addr, Method::DELETE, &format!("{tags}/999999"), Some(&bob), Value::Null).await;
    assert_eq!(missing.status, 404);
    let reply = call(addr, Method::GET, &item, Some(&bob), Value::Null).await;
    assert_eq!((reply.status.as_u16(), &reply.body), (404, &missing.body));
    let rename = json!({"address_hash": tagged, "name": "mine now"});
    assert_eq!(call(addr, Method::PUT, &item, Some(&bob), rename).await.status, 404);
    let reply = call(addr, Method::DELETE, &item, Some(&bob), Value::Null).await;
    assert_eq!((reply.status.as_u16(), &reply.body), (404, &missing.body));
    assert!(get_as(addr, tags, Some(&bob)).await["items"].as_array().unwrap().is_empty());
    assert_eq!(get_as(addr, tags, Some(&alice)).await["items"][0]["id"], tag_id);

    // Every route that shows the address: the owner sees the tag, bob and anonymous callers do not.
    let views: Vec<(String, Pick)> = vec![
        (format!("/api/v2/addresses/{tagged}"), |v| v.clone()),
        ("/api/v2/transactions".into(), |v| {
            v["items"].as_array().unwrap().iter().find(|t| t["from"]["hash"].is_string()).unwrap()["from"].clone()
        }),
        (format!("/api/v2/tokens/{erc20}/holders"), |v| v["items"][0]["address"].clone()),
        (format!("/api/v2/transactions/{paid:#x}"), |v| v["from"].clone()),
    ];
    for (path, pick) in &views {
        let mine = pick(&get_as(addr, path, Some(&alice)).await);
        assert_eq!(tag_names(&mine), ["deployer"], "{path} for the owner");
        let theirs = pick(&get_as(addr, path, Some(&bob)).await);
        assert_eq!(tag_names(&theirs), Vec::<String>::new(), "{path} for another account");
        let anonymous = call(addr, Method::GET, path, None, Value::Null).await;
        assert_eq!(tag_names(&pick(&anonymous.json())), Vec::<String>::new(), "{path} anonymously");
        assert!(!String::from_utf8_lossy(&anonymous.body).contains("deployer"));
        assert!(anonymous.headers.get("cache-control").is_none(), "anonymous answers stay cacheable");
        let owned = call(addr, Method::GET, path, Some(&alice), Value::Null).await;
        assert_eq!(owned.headers["cache-control"], "private, no-store", "{path}");
    }
    let detail = get_as(addr, &format!("/api/v2/transactions/{paid:#x}"), Some(&alice)).await;
    assert_eq!(detail["transaction_tag"], "payday");
    let detail = get_as(addr, &format!("/api/v2/transactions/{paid:#x}"), Some(&bob)).await;
    assert_eq!(detail["transaction_tag"], Value::Null);
    let search = get_as(addr, &format!("/api/v2/search?q={tagged}"), Some(&alice)).await;
    let hit = search["items"].as_array().unwrap().iter().find(|i| i["type"] == "address").unwrap().clone();
    assert_eq!(tag_names(&hit), ["deployer"]);
    let search = get_as(addr, &format!("/api/v2/search?q={tagged}"), None).await;
    assert!(!search.to_string().contains("deployer"));

    // WebSocket payloads carry nothing private.
    let mut ws = WsClient::connect(addr, "/socket/v2/websocket?vsn=2.0.0").await;
    let topic = format!("addresses:{tagged:#x}");
    ws.send(&json!(["1", "1", topic, "phx_join", {}])).await;
    assert_eq!(ws.frame().await[4]["status"], "ok");
    transfer(&node, tagged, a[2], 1).await;
    mine(&node, 1).await;
    let pushed = ws.until(Duration::from_secs(30), |f| f[3] == "transaction").await;
    assert!(!pushed.to_string().contains("deployer"), "{pushed}");
    assert_eq!(tag_names(&pushed[4]["transactions"][0]["from"]), Vec::<String>::new());

    // Rename, paginate, delete.
    let renamed = call(addr, Method::PUT, &item, Some(&alice), json!({"address_hash": tagged, "name": "boss"})).await;
    assert_eq!(renamed.json()["name"], "boss");
    for n in 1..=3u8 {
        let body = json!({"address_hash": Address::repeat_byte(n), "name": format!("t{n}")});
        assert_eq!(call(addr, Method::POST, tags, Some(&alice), body).await.status, 200);
    }
    let first = get_as(addr, &format!("{tags}?items_count=2"), Some(&alice)).await;
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let next = &first["next_page_params"];
    let rest = get_as(addr, &format!("{tags}?items_count=2&id={}", next["id"]), Some(&alice)).await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 2);
    assert_eq!(rest["next_page_params"], Value::Null);
    assert_eq!(rest["items"][1]["name"], "boss", "oldest last");
    assert_eq!(call(addr, Method::DELETE, &item, Some(&alice), Value::Null).await.status, 200);
    assert_eq!(call(addr, Method::GET, &item, Some(&alice), Value::Null).await.status, 404);
    let detail = get_as(addr, &format!("/api/v2/addresses/{tagged}"), Some(&alice)).await;
    assert_eq!(tag_names(&detail), Vec::<String>::new());
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchlists_name_addresses_and_list_their_transactions() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let (alice, bob) = alice_and_bob(&t, a[8], a[9]);
    let watched = transfer(&node, a[1], a[2], 5).await;
    let unrelated = transfer(&node, a[3], a[4], 6).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;

    let list = "/api/account/v2/user/watchlist";
    let entry = json!({
        "address_hash": a[1], "name": "friend",
        "notification_settings": {"native": {"incoming": true, "outcoming": false}, "ERC-20": {"incoming": true, "outcoming": true}},
        "notification_methods": {"email": false},
    });
    let created = call(addr, Method::POST, list, Some(&alice), entry.clone()).await;
    assert_eq!(created.status, 200, "{}", String::from_utf8_lossy(&created.body));
    let created = created.json();
    let id = created["id"].as_u64().unwrap();
    assert_eq!(created["notification_settings"]["native"], json!({"incoming": true, "outcoming": false}));
    assert_eq!(created["notification_settings"]["ERC-20"], json!({"incoming": true, "outcoming": true}));
    assert_eq!(created["notification_settings"]["ERC-721"], json!({"incoming": false, "outcoming": false}));
    let balance = alloy::providers::Provider::get_balance(&node, a[1]).await.unwrap();
    assert_eq!(created["address_balance"], balance.to_string(), "the watched address's balance, as the node says");
    assert_eq!((&created["tokens_count"], &created["tokens_overflow"]), (&json!(0), &json!(false)));
    assert_eq!(call(addr, Method::POST, list, Some(&alice), entry).await.status, 422, "one entry per address");
    assert_eq!(call(addr, Method::POST, list, None, json!({})).await.status, 401);

    let detail = get_as(addr, &format!("/api/v2/addresses/{}", a[1]), Some(&alice)).await;
    assert_eq!(detail["watchlist_names"], json!([{"display_name": "friend", "label": "friend"}]));
    assert_eq!(detail["watchlist_address_id"], id);
    let detail = get_as(addr, &format!("/api/v2/addresses/{}", a[1]), Some(&bob)).await;
    assert_eq!((&detail["watchlist_names"], &detail["watchlist_address_id"]), (&json!([]), &Value::Null));

    let page = get_as(addr, "/api/v2/transactions/watchlist", Some(&alice)).await;
    let hashes: Vec<&str> = page["items"].as_array().unwrap().iter().map(|t| t["hash"].as_str().unwrap()).collect();
    assert_eq!(hashes, [format!("{watched:#x}")], "only the watched address's transactions, not {unrelated:#x}");
    let main = get_as(addr, "/api/v2/main-page/transactions/watchlist", Some(&alice)).await;
    assert_eq!(main.as_array().unwrap().len(), 1);
    assert_eq!(main[0]["from"]["watchlist_names"][0]["display_name"], "friend");
    assert!(get_as(addr, "/api/v2/transactions/watchlist", Some(&bob)).await["items"].as_array().unwrap().is_empty());
    assert_eq!(call(addr, Method::GET, "/api/v2/transactions/watchlist", None, Value::Null).await.status, 401);

    let item = format!("{list}/{id}");
    let update = json!({"address_hash": a[1], "name": "pal", "notification_settings": {}});
    assert_eq!(call(addr, Method::PUT, &item, Some(&bob), update.clone()).await.status, 404);
    let updated = call(addr, Method::PUT, &item, Some(&alice), update).await.json();
    assert_eq!(
        (updated["name"].as_str(), &updated["notification_settings"]["native"]["incoming"]),
        (Some("pal"), &json!(false))
    );
    assert_eq!(get_as(addr, list, Some(&alice)).await["items"][0]["name"], "pal");
    assert_eq!(call(addr, Method::DELETE, &item, Some(&alice), Value::Null).await.status, 200);
    assert!(get_as(addr, "/api/v2/transactions/watchlist", Some(&alice)).await["items"].as_array().unwrap().is_empty());
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_get_their_own_higher_limit() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rate_limit.per_second = 1;
        c.api.rate_limit.burst = 6;
        // Refilled slowly, so that even a slow machine's requests drain the key-sized bucket below.
        c.api.auth.api_key_per_second = 1;
        c.api.auth.api_key_burst = 200;
    })
    .await;
    let addr = t.daemon.addr();
    let alice = Accounts::new(t.daemon.store().clone()).mint_token(Address::repeat_byte(8), "a", None, false).unwrap();
    let keys = "/api/account/v2/user/api_keys";
    let created = call(addr, Method::POST, keys, Some(&alice), json!({"name": "bot"})).await.json();
    let key = created["api_key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("rsk_") && key.len() == 85, "{key}");
    for n in 0..2 {
        assert_eq!(call(addr, Method::POST, keys, Some(&alice), json!({"name": format!("k{n}")})).await.status, 200);
    }
    let refused = call(addr, Method::POST, keys, Some(&alice), json!({"name": "one too many"})).await;
    assert_eq!(refused.status, 422, "a few keys per account");
    let with_key = format!("/api/v2/stats?apikey={key}");
    for _ in 0..20 {
        let reply = request(addr, Method::GET, &with_key, &[], String::new()).await;
        assert_eq!(reply.status, 200, "the key's own bucket");
        assert_eq!(reply.headers["x-ratelimit-limit"], "200");
    }
    let listed = call(addr, Method::GET, keys, Some(&alice), Value::Null).await.json();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    assert!(!listed.to_string().contains(&key[21..]), "the list never shows a key's secret");

    let wrong = format!("/api/v2/stats?apikey=rsk_{:016x}_{}", 7, "ab".repeat(32));
    let drain_ip = || async {
        poll_until("the invalid key's IP to be limited", Duration::from_secs(10), || async {
            let reply = request(addr, Method::GET, &wrong, &[], String::new()).await;
            (reply.status == 429).then_some(reply)
        })
        .await
    };
    let limited = drain_ip().await;
    assert_eq!(limited.headers["x-ratelimit-limit"], "6", "an invalid key gets the anonymous limit");
    let header_key = request(addr, Method::GET, "/api/v2/stats", &[("x-api-key", key.as_str())], String::new()).await;
    assert_eq!(header_key.status, 200, "the key is not limited with its IP");
    // The IP's bucket refills a token a second, so it may need draining again right before the request.
    let reply = crate::support::http::refused_once_drained(drain_ip, || {
        call(addr, Method::GET, keys, Some(&alice), Value::Null)
    })
    .await;
    assert_eq!(reply.status, 429, "the IP itself is limited");

    // Keys of several accounts from one IP share one key-sized bucket: free accounts do not multiply the limit.
    let bob = Accounts::new(t.daemon.store().clone()).create_api_key(Address::repeat_byte(9), "bob").unwrap().1;
    let (started, mut served) = (std::time::Instant::now(), 0u32);
    loop {
        let key = if served % 2 == 0 { &key } else { &bob };
        let reply = request(addr, Method::GET, &format!("/api/v2/stats?apikey={key}"), &[], String::new()).await;
        if reply.status == 429 {
            break;
        }
        served += 1;
        assert!(served < 2_000, "never limited");
    }
    let refilled = started.elapsed().as_secs_f64(); // one token a second
    assert!(f64::from(served) <= 200.0 + refilled + 1.0, "{served} requests in {:?}", started.elapsed());
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_are_named_by_their_listed_key() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let (alice, bob) = alice_and_bob(&t, Address::repeat_byte(1), Address::repeat_byte(2));
    let keys = "/api/account/v2/user/api_keys";
    let created = call(addr, Method::POST, keys, Some(&alice), json!({"name": "bot"})).await.json();
    call(addr, Method::POST, keys, Some(&alice), json!({"name": "other"})).await;
    let listed = get_as(addr, keys, Some(&alice)).await;
    let masked = listed.as_array().unwrap().iter().find(|k| k["id"] == created["id"]).unwrap().clone();
    let shown = masked["api_key"].as_str().unwrap();
    assert_eq!(shown[..21], created["api_key"].as_str().unwrap()[..21], "the listed key starts as the key does");
    // Blockscout's frontend puts the listed `api_key` in the path (percent-encoded) to edit or delete a key.
    let by_key = format!("{keys}/{}", shown.replace('…', "%E2%80%A6"));
    let renamed = call(addr, Method::PUT, &by_key, Some(&alice), json!({"name": "renamed"})).await.json();
    assert_eq!(
        (&renamed["id"], &renamed["api_key"], &renamed["name"]),
        (&masked["id"], &masked["api_key"], &json!("renamed"))
    );
    assert_eq!(call(addr, Method::DELETE, &by_key, Some(&bob), Value::Null).await.status, 404, "not bob's key");
    let whole = format!("{keys}/{}", created["api_key"].as_str().unwrap());
    assert_eq!(call(addr, Method::GET, &whole, Some(&alice), Value::Null).await.json()["name"], "renamed");
    assert_eq!(call(addr, Method::DELETE, &by_key, Some(&alice), Value::Null).await.status, 200);
    let left = get_as(addr, keys, Some(&alice)).await;
    assert_eq!(left.as_array().unwrap().len(), 1, "{left}");
    assert_ne!(left[0]["id"], masked["id"]);
    t.daemon.shutdown().await.unwrap();
}

/// Runs `rockscout dev` on `dir` until it prints its account token; returns the process, the address it serves
/// on and the token.
async fn dev_with_token(dir: &std::path::Path) -> (std::process::Child, SocketAddr, String) {
    use std::io::BufRead;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rockscout"))
        .args(["dev", "--no-traffic", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(dir)
        .env("ANVIL_BIN", anvil_bin())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn rockscout dev");
    let stdout = child.stdout.take().unwrap();
    let (lines, printed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let token = poll_until("dev mode to print its account token", Duration::from_secs(60), || {
        let line = printed.try_recv().ok();
        async move { Some(line?.split("Bearer ").nth(1)?.split_whitespace().next()?.to_owned()) }
    })
    .await;
    (child, format!("127.0.0.1:{port}").parse().unwrap(), token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_mode_prints_a_working_account_token() {
    let dir = tempfile::tempdir().unwrap();
    let first_dev_address: Address = DEV_KEY.parse::<PrivateKeySigner>().unwrap().address();
    let (mut child, addr, token) = dev_with_token(dir.path()).await;
    let info = get_as(addr, "/api/account/v2/user/info", Some(&token)).await;
    assert_eq!(info["address_hash"], first_dev_address.to_checksum(None));
    let tag = json!({"address_hash": first_dev_address, "name": "me"});
    let reply = call(addr, Method::POST, "/api/account/v2/user/tags/address", Some(&token), tag).await;
    assert_eq!(reply.status, 200, "the printed token writes right away");
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());

    // The next run on the same directory revokes the old token, prints a new one, and keeps the account's tag.
    let (mut child, addr, fresh) = dev_with_token(dir.path()).await;
    assert_ne!(fresh, token);
    let reply = call(addr, Method::GET, "/api/account/v2/user/info", Some(&token), Value::Null).await;
    assert_eq!(reply.status, 401);
    let tags = get_as(addr, "/api/account/v2/user/tags/address", Some(&fresh)).await;
    assert_eq!(tags["items"][0]["name"], "me");
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_abis_are_stored_per_account() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let (alice, bob) = alice_and_bob(&t, Address::repeat_byte(1), Address::repeat_byte(2));
    let list = "/api/account/v2/user/custom_abis";
    let contract = Address::repeat_byte(0xcc);
    let abi =
        json!([{"type": "function", "name": "poke", "inputs": [], "outputs": [], "stateMutability": "nonpayable"}]);
    let body = json!({"contract_address_hash": contract, "name": "demo", "abi": abi});
    assert_eq!(call(addr, Method::POST, list, None, body.clone()).await.status, 401);
    let created = call(addr, Method::POST, list, Some(&alice), body.clone()).await;
    assert_eq!(created.status, 200, "{}", String::from_utf8_lossy(&created.body));
    let created = created.json();
    assert_eq!((&created["abi"], &created["name"]), (&abi, &json!("demo")));
    assert_eq!(created["contract_address_hash"], contract.to_checksum(None));
    let item = format!("{list}/{}", created["id"]);
    assert_eq!(call(addr, Method::GET, &item, Some(&bob), Value::Null).await.status, 404);
    assert_eq!(call(addr, Method::POST, list, Some(&alice), body).await.status, 422, "one ABI per contract");
    for bad in [json!("not json"), json!({"type": "function"}), json!([]), json!([{"name": "no type"}])] {
        let body = json!({"contract_address_hash": Address::repeat_byte(0xdd), "name": "x", "abi": bad});
        let reply = call(addr, Method::POST, list, Some(&alice), body).await;
        assert_eq!(reply.status, 422, "{bad}");
        assert_eq!(reply.json()["errors"][0]["source"]["pointer"], "/abi");
    }
    let huge = json!([{"type": "function", "name": "x".repeat(200 << 10)}]);
    let body = json!({"contract_address_hash": Address::repeat_byte(0xdd), "name": "x", "abi": huge});
    assert_eq!(call(addr, Method::POST, list, Some(&alice), body).await.status, 413);
    // A bare array, as Blockscout's frontend reads it.
    assert_eq!(get_as(addr, list, Some(&alice)).await[0]["abi"], abi);
    assert_eq!(get_as(addr, list, Some(&bob)).await, json!([]));
    assert_eq!(call(addr, Method::DELETE, &item, Some(&alice), Value::Null).await.status, 200);
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_abi_decodes_its_owners_views_only() {
    use alloy::providers::Provider;
    use alloy::sol_types::{SolCall, SolEvent};
    use rockscout::dev::contracts::Demo;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    // No artifacts: the demo contract's calls are unknown selectors to everybody but the ABI's owner.
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let (alice, bob) = alice_and_bob(&t, a[8], a[9]);
    let deployed = deploy(&node, a[0], &Demo::BYTECODE).await;
    mine(&node, 1).await;
    let demo = created_address(&node, deployed).await;
    let poke = crate::support::call(&node, a[1], demo, Demo::pokeCall { note: "hi there".into() }.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let abi: Value = serde_json::from_str(include_str!("../../src/dev/contracts/Demo.json")).unwrap();
    let body = json!({"contract_address_hash": demo, "name": "demo", "abi": abi["abi"]});
    let created = call(addr, Method::POST, "/api/account/v2/user/custom_abis", Some(&alice), body).await;
    assert_eq!(created.status, 200, "{}", String::from_utf8_lossy(&created.body));

    let selector = format!("0x{}", alloy::hex::encode(Demo::pokeCall::SELECTOR));
    let tx_path = format!("/api/v2/transactions/{poke}");
    let logs_path = format!("/api/v2/transactions/{poke}/logs");
    let list_path = format!("/api/v2/addresses/{}/transactions", a[1]);
    // The owner: named and decoded in the detail, the lists and the logs.
    let mine = get_as(addr, &tx_path, Some(&alice)).await;
    assert_eq!(mine["method"], "poke");
    assert_eq!(mine["decoded_input"]["method_call"], "poke(string note)");
    assert_eq!(mine["decoded_input"]["parameters"][0]["value"], "hi there");
    let listed = get_as(addr, &list_path, Some(&alice)).await;
    assert_eq!(listed["items"][0]["method"], "poke");
    let logs = get_as(addr, &logs_path, Some(&alice)).await;
    let receipt = node.get_transaction_receipt(poke).await.unwrap().unwrap();
    let event = Demo::Poked::decode_log(&receipt.inner.logs()[0].inner).unwrap();
    assert_eq!(
        logs["items"][0]["decoded"]["method_call"],
        "Poked(address indexed by, uint256 indexed count, string note)"
    );
    let values: Vec<&Value> =
        logs["items"][0]["decoded"]["parameters"].as_array().unwrap().iter().map(|p| &p["value"]).collect();
    assert_eq!(values, [&json!(event.by.to_checksum(None)), &json!(event.count.to_string()), &json!(event.note)]);
    // Anybody else: the raw selector and nothing decoded.
    for (token, who) in [(None, "anonymous"), (Some(&bob), "another account")] {
        let seen = get_as(addr, &tx_path, token.map(String::as_str)).await;
        assert_eq!((&seen["method"], &seen["decoded_input"]), (&json!(selector), &Value::Null), "{who}");
        let logs = get_as(addr, &logs_path, token.map(String::as_str)).await;
        assert_eq!(logs["items"][0]["decoded"], Value::Null, "{who}");
    }
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchlist_events_go_live_to_their_owner_only() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let (alice, bob) = alice_and_bob(&t, a[8], a[9]);
    let entry = json!({"address_hash": a[1], "name": "friend"});
    assert_eq!(call(addr, Method::POST, "/api/account/v2/user/watchlist", Some(&alice), entry).await.status, 200);
    let topic = format!("watchlist:{}", a[8].to_checksum(None));

    for (token, who) in [(None, "anonymous"), (Some(&bob), "another account")] {
        let path = match token {
            Some(token) => format!("/socket/v2/websocket?vsn=2.0.0&token={token}"),
            None => "/socket/v2/websocket?vsn=2.0.0".to_owned(),
        };
        let mut ws = WsClient::connect(addr, &path).await;
        ws.send(&json!(["1", "1", topic, "phx_join", {}])).await;
        let reply = ws.frame().await;
        assert_eq!(reply[4], json!({"status": "error", "response": {"reason": "unauthorized"}}), "{who}");
    }
    // The sign-in cookie counts for the explorer's own origin only, not for a page of another one.
    let cookie = format!("_explorer_key={alice}");
    let host = addr.to_string();
    for (origin, status) in [(format!("http://{host}"), "ok"), ("https://evil.example".to_owned(), "error")] {
        let headers = [("cookie", cookie.as_str()), ("origin", origin.as_str())];
        let mut ws = WsClient::connect_with_headers(addr, "/socket/v2/websocket?vsn=2.0.0", &headers).await;
        ws.send(&json!(["1", "1", topic, "phx_join", {}])).await;
        assert_eq!(ws.frame().await[4]["status"], status, "{origin}");
    }
    let mut ws = WsClient::connect(addr, &format!("/socket/v2/websocket?vsn=2.0.0&token={alice}")).await;
    ws.send(&json!(["1", "1", topic, "phx_join", {}])).await;
    assert_eq!(ws.frame().await[4]["status"], "ok");
    transfer(&node, a[3], a[4], 1).await;
    let watched = transfer(&node, a[2], a[1], 2).await;
    mine(&node, 1).await;
    let pushed = ws.until(Duration::from_secs(30), |f| f[2] == topic.as_str() && f[3] == "transaction").await;
    let hashes: Vec<&str> =
        pushed[4]["transactions"].as_array().unwrap().iter().map(|t| t["hash"].as_str().unwrap()).collect();
    assert_eq!(hashes, [format!("{watched:#x}")], "only the watched address's transaction");

    // Revoking the token ends the feed: the next push for the topic closes the connection instead (1008).
    assert!(Accounts::new(t.daemon.store().clone()).revoke_tokens_of(a[8]).unwrap() > 0);
    transfer(&node, a[2], a[1], 3).await;
    mine(&node, 1).await;
    loop {
        match ws.recv(Duration::from_secs(30)).await {
            Received::Frame(f) => assert_ne!(f[2], topic.as_str(), "pushed after the token was revoked: {f}"),
            Received::Close(code) => break assert_eq!(code, 1008),
            Received::Ended => panic!("the connection ended without a close frame"),
        }
    }
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_data_survives_reorgs_and_chain_resets() {
    use alloy::providers::Provider;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |c| c.indexer.on_reset = rockscout::indexer::ResetPolicy::Reindex).await;
    let addr = t.daemon.addr();
    let token = Accounts::new(t.daemon.store().clone()).mint_token(a[8], "a", None, false).unwrap();
    let tags = "/api/account/v2/user/tags/address";
    let tag = json!({"address_hash": a[1], "name": "kept"});
    assert_eq!(call(addr, Method::POST, tags, Some(&token), tag).await.status, 200);
    transfer(&node, a[1], a[2], 1).await;
    mine(&node, 3).await;
    wait_synced(&t.daemon, &node).await;

    // A reorg takes the blocks with the tagged address's transaction away.
    let _: Value = node.raw_request("anvil_reorg".into(), json!([3, []])).await.unwrap();
    let reorged = poll_until("the reorg to be followed", Duration::from_secs(30), || async {
        let reorgs = get_as(addr, "/api/v2/blocks?type=reorg", None).await;
        (!reorgs["items"].as_array()?.is_empty()).then_some(())
    });
    reorged.await;
    assert_eq!(get_as(addr, tags, Some(&token)).await["items"][0]["name"], "kept");

    // A replaced chain wipes the index; the account and its tag stay.
    let _: Value = node.raw_request("anvil_reset".into(), json!([])).await.unwrap();
    let new_chain_id = node.get_chain_id().await.unwrap();
    mine(&node, 2).await;
    poll_until("the index to hold the new chain", Duration::from_secs(60), || async {
        let identity = t.daemon.store().reader().chain_identity().ok()??;
        (identity.0 == new_chain_id).then_some(())
    })
    .await;
    assert_eq!(get_as(addr, tags, Some(&token)).await["items"][0]["name"], "kept");
    let detail = get_as(addr, &format!("/api/v2/addresses/{}", a[1]), Some(&token)).await;
    assert_eq!(tag_names(&detail), ["kept"]);
    t.daemon.shutdown().await.unwrap();
}

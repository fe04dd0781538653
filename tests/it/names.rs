//! Names (`--name-registry`) against the real name contracts on anvil: registrations, renewals, address changes,
//! transfers and reverse records; what search and address objects show equals what the contracts answer over
//! `eth_call`; a reverse record that lies is not shown; a reorg that removes a registration removes the name; Unicode
//! names are normalised with UTS-46 and invalid ones get a 422.

use crate::support::http::{self, percent_encode};
use crate::support::*;
use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::types::TransactionReceipt;
use alloy::signers::local::PrivateKeySigner;
use rockscout::api::json::iso_timestamp;
use rockscout::chain::names::{namehash, reverse_name};
use rockscout::dev::anvil::Anvil;
use rockscout::dev::contracts::{NameRegistrar, NameRegistry, NameResolver, ReverseRegistrar};
use rockscout::dev::names::{deploy, register, DevNameService};
use serde_json::{json, Value};
use std::net::SocketAddr;

/// What the contracts answer for `name`: the registry's resolver's `addr(node)`.
async fn resolved_on_chain(anvil: &Anvil, service: &DevNameService, name: &str) -> Option<Address> {
    let node = provider(&anvil.http_url());
    let resolver = NameRegistry::new(service.registry, &node).resolver(namehash(name)).call().await.unwrap();
    if resolver.is_zero() {
        return None;
    }
    let address = NameResolver::new(resolver, &node).addr(namehash(name)).call().await.unwrap();
    (!address.is_zero()).then_some(address)
}

/// What the contracts answer for `address`'s reverse record: `name(node)` of `<address>.addr.reverse`.
async fn reverse_on_chain(anvil: &Anvil, service: &DevNameService, address: Address) -> String {
    let node = provider(&anvil.http_url());
    let reverse = namehash(&reverse_name(&address));
    assert_eq!(ReverseRegistrar::new(service.reverse, &node).node(address).call().await.unwrap(), reverse);
    NameResolver::new(service.resolver, &node).name(reverse).call().await.unwrap()
}

/// Sends a transaction built by `build` from `signer`, mines it and gives its receipt.
async fn send_as<F, Fut>(anvil: &Anvil, signer: &PrivateKeySigner, build: F) -> TransactionReceipt
where
    F: FnOnce(alloy::providers::DynProvider) -> Fut,
    Fut: std::future::Future<Output = B256>,
{
    let wallet = EthereumWallet::new(signer.clone());
    let node = ProviderBuilder::new().wallet(wallet).connect_http(anvil.http_url().parse().unwrap()).erased();
    let hash = build(node.clone()).await;
    mine(&provider(&anvil.http_url()), 1).await;
    let receipt = node.get_transaction_receipt(hash).await.unwrap().expect("mined");
    assert!(receipt.status(), "transaction {hash} succeeded");
    receipt
}

/// The name service deployed with `labels` for the first accounts, and a daemon that follows it, synced.
async fn named_chain(labels: &[&str]) -> (Anvil, Vec<PrivateKeySigner>, DevNameService, TestDaemon) {
    let anvil = start_anvil();
    let signers = anvil.signers();
    let service = deploy(&anvil.http_url(), &signers, labels).await.expect("name service deployed");
    let t = start_daemon(&anvil.http_url(), |c| c.name_registry = Some(service.registry)).await;
    wait_synced(&t.daemon, &provider(&anvil.http_url())).await;
    (anvil, signers, service, t)
}

fn ens_items(items: &Value) -> Vec<(String, String)> {
    items
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "ens_domain")
        .map(|i| (i["ens_info"]["name"].as_str().unwrap().to_owned(), i["address_hash"].as_str().unwrap().to_owned()))
        .collect()
}

async fn search_names(addr: SocketAddr, q: &str) -> Vec<(String, String)> {
    ens_items(&http::get_json(addr, &format!("/api/v2/search?q={}", percent_encode(q))).await["items"])
}

/// `ens_domain_name` of `address` in the address object of `/addresses/:a` and in its transaction list.
async fn shown_names(addr: SocketAddr, address: Address) -> (Value, Value) {
    let detail = http::get_json(addr, &format!("/api/v2/addresses/{address}")).await;
    let txs = http::get_json(addr, &format!("/api/v2/addresses/{address}/transactions")).await;
    let from_list = txs["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["from"]["hash"] == address.to_checksum(None))
        .map(|t| t["from"]["ens_domain_name"].clone())
        .expect("a transaction sent by the address");
    (detail["ens_domain_name"].clone(), from_list)
}

/// Every row of the seven name tables, as text.
fn name_tables(t: &TestDaemon) -> Vec<String> {
    use rockscout::store::tables::{
        AddressNames, NameLabels, NameSearch, Names, ResolverAddrs, ResolverNames, ReverseNames,
    };
    let reader = t.daemon.store().reader();
    let mut rows = Vec::new();
    rows.extend(reader.rows::<Names>().map(|r| format!("names {:?}", r.unwrap())));
    rows.extend(reader.rows::<NameLabels>().map(|r| format!("name_labels {:?}", r.unwrap())));
    rows.extend(reader.rows::<NameSearch>().map(|r| format!("name_search {:?}", r.unwrap())));
    rows.extend(reader.rows::<ReverseNames>().map(|r| format!("reverse_names {:?}", r.unwrap())));
    rows.extend(reader.rows::<AddressNames>().map(|r| format!("address_names {:?}", r.unwrap())));
    rows.extend(reader.rows::<ResolverAddrs>().map(|r| format!("resolver_addrs {:?}", r.unwrap())));
    rows.extend(reader.rows::<ResolverNames>().map(|r| format!("resolver_names {:?}", r.unwrap())));
    rows
}

fn checksum(a: Address) -> String {
    a.to_checksum(None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_follow_registrations_changes_transfers_and_reverse_records() {
    let (anvil, signers, service, t) = named_chain(&["alice", "bob"]).await;
    let node = provider(&anvil.http_url());
    let addr = t.daemon.addr();
    let [alice, bob, carol, dave] = [0, 1, 2, 3].map(|i| signers[i].address());

    // Registered names: search and address objects agree with the contracts.
    assert_eq!(resolved_on_chain(&anvil, &service, "alice.dev").await, Some(alice));
    assert_eq!(search_names(addr, "alice.dev").await, vec![("alice.dev".into(), checksum(alice))]);
    let hit = &http::get_json(addr, "/api/v2/search/quick?q=alice.dev").await[0];
    assert_eq!(hit["type"], "ens_domain");
    assert_eq!(hit["priority"], 4);
    assert_eq!(hit["ens_info"]["names_count"], 1);
    let expiry_on_chain = || async {
        let label = alloy::primitives::keccak256("alice");
        let expires = NameRegistrar::new(service.registrar, &node).expires(label).call().await.unwrap();
        json!(iso_timestamp(expires.to::<u64>()))
    };
    let expiry_shown = || async {
        http::get_json(addr, "/api/v2/search/quick?q=alice.dev").await[0]["ens_info"]["expiry_date"].clone()
    };
    assert_eq!(hit["ens_info"]["expiry_date"], expiry_on_chain().await);
    // Anyone may renew a name (bob renews alice's): the registrar's renewal event moves the expiry shown.
    let registrar = service.registrar;
    send_as(&anvil, &signers[1], |p| async move {
        let registrar = NameRegistrar::new(registrar, p);
        *registrar.renew("alice".into(), U256::from(86_400 * 365)).send().await.unwrap().tx_hash()
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    assert_ne!(expiry_on_chain().await, hit["ens_info"]["expiry_date"], "renewed on chain");
    assert_eq!(expiry_shown().await, expiry_on_chain().await);
    let page = http::get(addr, "/search-results?q=alic").await;
    let page = String::from_utf8_lossy(&page.body);
    assert!(
        page.contains("ens_domain: ") && page.contains("alice.dev</li>"),
        "the results page names the name: {page}"
    );
    assert_eq!(reverse_on_chain(&anvil, &service, alice).await, "alice.dev");
    assert_eq!(shown_names(addr, alice).await, (json!("alice.dev"), json!("alice.dev")));
    assert_eq!(shown_names(addr, bob).await, (json!("bob.dev"), json!("bob.dev")));
    // The richest-addresses list names them too.
    let top = http::get_json(addr, "/api/v2/addresses").await;
    let listed = |who: Address| {
        top["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["hash"] == checksum(who))
            .map(|i| i["ens_domain_name"].clone())
    };
    assert_eq!((listed(alice), listed(bob)), (Some(json!("alice.dev")), Some(json!("bob.dev"))), "{top}");
    let by_name = http::get_json(addr, "/api/v2/addresses/bob.dev").await;
    assert_eq!(by_name["hash"], checksum(bob));
    let redirect = http::get_json(addr, "/api/v2/search/check-redirect?q=bob.dev").await;
    assert_eq!(redirect, json!({"redirect": true, "type": "address", "parameter": checksum(bob)}));
    // A prefix finds the name; a prefix of nothing finds none; the quick search needs three characters.
    let found = ens_items(&http::get_json(addr, "/api/v2/search/quick?q=bob").await);
    assert_eq!(found, vec![("bob.dev".into(), checksum(bob))]);
    assert_eq!(http::get_json(addr, "/api/v2/search/quick?q=b").await, json!([]));
    assert!(search_names(addr, "zed").await.is_empty());

    // Carol's reverse record claims bob.dev, which points at bob: a lie, not shown.
    let reverse = service.reverse;
    send_as(&anvil, &signers[2], |p| async move {
        *ReverseRegistrar::new(reverse, p).setName("bob.dev".into()).send().await.unwrap().tx_hash()
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    assert_eq!(reverse_on_chain(&anvil, &service, carol).await, "bob.dev");
    assert_eq!(shown_names(addr, carol).await, (Value::Null, Value::Null));

    // Alice points alice.dev at carol: the forward record moves, alice's reverse record becomes a lie.
    let resolver = service.resolver;
    send_as(&anvil, &signers[0], |p| async move {
        *NameResolver::new(resolver, p).setAddr(namehash("alice.dev"), carol).send().await.unwrap().tx_hash()
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    assert_eq!(resolved_on_chain(&anvil, &service, "alice.dev").await, Some(carol));
    assert_eq!(search_names(addr, "alice.dev").await, vec![("alice.dev".into(), checksum(carol))]);
    assert_eq!(shown_names(addr, alice).await, (Value::Null, Value::Null));
    assert_eq!(http::get_json(addr, "/api/v2/addresses/alice.dev").await["hash"], checksum(carol));
    // Carol claims alice.dev now: true, so shown.
    send_as(&anvil, &signers[2], |p| async move {
        *ReverseRegistrar::new(reverse, p).setName("alice.dev".into()).send().await.unwrap().tx_hash()
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    assert_eq!(shown_names(addr, carol).await, (json!("alice.dev"), json!("alice.dev")));

    // Alice transfers alice.dev to dave: the indexed owner is the registry's, and dave can now set records.
    let registry = service.registry;
    send_as(&anvil, &signers[0], |p| async move {
        *NameRegistry::new(registry, p).setOwner(namehash("alice.dev"), dave).send().await.unwrap().tx_hash()
    })
    .await;
    send_as(&anvil, &signers[3], |p| async move {
        *NameResolver::new(resolver, p).setAddr(namehash("alice.dev"), dave).send().await.unwrap().tx_hash()
    })
    .await;
    wait_synced(&t.daemon, &node).await;
    let owner = NameRegistry::new(registry, &node).owner(namehash("alice.dev")).call().await.unwrap();
    assert_eq!(owner, dave);
    let record = t.daemon.store().reader().name_record(namehash("alice.dev")).unwrap().expect("indexed");
    assert_eq!((record.owner, record.resolved), (dave, Some(dave)));
    assert_eq!(search_names(addr, "alice.dev").await, vec![("alice.dev".into(), checksum(dave))]);
    assert_eq!(shown_names(addr, carol).await, (Value::Null, Value::Null), "carol's claim is a lie again");

    // Dave sets bob on a second resolver, then points alice.dev at it: the record it already holds counts at once;
    // back at the first resolver, its record (dave) counts again. Each time as the contracts answer.
    let deployed = send_as(&anvil, &signers[3], |p| async move {
        *NameResolver::deploy_builder(p, registry).send().await.unwrap().tx_hash()
    })
    .await;
    let second = deployed.contract_address.expect("a resolver deployed");
    send_as(&anvil, &signers[3], |p| async move {
        *NameResolver::new(second, p).setAddr(namehash("alice.dev"), bob).send().await.unwrap().tx_hash()
    })
    .await;
    // Bob's names are then bob.dev and alice.dev; dave's alice.dev alone.
    for (resolver, expected, names) in [(second, bob, 2), (resolver, dave, 1)] {
        send_as(&anvil, &signers[3], |p| async move {
            let registry = NameRegistry::new(registry, p);
            *registry.setResolver(namehash("alice.dev"), resolver).send().await.unwrap().tx_hash()
        })
        .await;
        wait_synced(&t.daemon, &node).await;
        assert_eq!(resolved_on_chain(&anvil, &service, "alice.dev").await, Some(expected));
        assert_eq!(search_names(addr, "alice.dev").await, vec![("alice.dev".into(), checksum(expected))]);
        let record = t.daemon.store().reader().name_record(namehash("alice.dev")).unwrap().expect("indexed");
        assert_eq!((record.resolver, record.resolved), (resolver, Some(expected)), "the index, not a live lookup");
        let count =
            http::get_json(addr, "/api/v2/search/quick?q=alice.dev").await[0]["ens_info"]["names_count"].clone();
        assert_eq!(count, names, "alice.dev is counted among {expected}'s names");
    }

    // Unicode: a label registered in its normalised form is found under any UTS-46 spelling of it.
    register(&anvil.http_url(), &service, bob, "münchen", &signers).await.unwrap();
    wait_synced(&t.daemon, &node).await;
    assert_eq!(resolved_on_chain(&anvil, &service, "münchen.dev").await, Some(bob));
    for spelling in ["münchen.dev", "MÜNCHEN.DEV", "xn--mnchen-3ya.dev"] {
        assert_eq!(search_names(addr, spelling).await, vec![("münchen.dev".into(), checksum(bob))], "{spelling}");
        let detail = http::get_json(addr, &format!("/api/v2/addresses/{}", percent_encode(spelling))).await;
        assert_eq!(detail["hash"], checksum(bob), "{spelling}");
    }
    assert_eq!(shown_names(addr, bob).await, (json!("münchen.dev"), json!("münchen.dev")), "the newest reverse");
    // A claim in another than its normalised form is another node (`DAVE.dev` is not `dave.dev`), and true on chain:
    // shown, it would pass for the name `dave.dev`. ENS clients show no such primary name; neither path does.
    register(&anvil.http_url(), &service, dave, "DAVE", &signers).await.unwrap();
    wait_synced(&t.daemon, &node).await;
    assert_eq!(resolved_on_chain(&anvil, &service, "DAVE.dev").await, Some(dave));
    assert_eq!(reverse_on_chain(&anvil, &service, dave).await, "DAVE.dev");
    assert_eq!(shown_names(addr, dave).await, (Value::Null, Value::Null));
    // A name may start with `0x`: it is looked up as a name, not refused as a malformed address.
    register(&anvil.http_url(), &service, carol, "0xsplits", &signers).await.unwrap();
    wait_synced(&t.daemon, &node).await;
    assert_eq!(resolved_on_chain(&anvil, &service, "0xsplits.dev").await, Some(carol));
    assert_eq!(http::get_json(addr, "/api/v2/addresses/0xsplits.dev").await["hash"], checksum(carol));
    let redirect = http::get_json(addr, "/api/v2/search/check-redirect?q=0xsplits.dev").await;
    assert_eq!(redirect, json!({"redirect": true, "type": "address", "parameter": checksum(carol)}));
    assert_eq!(http::get(addr, "/api/v2/addresses/0x12345").await.status, 422, "no dot: a malformed address");
    // A name UTS-46 rejects is a clear 422; an unregistered one a 404.
    let bad = http::get(addr, "/api/v2/addresses/bad_name.dev").await;
    assert_eq!(bad.status, 422);
    assert_eq!(bad.json()["errors"][0]["source"]["pointer"], "/address_hash_param");
    assert_eq!(http::get(addr, "/api/v2/addresses/nobody.dev").await.status, 404);
    drop(t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reorg_that_removes_a_registration_removes_the_name() {
    let (anvil, signers, service, t) = named_chain(&["alice"]).await;
    let node = provider(&anvil.http_url());
    let addr = t.daemon.addr();
    let erin = signers[4].address();
    let before = name_tables(&t);
    assert!(before.iter().any(|r| r.starts_with("names ")), "alice.dev's rows: {before:?}");
    let snapshot: U256 = node.raw_request("evm_snapshot".into(), json!([])).await.unwrap();
    register(&anvil.http_url(), &service, erin, "erin", &signers).await.unwrap();
    wait_synced(&t.daemon, &node).await;
    assert_eq!(search_names(addr, "erin.dev").await, vec![("erin.dev".into(), checksum(erin))]);
    assert_eq!(shown_names(addr, erin).await, (json!("erin.dev"), json!("erin.dev")));

    let registered_height = node.get_block_number().await.unwrap();
    let reverted: bool = node.raw_request("evm_revert".into(), json!([snapshot])).await.unwrap();
    assert!(reverted);
    // The new branch: erin sends ether instead, over as many blocks as the registration took, so the indexed tip
    // ends at the same height (the names asked for at the old tip must not be served from the cache).
    let base = node.get_block_number().await.unwrap();
    assert!(registered_height > base);
    for i in 0..registered_height - base {
        transfer(&node, erin, Address::repeat_byte(0xe0 + i as u8), 1 + i).await;
        mine(&node, 1).await;
    }
    assert_eq!(node.get_block_number().await.unwrap(), registered_height);
    wait_synced(&t.daemon, &node).await;
    assert_eq!(resolved_on_chain(&anvil, &service, "erin.dev").await, None);
    assert!(search_names(addr, "erin").await.is_empty());
    assert_eq!(http::get(addr, "/api/v2/addresses/erin.dev").await.status, 404);
    assert_eq!(shown_names(addr, erin).await, (Value::Null, Value::Null));
    let store = t.daemon.store();
    assert_eq!(store.reader().name_record(namehash("erin.dev")).unwrap(), None, "the derived row left with its block");
    assert_eq!(store.reader().primary_names(&[erin]).unwrap().get(&erin), None);
    assert_eq!(name_tables(&t), before, "every name table is as before the registration");
    // alice.dev, registered before the snapshot, stays.
    assert_eq!(search_names(addr, "alice.dev").await, vec![("alice.dev".into(), checksum(signers[0].address()))]);

    // Search pages: two tokens and three names start with "al", and three names without an address record (not
    // shown) sort before them; whatever the page size, the pages give the tokens, then the names in name order,
    // each once.
    for label in ["alicia", "alex", "alan", "alana", "alanb"] {
        register(&anvil.http_url(), &service, erin, label, &signers).await.unwrap();
    }
    let resolver = service.resolver;
    for unset in ["alan.dev", "alana.dev", "alanb.dev"] {
        send_as(&anvil, &signers[4], |p| async move {
            *NameResolver::new(resolver, p).setAddr(namehash(unset), Address::ZERO).send().await.unwrap().tx_hash()
        })
        .await;
    }
    let long = "Long token name that goes on and on";
    for symbol in ["ALTB", "ALTA", &format!("{long} one"), &format!("{long} two")] {
        crate::parity_events::deploy_token(&node, erin, symbol, U256::from(1)).await;
        mine(&node, 1).await;
    }
    wait_synced(&t.daemon, &node).await;
    poll_until("the tokens' metadata", std::time::Duration::from_secs(30), || async {
        let (alt, long) =
            (http::get_json(addr, "/api/v2/tokens?q=alt").await, http::get_json(addr, "/api/v2/tokens?q=long").await);
        (alt["items"].as_array()?.len() == 2 && long["items"].as_array()?.len() == 2).then_some(())
    })
    .await;
    // A query past the 32 bytes a search key holds is compared whole.
    for (q, found) in [(format!("{long} one"), 1), (long.to_owned(), 2)] {
        let hits = http::get_json(addr, &format!("/api/v2/search?q={}", percent_encode(&q))).await;
        assert_eq!(hits["items"].as_array().unwrap().len(), found, "{q}: {hits}");
    }
    let want = ["token ALTA", "token ALTB", "ens_domain alex.dev", "ens_domain alice.dev", "ens_domain alicia.dev"];
    for size in [1, 2, 3, 50] {
        let hits = http::walk(addr, &format!("/api/v2/search?q=al&items_count={size}")).await;
        let got: Vec<String> = hits
            .iter()
            .map(|h| {
                format!(
                    "{} {}",
                    h["type"].as_str().unwrap(),
                    h["name"].as_str().or(h["ens_info"]["name"].as_str()).unwrap()
                )
            })
            .collect();
        assert_eq!(got, want, "pages of {size}");
    }

    // A number of three digits names a block and tokens: the block takes one of the first page's places.
    node.raw_request::<_, Value>("anvil_mine".into(), json!([100])).await.unwrap();
    for symbol in ["100b", "100a"] {
        crate::parity_events::deploy_token(&node, erin, symbol, U256::from(1)).await;
        mine(&node, 1).await;
    }
    wait_synced(&t.daemon, &node).await;
    poll_until("the numbered tokens' metadata", std::time::Duration::from_secs(30), || async {
        (http::get_json(addr, "/api/v2/tokens?q=100").await["items"].as_array()?.len() == 2).then_some(())
    })
    .await;
    let first = http::get_json(addr, "/api/v2/search?q=100&items_count=2").await;
    assert_eq!(first["items"].as_array().unwrap().len(), 2, "{first}");
    let walked: Vec<String> = http::walk(addr, "/api/v2/search?q=100&items_count=2")
        .await
        .iter()
        .map(|h| match h["block_number"].as_u64() {
            Some(number) => format!("block {number}"),
            None => format!("{} {}", h["type"].as_str().unwrap(), h["symbol"].as_str().unwrap()),
        })
        .collect();
    assert_eq!(walked, ["block 100", "token 100a", "token 100b"]);

    // Fifty tokens named like alice.dev fill the first page of hits: the name itself still leads the redirect and
    // is among the quick hits.
    let alice = checksum(signers[0].address());
    for _ in 0..50 {
        crate::parity_events::deploy_token(&node, erin, "alice.dev", U256::from(1)).await;
    }
    mine(&node, 50).await;
    wait_synced(&t.daemon, &node).await;
    poll_until("fifty alice.dev tokens", std::time::Duration::from_secs(60), || async {
        let found = http::get_json(addr, "/api/v2/search?q=alice.dev").await;
        let tokens = found["items"].as_array()?.iter().filter(|h| h["type"] == "token").count();
        (tokens == 50).then_some(())
    })
    .await;
    let redirect = http::get_json(addr, "/api/v2/search/check-redirect?q=alice.dev").await;
    assert_eq!(redirect, json!({"redirect": true, "type": "address", "parameter": alice}));
    let quick = http::get_json(addr, "/api/v2/search/quick?q=alice.dev").await;
    assert_eq!(quick.as_array().unwrap().len(), 50, "{quick}");
    assert_eq!(ens_items(&quick), vec![("alice.dev".into(), alice.clone())]);
}

/// `rockscout dev` names its first accounts from the start: `alice.dev` is the first dev account, forward and
/// reverse, and search finds the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_mode_names_the_dev_accounts() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    /// Kills the devnet if the test fails before stopping it.
    struct Devnet(std::process::Child);
    impl Drop for Devnet {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_rockscout"))
        .args(["dev", "--listen", &format!("127.0.0.1:{port}"), "--poll-interval-ms", "50", "--no-traffic"])
        .arg("--data-dir")
        .arg(dir.path())
        .env("ANVIL_BIN", anvil_bin())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map(Devnet)
        .expect("spawn rockscout dev");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // anvil's first development account.
    let alice: Address = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".parse().unwrap();
    // The index catches up with the name set-up block by block: the reverse record follows the registration.
    let detail =
        poll_until("alice.dev to resolve, forward and reverse", std::time::Duration::from_secs(60), || async {
            tokio::net::TcpStream::connect(addr).await.ok()?;
            let reply = http::get(addr, "/api/v2/addresses/alice.dev").await;
            (reply.status == 200 && reply.json()["ens_domain_name"] == "alice.dev").then(|| reply.json())
        })
        .await;
    wait_synced_over_http(addr).await;
    assert_eq!(detail["hash"], checksum(alice));
    assert_eq!(detail["ens_domain_name"], "alice.dev");
    let mut names = Vec::new();
    for prefix in ["bob", "carol", "dave"] {
        names.extend(search_names(addr, prefix).await.into_iter().map(|(name, _)| name));
    }
    assert_eq!(names, ["bob.dev", "carol.dev", "dave.dev"]);
    let txs = http::get_json(addr, &format!("/api/v2/addresses/{alice}/transactions")).await;
    assert!(txs["items"].as_array().unwrap().iter().any(|t| t["from"]["ens_domain_name"] == "alice.dev"));
    Command::new("kill").args(["-INT", &child.0.id().to_string()]).status().unwrap();
    assert!(child.0.wait().unwrap().success());
}

/// Waits until the devnet's index holds dave.dev, the last name `rockscout dev` sets up.
async fn wait_synced_over_http(addr: SocketAddr) {
    poll_until("the last dev name to be indexed", std::time::Duration::from_secs(60), || async {
        (!search_names(addr, "dave.dev").await.is_empty()).then_some(())
    })
    .await;
}

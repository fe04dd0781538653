//! Blockscout parity routes built from the index: transaction summaries (and, below, advanced filters and CSV
//! exports), with values compared with what the node holds.

use crate::support::http::get_json as get;
use crate::support::*;
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::sol_types::{SolCall, SolConstructor};
use rockscout::dev::contracts::{DemoNft, DemoToken};
use serde_json::{json, Value};
use std::time::Duration;

async fn deploy_token(
    node: &RootProvider,
    from: Address,
    symbol: &str,
    supply: U256,
) -> (Address, alloy::primitives::B256) {
    let mut code = DemoToken::BYTECODE.to_vec();
    code.extend(
        DemoToken::constructorCall { name_: "Sum".into(), symbol_: symbol.into(), initialSupply: supply }.abi_encode(),
    );
    let hash = deploy(node, from, &Bytes::from(code)).await;
    mine(node, 1).await;
    (created_address(node, hash).await, hash)
}

/// The address variable's checksummed hash.
fn var_address(summary: &Value, name: &str) -> Value {
    assert_eq!(summary["summary_template_variables"][name]["type"], "address", "{name} in {summary}");
    summary["summary_template_variables"][name]["value"]["hash"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_summaries_describe_creations_calls_native_and_token_transfers() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let unit = U256::from(10u64).pow(U256::from(18));
    // The symbol looks like a template variable: it must stay data.
    let (token, creation) = deploy_token(&node, a[0], "{sender}", unit * U256::from(1000)).await;
    let nft = {
        let mut code = DemoNft::BYTECODE.to_vec();
        code.extend(DemoNft::constructorCall { name_: "Pic".into(), symbol_: "PIC".into() }.abi_encode());
        let hash = deploy(&node, a[0], &Bytes::from(code)).await;
        mine(&node, 1).await;
        created_address(&node, hash).await
    };
    let sent = call(
        &node,
        a[0],
        token,
        DemoToken::transferCall { to: a[1], value: unit * U256::from(3) / U256::from(2) }.abi_encode(),
    )
    .await;
    let native =
        send(&node, json!({"from": a[2], "to": a[3], "value": U256::from(25u64) * unit / U256::from(100)})).await;
    let minted = call(&node, a[0], nft, DemoNft::mintCall { to: a[4] }.abi_encode()).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    // Token metadata is fetched behind the head.
    poll_until("the token's symbol", Duration::from_secs(30), || async {
        let token = get(addr, &format!("/api/v2/tokens/{token}")).await;
        (token["symbol"] == "{sender}").then_some(())
    })
    .await;
    let summaries = |hash: alloy::primitives::B256| async move {
        let answer = get(addr, &format!("/api/v2/transactions/{hash:#x}/summary")).await;
        assert_eq!(answer["success"], true, "{answer}");
        answer["data"]["summaries"].as_array().unwrap().clone()
    };

    // The creation: who deployed which contract (the receipt's address).
    let created = summaries(creation).await;
    assert_eq!(created.len(), 2, "deployment and the initial mint: {created:?}");
    assert_eq!(created[0]["summary_template"], "{sender} deployed contract {contract}");
    assert_eq!(var_address(&created[0], "contract"), json!(token.to_checksum(None)));
    assert_eq!(var_address(&created[0], "sender"), json!(a[0].to_checksum(None)));
    assert_eq!(created[1]["summary_template"], "Mint {amount} {token} to {receiver}");
    assert_eq!(created[1]["summary_template_variables"]["amount"], json!({"type": "currency", "value": "1000"}));

    // A token transfer: the call by its method name, then the amount in the token's decimals (1.5).
    let transfer = summaries(sent).await;
    assert_eq!(transfer[0]["summary_template"], "{sender} called {method} on {receiver}");
    assert_eq!(transfer[0]["summary_template_variables"]["method"], json!({"type": "method", "value": "transfer"}));
    assert_eq!(var_address(&transfer[0], "receiver"), json!(token.to_checksum(None)));
    assert_eq!(transfer[1]["summary_template"], "Transfer {amount} {token} from {sender} to {receiver}");
    let vars = &transfer[1]["summary_template_variables"];
    assert_eq!(vars["amount"]["value"], "1.5");
    assert_eq!(vars["token"]["type"], "token");
    assert_eq!(vars["token"]["value"]["symbol"], "{sender}", "the symbol stays a variable's value");
    assert_eq!(vars["token"]["value"]["address_hash"], json!(token.to_checksum(None)));
    assert_eq!(var_address(&transfer[1], "receiver"), json!(a[1].to_checksum(None)));
    let balance = node
        .raw_request::<_, Bytes>(
            "eth_call".into(),
            json!([{"to": token, "data": Bytes::from(DemoToken::balanceOfCall::new((a[1],)).abi_encode())}, "latest"]),
        )
        .await
        .unwrap();
    assert_eq!(U256::from_be_slice(&balance), unit * U256::from(3) / U256::from(2), "the node agrees on 1.5 tokens");

    // A native transfer: the value in ether.
    let plain = summaries(native).await;
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert_eq!(plain[0]["summary_template"], "Transfer {amount} {native} from {sender} to {receiver}");
    assert_eq!(plain[0]["summary_template_variables"]["amount"]["value"], "0.25");
    let on_node: Value = node.raw_request("eth_getTransactionByHash".into(), json!([native])).await.unwrap();
    assert_eq!(on_node["value"].as_str().unwrap().parse::<U256>().unwrap(), unit / U256::from(4));

    // An NFT mint: the token id, no amount.
    let mint = summaries(minted).await;
    let last = mint.last().unwrap();
    assert_eq!(last["summary_template"], "Mint {token} #{token_id} to {receiver}");
    assert_eq!(last["summary_template_variables"]["token_id"]["type"], "string");
    assert_eq!(var_address(last, "receiver"), json!(a[4].to_checksum(None)));

    // Unknown and malformed hashes.
    let missing = http::get(addr, &format!("/api/v2/transactions/0x{}/summary", "ab".repeat(32))).await;
    assert_eq!(missing.status, 404);
    let bad = http::get(addr, "/api/v2/transactions/0x12/summary").await;
    assert_eq!(bad.status, 422);
    t.daemon.shutdown().await.unwrap();
}

/// `balanceOf(holder)` on the node.
async fn balance_of(node: &RootProvider, token: Address, holder: Address) -> U256 {
    let data = Bytes::from(DemoToken::balanceOfCall::new((holder,)).abi_encode());
    let answer: Bytes =
        node.raw_request("eth_call".into(), json!([{"to": token, "data": data}, "latest"])).await.unwrap();
    U256::from_be_slice(&answer)
}

fn kinds(items: &[Value]) -> Vec<String> {
    items.iter().map(|i| i["type"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_filters_select_rows_by_type_token_address_method_amount_and_age() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let unit = U256::from(10u64).pow(U256::from(18));
    let (gold, _) = deploy_token(&node, a[0], "GLD", unit * U256::from(1000)).await;
    let (iron, _) = deploy_token(&node, a[5], "FE", unit * U256::from(50)).await;
    let move_gold =
        |to: Address, value: U256| call(&node, a[0], gold, DemoToken::transferCall { to, value }.abi_encode());
    move_gold(a[1], unit * U256::from(3) / U256::from(2)).await;
    move_gold(a[2], unit * U256::from(3)).await;
    call(&node, a[5], iron, DemoToken::transferCall { to: a[1], value: unit }.abi_encode()).await;
    send(&node, json!({"from": a[2], "to": a[3], "value": unit / U256::from(4)})).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    poll_until("token decimals", Duration::from_secs(30), || async {
        let token = get(addr, &format!("/api/v2/tokens/{gold}")).await;
        (token["decimals"] == "18").then_some(())
    })
    .await;

    // Everything: 6 transactions and 5 transfers (two mints, three moves), newest first, one page or many.
    let all = get(addr, "/api/v2/advanced-filters?items_count=100").await;
    let items = all["items"].as_array().unwrap().clone();
    assert_eq!(all["next_page_params"], Value::Null);
    assert_eq!(items.len(), 11, "{:#?}", kinds(&items));
    assert_eq!(items[0]["type"], "coin_transfer");
    assert_eq!(items[0]["value"], (unit / U256::from(4)).to_string());
    let walked = http::walk(addr, "/api/v2/advanced-filters?items_count=2").await;
    assert_eq!(walked, items, "pages of 2 follow the cursor through the same rows");

    // One token's ERC-20 rows: the mint and the two moves, values as the node's balances show.
    let gold_rows = http::walk(
        addr,
        &format!("/api/v2/advanced-filters?transaction_types=ERC-20&token_contract_address_hashes_to_include={gold}"),
    )
    .await;
    assert_eq!(kinds(&gold_rows), vec!["ERC-20"; 3]);
    assert!(gold_rows.iter().all(|r| r["token"]["address_hash"] == gold.to_checksum(None)));
    for (row, holder) in gold_rows[..2].iter().zip([a[2], a[1]]) {
        assert_eq!(row["to"]["hash"], holder.to_checksum(None));
        assert_eq!(row["total"]["value"], balance_of(&node, gold, holder).await.to_string());
        assert_eq!(row["total"]["decimals"], "18");
    }
    assert_eq!(gold_rows[2]["from"]["hash"], Address::ZERO.to_checksum(None), "the mint");

    // From a[0] and calling transfer(): the two calls and their transfers; native only excludes token rows.
    let calls = http::walk(
        addr,
        &format!("/api/v2/advanced-filters?from_address_hashes_to_include={}&methods=0xa9059cbb", a[0]),
    )
    .await;
    assert_eq!(kinds(&calls), vec!["contract_interaction", "ERC-20", "contract_interaction", "ERC-20"]);
    assert!(calls.iter().all(|r| r["method"] == "transfer"));
    let native = http::walk(
        addr,
        "/api/v2/advanced-filters?token_contract_address_hashes_to_include=native&transaction_types=coin_transfer",
    )
    .await;
    assert_eq!(native.len(), 1);
    assert_eq!(native[0]["from"]["hash"], a[2].to_checksum(None));

    // Amounts in whole tokens: 2 ≤ amount ≤ 100 keeps the 3-token move and iron's 50 mint.
    let big = http::walk(addr, "/api/v2/advanced-filters?transaction_types=ERC-20&amount_from=2&amount_to=100").await;
    let values: Vec<&str> = big.iter().map(|r| r["total"]["value"].as_str().unwrap()).collect();
    assert_eq!(values, vec![(unit * U256::from(3)).to_string(), (unit * U256::from(50)).to_string()]);
    // Excluding a token and a recipient.
    let rest = http::walk(addr, &format!("/api/v2/advanced-filters?transaction_types=ERC-20&token_contract_address_hashes_to_exclude={gold}&to_address_hashes_to_exclude={}", a[5])).await;
    assert_eq!(rest.len(), 1, "iron's move to a[1] only");
    assert_eq!(rest[0]["to"]["hash"], a[1].to_checksum(None));
    // Age: nothing after the newest block, everything from the first.
    let head = node.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap();
    let future = rockscout_iso(head.header.timestamp + 3600);
    assert_eq!(get(addr, &format!("/api/v2/advanced-filters?age_from={future}")).await["items"], json!([]));
    let old = rockscout_iso(0);
    assert_eq!(http::walk(addr, &format!("/api/v2/advanced-filters?age_from={old}&age_to={future}")).await, items);

    // Methods: Blockscout's default list and a search by name.
    let methods = get(addr, "/api/v2/advanced-filters/methods").await;
    assert!(methods.as_array().unwrap().len() >= 20);
    assert_eq!(
        get(addr, "/api/v2/advanced-filters/methods?q=transfer").await,
        json!([{"method_id": "0xa9059cbb", "name": "transfer"}])
    );
    for bad in
        ["methods=0x12", "transaction_types=NOPE", "amount_from=x", "age_to=soon", "from_address_hashes_to_include=0x1"]
    {
        assert_eq!(http::get(addr, &format!("/api/v2/advanced-filters?{bad}")).await.status, 422, "{bad}");
        assert_eq!(http::get(addr, &format!("/api/v2/advanced-filters/csv?{bad}")).await.status, 422, "{bad}");
    }

    // The same rows as CSV: one token's transfers in whole tokens.
    let rows = csv(
        addr,
        &format!(
            "/api/v2/advanced-filters/csv?transaction_types=ERC-20&token_contract_address_hashes_to_include={gold}"
        ),
    )
    .await;
    assert_eq!(rows[0].len(), 18);
    assert_eq!(rows[0][..4], ["TxHash", "Type", "MethodId", "UtcTimestamp"]);
    let listed: Vec<(String, String, String)> =
        rows[1..].iter().map(|r| (r[0].clone(), r[10].clone(), r[11].clone())).collect();
    let expected: Vec<(String, String, String)> = gold_rows
        .iter()
        .zip(["3", "1.5", "1000"])
        .map(|(r, v)| (r["hash"].as_str().unwrap().to_owned(), "GLD".to_owned(), v.to_owned()))
        .collect();
    assert_eq!(listed, expected);
    t.daemon.shutdown().await.unwrap();
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time (the API's own format).
fn rockscout_iso(seconds: u64) -> String {
    rockscout::api::json::iso_timestamp(seconds)
}

/// A CSV export's rows (header first), waiting out the per-IP export budget (429) if an earlier export used it.
async fn csv(addr: std::net::SocketAddr, path: &str) -> Vec<Vec<String>> {
    let reply = poll_until("a CSV export within the rate limit", Duration::from_secs(30), || async {
        let reply = http::get(addr, path).await;
        (reply.status != 429).then_some(reply)
    })
    .await;
    assert_eq!(reply.status, 200, "{path}: {}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.headers["content-type"], "text/csv; charset=utf-8");
    assert!(reply.headers.get("content-length").is_none(), "streamed, not sized up front");
    let text = String::from_utf8(reply.body.to_vec()).unwrap();
    assert!(text.ends_with("\r\n"));
    text.trim_end_matches("\r\n").split("\r\n").map(split_csv_line).collect()
}

/// Splits one CSV line (quoted fields with doubled quotes).
fn split_csv_line(line: &str) -> Vec<String> {
    let (mut fields, mut current, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut current)),
            (c, _) => current.push(c),
        }
    }
    fields.push(current);
    fields
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_exports_stream_blockscout_columns_with_node_values_escaped_and_rate_limited() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let a = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let unit = U256::from(10u64).pow(U256::from(18));
    // A symbol a spreadsheet would run as a formula, with a comma and a quote.
    let symbol = "=HYPERLINK(\"x\",1)";
    let (token, _) = deploy_token(&node, a[0], symbol, unit * U256::from(100)).await;
    let moved = [unit * U256::from(7) / U256::from(2), unit * U256::from(2)];
    for value in moved {
        call(&node, a[0], token, DemoToken::transferCall { to: a[1], value }.abi_encode()).await;
        mine(&node, 1).await;
    }
    send(&node, json!({"from": a[0], "to": a[2], "value": U256::from(12345u64)})).await;
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    poll_until("token metadata", Duration::from_secs(30), || async {
        (get(addr, &format!("/api/v2/tokens/{token}")).await["symbol"] == symbol).then_some(())
    })
    .await;
    assert_eq!(get(addr, "/api/v2/config/csv-export").await, json!({"limit": 10000, "async_enabled": false}));
    // The frontend's other configuration and counter reads: a plain EVM chain, no migrations, no withdrawals.
    assert_eq!(
        get(addr, "/api/v2/config/backend").await,
        json!({"chain_type": null, "openapi_spec_folder_name": null})
    );
    assert_eq!(get(addr, "/api/v2/config/db-background-migrations").await, json!({"migrations": []}));
    assert_eq!(get(addr, "/api/v2/withdrawals").await["items"], json!([]));
    assert_eq!(
        get(addr, "/api/v2/withdrawals/counters").await,
        json!({"withdrawals_count": "0", "withdrawals_sum": "0"})
    );

    // Transactions of a[0]: every transaction it sent (its nonce), newest first, values as the node has them.
    let rows = csv(addr, &format!("/api/v2/addresses/{}/transactions/csv", a[0])).await;
    assert_eq!(
        rows[0][..7],
        ["TxHash", "BlockNumber", "UnixTimestamp", "FromAddress", "ToAddress", "ContractAddress", "Type"]
    );
    assert_eq!(rows[0].len(), 15);
    let nonce = node.get_transaction_count(a[0]).await.unwrap();
    assert_eq!(rows.len() - 1, nonce as usize);
    for row in &rows[1..] {
        let on_node: Value = node.raw_request("eth_getTransactionByHash".into(), json!([row[0]])).await.unwrap();
        assert_eq!(
            row[1],
            u64::from_str_radix(on_node["blockNumber"].as_str().unwrap().trim_start_matches("0x"), 16)
                .unwrap()
                .to_string()
        );
        assert_eq!(row[7], on_node["value"].as_str().unwrap().parse::<U256>().unwrap().to_string());
        assert_eq!((row[3].as_str(), row[6].as_str(), row[9].as_str()), (a[0].to_checksum(None).as_str(), "OUT", "ok"));
    }
    assert_eq!(rows[1][7], "12345");
    assert_eq!(rows.last().unwrap()[5], token.to_checksum(None), "the creation names its contract");
    assert_eq!(rows[2][14], "transfer", "the method name");

    // Token transfers of a[1]: amounts summing to its balance on the node; the symbol neutralised and quoted.
    let rows = csv(addr, &format!("/api/v2/addresses/{}/token-transfers/csv", a[1])).await;
    assert_eq!(rows[0].len(), 14);
    assert_eq!(rows[0][10], "TokensTransferred");
    assert_eq!(rows.len(), 3);
    let sum: U256 = rows[1..].iter().map(|r| r[10].parse::<U256>().unwrap()).sum();
    assert_eq!(sum, balance_of(&node, token, a[1]).await);
    assert!(rows[1..].iter().all(|r| r[6] == "IN" && r[8] == format!("'{symbol}") && r[7] == "18"));
    let outgoing =
        csv(addr, &format!("/api/v2/addresses/{}/token-transfers/csv?filter_type=address&filter_value=from", a[1]))
            .await;
    assert_eq!(outgoing.len(), 1, "a[1] sent nothing");

    // The token's logs: its mint and two transfers.
    let logs = csv(addr, &format!("/api/v2/addresses/{token}/logs/csv")).await;
    assert_eq!(
        logs[0],
        [
            "TxHash",
            "Index",
            "BlockNumber",
            "BlockHash",
            "ContractAddress",
            "Data",
            "FirstTopic",
            "SecondTopic",
            "ThirdTopic",
            "FourthTopic"
        ]
    );
    assert_eq!(logs.len(), 4);
    // Holders in whole tokens, as balanceOf says.
    let holders = csv(addr, &format!("/api/v2/tokens/{token}/holders/csv")).await;
    assert_eq!(holders[0], ["HolderAddress", "Balance"]);
    for row in &holders[1..] {
        let holder: Address = row[0].parse().unwrap();
        let balance = balance_of(&node, token, holder).await;
        let (whole, fraction) = balance.div_rem(unit);
        let expected = if fraction.is_zero() {
            whole.to_string()
        } else {
            format!("{whole}.{}", format!("{fraction:0>18}").trim_end_matches('0'))
        };
        assert_eq!(row[1], expected);
    }
    assert_eq!(holders.len(), 3);
    // Internal transactions (no tracing): the header only; a period after the chain: the header only.
    let internal = csv(addr, &format!("/api/v2/addresses/{}/internal-transactions/csv", a[0])).await;
    assert_eq!(internal.len(), 1);
    assert_eq!(internal[0].len(), 19);
    let later = csv(addr, &format!("/api/v2/addresses/{}/transactions/csv?from_period=2999-01-01", a[0])).await;
    assert_eq!(later.len(), 1);

    // Bad input, then the per-IP export budget.
    assert_eq!(http::get(addr, &format!("/api/v2/addresses/{}/logs/csv?to_period=soon", a[0])).await.status, 422);
    assert_eq!(http::get(addr, &format!("/api/v2/tokens/{}/holders/csv", a[9])).await.status, 404);
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let reply = http::get(addr, &format!("/api/v2/addresses/{}/logs/csv", a[0])).await;
        if reply.status == 429 {
            assert_eq!(reply.headers["retry-after"], "1", "a throttled export says when to ask again");
        }
        statuses.push(reply.status.as_u16());
    }
    assert!(statuses.contains(&429), "a burst of exports is throttled: {statuses:?}");
    t.daemon.shutdown().await.unwrap();
}

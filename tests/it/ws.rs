//! The Phoenix V2 WebSocket at /socket/v2/websocket: exact frames from a raw client, live pushes after anvil
//! mines, limits and faults, shutdown, and the real `phoenix` npm client.

use crate::support::phoenix::Listener;
use crate::support::refusing_relay::RefusingRelay;
use crate::support::ws::{Received, WsClient};
use crate::support::*;
use serde_json::{json, Value};
use std::time::Duration;

const PATH: &str = "/socket/v2/websocket?vsn=2.0.0";

/// A node, a daemon synced to it and a raw WebSocket client connected to the daemon.
async fn connected() -> (rockscout::dev::anvil::Anvil, alloy::providers::RootProvider, TestDaemon, WsClient) {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;
    let c = WsClient::connect(t.daemon.addr(), PATH).await;
    (anvil, node, t, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_client_sees_exact_frames_and_live_pushes() {
    let (anvil, node, t, mut c) = connected().await;
    let accounts = anvil.addresses();

    c.send(&json!(["3", "3", "blocks:new_block", "phx_join", {}])).await;
    assert_eq!(c.frame().await, json!(["3", "3", "blocks:new_block", "phx_reply", {"status": "ok", "response": {}}]));
    c.send(&json!([null, "4", "phoenix", "heartbeat", {}])).await;
    assert_eq!(c.frame().await, json!([null, "4", "phoenix", "phx_reply", {"status": "ok", "response": {}}]));
    c.send(&json!(["5", "5", "addresses:0xZZ", "phx_join", {}])).await;
    assert_eq!(
        c.frame().await,
        json!(["5", "5", "addresses:0xZZ", "phx_reply", {"status": "error", "response": {"reason": "Invalid address hash"}}])
    );
    c.send(&json!(["6", "6", "nosuch:topic", "phx_join", {}])).await;
    assert_eq!(
        c.frame().await,
        json!([null, "6", "nosuch:topic", "phx_reply", {"status": "error", "response": {"reason": "unmatched topic"}}])
    );
    // Address topics: mixed case accepted, frames keep the client's spelling.
    let sender = accounts[1];
    let spelled = format!("addresses:{}", sender.to_checksum(None));
    c.send(&json!(["7", "7", spelled, "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "ok");
    c.send(&json!(["8", "8", "transactions:new_transaction", "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "ok");

    // A block with a transfer: new_block (the REST list item), the count, the address's transaction and balance.
    let hash = transfer(&node, sender, accounts[2], 4242).await;
    mine(&node, 1).await;
    let head = wait_synced(&t.daemon, &node).await;
    let pushed = c.until(Duration::from_secs(30), |f| f[3] == "new_block").await;
    assert_eq!((&pushed[0], &pushed[1], &pushed[2]), (&Value::Null, &Value::Null, &json!("blocks:new_block")));
    let rest_item = http::get(t.daemon.addr(), "/api/v2/blocks?items_count=1").await.json()["items"][0].clone();
    assert_eq!(pushed[4]["block"], rest_item, "the pushed block is the REST list item");
    assert_eq!(pushed[4]["block"]["height"], head);
    assert!(pushed[4]["average_block_time"].is_string());
    let count = c.until(Duration::from_secs(10), |f| f[2] == "transactions:new_transaction").await;
    assert_eq!(count[4], json!({"transaction": 1}));
    let txs = c.until(Duration::from_secs(10), |f| f[2] == spelled && f[3] == "transaction").await;
    let listed =
        http::get(t.daemon.addr(), &format!("/api/v2/addresses/{sender}/transactions?items_count=1")).await.json();
    assert_eq!(txs[4]["transactions"][0], listed["items"][0], "the pushed transaction is the REST list item");
    assert_eq!(txs[4]["transactions"][0]["hash"], format!("{hash:#x}"));
    let balance = c.until(Duration::from_secs(10), |f| f[2] == spelled && f[3] == "balance").await;
    let on_chain = alloy::providers::Provider::get_balance(&node, sender).await.unwrap();
    assert_eq!(balance[4], json!({"balance": on_chain.to_string(), "block_number": head, "exchange_rate": null}));

    // Leave: ok reply, then phx_close with the join_ref in both ref slots.
    c.send(&json!(["3", "20", "blocks:new_block", "phx_leave", {}])).await;
    let mut after_leave = Vec::new();
    while after_leave.len() < 2 {
        let f = c.frame().await;
        if f[2] == "blocks:new_block" {
            after_leave.push(f);
        }
    }
    assert_eq!(
        after_leave,
        vec![
            json!(["3", "20", "blocks:new_block", "phx_reply", {"status": "ok", "response": {}}]),
            json!(["3", "3", "blocks:new_block", "phx_close", {}]),
        ]
    );

    // A pending transfer to its own sender is pushed to that address once.
    let own = format!("{:#x}", transfer(&node, sender, sender, 1).await);
    let names_own =
        |f: &Value| f[4]["transactions"].as_array().is_some_and(|t| t.iter().any(|t| t["hash"] == own.as_str()));
    let pending =
        c.until(Duration::from_secs(30), |f| f[2] == spelled && f[3] == "pending_transaction" && names_own(f)).await;
    let copies = pending[4]["transactions"].as_array().unwrap().iter().filter(|t| t["hash"] == own.as_str()).count();
    assert_eq!(copies, 1, "{pending}");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_and_limits_are_contained() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.ws.max_topics = 2;
        c.api.ws.queue = 2;
        // Long enough that the healthy client, silent while the slow one fills up, is never idle (silence is
        // closed with 1000 in `hardening_conn`'s ping test).
        c.api.ws.idle_timeout = Duration::from_secs(120);
        c.api.ws.write_timeout = Duration::from_millis(500);
    })
    .await;
    let addr = t.daemon.addr();

    // Unknown serializer versions are refused before the upgrade, as Phoenix does.
    let refused = WsClient::try_connect(addr, "/socket/v2/websocket?vsn=9.9.9").await.err().expect("refused");
    assert!(refused.contains("403"), "{refused}");
    // A plain GET is not an upgrade.
    assert_eq!(http::get(addr, PATH).await.status, 400);

    // Garbage closes only the connection that sent it.
    let mut healthy = WsClient::connect(addr, PATH).await;
    healthy.send(&json!(["1", "1", "blocks:new_block", "phx_join", {}])).await;
    assert_eq!(healthy.frame().await[4]["status"], "ok");
    let mut garbage = WsClient::connect(addr, PATH).await;
    garbage.send_text("this is not phoenix").await;
    assert_eq!(garbage.recv(Duration::from_secs(5)).await, Received::Close(1007));
    let mut binary = WsClient::connect(addr, PATH).await;
    binary.send_binary(&[0, 1, 2]).await;
    assert_eq!(binary.recv(Duration::from_secs(5)).await, Received::Close(1003));
    let mut huge = WsClient::connect(addr, PATH).await;
    huge.send_text(&format!("[null,\"1\",\"phoenix\",\"heartbeat\",{{\"pad\":\"{}\"}}]", "x".repeat(100_000))).await;
    // The server answers 1009 and closes; the unread rest of the frame may make the kernel reset the socket
    // before the client reads the close frame, so either outcome means "closed".
    let closed = huge.recv(Duration::from_secs(5)).await;
    assert!(matches!(closed, Received::Close(1009) | Received::Ended), "{closed:?}");
    healthy.send(&json!([null, "2", "phoenix", "heartbeat", {}])).await;
    healthy.until(Duration::from_secs(10), |f| f[1] == "2").await;

    // Topics per connection are bounded.
    let mut many = WsClient::connect(addr, PATH).await;
    for (i, topic) in ["blocks:new_block", "transactions:new_transaction", "blocks:indexing"].iter().enumerate() {
        many.send(&json!([i.to_string(), i.to_string(), topic, "phx_join", {}])).await;
    }
    // Each reply is picked out by its ref: a block's event on a channel joined first can come between them.
    let mut statuses = Vec::new();
    for i in 0..3 {
        let reference = i.to_string();
        let reply = many.until(Duration::from_secs(30), |f| f[3] == "phx_reply" && f[1] == reference.as_str()).await;
        statuses.push(reply[4]["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(statuses, ["ok", "ok", "error"]);

    // A subscriber that stops reading is dropped; the healthy one keeps receiving. Big transactions make each
    // address push megabytes, so the server's socket buffer fills and its writes stall. Ten rounds of ten 60 KB
    // calldatas, well beyond the 4 MiB a send buffer may grow to (`net.ipv4.tcp_wmem`): with four, the slow client
    // was once never dropped (it read everything after the rounds), likely because the kernel's buffers held it all.
    let target = alloy::primitives::Address::repeat_byte(0x77);
    let mut slow = WsClient::connect_with_small_buffer(addr, PATH).await;
    slow.send(&json!(["1", "1", format!("addresses:{target:#x}"), "phx_join", {}])).await;
    assert_eq!(slow.frame().await[4]["status"], "ok");
    let calldata = alloy::primitives::Bytes::from(vec![0xab; 60_000]);
    for round in 0..10 {
        // Still talking (so the idle timeout is not what ends it), just not reading.
        slow.send_quietly(&json!([null, format!("hb{round}"), "phoenix", "heartbeat", {}])).await;
        for sender in anvil.addresses() {
            send(&node, json!({"from": sender, "to": target, "data": calldata, "gas": "0x1000000"})).await;
        }
        mine(&node, 1).await;
        wait_synced(&t.daemon, &node).await;
        healthy.until(Duration::from_secs(10), |f| f[3] == "new_block").await;
    }
    // It may still read what was buffered, then the connection ends.
    let mut ended = None;
    for _ in 0..100 {
        match slow.recv(Duration::from_secs(20)).await {
            Received::Frame(_) => continue,
            other => {
                ended = Some(other);
                break;
            }
        }
    }
    assert!(matches!(ended, Some(Received::Close(1013) | Received::Ended)), "the slow client is dropped: {ended:?}");
    mine(&node, 1).await;
    healthy.until(Duration::from_secs(10), |f| f[3] == "new_block").await;

    // Shutdown closes with 1001, which every Phoenix client reconnects on.
    let mut open = WsClient::connect(addr, PATH).await;
    open.send(&json!([null, "1", "phoenix", "heartbeat", {}])).await;
    open.frame().await;
    let shutdown = tokio::spawn(t.daemon.shutdown());
    assert_eq!(open.recv(Duration::from_secs(10)).await, Received::Close(1001));
    shutdown.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phoenix_npm_client_joins_and_receives_a_new_block() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;
    // The client joins the seed's three topics (every join must succeed); then the chain moves.
    let address = format!("{:#x}", accounts[3]);
    let topics =
        ["blocks:new_block".to_owned(), "transactions:new_transaction".to_owned(), format!("addresses:{address}")];
    let mut client = Listener::join(t.daemon.addr(), &topics).await;
    transfer(&node, accounts[3], accounts[4], 7).await;
    mine(&node, 1).await;
    let block = client.event("blocks:new_block", "new_block").await;
    assert_eq!(block["block"]["height"], alloy::providers::Provider::get_block_number(&node).await.unwrap());
    let count = client.event("transactions:new_transaction", "transaction").await;
    assert!(count["transaction"].is_number(), "the count push arrived: {count}");
    client.finish().await;
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_blocks_is_broadcast_block_by_block() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let start = wait_synced(&t.daemon, &node).await;
    let mut c = WsClient::connect(t.daemon.addr(), PATH).await;
    c.send(&json!(["1", "1", "blocks:new_block", "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "ok");
    // Thirty blocks at once (`anvil_mine`): the indexer sees them far behind the node's head, yet they are live.
    mine(&node, 30).await;
    let head = wait_synced(&t.daemon, &node).await;
    assert_eq!(head, start + 30);
    let mut heights = Vec::new();
    while heights.last() != Some(&head) {
        let pushed = c.until(Duration::from_secs(10), |f| f[3] == "new_block").await;
        heights.push(pushed[4]["block"]["height"].as_u64().unwrap());
    }
    assert_eq!(heights, (start + 1..=head).collect::<Vec<_>>(), "every block once, in order");
    t.daemon.shutdown().await.unwrap();
}

/// Balance pushes of consecutive blocks arrive in block order, so the last `current_coin_balance` an address gets
/// is the node's balance after the head (they were sent by one task per block, in whatever order they finished).
/// A block whose balances the node is slow for may share its push with the next block's, so the client gets at
/// most one push per block, each the node's balance after the block it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_pushes_follow_block_order() {
    let (anvil, node, t, mut c) = connected().await;
    let accounts = anvil.addresses();
    let receiver = accounts[7];
    let topic = format!("addresses:{receiver:#x}");
    c.send(&json!(["1", "1", topic, "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "ok");
    const BLOCKS: usize = 20;
    // A block per transfer, back to back: the daemon indexes several per look at the head.
    let _: Value =
        alloy::providers::Provider::raw_request(&node, "evm_setAutomine".into(), json!([true])).await.unwrap();
    for _ in 0..BLOCKS {
        transfer(&node, accounts[0], receiver, 1_000_000_007).await;
    }
    let head = wait_synced(&t.daemon, &node).await;
    let mut pushed: Vec<(u64, String)> = Vec::new();
    while pushed.last().is_none_or(|(number, _)| *number < head) {
        let f = c.until(Duration::from_secs(30), |f| f[2] == topic.as_str() && f[3] == "current_coin_balance").await;
        pushed.push((f[4]["block_number"].as_u64().unwrap(), f[4]["coin_balance"].as_str().unwrap().to_owned()));
    }
    let numbers: Vec<u64> = pushed.iter().map(|(n, _)| *n).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "pushed in block order: {numbers:?}");
    assert_eq!(numbers.last(), Some(&head), "the last push is the head's");
    for (number, balance) in &pushed {
        let on_chain = alloy::providers::Provider::get_balance(&node, receiver).number(*number).await.unwrap();
        assert_eq!(balance, &on_chain.to_string(), "the balance pushed for block {number}");
    }
    assert!(pushed.len() > 1, "several pushes for {BLOCKS} blocks: {numbers:?}");
}

/// A node, a daemon (configured by `tweak`) synced to it through a [`RefusingRelay`], and a raw WebSocket client
/// connected to the daemon.
async fn connected_through_relay(
    tweak: impl FnOnce(&mut rockscout::Config),
) -> (rockscout::dev::anvil::Anvil, alloy::providers::RootProvider, RefusingRelay, TestDaemon, WsClient) {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let relay = RefusingRelay::start(&anvil.http_url()).await;
    let t = start_daemon(&relay.url(), tweak).await;
    wait_synced(&t.daemon, &node).await;
    let c = WsClient::connect(t.daemon.addr(), PATH).await;
    (anvil, node, relay, t, c)
}

/// A balance push the node failed (here it refuses the balance before the block) is sent at the newest block pushed
/// when no block follows, so a client on a chain that mines on demand is not left with a stale balance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_balance_push_the_node_failed_is_sent_when_no_block_follows() {
    let (anvil, node, relay, t, mut c) = connected_through_relay(|_| {}).await;
    let accounts = anvil.addresses();
    let receiver = accounts[7];
    let topic = format!("addresses:{receiver:#x}");
    c.send(&json!(["1", "1", topic, "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "ok");
    // The push reads the balance before the block at the block's parent, today's head; the index reads only the
    // balances after each block, so it is not held up.
    let latest = alloy::eips::BlockNumberOrTag::Latest;
    let parent = alloy::providers::Provider::get_block_by_number(&node, latest).await.unwrap().unwrap();
    relay.refuse("eth_getBalance", parent.header.hash, usize::MAX);
    transfer(&node, accounts[0], receiver, 1_000_000_007).await;
    mine(&node, 1).await;
    let head = wait_synced(&t.daemon, &node).await;
    let listed = c.until(Duration::from_secs(30), |f| f[2] == topic.as_str() && f[3] == "transaction").await;
    assert_eq!(listed[4]["transactions"][0]["block_number"], head);
    poll_until("the push's balance read to be refused", Duration::from_secs(30), || async {
        (relay.refused() > 0).then_some(())
    })
    .await;
    let f = c.until(Duration::from_secs(30), |f| f[2] == topic.as_str() && f[3] == "current_coin_balance").await;
    let on_chain = alloy::providers::Provider::get_balance(&node, receiver).await.unwrap();
    assert_eq!(f[4]["block_number"], head);
    assert_eq!(f[4]["coin_balance"], on_chain.to_string());
    t.daemon.shutdown().await.unwrap();
}

/// A `raw_trace` push whose trace the node failed is asked for again, so a transaction page listening for it still
/// gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_trace_the_node_failed_once_is_pushed_all_the_same() {
    let (anvil, node, relay, t, mut c) = connected_through_relay(|c| c.tracing = true).await;
    let accounts = anvil.addresses();
    let hash = transfer(&node, accounts[0], accounts[7], 4_321).await;
    let topic = format!("transactions:{hash:#x}");
    c.send(&json!(["1", "1", topic, "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "ok");
    // The trace pass traces whole blocks (by number); the push traces the transaction by its hash.
    relay.refuse("debug_traceTransaction", hash, 1);
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let f = c.until(Duration::from_secs(30), |f| f[2] == topic.as_str() && f[3] == "raw_trace").await;
    assert_eq!(relay.refused(), 1, "the push's first trace was refused");
    let rest =
        crate::support::http::get_json(t.daemon.addr(), &format!("/api/v2/transactions/{hash:#x}/raw-trace")).await;
    assert_eq!(f[4], json!({"raw_trace": rest}));
    assert_eq!(f[4]["raw_trace"][0]["action"]["value"], json!(format!("{:#x}", 4_321)));
    t.daemon.shutdown().await.unwrap();
}

//! Protection of the public surfaces: per-IP rate limits with headers, CORS, bounded connections, the
//! slow-headers guard, and a graceful shutdown under load that loses no indexed data.

use crate::support::compare::assert_store_matches_node;
use crate::support::*;
use alloy::providers::Provider;
use hyper::Method;
use rockscout::api::limits::RateLimitConfig;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The reply to `send` once it is refused right after the bucket of client 10.0.0.1 (2 tokens a second) ran dry
/// ([`http::refused_once_drained`]).
async fn refused_when_drained<F, Fut>(addr: SocketAddr, send: F) -> http::Reply
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = http::Reply>,
{
    let drain = || async move {
        for _ in 0..40 {
            let drained = http::request(addr, Method::GET, "/api/v2/stats", &[("x-forwarded-for", "10.0.0.1")], "");
            if drained.await.status == 429 {
                break;
            }
        }
    };
    http::refused_once_drained(drain, send).await
}

fn header(reply: &http::Reply, name: &str) -> String {
    reply.headers.get(name).unwrap_or_else(|| panic!("header {name} missing")).to_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_client_is_limited_while_others_are_served() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rate_limit = RateLimitConfig {
            per_second: 2,
            burst: 10,
            trusted_proxies: vec!["127.0.0.1".parse().unwrap()],
            ..RateLimitConfig::default()
        }
    })
    .await;
    let addr = t.daemon.addr();
    let as_client = |ip: &'static str| async move {
        http::request(addr, Method::GET, "/api/v2/stats", &[("x-forwarded-for", ip)], "").await
    };
    let first = as_client("10.0.0.1").await;
    assert_eq!(first.status, 200);
    assert_eq!(
        (header(&first, "x-ratelimit-limit"), header(&first, "x-ratelimit-remaining")),
        ("10".into(), "9".into())
    );
    let mut limited = None;
    for _ in 0..40 {
        let reply = as_client("10.0.0.1").await;
        if reply.status == 429 {
            limited = Some(reply);
            break;
        }
    }
    let limited = limited.expect("the flood is refused with 429");
    assert_eq!(limited.json(), serde_json::json!({"message": "Too many requests"}));
    assert_eq!(header(&limited, "x-ratelimit-remaining"), "0");
    assert!(header(&limited, "x-ratelimit-reset").parse::<u64>().unwrap() > 0);
    assert!(header(&limited, "retry-after").parse::<u64>().unwrap() >= 1);
    assert_eq!(header(&limited, "access-control-allow-origin"), "*", "CORS headers on refusals too");

    // Another client behind the same proxy, and a client on another loopback address, are served normally.
    let other = as_client("10.0.0.2").await;
    assert_eq!(other.status, 200);
    assert_eq!(header(&other, "x-ratelimit-remaining"), "9");
    let direct = request_from("127.0.0.2", addr, "/api/v2/stats").await;
    assert!(direct.starts_with("HTTP/1.1 200"), "{direct}");
    assert!(direct.to_lowercase().contains("x-ratelimit-remaining: 9"), "{direct}");
    // The JSON-RPC passthrough shares the client's bucket.
    let rpc = refused_when_drained(addr, || {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#;
        http::request(addr, Method::POST, "/api/eth", &[("x-forwarded-for", "10.0.0.1")], body)
    })
    .await;
    assert_eq!(rpc.status, 429);
    // So does the Etherscan-style API, refusing in its own envelope.
    let path = "/api?module=block&action=eth_block_number";
    let etherscan =
        refused_when_drained(addr, || http::request(addr, Method::GET, path, &[("x-forwarded-for", "10.0.0.1")], ""))
            .await;
    assert_eq!(etherscan.status, 429);
    let envelope = serde_json::json!({"status": "0", "message": "NOTOK", "result": "Max rate limit reached"});
    assert_eq!(etherscan.json(), envelope);
    // A page says so in HTML, for the person reading it.
    let page = refused_when_drained(addr, || {
        http::request(addr, Method::GET, "/blocks", &[("x-forwarded-for", "10.0.0.1")], "")
    })
    .await;
    assert_eq!(page.status, 429);
    assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
    assert!(String::from_utf8_lossy(&page.body).contains("Too many requests"));
    assert!(header(&page, "retry-after").parse::<u64>().unwrap() >= 1);
    t.daemon.shutdown().await.unwrap();
}

/// A raw HTTP/1.1 GET from a given local address; returns the whole response text.
async fn request_from(local: &str, addr: SocketAddr, path: &str) -> String {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlimited_servers_say_so_and_cors_preflights_pass() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let reply = http::get(addr, "/api/v2/stats").await;
    for name in ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"] {
        assert_eq!(header(&reply, name), "-1", "{name}");
    }
    assert_eq!(header(&reply, "bypass-429-option"), "no_bypass");
    assert!(header(&reply, "access-control-expose-headers").contains("x-ratelimit-remaining"));
    let preflight = http::request(
        addr,
        Method::OPTIONS,
        "/api/v2/stats",
        &[
            ("origin", "http://localhost:3000"),
            ("access-control-request-method", "GET"),
            ("access-control-request-headers", "updated-gas-oracle"),
        ],
        "",
    )
    .await;
    assert_eq!(preflight.status, 204);
    assert_eq!(header(&preflight, "access-control-allow-origin"), "*");
    assert!(header(&preflight, "access-control-allow-methods").contains("POST"));
    assert_eq!(header(&preflight, "access-control-allow-headers"), "updated-gas-oracle");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off_and_connections_are_bounded() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        // Long enough that the first held connection below is not freed before the second is held and the third
        // client checked, on a machine loaded by the whole suite.
        c.api.header_read_timeout = Duration::from_millis(4000);
        // Long enough that only the header timeout can close connections within the test's deadlines.
        c.api.idle_timeout = Duration::from_secs(600);
        c.api.max_connections = 2;
    })
    .await;
    let addr = t.daemon.addr();
    // Slowloris: headers that never end. The server closes the connection.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /api/v2/stats HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let mut buf = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut buf)).await;
    assert!(closed.is_ok(), "the connection was closed by the server");
    drop(slow);

    // Two connections held open use both slots: a third client waits until one frees up.
    let hold = |_: u8| async {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        // A complete keep-alive request, answered, so the connection is occupied but not timed out mid-headers.
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let mut first = [0u8; 12];
        s.read_exact(&mut first).await.unwrap();
        s
    };
    let a = hold(1).await;
    let b = hold(2).await;
    let mut waiting = tokio::spawn(async move { http::get(addr, "/health").await.status });
    let early = tokio::time::timeout(Duration::from_millis(400), &mut waiting).await;
    assert!(early.is_err(), "with both slots taken the third client is not served yet");
    // The held connections are idle keep-alive connections: the header timeout frees them, then the third is served.
    let status =
        tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("served once a slot frees").unwrap();
    assert_eq!(status, 200);
    drop((a, b));
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_exits_cleanly_and_loses_nothing() {
    use std::process::{Command, Stdio};
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 20, 4).await;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rockscout"))
        .args([
            "run",
            "--rpc-url",
            &anvil.http_url(),
            "--listen",
            &addr.to_string(),
            "--poll-interval-ms",
            "20",
            "--rate-limit",
            "0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    poll_until("the daemon to serve", Duration::from_secs(30), || async {
        tokio::net::TcpStream::connect(addr).await.ok()?;
        Some(())
    })
    .await;
    // Load: API readers and new blocks, while the signal arrives. The readers go on until the server stops (their
    // connections then fail), so the signal always lands in the middle of them.
    let served = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let load = tokio::spawn({
        let served = served.clone();
        async move {
            for i in 0..1_000_000u32 {
                let path = if i % 2 == 0 { "/api/v2/blocks" } else { "/api/v2/transactions" };
                match http::try_request(addr, Method::GET, path, &[], "").await {
                    Ok(reply) if reply.status == 200 => served.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
                    Ok(reply) => panic!("{path}: status {}", reply.status),
                    Err(_) => break,
                };
            }
        }
    });
    generate_traffic(&node, &accounts, 5, 2).await;
    poll_until("the load to be served", Duration::from_secs(30), || async {
        (served.load(std::sync::atomic::Ordering::SeqCst) > 0).then_some(())
    })
    .await;
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "SIGTERM under load exits 0: {status}");
    load.await.expect("every answer before the shutdown was a 200");

    // Everything indexed before the signal is intact; a restart catches up to an exact copy of the chain.
    let t = start_daemon(&anvil.http_url(), |c| c.data_dir = dir.path().to_path_buf()).await;
    assert_eq!(t.daemon.store().open_state(), rockscout::store::OpenState::Clean);
    mine(&node, 1).await;
    wait_synced(&t.daemon, &node).await;
    let compared = assert_store_matches_node(t.daemon.store(), &node).await;
    assert_eq!(compared.blocks, node.get_block_number().await.unwrap() + 1);
    t.daemon.shutdown().await.unwrap();
}

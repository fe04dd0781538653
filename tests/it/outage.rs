//! The node goes away and comes back: the daemon stays up, reports the outage, and catches up afterwards.

use crate::support::compare::assert_store_matches_node;
use crate::support::*;
use rockscout::dev::anvil::AnvilOptions;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_stopped_and_restarted_mid_run() {
    let state = tempfile::tempdir().unwrap();
    let state_file = state.path().join("anvil-state.json");
    let options = |port| AnvilOptions {
        port,
        extra_args: vec!["--no-mining".into(), "--state".into(), state_file.display().to_string()],
        ..Default::default()
    };
    let anvil = start_anvil_with(options(0));
    let port = anvil.port();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 5, 3).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    wait_synced(&t.daemon, &node).await;

    anvil.stop();
    let reply = poll_until("/health/ready to report the node down", Duration::from_secs(30), || async {
        let reply = http::get(t.daemon.addr(), "/health/ready").await;
        (reply.status == 503).then_some(reply)
    })
    .await;
    assert_eq!(reply.json()["reason"], "node_unreachable", "{}", reply.json());
    // Liveness stays 200: the process serves, a supervisor must not restart it for the node's outage.
    let reply = http::get(t.daemon.addr(), "/health").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["node_reachable"], false);
    assert_eq!(reply.json()["status"], "node_unreachable");
    // The API keeps serving what is indexed.
    let stats = http::get(t.daemon.addr(), "/api/v2/stats").await;
    assert_eq!(stats.status, 200);
    // A balance needs the node: the Etherscan-style API says it is unavailable in the envelope its clients read.
    let path = format!("/api?module=account&action=balance&address={:#x}", accounts[0]);
    let balance = http::get(t.daemon.addr(), &path).await;
    assert_eq!(balance.status, 502, "{}", balance.json());
    assert_eq!((balance.json()["status"].as_str(), balance.json()["result"].is_null()), (Some("0"), true));
    assert!(balance.json()["message"].as_str().unwrap().contains("node"), "{}", balance.json());

    let anvil = start_anvil_with(options(port));
    let node = provider(&anvil.http_url());
    generate_traffic(&node, &accounts, 4, 2).await;
    wait_synced(&t.daemon, &node).await;
    assert_store_matches_node(t.daemon.store(), &node).await;
    assert_eq!(http::get(t.daemon.addr(), "/health").await.status, 200);
    assert_eq!(http::get(t.daemon.addr(), "/health/ready").await.status, 200);
    t.daemon.shutdown().await.unwrap();
}

/// A hosted node's URL carries its key in the path: an unreachable node's error, in `/health` and `/health/ready`
/// (public, probed by load balancers), names the host and port only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_errors_do_not_show_the_node_url_s_key() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://user:password@127.0.0.1:{port}/v2/SECRETKEY123");
    let daemon = rockscout::Daemon::start(&test_config(&url, dir.path())).await.expect("starts without its node");
    let addr = daemon.addr();
    let health = poll_until("/health to name the node's error", Duration::from_secs(30), || async {
        let reply = http::get(addr, "/health").await.json();
        reply["node_error"].is_string().then_some(reply)
    })
    .await;
    let ready = http::get(addr, "/health/ready").await;
    for text in [health.to_string(), String::from_utf8_lossy(&ready.body).into_owned()] {
        assert!(!text.contains("SECRETKEY123") && !text.contains("password"), "{text}");
    }
    assert!(health["node_error"].as_str().unwrap().contains(&format!("127.0.0.1:{port}")), "{health}");
    daemon.shutdown().await.unwrap();
}

/// A relay to the node's WebSocket port that can go silent: connections numbered up to `muted_through` (from 1) stay
/// open but get nothing back, not even pongs or a handshake (a node locked up); counts the connections it accepted.
struct SilentRelay {
    addr: std::net::SocketAddr,
    muted_through: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl SilentRelay {
    async fn start(node_port: u16) -> SilentRelay {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let muted_through = std::sync::Arc::new(AtomicUsize::new(0));
        let connections = std::sync::Arc::new(AtomicUsize::new(0));
        let (mute, count) = (muted_through.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let number = count.fetch_add(1, Ordering::SeqCst) + 1;
                let Ok(mut node) = tokio::net::TcpStream::connect(("127.0.0.1", node_port)).await else { continue };
                let mute = mute.clone();
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.split();
                    let (mut node_read, mut node_write) = node.split();
                    let upstream = tokio::io::copy(&mut client_read, &mut node_write);
                    let downstream = async {
                        let mut buf = vec![0u8; 64 << 10];
                        loop {
                            let n = node_read.read(&mut buf).await?;
                            if n == 0 {
                                return Ok::<_, std::io::Error>(());
                            }
                            if number > mute.load(Ordering::SeqCst) {
                                client_write.write_all(&buf[..n]).await?;
                            }
                        }
                    };
                    let _ = tokio::join!(upstream, downstream);
                });
            }
        });
        SilentRelay { addr, muted_through, connections }
    }
}

/// How long after the first block mined (one every 200 ms) `signal` ends a wait; `None` past `limit`.
async fn notified_within(
    signal: &mut rockscout::node::HeadSignal,
    node: &alloy::providers::RootProvider,
    limit: Duration,
) -> Option<Duration> {
    let started = std::time::Instant::now();
    let mining = async {
        loop {
            mine(node, 1).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::select! {
        _ = signal.wait() => Some(started.elapsed()),
        _ = mining => None,
        _ = tokio::time::sleep(limit) => None,
    }
}

/// The node's WebSocket goes silent for a minute, new connections included (a node locked up by a heavy trace):
/// alloy's own reconnection then waited for good, and the follower polled without a word. The subscription is
/// checked after 30 s of silence and made again, and the new connection's notifications wake the follower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_head_subscription_is_made_again() {
    use std::sync::atomic::Ordering;
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let relay = SilentRelay::start(anvil.port()).await;
    let ws_url = format!("ws://{}", relay.addr);
    let client = rockscout::node::Node::new(&anvil.http_url(), Some(&ws_url), Duration::from_secs(5)).unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    // A poll interval longer than the test: only notifications end a wait quickly.
    let mut signal = client.head_signal(Duration::from_secs(3600), cancel.clone());
    assert!(notified_within(&mut signal, &node, Duration::from_secs(20)).await.is_some(), "notified over the relay");
    assert_eq!(relay.connections.load(Ordering::SeqCst), 1);
    relay.muted_through.store(usize::MAX, Ordering::SeqCst);
    let (muted, connections) = (relay.muted_through.clone(), relay.connections.clone());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(60)).await;
        muted.store(connections.load(Ordering::SeqCst), Ordering::SeqCst);
    });
    let woken = notified_within(&mut signal, &node, Duration::from_secs(150)).await;
    assert!(woken.is_some_and(|after| after >= Duration::from_secs(60)), "notified again after the silence: {woken:?}");
    cancel.cancel();
}

//! Operations (issue 20): a real Prometheus (Debian's `prometheus` package) scrapes a daemon indexing anvil and
//! its query API agrees with the node and with the requests the test made; the monitoring examples pass
//! `promtool` and the Grafana dashboard only charts metrics the daemon exports; `/metrics` lives on its own
//! listener, counts WebSocket connections, subscriptions and rate-limited requests, and a taken metrics port is a
//! clear startup error.

use crate::support::ws::WsClient;
use crate::support::{generate_traffic, http, mine, poll_until, provider, start_anvil, start_daemon, wait_synced};
use alloy::providers::Provider;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const INSTALL: &str = "install it with `sudo apt-get install prometheus` (scripts/setup does)";

/// A binary of Debian's `prometheus` package; a missing one fails the test with the install command.
fn prometheus_tool(name: &str) -> PathBuf {
    let path = Path::new("/usr/bin").join(name);
    assert!(path.exists(), "{} is missing: {INSTALL}", path.display());
    path
}

fn monitoring_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/monitoring").join(name)
}

/// A Prometheus server on a loopback port scraping `target` every second, stopped on drop.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: SocketAddr) -> Prometheus {
        let bin = prometheus_tool("prometheus");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: rockscout\n    \
                 static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn prometheus");
        Prometheus { child, addr, _dir: dir }
    }

    /// The samples of an instant query, as (labels, value); `None` while Prometheus does not answer.
    async fn query(&self, promql: &str) -> Option<Vec<(serde_json::Value, f64)>> {
        let path = format!("/api/v1/query?query={}", crate::support::http::percent_encode(promql));
        let reply = http::try_request(self.addr, hyper::Method::GET, &path, &[], "").await.ok()?;
        let body: serde_json::Value = serde_json::from_slice(&reply.body).ok()?;
        assert_eq!(body["status"], "success", "query {promql}: {body}");
        let samples = body["data"]["result"].as_array()?;
        Some(
            samples
                .iter()
                .map(|s| (s["metric"].clone(), s["value"][1].as_str().unwrap().parse::<f64>().unwrap()))
                .collect(),
        )
    }

    /// The single value of `promql` (`None` while it has no sample).
    async fn value(&self, promql: &str) -> Option<f64> {
        let samples = self.query(promql).await?;
        assert!(samples.len() <= 1, "{promql} has several series: {samples:?}");
        samples.first().map(|(_, v)| *v)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_daemon_and_agrees_with_the_node_and_the_requests() {
    prometheus_tool("prometheus");
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let api = t.daemon.addr();
    let metrics = t.daemon.metrics_addr().expect("the harness serves metrics");
    let accounts = anvil.addresses();
    let sent = generate_traffic(&node, &accounts, 4, 3).await;
    mine(&node, 5).await;
    let head = wait_synced(&t.daemon, &node).await;
    assert_eq!(head, node.get_block_number().await.unwrap());

    // A known number of requests to one route template, with different raw paths.
    const BLOCK_REQUESTS: u64 = 7;
    for n in 0..BLOCK_REQUESTS {
        assert_eq!(http::get(api, &format!("/api/v2/blocks/{}", n % (head + 1))).await.status, 200);
    }
    assert_eq!(http::get(api, "/no/such/path/0xabc").await.status, 404);

    let prometheus = Prometheus::start(metrics);
    let expected = [
        ("rockscout_indexed_tip", head as f64),
        ("rockscout_node_tip", head as f64),
        ("rockscout_lag_blocks", 0.0),
        ("rockscout_lag_seconds", 0.0),
        ("rockscout_node_up", 1.0),
        // Blocks 0..=head, each committed once.
        ("rockscout_blocks_indexed_total", (head + 1) as f64),
        ("rockscout_transactions_indexed_total", sent as f64),
        (
            r#"sum(rockscout_http_requests_total{route="/api/v2/blocks/:number_or_hash",code="200"})"#,
            BLOCK_REQUESTS as f64,
        ),
        (r#"sum(rockscout_http_requests_total{route="other",code="404"})"#, 1.0),
        ("rockscout_reorgs_total", 0.0),
    ];
    let last = std::sync::Mutex::new(Vec::new());
    let agreed = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let mut seen = Vec::new();
            for (promql, _) in &expected {
                seen.push(prometheus.value(promql).await);
            }
            let all = expected.iter().zip(&seen).all(|((_, want), got)| *got == Some(*want));
            *last.lock().unwrap() = seen;
            if all {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await;
    let seen = last.lock().unwrap().clone();
    assert!(agreed.is_ok(), "Prometheus never agreed: wanted {expected:?}, last saw {seen:?}");

    // The follower's node requests are timed by method.
    let calls = prometheus
        .value(r#"sum(rockscout_node_request_duration_seconds_count{method="eth_getBlockByNumber"})"#)
        .await
        .unwrap();
    assert!(calls >= (head + 1) as f64, "{calls} eth_getBlockByNumber calls timed");
    // No raw path reached a label: every route label is a template or `other`.
    let series = prometheus.query("rockscout_http_requests_total").await.unwrap();
    let routes: BTreeSet<String> = series.iter().map(|(m, _)| m["route"].as_str().unwrap().to_owned()).collect();
    assert!(routes.contains("/api/v2/blocks/:number_or_hash"), "{routes:?}");
    for route in &routes {
        assert!(!route.contains("0xabc") && !route.contains("/blocks/1") && !route.contains("no/such"), "{route}");
    }

    // More blocks: the counters follow the node.
    mine(&node, 3).await;
    let head = wait_synced(&t.daemon, &node).await;
    poll_until("Prometheus to see the new blocks", Duration::from_secs(30), || async {
        let tip = prometheus.value("rockscout_indexed_tip").await?;
        let blocks = prometheus.value("rockscout_blocks_indexed_total").await?;
        (tip == head as f64 && blocks == (head + 1) as f64).then_some(())
    })
    .await;
    drop(prometheus);
    t.daemon.shutdown().await.unwrap();
}

/// The `rockscout_*` metric names a live daemon exports (histogram and counter suffixes included).
async fn exported_names(metrics: SocketAddr) -> BTreeSet<String> {
    http::metrics_text(metrics)
        .await
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| line.split(['{', ' ']).next().unwrap().to_owned())
        .collect()
}

/// Every `rockscout_*` name in `text`.
fn referenced_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("rockscout_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitoring_examples_pass_promtool_and_chart_only_exported_metrics() {
    let promtool = prometheus_tool("promtool");
    // Syntax of the scrape config and the rules, then the rules' own unit tests (they fire when they should).
    for (args, file) in [
        (["check", "config"], "prometheus.yml"),
        (["check", "rules"], "alerts.yml"),
        (["test", "rules"], "alerts_test.yml"),
    ] {
        let out = Command::new(&promtool).args(args).arg(monitoring_file(file)).output().unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?} {file}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    // A block cache of 24 MiB and a row cache of 8 MiB instead of the defaults, to see `--cache-mb` and
    // `--row-cache-mb` reach the store.
    let t = start_daemon(&anvil.http_url(), |c| {
        c.cache_bytes = 24 << 20;
        c.row_cache_bytes = 8 << 20;
    })
    .await;
    mine(&node, 2).await;
    wait_synced(&t.daemon, &node).await;
    // Families with labels appear once a sample exists: one request and one node call are enough.
    assert_eq!(http::get(t.daemon.addr(), "/api/v2/stats").await.status, 200);
    let text = http::metrics_text(t.daemon.metrics_addr().unwrap()).await;
    let gauge = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<u64>().ok());
    assert_eq!(gauge("rockscout_rocksdb_block_cache_capacity_bytes"), Some(24 << 20), "{text}");
    assert!(gauge("rockscout_rocksdb_block_cache_bytes").is_some_and(|used| used <= 24 << 20), "{text}");
    assert_eq!(gauge("rockscout_row_cache_capacity_bytes"), Some(8 << 20), "{text}");
    // The stats request read rows through the cache (the tip and counters, at least).
    assert!(gauge("rockscout_row_cache_bytes").is_some_and(|used| used > 0 && used <= 8 << 20), "{text}");
    let exported = exported_names(t.daemon.metrics_addr().unwrap()).await;
    assert!(exported.contains("rockscout_http_request_duration_seconds_bucket"), "{exported:?}");
    assert!(exported.contains("rockscout_rocksdb_pending_compaction_bytes"), "{exported:?}");
    assert!(exported.contains("rockscout_store_disk_bytes"), "{exported:?}");

    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(monitoring_file("grafana-dashboard.json")).unwrap())
            .expect("the dashboard is valid JSON");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            exprs.push(target["expr"].as_str().expect("every target has an expr").to_owned());
        }
    }
    assert!(exprs.len() >= 10, "{} queries", exprs.len());
    let alerts = std::fs::read_to_string(monitoring_file("alerts.yml")).unwrap();
    for (source, text) in exprs.iter().map(|e| ("dashboard", e.as_str())).chain([("alerts.yml", alerts.as_str())]) {
        let names = referenced_names(text);
        assert!(!names.is_empty() || source == "dashboard", "{source} names no metric");
        for name in names {
            assert!(exported.contains(&name), "{source} uses {name}, which the daemon does not export: {text}");
        }
    }
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_listener_is_separate_counts_websockets_and_refusals_and_a_taken_port_stops_startup() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let metrics = t.daemon.metrics_addr().unwrap();
    assert_ne!(metrics, t.daemon.addr());
    // Not on the public API's port.
    assert_eq!(http::get(t.daemon.addr(), "/metrics").await.status, 404);
    assert_eq!(http::get(metrics, "/api/v2/stats").await.status, 404);
    assert_eq!(http::request(metrics, hyper::Method::POST, "/metrics", &[], "").await.status, 405);

    // WebSocket connections and subscriptions are read at scrape time.
    let mut ws = WsClient::connect(t.daemon.addr(), "/socket/v2/websocket?vsn=2.0.0").await;
    // A block's event may arrive between the two joins: each join's reply is picked out by its ref.
    let reply_to = |reference: &'static str| move |f: &serde_json::Value| f[1] == reference && f[3] == "phx_reply";
    ws.send(&serde_json::json!(["1", "1", "blocks:new_block", "phx_join", {}])).await;
    assert_eq!(ws.until(Duration::from_secs(10), reply_to("1")).await[4]["status"], "ok");
    ws.send(&serde_json::json!(["2", "2", "transactions:new_transaction", "phx_join", {}])).await;
    assert_eq!(ws.until(Duration::from_secs(10), reply_to("2")).await[4]["status"], "ok");
    let text = http::metrics_text(metrics).await;
    assert!(text.contains("\nrockscout_ws_connections 1\n"), "{text}");
    assert!(text.contains("\nrockscout_ws_subscriptions 2\n"), "{text}");
    drop(ws);
    poll_until("the closed WebSocket to leave the gauge", Duration::from_secs(10), || async {
        http::metrics_text(metrics).await.contains("\nrockscout_ws_connections 0\n").then_some(())
    })
    .await;

    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::support::test_config(&anvil.http_url(), dir.path());
    config.metrics_listen = Some(metrics);
    let error = rockscout::Daemon::start(&config).await.expect_err("the metrics port is taken").to_string();
    assert!(error.contains(&metrics.to_string()) && error.contains("--metrics-listen"), "{error}");

    // Requests the limiter refuses are counted, and answered 429 under their route's template.
    let limited = start_daemon(&anvil.http_url(), |c| {
        c.api.rate_limit.per_second = 1;
        c.api.rate_limit.burst = 2;
    })
    .await;
    let mut refused = 0;
    for _ in 0..6 {
        if http::get(limited.daemon.addr(), "/api/v2/stats").await.status == 429 {
            refused += 1;
        }
    }
    assert!(refused >= 3, "{refused} refused");
    let text = http::metrics_text(limited.daemon.metrics_addr().unwrap()).await;
    assert!(text.contains(&format!("\nrockscout_http_rate_limited_total {refused}\n")), "{text}");
    let series = format!("\nrockscout_http_requests_total{{route=\"/api/v2/stats\",code=\"429\"}} {refused}\n");
    assert!(text.contains(&series), "{text}");
    limited.daemon.shutdown().await.unwrap();

    // Off: no listener.
    let off = start_daemon(&anvil.http_url(), |c| c.metrics_listen = None).await;
    assert_eq!(off.daemon.metrics_addr(), None);
    off.daemon.shutdown().await.unwrap();
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reorg_is_counted_with_its_depth() {
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 6, 2).await;
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let tip = wait_synced(&t.daemon, &node).await;
    let metrics = t.daemon.metrics_addr().unwrap();
    assert!(http::metrics_text(metrics).await.contains("\nrockscout_reorgs_total 0\n"));

    const DEPTH: u64 = 3;
    let payee = alloy::primitives::Address::repeat_byte(0xa7);
    let pairs = serde_json::json!([[{"from": accounts[1], "to": payee, "value": "0x309"}, 0]]);
    let _: serde_json::Value = node.raw_request("anvil_reorg".into(), serde_json::json!([DEPTH, pairs])).await.unwrap();
    wait_synced(&t.daemon, &node).await;
    let text = poll_until("the reorg to be counted", Duration::from_secs(30), || async {
        let text = http::metrics_text(metrics).await;
        text.contains("\nrockscout_reorgs_total 1\n").then_some(text)
    })
    .await;
    assert!(text.contains("\nrockscout_reorg_depth_blocks_count 1\n"), "{text}");
    assert!(text.contains(&format!("\nrockscout_reorg_depth_blocks_sum {DEPTH}.0\n")), "{text}");
    // The replaced blocks were committed twice: once on each branch.
    let blocks = format!("\nrockscout_blocks_indexed_total {}\n", tip + 1 + DEPTH);
    assert!(text.contains(&blocks), "{text}");
    t.daemon.shutdown().await.unwrap();
}

//! Connection and WebSocket hardening: idle connections in every state are cut so new clients get a slot, a
//! client that never reads loses its slot, shutdown does not wait for idle HTTP/2 connections, a refused request
//! body is read to its end so its client reads the answer, and the WebSocket bounds whole messages, answers pings at
//! once, closes protocol errors with 1002/1007 and bounds topics. WebSocket frames are written by hand over a raw
//! TCP stream to send what real clients never do.

use crate::support::ws::WsClient;
use crate::support::*;
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PATH: &str = "/socket/v2/websocket?vsn=2.0.0";

/// The client connection preface of HTTP/2 followed by an empty SETTINGS frame (prior knowledge, h2c).
const H2C_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Reads until the server closes the connection (EOF or reset), failing after `timeout`.
async fn closed_by_server(stream: &mut TcpStream, timeout: Duration, what: &str) {
    let mut sink = Vec::new();
    let read = tokio::time::timeout(timeout, stream.read_to_end(&mut sink)).await;
    assert!(read.is_ok(), "the server closed the {what} connection within {timeout:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_partial_and_idle_h2c_connections_are_closed_so_new_clients_are_served() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.max_connections = 4;
        c.api.idle_timeout = Duration::from_millis(1500);
    })
    .await;
    let addr = t.daemon.addr();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut partial_preface = TcpStream::connect(addr).await.unwrap();
    partial_preface.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    let mut idle_h2c = TcpStream::connect(addr).await.unwrap();
    idle_h2c.write_all(H2C_PREFACE).await.unwrap();
    // The server's SETTINGS frame: the connection is past detection and speaks HTTP/2.
    let mut head = [0u8; 9];
    idle_h2c.read_exact(&mut head).await.unwrap();
    assert_eq!(head[3], 0x4, "the server sends SETTINGS first");
    let mut trickle = TcpStream::connect(addr).await.unwrap();
    trickle.write_all(b"P").await.unwrap();

    // Every slot is taken: the fifth client is served once the idle connections are cut.
    let served = tokio::time::timeout(Duration::from_secs(20), http::get(addr, "/api/v2/config/backend-version")).await;
    assert_eq!(served.expect("a new client is served once idle connections are closed").status, 200);
    for (stream, what) in [(&mut silent, "silent"), (&mut partial_preface, "partial preface"), (&mut trickle, "1-byte")]
    {
        closed_by_server(stream, Duration::from_secs(10), what).await;
    }
    // The idle HTTP/2 client is told to go away (GOAWAY, no error) before its connection closes.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), idle_h2c.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the server closed the idle h2c connection");
    let mut frames = Vec::new();
    let mut at = usize::from(u16::from_be_bytes([head[1], head[2]])) + usize::from(head[0]) * 65536;
    while at + 9 <= rest.len() {
        let length = usize::from(rest[at]) * 65536 + usize::from(u16::from_be_bytes([rest[at + 1], rest[at + 2]]));
        frames.push((rest[at + 3], rest.get(at + 9..at + 9 + length).map(<[u8]>::to_vec)));
        at += 9 + length;
    }
    let goaway = frames.iter().find(|(kind, _)| *kind == 0x7).unwrap_or_else(|| panic!("a GOAWAY among {frames:?}"));
    let payload = goaway.1.as_ref().expect("the whole GOAWAY frame");
    assert_eq!(&payload[4..8], &[0, 0, 0, 0], "GOAWAY with NO_ERROR");
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_pipelines_and_never_reads_loses_its_slot() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.max_connections = 1;
        c.api.write_timeout = Duration::from_secs(1);
        // Long enough that only the write timeout can free the slot within the test's deadline.
        c.api.idle_timeout = Duration::from_secs(600);
        c.api.header_read_timeout = Duration::from_secs(600);
    })
    .await;
    let addr = t.daemon.addr();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut greedy = socket.connect(addr).await.unwrap();
    let requests = b"GET /api/v2/stats HTTP/1.1\r\nHost: x\r\n\r\n".repeat(100);
    // Pipelines until the server stops reading (its writes are stuck behind the unread responses).
    let writer = tokio::spawn(async move {
        let mut sent = 0usize;
        while sent < 100_000 && greedy.write_all(&requests).await.is_ok() {
            sent += 100;
        }
        greedy
    });
    let served = tokio::time::timeout(Duration::from_secs(30), http::get(addr, "/api/v2/config/backend-version")).await;
    assert_eq!(served.expect("the stuck connection's slot is freed by the write timeout").status, 200);
    writer.abort();
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_idle_h2c_and_undetected_connections_at_once() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.idle_timeout = Duration::from_secs(600);
        c.api.shutdown_grace = Duration::from_secs(10);
    })
    .await;
    let addr = t.daemon.addr();
    let mut idle_h2c = TcpStream::connect(addr).await.unwrap();
    idle_h2c.write_all(H2C_PREFACE).await.unwrap();
    let mut head = [0u8; 9];
    idle_h2c.read_exact(&mut head).await.unwrap();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    // The silent connection has been accepted once a request after it is served.
    assert_eq!(http::get(addr, "/api/v2/config/backend-version").await.status, 200);
    let drained = t.daemon.shutdown_drained().await.unwrap();
    assert!(drained, "every connection closed within the grace period");
    closed_by_server(&mut idle_h2c, Duration::from_secs(5), "idle h2c").await;
    closed_by_server(&mut silent, Duration::from_secs(5), "silent").await;
}

/// A WebSocket connection after a hand-made upgrade, for writing frames real clients never send.
struct RawWs {
    stream: TcpStream,
}

/// One frame from the server.
#[derive(Debug, PartialEq)]
enum ServerFrame {
    Text(String),
    Pong(Vec<u8>),
    Close(u16),
    /// The connection ended without a close frame.
    Ended,
}

const FIN: u8 = 0x80;
const TEXT: u8 = 0x1;
const CONTINUATION: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;

impl RawWs {
    async fn connect(addr: SocketAddr) -> RawWs {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "GET {PATH} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        while !response.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.unwrap();
            response.push(byte[0]);
        }
        let response = String::from_utf8(response).unwrap();
        assert!(response.starts_with("HTTP/1.1 101"), "{response}");
        RawWs { stream }
    }

    /// Sends one frame; `first` is the first header byte (FIN, RSV bits and opcode).
    async fn send(&mut self, first: u8, payload: &[u8], masked: bool) {
        let mut frame = vec![first];
        let mask_bit = if masked { 0x80 } else { 0 };
        match payload.len() {
            n if n < 126 => frame.push(mask_bit | n as u8),
            n if n <= 0xffff => {
                frame.push(mask_bit | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(mask_bit | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        if masked {
            let key = [0x12, 0x34, 0x56, 0x78];
            frame.extend_from_slice(&key);
            frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        } else {
            frame.extend_from_slice(payload);
        }
        // The server may close while a frame is still being written: the next read reports it.
        let _ = self.stream.write_all(&frame).await;
    }

    async fn send_masked(&mut self, first: u8, payload: &[u8]) {
        self.send(first, payload, true).await;
    }

    /// The next frame from the server, failing after `timeout`.
    async fn recv(&mut self, timeout: Duration) -> ServerFrame {
        tokio::time::timeout(timeout, self.read_frame()).await.expect("a server frame within the deadline")
    }

    async fn read_frame(&mut self) -> ServerFrame {
        let mut head = [0u8; 2];
        if self.stream.read_exact(&mut head).await.is_err() {
            return ServerFrame::Ended;
        }
        assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
        let len = match head[1] & 0x7f {
            126 => {
                let mut n = [0u8; 2];
                self.stream.read_exact(&mut n).await.unwrap();
                u16::from_be_bytes(n) as usize
            }
            127 => {
                let mut n = [0u8; 8];
                self.stream.read_exact(&mut n).await.unwrap();
                u64::from_be_bytes(n) as usize
            }
            n => n as usize,
        };
        let mut payload = vec![0u8; len];
        if self.stream.read_exact(&mut payload).await.is_err() {
            return ServerFrame::Ended;
        }
        match head[0] & 0x0f {
            0x1 => ServerFrame::Text(String::from_utf8(payload).unwrap()),
            0xa => ServerFrame::Pong(payload),
            0x8 => ServerFrame::Close(u16::from_be_bytes([payload[0], payload[1]])),
            other => panic!("unexpected opcode {other:#x}"),
        }
    }
}

/// A Phoenix heartbeat with ref `msg_ref` padded to exactly `size` bytes.
fn heartbeat_of_size(msg_ref: &str, size: usize) -> Vec<u8> {
    let empty = json!([null, msg_ref, "phoenix", "heartbeat", {"pad": ""}]).to_string();
    let text = json!([null, msg_ref, "phoenix", "heartbeat", {"pad": "x".repeat(size - empty.len())}]).to_string();
    assert_eq!(text.len(), size);
    text.into_bytes()
}

fn reply_ref(frame: &ServerFrame) -> Option<String> {
    let ServerFrame::Text(text) = frame else { return None };
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value[1].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_messages_are_bounded_as_a_whole_at_exactly_65536_bytes() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let limit = 65_536;
    let wait = Duration::from_secs(10);

    // One frame of exactly the limit is accepted.
    let mut ws = RawWs::connect(addr).await;
    ws.send_masked(FIN | TEXT, &heartbeat_of_size("single", limit)).await;
    assert_eq!(reply_ref(&ws.recv(wait).await).as_deref(), Some("single"));

    // The same size in three fragments is accepted too.
    let message = heartbeat_of_size("fragmented", limit);
    ws.send_masked(TEXT, &message[..30_000]).await;
    ws.send_masked(CONTINUATION, &message[30_000..60_000]).await;
    ws.send_masked(FIN | CONTINUATION, &message[60_000..]).await;
    assert_eq!(reply_ref(&ws.recv(wait).await).as_deref(), Some("fragmented"));

    // One byte more, in fragments each well under the limit, is refused with 1009 before the message ends.
    let message = heartbeat_of_size("over", limit + 1);
    ws.send_masked(TEXT, &message[..30_000]).await;
    ws.send_masked(CONTINUATION, &message[30_000..60_000]).await;
    ws.send_masked(CONTINUATION, &message[60_000..]).await;
    assert_eq!(ws.recv(wait).await, ServerFrame::Close(1009));

    // An endless stream of 65,000-byte continuations is cut at the limit too.
    let mut flood = RawWs::connect(addr).await;
    flood.send_masked(TEXT, b"[").await;
    let chunk = vec![b' '; 65_000];
    flood.send_masked(CONTINUATION, &chunk).await;
    flood.send_masked(CONTINUATION, &chunk).await;
    assert_eq!(flood.recv(wait).await, ServerFrame::Close(1009));
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_pings_are_answered_at_once_and_keep_the_connection_open() {
    let anvil = start_anvil();
    let idle = Duration::from_millis(3000);
    let t = start_daemon(&anvil.http_url(), |c| c.api.ws.idle_timeout = idle).await;
    let mut ws = RawWs::connect(t.daemon.addr()).await;
    // Keep-alive pings only, for three idle timeouts: every ping gets its pong without any data frame. A ping every
    // sixth of the timeout leaves room for a loaded machine's stalls between them.
    let mut elapsed = Duration::ZERO;
    let mut n = 0u32;
    while elapsed < idle * 3 {
        let payload = format!("ping {n}");
        ws.send_masked(FIN | PING, payload.as_bytes()).await;
        assert_eq!(ws.recv(Duration::from_secs(5)).await, ServerFrame::Pong(payload.into_bytes()));
        tokio::time::sleep(idle / 6).await;
        elapsed += idle / 6;
        n += 1;
    }
    // Still open: a heartbeat is answered.
    ws.send_masked(FIN | TEXT, json!([null, "alive", "phoenix", "heartbeat", {}]).to_string().as_bytes()).await;
    assert_eq!(reply_ref(&ws.recv(Duration::from_secs(5)).await).as_deref(), Some("alive"));
    // A close from the client is answered with its code.
    ws.send_masked(FIN | CLOSE, &1000u16.to_be_bytes()).await;
    assert_eq!(ws.recv(Duration::from_secs(5)).await, ServerFrame::Close(1000));
    let metrics = t.daemon.metrics_addr().expect("the harness serves metrics");
    let idle_closed = || async {
        http::metrics_text(metrics)
            .await
            .lines()
            .find_map(|l| l.strip_prefix("rockscout_ws_idle_closed_total ")?.parse::<u64>().ok())
    };
    assert_eq!(idle_closed().await, Some(0), "the pinged connection was not closed as idle");
    // Silence beyond the idle timeout (no frame at all) closes with 1000, as Cowboy does, and is counted.
    // The clock starts before the handshake: the server's idle timer starts when it accepts, before `connect`
    // returns, so an instant taken after it could see a correct close a little under the timeout.
    let opened = std::time::Instant::now();
    let mut silent = RawWs::connect(t.daemon.addr()).await;
    assert_eq!(silent.recv(Duration::from_secs(10)).await, ServerFrame::Close(1000));
    assert!(opened.elapsed() >= idle, "closed after {:?}, before the idle timeout", opened.elapsed());
    assert_eq!(idle_closed().await, Some(1));
    t.daemon.shutdown().await.unwrap();
}

/// One raw frame a test sends: first byte (FIN, RSV and opcode), payload, whether it is masked.
type RawFrame = (u8, Vec<u8>, bool);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_protocol_errors_close_with_1002_or_1007() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let heartbeat = json!([null, "1", "phoenix", "heartbeat", {}]).to_string().into_bytes();
    let cases: Vec<(&str, Vec<RawFrame>, u16)> = vec![
        ("RSV1 set", vec![(FIN | 0x40 | TEXT, heartbeat.clone(), true)], 1002),
        ("unknown opcode", vec![(FIN | 0x3, vec![], true)], 1002),
        ("continuation without a message", vec![(FIN | CONTINUATION, heartbeat.clone(), true)], 1002),
        ("unmasked frame", vec![(FIN | TEXT, heartbeat.clone(), false)], 1002),
        (
            "new message inside a fragmented one",
            vec![(TEXT, b"[".to_vec(), true), (FIN | TEXT, b"[]".to_vec(), true)],
            1002,
        ),
        ("fragmented ping", vec![(PING, b"x".to_vec(), true)], 1002),
        ("close code 1005", vec![(FIN | CLOSE, 1005u16.to_be_bytes().to_vec(), true)], 1002),
        ("invalid UTF-8", vec![(FIN | TEXT, vec![b'[', 0xff, b']'], true)], 1007),
        (
            "invalid UTF-8 across fragments",
            vec![(TEXT, vec![b'[', 0xe2, 0x82], true), (FIN | CONTINUATION, b"]".to_vec(), true)],
            1007,
        ),
    ];
    for (what, frames, code) in cases {
        let mut ws = RawWs::connect(addr).await;
        for (first, payload, masked) in frames {
            ws.send(first, &payload, masked).await;
        }
        assert_eq!(ws.recv(Duration::from_secs(5)).await, ServerFrame::Close(code), "{what}");
        assert_eq!(ws.recv(Duration::from_secs(5)).await, ServerFrame::Ended, "{what}: closed after the close frame");
    }
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_topics_are_bounded_in_length() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let mut c = WsClient::connect(t.daemon.addr(), PATH).await;
    let longest = format!("transactions:{}", "a".repeat(256 - "transactions:".len()));
    c.send(&json!(["1", "1", longest, "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "ok", "a 256-byte topic is joined");
    let too_long = format!("{longest}a");
    c.send(&json!(["2", "2", too_long, "phx_join", {}])).await;
    assert_eq!(
        c.frame().await[4],
        json!({"status": "error", "response": {"reason": "topic too long (at most 256 bytes)"}})
    );
    let huge = format!("transactions:{}", "a".repeat(65_000));
    c.send(&json!(["3", "3", huge, "phx_join", {}])).await;
    assert_eq!(c.frame().await[4]["status"], "error");
    let long_ref = "r".repeat(100);
    c.send(&json!([long_ref, "4", "blocks:new_block", "phx_join", {}])).await;
    assert_eq!(
        c.frame().await[4],
        json!({"status": "error", "response": {"reason": "join_ref too long (at most 64 bytes)"}})
    );
    t.daemon.shutdown().await.unwrap();
}

/// Sends `request` as raw bytes and reads the whole answer (the server closes after an unparsable head).
/// What the server sends for `request` until it closes or stays silent for a second (an accepted upgrade stays open).
async fn handshake(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let (mut answer, mut chunk) = (Vec::new(), [0u8; 4096]);
    while let Ok(Ok(n @ 1..)) = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut chunk)).await {
        answer.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&answer).into_owned()
}

async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // The server may answer and close before it has read everything.
    let _ = stream.write_all(request).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server answers and closes");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_request_heads_get_json_cors_and_rate_limit_headers() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rate_limit = rockscout::api::limits::RateLimitConfig { per_second: 100, burst: 200, ..Default::default() }
    })
    .await;
    let addr = t.daemon.addr();
    // Whole requests the server reads to the end (so closing never resets the socket before the answer is read).
    let many_headers: String = (0..150).map(|i| format!("x-h{i}: v\r\n")).collect();
    let many_headers = format!("GET /health HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n");
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    let cases: [(&str, &[u8], u16, &str); 3] = [
        ("bad request line", b"NOT A REQUEST\r\n\r\n", 400, "Malformed HTTP request"),
        ("150 headers", many_headers.as_bytes(), 431, "Request header fields too large"),
        ("long URI", long_uri.as_bytes(), 414, "URI too long"),
    ];
    for (what, request, status, message) in cases {
        let answer = raw_exchange(addr, request).await;
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{what}: {answer:?}"));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{what}: {head}");
        let head = head.to_ascii_lowercase();
        for header in ["content-type: application/json", "access-control-allow-origin: *", "x-ratelimit-limit: 200"] {
            assert!(head.contains(header), "{what}: {header} in {head}");
        }
        let body: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{what}: {e}: {body}"));
        assert_eq!(body, json!({ "message": message }), "{what}");
    }
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_client_that_never_opens_its_window_loses_its_slot() {
    use http_body_util::Empty;
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.max_connections = 1;
        c.api.write_timeout = Duration::from_secs(1);
        c.api.idle_timeout = Duration::from_secs(600);
    })
    .await;
    let addr = t.daemon.addr();
    // An h2c client whose stream window is 0: the server can send response headers but no body byte.
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
        .initial_stream_window_size(0)
        .handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .unwrap();
    let client_connection = tokio::spawn(connection);
    let request = hyper::Request::get(format!("http://{addr}/api/v2/config/backend-version"))
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200, "the headers arrive; the body cannot");
    let served = tokio::time::timeout(Duration::from_secs(30), http::get(addr, "/api/v2/config/backend-version")).await;
    assert_eq!(served.expect("the stalled HTTP/2 connection's slot is freed").status, 200);
    let ended = tokio::time::timeout(Duration::from_secs(10), client_connection).await;
    assert!(ended.is_ok(), "the server closed the stalled HTTP/2 connection");
    drop(response);
    t.daemon.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_shorter_than_its_length_gets_408_not_the_request_timeout() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| c.api.request_timeout = Duration::from_secs(3)).await;
    let addr = t.daemon.addr();
    // Each body-reading surface: the passthrough, the Etherscan API, a read-method call, the account API.
    let routes = [
        ("/api/eth", "application/json"),
        ("/api", "application/x-www-form-urlencoded"),
        ("/api/v2/smart-contracts/0x5fbdb2315678afecb367f032d93f642f64180aa3/query-read-method", "application/json"),
        ("/api/account/v2/authenticate_via_wallet", "application/json"),
    ];
    for (path, content_type) in routes {
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\nContent-Length: 100\r\n\r\n{{\"a\":"
        );
        // The server answers and closes, as the rest of the body never comes.
        let answer = raw_exchange(addr, request.as_bytes()).await;
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{path}: {answer:?}"));
        assert!(head.starts_with("HTTP/1.1 408 "), "{path}: {head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        // The passthrough answers in JSON-RPC's shape, as to a body over its limit.
        let message = body["message"].as_str().or(body["error"]["message"].as_str()).unwrap_or_default();
        assert!(message.contains("within 2 s"), "{path}: {body}");
        assert_eq!(body["jsonrpc"].is_string(), path == "/api/eth", "{path}: {body}");
    }
    t.daemon.shutdown().await.unwrap();
}

/// Sends `head` and `sent` bytes of its body on a new connection: the answer if one comes within a second after.
async fn large_body_answer(addr: SocketAddr, head: &str, sent: usize) -> Option<String> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    stream.write_all(head.as_bytes()).await.ok()?;
    // The server may refuse before it has read everything.
    let _ = stream.write_all(&vec![b'a'; sent]).await;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(1), async {
        while !String::from_utf8_lossy(&answer).contains("}") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| String::from_utf8_lossy(&answer).into_owned())
}

/// Sends `head` and `sent` bytes of its body on a new connection and keeps the connection open.
async fn hold_body(addr: SocketAddr, head: String, sent: usize) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let _ = stream.write_all(&vec![b'a'; sent]).await;
    stream
}

/// Probes with a large body (`probe`, all but its last byte sent) until the answer has `status`. After each probe
/// that found room, one more body of 9 MiB is held with the next of `refills`: the server takes room as bytes
/// arrive, so a probe whose bytes got ahead of a holder's took that holder's room, the holder was refused, and
/// every later probe would fit in the room it left.
async fn probe_until_refused(
    addr: SocketAddr,
    probe: &str,
    status: &str,
    holding: &mut Vec<TcpStream>,
    mut refills: impl Iterator<Item = String>,
) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let answer = large_body_answer(addr, probe, (10 << 20) - 1).await;
        if let Some(refused) = answer.filter(|a| a.starts_with(&format!("HTTP/1.1 {status} "))) {
            return refused;
        }
        assert!(tokio::time::Instant::now() < deadline, "no {status} within 20 s");
        holding.push(hold_body(addr, refills.next().expect("a client to refill with"), 9 << 20).await);
    }
}

/// Large bodies that never finish hold room in one server-wide budget for the bytes they sent, not for their declared
/// length: announcing bodies holds nothing, one client holds at most a quarter of the budget (429 past that), past
/// the whole budget a large body is refused with 503, small requests go on, and the room returns as the
/// connections close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_large_bodies_share_one_budget() {
    let anvil = start_anvil();
    // Clients behind a trusted proxy on loopback, told apart by X-Forwarded-For.
    let t = start_daemon(&anvil.http_url(), |c| c.api.rate_limit.trusted_proxies = vec!["127.0.0.1".parse().unwrap()])
        .await;
    let addr = t.daemon.addr();
    let size = 10 << 20;
    let head = |client: usize| {
        format!(
            "POST /api?module=x&action=y HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 203.0.113.{client}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {size}\r\n\r\n"
        )
    };
    // Bodies announced and not sent hold nothing: a client with more of them than the budget is served.
    let mut announced = Vec::new();
    for client in 100..108 {
        announced.push(hold_body(addr, head(client), 0).await);
    }
    assert_eq!(large_body_answer(addr, &head(99), size - 1).await, None, "read until the body timeout, not refused");
    drop(announced);
    // One client's second large body at once is over its share.
    let mut holding = vec![hold_body(addr, head(1), 9 << 20).await];
    let refused = probe_until_refused(addr, &head(1), "429", &mut holding, std::iter::repeat_with(|| head(1))).await;
    assert!(refused.contains("too many large request bodies from this client at once"), "{refused}");
    // More clients than fit: past the whole budget a large body is refused.
    for client in 2..rockscout::api::BODY_BUDGET / size + 2 {
        holding.push(hold_body(addr, head(client), 9 << 20).await);
    }
    let refused = probe_until_refused(addr, &head(250), "503", &mut holding, (20..250).map(head)).await;
    let body: serde_json::Value = serde_json::from_str(refused.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert!(body["message"].as_str().unwrap().contains("large request bodies"), "{body}");
    assert_eq!(http::get(addr, "/api/v2/config/backend-version").await.status, 200, "small requests go on");
    let path = "/api?module=block&action=eth_block_number";
    let small = http::request(addr, hyper::Method::POST, path, &[], bytes::Bytes::from_static(b"a=1")).await;
    assert_eq!(small.status, 200, "bodies under 64 KiB need no room");
    drop(holding);
    // A body that finds room is read (until the body timeout): no answer within the second.
    poll_until("the budget to return", Duration::from_secs(20), || async {
        large_body_answer(addr, &head(1), size - 1).await.is_none().then_some(())
    })
    .await;
    t.daemon.shutdown().await.unwrap();
}

/// With rate limiting on, one client holds at most `max_connections_per_ip` connections: connections that never send
/// a request (which the rate limit does not count) cannot take every slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_holds_at_most_its_connections() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| {
        c.api.rate_limit.per_second = 1_000;
        c.api.rate_limit.burst = 1_000;
        c.api.max_connections_per_ip = 3;
    })
    .await;
    let addr = t.daemon.addr();
    let mut silent = Vec::new();
    for _ in 0..3 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    // The fourth is closed at once, before the idle timeout would.
    poll_until("a connection over the limit to be closed", Duration::from_secs(10), || async {
        let mut extra = TcpStream::connect(addr).await.ok()?;
        let mut byte = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_secs(2), extra.read(&mut byte)).await;
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))).then_some(())
    })
    .await;
    drop(silent);
    let request = b"GET /api/v2/config/backend-version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    poll_until("the client to be served again", Duration::from_secs(10), || async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(request).await.ok()?;
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut answer)).await.ok()?.ok()?;
        answer.starts_with(b"HTTP/1.1 200 ").then_some(())
    })
    .await;
    // An upgraded WebSocket leaves the HTTP count but not the client's: a fourth is refused with 429, and a place
    // given back is taken again.
    let mut sockets = Vec::new();
    for _ in 0..3 {
        sockets.push(RawWs::connect(addr).await);
    }
    let upgrade = format!(
        "GET {PATH} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    let refused = handshake(addr, &upgrade).await;
    assert!(refused.starts_with("HTTP/1.1 429 "), "{refused}");
    assert!(refused.contains("too many WebSocket connections from this client (at most 3)"), "{refused}");
    sockets.pop().unwrap().send_masked(FIN | CLOSE, &1000u16.to_be_bytes()).await;
    poll_until("a WebSocket place to be given back", Duration::from_secs(10), || async {
        handshake(addr, &upgrade).await.starts_with("HTTP/1.1 101 ").then_some(())
    })
    .await;
    t.daemon.shutdown().await.unwrap();
}

/// A WebSocket handshake with another protocol version gets 426 naming version 13; a malformed key gets 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_handshakes_name_the_version_and_check_the_key() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let handshake = |version: &str, key: &str| {
        format!(
            "GET {PATH} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: {version}\r\nSec-WebSocket-Key: {key}\r\n\r\n"
        )
    };
    // The response head, lowercased.
    let head_of = |request: String| async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await;
            assert!(matches!(read, Ok(Ok(1))), "a response head: {}", String::from_utf8_lossy(&head));
            head.push(byte[0]);
        }
        String::from_utf8_lossy(&head).to_lowercase()
    };
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    let old = head_of(handshake("8", key)).await;
    assert!(old.starts_with("http/1.1 426 ") && old.contains("sec-websocket-version: 13"), "{old}");
    let bad = head_of(handshake("13", "abc")).await;
    assert!(bad.starts_with("http/1.1 400 "), "{bad}");
    let good = head_of(handshake("13", key)).await;
    assert!(good.starts_with("http/1.1 101 "), "{good}");
    t.daemon.shutdown().await.unwrap();
}

/// The binary raises its soft limit of open files to the hard one: under a shell's usual 1,024, a thousand idle
/// WebSockets of one crowd left the follower no socket to reach the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_raises_its_open_file_limit() {
    use std::os::unix::process::CommandExt;
    let anvil = start_anvil();
    let dir = tempfile::tempdir().unwrap();
    let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes only the struct passed.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut own) }, 0);
    assert!(own.rlim_max > 256, "this machine's hard limit ({}) leaves nothing to raise", own.rlim_max);
    let expected = if own.rlim_max == libc::RLIM_INFINITY { 1 << 20 } else { own.rlim_max };
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_rockscout"));
    command
        .args(["run", "--rpc-url", &anvil.http_url(), "--listen", "127.0.0.1:0", "--metrics-listen", "off"])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let hard = own.rlim_max;
    // SAFETY: the closure only calls setrlimit, which is async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let low = libc::rlimit { rlim_cur: 256, rlim_max: hard };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &low) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let mut child = command.spawn().expect("the rockscout binary starts");
    let limits = format!("/proc/{}/limits", child.id());
    let soft = poll_until("the daemon to raise its open file limit", Duration::from_secs(20), || async {
        let text = std::fs::read_to_string(&limits).ok()?;
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        let soft: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
        (soft != 256).then_some(soft)
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(soft, expected, "soft limit raised to the hard one");

    // A hard limit below the connections the server admits is named at start.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_rockscout"));
    command
        .args(["run", "--rpc-url", &anvil.http_url(), "--listen", "127.0.0.1:0", "--metrics-listen", "off"])
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: as above.
    unsafe {
        command.pre_exec(|| {
            let low = libc::rlimit { rlim_cur: 2048, rlim_max: 2048 };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &low) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let mut child = command.spawn().expect("the rockscout binary starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let warned = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.recv().await {
            if line.contains("the open file limit is below the connections the server admits") {
                return line;
            }
        }
        String::new()
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    let warned = warned.expect("a warning within 20 s");
    assert!(warned.contains("open_files=2048") && warned.contains("connections=11024"), "{warned}");
}

/// Writes `head` and then all of `body`, as clients that read only once they have sent everything do, then reads
/// one whole response (its head and `Content-Length` bytes); `Err` names what failed.
async fn send_all_then_read(stream: &mut TcpStream, head: &str, body: &[u8]) -> Result<String, String> {
    stream.write_all(head.as_bytes()).await.map_err(|e| format!("writing the head: {e}"))?;
    stream.write_all(body).await.map_err(|e| format!("writing the body: {e}"))?;
    read_response(stream).await
}

async fn read_response(stream: &mut TcpStream) -> Result<String, String> {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let text = String::from_utf8_lossy(&answer).into_owned();
            if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(|n| n.parse::<usize>()))
                    .and_then(Result::ok);
                if length.is_some_and(|n| rest.len() >= n) {
                    return Ok(text);
                }
            }
            match stream.read(&mut chunk).await {
                Ok(0) => return Err(format!("closed after {:?}", String::from_utf8_lossy(&answer))),
                Err(e) => return Err(format!("reading: {e} after {:?}", String::from_utf8_lossy(&answer))),
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    read.map_err(|_| "no whole answer within 10 s".to_string())?
}

/// A body the server refuses (over its limit, or sent to a route that takes none) is still read to its end, so a
/// client that writes all of it before reading gets the JSON answer instead of a reset connection, and can go on
/// using the connection; a client that waits for `100 Continue` is answered without sending anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_body_is_read_to_its_end_so_the_client_gets_the_answer() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |_| {}).await;
    let addr = t.daemon.addr();
    let large = vec![b'a'; 30 << 20];
    let cases = [
        ("/api/eth", "application/json", 413, "request body too large"),
        ("/api?module=contract&action=verifysourcecode", "application/x-www-form-urlencoded", 413, "too large"),
        ("/api/v2/blocks", "application/json", 405, "Method not allowed"),
    ];
    for (path, content_type, status, message) in cases {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            large.len()
        );
        let answer = send_all_then_read(&mut stream, &head, &large).await.unwrap_or_else(|e| panic!("{path}: {e}"));
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{path}: {head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        let said = body["message"].as_str().or(body["error"]["message"].as_str()).unwrap_or_default();
        assert!(said.contains(message), "{path}: {body}");
        // The connection was read to the end of the refused body, so it serves the next request.
        let next = "GET /api/v2/config/backend-version HTTP/1.1\r\nHost: x\r\n\r\n";
        let again = send_all_then_read(&mut stream, next, b"").await.unwrap_or_else(|e| panic!("{path}, next: {e}"));
        assert!(again.starts_with("HTTP/1.1 200 "), "{path}, next: {again}");
    }

    // Over the limit in chunks (no declared length): refused once the limit is passed, read to the end.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head =
        "POST /api/eth HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    let piece = [b'a'; 1 << 16];
    let mut chunked = Vec::new();
    for _ in 0..48 {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(&piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let answer = send_all_then_read(&mut stream, head, &chunked).await.unwrap_or_else(|e| panic!("chunked: {e}"));
    assert!(answer.starts_with("HTTP/1.1 413 "), "chunked: {answer}");

    // A client that waits for 100 Continue is refused on the declared length and never asked for the body.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/eth HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        large.len()
    );
    let answer = send_all_then_read(&mut stream, &head, b"").await.unwrap_or_else(|e| panic!("100-continue: {e}"));
    assert!(answer.starts_with("HTTP/1.1 413 "), "no 100 Continue, the refusal at once: {answer}");
    t.daemon.shutdown().await.unwrap();
}

/// A refused body is read on for at most eight connections of one client at once: the ninth closes right after its
/// answer, while the first eight are still being read. Behind a trusted proxy the client is the one it names, so
/// another client's refused body is still read on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_holds_at_most_eight_lingering_bodies() {
    let anvil = start_anvil();
    let t = start_daemon(&anvil.http_url(), |c| c.api.rate_limit.trusted_proxies = vec!["127.0.0.1".parse().unwrap()])
        .await;
    let addr = t.daemon.addr();
    let head = |client: u8| {
        format!(
            "POST /api/eth HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.{client}\r\nContent-Type: application/json\r\n\
             Content-Length: 31457280\r\n\r\n"
        )
    };
    let refused = |client: u8, i: usize| {
        let head = head(client);
        async move {
            let mut stream = hold_body(addr, head, 1 << 16).await;
            let answer = read_response(&mut stream).await.unwrap_or_else(|e| panic!("connection {i}: {e}"));
            assert!(answer.starts_with("HTTP/1.1 413 "), "connection {i}: {answer}");
            stream
        }
    };
    let mut lingering = Vec::new();
    for i in 0..9 {
        lingering.push(refused(1, i).await);
    }
    let mut ninth = lingering.pop().unwrap();
    closed_by_server(&mut ninth, Duration::from_secs(3), "ninth refused").await;
    lingering.push(refused(2, 9).await);
    // All at once: the first connection's body is read on for 5 s only, so the checks must not add up.
    let reads = lingering.iter_mut().map(|stream| async move {
        let mut byte = [0u8; 1];
        tokio::time::timeout(Duration::from_millis(50), stream.read(&mut byte)).await.is_err()
    });
    for (i, still_read) in futures_util::future::join_all(reads).await.into_iter().enumerate() {
        assert!(still_read, "connection {i} is still being read");
    }
    t.daemon.shutdown().await.unwrap();
}

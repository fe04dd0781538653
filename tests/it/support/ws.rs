//! A raw WebSocket client for asserting exact Phoenix frames (fastwebsockets' client handshake).

use bytes::Bytes;
use fastwebsockets::{FragmentCollector, Frame, OpCode, Payload};
use http_body_util::Empty;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

struct SpawnExecutor;

impl<F> hyper::rt::Executor<F> for SpawnExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        tokio::spawn(fut);
    }
}

/// What arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// A text frame, parsed.
    Frame(Value),
    /// A close frame with its code.
    Close(u16),
    /// The connection ended without a close frame.
    Ended,
}

/// A connected client.
pub struct WsClient {
    ws: FragmentCollector<TokioIo<Upgraded>>,
}

impl WsClient {
    /// Connects to `path` (e.g. `/socket/v2/websocket?vsn=2.0.0`).
    pub async fn connect(addr: SocketAddr, path: &str) -> WsClient {
        Self::try_connect(addr, path).await.unwrap_or_else(|e| panic!("websocket connect to {path}: {e}"))
    }

    /// Connects with a tiny socket receive buffer, so the server's writes stall as soon as this client stops
    /// reading.
    pub async fn connect_with_small_buffer(addr: SocketAddr, path: &str) -> WsClient {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let stream = socket.connect(addr).await.unwrap();
        Self::handshake(addr, path, stream).await.unwrap_or_else(|e| panic!("websocket connect to {path}: {e}"))
    }

    /// Connects, or returns the handshake error (e.g. an HTTP status).
    pub async fn try_connect(addr: SocketAddr, path: &str) -> Result<WsClient, String> {
        let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        Self::handshake(addr, path, stream).await
    }

    /// Connects with more request headers (e.g. a browser's `Cookie` and `Origin`).
    pub async fn connect_with_headers(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> WsClient {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        Self::handshake_with(addr, path, stream, headers).await.unwrap_or_else(|e| panic!("connect to {path}: {e}"))
    }

    async fn handshake(addr: SocketAddr, path: &str, stream: tokio::net::TcpStream) -> Result<WsClient, String> {
        Self::handshake_with(addr, path, stream, &[]).await
    }

    async fn handshake_with(
        addr: SocketAddr,
        path: &str,
        stream: tokio::net::TcpStream,
        headers: &[(&str, &str)],
    ) -> Result<WsClient, String> {
        let mut request = hyper::Request::builder()
            .method("GET")
            .uri(path)
            .header("host", addr.to_string())
            .header("upgrade", "websocket")
            .header("connection", "upgrade")
            .header("sec-websocket-key", fastwebsockets::handshake::generate_key())
            .header("sec-websocket-version", "13");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Empty::<Bytes>::new()).map_err(|e| e.to_string())?;
        let (ws, _) =
            fastwebsockets::handshake::client(&SpawnExecutor, request, stream).await.map_err(|e| e.to_string())?;
        Ok(WsClient { ws: FragmentCollector::new(ws) })
    }

    /// Sends a JSON value as a text frame.
    pub async fn send(&mut self, value: &Value) {
        self.send_text(&value.to_string()).await;
    }

    /// Sends raw text.
    pub async fn send_text(&mut self, text: &str) {
        self.ws.write_frame(Frame::text(Payload::Owned(text.as_bytes().to_vec()))).await.expect("send");
    }

    /// Sends a JSON value, ignoring failure (for a connection the server may already have dropped).
    pub async fn send_quietly(&mut self, value: &Value) {
        let _ = self.ws.write_frame(Frame::text(Payload::Owned(value.to_string().into_bytes()))).await;
    }

    /// Sends a binary frame.
    pub async fn send_binary(&mut self, bytes: &[u8]) {
        self.ws.write_frame(Frame::binary(Payload::Owned(bytes.to_vec()))).await.expect("send");
    }

    /// The next frame, failing after `timeout`.
    pub async fn recv(&mut self, timeout: Duration) -> Received {
        let frame = tokio::time::timeout(timeout, self.ws.read_frame()).await.expect("a frame within the deadline");
        match frame {
            Ok(frame) => match frame.opcode {
                OpCode::Text => Received::Frame(serde_json::from_slice(&frame.payload).expect("JSON frame")),
                OpCode::Close => {
                    let code = frame.payload.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]])).unwrap_or(1005);
                    Received::Close(code)
                }
                other => panic!("unexpected {other:?} frame"),
            },
            Err(_) => Received::Ended,
        }
    }

    /// The next text frame (fails on a close).
    pub async fn frame(&mut self) -> Value {
        match self.recv(Duration::from_secs(30)).await {
            Received::Frame(v) => v,
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    /// Frames until one satisfies `want` (others are skipped), within `timeout`.
    pub async fn until(&mut self, timeout: Duration, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.recv(left.max(Duration::from_millis(1))).await {
                Received::Frame(v) if want(&v) => return v,
                Received::Frame(_) => {}
                other => panic!("connection ended while waiting: {other:?}"),
            }
        }
    }
}

//! A minimal HTTP/1.1 client for tests (one connection per request).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Method, Request, StatusCode};
use std::net::SocketAddr;

/// A response as tests look at it.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON (panics with the body text if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// Sends one request; `Err` when the connection fails or closes before a whole response arrives.
pub async fn try_request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Result<Reply, String> {
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(conn);
    let mut builder = Request::builder().method(method).uri(path).header("host", addr.to_string());
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(Full::new(body.into())).map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| format!("response: {e}"))?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.map_err(|e| format!("body: {e}"))?.to_bytes();
    Ok(Reply { status, headers, body })
}

/// Sends one request (panics if no response arrives).
pub async fn request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Reply {
    try_request(addr, method, path, headers, body).await.unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `GET path`.
pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, Method::GET, path, &[], Bytes::new()).await
}

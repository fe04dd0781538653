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
    let mut builder = Request::builder().method(method).uri(path);
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        builder = builder.header("host", addr.to_string());
    }
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

/// The reply to `send` once it is refused (429) right after `drain` emptied the client's rate-limit bucket. The
/// bucket refills while requests run: on a slow machine a token may come back before `send`, so the bucket is drained
/// again and `send` repeated, a few times at most (a route outside that bucket is never refused).
pub async fn refused_once_drained<D, Drained, S, Sent>(drain: D, send: S) -> Reply
where
    D: Fn() -> Drained,
    Drained: std::future::Future,
    S: Fn() -> Sent,
    Sent: std::future::Future<Output = Reply>,
{
    let mut reply = send().await;
    for _ in 0..5 {
        if reply.status == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        drain().await;
        reply = send().await;
    }
    reply
}

/// `GET path`.
pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, Method::GET, path, &[], Bytes::new()).await
}

/// A scrape of the daemon's `/metrics` listener at `addr` (OpenMetrics text).
pub async fn metrics_text(addr: SocketAddr) -> String {
    let reply = get(addr, "/metrics").await;
    assert_eq!(reply.status, 200);
    let content_type = reply.headers["content-type"].to_str().unwrap();
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    String::from_utf8(reply.body.to_vec()).unwrap()
}

/// `GET path` expecting a 200 JSON body (panics with the body otherwise).
pub async fn get_json(addr: SocketAddr, path: &str) -> serde_json::Value {
    let reply = get(addr, path).await;
    assert_eq!(reply.status, 200, "GET {path}: {}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.headers["content-type"], "application/json; charset=utf-8");
    reply.json()
}

/// Follows `next_page_params` from `path` to the end; returns every item.
pub async fn walk(addr: SocketAddr, path: &str) -> Vec<serde_json::Value> {
    let mut items = Vec::new();
    let mut url = path.to_owned();
    for _ in 0..10_000 {
        let page = get_json(addr, &url).await;
        items.extend(page["items"].as_array().expect("items").iter().cloned());
        let Some(next) = page["next_page_params"].as_object() else { return items };
        let sep = if path.contains('?') { '&' } else { '?' };
        let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        let query: Vec<String> = next.iter().map(|(k, v)| format!("{k}={}", percent_encode(&text(v)))).collect();
        url = format!("{path}{sep}{}", query.join("&"));
    }
    panic!("pagination of {path} did not end");
}

/// Percent-encodes `text` for a query string or a form body (RFC 3986 unreserved characters stay as they are).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

//! An HTTP JSON-RPC relay between a daemon and its node that refuses (HTTP 503) the calls of one method naming one
//! value (a block or transaction hash) while told to, and passes everything else on: for tests of what the daemon
//! does when the node fails one piece of its work and not the rest.

use super::http;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Response, StatusCode};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Which calls are refused: of `method`, with `needle` in their parameters, `left` more times.
struct Rule {
    method: String,
    needle: String,
    left: usize,
}

#[derive(Default)]
struct Refusals {
    rule: Mutex<Option<Rule>>,
    /// Requests refused so far.
    count: AtomicUsize,
}

impl Refusals {
    /// Whether `body` (one call or a batch) is refused; counts it against the rule when it is.
    fn refuses(&self, body: &[u8]) -> bool {
        let mut rule = self.rule.lock().unwrap();
        let Some(rule) = rule.as_mut().filter(|rule| rule.left > 0) else { return false };
        let Ok(request) = serde_json::from_slice::<Value>(body) else { return false };
        let calls = match request {
            Value::Array(calls) => calls,
            call => vec![call],
        };
        let named =
            |call: &Value| call["method"] == rule.method.as_str() && call["params"].to_string().contains(&rule.needle);
        if !calls.iter().any(named) {
            return false;
        }
        rule.left -= 1;
        self.count.fetch_add(1, Ordering::SeqCst);
        true
    }
}

pub struct RefusingRelay {
    addr: SocketAddr,
    refusals: Arc<Refusals>,
}

impl RefusingRelay {
    /// Relays to the node at `node` (`http://host:port`).
    pub async fn start(node: &str) -> RefusingRelay {
        let node: SocketAddr = node.trim_start_matches("http://").trim_end_matches('/').parse().expect("node address");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let refusals = Arc::new(Refusals::default());
        let shared = refusals.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let refusals = shared.clone();
                let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let refusals = refusals.clone();
                    async move {
                        let body = request.into_body().collect().await?.to_bytes();
                        if refusals.refuses(&body) {
                            let refused = Full::new(Bytes::from_static(b"refused by the test's relay"));
                            return Ok::<_, hyper::Error>(
                                Response::builder().status(StatusCode::SERVICE_UNAVAILABLE).body(refused).unwrap(),
                            );
                        }
                        let headers = [("content-type", "application/json")];
                        let response = match http::try_request(node, Method::POST, "/", &headers, body).await {
                            Ok(reply) => Response::builder().status(reply.status).body(Full::new(reply.body)),
                            Err(e) => Response::builder().status(StatusCode::BAD_GATEWAY).body(Full::new(e.into())),
                        };
                        Ok(response.unwrap())
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
            }
        });
        RefusingRelay { addr, refusals }
    }

    /// The URL a daemon is given as its node.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Refuses the next `times` calls of `method` whose parameters name `hash`.
    pub fn refuse(&self, method: &str, hash: alloy::primitives::B256, times: usize) {
        let rule = Rule { method: method.into(), needle: format!("{hash:#x}"), left: times };
        *self.refusals.rule.lock().unwrap() = Some(rule);
    }

    /// Requests refused so far.
    pub fn refused(&self) -> usize {
        self.refusals.count.load(Ordering::SeqCst)
    }
}

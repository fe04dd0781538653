//! An HTTP JSON-RPC relay between a daemon and its node that refuses (HTTP 503) the `eth_getBalance` calls at one
//! block hash while told to, and passes everything else on: for tests of what the daemon does when the node fails
//! one piece of its work and not the rest.

use super::http;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Response, StatusCode};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Refusals {
    /// The block hash (lower-case hex) whose balance calls are refused.
    at: Mutex<Option<String>>,
    /// Requests refused so far.
    count: AtomicUsize,
}

impl Refusals {
    /// Whether `body` (one call or a batch) asks a balance at the refused block.
    fn refuses(&self, body: &[u8]) -> bool {
        let Some(at) = self.at.lock().unwrap().clone() else { return false };
        let Ok(request) = serde_json::from_slice::<Value>(body) else { return false };
        let calls = match request {
            Value::Array(calls) => calls,
            call => vec![call],
        };
        calls.iter().any(|call| call["method"] == "eth_getBalance" && call["params"].to_string().contains(&at))
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
                            refusals.count.fetch_add(1, Ordering::SeqCst);
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

    /// Refuses the balance calls at block `hash` from now on.
    pub fn refuse_balances_at(&self, hash: alloy::primitives::B256) {
        *self.refusals.at.lock().unwrap() = Some(format!("{hash:#x}"));
    }

    /// Requests refused so far.
    pub fn refused(&self) -> usize {
        self.refusals.count.load(Ordering::SeqCst)
    }
}

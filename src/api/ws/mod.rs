//! `/socket/v2/websocket`: Blockscout's Phoenix V2 channel socket, on fastwebsockets over hyper's upgrade.
//!
//! Each connection runs two tasks: a reader that reads raw frames and assembles them into bounded messages
//! (`frames.rs`: RFC 6455 checks, close 1002/1007/1009 on violations), and the session loop that owns the writer
//! and serves the protocol (`protocol.rs`), answers pings at once, queued broadcasts from the [`hub::Hub`], the
//! 45 s idle timeout (reset by every inbound frame, pings and pongs included), the hub's kick of a slow connection
//! (close 1013) and the server's shutdown (close 1001, which every Phoenix client reconnects on). Every write is
//! bounded in time, so a client that stops reading is dropped rather than holding its task.

mod frames;
pub mod hub;
pub mod protocol;
pub mod publish;
pub mod topic;

use super::body::Body;
use super::{ApiError, AppState};
use crate::api::request_body::RequestBody;
use fastwebsockets::{Frame, Payload, WebSocketError, WebSocketRead};
use hyper::header::HeaderValue;
use hyper::{Request, Response, StatusCode};
use protocol::Channels;
use std::time::Duration;
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio::time::Instant;

/// WebSocket limits.
#[derive(Debug, Clone)]
pub struct WsConfig {
    /// Close a connection that sent nothing for this long (Phoenix clients heartbeat every 30 s).
    pub idle_timeout: Duration,
    /// Largest inbound message in bytes, however it is fragmented: a message of exactly this size is accepted.
    pub max_message: usize,
    /// Most topics one connection may join.
    pub max_topics: usize,
    /// Most broadcast frames queued for one connection before it is dropped as too slow.
    pub queue: usize,
    /// Most WebSocket connections at once.
    pub max_connections: usize,
    /// Time one frame may take to write; a client that stops reading is dropped after it.
    pub write_timeout: Duration,
}

impl Default for WsConfig {
    fn default() -> Self {
        WsConfig {
            idle_timeout: Duration::from_secs(45),
            max_message: 64 << 10,
            max_topics: 100,
            queue: 1024,
            max_connections: 10_000,
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// Close codes.
mod close {
    /// Idle timeout (what Cowboy sends).
    pub const NORMAL: u16 = 1000;
    /// The server is shutting down.
    pub const GOING_AWAY: u16 = 1001;
    /// The connection's account token is no longer valid.
    pub const POLICY_VIOLATION: u16 = 1008;
    /// A binary frame: Phoenix V2 text protocol only.
    pub const UNSUPPORTED: u16 = 1003;
    /// A text frame that is not a Phoenix message.
    pub const INVALID_DATA: u16 = 1007;
    /// The connection could not keep up with its broadcasts.
    pub const TRY_AGAIN_LATER: u16 = 1013;
}

/// Whether the request's `Origin` (if any; non-browser clients send none) names the explorer's host: its public
/// host name (`--siwe-domain`, which a sign-in cookie off loopback needs) or else the host the request was sent to.
fn same_origin(headers: &hyper::HeaderMap, public_host: Option<&str>) -> bool {
    let Some(origin) = headers.get(hyper::header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let sent_to = headers.get(hyper::header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let host = public_host.unwrap_or(sent_to);
    let origin_host = origin.split_once("://").map_or("", |(_, rest)| rest).trim_end_matches('/');
    !host.is_empty() && origin_host.eq_ignore_ascii_case(host)
}

/// Answers the upgrade request of `GET /socket/v2/websocket` and starts the connection's tasks.
pub fn upgrade(
    mut req: Request<RequestBody>,
    state: &AppState,
    client: std::net::IpAddr,
) -> Result<Response<Body>, ApiError> {
    let query = super::query::Query::parse(req.uri().query());
    let vsn = query.get("vsn").map(str::to_owned);
    // An account token (`token=` connect parameter, `Authorization: Bearer` or the sign-in cookie) lets the
    // connection join its own `watchlist:` topic; without a valid one it is anonymous.
    let token = query.get("token").or_else(|| super::auth::presented_token(req.headers()));
    // The sign-in cookie counts only for the site's own pages: a page of another origin (a sibling subdomain, which
    // gets the cookie) connects anonymously.
    let by_cookie = query.get("token").is_none() && !req.headers().contains_key(hyper::header::AUTHORIZATION);
    let token = token.filter(|_| !by_cookie || same_origin(req.headers(), state.config.auth.siwe_domain.as_deref()));
    // Tokens count against the client's failed-authentication budget as over HTTP: once it is spent, a token is
    // not even checked (the connection is anonymous) until the window ends.
    let credential = token.and_then(|t| Some((t.to_owned(), super::auth::token_account(t, state, client).ok()?)));
    if vsn.as_deref().is_some_and(|v| !v.starts_with("2.0.")) {
        // Phoenix refuses serializer versions it does not speak with an empty 403.
        let mut response = Response::new(Body::default());
        *response.status_mut() = StatusCode::FORBIDDEN;
        return Ok(response);
    }
    if !fastwebsockets::upgrade::is_upgrade_request(&req) {
        return Err(ApiError::NotWebSocket);
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    if header("sec-websocket-version") != Some("13") {
        // RFC 6455 §4.4: name the version this server speaks.
        let mut response = super::body::json_response(
            StatusCode::UPGRADE_REQUIRED,
            &serde_json::json!({"message": "Unsupported WebSocket version: use 13"}),
        );
        response.headers_mut().insert("sec-websocket-version", HeaderValue::from_static("13"));
        return Ok(response);
    }
    if !header("sec-websocket-key").is_some_and(is_websocket_key) {
        return Err(ApiError::NotWebSocket);
    }
    let slot = match &state.ws.per_client {
        Some(per_client) if !state.limiter.spares_peer(client) => {
            Some(per_client.try_acquire(client).ok_or_else(|| {
                ApiError::Throttled(format!(
                    "too many WebSocket connections from this client (at most {})",
                    state.config.max_connections_per_ip
                ))
            })?)
        }
        _ => None,
    };
    let Ok(permit) = state.ws.permits.clone().try_acquire_owned() else {
        return Err(ApiError::Busy("too many WebSocket connections"));
    };
    let offers_phoenix = req
        .headers()
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|p| p.trim() == "phoenix"));
    let (upgrade_response, upgraded) =
        fastwebsockets::upgrade::upgrade(&mut req).map_err(|_| ApiError::NotWebSocket)?;
    let session_state = state.clone();
    state.ws.tracker.spawn(async move {
        match upgraded.await {
            Ok(ws) => session(ws, session_state, (permit, slot), credential).await,
            Err(e) => tracing::debug!(error = %e, "websocket upgrade failed"),
        }
    });
    let (parts, _) = upgrade_response.into_parts();
    let mut response = Response::from_parts(parts, Body::default());
    if offers_phoenix {
        response.headers_mut().insert("sec-websocket-protocol", HeaderValue::from_static("phoenix"));
    }
    Ok(response)
}

/// Whether `key` is a `Sec-WebSocket-Key`: 16 bytes in base64 (22 characters and `==`).
fn is_websocket_key(key: &str) -> bool {
    let (data, padding) = key.trim().split_at_checked(22).unwrap_or(("", ""));
    padding == "==" && data.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// What the reader task hands to the session loop.
enum Inbound {
    /// A frame that changes nothing by itself but shows the client is alive (pong, message fragment).
    Activity,
    /// A complete text message.
    Text(String),
    /// A ping, to be answered with a pong carrying this payload.
    Ping(Vec<u8>),
    /// The client started a binary message.
    Binary,
    /// The client closed, with its status code if it sent one.
    Close(Option<u16>),
    /// The client broke the protocol: close with this code and reason.
    Violation(frames::Violation),
    /// The connection ended without a close frame.
    Ended,
}

type Upgraded = hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>;

/// Whether the client set the mask bit (fastwebsockets keeps the key private but writes it into a frame head).
fn is_masked(frame: &mut Frame<'_>) -> bool {
    let mut head = [0u8; 16];
    frame.fmt_head(&mut head);
    head[1] & 0x80 != 0
}

/// What a read error means: a protocol violation to answer with a close frame, or a connection that is gone.
fn read_error(error: &WebSocketError) -> Inbound {
    use frames::Violation;
    match error {
        WebSocketError::ReservedBitsNotZero => Inbound::Violation(Violation::Protocol("reserved bits set")),
        WebSocketError::InvalidValue => Inbound::Violation(Violation::Protocol("unknown opcode")),
        WebSocketError::ControlFrameFragmented => Inbound::Violation(Violation::Protocol("fragmented control frame")),
        WebSocketError::PingFrameTooLarge => Inbound::Violation(Violation::Protocol("control frame over 125 bytes")),
        WebSocketError::FrameTooLarge => Inbound::Violation(Violation::TooBig),
        WebSocketError::InvalidUTF8 => Inbound::Violation(Violation::InvalidUtf8),
        _ => Inbound::Ended,
    }
}

/// Reads frames one by one (no automatic pongs or closes: the session answers them at once) and hands every
/// one of them to the session, so each frame counts as activity and pings never wait for a data frame.
async fn read_loop(
    mut read: WebSocketRead<tokio::io::ReadHalf<Upgraded>>,
    limit: usize,
    inbound: mpsc::Sender<Inbound>,
) {
    let mut assembler = frames::Assembler::new(limit);
    loop {
        // Automatic replies are off, so fastwebsockets never has a reply for this callback to send.
        let no_replies = &mut |_: Frame<'_>| std::future::ready(Ok::<(), WebSocketError>(()));
        let message = match read.read_frame(no_replies).await {
            Ok(mut frame) => {
                let masked = is_masked(&mut frame);
                let raw = frames::RawFrame { fin: frame.fin, opcode: frame.opcode, masked, payload: &frame.payload };
                match assembler.push(raw) {
                    Ok(frames::Event::Text(text)) => Inbound::Text(text),
                    Ok(frames::Event::Binary) => Inbound::Binary,
                    Ok(frames::Event::Ping(payload)) => Inbound::Ping(payload),
                    Ok(frames::Event::Pong | frames::Event::Fragment) => Inbound::Activity,
                    Ok(frames::Event::Close(code)) => Inbound::Close(code),
                    Err(violation) => Inbound::Violation(violation),
                }
            }
            Err(e) => read_error(&e),
        };
        let last = matches!(message, Inbound::Binary | Inbound::Close(_) | Inbound::Violation(_) | Inbound::Ended);
        if inbound.send(message).await.is_err() || last {
            return;
        }
    }
}

type Writer = fastwebsockets::WebSocketWrite<tokio::io::WriteHalf<Upgraded>>;

/// Writes one frame unless the connection is kicked, the server shuts down or the write exceeds `limit` (a client
/// that stopped reading); `false` means the connection must be dropped without further writes.
async fn write_bounded(
    write: &mut Writer,
    frame: Frame<'_>,
    stops: [&tokio_util::sync::CancellationToken; 2],
    limit: Duration,
) -> bool {
    tokio::select! {
        written = write.write_frame(frame) => written.is_ok(),
        _ = stops[0].cancelled() => false,
        _ = stops[1].cancelled() => false,
        _ = tokio::time::sleep(limit) => false,
    }
}

async fn session(
    ws: fastwebsockets::WebSocket<Upgraded>,
    state: AppState,
    _slots: (OwnedSemaphorePermit, Option<super::limits::Slot>),
    credential: Option<(String, alloy::primitives::Address)>,
) {
    let config = state.config.ws.clone();
    let mut ws = ws;
    // fastwebsockets refuses frames of `max_message_size` bytes or more; messages of exactly `max_message` bytes
    // are accepted, and the assembler bounds the sum of a message's fragments.
    ws.set_max_message_size(config.max_message.saturating_add(1));
    ws.set_auto_pong(false);
    ws.set_auto_close(false);
    let (read, mut write) = ws.split(tokio::io::split);
    let (inbound_tx, mut inbound) = mpsc::channel(16);
    let reader = tokio::spawn(read_loop(read, config.max_message, inbound_tx));
    let hub = state.ws.hub.clone();
    let mut attached = hub.attach();
    let kicked = attached.kicked.clone();
    let mut channels = Channels::new(config.max_topics).for_account(credential.as_ref().map(|(_, account)| *account));
    let mut deadline = Instant::now() + config.idle_timeout;
    let shutdown = state.ws.shutdown.clone();
    let closing: Option<(u16, &str)> = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break Some((close::GOING_AWAY, "server shutting down")),
            _ = kicked.cancelled() => break Some((close::TRY_AGAIN_LATER, "too slow to receive broadcasts")),
            _ = tokio::time::sleep_until(deadline) => {
                state.status.metrics().ws_idle_closed();
                break Some((close::NORMAL, ""));
            }
            frame = attached.recv() => {
                let Some(frame) = frame else { break None };
                // A private topic's push goes out only while the token that joined it is still valid (it may have
                // been revoked or expired since the connection opened).
                if let Some((token, account)) = &credential {
                    if hub::is_private(&frame) && state.accounts.verify_token(token).ok().flatten() != Some(*account) {
                        break Some((close::POLICY_VIOLATION, "account token revoked or expired"));
                    }
                }
                let text = Frame::text(Payload::Borrowed(frame.as_bytes()));
                if !write_bounded(&mut write, text, [&attached.kicked, &shutdown], config.write_timeout).await {
                    break None;
                }
            }
            message = inbound.recv() => {
                deadline = Instant::now() + config.idle_timeout;
                match message {
                    Some(Inbound::Text(text)) => match protocol::parse(&text) {
                        Ok(message) => {
                            let outcome = channels.handle(message);
                            for change in &outcome.changes {
                                hub.apply(attached.id, change);
                            }
                            let mut failed = false;
                            for frame in outcome.frames {
                                let text = Frame::text(Payload::Owned(frame.into_bytes()));
                                if !write_bounded(&mut write, text, [&attached.kicked, &shutdown], config.write_timeout).await {
                                    failed = true;
                                    break;
                                }
                            }
                            if failed {
                                break None;
                            }
                        }
                        Err(_) => break Some((close::INVALID_DATA, "malformed Phoenix message")),
                    },
                    Some(Inbound::Ping(payload)) => {
                        let pong = Frame::pong(Payload::Owned(payload));
                        if !write_bounded(&mut write, pong, [&attached.kicked, &shutdown], config.write_timeout).await {
                            break None;
                        }
                    }
                    Some(Inbound::Activity) => {}
                    Some(Inbound::Binary) => break Some((close::UNSUPPORTED, "binary frames are not supported")),
                    Some(Inbound::Close(code)) => break Some((code.unwrap_or(close::NORMAL), "")),
                    Some(Inbound::Violation(violation)) => break Some((violation.close_code(), violation.reason())),
                    Some(Inbound::Ended) | None => break None,
                }
            }
        }
    };
    hub.detach(attached.id);
    if let Some((code, reason)) = closing {
        // A closing frame is best effort: a client that stopped reading does not get to hold the task.
        let close = write.write_frame(Frame::close(code, reason.as_bytes()));
        let _ = tokio::time::timeout(config.write_timeout, close).await;
    }
    reader.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_keys_are_16_bytes_of_base64() {
        assert!(is_websocket_key("dGhlIHNhbXBsZSBub25jZQ=="), "RFC 6455's example");
        for bad in [
            "",
            "abc",
            "dGhlIHNhbXBsZSBub25jZQ",
            "dGhlIHNhbXBsZSBub25jZQ=",
            "dGhlIHNhbXBsZSBub25j!Q==",
            "ééééééééééééééééééééééé==",
        ] {
            assert!(!is_websocket_key(bad), "{bad}");
        }
    }
}

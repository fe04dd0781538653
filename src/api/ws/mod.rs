//! `/socket/v2/websocket`: Blockscout's Phoenix V2 channel socket, on fastwebsockets over hyper's upgrade.
//!
//! Each connection runs two tasks: a reader that turns WebSocket frames into messages (answering pings and
//! closes through the writer), and the session loop that owns the writer and serves the protocol
//! (`protocol.rs`), queued broadcasts from the [`hub::Hub`], the 45 s idle timeout, the hub's kick of a slow
//! connection (close 1013) and the server's shutdown (close 1001, which every Phoenix client reconnects on).
//! Every write is bounded in time, so a client that stops reading is dropped rather than holding its task.

pub mod hub;
pub mod protocol;
pub mod publish;

use super::body::Body;
use super::{ApiError, AppState};
use fastwebsockets::{FragmentCollectorRead, Frame, OpCode, Payload, WebSocketError};
use hyper::body::Incoming;
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
    /// Largest inbound message.
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
    /// A binary frame: Phoenix V2 text protocol only.
    pub const UNSUPPORTED: u16 = 1003;
    /// A text frame that is not a Phoenix message.
    pub const INVALID_DATA: u16 = 1007;
    /// A message over the size limit.
    pub const TOO_BIG: u16 = 1009;
    /// The connection could not keep up with its broadcasts.
    pub const TRY_AGAIN_LATER: u16 = 1013;
}

/// Answers the upgrade request of `GET /socket/v2/websocket` and starts the connection's tasks.
pub fn upgrade(mut req: Request<Incoming>, state: &AppState) -> Result<Response<Body>, ApiError> {
    let vsn = super::query::Query::parse(req.uri().query()).get("vsn").map(str::to_owned);
    if vsn.as_deref().is_some_and(|v| !v.starts_with("2.0.")) {
        // Phoenix refuses serializer versions it does not speak with an empty 403.
        let mut response = Response::new(Body::default());
        *response.status_mut() = StatusCode::FORBIDDEN;
        return Ok(response);
    }
    if !fastwebsockets::upgrade::is_upgrade_request(&req) {
        return Err(ApiError::NotWebSocket);
    }
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
            Ok(ws) => session(ws, session_state, permit).await,
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

/// What the reader task hands to the session loop.
enum Inbound {
    /// A text message.
    Text(String),
    /// A control frame the protocol obliges us to send (pong, close reply).
    Reply(Frame<'static>),
    /// Any other activity (ping, pong) that keeps the connection alive.
    Activity,
    /// A binary message.
    Binary,
    /// The client closed the connection or it broke.
    Closed,
    /// A message over the size limit.
    TooBig,
}

type Upgraded = hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>;

async fn read_loop(mut read: FragmentCollectorRead<tokio::io::ReadHalf<Upgraded>>, inbound: mpsc::Sender<Inbound>) {
    loop {
        let mut obliged: Vec<Frame<'static>> = Vec::new();
        let result = read
            .read_frame(&mut |frame: Frame<'_>| {
                obliged.push(Frame::new(true, frame.opcode, None, Payload::Owned(frame.payload.to_vec())));
                std::future::ready(Ok::<(), WebSocketError>(()))
            })
            .await;
        for frame in obliged {
            if inbound.send(Inbound::Reply(frame)).await.is_err() {
                return;
            }
        }
        let message = match result {
            Ok(frame) => match frame.opcode {
                OpCode::Text => match String::from_utf8(frame.payload.to_vec()) {
                    Ok(text) => Inbound::Text(text),
                    Err(_) => Inbound::Binary,
                },
                OpCode::Binary => Inbound::Binary,
                OpCode::Close => Inbound::Closed,
                _ => Inbound::Activity,
            },
            Err(WebSocketError::FrameTooLarge) => Inbound::TooBig,
            Err(_) => Inbound::Closed,
        };
        let last = matches!(message, Inbound::Closed | Inbound::TooBig | Inbound::Binary);
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

async fn session(ws: fastwebsockets::WebSocket<Upgraded>, state: AppState, _permit: OwnedSemaphorePermit) {
    let config = state.config.ws.clone();
    let mut ws = ws;
    ws.set_max_message_size(config.max_message);
    ws.set_auto_pong(true);
    ws.set_auto_close(true);
    let (read, mut write) = ws.split(tokio::io::split);
    let (inbound_tx, mut inbound) = mpsc::channel(16);
    let reader = tokio::spawn(read_loop(FragmentCollectorRead::new(read), inbound_tx));
    let hub = state.ws.hub.clone();
    let mut attached = hub.attach();
    let mut channels = Channels::new(config.max_topics);
    let mut deadline = Instant::now() + config.idle_timeout;
    let shutdown = state.ws.shutdown.clone();
    let closing: Option<(u16, &str)> = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break Some((close::GOING_AWAY, "server shutting down")),
            _ = attached.kicked.cancelled() => break Some((close::TRY_AGAIN_LATER, "too slow to receive broadcasts")),
            _ = tokio::time::sleep_until(deadline) => break Some((close::NORMAL, "")),
            frame = attached.frames.recv() => {
                let Some(frame) = frame else { break None };
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
                    Some(Inbound::Reply(frame)) => {
                        let is_close = frame.opcode == OpCode::Close;
                        if !write_bounded(&mut write, frame, [&attached.kicked, &shutdown], config.write_timeout).await
                            || is_close
                        {
                            break None;
                        }
                    }
                    Some(Inbound::Activity) => {}
                    Some(Inbound::Binary) => break Some((close::UNSUPPORTED, "binary frames are not supported")),
                    Some(Inbound::TooBig) => break Some((close::TOO_BIG, "message too big")),
                    Some(Inbound::Closed) | None => break None,
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

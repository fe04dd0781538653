//! Connection-level bounds of the HTTP server, so that no connection holds one of the `max_connections` slots
//! without doing work:
//!
//! - [`Activity`] counts what a connection is busy with: requests in flight (from the request head until the
//!   response body is dropped, see [`TrackedBody`]) and a write the client is not accepting yet. [`drive`] closes
//!   a connection that has not been busy for the idle timeout: before its first request (also during the
//!   HTTP/1-or-HTTP/2 detection, e.g. a partial HTTP/2 preface), between keep-alive requests, and on an idle
//!   HTTP/2 connection, whatever the client sends or answers to pings in the meantime.
//! - [`GuardedIo`] fails a write that makes no progress for the write timeout, which ends the connection: a client
//!   that pipelines requests and never reads their responses. [`drive`] also closes a connection whose responses
//!   have waited that long without a byte written ([`Activity::stalled_for`]): an HTTP/2 client that never opens
//!   its flow-control window, so that no write is even attempted.
//! - [`GuardedIo`] also gives hyper's own answers to unparsable request heads (400/414/431) a JSON body and the
//!   CORS and rate-limit headers of every other response.
//! - On shutdown, idle connections close at once; busy ones are asked to finish (HTTP/1 closes after the current
//!   response, HTTP/2 sends GOAWAY) and close as soon as they are idle, or when the server gives up on them.
//!
//! An upgraded (WebSocket) connection leaves [`drive`] when the upgrade completes and has its own idle timeout;
//! its writes stay bounded by [`GuardedIo`].

use hyper::body::{Body, Frame, SizeHint};
use hyper::StatusCode;
use hyper_util::server::graceful::GracefulConnection;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

/// What one connection is busy with, and since when it has been idle.
#[derive(Debug)]
pub struct Activity {
    busy: AtomicUsize,
    idle_since: Mutex<Instant>,
    became_idle: Notify,
    /// Response bodies handed to hyper and not completely taken by it yet.
    unsent: AtomicUsize,
    /// Last time a response body or a write moved forward.
    progressed: Mutex<Instant>,
}

impl Activity {
    /// A connection that has just been accepted: idle from now.
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            became_idle: Notify::new(),
            unsent: AtomicUsize::new(0),
            progressed: Mutex::new(Instant::now()),
        })
    }

    /// Marks the connection busy until the returned guard is dropped.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    fn progress(&self) {
        *self.progressed.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Resolves once a response has been waiting to be sent for `limit` with neither the response bodies nor the
    /// writes moving forward: an HTTP/2 client that never opens its flow-control window (no write is even
    /// attempted, so [`GuardedIo`]'s write timeout cannot see it). Checked every quarter of `limit`.
    pub async fn stalled_for(&self, limit: Duration) {
        let mut ticks = tokio::time::interval((limit / 4).max(Duration::from_millis(1)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let progressed = *self.progressed.lock().unwrap_or_else(|p| p.into_inner());
            if self.unsent.load(Ordering::SeqCst) > 0 && progressed.elapsed() >= limit {
                return;
            }
        }
    }

    fn idle_since(&self) -> Instant {
        *self.idle_since.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves once the connection has been idle for `limit` without interruption (at once for a zero `limit`
    /// and an idle connection).
    pub async fn idle_for(&self, limit: Duration) {
        loop {
            let became_idle = self.became_idle.notified();
            tokio::pin!(became_idle);
            // Registered before the state is read, so a guard dropped in between still wakes this task.
            became_idle.as_mut().enable();
            if self.busy.load(Ordering::SeqCst) > 0 {
                became_idle.await;
                continue;
            }
            let deadline = self.idle_since() + limit;
            if Instant::now() >= deadline {
                return;
            }
            // Busy in between moves `idle_since`: the loop looks again at the deadline.
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// Keeps a connection busy while alive.
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.idle_since.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        if self.0.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.became_idle.notify_waiters();
        }
    }
}

/// A response body that keeps its connection busy until hyper has taken all of it, and whose progress counts for
/// [`Activity::stalled_for`].
#[derive(Debug)]
pub struct TrackedBody<B> {
    inner: B,
    busy: Busy,
}

impl<B> TrackedBody<B> {
    /// `inner`, keeping `busy` alive as long as it is.
    pub fn new(inner: B, busy: Busy) -> Self {
        busy.0.unsent.fetch_add(1, Ordering::SeqCst);
        busy.0.progress();
        TrackedBody { inner, busy }
    }
}

impl<B> Drop for TrackedBody<B> {
    fn drop(&mut self) {
        self.busy.0.unsent.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<B: Body + Unpin> Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if polled.is_ready() {
            self.busy.0.progress();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Builds the complete HTTP/1.1 response (head and body) that replaces hyper's own answer with `status` to a
/// request head it could not parse.
pub type UnparsableResponder = Arc<dyn Fn(StatusCode) -> Vec<u8> + Send + Sync>;

/// An accepted stream whose writes must make progress within `write_timeout`; a blocked write keeps the
/// connection busy (so an idle close never cuts a response short) until it completes or times out.
///
/// It also replaces hyper's automatic answer to a request head it cannot parse (400 bad request line, 414 URI too
/// long, 431 headers too large: a bare status line with an empty body, written by hyper itself with no hook for
/// the application) with the response of an [`UnparsableResponder`]. Such an answer is recognised as a response
/// head starting with `HTTP/1.1 4` that lacks the CORS header every response of the application carries.
pub struct GuardedIo<S> {
    inner: S,
    activity: Arc<Activity>,
    write_timeout: Duration,
    /// Set while a write is blocked: the deadline of the write timeout and the busy mark.
    blocked: Option<(Pin<Box<Sleep>>, Busy)>,
    responder: UnparsableResponder,
    /// A replacement response being written, and how much of it is written.
    replacing: Option<(Vec<u8>, usize)>,
    /// Whether the client has sent a line end yet: hyper answers 431 to any request head that outgrows its buffer,
    /// and one whose request line alone does so is a URI too long (414).
    line_ended: bool,
}

impl<S> GuardedIo<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, activity: Arc<Activity>, write_timeout: Duration, responder: UnparsableResponder) -> Self {
        GuardedIo { inner, activity, write_timeout, blocked: None, responder, replacing: None, line_ended: false }
    }

    /// Bytes written are progress (a flush that has nothing to do is not).
    fn count_progress(&self, polled: &Poll<io::Result<usize>>) {
        if let Poll::Ready(Ok(1..)) = polled {
            self.activity.progress();
        }
    }

    fn bound<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.blocked = None;
            return polled;
        }
        let (deadline, _) = self
            .blocked
            .get_or_insert_with(|| (Box::pin(tokio::time::sleep(self.write_timeout)), self.activity.busy()));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.blocked = None;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client did not read for the write timeout",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> GuardedIo<S> {
    /// Writes the replacement of hyper's automatic answer held in `first` (the first bytes of the write) instead of
    /// it, reporting `total` bytes written once done; `None` when the write is not such an answer.
    fn replace(&mut self, cx: &mut Context<'_>, first: &[u8], total: usize) -> Option<Poll<io::Result<usize>>> {
        if self.replacing.is_none() {
            let status = match automatic_error_status(first)? {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE if !self.line_ended => StatusCode::URI_TOO_LONG,
                status => status,
            };
            tracing::debug!(%status, "answering a request head that could not be parsed");
            self.replacing = Some(((self.responder)(status), 0));
        }
        loop {
            let (bytes, written) = self.replacing.as_ref()?;
            if *written == bytes.len() {
                self.replacing = None;
                return Some(Poll::Ready(Ok(total)));
            }
            let polled = Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]);
            match self.bound(cx, polled) {
                Poll::Ready(Ok(0)) => return Some(Poll::Ready(Err(io::ErrorKind::WriteZero.into()))),
                Poll::Ready(Ok(n)) => {
                    if let Some((_, written)) = self.replacing.as_mut() {
                        *written += n;
                    }
                }
                Poll::Ready(Err(e)) => return Some(Poll::Ready(Err(e))),
                Poll::Pending => return Some(Poll::Pending),
            }
        }
    }
}

/// The status of hyper's automatic answer to an unparsable request head, if `bytes` starts with one.
fn automatic_error_status(bytes: &[u8]) -> Option<StatusCode> {
    if !bytes.starts_with(b"HTTP/1.1 4") {
        return None;
    }
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = bytes[..head_end].to_ascii_lowercase();
    if head.windows(CORS_MARKER.len()).any(|w| w == CORS_MARKER) {
        return None;
    }
    let status = StatusCode::from_bytes(bytes.get(9..12)?).ok()?;
    [StatusCode::BAD_REQUEST, StatusCode::URI_TOO_LONG, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE]
        .contains(&status)
        .then_some(status)
}

/// The header every response of the application carries and hyper's automatic answers lack.
const CORS_MARKER: &[u8] = b"access-control-allow-origin:";

impl<S: AsyncRead + Unpin> AsyncRead for GuardedIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if !self.line_ended && buf.filled()[before..].contains(&b'\n') {
            self.line_ended = true;
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for GuardedIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if let Some(replaced) = self.replace(cx, buf, buf.len()) {
            return replaced;
        }
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.count_progress(&polled);
        self.bound(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map(|b| &b[..]).unwrap_or_default();
        let total = bufs.iter().map(|b| b.len()).sum();
        if let Some(replaced) = self.replace(cx, first, total) {
            return replaced;
        }
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.count_progress(&polled);
        self.bound(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.bound(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.bound(cx, polled)
    }
}

/// How a connection ended, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The client closed it, it was upgraded, or it failed.
    Finished,
    /// Closed after the idle timeout (an HTTP/2 client told so by a GOAWAY first).
    Idle,
    /// Closed because its responses made no progress for the write timeout.
    Stalled,
    /// Closed on shutdown, once idle.
    ShutDown,
    /// Dropped on shutdown while still busy.
    Forced,
}

/// How long an idle connection's graceful close (an HTTP/2 GOAWAY written) waits before the connection is dropped
/// once no request is in flight.
const IDLE_GOODBYE: Duration = Duration::from_secs(1);

/// Serves `connection` until it ends, it has been idle for `idle_timeout`, its responses made no progress for
/// `write_timeout`, or the server shuts down (`shutdown`: close once idle; `force`: close now). An idle connection
/// is closed gracefully, so an HTTP/2 client learns by a GOAWAY that it must open a new one.
pub async fn drive<C>(
    connection: C,
    activity: &Activity,
    [idle_timeout, write_timeout]: [Duration; 2],
    shutdown: &CancellationToken,
    force: &CancellationToken,
) -> Ended
where
    C: GracefulConnection,
    C::Error: std::fmt::Display,
{
    tokio::pin!(connection);
    let finished = |result: Result<(), C::Error>| {
        if let Err(e) = result {
            tracing::debug!(error = %e, "connection ended with an error");
        }
        Ended::Finished
    };
    tokio::select! {
        result = connection.as_mut() => finished(result),
        _ = activity.idle_for(idle_timeout) => {
            // Requests that arrive before the client reads the goodbye are served; once a second has passed the
            // connection closes as soon as none is in flight (or at once when its responses stall).
            connection.as_mut().graceful_shutdown();
            tokio::select! {
                result = connection.as_mut() => { finished(result); }
                _ = async {
                    tokio::time::sleep(IDLE_GOODBYE).await;
                    activity.idle_for(Duration::ZERO).await
                } => {}
                _ = activity.stalled_for(write_timeout) => {}
                _ = force.cancelled() => {}
            }
            Ended::Idle
        }
        _ = activity.stalled_for(write_timeout) => Ended::Stalled,
        _ = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            tokio::select! {
                result = connection.as_mut() => finished(result),
                _ = activity.idle_for(Duration::ZERO) => Ended::ShutDown,
                _ = force.cancelled() => Ended::Forced,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hyper_s_own_error_answers_are_recognised() {
        let hyper_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(automatic_error_status(hyper_431), Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE));
        let ours = b"HTTP/1.1 400 Bad Request\r\nAccess-Control-Allow-Origin: *\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(automatic_error_status(ours), None);
        assert_eq!(automatic_error_status(b"HTTP/1.1 404 Not Found\r\n\r\n"), None);
        assert_eq!(automatic_error_status(b"HTTP/1.1 200 OK\r\n\r\n"), None);
        assert_eq!(automatic_error_status(b"HTTP/1.1 400 Bad Request\r\ncontent-le"), None, "an incomplete head");
    }

    /// A request head that outgrows hyper's buffer (which hyper answers with 431) is a URI too long when its request
    /// line alone did, and headers too large when a header did.
    #[tokio::test]
    async fn a_request_line_longer_than_the_buffer_is_a_uri_too_long() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let long = "a".repeat(600_000);
        let cases = [
            (format!("GET /{long} HTTP/1.1\r\n"), StatusCode::URI_TOO_LONG),
            (format!("GET / HTTP/1.1\r\nx-big: {long}\r\n"), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE),
        ];
        for (request, expected) in cases {
            let (mut client, server) = tokio::io::duplex(1 << 20);
            let responder: UnparsableResponder = Arc::new(|status: StatusCode| {
                format!("HTTP/1.1 {} x\r\ncontent-length: 0\r\n\r\n", status.as_u16()).into_bytes()
            });
            let io = GuardedIo::new(server, Activity::new(), Duration::from_secs(5), responder);
            let service = hyper::service::service_fn(|_| async {
                Ok::<_, std::convert::Infallible>(hyper::Response::new(http_body_util::Empty::<bytes::Bytes>::new()))
            });
            let serving = tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(io), service),
            );
            client.write_all(request.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            client.read_to_end(&mut answer).await.unwrap();
            let answer = String::from_utf8_lossy(&answer);
            assert!(answer.starts_with(&format!("HTTP/1.1 {} ", expected.as_u16())), "{expected}: {answer}");
            assert!(serving.await.unwrap().is_err(), "hyper refused the head");
        }
    }

    #[tokio::test]
    async fn a_busy_connection_is_never_idle() {
        let activity = Activity::new();
        let busy = activity.busy();
        let second = activity.busy();
        let waiter = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.idle_for(Duration::from_millis(50)).await })
        };
        drop(busy);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished(), "still busy with the second guard");
        drop(second);
        waiter.await.unwrap();
        // A zero limit resolves at once when idle.
        activity.idle_for(Duration::ZERO).await;
    }
}

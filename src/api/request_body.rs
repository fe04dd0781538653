//! The body of every request the API serves: hyper's own, plus a lingering close. A body left unread while its
//! client is still sending it (a refusal such as 413, 401 or 429 answered before or while it arrives) is read to
//! its end and thrown away for a bounded time and size, so that a client that writes its whole body before it
//! reads (Python's `http.client`, most scripts) gets the answer instead of a connection reset: closing a socket
//! with unread bytes makes the kernel reset it, and the reset discards the answer the client has not read yet.

use super::limits::ConcurrencyLimiter;
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{CONTENT_LENGTH, EXPECT};
use hyper::{Request, Version};
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Most bytes of one refused body read and thrown away; a client that declares more is not waited for.
pub const LINGER_BYTES: u64 = 32 << 20;

/// How long a refused body is read before its connection is closed all the same.
pub const LINGER_TIME: Duration = Duration::from_secs(5);

/// Refused bodies a server reads at once; past it, a refused body's connection closes at once.
const LINGERING: usize = 64;

/// Refused bodies a server reads at once from one client (its address, or the one a trusted proxy names), so one
/// client cannot take every place.
const LINGERING_PER_CLIENT: usize = 8;

/// The places a server reads refused bodies in: [`LINGERING`] in all, [`LINGERING_PER_CLIENT`] per client.
#[derive(Debug)]
pub struct LingerPlaces {
    all: Arc<Semaphore>,
    per_client: ConcurrencyLimiter,
}

impl Default for LingerPlaces {
    fn default() -> Self {
        LingerPlaces {
            all: Arc::new(Semaphore::new(LINGERING)),
            per_client: ConcurrencyLimiter::new(LINGERING_PER_CLIENT, LINGERING),
        }
    }
}

/// A request's body; dropped unread, it lingers (see the module docs).
#[derive(Debug)]
pub struct RequestBody {
    inner: Option<Incoming>,
    linger: Option<Linger>,
}

/// What decides whether an unread body is worth reading to its end, and where it is read.
#[derive(Debug)]
struct Linger {
    /// The `Content-Length`; `None` for a chunked body.
    declared: Option<u64>,
    /// The client waits for `100 Continue` before it sends the body: unpolled, it sends nothing.
    awaits_continue: bool,
    /// Body bytes handed to the handler so far.
    received: u64,
    polled: bool,
    /// The client (its places are counted per client address).
    client: IpAddr,
    places: Arc<LingerPlaces>,
}

impl RequestBody {
    /// Wraps the body of `req`, sent by `client`, to linger in `places`. Only HTTP/1 bodies linger: HTTP/2 ends
    /// a stream without closing the connection.
    pub fn wrap(req: Request<Incoming>, client: IpAddr, places: &Arc<LingerPlaces>) -> Request<RequestBody> {
        let linger = (!req.body().is_end_stream() && req.version() <= Version::HTTP_11).then(|| Linger {
            declared: req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok()),
            awaits_continue: req
                .headers()
                .get(EXPECT)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue")),
            received: 0,
            polled: false,
            client,
            places: places.clone(),
        });
        req.map(|inner| RequestBody { inner: Some(inner), linger })
    }

    /// Closes the connection at once when the body is dropped unread: its client is not worth waiting for.
    pub fn abandon(&mut self) {
        self.linger = None;
    }
}

impl Linger {
    /// Whether the rest of the body is read after the handler dropped it.
    fn worth_it(&self) -> bool {
        let not_asked_for = self.awaits_continue && !self.polled;
        let left = self.declared.map_or(0, |n| n.saturating_sub(self.received));
        !not_asked_for && left <= LINGER_BYTES
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else { return Poll::Ready(None) };
        let frame = Pin::new(inner).poll_frame(cx);
        if let Some(linger) = this.linger.as_mut() {
            linger.polled = true;
            match &frame {
                Poll::Ready(Some(Ok(frame))) => linger.received += frame.data_ref().map_or(0, |d| d.len() as u64),
                // Read to its end (a chunked body never says so before): nothing is left to linger for.
                Poll::Ready(None) => this.linger = None,
                _ => {}
            }
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.as_ref().map_or_else(|| SizeHint::with_exact(0), Incoming::size_hint)
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        let (Some(inner), Some(linger)) = (self.inner.take(), self.linger.take()) else { return };
        if inner.is_end_stream() || !linger.worth_it() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let Some(client_place) = linger.places.per_client.try_acquire(linger.client) else { return };
        let Ok(place) = linger.places.all.clone().try_acquire_owned() else { return };
        runtime.spawn(async move {
            let _places = (place, client_place);
            let _ = tokio::time::timeout(LINGER_TIME, discard(inner, LINGER_BYTES)).await;
        });
    }
}

/// Reads `body` to its end, keeping nothing, unless more than `most` bytes come.
async fn discard(mut body: Incoming, most: u64) {
    use http_body_util::BodyExt;
    let mut left = most;
    while let Some(Ok(frame)) = body.frame().await {
        let size = frame.data_ref().map_or(0, |d| d.len() as u64);
        let Some(rest) = left.checked_sub(size) else { return };
        left = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linger(declared: Option<u64>, awaits_continue: bool, received: u64, polled: bool) -> Linger {
        let places = Arc::new(LingerPlaces::default());
        Linger { declared, awaits_continue, received, polled, client: IpAddr::from([127, 0, 0, 1]), places }
    }

    #[test]
    fn a_body_lingers_unless_its_client_waits_to_be_asked_or_has_too_much_left() {
        assert!(linger(Some(LINGER_BYTES), false, 0, false).worth_it());
        assert!(!linger(Some(LINGER_BYTES + 1), false, 0, false).worth_it());
        assert!(linger(Some(LINGER_BYTES + 10), false, 10, true).worth_it(), "what is left counts");
        assert!(linger(None, false, 0, true).worth_it(), "a chunked body is read up to the bound");
        assert!(!linger(Some(100), true, 0, false).worth_it(), "never asked for: nothing was sent");
        assert!(linger(Some(100), true, 0, true).worth_it(), "asked for (100 Continue sent): it comes");
    }
}

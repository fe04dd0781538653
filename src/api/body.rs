//! Response bodies: the body type every handler returns and JSON response builders.

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde::Serialize;
use std::cell::Cell;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The body of every response: whole bytes, or chunks streamed from a producer (CSV exports) that ends the body
/// by dropping its sender.
#[derive(Debug)]
pub struct Body(Inner);

#[derive(Debug)]
enum Inner {
    Whole(Option<Bytes>),
    Stream(tokio::sync::mpsc::Receiver<Bytes>),
}

impl Body {
    /// A body of `bytes`.
    pub fn new(bytes: Bytes) -> Self {
        Body(Inner::Whole(Some(bytes).filter(|b| !b.is_empty())))
    }

    /// The bytes of a whole body that has not been sent yet; `None` for streamed bodies.
    pub fn whole(&self) -> Option<&Bytes> {
        match &self.0 {
            Inner::Whole(bytes) => bytes.as_ref(),
            Inner::Stream(_) => None,
        }
    }

    /// A body of the chunks received from `chunks`, ending when every sender is dropped.
    pub fn stream(chunks: tokio::sync::mpsc::Receiver<Bytes>) -> Self {
        Body(Inner::Stream(chunks))
    }
}

impl Default for Body {
    fn default() -> Self {
        Body(Inner::Whole(None))
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.0 {
            Inner::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Inner::Stream(chunks) => chunks.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.0, Inner::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Inner::Whole(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Inner::Stream(_) => SizeHint::default(),
        }
    }
}

/// `application/json; charset=utf-8`.
pub const JSON: HeaderValue = HeaderValue::from_static("application/json; charset=utf-8");

/// The buffer a JSON answer starts with.
const JSON_CAPACITY: usize = 4096;

/// A JSON response with `status`.
pub fn json_response<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    if VALUES_WANTED.get() {
        // A value that JSON text could carry but `Value` cannot (a number past u64) takes the text path below.
        if let Ok(json) = serde_json::to_value(value) {
            let mut response = Response::new(Body::default());
            *response.status_mut() = status;
            response.extensions_mut().insert(JsonValue(json));
            return response;
        }
    }
    // Room for a single object's answer up front (a transaction's is ~1.5 KB), so it is written without copying
    // it through four reallocations. Serializing our own DTOs and `serde_json::Value`s cannot fail.
    let mut bytes = Vec::with_capacity(JSON_CAPACITY);
    serde_json::to_writer(&mut bytes, value).expect("response values serialize");
    raw_json_response(status, Bytes::from(bytes))
}

/// A response whose body is already JSON bytes.
pub fn raw_json_response(status: StatusCode, bytes: Bytes) -> Response<Body> {
    let mut response = Response::new(Body::new(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

/// A 200 JSON response.
pub fn ok<T: Serialize + ?Sized>(value: &T) -> Response<Body> {
    json_response(StatusCode::OK, value)
}

thread_local! {
    /// Whether JSON responses built on this thread carry their answer as a value (see [`as_values`]).
    static VALUES_WANTED: Cell<bool> = const { Cell::new(false) };
}

/// A handler's JSON answer as a value: the extension a response carries, with an empty body, when it was built
/// inside [`as_values`].
#[derive(Debug, Clone)]
pub struct JsonValue(pub serde_json::Value);

/// Resets the value mode when the handler returns or panics.
struct ValuesWanted;

impl Drop for ValuesWanted {
    fn drop(&mut self) {
        VALUES_WANTED.set(false);
    }
}

/// Runs the handler call `f` so that the JSON responses it builds carry their answer as a [`JsonValue`] extension
/// instead of serialized bytes: the explorer pages use the handlers' own answers without writing JSON text and
/// parsing it back (the parse was a fifth of an address page's time). The mode belongs to the thread, so `f` must
/// be synchronous (no await inside, where another request's handler could run on this thread).
pub fn as_values<R>(f: impl FnOnce() -> R) -> R {
    VALUES_WANTED.set(true);
    let _reset = ValuesWanted;
    f()
}

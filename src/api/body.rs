//! Response bodies: the body type every handler returns and JSON response builders.

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde::Serialize;
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

/// A JSON response with `status`.
pub fn json_response<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    // Serializing our own DTOs and `serde_json::Value`s cannot fail.
    let bytes = serde_json::to_vec(value).expect("response values serialize");
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

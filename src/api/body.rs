//! Response bodies: the body type every handler returns and JSON response builders.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde::Serialize;

/// The body of every response.
pub type Body = Full<Bytes>;

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
    let mut response = Response::new(Full::new(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

/// A 200 JSON response.
pub fn ok<T: Serialize + ?Sized>(value: &T) -> Response<Body> {
    json_response(StatusCode::OK, value)
}

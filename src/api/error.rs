//! `ApiError` and the one place errors become responses: status code, JSON body (Blockscout's shapes) and log level.

use super::body::{json_response, Body};
use hyper::{Response, StatusCode};
use serde_json::json;

/// Every way a request can fail, with its public message. Internal causes are logged, never sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// A block, transaction or token the index does not have.
    #[error("not found")]
    NotFound,
    /// A block number that only exists as a reorged (non-consensus) block.
    #[error("block lost consensus")]
    BlockLostConsensus {
        /// Hash of the reorged block.
        hash: String,
    },
    /// A path or query parameter with an invalid value (422, JSON:API `errors` body).
    #[error("invalid {param}: {detail}")]
    InvalidParam {
        /// Parameter name (the JSON pointer is `/` + this).
        param: &'static str,
        /// What was expected.
        detail: String,
    },
    /// A GET under `/api/v2/` that names no action.
    #[error("unknown API v2 action")]
    UnknownAction,
    /// A path that exists under another method.
    #[error("method not allowed")]
    MethodNotAllowed {
        /// The methods the path accepts.
        allow: &'static str,
    },
    /// Nothing is served at this path.
    #[error("no such route")]
    NoRoute,
    /// The request body exceeds the limit.
    #[error("request body too large")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The request took longer than the per-request timeout.
    #[error("request timed out")]
    Timeout,
    /// The request body did not arrive whole in time (a client that declared more than it sent).
    #[error("request body not received within {within:?}")]
    BodyTimeout {
        /// The time it had.
        within: std::time::Duration,
    },
    /// The request body could not be read.
    #[error("invalid request body: {0}")]
    BadBody(String),
    /// A request to the WebSocket endpoint that is not a WebSocket upgrade.
    #[error("not a websocket upgrade")]
    NotWebSocket,
    /// A bounded resource is exhausted.
    #[error("busy: {0}")]
    Busy(&'static str),
    /// The node could not be reached for data the response needs.
    #[error("node unavailable: {0}")]
    NodeUnavailable(String),
    /// The route needs an account token and the request has none, or an invalid one.
    #[error("unauthorized")]
    Unauthorized,
    /// The client IP made too many failed authentications recently.
    #[error("too many failed authentications")]
    AuthBudget(u64),
    /// A bounded queue is full: try again later (429 with the reason).
    #[error("throttled: {0}")]
    Throttled(String),
    /// A request the server refuses for a reason it states (e.g. a sign-in message that does not check out).
    #[error("refused: {0}")]
    Refused(String),
    /// A failure on our side (store error). The detail is logged, not sent.
    #[error("internal error: {0}")]
    Internal(String),
    /// A route that stores something, asked of a read replica (`rockscout serve --secondary-of`).
    #[error("read replica: writes go to the primary")]
    ReadReplica,
}

/// What a read replica answers to a route that stores something (also the Etherscan API's verification).
/// The reason of a refusal for too many failed authentications from the client's IP.
pub const AUTH_BUDGET_MESSAGE: &str = "Too many failed authentications; try again later";

pub const READ_REPLICA_MESSAGE: &str = "This server is a read-only replica (rockscout serve --secondary-of): it \
     stores nothing. Send account, sign-in and verification requests to the primary (the rockscout run that \
     indexes this chain).";

impl ApiError {
    /// A 422 for `param`.
    pub fn invalid(param: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::InvalidParam { param, detail: detail.into() }
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound | ApiError::BlockLostConsensus { .. } | ApiError::NoRoute => StatusCode::NOT_FOUND,
            ApiError::InvalidParam { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::UnknownAction | ApiError::BadBody(_) | ApiError::NotWebSocket => StatusCode::BAD_REQUEST,
            ApiError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Timeout => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::NodeUnavailable(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unauthorized | ApiError::Refused(_) => StatusCode::UNAUTHORIZED,
            ApiError::ReadReplica => StatusCode::FORBIDDEN,
            ApiError::AuthBudget(_) | ApiError::Throttled(_) => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    fn body(&self) -> serde_json::Value {
        match self {
            ApiError::NotFound | ApiError::NoRoute => json!({"message": "Not found"}),
            ApiError::BlockLostConsensus { hash } => {
                json!({"message": "Block lost consensus", "hash": hash})
            }
            ApiError::InvalidParam { param, detail } => json!({"errors": [{
                "title": "Invalid value",
                "source": {"pointer": format!("/{param}")},
                "detail": detail,
            }]}),
            ApiError::UnknownAction => json!({"message": "Unknown API v2 action"}),
            ApiError::Timeout => json!({"message": "Request timed out"}),
            ApiError::BodyTimeout { within } => json!({"message": format!(
                "The request body did not arrive within {} s (shorter than its Content-Length, or too slow)",
                within.as_secs_f64()
            )}),
            ApiError::NotWebSocket => json!({"message": "Expected a WebSocket upgrade request"}),
            ApiError::Busy(what) => json!({"message": format!("Service busy: {what}")}),
            ApiError::BadBody(_) => json!({"message": "Invalid request body"}),
            ApiError::MethodNotAllowed { allow } => {
                json!({"message": format!("Method not allowed; use {allow}")})
            }
            ApiError::PayloadTooLarge { limit } => {
                json!({"message": format!("Request body too large (limit {limit} bytes)")})
            }
            ApiError::NodeUnavailable(_) => {
                json!({"message": "The chain's node is unavailable; try again later"})
            }
            ApiError::Internal(_) => json!({"message": "Internal server error"}),
            ApiError::Unauthorized => json!({"message": "Unauthorized"}),
            ApiError::AuthBudget(_) => json!({"message": AUTH_BUDGET_MESSAGE}),
            ApiError::Refused(reason) | ApiError::Throttled(reason) => json!({"message": reason}),
            ApiError::ReadReplica => json!({"message": READ_REPLICA_MESSAGE}),
        }
    }

    /// What the error says, in one line (the `message` of its body, or the detail of a parameter's).
    pub fn message(&self) -> String {
        let body = self.body();
        let text = body["message"].as_str().or_else(|| body["errors"][0]["detail"].as_str());
        text.unwrap_or_default().to_owned()
    }

    /// The response for this error. A 5xx carries its cause as a [`FailureCause`] extension, which the server logs
    /// at `warn` with the route; the rest are logged here at `debug`.
    pub fn into_response(self) -> Response<Body> {
        let status = self.status();
        if !status.is_server_error() {
            tracing::debug!(error = %self, %status, "request refused");
        }
        let mut response = json_response(status, &self.body());
        if status.is_server_error() {
            response.extensions_mut().insert(FailureCause(self.to_string()));
        }
        match self {
            ApiError::MethodNotAllowed { allow } => {
                response.headers_mut().insert(hyper::header::ALLOW, hyper::header::HeaderValue::from_static(allow));
            }
            // Refused for the server's load (a full queue, the CSV exports' bucket, a busy resource), not for the
            // request itself: worth asking again a second later.
            ApiError::Throttled(_) | ApiError::Busy(_) => {
                response.headers_mut().insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from_static("1"));
            }
            // Refused until the client's failure window ends.
            ApiError::AuthBudget(seconds) => {
                response.headers_mut().insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from(seconds));
            }
            _ => {}
        }
        response
    }
}

/// Why a request failed with a 5xx: logged once by the server, with the route (never sent to the client).
#[derive(Debug, Clone)]
pub struct FailureCause(pub String);

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::Deadline => ApiError::Timeout,
            e => ApiError::Internal(e.to_string()),
        }
    }
}

impl From<crate::node::NodeError> for ApiError {
    fn from(e: crate::node::NodeError) -> Self {
        ApiError::NodeUnavailable(e.to_string())
    }
}

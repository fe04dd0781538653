//! `Route`: a request parsed from (method, path, query) into a typed endpoint, before any I/O. Pure and
//! table-tested; `dispatch` in `api/mod.rs` is the one `match` over it.

use super::error::ApiError;
use super::query::Query;
use hyper::Method;

/// Every endpoint, with its typed parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /health`.
    Health,
    /// `GET /api/v2/stats`.
    Stats,
}

impl Route {
    /// Parses a request line. Unknown `/api/v2/*` GETs are 400 (Blockscout's "Unknown API v2 action"), other
    /// unknown paths 404, known paths with another method 405.
    pub fn parse(method: &Method, path: &str, query: Option<&str>) -> Result<Route, ApiError> {
        let _query = Query::parse(query);
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        let route = match segments.as_slice() {
            ["health"] => Route::Health,
            ["api", "v2", "stats"] => Route::Stats,
            ["api", "v2", ..] => {
                return Err(if method == Method::GET {
                    ApiError::UnknownAction
                } else {
                    ApiError::MethodNotAllowed { allow: "GET" }
                })
            }
            _ => return Err(ApiError::NoRoute),
        };
        if method != Method::GET && method != Method::HEAD {
            return Err(ApiError::MethodNotAllowed { allow: "GET" });
        }
        Ok(route)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        let cases: &[(Method, &str, Result<Route, ApiError>)] = &[
            (Method::GET, "/health", Ok(Route::Health)),
            (Method::GET, "/api/v2/stats", Ok(Route::Stats)),
            (Method::GET, "/api/v2/stats/", Ok(Route::Stats)),
            (Method::POST, "/api/v2/stats", Err(ApiError::MethodNotAllowed { allow: "GET" })),
            (Method::GET, "/api/v2/nonsense", Err(ApiError::UnknownAction)),
            (Method::DELETE, "/api/v2/nonsense", Err(ApiError::MethodNotAllowed { allow: "GET" })),
            (Method::GET, "/favicon.ico", Err(ApiError::NoRoute)),
        ];
        for (method, path, expected) in cases {
            assert_eq!(&Route::parse(method, path, None), expected, "{method} {path}");
        }
    }
}

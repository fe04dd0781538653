//! Gzip of large text answers for clients that accept it (browsers and most HTTP libraries): the explorer's pages
//! and the API's lists are 20–180 KB of repetitive HTML and JSON that compress several times over. Small answers
//! (single objects) and streamed ones (CSV exports) go as they are.

use super::body::Body;
use flate2::write::GzEncoder;
use flate2::Compression;
use hyper::header::{
    HeaderMap, HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, ETAG, VARY,
};
use hyper::Response;
use std::io::Write;

/// Bodies smaller than this are sent as they are: a new connection's first round trip carries ~14 KB (ten
/// segments) anyway, and a single object's answer would cost more CPU to compress than to build.
const MIN_BYTES: usize = 8 << 10;

/// Whether the request's `Accept-Encoding` admits gzip (RFC 9110 §12.5.3): `gzip` (or `x-gzip`) with a non-zero
/// weight, or, when gzip is not named, `*` with a non-zero weight.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut named = None;
    let mut wildcard = None;
    for value in headers.get_all(ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for entry in value.split(',') {
            let mut parts = entry.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let weighted = parts
                .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
                .next_back()
                .is_none_or(|q| q.trim().parse::<f32>().is_ok_and(|q| q > 0.0));
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                named = Some(named.unwrap_or(false) || weighted);
            } else if coding == "*" {
                wildcard = Some(weighted);
            }
        }
    }
    named.or(wildcard).unwrap_or(false)
}

/// Gzips `response` in place when it is a whole text body of at least [`MIN_BYTES`] and the client accepts gzip
/// (`accepted`). Such responses say `Vary: accept-encoding` either way, so shared caches keep the two forms apart;
/// a compressed one's entity tag becomes weak (the bytes differ from the uncompressed form's, the content does not).
pub fn apply(response: &mut Response<Body>, accepted: bool) {
    // The body's size first: most answers (single objects) stop here, before any header is read.
    let Some(bytes) = response.body().whole().filter(|b| b.len() >= MIN_BYTES).cloned() else { return };
    if response.headers().contains_key(CONTENT_ENCODING) || !is_text(response.headers()) {
        return;
    }
    let headers = response.headers_mut();
    let vary = match headers.get(VARY).and_then(|v| v.to_str().ok()) {
        Some(existing) => HeaderValue::from_str(&format!("{existing}, accept-encoding")).ok(),
        None => Some(HeaderValue::from_static("accept-encoding")),
    };
    if let Some(vary) = vary {
        headers.insert(VARY, vary);
    }
    if !accepted {
        return;
    }
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::fast());
    // Writing into a `Vec` cannot fail.
    encoder.write_all(&bytes).expect("gzip into memory");
    let compressed = encoder.finish().expect("gzip into memory");
    headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    headers.remove(CONTENT_LENGTH);
    if let Some(weak) = headers
        .get(ETAG)
        .and_then(|tag| tag.to_str().ok())
        .filter(|tag| !tag.starts_with("W/"))
        .and_then(|tag| HeaderValue::from_str(&format!("W/{tag}")).ok())
    {
        headers.insert(ETAG, weak);
    }
    *response.body_mut() = Body::new(compressed.into());
}

/// Whether the body is text that compresses: HTML, CSS, JavaScript, JSON, SVG, CSV.
fn is_text(headers: &HeaderMap) -> bool {
    let Some(content_type) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let is = |kind: &str| essence.eq_ignore_ascii_case(kind);
    essence.get(..5).is_some_and(|head| head.eq_ignore_ascii_case("text/"))
        || is("application/json")
        || is("application/javascript")
        || is("image/svg+xml")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn with_accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        for yes in ["gzip", "gzip, deflate, br, zstd", "br;q=1.0, GZIP;q=0.5", "*", "identity, *;q=0.1", "x-gzip"] {
            assert!(accepts_gzip(&with_accept(yes)), "{yes}");
        }
        for no in ["", "identity", "br, deflate", "gzip;q=0", "gzip; q=0.000", "*, gzip;q=0", "gzip;q=oops"] {
            assert!(!accepts_gzip(&with_accept(no)), "{no}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    fn response(content_type: &str, body: &[u8]) -> Response<Body> {
        let mut response = Response::new(Body::new(Bytes::copy_from_slice(body)));
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_str(content_type).unwrap());
        response.headers_mut().insert(ETAG, HeaderValue::from_static("\"v1\""));
        response
    }

    #[test]
    fn large_text_is_gzipped_for_clients_that_accept_it() {
        let page = "<tr><td>0x0000000000000000000000000000000000000001</td></tr>\n".repeat(400);
        let mut gzipped = response("text/html; charset=utf-8", page.as_bytes());
        apply(&mut gzipped, true);
        assert_eq!(gzipped.headers()[CONTENT_ENCODING], "gzip");
        assert_eq!(gzipped.headers()[VARY], "accept-encoding");
        assert_eq!(gzipped.headers()[ETAG], "W/\"v1\"");
        let compressed = gzipped.body().whole().unwrap().clone();
        assert!(compressed.len() < page.len() / 10, "{} of {}", compressed.len(), page.len());
        let mut unpacked = String::new();
        GzDecoder::new(&compressed[..]).read_to_string(&mut unpacked).unwrap();
        assert_eq!(unpacked, page);

        let mut plain = response("application/json", page.as_bytes());
        apply(&mut plain, false);
        assert!(plain.headers().get(CONTENT_ENCODING).is_none());
        assert_eq!(plain.headers()[VARY], "accept-encoding");
        assert_eq!(plain.body().whole().unwrap().len(), page.len());
    }

    #[test]
    fn small_binary_and_encoded_bodies_are_left_alone() {
        let big = vec![b'a'; MIN_BYTES];
        for (content_type, body) in
            [("text/html", &b"<p>small</p>"[..]), ("application/octet-stream", &big[..]), ("image/png", &big[..])]
        {
            let mut r = response(content_type, body);
            apply(&mut r, true);
            assert!(r.headers().get(CONTENT_ENCODING).is_none(), "{content_type}");
            assert!(r.headers().get(VARY).is_none(), "{content_type}");
        }
        let mut encoded = response("application/json", &big);
        encoded.headers_mut().insert(CONTENT_ENCODING, HeaderValue::from_static("br"));
        apply(&mut encoded, true);
        assert_eq!(encoded.headers()[CONTENT_ENCODING], "br");
        assert_eq!(encoded.body().whole().unwrap().len(), big.len());
    }
}

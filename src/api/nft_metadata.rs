//! Metadata of NFT instances, read when an instance is requested: the contract's `tokenURI(id)` (ERC-721) or
//! `uri(id)` (ERC-1155, `{id}` replaced by the id as 64 hex digits) through `eth_call`, then the document it names.
//!
//! Everything here is untrusted: the URI (at most 8 KiB), the document (at most [`MetadataConfig::max_bytes`],
//! JSON, an object) and the server it comes from. Supported: `data:` URIs (base64 or percent-encoded text) and
//! `http(s)://` URLs fetched with a time and size limit, without redirects, only from public addresses unless
//! `allow_private` (loopback, private, link-local and other special ranges are refused: the name is resolved once,
//! checked, and the connection pinned to the checked address). Other schemes (`ipfs://`, `ar://`) give no metadata.

use crate::node::Node;
use crate::store::records::TokenKind;
use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::SolValue;
use alloy::transports::http::reqwest;
use base64::Engine;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Longest URI read from a contract.
const MAX_URI: usize = 8 * 1024;

/// How metadata documents are fetched.
#[derive(Debug, Clone)]
pub struct MetadataConfig {
    /// Fetch `http(s)://` documents at all.
    pub http: bool,
    /// Also from loopback and private networks (off by default: a contract must not make the server probe them).
    pub allow_private: bool,
    /// Largest document, in bytes.
    pub max_bytes: usize,
    /// Time for the contract call, and separately for the document.
    pub timeout: Duration,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        MetadataConfig { http: true, allow_private: false, max_bytes: 256 * 1024, timeout: Duration::from_secs(5) }
    }
}

/// What an instance's metadata resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceMetadata {
    /// The URI the contract returned (`{id}` expanded).
    pub uri: String,
    /// The document, when it could be read and is a JSON object.
    pub document: Option<Value>,
}

/// `tokenURI(uint256)` or `uri(uint256)` call data for `id`.
pub fn uri_call(kind: TokenKind, id: U256) -> Bytes {
    let selector: [u8; 4] = match kind {
        TokenKind::Erc1155 => [0x0e, 0x89, 0x34, 0x1c],
        _ => [0xc8, 0x7b, 0x56, 0xdd],
    };
    let mut data = selector.to_vec();
    data.extend_from_slice(&id.to_be_bytes::<32>());
    Bytes::from(data)
}

/// The URI in a call's return data: an ABI string, trimmed, without control characters; `None` when empty, too
/// long or not a string.
pub fn decode_uri(data: &[u8]) -> Option<String> {
    let text = String::abi_decode(data).ok()?;
    let text = text.trim();
    (!text.is_empty() && text.len() <= MAX_URI && !text.chars().any(char::is_control)).then(|| text.to_owned())
}

/// ERC-1155's `{id}` substitution: the id as 64 lowercase hex digits.
pub fn expand_id(uri: &str, id: U256) -> String {
    uri.replace("{id}", &format!("{id:064x}"))
}

/// Deepest nesting of objects and arrays a metadata document may have: served inside the API's answers (a few
/// levels more), which the pages parse again under `serde_json`'s limit of 128 (a document of 126 levels made the
/// instance page a 500).
const MAX_METADATA_NESTING: usize = 64;

/// A JSON object from document bytes, nested at most [`MAX_METADATA_NESTING`] levels (anything else is no
/// metadata).
fn json_object(bytes: &[u8], max_bytes: usize) -> Option<Value> {
    if bytes.len() > max_bytes {
        return None;
    }
    let value = serde_json::from_slice::<Value>(bytes).ok().filter(Value::is_object)?;
    (nesting(&value) <= MAX_METADATA_NESTING).then_some(value)
}

/// Levels of objects and arrays in `value` (a scalar is 0), without recursion.
fn nesting(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 0usize)];
    while let Some((value, depth)) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|child| (child, depth + 1))),
            Value::Object(fields) => pending.extend(fields.values().map(|child| (child, depth + 1))),
            _ => continue,
        }
        deepest = deepest.max(depth + 1);
    }
    deepest
}

/// The document of a `data:` URI: `data:[<type>][;base64],<data>`, base64 or percent-encoded.
pub fn decode_data_uri(uri: &str, max_bytes: usize) -> Option<Value> {
    let rest = uri.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let bytes = if header.to_ascii_lowercase().ends_with(";base64") {
        base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()?
    } else {
        percent_encoding::percent_decode_str(data).collect()
    };
    json_object(&bytes, max_bytes)
}

/// Whether `ip` is a public unicast address (not loopback, private, link-local, shared, documentation,
/// multicast, unspecified or otherwise reserved).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80
                    || first == 0x2001 && v6.segments()[1] == 0x0db8)
            }
        },
    }
}

/// Fetches an `http(s)` document: the host resolved once and every address checked, the connection pinned to the
/// first allowed one, no redirects, the body read up to the size limit, all within the timeout.
async fn fetch_http(url: &str, config: &MetadataConfig) -> Option<Value> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = parsed.port_or_known_default()?;
    let work = async {
        let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port)).await.ok()?.collect();
        if addresses.is_empty() || (!config.allow_private && !addresses.iter().all(|a| is_public(a.ip()))) {
            tracing::debug!(%url, "metadata host refused: not a public address");
            return None;
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .resolve(&host, addresses[0])
            .timeout(config.timeout)
            .build()
            .ok()?;
        let mut response = client.get(parsed.clone()).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        if response.content_length().is_some_and(|n| n > config.max_bytes as u64) {
            return None;
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.ok()? {
            if body.len() + chunk.len() > config.max_bytes {
                return None;
            }
            body.extend_from_slice(&chunk);
        }
        json_object(&body, config.max_bytes)
    };
    tokio::time::timeout(config.timeout, work).await.ok().flatten()
}

/// How long an instance's metadata with its document is kept before the contract and the document are read again.
const KEEP_RESOLVED: Duration = Duration::from_secs(600);
/// How long an instance without a document (no URI, node down, the document unreadable) is kept so: a contract or
/// server fixed later shows soon.
const KEEP_MISSING: Duration = Duration::from_secs(60);
/// Bytes of metadata kept at most (documents are up to 256 KiB each; most are a few hundred bytes).
const CACHE_BYTES: u64 = 16 << 20;

/// Metadata resolved per instance, shared by every request: pages and lists opened again, by anyone, neither call
/// the contract nor fetch the document again within [`KEEP_RESOLVED`], so a list cannot be used to make the
/// server send a request to some host per visit. `PATCH …/refetch-metadata` forgets one instance.
pub struct MetadataCache {
    entries: quick_cache::sync::Cache<(Address, U256), Resolved, DocumentWeight>,
}

#[derive(Clone)]
struct Resolved {
    at: tokio::time::Instant,
    metadata: Option<InstanceMetadata>,
}

#[derive(Clone)]
struct DocumentWeight;

impl quick_cache::Weighter<(Address, U256), Resolved> for DocumentWeight {
    fn weight(&self, _key: &(Address, U256), value: &Resolved) -> u64 {
        let metadata = value.metadata.as_ref();
        let document = metadata.and_then(|m| m.document.as_ref()).map_or(0, held_bytes);
        (128 + metadata.map_or(0, |m| m.uri.len()) + document) as u64
    }
}

/// Memory a parsed document holds: a `Value` per node (an element of `[0,0,…]` is two bytes of text and tens in
/// memory) and its strings' bytes.
fn held_bytes(value: &Value) -> usize {
    let node = std::mem::size_of::<Value>();
    match value {
        Value::String(s) => node + s.len(),
        Value::Array(items) => node + items.iter().map(held_bytes).sum::<usize>(),
        Value::Object(members) => node + members.iter().map(|(k, v)| node + k.len() + held_bytes(v)).sum::<usize>(),
        _ => node,
    }
}

impl Default for MetadataCache {
    fn default() -> Self {
        MetadataCache { entries: quick_cache::sync::Cache::with_weighter(16_384, CACHE_BYTES, DocumentWeight) }
    }
}

impl std::fmt::Debug for MetadataCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataCache").field("entries", &self.entries.len()).finish()
    }
}

impl MetadataCache {
    /// Forgets `id` of `token`: the next request reads its metadata again.
    pub fn forget(&self, token: Address, id: U256) {
        self.entries.remove(&(token, id));
    }

    fn fresh(&self, token: Address, id: U256) -> Option<Option<InstanceMetadata>> {
        let hit = self.entries.get(&(token, id))?;
        let resolved = hit.metadata.as_ref().is_some_and(|m| m.document.is_some());
        let keep = if resolved { KEEP_RESOLVED } else { KEEP_MISSING };
        (hit.at.elapsed() < keep).then_some(hit.metadata)
    }
}

/// The metadata of NFT `id` of `token`, from `cache` while fresh: `None` when the contract has no URI for it
/// (reverts, no such method, node down or slow); otherwise the URI and, when it resolves, its document.
pub async fn instance_metadata(
    cache: &MetadataCache,
    node: &Node,
    token: Address,
    kind: TokenKind,
    id: U256,
    config: &MetadataConfig,
) -> Option<InstanceMetadata> {
    if let Some(known) = cache.fresh(token, id) {
        return known;
    }
    let metadata = async {
        let call = node.call_contract(token, uri_call(kind, id), None);
        let answer = tokio::time::timeout(config.timeout, call).await.ok()?.ok()??;
        let uri = expand_id(&decode_uri(&answer)?, id);
        let document = if uri.starts_with("data:") {
            decode_data_uri(&uri, config.max_bytes)
        } else if config.http && (uri.starts_with("http://") || uri.starts_with("https://")) {
            fetch_http(&uri, config).await
        } else {
            None
        };
        Some(InstanceMetadata { uri, document })
    }
    .await;
    let resolved = Resolved { at: tokio::time::Instant::now(), metadata: metadata.clone() };
    cache.entries.insert((token, id), resolved);
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_uris_decode_base64_and_plain_json_objects_only() {
        let doc = r#"{"name":"n","image":"data:image/svg+xml;base64,AA=="}"#;
        let b64 = base64::engine::general_purpose::STANDARD.encode(doc);
        let want: Value = serde_json::from_str(doc).unwrap();
        assert_eq!(decode_data_uri(&format!("data:application/json;base64,{b64}"), 1024), Some(want.clone()));
        assert_eq!(decode_data_uri(&format!("data:application/json;BASE64,{b64}"), 1024), Some(want.clone()));
        let plain = format!("data:application/json,{}", doc.replace('"', "%22").replace(' ', "%20"));
        assert_eq!(decode_data_uri(&plain, 1024), Some(want));
        assert_eq!(decode_data_uri(r#"data:application/json;utf8,{"a":1}"#, 1024), Some(serde_json::json!({"a": 1})));
        for bad in [
            "data:application/json;base64,!!!",
            "data:application/json,[1,2]",
            "data:application/json,{broken",
            "data:no-comma",
            "http://example.invalid/x",
            "data:application/json,\"just a string\"",
        ] {
            assert_eq!(decode_data_uri(bad, 1024), None, "{bad}");
        }
        let big = format!("data:application/json,{{\"a\":\"{}\"}}", "x".repeat(100));
        assert_eq!(decode_data_uri(&big, 50), None, "over the size limit");
    }

    #[test]
    fn documents_nested_past_the_limit_are_no_metadata() {
        let nested =
            |levels: usize| format!(r#"{{"name":"n","a":{}1{}}}"#, "[".repeat(levels - 1), "]".repeat(levels - 1));
        let fits = json_object(nested(MAX_METADATA_NESTING).as_bytes(), 1 << 20).unwrap();
        assert_eq!(fits["name"], "n");
        assert_eq!(nesting(&fits), MAX_METADATA_NESTING);
        assert_eq!(json_object(nested(MAX_METADATA_NESTING + 1).as_bytes(), 1 << 20), None);
        assert_eq!(json_object(nested(126).as_bytes(), 1 << 20), None, "the campaign's document");
        assert_eq!(nesting(&serde_json::json!({"a": [], "b": {"c": 1}})), 2);
    }

    #[test]
    fn uris_are_abi_strings_with_the_1155_id_expanded() {
        let encoded = "ipfs://x/{id}.json".to_owned().abi_encode();
        let uri = decode_uri(&encoded).unwrap();
        assert_eq!(expand_id(&uri, U256::from(255)), format!("ipfs://x/{}ff.json", "0".repeat(62)));
        assert_eq!(decode_uri(&[1, 2, 3]), None);
        assert_eq!(decode_uri(&"".to_owned().abi_encode()), None);
        assert_eq!(decode_uri(&"a\u{0}b".to_owned().abi_encode()), None);
        assert_eq!(decode_uri(&"x".repeat(MAX_URI + 1).abi_encode()), None);
        assert_eq!(&uri_call(TokenKind::Erc721, U256::from(1))[..4], &[0xc8, 0x7b, 0x56, 0xdd]);
        assert_eq!(&uri_call(TokenKind::Erc1155, U256::from(1))[..4], &[0x0e, 0x89, 0x34, 0x1c]);
    }

    #[test]
    fn only_public_addresses_pass() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["1.1.1.1", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }
}

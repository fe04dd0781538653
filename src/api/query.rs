//! Query strings: percent-decoding and typed, lenient parameter access (Blockscout's frontend sends `"null"`,
//! empty strings and integers as strings in cursors; all are accepted).

use super::error::ApiError;

/// The decoded `key=value` pairs of a query string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `application/x-www-form-urlencoded` text: `+` is a space, `%XX` a byte; malformed escapes stay as is.
pub fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex_digit(bytes[i + 1]), hex_digit(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    /// Parses a raw query string (without `?`).
    pub fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) => (percent_decode(k), percent_decode(v)),
                None => (percent_decode(pair), String::new()),
            })
            .collect();
        Query { pairs }
    }

    /// The pairs of `first` and then those of `second`: [`Query::get`] finds a key of `first` before the same key of
    /// `second`.
    pub fn merged(first: Query, second: Query) -> Query {
        Query { pairs: first.pairs.into_iter().chain(second.pairs).collect() }
    }

    /// A query made of `pairs`, in order.
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Query {
        Query { pairs }
    }

    /// Whether `key` is in the query at all, whatever its value (Blockscout's cursors hold keys whose value is
    /// `null`).
    pub fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// The first value of `key`, treating `""` and `"null"` as absent.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty() && *v != "null")
    }

    /// An optional non-negative integer parameter: decimal digits, with leading zeros and a leading `+` accepted
    /// (sent as `%2B`; a bare `+` decodes to a space and is refused). This is deliberate: Blockscout reads these with
    /// Elixir's `Integer.parse`, which also accepts `"+1"`, so both servers read the same queries the same way.
    pub fn u64(&self, key: &'static str) -> Result<Option<u64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse::<u64>().map_err(|_| ApiError::invalid(key, "Invalid value: expected a non-negative integer"))
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_treats_null_as_absent() {
        let q = Query::parse(Some("q=a%20b+c&type=ERC-20%2CERC-721&block_number=null&index=&x=%zz&n=5"));
        assert_eq!(q.get("q"), Some("a b c"));
        assert_eq!(q.get("type"), Some("ERC-20,ERC-721"));
        assert_eq!(q.get("block_number"), None);
        assert_eq!(q.get("index"), None);
        assert_eq!(q.get("x"), Some("%zz"));
        assert_eq!(q.u64("n").unwrap(), Some(5));
        assert!(q.u64("q").is_err());
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn integers_accept_a_plus_sign_and_leading_zeros_only() {
        let q = Query::parse(Some("a=%2B1&b=007&c=+1&d=-1&e=%2B%2B1&f=1.0&g=%2B"));
        assert_eq!(q.u64("a").unwrap(), Some(1));
        assert_eq!(q.u64("b").unwrap(), Some(7));
        for refused in ["c", "d", "e", "f", "g"] {
            assert!(q.u64(refused).is_err(), "{refused}");
        }
    }
}

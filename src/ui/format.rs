//! How numbers, amounts and times read on the pages: thousands separators, wei in ether or a token's decimals,
//! gwei for gas prices, short hashes, relative times. Pure functions of the JSON strings the REST layer builds.

use alloy::primitives::U256;

/// `1234567` → `1,234,567` (any run of decimal digits; other text is returned unchanged).
pub fn thousands(digits: &str) -> String {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits.to_owned();
    }
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A decimal integer string scaled down by `10^decimals`, with thousands separators and at most `max_fraction`
/// fraction digits (trailing zeros dropped): `units("1500000000000000000", 18, 6)` → `1.5`.
pub fn units(raw: &str, decimals: u32, max_fraction: usize) -> String {
    let Ok(value) = U256::from_str_radix(raw, 10) else {
        return raw.to_owned();
    };
    // Tokens declare up to 255 decimals (a u8); the exact scaling is the chain module's.
    let exact = crate::chain::decimal_amount(value, u8::try_from(decimals).unwrap_or(u8::MAX));
    let (whole, fraction) = exact.split_once('.').unwrap_or((&exact, ""));
    let fraction: String = fraction.chars().take(max_fraction).collect();
    let fraction = fraction.trim_end_matches('0');
    match (fraction, whole) {
        // Non-zero but below the shown precision.
        ("", "0") if !value.is_zero() => format!("<0.{}1", "0".repeat(max_fraction.saturating_sub(1))),
        ("", whole) => thousands(whole),
        (fraction, whole) => format!("{}.{fraction}", thousands(whole)),
    }
}

/// Wei as ether: `1.5 ETH`.
pub fn ether(wei: &str) -> String {
    format!("{} ETH", units(wei, 18, 8))
}

/// Wei as ether to the wei, for one value on a detail page: `0.000000000000012345 ETH`.
pub fn ether_exact(wei: &str) -> String {
    format!("{} ETH", units(wei, 18, 18))
}

/// Wei as gwei, to the wei: `1.25 Gwei`, `0.000000007 Gwei`.
pub fn gwei(wei: &str) -> String {
    format!("{} Gwei", units(wei, 9, 9))
}

/// `0x1234…cdef` for long hex strings; short ones unchanged.
pub fn short_hash(hash: &str) -> String {
    if hash.len() > 14 && hash.is_char_boundary(8) && hash.is_char_boundary(hash.len() - 6) {
        format!("{}…{}", &hash[..8], &hash[hash.len() - 6..])
    } else {
        hash.to_owned()
    }
}

/// Seconds since the Unix epoch of an ISO-8601 UTC time as the API writes it (`2024-05-01T12:00:00.000000Z`).
pub fn parse_iso(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| text.get(range)?.parse::<u64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || year < 1970 || hour > 23 || minute > 59 || second > 60
    {
        return None;
    }
    // Days from the civil date (proleptic Gregorian), Howard Hinnant's algorithm.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// How long before `now` the time `then` was: `12s ago`, `5m ago`, `3h ago`, `2d ago` (`in the future` after now).
pub fn ago(then: u64, now: u64) -> String {
    let Some(delta) = now.checked_sub(then) else {
        return "just now".to_owned();
    };
    match delta {
        0..=59 => format!("{delta}s ago"),
        60..=3_599 => format!("{}m ago", delta / 60),
        3_600..=86_399 => format!("{}h ago", delta / 3_600),
        _ => format!("{}d ago", delta / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands("0"), "0");
        assert_eq!(thousands("999"), "999");
        assert_eq!(thousands("1000"), "1,000");
        assert_eq!(thousands("1234567"), "1,234,567");
        assert_eq!(thousands("12a"), "12a");
    }

    #[test]
    fn units_scale_and_trim() {
        assert_eq!(units("1500000000000000000", 18, 6), "1.5");
        assert_eq!(units("0", 18, 6), "0");
        assert_eq!(units("1234567000000000000000000", 18, 4), "1,234,567");
        assert_eq!(units("1", 18, 4), "<0.0001");
        assert_eq!(units("42", 0, 4), "42");
        assert_eq!(units("120", 2, 4), "1.2");
        assert_eq!(ether("21000000000000"), "0.000021 ETH");
        assert_eq!(gwei("1000000000"), "1 Gwei");
        assert_eq!(gwei("7"), "0.000000007 Gwei", "a base fee of 7 wei, exactly");
        assert_eq!(ether_exact("12345"), "0.000000000000012345 ETH");
        assert_eq!(units("nope", 18, 4), "nope");
        let max = U256::MAX.to_string();
        assert_eq!(units(&max, 77, 4), "1.1579");
        assert_eq!(units(&max, 100, 4), "<0.0001");
        assert_eq!(units(&max, 255, 4), "<0.0001");
    }

    #[test]
    fn iso_times_parse_to_unix_seconds() {
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_iso("2024-05-01T12:00:00.000000Z"), Some(1_714_564_800));
        assert_eq!(parse_iso("2000-02-29T23:59:59Z"), Some(951_868_799));
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(ago(100, 130), "30s ago");
        assert_eq!(ago(0, 7_200), "2h ago");
        assert_eq!(ago(10, 5), "just now");
    }

    #[test]
    fn hashes_shorten() {
        assert_eq!(short_hash("0x1234567890abcdef1234"), "0x123456…ef1234");
        assert_eq!(short_hash("0x12"), "0x12");
    }
}

//! The bytecode matcher: does code compiled from some source equal the code on chain, up to what a compiler
//! cannot know in advance?
//!
//! Masked before comparing: immutables (the runtime positions listed in `immutableReferences`, filled in by the
//! constructor), library links (`__$…$__` placeholders and `linkReferences` positions, filled in at link time),
//! the address guard at the start of a deployed library (`PUSH20 <own address>`), and the CBOR metadata trailer
//! (its length is the code's last two bytes). Equal with the metadata too is a full match, equal only outside it a
//! partial match (same code from a source that differs in comments, file paths or compiler metadata). Creation code
//! matches as a prefix of the creation input; the rest of the input is the constructor arguments.

use serde::Deserialize;
use std::collections::BTreeMap;

/// How far compiled code agrees with the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// Equal including the metadata hash.
    Full,
    /// Equal outside the metadata.
    Partial,
}

/// A byte range of code (compiler output spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Span {
    /// Offset in bytes.
    pub start: usize,
    /// Length in bytes.
    pub length: usize,
}

/// `linkReferences`: source file → library name → positions.
pub type LinkReferences = BTreeMap<String, BTreeMap<String, Vec<Span>>>;
/// `immutableReferences`: AST id → positions.
pub type ImmutableReferences = BTreeMap<String, Vec<Span>>;

/// Compiled code as a compiler writes it, ready to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledCode {
    /// The bytes, with link placeholders as zeros.
    pub bytes: Vec<u8>,
    /// Positions whose bytes are not compared (immutables and links).
    masked: Vec<Span>,
}

/// Why compiler output could not be read as code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("compiled code is not hex: {0}")]
pub struct NotHex(String);

impl CompiledCode {
    /// Code from the compiler's hex `object` (with or without `0x`; `__$…$__` library placeholders allowed) and the
    /// positions it fills in later.
    pub fn new(object: &str, links: &LinkReferences, immutables: &ImmutableReferences) -> Result<Self, NotHex> {
        let hex = object.trim().trim_start_matches("0x");
        if !hex.len().is_multiple_of(2) {
            return Err(NotHex("odd length".into()));
        }
        let mut bytes = Vec::with_capacity(hex.len() / 2);
        let mut masked: Vec<Span> = Vec::new();
        let raw = hex.as_bytes();
        let mut i = 0;
        while i < raw.len() {
            // A placeholder is 40 characters starting with "__": 20 bytes of address.
            if raw[i] == b'_' {
                let end = i + 40;
                if end > raw.len() || raw[i + 1] != b'_' {
                    return Err(NotHex(format!("unterminated link placeholder at character {i}")));
                }
                masked.push(Span { start: bytes.len(), length: 20 });
                bytes.extend_from_slice(&[0; 20]);
                i = end;
                continue;
            }
            let byte = std::str::from_utf8(&raw[i..i + 2])
                .ok()
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| NotHex(format!("invalid hex at character {i}")))?;
            bytes.push(byte);
            i += 2;
        }
        masked.extend(links.values().flat_map(|libs| libs.values().flatten()).copied());
        masked.extend(immutables.values().flatten().copied());
        Ok(CompiledCode { bytes, masked })
    }

    /// Compares with runtime code from the chain.
    pub fn matches_runtime(&self, onchain: &[u8]) -> Option<MatchKind> {
        if onchain.len() != self.bytes.len() || onchain.is_empty() {
            return None;
        }
        let mut masked = self.masked.clone();
        // A deployed library starts with PUSH20 of its own address (zeros in the compiler's output).
        if self.bytes.len() > 21 && self.bytes[0] == 0x73 && self.bytes[1..21].iter().all(|b| *b == 0) {
            masked.push(Span { start: 1, length: 20 });
        }
        compare(&self.bytes, onchain, &masked)
    }

    /// Compares with a creation input; on a match also returns the constructor arguments (the input's rest).
    pub fn matches_creation<'i>(&self, input: &'i [u8]) -> Option<(MatchKind, &'i [u8])> {
        let prefix = input.get(..self.bytes.len())?;
        let kind = compare(&self.bytes, prefix, &self.masked)?;
        Some((kind, &input[self.bytes.len()..]))
    }
}

/// The CBOR metadata trailer of `code`: its span (including the 2-byte length), when the length is plausible.
pub fn metadata_span(code: &[u8]) -> Option<Span> {
    let n = code.len();
    let tail = code.get(n.checked_sub(2)?..)?;
    let length = usize::from(u16::from_be_bytes([tail[0], tail[1]]));
    let total = length.checked_add(2)?;
    // solc's trailer is a CBOR map (major type 5): 0xa1..0xa7 opens it.
    if length == 0 || total > n || !(0xa1..=0xa7).contains(&code[n - total]) {
        return None;
    }
    Some(Span { start: n - total, length: total })
}

fn compare(compiled: &[u8], onchain: &[u8], masked: &[Span]) -> Option<MatchKind> {
    debug_assert_eq!(compiled.len(), onchain.len());
    let mut mask = vec![false; compiled.len()];
    for span in masked {
        let end = span.start.saturating_add(span.length).min(mask.len());
        for m in mask.iter_mut().take(end).skip(span.start) {
            *m = true;
        }
    }
    let metadata = metadata_span(compiled).filter(|m| metadata_span(onchain) == Some(*m));
    let in_metadata = |i: usize| metadata.is_some_and(|m| i >= m.start);
    let mut metadata_equal = true;
    for (i, (a, b)) in compiled.iter().zip(onchain).enumerate() {
        if a == b || mask[i] {
            continue;
        }
        if in_metadata(i) {
            metadata_equal = false;
        } else {
            return None;
        }
    }
    Some(if metadata_equal { MatchKind::Full } else { MatchKind::Partial })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trailer in solc's shape: `a2 64 'ipfs' 58 22 <34 bytes> 64 'solc' 43 <3 bytes>` and its length.
    fn trailer(seed: u8) -> Vec<u8> {
        let mut cbor = vec![0xa2, 0x64, b'i', b'p', b'f', b's', 0x58, 0x22];
        cbor.extend(std::iter::repeat_n(seed, 34));
        cbor.extend([0x64, b's', b'o', b'l', b'c', 0x43, 0, 8, 30]);
        let len = cbor.len() as u16;
        cbor.extend(len.to_be_bytes());
        cbor
    }

    fn hex(bytes: &[u8]) -> String {
        alloy::hex::encode(bytes)
    }

    const BODY: [u8; 8] = [0x60, 0x80, 0x60, 0x40, 0x52, 0x34, 0x80, 0x15];

    #[test]
    fn equal_code_is_a_full_match_and_other_metadata_a_partial_one() {
        let code = [&BODY[..], &trailer(1)].concat();
        let compiled =
            CompiledCode::new(&format!("0x{}", hex(&code)), &Default::default(), &Default::default()).unwrap();
        assert_eq!(compiled.matches_runtime(&code), Some(MatchKind::Full));
        let other_metadata = [&BODY[..], &trailer(2)].concat();
        assert_eq!(compiled.matches_runtime(&other_metadata), Some(MatchKind::Partial));
        let mut other_code = code.clone();
        other_code[3] ^= 1;
        assert_eq!(compiled.matches_runtime(&other_code), None);
        assert_eq!(compiled.matches_runtime(&code[1..]), None, "another length");
        assert_eq!(compiled.matches_runtime(&[]), None);
    }

    #[test]
    fn code_without_metadata_matches_exactly_or_not_at_all() {
        let compiled = CompiledCode::new(&hex(&BODY), &Default::default(), &Default::default()).unwrap();
        assert_eq!(compiled.matches_runtime(&BODY), Some(MatchKind::Full));
        let mut changed = BODY;
        changed[7] = 0;
        assert_eq!(compiled.matches_runtime(&changed), None);
    }

    #[test]
    fn immutables_are_masked() {
        let mut code = vec![0x7f];
        code.extend([0u8; 32]);
        code.extend(BODY);
        let immutables: ImmutableReferences = [("7".to_string(), vec![Span { start: 1, length: 32 }])].into();
        let compiled = CompiledCode::new(&hex(&code), &Default::default(), &immutables).unwrap();
        let mut deployed = code.clone();
        deployed[1..33].copy_from_slice(&[0xab; 32]);
        assert_eq!(compiled.matches_runtime(&deployed), Some(MatchKind::Full));
        deployed[33] ^= 1;
        assert_eq!(compiled.matches_runtime(&deployed), None, "outside the immutable");
        let unmasked = CompiledCode::new(&hex(&code), &Default::default(), &Default::default()).unwrap();
        assert_eq!(unmasked.matches_runtime(&[&[0x7f][..], &[0xab; 32], &BODY].concat()), None);
    }

    #[test]
    fn library_placeholders_and_link_references_are_masked() {
        // PUSH20 <library> DELEGATECALL-ish body: the placeholder as solc writes it.
        let object = format!("73__$1234567890abcdef1234567890abcdef12$__{}", hex(&BODY));
        let compiled = CompiledCode::new(&object, &Default::default(), &Default::default()).unwrap();
        assert_eq!(compiled.bytes.len(), 21 + BODY.len());
        let linked = [&[0x73][..], &[0x11; 20], &BODY].concat();
        assert_eq!(compiled.matches_runtime(&linked), Some(MatchKind::Full));

        // Linked already (Hardhat's deployed artifacts): positions from linkReferences.
        let links: LinkReferences =
            [("L.sol".to_string(), [("L".to_string(), vec![Span { start: 1, length: 20 }])].into())].into();
        let zeros = [&[0x73][..], &[0x22; 20], &BODY].concat();
        let compiled = CompiledCode::new(&hex(&zeros), &links, &Default::default()).unwrap();
        assert_eq!(compiled.matches_runtime(&linked), Some(MatchKind::Full));
        assert!(CompiledCode::new("73__$12$", &Default::default(), &Default::default()).is_err());
        assert!(CompiledCode::new("0xzz", &Default::default(), &Default::default()).is_err());
        assert!(CompiledCode::new("abc", &Default::default(), &Default::default()).is_err());
    }

    #[test]
    fn a_deployed_library_matches_with_its_own_address() {
        let code = [&[0x73][..], &[0u8; 20], &[0x30, 0x14], &BODY].concat();
        let compiled = CompiledCode::new(&hex(&code), &Default::default(), &Default::default()).unwrap();
        let deployed = [&[0x73][..], &[0x5c; 20], &[0x30, 0x14], &BODY].concat();
        assert_eq!(compiled.matches_runtime(&deployed), Some(MatchKind::Full));
    }

    #[test]
    fn creation_input_gives_the_constructor_arguments() {
        let creation = [&BODY[..], &trailer(3)].concat();
        let compiled = CompiledCode::new(&hex(&creation), &Default::default(), &Default::default()).unwrap();
        let args = [0u8; 31].iter().copied().chain([42]).collect::<Vec<u8>>();
        let input = [&creation[..], &args].concat();
        assert_eq!(compiled.matches_creation(&input), Some((MatchKind::Full, &args[..])));
        let other = [&BODY[..], &trailer(4), &args].concat();
        assert_eq!(compiled.matches_creation(&other), Some((MatchKind::Partial, &args[..])));
        assert_eq!(compiled.matches_creation(&BODY), None, "shorter than the code");
    }

    #[test]
    fn metadata_trailers_are_found_only_when_plausible() {
        let code = [&BODY[..], &trailer(1)].concat();
        assert_eq!(metadata_span(&code), Some(Span { start: BODY.len(), length: code.len() - BODY.len() }));
        assert_eq!(metadata_span(&BODY), None);
        assert_eq!(metadata_span(&[0xff, 0xff]), None);
        assert_eq!(metadata_span(&[1]), None);
    }
}

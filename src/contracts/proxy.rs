//! Proxy patterns: EIP-1167 minimal proxies and EIP-7702 delegated accounts (the implementation is in the code),
//! EIP-1967 logic and beacon slots and EIP-1822 (UUPS) `PROXIABLE` slot (the implementation is in storage, read
//! from the node).

use alloy::primitives::{b256, Address, Bytes, B256};

/// Blockscout's `proxy_type` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyType {
    /// EIP-1167 minimal proxy (clone).
    Eip1167,
    /// EIP-1967 implementation slot.
    Eip1967,
    /// EIP-1967 beacon slot (the implementation is the beacon's `implementation()`).
    Eip1967Beacon,
    /// EIP-1822 `PROXIABLE` slot.
    Eip1822,
    /// EIP-7702 delegation: an externally owned account whose code designates another account's code.
    Eip7702,
}

impl ProxyType {
    /// The wire name.
    pub fn label(self) -> &'static str {
        match self {
            ProxyType::Eip1167 => "eip1167",
            ProxyType::Eip1967 => "eip1967",
            ProxyType::Eip1967Beacon => "eip1967_beacon",
            ProxyType::Eip1822 => "eip1822",
            ProxyType::Eip7702 => "eip7702",
        }
    }
}

/// `bytes32(uint256(keccak256("eip1967.proxy.implementation")) - 1)`.
pub const EIP1967_IMPLEMENTATION: B256 = b256!("360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc");
/// `bytes32(uint256(keccak256("eip1967.proxy.beacon")) - 1)`.
pub const EIP1967_BEACON: B256 = b256!("a3f0ad74e5423aebfd80d3ef4346578335a9a72aeaee59ff6cb3582b35133d50");
/// `keccak256("PROXIABLE")`.
pub const EIP1822_PROXIABLE: B256 = b256!("c5f16f0fcc639fa48a6947836d9850f504798523bf8c9a3a87d5876cf622bcf7");
/// `implementation()` of a beacon.
pub const IMPLEMENTATION_SELECTOR: [u8; 4] = [0x5c, 0x60, 0xda, 0x1b];

/// An EIP-1167 minimal proxy's runtime code: this prefix, the 20-byte target, [`MINIMAL_SUFFIX`].
pub(super) const MINIMAL_PREFIX: [u8; 10] = [0x36, 0x3d, 0x3d, 0x37, 0x3d, 0x3d, 0x3d, 0x36, 0x3d, 0x73];
/// The end of an EIP-1167 minimal proxy's runtime code.
pub(super) const MINIMAL_SUFFIX: [u8; 15] =
    [0x5a, 0xf4, 0x3d, 0x82, 0x80, 0x3e, 0x90, 0x3d, 0x91, 0x60, 0x2b, 0x57, 0xfd, 0x5b, 0xf3];

/// The implementation of an EIP-1167 minimal proxy, from its runtime code.
pub fn minimal_proxy_target(code: &[u8]) -> Option<Address> {
    if code.len() != MINIMAL_PREFIX.len() + 20 + MINIMAL_SUFFIX.len() {
        return None;
    }
    let (prefix, rest) = code.split_at(MINIMAL_PREFIX.len());
    let (target, suffix) = rest.split_at(20);
    (prefix == MINIMAL_PREFIX && suffix == MINIMAL_SUFFIX).then(|| Address::from_slice(target))
}

/// The code EIP-7702 gives an account that delegates to another: this prefix, then the 20-byte delegate.
const DELEGATION_PREFIX: [u8; 3] = [0xef, 0x01, 0x00];

/// The code of an account delegating to `delegate` (EIP-7702's delegation designator).
pub fn delegation_designator(delegate: Address) -> Bytes {
    [&DELEGATION_PREFIX[..], delegate.as_slice()].concat().into()
}

/// Whether `code` is a contract's: not empty and not an EIP-7702 delegation designator (which only names the code of
/// the account it delegates to; the account stays an account).
pub fn is_contract_code(code: &[u8]) -> bool {
    !code.is_empty() && delegate_of(code).is_none()
}

/// The account whose code `code` designates, when it is an EIP-7702 delegation designator.
pub fn delegate_of(code: &[u8]) -> Option<Address> {
    let target = code.strip_prefix(&DELEGATION_PREFIX[..])?;
    (target.len() == 20).then(|| Address::from_slice(target))
}

/// An address in a storage word (`None` for zero or a word with high bits set).
pub fn address_in_slot(word: B256) -> Option<Address> {
    let address = Address::from_word(word);
    (word[..12].iter().all(|b| *b == 0) && !address.is_zero()).then_some(address)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::keccak256;
    use alloy::primitives::U256;

    #[test]
    fn slots_are_the_standards_values() {
        let minus_one = |label: &str| B256::from(U256::from_be_bytes(keccak256(label).0) - U256::from(1));
        assert_eq!(EIP1967_IMPLEMENTATION, minus_one("eip1967.proxy.implementation"));
        assert_eq!(EIP1967_BEACON, minus_one("eip1967.proxy.beacon"));
        assert_eq!(EIP1822_PROXIABLE, keccak256("PROXIABLE"));
        assert_eq!(IMPLEMENTATION_SELECTOR, keccak256("implementation()")[..4]);
    }

    #[test]
    fn minimal_proxies_name_their_target() {
        let target = Address::repeat_byte(0xbe);
        let code = [&MINIMAL_PREFIX[..], target.as_slice(), &MINIMAL_SUFFIX].concat();
        assert_eq!(minimal_proxy_target(&code), Some(target));
        let mut other = code.clone();
        other[0] = 0;
        assert_eq!(minimal_proxy_target(&other), None);
        assert_eq!(minimal_proxy_target(&code[1..]), None);
    }

    #[test]
    fn slot_words_hold_addresses_only_when_clean() {
        let a = Address::repeat_byte(3);
        assert_eq!(address_in_slot(a.into_word()), Some(a));
        assert_eq!(address_in_slot(B256::ZERO), None);
        assert_eq!(address_in_slot(B256::repeat_byte(1)), None);
    }
}

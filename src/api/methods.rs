//! `method` and `decoded_input` of a call: the function's name and decoded parameters from the first ABI that
//! knows the selector: the called contract's own (a matched artifact; for a proxy, its implementation's first),
//! then the compiled-in table of well-known signatures (`contracts::abi`). Other calls to contracts show the raw
//! selector (`0x…`), as Blockscout does.

use crate::contracts::abi::Abi;
use serde_json::Value;

/// The `method` field of a call to a contract: a known name, else the raw selector. Calls to accounts without code
/// have none, as in Blockscout (their calldata is not a call).
pub fn method_label(abis: &[&Abi], input: &[u8], to_is_contract: bool) -> Option<String> {
    let selector = input.get(..4).filter(|_| to_is_contract)?;
    let known = abis.iter().copied().chain([&**Abi::well_known()]).find_map(|abi| abi.function(input));
    Some(known.map_or_else(|| format!("0x{}", alloy::hex::encode(selector)), |f| f.name.clone()))
}

/// `decoded_input` from the first ABI that knows the selector and whose parameters decode.
pub fn decode_input(abis: &[&Abi], input: &[u8]) -> Option<Value> {
    abis.iter().copied().chain([&**Abi::well_known()]).find_map(|abi| abi.decode_input(input))
}

/// Resolves a method filter (a `0x` selector or a well-known name) to selectors.
pub fn selectors_for(filter: &str) -> Vec<[u8; 4]> {
    if let Some(hex) = filter.strip_prefix("0x") {
        return alloy::hex::decode(hex).ok().and_then(|b| <[u8; 4]>::try_from(b).ok()).into_iter().collect();
    }
    Abi::well_known().selectors_named(filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::json_abi::JsonAbi;

    #[test]
    fn known_transfer_is_named_and_decoded() {
        let input = alloy::hex::decode(
            "a9059cbb000000000000000000000000dad49e6cbde849353ab27dec6319e687bfc91a410000000000000000000000000000000000000000000000000000000005f5e100",
        )
        .unwrap();
        assert_eq!(method_label(&[], &input, true).as_deref(), Some("transfer"));
        assert_eq!(method_label(&[], &input, false), None, "calldata sent to an account names no method");
        let decoded = decode_input(&[], &input).unwrap();
        assert_eq!(decoded["method_call"], "transfer(address to, uint256 value)");
        assert_eq!(decoded["parameters"][1]["value"], "100000000");
    }

    #[test]
    fn the_contracts_own_abi_comes_first() {
        let own = Abi::new(JsonAbi::parse(["function transfer(address recipient, uint256 amount)"]).unwrap());
        let input = [&[0xa9, 0x05, 0x9c, 0xbb][..], &[0u8; 64]].concat();
        assert_eq!(
            decode_input(&[&own], &input).unwrap()["method_call"],
            "transfer(address recipient, uint256 amount)"
        );
        let custom = Abi::new(JsonAbi::parse(["function poke(uint8 times)"]).unwrap());
        let poke = [&alloy::primitives::keccak256("poke(uint8)")[..4], &[0u8; 32]].concat();
        assert_eq!(method_label(&[&custom], &poke, true).as_deref(), Some("poke"));
        assert_eq!(method_label(&[], &poke, true), Some(format!("0x{}", alloy::hex::encode(&poke[..4]))));
    }

    #[test]
    fn unknown_selectors_show_raw() {
        let input = [0xde, 0xad, 0xbe, 0xef, 1, 2];
        assert_eq!(method_label(&[], &input, true).as_deref(), Some("0xdeadbeef"));
        assert_eq!(method_label(&[], &input, false), None);
        assert_eq!(method_label(&[], &[], true), None);
        assert!(decode_input(&[], &input).is_none());
        assert!(decode_input(&[], &[0xa9, 0x05, 0x9c, 0xbb, 0]).is_none());
    }

    #[test]
    fn method_filters_accept_selectors_and_names() {
        assert_eq!(selectors_for("0xa9059cbb"), vec![[0xa9, 0x05, 0x9c, 0xbb]]);
        assert_eq!(selectors_for("safeTransferFrom").len(), 3);
        assert!(selectors_for("0x12").is_empty());
        assert!(selectors_for("nosuchmethod").is_empty());
    }
}

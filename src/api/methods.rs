//! Method names and decoded call data for well-known function selectors (token standards and common wrappers).
//!
//! The explorer verifies no contracts, so only selectors of this built-in table get a name and decoded
//! parameters; any other call to a contract shows its raw selector (`0x…`), as Blockscout does.

use alloy::dyn_abi::{DynSolValue, JsonAbiExt};
use alloy::json_abi::Function;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

const SIGNATURES: &[&str] = &[
    "function transfer(address to, uint256 value)",
    "function transferFrom(address from, address to, uint256 value)",
    "function approve(address spender, uint256 value)",
    "function safeTransferFrom(address from, address to, uint256 tokenId)",
    "function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)",
    "function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes data)",
    "function safeBatchTransferFrom(address from, address to, uint256[] ids, uint256[] values, bytes data)",
    "function setApprovalForAll(address operator, bool approved)",
    "function mint(address to, uint256 amount)",
    "function burn(uint256 amount)",
    "function burnFrom(address account, uint256 amount)",
    "function deposit()",
    "function withdraw(uint256 amount)",
    "function multicall(bytes[] data)",
];

fn table() -> &'static HashMap<[u8; 4], (Function, String)> {
    static TABLE: OnceLock<HashMap<[u8; 4], (Function, String)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        SIGNATURES
            .iter()
            .map(|s| {
                let f = Function::parse(s).expect("built-in signatures parse");
                let call = format!(
                    "{}({})",
                    f.name,
                    f.inputs.iter().map(|p| format!("{} {}", p.ty, p.name)).collect::<Vec<_>>().join(", ")
                );
                (f.selector().0, (f, call))
            })
            .collect()
    })
}

fn selector(input: &[u8]) -> Option<[u8; 4]> {
    input.get(..4).map(|s| s.try_into().expect("4 bytes"))
}

/// The `method` field: a known name, the raw selector for other calls to contracts, else `None`.
pub fn method_label(input: &[u8], to_is_contract: bool) -> Option<String> {
    let selector = selector(input)?;
    match table().get(&selector) {
        Some((f, _)) => Some(f.name.clone()),
        None if to_is_contract => Some(format!("0x{}", alloy::hex::encode(selector))),
        None => None,
    }
}

/// Resolves a method filter (a `0x` selector or a known name) to selectors.
pub fn selectors_for(filter: &str) -> Vec<[u8; 4]> {
    if let Some(hex) = filter.strip_prefix("0x") {
        return alloy::hex::decode(hex).ok().and_then(|b| <[u8; 4]>::try_from(b).ok()).into_iter().collect();
    }
    table().iter().filter(|(_, (f, _))| f.name == filter).map(|(s, _)| *s).collect()
}

fn value_json(value: &DynSolValue) -> Value {
    match value {
        DynSolValue::Address(a) => json!(a.to_checksum(None)),
        DynSolValue::Bool(b) => json!(b),
        DynSolValue::Uint(u, _) => json!(u.to_string()),
        DynSolValue::Int(i, _) => json!(i.to_string()),
        DynSolValue::String(s) => json!(s),
        DynSolValue::Bytes(b) => json!(format!("0x{}", alloy::hex::encode(b))),
        DynSolValue::FixedBytes(w, size) => json!(format!("0x{}", alloy::hex::encode(&w[..*size]))),
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) | DynSolValue::Tuple(items) => {
            Value::Array(items.iter().map(value_json).collect())
        }
        other => json!(format!("{other:?}")),
    }
}

/// `decoded_input` for a known selector whose arguments decode.
pub fn decode_input(input: &[u8]) -> Option<Value> {
    let (function, call) = table().get(&selector(input)?)?;
    let values = function.abi_decode_input(&input[4..]).ok()?;
    let parameters: Vec<Value> = function
        .inputs
        .iter()
        .zip(&values)
        .map(|(param, value)| json!({"name": param.name, "type": param.ty, "value": value_json(value)}))
        .collect();
    Some(json!({
        "method_call": call,
        "method_id": alloy::hex::encode(function.selector()),
        "parameters": parameters,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_transfer_is_named_and_decoded() {
        let input = alloy::hex::decode(
            "a9059cbb000000000000000000000000dad49e6cbde849353ab27dec6319e687bfc91a410000000000000000000000000000000000000000000000000000000005f5e100",
        )
        .unwrap();
        assert_eq!(method_label(&input, true).as_deref(), Some("transfer"));
        let decoded = decode_input(&input).unwrap();
        assert_eq!(decoded["method_call"], "transfer(address to, uint256 value)");
        assert_eq!(decoded["method_id"], "a9059cbb");
        assert_eq!(decoded["parameters"][0]["value"], "0xdAd49e6CbDE849353ab27DeC6319E687BFc91A41");
        assert_eq!(decoded["parameters"][1]["value"], "100000000");
    }

    #[test]
    fn unknown_selectors_show_raw_only_for_contracts() {
        let input = [0xde, 0xad, 0xbe, 0xef, 1, 2];
        assert_eq!(method_label(&input, true).as_deref(), Some("0xdeadbeef"));
        assert_eq!(method_label(&input, false), None);
        assert_eq!(method_label(&[], true), None);
        assert!(decode_input(&input).is_none());
        // Truncated arguments of a known selector do not decode.
        assert!(decode_input(&[0xa9, 0x05, 0x9c, 0xbb, 0]).is_none());
    }

    #[test]
    fn method_filters_accept_selectors_and_names() {
        assert_eq!(selectors_for("0xa9059cbb"), vec![[0xa9, 0x05, 0x9c, 0xbb]]);
        assert_eq!(selectors_for("safeTransferFrom").len(), 3);
        assert!(selectors_for("0x12").is_empty());
        assert!(selectors_for("nosuchmethod").is_empty());
    }
}

//! Decoding with a contract's ABI (alloy's `alloy-json-abi` and `alloy-dyn-abi`, never hand-written ABI coding):
//! call data → `method` and `decoded_input`, logs → `decoded`, revert data → `revert_reason`, in Blockscout's
//! shapes. An [`Abi`] is indexed by selector once (when an artifact is loaded, or once for the compiled-in table of
//! well-known signatures) and shared; decoding a request never parses an ABI.

use alloy::dyn_abi::{DynSolValue, ErrorExt, EventExt, JsonAbiExt};
use alloy::json_abi::{Error as AbiError, Event, Function, JsonAbi, Param};
use alloy::primitives::B256;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Well-known signatures: token standards (ERC-20/721/1155/4626), WETH, Ownable, Multicall3, Permit2 and the
/// common router methods. Tuple components are unnamed (the human-readable parser takes types only there).
const WELL_KNOWN: &[&str] = &[
    // ERC-20
    "function transfer(address to, uint256 value) returns (bool)",
    "function transferFrom(address from, address to, uint256 value) returns (bool)",
    "function approve(address spender, uint256 value) returns (bool)",
    "function increaseAllowance(address spender, uint256 addedValue) returns (bool)",
    "function decreaseAllowance(address spender, uint256 subtractedValue) returns (bool)",
    "function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)",
    "function mint(address to, uint256 amount)",
    "function burn(uint256 amount)",
    "function burnFrom(address account, uint256 amount)",
    "event Transfer(address indexed from, address indexed to, uint256 value)",
    "event Approval(address indexed owner, address indexed spender, uint256 value)",
    // ERC-721
    "function safeTransferFrom(address from, address to, uint256 tokenId)",
    "function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)",
    "function setApprovalForAll(address operator, bool approved)",
    "function safeMint(address to, uint256 tokenId)",
    "event ApprovalForAll(address indexed owner, address indexed operator, bool approved)",
    // ERC-1155
    "function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes data)",
    "function safeBatchTransferFrom(address from, address to, uint256[] ids, uint256[] values, bytes data)",
    "event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)",
    "event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)",
    "event URI(string value, uint256 indexed id)",
    // ERC-4626
    "function deposit(uint256 assets, address receiver) returns (uint256)",
    "function mint(uint256 shares, address receiver) returns (uint256)",
    "function withdraw(uint256 assets, address receiver, address owner) returns (uint256)",
    "function redeem(uint256 shares, address receiver, address owner) returns (uint256)",
    "event Deposit(address indexed sender, address indexed owner, uint256 assets, uint256 shares)",
    "event Withdraw(address indexed sender, address indexed receiver, address indexed owner, uint256 assets, uint256 shares)",
    // WETH
    "function deposit()",
    "function withdraw(uint256 amount)",
    // Ownable
    "function transferOwnership(address newOwner)",
    "function renounceOwnership()",
    "function acceptOwnership()",
    "event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)",
    "error OwnableUnauthorizedAccount(address account)",
    "error OwnableInvalidOwner(address owner)",
    // Multicall3 and multicall
    "function multicall(bytes[] data) returns (bytes[] results)",
    "function aggregate((address,bytes)[] calls) returns (uint256 blockNumber, bytes[] returnData)",
    "function aggregate3((address,bool,bytes)[] calls) returns ((bool,bytes)[] returnData)",
    "function aggregate3Value((address,bool,uint256,bytes)[] calls) returns ((bool,bytes)[] returnData)",
    "function tryAggregate(bool requireSuccess, (address,bytes)[] calls) returns ((bool,bytes)[] returnData)",
    // Permit2
    "function permitTransferFrom(((address,uint256),uint256,uint256) permit, (address,uint256) transferDetails, address owner, bytes signature)",
    "function lockdown((address,address)[] approvals)",
    "function invalidateNonces(address token, address spender, uint48 newNonce)",
    // Routers (Uniswap V2 and V3 style, Universal Router)
    "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline) returns (uint256[] amounts)",
    "function swapTokensForExactTokens(uint256 amountOut, uint256 amountInMax, address[] path, address to, uint256 deadline) returns (uint256[] amounts)",
    "function swapExactETHForTokens(uint256 amountOutMin, address[] path, address to, uint256 deadline) returns (uint256[] amounts)",
    "function swapExactTokensForETH(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline) returns (uint256[] amounts)",
    "function addLiquidity(address tokenA, address tokenB, uint256 amountADesired, uint256 amountBDesired, uint256 amountAMin, uint256 amountBMin, address to, uint256 deadline) returns (uint256 amountA, uint256 amountB, uint256 liquidity)",
    "function addLiquidityETH(address token, uint256 amountTokenDesired, uint256 amountTokenMin, uint256 amountETHMin, address to, uint256 deadline) returns (uint256 amountToken, uint256 amountETH, uint256 liquidity)",
    "function removeLiquidity(address tokenA, address tokenB, uint256 liquidity, uint256 amountAMin, uint256 amountBMin, address to, uint256 deadline) returns (uint256 amountA, uint256 amountB)",
    "function exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160) params) returns (uint256 amountOut)",
    "function exactInput((bytes,address,uint256,uint256,uint256) params) returns (uint256 amountOut)",
    "function execute(bytes commands, bytes[] inputs, uint256 deadline)",
    "function execute(bytes commands, bytes[] inputs)",
    "event Swap(address indexed sender, uint256 amount0In, uint256 amount1In, uint256 amount0Out, uint256 amount1Out, address indexed to)",
];

/// An ABI indexed for decoding: functions and errors by selector, events by topic 0.
#[derive(Debug, Default)]
pub struct Abi {
    /// The ABI as given (served by `/smart-contracts/:hash`).
    pub json: JsonAbi,
    functions: HashMap<[u8; 4], Function>,
    events: HashMap<B256, Vec<Event>>,
    errors: HashMap<[u8; 4], AbiError>,
}

impl Abi {
    /// Indexes `json` (done once per artifact).
    pub fn new(json: JsonAbi) -> Self {
        let functions = json.functions().map(|f| (f.selector().0, f.clone())).collect();
        let mut events: HashMap<B256, Vec<Event>> = HashMap::new();
        for event in json.events().filter(|e| !e.anonymous) {
            events.entry(event.selector()).or_default().push(event.clone());
        }
        let errors = json.errors().map(|e| (e.selector().0, e.clone())).collect();
        Abi { json, functions, events, errors }
    }

    /// The compiled-in table of well-known signatures.
    pub fn well_known() -> &'static Arc<Abi> {
        static TABLE: OnceLock<Arc<Abi>> = OnceLock::new();
        TABLE.get_or_init(|| {
            let json = JsonAbi::parse(WELL_KNOWN.iter().copied()).expect("built-in signatures parse");
            Arc::new(Abi::new(json))
        })
    }

    /// The function a call's input selects.
    pub fn function(&self, input: &[u8]) -> Option<&Function> {
        self.functions.get(&selector(input)?)
    }

    /// Functions named `name` (for method filters).
    pub fn selectors_named(&self, name: &str) -> Vec<[u8; 4]> {
        self.functions.iter().filter(|(_, f)| f.name == name).map(|(s, _)| *s).collect()
    }

    /// `decoded_input` of a call: the selected function's parameters, when they decode.
    pub fn decode_input(&self, input: &[u8]) -> Option<Value> {
        let selector = selector(input)?;
        let function = self.functions.get(&selector)?;
        let values = function.abi_decode_input(&input[4..]).ok()?;
        Some(decoded(&function.name, selector, &named(&function.inputs), &values, None))
    }

    /// `decoded` of a log: the first event with this topic 0 whose parameters decode.
    pub fn decode_log(&self, topics: &[B256], data: &[u8]) -> Option<Value> {
        let candidates = self.events.get(topics.first()?)?;
        candidates.iter().find_map(|event| {
            let decoded_event = event.decode_log_parts(topics.iter().copied(), data).ok()?;
            let (mut indexed, mut body) = (decoded_event.indexed.into_iter(), decoded_event.body.into_iter());
            let mut values = Vec::with_capacity(event.inputs.len());
            let mut flags = Vec::with_capacity(event.inputs.len());
            for input in &event.inputs {
                values.push(if input.indexed { indexed.next()? } else { body.next()? });
                flags.push(input.indexed);
            }
            let params: Vec<(&str, String)> =
                event.inputs.iter().map(|p| (p.name.as_str(), p.selector_type().into_owned())).collect();
            let selector: [u8; 4] = event.selector()[..4].try_into().expect("4 bytes");
            let mut out = decoded(&event.name, selector, &params, &values, Some(&flags));
            out["method_id"] = json!(alloy::hex::encode(event.selector()));
            Some(out)
        })
    }

    /// A custom error of this ABI in revert data, decoded.
    pub fn decode_error(&self, data: &[u8]) -> Option<Value> {
        let error = self.errors.get(&selector(data)?)?;
        let values = error.decode_error(data).ok()?.body;
        Some(decoded(&error.name, error.selector().0, &named(&error.inputs), &values, None))
    }
}

fn selector(data: &[u8]) -> Option<[u8; 4]> {
    data.get(..4).map(|s| s.try_into().expect("4 bytes"))
}

/// (name, canonical type) of each parameter.
fn named(params: &[Param]) -> Vec<(&str, String)> {
    params.iter().map(|p| (p.name.as_str(), p.selector_type().into_owned())).collect()
}

/// `name(type a, type b)` with `indexed` where the event says so.
fn signature_text(name: &str, params: &[(&str, String)], indexed: Option<&[bool]>) -> String {
    let parts: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, (param, ty))| {
            let flag = if indexed.is_some_and(|f| f.get(i) == Some(&true)) { " indexed" } else { "" };
            if param.is_empty() {
                format!("{ty}{flag}")
            } else {
                format!("{ty}{flag} {param}")
            }
        })
        .collect();
    format!("{name}({})", parts.join(", "))
}

/// Blockscout's decoded object: `method_call`, `method_id` (8 hex characters) and the named, typed parameters.
fn decoded(
    name: &str,
    selector: [u8; 4],
    params: &[(&str, String)],
    values: &[DynSolValue],
    indexed: Option<&[bool]>,
) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, ((param, ty), value))| {
            let mut p = json!({"name": param, "type": ty, "value": value_json(value)});
            if let Some(flags) = indexed {
                p["indexed"] = json!(flags.get(i).copied().unwrap_or(false));
            }
            p
        })
        .collect();
    json!({
        "method_call": signature_text(name, params, indexed),
        "method_id": alloy::hex::encode(selector),
        "parameters": parameters,
    })
}

/// A decoded value as Blockscout shows it: numbers and booleans as strings, bytes as hex, tuples and arrays as
/// arrays.
pub fn value_json(value: &DynSolValue) -> Value {
    match value {
        DynSolValue::Address(a) => json!(a.to_checksum(None)),
        DynSolValue::Bool(b) => json!(b.to_string()),
        DynSolValue::Uint(u, _) => json!(u.to_string()),
        DynSolValue::Int(i, _) => json!(i.to_string()),
        DynSolValue::String(s) => json!(s),
        DynSolValue::Bytes(b) => json!(format!("0x{}", alloy::hex::encode(b))),
        DynSolValue::FixedBytes(w, size) => json!(format!("0x{}", alloy::hex::encode(&w[..*size]))),
        DynSolValue::Function(f) => json!(format!("0x{}", alloy::hex::encode(f.as_slice()))),
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) | DynSolValue::Tuple(items) => {
            Value::Array(items.iter().map(value_json).collect())
        }
        #[allow(unreachable_patterns)]
        other => json!(format!("{other:?}")),
    }
}

/// `revert_reason`: `Error(string)`, `Panic(uint256)`, a custom error of the first of `abis` that knows it (then
/// the well-known table), else the raw data.
pub fn revert_reason(abis: &[&Abi], data: &[u8]) -> Option<Value> {
    use alloy::sol_types::{Panic, Revert, SolError};
    if data.is_empty() {
        return None;
    }
    if let Ok(revert) = Revert::abi_decode(data) {
        return Some(json!({
            "method_call": "Error(string reason)",
            "method_id": alloy::hex::encode(Revert::SELECTOR),
            "parameters": [{"name": "reason", "type": "string", "value": revert.reason}],
        }));
    }
    if let Ok(panic) = Panic::abi_decode(data) {
        return Some(json!({
            "method_call": "Panic(uint256 code)",
            "method_id": alloy::hex::encode(Panic::SELECTOR),
            "parameters": [{"name": "code", "type": "uint256", "value": panic.code.to_string()}],
        }));
    }
    let custom = abis.iter().copied().chain([&**Abi::well_known()]).find_map(|abi| abi.decode_error(data));
    Some(custom.unwrap_or_else(|| json!({"raw": format!("0x{}", alloy::hex::encode(data))})))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::{keccak256, Address, U256};
    use alloy::sol_types::SolValue;

    #[test]
    fn well_known_calls_are_named_and_decoded() {
        let input = alloy::hex::decode(
            "a9059cbb000000000000000000000000dad49e6cbde849353ab27dec6319e687bfc91a410000000000000000000000000000000000000000000000000000000005f5e100",
        )
        .unwrap();
        let abi = Abi::well_known();
        assert_eq!(abi.function(&input).map(|f| f.name.as_str()), Some("transfer"));
        let decoded = abi.decode_input(&input).unwrap();
        assert_eq!(decoded["method_call"], "transfer(address to, uint256 value)");
        assert_eq!(decoded["method_id"], "a9059cbb");
        assert_eq!(decoded["parameters"][0]["value"], "0xdAd49e6CbDE849353ab27DeC6319E687BFc91A41");
        assert_eq!(decoded["parameters"][1]["value"], "100000000");
        assert!(abi.decode_input(&input[..10]).is_none(), "truncated arguments do not decode");
        assert_eq!(abi.selectors_named("safeTransferFrom").len(), 3);
    }

    #[test]
    fn tuples_decode_with_their_components() {
        let abi = Abi::well_known();
        let target = Address::repeat_byte(7);
        let calls = vec![(target, true, alloy::primitives::Bytes::from_static(&[1, 2]))];
        let f = abi.functions.values().find(|f| f.name == "aggregate3").unwrap();
        let input = [&f.selector()[..], &(calls,).abi_encode_params()].concat();
        let decoded = abi.decode_input(&input).unwrap();
        assert_eq!(decoded["method_call"], "aggregate3((address,bool,bytes)[] calls)");
        assert_eq!(decoded["parameters"][0]["value"][0][0], target.to_checksum(None));
        assert_eq!(decoded["parameters"][0]["value"][0][2], "0x0102");
    }

    #[test]
    fn logs_decode_with_indexed_flags() {
        let abi = Abi::well_known();
        let (from, to) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let topics = [keccak256("Transfer(address,address,uint256)"), from.into_word(), to.into_word()];
        let data = U256::from(5).abi_encode();
        let decoded = abi.decode_log(&topics, &data).unwrap();
        assert_eq!(decoded["method_call"], "Transfer(address indexed from, address indexed to, uint256 value)");
        assert_eq!(decoded["method_id"], alloy::hex::encode(topics[0]));
        assert_eq!(decoded["parameters"][0]["indexed"], true);
        assert_eq!(decoded["parameters"][2]["indexed"], false);
        assert_eq!(decoded["parameters"][2]["value"], "5");
        // ERC-721's Transfer has the same topic 0 and three indexed parameters: not this event's shape.
        let nft = [topics[0], from.into_word(), to.into_word(), U256::from(9).into()];
        assert!(abi.decode_log(&nft, &[]).is_none());
        assert!(abi.decode_log(&[], &data).is_none());
    }

    #[test]
    fn revert_reasons_standard_and_custom() {
        let custom = JsonAbi::parse(["error Insufficient(uint256 available, uint256 required)"]).unwrap();
        let custom = Abi::new(custom);
        let error = custom.errors.values().next().unwrap().clone();
        let data = [&error.selector()[..], &(U256::from(1), U256::from(2)).abi_encode_params()].concat();
        let reason = revert_reason(&[&custom], &data).unwrap();
        assert_eq!(reason["method_call"], "Insufficient(uint256 available, uint256 required)");
        assert_eq!(reason["parameters"][1]["value"], "2");
        assert_eq!(revert_reason(&[], &data).unwrap()["raw"], format!("0x{}", alloy::hex::encode(&data)));
        let text = alloy::sol_types::SolError::abi_encode(&alloy::sol_types::Revert::from("nope"));
        assert_eq!(revert_reason(&[], &text).unwrap()["parameters"][0]["value"], "nope");
        assert!(revert_reason(&[], &[]).is_none());
    }
}

//! Decoding with a contract's ABI (alloy's `alloy-json-abi` and `alloy-dyn-abi`, never hand-written ABI coding):
//! call data → `method` and `decoded_input`, logs → `decoded`, revert data → `revert_reason`, in Blockscout's
//! shapes. An [`Abi`] is indexed by selector once (when an artifact is loaded, or once for the compiled-in table of
//! well-known signatures) and shared; decoding a request never parses an ABI.

use alloy::dyn_abi::{DynSolType, DynSolValue, ErrorExt, EventExt, FunctionExt, JsonAbiExt, Specifier};
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

/// Most values a parameter list's types may stand for before any data is read: alloy builds one per element of
/// a fixed-size array (`uint8[12000000][]` is 12 million, even for an empty array). Items past it are not decoded.
const MAX_TEMPLATE: usize = 1 << 14;
/// Most 32-byte words one decode may produce at worst ([`cost`]): 16 MiB.
const DECODE_BUDGET: usize = 1 << 19;
/// Most levels of arrays and tuples a type may nest: alloy's decoder refuses data past 16 levels, but only after
/// building the type's template, which (like the JSON made of a value, and dropping it) goes one call deeper per
/// level: `uint8[1]` nested 8,000 times overflowed the stack, at a template of 1.
const MAX_NESTING: usize = 16;

/// What decoding a parameter list can cost. Call data, log data and revert data are untrusted: ABI offsets may all
/// point at the same bytes, so `bytes[]` of N offsets to one L-byte value decodes to N·L bytes from 32·N + L of
/// data, `bytes[][]` to the cube, and alloy copies a dynamic array's element template once per element. Decoding
/// is bounded by refusing types with too large a template, decoding data only while the worst case its types allow
/// for its length stays within [`DECODE_BUDGET`], and dropping decoded values larger than their data.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    types: Vec<DynSolType>,
}

impl Shape {
    /// The shape of `params`, `None` when a type does not resolve, nests deeper than [`MAX_NESTING`] or its
    /// template is past [`MAX_TEMPLATE`].
    fn of<P: Specifier<DynSolType>>(params: &[P]) -> Option<Shape> {
        let types = params.iter().map(|p| p.resolve().ok()).collect::<Option<Vec<_>>>()?;
        if !types.iter().all(|t| nests_within(t, MAX_NESTING)) {
            return None;
        }
        let total = types.iter().fold(0usize, |sum, t| sum.saturating_add(template(t)));
        (total <= MAX_TEMPLATE).then_some(Shape { types })
    }

    /// Whether `data` may be decoded as this shape: its worst case within [`DECODE_BUDGET`].
    fn admits(&self, data: &[u8]) -> bool {
        let words = data.len().div_ceil(32).max(1);
        self.types.iter().fold(0usize, |sum, t| sum.saturating_add(cost(t, words))) <= DECODE_BUDGET
    }

    /// What `decode` makes of `data`, when this shape admits `data` and the values are no larger than it.
    fn decode<E>(
        &self,
        data: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<Vec<DynSolValue>, E>,
    ) -> Option<Vec<DynSolValue>> {
        let values = self.admits(data).then(|| decode(data).ok()).flatten()?;
        unaliased(&values, data.len()).then_some(values)
    }
}

/// Whether `ty` has at most `levels` levels of arrays and tuples (it stops looking one level past them).
fn nests_within(ty: &DynSolType, levels: usize) -> bool {
    match ty {
        DynSolType::FixedArray(inner, _) | DynSolType::Array(inner) => levels > 0 && nests_within(inner, levels - 1),
        DynSolType::Tuple(items) => levels > 0 && items.iter().all(|t| nests_within(t, levels - 1)),
        _ => true,
    }
}

fn template(ty: &DynSolType) -> usize {
    match ty {
        DynSolType::FixedArray(inner, size) => size.saturating_mul(template(inner)),
        DynSolType::Array(inner) => template(inner).saturating_add(1),
        DynSolType::Tuple(items) => items.iter().fold(1, |sum, t| sum.saturating_add(template(t))),
        _ => 1,
    }
}

/// The most words (values, or 32 bytes of a byte string) `ty` can decode to from `words` words of data: a byte
/// string as long as the data, a dynamic array of as many elements as the data has words, each as large as its
/// type allows.
fn cost(ty: &DynSolType, words: usize) -> usize {
    match ty {
        DynSolType::Bytes | DynSolType::String => words,
        DynSolType::Array(inner) => words.saturating_mul(cost(inner, words)).saturating_add(1),
        DynSolType::FixedArray(inner, size) => size.saturating_mul(cost(inner, words)),
        DynSolType::Tuple(items) => items.iter().fold(1, |sum, t| sum.saturating_add(cost(t, words))),
        _ => 1,
    }
}

/// Bytes of data `value` stands for: 32 per word, a byte string's length (alloy replaces each byte of a string
/// that is not UTF-8 with U+FFFD, three bytes: counted as the one it was). A value decoded from an encoding without
/// shared offsets is never larger than that encoding.
fn decoded_size(value: &DynSolValue) -> usize {
    match value {
        DynSolValue::Bytes(b) => b.len(),
        DynSolValue::String(s) => s.len() - 2 * s.matches('\u{FFFD}').count(),
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) | DynSolValue::Tuple(items) => {
            items.iter().fold(0, |sum, v| sum.saturating_add(decoded_size(v)))
        }
        _ => 32,
    }
}

/// Whether `values` are no larger than the `len` bytes they were decoded from.
fn unaliased<'a>(values: impl IntoIterator<Item = &'a DynSolValue>, len: usize) -> bool {
    values.into_iter().fold(0usize, |sum, v| sum.saturating_add(decoded_size(v))) <= len
}

/// The shapes of a function's inputs and outputs (`None` in the index: too large to decode).
type InputsOutputs = (Shape, Shape);

/// An ABI indexed for decoding: functions and errors by selector, events by topic 0. Events and errors whose types
/// cannot be decoded within bounds ([`Shape`]) are left out; such functions keep their name and are not decoded.
#[derive(Debug, Default)]
pub struct Abi {
    /// The ABI as given (served by `/smart-contracts/:hash`).
    pub json: JsonAbi,
    functions: HashMap<[u8; 4], (Function, Option<InputsOutputs>)>,
    events: HashMap<B256, Vec<(Event, Shape)>>,
    errors: HashMap<[u8; 4], (AbiError, Shape)>,
    constructor: Option<Shape>,
}

impl Abi {
    /// Indexes `json` (done once per artifact).
    pub fn new(json: JsonAbi) -> Self {
        let functions = json
            .functions()
            .map(|f| (f.selector().0, (f.clone(), Shape::of(&f.inputs).zip(Shape::of(&f.outputs)))))
            .collect();
        let mut events: HashMap<B256, Vec<(Event, Shape)>> = HashMap::new();
        for event in json.events().filter(|e| !e.anonymous) {
            if let Some(shape) = Shape::of(&event.inputs) {
                events.entry(event.selector()).or_default().push((event.clone(), shape));
            }
        }
        let errors = json.errors().filter_map(|e| Some((e.selector().0, (e.clone(), Shape::of(&e.inputs)?)))).collect();
        let constructor = json.constructor.as_ref().and_then(|c| Shape::of(&c.inputs));
        Abi { json, functions, events, errors, constructor }
    }

    /// The items of `json` whose types do not resolve or are too large or too deeply nested to decode (see
    /// [`Shape`]), by signature.
    pub fn undecodable(json: &JsonAbi) -> Vec<String> {
        let functions = json.functions().filter(|f| Shape::of(&f.inputs).is_none() || Shape::of(&f.outputs).is_none());
        let events = json.events().filter(|e| Shape::of(&e.inputs).is_none()).map(|e| e.signature());
        let errors = json.errors().filter(|e| Shape::of(&e.inputs).is_none()).map(|e| e.signature());
        let constructor =
            json.constructor.iter().filter(|c| Shape::of(&c.inputs).is_none()).map(|_| "constructor".into());
        functions.map(|f| f.signature()).chain(events).chain(errors).chain(constructor).collect()
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
        self.functions.get(&selector(input)?).map(|(function, _)| function)
    }

    /// Functions named `name` (for method filters).
    pub fn selectors_named(&self, name: &str) -> Vec<[u8; 4]> {
        self.functions.iter().filter(|(_, (f, _))| f.name == name).map(|(s, _)| *s).collect()
    }

    /// `decoded_input` of a call: the selected function's parameters, when they decode within bounds.
    pub fn decode_input(&self, input: &[u8]) -> Option<Value> {
        let selector = selector(input)?;
        let (function, Some((shape, _))) = self.functions.get(&selector)? else { return None };
        let values = shape.decode(&input[4..], |data| function.abi_decode_input(data))?;
        Some(decoded(&function.name, selector, &named(&function.inputs), &values, None))
    }

    /// Whether the function `selector` names has inputs and outputs within the decoding bounds (see [`Shape`]).
    pub fn within_bounds(&self, selector: [u8; 4]) -> bool {
        matches!(self.functions.get(&selector), Some((_, Some(_))))
    }

    /// The output of the function `selector` names (a read-method call's answer), when it decodes within bounds.
    pub fn decode_output(&self, selector: [u8; 4], output: &[u8]) -> Result<Vec<DynSolValue>, String> {
        let (function, shapes) = self.functions.get(&selector).ok_or("no such function")?;
        let (_, shape) = shapes.as_ref().ok_or("its types are too large to decode")?;
        if !shape.admits(output) {
            return Err(format!("{} bytes of this shape are not decoded", output.len()));
        }
        let values = function.abi_decode_output(output).map_err(|e| e.to_string())?;
        match unaliased(&values, output.len()) {
            true => Ok(values),
            false => Err("its offsets point at shared bytes".to_owned()),
        }
    }

    /// The constructor's arguments, when they decode within bounds.
    pub fn decode_constructor(&self, args: &[u8]) -> Option<Vec<DynSolValue>> {
        let constructor = self.json.constructor.as_ref()?;
        self.constructor.as_ref()?.decode(args, |data| constructor.abi_decode_input(data))
    }

    /// `decoded` of a log: the first event with this topic 0 whose parameters decode within bounds.
    pub fn decode_log(&self, topics: &[B256], data: &[u8]) -> Option<Value> {
        let candidates = self.events.get(topics.first()?)?;
        let len = data.len().saturating_add(topics.len().saturating_mul(32));
        candidates.iter().filter(|(_, shape)| shape.admits(data)).find_map(|(event, _)| {
            let decoded_event = event.decode_log_parts(topics.iter().copied(), data).ok()?;
            if !unaliased(decoded_event.indexed.iter().chain(&decoded_event.body), len) {
                return None;
            }
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
        let (error, shape) = self.errors.get(&selector(data)?)?;
        let values = shape.decode(data, |data| error.decode_error(data).map(|e| e.body))?;
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
        let (f, _) = abi.functions.values().find(|(f, _)| f.name == "aggregate3").unwrap();
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
        let error = custom.errors.values().next().unwrap().0.clone();
        let data = [&error.selector()[..], &(U256::from(1), U256::from(2)).abi_encode_params()].concat();
        let reason = revert_reason(&[&custom], &data).unwrap();
        assert_eq!(reason["method_call"], "Insufficient(uint256 available, uint256 required)");
        assert_eq!(reason["parameters"][1]["value"], "2");
        assert_eq!(revert_reason(&[], &data).unwrap()["raw"], format!("0x{}", alloy::hex::encode(&data)));
        let text = alloy::sol_types::SolError::abi_encode(&alloy::sol_types::Revert::from("nope"));
        assert_eq!(revert_reason(&[], &text).unwrap()["parameters"][0]["value"], "nope");
        assert!(revert_reason(&[], &[]).is_none());
    }

    /// `multicall(bytes[])` with `count` offsets all pointing at one `len`-byte value.
    fn aliased_multicall(count: usize, len: usize) -> Vec<u8> {
        let word = |n: usize| U256::from(n).to_be_bytes::<32>();
        let mut input = alloy::hex::decode("ac9650d8").unwrap();
        input.extend(word(32));
        input.extend(word(count));
        for _ in 0..count {
            input.extend(word(32 * count));
        }
        input.extend(word(len));
        input.extend(vec![0x41; len.div_ceil(32) * 32]);
        input
    }

    #[test]
    fn offsets_that_share_bytes_are_not_decoded() {
        let abi = Abi::well_known();
        // Canonical: two distinct elements decode.
        let f = abi.functions.values().find(|(f, _)| f.name == "multicall").unwrap().0.clone();
        let calls = vec![alloy::primitives::Bytes::from(vec![1u8; 40]), alloy::primitives::Bytes::from(vec![2u8; 3])];
        let canonical = [&f.selector()[..], &(calls,).abi_encode_params()].concat();
        assert_eq!(abi.decode_input(&canonical).unwrap()["parameters"][0]["value"][1], "0x020202");
        // 100 offsets to one 3,000-byte value: 300 KB from 6.3 KB of data. alloy decodes it; the value is dropped.
        let aliased = aliased_multicall(100, 3000);
        assert!(f.abi_decode_input(&aliased[4..]).is_ok());
        assert!(abi.decode_input(&aliased).is_none());
        // `bytes[]` can cost the square of its data: past ~23 KiB it is not decoded at all (alloy would allocate
        // before anything could be checked).
        assert!(abi.decode_input(&aliased_multicall(1, 20_000)).is_some(), "one element of 20 KB decodes");
        let long = aliased_multicall(1, 40_000);
        assert!(f.abi_decode_input(&long[4..]).is_ok());
        assert!(abi.decode_input(&long).is_none());
        // A plain `bytes` parameter costs its length: decoded at any length.
        let plain = Abi::new(JsonAbi::parse(["function post(bytes data)"]).unwrap());
        let (post, _) = plain.functions.values().next().unwrap();
        let big =
            [&post.selector()[..], &(alloy::primitives::Bytes::from(vec![7u8; 100_000]),).abi_encode_params()].concat();
        assert!(plain.decode_input(&big).is_some());
    }

    #[test]
    fn nested_arrays_are_decoded_only_while_their_worst_case_is_small() {
        let word = |n: usize| U256::from(n).to_be_bytes::<32>().to_vec();
        // `bytes[][]`, 4.3 KB: 40 outer offsets to one array of 40 offsets to one 1,600-byte value.
        let nested = Abi::new(JsonAbi::parse(["function deep(bytes[][] a)"]).unwrap());
        let (deep, _) = nested.functions.values().next().unwrap().clone();
        let mut input = deep.selector().to_vec();
        input.extend(word(32));
        input.extend(word(40));
        input.extend((0..40).flat_map(|_| word(40 * 32)));
        input.extend(word(40));
        input.extend((0..40).flat_map(|_| word(40 * 32)));
        input.extend(word(1600));
        input.extend(vec![0x41; 1600]);
        assert!(deep.abi_decode_input(&input[4..]).is_ok(), "alloy decodes 2.56 MB from 4.3 KB");
        assert!(nested.decode_input(&input).is_none());
        // `uint256[16000][][]` passes the template bound, but each element of the outer array copies 16,000 values.
        let wide = Abi::new(JsonAbi::parse(["function wide(uint256[16000][][] a)"]).unwrap());
        let (f, shapes) = wide.functions.values().next().unwrap();
        let (shape, _) = shapes.as_ref().expect("within the template bound");
        assert!(!shape.admits(&[0u8; 1024]), "1 KiB of it could build 32 × 32 × 16,000 values");
        let mut empty = f.selector().to_vec();
        empty.extend(word(32));
        empty.extend(word(0));
        assert!(wide.decode_input(&empty).is_some(), "an empty outer array (64 bytes) decodes");
    }

    #[test]
    fn strings_that_are_not_utf8_still_decode() {
        let abi = Abi::new(JsonAbi::parse(["function setName(string name)"]).unwrap());
        let (f, _) = abi.functions.values().next().unwrap();
        let mut input = f.selector().to_vec();
        input.extend(U256::from(32).to_be_bytes::<32>());
        input.extend(U256::from(100).to_be_bytes::<32>());
        input.extend(vec![0xff; 128]);
        let decoded = abi.decode_input(&input).expect("each invalid byte counts as the one it was");
        assert_eq!(decoded["parameters"][0]["value"].as_str().unwrap().chars().count(), 100);
    }

    #[test]
    fn types_with_huge_fixed_arrays_are_not_indexed_or_decoded() {
        let json: JsonAbi = serde_json::from_value(serde_json::json!([
            {"type": "function", "name": "n", "inputs": [{"name": "a", "type": "uint8[12000000][]"}], "outputs": []},
            {"type": "function", "name": "m", "inputs": [], "outputs": [{"name": "", "type": "uint256[9999999999]"}], "stateMutability": "view"},
            {"type": "event", "name": "E", "inputs": [{"name": "a", "type": "bytes32[1000000]", "indexed": false}], "anonymous": false},
            {"type": "function", "name": "ok", "inputs": [{"name": "a", "type": "uint8[16][]"}], "outputs": []}
        ]))
        .unwrap();
        let mut undecodable = Abi::undecodable(&json);
        undecodable.sort();
        assert_eq!(undecodable, ["E(bytes32[1000000])", "m()", "n(uint8[12000000][])"]);
        let abi = Abi::new(json);
        assert!(abi.events.is_empty());
        // An empty `uint8[12000000][]` decodes to nothing instead of 12 million placeholders; the call keeps its name.
        let selector = alloy::primitives::keccak256("n(uint8[12000000][])");
        let input = [&selector[..4], &U256::from(32).to_be_bytes::<32>(), &[0u8; 32]].concat();
        assert_eq!(abi.function(&input).map(|f| f.name.as_str()), Some("n"));
        assert!(abi.decode_input(&input).is_none());
        let ok = alloy::primitives::keccak256("ok(uint8[16][])");
        let input = [&ok[..4], &U256::from(32).to_be_bytes::<32>(), &[0u8; 32]].concat();
        assert!(abi.decode_input(&input).is_some());
    }

    #[test]
    fn types_nested_past_the_limit_are_not_decoded() {
        let nested = |levels: usize| format!("uint8{}", "[1]".repeat(levels));
        let function = |name: &str, ty: &str| serde_json::json!({"type": "function", "name": name, "inputs": [{"name": "", "type": ty}], "outputs": []});
        let deepest = nested(MAX_NESTING);
        let json: JsonAbi = serde_json::from_value(serde_json::json!([
            function("deepest", &deepest),
            function("deeper", &nested(MAX_NESTING + 1)),
            function("crashed", &nested(8_000)),
        ]))
        .unwrap();
        let mut undecodable = Abi::undecodable(&json);
        undecodable.sort();
        assert_eq!(
            undecodable,
            [format!("crashed({})", nested(8_000)), format!("deeper({})", nested(MAX_NESTING + 1))]
        );
        let abi = Abi::new(json);
        // One word of data is one `uint8` at any depth of `[1]`: only the type's nesting decides.
        let call = |signature: String| [&keccak256(signature)[..4], &U256::from(7).to_be_bytes::<32>()[..]].concat();
        let decoded = abi.decode_input(&call(format!("deepest({deepest})"))).unwrap();
        assert_eq!(decoded["method_call"], format!("deepest({deepest})"));
        assert_eq!(decoded["parameters"][0]["value"].to_string(), format!("{}\"7\"{}", "[".repeat(16), "]".repeat(16)));
        assert!(abi.decode_input(&call(format!("crashed({})", nested(8_000)))).is_none());
        assert!(abi.within_bounds(keccak256(format!("deepest({deepest})"))[..4].try_into().unwrap()));
        assert!(!abi.within_bounds(keccak256(format!("deeper({})", nested(MAX_NESTING + 1)))[..4].try_into().unwrap()));
        // A tuple is a level too.
        let tuple = |levels: usize| serde_json::json!({"name": "", "type": format!("tuple{}", "[1]".repeat(levels - 1)), "components": [{"name": "x", "type": "uint8"}]});
        let json: JsonAbi = serde_json::from_value(serde_json::json!([
            {"type": "event", "name": "Fits", "inputs": [tuple(MAX_NESTING)], "anonymous": false},
            {"type": "event", "name": "Past", "inputs": [tuple(MAX_NESTING + 1)], "anonymous": false},
        ]))
        .unwrap();
        assert_eq!(Abi::undecodable(&json).len(), 1);
        assert!(Abi::undecodable(&json)[0].starts_with("Past("));
    }
}

//! Etherscan's `module=proxy`: the node's JSON-RPC methods with their parameters in the query (`action=eth_call&to=…`),
//! answered in JSON-RPC form. Each call is built as a JSON-RPC request and goes through the `/api/eth`
//! passthrough, under its method policy, limits and per-client slots, so this module opens no door that one keeps
//! shut (`eth_sendRawTransaction` is refused under `--no-send-raw-transaction`, debug methods are not offered).

use super::{Answer, Outcome, Params, Refusal};
use crate::api::AppState;
use serde_json::{json, Map, Value};
use std::net::IpAddr;

/// How an action's parameters become the JSON-RPC `params` array.
enum Shape {
    /// No parameters.
    None,
    /// Query parameters in order, each required unless it has a default.
    Positional(&'static [(&'static str, Option<&'static str>)]),
    /// The block tag and a `boolean` flag (`eth_getBlockByNumber`).
    BlockWithFlag,
    /// A call object from `to`, `data`, `from`, `value`, `gas`, `gasPrice`, then (for `eth_call`) the block tag.
    Call { with_tag: bool },
}

/// The actions Etherscan offers, each with its JSON-RPC method's parameter shape.
const ACTIONS: &[(&str, Shape)] = &[
    ("eth_blocknumber", Shape::None),
    ("eth_gasprice", Shape::None),
    ("eth_getblockbynumber", Shape::BlockWithFlag),
    ("eth_getunclebyblocknumberandindex", Shape::Positional(&[("tag", None), ("index", None)])),
    ("eth_getblocktransactioncountbynumber", Shape::Positional(&[("tag", None)])),
    ("eth_gettransactionbyhash", Shape::Positional(&[("txhash", None)])),
    ("eth_gettransactionbyblocknumberandindex", Shape::Positional(&[("tag", None), ("index", None)])),
    ("eth_gettransactioncount", Shape::Positional(&[("address", None), ("tag", Some("latest"))])),
    ("eth_sendrawtransaction", Shape::Positional(&[("hex", None)])),
    ("eth_gettransactionreceipt", Shape::Positional(&[("txhash", None)])),
    ("eth_call", Shape::Call { with_tag: true }),
    ("eth_getcode", Shape::Positional(&[("address", None), ("tag", Some("latest"))])),
    ("eth_getstorageat", Shape::Positional(&[("address", None), ("position", None), ("tag", Some("latest"))])),
    ("eth_estimategas", Shape::Call { with_tag: false }),
];

/// The JSON-RPC method name of a lower-cased action (`eth_getblockbynumber` → `eth_getBlockByNumber`).
fn method_name(action: &str) -> Option<&'static str> {
    crate::api::rpc::METHODS.iter().map(|(name, _, _)| *name).find(|name| name.eq_ignore_ascii_case(action))
}

/// Answers `module=proxy&action=…` (`action` lower-cased).
pub(super) async fn call(action: &str, params: &Params, state: &AppState, client: IpAddr) -> Outcome {
    let Some((shape, method)) =
        ACTIONS.iter().find(|(name, _)| *name == action).and_then(|(_, shape)| Some((shape, method_name(action)?)))
    else {
        return Err(Refusal::Translator(hyper::StatusCode::BAD_REQUEST, "Unknown action"));
    };
    let id = params.rpc_id();
    let rpc_params = match rpc_params(shape, params) {
        Ok(list) => list,
        Err(missing) => {
            let message = format!("missing parameter {missing}");
            let error = json!({"code": crate::api::rpc::code::INVALID_PARAMS, "message": message});
            return Ok(Answer::Rpc(json!({"jsonrpc": "2.0", "id": id, "error": error})));
        }
    };
    forward(method, rpc_params, id, state, client).await
}

/// Blockscout's `account/eth_get_balance`: `eth_getBalance` of `address` at `block` (default `latest`), in
/// JSON-RPC form.
pub(super) async fn eth_get_balance(params: &Params, state: &AppState, client: IpAddr) -> Outcome {
    let address = params.address("address", "Query parameter 'address' is required", "Invalid address hash")?;
    let block = params.get("block").unwrap_or("latest");
    forward("eth_getBalance", vec![json!(address), json!(block)], params.rpc_id(), state, client).await
}

/// Sends one JSON-RPC request through the passthrough, in one of the client's slots.
async fn forward(method: &str, params: Vec<Value>, id: Value, state: &AppState, client: IpAddr) -> Outcome {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let _slot = match state.rpc.admit(client) {
        Ok(slot) => slot,
        Err(refused) => return Ok(Answer::Forwarded(refused)),
    };
    let body = bytes::Bytes::from(request.to_string());
    let answer = state.rpc.call(&state.rpc_url, body, state.status.snapshot().node_head, client).await;
    Ok(Answer::Forwarded(Box::new(answer)))
}

/// The `params` array, or the name of a required parameter that is missing.
fn rpc_params(shape: &Shape, params: &Params) -> Result<Vec<Value>, &'static str> {
    match shape {
        Shape::None => Ok(Vec::new()),
        Shape::Positional(names) => {
            names.iter().map(|(name, default)| params.get(name).or(*default).map(|v| json!(v)).ok_or(*name)).collect()
        }
        Shape::BlockWithFlag => {
            let tag = params.get("tag").ok_or("tag")?;
            let full = params.get("boolean").is_some_and(|b| b.eq_ignore_ascii_case("true"));
            Ok(vec![json!(tag), json!(full)])
        }
        Shape::Call { with_tag } => {
            let mut call = Map::new();
            for key in ["from", "to", "data", "value", "gas", "gasPrice"] {
                if let Some(value) = params.get(key) {
                    call.insert(key.to_string(), json!(value));
                }
            }
            if *with_tag && !call.contains_key("to") {
                return Err("to");
            }
            let mut list = vec![Value::Object(call)];
            if *with_tag {
                list.push(json!(params.get("tag").unwrap_or("latest")));
            }
            Ok(list)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::query::Query;

    fn params(query: &str) -> Params {
        Params(Query::parse(Some(query)))
    }

    #[test]
    fn every_action_names_a_passthrough_method() {
        for (action, _) in ACTIONS {
            assert!(method_name(action).is_some(), "{action}");
        }
        assert_eq!(method_name("eth_getblockbynumber"), Some("eth_getBlockByNumber"));
    }

    #[test]
    fn query_parameters_become_json_rpc_params() {
        let shape = |action: &str| &ACTIONS.iter().find(|(a, _)| *a == action).unwrap().1;
        let block = rpc_params(shape("eth_getblockbynumber"), &params("tag=0x10&boolean=true")).unwrap();
        assert_eq!(block, vec![json!("0x10"), json!(true)]);
        let count = rpc_params(shape("eth_gettransactioncount"), &params("address=0xabc")).unwrap();
        assert_eq!(count, vec![json!("0xabc"), json!("latest")]);
        let call = rpc_params(shape("eth_call"), &params("to=0xabc&data=0x1234&tag=0x5")).unwrap();
        assert_eq!(call, vec![json!({"to": "0xabc", "data": "0x1234"}), json!("0x5")]);
        let estimate = rpc_params(shape("eth_estimategas"), &params("data=0x12&value=0xff")).unwrap();
        assert_eq!(estimate, vec![json!({"data": "0x12", "value": "0xff"})]);
        assert_eq!(rpc_params(shape("eth_gettransactionbyhash"), &params("")), Err("txhash"));
        assert_eq!(rpc_params(shape("eth_call"), &params("data=0x")), Err("to"));
        // A parameter is a JSON string whatever it holds: it cannot add members to the request.
        let odd = rpc_params(shape("eth_getcode"), &params("address=%22%2C%22x%22%3A1")).unwrap();
        assert_eq!(odd[0], json!("\",\"x\":1"));
    }
}

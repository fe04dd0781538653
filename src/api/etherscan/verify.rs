//! `module=contract`: `verifysourcecode` (a standard-JSON input, as Foundry and Hardhat send it, or one Solidity
//! file with its settings) queues a job on the same verifier as the REST route and answers its `guid`;
//! `checkverifystatus` reads the job back. `verifyproxycontract` / `checkproxyverification` report the
//! implementation the index found for a proxy (proxies are detected on their own; the guid names the proxy).
//!
//! Verification is a write: the request must carry a valid API key (`apikey=`, what Etherscan clients send) or an
//! account token (`Authorization: Bearer …`); otherwise 401 with the error envelope.

use super::{bad, Answer, Outcome, Params, Refusal};
use crate::api::rest::verification;
use crate::api::{auth, ApiError, AppState, AUTH_BUDGET_MESSAGE};
use crate::contracts::verifier::Request;
use crate::store::records::JobState;
use crate::store::tables::Contracts;
use alloy::primitives::Address;
use hyper::{HeaderMap, StatusCode};
use serde_json::json;
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

/// The account behind the request's API key or bearer token.
fn authorize(params: &Params, headers: &HeaderMap, state: &AppState, client: IpAddr) -> Result<(), Refusal> {
    let header = headers.get(auth::API_KEY_HEADER).and_then(|v| v.to_str().ok());
    if let Some(key) = params.get("apikey").or(header) {
        let now = std::time::Instant::now();
        if let Some(seconds) = state.auth.failures.locked_for(client, now) {
            return Err(Refusal::Throttled(AUTH_BUDGET_MESSAGE.into(), seconds));
        }
        if let Ok(Some(_)) = state.accounts.verify_api_key(key.trim()) {
            return Ok(());
        }
        state.auth.failures.record(client, now);
    }
    let unauthorized = || {
        Refusal::Translator(
            StatusCode::UNAUTHORIZED,
            "Verification needs a valid API key (apikey= or x-api-key) or account token (Authorization: Bearer)",
        )
    };
    // Not the sign-in cookie: a link on another site can make a browser send this GET route with it.
    if !headers.contains_key(hyper::header::AUTHORIZATION) {
        return Err(unauthorized());
    }
    match auth::require_account(headers, state, client) {
        Ok(_) => Ok(()),
        Err(ApiError::AuthBudget(seconds)) => Err(Refusal::Throttled(AUTH_BUDGET_MESSAGE.into(), seconds)),
        Err(_) => Err(unauthorized()),
    }
}

/// `verifysourcecode`: `contractaddress`, `sourceCode` (the standard-JSON input), `codeformat`
/// (`solidity-standard-json-input`), `contractname` (`path:Name` or `Name`), `compilerversion`; the constructor
/// arguments (`constructorArguements` or `constructorArguments`) are accepted and read from the creation input.
pub(super) async fn verifysourcecode(
    params: &Params,
    headers: &HeaderMap,
    state: &AppState,
    client: IpAddr,
) -> Outcome {
    if state.config.read_replica {
        return Err(Refusal::Translator(StatusCode::FORBIDDEN, crate::api::READ_REPLICA_MESSAGE));
    }
    authorize(params, headers, state, client)?;
    let address = params.address("contractaddress", "Missing contractaddress", "Invalid contractaddress format")?;
    let source = params.get("sourceCode").or(params.get("sourcecode")).ok_or_else(|| bad("Missing sourceCode"))?;
    let compiler_version = params.get("compilerversion").ok_or_else(|| bad("Missing compilerversion"))?;
    let contract_name = params.get("contractname").ok_or_else(|| bad("Missing contractname"))?;
    let request = match params.get("codeformat") {
        Some("solidity-standard-json-input") => Request {
            compiler_version: compiler_version.to_owned(),
            contract_name: contract_name.to_owned(),
            input: serde_json::from_str(source).map_err(|e| bad(format!("Invalid sourceCode: {e}")))?,
        },
        Some("solidity-single-file") => single_file(params, source, compiler_version, contract_name)?,
        _ => return Err(bad("codeformat must be solidity-standard-json-input or solidity-single-file")),
    };
    match verification::start(state, address, request).await {
        Ok(verification::Started::Queued(id)) => Ok(Answer::Ok(json!(id.to_string()))),
        // Blockscout's words, which forge recognises as "already verified" (not as a failure).
        Ok(verification::Started::AlreadyVerified) => {
            Ok(Answer::NotOk("NOTOK".into(), json!("Smart-contract already verified.")))
        }
        Err(ApiError::InvalidParam { detail, .. }) => Err(bad(detail)),
        Err(ApiError::NotFound) => Err(no_code_at(address)),
        // The queue's words (full, or the contract's jobs at their limit) as the text clients read.
        Err(ApiError::Throttled(reason)) => Err(Refusal::Throttled(reason, 1)),
        Err(e) => Err(Refusal::Server(e)),
    }
}

/// The refusal for an address the index knows no code at, in Etherscan's words: verifiers take it to mean "deployed
/// too recently" and ask again a few blocks later.
fn no_code_at(address: Address) -> Refusal {
    bad(format!("Unable to locate ContractCode at {}", address.to_checksum(None)))
}

/// Etherscan's single-file form (`optimizationUsed`, `runs`, `evmversion`, `libraryname1..10` with
/// `libraryaddress1..10`) as the flattened-code request of the REST route.
fn single_file(params: &Params, source: &str, version: &str, name: &str) -> Result<Request, Refusal> {
    let mut libraries = serde_json::Map::new();
    for n in 1..=10 {
        if let (Some(library), Some(address)) =
            (params.get(&format!("libraryname{n}")), params.get(&format!("libraryaddress{n}")))
        {
            libraries.insert(library.to_owned(), json!(address));
        }
    }
    let fields = json!({
        "compiler_version": version,
        "contract_name": name,
        "source_code": source,
        "is_optimization_enabled": params.get("optimizationUsed").or(params.get("optimizationused")).unwrap_or("0"),
        "optimization_runs": params.get("runs").unwrap_or("200"),
        "evm_version": params.get("evmversion").or(params.get("evmVersion")).unwrap_or("default"),
        "libraries": libraries,
    });
    let fields = fields.as_object().expect("an object");
    verification::request_from_sources(fields, verification::Via::FlattenedCode).map_err(|e| match e {
        ApiError::InvalidParam { detail, .. } => bad(detail),
        other => Refusal::Server(other),
    })
}

/// `verifyproxycontract`: `address` (and optionally Etherscan's `expectedimplementation`); the guid is the proxy's
/// address followed by the time in hex, as Blockscout writes it, so the check needs no stored state.
pub(super) fn verifyproxycontract(params: &Params, state: &AppState) -> Outcome {
    let proxy = params.address("address", "Missing address", "Invalid address format")?;
    if state.store.reader().get::<Contracts>(&proxy)?.is_none() {
        return Err(no_code_at(proxy));
    }
    let expected = params.opt_address("expectedimplementation", "Invalid expectedimplementation format")?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as u32;
    let expected = expected.map(alloy::hex::encode).unwrap_or_default();
    Ok(Answer::Ok(json!(format!("{}{now:08x}{expected}", alloy::hex::encode(proxy)))))
}

/// `checkproxyverification`: the implementation the index knows for the proxy named by the guid.
pub(super) fn checkproxyverification(params: &Params, state: &AppState) -> Outcome {
    let unknown = || Answer::NotOk("NOTOK".into(), json!("Unknown UID"));
    let shaped = |g: &&str| g.is_ascii() && (g.len() == 48 || g.len() == 88);
    let Some(guid) = params.get("guid").map(str::trim).filter(shaped) else {
        return Ok(unknown());
    };
    let (Ok(proxy), Ok(_)) = (guid[..40].parse::<Address>(), u32::from_str_radix(&guid[40..48], 16)) else {
        return Ok(unknown());
    };
    let expected = match guid.get(48..) {
        Some(rest) if !rest.is_empty() => match rest.parse::<Address>() {
            Ok(address) => Some(address),
            Err(_) => return Ok(unknown()),
        },
        _ => None,
    };
    // A storage-slot proxy's implementation, or the target an EIP-1167 clone's code names.
    let reader = state.store.reader();
    let slot = reader.get::<Contracts>(&proxy)?.and_then(|r| r.proxy).map(|p| p.implementation);
    let implementation = match slot {
        Some(slot) => Some(slot),
        None => crate::api::rest::smart_contracts::stored_facts(&reader, &proxy)?.and_then(|f| f.minimal_proxy_of),
    };
    let implementation = implementation.filter(|i| !i.is_zero());
    Ok(match implementation {
        Some(found) if expected.is_none_or(|e| e == found) => Answer::Ok(json!(format!(
            "The proxy's ({}) implementation contract is found at {} and is successfully updated.",
            proxy.to_checksum(None),
            found.to_checksum(None)
        ))),
        Some(found) => Answer::NotOk(
            "NOTOK".into(),
            json!(format!(
                "The implementation contract at {} does not match the expected implementation {}.",
                found.to_checksum(None),
                expected.map(|e| e.to_checksum(None)).unwrap_or_default()
            )),
        ),
        None => Answer::NotOk(
            "NOTOK".into(),
            json!("A corresponding implementation contract was unfortunately not detected for the proxy address."),
        ),
    })
}

/// `checkverifystatus`: `guid` → "Pending in queue", "Pass - Verified", "Fail - Unable to verify" (the reason in
/// `message`) or "Unknown UID".
pub(super) fn checkverifystatus(params: &Params, state: &AppState) -> Outcome {
    let unknown = || Answer::NotOk("NOTOK".into(), json!("Unknown UID"));
    let Some(id) = params.get("guid").and_then(|g| g.trim().parse::<u64>().ok()) else { return Ok(unknown()) };
    Ok(match state.verifications.job(id)?.map(|job| job.state) {
        None => unknown(),
        Some(JobState::Queued | JobState::Running) => Answer::NotOk("NOTOK".into(), json!("Pending in queue")),
        Some(JobState::Verified) => Answer::Ok(json!("Pass - Verified")),
        Some(JobState::Failed(reason)) => Answer::NotOk(reason, json!("Fail - Unable to verify")),
    })
}

//! `module=contract`: `verifysourcecode` (a standard-JSON input, as Foundry and Hardhat send it) queues a job on
//! the same verifier as the REST route and answers its `guid`; `checkverifystatus` reads the job back.
//!
//! Verification is a write: the request must carry a valid API key (`apikey=`, what Etherscan clients send) or an
//! account token (`Authorization: Bearer …`); otherwise 401 with the error envelope.

use super::{bad, Answer, Outcome, Params, Refusal};
use crate::api::rest::verification;
use crate::api::{auth, ApiError, AppState};
use crate::contracts::verifier::Request;
use crate::store::records::JobState;
use hyper::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use std::net::IpAddr;

/// The account behind the request's API key or bearer token.
fn authorize(params: &Params, headers: &HeaderMap, state: &AppState, client: IpAddr) -> Result<(), Refusal> {
    if let Some(key) = params.get("apikey") {
        if let Ok(Some(_)) = state.accounts.verify_api_key(key) {
            return Ok(());
        }
    }
    match auth::require_account(headers, state, client) {
        Ok(_) => Ok(()),
        Err(ApiError::AuthBudget) => {
            Err(Refusal::Translator(StatusCode::TOO_MANY_REQUESTS, "Too many failed authentications; try again later"))
        }
        Err(_) => Err(Refusal::Translator(
            StatusCode::UNAUTHORIZED,
            "Verification needs a valid API key (apikey=) or account token (Authorization: Bearer)",
        )),
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
    authorize(params, headers, state, client)?;
    let address = params.address("contractaddress", "Missing contractaddress", "Invalid contractaddress format")?;
    match params.get("codeformat") {
        Some("solidity-standard-json-input") => {}
        _ => return Err(bad("Only codeformat=solidity-standard-json-input is supported")),
    }
    let source = params.get("sourceCode").or(params.get("sourcecode")).ok_or_else(|| bad("Missing sourceCode"))?;
    let input: Value = serde_json::from_str(source).map_err(|e| bad(format!("Invalid sourceCode: {e}")))?;
    let request = Request {
        compiler_version: params.get("compilerversion").ok_or_else(|| bad("Missing compilerversion"))?.to_owned(),
        contract_name: params.get("contractname").ok_or_else(|| bad("Missing contractname"))?.to_owned(),
        input,
    };
    match verification::start(state, address, request).await {
        Ok(id) => Ok(Answer::Ok(json!(id.to_string()))),
        Err(ApiError::InvalidParam { detail, .. }) => Err(bad(detail)),
        Err(ApiError::NotFound) => Err(bad("Address is not a smart-contract")),
        Err(ApiError::Throttled(_)) => {
            Err(Refusal::Translator(StatusCode::TOO_MANY_REQUESTS, "The verification queue is full; try again later"))
        }
        Err(e) => Err(Refusal::Server(e)),
    }
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

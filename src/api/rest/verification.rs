//! Contract verification requests: `POST /api/v2/smart-contracts/:hash/verification/via/{standard-input,
//! flattened-code,multi-part}` (JSON or multipart/form-data as Blockscout's frontend sends them), behind an account
//! token; flattened code and multi-part sources become a standard-JSON input with the form's optimizer and EVM
//! settings; [`start`] queues a job (shared
//! with the Etherscan-style `verifysourcecode`), and [`publish_outcomes`] tells the `addresses:<hash>` WebSocket
//! topic how it ended.

use crate::api::body::{ok, Body};
use crate::api::request_body::RequestBody;
use crate::api::{auth, read_body, ApiError, AppState};
use crate::contracts::jobs::SubmitError;
use crate::contracts::verifier::{self, Request};
use crate::store::tables::{Code, Contracts, VerifiedSources};
use alloy::primitives::Address;
use bytes::Bytes;
use hyper::header::CONTENT_TYPE;
use serde_json::{json, Value};
use std::net::IpAddr;
use tokio_util::sync::CancellationToken;

/// Largest verification request (sources and form together), in bytes.
pub const MAX_SOURCES: usize = 10 * 1024 * 1024;

/// What a verification request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// Queued as the job with this id.
    Queued(u64),
    /// Not queued: the contract's code is verified with a full match, which no other source replaces.
    AlreadyVerified,
}

/// Queues the verification of `address` with `request`. Compiler versions neither installed nor in the release list
/// and malformed inputs are 422, an address without contract code 404, a full queue 429.
pub async fn start(state: &AppState, address: Address, request: Request) -> Result<Started, ApiError> {
    let queue = &state.verifications;
    queue
        .compilers()
        .check(&request.compiler_version)
        .await
        .map_err(|e| ApiError::invalid("compiler_version", e.to_string()))?;
    verifier::check_input(&request.input).map_err(|e| ApiError::invalid("files", e.to_string()))?;
    if request.contract_name.trim().is_empty() {
        return Err(ApiError::invalid("contract_name", "missing contract name"));
    }
    let reader = state.store.reader();
    let Some(row) = reader.get::<Contracts>(&address)? else { return Err(ApiError::NotFound) };
    // An EIP-7702 delegation's code only names its delegate's: there is nothing to verify.
    let has_code =
        reader.get::<Code>(&row.code_hash)?.is_some_and(|code| crate::contracts::proxy::is_contract_code(&code));
    if !has_code {
        return Err(ApiError::NotFound);
    }
    let verified = reader.get::<VerifiedSources>(&address)?;
    if verified.is_some_and(|v| v.code_hash == row.code_hash && v.full_match) {
        return Ok(Started::AlreadyVerified);
    }
    let id = queue.submit(address, &request).map_err(|e| match e {
        SubmitError::Full | SubmitError::ContractBusy => ApiError::Throttled(e.to_string()),
        SubmitError::Store(detail) => ApiError::Internal(detail),
    })?;
    Ok(Started::Queued(id))
}

/// How the sources are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A standard-JSON input.
    StandardInput,
    /// One Solidity file (`source_code`).
    FlattenedCode,
    /// Several Solidity files (`files[N]` parts named by their file names, or a `files` object).
    MultiPart,
}

impl Via {
    /// The method named by the path's last segment.
    pub fn parse(segment: &str) -> Option<Via> {
        match segment {
            "standard-input" => Some(Via::StandardInput),
            "flattened-code" => Some(Via::FlattenedCode),
            "multi-part" => Some(Via::MultiPart),
            _ => None,
        }
    }

    /// The route's path pattern.
    pub fn path(self) -> &'static str {
        match self {
            Via::StandardInput => "/api/v2/smart-contracts/:address_hash/verification/via/standard-input",
            Via::FlattenedCode => "/api/v2/smart-contracts/:address_hash/verification/via/flattened-code",
            Via::MultiPart => "/api/v2/smart-contracts/:address_hash/verification/via/multi-part",
        }
    }
}

/// `POST …/verification/via/<method>`.
pub async fn verify(
    req: hyper::Request<RequestBody>,
    state: &AppState,
    client: IpAddr,
    address: Address,
    via: Via,
) -> Result<hyper::Response<Body>, ApiError> {
    auth::require_account(req.headers(), state, client)?;
    let content_type = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let body = read_body(state, req, MAX_SOURCES, client).await?;
    let fields = if content_type.starts_with("multipart/form-data") {
        form_fields(body, &content_type).await?
    } else {
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid("body", format!("the body is not JSON: {e}")))?;
        value.as_object().cloned().ok_or_else(|| ApiError::invalid("body", "the body is not a JSON object"))?
    };
    let request = match via {
        Via::StandardInput => request_from(&fields)?,
        Via::FlattenedCode | Via::MultiPart => request_from_sources(&fields, via)?,
    };
    let message = match start(state, address, request).await? {
        Started::Queued(_) => "Smart-contract verification started",
        Started::AlreadyVerified => crate::contracts::jobs::ALREADY_VERIFIED,
    };
    Ok(ok(&json!({ "message": message })))
}

/// The request named by Blockscout's fields: `compiler_version`, `contract_name` and the standard-JSON input as
/// `input` (text or object) or as the first of `files` (`files[0]` in a form, or an object of file contents).
fn request_from(fields: &serde_json::Map<String, Value>) -> Result<Request, ApiError> {
    let text = |name: &'static str| {
        fields.get(name).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| ApiError::invalid(name, "missing"))
    };
    let input = match fields.get("input").or_else(|| fields.get("files[0]")) {
        Some(v) => v.clone(),
        None => match fields.get("files") {
            Some(Value::Object(files)) => files.values().next().cloned().unwrap_or(Value::Null),
            Some(Value::Array(files)) => files.first().cloned().unwrap_or(Value::Null),
            _ => return Err(ApiError::invalid("files", "missing standard JSON input (`files` or `input`)")),
        },
    };
    let input = match input {
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|e| ApiError::invalid("files", format!("the standard JSON input is not JSON: {e}")))?,
        other => other,
    };
    Ok(Request { compiler_version: text("compiler_version")?, contract_name: text("contract_name")?, input })
}

/// A standard-JSON input made of the form's sources (`source_code` for flattened code, the `files` for
/// multi-part) and its `is_optimization_enabled`, `optimization_runs`, `evm_version` and `libraries`.
pub fn request_from_sources(fields: &serde_json::Map<String, Value>, via: Via) -> Result<Request, ApiError> {
    let text = |name: &'static str| {
        fields.get(name).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| ApiError::invalid(name, "missing"))
    };
    let mut contract_name = text("contract_name")?;
    let mut sources = serde_json::Map::new();
    match via {
        Via::FlattenedCode => {
            // One file, named after the contract (a `path:Name` names it by its own file's path, not this one).
            contract_name = contract_name.rsplit(':').next().unwrap_or_default().to_owned();
            sources.insert(format!("{contract_name}.sol"), json!({"content": text("source_code")?}));
        }
        _ => {
            let files = fields.get("files").and_then(Value::as_object);
            if files.is_some_and(|files| files.len() > MAX_SOURCE_FILES) {
                return Err(ApiError::invalid("files", format!("at most {MAX_SOURCE_FILES} source files")));
            }
            for (path, content) in files.into_iter().flatten() {
                let content = content.as_str().ok_or_else(|| ApiError::invalid("files", "a file is not text"))?;
                sources.insert(path.clone(), json!({"content": content}));
            }
            if sources.is_empty() {
                return Err(ApiError::invalid("files", "no source files"));
            }
        }
    }
    let flag = |v: &Value| v.as_bool().or_else(|| v.as_str().map(|s| s == "true" || s == "1"));
    let enabled = fields.get("is_optimization_enabled").and_then(flag).unwrap_or(false);
    let runs = match fields.get("optimization_runs") {
        None => 200,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .ok_or_else(|| ApiError::invalid("optimization_runs", "not a number"))?,
    };
    let mut settings = json!({"optimizer": {"enabled": enabled, "runs": runs}});
    let libraries = libraries(fields.get("libraries"))?;
    if !libraries.is_empty() {
        settings["libraries"] = Value::Object(libraries_by_file(&sources, &libraries)?);
    }
    if let Some(evm) = fields.get("evm_version").and_then(Value::as_str).filter(|v| !v.is_empty() && *v != "default") {
        settings["evmVersion"] = json!(evm);
    }
    Ok(Request {
        compiler_version: text("compiler_version")?,
        contract_name,
        input: json!({"language": "Solidity", "sources": sources, "settings": settings}),
    })
}

/// Most source files one multi-part form may have (a form of 450,000 empty files took 750 MB to build into an
/// input).
const MAX_SOURCE_FILES: usize = 2_000;
/// Most libraries one form may name.
const MAX_LIBRARIES: usize = 64;
/// Most (file, library) pairs the libraries of one form may make ([`libraries_by_file`]).
const MAX_LIBRARY_LINKS: usize = 10_000;

/// `settings.libraries` for a form's libraries, which name no file: solc links a library by the file that defines
/// it, so each library goes to the files that define it (`library Name`), or when none does to every file whose
/// text names it; within [`MAX_LIBRARY_LINKS`] pairs (offering each to every file made thousands of files times
/// thousands of libraries, and an entry for a file that only uses a library changes the metadata hash).
fn libraries_by_file(
    sources: &serde_json::Map<String, Value>,
    libraries: &serde_json::Map<String, Value>,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    let texts: Vec<(&String, &str)> =
        sources.iter().map(|(file, source)| (file, source["content"].as_str().unwrap_or_default())).collect();
    let mut links = 0usize;
    let mut by_file = serde_json::Map::new();
    for (name, address) in libraries {
        let defining: Vec<&String> =
            texts.iter().filter(|(_, text)| defines_library(text, name)).map(|(file, _)| *file).collect();
        let files = match defining.is_empty() {
            false => defining,
            true => texts.iter().filter(|(_, text)| text.contains(name.as_str())).map(|(file, _)| *file).collect(),
        };
        links += files.len();
        if links > MAX_LIBRARY_LINKS {
            let why = format!("more than {MAX_LIBRARY_LINKS} pairs of a file and a library it names");
            return Err(ApiError::invalid("libraries", why));
        }
        for file in files {
            let entry = by_file.entry(file.clone()).or_insert_with(|| json!({}));
            entry[name.as_str()] = address.clone();
        }
    }
    Ok(by_file)
}

/// Whether Solidity source `text` declares `library <name>` (the keyword and the name as whole words).
fn defines_library(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name).any(|(at, _)| {
        let (before, after) = (&text[..at], &text[at + name.len()..]);
        let spaced = before.trim_end_matches(char::is_whitespace);
        spaced.len() < before.len()
            && spaced.strip_suffix("library").is_some_and(|rest| !rest.ends_with(word))
            && !after.starts_with(word)
    })
}

/// The form's `libraries` (an object of library name → address, or that object as JSON text), checked: at most
/// [`MAX_LIBRARIES`].
fn libraries(field: Option<&Value>) -> Result<serde_json::Map<String, Value>, ApiError> {
    let bad = |why: String| ApiError::invalid("libraries", why);
    let object = match field {
        None | Some(Value::Null) => return Ok(serde_json::Map::new()),
        Some(Value::String(text)) if text.trim().is_empty() => return Ok(serde_json::Map::new()),
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).map_err(|e| bad(format!("not JSON: {e}")))?,
        Some(other) => other.clone(),
    };
    let Value::Object(object) = object else { return Err(bad("not an object of name to address".into())) };
    if object.len() > MAX_LIBRARIES {
        return Err(bad(format!("at most {MAX_LIBRARIES} libraries")));
    }
    for (name, address) in &object {
        let valid = address.as_str().is_some_and(|a| a.parse::<Address>().is_ok());
        if name.is_empty() || !valid {
            return Err(bad(format!("library {name:?} needs a 0x address")));
        }
    }
    Ok(object)
}

/// The fields of a multipart/form-data body (`content_type` carries the boundary), read with `multer`: files as
/// their text; parts with a file name are also collected in a `files` object by file name.
async fn form_fields(body: Bytes, content_type: &str) -> Result<serde_json::Map<String, Value>, ApiError> {
    let bad = |why: String| ApiError::invalid("body", format!("malformed multipart/form-data: {why}"));
    let boundary = multer::parse_boundary(content_type).map_err(|e| bad(e.to_string()))?;
    let whole = futures_util::stream::once(async move { Ok::<Bytes, std::convert::Infallible>(body) });
    let mut parts = multer::Multipart::new(whole, boundary);
    let mut fields = serde_json::Map::new();
    while let Some(part) = parts.next_field().await.map_err(|e| bad(e.to_string()))? {
        let name = part.name().map(str::to_owned).ok_or_else(|| bad("a part without a name".into()))?;
        let file_name = part.file_name().map(str::to_owned);
        let content = part.text().await.map_err(|e| bad(e.to_string()))?;
        if let Some(file_name) = file_name {
            let files = fields.entry("files").or_insert_with(|| json!({}));
            if files.as_object().is_some_and(|files| files.len() >= MAX_SOURCE_FILES) {
                return Err(ApiError::invalid("files", format!("at most {MAX_SOURCE_FILES} source files")));
            }
            if let Some(files) = files.as_object_mut() {
                files.insert(file_name, Value::String(content.clone()));
            }
        }
        fields.insert(name, Value::String(content));
    }
    Ok(fields)
}

/// Publishes each finished job on its address topic: `verification_result` for the form, then
/// `smart_contract_was_verified` or `smart_contract_was_not_verified` for the contract tab.
pub async fn publish_outcomes(state: AppState, cancel: CancellationToken) {
    let mut outcomes = state.verifications.subscribe();
    loop {
        let outcome = tokio::select! {
            _ = cancel.cancelled() => return,
            outcome = outcomes.recv() => outcome,
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let topic = crate::api::ws::topic::Topic::Address(outcome.address).to_string();
        let hub = &state.ws.hub;
        match &outcome.failure {
            None => {
                hub.publish(&topic, "verification_result", &json!({"status": "success"}));
                hub.publish(&topic, "smart_contract_was_verified", &json!({}));
            }
            Some(reason) => {
                hub.publish(&topic, "verification_result", &json!({"status": "error", "errors": {"files": [reason]}}));
                hub.publish(&topic, "smart_contract_was_not_verified", &json!({}));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn form_fields_are_read_like_the_frontend_sends_them() {
        let form = "multipart/form-data; boundary=XyZ";
        let body = "--XyZ\r\nContent-Disposition: form-data; name=\"compiler_version\"\r\n\r\nv0.8.37+commit.1\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"input.json\"\r\n\
                    Content-Type: application/json\r\n\r\n{\"sources\":{}}\r\n--XyZ--\r\n";
        let fields = form_fields(Bytes::from(body), form).await.unwrap();
        assert_eq!(fields["compiler_version"], "v0.8.37+commit.1");
        assert_eq!(fields["files[0]"], "{\"sources\":{}}");
        assert_eq!(fields["files"]["input.json"], "{\"sources\":{}}");
        let unfinished = Bytes::from_static(b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx");
        assert!(form_fields(unfinished, form).await.is_err());
        assert!(form_fields(Bytes::from_static(b"x"), "multipart/form-data").await.is_err(), "no boundary");
    }

    #[test]
    fn libraries_are_offered_to_the_files_that_name_them_within_bounds() {
        let form = |files: Value, libraries: Value| {
            let fields =
                json!({"compiler_version": "0.8.37", "contract_name": "C", "files": files, "libraries": libraries});
            request_from_sources(fields.as_object().unwrap(), Via::MultiPart)
        };
        let tally = "0x1111111111111111111111111111111111111111";
        let files = json!({
            "src/Tally.sol": "library Tally {}",
            "src/C.sol": "import './Tally.sol'; import './Ext.sol'; contract C { uint x = Tally.f() + Ext.g(); }",
            "src/D.sol": "contract D { /* mylibrary Tally2 */ }"
        });
        let request = form(files, json!({"Tally": tally, "Ext": tally, "Unused": tally})).unwrap();
        // Tally to the file that defines it (as solc links it and a project's compiler settings name it); Ext,
        // defined in no file given, to the files that name it.
        assert_eq!(
            request.input["settings"]["libraries"],
            json!({"src/C.sol": {"Ext": tally}, "src/Tally.sol": {"Tally": tally}})
        );
        assert!(defines_library("pragma solidity ^0.8.0;\nlibrary\n  Tally{}", "Tally"));
        assert!(!defines_library("mylibrary Tally {}", "Tally"));
        assert!(!defines_library("library Tally2 {}", "Tally"));
        assert!(!defines_library("libraryTally {}", "Tally"));
        // Thousands of files naming thousands of libraries no longer copy every library into every file.
        let names: Vec<String> = (0..MAX_LIBRARIES).map(|i| format!("L{i:03}")).collect();
        let text = names.join(" ");
        let files: serde_json::Map<String, Value> =
            (0..MAX_LIBRARY_LINKS / MAX_LIBRARIES + 1).map(|i| (format!("f{i}.sol"), json!(text))).collect();
        let libraries: serde_json::Map<String, Value> = names.iter().map(|n| (n.clone(), json!(tally))).collect();
        let refused = form(Value::Object(files.clone()), Value::Object(libraries.clone())).unwrap_err();
        assert!(refused.to_string().contains("pairs of a file and a library"), "{refused}");
        let fewer: serde_json::Map<String, Value> = files.into_iter().take(MAX_LIBRARY_LINKS / MAX_LIBRARIES).collect();
        assert!(form(Value::Object(fewer), Value::Object(libraries.clone())).is_ok());
        let mut too_many = libraries;
        too_many.insert("One more".into(), json!(tally));
        assert!(form(json!({"a.sol": ""}), Value::Object(too_many)).unwrap_err().to_string().contains("at most 64"));
    }

    #[test]
    fn the_input_comes_as_text_object_or_first_file() {
        let fields = |v: Value| v.as_object().unwrap().clone();
        let as_text = fields(json!({"compiler_version": "0.8.37", "contract_name": "C", "input": "{\"a\":1}"}));
        assert_eq!(request_from(&as_text).unwrap().input, json!({"a": 1}));
        let as_files =
            fields(json!({"compiler_version": "0.8.37", "contract_name": "C", "files": {"x.json": {"a": 2}}}));
        assert_eq!(request_from(&as_files).unwrap().input, json!({"a": 2}));
        let broken = fields(json!({"compiler_version": "0.8.37", "contract_name": "C", "input": "{"}));
        assert!(request_from(&broken).unwrap_err().to_string().contains("not JSON"));
        let no_version = fields(json!({"contract_name": "C", "input": "{}"}));
        assert!(request_from(&no_version).is_err());
    }
}

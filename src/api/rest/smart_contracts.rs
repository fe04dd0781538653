//! Smart contracts: `/smart-contracts/:hash` for every contract (verified or not), the list of contracts with
//! known source (`q`, `filter`), `/smart-contracts/counters`, `/smart-contracts/verification/config` and
//! `/config/smart-contracts/languages`, read-only calls (`/smart-contracts/:hash/query-read-method`); and
//! [`contract_info`], the name, ABI and implementations that address
//! objects and decoding everywhere use.
//!
//! "Verified" means the verifier matched a source for the address (`verification_metadata.source = "verifier"`),
//! which takes priority, or else the code matched a local build artifact (`--artifacts`, `"local-artifacts"`).

use super::{envelope, take_page};
use crate::api::body::{ok, Body};
use crate::api::cursor::{AddressCursor, ContractSort, ContractSortCursor};
use crate::api::json::{AddressJson, ContractInfo, Implementation};
use crate::api::request_body::RequestBody;
use crate::api::router::Page;
use crate::api::{read_body, ApiError, AppState};
use crate::contracts::abi::{revert_reason, value_json};
use crate::contracts::creation::{args_belong, CreationInput};
use crate::contracts::proxy::ProxyType;
use crate::contracts::{CodeFacts, Known, MatchKind};
use crate::node::CallOutcome;
use crate::store::keys::BlockKey;
use crate::store::records::{ContractRecord, ProxyKind, ProxyRecord};
use crate::store::tables::{
    Accounts, Code, CoinBalanceNow, Contracts as ContractRows, Headers, VerifiedCode, VerifiedSources,
};
use crate::store::{Reader, StoreResult};
use alloy::dyn_abi::{DynSolType, DynSolValue, JsonAbiExt, Specifier};
use alloy::primitives::{Address, Bytes, B256, KECCAK256_EMPTY, U256};
use hyper::{Request, Response};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Largest body of a read-method request.
const READ_METHOD_BODY_LIMIT: usize = 64 * 1024;
/// Most arguments of a read-method request.
const READ_METHOD_ARGS: usize = 32;
/// Largest answer of a read method that is decoded (a contract can return any amount of data).
const READ_METHOD_OUTPUT_LIMIT: usize = 256 * 1024;

/// Languages this instance knows contracts in.
const LANGUAGES: &[&str] = &["solidity"];

/// The facts of the contract at `address` with stored `row`: its code's facts (cached by code hash), with a
/// source the verifier matched for this address (and this code: a reorg may put other code there) taking the
/// place of any artifact.
fn facts(reader: &Reader<'_>, address: &Address, row: &ContractRecord) -> StoreResult<CodeFacts> {
    let mut facts = reader.knowledge().facts(
        row.code_hash,
        || reader.get::<Code>(&row.code_hash),
        || CreationInput::of(reader, row.creation_tx, *address).map(CreationInput::stored),
    )?;
    let verified = reader.get::<VerifiedSources>(address)?.filter(|v| v.code_hash == row.code_hash);
    if let Some(verified) = verified.and_then(Known::from_verified) {
        facts.known = Some(verified);
    } else if facts.known.is_none() {
        facts.known = similar_match(reader, address, row.code_hash)?;
    }
    Ok(facts)
}

/// The verified source of another contract with the same runtime code, while that contract still holds it.
fn similar_match(reader: &Reader<'_>, address: &Address, code_hash: B256) -> StoreResult<Option<Known>> {
    let Some(twin) = reader.get::<VerifiedCode>(&code_hash)?.filter(|twin| twin != address) else { return Ok(None) };
    let twin_holds_it = reader.get::<ContractRows>(&twin)?.is_some_and(|row| row.code_hash == code_hash);
    if !twin_holds_it {
        return Ok(None);
    }
    let source = reader.get::<VerifiedSources>(&twin)?.filter(|v| v.code_hash == code_hash);
    Ok(source.and_then(Known::from_verified).map(|known| Known { twin: Some(twin), ..known }))
}

fn implementation(reader: &Reader<'_>, address: Address) -> StoreResult<Implementation> {
    let known = match reader.get::<ContractRows>(&address)? {
        Some(row) => facts(reader, &address, &row)?.known,
        None => None,
    };
    Ok(Implementation {
        address,
        name: known.as_ref().map(|k| k.artifact.name.clone()),
        abi: known.map(|k| k.artifact.abi.clone()),
    })
}

fn info_of(reader: &Reader<'_>, facts: &CodeFacts, proxy: Option<&ProxyRecord>) -> StoreResult<ContractInfo> {
    let known = facts.known.as_ref();
    let mut info = ContractInfo {
        name: known.map(|k| k.artifact.name.clone()),
        verified: known.is_some(),
        abi: known.map(|k| k.artifact.abi.clone()),
        proxy_type: None,
        implementations: Vec::new(),
    };
    let (kind, target) = match (facts.delegate_of, facts.minimal_proxy_of, proxy) {
        (Some(delegate), _, _) => (ProxyType::Eip7702, delegate),
        (None, Some(target), _) => (ProxyType::Eip1167, target),
        (None, None, Some(p)) => (
            match p.kind {
                ProxyKind::Eip1967 => ProxyType::Eip1967,
                ProxyKind::Eip1967Beacon => ProxyType::Eip1967Beacon,
                ProxyKind::Eip1822 => ProxyType::Eip1822,
            },
            p.implementation,
        ),
        (None, None, None) => return Ok(info),
    };
    info.proxy_type = Some(kind);
    info.implementations.push(implementation(reader, target)?);
    Ok(info)
}

/// What is known about the contract at `address` (`None`: no stored code, or empty code).
pub fn contract_info(reader: &Reader<'_>, address: &Address) -> StoreResult<Option<ContractInfo>> {
    let Some(row) = reader.get::<ContractRows>(address)? else { return Ok(None) };
    if row.code_hash == KECCAK256_EMPTY {
        return Ok(None);
    }
    info_of(reader, &facts(reader, address, &row)?, row.proxy.as_ref()).map(Some)
}

/// The local build artifact the code at `address` matches, if any (full or partial).
pub fn matched_artifact(reader: &Reader<'_>, address: &Address) -> StoreResult<Option<Known>> {
    Ok(stored_facts(reader, address)?.and_then(|facts| facts.known))
}

/// The facts of the code stored for `address` (`None`: no stored code).
pub fn stored_facts(reader: &Reader<'_>, address: &Address) -> StoreResult<Option<CodeFacts>> {
    let Some(row) = reader.get::<ContractRows>(address)? else { return Ok(None) };
    facts(reader, address, &row).map(Some)
}

/// How the contract came to be, as far as the index knows: creator, transaction, success.
fn creation(reader: &Reader<'_>, address: &Address) -> StoreResult<Option<(Address, B256, bool)>> {
    if let Some(c) = reader.get::<Accounts>(address)?.and_then(|a| a.creation) {
        return Ok(Some((c.creator, c.tx, c.success)));
    }
    Ok(super::traces::internal_creation(reader, *address)?.map(|c| (c.creator, c.tx, c.success)))
}

/// `decoded_constructor_args`: `[[value, {name, type}], …]` from the constructor's ABI.
fn decode_constructor(known: &Known, args: &[u8]) -> Option<Value> {
    let constructor = known.artifact.abi.json.constructor.as_ref()?;
    let values = known.artifact.abi.decode_constructor(args)?;
    let decoded: Vec<Value> = constructor
        .inputs
        .iter()
        .zip(&values)
        .map(|(param, value)| {
            json!([value_json(value), {"name": param.name, "type": param.selector_type(), "internalType": param.internal_type.as_ref().map(|t| t.to_string())}])
        })
        .collect();
    Some(Value::Array(decoded))
}

/// The contract object for `address` with runtime `code`, `creation_input` and `facts`.
fn contract_json(
    reader: &Reader<'_>,
    code: &Bytes,
    creation_input: Option<&Bytes>,
    creation_ok: Option<bool>,
    facts: &CodeFacts,
    proxy: Option<&ProxyRecord>,
) -> StoreResult<Value> {
    let info = info_of(reader, facts, proxy)?;
    let known = facts.known.as_ref();
    let artifact = known.map(|k| &k.artifact);
    let verified = known.and_then(|k| k.verified.as_ref());
    let args = match (artifact.and_then(|a| a.creation.as_ref()), creation_input) {
        _ if verified.is_some() => {
            known.and_then(Known::verified_constructor_args).filter(|a| args_belong(a, creation_input)).cloned()
        }
        (Some(compiled), Some(input)) => compiled.matches_creation(input).map(|(_, args)| Bytes::copy_from_slice(args)),
        _ => None,
    };
    let (optimization_enabled, optimization_runs) = artifact.map(|a| a.optimization()).unwrap_or((None, None));
    let (source_code, file_path, additional_sources) = match artifact {
        Some(a) if !a.sources.is_empty() => {
            let (path, text) = &a.sources[0];
            let rest: Vec<Value> =
                a.sources[1..].iter().map(|(p, t)| json!({"file_path": p, "source_code": t})).collect();
            (Some(text.clone()), Some(path.clone()), Some(rest))
        }
        Some(a) => (None, a.file_path.clone(), Some(Vec::new())),
        None => (None, None, None),
    };
    let verification = known.map(|k| {
        let mut metadata = json!({
            "source": k.source_label(),
            "match": match k.kind { MatchKind::Full => "full", MatchKind::Partial => "partial" },
        });
        match (&k.verified, k.twin) {
            (Some(_), Some(twin)) => metadata["twin"] = json!(twin.to_checksum(None)),
            (Some(_), None) => {}
            (None, _) => metadata["artifact"] = json!(k.artifact.origin.display().to_string()),
        }
        metadata
    });
    Ok(json!({
        "deployed_bytecode": format!("{code:#x}"),
        "creation_bytecode": creation_input.map(|i| format!("{i:#x}")),
        "creation_status": creation_ok.map(|ok| if !ok { "failed" } else if code.is_empty() { "selfdestructed" } else { "success" }),
        // Blockscout's own flag for the same: created, and no code left.
        "is_self_destructed": creation_ok == Some(true) && code.is_empty(),
        "is_verified": known.is_some(),
        "is_fully_verified": known.map(|k| k.kind == MatchKind::Full),
        "is_partially_verified": known.map(|k| k.kind == MatchKind::Partial),
        "is_verified_via_sourcify": known.map(|_| false),
        "is_verified_via_eth_bytecode_db": known.map(|k| k.twin.is_some()),
        "is_verified_via_verifier_alliance": known.map(|_| false),
        "is_changed_bytecode": known.map(|_| false),
        "is_blueprint": false,
        "certified": false,
        "can_be_visualized_via_sol2uml": known.map(|_| false),
        "verification_metadata": verification,
        "name": info.name,
        "abi": artifact.map(|a| serde_json::to_value(&a.abi.json).unwrap_or(Value::Null)),
        "language": known.map(|_| "solidity"),
        "compiler_version": artifact.and_then(|a| a.compiler_version.clone()),
        "compiler_settings": artifact.and_then(|a| a.settings.clone()),
        "optimization_enabled": optimization_enabled,
        "optimization_runs": optimization_runs,
        // Blockscout's word for an input that names none (the compiler's default).
        "evm_version": artifact.map(|a| a.evm_version().unwrap_or_else(|| "default".into())),
        "license_type": license_type(artifact.and_then(|a| a.license.as_deref())),
        "source_code": source_code,
        "file_path": file_path,
        "additional_sources": additional_sources,
        "external_libraries": known.map(|_| external_libraries(artifact.and_then(|a| a.settings.as_ref()))),
        "constructor_args": args.as_ref().filter(|a| !a.is_empty()).map(|a| format!("{a:#x}")),
        "decoded_constructor_args": known.zip(args.as_ref().filter(|a| !a.is_empty())).and_then(|(k, a)| decode_constructor(k, a)),
        "has_constructor_args": args.as_ref().map(|a| !a.is_empty()),
        "verified_at": verified.map(|v| crate::api::json::iso_timestamp(v.verified_at)),
        "sourcify_repo_url": Value::Null,
        "verified_twin_address_hash": known.and_then(|k| k.twin).map(|t| t.to_checksum(None)),
        "proxy_type": info.proxy_type.map(ProxyType::label),
        "implementations": info.implementations_json(),
        "conflicting_implementations": Value::Array(Vec::new()),
        "reputation": "ok",
    }))
}

/// The libraries the compiler linked in (`settings.libraries`, file → name → address), as Blockscout lists them; the
/// code comparison checked their addresses, as linked code carries them.
pub fn external_libraries(settings: Option<&Value>) -> Vec<Value> {
    let mut found: Vec<(String, String)> = settings
        .and_then(|s| s.get("libraries"))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|files| files.values().filter_map(Value::as_object).flatten())
        .filter_map(|(name, address)| {
            Some((name.clone(), address.as_str()?.parse::<Address>().ok()?.to_checksum(None)))
        })
        .collect();
    found.sort();
    found.dedup();
    found.into_iter().map(|(name, address)| json!({"name": name, "address_hash": address})).collect()
}

/// `GET /api/v2/smart-contracts/:hash`: every contract answers, verified or not; an address without code is a 404.
pub async fn detail(state: &AppState, address: Address) -> Result<Response<Body>, ApiError> {
    let reader = state.store.view();
    let stored = match reader.get::<ContractRows>(&address)? {
        Some(row) => reader.get::<Code>(&row.code_hash)?.map(|code| (row, code)),
        None => None,
    };
    let created = creation(&reader, &address)?;
    if let Some((row, code)) = stored.filter(|(_, code)| !code.is_empty()) {
        let creation = CreationInput::of(&reader, row.creation_tx, address)?;
        let input = state.creation_input(address, creation, state.config.node_read_timeout).await;
        let facts = facts(&reader, &address, &row)?;
        let json = contract_json(&reader, &code, input.as_ref(), created.map(|c| c.2), &facts, row.proxy.as_ref())?;
        return Ok(ok(&json));
    }
    let unstored = code_from_node(state, &reader, address, created.map(|c| c.1)).await?;
    let (code, input, facts) = unstored.ok_or(ApiError::NotFound)?;
    Ok(ok(&contract_json(&reader, &code, input.as_ref(), created.map(|c| c.2), &facts, None)?))
}

/// The code at `reader`'s tip, as the node gives it, with its creation input (from `creation_tx`) and what
/// the index knows of that code, for a contract the code writer has not stored yet (or code no creation put
/// there, such as a node's genesis or `anvil_setCode`); `None` when the address holds no code.
async fn code_from_node(
    state: &AppState,
    reader: &Reader<'_>,
    address: Address,
    creation_tx: Option<B256>,
) -> Result<Option<(Bytes, Option<Bytes>, CodeFacts)>, ApiError> {
    let Some(tip) = reader.tip()? else { return Ok(None) };
    let code = match tokio::time::timeout(state.config.node_read_timeout, state.node.code(address, tip.number)).await {
        Ok(result) => result?,
        Err(_) => return Err(ApiError::NodeUnavailable("the node did not return the code in time".into())),
    };
    if code.is_empty() {
        return Ok(None);
    }
    let input = match creation_tx {
        Some(tx) => {
            let creation = CreationInput::of(reader, tx, address)?;
            state.creation_input(address, creation, state.config.node_read_timeout).await
        }
        None => None,
    };
    let code_hash = alloy::primitives::keccak256(&code);
    let facts = reader.knowledge().facts(code_hash, || StoreResult::Ok(Some(code.clone())), || Ok(input.clone()))?;
    Ok(Some((code, input, facts)))
}

/// `GET /api/v2/smart-contracts`: contracts with known source (matched artifacts), by address; `q` filters by
/// name or address (case-insensitive substring), `filter` by language.
pub fn list(
    reader: &Reader<'_>,
    q: Option<String>,
    language: Option<String>,
    page: Page<AddressCursor>,
) -> Result<Response<Body>, ApiError> {
    if language.as_deref().is_some_and(|l| !LANGUAGES.contains(&l)) {
        return Ok(ok(&envelope::<Value, AddressCursor>(Vec::new(), None, page.size, &[])));
    }
    let needle = needle(q.as_deref());
    let rows = reader.contracts_after(page.after.map(|c| c.0));
    let mut found: Vec<(Address, Known)> = Vec::new();
    let rows = take_page(rows, page.size, |address, row| {
        let Some(known) = facts(reader, address, row)?.known else { return Ok(false) };
        let hit = listed(&known, address, needle.as_deref());
        if hit {
            found.push((*address, known));
        }
        Ok(hit)
    })?;
    let mut items = Vec::with_capacity(rows.items.len());
    for (address, _) in &rows.items {
        let Some((_, known)) = found.iter().find(|(a, _)| a == address) else { continue };
        items.push(list_item(reader, address, known)?);
    }
    Ok(ok(&envelope(items, rows.next.map(AddressCursor), page.size, &list_echo(q, language))))
}

/// Most contracts (with source or not) a list sorted by balance or transactions reads and sorts for each page; a
/// chain with more is refused with 422.
pub const SORTED_CONTRACTS_LIMIT: usize = 10_000;

/// `GET /api/v2/smart-contracts?sort=balance|transactions_count&order=`: the list's contracts sorted by their
/// indexed native balance or their transaction count (none counts as zero), ties by address. No index is kept by
/// either: every page reads the whole list, at most [`SORTED_CONTRACTS_LIMIT`] contracts.
pub fn list_sorted(
    reader: &Reader<'_>,
    q: Option<String>,
    language: Option<String>,
    ascending: bool,
    page: Page<ContractSortCursor>,
    by: ContractSort,
) -> Result<Response<Body>, ApiError> {
    let mut echo = list_echo(q.clone(), language.clone());
    echo.push(("order", json!(if ascending { "asc" } else { "desc" })));
    if language.as_deref().is_some_and(|l| !LANGUAGES.contains(&l)) {
        return Ok(ok(&envelope::<Value, ContractSortCursor>(Vec::new(), None, page.size, &echo)));
    }
    let needle = needle(q.as_deref());
    let (mut rows, mut known_by_address): (Vec<(U256, Address)>, HashMap<Address, Known>) = Default::default();
    for (examined, row) in reader.contracts_after(None).enumerate() {
        if examined == SORTED_CONTRACTS_LIMIT {
            let detail = format!(
                "Sorting by {} is supported for chains with at most {SORTED_CONTRACTS_LIMIT} contracts",
                by.name()
            );
            return Err(ApiError::invalid("sort", detail));
        }
        let (address, row) = row?;
        let Some(known) = facts(reader, &address, &row)?.known else { continue };
        if !listed(&known, &address, needle.as_deref()) {
            continue;
        }
        let amount = match by {
            ContractSort::Balance => reader.get::<CoinBalanceNow>(&address)?.map_or(U256::ZERO, |b| b.value),
            ContractSort::TransactionsCount => U256::from(reader.get::<Accounts>(&address)?.map_or(0, |a| a.tx_count)),
        };
        rows.push((amount, address));
        known_by_address.insert(address, known);
    }
    let compare = |(a, a_address): &(U256, Address), (b, b_address): &(U256, Address)| {
        let by_amount = if ascending { a.cmp(b) } else { b.cmp(a) };
        by_amount.then_with(|| a_address.cmp(b_address))
    };
    let (shown, more) = super::sorted_page(rows, compare, page.after.map(|c| (c.amount, c.address)), page.size);
    let mut items = Vec::with_capacity(shown.len());
    for (_, address) in &shown {
        items.push(list_item(reader, address, &known_by_address[address])?);
    }
    let next = shown.last().filter(|_| more).map(|(amount, address)| ContractSortCursor {
        by,
        amount: *amount,
        address: *address,
    });
    Ok(ok(&envelope(items, next, page.size, &echo)))
}

/// A list's `q`, lowercased (`None`: every contract).
fn needle(q: Option<&str>) -> Option<String> {
    q.map(str::to_lowercase).filter(|n| !n.is_empty())
}

/// Whether a contract with known source is listed for `needle` (its name or address contains it).
fn listed(known: &Known, address: &Address, needle: Option<&str>) -> bool {
    needle.is_none_or(|n| known.artifact.name.to_lowercase().contains(n) || format!("{address:#x}").contains(n))
}

/// The filters a contract list echoes in its `next_page_params`.
fn list_echo(q: Option<String>, language: Option<String>) -> Vec<(&'static str, Value)> {
    let mut echo = Vec::new();
    echo.extend(q.map(|q| ("q", json!(q))));
    echo.extend(language.map(|l| ("filter", json!(l))));
    echo
}

/// One item of the contract lists.
fn list_item(reader: &Reader<'_>, address: &Address, known: &Known) -> StoreResult<Value> {
    let info = contract_info(reader, address)?;
    let tx_count = reader.get::<Accounts>(address)?.map(|a| a.tx_count);
    let (optimization_enabled, _) = known.artifact.optimization();
    Ok(json!({
        "address": AddressJson::new(address, true).with_info(info.as_ref()),
        "certified": false,
        "coin_balance": reader.get::<CoinBalanceNow>(address)?.map(|b| b.value.to_string()),
        "compiler_version": known.artifact.compiler_version,
        "has_constructor_args": Value::Null,
        "language": "solidity",
        "license_type": license_type(known.artifact.license.as_deref()),
        "market_cap": Value::Null,
        "optimization_enabled": optimization_enabled,
        "reputation": "ok",
        "transactions_count": tx_count,
        "verified_at": known.verified.as_ref().map(|v| crate::api::json::iso_timestamp(v.verified_at)),
    }))
}

/// `GET /api/v2/smart-contracts/counters`: contracts with stored code and those with known source, in total and
/// created in the last 24 hours (before the newest block's time).
pub fn counters(reader: &Reader<'_>) -> Result<Response<Body>, ApiError> {
    let newest = match reader.tip()? {
        Some(tip) => reader.get::<Headers>(&BlockKey(tip.number))?,
        None => None,
    };
    let since = newest.as_ref().map_or(0, |h| h.timestamp.saturating_sub(86_400));
    let (mut all, mut verified, mut new_all, mut new_verified) = (0u64, 0u64, 0u64, 0u64);
    let mut block_times = std::collections::HashMap::new();
    for row in reader.contracts_after(None) {
        let (address, row) = row?;
        if row.code_hash == KECCAK256_EMPTY {
            continue;
        }
        let facts = facts(reader, &address, &row)?;
        // An account an EIP-7702 authorization delegates holds code but is no contract.
        if facts.delegate_of.is_some() {
            continue;
        }
        let is_verified = facts.known.is_some();
        let time = match block_times.get(&row.block) {
            Some(t) => *t,
            None => {
                let t = reader.get::<Headers>(&BlockKey(row.block))?.map_or(0, |h| h.timestamp);
                block_times.insert(row.block, t);
                t
            }
        };
        all += 1;
        verified += u64::from(is_verified);
        if time >= since && newest.is_some() {
            new_all += 1;
            new_verified += u64::from(is_verified);
        }
    }
    Ok(ok(&json!({
        "smart_contracts": all.to_string(),
        "new_smart_contracts_24h": new_all.to_string(),
        "verified_smart_contracts": verified.to_string(),
        "new_verified_smart_contracts_24h": new_verified.to_string(),
    })))
}

/// `GET /api/v2/smart-contracts/verification/config`: the compiler versions installed (`--compilers-dir`, earlier
/// downloads) and listed by the release list, and the verification methods served.
pub async fn verification_config(state: &AppState) -> Response<Body> {
    ok(&json!({
        "solidity_compiler_versions": state.verifications.compilers().available().await,
        "solidity_evm_versions": ["default", "prague", "cancun", "shanghai", "paris", "london", "berlin", "istanbul"],
        "vyper_compiler_versions": Vec::<String>::new(),
        "vyper_evm_versions": Vec::<String>::new(),
        "verification_options": ["standard-input", "flattened-code", "multi-part"],
        "is_rust_verifier_microservice_enabled": false,
        "license_types": license_types(),
    }))
}

/// Blockscout's license ids (numbered from 1 in the verification config) with the SPDX identifier each stands for.
const LICENSES: [(&str, &str); 14] = [
    ("none", "UNLICENSED"),
    ("unlicense", "Unlicense"),
    ("mit", "MIT"),
    ("gnu_gpl_v2", "GPL-2.0"),
    ("gnu_gpl_v3", "GPL-3.0"),
    ("gnu_lgpl_v2_1", "LGPL-2.1"),
    ("gnu_lgpl_v3", "LGPL-3.0"),
    ("bsd_2_clause", "BSD-2-Clause"),
    ("bsd_3_clause", "BSD-3-Clause"),
    ("mpl_2_0", "MPL-2.0"),
    ("osl_3_0", "OSL-3.0"),
    ("apache_2_0", "Apache-2.0"),
    ("gnu_agpl_v3", "AGPL-3.0"),
    ("bsl_1_1", "BUSL-1.1"),
];

/// `license_type`: Blockscout's id of the SPDX license in the compiler metadata (`GPL-3.0-or-later` is
/// `gnu_gpl_v3`), `null` when there is none or it has no id.
fn license_type(spdx: Option<&str>) -> Option<&'static str> {
    let spdx = spdx?.trim();
    let base = spdx.strip_suffix("-only").or_else(|| spdx.strip_suffix("-or-later")).unwrap_or(spdx);
    LICENSES.iter().find(|(_, known)| known.eq_ignore_ascii_case(base)).map(|(id, _)| *id)
}

fn license_types() -> Value {
    let map: serde_json::Map<String, Value> =
        LICENSES.iter().enumerate().map(|(i, (id, _))| ((*id).to_owned(), json!(i + 1))).collect();
    Value::Object(map)
}

/// `GET /api/v2/config/smart-contracts/languages`.
pub fn languages() -> Response<Body> {
    ok(&json!({"languages": LANGUAGES}))
}

/// The body of `POST /smart-contracts/:hash/query-read-method`.
#[derive(Debug, serde::Deserialize)]
struct ReadMethodRequest {
    /// The function's selector, hex with or without `0x`.
    method_id: String,
    /// Its arguments in order: strings as the user typed them (numbers, `true`, hex, addresses), or JSON values
    /// (arrays and tuples as arrays).
    #[serde(default)]
    args: Vec<Value>,
    /// `"proxy"`: the function is an implementation's (the call still goes to the proxy).
    #[serde(default)]
    contract_type: Option<String>,
    /// The caller the call runs as, if it matters to the function.
    #[serde(default)]
    from: Option<Address>,
}

/// `POST /api/v2/smart-contracts/:hash/query-read-method`: calls a `view` or `pure` function of the contract's
/// known ABI at the node's latest block. The server encodes the arguments and decodes the answer with the ABI, so
/// clients (the explorer pages among them) need no ABI code. Answers `{"is_error": false, "result": {"names",
/// "output": [{"type", "value"}]}}`, or `{"is_error": true, "result": {"message", "raw", "decoded"}}` when the call
/// reverts.
pub async fn query_read_method(
    req: Request<RequestBody>,
    state: &AppState,
    client: std::net::IpAddr,
    address: Address,
) -> Result<Response<Body>, ApiError> {
    let body = read_body(state, req, READ_METHOD_BODY_LIMIT, client).await?;
    let request: ReadMethodRequest =
        serde_json::from_slice(&body).map_err(|e| ApiError::BadBody(format!("a read-method request: {e}")))?;
    let selector: [u8; 4] = alloy::hex::decode(request.method_id.trim_start_matches("0x"))
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| ApiError::invalid("method_id", "Expected the function's 4-byte selector in hex"))?;
    if request.args.len() > READ_METHOD_ARGS {
        return Err(ApiError::invalid("args", format!("At most {READ_METHOD_ARGS} arguments")));
    }
    // The same contract the contract page shows: the stored one, or the node's code while the code writer has not
    // stored it yet.
    let info = {
        let reader = state.store.view();
        match contract_info(&reader, &address)? {
            Some(info) => info,
            None => {
                let created = creation(&reader, &address)?;
                let unstored = code_from_node(state, &reader, address, created.map(|c| c.1)).await?;
                let (_, _, facts) = unstored.ok_or(ApiError::NotFound)?;
                info_of(&reader, &facts, None)?
            }
        }
    };
    let proxy = request.contract_type.as_deref() == Some("proxy");
    let abis: Vec<_> = if proxy { info.abis() } else { info.abi.as_deref().into_iter().collect() };
    let (abi, function) = abis
        .iter()
        .find_map(|abi| Some((abi, abi.function(&selector)?)))
        .ok_or_else(|| ApiError::invalid("method_id", "The contract's known ABI has no function with this selector"))?;
    if !matches!(
        function.state_mutability,
        alloy::json_abi::StateMutability::View | alloy::json_abi::StateMutability::Pure
    ) {
        return Err(ApiError::invalid("method_id", format!("{} is not a view or pure function", function.name)));
    }
    if !abi.within_bounds(selector) {
        return Err(ApiError::invalid(
            "method_id",
            format!("{}'s types are too large to call and decode", function.name),
        ));
    }
    if request.args.len() != function.inputs.len() {
        return Err(ApiError::invalid(
            "args",
            format!("{} takes {} arguments, {} given", function.name, function.inputs.len(), request.args.len()),
        ));
    }
    let values = function
        .inputs
        .iter()
        .zip(&request.args)
        .map(|(param, arg)| argument(param, arg))
        .collect::<Result<Vec<DynSolValue>, ApiError>>()?;
    let input = function.abi_encode_input(&values).map_err(|e| ApiError::invalid("args", e.to_string()))?;
    let call = json!({"from": request.from, "to": address, "data": Bytes::from(input)});
    let outcome = state.node.call_latest(call).await.map_err(|e| ApiError::NodeUnavailable(e.to_string()))?;
    let answer = match outcome {
        CallOutcome::Returned(output) if output.len() > READ_METHOD_OUTPUT_LIMIT => json!({
            "is_error": true,
            "result": {"message": format!("the answer is {} bytes, more than {READ_METHOD_OUTPUT_LIMIT} are not decoded", output.len()), "raw": null, "decoded": null},
        }),
        CallOutcome::Returned(output) => match abi.decode_output(selector, &output) {
            Ok(decoded) => json!({
                "is_error": false,
                "result": {
                    "names": function.outputs.iter().map(|o| if o.name.is_empty() { o.selector_type().into_owned() } else { o.name.clone() }).collect::<Vec<_>>(),
                    "output": function.outputs.iter().zip(&decoded).map(|(o, v)| json!({"type": o.selector_type(), "value": value_json(v)})).collect::<Vec<_>>(),
                },
            }),
            Err(e) => json!({
                "is_error": true,
                "result": {"message": format!("the answer does not decode as the ABI says: {e}"), "raw": output, "decoded": null},
            }),
        },
        CallOutcome::Reverted { message, data } => json!({
            "is_error": true,
            "result": {"message": message, "raw": data, "decoded": revert_reason(&abis, &data)},
        }),
    };
    Ok(ok(&answer))
}

/// One argument of a read-method request as its parameter's type: text is parsed as the type says (`"42"`,
/// `"true"`, `"0x…"`, `"[1,2]"`, `"(1,a)"`); JSON arrays are read element by element as the array's or tuple's
/// types; JSON numbers must be whole and below 2^64 (a larger one has already lost digits in JSON's number type:
/// it is refused, to be sent as text).
fn argument(param: &alloy::json_abi::Param, arg: &Value) -> Result<DynSolValue, ApiError> {
    let kind: DynSolType =
        param.resolve().map_err(|e| ApiError::invalid("args", format!("parameter {}: {e}", param.name)))?;
    json_argument(&kind, arg).map_err(|e| {
        let name = if param.name.is_empty() { param.selector_type().into_owned() } else { param.name.clone() };
        ApiError::invalid("args", format!("{name} is not a valid {}: {e}", param.selector_type()))
    })
}

fn json_argument(kind: &DynSolType, arg: &Value) -> Result<DynSolValue, String> {
    let each = |inner: &DynSolType, items: &[Value]| -> Result<Vec<DynSolValue>, String> {
        items.iter().map(|item| json_argument(inner, item)).collect()
    };
    match (kind, arg) {
        (_, Value::String(text)) => kind.coerce_str(text.trim()).map_err(|e| e.to_string()),
        (_, Value::Bool(b)) => kind.coerce_str(if *b { "true" } else { "false" }).map_err(|e| e.to_string()),
        (_, Value::Number(n)) if n.is_u64() || n.is_i64() => kind.coerce_str(&n.to_string()).map_err(|e| e.to_string()),
        (_, Value::Number(n)) => Err(format!("{n} is not a whole number below 2^64; send large numbers as text")),
        (DynSolType::Array(inner), Value::Array(items)) => Ok(DynSolValue::Array(each(inner, items)?)),
        (DynSolType::FixedArray(inner, size), Value::Array(items)) if items.len() == *size => {
            Ok(DynSolValue::FixedArray(each(inner, items)?))
        }
        (DynSolType::Tuple(types), Value::Array(items)) if items.len() == types.len() => {
            let fields = types.iter().zip(items).map(|(t, item)| json_argument(t, item));
            Ok(DynSolValue::Tuple(fields.collect::<Result<_, _>>()?))
        }
        (_, Value::Array(items)) => Err(format!("an array of {} items does not fit", items.len())),
        (_, other) => Err(format!("{other} is not an argument")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_arguments_are_read_as_their_types() {
        let param =
            |ty: &str| -> alloy::json_abi::Param { serde_json::from_value(json!({"name": "a", "type": ty})).unwrap() };
        let holder = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
        let addresses = argument(&param("address[]"), &json!([holder])).unwrap();
        assert_eq!(addresses, DynSolValue::Array(vec![DynSolValue::Address(holder.parse().unwrap())]));
        assert_eq!(argument(&param("address[]"), &json!(format!("[{holder}]"))).unwrap(), addresses);
        let tuples: alloy::json_abi::Param = serde_json::from_value(json!({"name": "t", "type": "tuple[]",
            "components": [{"name": "x", "type": "uint256"}, {"name": "y", "type": "int8"}, {"name": "z", "type": "string"}]}))
        .unwrap();
        let read = argument(&tuples, &json!([[1, -2, "a"], ["3", 4, "b"]])).unwrap();
        let text = argument(&tuples, &json!("[(1,-2,a),(3,4,b)]")).unwrap();
        assert_eq!(read, text);
        assert_eq!(
            argument(&param("uint256"), &json!(u64::MAX)).unwrap(),
            DynSolValue::from(alloy::primitives::U256::from(u64::MAX))
        );
        let big: Value = serde_json::from_str("12345678901234567890123").unwrap();
        let refused = argument(&param("uint256"), &big).unwrap_err();
        assert!(
            matches!(&refused, ApiError::InvalidParam { detail, .. } if detail.contains("send large numbers as text"))
        );
        assert!(argument(&param("uint8[2]"), &json!([1, 2, 3])).is_err());
        assert!(argument(&param("bool"), &json!(true)).unwrap() == DynSolValue::Bool(true));
        assert!(argument(&param("uint256"), &json!({"x": 1})).is_err());
    }

    #[test]
    fn spdx_licenses_become_blockscout_ids() {
        assert_eq!(license_type(Some("MIT")), Some("mit"));
        assert_eq!(license_type(Some("GPL-3.0-or-later")), Some("gnu_gpl_v3"));
        assert_eq!(license_type(Some("LGPL-2.1-only")), Some("gnu_lgpl_v2_1"));
        assert_eq!(license_type(Some("UNLICENSED")), Some("none"));
        assert_eq!(license_type(Some("BUSL-1.1")), Some("bsl_1_1"));
        assert_eq!(license_type(Some("WTFPL")), None);
        assert_eq!(license_type(None), None);
        assert_eq!(license_types()["apache_2_0"], 12);
    }
}

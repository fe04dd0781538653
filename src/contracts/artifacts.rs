//! Local build artifacts (`--artifacts DIR`): Foundry's `out/` and Hardhat's `artifacts/`, with their
//! `build-info/` files when present, read into [`Artifact`]s the matcher compares deployed code with.
//!
//! Read, in this order of preference for a (source file, contract name):
//! * build-info files (any `*.json` under a `build-info` folder holding the compiler's standard JSON `input` and
//!   `output`): ABI, creation and runtime code with link and immutable positions, sources with their paths, the
//!   compiler version and settings;
//! * per-contract artifacts: Foundry's (`bytecode`/`deployedBytecode` objects with `immutableReferences`, and the
//!   compiler `metadata`), Hardhat's (`hh-sol-artifact-1`), and plain `{abi, bytecode[, deployedBytecode]}` files
//!   such as the demo contracts'.
//!
//! Every read is bounded (files per scan, bytes per file, folder depth); unreadable files are skipped with a
//! debug log. Vyper artifacts are not read.

use super::abi::Abi;
use super::matcher::{CompiledCode, ImmutableReferences, LinkReferences};
use alloy::json_abi::JsonAbi;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Files looked at per scan of all folders.
pub const MAX_FILES: usize = 20_000;
/// Largest file read (build-info files of big projects are large).
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// Deepest folder nesting followed.
const MAX_DEPTH: usize = 12;

/// One compiled contract from local build output.
#[derive(Debug)]
pub struct Artifact {
    /// Contract name.
    pub name: String,
    /// Source file that declares it (as the compiler saw it).
    pub file_path: Option<String>,
    /// The ABI, indexed once.
    pub abi: Arc<Abi>,
    /// Runtime code as compiled (absent in creation-only artifacts).
    pub runtime: Option<CompiledCode>,
    /// Creation code as compiled.
    pub creation: Option<CompiledCode>,
    /// Compiler version (`0.8.30+commit.…`).
    pub compiler_version: Option<String>,
    /// Compiler settings (optimizer, EVM version, remappings, …).
    pub settings: Option<Value>,
    /// Sources (path, content), the contract's own file first.
    pub sources: Vec<(String, String)>,
    /// SPDX license of the contract's file, from the compiler metadata.
    pub license: Option<String>,
    /// The file it was read from.
    pub origin: PathBuf,
}

impl Artifact {
    /// Whether the optimizer was on, and its runs.
    pub fn optimization(&self) -> (Option<bool>, Option<u64>) {
        let optimizer = self.settings.as_ref().and_then(|s| s.get("optimizer"));
        (
            optimizer.and_then(|o| o.get("enabled")).and_then(Value::as_bool),
            optimizer.and_then(|o| o.get("runs")).and_then(Value::as_u64),
        )
    }

    /// The EVM version it was compiled for.
    pub fn evm_version(&self) -> Option<String> {
        self.settings.as_ref()?.get("evmVersion")?.as_str().map(str::to_owned)
    }
}

/// Everything read from the artifact folders.
#[derive(Debug, Default)]
pub struct ArtifactSet {
    /// Every artifact, in file order.
    pub all: Vec<Arc<Artifact>>,
}

impl ArtifactSet {
    /// Artifacts read from `dirs` (missing folders give nothing).
    pub fn load(dirs: &[PathBuf]) -> ArtifactSet {
        let mut files = Vec::new();
        for dir in dirs {
            collect_json(dir, 0, &mut files);
        }
        files.sort();
        let mut by_contract: BTreeMap<(Option<String>, String), Arc<Artifact>> = BTreeMap::new();
        let (mut build_infos, artifacts): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|f| f.components().any(|c| c.as_os_str() == "build-info"));
        // A contract in several build-info files (a stale one left by an earlier build) is taken from the newest.
        build_infos.sort_by_key(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok());
        for file in &build_infos {
            let Some(doc) = read_json(file) else { continue };
            for artifact in from_build_info(&doc, file) {
                by_contract.insert((artifact.file_path.clone(), artifact.name.clone()), Arc::new(artifact));
            }
        }
        for file in &artifacts {
            let Some(doc) = read_json(file) else { continue };
            let Some(artifact) = from_artifact_file(&doc, file) else { continue };
            by_contract.entry((artifact.file_path.clone(), artifact.name.clone())).or_insert(Arc::new(artifact));
        }
        ArtifactSet { all: by_contract.into_values().collect() }
    }

    /// Artifacts built from documents already in memory (the demo contracts of `rockscout dev`): (contract name,
    /// artifact JSON, source file name, source text).
    pub fn from_documents(docs: &[(&str, &str, &str, &str)]) -> ArtifactSet {
        let all = docs
            .iter()
            .filter_map(|(name, text, file, source)| {
                let doc: Value = serde_json::from_str(text).ok()?;
                let path = PathBuf::from(format!("{name}.json"));
                let mut artifact = from_artifact_file(&doc, &path)?;
                artifact.file_path = Some(file.to_string());
                artifact.sources = vec![(file.to_string(), source.to_string())];
                artifact.license = source
                    .lines()
                    .find_map(|l| l.split_once("SPDX-License-Identifier:"))
                    .map(|(_, id)| id.trim().to_string());
                Some(Arc::new(artifact))
            })
            .collect();
        ArtifactSet { all }
    }
}

/// `*.json` files under `dir`, bounded.
fn collect_json(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH || out.len() >= MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if out.len() >= MAX_FILES {
            return;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            collect_json(&path, depth + 1, out);
        } else if kind.is_file()
            && path.extension().is_some_and(|e| e == "json")
            && !path.to_string_lossy().ends_with(".dbg.json")
        {
            out.push(path);
        }
    }
}

fn read_json(path: &Path) -> Option<Value> {
    let size = std::fs::metadata(path).ok()?.len();
    if size > MAX_FILE_BYTES {
        tracing::debug!(path = %path.display(), size, "artifact file too large, skipped");
        return None;
    }
    let text = std::fs::read(path).ok()?;
    match serde_json::from_slice(&text) {
        Ok(doc) => Some(doc),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "artifact file is not JSON, skipped");
            None
        }
    }
}

fn parse_abi(value: Option<&Value>) -> Option<JsonAbi> {
    serde_json::from_value(value?.clone()).ok()
}

fn refs<T: serde::de::DeserializeOwned + Default>(value: Option<&Value>) -> T {
    value.and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
}

/// Code from a compiler `bytecode` object (`{object, linkReferences[, immutableReferences]}`) or a hex string
/// (with separately given link references).
fn code(value: Option<&Value>, links: Option<&Value>) -> Option<CompiledCode> {
    let value = value?;
    let (object, links, immutables): (&str, LinkReferences, ImmutableReferences) = match value {
        Value::String(hex) => (hex, refs(links), ImmutableReferences::default()),
        Value::Object(o) => {
            (o.get("object")?.as_str()?, refs(o.get("linkReferences")), refs(o.get("immutableReferences")))
        }
        _ => return None,
    };
    if object.trim_start_matches("0x").is_empty() {
        return None;
    }
    CompiledCode::new(object, &links, &immutables).ok()
}

/// Compiler version, settings and the license of `file` from solc's metadata (a JSON string or object).
fn from_metadata(metadata: Option<&Value>, file: Option<&str>) -> (Option<String>, Option<Value>, Option<String>) {
    let parsed = match metadata {
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
        Some(v @ Value::Object(_)) => Some(v.clone()),
        _ => None,
    };
    let Some(m) = parsed else { return (None, None, None) };
    let version = m.pointer("/compiler/version").and_then(Value::as_str).map(str::to_owned);
    let license = file.and_then(|f| m.get("sources")?.get(f)?.get("license")?.as_str()).map(str::to_owned);
    (version, m.get("settings").cloned(), license)
}

/// Every contract of a standard-JSON build-info file.
pub(crate) fn from_build_info(doc: &Value, origin: &Path) -> Vec<Artifact> {
    let (Some(input), Some(output)) = (doc.get("input"), doc.get("output")) else { return Vec::new() };
    if input.get("language").and_then(Value::as_str).is_some_and(|l| l != "Solidity") {
        return Vec::new();
    }
    let sources: Vec<(String, String)> = input
        .get("sources")
        .and_then(Value::as_object)
        .map(|s| {
            s.iter().filter_map(|(path, src)| Some((path.clone(), src.get("content")?.as_str()?.to_owned()))).collect()
        })
        .unwrap_or_default();
    let version = ["solcLongVersion", "solcVersion", "solc_version"]
        .iter()
        .find_map(|k| doc.get(*k).and_then(Value::as_str))
        .map(str::to_owned);
    let mut found = Vec::new();
    let Some(contracts) = output.get("contracts").and_then(Value::as_object) else { return found };
    for (file, by_name) in contracts {
        let Some(by_name) = by_name.as_object() else { continue };
        for (name, c) in by_name {
            let Some(abi) = parse_abi(c.get("abi")) else { continue };
            let evm = c.get("evm");
            let runtime = code(evm.and_then(|e| e.get("deployedBytecode")), None);
            let creation = code(evm.and_then(|e| e.get("bytecode")), None);
            if runtime.is_none() && creation.is_none() {
                continue; // interfaces and abstract contracts
            }
            let (meta_version, meta_settings, license) = from_metadata(c.get("metadata"), Some(file));
            let mut own_first = sources.clone();
            own_first.sort_by_key(|(path, _)| path != file);
            found.push(Artifact {
                name: name.clone(),
                file_path: Some(file.clone()),
                abi: Arc::new(Abi::new(abi)),
                runtime,
                creation,
                compiler_version: meta_version.or_else(|| version.clone()),
                settings: input.get("settings").cloned().or(meta_settings),
                sources: own_first,
                license,
                origin: origin.to_owned(),
            });
        }
    }
    found
}

/// One per-contract artifact file (Foundry, Hardhat or plain `{abi, bytecode}`).
fn from_artifact_file(doc: &Value, origin: &Path) -> Option<Artifact> {
    let abi = parse_abi(doc.get("abi"))?;
    let hardhat = doc.get("_format").and_then(Value::as_str).is_some_and(|f| f.starts_with("hh-sol-artifact"));
    let runtime = code(doc.get("deployedBytecode"), doc.get("deployedLinkReferences"));
    let creation = code(doc.get("bytecode"), doc.get("linkReferences"));
    if runtime.is_none() && creation.is_none() {
        return None;
    }
    let stem = origin.file_stem()?.to_string_lossy().into_owned();
    let (name, file_path) = if hardhat {
        (
            doc.get("contractName").and_then(Value::as_str).map_or(stem, str::to_owned),
            doc.get("sourceName").and_then(Value::as_str).map(str::to_owned),
        )
    } else {
        // Foundry: the compilation target in the metadata, else the `File.sol` folder it sits in.
        let target = doc.pointer("/metadata/settings/compilationTarget").and_then(Value::as_object);
        let from_target =
            target.and_then(|t| t.iter().next()).and_then(|(f, n)| Some((n.as_str()?.to_owned(), f.clone())));
        match from_target {
            Some((name, file)) => (name, Some(file)),
            None => {
                let folder = origin.parent().and_then(|p| p.file_name()).map(|f| f.to_string_lossy().into_owned());
                (stem, folder.filter(|f| f.ends_with(".sol")))
            }
        }
    };
    let metadata = doc.get("metadata").or_else(|| doc.get("rawMetadata"));
    let (compiler_version, settings, license) = from_metadata(metadata, file_path.as_deref());
    Some(Artifact {
        name,
        file_path,
        abi: Arc::new(Abi::new(abi)),
        runtime,
        creation,
        compiler_version,
        settings,
        sources: Vec::new(),
        license,
        origin: origin.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ABI: &str = r#"[{"type":"function","name":"ping","inputs":[],"outputs":[],"stateMutability":"nonpayable"}]"#;

    fn write(dir: &Path, rel: &str, value: &Value) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec(value).unwrap()).unwrap();
    }

    #[test]
    fn build_info_wins_over_the_per_contract_file() {
        let dir = tempfile::tempdir().unwrap();
        let abi: Value = serde_json::from_str(ABI).unwrap();
        write(
            dir.path(),
            "out/A.sol/A.json",
            &json!({"abi": abi, "bytecode": {"object": "0x6001", "linkReferences": {}},
                    "deployedBytecode": {"object": "0x6002", "linkReferences": {}, "immutableReferences": {}},
                    "metadata": {"compiler": {"version": "0.8.30"}, "settings": {"compilationTarget": {"src/A.sol": "A"}}}}),
        );
        write(
            dir.path(),
            "out/build-info/x.json",
            &json!({"solcLongVersion": "0.8.30+commit.x",
                    "input": {"language": "Solidity", "sources": {"src/B.sol": {"content": "b"}, "src/A.sol": {"content": "a"}},
                              "settings": {"optimizer": {"enabled": true, "runs": 200}, "evmVersion": "cancun"}},
                    "output": {"contracts": {"src/A.sol": {"A": {"abi": abi, "evm": {
                        "bytecode": {"object": "6001", "linkReferences": {}},
                        "deployedBytecode": {"object": "6002", "linkReferences": {}, "immutableReferences": {}}}},
                        "I": {"abi": [], "evm": {"bytecode": {"object": ""}, "deployedBytecode": {"object": ""}}}}}}}),
        );
        write(dir.path(), "out/garbage.json", &json!({"not": "an artifact"}));
        std::fs::write(dir.path().join("out/broken.json"), "{").unwrap();
        let set = ArtifactSet::load(&[dir.path().to_owned(), dir.path().join("missing")]);
        assert_eq!(set.all.len(), 1, "{set:?}");
        let a = &set.all[0];
        assert_eq!((a.name.as_str(), a.file_path.as_deref()), ("A", Some("src/A.sol")));
        assert_eq!(a.sources[0], ("src/A.sol".to_string(), "a".to_string()), "own file first");
        assert_eq!(a.compiler_version.as_deref(), Some("0.8.30+commit.x"));
        assert_eq!(a.optimization(), (Some(true), Some(200)));
        assert_eq!(a.evm_version().as_deref(), Some("cancun"));
        assert!(a.origin.ends_with("build-info/x.json"));
        assert_eq!(a.runtime.as_ref().unwrap().matches_runtime(&[0x60, 0x02]), Some(super::super::MatchKind::Full));
    }

    #[test]
    fn hardhat_and_plain_artifacts() {
        let dir = tempfile::tempdir().unwrap();
        let abi: Value = serde_json::from_str(ABI).unwrap();
        write(
            dir.path(),
            "artifacts/contracts/H.sol/H.json",
            &json!({"_format": "hh-sol-artifact-1", "contractName": "H", "sourceName": "contracts/H.sol", "abi": abi,
                    "bytecode": "0x6003", "deployedBytecode": "0x6004", "linkReferences": {}, "deployedLinkReferences": {}}),
        );
        write(dir.path(), "plain/P.json", &json!({"abi": abi, "bytecode": "0x6005"}));
        let set = ArtifactSet::load(&[dir.path().to_owned()]);
        let names: Vec<_> = set.all.iter().map(|a| (a.name.clone(), a.file_path.clone())).collect();
        assert!(names.contains(&("H".into(), Some("contracts/H.sol".into()))), "{names:?}");
        assert!(names.contains(&("P".into(), None)), "{names:?}");
        let plain = set.all.iter().find(|a| a.name == "P").unwrap();
        assert!(plain.runtime.is_none() && plain.creation.is_some());
    }
}

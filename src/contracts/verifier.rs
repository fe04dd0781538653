//! The verifier: compiles a Solidity standard-JSON input with the exact compiler version asked for (a program in
//! the compilers folder that speaks `solc --standard-json`), picks the named contract and compares its code with
//! the chain's through the [`matcher`](super::matcher). A match gives the [`VerifiedSource`] to store; anything
//! else gives the reason in a [`VerifyError`].

use super::artifacts::{from_build_info, Artifact};
use super::releases::{FetchError, Releases};
use super::MatchKind;
use crate::store::records::VerifiedSource;
use crate::store::tables::{VerifiedCode, VerifiedSources};
use crate::store::{Durability, Store, StoreResult};
use alloy::primitives::{Address, Bytes};
use alloy::transports::http::reqwest;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Largest compiler output read (anything longer fails the job).
const MAX_OUTPUT_BYTES: u64 = 256 * 1024 * 1024;
/// Compiler files listed from the compilers folder at most.
const MAX_COMPILERS: usize = 1000;

/// Why a source was not verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// No compiler for that version.
    #[error("compiler version {asked} is not available (available: {})", available.join(", "))]
    UnknownVersion {
        /// The version asked for.
        asked: String,
        /// The versions this instance has.
        available: Vec<String>,
    },
    /// The input is not a standard-JSON input.
    #[error("invalid standard JSON input: {0}")]
    Malformed(String),
    /// The compiler crashed, ran past its limit or reported errors.
    #[error("compilation failed: {0}")]
    Compilation(String),
    /// The named contract is not in the output.
    #[error("contract {0} was not found in the compiler output")]
    NoSuchContract(String),
    /// The compiled code differs from the chain's.
    #[error("the compiled code does not match the deployed code: {0}")]
    Mismatch(String),
    /// The compiler had to be fetched from the release list and could not be.
    #[error(transparent)]
    Fetch(#[from] FetchError),
}

/// The compilers: programs named by version (`0.8.37` or `solc-0.8.37`) in the compilers folder, and, when a release
/// list is set, in the downloads folder that fills on demand from it.
#[derive(Debug, Clone, Default)]
pub struct Compilers {
    dir: Option<PathBuf>,
    downloads: Option<(PathBuf, Arc<Releases>)>,
}

impl Compilers {
    /// Compilers from `dir` (none without one).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Compilers { dir, downloads: None }
    }

    /// These compilers, and builds from the release list at `list_url` installed into `downloads` when a version
    /// is missing.
    pub fn with_releases(self, downloads: PathBuf, list_url: reqwest::Url) -> Self {
        Compilers { downloads: Some((downloads, Arc::new(Releases::new(list_url)))), ..self }
    }

    fn folders(&self) -> impl Iterator<Item = &PathBuf> {
        self.dir.iter().chain(self.downloads.iter().map(|(dir, _)| dir))
    }

    /// The versions installed, sorted.
    pub fn versions(&self) -> Vec<String> {
        let mut found: Vec<String> = self
            .folders()
            .filter_map(|dir| std::fs::read_dir(dir).ok())
            .flat_map(|entries| entries.flatten().take(MAX_COMPILERS))
            .filter(|e| e.path().is_file())
            .filter_map(|e| version_of_file(&e.file_name().to_string_lossy()))
            .collect();
        found.sort();
        found.dedup();
        found
    }

    /// The versions a verification may ask for: those installed, and the release list's (`v0.8.37+commit.…`) when
    /// it can be read.
    pub async fn available(&self) -> Vec<String> {
        let mut versions = self.versions();
        if let Some((_, releases)) = &self.downloads {
            if let Ok(builds) = releases.builds().await {
                let listed = builds.iter().filter(|b| b.prerelease.is_none()).map(|b| format!("v{}", b.long_version));
                versions.extend(listed);
            }
        }
        versions
    }

    /// The refusal of `version`, naming what was asked cut short (it is the request's own text).
    fn unknown(&self, version: &str) -> VerifyError {
        VerifyError::UnknownVersion { asked: version.chars().take(100).collect(), available: self.versions() }
    }

    /// `version` as the three numbers it names (`0.8.37` from `v0.8.37+commit.…` or `solc-0.8.37`). Only a
    /// version names an installed file or a listed build: anything else (a path, `..`) is refused, so a request
    /// can run no other program.
    fn wanted(&self, version: &str) -> Result<String, VerifyError> {
        let wanted = short_version(version);
        if is_version(&wanted) {
            Ok(wanted)
        } else {
            Err(self.unknown(version))
        }
    }

    /// The installed compiler for `version` (see [`Compilers::wanted`]).
    pub fn path(&self, version: &str) -> Result<PathBuf, VerifyError> {
        let wanted = self.wanted(version)?;
        let found = self.folders().find_map(|d| {
            [wanted.clone(), format!("solc-{wanted}")].into_iter().map(|n| d.join(n)).find(|p| p.is_file())
        });
        found.ok_or_else(|| self.unknown(version))
    }

    /// Whether `version` can be had (installed, or in the release list), without downloading it.
    pub async fn check(&self, version: &str) -> Result<(), VerifyError> {
        self.wanted(version)?;
        match (self.path(version), &self.downloads) {
            (Ok(_), _) => Ok(()),
            (Err(missing), Some((_, releases))) => releases.find(version).await?.map(|_| ()).ok_or(missing),
            (Err(missing), None) => Err(missing),
        }
    }

    /// The compiler for `version`: installed, or downloaded from the release list, checked and installed.
    pub async fn resolve(&self, version: &str) -> Result<PathBuf, VerifyError> {
        self.wanted(version)?;
        match (self.path(version), &self.downloads) {
            (Ok(path), _) => Ok(path),
            (Err(missing), Some((dir, releases))) => match releases.find(version).await? {
                Some(build) => Ok(releases.install(&build, dir).await?),
                None => Err(missing),
            },
            (Err(missing), None) => Err(missing),
        }
    }
}

/// Whether `text` is a version: three numbers (`0.8.37`).
pub fn is_version(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `0.8.37` from a compiler file name, when it names a version.
fn version_of_file(name: &str) -> Option<String> {
    let version = name.strip_prefix("solc-").unwrap_or(name);
    is_version(version).then(|| version.to_string())
}

/// `0.8.37` from `v0.8.37+commit.abcdef`, `solc-0.8.37` or `0.8.37`.
pub fn short_version(version: &str) -> String {
    let v = version.trim();
    let v = v.strip_prefix("solc-").unwrap_or(v);
    let v = v.strip_prefix('v').unwrap_or(v);
    v.split('+').next().unwrap_or(v).to_string()
}

/// Whether solc `version` (`0.8.37`) takes `--no-import-callback` (from 0.8.22 on).
fn takes_no_import_callback(version: &str) -> bool {
    let numbers: Vec<u64> = version.split('.').map_while(|n| n.parse().ok()).collect();
    numbers.len() == 3 && (numbers[0], numbers[1], numbers[2]) >= (0, 8, 22)
}

/// An empty working directory for one compiler run, removed when dropped: solc's import callback reads files
/// relative to it, so a submitted `import` finds nothing of the host's. `tempfile` names it at random and creates
/// it for this process alone (a name another local user could guess and create first would stop verification).
fn empty_dir() -> Result<tempfile::TempDir, VerifyError> {
    tempfile::Builder::new()
        .prefix("rockscout-compile-")
        .tempdir()
        .map_err(|e| VerifyError::Compilation(format!("cannot make the compiler's working directory: {e}")))
}

/// Runs `compiler --standard-json` (of solc `version`) on `input`, killing it past `limit`; returns its JSON
/// output. The compiler reads no file of the host: sources come inside the input (no `urls`, see
/// [`check_input`]), `--no-import-callback` where the version has it, and an empty working directory for older ones.
pub async fn compile(compiler: &Path, version: &str, input: &[u8], limit: Duration) -> Result<Value, VerifyError> {
    let workdir = empty_dir()?;
    let run = async {
        let mut command = tokio::process::Command::new(compiler);
        command.arg("--standard-json");
        if takes_no_import_callback(version) {
            command.arg("--no-import-callback");
        }
        let mut child = command
            .current_dir(workdir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| VerifyError::Compilation(format!("cannot start the compiler: {e}")))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = input.to_vec();
        let feed = tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
        let mut out = Vec::new();
        let mut stdout = child.stdout.take().expect("stdout is piped").take(MAX_OUTPUT_BYTES + 1);
        let read = stdout.read_to_end(&mut out).await;
        let mut err = Vec::new();
        if let Some(stderr) = child.stderr.take() {
            let _ = stderr.take(4096).read_to_end(&mut err).await;
        }
        let status = child.wait().await.map_err(|e| VerifyError::Compilation(e.to_string()))?;
        feed.abort();
        read.map_err(|e| VerifyError::Compilation(e.to_string()))?;
        if out.len() as u64 > MAX_OUTPUT_BYTES {
            return Err(VerifyError::Compilation("compiler output too large".into()));
        }
        if !status.success() {
            // The error output names the server's paths (a crashing solcjs prints its stack): the operator's log
            // has it, the job's reason (which anyone with the guid reads) does not.
            tracing::warn!(%status, stderr = %String::from_utf8_lossy(&err).trim(), "the compiler failed");
            return Err(VerifyError::Compilation(format!(
                "the compiler exited with {status} (its error output is in the server's log)"
            )));
        }
        serde_json::from_slice::<Value>(&out)
            .map_err(|e| VerifyError::Compilation(format!("the compiler's output is not JSON: {e}")))
    };
    tokio::time::timeout(limit, run)
        .await
        .map_err(|_| VerifyError::Compilation(format!("the compiler ran past its limit of {} s", limit.as_secs())))?
}

/// What is verified: a standard-JSON input, the compiler version and the contract (`Name` or `path:Name`).
#[derive(Debug, Clone)]
pub struct Request {
    /// Compiler version as the user gave it.
    pub compiler_version: String,
    /// Contract name, optionally `path:Name`.
    pub contract_name: String,
    /// The standard-JSON input.
    pub input: Value,
}

/// The chain's side: runtime code and, for top-level creations, the creation input.
#[derive(Debug, Clone)]
pub struct Deployed {
    /// Runtime code.
    pub runtime: Bytes,
    /// Creation input (code followed by constructor arguments), when known.
    pub creation_input: Option<Bytes>,
}

/// Checks the input's shape and asks for the outputs the matcher needs (ABI, code, metadata); other settings are
/// kept, since they decide the code.
fn prepared_input(input: &Value) -> Result<Value, VerifyError> {
    let mut input = input.clone();
    let object = input.as_object_mut().ok_or_else(|| VerifyError::Malformed("not a JSON object".into()))?;
    match object.get("language").and_then(Value::as_str) {
        Some("Solidity") | None => {}
        Some(other) => return Err(VerifyError::Malformed(format!("language {other} is not supported"))),
    }
    let sources = object.get("sources").and_then(Value::as_object);
    if sources.is_none_or(|s| s.is_empty()) {
        return Err(VerifyError::Malformed("`sources` is missing or empty".into()));
    }
    // A source named by `urls` is read by the compiler from wherever they point: only given contents are compiled.
    if let Some((name, _)) = sources.into_iter().flatten().find(|(_, source)| !source["content"].is_string()) {
        return Err(VerifyError::Malformed(format!("source {name} has no `content` (`urls` are not read)")));
    }
    object.insert("language".into(), json!("Solidity"));
    let settings = object.entry("settings").or_insert_with(|| json!({}));
    let settings =
        settings.as_object_mut().ok_or_else(|| VerifyError::Malformed("`settings` is not an object".into()))?;
    settings.insert(
        "outputSelection".into(),
        json!({"*": {"*": ["abi", "evm.bytecode", "evm.deployedBytecode", "metadata"]}}),
    );
    Ok(input)
}

/// Whether `input` is a Solidity standard-JSON input with sources (checked before a job is queued).
pub fn check_input(input: &Value) -> Result<(), VerifyError> {
    prepared_input(input).map(|_| ())
}

/// Compiles `request` with `compilers` (killed past `limit`) and compares the named contract with `deployed`.
pub async fn verify(
    compilers: &Compilers,
    request: &Request,
    deployed: &Deployed,
    limit: Duration,
) -> Result<VerifiedSource, VerifyError> {
    let compiler = compilers.resolve(&request.compiler_version).await?;
    let input = prepared_input(&request.input)?;
    let text = serde_json::to_vec(&input).map_err(|e| VerifyError::Malformed(e.to_string()))?;
    let output = compile(&compiler, &short_version(&request.compiler_version), &text, limit).await?;
    let errors: Vec<String> = output
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.get("severity").and_then(Value::as_str) == Some("error"))
        .map(|e| {
            e.get("formattedMessage").or(e.get("message")).and_then(Value::as_str).unwrap_or("?").trim().to_string()
        })
        .collect();
    if !errors.is_empty() {
        return Err(VerifyError::Compilation(errors.join("\n")));
    }
    let build = json!({"solcVersion": short_version(&request.compiler_version), "input": input, "output": output});
    let candidates = from_build_info(&build, Path::new("verifier"));
    let (path, name) = match request.contract_name.rsplit_once(':') {
        Some((path, name)) => (Some(path), name),
        None => (None, request.contract_name.as_str()),
    };
    let artifact = candidates
        .iter()
        .find(|a| a.name == name && path.is_none_or(|p| a.file_path.as_deref() == Some(p)))
        .ok_or_else(|| VerifyError::NoSuchContract(request.contract_name.clone()))?;
    compare(artifact, deployed)
}

/// The verified source when `artifact`'s code matches `deployed`.
fn compare(artifact: &Artifact, deployed: &Deployed) -> Result<VerifiedSource, VerifyError> {
    let runtime = artifact.runtime.as_ref().ok_or_else(|| VerifyError::Mismatch("no runtime code compiled".into()))?;
    let kind = runtime.matches_runtime(&deployed.runtime).ok_or_else(|| {
        VerifyError::Mismatch(format!(
            "runtime code differs ({} bytes compiled, {} deployed)",
            runtime.bytes.len(),
            deployed.runtime.len()
        ))
    })?;
    let (kind, args) = match (&artifact.creation, &deployed.creation_input) {
        (Some(creation), Some(input)) => {
            let (creation_kind, args) = creation
                .matches_creation(input)
                .ok_or_else(|| VerifyError::Mismatch("creation code differs from the creation input".into()))?;
            let both_full = kind == MatchKind::Full && creation_kind == MatchKind::Full;
            (if both_full { MatchKind::Full } else { MatchKind::Partial }, Bytes::copy_from_slice(args))
        }
        _ => (kind, Bytes::new()),
    };
    let verified_at = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    Ok(VerifiedSource {
        code_hash: alloy::primitives::keccak256(&deployed.runtime),
        name: artifact.name.clone(),
        file_path: artifact.file_path.clone().unwrap_or_default(),
        abi: serde_json::to_string(&artifact.abi.json).unwrap_or_else(|_| "[]".into()),
        sources: artifact.sources.clone(),
        compiler_version: artifact.compiler_version.clone().unwrap_or_default(),
        settings: artifact.settings.as_ref().map(shown_settings).unwrap_or_else(|| "{}".into()),
        full_match: kind == MatchKind::Full,
        constructor_args: args,
        license: artifact.license.clone(),
        verified_at,
    })
}

/// The compiler settings as the user gave them: without the output selection the verifier sets.
fn shown_settings(settings: &Value) -> String {
    let mut settings = settings.clone();
    if let Some(object) = settings.as_object_mut() {
        object.remove("outputSelection");
    }
    settings.to_string()
}

/// Stores `source` as the verified source of `address` (replacing an earlier one), and `address` as where the
/// source of its code is.
pub fn save(store: &Store, address: Address, source: &VerifiedSource) -> StoreResult<()> {
    let mut batch = store.batch();
    batch.put::<VerifiedSources>(&address, source)?;
    batch.put::<VerifiedCode>(&source.code_hash, &address)?;
    store.write(batch, Durability::Sync)
}

/// Indexes by code the verified sources of a directory written before `verified_code` existed (at start).
pub fn index_verified_code(store: &Store) -> StoreResult<()> {
    let reader = store.reader();
    let mut batch = store.batch();
    let mut missing = 0usize;
    for row in reader.rows::<VerifiedSources>() {
        let (address, source) = row?;
        if reader.get::<VerifiedCode>(&source.code_hash)?.is_none() {
            batch.put::<VerifiedCode>(&source.code_hash, &address)?;
            missing += 1;
        }
    }
    if missing > 0 {
        store.write(batch, Durability::Sync)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_file_names() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["solc-0.8.37", "0.8.30", "README", "solc-latest"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let compilers = Compilers::new(Some(dir.path().to_owned()));
        assert_eq!(compilers.versions(), ["0.8.30", "0.8.37"]);
        assert!(compilers.path("v0.8.37+commit.abcdef").unwrap().ends_with("solc-0.8.37"));
        assert!(compilers.path("0.8.30").unwrap().ends_with("0.8.30"));
        let err = compilers.path("0.7.6").unwrap_err();
        assert_eq!(err.to_string(), "compiler version 0.7.6 is not available (available: 0.8.30, 0.8.37)");
        assert!(Compilers::default().path("0.8.37").is_err());
    }

    #[test]
    fn a_version_that_is_a_path_names_no_program() {
        let dir = tempfile::tempdir().unwrap();
        let compilers = Compilers::new(Some(dir.path().join("compilers")));
        std::fs::create_dir(dir.path().join("compilers")).unwrap();
        std::fs::write(dir.path().join("0.8.37"), "").unwrap();
        for asked in ["/usr/bin/env", "/proc/self/exe", "../0.8.37", "solc-../../0.8.37", "0.8.37/../../0.8.37", ""] {
            let err = compilers.path(asked).unwrap_err();
            assert!(matches!(err, VerifyError::UnknownVersion { .. }), "{asked}: {err}");
        }
    }

    #[test]
    fn no_import_callback_is_passed_from_0_8_22() {
        assert!(takes_no_import_callback("0.8.22"));
        assert!(takes_no_import_callback("0.8.37"));
        assert!(takes_no_import_callback("0.10.0"));
        assert!(!takes_no_import_callback("0.8.21"));
        assert!(!takes_no_import_callback("0.4.26"));
        assert!(!takes_no_import_callback("latest"));
    }

    #[tokio::test]
    async fn the_compiler_runs_in_an_empty_directory_with_the_flag_its_version_takes() {
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        // Prints its arguments and the files of its working directory as a JSON output.
        std::fs::write(&probe, "#!/bin/sh\nprintf '{\"args\":\"%s\",\"files\":\"%s\"}' \"$*\" \"$(ls -A)\"\n").unwrap();
        std::fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let new = compile(&probe, "0.8.30", b"{}", Duration::from_secs(10)).await.unwrap();
        assert_eq!(new, json!({"args": "--standard-json --no-import-callback", "files": ""}));
        let old = compile(&probe, "0.8.21", b"{}", Duration::from_secs(10)).await.unwrap();
        assert_eq!(old, json!({"args": "--standard-json", "files": ""}));
    }

    #[test]
    fn inputs_without_sources_or_in_another_language_are_malformed() {
        assert!(prepared_input(&json!([])).is_err());
        assert!(prepared_input(&json!({"language": "Solidity", "sources": {}})).is_err());
        assert!(prepared_input(&json!({"language": "Vyper", "sources": {"a": {"content": ""}}})).is_err());
        let urls = prepared_input(&json!({"sources": {"a.sol": {"content": ""}, "b.sol": {"urls": ["/etc/passwd"]}}}));
        assert_eq!(
            urls.unwrap_err().to_string(),
            "invalid standard JSON input: source b.sol has no `content` (`urls` are not read)"
        );
        let ok = prepared_input(
            &json!({"sources": {"a.sol": {"content": ""}}, "settings": {"optimizer": {"enabled": true}}}),
        )
        .unwrap();
        assert_eq!(ok["settings"]["optimizer"]["enabled"], true);
        assert!(ok["settings"]["outputSelection"]["*"]["*"].as_array().unwrap().contains(&json!("metadata")));
    }
}

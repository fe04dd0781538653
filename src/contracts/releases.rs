//! Solidity compiler releases fetched on demand: the release list at `--compiler-list-url` (the `list.json` of
//! solc-bin, `binaries.soliditylang.org/linux-amd64/list.json` by default) names each build's file and its SHA-256.
//! A verification that asks for a version the compilers folder lacks downloads that build, checks its SHA-256
//! against the list and installs it into the folder (written aside, then renamed), so it is fetched once. The list,
//! its file names and the downloaded bytes are untrusted: sizes and times are bounded, and a file name with a path
//! in it is refused.

use alloy::primitives::B256;
use alloy::transports::http::reqwest;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest release list read.
const MAX_LIST_BYTES: usize = 8 * 1024 * 1024;
/// Largest compiler download.
const MAX_BINARY_BYTES: usize = 128 * 1024 * 1024;
/// How long a fetched list is used before it is fetched again (a failed fetch is retried after a minute).
const LIST_TTL: Duration = Duration::from_secs(3600);
const FAILED_LIST_TTL: Duration = Duration::from_secs(60);
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// One build in the release list.
#[derive(Debug, Clone, Deserialize)]
pub struct Build {
    /// File name next to the list.
    pub path: String,
    /// `0.8.37`.
    pub version: String,
    /// `0.8.37+commit.…`.
    #[serde(rename = "longVersion")]
    pub long_version: String,
    /// SHA-256 of the file (`0x…`).
    pub sha256: B256,
    /// Pre-release builds carry a `prerelease` tag.
    #[serde(default)]
    pub prerelease: Option<String>,
}

#[derive(Debug, Deserialize)]
struct List {
    builds: Vec<Build>,
}

/// Why a compiler could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The list or the file could not be read.
    #[error("the compiler release list at {url} could not be read: {why}")]
    Unreachable {
        /// What was fetched.
        url: String,
        /// Why not.
        why: String,
    },
    /// The downloaded file is not the one the list names.
    #[error(
        "the downloaded compiler {file} does not match the release list's SHA-256 (expected {expected}, got {got})"
    )]
    Checksum {
        /// The file.
        file: String,
        /// The list's digest.
        expected: B256,
        /// The file's digest.
        got: B256,
    },
    /// The list names a file that is not a plain file name.
    #[error("the release list names an unsafe file: {0:?}")]
    UnsafeName(String),
    /// Writing into the compilers folder failed.
    #[error("the compiler could not be installed into {dir}: {why}")]
    Install {
        /// The folder.
        dir: String,
        /// Why not.
        why: String,
    },
}

/// A fetched release list, or why it could not be read.
type ListResult = Result<Arc<Vec<Build>>, FetchError>;

/// The release list and the downloads made from it.
#[derive(Debug)]
pub struct Releases {
    list_url: reqwest::Url,
    client: reqwest::Client,
    cached: Mutex<Option<(Instant, ListResult)>>,
    installing: tokio::sync::Mutex<()>,
}

impl Releases {
    /// Releases listed at `list_url`.
    pub fn new(list_url: reqwest::Url) -> Self {
        let client = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).build().unwrap_or_default();
        Releases { list_url, client, cached: Mutex::new(None), installing: tokio::sync::Mutex::new(()) }
    }

    /// The builds listed, from the cache while it is fresh.
    pub async fn builds(&self) -> Result<Arc<Vec<Build>>, FetchError> {
        if let Some((at, result)) = self.cached.lock().expect("not poisoned").as_ref() {
            let ttl = if result.is_ok() { LIST_TTL } else { FAILED_LIST_TTL };
            if at.elapsed() < ttl {
                return result.clone();
            }
        }
        let result = self.fetch_list().await.map(Arc::new);
        *self.cached.lock().expect("not poisoned") = Some((Instant::now(), result.clone()));
        result
    }

    async fn fetch_list(&self) -> Result<Vec<Build>, FetchError> {
        let body = self.get(self.list_url.clone(), MAX_LIST_BYTES, LIST_TIMEOUT).await?;
        let list: List = serde_json::from_slice(&body).map_err(|e| FetchError::Unreachable {
            url: self.list_url.to_string(),
            why: format!("not a release list: {e}"),
        })?;
        Ok(list.builds)
    }

    /// The listed build for `version` (`0.8.37`, or `0.8.37+commit.…` for that exact build); releases before
    /// pre-releases.
    pub async fn find(&self, version: &str) -> Result<Option<Build>, FetchError> {
        let builds = self.builds().await?;
        Ok(pick(&builds, version).cloned())
    }

    /// Downloads `build`, checks its SHA-256 and installs it as `dir/solc-<version>`; returns that path.
    pub async fn install(&self, build: &Build, dir: &Path) -> Result<PathBuf, FetchError> {
        let _one_at_a_time = self.installing.lock().await;
        // The list is untrusted: its version names the installed file, so it must be a version.
        if !super::verifier::is_version(&build.version) {
            return Err(FetchError::UnsafeName(build.version.clone()));
        }
        let target = dir.join(format!("solc-{}", build.version));
        if target.is_file() {
            return Ok(target);
        }
        if build.path.is_empty() || build.path.contains(['/', '\\']) || build.path.starts_with('.') {
            return Err(FetchError::UnsafeName(build.path.clone()));
        }
        let url = self.list_url.join(&build.path).map_err(|_| FetchError::UnsafeName(build.path.clone()))?;
        let bytes = self.get(url, MAX_BINARY_BYTES, DOWNLOAD_TIMEOUT).await?;
        let got = B256::from_slice(&Sha256::digest(&bytes));
        if got != build.sha256 {
            return Err(FetchError::Checksum { file: build.path.clone(), expected: build.sha256, got });
        }
        let failed = |e: std::io::Error| FetchError::Install { dir: dir.display().to_string(), why: e.to_string() };
        std::fs::create_dir_all(dir).map_err(failed)?;
        let aside = dir.join(format!(".download-solc-{}-{}", build.version, std::process::id()));
        std::fs::write(&aside, &bytes).map_err(failed)?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&aside, std::fs::Permissions::from_mode(0o755)).map_err(failed)?;
        }
        std::fs::rename(&aside, &target).map_err(|e| {
            let _ = std::fs::remove_file(&aside);
            failed(e)
        })?;
        tracing::info!(version = %build.long_version, path = %target.display(), "installed a compiler from the release list");
        Ok(target)
    }

    /// The body at `url`, at most `limit` bytes, within `timeout`.
    async fn get(&self, url: reqwest::Url, limit: usize, timeout: Duration) -> Result<Vec<u8>, FetchError> {
        let shown = url.to_string();
        let unreachable = |why: String| FetchError::Unreachable { url: shown.clone(), why };
        let fetch = async {
            let mut response = self.client.get(url.clone()).send().await.map_err(|e| unreachable(e.to_string()))?;
            if !response.status().is_success() {
                return Err(unreachable(format!("HTTP {}", response.status())));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| unreachable(e.to_string()))? {
                if body.len() + chunk.len() > limit {
                    return Err(unreachable(format!("larger than {limit} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        };
        tokio::time::timeout(timeout, fetch).await.map_err(|_| unreachable(format!("no answer in {timeout:?}")))?
    }
}

/// The build `version` names: the exact long version when a commit is given, else the release of that version.
fn pick<'a>(builds: &'a [Build], version: &str) -> Option<&'a Build> {
    let asked = version.trim().trim_start_matches("solc-").trim_start_matches('v');
    if asked.contains('+') {
        return builds.iter().find(|b| b.long_version == asked);
    }
    let same = || builds.iter().filter(|b| b.version == asked);
    same().find(|b| b.prerelease.is_none()).or_else(|| same().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(version: &str, commit: &str, prerelease: Option<&str>) -> Build {
        Build {
            path: format!("solc-v{version}+commit.{commit}"),
            version: version.into(),
            long_version: format!("{version}+commit.{commit}"),
            sha256: B256::ZERO,
            prerelease: prerelease.map(str::to_owned),
        }
    }

    #[tokio::test]
    async fn a_listed_version_that_is_not_a_version_is_never_installed() {
        let dir = tempfile::tempdir().unwrap();
        // Refused before anything is fetched (nothing listens at this address).
        let releases = Releases::new("http://127.0.0.1:9/list.json".parse().unwrap());
        for version in ["../../x", "0.8.37/../../y", "0.8"] {
            let err = releases.install(&build(version, "abc", None), dir.path()).await.unwrap_err();
            assert!(matches!(err, FetchError::UnsafeName(_)), "{version}: {err}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_version_picks_its_release_and_a_long_version_its_exact_build() {
        let builds =
            [build("0.8.37", "aaaa", Some("nightly")), build("0.8.37", "bbbb", None), build("0.8.36", "cccc", None)];
        assert_eq!(pick(&builds, "0.8.37").unwrap().long_version, "0.8.37+commit.bbbb");
        assert_eq!(pick(&builds, "v0.8.37+commit.aaaa").unwrap().long_version, "0.8.37+commit.aaaa");
        assert!(pick(&builds, "v0.8.37+commit.ffff").is_none());
        assert_eq!(pick(&builds, "solc-0.8.36").unwrap().path, "solc-v0.8.36+commit.cccc");
        assert!(pick(&builds, "0.8.99").is_none());
    }

    #[test]
    fn the_list_format_of_solc_bin_is_read() {
        let text = r#"{"builds":[{"path":"solc-linux-amd64-v0.8.30+commit.73712a01","version":"0.8.30",
            "build":"commit.73712a01","longVersion":"0.8.30+commit.73712a01",
            "keccak256":"0x0000000000000000000000000000000000000000000000000000000000000001",
            "sha256":"0x0000000000000000000000000000000000000000000000000000000000000002","urls":[]}],
            "releases":{"0.8.30":"solc-linux-amd64-v0.8.30+commit.73712a01"},"latestRelease":"0.8.30"}"#;
        let list: List = serde_json::from_str(text).unwrap();
        assert_eq!(list.builds[0].sha256, B256::with_last_byte(2));
        assert_eq!(list.builds[0].version, "0.8.30");
    }
}

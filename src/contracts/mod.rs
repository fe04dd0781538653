//! What the explorer knows about contract code beyond the chain: which local build artifact a deployed contract's
//! code matches ([`Knowledge`]), ABIs for decoding ([`abi`]), the bytecode matcher ([`matcher`]), reading Foundry
//! and Hardhat output ([`artifacts`]) and watching it ([`watch`]), proxy patterns ([`proxy`]), and where a contract's
//! creation input is ([`creation`]).
//!
//! Matches are cached by code hash: identical code at many addresses is matched once, and a request never parses
//! an ABI or compares code twice. A rescan of the artifact folders replaces the set and empties the cache.

pub mod abi;
pub mod artifacts;
pub mod creation;
pub mod jobs;
pub mod matcher;
pub mod proxy;
pub mod releases;
pub mod verifier;
pub mod watch;

use crate::store::records::VerifiedSource;
use alloy::primitives::{Address, Bytes, B256};
use artifacts::{Artifact, ArtifactSet};
pub use matcher::MatchKind;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// Code hashes whose match (or absence of one) is remembered; the cache starts over beyond this.
const CACHE_LIMIT: usize = 100_000;

/// A deployed contract's code matched with an artifact.
#[derive(Debug, Clone)]
pub struct Known {
    /// The artifact.
    pub artifact: Arc<Artifact>,
    /// Full or partial match.
    pub kind: MatchKind,
    /// The verifier's record, when the verifier matched it (else a local artifact did).
    pub verified: Option<Arc<VerifiedSource>>,
    /// The address the verified source was matched at, when that is another contract with the same runtime code
    /// (a "similar match"; its constructor arguments are that contract's, not shown for this one).
    pub twin: Option<Address>,
}

impl Known {
    /// What a source checked by the verifier is known as: an artifact without code (the code was compared when
    /// it was verified) and the match kind found then.
    pub fn from_verified(source: VerifiedSource) -> Option<Known> {
        let abi: alloy::json_abi::JsonAbi = serde_json::from_str(&source.abi).ok()?;
        let artifact = Artifact {
            name: source.name.clone(),
            file_path: Some(source.file_path.clone()),
            abi: Arc::new(abi::Abi::new(abi)),
            runtime: None,
            creation: None,
            compiler_version: Some(source.compiler_version.clone()),
            settings: serde_json::from_str(&source.settings).ok(),
            sources: source.sources.clone(),
            license: source.license.clone(),
            origin: std::path::PathBuf::from("verifier"),
        };
        let kind = if source.full_match { MatchKind::Full } else { MatchKind::Partial };
        Some(Known { artifact: Arc::new(artifact), kind, verified: Some(Arc::new(source)), twin: None })
    }

    /// The constructor arguments the verifier read from this contract's own creation; `None` for a similar match
    /// (the arguments it holds are its twin's) and for local artifacts.
    pub fn verified_constructor_args(&self) -> Option<&alloy::primitives::Bytes> {
        self.verified.as_ref().filter(|_| self.twin.is_none()).map(|v| &v.constructor_args)
    }

    /// Where the source comes from: `verifier`, `similar-match` (a twin's verified source) or `local-artifacts`.
    pub fn source_label(&self) -> &'static str {
        match (&self.verified, self.twin) {
            (Some(_), Some(_)) => "similar-match",
            (Some(_), None) => "verifier",
            (None, _) => "local-artifacts",
        }
    }
}

/// What one runtime code is, beyond its bytes: computed once per code hash.
#[derive(Debug, Clone, Default)]
pub struct CodeFacts {
    /// The artifact it matches.
    pub known: Option<Known>,
    /// The implementation, when the code is an EIP-1167 minimal proxy.
    pub minimal_proxy_of: Option<alloy::primitives::Address>,
    /// The delegate, when the code is an EIP-7702 delegation designator (an account, not a contract).
    pub delegate_of: Option<alloy::primitives::Address>,
}

/// The artifact set in use and the facts found so far.
#[derive(Debug, Default)]
pub struct Knowledge {
    artifacts: RwLock<Arc<ArtifactSet>>,
    cache: Mutex<HashMap<B256, CodeFacts>>,
}

impl Knowledge {
    /// Uses `set` from now on (forgetting every earlier match).
    pub fn replace(&self, set: ArtifactSet) {
        let set = Arc::new(set);
        // The cache is emptied under the set's lock, so no match against the old set is cached after it.
        let mut current = self.artifacts.write().unwrap_or_else(|p| p.into_inner());
        *current = set;
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Number of artifacts in use.
    pub fn artifact_count(&self) -> usize {
        self.artifacts.read().unwrap_or_else(|p| p.into_inner()).all.len()
    }

    /// The facts of code `code_hash`: the artifact it matches (runtime code compared first, then the creation input
    /// for artifacts that carry creation code only) and the minimal-proxy target. `runtime` and `creation` read the
    /// code and the creation input, only on a cache miss; when either fails, so does this, and nothing is cached.
    pub fn facts<E>(
        &self,
        code_hash: B256,
        runtime: impl FnOnce() -> Result<Option<Bytes>, E>,
        creation: impl FnOnce() -> Result<Option<Bytes>, E>,
    ) -> Result<CodeFacts, E> {
        let set = self.artifacts.read().unwrap_or_else(|p| p.into_inner());
        if let Some(hit) = self.cache.lock().unwrap_or_else(|p| p.into_inner()).get(&code_hash) {
            return Ok(hit.clone());
        }
        let code = runtime()?.unwrap_or_default();
        let known = set.all.iter().find_map(|a| {
            let kind = a.runtime.as_ref()?.matches_runtime(&code)?;
            Some(Known { artifact: a.clone(), kind, verified: None, twin: None })
        });
        let creation_only = || set.all.iter().any(|a| a.runtime.is_none());
        let known = match known {
            None if creation_only() => creation()?.and_then(|input| {
                set.all.iter().filter(|a| a.runtime.is_none()).find_map(|a| {
                    let (kind, _) = a.creation.as_ref()?.matches_creation(&input)?;
                    Some(Known { artifact: a.clone(), kind, verified: None, twin: None })
                })
            }),
            known => known,
        };
        let facts = CodeFacts {
            known,
            minimal_proxy_of: proxy::minimal_proxy_target(&code),
            delegate_of: proxy::delegate_of(&code),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(code_hash, facts.clone());
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_read_fails_the_facts_and_leaves_nothing_cached() {
        let knowledge = Knowledge::default();
        let code_hash = B256::with_last_byte(1);
        let target = alloy::primitives::Address::repeat_byte(0x42);
        // An EIP-1167 minimal proxy's runtime code, whose target the facts name.
        let proxy_code = Bytes::from([&proxy::MINIMAL_PREFIX[..], target.as_slice(), &proxy::MINIMAL_SUFFIX].concat());
        let failed = knowledge.facts(code_hash, || Err("read failed"), || Ok(None));
        assert_eq!(failed.unwrap_err(), "read failed");
        let read = knowledge.facts(code_hash, || Ok::<_, &str>(Some(proxy_code.clone())), || Ok(None)).unwrap();
        assert_eq!(read.minimal_proxy_of, Some(target));
        // Now cached: the readers are not called again.
        let cached = knowledge.facts(code_hash, || Err("called"), || Err("called")).unwrap();
        assert_eq!(cached.minimal_proxy_of, Some(target));
    }
}

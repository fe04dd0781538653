//! Live name resolution for requests that name a name (`/search?q=alice.dev`, `/addresses/alice.dev`): forward
//! (namehash → the registry's `resolver(node)` → that resolver's `addr(node)`) and reverse (`name(node)` of
//! `<address>.addr.reverse`, kept only when the name resolves back) with `eth_call` at the indexed tip, cached per
//! block. Address objects in lists do not come here: they read the indexed primary name (`Reader::primary_names`).

use super::{ApiError, AppState};
use crate::chain::names::{is_normal, namehash, normalise, reverse_name, NameRegistryAbi, NameResolverAbi};
use crate::store::records::Tip;
use alloy::primitives::{Address, Bytes, B256};
use alloy::sol_types::SolCall;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Most names and addresses cached per block.
const NAME_CACHE_LIMIT: usize = 10_000;

/// Time allowed for one `eth_call` of a resolution.
const NAME_CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// Resolutions at the indexed tip; emptied when the tip changes (a new block, or another block at the same height
/// after a reorg) or the cache is full.
#[derive(Debug, Default)]
pub struct NameCache(Mutex<CacheEntries>);

#[derive(Debug, Default)]
struct CacheEntries {
    tip: Option<Tip>,
    forward: HashMap<String, Option<Address>>,
    reverse: HashMap<Address, Option<String>>,
}

impl NameCache {
    fn with<R>(&self, tip: Tip, f: impl FnOnce(&mut CacheEntries) -> R) -> R {
        let mut entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if entries.tip != Some(tip) || entries.forward.len() + entries.reverse.len() >= NAME_CACHE_LIMIT {
            *entries = CacheEntries { tip: Some(tip), ..CacheEntries::default() };
        }
        f(&mut entries)
    }
}

/// A name a request asked for, normalised, with what the registry resolves it to at the indexed tip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedName {
    /// The normalised name.
    pub name: String,
    /// Its address record (none: unresolved, or the node could not be asked).
    pub address: Option<Address>,
}

impl AppState {
    fn name_setup(&self) -> Option<(Address, Tip)> {
        let registry = self.store.name_registry()?;
        let tip = self.store.view().tip().ok().flatten()?;
        Some((registry, tip))
    }

    async fn eth_call(&self, to: Address, data: Vec<u8>, tip: Tip) -> Option<Bytes> {
        let call = self.node.call_contract(to, Bytes::from(data), Some(tip.number));
        tokio::time::timeout(NAME_CALL_TIMEOUT, call).await.ok()?.ok()?
    }

    /// The resolver the registry names for `node`: `Some(None)` when none is set, `None` when the call failed.
    async fn resolver(&self, registry: Address, node: B256, tip: Tip) -> Option<Option<Address>> {
        let answer = self.eth_call(registry, NameRegistryAbi::resolverCall { node }.abi_encode(), tip).await?;
        let resolver = NameRegistryAbi::resolverCall::abi_decode_returns(&answer).ok()?;
        Some((!resolver.is_zero()).then_some(resolver))
    }

    async fn resolve_at(&self, registry: Address, name: &str, tip: Tip) -> Option<Address> {
        if let Some(hit) = self.names.with(tip, |c| c.forward.get(name).copied()) {
            return hit;
        }
        let node = namehash(name);
        let address = match self.resolver(registry, node, tip).await? {
            None => None,
            Some(resolver) => {
                let answer = self.eth_call(resolver, NameResolverAbi::addrCall { node }.abi_encode(), tip).await?;
                Some(NameResolverAbi::addrCall::abi_decode_returns(&answer).ok()?).filter(|a| !a.is_zero())
            }
        };
        self.names.with(tip, |c| c.forward.insert(name.to_owned(), address));
        address
    }

    /// What `raw` names at the indexed tip: `Ok(None)` without a registry or when `raw` is no name; a 422 when
    /// `raw` is not a valid name under UTS-46.
    pub async fn resolve_name(&self, raw: &str, param: &'static str) -> Result<Option<ResolvedName>, ApiError> {
        let Some((registry, tip)) = self.name_setup() else { return Ok(None) };
        let name = normalise(raw).map_err(|e| ApiError::invalid(param, e.to_string()))?;
        let address = self.resolve_at(registry, &name, tip).await;
        Ok(Some(ResolvedName { name, address }))
    }

    /// The verified primary name of `address` at the indexed tip, asked of the contracts: its reverse record's
    /// name, when that name resolves back to `address`.
    pub async fn primary_name(&self, address: Address) -> Option<String> {
        let (registry, tip) = self.name_setup()?;
        if let Some(hit) = self.names.with(tip, |c| c.reverse.get(&address).cloned()) {
            return hit;
        }
        let node = namehash(&reverse_name(&address));
        let claimed = match self.resolver(registry, node, tip).await? {
            None => None,
            Some(resolver) => {
                let answer = self.eth_call(resolver, NameResolverAbi::nameCall { node }.abi_encode(), tip).await?;
                NameResolverAbi::nameCall::abi_decode_returns(&answer).ok().filter(|n| !n.is_empty())
            }
        };
        // Shown only in normalised form (see `is_normal`), and only when the name points back at the address.
        let verified = match claimed {
            Some(name) if is_normal(&name) && self.resolve_at(registry, &name, tip).await == Some(address) => {
                Some(name)
            }
            _ => None,
        };
        self.names.with(tip, |c| c.reverse.insert(address, verified.clone()));
        verified
    }
}

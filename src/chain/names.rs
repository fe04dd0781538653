//! ENS-compatible names, pure: the contracts' interfaces and events (ENS's own signatures, so real deployments
//! index too), namehash, UTS-46 normalisation, and how one block's logs change the name index ([`derive`]: owners,
//! resolvers, address records, plaintext names, expiries, reverse claims), run inside the block's derived-row changes so a
//! revert restores the prior rows from undo data.

use crate::store::keys::{AddressNodeKey, NameSearchKey};
use crate::store::records::{Bundle, LogRecord, NameRecord};
use crate::store::tables::{AddressNames, NameLabels, NameSearch, Names, ResolverAddrs, ResolverNames, ReverseNames};
use crate::store::{Changes, StoreResult};
use alloy::primitives::{keccak256, Address, B256};
use alloy::sol_types::SolEvent;
use std::collections::HashMap;

alloy::sol! {
    /// ENS registry (EIP-137).
    interface NameRegistryAbi {
        event NewOwner(bytes32 indexed node, bytes32 indexed label, address owner);
        event Transfer(bytes32 indexed node, address owner);
        event NewResolver(bytes32 indexed node, address resolver);
        function owner(bytes32 node) external view returns (address);
        function resolver(bytes32 node) external view returns (address);
    }

    /// ENS resolver: address and name records.
    interface NameResolverAbi {
        event AddrChanged(bytes32 indexed node, address a);
        event NameChanged(bytes32 indexed node, string name);
        function addr(bytes32 node) external view returns (address);
        function name(bytes32 node) external view returns (string);
    }

    /// ENS's first `.eth` registrar controller: the plaintext label of a registration.
    interface RegistrarControllerV1 {
        event NameRegistered(string name, bytes32 indexed label, address indexed owner, uint256 cost, uint256 expires);
    }

    /// ENS's later registrar controller (base cost and premium).
    interface RegistrarControllerV2 {
        event NameRegistered(string name, bytes32 indexed label, address indexed owner, uint256 baseCost, uint256 premium, uint256 expires);
    }

    /// ENS's current registrar controller (with a referrer).
    interface RegistrarControllerV3 {
        event NameRegistered(string label, bytes32 indexed labelhash, address indexed owner, uint256 baseCost, uint256 premium, uint256 expires, bytes32 referrer);
    }

    /// ENS's base registrar (the ERC-721 that owns a top-level node in the registry): registrations and renewals of
    /// the labels under that node, by label hash.
    interface BaseRegistrarAbi {
        event NameRegistered(uint256 indexed id, address indexed owner, uint256 expires);
        event NameRenewed(uint256 indexed id, uint256 expires);
    }

    /// ENS reverse registrar.
    interface ReverseRegistrarAbi {
        event ReverseClaimed(address indexed addr, bytes32 indexed node);
    }
}

/// namehash("addr.reverse"): the parent of every reverse record.
const ADDR_REVERSE_NODE: B256 =
    alloy::primitives::b256!("91d1777781884d03a6757a803996e38de2a42967fb37eeaca72729271025a9e2");

/// Longest name accepted or indexed, in bytes.
pub const MAX_NAME: usize = 255;

/// Labels every ENS deployment uses whose plaintext no event announces.
const KNOWN_LABELS: [&str; 5] = ["eth", "reverse", "addr", "dev", "test"];

/// The top-level names whose owner in the registry (a base registrar) is trusted with the expiries of the names
/// under them.
const REGISTRAR_BASES: [&str; 3] = ["eth", "dev", "test"];

/// Why a query is not a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// UTS-46 processing found a disallowed character or an invalid label.
    #[error("not a valid name under UTS-46 (disallowed character or empty label)")]
    Invalid,
    /// Longer than [`MAX_NAME`].
    #[error("name longer than 255 bytes")]
    TooLong,
}

/// The normalised form of a name: UTS-46 processing (non-transitional, lowercase, STD3 rules) as ENS does, so
/// `Alice.DEV` and `alice.dev` are one name and a Unicode name hashes to its normalised form.
pub fn normalise(name: &str) -> Result<String, NameError> {
    use idna::uts46::{AsciiDenyList, Hyphens, Uts46};
    if name.len() > MAX_NAME * 4 {
        return Err(NameError::TooLong);
    }
    let (unicode, result) = Uts46::new().to_unicode(name.as_bytes(), AsciiDenyList::STD3, Hyphens::Allow);
    if result.is_err() || unicode.is_empty() || unicode.split('.').any(str::is_empty) {
        return Err(NameError::Invalid);
    }
    if unicode.len() > MAX_NAME {
        return Err(NameError::TooLong);
    }
    Ok(unicode.into_owned())
}

/// Whether a search query should be read as a name: it has a dot between two labels and no spaces.
pub fn looks_like_name(q: &str) -> bool {
    let q = q.trim_end_matches('.');
    q.contains('.') && !q.starts_with('.') && !q.chars().any(char::is_whitespace)
}

/// keccak256 of one label.
pub fn labelhash(label: &str) -> B256 {
    keccak256(label.as_bytes())
}

/// The child node of `parent` with label hash `label`.
pub fn subnode(parent: B256, label: B256) -> B256 {
    let mut both = [0u8; 64];
    both[..32].copy_from_slice(parent.as_slice());
    both[32..].copy_from_slice(label.as_slice());
    keccak256(both)
}

/// Whether `name` is its own normalised form: what a primary name must be to be shown (ENS clients show none
/// other).
pub fn is_normal(name: &str) -> bool {
    normalise(name).is_ok_and(|normal| normal == name)
}

/// EIP-137 namehash of a (normalised) name; the empty name is the root.
pub fn namehash(name: &str) -> B256 {
    if name.is_empty() {
        return B256::ZERO;
    }
    name.rsplit('.').fold(B256::ZERO, |node, label| subnode(node, labelhash(label)))
}

/// The reverse name of an address: `<40 lowercase hex digits>.addr.reverse`.
pub fn reverse_name(address: &Address) -> String {
    format!("{}.addr.reverse", alloy::hex::encode(address.as_slice()))
}

/// Whether a name is a reverse record's name (not shown in searches).
pub fn is_reverse(name: &str) -> bool {
    name.ends_with(".addr.reverse") || name == "addr.reverse"
}

/// A label's plaintext: announced by a registration, or one every deployment uses.
fn label_text(changes: &mut Changes<'_>, label: B256) -> StoreResult<Option<String>> {
    if let Some(text) = changes.get::<NameLabels>(&label)? {
        return Ok(Some(text));
    }
    Ok(KNOWN_LABELS.iter().find(|l| labelhash(l) == label).map(|l| (*l).to_owned()))
}

/// Gives `node` its plaintext name (and its search row) when it has none yet.
fn learn_name(changes: &mut Changes<'_>, node: B256, record: &mut NameRecord, name: String) -> StoreResult<()> {
    if record.name.is_some() || name.len() > MAX_NAME {
        return Ok(());
    }
    if !is_reverse(&name) {
        changes.set::<NameSearch>(&NameSearchKey::new(&name, node), Some(&()))?;
    }
    record.name = Some(name);
    Ok(())
}

/// Points `node`'s address record at `to`, keeping the per-address index in step.
fn set_resolved(
    changes: &mut Changes<'_>,
    node: B256,
    record: &mut NameRecord,
    to: Option<Address>,
) -> StoreResult<()> {
    if record.resolved == to {
        return Ok(());
    }
    if let Some(old) = record.resolved {
        changes.set::<AddressNames>(&AddressNodeKey { address: old, node }, None)?;
    }
    if let Some(new) = to {
        changes.set::<AddressNames>(&AddressNodeKey { address: new, node }, Some(&()))?;
    }
    record.resolved = to;
    Ok(())
}

/// A registration's plaintext label and expiry, from any of the controllers' events (any emitter: the label is checked
/// against its hash, so a wrong one cannot be planted).
fn registration(log: &LogRecord) -> Option<(B256, String, u64)> {
    let (name, label, expires) = if let Ok(e) =
        RegistrarControllerV1::NameRegistered::decode_raw_log(log.topics.iter().copied(), &log.data)
    {
        (e.name, e.label, e.expires)
    } else if let Ok(e) = RegistrarControllerV2::NameRegistered::decode_raw_log(log.topics.iter().copied(), &log.data) {
        (e.name, e.label, e.expires)
    } else {
        let e = RegistrarControllerV3::NameRegistered::decode_raw_log(log.topics.iter().copied(), &log.data).ok()?;
        (e.label, e.labelhash, e.expires)
    };
    let valid = labelhash(&name) == label && !name.is_empty() && !name.contains('.') && name.len() <= MAX_NAME;
    valid.then(|| (label, name, u64::try_from(expires).unwrap_or(u64::MAX)))
}

/// A base registrar's new expiry of one of its labels (registration or renewal): the label hash and the time.
fn registrar_expiry(log: &LogRecord) -> Option<(B256, u64)> {
    let topics = log.topics.iter().copied();
    let (id, expires) = match log.topics.first()? {
        t if *t == BaseRegistrarAbi::NameRenewed::SIGNATURE_HASH => {
            let e = BaseRegistrarAbi::NameRenewed::decode_raw_log(topics, &log.data).ok()?;
            (e.id, e.expires)
        }
        t if *t == BaseRegistrarAbi::NameRegistered::SIGNATURE_HASH => {
            let e = BaseRegistrarAbi::NameRegistered::decode_raw_log(topics, &log.data).ok()?;
            (e.id, e.expires)
        }
        _ => return None,
    };
    Some((B256::from(id), u64::try_from(expires).unwrap_or(u64::MAX)))
}

/// Sets the expiry a base registrar announced, when the emitter owns one of [`REGISTRAR_BASES`] in the registry (no
/// one else can renew a name there) and the name exists.
fn renew(changes: &mut Changes<'_>, registrar: Address, label: B256, expires: u64) -> StoreResult<()> {
    for base in REGISTRAR_BASES.map(namehash) {
        if changes.get::<Names>(&base)?.is_none_or(|b| b.owner != registrar) {
            continue;
        }
        let node = subnode(base, label);
        if let Some(mut record) = changes.get::<Names>(&node)? {
            record.expires = Some(expires);
            changes.set::<Names>(&node, Some(&record))?;
        }
    }
    Ok(())
}

/// Updates the name index with one block's logs; `registry` is the ENS-compatible registry whose events count.
pub fn derive(block: &Bundle, registry: Address, changes: &mut Changes<'_>) -> StoreResult<()> {
    // Plaintext labels first: a controller announces the label after the registry created the node.
    let mut expiries: HashMap<(u32, B256), u64> = HashMap::new();
    for log in &block.logs {
        if let Some((label, text, expires)) = registration(log) {
            changes.set::<NameLabels>(&label, Some(&text))?;
            expiries.insert((log.tx_index, label), expires);
        }
    }
    for log in &block.logs {
        let Some(topic) = log.topics.first() else { continue };
        let topics = log.topics.iter().copied();
        if log.address == registry {
            if *topic == NameRegistryAbi::NewOwner::SIGNATURE_HASH {
                let Ok(e) = NameRegistryAbi::NewOwner::decode_raw_log(topics, &log.data) else { continue };
                let node = subnode(e.node, e.label);
                let mut record = changes.get::<Names>(&node)?.unwrap_or_else(|| NameRecord::new(block.number()));
                record.owner = e.owner;
                if let Some(expires) = expiries.get(&(log.tx_index, e.label)) {
                    record.expires = Some(*expires);
                }
                let parent_name = if e.node.is_zero() {
                    Some(String::new())
                } else {
                    changes.get::<Names>(&e.node)?.and_then(|p| p.name)
                };
                // ENS's first reverse registrar announced no claim: a node under `addr.reverse` whose label is an
                // address's hex (its new owner's, or the sender's who asked for it) is that address's record.
                if e.node == ADDR_REVERSE_NODE && record.reverse_of.is_none() {
                    let sender = block.txs.get(log.tx_index as usize).map(|tx| tx.from);
                    let claimer = [Some(e.owner), sender]
                        .into_iter()
                        .flatten()
                        .find(|a| labelhash(&alloy::hex::encode(a.as_slice())) == e.label);
                    if let Some(claimer) = claimer {
                        record.reverse_of = Some(claimer);
                        learn_name(changes, node, &mut record, reverse_name(&claimer))?;
                    }
                }
                if let (Some(parent), Some(label)) = (parent_name, label_text(changes, e.label)?) {
                    let name = if parent.is_empty() { label } else { format!("{label}.{parent}") };
                    learn_name(changes, node, &mut record, name)?;
                }
                changes.set::<Names>(&node, Some(&record))?;
            } else if *topic == NameRegistryAbi::Transfer::SIGNATURE_HASH {
                let Ok(e) = NameRegistryAbi::Transfer::decode_raw_log(topics, &log.data) else { continue };
                let mut record = changes.get::<Names>(&e.node)?.unwrap_or_else(|| NameRecord::new(block.number()));
                record.owner = e.owner;
                changes.set::<Names>(&e.node, Some(&record))?;
            } else if *topic == NameRegistryAbi::NewResolver::SIGNATURE_HASH {
                let Ok(e) = NameRegistryAbi::NewResolver::decode_raw_log(topics, &log.data) else { continue };
                let mut record = changes.get::<Names>(&e.node)?.unwrap_or_else(|| NameRecord::new(block.number()));
                if record.resolver != e.resolver {
                    record.resolver = e.resolver;
                    // The new resolver's records are those it announced for the node before (none if it never
                    // did): the address the name points at and the name a reverse record claims.
                    let held = AddressNodeKey { address: e.resolver, node: e.node };
                    let resolved = changes.get::<ResolverAddrs>(&held)?;
                    set_resolved(changes, e.node, &mut record, resolved)?;
                    if let Some(address) = record.reverse_of {
                        let claimed = changes.get::<ResolverNames>(&held)?;
                        changes.set::<ReverseNames>(&address, claimed.as_ref())?;
                    }
                }
                changes.set::<Names>(&e.node, Some(&record))?;
            }
        } else if *topic == NameResolverAbi::AddrChanged::SIGNATURE_HASH {
            let Ok(e) = NameResolverAbi::AddrChanged::decode_raw_log(topics, &log.data) else { continue };
            let resolved = (!e.a.is_zero()).then_some(e.a);
            changes.set::<ResolverAddrs>(&AddressNodeKey { address: log.address, node: e.node }, resolved.as_ref())?;
            let Some(mut record) = changes.get::<Names>(&e.node)?.filter(|r| r.resolver == log.address) else {
                continue;
            };
            set_resolved(changes, e.node, &mut record, resolved)?;
            changes.set::<Names>(&e.node, Some(&record))?;
        } else if *topic == NameResolverAbi::NameChanged::SIGNATURE_HASH {
            let Ok(e) = NameResolverAbi::NameChanged::decode_raw_log(topics, &log.data) else { continue };
            let claimed = (!e.name.is_empty() && e.name.len() <= MAX_NAME).then(|| e.name.clone());
            changes.set::<ResolverNames>(&AddressNodeKey { address: log.address, node: e.node }, claimed.as_ref())?;
            let Some(mut record) = changes.get::<Names>(&e.node)?.filter(|r| r.resolver == log.address) else {
                continue;
            };
            if let Some(address) = record.reverse_of {
                changes.set::<ReverseNames>(&address, claimed.as_ref())?;
            } else if namehash(&e.name) == e.node {
                learn_name(changes, e.node, &mut record, e.name)?;
                changes.set::<Names>(&e.node, Some(&record))?;
            }
        } else if let Some((label, expires)) = registrar_expiry(log) {
            renew(changes, log.address, label, expires)?;
        } else if *topic == ReverseRegistrarAbi::ReverseClaimed::SIGNATURE_HASH {
            let Ok(e) = ReverseRegistrarAbi::ReverseClaimed::decode_raw_log(topics, &log.data) else { continue };
            let name = reverse_name(&e.addr);
            if namehash(&name) != e.node {
                continue;
            }
            let mut record = changes.get::<Names>(&e.node)?.unwrap_or_else(|| NameRecord::new(block.number()));
            record.reverse_of = Some(e.addr);
            learn_name(changes, e.node, &mut record, name)?;
            changes.set::<Names>(&e.node, Some(&record))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// EIP-137's published values.
    #[test]
    fn namehash_matches_the_eip() {
        assert_eq!(namehash(""), B256::ZERO);
        assert_eq!(
            namehash("eth"),
            "0x93cdeb708b7545dc668eb9280176169d1c33cfd8ed6f04690a0bcc88a93fc4ae".parse::<B256>().unwrap()
        );
        assert_eq!(
            namehash("foo.eth"),
            "0xde9b09fd7c5f901e23a3f19fecc54828e9c848539801e86591bd9801b019f84f".parse::<B256>().unwrap()
        );
        assert_eq!(
            namehash("addr.reverse"),
            "0x91d1777781884d03a6757a803996e38de2a42967fb37eeaca72729271025a9e2".parse::<B256>().unwrap()
        );
    }

    #[test]
    fn normalisation_follows_uts46() {
        assert_eq!(normalise("Alice.DEV").unwrap(), "alice.dev");
        assert_eq!(normalise("ÅNGSTRÖM.dev").unwrap(), "ångström.dev");
        // Full-width letters map to ASCII; the punycode form decodes to the Unicode one.
        assert_eq!(normalise("ａｌｉｃｅ.dev").unwrap(), "alice.dev");
        assert_eq!(normalise("xn--mnchen-3ya.dev").unwrap(), "münchen.dev");
        assert_eq!(normalise("al ice.dev"), Err(NameError::Invalid));
        assert_eq!(normalise("alice..dev"), Err(NameError::Invalid));
        assert_eq!(normalise(&format!("{}.dev", "a".repeat(300))), Err(NameError::TooLong));
    }

    /// A new store whose names follow the registry at `registry`.
    fn store_following(registry: Address) -> (tempfile::TempDir, crate::store::Store) {
        use crate::store::{Store, StoreOptions};
        let dir = tempfile::tempdir().unwrap();
        let store =
            Store::open(dir.path(), &StoreOptions { name_registry: Some(registry), ..Default::default() }).unwrap();
        (dir, store)
    }

    fn log(address: Address, event: &impl SolEvent) -> LogRecord {
        let data = event.encode_log_data();
        LogRecord { address, topics: data.topics().to_vec(), data: data.data, tx_index: 0, tx_hash: B256::ZERO }
    }

    #[test]
    fn the_current_controller_s_registrations_are_read() {
        let event = RegistrarControllerV3::NameRegistered {
            label: "viathree".into(),
            labelhash: labelhash("viathree"),
            owner: Address::repeat_byte(3),
            baseCost: alloy::primitives::U256::from(1),
            premium: alloy::primitives::U256::ZERO,
            expires: alloy::primitives::U256::from(1_900_000_000u64),
            referrer: B256::ZERO,
        };
        let read = registration(&log(Address::repeat_byte(9), &event));
        assert_eq!(read, Some((labelhash("viathree"), "viathree".to_owned(), 1_900_000_000)));
        let forged = RegistrarControllerV3::NameRegistered { labelhash: labelhash("other"), ..event };
        assert_eq!(registration(&log(Address::repeat_byte(9), &forged)), None, "the label must match its hash");
    }

    /// A reverse record's claim is dropped when its node gets another resolver that announced none for it, and back
    /// when it returns to the resolver that holds it.
    #[test]
    fn a_reverse_record_s_new_resolver_drops_its_claim() {
        use crate::indexer::apply::{apply_blocks, empty_block};
        let (registry, first, second) = (Address::repeat_byte(1), Address::repeat_byte(2), Address::repeat_byte(3));
        let (_dir, store) = store_following(registry);
        let claimer = Address::repeat_byte(0xaa);
        let node = namehash(&reverse_name(&claimer));
        let mut block = empty_block(0, 0, B256::ZERO);
        block.logs = vec![
            log(Address::repeat_byte(4), &ReverseRegistrarAbi::ReverseClaimed { addr: claimer, node }),
            log(registry, &NameRegistryAbi::NewResolver { node, resolver: first }),
            log(first, &NameResolverAbi::NameChanged { node, name: "alice.eth".into() }),
        ];
        let mut next = empty_block(1, 0, block.header.hash);
        next.logs = vec![log(registry, &NameRegistryAbi::NewResolver { node, resolver: second })];
        apply_blocks(&store, std::slice::from_ref(&block), true).unwrap();
        assert_eq!(store.reader().get::<ReverseNames>(&claimer).unwrap(), Some("alice.eth".to_owned()));
        let mut back = empty_block(2, 0, next.header.hash);
        back.logs = vec![log(registry, &NameRegistryAbi::NewResolver { node, resolver: first })];
        apply_blocks(&store, &[next], true).unwrap();
        assert_eq!(store.reader().get::<ReverseNames>(&claimer).unwrap(), None);
        apply_blocks(&store, &[back], true).unwrap();
        assert_eq!(store.reader().get::<ReverseNames>(&claimer).unwrap(), Some("alice.eth".to_owned()));
    }

    /// A node that switches to a resolver takes the address record that resolver announced for it, before or after:
    /// set on the new resolver first, then switched, then back to the old one.
    #[test]
    fn a_new_resolver_s_announced_record_resolves_the_name() {
        use crate::indexer::apply::{apply_blocks, empty_block};
        let (registry, old, new) = (Address::repeat_byte(1), Address::repeat_byte(2), Address::repeat_byte(3));
        let (alice, carol) = (Address::repeat_byte(0xaa), Address::repeat_byte(0xcc));
        let (_dir, store) = store_following(registry);
        let node = namehash("alice.eth");
        let mut block = empty_block(0, 0, B256::ZERO);
        block.logs = vec![
            log(registry, &NameRegistryAbi::NewResolver { node, resolver: old }),
            log(old, &NameResolverAbi::AddrChanged { node, a: alice }),
            log(new, &NameResolverAbi::AddrChanged { node, a: carol }),
        ];
        let switched = |number: u64, parent: B256, resolver: Address| {
            let mut block = empty_block(number, 0, parent);
            block.logs = vec![log(registry, &NameRegistryAbi::NewResolver { node, resolver })];
            block
        };
        let to_new = switched(1, block.header.hash, new);
        let to_old = switched(2, to_new.header.hash, old);
        let resolved = || store.reader().get::<Names>(&node).unwrap().and_then(|r| r.resolved);
        let listed = |a: Address| store.reader().get::<AddressNames>(&AddressNodeKey { address: a, node }).unwrap();
        apply_blocks(&store, std::slice::from_ref(&block), true).unwrap();
        assert_eq!((resolved(), listed(alice), listed(carol)), (Some(alice), Some(()), None));
        apply_blocks(&store, &[to_new], true).unwrap();
        assert_eq!((resolved(), listed(alice), listed(carol)), (Some(carol), None, Some(())));
        apply_blocks(&store, &[to_old], true).unwrap();
        assert_eq!((resolved(), listed(alice), listed(carol)), (Some(alice), Some(()), None));
    }

    /// ENS's first reverse registrar emits no `ReverseClaimed`: it makes the node under `addr.reverse` (owned by
    /// itself) in a transaction the claimer sent, then names it through its resolver.
    #[test]
    fn a_reverse_record_made_without_a_claim_event_is_known_by_its_label() {
        use crate::indexer::apply::{apply_blocks, empty_block};
        let (registry, reverse_registrar, resolver) =
            (Address::repeat_byte(1), Address::repeat_byte(4), Address::repeat_byte(2));
        let (_dir, store) = store_following(registry);
        let claimer = Address::repeat_byte(0xaa);
        let label = labelhash(&alloy::hex::encode(claimer));
        let node = subnode(ADDR_REVERSE_NODE, label);
        assert_eq!(node, namehash(&reverse_name(&claimer)));
        let mut block = empty_block(0, 0, B256::ZERO);
        let mut sent = crate::store::golden::sample_tx();
        sent.body.from = claimer;
        block.txs = vec![sent];
        block.logs = vec![
            log(registry, &NameRegistryAbi::NewOwner { node: ADDR_REVERSE_NODE, label, owner: reverse_registrar }),
            log(registry, &NameRegistryAbi::NewResolver { node, resolver }),
            log(resolver, &NameResolverAbi::NameChanged { node, name: "alice.eth".into() }),
        ];
        apply_blocks(&store, &[block], true).unwrap();
        assert_eq!(store.reader().get::<ReverseNames>(&claimer).unwrap(), Some("alice.eth".to_owned()));
    }

    /// A base registrar (the registry's owner of `eth`) renews the names under it; another contract's event with the
    /// same signature changes nothing.
    #[test]
    fn the_base_registrar_s_renewals_move_the_expiry() {
        use crate::indexer::apply::{apply_blocks, empty_block};
        let (registry, registrar, impostor) =
            (Address::repeat_byte(1), Address::repeat_byte(5), Address::repeat_byte(6));
        let (_dir, store) = store_following(registry);
        let eth = namehash("eth");
        let (label, node) = (labelhash("alice"), namehash("alice.eth"));
        let id = alloy::primitives::U256::from_be_bytes(label.0);
        let at = alloy::primitives::U256::from;
        let mut block = empty_block(0, 0, B256::ZERO);
        block.logs = vec![
            log(registry, &NameRegistryAbi::NewOwner { node: B256::ZERO, label: labelhash("eth"), owner: registrar }),
            log(registry, &NameRegistryAbi::NewOwner { node: eth, label, owner: Address::repeat_byte(0xaa) }),
            log(
                registrar,
                &BaseRegistrarAbi::NameRegistered { id, owner: Address::repeat_byte(0xaa), expires: at(100) },
            ),
        ];
        let mut renewed = empty_block(1, 0, block.header.hash);
        renewed.logs = vec![log(registrar, &BaseRegistrarAbi::NameRenewed { id, expires: at(200) })];
        let mut forged = empty_block(2, 0, renewed.header.hash);
        forged.logs = vec![log(impostor, &BaseRegistrarAbi::NameRenewed { id, expires: at(999) })];
        let expires = || store.reader().get::<Names>(&node).unwrap().and_then(|r| r.expires);
        apply_blocks(&store, std::slice::from_ref(&block), true).unwrap();
        assert_eq!(expires(), Some(100));
        apply_blocks(&store, &[renewed], true).unwrap();
        assert_eq!(expires(), Some(200));
        apply_blocks(&store, &[forged], true).unwrap();
        assert_eq!(expires(), Some(200), "only the owner of eth renews names under it");
    }

    #[test]
    fn name_queries_are_dotted() {
        assert!(looks_like_name("alice.dev"));
        assert!(looks_like_name("ångström.dev"));
        assert!(!looks_like_name("alice"));
        assert!(!looks_like_name(".dev"));
        assert!(!looks_like_name("a b.dev"));
    }
}

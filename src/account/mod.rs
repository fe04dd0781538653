//! Accounts: who an account is (an Ethereum address), its bearer credentials (account tokens and API keys) and
//! the items it owns (private tags, watchlist entries, API keys). Shared by the HTTP API and the offline
//! `rockscout account` commands; stores through the typed store API (account tables 40–49), never through
//! RocksDB directly.
//!
//! A credential is `<prefix>_<id>_<secret>`: a public 64-bit id (the row it lives in, shown by `account list`)
//! and a 256-bit secret from the operating system's CSPRNG. Only the SHA-256 of the secret is stored; a
//! presented secret is hashed and compared with the stored hash in constant time. Secrets are never logged.

pub mod cli;
pub mod siwe;

use crate::store::records::{AccountItem, CredentialRecord, ItemKind, ItemOwner, UserRecord};
use crate::store::tables::{AccountItems, ApiKeys, ItemOwners, Table, UserTokens, Users};
use crate::store::{keys::ItemKey, keys::ItemPos, keys::SerialKey, Durability, Store, StoreError};
use alloy::primitives::{Address, B256};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use subtle::ConstantTimeEq;

/// Prefix of account tokens.
pub const TOKEN_PREFIX: &str = "rst";
/// Prefix of API keys.
pub const API_KEY_PREFIX: &str = "rsk";
/// Longest name of a tag, watchlist entry, token or API key, in characters.
pub const MAX_NAME_CHARS: usize = 35;
/// Most address tags per account.
pub const MAX_ADDRESS_TAGS: usize = 500;
/// Most transaction tags per account.
pub const MAX_TRANSACTION_TAGS: usize = 500;
/// Most watchlist entries per account.
pub const MAX_WATCHLIST: usize = 100;
/// Most API keys per account.
pub const MAX_API_KEYS: usize = 3;
/// Most custom ABIs per account.
pub const MAX_CUSTOM_ABIS: usize = 15;
/// Longest custom ABI, in bytes of compact JSON.
pub const MAX_ABI_BYTES: usize = 64 << 10;
/// Most live account tokens per account.
pub const MAX_TOKENS: usize = 20;

/// The per-account limit of items of `kind`.
pub fn limit_of(kind: ItemKind) -> usize {
    match kind {
        ItemKind::AddressTag => MAX_ADDRESS_TAGS,
        ItemKind::TransactionTag => MAX_TRANSACTION_TAGS,
        ItemKind::Watch => MAX_WATCHLIST,
        ItemKind::ApiKey => MAX_API_KEYS,
        ItemKind::CustomAbi => MAX_CUSTOM_ABIS,
    }
}

/// Why an account operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// No such item of the caller's (none at all, another account's, or another kind's: all look alike).
    #[error("not found")]
    NotFound,
    /// A limit per account is reached.
    #[error("at most {limit} per account")]
    LimitReached {
        /// The limit.
        limit: usize,
    },
    /// A field is invalid.
    #[error("{field}: {detail}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Current time in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A credential as presented: its id and secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Presented {
    id: u64,
    secret: [u8; 32],
}

impl std::fmt::Debug for Presented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Presented").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Presented {
    /// Parses `<prefix>_<16 hex id>_<64 hex secret>`; anything else is `None`.
    pub fn parse(text: &str, prefix: &str) -> Option<Presented> {
        let rest = text.strip_prefix(prefix)?.strip_prefix('_')?;
        let (id, secret) = rest.split_once('_')?;
        if id.len() != 16 || secret.len() != 64 {
            return None;
        }
        let id = u64::from_str_radix(id, 16).ok()?;
        let mut bytes = [0u8; 32];
        alloy::hex::decode_to_slice(secret, &mut bytes).ok()?;
        Some(Presented { id, secret: bytes })
    }

    fn render(&self, prefix: &str) -> String {
        format!("{prefix}_{:016x}_{}", self.id, alloy::hex::encode(self.secret))
    }

    fn secret_hash(&self) -> B256 {
        B256::from_slice(&Sha256::digest(self.secret))
    }
}

/// A fresh credential: a random id (never 0) and a random secret, from the operating system's CSPRNG.
fn fresh_credential() -> Result<Presented, AccountError> {
    let mut bytes = [0u8; 40];
    getrandom::fill(&mut bytes).map_err(|e| AccountError::Invalid { field: "random", detail: e.to_string() })?;
    let id = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")).max(1);
    let secret = bytes[8..].try_into().expect("32 bytes");
    Ok(Presented { id, secret })
}

/// Checks a display name: trimmed, 1–[`MAX_NAME_CHARS`] characters, no control characters.
pub fn check_name(field: &'static str, name: &str) -> Result<String, AccountError> {
    let name = name.trim();
    let invalid = |detail: String| AccountError::Invalid { field, detail };
    if crate::chain::shows_nothing(name) {
        return Err(invalid("must not be empty".into()));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(invalid(format!("at most {MAX_NAME_CHARS} characters")));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid("must not contain control characters".into()));
    }
    if name.chars().any(crate::chain::is_invisible_format) {
        return Err(invalid("must not contain invisible or text-direction characters".into()));
    }
    Ok(name.to_owned())
}

/// A token or API key as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialInfo {
    /// Its public id.
    pub id: u64,
    /// The stored record.
    pub record: CredentialRecord,
}

/// Everything an account owns that responses show to it: its tags, watched addresses and custom ABIs.
#[derive(Debug, Default)]
pub struct Personal {
    /// Address → tag name.
    pub address_tags: std::collections::HashMap<Address, String>,
    /// Transaction → tag name.
    pub transaction_tags: std::collections::HashMap<B256, String>,
    /// Watched address → (watchlist item id, name).
    pub watched: std::collections::HashMap<Address, (u64, String)>,
    /// Contract → the ABI the owner gave for it (decodes the owner's views where no other ABI does).
    pub custom_abis: std::collections::HashMap<Address, CustomAbi>,
}

/// An ABI an account gave for a contract, as stored; parsed the first time an answer needs it, so requests whose
/// answers never mention the contract do not pay for parsing it.
#[derive(Debug, Default)]
pub struct CustomAbi {
    text: String,
    parsed: std::sync::OnceLock<Option<crate::contracts::abi::Abi>>,
}

impl CustomAbi {
    /// The ABI (`None` if the stored text no longer parses: it was validated on the way in).
    pub fn abi(&self) -> Option<&crate::contracts::abi::Abi> {
        self.parsed
            .get_or_init(|| {
                serde_json::from_str::<alloy::json_abi::JsonAbi>(&self.text).ok().map(crate::contracts::abi::Abi::new)
            })
            .as_ref()
    }
}

impl Personal {
    /// Whether there is nothing to show.
    pub fn is_empty(&self) -> bool {
        self.address_tags.is_empty()
            && self.transaction_tags.is_empty()
            && self.watched.is_empty()
            && self.custom_abis.is_empty()
    }
}

/// The account service over the store.
#[derive(Debug)]
pub struct Accounts {
    store: Arc<Store>,
    /// Serializes read-check-write sequences (id allocation, limits).
    writes: Mutex<()>,
}

/// Deletes the owner row of deleted item `id`, unless `id` is `newest`, the newest id handed out: that row stays,
/// so the next item gets a new id rather than the deleted one's (which would tell its former owner that someone
/// made an item, and of which kind). The next [`Accounts::add_item`] deletes it.
fn forget_owner_row(batch: &mut crate::store::Batch<'_>, id: u64, newest: u64) {
    if id != newest {
        batch.delete::<ItemOwners>(&SerialKey(id));
    }
}

impl Accounts {
    /// The service over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Accounts { store, writes: Mutex::new(()) }
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The account of `address`, if it exists.
    pub fn user(&self, address: Address) -> Result<Option<UserRecord>, AccountError> {
        Ok(self.store.reader().get::<Users>(&address)?)
    }

    /// Mints an account token for `owner` (creating the account), valid until `expires_ms` (`None`: until
    /// revoked). At [`MAX_TOKENS`] live tokens it refuses, or with `replace_oldest` (wallet sign-ins) revokes the
    /// oldest. Expired and revoked tokens of the account are cleaned up. Returns the token text, shown once.
    pub fn mint_token(
        &self,
        owner: Address,
        name: &str,
        expires_ms: Option<u64>,
        replace_oldest: bool,
    ) -> Result<String, AccountError> {
        let name = check_name("name", name)?;
        let _guard = self.lock();
        let now = now_ms();
        let mut user = self.user(owner)?.unwrap_or(UserRecord { created_ms: now, tokens: Vec::new() });
        let reader = self.store.reader();
        let mut batch = self.store.batch();
        let mut live = Vec::with_capacity(user.tokens.len());
        for id in &user.tokens {
            match reader.get::<UserTokens>(&SerialKey(*id))? {
                Some(token) if token.expires_ms.is_none_or(|e| e > now) => live.push(*id),
                Some(_) => batch.delete::<UserTokens>(&SerialKey(*id)),
                None => {}
            }
        }
        while live.len() >= MAX_TOKENS {
            if !replace_oldest {
                return Err(AccountError::LimitReached { limit: MAX_TOKENS });
            }
            batch.delete::<UserTokens>(&SerialKey(live.remove(0)));
        }
        let credential = fresh_credential()?;
        let record =
            CredentialRecord { owner, name, secret_hash: credential.secret_hash(), created_ms: now, expires_ms };
        live.push(credential.id);
        user.tokens = live;
        batch.put::<Users>(&owner, &user)?;
        batch.put::<UserTokens>(&SerialKey(credential.id), &record)?;
        self.store.write(batch, Durability::Sync)?;
        Ok(credential.render(TOKEN_PREFIX))
    }

    /// The account a token acts for, if the token is well-formed, known, unexpired and its secret matches.
    pub fn verify_token(&self, token: &str) -> Result<Option<Address>, AccountError> {
        self.verify::<UserTokens>(token, TOKEN_PREFIX).map(|found| found.map(|(_, owner)| owner))
    }

    /// The key id and account of an API key, if it is valid.
    pub fn verify_api_key(&self, key: &str) -> Result<Option<(u64, Address)>, AccountError> {
        self.verify::<ApiKeys>(key, API_KEY_PREFIX)
    }

    fn verify<T: Table<Key = SerialKey, Value = CredentialRecord>>(
        &self,
        text: &str,
        prefix: &str,
    ) -> Result<Option<(u64, Address)>, AccountError> {
        let Some(presented) = Presented::parse(text.trim(), prefix) else {
            return Ok(None);
        };
        let Some(record) = self.store.reader().get::<T>(&SerialKey(presented.id))? else {
            return Ok(None);
        };
        let matches: bool = presented.secret_hash().as_slice().ct_eq(record.secret_hash.as_slice()).into();
        let live = record.expires_ms.is_none_or(|e| e > now_ms());
        Ok((matches && live).then_some((presented.id, record.owner)))
    }

    /// Every account token (id and record, never the secret), by id.
    pub fn tokens(&self) -> Result<Vec<CredentialInfo>, AccountError> {
        let reader = self.store.reader();
        let rows = reader.credentials::<UserTokens>();
        rows.map(|row| row.map(|(id, record)| CredentialInfo { id: id.0, record }).map_err(AccountError::from))
            .collect()
    }

    /// Revokes the token with `id`; `false` when there is none.
    pub fn revoke_token(&self, id: u64) -> Result<bool, AccountError> {
        let _guard = self.lock();
        if self.store.reader().get::<UserTokens>(&SerialKey(id))?.is_none() {
            return Ok(false);
        }
        let mut batch = self.store.batch();
        batch.delete::<UserTokens>(&SerialKey(id));
        self.store.write(batch, Durability::Sync)?;
        Ok(true)
    }

    /// Revokes `token` when it is a valid account token (a sign-out); whether it was one.
    pub fn sign_out(&self, token: &str) -> Result<bool, AccountError> {
        match self.verify::<UserTokens>(token, TOKEN_PREFIX)? {
            Some((id, _)) => self.revoke_token(id),
            None => Ok(false),
        }
    }

    /// Revokes every token of `owner`; returns how many.
    pub fn revoke_tokens_of(&self, owner: Address) -> Result<usize, AccountError> {
        let _guard = self.lock();
        let Some(mut user) = self.user(owner)? else {
            return Ok(0);
        };
        let reader = self.store.reader();
        let mut batch = self.store.batch();
        let mut revoked = 0;
        for id in user.tokens.drain(..) {
            if reader.get::<UserTokens>(&SerialKey(id))?.is_some() {
                batch.delete::<UserTokens>(&SerialKey(id));
                revoked += 1;
            }
        }
        batch.put::<Users>(&owner, &user)?;
        self.store.write(batch, Durability::Sync)?;
        Ok(revoked)
    }

    /// Deletes every API key of `owner` (item and secret); returns how many.
    pub fn revoke_api_keys_of(&self, owner: Address) -> Result<usize, AccountError> {
        let _guard = self.lock();
        let reader = self.store.reader();
        let keys = reader.account_items(owner, ItemKind::ApiKey, None, MAX_API_KEYS)?;
        let newest = reader.last_item_id()?;
        let mut batch = self.store.batch();
        for (id, item) in &keys {
            if let AccountItem::ApiKey { key_id, .. } = item {
                batch.delete::<ApiKeys>(&SerialKey(*key_id));
            }
            batch.delete::<AccountItems>(&item_key(owner, ItemKind::ApiKey, *id));
            forget_owner_row(&mut batch, *id, newest);
        }
        self.store.write(batch, Durability::Sync)?;
        Ok(keys.len())
    }

    /// The item id of `owner`'s API key whose key id is `key_id`: `NotFound` when `owner` has none.
    pub fn api_key_item(&self, owner: Address, key_id: u64) -> Result<u64, AccountError> {
        let keys = self.store.reader().account_items(owner, ItemKind::ApiKey, None, MAX_API_KEYS)?;
        keys.into_iter()
            .find(|(_, item)| matches!(item, AccountItem::ApiKey { key_id: k, .. } if *k == key_id))
            .map(|(id, _)| id)
            .ok_or(AccountError::NotFound)
    }

    /// `owner`'s items of `kind`, newest first, after item id `after`, at most `limit`.
    pub fn items(
        &self,
        owner: Address,
        kind: ItemKind,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, AccountItem)>, AccountError> {
        Ok(self.store.reader().account_items(owner, kind, after, limit)?)
    }

    /// The item `id` of `owner`: `NotFound` when `owner` has no such item of `kind`, whether another account has
    /// it or nobody (so ids tell no one about other accounts' items).
    pub fn item(&self, owner: Address, kind: ItemKind, id: u64) -> Result<AccountItem, AccountError> {
        let reader = self.store.reader();
        match reader.get::<ItemOwners>(&SerialKey(id))? {
            // A deleted newest item leaves its owner row behind (see [`forget_owner_row`]).
            Some(found) if found.owner == owner && found.kind == kind => {
                reader.get::<AccountItems>(&item_key(owner, kind, id))?.ok_or(AccountError::NotFound)
            }
            _ => Err(AccountError::NotFound),
        }
    }

    /// Adds an item for `owner` (creating the account), refusing past the kind's limit or a duplicate target
    /// (`same_target` says whether an existing item is for the same thing). Returns its id.
    pub fn add_item(
        &self,
        owner: Address,
        item: AccountItem,
        same_target: impl Fn(&AccountItem) -> bool,
    ) -> Result<u64, AccountError> {
        let _guard = self.lock();
        let kind = item.kind();
        let limit = limit_of(kind);
        let existing = self.items(owner, kind, None, limit + 1)?;
        if existing.len() >= limit {
            return Err(AccountError::LimitReached { limit });
        }
        refuse_duplicate(kind, existing.iter().map(|(_, other)| other), same_target)?;
        let reader = self.store.reader();
        let newest = reader.last_item_id()?;
        let id = newest + 1;
        let mut batch = self.store.batch();
        if let Some(left) = reader.get::<ItemOwners>(&SerialKey(newest))? {
            if reader.get::<AccountItems>(&item_key(left.owner, left.kind, newest))?.is_none() {
                batch.delete::<ItemOwners>(&SerialKey(newest));
            }
        }
        if self.user(owner)?.is_none() {
            batch.put::<Users>(&owner, &UserRecord { created_ms: now_ms(), tokens: Vec::new() })?;
        }
        batch.put::<ItemOwners>(&SerialKey(id), &ItemOwner { owner, kind })?;
        batch.put::<AccountItems>(&item_key(owner, kind, id), &item)?;
        self.store.write(batch, Durability::Sync)?;
        Ok(id)
    }

    /// Replaces item `id` of `owner` with `item` (same kind), refusing a target another of its items has
    /// (`same_target` as for [`Accounts::add_item`]).
    pub fn update_item(
        &self,
        owner: Address,
        id: u64,
        item: AccountItem,
        same_target: impl Fn(&AccountItem) -> bool,
    ) -> Result<(), AccountError> {
        let _guard = self.lock();
        let kind = item.kind();
        self.item(owner, kind, id)?;
        let others = self.items(owner, kind, None, limit_of(kind) + 1)?;
        refuse_duplicate(
            kind,
            others.iter().filter(|(other_id, _)| *other_id != id).map(|(_, other)| other),
            same_target,
        )?;
        let mut batch = self.store.batch();
        batch.put::<AccountItems>(&item_key(owner, item.kind(), id), &item)?;
        self.store.write(batch, Durability::Sync)?;
        Ok(())
    }

    /// Deletes item `id` of `owner` (and an API key's secret row).
    pub fn delete_item(&self, owner: Address, kind: ItemKind, id: u64) -> Result<(), AccountError> {
        let _guard = self.lock();
        let item = self.item(owner, kind, id)?;
        let mut batch = self.store.batch();
        if let AccountItem::ApiKey { key_id, .. } = item {
            batch.delete::<ApiKeys>(&SerialKey(key_id));
        }
        batch.delete::<AccountItems>(&item_key(owner, kind, id));
        forget_owner_row(&mut batch, id, self.store.reader().last_item_id()?);
        self.store.write(batch, Durability::Sync)?;
        Ok(())
    }

    /// Creates an API key for `owner`: returns its item id and the key text (shown once).
    pub fn create_api_key(&self, owner: Address, name: &str) -> Result<(u64, String), AccountError> {
        let name = check_name("name", name)?;
        let credential = fresh_credential()?;
        let record = CredentialRecord {
            owner,
            name: name.clone(),
            secret_hash: credential.secret_hash(),
            created_ms: now_ms(),
            expires_ms: None,
        };
        let item = AccountItem::ApiKey { key_id: credential.id, name };
        // The secret row goes first: an item never names a missing key (a crash leaves at most an unused row).
        let mut batch = self.store.batch();
        batch.put::<ApiKeys>(&SerialKey(credential.id), &record)?;
        self.store.write(batch, Durability::Sync)?;
        match self.add_item(owner, item, |_| false) {
            Ok(id) => Ok((id, credential.render(API_KEY_PREFIX))),
            Err(e) => {
                let mut batch = self.store.batch();
                batch.delete::<ApiKeys>(&SerialKey(credential.id));
                self.store.write(batch, Durability::Sync)?;
                Err(e)
            }
        }
    }

    /// What responses show `owner` about its own tags, watchlist and custom ABIs.
    pub fn personal(&self, owner: Address) -> Result<Personal, AccountError> {
        let mut out = Personal::default();
        for kind in [ItemKind::AddressTag, ItemKind::TransactionTag, ItemKind::Watch, ItemKind::CustomAbi] {
            for (id, item) in self.items(owner, kind, None, limit_of(kind))? {
                match item {
                    AccountItem::AddressTag { address, name } => {
                        out.address_tags.insert(address, name);
                    }
                    AccountItem::TransactionTag { hash, name } => {
                        out.transaction_tags.insert(hash, name);
                    }
                    AccountItem::Watch { address, name, .. } => {
                        out.watched.insert(address, (id, name));
                    }
                    AccountItem::CustomAbi { address, abi, .. } => {
                        out.custom_abis.insert(address, CustomAbi { text: abi, parsed: Default::default() });
                    }
                    AccountItem::ApiKey { .. } => {}
                }
            }
        }
        Ok(out)
    }
}

fn item_key(owner: Address, kind: ItemKind, id: u64) -> ItemKey {
    ItemKey { address: owner, pos: ItemPos { kind: kind as u8, id } }
}

/// Refuses an item whose target one of `existing` (items of `kind`) already has.
fn refuse_duplicate<'a>(
    kind: ItemKind,
    mut existing: impl Iterator<Item = &'a AccountItem>,
    same_target: impl Fn(&AccountItem) -> bool,
) -> Result<(), AccountError> {
    if existing.any(same_target) {
        let field = match kind {
            ItemKind::TransactionTag => "transaction_hash",
            ItemKind::CustomAbi => "contract_address_hash",
            _ => "address_hash",
        };
        return Err(AccountError::Invalid { field, detail: "already in this list".into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;

    fn service() -> (tempfile::TempDir, Accounts) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &StoreOptions::default()).unwrap());
        (dir, Accounts::new(store))
    }

    #[test]
    fn tokens_verify_only_with_their_secret_and_until_expiry_or_revocation() {
        let (_dir, accounts) = service();
        let owner = Address::repeat_byte(7);
        let token = accounts.mint_token(owner, "ci", None, false).unwrap();
        assert!(token.starts_with("rst_") && token.len() == 4 + 16 + 1 + 64, "{token}");
        assert_eq!(accounts.verify_token(&token).unwrap(), Some(owner));
        let mut forged = token.clone();
        let last = forged.pop().unwrap();
        forged.push(if last == '0' { '1' } else { '0' });
        assert_eq!(accounts.verify_token(&forged).unwrap(), None, "one changed secret digit fails");
        assert_eq!(accounts.verify_token("rst_nonsense").unwrap(), None);
        let stored = accounts.tokens().unwrap();
        assert_eq!(stored.len(), 1);
        assert!(!format!("{stored:?}").contains(&token[21..]), "the secret is not stored");
        let expired = accounts.mint_token(owner, "old", Some(now_ms() - 1), false).unwrap();
        assert_eq!(accounts.verify_token(&expired).unwrap(), None);
        assert!(accounts.revoke_token(stored[0].id).unwrap());
        assert_eq!(accounts.verify_token(&token).unwrap(), None);
        assert!(!accounts.revoke_token(stored[0].id).unwrap());
    }

    #[test]
    fn live_tokens_per_account_are_bounded() {
        let (_dir, accounts) = service();
        let owner = Address::repeat_byte(9);
        let first = accounts.mint_token(owner, "t0", None, false).unwrap();
        for n in 1..MAX_TOKENS {
            accounts.mint_token(owner, &format!("t{n}"), None, false).unwrap();
        }
        assert!(matches!(accounts.mint_token(owner, "more", None, false), Err(AccountError::LimitReached { .. })));
        let newest = accounts.mint_token(owner, "wallet", None, true).unwrap();
        assert_eq!(accounts.verify_token(&first).unwrap(), None, "a sign-in at the limit replaces the oldest");
        assert_eq!(accounts.verify_token(&newest).unwrap(), Some(owner));
        assert_eq!(accounts.tokens().unwrap().len(), MAX_TOKENS);
        assert_eq!(accounts.revoke_tokens_of(owner).unwrap(), MAX_TOKENS);
        assert!(accounts.tokens().unwrap().is_empty());
    }

    #[test]
    fn items_are_owned_limited_and_listed_newest_first() {
        let (_dir, accounts) = service();
        let (alice, bob) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let tag = |n: u8| AccountItem::AddressTag { address: Address::repeat_byte(n), name: format!("t{n}") };
        let first = accounts.add_item(alice, tag(10), |_| false).unwrap();
        let second = accounts.add_item(alice, tag(11), |_| false).unwrap();
        let ids: Vec<u64> =
            accounts.items(alice, ItemKind::AddressTag, None, 10).unwrap().into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, vec![second, first]);
        assert_eq!(accounts.items(alice, ItemKind::AddressTag, Some(second), 10).unwrap().len(), 1);
        assert!(matches!(accounts.item(bob, ItemKind::AddressTag, first), Err(AccountError::NotFound)));
        assert!(matches!(accounts.delete_item(bob, ItemKind::AddressTag, first), Err(AccountError::NotFound)));
        assert!(matches!(accounts.item(alice, ItemKind::Watch, first), Err(AccountError::NotFound)));
        accounts.delete_item(alice, ItemKind::AddressTag, first).unwrap();
        assert!(matches!(accounts.item(alice, ItemKind::AddressTag, first), Err(AccountError::NotFound)));
        // The newest item's id is not handed out again once deleted: the next item, anyone's, gets a new one.
        accounts.delete_item(alice, ItemKind::AddressTag, second).unwrap();
        assert!(matches!(accounts.item(alice, ItemKind::AddressTag, second), Err(AccountError::NotFound)));
        let third = accounts.add_item(bob, tag(12), |_| false).unwrap();
        assert_eq!(third, second + 1);
        assert_eq!(accounts.store().reader().rows::<ItemOwners>().count(), 1, "the left owner row went with it");
        for n in 0..(MAX_API_KEYS as u8) {
            accounts.create_api_key(bob, &format!("k{n}")).unwrap();
        }
        assert!(matches!(accounts.create_api_key(bob, "one more"), Err(AccountError::LimitReached { .. })));
        assert_eq!(accounts.store().reader().rows::<ApiKeys>().count(), MAX_API_KEYS, "refused keys leave no row");
    }

    /// An update may keep its own target or take a free one, never one another item of the list has.
    #[test]
    fn an_update_cannot_make_a_duplicate() {
        let (_dir, accounts) = service();
        let alice = Address::repeat_byte(1);
        let tag = |n: u8, name: &str| AccountItem::AddressTag { address: Address::repeat_byte(n), name: name.into() };
        let same = |a: &AccountItem, b: &AccountItem| match (a, b) {
            (AccountItem::AddressTag { address: x, .. }, AccountItem::AddressTag { address: y, .. }) => x == y,
            _ => false,
        };
        let x = accounts.add_item(alice, tag(10, "x"), |o| same(o, &tag(10, ""))).unwrap();
        let y = accounts.add_item(alice, tag(11, "y"), |o| same(o, &tag(11, ""))).unwrap();
        let refused = accounts.update_item(alice, y, tag(10, "y"), |o| same(o, &tag(10, "")));
        assert!(matches!(refused, Err(AccountError::Invalid { field: "address_hash", .. })), "{refused:?}");
        accounts.update_item(alice, x, tag(10, "renamed"), |o| same(o, &tag(10, ""))).unwrap();
        accounts.update_item(alice, y, tag(12, "moved"), |o| same(o, &tag(12, ""))).unwrap();
        let items = accounts.items(alice, ItemKind::AddressTag, None, 10).unwrap();
        assert_eq!(items, vec![(y, tag(12, "moved")), (x, tag(10, "renamed"))]);
    }

    /// Revoking an account's API keys removes them whole (item, owner row, secret): none verifies any more, the
    /// account may create new ones, and another account's keys stay.
    #[test]
    fn revoking_api_keys_removes_every_key_of_the_account_only() {
        let (_dir, accounts) = service();
        let (alice, bob) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let keys: Vec<String> =
            (0..MAX_API_KEYS).map(|n| accounts.create_api_key(alice, &format!("k{n}")).unwrap().1).collect();
        let (_, bobs) = accounts.create_api_key(bob, "b").unwrap();
        assert!(keys.iter().all(|k| accounts.verify_api_key(k).unwrap().is_some_and(|(_, owner)| owner == alice)));
        assert_eq!(accounts.revoke_api_keys_of(alice).unwrap(), MAX_API_KEYS);
        assert!(keys.iter().all(|k| accounts.verify_api_key(k).unwrap().is_none()));
        assert!(accounts.items(alice, ItemKind::ApiKey, None, 10).unwrap().is_empty());
        assert_eq!(accounts.verify_api_key(&bobs).unwrap().map(|(_, owner)| owner), Some(bob));
        assert_eq!(accounts.store().reader().rows::<ApiKeys>().count(), 1);
        assert_eq!(
            accounts.store().reader().rows::<ItemOwners>().count(),
            1,
            "only bob's key's owner row (the newest)"
        );
        accounts.create_api_key(alice, "again").unwrap();
        assert_eq!(accounts.revoke_api_keys_of(bob).unwrap(), 1);
    }

    #[test]
    fn names_are_bounded() {
        assert!(check_name("name", " ok ").is_ok_and(|n| n == "ok"));
        assert!(check_name("name", "").is_err());
        assert!(check_name("name", &"x".repeat(MAX_NAME_CHARS + 1)).is_err());
        assert!(check_name("name", "a\u{7}").is_err());
        let sneaky = ["a\u{202E}cba", "pay\u{200B}pal", "x\u{2066}y", "\u{FEFF}bom", "a\u{061C}b", "pay\u{00AD}pal"];
        let blank = ["\u{3164}", "\u{2800}", "a\u{2028}b", "a\u{E0041}b", "a\u{1D173}b", "a\u{FFF9}b", "a\u{180E}b"];
        let blank = blank.into_iter().chain(["\u{FE0F}", "\u{FE0F} \u{E0100}", "a\u{2065}b", "a\u{1BCA0}b"]);
        for sneaky in sneaky.into_iter().chain(blank) {
            assert!(check_name("name", sneaky).is_err(), "{sneaky:?}");
        }
        assert!(check_name("name", "Zürich café 東京 🚀 ❤\u{FE0F}").is_ok(), "a variation selector in a name");
    }
}

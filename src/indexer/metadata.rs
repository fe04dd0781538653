//! The token metadata fetcher: reads `name()`, `symbol()` and `decimals()` of each new token contract with
//! `eth_call`, off the block path, so slow or hostile contracts never stall indexing. Answers are tolerated in
//! every shape seen in the wild: ABI strings, bytes32 strings (MKR-style), reverts, missing methods and garbage
//! (which give nothing). Results go to `token_metadata` and the prefix index `token_search`; they are not chain
//! state and are never reverted, but read again: when a reorg reverts the blocks this run read a token at (an
//! upgrade the reorg took away), when, after a reorg of this run reverted blocks at or below its creation, the code
//! writer stores a contract's code at a token's address (perhaps another contract), and when it reads a token
//! proxy's slots again after an upgrade (the new logic may name it otherwise). While the store refuses writes (disk
//! full) the fetcher pauses (see `pause`) and keeps the unsaved tokens for a retry.

use super::pause::Pauser;
use crate::chain::block_tokens;
use crate::events::{ChainEvent, EventSender};
use crate::node::Node;
use crate::status::{Status, Writer};
use crate::store::keys::SearchKey;
use crate::store::records::TokenMetadata;
use crate::store::tables::{Contracts, TokenMetadatas, TokenSearch, Tokens};
use crate::store::{Durability, Store, StoreResult};
use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::SolValue;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// Longest name or symbol kept, in characters.
pub const MAX_TEXT: usize = 64;

/// How often tokens whose metadata could not be read (node down) are tried again.
const RETRY_EVERY: Duration = Duration::from_secs(30);

const NAME: [u8; 4] = [0x06, 0xfd, 0xde, 0x03];
const SYMBOL: [u8; 4] = [0x95, 0xd8, 0x9b, 0x41];
const DECIMALS: [u8; 4] = [0x31, 0x3c, 0xe5, 0x67];

/// Most words of a token's name searched for beyond its first (the name is the contract's to choose).
const SEARCHED_WORDS: usize = 8;

/// The texts a token is found by, each as the start of a query: its name, the rest of its name from each later word
/// on (`Rock Token` is found by `token`, as Blockscout's word search finds it) and its symbol.
pub fn search_texts(metadata: &TokenMetadata) -> std::collections::BTreeSet<&str> {
    let mut texts = std::collections::BTreeSet::new();
    if let Some(name) = metadata.name.as_deref() {
        texts.insert(name);
        let later_words = name
            .char_indices()
            .filter(|(i, c)| *i > 0 && !c.is_whitespace() && name[..*i].ends_with(char::is_whitespace));
        texts.extend(later_words.take(SEARCHED_WORDS).map(|(i, _)| &name[i..]));
    }
    texts.extend(metadata.symbol.as_deref());
    texts
}

/// A name or symbol from a call's return data: an ABI string, or a zero-padded bytes32; printable text only.
pub fn decode_text(data: &[u8]) -> Option<String> {
    let raw = match String::abi_decode(data) {
        Ok(text) => text,
        Err(_) if data.len() == 32 => {
            let end = data.iter().position(|b| *b == 0).unwrap_or(32);
            String::from_utf8(data[..end].to_vec()).ok()?
        }
        Err(_) => return None,
    };
    let shown = |c: &char| !c.is_control() && !crate::chain::is_invisible_format(*c);
    let clean: String = raw.chars().filter(shown).take(MAX_TEXT).collect();
    let clean = clean.trim().to_owned();
    (!crate::chain::shows_nothing(&clean)).then_some(clean)
}

/// Decimals from a call's return data (a uint8 or uint256 at most 255).
pub fn decode_decimals(data: &[u8]) -> Option<u8> {
    (data.len() == 32).then(|| U256::from_be_slice(data)).and_then(|v| u8::try_from(v).ok())
}

/// Follows new tokens and reads their metadata.
#[derive(Debug)]
pub struct MetadataFetcher {
    store: Arc<Store>,
    node: Node,
    events: EventSender,
    pauser: Pauser,
    /// Set while the store refuses writes: when to try saving again.
    store_retry: Option<Duration>,
    /// The newest block announced so far.
    head: u64,
    /// Tokens read by this run, and the newest block announced before each read (bounded).
    read_after: std::collections::HashMap<Address, u64>,
    /// The lowest block a reorg reverted in this run: only contracts created at or above it can be re-creations.
    lowest_reverted: Option<u64>,
}

/// Most tokens whose read [`MetadataFetcher::read_after`] remembers.
const REMEMBERED_READS: usize = 100_000;

impl MetadataFetcher {
    /// A fetcher for tokens of `store`, reading from `node`, reporting pauses through `status`.
    pub fn new(store: Arc<Store>, node: Node, status: Arc<Status>, events: EventSender) -> Self {
        let pauser = Pauser::new(status, Writer::TokenMetadata);
        let read_after = Default::default();
        MetadataFetcher { store, node, events, pauser, store_retry: None, head: 0, read_after, lowest_reverted: None }
    }

    /// How long to wait before retrying the tokens of the last fetch that failed.
    fn retry_delay(&self) -> Duration {
        self.store_retry.unwrap_or(RETRY_EVERY)
    }

    async fn read(&self, token: Address) -> Result<TokenMetadata, crate::node::NodeError> {
        let call = |selector: [u8; 4]| self.node.call_contract(token, Bytes::copy_from_slice(&selector), None);
        let (name, symbol, decimals) = tokio::try_join!(call(NAME), call(SYMBOL), call(DECIMALS))?;
        Ok(TokenMetadata {
            name: name.and_then(|d| decode_text(&d)),
            symbol: symbol.and_then(|d| decode_text(&d)),
            decimals: decimals.and_then(|d| decode_decimals(&d)),
        })
    }

    fn save(&self, token: Address, metadata: &TokenMetadata) -> StoreResult<()> {
        let mut batch = self.store.batch();
        batch.put::<TokenMetadatas>(&token, metadata)?;
        for text in search_texts(metadata) {
            batch.put::<TokenSearch>(&SearchKey::new(text, token), &())?;
        }
        self.store.write(batch, Durability::Buffered)
    }

    /// Whether a contract stored at `token`'s address may be another than the one its metadata was read of: a
    /// creation at or above a block a reorg of this run reverted, announced after the read (what this run read once
    /// that creation was announced, a token minting in its constructor, is current).
    fn replaced(&self, token: Address) -> StoreResult<bool> {
        let Some(reverted) = self.lowest_reverted else { return Ok(false) };
        let Some(created) = self.store.reader().get::<Contracts>(&token)?.map(|c| c.block) else { return Ok(false) };
        Ok(reverted <= created && self.read_after.get(&token).is_none_or(|read| *read < created))
    }

    /// Forgets what was read of each of `tokens` (metadata and search rows) so they are read again; returns those
    /// that had been read.
    fn read_again(&self, tokens: impl IntoIterator<Item = Address>) -> BTreeSet<Address> {
        let forget = |token: Address| -> StoreResult<bool> {
            let Some(old) = self.store.reader().get::<TokenMetadatas>(&token)? else { return Ok(false) };
            let mut batch = self.store.batch();
            batch.delete::<TokenMetadatas>(&token);
            for text in search_texts(&old) {
                batch.delete::<TokenSearch>(&SearchKey::new(text, token));
            }
            self.store.write(batch, Durability::Buffered)?;
            Ok(true)
        };
        let forgotten = |token: &Address| {
            forget(*token).unwrap_or_else(|e| {
                tracing::warn!(error = %e, %token, "forgetting token metadata failed");
                false
            })
        };
        tokens.into_iter().filter(forgotten).collect()
    }

    /// Fetches what is missing among `tokens`; returns the ones the node could not answer for or the store could
    /// not save.
    async fn fetch(&mut self, tokens: BTreeSet<Address>) -> BTreeSet<Address> {
        let mut failed = BTreeSet::new();
        self.store_retry = None;
        for token in tokens {
            if self.store_retry.is_some() {
                // The store refuses writes: keep the rest for the retry without asking the node.
                failed.insert(token);
                continue;
            }
            // Read once, and only while the token is indexed: one a reorg took away (its first transfer reverted)
            // has no code at the head, and answers read now would stay when a contract is created there again.
            let reader = self.store.reader();
            match (reader.get::<TokenMetadatas>(&token), reader.get::<Tokens>(&token)) {
                (Ok(None), Ok(Some(_))) => {}
                (Ok(_), Ok(_)) => continue,
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(error = %e, %token, "reading token metadata failed");
                    continue;
                }
            }
            drop(reader);
            match self.read(token).await {
                Ok(metadata) => {
                    if self.read_after.len() >= REMEMBERED_READS {
                        self.read_after.clear();
                    }
                    self.read_after.insert(token, self.head);
                    tracing::debug!(%token, ?metadata, "token metadata");
                    match self.save(token, &metadata) {
                        Ok(()) => self.pauser.succeeded(),
                        Err(e) if e.is_io() => {
                            self.store_retry = Some(self.pauser.failed(&e));
                            failed.insert(token);
                        }
                        Err(e) => tracing::warn!(error = %e, %token, "saving token metadata failed"),
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, %token, "token metadata unavailable for now");
                    failed.insert(token);
                }
            }
        }
        failed
    }

    /// Runs until cancelled: first tokens indexed before a restart, then each block's new tokens.
    pub async fn run(mut self, cancel: CancellationToken) {
        let mut events = self.events.subscribe();
        let mut retry: BTreeSet<Address> = match self.known_tokens() {
            Ok(tokens) => tokens,
            Err(e) => {
                tracing::warn!(error = %e, "listing tokens failed");
                BTreeSet::new()
            }
        };
        let mut next_retry = tokio::time::Instant::now();
        loop {
            let event = tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep_until(next_retry), if !retry.is_empty() => {
                    retry = self.fetch(std::mem::take(&mut retry)).await;
                    next_retry = tokio::time::Instant::now() + self.retry_delay();
                    continue;
                }
                event = events.recv() => event,
            };
            let tokens = match event {
                Ok(ChainEvent::Applied(block)) => {
                    self.head = block.number();
                    block_tokens(&block)
                }
                // What was read while blocks now reverted were the chain may hold their answers (an upgrade the
                // reorg took away): those tokens are read again.
                Ok(ChainEvent::Reverted { number, .. }) => {
                    self.head = number.saturating_sub(1);
                    self.lowest_reverted = Some(self.lowest_reverted.map_or(number, |low| low.min(number)));
                    let stale: Vec<Address> =
                        self.read_after.iter().filter(|(_, read)| **read >= number).map(|(token, _)| *token).collect();
                    self.read_after.retain(|_, read| *read < number);
                    self.read_again(stale)
                }
                // Code stored for an address is a contract created there: after a reorg, maybe another one.
                Ok(ChainEvent::CodeStored { address, .. }) => {
                    let replaced = self.replaced(address).unwrap_or_else(|e| {
                        tracing::warn!(error = %e, token = %address, "reading a token's creation failed");
                        false
                    });
                    self.read_again(replaced.then_some(address))
                }
                // An upgraded proxy is read again: its implementation may name the token otherwise.
                Ok(ChainEvent::ProxyUpgraded { address }) => self.read_again([address]),
                Ok(_) => BTreeSet::new(),
                // Missed blocks: their tokens are found by a scan of the token table.
                Err(RecvError::Lagged(_)) => {
                    retry.extend(self.known_tokens().unwrap_or_default());
                    BTreeSet::new()
                }
                Err(RecvError::Closed) => return,
            };
            if !tokens.is_empty() {
                retry.extend(self.fetch(tokens).await);
                next_retry = next_retry.min(tokio::time::Instant::now() + self.retry_delay());
            }
        }
    }

    /// Tokens without metadata.
    fn known_tokens(&self) -> StoreResult<BTreeSet<Address>> {
        let reader = self.store.reader();
        let mut missing = BTreeSet::new();
        for row in reader.rows::<Tokens>() {
            let (token, _) = row?;
            if reader.get::<TokenMetadatas>(&token)?.is_none() {
                missing.insert(token);
            }
        }
        Ok(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::keccak256;

    #[test]
    fn tokens_are_found_by_the_start_of_any_word_of_their_name_and_by_their_symbol() {
        let metadata =
            |name: &str| TokenMetadata { name: Some(name.into()), symbol: Some("RCKT".into()), decimals: None };
        let rock = metadata("Rock  Token v2");
        let texts: Vec<&str> = search_texts(&rock).into_iter().collect();
        assert_eq!(texts, vec!["RCKT", "Rock  Token v2", "Token v2", "v2"]);
        let long = metadata(&"w ".repeat(100));
        assert_eq!(search_texts(&long).len(), 1 + SEARCHED_WORDS + 1, "the name, at most 8 later words, the symbol");
        let none = TokenMetadata { name: None, symbol: None, decimals: None };
        assert!(search_texts(&none).is_empty());
    }

    #[test]
    fn selectors_are_the_erc20_methods() {
        assert_eq!(NAME, keccak256("name()")[..4]);
        assert_eq!(SYMBOL, keccak256("symbol()")[..4]);
        assert_eq!(DECIMALS, keccak256("decimals()")[..4]);
    }

    #[test]
    fn texts_in_every_shape() {
        assert_eq!(decode_text(&"Demo Token".to_string().abi_encode()).as_deref(), Some("Demo Token"));
        let mut mkr = [0u8; 32];
        mkr[..3].copy_from_slice(b"MKR");
        assert_eq!(decode_text(&mkr).as_deref(), Some("MKR"));
        assert_eq!(decode_text(&[0xff; 32]), None, "invalid UTF-8");
        assert_eq!(decode_text(&[1, 2, 3]), None, "garbage");
        assert_eq!(decode_text(&[0; 32]), None, "empty");
        assert_eq!(decode_text(&"a\u{0}b\nc".to_string().abi_encode()).as_deref(), Some("abc"));
        // A symbol cannot pose as another by reversing itself or hiding characters.
        assert_eq!(decode_text(&"x\u{202E}evil\u{200B}".to_string().abi_encode()).as_deref(), Some("xevil"));
        assert_eq!(decode_text(&"x".repeat(500).abi_encode()).unwrap().len(), MAX_TEXT);
        assert_eq!(decode_text(&"\u{FE0F}\u{FE0F}".to_string().abi_encode()), None, "shows nothing");
        assert_eq!(decode_text(&"Pay\u{AD}Pal".to_string().abi_encode()).as_deref(), Some("PayPal"));
    }

    #[test]
    fn decimals_in_range_only() {
        assert_eq!(decode_decimals(&U256::from(18).to_be_bytes_vec()), Some(18));
        assert_eq!(decode_decimals(&U256::from(256).to_be_bytes_vec()), None);
        assert_eq!(decode_decimals(&[18]), None);
    }
}

//! The socket's topics, parsed once: what a client joins and what the publisher broadcasts to, with the one
//! canonical spelling (lowercase suffixes) both sides and the hub agree on.

use alloy::primitives::{Address, B256};
use std::fmt;

/// A joinable topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topic {
    /// `blocks:new_block`.
    NewBlock,
    /// `blocks:indexing`.
    BlockIndexing,
    /// `blocks:indexing_internal_transactions`.
    InternalIndexing,
    /// `blocks:<miner>`: blocks of one fee recipient.
    MinedBy(Address),
    /// `addresses:<address>`.
    Address(Address),
    /// `rewards:<address>`.
    Rewards(Address),
    /// `transactions:new_transaction`.
    NewTransaction,
    /// `transactions:new_pending_transaction`.
    NewPendingTransaction,
    /// `transactions:<suffix>`: one transaction (any suffix is joinable, as in Blockscout).
    Transaction(String),
    /// `tokens:<suffix>`.
    Token(String),
    /// `token_instances:<suffix>`.
    TokenInstance(String),
    /// `exchange_rate:new_rate`.
    ExchangeRate,
    /// `watchlist:<account>`: transactions of the addresses on an account's watchlist, joinable only by a
    /// connection authenticated as that account.
    Watchlist(Address),
}

/// Why a topic cannot be joined, in Blockscout's three ways of saying so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An address topic whose suffix is not an address.
    InvalidAddress,
    /// A known prefix with a suffix its channel does not accept.
    JoinCrashed,
    /// No channel serves this prefix.
    Unmatched,
}

fn address(s: &str) -> Option<Address> {
    let hex = s.strip_prefix("0x")?;
    (hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.parse().ok()).flatten()
}

impl Topic {
    /// Parses a client's spelling (address and hash suffixes in any letter case).
    pub fn parse(topic: &str) -> Result<Topic, Refusal> {
        let (prefix, suffix) = topic.split_once(':').ok_or(Refusal::Unmatched)?;
        let lower = || suffix.to_ascii_lowercase();
        match (prefix, suffix) {
            ("blocks", "new_block") => Ok(Topic::NewBlock),
            ("blocks", "indexing") => Ok(Topic::BlockIndexing),
            ("blocks", "indexing_internal_transactions") => Ok(Topic::InternalIndexing),
            ("blocks", s) => address(s).map(Topic::MinedBy).ok_or(Refusal::InvalidAddress),
            ("addresses", s) => address(s).map(Topic::Address).ok_or(Refusal::InvalidAddress),
            ("rewards", s) => address(s).map(Topic::Rewards).ok_or(Refusal::InvalidAddress),
            ("transactions", "new_transaction") => Ok(Topic::NewTransaction),
            ("transactions", "new_pending_transaction") => Ok(Topic::NewPendingTransaction),
            ("transactions", _) => Ok(Topic::Transaction(lower())),
            ("tokens", _) => Ok(Topic::Token(lower())),
            ("token_instances", _) => Ok(Topic::TokenInstance(lower())),
            ("exchange_rate", "new_rate") => Ok(Topic::ExchangeRate),
            ("exchange_rate", _) => Err(Refusal::JoinCrashed),
            ("watchlist", s) => address(s).map(Topic::Watchlist).ok_or(Refusal::InvalidAddress),
            _ => Err(Refusal::Unmatched),
        }
    }

    /// The topic of one transaction.
    pub fn transaction(hash: &B256) -> Topic {
        Topic::Transaction(format!("{hash:#x}"))
    }

    /// The topic of one token contract.
    pub fn token(token: &Address) -> Topic {
        Topic::Token(format!("{token:#x}"))
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topic::NewBlock => f.write_str("blocks:new_block"),
            Topic::BlockIndexing => f.write_str("blocks:indexing"),
            Topic::InternalIndexing => f.write_str("blocks:indexing_internal_transactions"),
            Topic::MinedBy(a) => write!(f, "blocks:{a:#x}"),
            Topic::Address(a) => write!(f, "addresses:{a:#x}"),
            Topic::Rewards(a) => write!(f, "rewards:{a:#x}"),
            Topic::NewTransaction => f.write_str("transactions:new_transaction"),
            Topic::NewPendingTransaction => f.write_str("transactions:new_pending_transaction"),
            Topic::Transaction(s) => write!(f, "transactions:{s}"),
            Topic::Token(s) => write!(f, "tokens:{s}"),
            Topic::TokenInstance(s) => write!(f, "token_instances:{s}"),
            Topic::ExchangeRate => f.write_str("exchange_rate:new_rate"),
            Topic::Watchlist(a) => write!(f, "watchlist:{a:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_parse_to_one_canonical_name() {
        let a: Address = "0x000000000000000000000000000000000000dEaD".parse().unwrap();
        for (spelling, canonical) in [
            ("blocks:new_block", "blocks:new_block"),
            ("blocks:0x000000000000000000000000000000000000DEAD", "blocks:0x000000000000000000000000000000000000dead"),
            (
                "addresses:0x000000000000000000000000000000000000dEaD",
                "addresses:0x000000000000000000000000000000000000dead",
            ),
            ("transactions:0xABC", "transactions:0xabc"),
            ("tokens:0xAB", "tokens:0xab"),
            ("exchange_rate:new_rate", "exchange_rate:new_rate"),
            (
                "watchlist:0x000000000000000000000000000000000000dEaD",
                "watchlist:0x000000000000000000000000000000000000dead",
            ),
        ] {
            let topic = Topic::parse(spelling).unwrap();
            assert_eq!(topic.to_string(), canonical);
            assert_eq!(Topic::parse(canonical), Ok(topic), "the canonical name parses back");
        }
        assert_eq!(Topic::parse(&Topic::Address(a).to_string()), Ok(Topic::Address(a)));
        assert_eq!(
            Topic::transaction(&B256::repeat_byte(0xab)).to_string(),
            format!("transactions:0x{}", "ab".repeat(32))
        );
        assert_eq!(Topic::parse("addresses:0xZZ"), Err(Refusal::InvalidAddress));
        assert_eq!(Topic::parse("blocks:nope"), Err(Refusal::InvalidAddress));
        assert_eq!(Topic::parse("exchange_rate:foo"), Err(Refusal::JoinCrashed));
        assert_eq!(Topic::parse("nosuch:topic"), Err(Refusal::Unmatched));
        assert_eq!(Topic::parse("phoenix"), Err(Refusal::Unmatched));
    }
}

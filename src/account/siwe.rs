//! Sign-in with Ethereum (EIP-4361): the messages this server hands out, each with a fresh single-use nonce, and
//! the check of a signed message (signer recovered with alloy's signature recovery; nonce, address, domain,
//! chain and expiry checked). Outstanding nonces are kept in memory, bounded in number and lifetime.

use alloy::primitives::{Address, Signature};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why a signed message was refused (the public reason is [`SiweError::to_string`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiweError {
    /// The message is not an EIP-4361 message of this server.
    #[error("malformed sign-in message: {0}")]
    Malformed(&'static str),
    /// The nonce was never issued, was already used, or expired.
    #[error("unknown, used or expired nonce")]
    Nonce,
    /// The message names another domain than the one it was issued for.
    #[error("wrong domain")]
    Domain,
    /// The message names another address or chain than it was issued for.
    #[error("the message does not match the one issued")]
    Mismatch,
    /// The message's expiration time has passed.
    #[error("the message has expired")]
    Expired,
    /// The signature is malformed or was not made by the message's address.
    #[error("invalid signature")]
    Signature,
    /// Too many nonces are outstanding.
    #[error("too many sign-in messages outstanding; try again later")]
    Busy,
}

/// An issued message waiting for its signature.
#[derive(Debug, Clone)]
struct Issued {
    address: Address,
    domain: String,
    chain_id: u64,
    until: Instant,
}

/// Outstanding nonces.
#[derive(Debug)]
pub struct Nonces {
    issued: Mutex<HashMap<String, Issued>>,
    max_outstanding: usize,
    lifetime: Duration,
}

/// What the verified message says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The account that signed.
    pub address: Address,
}

/// The fields of a sign-in message this server reads back.
#[derive(Debug, Default)]
struct Fields<'a> {
    domain: &'a str,
    address: &'a str,
    uri: Option<&'a str>,
    chain_id: Option<&'a str>,
    nonce: Option<&'a str>,
    expiration: Option<&'a str>,
}

fn parse(message: &str) -> Result<Fields<'_>, SiweError> {
    let mut lines = message.lines();
    let first = lines.next().ok_or(SiweError::Malformed("empty"))?;
    let domain = first
        .strip_suffix(" wants you to sign in with your Ethereum account:")
        .ok_or(SiweError::Malformed("first line"))?;
    let address = lines.next().ok_or(SiweError::Malformed("address line"))?.trim();
    let mut fields = Fields { domain, address, ..Fields::default() };
    for line in lines {
        if let Some((name, value)) = line.split_once(": ") {
            match name {
                "URI" => fields.uri = Some(value),
                "Chain ID" => fields.chain_id = Some(value),
                "Nonce" => fields.nonce = Some(value),
                "Expiration Time" => fields.expiration = Some(value),
                _ => {}
            }
        }
    }
    Ok(fields)
}

impl Nonces {
    /// At most `max_outstanding` messages waiting, each valid for `lifetime`.
    pub fn new(max_outstanding: usize, lifetime: Duration) -> Self {
        Nonces { issued: Mutex::new(HashMap::new()), max_outstanding, lifetime }
    }

    /// A fresh message for `address` to sign on `domain` (served at `uri`) for chain `chain_id`.
    pub fn issue(&self, address: Address, domain: &str, uri: &str, chain_id: u64) -> Result<String, SiweError> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|_| SiweError::Busy)?;
        let nonce = alloy::hex::encode(random);
        let now = Instant::now();
        {
            let mut issued = self.issued.lock().unwrap_or_else(|p| p.into_inner());
            if issued.len() >= self.max_outstanding {
                issued.retain(|_, i| i.until > now);
            }
            if issued.len() >= self.max_outstanding {
                return Err(SiweError::Busy);
            }
            issued.insert(
                nonce.clone(),
                Issued { address, domain: domain.to_owned(), chain_id, until: now + self.lifetime },
            );
        }
        let issued_at = crate::api::json::iso_timestamp_ms(super::now_ms());
        let expires = crate::api::json::iso_timestamp_ms(super::now_ms() + self.lifetime.as_millis() as u64);
        Ok(format!(
            "{domain} wants you to sign in with your Ethereum account:\n{address}\n\nSign in to the rockscout explorer.\n\n\
             URI: {uri}\nVersion: 1\nChain ID: {chain_id}\nNonce: {nonce}\nIssued At: {issued_at}\nExpiration Time: {expires}",
            address = address.to_checksum(None),
        ))
    }

    /// Checks a signed message: the nonce is consumed by this call whatever the outcome (a message is tried once).
    pub fn verify(&self, message: &str, signature: &str) -> Result<SignedIn, SiweError> {
        let fields = parse(message)?;
        let nonce = fields.nonce.ok_or(SiweError::Malformed("no nonce"))?;
        let issued = self.issued.lock().unwrap_or_else(|p| p.into_inner()).remove(nonce).ok_or(SiweError::Nonce)?;
        let now = Instant::now();
        if issued.until <= now {
            return Err(SiweError::Nonce);
        }
        if fields.domain != issued.domain {
            return Err(SiweError::Domain);
        }
        if fields.uri.is_none() {
            return Err(SiweError::Malformed("no URI"));
        }
        let address: Address = fields.address.parse().map_err(|_| SiweError::Malformed("address"))?;
        let chain_id: u64 = fields.chain_id.and_then(|c| c.parse().ok()).ok_or(SiweError::Malformed("chain id"))?;
        if address != issued.address || chain_id != issued.chain_id {
            return Err(SiweError::Mismatch);
        }
        let expiration = fields.expiration.ok_or(SiweError::Malformed("no expiration time"))?;
        let expires_ms = crate::api::json::parse_iso_ms(expiration).ok_or(SiweError::Malformed("expiration time"))?;
        if expires_ms <= super::now_ms() {
            return Err(SiweError::Expired);
        }
        let signature: Signature = signature.trim().parse().map_err(|_| SiweError::Signature)?;
        let signer = signature.recover_address_from_msg(message.as_bytes()).map_err(|_| SiweError::Signature)?;
        if signer != address {
            return Err(SiweError::Signature);
        }
        Ok(SignedIn { address })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::signers::{local::PrivateKeySigner, SignerSync};

    fn signer() -> PrivateKeySigner {
        // anvil's first development key.
        "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80".parse().unwrap()
    }

    fn sign(message: &str) -> String {
        signer().sign_message_sync(message.as_bytes()).unwrap().to_string()
    }

    #[test]
    fn a_signed_message_signs_in_once() {
        let nonces = Nonces::new(10, Duration::from_secs(60));
        let me = signer().address();
        let message = nonces.issue(me, "explorer.test", "http://explorer.test", 713_714).unwrap();
        let signature = sign(&message);
        assert_eq!(nonces.verify(&message, &signature), Ok(SignedIn { address: me }));
        assert_eq!(nonces.verify(&message, &signature), Err(SiweError::Nonce), "replay");
    }

    #[test]
    fn tampered_expired_or_foreign_messages_are_refused() {
        let nonces = Nonces::new(10, Duration::from_secs(60));
        let me = signer().address();
        let issue = || nonces.issue(me, "explorer.test", "http://explorer.test", 1).unwrap();
        let message = issue().replace("explorer.test wants", "evil.test wants");
        assert_eq!(nonces.verify(&message, &sign(&message)), Err(SiweError::Domain));
        let message = issue();
        let line = message.lines().find(|l| l.starts_with("Expiration Time: ")).unwrap().to_owned();
        let message = message.replace(&line, "Expiration Time: 2020-01-01T00:00:00.000Z");
        assert_eq!(nonces.verify(&message, &sign(&message)), Err(SiweError::Expired));
        let message = issue();
        let other: PrivateKeySigner =
            "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d".parse().unwrap();
        let forged = other.sign_message_sync(message.as_bytes()).unwrap().to_string();
        assert_eq!(nonces.verify(&message, &forged), Err(SiweError::Signature));
        assert_eq!(nonces.verify("hello", "0x00"), Err(SiweError::Malformed("first line")));
    }

    #[test]
    fn outstanding_nonces_are_bounded() {
        let nonces = Nonces::new(2, Duration::from_secs(60));
        for _ in 0..2 {
            nonces.issue(Address::ZERO, "d", "u", 1).unwrap();
        }
        assert_eq!(nonces.issue(Address::ZERO, "d", "u", 1), Err(SiweError::Busy));
    }
}

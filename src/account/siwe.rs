//! Sign-in with Ethereum (EIP-4361): the messages this server hands out, each with a fresh single-use nonce, and
//! the check of a signed message: it must be, byte for byte, the message issued with its nonce (so its domain,
//! URI, statement, address, chain and times are the server's), within that message's lifetime, signed by its
//! address (recovered with alloy's signature recovery). Outstanding messages are kept in memory, bounded per client
//! and in all: past a bound the oldest is dropped, so a client asking for many cannot lock others out.

use alloy::primitives::{Address, Signature};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Messages one client may have outstanding; a further one drops its oldest.
const PER_CLIENT: usize = 16;

/// Why a signed message was refused (the public reason is [`SiweError::to_string`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiweError {
    /// The message has no nonce line.
    #[error("malformed sign-in message: {0}")]
    Malformed(&'static str),
    /// The nonce was never issued, was already used, or its message expired (or was dropped for newer ones).
    #[error("unknown, used or expired nonce")]
    Nonce,
    /// The message differs from the one issued with its nonce.
    #[error("the message does not match the one issued")]
    Mismatch,
    /// The signature is malformed or was not made by the message's address.
    #[error("invalid signature")]
    Signature,
    /// The system's random source failed, so no nonce can be made.
    #[error("no randomness for a nonce")]
    NoRandomness,
}

/// An issued message waiting for its signature.
#[derive(Debug, Clone)]
struct Issued {
    message: String,
    address: Address,
    client: IpAddr,
    until: Instant,
}

/// Outstanding messages by nonce.
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

/// The nonce line's value.
fn nonce_of(message: &str) -> Option<&str> {
    message.lines().find_map(|line| line.strip_prefix("Nonce: "))
}

impl Nonces {
    /// At most `max_outstanding` messages waiting in all (and [`PER_CLIENT`] per client), each valid for `lifetime`.
    pub fn new(max_outstanding: usize, lifetime: Duration) -> Self {
        Nonces { issued: Mutex::new(HashMap::new()), max_outstanding: max_outstanding.max(1), lifetime }
    }

    /// A fresh message for `address` to sign on `domain` (served at `uri`) for chain `chain_id`, asked for by
    /// `client`.
    pub fn issue(
        &self,
        client: IpAddr,
        address: Address,
        domain: &str,
        uri: &str,
        chain_id: u64,
    ) -> Result<String, SiweError> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|_| SiweError::NoRandomness)?;
        let nonce = alloy::hex::encode(random);
        let issued_at = crate::api::json::iso_timestamp_ms(super::now_ms());
        let expires = crate::api::json::iso_timestamp_ms(super::now_ms() + self.lifetime.as_millis() as u64);
        let message = format!(
            "{domain} wants you to sign in with your Ethereum account:\n{address}\n\nSign in to the rockscout explorer.\n\n\
             URI: {uri}\nVersion: 1\nChain ID: {chain_id}\nNonce: {nonce}\nIssued At: {issued_at}\nExpiration Time: {expires}",
            address = address.to_checksum(None),
        );
        let now = Instant::now();
        let mut issued = self.issued.lock().unwrap_or_else(|p| p.into_inner());
        if issued.values().filter(|i| i.client == client).count() >= PER_CLIENT {
            let oldest = issued.iter().filter(|(_, i)| i.client == client).min_by_key(|(_, i)| i.until);
            if let Some(nonce) = oldest.map(|(n, _)| n.clone()) {
                issued.remove(&nonce);
            }
        }
        if issued.len() >= self.max_outstanding {
            issued.retain(|_, i| i.until > now);
        }
        if issued.len() >= self.max_outstanding {
            if let Some(nonce) = issued.iter().min_by_key(|(_, i)| i.until).map(|(n, _)| n.clone()) {
                issued.remove(&nonce);
            }
        }
        issued.insert(nonce, Issued { message: message.clone(), address, client, until: now + self.lifetime });
        Ok(message)
    }

    /// Checks a signed message: the nonce is consumed by this call whatever the outcome (a message is tried once).
    pub fn verify(&self, message: &str, signature: &str) -> Result<SignedIn, SiweError> {
        let nonce = nonce_of(message).ok_or(SiweError::Malformed("no nonce"))?;
        let issued = self.issued.lock().unwrap_or_else(|p| p.into_inner()).remove(nonce).ok_or(SiweError::Nonce)?;
        if issued.until <= Instant::now() {
            return Err(SiweError::Nonce);
        }
        if message != issued.message {
            return Err(SiweError::Mismatch);
        }
        let signature: Signature = signature.trim().parse().map_err(|_| SiweError::Signature)?;
        let signer = signature.recover_address_from_msg(message.as_bytes()).map_err(|_| SiweError::Signature)?;
        if signer != issued.address {
            return Err(SiweError::Signature);
        }
        Ok(SignedIn { address: issued.address })
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

    fn client(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn a_signed_message_signs_in_once() {
        let nonces = Nonces::new(10, Duration::from_secs(60));
        let me = signer().address();
        let message = nonces.issue(client(1), me, "explorer.test", "http://explorer.test", 713_714).unwrap();
        let signature = sign(&message);
        assert_eq!(nonces.verify(&message, &signature), Ok(SignedIn { address: me }));
        assert_eq!(nonces.verify(&message, &signature), Err(SiweError::Nonce), "replay");
    }

    /// Only the message issued with the nonce signs in: another domain, URI or statement (a phishing page's own
    /// words around a nonce it asked for), a message past its lifetime, or another signer is refused.
    #[test]
    fn tampered_expired_or_foreign_messages_are_refused() {
        let nonces = Nonces::new(10, Duration::from_secs(60));
        let me = signer().address();
        let issue = || nonces.issue(client(1), me, "explorer.test", "http://explorer.test", 1).unwrap();
        for (from, to) in [
            ("explorer.test wants", "evil.test wants"),
            ("URI: http://explorer.test", "URI: https://evil.test/claim"),
            ("Sign in to the rockscout explorer.", "Transfer all funds."),
            ("\nVersion: 1", ""),
        ] {
            let message = issue();
            let tampered = message.replace(from, to);
            assert_ne!(tampered, message);
            assert_eq!(nonces.verify(&tampered, &sign(&tampered)), Err(SiweError::Mismatch), "{to}");
        }
        let short = Nonces::new(10, Duration::ZERO);
        let message = short.issue(client(1), me, "explorer.test", "http://explorer.test", 1).unwrap();
        assert_eq!(short.verify(&message, &sign(&message)), Err(SiweError::Nonce), "expired");
        let message = issue();
        let other: PrivateKeySigner =
            "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d".parse().unwrap();
        let forged = other.sign_message_sync(message.as_bytes()).unwrap().to_string();
        assert_eq!(nonces.verify(&message, &forged), Err(SiweError::Signature));
        assert_eq!(nonces.verify("hello", "0x00"), Err(SiweError::Malformed("no nonce")));
    }

    /// A client asking for many messages drops only its own oldest; when all outstanding messages reach the bound,
    /// the oldest of all goes, so nobody is refused a message.
    #[test]
    fn outstanding_messages_are_bounded_per_client_and_in_all() {
        let nonces = Nonces::new(PER_CLIENT + 2, Duration::from_secs(60));
        let me = signer().address();
        let issue = |c: u8| nonces.issue(client(c), me, "d", "u", 1).unwrap();
        let mine = issue(1);
        let theirs: Vec<String> = (0..PER_CLIENT).map(|_| issue(2)).collect();
        let newest = issue(2);
        assert_eq!(nonces.verify(&theirs[0], &sign(&theirs[0])), Err(SiweError::Nonce), "client 2's oldest dropped");
        assert_eq!(nonces.verify(&theirs[1], &sign(&theirs[1])), Ok(SignedIn { address: me }));
        assert_eq!(nonces.verify(&mine, &sign(&mine)), Ok(SignedIn { address: me }), "client 1's stays");
        // 15 outstanding (client 2's); three more clients fill the bound of 18, a fourth drops the oldest of all.
        let (a, b, c, d) = (issue(3), issue(4), issue(5), issue(6));
        assert_eq!(nonces.verify(&theirs[2], &sign(&theirs[2])), Err(SiweError::Nonce), "the oldest of all dropped");
        for message in [a, b, c, d, newest] {
            assert_eq!(nonces.verify(&message, &sign(&message)), Ok(SignedIn { address: me }));
        }
    }
}

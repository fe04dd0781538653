//! Demo traffic for `rockscout dev`: ether transfers between the dev accounts, a contract deployment and calls to
//! it (some of which revert), so a newcomer sees a live explorer at once.

use super::contracts::Demo;
use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, U256};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A small deterministic pseudo-random sequence (xorshift64*), enough to vary demo traffic.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A sequence from `seed` (0 is replaced by a fixed odd constant).
    pub fn new(seed: u64) -> Self {
        Rng(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed })
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Sends demo transactions every `interval` until cancelled. Failures are logged and the next round goes on.
pub async fn run(rpc_url: String, signers: Vec<PrivateKeySigner>, interval: Duration, cancel: CancellationToken) {
    if signers.len() < 2 {
        tracing::warn!("demo traffic needs at least two dev accounts");
        return;
    }
    let accounts: Vec<Address> = signers.iter().map(|s| s.address()).collect();
    let mut wallet = EthereumWallet::new(signers[0].clone());
    for signer in &signers[1..] {
        wallet.register_signer(signer.clone());
    }
    let Ok(url) = rpc_url.parse() else {
        tracing::warn!(%rpc_url, "demo traffic: bad node url");
        return;
    };
    let provider = ProviderBuilder::new().wallet(wallet).connect_http(url);
    let mut rng = Rng::new(0x5eed);
    let mut demo: Option<Address> = None;
    let mut round = 0u64;
    loop {
        round += 1;
        if let Err(e) = traffic_round(&provider, &accounts, &mut rng, &mut demo, round).await {
            tracing::warn!(error = %e, round, "demo traffic round failed");
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

async fn traffic_round<P: Provider>(
    provider: &P,
    accounts: &[Address],
    rng: &mut Rng,
    demo: &mut Option<Address>,
    round: u64,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let n = accounts.len() as u64;
    // Distinct senders per round, so nonces never collide.
    let mut senders: Vec<usize> = (0..accounts.len()).collect();
    for i in (1..senders.len()).rev() {
        senders.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut senders = senders.into_iter();
    for _ in 0..1 + rng.below(3) {
        let (Some(from), to) = (senders.next(), rng.below(n) as usize) else {
            break;
        };
        let value = U256::from(1 + rng.below(1000)) * U256::from(10u64.pow(15));
        let tx = TransactionRequest::default().with_from(accounts[from]).with_to(accounts[to]).with_value(value);
        let _ = provider.send_transaction(tx).await?;
    }
    let Some(sender) = senders.next() else {
        return Ok(());
    };
    let from = accounts[sender];
    match *demo {
        None => {
            let deployed = Demo::deploy_builder(provider).from(from).send().await?.get_receipt().await?;
            *demo = deployed.contract_address;
            tracing::info!(contract = ?demo, "demo contract deployed");
        }
        Some(address) => {
            let contract = Demo::new(address, provider);
            let _ = contract.poke(format!("hello #{round}")).from(from).send().await?;
            if let Some(other) = senders.next() {
                // Every fifth value reverts ("Demo: multiple of five"); a fixed gas limit lets it be mined anyway.
                let x = U256::from(1 + rng.below(10));
                let _ = contract.mayFail(x).from(accounts[other]).gas(100_000).send().await?;
            }
        }
    }
    Ok(())
}

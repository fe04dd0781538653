//! Demo traffic for `rockscout dev`: ether transfers between the dev accounts, a demo contract (calls, events,
//! reverts), one token of each standard (ERC-20 transfers and burns, ERC-721 mints and transfers, ERC-1155
//! single and batch transfers) and a factory whose calls make internal transactions (creations, nested reverts,
//! inner value transfers, delegate and static calls), so a newcomer sees every page of the explorer come alive.

use super::contracts::{Demo, DemoFactory, DemoMulti, DemoNft, DemoToken};
use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

type TrafficError = Box<dyn std::error::Error + Send + Sync>;

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

/// The contracts the traffic uses.
#[derive(Debug, Clone, Copy)]
struct Deployed {
    demo: Address,
    token: Address,
    nft: Address,
    multi: Address,
    factory: Address,
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
    let mut deployed = None;
    let mut round = 0u64;
    loop {
        round += 1;
        let result = match deployed {
            None => deploy(&provider, accounts[0]).await.map(|d| deployed = Some(d)),
            Some(d) => traffic_round(&provider, &accounts, &mut rng, d, round).await,
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, round, "demo traffic round failed");
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

/// The name of the demo token that tries script injection through its metadata.
pub const HOSTILE_NAME: &str = "<img src=x onerror=alert(1)>";
/// Its symbol.
pub const HOSTILE_SYMBOL: &str = "\"><script>alert(2)</script>";

async fn deploy<P: Provider>(provider: &P, owner: Address) -> Result<Deployed, TrafficError> {
    let created = |receipt: alloy::rpc::types::TransactionReceipt| {
        receipt.contract_address.ok_or_else(|| TrafficError::from("deployment created no contract"))
    };
    let demo = created(Demo::deploy_builder(provider).from(owner).send().await?.get_receipt().await?)?;
    let supply = U256::from(1_000_000u64) * U256::from(10u64).pow(U256::from(18));
    let token = DemoToken::deploy_builder(provider, "Demo Token".into(), "DEMO".into(), supply).from(owner);
    let token = created(token.send().await?.get_receipt().await?)?;
    // A token whose name and symbol are markup: the explorer pages must show them as text.
    let hostile = DemoToken::deploy_builder(provider, HOSTILE_NAME.into(), HOSTILE_SYMBOL.into(), supply).from(owner);
    let hostile = created(hostile.send().await?.get_receipt().await?)?;
    tracing::info!(%hostile, "token with an HTML/JS name deployed");
    let nft = DemoNft::deploy_builder(provider, "Demo NFT".into(), "DNFT".into()).from(owner);
    let nft = created(nft.send().await?.get_receipt().await?)?;
    let multi = created(DemoMulti::deploy_builder(provider).from(owner).send().await?.get_receipt().await?)?;
    let factory = created(DemoFactory::deploy_builder(provider).from(owner).send().await?.get_receipt().await?)?;
    // A first child, so every factory call below has one to work with.
    let _ = DemoFactory::new(factory, provider).spawn(U256::from(1)).from(owner).send().await?.get_receipt().await?;
    tracing::info!(%demo, %token, %nft, %multi, %factory, "demo contracts deployed");
    Ok(Deployed { demo, token, nft, multi, factory })
}

async fn traffic_round<P: Provider>(
    provider: &P,
    accounts: &[Address],
    rng: &mut Rng,
    c: Deployed,
    round: u64,
) -> Result<(), TrafficError> {
    let n = accounts.len() as u64;
    let owner = accounts[0];
    let mut anyone = || accounts[1 + rng.below(n - 1) as usize];
    // Ether.
    for _ in 0..2 {
        let (from, to) = (anyone(), anyone());
        let value = U256::from(1 + round % 1000) * U256::from(10u64.pow(15));
        let _ = provider
            .send_transaction(TransactionRequest::default().with_from(from).with_to(to).with_value(value))
            .await?;
    }
    // The demo contract: an event, and a call that reverts every fifth value (a fixed gas limit gets it mined).
    let demo = Demo::new(c.demo, provider);
    let _ = demo.poke(format!("hello #{round}")).from(anyone()).send().await?;
    let _ = demo.mayFail(U256::from(1 + round % 10)).from(anyone()).gas(100_000).send().await?;
    // ERC-20: the owner pays someone, who sometimes pays on; now and then the owner burns.
    let token = DemoToken::new(c.token, provider);
    let holder = anyone();
    let _ = token.transfer(holder, U256::from(1 + round % 97) * U256::from(10u64.pow(18))).from(owner).send().await?;
    if round.is_multiple_of(3) {
        let _ = token.transfer(anyone(), U256::from(10u64.pow(17))).from(holder).gas(100_000).send().await?;
    }
    if round.is_multiple_of(5) {
        let _ = token.burn(U256::from(10u64.pow(18))).from(owner).send().await?;
    }
    // ERC-721: a new id for the owner, handed to someone.
    let nft = DemoNft::new(c.nft, provider);
    let id = nft.nextId().call().await?;
    let _ = nft.mint(owner).from(owner).send().await?;
    let _ = nft.transferFrom(owner, anyone(), id).from(owner).gas(100_000).send().await?;
    // ERC-1155: mint an id to the owner, give part of it away; every fourth round a batch.
    let multi = DemoMulti::new(c.multi, provider);
    let item = U256::from(round % 5);
    let _ = multi.mint(owner, item, U256::from(100)).from(owner).send().await?;
    let _ = multi.safeTransferFrom(owner, anyone(), item, U256::from(7), Bytes::new()).from(owner).send().await?;
    if round.is_multiple_of(4) {
        let ids = vec![U256::from(1), U256::from(2)];
        let values = vec![U256::from(1), U256::from(1)];
        let batch = multi.safeBatchTransferFrom(owner, anyone(), ids, values, Bytes::new());
        let _ = batch.from(owner).gas(200_000).send().await?;
    }
    // The factory: one kind of internal-transaction pattern per round (failing ones get a fixed gas limit).
    let factory = DemoFactory::new(c.factory, provider);
    let child = factory.last().call().await?;
    let wei = U256::from(round % 1000 + 1) * U256::from(10u64.pow(12));
    let _ = match round % 6 {
        0 => factory.spawn(U256::from(round)).value(wei).from(anyone()).send().await?,
        1 => factory.tryBoom(child).from(anyone()).send().await?,
        2 => factory.relay(child, anyone()).value(wei).from(anyone()).send().await?,
        3 => factory.delegate(child, U256::from(round)).from(anyone()).send().await?,
        4 => factory.boom(child).from(anyone()).gas(200_000).send().await?,
        _ => factory.spawn2(alloy::primitives::B256::from(U256::from(round))).from(anyone()).send().await?,
    };
    Ok(())
}

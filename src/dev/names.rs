//! The devnet's name service: deploys the registry, resolver, `.dev` registrar and `addr.reverse` registrar of
//! `src/dev/contracts/Names.sol`, and gives dev accounts names (forward and reverse), so the explorer shows names
//! from the first block it indexes. Each transaction is mined at once (`evm_mine`) instead of waiting for the
//! devnet's block time.

use super::contracts::{NameRegistrar, NameRegistry, NameResolver, ReverseRegistrar};
use crate::chain::names::{labelhash, namehash};
use alloy::network::{Ethereum, EthereumWallet};
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{PendingTransactionBuilder, Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;

/// Names the devnet gives its first accounts, in account order (`alice.dev` is the first account).
pub const DEV_NAMES: [&str; 4] = ["alice", "bob", "carol", "dave"];

/// A registration's lifetime: one year.
const REGISTRATION_SECONDS: u64 = 365 * 24 * 3600;

type NamesError = Box<dyn std::error::Error + Send + Sync>;

/// Where the name contracts live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevNameService {
    /// The registry (`--name-registry`).
    pub registry: Address,
    /// The public resolver.
    pub resolver: Address,
    /// The registrar of `*.dev`.
    pub registrar: Address,
    /// The registrar of `addr.reverse`.
    pub reverse: Address,
}

/// Mines `pending` now and checks that it succeeded.
async fn mined<P: Provider>(
    provider: &P,
    pending: PendingTransactionBuilder<Ethereum>,
) -> Result<alloy::rpc::types::TransactionReceipt, NamesError> {
    let _: serde_json::Value = provider.raw_request("evm_mine".into(), ()).await?;
    let receipt = pending.get_receipt().await?;
    if !receipt.status() {
        return Err(format!("name service transaction {} reverted", receipt.transaction_hash).into());
    }
    Ok(receipt)
}

/// Deploys the name service with `signers[0]` owning the root, and registers `labels[i]`.dev for `signers[i]` with
/// its reverse record.
pub async fn deploy(
    rpc_url: &str,
    signers: &[PrivateKeySigner],
    labels: &[&str],
) -> Result<DevNameService, NamesError> {
    let owner = signers.first().ok_or("no dev account")?.address();
    let mut wallet = EthereumWallet::new(signers[0].clone());
    for signer in &signers[1..] {
        wallet.register_signer(signer.clone());
    }
    let provider = ProviderBuilder::new().wallet(wallet).connect_http(rpc_url.parse()?);
    let p = &provider;
    let created = |receipt: alloy::rpc::types::TransactionReceipt| {
        receipt.contract_address.ok_or_else(|| NamesError::from("deployment created no contract"))
    };
    let registry = created(mined(p, NameRegistry::deploy_builder(p).from(owner).send().await?).await?)?;
    let resolver = created(mined(p, NameResolver::deploy_builder(p, registry).from(owner).send().await?).await?)?;
    let registrar = NameRegistrar::deploy_builder(p, registry, resolver, namehash("dev")).from(owner);
    let registrar = created(mined(p, registrar.send().await?).await?)?;
    let reverse =
        created(mined(p, ReverseRegistrar::deploy_builder(p, registry, resolver).from(owner).send().await?).await?)?;
    let root = NameRegistry::new(registry, p);
    mined(p, root.setSubnodeOwner(B256::ZERO, labelhash("dev"), registrar).from(owner).send().await?).await?;
    mined(p, root.setSubnodeOwner(B256::ZERO, labelhash("reverse"), owner).from(owner).send().await?).await?;
    let addr_reverse = root.setSubnodeOwner(namehash("reverse"), labelhash("addr"), reverse).from(owner);
    mined(p, addr_reverse.send().await?).await?;
    let service = DevNameService { registry, resolver, registrar, reverse };
    for (signer, label) in signers.iter().zip(labels) {
        register(rpc_url, &service, signer.address(), label, signers).await?;
    }
    Ok(service)
}

/// Registers `label`.dev for `account` (one of `signers`) and points its reverse record at it.
pub async fn register(
    rpc_url: &str,
    service: &DevNameService,
    account: Address,
    label: &str,
    signers: &[PrivateKeySigner],
) -> Result<(), NamesError> {
    let signer = signers.iter().find(|s| s.address() == account).ok_or("no key for the account")?;
    let provider = ProviderBuilder::new().wallet(EthereumWallet::new(signer.clone())).connect_http(rpc_url.parse()?);
    let registrar = NameRegistrar::new(service.registrar, &provider);
    let registration = registrar.register(label.to_owned(), account, U256::from(REGISTRATION_SECONDS)).from(account);
    mined(&provider, registration.send().await?).await?;
    let reverse = ReverseRegistrar::new(service.reverse, &provider);
    mined(&provider, reverse.setName(format!("{label}.dev")).from(account).send().await?).await?;
    Ok(())
}

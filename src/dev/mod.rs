//! `rockscout dev`: a local anvil devnet (chain id 713714), indexed and served, with demo traffic.

pub mod anvil;
pub mod contracts;
pub mod names;
pub mod traffic;

use crate::config::{Config, DevArgs};
use crate::indexer::ResetPolicy;
use crate::{Daemon, RunError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The devnet's account: anvil's first development address, with a fresh token (the previous run's tokens of
/// that account are revoked first, since account data outlives the devnet's chain). Printed with the URLs so a
/// newcomer can call the write routes (`Authorization: Bearer <token>`) right away.
fn dev_account_token(daemon: &Daemon, address: alloy::primitives::Address) -> Result<String, RunError> {
    let accounts = crate::account::Accounts::new(daemon.store().clone());
    let failed = |e: crate::account::AccountError| RunError::Task(format!("creating the dev account: {e}"));
    accounts.revoke_tokens_of(address).map_err(failed)?;
    accounts.mint_token(address, "dev", None, false).map_err(failed)
}

/// Runs the devnet, the daemon and the traffic until `cancel` fires.
pub async fn run(args: DevArgs, cancel: CancellationToken) -> Result<(), RunError> {
    let bin = anvil::locate(args.anvil_bin.as_deref())?;
    let tools = bin
        .ancestors()
        .find(|dir| !crate::contracts::verifier::Compilers::new(Some(dir.to_path_buf())).versions().is_empty())
        .map(std::path::Path::to_path_buf);
    let options = anvil::AnvilOptions { block_time: Some(args.block_time), ..Default::default() };
    let node = tokio::task::spawn_blocking(move || anvil::Anvil::spawn(&bin, &options))
        .await
        .map_err(|e| RunError::Task(e.to_string()))??;
    // Every devnet is a new chain: start the index afresh and follow resets (`anvil_reset`) by reindexing.
    // The name service first, so the dev accounts have names from the first indexed blocks.
    let signers = node.signers();
    let labels = &names::DEV_NAMES[..names::DEV_NAMES.len().min(signers.len())];
    let service = names::deploy(&node.http_url(), &signers, labels)
        .await
        .map_err(|e| RunError::Task(format!("deploying the dev name service: {e}")))?;
    let mut config = Config::from_args(node.http_url(), Some(node.ws_url()), &args.daemon);
    config.name_registry = Some(service.registry);
    config.reindex = true;
    if args.daemon.metrics_listen.is_none() {
        // Many devnets may run side by side (tests, several checkouts): a free port unless one is asked for.
        config.metrics_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    }
    config.indexer.on_reset = ResetPolicy::Reindex;
    // anvil traces: the devnet shows internal transactions too.
    config.tracing = true;
    config.api.rpc.allow_debug = true;
    // The demo contracts are known by their build artifacts: names and decoded calls from the first block.
    config.demo_artifacts = true;
    // Verification compiles with the pinned solc wrappers next to the pinned anvil (scripts/tools).
    if config.compilers_dir.is_none() {
        config.compilers_dir = tools;
    }
    let daemon = Daemon::start(&config).await?;
    let base = format!("http://{}", daemon.addr());
    let token = dev_account_token(&daemon, node.addresses()[0])?;
    tracing::info!(
        node = %node.http_url(),
        account = %node.addresses()[0],
        account_info = %format!("{base}/api/account/v2/user/info"),
        rest = %format!("{base}/api/v2/stats"),
        rpc = %format!("{base}/api/eth"),
        websocket = %format!("ws://{}/socket/v2/websocket?vsn=2.0.0", daemon.addr()),
        name_registry = %service.registry,
        metrics = %daemon.metrics_addr().map_or_else(|| "off".to_owned(), |a| format!("http://{a}/metrics")),
        "devnet running (chain id {}); Ctrl-C stops it",
        anvil::DEV_CHAIN_ID
    );
    // The token goes to stdout, never into the log.
    println!(
        "dev account {}: Authorization: Bearer {token}\n  e.g. curl -H 'Authorization: Bearer {token}' {base}/api/account/v2/user/info",
        node.addresses()[0]
    );
    if config.api.ui {
        println!("explorer: open {base}/ in a browser");
    }
    if !args.no_traffic {
        let interval = Duration::from_secs(args.block_time.max(1));
        tokio::spawn(traffic::run(node.http_url(), node.signers(), interval, cancel.clone()));
    }
    let result = daemon.run_until(cancel).await;
    drop(node);
    result
}

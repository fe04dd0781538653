//! `rockscout account token | revoke | list`: account tokens managed offline, against the data directory.
//! RocksDB allows one process per data directory, so a running daemon makes these commands fail with a message
//! saying so.

use super::{now_ms, Accounts};
use crate::api::json::{checksum, iso_timestamp_ms};
use crate::config::{AccountArgs, AccountCommand};
use crate::store::{Store, StoreError, StoreOptions};
use std::sync::Arc;

/// Why an account command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Another process (the daemon) has the store open.
    #[error("the data directory {0} is in use by a running rockscout; stop it first (account commands work offline)")]
    Locked(String),
    /// The store could not be opened or written.
    #[error("store at {path}: {source}")]
    Store {
        /// Data directory.
        path: String,
        /// Cause.
        source: StoreError,
    },
    /// The operation was refused.
    #[error(transparent)]
    Account(#[from] super::AccountError),
    /// Bad arguments.
    #[error("{0}")]
    Usage(String),
}

/// Runs one account command; returns what to print.
pub fn run(args: &AccountArgs) -> Result<String, CliError> {
    let path = args.data_dir.display().to_string();
    let store = Store::open_existing(&args.data_dir, &StoreOptions::default()).map_err(|source| match &source {
        StoreError::InUse(_) => CliError::Locked(path.clone()),
        _ => CliError::Store { path: path.clone(), source },
    })?;
    let accounts = Accounts::new(Arc::new(store));
    match &args.command {
        AccountCommand::Token { address, name, expires } => {
            let expires_ms = expires.map(|d| now_ms() + d.as_millis() as u64);
            let token = accounts.mint_token(*address, name, expires_ms, false)?;
            Ok(format!("{token}\n"))
        }
        AccountCommand::Revoke { id: Some(id), .. } => {
            let id = u64::from_str_radix(id.trim_start_matches("0x"), 16)
                .map_err(|_| CliError::Usage(format!("`{id}` is not a token id (16 hex digits)")))?;
            match accounts.revoke_token(id)? {
                true => Ok(format!("revoked {id:016x}\n")),
                false => Err(CliError::Usage(format!("no token with id {id:016x}"))),
            }
        }
        AccountCommand::Revoke { address: Some(address), .. } => {
            // Every credential of the account: its tokens and its API keys.
            let tokens = accounts.revoke_tokens_of(*address)?;
            let keys = accounts.revoke_api_keys_of(*address)?;
            Ok(format!("revoked {tokens} token(s) and {keys} API key(s) of {}\n", checksum(address)))
        }
        AccountCommand::Revoke { .. } => Err(CliError::Usage("give --id or --address".into())),
        AccountCommand::List => {
            let mut out = String::from("id\taccount\tname\tcreated\texpires\n");
            for t in accounts.tokens()? {
                let expires = t.record.expires_ms.map_or_else(|| "never".to_owned(), iso_timestamp_ms);
                out.push_str(&format!(
                    "{:016x}\t{}\t{}\t{}\t{}\n",
                    t.id,
                    checksum(&t.record.owner),
                    t.record.name,
                    iso_timestamp_ms(t.record.created_ms),
                    expires
                ));
            }
            Ok(out)
        }
    }
}

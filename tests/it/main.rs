//! The integration test binary: real anvil nodes, real RocksDB, the daemon in-process (or as a process where a
//! test kills it).

mod accounts;
mod api;
mod catchup_fetch;
mod contracts;
mod core;
mod crash;
mod dev;
mod etherscan;
mod full_disk;
mod hardening_conn;
mod hardening_rpc;
mod metrics;
mod names;
mod outage;
mod parity_events;
mod parity_filters;
mod parity_routes;
mod pending;
mod protection;
mod reorg;
mod reset;
mod rpc;
mod secondary;
mod snapshot;
mod support;
mod sync;
mod tokens;
mod traces;
mod ui;
mod verification;
mod ws;

//! `rockscout serve --secondary-of DATA_DIR`: a read replica. It opens a primary's store as a RocksDB secondary
//! instance ([`Store::open_secondary`]), catches up with it on a short interval, and serves the same REST,
//! WebSocket, pages and `/api/eth` as the primary, without an indexer: routes that store something are refused
//! ([`crate::api::ApiError::ReadReplica`]).
//!
//! WebSocket events come from the store: after each catch-up that moved the tip, the blocks the primary committed
//! since the last one are loaded from the store and published as [`ChainEvent::Applied`] (the same publisher as the
//! primary's then builds `new_block`, `transaction`, address, token and balance broadcasts from them); a stored hash
//! that changed at a height already announced is a reorg and gives [`ChainEvent::Reverted`] first (one deeper than
//! the heights remembered, as just after a start, is followed down the old branch through the primary's records of
//! the blocks it reverted, so every replacement block is published). At most
//! [`ReplicaOptions::event_blocks`] blocks are published per catch-up: older ones of a larger gap are skipped
//! (logged). Pool transactions the primary's pending-pool follower recorded since the last catch-up (found by their
//! arrival time) are published as [`ChainEvent::Pending`], and each block the trace pass finished since then as
//! [`ChainEvent::Traced`] (at most [`ReplicaOptions::event_blocks`] of them). The code writer's events are not
//! replayed.

use crate::api::{self, AppState};
use crate::events::{self, ChainEvent, EventSender};
use crate::indexer::pending::MAX_PENDING;
use crate::node::Node;
use crate::status::{Status, StatusSnapshot};
use crate::store::keys::{PendingKey, ReorgedKey};
use crate::store::records::PendingTxRecord;
use crate::store::tables::{Pending, Reorged};
use crate::store::{Reader, Store, StoreError, StoreOptions};
use crate::{contracts, metrics, Config, RunError};
use alloy::primitives::B256;
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How a replica follows its primary.
#[derive(Debug, Clone)]
pub struct ReplicaOptions {
    /// The primary's data directory.
    pub primary: PathBuf,
    /// The secondary instance's own directory (`None`: a new owner-only temporary directory, removed on exit).
    pub secondary_dir: Option<PathBuf>,
    /// Time between two catch-ups with the primary.
    pub catch_up_interval: Duration,
    /// Most blocks whose events one catch-up publishes (the newest ones of a larger gap).
    pub event_blocks: u64,
}

impl ReplicaOptions {
    /// Options for a replica of `primary` with the defaults of `rockscout serve`.
    pub fn new(primary: impl Into<PathBuf>) -> ReplicaOptions {
        ReplicaOptions {
            primary: primary.into(),
            secondary_dir: None,
            catch_up_interval: Duration::from_millis(100),
            event_blocks: 64,
        }
    }
}

/// Name prefix of the temporary secondary directories replicas make (followed by the process id and a nonce).
const TEMP_DIR_PREFIX: &str = "rockscout-secondary-";

/// The file a replica holds locked (`flock`) in the temporary directory it made, for as long as it runs: a later
/// replica that can take the lock knows the owner is gone (killed before it could remove the directory). A lock,
/// not the process id, because a process id may be reused or belong to another PID namespace sharing `/tmp`.
const OWNER_LOCK: &str = "owner.lock";

/// The secondary instance's directory; removed on drop when the replica created it.
#[derive(Debug)]
struct SecondaryDir {
    path: PathBuf,
    created: bool,
    /// The locked [`OWNER_LOCK`] of a directory this replica made (released after the directory is removed).
    _owner: Option<std::fs::File>,
}

impl SecondaryDir {
    /// The directory for a secondary of `primary`: `wanted`, created owner-only if missing, or a new one under
    /// the system's temporary directory (after removing those of replicas that were killed). The primary's own
    /// directory is refused: RocksDB would write the secondary's info log over the primary's.
    fn prepare(primary: &Path, wanted: Option<&Path>) -> std::io::Result<SecondaryDir> {
        use std::os::unix::fs::DirBuilderExt;
        if let Some(path) = wanted {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)?;
            if std::fs::canonicalize(primary).is_ok_and(|p| std::fs::canonicalize(path).is_ok_and(|s| s == p)) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "it is the primary's data directory; a replica needs a directory of its own",
                ));
            }
            return Ok(SecondaryDir { path: path.to_owned(), created: false, _owner: None });
        }
        let temp = std::env::temp_dir();
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(std::io::Error::other)?;
        let path = temp.join(format!("{TEMP_DIR_PREFIX}{}-{}", std::process::id(), alloy::hex::encode(nonce)));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        let dir = SecondaryDir { _owner: Some(lock_owner(&path)?), path, created: true };
        remove_abandoned(&temp, &dir.path);
        Ok(dir)
    }
}

/// Takes the owner lock of `dir`, a directory just made. The file is locked under another name and then renamed, so
/// that another replica's sweep never finds an [`OWNER_LOCK`] nobody holds yet.
fn lock_owner(dir: &Path) -> std::io::Result<std::fs::File> {
    let pending = dir.join(format!("{OWNER_LOCK}.new"));
    let file = std::fs::File::create(&pending)?;
    file.try_lock().map_err(std::io::Error::other)?;
    std::fs::rename(&pending, dir.join(OWNER_LOCK))?;
    Ok(file)
}

/// Removes the temporary secondary directories in `temp` that are owned by the same user as `own` (this replica's
/// directory) and whose owner lock nobody holds: those of replicas killed before they could remove them. Directories
/// without an owner lock (not made by a replica of this version, or not ready) and symbolic links are left alone.
/// Best effort: a failure is logged, never fatal.
fn remove_abandoned(temp: &Path, own: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(uid) = std::fs::metadata(own).map(|m| m.uid()) else { return };
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_str().is_some_and(|name| name.starts_with(TEMP_DIR_PREFIX))
            && path != own
            && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if !ours {
            continue;
        }
        let Ok(lock) = std::fs::File::open(path.join(OWNER_LOCK)) else { continue };
        if lock.try_lock().is_err() {
            continue; // its replica runs
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "removed the directory of a replica that was killed"),
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "removing an abandoned secondary directory failed")
            }
        }
    }
}

impl Drop for SecondaryDir {
    fn drop(&mut self) {
        if self.created {
            if let Err(e) = std::fs::remove_dir_all(&self.path) {
                tracing::warn!(error = %e, path = %self.path.display(), "removing the secondary directory failed");
            }
        }
    }
}

/// A running read replica: secondary store, catch-up task and HTTP server.
#[derive(Debug)]
pub struct Replica {
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    store: Arc<Store>,
    status: Arc<Status>,
    cancel: CancellationToken,
    server: JoinHandle<bool>,
    helpers: TaskTracker,
    dir: SecondaryDir,
}

impl Replica {
    /// Opens the primary's store as a secondary, binds the listener(s) and starts catching up. `config` gives the
    /// node, the listen addresses and the API settings (its data directory and indexer settings are not used).
    pub async fn start(config: &Config, options: &ReplicaOptions) -> Result<Replica, RunError> {
        let primary = options.primary.display().to_string();
        let store_error = |source| RunError::Store { path: primary.clone(), source };
        let dir = SecondaryDir::prepare(&options.primary, options.secondary_dir.as_deref())
            .map_err(|e| store_error(StoreError::Inconsistent(format!("cannot make the secondary directory: {e}"))))?;
        let store_options = StoreOptions {
            name_registry: config.name_registry,
            cache_bytes: config.cache_bytes,
            row_cache_bytes: config.row_cache_bytes,
            read_only: true,
            ..Default::default()
        };
        let store = Arc::new(Store::open_secondary(&options.primary, &dir.path, &store_options).map_err(store_error)?);
        tracing::info!(primary = %options.primary.display(), secondary_dir = %dir.path.display(), "opened the primary's index as a read replica");
        let metrics = Arc::new(metrics::Metrics::new());
        let node = Node::new(&config.rpc_url, None, config.rpc_timeout)?.with_metrics(metrics.clone());
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| RunError::Bind { addr: config.listen, source })?;
        let addr = listener.local_addr().map_err(|source| RunError::Bind { addr: config.listen, source })?;
        let metrics_listener = match config.metrics_listen {
            Some(wanted) => {
                let bind_error = |source| RunError::MetricsBind { addr: wanted, source };
                let listener = tokio::net::TcpListener::bind(wanted).await.map_err(bind_error)?;
                let bound = listener.local_addr().map_err(bind_error)?;
                Some((listener, bound))
            }
            None => None,
        };
        let metrics_addr = metrics_listener.as_ref().map(|(_, bound)| *bound);
        tracing::info!(%addr, "read replica listening");

        let status = Arc::new(Status::with_metrics(metrics));
        status.set_indexed(store.reader().tip().map_err(store_error)?.map(|t| t.number));
        if config.tracing {
            status.set_tracing(true);
        }
        if config.indexer.coin_balances {
            status.set_coin_balances(true);
            status.set_balanced(store.reader().balance_tip().map_err(store_error)?.map(|t| t.number));
        }
        let events = events::channel(1024);
        let cancel = CancellationToken::new();
        let compilers = contracts::verifier::Compilers::new(config.compilers_dir.clone());
        let verifications =
            contracts::jobs::Verifications::new(store.clone(), node.clone(), compilers, config.verify_timeout)
                .map_err(store_error)?;
        let mut api_config = config.api.clone();
        api_config.read_replica = true;
        let state = AppState::new(
            store.clone(),
            status.clone(),
            node.clone(),
            config.rpc_url.clone(),
            events.clone(),
            api_config,
            verifications,
        );
        let helpers = TaskTracker::new();
        helpers.spawn(api::ws::publish::run(state.clone(), cancel.clone()));
        if let Some((listener, _)) = metrics_listener {
            helpers.spawn(api::serve_metrics(listener, state.clone(), cancel.clone()));
        }
        let head_interval = config.indexer.poll_interval.max(Duration::from_millis(100));
        helpers.spawn(watch_node(node, status.clone(), head_interval, cancel.clone()));
        // Local build artifacts are matched in memory, not stored: the replica watches the folders it is given, as
        // the primary does, so the two name and decode the same contracts when given the same `--artifacts`.
        if !config.artifacts.is_empty() {
            let knowledge = store.knowledge().clone();
            helpers.spawn(contracts::watch::run(config.artifacts.clone(), Vec::new(), knowledge, cancel.clone()));
        }
        let follower = Follower {
            store: store.clone(),
            status: status.clone(),
            events,
            event_blocks: options.event_blocks.max(1),
            announced: BTreeMap::new(),
            pool: PoolSeen::default(),
            traced: None,
        };
        helpers.spawn(follower.run(options.catch_up_interval, cancel.clone()));
        helpers.close();
        let server = tokio::spawn(api::serve(listener, state, cancel.clone()));
        Ok(Replica { addr, metrics_addr, store, status, cancel, server, helpers, dir })
    }

    /// The address the HTTP server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address `/metrics` is served on (`None`: metrics off).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The secondary store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The replica's view: the tip it sees (`indexed`) and the node's head.
    pub fn status(&self) -> StatusSnapshot {
        self.status.snapshot()
    }

    /// The secondary instance's directory.
    pub fn secondary_dir(&self) -> &Path {
        &self.dir.path
    }

    /// Serves until `cancel` fires, then shuts down.
    pub async fn run_until(self, cancel: CancellationToken) -> Result<(), RunError> {
        cancel.cancelled().await;
        self.shutdown().await
    }

    /// Stops accepting requests, lets in-flight ones finish, stops catching up, closes the store and removes the
    /// secondary directory if the replica made it.
    pub async fn shutdown(self) -> Result<(), RunError> {
        let Replica { store, cancel, server, helpers, dir, .. } = self;
        cancel.cancel();
        let served = server.await;
        helpers.wait().await;
        drop(store);
        drop(dir);
        served.map(|_| ()).map_err(|e| RunError::Task(e.to_string()))
    }
}

/// Runs a read replica until `cancel` fires.
pub async fn run(config: Config, options: ReplicaOptions, cancel: CancellationToken) -> Result<(), RunError> {
    Replica::start(&config, &options).await?.run_until(cancel).await
}

/// Keeps the node's head in the status (for `/health`, the lag, and which blocks are live enough to broadcast).
async fn watch_node(node: Node, status: Arc<Status>, interval: Duration, cancel: CancellationToken) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        match node.head().await {
            Ok(head) => {
                status.set_node_ok();
                status.set_node_head(head.number.to::<u64>());
            }
            Err(e) => status.set_node_error(e.to_string()),
        }
    }
}

/// What one catch-up found.
#[derive(Debug, Default)]
struct Progress {
    tip: Option<u64>,
    traced: Option<u64>,
    balanced: Option<u64>,
    reverted: Vec<(u64, B256)>,
    applied: Vec<crate::store::records::Bundle>,
    skipped: Option<(u64, u64)>,
    /// Whether the catch-up brought new writes of the primary.
    moved: bool,
    /// Pool transactions recorded since the last catch-up, oldest first, and what has now been announced.
    pending: Vec<PendingTxRecord>,
    pool: PoolSeen,
    /// Blocks the trace pass finished since the last catch-up, with their transactions in order.
    traced_blocks: Vec<(u64, Vec<B256>)>,
}

/// The newest pool arrivals a replica announced: the primary records each pool transaction under the time it first
/// saw it (`pending_by_time`, newest first), one round of its pool follower under one millisecond.
#[derive(Debug, Default, Clone)]
struct PoolSeen {
    newest_ms: u64,
    /// The transactions announced with `newest_ms`.
    at_newest: HashSet<B256>,
}

impl PoolSeen {
    /// The pool transactions recorded after what `self` announced (at most [`MAX_PENDING`]), newest first; `self`
    /// then covers them.
    fn advance(&mut self, reader: &Reader<'_>) -> Result<Vec<PendingKey>, StoreError> {
        let mut new = Vec::new();
        for row in reader.pending(None).take(MAX_PENDING) {
            let (key, ()) = row?;
            if key.seen_ms < self.newest_ms {
                break;
            }
            if key.seen_ms > self.newest_ms || !self.at_newest.contains(&key.hash) {
                new.push(key);
            }
        }
        if let Some(newest) = new.first().map(|k| k.seen_ms) {
            if newest > self.newest_ms {
                (self.newest_ms, self.at_newest) = (newest, HashSet::new());
            }
            self.at_newest.extend(new.iter().filter(|k| k.seen_ms == newest).map(|k| k.hash));
        }
        Ok(new)
    }
}

/// The catch-up loop and what it announced so far.
struct Follower {
    store: Arc<Store>,
    status: Arc<Status>,
    events: EventSender,
    event_blocks: u64,
    /// Hashes of the newest blocks already known (at most `event_blocks` of them), to see reorgs.
    announced: BTreeMap<u64, B256>,
    /// The pool transactions already announced.
    pool: PoolSeen,
    /// The trace pass's tip already announced.
    traced: Option<u64>,
}

impl Follower {
    async fn run(mut self, interval: Duration, cancel: CancellationToken) {
        let reader = self.store.reader();
        if let Ok(Some(tip)) = reader.tip() {
            self.announced.insert(tip.number, tip.hash);
        }
        // What the store held at the start is not news.
        let _ = self.pool.advance(&reader);
        self.traced = reader.trace_tip().ok().flatten().map(|t| t.number);
        drop(reader);
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = ticker.tick() => {}
            }
            let (store, announced, limit) = (self.store.clone(), self.announced.clone(), self.event_blocks);
            let (pool, traced) = (self.pool.clone(), self.traced);
            let step = tokio::task::spawn_blocking(move || {
                let mut progress = catch_up(&store, &announced, limit)?;
                side_events(&store.reader(), &mut progress, pool, traced, limit)?;
                Ok::<_, StoreError>(progress)
            })
            .await;
            match step {
                Ok(Ok(progress)) => {
                    if failing {
                        tracing::info!("catching up with the primary again");
                        failing = false;
                    }
                    self.publish(progress);
                }
                Ok(Err(e)) if !failing => {
                    tracing::warn!(error = %e, "catching up with the primary failed; retrying");
                    failing = true;
                }
                Ok(Err(_)) => {}
                Err(e) => tracing::warn!(error = %e, "the catch-up task failed"),
            }
        }
    }

    fn publish(&mut self, progress: Progress) {
        self.status.set_indexed(progress.tip);
        if progress.traced.is_some() {
            self.status.set_traced(progress.traced);
        }
        if progress.balanced.is_some() {
            self.status.set_balanced(progress.balanced);
        }
        if let Some((first, last)) = progress.skipped {
            tracing::info!(
                first,
                last,
                blocks = last - first + 1,
                "the primary moved further than one catch-up publishes: no WebSocket events for these blocks"
            );
        }
        for (number, hash) in progress.reverted {
            self.announced.remove(&number);
            let _ = self.events.send(ChainEvent::Reverted { number, hash });
        }
        for block in progress.applied {
            self.announced.insert(block.number(), block.header.hash);
            let _ = self.events.send(ChainEvent::Applied(Arc::new(block)));
        }
        // The side tasks' events after the blocks they follow, as on the primary.
        self.traced = progress.traced;
        self.pool = progress.pool;
        if !progress.pending.is_empty() {
            let _ = self.events.send(ChainEvent::Pending(Arc::new(progress.pending)));
        }
        for (number, txs) in progress.traced_blocks {
            let _ = self.events.send(ChainEvent::Traced { number, txs: Arc::new(txs) });
        }
        if let Some(tip) = progress.tip {
            self.announced.retain(|&n, _| n <= tip);
        }
        while self.announced.len() as u64 > self.event_blocks {
            self.announced.pop_first();
        }
    }
}

/// Catches the store up with the primary and works out what changed since `announced` (newest blocks known by
/// hash): heights whose block was replaced or removed, and the new blocks to publish (at most `limit`, newest).
fn catch_up(store: &Store, announced: &BTreeMap<u64, B256>, limit: u64) -> Result<Progress, StoreError> {
    let moved = store.catch_up()?;
    let reader = store.reader();
    let tip = reader.tip()?;
    let mut progress = Progress {
        tip: tip.map(|t| t.number),
        traced: reader.trace_tip()?.map(|t| t.number),
        balanced: reader.balance_tip()?.map(|t| t.number),
        moved,
        ..Progress::default()
    };
    let Some(tip) = tip else {
        progress.reverted = announced.iter().rev().map(|(&n, &h)| (n, h)).collect();
        return Ok(progress);
    };
    if announced.get(&tip.number) == Some(&tip.hash) {
        return Ok(progress);
    }
    // The newest announced block still canonical is where the new blocks start; those above it were reverted.
    let mut base = None;
    for (&number, &hash) in announced.iter().rev() {
        let stored = if number <= tip.number { reader.block(number)?.map(|b| b.hash) } else { None };
        if stored == Some(hash) {
            base = Some(number);
            break;
        }
        progress.reverted.push((number, hash));
    }
    let window = (tip.number + 1).saturating_sub(limit);
    let first = match (base, announced.iter().next()) {
        (Some(base), _) => base + 1,
        // Nothing announced is canonical any more (a reorg deeper than what is remembered, e.g. just after a start):
        // the primary's records of the blocks it replaced lead down the old branch to where it forks.
        (None, Some((&oldest, &hash))) => fork_below(&reader, oldest, hash, window, &mut progress.reverted)?,
        (None, None) => tip.number,
    }
    .min(tip.number + 1);
    let first_published = first.max(window);
    if first_published > first {
        progress.skipped = Some((first, first_published - 1));
    }
    for number in first_published..=tip.number {
        if let Some(block) = reader.load_block(number)? {
            progress.applied.push(block);
        }
    }
    Ok(progress)
}

/// What the primary's side tasks wrote since the last catch-up, into `progress`: the pool transactions recorded
/// since `pool` (read only when the catch-up brought writes), and the blocks the trace pass finished since `traced`
/// (at most `limit`, newest) with their transactions in order.
fn side_events(
    reader: &Reader<'_>,
    progress: &mut Progress,
    mut pool: PoolSeen,
    traced: Option<u64>,
    limit: u64,
) -> Result<(), StoreError> {
    if progress.moved {
        let hashes: Vec<B256> = pool.advance(reader)?.iter().rev().map(|k| k.hash).collect();
        progress.pending = reader.multi_get::<Pending>(&hashes)?.into_iter().flatten().collect();
    }
    progress.pool = pool;
    if let Some(now) = progress.traced.filter(|&now| traced.is_none_or(|before| now > before)) {
        let first = traced.map_or(0, |before| before + 1).max((now + 1).saturating_sub(limit));
        for number in first..=now {
            let txs = reader.block_txs(number, None).map(|row| row.map(|(_, tx)| tx.body.hash));
            progress.traced_blocks.push((number, txs.collect::<Result<_, _>>()?));
        }
    }
    Ok(())
}

/// The first height of the new branch when block `number` (`hash`) of the old one, the oldest announced, was
/// replaced. The primary keeps every block it reverted (`reorged`, with its parent's hash): the walk goes down the
/// old branch until a parent is canonical, adding each old block it passes to `reverted`. It stops at `window`, the
/// oldest height a catch-up publishes (nothing below it would be announced anyway), or where no record is left.
fn fork_below(
    reader: &crate::store::Reader<'_>,
    mut number: u64,
    mut hash: B256,
    window: u64,
    reverted: &mut Vec<(u64, B256)>,
) -> Result<u64, StoreError> {
    while number > window {
        let parent = number - 1;
        let Some(old) = reader.get::<Reorged>(&ReorgedKey { number, hash })? else { break };
        if reader.block(parent)?.map(|b| b.hash) == Some(old.parent_hash) {
            break;
        }
        reverted.push((parent, old.parent_hash));
        (number, hash) = (parent, old.parent_hash);
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::apply::{apply_blocks, empty_block as block, revert_block};
    use crate::store::records::Bundle;
    use crate::store::Durability;

    #[test]
    fn pool_arrivals_are_announced_once_even_when_a_round_shares_a_millisecond() {
        use crate::store::tables::PendingByTime;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let add = |rows: &[(u64, u8)]| {
            let mut batch = store.batch();
            for &(seen_ms, byte) in rows {
                batch.put::<PendingByTime>(&PendingKey { seen_ms, hash: B256::repeat_byte(byte) }, &()).unwrap();
            }
            store.write(batch, Durability::Buffered).unwrap();
        };
        let mut seen = PoolSeen::default();
        let mut advance = || -> Vec<(u64, u8)> {
            seen.advance(&store.reader()).unwrap().into_iter().map(|k| (k.seen_ms, k.hash[0])).collect()
        };
        add(&[(10, 1), (10, 2), (5, 3)]);
        assert_eq!(advance(), [(10, 1), (10, 2), (5, 3)], "newest first");
        assert_eq!(advance(), [], "nothing new");
        // Another row of the newest millisecond, a newer one, and an older one (a clock set back: not announced).
        add(&[(10, 4), (12, 5), (7, 6)]);
        assert_eq!(advance(), [(12, 5), (10, 4)]);
        assert_eq!(advance(), []);
    }

    #[test]
    fn the_directories_of_killed_replicas_are_removed_and_no_others() {
        let temp = tempfile::tempdir().unwrap();
        let made = |name: &str| {
            let path = temp.path().join(name);
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("LOG"), b"a secondary's info log").unwrap();
            path
        };
        let own = made("rockscout-secondary-1-own");
        let _own_lock = lock_owner(&own).unwrap();
        // A replica that was killed: its lock file stayed, nobody holds it.
        let killed = made("rockscout-secondary-2-killed");
        drop(lock_owner(&killed).unwrap());
        let running = made("rockscout-secondary-3-running");
        let _running_lock = lock_owner(&running).unwrap();
        let unlocked = made("rockscout-secondary-4-without-lock");
        let other = made("another-program");
        std::fs::write(other.join(OWNER_LOCK), b"").unwrap();
        let link = temp.path().join("rockscout-secondary-5-link");
        std::os::unix::fs::symlink(&killed, &link).unwrap();

        remove_abandoned(temp.path(), &own);
        let mut left: Vec<String> =
            std::fs::read_dir(temp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(
            left,
            [
                "another-program",
                "rockscout-secondary-1-own",
                "rockscout-secondary-3-running",
                "rockscout-secondary-4-without-lock",
                "rockscout-secondary-5-link"
            ]
        );
        assert!(running.join("LOG").exists() && unlocked.join("LOG").exists() && own.join(OWNER_LOCK).exists());
        assert!(!killed.exists());
    }

    /// Appends blocks `from..=to` of `branch` to the primary's chain.
    fn extend(store: &Store, from: u64, to: u64, branch: u64) {
        let mut parent = match from.checked_sub(1) {
            Some(n) => store.reader().block(n).unwrap().unwrap().hash,
            None => B256::ZERO,
        };
        let blocks: Vec<Bundle> = (from..=to)
            .map(|n| {
                let b = block(n, branch, parent);
                parent = b.header.hash;
                b
            })
            .collect();
        apply_blocks(store, &blocks, true).unwrap();
    }

    #[test]
    fn the_primary_s_own_directory_is_refused_as_the_secondary_s() {
        let primary = tempfile::tempdir().unwrap();
        let refused = SecondaryDir::prepare(primary.path(), Some(&primary.path().join("."))).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput, "{refused}");
        let own = primary.path().join("replica");
        let dir = SecondaryDir::prepare(primary.path(), Some(&own)).unwrap();
        assert_eq!(dir.path, own);
        assert!(own.is_dir());
    }

    /// A primary holding blocks `0..=tip` of branch 0 and a secondary of it (with the directories they live in).
    fn primary_and_secondary(tip: u64) -> ([tempfile::TempDir; 2], Store, Store) {
        let (dir, own) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let primary = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        extend(&primary, 0, tip, 0);
        let secondary = Store::open_secondary(dir.path(), own.path(), &StoreOptions::default()).unwrap();
        ([dir, own], primary, secondary)
    }

    fn numbers(progress: &Progress) -> Vec<u64> {
        progress.applied.iter().map(Bundle::number).collect()
    }

    #[test]
    fn catch_up_finds_new_blocks_replaced_blocks_and_bounds_a_gap() {
        let (_dirs, primary, secondary) = primary_and_secondary(5);
        let mut announced = BTreeMap::new();
        let remember = |announced: &mut BTreeMap<u64, B256>, progress: &Progress| {
            for (n, _) in &progress.reverted {
                announced.remove(n);
            }
            announced.extend(progress.applied.iter().map(|b| (b.number(), b.header.hash)));
        };

        // Nothing announced yet: only the tip, never the history.
        let first = catch_up(&secondary, &announced, 3).unwrap();
        assert_eq!((first.tip, numbers(&first), first.skipped), (Some(5), vec![5], None));
        remember(&mut announced, &first);
        assert!(catch_up(&secondary, &announced, 3).unwrap().applied.is_empty(), "no new tip, no events");

        extend(&primary, 6, 7, 0);
        let grown = catch_up(&secondary, &announced, 3).unwrap();
        assert_eq!((numbers(&grown), grown.reverted.len()), (vec![6, 7], 0));
        remember(&mut announced, &grown);

        // A reorg of depth 2: 7 and 6 reverted (newest first), the new branch's 6..=8 applied.
        revert_above(&primary, 5);
        extend(&primary, 6, 8, 1);
        let reorged = catch_up(&secondary, &announced, 3).unwrap();
        let old: Vec<(u64, B256)> = [7, 6].iter().map(|&n| (n, announced[&n])).collect();
        assert_eq!(reorged.reverted, old);
        assert_eq!(numbers(&reorged), vec![6, 7, 8]);
        assert_eq!(reorged.applied[0].header.hash, primary.reader().block(6).unwrap().unwrap().hash);
        remember(&mut announced, &reorged);

        // A gap larger than the bound: only the newest 3 blocks, the rest reported as skipped.
        extend(&primary, 9, 20, 1);
        let far = catch_up(&secondary, &announced, 3).unwrap();
        assert_eq!((numbers(&far), far.skipped), (vec![18, 19, 20], Some((9, 17))));
    }

    /// Reverts the primary's blocks above `keep`, newest first, as its indexer does.
    fn revert_above(store: &Store, keep: u64) {
        let tip = store.reader().tip().unwrap().unwrap().number;
        for n in (keep + 1..=tip).rev() {
            let stored = store.reader().load_block(n).unwrap().unwrap();
            let mut batch = store.batch();
            revert_block(&mut batch, &store.reader(), &stored).unwrap();
            store.write(batch, Durability::Sync).unwrap();
        }
    }

    /// Just after a start the replica remembers only the tip: a reorg replacing more blocks than that is followed
    /// down the old branch (the primary's records of reverted blocks) to where it forks, so every replacement
    /// block is published and every replaced one reverted, at the same height and at a lower one.
    #[test]
    fn a_reorg_deeper_than_what_is_remembered_publishes_the_whole_new_branch() {
        let (_dirs, primary, secondary) = primary_and_secondary(10);
        let hashes = |store: &Store, range: std::ops::RangeInclusive<u64>| -> Vec<(u64, B256)> {
            range.rev().map(|n| (n, store.reader().block(n).unwrap().unwrap().hash)).collect()
        };
        let old = hashes(&primary, 8..=10);
        let announced = BTreeMap::from([(10, old[0].1)]);

        revert_above(&primary, 7);
        extend(&primary, 8, 10, 1);
        let same_height = catch_up(&secondary, &announced, 64).unwrap();
        assert_eq!(same_height.reverted, old, "the replaced blocks, newest first");
        assert_eq!(numbers(&same_height), vec![8, 9, 10]);
        let new: Vec<B256> = same_height.applied.iter().map(|b| b.header.hash).collect();
        assert_eq!(new, hashes(&primary, 8..=10).into_iter().rev().map(|(_, h)| h).collect::<Vec<_>>());
        assert_eq!(same_height.skipped, None);

        // Lower: the new branch ends below the old tip; nothing new to publish, three blocks reverted.
        let announced = BTreeMap::from([(10, new[2])]);
        let replaced = hashes(&primary, 8..=10);
        revert_above(&primary, 7);
        let lower = catch_up(&secondary, &announced, 64).unwrap();
        assert_eq!((&lower.reverted, numbers(&lower), lower.tip), (&replaced, vec![], Some(7)));

        // The walk stops at what one catch-up publishes: a limit of 2 publishes 9 and 10 and skips 8.
        extend(&primary, 8, 10, 2);
        let announced = BTreeMap::from([(7, primary.reader().block(7).unwrap().unwrap().hash)]);
        revert_above(&primary, 5);
        extend(&primary, 6, 10, 3);
        let bounded = catch_up(&secondary, &announced, 2).unwrap();
        assert_eq!((numbers(&bounded), bounded.skipped), (vec![9, 10], Some((7, 8))));
    }

    #[test]
    fn a_missing_primary_is_named_in_the_error() {
        let dir = std::env::temp_dir().join(format!("rockscout-not-a-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secondary = SecondaryDir::prepare(&dir, None).unwrap();
        let err = Store::open_secondary(&dir, &secondary.path, &StoreOptions::default()).unwrap_err();
        assert!(err.to_string().contains("is not a rockscout data directory"), "{err}");
        let made = secondary.path.clone();
        assert!(made.is_dir());
        drop(secondary);
        assert!(!made.exists(), "a directory the replica made is removed");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

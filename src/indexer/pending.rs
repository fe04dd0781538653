//! The pending-pool follower: mirrors the node's transaction pool (`txpool_content`) into the `pending` tables,
//! so `/transactions?filter=pending` lists it, and announces newly seen transactions. A transaction leaves the
//! tables when it leaves the pool (mined, replaced or dropped). Pending rows are not chain state: they are written
//! by this task alone, outside block batches. A store that refuses writes (disk full) pauses the follower (see
//! `pause`).

use super::pause::Pauser;
use super::{Status, Writer};
use crate::events::{ChainEvent, EventSender};
use crate::node::{Node, NodeError};
use crate::store::keys::PendingKey;
use crate::store::records::PendingTxRecord;
use crate::store::tables::{Pending, PendingByTime};
use crate::store::{Durability, Store, StoreError};
use alloy::primitives::B256;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// Most pending transactions tracked; a larger pool is mirrored up to this many.
pub const MAX_PENDING: usize = 10_000;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

/// Follows the node's pool.
#[derive(Debug)]
pub struct PendingFollower {
    store: Arc<Store>,
    node: Node,
    status: Arc<Status>,
    events: EventSender,
    interval: Duration,
}

impl PendingFollower {
    /// A follower polling every `interval`, reporting pauses through `status`.
    pub fn new(store: Arc<Store>, node: Node, status: Arc<Status>, events: EventSender, interval: Duration) -> Self {
        PendingFollower { store, node, status, events, interval }
    }

    /// Polls until cancelled. A node without `txpool_content` is noted once and left alone. While the store refuses
    /// writes (disk full) the follower pauses and retries.
    pub async fn run(self, cancel: CancellationToken) {
        let mut pauser = Pauser::new(self.status.clone(), Writer::Pending);
        loop {
            let started = std::time::Instant::now();
            match self.node.pool().await {
                Ok(pool) => {
                    self.status.metrics().pending_pool(pool.len());
                    let store = self.store.clone();
                    let round = tokio::task::spawn_blocking(move || sync_pool(&store, pool, now_ms())).await;
                    match round {
                        Ok(Ok(new)) => {
                            // Written, or nothing left to write: either way nothing waits for the store.
                            pauser.succeeded();
                            if !new.is_empty() {
                                let _ = self.events.send(ChainEvent::Pending(Arc::new(new)));
                            }
                        }
                        Ok(Err(e)) if e.is_io() => {
                            if !pauser.wait_after(&e, &cancel).await {
                                return;
                            }
                            continue;
                        }
                        Ok(Err(e)) => tracing::warn!(error = %e, "updating pending transactions failed"),
                        Err(e) => tracing::warn!(error = %e, "pending task failed"),
                    }
                }
                Err(NodeError::Rpc { code, message }) => {
                    tracing::info!(code, %message, "the node does not expose txpool_content: pending transactions are not followed");
                    return;
                }
                Err(e) => tracing::debug!(error = %e, "pending pool unavailable this round"),
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(pause_after(self.interval, started.elapsed())) => {}
            }
        }
    }
}

/// Longest pause between two reads of the pool.
const MAX_POOL_PAUSE: Duration = Duration::from_secs(30);

/// The pause after a read of the pool that took `took`: the poll interval, or four times as long as the read (at
/// most [`MAX_POOL_PAUSE`]), so a node whose pool takes seconds to list (2,000 transactions waiting on a busy node:
/// 1.8 s) spends at most a fifth of its time listing it for this follower.
fn pause_after(interval: Duration, took: Duration) -> Duration {
    interval.max(took.saturating_mul(4).min(MAX_POOL_PAUSE))
}

/// Makes the pending tables equal the pool (minus mined transactions); returns the newly seen ones.
pub fn sync_pool(
    store: &Store,
    pool: Vec<crate::node::wire::RpcTransaction>,
    now_ms: u64,
) -> Result<Vec<PendingTxRecord>, StoreError> {
    let reader = store.reader();
    let mut stored: HashMap<B256, u64> = HashMap::new();
    for row in reader.pending(None) {
        let (key, ()) = row?;
        stored.insert(key.hash, key.seen_ms);
    }
    let current: HashMap<B256, crate::node::wire::RpcTransaction> = pool.into_iter().map(|t| (t.hash, t)).collect();
    let mut batch = store.batch();
    for (hash, seen_ms) in &stored {
        if !current.contains_key(hash) {
            batch.delete::<Pending>(hash);
            batch.delete::<PendingByTime>(&PendingKey { seen_ms: *seen_ms, hash: *hash });
        }
    }
    let mut new = Vec::new();
    let room = MAX_PENDING.saturating_sub(stored.len());
    for (hash, tx) in current.into_iter().filter(|(h, _)| !stored.contains_key(h)).take(room) {
        if reader.is_mined(hash)? {
            continue; // already mined and indexed
        }
        let record = PendingTxRecord { body: super::bundle::tx_body(&tx), first_seen_ms: now_ms };
        batch.put::<Pending>(&hash, &record)?;
        batch.put::<PendingByTime>(&PendingKey { seen_ms: now_ms, hash }, &())?;
        new.push(record);
    }
    if !batch.is_empty() {
        store.write(batch, Durability::Buffered)?;
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_slow_to_list_is_read_less_often() {
        let second = Duration::from_secs(1);
        assert_eq!(pause_after(second, Duration::from_millis(20)), second);
        assert_eq!(pause_after(second, Duration::from_millis(1_800)), Duration::from_millis(7_200));
        assert_eq!(pause_after(second, Duration::from_secs(10)), MAX_POOL_PAUSE, "a read that timed out");
        assert_eq!(pause_after(Duration::from_secs(60), Duration::from_secs(10)), Duration::from_secs(60));
    }
}

//! Pausing a store writer while the store refuses writes (disk full, I/O error), instead of stopping the daemon.
//!
//! Each writer (follower, trace pass, balance writer, pending-pool follower, token metadata fetcher, code writer)
//! records the pause in [`Status`] for `/health`, logs once when it pauses and once when it writes again (never per
//! retry), and retries with capped backoff. A failed RocksDB write leaves nothing behind, and RocksDB recovers from a
//! no-space error by itself once 64 MiB (its largest memtable) are free (its file manager checks every 5 s), after
//! which the next attempt succeeds. [`run_rounds`] is the loop of the writers that work in rounds behind the tip.

use crate::events::EventSender;
use crate::node::Backoff;
use crate::status::{Status, Writer};
use crate::store::StoreError;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// The pause state of one writer.
#[derive(Debug)]
pub(crate) struct Pauser {
    status: Arc<Status>,
    writer: Writer,
    backoff: Backoff,
}

impl Pauser {
    /// The pause state of `writer`, reported through `status`.
    pub(crate) fn new(status: Arc<Status>, writer: Writer) -> Self {
        Pauser { status, writer, backoff: Backoff::new() }
    }

    /// Records a failed write the writer retries; returns the delay before the next attempt (100 ms doubling to
    /// 5 s, from the start of each pause).
    pub(crate) fn failed(&mut self, error: &StoreError) -> Duration {
        if self.status.set_writer_paused(self.writer, error.to_string()) {
            self.backoff = Backoff::new();
            tracing::error!(
                writer = self.writer.name(),
                %error,
                "the store refuses writes: indexing paused, the API keeps serving what is indexed; retrying until \
                 writes succeed again (free disk space if the disk is full)"
            );
        }
        self.backoff.next_delay()
    }

    /// Records a failed write and waits before the retry; `false` if cancelled meanwhile.
    pub(crate) async fn wait_after(&mut self, error: &StoreError, cancel: &CancellationToken) -> bool {
        let delay = self.failed(error);
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
        }
    }

    /// Records a successful write (ends a pause).
    pub(crate) fn succeeded(&self) {
        resumed(&self.status, self.writer);
    }
}

/// Longest wait after rounds that failed in a row.
const MAX_ROUND_BACKOFF: Duration = Duration::from_secs(30);

/// Runs a writer that works in rounds behind the indexed tip (the trace pass, the balance writer) until cancelled.
/// After a round that moved it forward it goes on at once; otherwise it waits for the next chain event, `idle` at
/// most. A store error that `io` finds in a round's error and that is an I/O error pauses the writer like every
/// writer; any other error (mostly the node's) is logged, and the round is tried again after `idle`, doubled for
/// each failure in a row up to [`MAX_ROUND_BACKOFF`] whatever the chain does meanwhile: a node that cannot trace a
/// block in time is not asked again every second (and at every new block) while it still works on the last try.
pub(crate) async fn run_rounds<E, F, Fut>(
    status: Arc<Status>,
    writer: Writer,
    events: &EventSender,
    idle: Duration,
    cancel: &CancellationToken,
    io: fn(&E) -> Option<&StoreError>,
    mut round: F,
) where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, E>>,
{
    let mut events = events.subscribe();
    let mut pauser = Pauser::new(status, writer);
    let mut failures = 0u32;
    loop {
        let progressed = match round().await {
            Ok(progressed) => {
                // Committed, or nothing to commit (caught up, or the chain moved): nothing waits for the store.
                pauser.succeeded();
                failures = 0;
                progressed
            }
            Err(e) => match io(&e).filter(|e| e.is_io()) {
                Some(e) => {
                    if !pauser.wait_after(e, cancel).await {
                        return;
                    }
                    continue;
                }
                None => {
                    let wait = idle.saturating_mul(1 << failures.min(16)).min(MAX_ROUND_BACKOFF);
                    failures = failures.saturating_add(1);
                    tracing::warn!(writer = writer.name(), error = %e, retry_in = ?wait, "a round failed; trying again");
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = tokio::time::sleep(wait) => {}
                    }
                    continue;
                }
            },
        };
        if progressed {
            continue;
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            event = events.recv() => if matches!(event, Err(RecvError::Closed)) { return },
            _ = tokio::time::sleep(idle) => {}
        }
    }
}

/// Records a successful write of `writer`, logging the end of a pause.
pub(crate) fn resumed(status: &Status, writer: Writer) {
    if let Some(paused) = status.set_writer_resumed(writer) {
        tracing::info!(
            writer = writer.name(),
            paused_s = paused.as_secs(),
            "the store accepts writes again: indexing resumed"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_error() -> StoreError {
        // A real I/O error of RocksDB: its lock file cannot be opened when a directory takes its name.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("LOCK")).unwrap();
        crate::store::Store::open(dir.path(), &crate::store::StoreOptions::default()).unwrap_err()
    }

    #[test]
    fn a_pause_is_reported_until_the_next_success_and_backs_off_from_its_start() {
        let status = Arc::new(Status::default());
        let mut pauser = Pauser::new(status.clone(), Writer::Follower);
        let error = io_error();
        assert!(error.is_io(), "{error:?}");
        assert!(!StoreError::Inconsistent("a data error".into()).is_io(), "data errors are not retried");
        assert_eq!(pauser.failed(&error), Duration::from_millis(100));
        assert_eq!(pauser.failed(&error), Duration::from_millis(200));
        let snapshot = status.snapshot();
        assert_eq!(snapshot.paused.len(), 1);
        assert_eq!(snapshot.paused[0].writer, Writer::Follower);
        assert_eq!(snapshot.paused[0].error, error.to_string());
        assert_eq!(snapshot.paused[0].failures, 2);
        pauser.succeeded();
        assert!(status.snapshot().paused.is_empty());
        assert_eq!(pauser.failed(&error), Duration::from_millis(100), "a new pause starts a new backoff");
    }

    #[test]
    fn writers_pause_independently() {
        let status = Arc::new(Status::default());
        let error = io_error();
        let mut follower = Pauser::new(status.clone(), Writer::Follower);
        let mut pending = Pauser::new(status.clone(), Writer::Pending);
        follower.failed(&error);
        pending.failed(&error);
        follower.succeeded();
        let writers: Vec<Writer> = status.snapshot().paused.iter().map(|p| p.writer).collect();
        assert_eq!(writers, vec![Writer::Pending]);
    }
}

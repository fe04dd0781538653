//! `rockscout snapshot --to DIR`: a consistent copy of a data directory that another machine can start from with
//! `--data-dir DIR` (it resumes from the copy's tip instead of indexing from genesis). The copy is a RocksDB
//! checkpoint: SST files hard-linked where `DIR` is on the same file system, copied otherwise.
//!
//! A running daemon holds its data directory's lock, so it takes the checkpoint itself: it listens on
//! `<data-dir>/control.sock` (a Unix socket, owner-only), and the command asks there. Without a daemon the command
//! opens the directory and takes it directly. Either way the copy is then marked as cleanly closed.

use crate::store::{Store, StoreError, StoreOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

/// The control socket's file name inside the data directory.
pub const SOCKET: &str = "control.sock";
/// Longest request line read from the control socket.
const MAX_REQUEST: usize = 4096;
/// How long a request may take to arrive once connected.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a snapshot waits for a daemon that holds the data directory to answer on its socket (it opens the
/// store, recovering it after a crash, before it listens).
const DAEMON_START_WAIT: Duration = Duration::from_secs(60);

/// Why a snapshot failed.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The target exists (a checkpoint is written into a new directory only).
    #[error("{0} already exists: a snapshot is written into a new directory")]
    Exists(PathBuf),
    /// The target lies inside the data directory it copies.
    #[error("{0} is inside the data directory: a snapshot is written outside it")]
    Inside(PathBuf),
    /// The store refused.
    #[error("the snapshot failed: {0}")]
    Store(#[from] StoreError),
    /// The running daemon answered with an error, or could not be asked.
    #[error("the running daemon could not take the snapshot: {0}")]
    Daemon(String),
}

/// Takes a snapshot of the data directory `data_dir` into `to` (a new directory), through the running daemon when
/// there is one. Returns the tip the snapshot holds, if any.
pub async fn take(data_dir: &Path, to: &Path) -> Result<Option<u64>, SnapshotError> {
    if to.exists() {
        return Err(SnapshotError::Exists(to.to_owned()));
    }
    let to = absolute(to);
    if !Store::holds_store(data_dir) {
        return Err(StoreError::NotAStore(data_dir.to_owned()).into());
    }
    if to.starts_with(absolute(data_dir)) {
        return Err(SnapshotError::Inside(to));
    }
    // A daemon that is starting holds the directory before it answers on its socket: ask again until it does.
    let deadline = tokio::time::Instant::now() + DAEMON_START_WAIT;
    loop {
        match UnixStream::connect(data_dir.join(SOCKET)).await {
            Ok(stream) => break ask(stream, &to).await?,
            Err(_) => {
                // No daemon (or a stale socket after a crash): the directory is ours to open.
                let (dir, target) = (data_dir.to_owned(), to.clone());
                let taken = tokio::task::spawn_blocking(move || {
                    let store = Store::open_existing(&dir, &StoreOptions::default())?;
                    store.checkpoint(&target)
                })
                .await
                .map_err(|e| SnapshotError::Daemon(e.to_string()))?;
                match taken {
                    Err(StoreError::InUse(_)) if tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(100)).await
                    }
                    taken => break taken?,
                }
            }
        }
    }
    let target = to.clone();
    let tip = tokio::task::spawn_blocking(move || -> Result<Option<u64>, StoreError> {
        // Opening the copy and closing it marks it clean, so the replica does not report an unclean stop.
        let copy = Store::open(&target, &StoreOptions::default())?;
        let tip = copy.reader().tip()?.map(|t| t.number);
        Ok(tip)
    })
    .await
    .map_err(|e| SnapshotError::Daemon(e.to_string()))??;
    Ok(tip)
}

async fn ask(stream: UnixStream, to: &Path) -> Result<(), SnapshotError> {
    let (read, mut write) = stream.into_split();
    let request = serde_json::json!({"snapshot": to}).to_string();
    write.write_all(format!("{request}\n").as_bytes()).await.map_err(|e| SnapshotError::Daemon(e.to_string()))?;
    let mut answer = String::new();
    BufReader::new(read).read_line(&mut answer).await.map_err(|e| SnapshotError::Daemon(e.to_string()))?;
    match answer.trim() {
        "ok" => Ok(()),
        "" => Err(SnapshotError::Daemon("no answer".into())),
        error => Err(SnapshotError::Daemon(error.to_owned())),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The daemon's side: answers snapshot requests on `<data-dir>/control.sock` until `cancel` fires, one at a time.
pub async fn serve(store: std::sync::Arc<Store>, data_dir: PathBuf, cancel: CancellationToken) {
    let path = data_dir.join(SOCKET);
    let _ = std::fs::remove_file(&path);
    let listener = match UnixListener::bind(&path) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "no control socket: snapshots need the daemon stopped");
            return;
        }
    };
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
    loop {
        let stream = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "control socket accept failed");
                    continue;
                }
            },
        };
        let (read, mut write) = stream.into_split();
        let answer = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(read)).await {
            Ok(Ok(target)) => {
                let store = store.clone();
                match tokio::task::spawn_blocking(move || store.checkpoint(&target)).await {
                    Ok(Ok(())) => "ok".to_owned(),
                    Ok(Err(e)) => e.to_string(),
                    Err(e) => e.to_string(),
                }
            }
            Ok(Err(why)) => why,
            Err(_) => "no request in time".to_owned(),
        };
        let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
    }
    let _ = std::fs::remove_file(&path);
}

/// Reads one request line (`{"snapshot": "/abs/dir"}`) and returns its target.
async fn read_request(read: tokio::net::unix::OwnedReadHalf) -> Result<PathBuf, String> {
    use tokio::io::AsyncReadExt;
    let mut line = String::new();
    BufReader::new(read.take(MAX_REQUEST as u64)).read_line(&mut line).await.map_err(|e| e.to_string())?;
    let request: serde_json::Value = serde_json::from_str(line.trim()).map_err(|_| "not a JSON request".to_owned())?;
    let target = request.get("snapshot").and_then(|v| v.as_str()).map(PathBuf::from);
    match target {
        Some(target) if target.is_absolute() && !target.exists() => Ok(target),
        Some(target) => Err(format!("{} must be an absolute path that does not exist yet", target.display())),
        None => Err("unknown request".to_owned()),
    }
}

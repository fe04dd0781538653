//! Rescanning the artifact folders when they change: a `forge build` or `npx hardhat compile` while rockscout
//! runs names the new contracts without a restart.
//!
//! The `notify` crate delivers the operating system's file events (inotify on Linux) instead of polling every
//! file; a build writes hundreds of files in a burst, so events are debounced: a rescan starts once the folders
//! have been quiet for [`DEBOUNCE`], and at most one rescan runs at a time. A folder that does not exist yet is
//! watched through its nearest existing parent, so a first build is noticed too.

use super::artifacts::{Artifact, ArtifactSet};
use super::Knowledge;
use notify::{RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Quiet time after the last file event before a rescan.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// Loads the artifacts of `dirs`, plus the `builtin` ones, into `knowledge`; returns how many there are.
pub async fn load(dirs: Vec<PathBuf>, builtin: &[Arc<Artifact>], knowledge: &Knowledge) -> usize {
    let builtin = builtin.to_vec();
    let loaded = tokio::task::spawn_blocking(move || {
        let mut set = ArtifactSet::load(&dirs);
        set.all.extend(builtin);
        set
    });
    let set = match loaded.await {
        Ok(set) => set,
        Err(e) => {
            tracing::warn!(error = %e, "reading artifacts failed");
            return knowledge.artifact_count();
        }
    };
    let count = set.all.len();
    knowledge.replace(set);
    count
}

/// The folder to watch for `dir`: itself, or its nearest existing parent.
fn watch_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|p| p.is_dir()).map(Path::to_owned)
}

/// Loads the artifacts (those of `dirs` and the `builtin` ones), then reloads them whenever the folders change,
/// until cancelled.
pub async fn run(
    dirs: Vec<PathBuf>,
    builtin: Vec<Arc<Artifact>>,
    knowledge: Arc<Knowledge>,
    cancel: CancellationToken,
) {
    let count = load(dirs.clone(), &builtin, &knowledge).await;
    if dirs.is_empty() {
        return;
    }
    tracing::info!(artifacts = count, folders = ?dirs, "local build artifacts read");
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !e.kind.is_access()) {
            // A full channel already holds a wake-up: dropping this one loses nothing.
            let _ = tx.try_send(());
        }
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the artifact folders: they are read once, at start");
            return;
        }
    };
    for root in dirs.iter().filter_map(|d| watch_root(d)) {
        if let Err(e) = watcher.watch(&root, RecursiveMode::Recursive) {
            tracing::warn!(error = %e, folder = %root.display(), "cannot watch an artifact folder");
        }
    }
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            woke = rx.recv() => if woke.is_none() { return },
        }
        // Debounce: wait until no event arrived for a while.
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(DEBOUNCE) => break,
                woke = rx.recv() => if woke.is_none() { return },
            }
        }
        let count = load(dirs.clone(), &builtin, &knowledge).await;
        tracing::info!(artifacts = count, "artifact folders changed: rescanned");
    }
}

//! The data directory's filesystem fills up while the daemon indexes: the API keeps serving what is indexed,
//! `/health` and the log report the paused indexer, and once space is freed indexing resumes by itself with nothing
//! lost or duplicated. The filesystem is a small tmpfs the test mounts (root needed).

use crate::support::compare::assert_store_matches_node;
use crate::support::*;
use alloy::providers::Provider;
use rockscout::store::{Store, StoreOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Size of the test filesystem. RocksDB clears a no-space error only once the free space reaches its largest
/// memtable (64 MiB), so the filesystem must be larger than that; it is still filled in a moment.
const FS_MIB: u64 = 96;

/// Taken before the daemon starts, so that less than 70 MiB is free when RocksDB first writes its write-ahead log:
/// it then cannot preallocate the log (1.1 memtables), and the next write after the disk fills up fails at once.
/// With a preallocated log, writes would fill it first and the failure would come with the next memtable flush,
/// after 64 MiB of blocks: the same refusal of every write, only much later.
const BALLAST_MIB: u64 = 40;

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(mib: u64) -> SmallFs {
        let dir = tempfile::tempdir().unwrap();
        let needs = "this test mounts a small tmpfs for the data directory: it needs root (CAP_SYS_ADMIN) and \
                     mount(8) (apt-get install mount); run it as root, e.g. `sudo -E cargo test --test it full_disk::`";
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "rockscout-full-disk"])
            .arg(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run mount(8): {e}; {needs}"));
        assert!(
            out.status.success(),
            "mounting a {mib} MiB tmpfs on {} failed ({}): {}; {needs}",
            dir.path().display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        SmallFs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        // Lazy: a leftover open file must not keep the mount (the temporary directory is removed afterwards).
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// The daemon as a process (so that exiting on a full disk is seen), logging to a file outside the small filesystem.
struct DaemonProcess {
    child: std::sync::Mutex<Child>,
    addr: SocketAddr,
    log: PathBuf,
    data_dir: PathBuf,
}

impl DaemonProcess {
    fn spawn(rpc_url: &str, data_dir: &Path, log: PathBuf) -> DaemonProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_rockscout"))
            .args(["run", "--rpc-url", rpc_url, "--listen", &addr.to_string(), "--tracing"])
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--poll-interval-ms", "20", "--rate-limit", "0", "--metrics-listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn rockscout");
        DaemonProcess { child: std::sync::Mutex::new(child), addr, log, data_dir: data_dir.to_path_buf() }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `/health`, failing the test with the log if the daemon exited.
    async fn health(&self) -> Option<serde_json::Value> {
        let exited = self.child.lock().unwrap().try_wait().unwrap();
        if let Some(status) = exited {
            panic!("the daemon exited ({status}); its log:\n{}", self.log());
        }
        let reply = http::try_request(self.addr, hyper::Method::GET, "/health", &[], "").await.ok()?;
        Some(reply.json())
    }

    /// The last error lines of RocksDB's own log in the data directory (why it does or does not recover).
    fn rocksdb_errors(&self) -> String {
        let log = std::fs::read_to_string(self.data_dir.join("LOG")).unwrap_or_default();
        let errors: Vec<&str> = log.lines().filter(|l| l.contains("[ERROR]") || l.contains("ErrorHandler")).collect();
        errors[errors.len().saturating_sub(20)..].join("\n")
    }

    /// Polls `/health` until `check` accepts it; on timeout fails with the last answer and the log.
    async fn wait_health<T>(&self, what: &str, check: impl Fn(&serde_json::Value) -> Option<T>) -> T {
        let last = std::sync::Mutex::new(serde_json::Value::Null);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(health) = self.health().await {
                if let Some(found) = check(&health) {
                    return found;
                }
                *last.lock().unwrap() = health;
            }
            if std::time::Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; last /health: {}; log:\n{}\nRocksDB's errors:\n{}",
                    last.lock().unwrap(),
                    self.log(),
                    self.rocksdb_errors()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn stop(self) {
        let mut child = self.child.lock().unwrap();
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "SIGTERM exits 0: {status}; log:\n{}", self.log());
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Writes `mib` MiB to `path`.
fn ballast(path: &Path, mib: u64) {
    let mut file = std::fs::File::create(path).expect("create the ballast file");
    let chunk = vec![0x5au8; 1 << 20];
    for _ in 0..mib {
        file.write_all(&chunk).expect("write the ballast");
    }
}

/// Writes `path` until the filesystem is full; returns the bytes written.
fn fill(path: &Path) -> u64 {
    let mut file = std::fs::File::create(path).expect("create the filler file");
    let chunk = vec![0xa5u8; 1 << 16];
    let mut written = 0u64;
    // Big writes first, then pages, so that not one page is left.
    for size in [1 << 16, 4096, 1] {
        loop {
            match file.write(&chunk[..size]) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
    }
    written
}

fn count(log: &str, needle: &str, writer: &str) -> usize {
    log.lines().filter(|l| l.contains(needle) && l.contains(&format!("writer=\"{writer}\""))).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_pauses_indexing_keeps_serving_and_resumes_when_space_is_freed() {
    let fs = SmallFs::mount(FS_MIB);
    let data_dir = fs.path().join("data");
    let logs = tempfile::tempdir().unwrap();
    let anvil = start_anvil();
    let node = provider(&anvil.http_url());
    let accounts = anvil.addresses();
    generate_traffic(&node, &accounts, 6, 4).await;

    let ballast_file = fs.path().join("ballast");
    ballast(&ballast_file, BALLAST_MIB);
    let daemon = DaemonProcess::spawn(&anvil.http_url(), &data_dir, logs.path().join("rockscout.log"));
    let head = node.get_block_number().await.unwrap();
    daemon
        .wait_health("the daemon to index the chain", |health| {
            (health["indexed_tip"] == head && health["traced_tip"] == head).then_some(())
        })
        .await;

    // Fill the filesystem, then keep the chain moving: the next commit cannot be written.
    let filler = fs.path().join("filler");
    let filled = fill(&filler);
    assert!(filled > 0, "the filler took the free space");
    generate_traffic(&node, &accounts, 4, 4).await;
    let new_head = node.get_block_number().await.unwrap();
    daemon
        .wait_health("/health to report the paused follower", |health| {
            health["paused_writers"].as_array()?.iter().any(|w| w["writer"] == "follower").then_some(())
        })
        .await;
    // A transaction left in the pool once the store refuses writes: the pending-pool follower cannot record it
    // either. (Sent earlier, its small write could still fit in the log's last page before the follower's failed,
    // and a follower with nothing new to write never pauses.)
    transfer(&node, accounts[1], accounts[2], 12_345).await;

    // Paused, reported, retried: wait for a few failed retries of the follower.
    let health = daemon
        .wait_health("/health to report the paused follower and pending-pool follower", |health| {
            let writers = health["paused_writers"].as_array()?;
            let follower = writers.iter().find(|w| w["writer"] == "follower")?;
            writers.iter().find(|w| w["writer"] == "pending")?;
            (follower["failures"].as_u64()? >= 4).then(|| health.clone())
        })
        .await;
    assert_eq!(health["status"], "indexer_paused", "{health}");
    assert_eq!(health["indexer_paused"], true);
    let error = health["indexer_error"].as_str().expect("the error is reported");
    assert!(error.contains("No space left on device"), "{error}");
    assert_eq!(health["node_reachable"], true);
    assert_eq!(health["node_tip"], new_head);
    let indexed = health["indexed_tip"].as_u64().unwrap();
    assert!(indexed < new_head, "indexing stopped below the head ({indexed} of {new_head})");
    let reply = http::get(daemon.addr, "/health").await;
    assert_eq!(reply.status, 200, "the API still serves: load balancers keep routing to it");

    // The API keeps serving what is indexed.
    let heights: Vec<u64> =
        http::walk(daemon.addr, "/api/v2/blocks").await.iter().map(|b| b["height"].as_u64().unwrap()).collect();
    assert_eq!(heights, (0..=indexed).rev().collect::<Vec<_>>(), "every indexed block, nothing more");
    let stats = http::get(daemon.addr, "/api/v2/stats").await;
    assert_eq!(stats.status, 200);
    assert_eq!(stats.json()["total_blocks"], (indexed + 1).to_string());

    // The log says it, once per pause rather than per retry.
    let log = daemon.log();
    assert_eq!(count(&log, "indexing paused", "follower"), 1, "one pause line for the follower:\n{log}");
    assert_eq!(count(&log, "indexing paused", "pending"), 1, "one pause line for the pool follower:\n{log}");
    assert!(log.contains("No space left on device"), "{log}");

    // Free the space: indexing resumes by itself.
    std::fs::remove_file(&filler).unwrap();
    std::fs::remove_file(&ballast_file).unwrap();
    generate_traffic(&node, &accounts, 2, 2).await;
    let last_head = node.get_block_number().await.unwrap();
    daemon
        .wait_health("indexing to resume and reach the head", |health| {
            let resumed = health["status"] == "ok" && health["paused_writers"].as_array()?.is_empty();
            (resumed && health["indexed_tip"] == last_head && health["traced_tip"] == last_head).then_some(())
        })
        .await;
    let log = daemon.log();
    assert_eq!(count(&log, "indexing resumed", "follower"), 1, "one resume line for the follower:\n{log}");
    assert_eq!(count(&log, "indexing resumed", "pending"), 1, "one resume line for the pool follower:\n{log}");

    daemon.stop();
    let store = Store::open(&data_dir, &StoreOptions::default()).unwrap();
    assert_store_matches_node(&store, &node).await;
}

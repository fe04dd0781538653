//! A local anvil process: found in the project's npm install (or `ANVIL_BIN`, or `PATH`), started on a free port,
//! killed on drop. Used by `rockscout dev`, the integration tests and the benchmarks.

use alloy::primitives::{Address, B256};
use alloy::signers::local::PrivateKeySigner;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where `scripts/setup` installs anvil, relative to the repository root.
pub const NPM_ANVIL: &str = "scripts/tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil";

/// How to get anvil when it is missing.
pub const INSTALL_HINT: &str = "anvil was not found. Install it with `scripts/setup` (npm installs \
     @foundry-rs/anvil-linux-amd64@1.7.1 into scripts/tools), or set ANVIL_BIN to an anvil binary";

/// Chain id of the devnet (Sei's default EVM chain id).
pub const DEV_CHAIN_ID: u64 = 713_714;

/// Starting anvil failed.
#[derive(Debug, thiserror::Error)]
pub enum AnvilError {
    /// No binary found.
    #[error("{INSTALL_HINT}")]
    NotFound,
    /// The process could not start or did not report its address.
    #[error("anvil at {path}: {problem}")]
    Start {
        /// The binary.
        path: PathBuf,
        /// What went wrong.
        problem: String,
    },
}

/// Finds the anvil binary: `explicit`, then `ANVIL_BIN`, then the npm install under the current directory or any
/// ancestor of it or of this executable, then `PATH`.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, AnvilError> {
    if let Some(path) = explicit {
        return if path.is_file() { Ok(path.to_path_buf()) } else { Err(AnvilError::NotFound) };
    }
    if let Some(path) = std::env::var_os("ANVIL_BIN").map(PathBuf::from) {
        return if path.is_file() { Ok(path) } else { Err(AnvilError::NotFound) };
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    roots.extend(std::env::current_dir().ok());
    roots.extend(std::env::current_exe().ok());
    roots.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    for root in roots {
        for dir in root.ancestors() {
            let candidate = dir.join(NPM_ANVIL);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("anvil"))
        .find(|p| p.is_file())
        .ok_or(AnvilError::NotFound)
}

/// Options of one anvil process.
#[derive(Debug, Clone)]
pub struct AnvilOptions {
    /// Chain id.
    pub chain_id: u64,
    /// Seconds between blocks; `None` mines a block per transaction.
    pub block_time: Option<u64>,
    /// Port; 0 lets the OS choose.
    pub port: u16,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Extra arguments (e.g. `--state`, `--no-mining`).
    pub extra_args: Vec<String>,
}

impl Default for AnvilOptions {
    fn default() -> Self {
        AnvilOptions { chain_id: DEV_CHAIN_ID, block_time: None, port: 0, gas_limit: 1_000_000_000, extra_args: vec![] }
    }
}

/// A running anvil; killed when dropped, and its directory of persisted states removed.
#[derive(Debug)]
pub struct Anvil {
    child: Child,
    port: u16,
    keys: Vec<B256>,
    state_cache: PathBuf,
}

/// A new directory for one anvil's persisted states (`--cache-path`). Left to itself, anvil writes the states of
/// old blocks under `~/.foundry/anvil/tmp` and never removes them, however it stops (tens of MiB per long run).
fn state_cache_dir() -> std::io::Result<PathBuf> {
    static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("rockscout-anvil-{}-{n}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

impl Anvil {
    /// Starts anvil at `path` and waits (up to 30 s) until it listens.
    pub fn spawn(path: &Path, options: &AnvilOptions) -> Result<Anvil, AnvilError> {
        let state_cache = state_cache_dir().map_err(|e| AnvilError::Start {
            path: path.to_path_buf(),
            problem: format!("cannot create its state directory: {e}"),
        })?;
        // A failed start removes the directory again.
        let fail = |problem: String| {
            let _ = std::fs::remove_dir_all(&state_cache);
            AnvilError::Start { path: path.to_path_buf(), problem }
        };
        let mut command = Command::new(path);
        command
            .arg("--cache-path")
            .arg(&state_cache)
            .args(["--host", "127.0.0.1", "--port", &options.port.to_string()])
            .args(["--chain-id", &options.chain_id.to_string()])
            .args(["--gas-limit", &options.gas_limit.to_string()])
            .args(&options.extra_args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(seconds) = options.block_time {
            command.args(["--block-time", &seconds.to_string()]);
        }
        let mut child = command.spawn().map_err(|e| fail(e.to_string()))?;
        let stdout = child.stdout.take().ok_or_else(|| fail("no stdout".into()))?;
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads the banner, then keeps draining stdout so anvil never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut keys = Vec::new();
            let mut in_keys = false;
            let mut reported = false;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if reported {
                    continue;
                }
                if line.starts_with("Private Keys") {
                    in_keys = true;
                } else if in_keys && line.starts_with('(') {
                    if let Some(key) = line.split("0x").nth(1).and_then(|k| k.trim().parse::<B256>().ok()) {
                        keys.push(key);
                    }
                } else if let Some(addr) = line.strip_prefix("Listening on") {
                    let port = addr.trim().rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
                    let _ = tx.send((port, std::mem::take(&mut keys)));
                    reported = true;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok((Some(port), keys)) => return Ok(Anvil { child, port, keys, state_cache: state_cache.clone() }),
                Ok((None, _)) => return Err(fail("could not read the listening port".into())),
                Err(_) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        return Err(fail(format!("exited with {status} before listening")));
                    }
                    if Instant::now() > deadline {
                        let _ = child.kill();
                        return Err(fail("did not listen within 30 s".into()));
                    }
                }
            }
        }
    }

    /// TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory anvil persists old blocks' states in, removed when this is dropped.
    pub fn state_dir(&self) -> &Path {
        &self.state_cache
    }

    /// Process id (tests pause the node with SIGSTOP).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// HTTP JSON-RPC URL.
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// WebSocket JSON-RPC URL.
    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    /// Private keys of the funded dev accounts.
    pub fn signers(&self) -> Vec<PrivateKeySigner> {
        self.keys.iter().filter_map(|k| PrivateKeySigner::from_bytes(k).ok()).collect()
    }

    /// Addresses of the funded dev accounts.
    pub fn addresses(&self) -> Vec<Address> {
        self.signers().iter().map(|s| s.address()).collect()
    }

    /// Stops the process (SIGTERM first, so `--state` is dumped), waiting up to 10 s.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.state_cache);
    }
}

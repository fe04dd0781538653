//! The real `phoenix` npm client (tests/it/phoenix_events.js, with `ws` as its transport) as a test listener:
//! joins topics on the daemon's socket and hands back each broadcast it receives.

use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `phoenix` client process and what it printed so far.
pub struct Listener {
    child: Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<Value>,
}

impl Listener {
    /// Starts the client on `topics` and waits for every join to succeed.
    pub async fn join(addr: std::net::SocketAddr, topics: &[String]) -> Listener {
        let found = Command::new("node").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
        assert!(
            found,
            "node was not found: run scripts/setup (installs Node.js and the pinned phoenix and ws packages)"
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let modules = root.join("scripts/tools/node_modules");
        assert!(modules.join("phoenix").is_dir(), "phoenix was not found: run scripts/setup");
        let mut child = Command::new("node")
            .arg(root.join("tests/it/phoenix_events.js"))
            .arg(format!("ws://{addr}/socket/v2"))
            .args(topics)
            .env("NODE_PATH", &modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run node");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut listener = Listener { child, lines, seen: Vec::new() };
        let mut joined = 0;
        while joined < topics.len() {
            let line = listener.next_line(Duration::from_secs(30)).await;
            assert!(!line.starts_with("join_") && line != "timeout", "the client failed: {line}");
            joined += usize::from(line.starts_with("joined "));
        }
        listener
    }

    async fn next_line(&mut self, timeout: Duration) -> String {
        tokio::time::timeout(timeout, self.lines.recv())
            .await
            .expect("the client printed nothing in time")
            .expect("the client exited")
    }

    /// The payload of the first `event` on `topic` (waiting up to 30 s for it).
    pub async fn event(&mut self, topic: &str, event: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let matching = |m: &&Value| m["topic"] == topic && m["event"] == event;
            if let Some(found) = self.seen.iter().find(matching) {
                return found["payload"].clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {event} on {topic}; received {:#?}", self.seen);
            let line = self.next_line(left).await;
            if let Ok(message) = serde_json::from_str::<Value>(&line) {
                self.seen.push(message);
            }
        }
    }

    /// Forgets what was received so far (the next `event` waits for a new one).
    pub fn clear(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            if let Ok(message) = serde_json::from_str::<Value>(&line) {
                self.seen.push(message);
            }
        }
        self.seen.clear();
    }

    /// Closes the client's stdin and checks that it exits cleanly.
    pub async fn finish(mut self) {
        drop(self.child.stdin.take());
        let status = tokio::task::spawn_blocking(move || self.child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "the phoenix client failed");
    }
}

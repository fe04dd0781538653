//! The fan-out hub: which connection listens to which topic, and delivery of broadcast frames.
//!
//! A broadcast is encoded once per topic spelling and the same bytes are queued for every subscriber. Every
//! connection has a queue bounded in frames and in bytes ([`MAX_QUEUED_BYTES`]); a connection whose queue is full is
//! kicked (it closes with 1013), so a slow client never makes memory grow or holds back the others.

use super::protocol::Subscription;
use crate::metrics::Metrics;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One encoded frame, shared by every connection it goes to.
pub type Frame = Arc<str>;

/// Most bytes of frames one connection may have queued (a push of many pending transactions can be a megabyte);
/// past it the connection is kicked like one whose queue is full of frames.
pub const MAX_QUEUED_BYTES: usize = 16 << 20;

#[derive(Debug)]
struct Connection {
    queue: mpsc::Sender<Frame>,
    kicked: CancellationToken,
    /// Bytes of the frames in `queue`.
    queued: Arc<AtomicUsize>,
    /// Its subscriptions as `(canonical, spelling)`, so forgetting it touches only its own topics.
    topics: HashSet<(String, String)>,
}

#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    connections: HashMap<u64, Connection>,
    /// Canonical topic → the spellings clients joined it with → connections.
    topics: HashMap<String, HashMap<String, HashSet<u64>>>,
}

/// What a connection gets from the hub.
#[derive(Debug)]
pub struct Attached {
    /// Connection id.
    pub id: u64,
    frames: mpsc::Receiver<Frame>,
    queued: Arc<AtomicUsize>,
    /// Fired when the connection fell too far behind.
    pub kicked: CancellationToken,
}

impl Attached {
    /// The next frame to send; `None` once the hub forgot the connection.
    pub async fn recv(&mut self) -> Option<Frame> {
        let frame = self.frames.recv().await?;
        self.queued.fetch_sub(frame.len(), Ordering::Relaxed);
        Some(frame)
    }

    #[cfg(test)]
    fn try_recv(&mut self) -> Option<Frame> {
        let frame = self.frames.try_recv().ok()?;
        self.queued.fetch_sub(frame.len(), Ordering::Relaxed);
        Some(frame)
    }
}

/// Topic subscriptions of every WebSocket connection.
#[derive(Debug)]
pub struct Hub {
    registry: Mutex<Registry>,
    queue: usize,
    metrics: Arc<Metrics>,
}

impl Hub {
    /// A hub whose connections queue at most `queue` frames, counting dropped slow connections into `metrics`.
    pub fn new(queue: usize, metrics: Arc<Metrics>) -> Self {
        Hub { registry: Mutex::new(Registry::default()), queue: queue.max(1), metrics }
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a new connection.
    pub fn attach(&self) -> Attached {
        let (queue, frames) = mpsc::channel(self.queue);
        let (kicked, queued) = (CancellationToken::new(), Arc::new(AtomicUsize::new(0)));
        let mut registry = self.registry();
        registry.next_id += 1;
        let id = registry.next_id;
        let connection = Connection { queue, kicked: kicked.clone(), queued: queued.clone(), topics: HashSet::new() };
        registry.connections.insert(id, connection);
        Attached { id, frames, queued, kicked }
    }

    /// Applies a subscription change of connection `id`.
    pub fn apply(&self, id: u64, change: &Subscription) {
        let mut guard = self.registry();
        let registry = &mut *guard;
        let Some(connection) = registry.connections.get_mut(&id) else { return };
        match change {
            Subscription::Add { topic, canonical } => {
                connection.topics.insert((canonical.clone(), topic.clone()));
                registry.topics.entry(canonical.clone()).or_default().entry(topic.clone()).or_default().insert(id);
            }
            Subscription::Remove { topic, canonical } => {
                connection.topics.remove(&(canonical.clone(), topic.clone()));
                remove(registry, id, topic, canonical);
            }
        }
    }

    /// Forgets connection `id` and all its subscriptions. It costs as much as the connection's own topics, not
    /// everyone's: the lock it holds stops every broadcast, and a whole crowd of clients can leave at once.
    pub fn detach(&self, id: u64) {
        let mut registry = self.registry();
        let Some(connection) = registry.connections.remove(&id) else { return };
        for (canonical, topic) in &connection.topics {
            remove(&mut registry, id, topic, canonical);
        }
    }

    /// Whether anyone listens to `canonical` (so payloads nobody would receive are not computed).
    pub fn wants(&self, canonical: &str) -> bool {
        self.registry().topics.contains_key(canonical)
    }

    /// The canonical topics starting with `prefix` that someone listens to.
    pub fn topics_with_prefix(&self, prefix: &str) -> Vec<String> {
        self.registry().topics.keys().filter(|t| t.starts_with(prefix)).cloned().collect()
    }

    /// Connections attached.
    pub fn connections(&self) -> usize {
        self.registry().connections.len()
    }

    /// Connections attached and topic subscriptions over all of them (one per connection and topic spelling).
    pub fn counts(&self) -> (usize, usize) {
        let registry = self.registry();
        let subscriptions = registry.topics.values().flat_map(|spellings| spellings.values()).map(HashSet::len).sum();
        (registry.connections.len(), subscriptions)
    }

    /// Broadcasts `event` with `payload` to every subscriber of `canonical`; returns how many were queued. A frame
    /// is `[null,null,"<topic>",…` ([`is_private`] reads its topic from that).
    pub fn publish(&self, canonical: &str, event: &str, payload: &Value) -> usize {
        let registry = self.registry();
        let Some(spellings) = registry.topics.get(canonical) else {
            return 0;
        };
        let body = format!("{},{}]", Value::from(event), payload);
        let mut delivered = 0;
        for (topic, ids) in spellings {
            let frame: Frame = Arc::from(format!("[null,null,{},{body}", Value::from(topic.as_str())));
            for id in ids {
                let Some(connection) = registry.connections.get(id) else { continue };
                // Counted before the frame is queued, so the receiver never subtracts bytes not yet added.
                let queued = connection.queued.fetch_add(frame.len(), Ordering::Relaxed) + frame.len();
                // `Err(true)`: over either bound; `Err(false)`: the connection is gone.
                let sent = if queued > MAX_QUEUED_BYTES {
                    Err(true)
                } else {
                    connection
                        .queue
                        .try_send(frame.clone())
                        .map_err(|e| matches!(e, mpsc::error::TrySendError::Full(_)))
                };
                match sent {
                    Ok(()) => delivered += 1,
                    Err(full) => {
                        connection.queued.fetch_sub(frame.len(), Ordering::Relaxed);
                        if full && !connection.kicked.is_cancelled() {
                            self.metrics.ws_dropped_slow();
                            connection.kicked.cancel();
                        }
                    }
                }
            }
        }
        delivered
    }
}

fn remove(registry: &mut Registry, id: u64, topic: &str, canonical: &str) {
    if let Some(spellings) = registry.topics.get_mut(canonical) {
        if let Some(ids) = spellings.get_mut(topic) {
            ids.remove(&id);
            if ids.is_empty() {
                spellings.remove(topic);
            }
        }
        if spellings.is_empty() {
            registry.topics.remove(canonical);
        }
    }
}

/// Whether a broadcast frame is of a private topic (`watchlist:<account>`), which only that account's token may
/// receive.
pub fn is_private(frame: &str) -> bool {
    frame.starts_with(r#"[null,null,"watchlist:"#)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn add(topic: &str, canonical: &str) -> Subscription {
        Subscription::Add { topic: topic.into(), canonical: canonical.into() }
    }

    #[test]
    fn frames_keep_each_clients_spelling_and_reach_only_subscribers() {
        let hub = Hub::new(4, Arc::default());
        let mut a = hub.attach();
        let mut b = hub.attach();
        let mut c = hub.attach();
        hub.apply(a.id, &add("addresses:0xabcd", "addresses:0xabcd"));
        hub.apply(b.id, &add("addresses:0xABCD", "addresses:0xabcd"));
        assert!(hub.wants("addresses:0xabcd"));
        assert_eq!(hub.publish("addresses:0xabcd", "balance", &json!({"balance": "1"})), 2);
        assert_eq!(&*a.try_recv().unwrap(), r#"[null,null,"addresses:0xabcd","balance",{"balance":"1"}]"#);
        assert_eq!(&*b.try_recv().unwrap(), r#"[null,null,"addresses:0xABCD","balance",{"balance":"1"}]"#);
        assert!(c.try_recv().is_none());
        hub.detach(a.id);
        hub.apply(
            b.id,
            &Subscription::Remove { topic: "addresses:0xABCD".into(), canonical: "addresses:0xabcd".into() },
        );
        assert!(!hub.wants("addresses:0xabcd"));
        assert_eq!(hub.connections(), 2);
        hub.apply(c.id, &add("blocks:new_block", "blocks:new_block"));
        assert_eq!(hub.counts(), (2, 1));
    }

    /// Leaving takes away the connection's own subscriptions and nobody else's, whoever shares its topics.
    #[test]
    fn a_connection_leaving_takes_only_its_own_subscriptions() {
        let hub = Hub::new(8, Arc::default());
        let (leaving, mut staying) = (hub.attach(), hub.attach());
        for n in 0..50 {
            let topic = format!("addresses:0x{n:040x}");
            hub.apply(leaving.id, &add(&topic, &topic));
            if n % 2 == 0 {
                hub.apply(staying.id, &add(&topic, &topic));
            }
        }
        hub.apply(leaving.id, &add("blocks:new_block", "blocks:new_block"));
        hub.apply(
            leaving.id,
            &Subscription::Remove { topic: "blocks:new_block".into(), canonical: "blocks:new_block".into() },
        );
        assert_eq!(hub.counts(), (2, 75));
        hub.detach(leaving.id);
        assert_eq!(hub.counts(), (1, 25));
        assert!(!hub.wants(&format!("addresses:0x{:040x}", 1)), "a topic only the leaver had is gone");
        let shared = format!("addresses:0x{:040x}", 2);
        assert_eq!(hub.publish(&shared, "balance", &json!({})), 1);
        assert!(staying.try_recv().is_some());
        hub.detach(staying.id);
        assert_eq!(hub.counts(), (0, 0));
        hub.detach(staying.id);
        hub.apply(staying.id, &add("blocks:new_block", "blocks:new_block"));
        assert!(!hub.wants("blocks:new_block"), "a forgotten connection subscribes to nothing");
    }

    /// The frames of a watchlist topic, and only those, read as private (a payload naming one does not).
    #[test]
    fn watchlist_frames_and_only_those_are_private() {
        let hub = Hub::new(4, Arc::default());
        let mut a = hub.attach();
        hub.apply(a.id, &add("watchlist:0xabcd", "watchlist:0xabcd"));
        hub.apply(a.id, &add("addresses:0xabcd", "addresses:0xabcd"));
        hub.publish("watchlist:0xabcd", "transaction", &json!({"transactions": []}));
        hub.publish("addresses:0xabcd", "transaction", &json!({"note": "watchlist:0xabcd"}));
        assert!(is_private(&a.try_recv().unwrap()));
        assert!(!is_private(&a.try_recv().unwrap()));
    }

    #[test]
    fn a_full_queue_kicks_only_that_connection() {
        let metrics = Arc::new(Metrics::new());
        let hub = Hub::new(2, metrics.clone());
        let slow = hub.attach();
        let mut fast = hub.attach();
        hub.apply(slow.id, &add("blocks:new_block", "blocks:new_block"));
        hub.apply(fast.id, &add("blocks:new_block", "blocks:new_block"));
        for n in 0..5 {
            hub.publish("blocks:new_block", "new_block", &json!({"n": n}));
            fast.try_recv().unwrap();
        }
        assert!(slow.kicked.is_cancelled(), "the slow connection is dropped");
        assert!(!fast.kicked.is_cancelled());
        let text = metrics.encode(&Default::default());
        assert!(text.contains("rockscout_ws_dropped_slow_consumers_total 1\n"), "counted once: {text}");
    }

    #[test]
    fn a_connection_with_too_many_bytes_queued_is_kicked_before_its_frames_run_out() {
        let hub = Hub::new(1024, Arc::default());
        let (mut reading, slow) = (hub.attach(), hub.attach());
        for connection in [&reading, &slow] {
            hub.apply(
                connection.id,
                &add("transactions:new_pending_transaction", "transactions:new_pending_transaction"),
            );
        }
        let big = json!({"pending": "x".repeat(1 << 20)});
        for _ in 0..(MAX_QUEUED_BYTES >> 20) + 1 {
            hub.publish("transactions:new_pending_transaction", "pending_transaction", &big);
            assert!(reading.try_recv().is_some());
        }
        assert!(slow.kicked.is_cancelled(), "{} frames of 1 MiB are more than the byte budget", MAX_QUEUED_BYTES >> 20);
        assert!(!reading.kicked.is_cancelled(), "a connection that reads keeps its budget");
    }
}

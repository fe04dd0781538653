//! Per-client rate limiting: the client's IP (through trusted proxies' `X-Forwarded-For`), a token bucket per IP
//! with bounded memory, and the `x-ratelimit-*` headers sent on every response; and a per-IP bound on requests in
//! flight ([`ConcurrencyLimiter`], used by the JSON-RPC passthrough).

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Rate limiting settings.
#[derive(Debug, Clone)]
pub struct RateLimitConfig {
    /// Requests per second per client; `0` turns limiting off.
    pub per_second: u32,
    /// Burst size (bucket capacity).
    pub burst: u32,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpAddr>,
    /// Clients never limited.
    pub exempt: Vec<IpAddr>,
    /// Most clients tracked at once.
    pub max_tracked: usize,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig { per_second: 0, burst: 0, trusted_proxies: vec![], exempt: vec![], max_tracked: 100_000 }
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// The key a client is limited under: an IPv4 address (IPv4-mapped or not) as itself, an IPv6 address by its /64
/// prefix. One host or site is handed a whole /64, so counting each of its addresses apart would let one client
/// multiply every per-client budget (requests, connections, failed sign-ins).
pub fn client_bucket(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) if !v6.is_loopback() => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(std::net::Ipv6Addr::from(prefix))
        }
        ip => ip,
    }
}

/// What a [`RateLimiter`] counts under: a client's IP by [`client_bucket`], an API key's id as itself.
pub trait LimitKey: Copy + Eq + std::hash::Hash + Ord {
    /// The bucket this key's requests are counted in.
    fn bucket(self) -> Self;
}

impl LimitKey for IpAddr {
    fn bucket(self) -> Self {
        client_bucket(self)
    }
}

impl LimitKey for u64 {
    fn bucket(self) -> Self {
        self
    }
}

/// The client's address: the peer, or, when the peer is a trusted proxy, the nearest untrusted hop of
/// `X-Forwarded-For` (read right to left, so a client cannot spoof past the proxy). A hop may carry a port
/// (`203.0.113.5:4444`, `[2001:db8::1]:4444`); a hop that is no address at all (`unknown`) ends the walk there,
/// answering the proxy's own address: the hops before it were written by whoever sent the request.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    let peer = canonical(peer);
    if !trusted.contains(&peer) {
        return peer;
    }
    let hops = headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(','));
    let hops: Vec<Option<IpAddr>> = hops.map(|h| forwarded_hop(h.trim()).map(canonical)).collect();
    for hop in hops.into_iter().rev() {
        match hop {
            Some(ip) if trusted.contains(&ip) => continue,
            Some(ip) => return ip,
            None => return peer,
        }
    }
    peer
}

/// The address of one `X-Forwarded-For` hop: an address, optionally with a port (IPv6 then in brackets).
fn forwarded_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    hop.parse::<std::net::SocketAddrV4>().ok().map(|a| IpAddr::V4(*a.ip()))
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// What the limiter says about one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Limiting is off or the client is exempt.
    Unlimited,
    /// Served; the quota after this request.
    Allowed(Quota),
    /// Refused; the quota now.
    Limited(Quota),
}

/// A client's quota, for the response headers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quota {
    /// Bucket capacity.
    pub limit: u32,
    /// Whole requests left.
    pub remaining: u32,
    /// Milliseconds until the bucket is full again.
    pub reset_ms: u64,
    /// Milliseconds until the next request is allowed (0 when one is).
    pub retry_ms: u64,
}

/// Token buckets per client: per IP by default, per API key id for requests with a valid key.
#[derive(Debug)]
pub struct RateLimiter<K = IpAddr> {
    config: RateLimitConfig,
    exempt: HashSet<K>,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl RateLimiter<IpAddr> {
    /// A limiter with `config`.
    pub fn new(config: RateLimitConfig) -> Self {
        let exempt = config.exempt.iter().copied().map(canonical).collect();
        RateLimiter { config, exempt, buckets: Mutex::new(HashMap::new()) }
    }
}

impl<K> RateLimiter<K> {
    /// A limiter per key (an API key's id, or the IP of requests with API keys): `per_second` with bursts of
    /// `burst`, at most `max_tracked` keys at once.
    pub fn per_key(per_second: u32, burst: u32, max_tracked: usize) -> Self {
        let config = RateLimitConfig { per_second, burst, max_tracked, ..RateLimitConfig::default() };
        RateLimiter { config, exempt: HashSet::new(), buckets: Mutex::new(HashMap::new()) }
    }
}

impl<K: LimitKey> RateLimiter<K> {
    /// Whether limiting is on.
    pub fn enabled(&self) -> bool {
        self.config.per_second > 0
    }

    /// The trusted proxies.
    pub fn trusted_proxies(&self) -> &[IpAddr] {
        &self.config.trusted_proxies
    }

    /// Whether the peer `ip` is one that per-client bounds leave alone: an exempt client or a trusted proxy (whose
    /// connections carry many clients).
    pub fn spares_peer(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.config.exempt.contains(&ip) || self.config.trusted_proxies.contains(&ip)
    }

    fn capacity(&self) -> f64 {
        f64::from(self.config.burst.max(1))
    }

    fn quota(&self, tokens: f64) -> Quota {
        let rate = f64::from(self.config.per_second);
        let capacity = self.capacity();
        Quota {
            limit: self.config.burst.max(1),
            remaining: tokens.floor().max(0.0) as u32,
            reset_ms: ((capacity - tokens).max(0.0) / rate * 1000.0).ceil() as u64,
            retry_ms: ((1.0 - tokens).max(0.0) / rate * 1000.0).ceil() as u64,
        }
    }

    /// Takes one token for `ip` (the client's key) at `now`.
    pub fn check(&self, ip: K, now: Instant) -> Verdict {
        if !self.enabled() || self.exempt.contains(&ip) {
            return Verdict::Unlimited;
        }
        let ip = ip.bucket();
        let rate = f64::from(self.config.per_second);
        let capacity = self.capacity();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.contains_key(&ip) && buckets.len() >= self.config.max_tracked {
            self.evict(&mut buckets, now);
        }
        let bucket = buckets.entry(ip).or_insert(Bucket { tokens: capacity, updated: now });
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Verdict::Allowed(self.quota(bucket.tokens))
        } else {
            Verdict::Limited(self.quota(bucket.tokens))
        }
    }

    /// Frees room: buckets that refilled completely carry no information and go first; if that is not enough,
    /// the least recently seen tenth goes.
    fn evict(&self, buckets: &mut HashMap<K, Bucket>, now: Instant) {
        let rate = f64::from(self.config.per_second);
        let capacity = self.capacity();
        buckets.retain(|_, b| b.tokens + now.saturating_duration_since(b.updated).as_secs_f64() * rate < capacity);
        if buckets.len() >= self.config.max_tracked {
            let mut ages: Vec<(Instant, K)> = buckets.iter().map(|(ip, b)| (b.updated, *ip)).collect();
            ages.sort_unstable();
            for (_, ip) in ages.iter().take((self.config.max_tracked / 10).max(1)) {
                buckets.remove(ip);
            }
        }
    }

    /// Clients currently tracked.
    pub fn tracked(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Sets `x-ratelimit-limit`, `-remaining`, `-reset` (ms; all `-1` when unlimited) and `bypass-429-option`, plus
/// `retry-after` (seconds) on a refusal.
pub fn set_headers(headers: &mut HeaderMap, verdict: &Verdict) {
    let (limit, remaining, reset) = match verdict {
        Verdict::Unlimited => (-1i64, -1i64, -1i64),
        Verdict::Allowed(q) | Verdict::Limited(q) => (i64::from(q.limit), i64::from(q.remaining), q.reset_ms as i64),
    };
    let mut set = |name: &'static str, value: i64| {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    };
    set("x-ratelimit-limit", limit);
    set("x-ratelimit-remaining", remaining);
    set("x-ratelimit-reset", reset);
    if let Verdict::Limited(q) = verdict {
        headers.insert(hyper::header::RETRY_AFTER, HeaderValue::from(q.retry_ms.div_ceil(1000).max(1)));
    }
    headers.insert(HeaderName::from_static("bypass-429-option"), HeaderValue::from_static("no_bypass"));
}

/// Requests in flight (or units of another resource, such as KiB of request bodies) per client IP, at most
/// `per_client` each. Only clients holding some are tracked (at most `max_tracked` at once), so memory is bounded
/// by the server's own concurrency.
#[derive(Debug)]
pub struct ConcurrencyLimiter {
    per_client: usize,
    max_tracked: usize,
    in_flight: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One request in flight (or `units` of the resource); gives them back when dropped.
#[derive(Debug)]
pub struct Slot {
    ip: IpAddr,
    units: usize,
    per_client: usize,
    in_flight: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Slot {
    /// Takes `units` more for the same client, if they stay within its bound.
    pub fn try_grow(&mut self, units: usize) -> bool {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        let Some(count) = in_flight.get_mut(&self.ip) else { return false };
        if count.saturating_add(units) > self.per_client {
            return false;
        }
        *count += units;
        self.units += units;
        true
    }
}

/// Room a request holds, in units (KiB), in a server-wide budget (one semaphore permit per unit) and the same units
/// in its client's share of that budget (a [`ConcurrencyLimiter`]); both are given back when it is dropped.
#[derive(Debug, Default)]
pub struct Room {
    budget: Option<tokio::sync::OwnedSemaphorePermit>,
    share: Option<Slot>,
}

/// Why a [`Room`] could not grow.
#[derive(Debug, PartialEq, Eq)]
pub enum RoomRefused {
    /// The client's share is spent.
    Share,
    /// The whole budget is spent.
    Budget,
}

impl Room {
    /// Grows the room to `units`: within `client`'s share of `shares` (no client: no share, as for an exempt one),
    /// then within `budget`.
    pub fn grow_to(
        &mut self,
        units: usize,
        budget: &Arc<tokio::sync::Semaphore>,
        shares: &ConcurrencyLimiter,
        client: Option<IpAddr>,
    ) -> Result<(), RoomRefused> {
        let more = units.saturating_sub(self.budget.as_ref().map_or(0, |p| p.num_permits()));
        if more == 0 {
            return Ok(());
        }
        if let Some(client) = client {
            let shared = match self.share.as_mut() {
                Some(share) => share.try_grow(more),
                None => shares.try_acquire_many(client, more).map(|s| self.share = Some(s)).is_some(),
            };
            if !shared {
                return Err(RoomRefused::Share);
            }
        }
        let permit = u32::try_from(more).ok().and_then(|n| budget.clone().try_acquire_many_owned(n).ok());
        let permit = permit.ok_or(RoomRefused::Budget)?;
        match self.budget.as_mut() {
            Some(held) => held.merge(permit),
            None => self.budget = Some(permit),
        }
        Ok(())
    }
}

impl ConcurrencyLimiter {
    /// A limiter allowing `per_client` requests in flight per IP, tracking at most `max_tracked` IPs.
    pub fn new(per_client: usize, max_tracked: usize) -> Self {
        ConcurrencyLimiter { per_client, max_tracked, in_flight: Arc::default() }
    }

    /// A slot for `ip`, or `None` when it already has `per_client` requests in flight (or too many clients do).
    pub fn try_acquire(&self, ip: IpAddr) -> Option<Slot> {
        self.try_acquire_many(ip, 1)
    }

    /// `units` for `ip`, or `None` when they would take it past `per_client` (or too many clients hold some).
    pub fn try_acquire_many(&self, ip: IpAddr, units: usize) -> Option<Slot> {
        let ip = client_bucket(ip);
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if !in_flight.contains_key(&ip) && in_flight.len() >= self.max_tracked {
            return None;
        }
        let count = in_flight.entry(ip).or_insert(0);
        if count.saturating_add(units) > self.per_client {
            if *count == 0 {
                in_flight.remove(&ip);
            }
            return None;
        }
        *count += units;
        Some(Slot { ip, units, per_client: self.per_client, in_flight: self.in_flight.clone() })
    }

    /// The most one client may hold.
    pub fn per_client(&self) -> usize {
        self.per_client
    }

    /// Requests in flight, all clients together.
    pub fn total_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).values().sum()
    }

    /// Requests in flight for `ip`.
    pub fn in_flight(&self, ip: IpAddr) -> usize {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).get(&client_bucket(ip)).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = in_flight.get_mut(&self.ip) {
            *count = count.saturating_sub(self.units);
            if *count == 0 {
                in_flight.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limiter(per_second: u32, burst: u32, max_tracked: usize) -> RateLimiter {
        RateLimiter::new(RateLimitConfig { per_second, burst, max_tracked, ..Default::default() })
    }

    #[test]
    fn bucket_allows_the_burst_then_refills_at_the_rate() {
        let l = limiter(10, 3, 100);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        for left in [2, 1, 0] {
            assert!(matches!(l.check(ip, t0), Verdict::Allowed(q) if q.remaining == left));
        }
        let Verdict::Limited(q) = l.check(ip, t0) else { panic!("limited") };
        assert_eq!((q.limit, q.remaining, q.retry_ms, q.reset_ms), (3, 0, 100, 300));
        // 100 ms later one token is back.
        assert!(matches!(l.check(ip, t0 + Duration::from_millis(100)), Verdict::Allowed(_)));
        // Another client is not affected.
        assert!(matches!(l.check("10.0.0.2".parse().unwrap(), t0), Verdict::Allowed(q) if q.remaining == 2));
    }

    /// The addresses of one IPv6 /64 are one client to every per-client bound; other networks are not.
    #[test]
    fn an_ipv6_network_of_64_bits_is_one_client() {
        let l = limiter(1, 2, 100);
        let t0 = Instant::now();
        for ip in ["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe"] {
            assert!(matches!(l.check(ip.parse().unwrap(), t0), Verdict::Allowed(_)), "{ip}");
        }
        assert!(matches!(l.check("2001:db8:1:2:abcd::9".parse().unwrap(), t0), Verdict::Limited(_)));
        assert!(matches!(l.check("2001:db8:1:3::1".parse().unwrap(), t0), Verdict::Allowed(_)), "the next /64");
        let slots = ConcurrencyLimiter::new(1, 10);
        let held = slots.try_acquire("2001:db8:1:2::7".parse().unwrap()).unwrap();
        assert!(slots.try_acquire("2001:db8:1:2::8".parse().unwrap()).is_none());
        drop(held);
        assert_eq!(client_bucket("::1".parse().unwrap()), "::1".parse::<IpAddr>().unwrap(), "loopback stays itself");
        assert_eq!(client_bucket("::ffff:10.1.2.3".parse().unwrap()), "10.1.2.3".parse::<IpAddr>().unwrap());
        assert_eq!(client_bucket("10.1.2.3".parse().unwrap()), "10.1.2.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn memory_is_bounded() {
        let l = limiter(1, 5, 1000);
        let t0 = Instant::now();
        for i in 0..10_000u32 {
            l.check(IpAddr::from(i.to_be_bytes()), t0);
        }
        assert!(l.tracked() <= 1000, "tracked {}", l.tracked());
    }

    #[test]
    fn exempt_clients_and_disabled_limits_are_unlimited() {
        let ip: IpAddr = "192.168.1.1".parse().unwrap();
        let l = RateLimiter::new(RateLimitConfig { per_second: 1, burst: 1, exempt: vec![ip], ..Default::default() });
        for _ in 0..10 {
            assert_eq!(l.check(ip, Instant::now()), Verdict::Unlimited);
        }
        assert_eq!(limiter(0, 0, 10).check(ip, Instant::now()), Verdict::Unlimited);
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxy: IpAddr = "127.0.0.1".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", HeaderValue::from_static("6.6.6.6, 10.1.2.3, 127.0.0.1"));
        assert_eq!(client_ip(proxy, &headers, &[proxy]), "10.1.2.3".parse::<IpAddr>().unwrap());
        let stranger: IpAddr = "8.8.8.8".parse().unwrap();
        assert_eq!(client_ip(stranger, &headers, &[proxy]), stranger);
        assert_eq!(client_ip(proxy, &HeaderMap::new(), &[proxy]), proxy);
        // Hops with ports are addresses; a hop that is none ends the walk (what precedes it is the client's say).
        let hop = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("x-forwarded-for", value.parse().unwrap());
            client_ip(proxy, &headers, &[proxy])
        };
        assert_eq!(hop("203.0.113.5:4444"), "203.0.113.5".parse::<IpAddr>().unwrap());
        assert_eq!(hop("[2001:db8::1]:4444"), "2001:db8::1".parse::<IpAddr>().unwrap());
        assert_eq!(hop("1.2.3.4, garbage"), proxy, "not the spoofable hop before the unreadable one");
        assert_eq!(hop("unknown"), proxy);
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(client_ip(mapped, &HeaderMap::new(), &[]), proxy);
    }

    #[test]
    fn concurrency_is_bounded_per_client_and_released_on_drop() {
        let limiter = ConcurrencyLimiter::new(2, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let (first, second) = (limiter.try_acquire(a).unwrap(), limiter.try_acquire(a).unwrap());
        assert!(limiter.try_acquire(a).is_none());
        assert!(limiter.try_acquire("::ffff:10.0.0.1".parse().unwrap()).is_none(), "mapped IPv4 is the same client");
        let b = limiter.try_acquire("10.0.0.2".parse().unwrap()).unwrap();
        assert!(limiter.try_acquire("10.0.0.3".parse().unwrap()).is_none(), "at most two clients tracked");
        assert_eq!(limiter.total_in_flight(), 3);
        drop(first);
        assert_eq!(limiter.in_flight(a), 1);
        let third = limiter.try_acquire(a).unwrap();
        drop((second, third, b));
        assert_eq!(limiter.in_flight(a), 0);
        assert!(limiter.try_acquire("10.0.0.3".parse().unwrap()).is_some());
    }
}

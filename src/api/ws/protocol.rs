//! The Phoenix V2 channel protocol as Blockscout speaks it: 5-element JSON array frames
//! `[join_ref, ref, topic, event, payload]`, topic classification, and the per-connection state machine for
//! `phx_join`, `phx_leave` and `heartbeat`. Pure: no sockets here.
//!
//! What a connection keeps is bounded: at most `max_topics` joined topics, each at most [`MAX_TOPIC_BYTES`] long
//! with a join_ref of at most [`MAX_JOIN_REF_BYTES`] (as JSON); longer joins are refused and nothing is stored.

use super::topic::{Refusal, Topic};
use serde_json::{json, Value};
use std::collections::HashMap;

/// One decoded client frame. `join_ref` and `ref` are kept exactly as sent (string, number or null) because
/// they must be echoed back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The join reference.
    pub join_ref: Value,
    /// The message reference.
    pub msg_ref: Value,
    /// The topic, as the client spelled it.
    pub topic: String,
    /// The event.
    pub event: String,
    /// The payload object.
    pub payload: Value,
}

/// Longest topic a connection may join, in bytes (the longest real topic, `addresses:<address>`, has 52).
pub const MAX_TOPIC_BYTES: usize = 256;

/// Longest join_ref a joined topic keeps, in bytes of JSON (clients send short counters such as `"3"`).
pub const MAX_JOIN_REF_BYTES: usize = 64;

/// Why a join is refused before its topic is looked at, if it is.
fn oversized_join(m: &Message) -> Option<String> {
    if m.topic.len() > MAX_TOPIC_BYTES {
        return Some(format!("topic too long (at most {MAX_TOPIC_BYTES} bytes)"));
    }
    if m.join_ref.to_string().len() > MAX_JOIN_REF_BYTES {
        return Some(format!("join_ref too long (at most {MAX_JOIN_REF_BYTES} bytes)"));
    }
    None
}

/// A client frame that is not a Phoenix V2 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed frame: {0}")]
pub struct Malformed(pub &'static str);

/// Parses a text frame. Extra trailing elements are tolerated, as Phoenix does.
pub fn parse(text: &str) -> Result<Message, Malformed> {
    let value: Value = serde_json::from_str(text).map_err(|_| Malformed("not JSON"))?;
    let Value::Array(mut parts) = value else {
        return Err(Malformed("not an array"));
    };
    if parts.len() < 5 {
        return Err(Malformed("fewer than 5 elements"));
    }
    parts.truncate(5);
    let payload = parts.pop().expect("5 elements");
    let event = parts.pop().expect("5 elements");
    let topic = parts.pop().expect("5 elements");
    let msg_ref = parts.pop().expect("5 elements");
    let join_ref = parts.pop().expect("5 elements");
    let (Value::String(topic), Value::String(event)) = (topic, event) else {
        return Err(Malformed("topic and event must be strings"));
    };
    if !payload.is_object() {
        return Err(Malformed("payload must be an object"));
    }
    Ok(Message { join_ref, msg_ref, topic, event, payload })
}

/// Encodes a frame.
pub fn encode(join_ref: &Value, msg_ref: &Value, topic: &str, event: &str, payload: &Value) -> String {
    json!([join_ref, msg_ref, topic, event, payload]).to_string()
}

/// A broadcast frame: `[null, null, topic, event, payload]`.
pub fn broadcast(topic: &str, event: &str, payload: &Value) -> String {
    encode(&Value::Null, &Value::Null, topic, event, payload)
}

fn reply(join_ref: &Value, msg_ref: &Value, topic: &str, status: &str, response: Value) -> String {
    encode(join_ref, msg_ref, topic, "phx_reply", &json!({"status": status, "response": response}))
}

/// What a topic is, for joining.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicKind {
    /// Joinable; broadcasts for it are published under this canonical (lowercase) name.
    Joinable(String),
    /// An address topic whose suffix is not an address.
    InvalidAddress,
    /// A known prefix with a suffix its channel does not accept.
    JoinCrashed,
    /// No channel serves this prefix.
    Unmatched,
}

/// Classifies a topic as Blockscout's V2 socket does. Address and hash suffixes are case-insensitive and
/// published under their lowercase form.
pub fn classify(topic: &str) -> TopicKind {
    match Topic::parse(topic) {
        Ok(topic) => TopicKind::Joinable(topic.to_string()),
        Err(Refusal::InvalidAddress) => TopicKind::InvalidAddress,
        Err(Refusal::JoinCrashed) => TopicKind::JoinCrashed,
        Err(Refusal::Unmatched) => TopicKind::Unmatched,
    }
}

/// A change of subscriptions the connection must apply after handling a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// Start receiving broadcasts of `canonical`, framed with the client's `topic` spelling.
    Add {
        /// The client's spelling.
        topic: String,
        /// The canonical topic.
        canonical: String,
    },
    /// Stop.
    Remove {
        /// The client's spelling.
        topic: String,
        /// The canonical topic.
        canonical: String,
    },
}

/// What handling one message produced.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Frames to send, in order.
    pub frames: Vec<String>,
    /// Subscription changes, applied before the frames are sent.
    pub changes: Vec<Subscription>,
}

#[derive(Debug, Clone)]
struct Joined {
    join_ref: Value,
    canonical: String,
}

/// The channels one connection has joined.
#[derive(Debug)]
pub struct Channels {
    joined: HashMap<String, Joined>,
    max_topics: usize,
    account: Option<alloy::primitives::Address>,
}

impl Channels {
    /// No channels yet; at most `max_topics` at once.
    pub fn new(max_topics: usize) -> Self {
        Channels { joined: HashMap::new(), max_topics, account: None }
    }

    /// The same, for a connection authenticated as `account` (which may join its own `watchlist:` topic).
    pub fn for_account(mut self, account: Option<alloy::primitives::Address>) -> Self {
        self.account = account;
        self
    }

    /// Whether joining `topic` needs an account this connection is not authenticated as.
    fn forbidden(&self, topic: &str) -> bool {
        matches!(Topic::parse(topic), Ok(Topic::Watchlist(owner)) if self.account != Some(owner))
    }

    /// Topics currently joined.
    pub fn len(&self) -> usize {
        self.joined.len()
    }

    /// Whether no topic is joined.
    pub fn is_empty(&self) -> bool {
        self.joined.is_empty()
    }

    /// Handles one client message.
    pub fn handle(&mut self, m: Message) -> Outcome {
        let mut out = Outcome::default();
        let ok = |out: &mut Outcome, m: &Message| {
            out.frames.push(reply(&m.join_ref, &m.msg_ref, &m.topic, "ok", json!({})));
        };
        match (m.topic.as_str(), m.event.as_str()) {
            ("phoenix", "heartbeat") => ok(&mut out, &m),
            (_, "phx_join") if oversized_join(&m).is_some() => {
                let reason = oversized_join(&m).unwrap_or_default();
                out.frames.push(reply(&m.join_ref, &m.msg_ref, &m.topic, "error", json!({"reason": reason})));
            }
            (_, "phx_join") if self.forbidden(&m.topic) => {
                out.frames.push(reply(&m.join_ref, &m.msg_ref, &m.topic, "error", json!({"reason": "unauthorized"})));
            }
            (_, "phx_join") => match classify(&m.topic) {
                TopicKind::Unmatched => out.frames.push(reply(
                    &Value::Null,
                    &m.msg_ref,
                    &m.topic,
                    "error",
                    json!({"reason": "unmatched topic"}),
                )),
                TopicKind::InvalidAddress => out.frames.push(reply(
                    &m.join_ref,
                    &m.msg_ref,
                    &m.topic,
                    "error",
                    json!({"reason": "Invalid address hash"}),
                )),
                TopicKind::JoinCrashed => out.frames.push(reply(
                    &m.join_ref,
                    &m.msg_ref,
                    &m.topic,
                    "error",
                    json!({"reason": "join crashed"}),
                )),
                TopicKind::Joinable(canonical) => {
                    // A join replaces the connection's channel of the same topic, whatever its spelling: a
                    // duplicate join, or the topic in another letter case (one spelling per topic, or each
                    // spelling would get its own copy of every push).
                    let replaced = self.joined.iter().find(|(_, j)| j.canonical == canonical).map(|(t, _)| t.clone());
                    let replaced = replaced.and_then(|t| self.joined.remove(&t).map(|joined| (t, joined)));
                    if replaced.is_none() && self.joined.len() >= self.max_topics {
                        let reason = format!("too many topics (at most {})", self.max_topics);
                        out.frames.push(reply(&m.join_ref, &m.msg_ref, &m.topic, "error", json!({"reason": reason})));
                        return out;
                    }
                    if let Some((topic, old)) = &replaced {
                        out.changes
                            .push(Subscription::Remove { topic: topic.clone(), canonical: old.canonical.clone() });
                    }
                    out.changes.push(Subscription::Add { topic: m.topic.clone(), canonical: canonical.clone() });
                    self.joined.insert(m.topic.clone(), Joined { join_ref: m.join_ref.clone(), canonical });
                    ok(&mut out, &m);
                    // The old channel is closed (clients discard it: its join_ref is stale).
                    if let Some((topic, old)) = replaced {
                        out.frames.push(encode(&old.join_ref, &old.join_ref, &topic, "phx_close", &json!({})));
                    }
                }
            },
            (_, "phx_leave") => match self.joined.get(&m.topic) {
                Some(joined) if joined.join_ref == m.join_ref => {
                    let joined = self.joined.remove(&m.topic).expect("present");
                    out.changes.push(Subscription::Remove { topic: m.topic.clone(), canonical: joined.canonical });
                    ok(&mut out, &m);
                    out.frames.push(encode(&joined.join_ref, &joined.join_ref, &m.topic, "phx_close", &json!({})));
                }
                // A leave for an older join of the topic: Phoenix ignores it.
                Some(_) => {}
                None => ok(&mut out, &m),
            },
            _ => match self.joined.remove(&m.topic) {
                // No channel handles client events: the channel "crashes" and the client rejoins.
                Some(joined) => {
                    out.changes.push(Subscription::Remove { topic: m.topic.clone(), canonical: joined.canonical });
                    out.frames.push(encode(&joined.join_ref, &joined.join_ref, &m.topic, "phx_error", &json!({})));
                }
                None => out.frames.push(reply(
                    &Value::Null,
                    &m.msg_ref,
                    &m.topic,
                    "error",
                    json!({"reason": "unmatched topic"}),
                )),
            },
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(channels: &mut Channels, text: &str) -> Vec<Value> {
        let out = channels.handle(parse(text).unwrap());
        out.frames.iter().map(|f| serde_json::from_str(f).unwrap()).collect()
    }

    #[test]
    fn parses_and_rejects() {
        let m = parse(r#"["3","3","blocks:new_block","phx_join",{},"extra"]"#).unwrap();
        assert_eq!(
            (m.join_ref, m.msg_ref, m.topic.as_str(), m.event.as_str()),
            (json!("3"), json!("3"), "blocks:new_block", "phx_join")
        );
        assert!(parse("not json").is_err());
        assert!(parse(r#"{"topic":"x"}"#).is_err());
        assert!(parse(r#"["1","1","t","e"]"#).is_err());
        assert!(parse(r#"["1","1",5,"e",{}]"#).is_err());
        assert!(parse(r#"["1","1","t","e",[]]"#).is_err());
    }

    #[test]
    fn topics_are_classified_like_blockscout() {
        let addr = "0xAbCdEf0123456789abcdef0123456789ABCDEF01";
        assert_eq!(classify("blocks:new_block"), TopicKind::Joinable("blocks:new_block".into()));
        assert_eq!(
            classify(&format!("addresses:{addr}")),
            TopicKind::Joinable(format!("addresses:{}", addr.to_lowercase()))
        );
        assert_eq!(classify("addresses:0xZZ"), TopicKind::InvalidAddress);
        assert_eq!(classify("addresses:new_address"), TopicKind::InvalidAddress);
        assert_eq!(classify("blocks:nope"), TopicKind::InvalidAddress);
        assert_eq!(
            classify("transactions:new_transaction"),
            TopicKind::Joinable("transactions:new_transaction".into())
        );
        assert_eq!(classify("transactions:0xABC"), TopicKind::Joinable("transactions:0xabc".into()));
        assert_eq!(classify("exchange_rate:foo"), TopicKind::JoinCrashed);
        assert_eq!(classify("nosuch:topic"), TopicKind::Unmatched);
        assert_eq!(classify("phoenix"), TopicKind::Unmatched);
    }

    #[test]
    fn another_spelling_of_a_joined_topic_replaces_it() {
        let mut c = Channels::new(2);
        let lower = "addresses:0xabcdef0123456789abcdef0123456789abcdef01";
        let upper = "addresses:0xABCDEF0123456789ABCDEF0123456789ABCDEF01";
        let canonical = lower.to_owned();
        frames(&mut c, &format!(r#"["1","1","{lower}","phx_join",{{}}]"#));
        frames(&mut c, r#"["2","2","blocks:new_block","phx_join",{}]"#);
        let out = c.handle(parse(&format!(r#"["3","3","{upper}","phx_join",{{}}]"#)).unwrap());
        assert_eq!(
            out.changes,
            vec![
                Subscription::Remove { topic: lower.into(), canonical: canonical.clone() },
                Subscription::Add { topic: upper.into(), canonical },
            ]
        );
        let sent: Vec<Value> = out.frames.iter().map(|f| serde_json::from_str(f).unwrap()).collect();
        assert_eq!(
            sent,
            vec![
                json!(["3", "3", upper, "phx_reply", {"status": "ok", "response": {}}]),
                json!(["1", "1", lower, "phx_close", {}]),
            ],
            "joined although the connection is at its limit of 2: the topic is the same"
        );
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn join_heartbeat_leave_match_the_wire_examples() {
        let mut c = Channels::new(10);
        assert_eq!(
            frames(&mut c, r#"["3","3","blocks:new_block","phx_join",{}]"#),
            vec![json!(["3","3","blocks:new_block","phx_reply",{"status":"ok","response":{}}])]
        );
        assert_eq!(
            frames(&mut c, r#"[null,"8","phoenix","heartbeat",{}]"#),
            vec![json!([null,"8","phoenix","phx_reply",{"status":"ok","response":{}}])]
        );
        assert_eq!(
            frames(&mut c, r#"["6","6","addresses:0xZZ","phx_join",{}]"#),
            vec![
                json!(["6","6","addresses:0xZZ","phx_reply",{"status":"error","response":{"reason":"Invalid address hash"}}])
            ]
        );
        assert_eq!(
            frames(&mut c, r#"["9","9","nosuch:topic","phx_join",{}]"#),
            vec![
                json!([null,"9","nosuch:topic","phx_reply",{"status":"error","response":{"reason":"unmatched topic"}}])
            ]
        );
        assert_eq!(
            frames(&mut c, r#"["3","10","blocks:new_block","phx_leave",{}]"#),
            vec![
                json!(["3","10","blocks:new_block","phx_reply",{"status":"ok","response":{}}]),
                json!(["3", "3", "blocks:new_block", "phx_close", {}])
            ]
        );
        assert!(c.is_empty());
        // Leaving again: only the reply.
        assert_eq!(frames(&mut c, r#"["3","11","blocks:new_block","phx_leave",{}]"#).len(), 1);
    }

    #[test]
    fn refs_are_echoed_with_their_type() {
        let mut c = Channels::new(10);
        assert_eq!(
            frames(&mut c, r#"[null,null,"blocks:new_block","phx_join",{}]"#),
            vec![json!([null,null,"blocks:new_block","phx_reply",{"status":"ok","response":{}}])]
        );
        assert_eq!(frames(&mut c, r#"[1,7,"phoenix","heartbeat",{}]"#)[0][1], json!(7));
    }

    #[test]
    fn duplicate_join_replaces_and_closes_the_old_channel() {
        let mut c = Channels::new(10);
        c.handle(parse(r#"["3","3","blocks:new_block","phx_join",{}]"#).unwrap());
        let out = c.handle(parse(r#"["12","12","blocks:new_block","phx_join",{}]"#).unwrap());
        assert_eq!(out.changes.len(), 2);
        let f: Vec<Value> = out.frames.iter().map(|f| serde_json::from_str(f).unwrap()).collect();
        assert_eq!(
            f,
            vec![
                json!(["12","12","blocks:new_block","phx_reply",{"status":"ok","response":{}}]),
                json!(["3", "3", "blocks:new_block", "phx_close", {}])
            ]
        );
        // A leave carrying the old join_ref is ignored.
        assert!(frames(&mut c, r#"["3","13","blocks:new_block","phx_leave",{}]"#).is_empty());
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn unknown_events_crash_the_channel_and_topics_are_bounded() {
        let mut c = Channels::new(2);
        c.handle(parse(r#"["3","3","blocks:new_block","phx_join",{}]"#).unwrap());
        assert_eq!(
            frames(&mut c, r#"["3","4","blocks:new_block","shout",{}]"#),
            vec![json!(["3", "3", "blocks:new_block", "phx_error", {}])]
        );
        assert!(c.is_empty());
        assert_eq!(
            frames(&mut c, r#"[null,"5","blocks:new_block","shout",{}]"#)[0][4]["response"]["reason"],
            "unmatched topic"
        );
        c.handle(parse(r#"["6","6","transactions:new_transaction","phx_join",{}]"#).unwrap());
        c.handle(parse(r#"["7","7","blocks:new_block","phx_join",{}]"#).unwrap());
        let refused = frames(&mut c, r#"["8","8","blocks:indexing","phx_join",{}]"#);
        assert_eq!(refused[0][4]["status"], "error");
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn long_topics_and_join_refs_are_refused_and_not_kept() {
        let mut c = Channels::new(10);
        let longest = format!("transactions:{}", "a".repeat(MAX_TOPIC_BYTES - "transactions:".len()));
        let join = |topic: &str, join_ref: &str| json!([join_ref, "1", topic, "phx_join", {}]).to_string();
        assert_eq!(frames(&mut c, &join(&longest, "1"))[0][4]["status"], "ok");
        let too_long = format!("{longest}a");
        let refused = frames(&mut c, &join(&too_long, "2"));
        assert_eq!(refused[0][4]["response"]["reason"], "topic too long (at most 256 bytes)");
        let long_ref = "r".repeat(MAX_JOIN_REF_BYTES);
        let refused = frames(&mut c, &join("blocks:new_block", &long_ref));
        assert_eq!(refused[0][4]["response"]["reason"], "join_ref too long (at most 64 bytes)");
        assert_eq!(c.len(), 1, "only the join within the bounds is kept");
    }
}

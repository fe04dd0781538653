//! Inbound WebSocket frames to messages, with the RFC 6455 rules a server must enforce on its read side:
//! client frames are masked, control frames are short and never fragmented, continuations belong to an open
//! message, close frames carry a valid code and UTF-8 reason, text is UTF-8, and an assembled message never
//! exceeds the size limit however it is fragmented. Pure: no sockets here.

use fastwebsockets::OpCode;

/// Longest payload of a control frame (RFC 6455 §5.5).
const MAX_CONTROL_PAYLOAD: usize = 125;

/// One frame as read from the wire, already unmasked.
#[derive(Debug, Clone, Copy)]
pub struct RawFrame<'a> {
    /// The FIN bit.
    pub fin: bool,
    /// The opcode.
    pub opcode: OpCode,
    /// Whether the client masked it.
    pub masked: bool,
    /// The payload.
    pub payload: &'a [u8],
}

/// What one frame amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A complete text message.
    Text(String),
    /// The start of a binary message (the Phoenix V2 protocol is text only, so it is not assembled).
    Binary,
    /// A ping, whose payload the pong must echo.
    Ping(Vec<u8>),
    /// A pong.
    Pong,
    /// Part of a fragmented message that is still open.
    Fragment,
    /// The client closes, with its status code if it sent one.
    Close(Option<u16>),
}

/// A frame that breaks the protocol; the connection closes with [`Violation::close_code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// Close 1002.
    #[error("protocol error: {0}")]
    Protocol(&'static str),
    /// Close 1007.
    #[error("text is not UTF-8")]
    InvalidUtf8,
    /// Close 1009.
    #[error("message over the size limit")]
    TooBig,
}

impl Violation {
    /// The close code RFC 6455 assigns.
    pub fn close_code(self) -> u16 {
        match self {
            Violation::Protocol(_) => 1002,
            Violation::InvalidUtf8 => 1007,
            Violation::TooBig => 1009,
        }
    }

    /// The close reason sent with the code.
    pub fn reason(self) -> &'static str {
        match self {
            Violation::Protocol(what) => what,
            Violation::InvalidUtf8 => "text is not UTF-8",
            Violation::TooBig => "message too big",
        }
    }
}

/// Close codes a peer may send (RFC 6455 §7.4): the defined ones except those reserved for local use, and the
/// registered (3000–3999) and private (4000–4999) ranges.
fn is_valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// Assembles the frames of one connection into messages of at most `limit` bytes.
#[derive(Debug)]
pub struct Assembler {
    limit: usize,
    /// The text message being received in fragments.
    open: Option<Vec<u8>>,
}

impl Assembler {
    /// Messages of at most `limit` bytes are accepted.
    pub fn new(limit: usize) -> Self {
        Assembler { limit, open: None }
    }

    /// Takes the next frame.
    pub fn push(&mut self, frame: RawFrame<'_>) -> Result<Event, Violation> {
        if !frame.masked {
            return Err(Violation::Protocol("client frames must be masked"));
        }
        match frame.opcode {
            OpCode::Ping | OpCode::Pong | OpCode::Close => {
                if !frame.fin {
                    return Err(Violation::Protocol("fragmented control frame"));
                }
                if frame.payload.len() > MAX_CONTROL_PAYLOAD {
                    return Err(Violation::Protocol("control frame over 125 bytes"));
                }
                match frame.opcode {
                    OpCode::Ping => Ok(Event::Ping(frame.payload.to_vec())),
                    OpCode::Pong => Ok(Event::Pong),
                    _ => close_event(frame.payload),
                }
            }
            OpCode::Text | OpCode::Binary if self.open.is_some() => {
                Err(Violation::Protocol("new message before the fragmented one ended"))
            }
            OpCode::Binary => Ok(Event::Binary),
            OpCode::Text => {
                if frame.payload.len() > self.limit {
                    return Err(Violation::TooBig);
                }
                if frame.fin {
                    return text(frame.payload.to_vec());
                }
                self.open = Some(frame.payload.to_vec());
                Ok(Event::Fragment)
            }
            OpCode::Continuation => {
                let Some(open) = self.open.as_mut() else {
                    return Err(Violation::Protocol("continuation without a message"));
                };
                if open.len() + frame.payload.len() > self.limit {
                    return Err(Violation::TooBig);
                }
                open.extend_from_slice(frame.payload);
                if !frame.fin {
                    return Ok(Event::Fragment);
                }
                text(self.open.take().unwrap_or_default())
            }
        }
    }
}

fn text(bytes: Vec<u8>) -> Result<Event, Violation> {
    String::from_utf8(bytes).map(Event::Text).map_err(|_| Violation::InvalidUtf8)
}

fn close_event(payload: &[u8]) -> Result<Event, Violation> {
    match payload {
        [] => Ok(Event::Close(None)),
        [_] => Err(Violation::Protocol("close frame with a 1-byte payload")),
        [high, low, reason @ ..] => {
            let code = u16::from_be_bytes([*high, *low]);
            if !is_valid_close_code(code) {
                return Err(Violation::Protocol("invalid close code"));
            }
            if std::str::from_utf8(reason).is_err() {
                return Err(Violation::InvalidUtf8);
            }
            Ok(Event::Close(Some(code)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(fin: bool, opcode: OpCode, payload: &[u8]) -> RawFrame<'_> {
        RawFrame { fin, opcode, masked: true, payload }
    }

    #[test]
    fn fragments_are_assembled_up_to_the_limit_inclusive() {
        let mut a = Assembler::new(10);
        assert_eq!(a.push(frame(false, OpCode::Text, b"hello")), Ok(Event::Fragment));
        assert_eq!(a.push(frame(false, OpCode::Continuation, b" ")), Ok(Event::Fragment));
        // A ping between fragments is answered; the message stays open.
        assert_eq!(a.push(frame(true, OpCode::Ping, b"p")), Ok(Event::Ping(b"p".to_vec())));
        assert_eq!(a.push(frame(true, OpCode::Continuation, b"abcd")), Ok(Event::Text("hello abcd".into())));
        assert_eq!(a.push(frame(true, OpCode::Text, b"0123456789")), Ok(Event::Text("0123456789".into())));
        assert_eq!(a.push(frame(true, OpCode::Text, b"0123456789x")), Err(Violation::TooBig));
        let mut a = Assembler::new(10);
        a.push(frame(false, OpCode::Text, b"01234")).unwrap();
        a.push(frame(false, OpCode::Continuation, b"56789")).unwrap();
        assert_eq!(a.push(frame(false, OpCode::Continuation, b"x")), Err(Violation::TooBig));
    }

    #[test]
    fn protocol_errors_get_their_close_codes() {
        let mut a = Assembler::new(100);
        let unmasked = RawFrame { fin: true, opcode: OpCode::Text, masked: false, payload: b"[]" };
        assert_eq!(a.push(unmasked).map_err(Violation::close_code), Err(1002));
        assert_eq!(a.push(frame(true, OpCode::Continuation, b"x")).map_err(Violation::close_code), Err(1002));
        assert_eq!(a.push(frame(false, OpCode::Ping, b"")).map_err(Violation::close_code), Err(1002));
        assert_eq!(a.push(frame(true, OpCode::Pong, &[0; 126])).map_err(Violation::close_code), Err(1002));
        assert_eq!(a.push(frame(true, OpCode::Text, &[0xff, 0xfe])).map_err(Violation::close_code), Err(1007));
        a.push(frame(false, OpCode::Text, b"[")).unwrap();
        assert_eq!(a.push(frame(true, OpCode::Text, b"x")).map_err(Violation::close_code), Err(1002));
        let mut a = Assembler::new(100);
        a.push(frame(false, OpCode::Text, &[0xe2, 0x82])).unwrap();
        assert_eq!(a.push(frame(true, OpCode::Continuation, &[0xac])), Ok(Event::Text("€".into())));
        a.push(frame(false, OpCode::Text, &[0xe2, 0x82])).unwrap();
        assert_eq!(a.push(frame(true, OpCode::Continuation, b"x")), Err(Violation::InvalidUtf8));
    }

    #[test]
    fn close_frames_are_validated() {
        let mut a = Assembler::new(100);
        assert_eq!(a.push(frame(true, OpCode::Close, b"")), Ok(Event::Close(None)));
        assert_eq!(a.push(frame(true, OpCode::Close, &[0x03, 0xe8, b'o', b'k'])), Ok(Event::Close(Some(1000))));
        assert_eq!(a.push(frame(true, OpCode::Close, &[0x0f, 0xa0])), Ok(Event::Close(Some(4000))));
        for bad in [&[0x03][..], &[0x03, 0xed], &[0x03, 0xee], &[0x00, 0x00], &[0x13, 0x88]] {
            assert_eq!(a.push(frame(true, OpCode::Close, bad)).map_err(Violation::close_code), Err(1002), "{bad:?}");
        }
        assert_eq!(a.push(frame(true, OpCode::Close, &[0x03, 0xe8, 0xff])), Err(Violation::InvalidUtf8));
    }
}

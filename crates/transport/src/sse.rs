//! A minimal Server-Sent Events parser (the subset MCP uses: `data`, `id`, `event`,
//! comments), fed with arbitrary byte chunks.
//!
//! Everything read from a peer is bounded: one event (its `data` lines together, or a line
//! still waiting for its newline) may hold at most the parser's limit ([`MAX_EVENT_BYTES`]
//! unless set otherwise), and going past it is an error naming the limit. Each byte is
//! scanned for a newline once, however the stream is chunked.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// `id` field (the last one seen, as the spec carries it over).
    pub id: Option<String>,
    /// `event` field.
    pub event: Option<String>,
    /// `data` lines joined with newlines.
    pub data: String,
}

/// Default bound on one event (and so on one line), the same as the HTTP transport's
/// default bound on a JSON response: an SSE event carries one message.
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// The former name of [`MAX_EVENT_BYTES`].
pub const MAX_LINE: usize = MAX_EVENT_BYTES;

/// Incremental parser state.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes not yet consumed: the start of an unfinished line.
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no newline (so it is not scanned again).
    scanned: usize,
    data: Vec<String>,
    /// Bytes held by `data` (with the newlines that will join them).
    data_bytes: usize,
    id: Option<String>,
    event: Option<String>,
    max_event: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser that refuses events (or lines) longer than `max_event_bytes`.
    pub fn with_limit(max_event_bytes: usize) -> Self {
        SseParser {
            buf: Vec::new(),
            scanned: 0,
            data: Vec::new(),
            data_bytes: 0,
            id: None,
            event: None,
            max_event: max_event_bytes,
        }
    }

    /// Feeds bytes; returns the events completed by them.
    ///
    /// # Errors
    /// A message naming the limit when an event or a line grows past it; the stream
    /// should then be dropped (the parser's state is not meant to be reused).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.buf[start + self.scanned..].iter().position(|b| *b == b'\n') {
            let end = start + self.scanned + offset;
            self.scanned = 0;
            let mut line = &self.buf[start..end];
            start = end + 1;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(SseEvent {
                        id: self.id.clone(),
                        event: self.event.take(),
                        data: self.data.join("\n"),
                    });
                    self.data.clear();
                    self.data_bytes = 0;
                }
                continue;
            }
            if line.first() == Some(&b':') {
                continue;
            }
            let line = String::from_utf8_lossy(line);
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_ref(), ""),
            };
            match field {
                "data" => {
                    self.data_bytes += value.len() + 1;
                    if self.data_bytes > self.max_event {
                        return Err(self.too_long("event"));
                    }
                    self.data.push(value.to_owned());
                }
                "id" => self.id = Some(value.to_owned()),
                "event" => self.event = Some(value.to_owned()),
                _ => {}
            }
        }
        // One move per chunk (not per line) drops what was consumed.
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > self.max_event {
            return Err(self.too_long("line"));
        }
        Ok(out)
    }

    fn too_long(&self, what: &str) -> String {
        format!("SSE {what} longer than {} bytes (the limit for one event)", self.max_event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_split_events() {
        let mut p = SseParser::default();
        assert!(p.feed(b"id: 1\nevent: message\ndata: {\"a\"").unwrap().is_empty());
        let ev = p.feed(b":1}\n\n: keepalive\n\ndata: x\r\ndata: y\r\n\r\n").unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].data, "{\"a\":1}");
        assert_eq!(ev[0].id.as_deref(), Some("1"));
        assert_eq!(ev[1].data, "x\ny");
    }

    #[test]
    fn an_event_split_byte_by_byte_parses_the_same() {
        let stream = b"id: 7\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\ndata: z\n\n";
        let mut p = SseParser::default();
        let mut events = Vec::new();
        for b in stream {
            events.extend(p.feed(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data, "{\"b\":\n2}");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[1].data, "z");
        assert_eq!(events[1].id.as_deref(), Some("7"), "the last id carries over");
    }

    #[test]
    fn an_oversize_line_is_refused_naming_the_limit() {
        let mut p = SseParser::with_limit(1024);
        let mut fed = Ok(Vec::new());
        // A line that never ends, arriving in small chunks.
        for _ in 0..100 {
            fed = p.feed(&[b'x'; 100]);
            if fed.is_err() {
                break;
            }
        }
        let err = fed.unwrap_err();
        assert!(err.contains("SSE line longer than 1024 bytes"), "{err}");
    }

    #[test]
    fn an_oversize_event_of_short_lines_is_refused() {
        let mut p = SseParser::with_limit(1024);
        let mut fed = Ok(Vec::new());
        // Many short data lines and never the blank line that ends the event.
        for _ in 0..100 {
            fed = p.feed(b"data: 0123456789abcdef0123456789abcdef\n");
            if fed.is_err() {
                break;
            }
        }
        let err = fed.unwrap_err();
        assert!(err.contains("SSE event longer than 1024 bytes"), "{err}");
        // Events under the limit are fine.
        let mut p = SseParser::with_limit(1024);
        let ev = p.feed(b"data: small\n\n").unwrap();
        assert_eq!(ev[0].data, "small");
    }
}

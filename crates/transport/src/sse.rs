//! A minimal Server-Sent Events parser (the subset MCP uses: `data`, `id`, `event`,
//! comments), fed with arbitrary byte chunks.

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

/// Incremental parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Vec<String>,
    id: Option<String>,
    event: Option<String>,
}

/// Upper bound on one line, so a peer that never sends a newline cannot exhaust memory.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

impl SseParser {
    /// Feeds bytes; returns the events completed by them.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(SseEvent {
                        id: self.id.clone(),
                        event: self.event.take(),
                        data: self.data.join("\n"),
                    });
                    self.data.clear();
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f.to_owned(), v.strip_prefix(' ').unwrap_or(v).to_owned()),
                None => (line.clone(), String::new()),
            };
            match field.as_str() {
                "data" => self.data.push(value),
                "id" => self.id = Some(value),
                "event" => self.event = Some(value),
                _ => {}
            }
        }
        if self.buf.len() > MAX_LINE {
            return Err(format!("SSE line longer than {MAX_LINE} bytes"));
        }
        Ok(out)
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
}

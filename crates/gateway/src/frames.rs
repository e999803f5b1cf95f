//! The downstream leg on the event bus: each client frame in, and each frame the router
//! writes back, as an `Event::Frame` tagged with the real transport (`http`, `ws`, `stdio`),
//! where it sat in the transport's framing (SSE event id, WebSocket frame number) and the
//! request's correlation id, which the upstream frames it caused carry too.
//!
//! The transports publish (they know the bytes and the framing); nothing is built unless a
//! viewer is attached.

use switchboard_router::Registry;
use switchboard_transport::{Boundary, Direction, Tap};
use switchboard_wire::{Message, meta};

use crate::endpoint::Transport;

/// Publishes one exchange's downstream frames. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DownstreamTap {
    tap: Tap,
    correlation: Option<u64>,
}

impl DownstreamTap {
    /// A tap for frames of the client that sent `msg` on `transport` (labelled by its
    /// `clientInfo` name when `_meta` carries one); `None` when nobody watches.
    pub fn new(
        registry: Option<&Registry>,
        transport: Transport,
        msg: Option<&Message>,
        correlation: Option<u64>,
    ) -> Option<DownstreamTap> {
        let registry = registry?;
        if !registry.events().active() {
            return None;
        }
        let client = msg
            .and_then(Message::meta)
            .and_then(|m| m.get(meta::CLIENT_INFO))
            .and_then(|c| c.get("name"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("client");
        let tap = Tap::new(registry.events().frame_sink(), "downstream", client, transport.as_str());
        Some(DownstreamTap { tap, correlation })
    }

    /// The client's frame (`bytes` as received; `ws_frame` its number on the socket).
    pub fn incoming(&self, msg: &Message, bytes: &[u8], ws_frame: Option<u64>) {
        let at = Boundary { correlation: self.correlation, sse_id: None, ws_frame };
        self.tap.record_framed(Direction::In, msg, bytes, at);
    }

    /// A frame the router wrote (`sse_id`: its SSE event id; `ws_frame`: its number on the
    /// socket).
    pub fn outgoing(&self, msg: &Message, bytes: &[u8], sse_id: Option<u64>, ws_frame: Option<u64>) {
        let at = Boundary { correlation: self.correlation, sse_id: sse_id.map(|i| i.to_string()), ws_frame };
        self.tap.record_framed(Direction::Out, msg, bytes, at);
    }
}

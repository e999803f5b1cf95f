//! A message stream as a `text/event-stream` response: one `message` event per message, with
//! the stream's event ids; long-lived notification streams get keep-alive comments.

use std::convert::Infallible;

use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::endpoint::Outbound;
use crate::frames::DownstreamTap;

/// The SSE response for `out` (unbuffered by proxies); each event is published through `tap`
/// with its event id.
pub(super) fn response(out: Outbound, tap: Option<DownstreamTap>) -> Response {
    let events = out.messages.map(move |o| {
        let text = o.msg.to_json();
        if let Some(tap) = &tap {
            tap.outgoing(&o.msg, text.as_bytes(), o.event_id, None);
        }
        let mut ev = Event::default().event("message").data(text);
        if let Some(id) = o.event_id {
            ev = ev.id(id.to_string());
        }
        Ok::<_, Infallible>(ev)
    });
    let mut resp = if out.long_lived {
        Sse::new(events).keep_alive(KeepAlive::default()).into_response()
    } else {
        Sse::new(events).into_response()
    };
    resp.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

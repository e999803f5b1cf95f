//! Streamable HTTP on `/mcp`: the transport that turns requests into endpoint calls and
//! [`Reply`]s into responses.
//!
//! `POST` ([`post`]) reads and parses the body once and hands the message to the edge;
//! `GET` ([`get`]) opens a 2025-11-25 session's notification stream, or upgrades to a
//! WebSocket ([`crate::downstream::ws`]); `DELETE` ([`delete`]) ends a session. A single
//! message is answered as JSON, a stream as SSE ([`sse`]).

mod delete;
mod get;
mod post;
mod sse;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post as post_route;
use switchboard_wire::{Message, headers};
use tokio_util::sync::CancellationToken;

use crate::edge::Edge;
use crate::endpoint::{Reply, RequestContext};
use crate::frames::DownstreamTap;

/// What the `/mcp` handlers share.
#[derive(Debug, Clone)]
pub(crate) struct McpState {
    /// The endpoint behind its edge.
    pub(crate) edge: Edge,
    /// Closes WebSocket connections at shutdown.
    pub(crate) cancel: CancellationToken,
}

/// `/mcp`: POST, GET (session streams and WebSocket upgrades) and DELETE.
pub(crate) fn routes(edge: Edge, cancel: CancellationToken) -> Router {
    Router::new()
        .route("/mcp", post_route(post::post).get(get::get).delete(delete::delete))
        .with_state(McpState { edge, cancel })
}

/// A JSON body of one message.
fn json_response(status: StatusCode, bytes: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

/// The response for a reply; `tap` sees the frames written.
fn render(reply: Reply, ctx: &RequestContext, tap: Option<&DownstreamTap>) -> Response {
    match reply {
        Reply::Accepted => StatusCode::ACCEPTED.into_response(),
        Reply::NoContent => StatusCode::NO_CONTENT.into_response(),
        Reply::Message { status, msg } => {
            let mut resp = one(status, &msg, tap);
            if let Some(sid) = ctx.decided.get().new_session
                && let Ok(v) = HeaderValue::from_str(&sid)
            {
                resp.headers_mut().insert(headers::SESSION_ID, v);
            }
            resp
        }
        Reply::Stream(out) => sse::response(out, tap.cloned()),
    }
}

/// One message as a JSON response, published as a frame.
fn one(status: StatusCode, msg: &Message, tap: Option<&DownstreamTap>) -> Response {
    let bytes = msg.to_bytes();
    if let Some(tap) = tap {
        tap.outgoing(msg, &bytes, None, None);
    }
    json_response(status, bytes)
}

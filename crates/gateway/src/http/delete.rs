//! `DELETE /mcp`: ends a 2025-11-25 session on this instance.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::McpState;
use crate::endpoint::{RequestContext, Transport};

pub(super) async fn delete(State(s): State<McpState>, headers: HeaderMap) -> Response {
    let ctx = RequestContext::new(Transport::Http, None).with_headers(headers);
    let reply = s.edge.endpoint().end_session(ctx.session.as_deref());
    super::render(reply, &ctx, None)
}

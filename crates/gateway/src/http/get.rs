//! `GET /mcp`: a WebSocket upgrade, or a 2025-11-25 session's notification stream (SSE ids,
//! `Last-Event-ID` replay). Without a session (2026-07-28 has no GET stream): 405.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use switchboard_wire::headers;

use super::McpState;
use crate::endpoint::{RequestContext, Transport};
use crate::frames::DownstreamTap;

fn wants_upgrade(req: &Request) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

pub(super) async fn get(State(s): State<McpState>, req: Request) -> Response {
    if wants_upgrade(&req) {
        return crate::downstream::ws::upgrade(s.edge, s.cancel, req).await;
    }
    let last: Option<u64> = req
        .headers()
        .get(headers::LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let ctx = RequestContext::new(Transport::Http, None).with_headers(req.headers().clone());
    let Some(sid) = ctx.session.as_deref() else {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST, DELETE")]).into_response();
    };
    let endpoint = s.edge.endpoint();
    match endpoint.notifications(sid, last) {
        Ok(out) => {
            let tap = DownstreamTap::new(endpoint.registry(), Transport::Http, None, None);
            super::sse::response(out, tap)
        }
        Err(reply) => super::render(reply, &ctx, None),
    }
}

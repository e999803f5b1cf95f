//! `POST /mcp`: checks the origin, reads the body (bounded), parses it once, publishes the
//! client's frame and hands the message to the edge; the reply becomes JSON or SSE.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::json;
use switchboard_wire::{ErrorObject, Message, error_code};

use super::{McpState, one, render};
use crate::endpoint::{RequestContext, Transport};
use crate::frames::DownstreamTap;
use crate::origin::origin_allowed;

fn mib(bytes: usize) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    format!("{m:.1} MiB")
}

/// Reads `body` up to `limit` bytes: `None` when it is larger. Past the limit the rest is
/// drained (bounded) so the client sees the 413 instead of a reset connection.
async fn read_body(body: Body, declared: Option<u64>, limit: usize) -> Option<Vec<u8>> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut over = declared.is_some_and(|d| d > limit as u64);
    let drain_cap = limit.saturating_mul(16);
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else { break };
        seen = seen.saturating_add(chunk.len());
        if seen > limit {
            over = true;
        }
        if over {
            bytes.clear();
            if seen > drain_cap {
                break;
            }
            continue;
        }
        bytes.extend_from_slice(&chunk);
    }
    (!over).then_some(bytes)
}

pub(super) async fn post(State(s): State<McpState>, req: Request) -> Response {
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(a)| a.to_string());
    let (parts, body) = req.into_parts();
    let ctx = RequestContext::new(Transport::Http, peer).with_headers(parts.headers);
    let request_headers = ctx
        .headers
        .as_ref()
        .map(|h| (h.get(header::ORIGIN).cloned(), h.get(header::CONTENT_LENGTH).cloned()));
    let (origin, length) = request_headers.unwrap_or_default();
    let endpoint = s.edge.endpoint();
    let refuse = |status: StatusCode, what: &str, error: ErrorObject| {
        s.edge.refused(&ctx, what, status, error.clone());
        one(status, &Message::error_response(None, error), None)
    };
    if let Some(origin) = origin {
        let ok =
            origin.to_str().map(|o| origin_allowed(o, &endpoint.config().allowed_origins)).unwrap_or(false);
        if !ok {
            let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            let e = ErrorObject::new(error_code::INVALID_REQUEST, format!("Origin {shown:?} is not allowed"));
            return refuse(StatusCode::FORBIDDEN, "(forbidden origin)", e);
        }
    }
    let limit = endpoint.config().body_limit;
    let declared = length.and_then(|v| v.to_str().ok().and_then(|v| v.parse::<u64>().ok()));
    let Some(bytes) = read_body(body, declared, limit).await else {
        let e = ErrorObject::new(
            error_code::PAYLOAD_TOO_LARGE,
            format!("request body exceeds the limit of {limit} bytes ({})", mib(limit)),
        )
        .with_data(json!({"limitBytes": limit}));
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "(invalid)", e);
    };
    let msg = match Message::parse(&bytes) {
        Ok(m) => m,
        Err(e) => {
            let answer = e.to_response();
            s.edge.refused(&ctx, "(invalid)", StatusCode::BAD_REQUEST, ErrorObject::new(e.code, e.message));
            return one(StatusCode::BAD_REQUEST, &answer, None);
        }
    };
    let tap = DownstreamTap::new(endpoint.registry(), Transport::Http, Some(&msg), Some(ctx.correlation));
    if let Some(tap) = &tap {
        tap.incoming(&msg, &bytes, None);
    }
    let reply = s.edge.serve(msg, &ctx).await;
    render(reply, &ctx, tap.as_ref())
}

//! WebSocket clients on `GET /mcp` (`Upgrade: websocket`, subprotocol `mcp`, one JSON-RPC
//! message per text frame) — the de-facto SDK convention, since neither MCP revision defines a
//! WebSocket transport. A `GET /mcp` without the upgrade keeps the endpoint's answer (405).
//!
//! The upgrade request passes the listener's outer layers (bearer token) like any other; its
//! `Origin`, when present, must be one the endpoint accepts. Each accepted socket is served by
//! the [`Adapter`]; closing it drops its requests (cancelled upstream) and ends its 2025-11-25
//! session.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Adapter, FrameError};
use crate::edge::DownstreamOrigin;

/// The subprotocol offered and selected.
pub const SUBPROTOCOL: &str = "mcp";

/// Outgoing frames buffered per socket before a request waits for the client to read.
const OUT_QUEUE: usize = 256;

/// State of the upgrade middleware.
#[derive(Debug, Clone)]
pub struct WsState {
    /// Where each text frame goes (below the token check).
    pub adapter: Adapter,
    /// Origins a browser upgrade may come from.
    pub allowed_origins: Arc<Vec<String>>,
    /// Closes every socket at shutdown.
    pub cancel: CancellationToken,
}

fn wants_upgrade(req: &Request) -> bool {
    req.method() == Method::GET
        && req.uri().path() == "/mcp"
        && req
            .headers()
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The middleware: upgrades `GET /mcp` WebSocket requests, passes everything else.
pub async fn upgrade(State(ws): State<WsState>, req: Request, next: Next) -> Response {
    if !wants_upgrade(&req) {
        return next.run(req).await;
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| crate::endpoint::origin_allowed(o, &ws.allowed_origins));
        if !ok {
            return (StatusCode::FORBIDDEN, "Forbidden: Origin is not allowed").into_response();
        }
    }
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(a)| a.to_string());
    let (mut parts, _body) = req.into_parts();
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(u) => u,
        Err(rejection) => return rejection.into_response(),
    };
    let origin = DownstreamOrigin { transport: "ws", peer };
    upgrade
        .protocols([SUBPROTOCOL])
        .max_message_size(ws.adapter.max_message)
        .on_upgrade(move |socket| serve_socket(socket, ws.adapter, origin, ws.cancel))
}

async fn serve_socket(
    socket: WebSocket,
    adapter: Adapter,
    origin: DownstreamOrigin,
    cancel: CancellationToken,
) {
    let (mut sink, stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<String>(OUT_QUEUE);
    let writer = tokio::spawn(async move {
        while let Some(text) = rx.recv().await {
            if sink.send(WsMessage::Text(text.into())).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let incoming = stream
        .take_while(|m| futures::future::ready(matches!(m, Ok(m) if !matches!(m, WsMessage::Close(_)))))
        .filter_map(|m| {
            futures::future::ready(match m {
                Ok(WsMessage::Text(t)) => Some(Ok(t.as_str().to_owned())),
                Ok(WsMessage::Binary(b)) => {
                    Some(String::from_utf8(b.to_vec()).map_err(|_| FrameError::NotText))
                }
                _ => None,
            })
        });
    tracing::debug!(peer = ?origin.peer, "websocket client connected");
    adapter.serve(origin, Box::pin(incoming), tx, false, cancel).await;
    let _ = writer.await;
}

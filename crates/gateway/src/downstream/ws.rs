//! WebSocket clients on `GET /mcp` (`Upgrade: websocket`, subprotocol `mcp`, one JSON-RPC
//! message per text frame) — the de-facto SDK convention, since neither MCP revision defines a
//! WebSocket transport. A `GET /mcp` without the upgrade keeps the endpoint's answer.
//!
//! The upgrade request passes the listener's outer layers (bearer token) like any other; its
//! `Origin`, when present, must be one the endpoint accepts. Each accepted socket is served by
//! the [`Adapter`]; closing it drops its requests (cancelled upstream) and ends its 2025-11-25
//! session. Frames are numbered per direction from 1; the numbers are on the frame events.

use std::net::SocketAddr;

use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, FromRequestParts, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Adapter, Frame, FrameError, Out};
use crate::edge::Edge;
use crate::endpoint::Transport;
use crate::origin::origin_allowed;

/// The subprotocol offered and selected.
pub const SUBPROTOCOL: &str = "mcp";

/// Outgoing frames buffered per socket before a request waits for the client to read.
const OUT_QUEUE: usize = 256;

/// Upgrades a `GET /mcp` that asks for a WebSocket; `cancel` closes the socket at shutdown.
pub async fn upgrade(edge: Edge, cancel: CancellationToken, req: Request) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let allowed = &edge.endpoint().config().allowed_origins;
        if !origin.to_str().is_ok_and(|o| origin_allowed(o, allowed)) {
            return (StatusCode::FORBIDDEN, "Forbidden: Origin is not allowed").into_response();
        }
    }
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(a)| a.to_string());
    let (mut parts, _body) = req.into_parts();
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(u) => u,
        Err(rejection) => return rejection.into_response(),
    };
    let adapter = Adapter::new(edge);
    upgrade
        .protocols([SUBPROTOCOL])
        .max_message_size(adapter.max_message)
        .on_upgrade(move |socket| serve_socket(socket, adapter, peer, cancel))
}

async fn serve_socket(socket: WebSocket, adapter: Adapter, peer: Option<String>, cancel: CancellationToken) {
    let (mut sink, stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Out>(OUT_QUEUE);
    let writer = tokio::spawn(async move {
        let mut sent = 0u64;
        while let Some(Out { msg, tap }) = rx.recv().await {
            let text = msg.to_json();
            sent += 1;
            if let Some(tap) = &tap {
                tap.outgoing(&msg, text.as_bytes(), None, Some(sent));
            }
            if sink.send(WsMessage::Text(text.into())).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let mut received = 0u64;
    let incoming = stream
        .take_while(|m| futures::future::ready(matches!(m, Ok(m) if !matches!(m, WsMessage::Close(_)))))
        .filter_map(move |m| {
            let text = match m {
                Ok(WsMessage::Text(t)) => Some(Ok(t.as_str().to_owned())),
                Ok(WsMessage::Binary(b)) => {
                    Some(String::from_utf8(b.to_vec()).map_err(|_| FrameError::NotText))
                }
                _ => None,
            };
            let frame = text.map(|t| {
                received += 1;
                t.map(|text| Frame { text, number: Some(received) })
            });
            futures::future::ready(frame)
        });
    tracing::debug!(?peer, "websocket client connected");
    adapter.serve(Transport::Ws, peer, Box::pin(incoming), tx, false, cancel).await;
    let _ = writer.await;
}

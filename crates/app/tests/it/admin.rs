//! The admin API (`/api`, `switchboard-admin`) as the control panel uses it, against a real
//! app with real upstreams: access, servers, catalogs, settings, the event WebSocket and the
//! frame ring.

mod access;
mod events;
mod servers;

use futures::StreamExt;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::harness::*;

/// A viewer's socket.
pub type Viewer = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens `/api/events?{query}` the way a browser does: the token as the subprotocol
/// `bearer.<token>` next to `switchboard.events`.
pub async fn viewer(env: &Env, query: &str) -> Viewer {
    let url = format!("ws://{}/api/events{query}", env.addr);
    let mut req = url.into_client_request().unwrap();
    let protocols = format!("switchboard.events, bearer.{}", env.admin_token);
    req.headers_mut().insert("sec-websocket-protocol", protocols.parse().unwrap());
    let (ws, resp) = tokio_tungstenite::connect_async(req).await.unwrap();
    assert_eq!(resp.headers()["sec-websocket-protocol"], "switchboard.events");
    ws
}

/// The viewer's next message (JSON), within [`PATIENCE`].
pub async fn next(ws: &mut Viewer) -> Value {
    loop {
        let msg = tokio::time::timeout(PATIENCE, ws.next()).await.expect("a message in time");
        match msg.expect("the socket stays open").unwrap() {
            WsMessage::Text(t) => return serde_json::from_str(&t).unwrap(),
            WsMessage::Close(c) => panic!("closed: {c:?}"),
            _ => continue,
        }
    }
}

/// Events from the viewer's batches until `done` says enough; returns them all.
pub async fn events_until(ws: &mut Viewer, mut done: impl FnMut(&[Value]) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    while !done(&seen) {
        let msg = next(ws).await;
        if msg["type"] == "events" {
            seen.extend(msg["events"].as_array().unwrap().iter().cloned());
        }
    }
    seen
}

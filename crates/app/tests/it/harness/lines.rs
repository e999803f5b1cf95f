//! Clients of the transports that are not HTTP requests: newline-delimited JSON-RPC over a
//! pipe pair ([`LineClient`]: an in-process stdio connection, a child's stdin and stdout) and
//! WebSocket on `GET /mcp` ([`ws_connect`]).

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::PATIENCE;

/// A newline-delimited JSON-RPC client.
pub struct LineClient<R, W> {
    /// What the server writes.
    pub lines: Lines<BufReader<R>>,
    /// Where the client writes.
    pub writer: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineClient<R, W> {
    /// A client reading `r` and writing `w`.
    pub fn new(r: R, w: W) -> Self {
        LineClient { lines: BufReader::new(r).lines(), writer: w }
    }

    /// Writes `v` as one line.
    pub async fn send(&mut self, v: &Value) {
        self.send_raw(&v.to_string()).await;
    }

    /// Writes `line` (and a newline) as it is.
    pub async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next line, which must be JSON.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("the output stays open");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    }

    /// Lines until the response with `id` (inclusive).
    pub async fn until(&mut self, id: Value) -> Vec<Value> {
        let mut got = Vec::new();
        loop {
            let v = self.next().await;
            let done = v["id"] == id && v.get("method").is_none();
            got.push(v);
            if done {
                return got;
            }
        }
    }

    /// Sends the request `v` and returns its response (notifications before it are skipped).
    pub async fn call(&mut self, v: &Value) -> Value {
        self.send(v).await;
        self.until(v["id"].clone()).await.pop().unwrap()
    }
}

/// A WebSocket client connection.
pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a WebSocket on `url` with the `mcp` subprotocol (checked to be accepted).
pub async fn ws_connect(url: &str) -> Ws {
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert("sec-websocket-protocol", "mcp".parse().unwrap());
    let (ws, resp) = tokio_tungstenite::connect_async(req).await.expect("websocket upgrade");
    assert_eq!(resp.headers()["sec-websocket-protocol"], "mcp");
    ws
}

/// Sends `v` as a text frame.
pub async fn ws_send(ws: &mut Ws, v: &Value) {
    ws.send(WsMessage::Text(v.to_string().into())).await.unwrap();
}

/// The next text frame's JSON (other frames are skipped).
pub async fn ws_next(ws: &mut Ws) -> Value {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match ws.next().await.expect("socket open").unwrap() {
                WsMessage::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
                WsMessage::Close(_) => panic!("the socket closed"),
                _ => {}
            }
        }
    })
    .await
    .expect("a frame in time")
}

/// Frames until the response with `id` (inclusive).
pub async fn ws_until(ws: &mut Ws, id: Value) -> Vec<Value> {
    let mut got = Vec::new();
    loop {
        let v = ws_next(ws).await;
        let done = v["id"] == id && v.get("method").is_none();
        got.push(v);
        if done {
            return got;
        }
    }
}

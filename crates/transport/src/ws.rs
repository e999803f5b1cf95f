//! JSON-RPC over WebSocket (subprotocol `mcp`, one message per text frame).
//!
//! Neither MCP revision defines a WebSocket transport; this follows the SDKs' de-facto
//! convention. The connection is made once; when it drops, requests in flight fail and
//! the registry decides when to reconnect (by building a new upstream).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use switchboard_wire::Message;
use tokio::sync::{broadcast, mpsc};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::Message as WsMessage;
use tokio_util::sync::CancellationToken;

use crate::duplex::Duplex;
use crate::{Error, Exchange, Tap, TransportKind, Upstream, UpstreamEvent, UpstreamStatus};

/// How to reach a WebSocket MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct WsConfig {
    /// `ws://` or `wss://` URL.
    pub url: String,
    /// Connect (and WebSocket handshake) timeout.
    pub connect_timeout: Duration,
    /// Largest message accepted.
    pub max_message_bytes: usize,
}

impl WsConfig {
    /// Defaults for everything but the URL.
    pub fn new(url: impl Into<String>) -> Self {
        WsConfig {
            url: url.into(),
            connect_timeout: Duration::from_secs(5),
            max_message_bytes: 64 * 1024 * 1024,
        }
    }
}

/// The WebSocket upstream.
pub struct WsUpstream {
    duplex: Arc<Duplex>,
    events: broadcast::Sender<UpstreamEvent>,
    last_error: Arc<Mutex<Option<String>>>,
    shutdown: CancellationToken,
}

impl WsUpstream {
    /// Connects and performs the WebSocket handshake, requiring the `mcp` subprotocol.
    pub async fn connect(
        config: WsConfig,
        tap: Tap,
        shutdown: CancellationToken,
    ) -> Result<Arc<Self>, Error> {
        let conn_err = |reason: String| Error::Connect { url: config.url.clone(), reason };
        let mut req = config.url.as_str().into_client_request().map_err(|e| conn_err(e.to_string()))?;
        req.headers_mut().insert("Sec-WebSocket-Protocol", http::HeaderValue::from_static("mcp"));
        let ws_config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(config.max_message_bytes))
            .max_frame_size(Some(config.max_message_bytes));
        let (stream, resp) = tokio::time::timeout(
            config.connect_timeout,
            tokio_tungstenite::connect_async_with_config(req, Some(ws_config), false),
        )
        .await
        .map_err(|_| conn_err(format!("no WebSocket handshake within {:?}", config.connect_timeout)))?
        .map_err(|e| conn_err(e.to_string()))?;
        let proto = resp.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok()).unwrap_or("");
        if !proto.split(',').any(|p| p.trim() == "mcp") {
            return Err(conn_err(format!("server did not accept the `mcp` subprotocol (got {proto:?})")));
        }
        let duplex = Duplex::new(tap);
        let events = broadcast::channel(16).0;
        let last_error = Arc::new(Mutex::new(None));
        let (mut sink, mut source) = stream.split();
        let (wtx, mut wrx) = mpsc::channel::<Bytes>(256);
        duplex.attach(wtx);
        let started = Instant::now();
        let _ = events.send(UpstreamEvent::Started { pid: None, generation: 1 });
        let (d, ev, le, sd) = (duplex.clone(), events.clone(), last_error.clone(), shutdown.clone());
        tokio::spawn(async move {
            let reason = loop {
                tokio::select! {
                    out = wrx.recv() => match out {
                        Some(b) => {
                            let text = String::from_utf8_lossy(&b).into_owned();
                            if let Err(e) = sink.send(WsMessage::text(text)).await {
                                break format!("send failed: {e}");
                            }
                        }
                        None => break "writer closed".to_owned(),
                    },
                    inc = source.next() => match inc {
                        Some(Ok(WsMessage::Text(t))) => d.dispatch(t.as_bytes()).await,
                        Some(Ok(WsMessage::Binary(b))) => d.dispatch(&b).await,
                        Some(Ok(WsMessage::Ping(p))) => { let _ = sink.send(WsMessage::Pong(p)).await; }
                        Some(Ok(WsMessage::Close(frame))) => {
                            break match frame { Some(f) => format!("closed by server ({} {})", f.code, f.reason), None => "closed by server".into() };
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => break format!("connection error: {e}"),
                        None => break "connection closed".to_owned(),
                    },
                    _ = sd.cancelled() => {
                        let _ = sink.send(WsMessage::Close(None)).await;
                        break "closed by the router".to_owned();
                    }
                }
            };
            *le.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            d.detach(Error::Connect { url: String::new(), reason: reason.clone() });
            let _ = ev.send(UpstreamEvent::Exited {
                status: reason,
                uptime_ms: started.elapsed().as_millis() as u64,
                stderr_tail: String::new(),
            });
        });
        Ok(Arc::new(WsUpstream { duplex, events, last_error, shutdown }))
    }
}

#[async_trait]
impl Upstream for WsUpstream {
    fn kind(&self) -> TransportKind {
        TransportKind::Ws
    }

    async fn request(&self, msg: Message) -> Result<Exchange, Error> {
        self.duplex.request(msg).await
    }

    async fn send(&self, msg: Message) -> Result<(), Error> {
        self.duplex.send(&msg).await
    }

    fn incoming(&self) -> broadcast::Receiver<Message> {
        self.duplex.incoming()
    }

    fn events(&self) -> broadcast::Receiver<UpstreamEvent> {
        self.events.subscribe()
    }

    fn asked_client(&self) -> bool {
        self.duplex.asked()
    }

    fn status(&self) -> UpstreamStatus {
        UpstreamStatus {
            connected: self.duplex.is_attached(),
            last_error: self.last_error.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            ..Default::default()
        }
    }

    async fn close(&self) {
        self.shutdown.cancel();
    }
}

//! An in-process upstream: a server running in the same process, reached over a pair of
//! byte streams (typically `tokio::io::duplex`) carrying newline-delimited JSON-RPC,
//! exactly like stdio. Built-in servers use it so they are real MCP servers on the same
//! code path as external ones, without a process per server.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use switchboard_wire::Message;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::duplex::Duplex;
use crate::{Error, Exchange, Tap, TransportKind, Upstream, UpstreamEvent, UpstreamStatus, lines};

/// Largest line accepted from an in-process server.
const MAX_LINE: usize = 256 * 1024 * 1024;

/// The in-process upstream.
pub struct PipeUpstream {
    duplex: Arc<Duplex>,
    events: broadcast::Sender<UpstreamEvent>,
    shutdown: CancellationToken,
}

impl PipeUpstream {
    /// Connects to a server whose output is `reader` and whose input is `writer`.
    pub fn new<R, W>(reader: R, writer: W, tap: Tap, shutdown: CancellationToken) -> Arc<Self>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let duplex = Duplex::new(tap);
        let events = broadcast::channel(16).0;
        let (wtx, writer_task) = lines::spawn_writer(writer);
        let reader_task = lines::spawn_reader(reader, duplex.clone(), MAX_LINE);
        duplex.attach(wtx);
        let _ = events.send(UpstreamEvent::Started { pid: None, generation: 1 });
        let started = Instant::now();
        let (d, ev, sd) = (duplex.clone(), events.clone(), shutdown.clone());
        tokio::spawn(async move {
            let status = tokio::select! {
                _ = reader_task => "in-process server closed its output".to_owned(),
                _ = sd.cancelled() => "closed by the router".to_owned(),
            };
            writer_task.abort();
            d.detach(Error::Exited { status: status.clone(), stderr_tail: String::new() });
            let _ = ev.send(UpstreamEvent::Exited {
                status,
                uptime_ms: started.elapsed().as_millis() as u64,
                stderr_tail: String::new(),
            });
        });
        Arc::new(PipeUpstream { duplex, events, shutdown })
    }
}

#[async_trait]
impl Upstream for PipeUpstream {
    fn kind(&self) -> TransportKind {
        TransportKind::InProcess
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

    fn status(&self) -> UpstreamStatus {
        UpstreamStatus { connected: self.duplex.is_attached(), ..Default::default() }
    }

    async fn close(&self) {
        self.shutdown.cancel();
    }
}

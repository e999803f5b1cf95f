//! The HTTP listener's accept loop: bounded connections with header-read and idle timeouts.
//!
//! `axum::serve` keeps every accepted connection for as long as the peer wants: one that
//! dribbles a header line every few seconds, or sits idle between requests, holds a task and
//! a socket forever, and nothing caps how many there are. This loop serves the same axum
//! [`Router`] through hyper-util's HTTP/1 + HTTP/2 connection builder (with upgrades, for
//! WebSocket clients) and adds three bounds ([`ListenerConfig`]):
//!
//! - **Connection cap.** A semaphore permit per connection, held by the socket itself (so an
//!   upgraded WebSocket keeps counting); a connection over the cap is closed as it is accepted.
//!   The set of connection tasks is therefore bounded too.
//! - **Header-read timeout.** From the moment a connection opens, or its first bytes arrive
//!   after an idle period, the request's head must be complete within the limit; otherwise
//!   the socket is closed. (Not applied to HTTP/2 after its preface: its frames are not heads.)
//! - **Idle timeout.** A connection with no request in flight (a response body still being
//!   streamed counts as in flight) and no bytes either way for the limit is shut down
//!   gracefully.
//!
//! Shutdown: when `cancel` fires the listener stops accepting, every connection is asked to
//! shut down gracefully (idle ones close at once, busy ones after their response), and the
//! loop returns when all connection tasks have ended.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// Default time a connection has to send a complete request head.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Default time an idle keep-alive connection stays open.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Default number of connections served at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Shortest period at which a connection's timers are checked.
const MIN_CHECK: Duration = Duration::from_millis(10);

/// Bounds of the HTTP listener (`[endpoint]` `header_read_timeout_secs`, `idle_timeout_secs`,
/// `max_connections`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerConfig {
    /// How long a client may take to send a request's head (from connecting, or from its first
    /// bytes after an idle period).
    pub header_read_timeout: Duration,
    /// How long a connection with nothing in flight and no traffic stays open.
    pub idle_timeout: Duration,
    /// Connections served at once; more are closed as they arrive.
    pub max_connections: usize,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        ListenerConfig {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// What one connection has been doing, shared by its socket, its service and its watchdog.
/// Times are milliseconds since `base`, plus one (0 means "not set").
#[derive(Debug)]
struct Activity {
    base: Instant,
    /// Last read or write of at least one byte.
    last_io: AtomicU64,
    /// When the head being waited for started to be due; 0 when no head is awaited.
    head_due_since: AtomicU64,
    /// Requests whose response has not been fully sent.
    open: AtomicUsize,
    /// HTTP/2 (prior knowledge): no head timer after the preface.
    h2: AtomicBool,
    /// Whether the first bytes were seen (to detect the HTTP/2 preface).
    started: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        let a = Activity {
            base: Instant::now(),
            last_io: AtomicU64::new(1),
            head_due_since: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            h2: AtomicBool::new(false),
            started: AtomicBool::new(false),
        };
        // A new connection owes its first request's head.
        a.head_due_since.store(1, Ordering::Relaxed);
        a
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    fn on_read(&self, bytes: &[u8]) {
        let now = self.now();
        self.last_io.store(now, Ordering::Relaxed);
        if !self.started.swap(true, Ordering::Relaxed) && bytes.starts_with(b"PRI * HTTP/2") {
            self.h2.store(true, Ordering::Relaxed);
            self.head_due_since.store(0, Ordering::Relaxed);
        }
        if !self.h2.load(Ordering::Relaxed) && self.open.load(Ordering::Relaxed) == 0 {
            let _ = self.head_due_since.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    fn on_write(&self) {
        self.last_io.store(self.now(), Ordering::Relaxed);
    }

    fn request_started(&self) {
        self.open.fetch_add(1, Ordering::Relaxed);
        self.head_due_since.store(0, Ordering::Relaxed);
    }

    fn request_ended(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.last_io.store(self.now(), Ordering::Relaxed);
    }

    /// Waits until one of the connection's timers expires.
    async fn expired(&self, config: &ListenerConfig) -> Expired {
        let header = u64::try_from(config.header_read_timeout.as_millis()).unwrap_or(u64::MAX / 4);
        let idle = u64::try_from(config.idle_timeout.as_millis()).unwrap_or(u64::MAX / 4);
        let check = (config.header_read_timeout.min(config.idle_timeout) / 4).max(MIN_CHECK);
        loop {
            let now = self.now();
            let head = self.head_due_since.load(Ordering::Relaxed);
            if head != 0 && now >= head.saturating_add(header) {
                return Expired::Header;
            }
            let idle_since = self.last_io.load(Ordering::Relaxed);
            if head == 0 && self.open.load(Ordering::Relaxed) == 0 && now >= idle_since.saturating_add(idle) {
                return Expired::Idle;
            }
            tokio::time::sleep(check).await;
        }
    }
}

/// Which timer expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expired {
    Header,
    Idle,
}

/// The accepted socket: records its traffic and holds the connection's permit for as long
/// as it lives (also after an upgrade to WebSocket).
struct Counted {
    stream: TcpStream,
    activity: Arc<Activity>,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.on_read(&buf.filled()[before..]);
        }
        r
    }
}

impl AsyncWrite for Counted {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.on_write();
        }
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.on_write();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// A request in flight on a connection; ends it when dropped (with its response body, or
/// with the service future when the client went away first).
struct Open(Arc<Activity>);

impl Open {
    fn new(activity: Arc<Activity>) -> Self {
        activity.request_started();
        Open(activity)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// A response body that ends its request when it is finished or dropped.
struct Tracked {
    inner: Body,
    open: Option<Open>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(r, Poll::Ready(None)) {
            this.open = None;
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether an accept error concerns only the connection being accepted.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// The accept loop (see the module docs).
pub(crate) async fn run(
    listener: tokio::net::TcpListener,
    app: Router,
    config: ListenerConfig,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let tracker = TaskTracker::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Our own timers (see `Activity`) replace hyper's, which would also cut idle keep-alives.
    builder.http1().header_read_timeout(None);
    let builder = Arc::new(builder);
    let mut refused: u64 = 0;
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::error!(error = %e, "accepting a connection failed");
                    tokio::select! {
                        () = cancel.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    }
                }
            },
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refused += 1;
            // The first refusal of a burst, then one in a thousand.
            if refused % 1000 == 1 {
                tracing::warn!(
                    %peer,
                    max_connections = config.max_connections,
                    refused,
                    "connection closed: the listener serves at most max_connections at once ([endpoint].max_connections)"
                );
            }
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let io = Counted { stream, activity: activity.clone(), _permit: permit };
        tracker.spawn(connection(io, peer, app.clone(), builder.clone(), config, activity, cancel.clone()));
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// Serves one connection until it ends, a timer expires or shutdown completes.
async fn connection(
    io: Counted,
    peer: SocketAddr,
    app: Router,
    builder: Arc<auto::Builder<TokioExecutor>>,
    config: ListenerConfig,
    activity: Arc<Activity>,
    cancel: CancellationToken,
) {
    let service_activity = activity.clone();
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let open = Open::new(service_activity.clone());
        req.extensions_mut().insert(ConnectInfo(peer));
        let app = app.clone();
        async move {
            let resp = app.oneshot(req.map(Body::new)).await;
            // `Router`'s error is `Infallible`; map the body either way.
            resp.map(|r| r.map(|inner| Tracked { inner, open: Some(open) }))
        }
    });
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            () = cancel.cancelled(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            expired = activity.expired(&config), if !closing => match expired {
                Expired::Header => {
                    tracing::debug!(
                        %peer,
                        timeout_ms = config.header_read_timeout.as_millis() as u64,
                        "connection closed: request headers not received in time ([endpoint].header_read_timeout_secs)"
                    );
                    return;
                }
                Expired::Idle => {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            },
        }
    }
}

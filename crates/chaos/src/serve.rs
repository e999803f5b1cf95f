//! The accept loop. It is ours rather than `axum::serve` because a `crash` must close every
//! open connection at once, which needs the connection tasks in our hands: they live in a
//! `JoinSet` that a crash aborts. A graceful shutdown stops accepting and lets connections
//! finish for at most [`DRAIN_DEADLINE`].

use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::{conn::auto, graceful::GracefulShutdown};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long a graceful shutdown waits for open connections.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(5);
/// Pause after a failed `accept` (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);

/// Serves `app` on `listener` until `shutdown` (graceful) or `crashed` (everything closes now).
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    shutdown: CancellationToken,
    crashed: CancellationToken,
) {
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let service = TowerToHyperService::new(app.clone());
                    let connection = builder.serve_connection(TokioIo::new(stream), service).into_owned();
                    let connection = graceful.watch(connection);
                    connections.spawn(async move {
                        if let Err(error) = connection.await {
                            tracing::debug!(%error, "connection ended with an error");
                        }
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = shutdown.cancelled() => break,
            () = crashed.cancelled() => {
                drop(listener);
                connections.abort_all();
                return;
            }
        }
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(DRAIN_DEADLINE) => tracing::warn!("connections still open after the drain deadline; closing"),
        () = crashed.cancelled() => {}
    }
    connections.abort_all();
}

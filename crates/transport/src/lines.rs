//! Newline-delimited JSON-RPC over any byte stream (a child's stdio, an in-process pipe).

use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::duplex::Duplex;

/// Starts a task writing each message as one line; returns its input channel.
pub(crate) fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(
    mut w: W,
) -> (mpsc::Sender<Bytes>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(256);
    let task = tokio::spawn(async move {
        while let Some(b) = rx.recv().await {
            if w.write_all(&b).await.is_err() || w.write_all(b"\n").await.is_err() {
                break;
            }
            // Batch writes that are already queued; flush once the queue is empty.
            if rx.is_empty() && w.flush().await.is_err() {
                break;
            }
        }
    });
    (tx, task)
}

/// Starts a task reading lines and dispatching them to the multiplexer.
pub(crate) fn spawn_reader<R: AsyncRead + Unpin + Send + 'static>(
    r: R,
    duplex: Arc<Duplex>,
    max_line: usize,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::with_capacity(64 * 1024, r);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match read_line_bounded(&mut lines, &mut buf, max_line).await {
                Ok(0) => break,
                Ok(_) => {
                    let line = buf.trim_ascii();
                    if !line.is_empty() {
                        duplex.dispatch(line).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "server output unreadable");
                    break;
                }
            }
        }
    })
}

/// Reads one line of at most `max` bytes (a peer that never sends a newline cannot
/// exhaust memory).
async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(total);
        }
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > max {
            return Err(std::io::Error::other(format!("a line longer than {max} bytes")));
        }
        buf.extend_from_slice(&available[..take]);
        r.consume(take);
        total += take;
        if done {
            return Ok(total);
        }
    }
}

//! stdio clients: `switchboard serve --stdio` reads newline-delimited JSON-RPC on stdin and
//! writes one message per line on stdout, for desktop clients that spawn their servers. Logs
//! go to stderr. The client closing stdin ends the connection: requests still running are
//! answered first, then the 2025-11-25 session (if any) is ended.
//!
//! stdout belongs to the protocol: nothing else in the process may print there while this runs.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Adapter, Frame, FrameError, Out};
use crate::endpoint::Transport;

/// Outgoing lines buffered before a request waits for the client to read.
const OUT_QUEUE: usize = 256;

/// Serves one client on `reader`/`writer` until the input ends or `cancel` fires.
pub async fn serve<R, W>(adapter: Adapter, reader: R, mut writer: W, cancel: CancellationToken)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Out>(OUT_QUEUE);
    let writer_task = tokio::spawn(async move {
        while let Some(Out { msg, tap }) = rx.recv().await {
            // Compact JSON has no raw newline: one message per line.
            let mut line = msg.to_json();
            if let Some(tap) = &tap {
                tap.outgoing(&msg, line.as_bytes(), None, None);
            }
            line.push('\n');
            if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    let limit = adapter.max_message;
    let lines = futures::stream::unfold(BufReader::new(reader), move |mut r| async move {
        next_line(&mut r, limit).await.map(|l| (l, r))
    });
    let incoming = futures::StreamExt::filter_map(lines, |l| {
        futures::future::ready(match l {
            Ok(t) if t.trim().is_empty() => None,
            other => Some(other.map(|text| Frame { text, number: None })),
        })
    });
    adapter.serve(Transport::Stdio, None, Box::pin(incoming), tx, true, cancel).await;
    let _ = writer_task.await;
}

/// The next line (without its `\n`), or `None` at the end of the input. A line longer than
/// `limit` is skipped to its end and reported, so one bad line does not end the connection.
async fn next_line<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    limit: usize,
) -> Option<Result<String, FrameError>> {
    let mut line = Vec::new();
    let mut over = false;
    let mut any = false;
    loop {
        let buf = match r.fill_buf().await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed");
                return None;
            }
        };
        if buf.is_empty() {
            if !any {
                return None;
            }
            break;
        }
        any = true;
        let newline = buf.iter().position(|b| *b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        if !over {
            if line.len() + chunk.len() > limit {
                over = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        r.consume(used);
        if newline.is_some() {
            break;
        }
    }
    if over {
        return Some(Err(FrameError::TooLarge(limit)));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Some(String::from_utf8(line).map_err(|_| FrameError::NotText))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_over_the_limit_are_skipped_not_fatal() {
        let input: &[u8] = b"{\"a\":1}\r\n0123456789abcdef\nok\nlast";
        let mut r = BufReader::with_capacity(4, input);
        assert_eq!(next_line(&mut r, 10).await, Some(Ok("{\"a\":1}".to_owned())));
        assert_eq!(next_line(&mut r, 10).await, Some(Err(FrameError::TooLarge(10))));
        assert_eq!(next_line(&mut r, 10).await, Some(Ok("ok".to_owned())));
        assert_eq!(next_line(&mut r, 10).await, Some(Ok("last".to_owned())));
        assert_eq!(next_line(&mut r, 10).await, None);
    }
}

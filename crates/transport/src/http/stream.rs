//! The SSE streams of the Streamable HTTP client: a request's response stream (read to its end,
//! resumed with `Last-Event-ID` when a legacy stream is cut before the response) and the legacy
//! standalone GET stream, which carries the server-initiated messages of a session.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use switchboard_wire::Message;
use tokio::sync::mpsc;

use super::{Inner, insert, is_event_stream};
use crate::Error;
use crate::sse::SseParser;

/// Pumps one SSE response stream into an exchange channel; resumes legacy streams.
pub(super) async fn pump_sse(
    inner: Arc<Inner>,
    mut resp: reqwest::Response,
    request_id: Option<switchboard_wire::Id>,
    tx: mpsc::Sender<Result<Message, Error>>,
) {
    let id_text = request_id.as_ref().map(ToString::to_string).unwrap_or_default();
    let mut resumes = 0;
    let mut last_event_id: Option<String> = None;
    loop {
        let mut parser = SseParser::with_limit(inner.config.max_response_bytes);
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    // The server was silent past the read timeout: resuming would wait again.
                    if let Some(limit) = inner.config.read_timeout.filter(|_| e.is_timeout()) {
                        let _ = tx.send(Err(Error::Timeout(limit))).await;
                        return;
                    }
                    tracing::debug!(error = %e, "SSE stream broke");
                    break;
                }
            };
            let events = match parser.feed(&chunk) {
                Ok(ev) => ev,
                Err(e) => {
                    let _ = tx.send(Err(Error::Protocol(e))).await;
                    return;
                }
            };
            for ev in events {
                if ev.id.is_some() {
                    last_event_id = ev.id.clone();
                }
                if ev.data.trim().is_empty() {
                    continue;
                }
                let msg = match inner.parse_in(ev.data.as_bytes()) {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!(error = %e, "invalid message on SSE stream");
                        continue;
                    }
                };
                let is_final = msg.is_response() && msg.id() == request_id;
                if tx.send(Ok(msg)).await.is_err() {
                    return; // caller went away: dropping the stream cancels.
                }
                if is_final {
                    // Read the stream's end (the server closes it right after the response)
                    // so the connection goes back to the pool instead of being torn down —
                    // a new connection per call costs more than the call. Bounded.
                    let drain = async {
                        let mut budget = 64 * 1024usize;
                        while let Some(Ok(chunk)) = stream.next().await {
                            budget = budget.saturating_sub(chunk.len());
                            if budget == 0 {
                                break;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
                    return;
                }
            }
        }
        // Stream ended without the response.
        let legacy = inner.session().is_some();
        match (&last_event_id, legacy) {
            (Some(leid), true) if resumes < 3 && !inner.shutdown.is_cancelled() => {
                resumes += 1;
                tracing::info!(last_event_id = %leid, attempt = resumes, "resuming SSE stream");
                match inner.resume(leid).await {
                    Ok(r) => resp = r,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
            _ => {
                let _ = tx.send(Err(Error::StreamClosed { id: id_text })).await;
                return;
            }
        }
    }
}

/// The legacy standalone GET stream: server-initiated messages for the session.
pub(super) async fn get_stream(inner: Arc<Inner>) {
    let mut failures = 0u32;
    let mut last_event_id: Option<String> = None;
    while !inner.shutdown.is_cancelled() && failures < 5 {
        let Some(session) = inner.session() else { return };
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let mut ok = true;
        for (k, v) in &inner.config.headers {
            ok &= insert(&mut h, k, v).is_ok();
        }
        if let Some(id) = &session.id {
            ok &= insert(&mut h, "Mcp-Session-Id", id).is_ok();
        }
        ok &= insert(&mut h, "MCP-Protocol-Version", &session.version).is_ok();
        if let Some(leid) = &last_event_id {
            ok &= insert(&mut h, "Last-Event-ID", leid).is_ok();
        }
        if !ok {
            return;
        }
        let resp = tokio::select! {
            r = inner.stream_client.get(inner.url.clone()).headers(h).send() => r,
            _ = inner.shutdown.cancelled() => return,
        };
        match resp {
            Ok(r) if r.status().is_success() && is_event_stream(&r) => {
                failures = 0;
                let mut parser = SseParser::with_limit(inner.config.max_response_bytes);
                let mut stream = r.bytes_stream();
                loop {
                    let chunk = tokio::select! {
                        c = stream.next() => c,
                        _ = inner.shutdown.cancelled() => return,
                    };
                    let Some(Ok(chunk)) = chunk else { break };
                    let events = match parser.feed(&chunk) {
                        Ok(events) => events,
                        Err(e) => {
                            tracing::warn!(error = %e, "dropping the GET stream");
                            break;
                        }
                    };
                    for ev in events {
                        if ev.id.is_some() {
                            last_event_id = ev.id.clone();
                        }
                        if let Ok(msg) = inner.parse_in(ev.data.as_bytes()) {
                            let _ = inner.incoming.send(msg);
                        }
                    }
                }
            }
            Ok(r) if r.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!("server offers no GET stream");
                return;
            }
            Ok(r) => {
                tracing::debug!(status = %r.status(), "GET stream refused");
                failures += 1;
            }
            Err(e) => {
                tracing::debug!(error = %e, "GET stream failed");
                failures += 1;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500 * u64::from(failures.max(1)))) => {}
            _ = inner.shutdown.cancelled() => return,
        }
    }
}

//! The edge: what every client request passes through around the endpoint, whatever its
//! transport. [`Edge::serve`] wraps [`Endpoint::handle`]:
//!
//! - **Deadline.** A forwarded request (`tools/call`, `prompts/get`, `resources/read`,
//!   `completion/complete`) gets [`EdgeConfig::call_timeout`]. When it expires the client
//!   receives a JSON-RPC error naming the upstream and the limit (as the answer, or as the last
//!   message of a stream) and the endpoint's future or stream is dropped, which cancels the
//!   request upstream. A question to the client (a server → client request relayed to a
//!   2025-11-25 client) moves the deadline out by the endpoint's answer window; a progress
//!   notification moves it to a full limit from now (a call that reports progress is alive),
//!   never past [`MAX_PROGRESS_EXTENSION`] limits from its start.
//! - **Traces.** Every request yields a [`TraceRecord`](switchboard_store::TraceRecord)
//!   (client, transport, era, method, name, upstream, latency, outcome) handed to a
//!   [`crate::traces::TraceSink`], which publishes it on the event bus and stores it off the
//!   request path.
//! - **Downstream handshakes.** A client's `initialize` or `server/discover` answered here is
//!   also a handshake record (leg `downstream`), handed to the same sink.
//! - **Answer size.** A single answer larger than [`EdgeConfig::answer_limit`] is replaced by
//!   an error naming the limit.
//!
//! The edge reads what the endpoint decided (upstream, client, version) from the request's
//! [`crate::endpoint::Decided`]; it never parses a body or routes a name itself.

mod handshake;
mod trace;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use futures::StreamExt;
use switchboard_store::traces::outcome;
use switchboard_wire::{ErrorObject, Id, Message, error_code, method};

pub use crate::config::{DEFAULT_CALL_TIMEOUT, EdgeConfig, MAX_ANSWER_BYTES};
use crate::endpoint::{Decided, Endpoint, Outbound, Outgoing, Reply, RequestContext};
use trace::Pending;

/// Methods the endpoint forwards to an upstream; they get the deadline.
const FORWARDED: [&str; 4] =
    [method::TOOLS_CALL, method::PROMPTS_GET, method::RESOURCES_READ, method::COMPLETION_COMPLETE];

/// The endpoint with its edge. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Edge {
    config: EdgeConfig,
    endpoint: Endpoint,
}

impl Edge {
    /// The edge `config` describes around `endpoint`.
    pub fn new(endpoint: Endpoint, config: EdgeConfig) -> Edge {
        Edge { config, endpoint }
    }

    /// The endpoint inside.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Serves one parsed client message: the endpoint's reply, under the deadline, traced.
    /// Notifications and the client's responses are not traced (they are not requests).
    pub async fn serve(&self, msg: Message, ctx: &RequestContext) -> Reply {
        if !msg.is_request() {
            return self.endpoint.handle(msg, ctx).await;
        }
        let started = Instant::now();
        let method = msg.method().unwrap_or_default().to_owned();
        let id = msg.id();
        let mut pending =
            self.config.traces.clone().map(|sink| Pending::start(sink, ctx, &method, msg.name(), started));
        let handshake = handshake::is_handshake(&method)
            .then(|| serde_json::Value::Object(msg.params().cloned().unwrap_or_default()));
        let limit = self.config.call_timeout;
        let deadline = FORWARDED.contains(&method.as_str()).then(|| tokio::time::Instant::now() + limit);
        let run = self.endpoint.handle(msg, ctx);
        let reply = match deadline {
            None => run.await,
            Some(d) => match tokio::time::timeout_at(d, run).await {
                Ok(r) => r,
                Err(_) => {
                    // Dropping the endpoint's future dropped its upstream exchange: cancelled upstream.
                    let err = timeout_error(id, &ctx.decided, &method, limit);
                    if let Some(mut p) = pending {
                        p.answered(200, false);
                        p.end_error(outcome::TIMEOUT, err.error());
                    }
                    return Reply::Message { status: StatusCode::OK, msg: err };
                }
            },
        };
        match reply {
            Reply::Message { status, msg } => {
                if let Some(p) = pending.as_mut() {
                    p.answered(status.as_u16(), false);
                }
                if let (Some(params), Some(sink)) = (&handshake, &self.config.traces) {
                    sink.handshake(handshake::record(&method, params, &msg, ctx, started));
                }
                if !fits(&msg, self.config.answer_limit) {
                    let err = too_large_error(id, &method, self.config.answer_limit);
                    if let Some(mut p) = pending {
                        p.end_error(outcome::ERROR, err.error());
                    }
                    return Reply::Message { status: StatusCode::OK, msg: err };
                }
                if let Some(mut p) = pending {
                    p.end_with(msg.error(), status.as_u16());
                }
                Reply::Message { status, msg }
            }
            Reply::Stream(out) => {
                if let Some(p) = pending.as_mut() {
                    p.answered(200, true);
                }
                let watch = Watch {
                    pending,
                    deadline,
                    limit,
                    answer_timeout: self.endpoint.config().answer_timeout,
                    id,
                    decided: ctx.decided.clone(),
                    method,
                    started: deadline.map_or_else(tokio::time::Instant::now, |d| d - limit),
                };
                Reply::Stream(watch.around(out))
            }
            other => {
                let status = if matches!(other, Reply::NoContent) { 204 } else { 202 };
                if let Some(mut p) = pending {
                    p.answered(status, false);
                    p.end_with(None, status);
                }
                other
            }
        }
    }

    /// Traces a request the transport refused before the endpoint saw it (unreadable body,
    /// too large, a forbidden origin); `what` stands for the method.
    pub fn refused(&self, ctx: &RequestContext, what: &str, status: StatusCode, error: ErrorObject) {
        if let Some(sink) = self.config.traces.clone() {
            let mut p = Pending::start(sink, ctx, what, None, Instant::now());
            p.answered(status.as_u16(), false);
            p.end_with(Some(error), status.as_u16());
        }
    }
}

/// Whether `msg` serialises to at most `limit` bytes (counted, not built).
fn fits(msg: &Message, limit: usize) -> bool {
    struct Count(usize, usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            if self.0 > self.1 { Err(std::io::Error::other("over the limit")) } else { Ok(buf.len()) }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Count(0, limit), msg).is_ok()
}

/// The error replacing an answer larger than `limit` bytes.
fn too_large_error(id: Option<Id>, method: &str, limit: usize) -> Message {
    let mib = limit as f64 / (1024.0 * 1024.0);
    Message::error_response(
        id,
        ErrorObject::new(
            error_code::INTERNAL_ERROR,
            format!(
                "the answer to {method} is larger than the router's limit of {limit} bytes ({mib:.1} MiB)"
            ),
        ),
    )
}

/// The error answering a request past its deadline, naming the upstream the endpoint chose.
fn timeout_error(id: Option<Id>, decided: &Decided, method: &str, limit: Duration) -> Message {
    let upstream = decided.get().upstream;
    let who = match &upstream {
        Some(u) => format!("upstream server {u:?}"),
        None => "the upstream".to_owned(),
    };
    let secs = limit.as_secs_f64();
    Message::error_response(
        id,
        ErrorObject::new(
            error_code::UPSTREAM_TIMEOUT,
            format!(
                "{who} did not answer {method} within {secs} s (the router's per-request timeout); \
                 the request was cancelled upstream"
            ),
        )
        .with_data(serde_json::json!({"upstream": upstream, "timeoutMs": limit.as_millis() as u64})),
    )
}

/// A server → client request the endpoint relays to a 2025-11-25 client (its id minted by
/// the bridge): the turn goes to the client.
fn is_question(msg: &Message) -> bool {
    msg.is_request()
        && msg
            .id()
            .map(|id| id.to_value())
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .is_some_and(|id| id.starts_with(crate::bridge::MINTED_ID_PREFIX))
}

/// How many call limits progress notifications may stretch a call's deadline to, from its
/// start: progress keeps a long call alive, but not for ever.
pub const MAX_PROGRESS_EXTENSION: u32 = 10;

/// Watches a streamed answer: the final response ends the trace; the deadline, when it passes
/// first, ends the stream with a timeout error (dropping the endpoint's stream cancels
/// upstream). Dropped before the final response (the client went away), its pending trace
/// records a cancellation.
struct Watch {
    pending: Option<Pending>,
    deadline: Option<tokio::time::Instant>,
    limit: Duration,
    /// How long the client may take to answer a question (the endpoint's answer window).
    answer_timeout: Duration,
    id: Option<Id>,
    decided: Decided,
    method: String,
    /// When the request arrived (bounds the progress extension).
    started: tokio::time::Instant,
}

impl Watch {
    fn see(&mut self, msg: &Message) {
        if is_question(msg) && self.deadline.is_some() {
            self.deadline = Some(tokio::time::Instant::now() + self.answer_timeout + self.limit);
        }
        if msg.method() == Some(switchboard_wire::method::NOTIFICATION_PROGRESS)
            && let Some(d) = self.deadline
        {
            let cap = self.started + self.limit * MAX_PROGRESS_EXTENSION;
            self.deadline = Some(d.max((tokio::time::Instant::now() + self.limit).min(cap)));
        }
        if msg.is_response()
            && let Some(mut p) = self.pending.take()
        {
            p.end_with(msg.error(), 200);
        }
    }

    fn around(self, out: Outbound) -> Outbound {
        let long_lived = out.long_lived;
        let state = (self, Some(out.messages));
        let messages = futures::stream::unfold(state, |(mut w, inner)| async move {
            let mut inner = inner?;
            let next = match w.deadline {
                Some(d) => tokio::select! {
                    biased;
                    m = inner.next() => Some(m),
                    () = tokio::time::sleep_until(d) => None,
                },
                None => Some(inner.next().await),
            };
            match next {
                Some(Some(out)) => {
                    w.see(&out.msg);
                    Some((out, (w, Some(inner))))
                }
                Some(None) => None,
                None => {
                    drop(inner);
                    let err = timeout_error(w.id.clone(), &w.decided, &w.method, w.limit);
                    if let Some(mut p) = w.pending.take() {
                        p.end_error(outcome::TIMEOUT, err.error());
                    }
                    Some((Outgoing::from(err), (w, None)))
                }
            }
        });
        Outbound { messages: Box::pin(messages), long_lived }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// After the upstream asks the client a question, the deadline moves out by the endpoint's
    /// configured answer window (not a built-in constant), plus the upstream's own limit.
    #[tokio::test(start_paused = true)]
    async fn a_question_extends_the_deadline_by_the_configured_answer_window() {
        let ask = json!({"jsonrpc": "2.0", "id": "sb-1", "method": "elicitation/create", "params": {}});
        let question = Message::from_value(ask).unwrap();
        // The question, then an upstream that never answers.
        let inner = futures::stream::iter([Outgoing::from(question)]).chain(futures::stream::pending());
        let limit = Duration::from_secs(2);
        let watch = Watch {
            pending: None,
            deadline: Some(tokio::time::Instant::now() + limit),
            limit,
            answer_timeout: Duration::from_secs(7),
            id: Id::from_value(&json!(1)),
            decided: Decided::default(),
            method: "tools/call".into(),
            started: tokio::time::Instant::now(),
        };
        let started = tokio::time::Instant::now();
        let out: Vec<Outgoing> =
            watch.around(Outbound { messages: Box::pin(inner), long_lived: false }).messages.collect().await;
        let waited = started.elapsed();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].msg.method(), Some("elicitation/create"));
        assert_eq!(out[1].msg.error().map(|e| e.code), Some(error_code::UPSTREAM_TIMEOUT));
        assert!(
            waited >= Duration::from_secs(9) && waited < Duration::from_secs(10),
            "the deadline is the answer window (7 s) plus the call limit (2 s), not {waited:?}"
        );
    }

    #[test]
    fn answer_size_is_counted() {
        let msg = Message::from_value(json!({"jsonrpc": "2.0", "id": 1, "result": {"t": "x".repeat(100)}}))
            .unwrap();
        assert!(fits(&msg, 1000));
        assert!(!fits(&msg, 50));
    }

    /// Progress keeps a call alive: each notification moves the deadline to a full limit from
    /// now, up to ten limits from the start; silence after the last one times it out.
    #[tokio::test(start_paused = true)]
    async fn progress_notifications_extend_the_deadline_up_to_a_bound() {
        let limit = Duration::from_secs(2);
        let progress = |n: u64| {
            Outgoing::from(
                Message::from_value(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": n}}))
                    .unwrap(),
            )
        };
        let run = |ticks: u64| {
            let start = tokio::time::Instant::now();
            // A progress notification every 1.5 s (less than the limit), then silence.
            let inner = futures::stream::unfold(0u64, move |n| async move {
                if n == ticks {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(1500)).await;
                Some((progress(n), n + 1))
            })
            .chain(futures::stream::pending());
            let watch = Watch {
                pending: None,
                deadline: Some(start + limit),
                limit,
                answer_timeout: Duration::from_secs(7),
                id: Id::from_value(&json!(1)),
                decided: Decided::default(),
                method: "tools/call".into(),
                started: start,
            };
            async move {
                let out: Vec<Outgoing> = watch
                    .around(Outbound { messages: Box::pin(inner), long_lived: false })
                    .messages
                    .collect()
                    .await;
                (out, start.elapsed())
            }
        };
        // Four notifications (6 s, three times the limit): all relayed, then the timeout 2 s later.
        let (out, waited) = run(4).await;
        assert_eq!(out.len(), 5);
        assert_eq!(out[4].msg.error().map(|e| e.code), Some(error_code::UPSTREAM_TIMEOUT));
        assert_eq!(waited, Duration::from_secs(8), "the last progress at 6 s plus the 2 s limit");
        // Endless progress is cut at ten limits (20 s).
        let (out, waited) = run(u64::MAX).await;
        assert_eq!(waited, Duration::from_secs(20));
        assert_eq!(out.last().unwrap().msg.error().map(|e| e.code), Some(error_code::UPSTREAM_TIMEOUT));
    }
}

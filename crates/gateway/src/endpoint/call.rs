//! One forwarded request, as an explicit state machine ([`State`]): its upstream exchange and
//! everything the downstream client is sent, in order, ending with the response.
//!
//! ```text
//! Idle ──start──▶ Running ──response──────────────────────────▶ Finished
//!   │               │  ▲ └─input_required (legacy client)─▶ Asking ─┘ (answers: retry)
//!   │               │  └──────────────────────────────────────┘
//!   │               └─server→client request (2026 client)─▶ parked: Finished (input_required)
//!   └─resume (requestState)─▶ Running, or Finished (still missing inputs)
//! ```
//!
//! The questions an upstream asks during the call (server → client requests) are bridged to
//! the client's revision in [`questions`].

mod failure;
mod questions;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_transport::{Exchange, McpClient};
use switchboard_wire::{Era, ErrorObject, Id, Message, error_code, meta, method};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use super::client::{Client, capability_of};
use crate::bridge::Parked;
use crate::config::EndpointConfig;
use crate::session::InFlightGuard;

pub(crate) use failure::Failure;
pub use questions::INPUT_KEY_META;

/// Request `_meta` keys that only modern upstreams understand.
const MODERN_REQUEST_META: [&str; 3] = [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES, meta::CLIENT_INFO];

/// Most MRTR rounds one bridged call may take.
const MAX_ROUNDS: usize = 16;

/// JSON-RPC code for a request the client cancelled.
pub(crate) const REQUEST_CANCELLED: i64 = -32800;

/// An answer a legacy client owes: the input key, the id minted for the question, and where
/// the answer arrives.
type Owed = (String, Value, oneshot::Receiver<Message>);

/// Where a call is.
enum State {
    /// Nothing sent upstream yet.
    Idle,
    /// The request is upstream; its exchange is read.
    Running(Exchange),
    /// A modern upstream answered `input_required` and a legacy client was asked; once it
    /// answered, the request is retried with the answers.
    Asking(Vec<Owed>),
    /// The last message is in the outbox (or was sent): nothing more comes.
    Finished,
}

/// One forwarded request.
pub(super) struct Call {
    config: Arc<EndpointConfig>,
    client: Client,
    upstream: Arc<McpClient>,
    server: String,
    method: String,
    /// The request's params as the client sent them (name rewritten).
    params: Map<String, Value>,
    state: State,
    /// Messages to send the client before reading further.
    outbox: VecDeque<Message>,
    /// The upstream's `requestState` to echo on the retry.
    retry_state: Option<Value>,
    id: Id,
    cancel: CancellationToken,
    rounds: usize,
    /// Ids of server → client requests sent to a legacy client (forgotten on drop).
    minted: Vec<Value>,
    /// Keys of the request's own `inputResponses` already handed to a legacy upstream.
    used_inputs: Vec<String>,
    /// Input keys asked of a 2026 client in earlier rounds of this bridged call (restored
    /// from the parked call): never reused, never answered up front.
    asked: Vec<String>,
    /// The last start failed because the server no longer knew the upstream session.
    session_expired: bool,
    /// A legacy upstream's messages outside any request (its log messages during the call).
    incoming: Option<broadcast::Receiver<Message>>,
    /// Whether this call's upstream sent it log messages on the GET stream.
    logs_on_incoming: bool,
    /// Unknown `Mcp-Param-*` headers to forward.
    forward_headers: Vec<(String, String)>,
    guard: Option<InFlightGuard>,
    /// How the upstream exchange failed, when it did (for retries elsewhere).
    failure: Option<Failure>,
    /// Counts the call on its upstream's load until the response (its latency is a sample).
    in_flight: Option<switchboard_router::registry::InFlight>,
    /// What the router adds to the result's `_meta` under `dev.switchboard/route` (a call
    /// that fallback degraded).
    route_meta: Option<Value>,
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Client::Legacy { sid, .. } = &self.client {
            for id in &self.minted {
                self.config.bridge.forget_answer(sid, id);
            }
        }
    }
}

impl Call {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        config: Arc<EndpointConfig>,
        client: Client,
        upstream: Arc<McpClient>,
        server: &str,
        method: &str,
        params: Map<String, Value>,
        id: Id,
        cancel: CancellationToken,
        forward_headers: Vec<(String, String)>,
        guard: Option<InFlightGuard>,
    ) -> Call {
        Call {
            config,
            client,
            upstream,
            server: server.to_owned(),
            method: method.to_owned(),
            params,
            state: State::Idle,
            outbox: VecDeque::new(),
            retry_state: None,
            id,
            cancel,
            rounds: 0,
            minted: Vec::new(),
            used_inputs: Vec::new(),
            asked: Vec::new(),
            session_expired: false,
            incoming: None,
            logs_on_incoming: false,
            forward_headers,
            guard,
            failure: None,
            in_flight: None,
            route_meta: None,
        }
    }

    /// The request's params as the client sent them.
    pub(super) fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// How the upstream exchange failed, when it did.
    pub(super) fn failure(&self) -> Option<Failure> {
        self.failure
    }

    /// Counts the call on its upstream's load (see [`switchboard_router::registry::Load`]).
    pub(super) fn track(&mut self, in_flight: switchboard_router::registry::InFlight) {
        self.in_flight = Some(in_flight);
    }

    /// Sets what goes into the result's `_meta` under `dev.switchboard/route`.
    pub(super) fn mark_route(&mut self, meta: Value) {
        self.route_meta = Some(meta);
    }

    /// The session's in-flight guard, for the attempt that replaces this one.
    pub(super) fn take_guard(&mut self) -> Option<InFlightGuard> {
        self.guard.take()
    }

    /// Whether the last start failed because the upstream session expired.
    pub(super) fn session_expired(&self) -> bool {
        self.session_expired
    }

    /// Goes on with a fresh upstream connection (after its session expired).
    pub(super) fn reconnect(&mut self, upstream: Arc<McpClient>) {
        self.upstream = upstream;
        self.incoming = None;
    }

    /// What a sealed `requestState` of this call is bound to (computed when needed only).
    fn binding(&self) -> String {
        crate::bridge::binding(&self.method, &self.params)
    }

    fn legacy_upstream(&self) -> bool {
        self.upstream.era() == Era::Legacy
    }

    /// The params sent upstream, adapted to its era.
    fn upstream_params(&self, input_responses: Option<Map<String, Value>>) -> Map<String, Value> {
        let mut params = self.params.clone();
        if self.legacy_upstream() {
            // A 2025-11-25 server knows none of these.
            params.remove("inputResponses");
            params.remove("requestState");
            if let Some(Value::Object(m)) = params.get_mut("_meta") {
                for k in MODERN_REQUEST_META {
                    m.remove(k);
                }
                m.remove(meta::LOG_LEVEL);
            }
        } else if let Client::Legacy { caps, info, log_level, .. } = &self.client {
            let m = params.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = m {
                m.insert(meta::CLIENT_CAPABILITIES.into(), caps.clone());
                if info.as_object().is_some_and(|i| !i.is_empty()) {
                    m.insert(meta::CLIENT_INFO.into(), info.clone());
                }
                if let Some(level) = log_level {
                    m.insert(meta::LOG_LEVEL.into(), json!(level));
                }
            }
        }
        if let Some(responses) = input_responses {
            params.insert("inputResponses".into(), Value::Object(responses));
            match self.retry_state.clone() {
                Some(state) => params.insert("requestState".into(), state),
                None => params.remove("requestState"),
            };
        }
        params
    }

    /// Sends the request (or its retry with the client's answers) upstream: `Running`.
    pub(super) async fn start(
        &mut self,
        input_responses: Option<Map<String, Value>>,
    ) -> Result<(), ErrorObject> {
        let params = self.upstream_params(input_responses);
        if self.legacy_upstream() && self.incoming.is_none() {
            // A 2025-11-25 server may send its log messages on the session's GET stream
            // rather than the call's; those arriving during the call are relayed to it.
            self.incoming = Some(self.upstream.upstream().incoming());
        }
        let extra = self.forward_headers.clone();
        match self.upstream.start_with_headers(&self.method, Value::Object(params), extra).await {
            Ok(ex) => {
                self.state = State::Running(ex);
                Ok(())
            }
            Err(e) => {
                self.session_expired = matches!(e, switchboard_transport::Error::SessionExpired { .. });
                self.failure = Some(Failure::of(&e));
                self.state = State::Finished;
                Err(self.failed(e))
            }
        }
    }

    fn failed(&self, reason: impl std::fmt::Display) -> ErrorObject {
        ErrorObject::new(
            error_code::UPSTREAM_FAILED,
            format!("upstream server {:?} failed: {reason}", self.server),
        )
    }

    /// The final message: `Finished`.
    fn finish(&mut self, mut m: Message) -> Option<Message> {
        m.set_id(&self.id);
        // The latency of a call the server answered is a sample of its load; a failed
        // exchange only leaves the in-flight count.
        if let Some(f) = self.in_flight.take()
            && self.failure.is_none()
        {
            f.finish();
        }
        if let (Some(meta), Some(Value::Object(result))) = (self.route_meta.take(), m.result_mut())
            && let Value::Object(slot) = result.entry("_meta").or_insert_with(|| json!({}))
        {
            slot.insert(switchboard_wire::meta::SWITCHBOARD_ROUTE.into(), meta);
        }
        if matches!(self.client, Client::Modern { .. })
            && let Some(Value::Object(result)) = m.result_mut()
        {
            // A 2025-11-25 upstream's result, as a 2026-07-28 client must see it.
            result.entry("resultType").or_insert_with(|| json!("complete"));
            if self.method == method::RESOURCES_READ {
                result.entry("ttlMs").or_insert_with(|| json!(0));
                result.entry("cacheScope").or_insert_with(|| json!("private"));
            }
        }
        self.state = State::Finished;
        Some(m)
    }

    fn finish_error(&mut self, e: ErrorObject) -> Option<Message> {
        let m = Message::error_response(Some(self.id.clone()), e);
        self.finish(m)
    }

    /// Resumes a parked call with the client's `inputResponses`: `Running` when every parked
    /// question is answered, else `Finished` with a new `input_required` in the outbox.
    pub(super) fn resume(&mut self, state: &str) -> Result<(), ErrorObject> {
        let refuse = |message: String| ErrorObject::new(error_code::INVALID_PARAMS, message);
        let parked = self
            .config
            .bridge
            .resume(&self.config.session_key, state, &self.binding())
            .map_err(|e| refuse(e.to_string()))?;
        let responses = match self.params.get("inputResponses") {
            Some(Value::Object(m)) => m.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Err(refuse("params.inputResponses must be an object".into())),
        };
        let Parked { exchange, server, inputs, binding, log_level, asked, .. } = parked;
        // The answers of this retry belong to the parked questions only: a later question of
        // the upstream gets none of them, and no key asked before is asked again.
        self.used_inputs = responses.keys().cloned().collect();
        self.asked = asked.clone();
        let mut missing = Vec::new();
        for (key, upstream_id, request) in inputs {
            match responses.get(&key) {
                Some(answer @ Value::Object(_)) => {
                    let Some(uid) = Id::from_value(&upstream_id) else { continue };
                    let upstream = self.upstream.upstream().clone();
                    let reply = Message::response(uid, answer.clone());
                    tokio::spawn(async move {
                        if let Err(e) = upstream.send(reply).await {
                            tracing::warn!(error = %e, "could not deliver an input response upstream");
                        }
                    });
                }
                _ => missing.push((key, upstream_id, request)),
            }
        }
        if missing.is_empty() {
            self.state = State::Running(exchange);
            return Ok(());
        }
        // Ask again for what is still missing; the call stays parked.
        let requests: Map<String, Value> = missing.iter().map(|(k, _, r)| (k.clone(), r.clone())).collect();
        let mut p = Parked::new(exchange, server, missing, binding, log_level);
        p.asked = asked;
        let last = match self.config.bridge.park(&self.config.session_key, p) {
            Ok(state) => Message::response(
                self.id.clone(),
                json!({"resultType": "input_required", "inputRequests": requests, "requestState": state}),
            ),
            Err(e) => Message::error_response(
                Some(self.id.clone()),
                ErrorObject::new(error_code::INTERNAL_ERROR, e.to_string()),
            ),
        };
        self.outbox.push_back(last);
        self.state = State::Finished;
        Ok(())
    }

    /// The next message for the client; the response comes last, then `None`.
    pub(super) async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(m) = self.outbox.pop_front() {
                return Some(m);
            }
            if matches!(self.state, State::Asking(_)) {
                let State::Asking(owed) = std::mem::replace(&mut self.state, State::Finished) else {
                    return None;
                };
                match self.collect_answers(owed).await {
                    Ok(responses) => {
                        if let Err(e) = self.start(Some(responses)).await {
                            return self.finish_error(e);
                        }
                    }
                    Err(e) => return self.finish_error(e),
                }
                continue;
            }
            let State::Running(exchange) = &mut self.state else { return None };
            let incoming = &mut self.incoming;
            let next = tokio::select! {
                biased;
                () = self.cancel.cancelled() => {
                    return self.finish_error(ErrorObject::new(REQUEST_CANCELLED, "Request cancelled"));
                }
                next = exchange.next() => next,
                m = async {
                    match incoming.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    match m {
                        Ok(m) if m.method() == Some(method::NOTIFICATION_MESSAGE) && self.wants(&m) => {
                            self.logs_on_incoming = true;
                            return Some(m);
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => self.incoming = None,
                    }
                    continue;
                }
            };
            match next {
                Some(Ok(m)) if m.is_response() => {
                    self.drain_incoming_logs().await;
                    if let Some(out) = self.on_response(m) {
                        self.outbox.push_back(out);
                    }
                }
                Some(Ok(m)) if relayable(&m) => {
                    if self.wants(&m) {
                        return Some(m);
                    }
                }
                Some(Ok(m)) if m.is_request() => {
                    if let Some(out) = self.on_server_request(m).await {
                        return Some(out);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    self.failure = Some(Failure::of(&e));
                    let e = self.failed(e);
                    return self.finish_error(e);
                }
                None => {
                    self.failure = Some(Failure::MayHaveRun);
                    let e = self.failed("stream ended without a response");
                    return self.finish_error(e);
                }
            }
        }
    }

    /// Before the response: log messages of the call that a legacy upstream sent on its GET
    /// stream may still be on their way; those already here are relayed, and when this call
    /// has seen such messages, stragglers get a few milliseconds.
    async fn drain_incoming_logs(&mut self) {
        let Some(mut rx) = self.incoming.take() else { return };
        let grace = if self.logs_on_incoming { Duration::from_millis(15) } else { Duration::ZERO };
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let m = match rx.try_recv() {
                Ok(m) => m,
                Err(broadcast::error::TryRecvError::Empty) if !grace.is_zero() => {
                    match tokio::time::timeout_at(deadline, rx.recv()).await {
                        Ok(Ok(m)) => m,
                        _ => break,
                    }
                }
                Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
                Err(_) => break,
            };
            if m.method() == Some(method::NOTIFICATION_MESSAGE) && self.wants(&m) {
                self.outbox.push_back(m);
            }
        }
        self.incoming = Some(rx);
    }

    /// Whether a relayed notification reaches the client (log levels).
    fn wants(&self, m: &Message) -> bool {
        if m.method() != Some(method::NOTIFICATION_MESSAGE) {
            return true;
        }
        let level = m.params().and_then(|p| p.get("level")).and_then(Value::as_str).unwrap_or("info");
        self.client.wants_log(level)
    }

    /// The upstream answered. A modern upstream's `input_required` for a legacy client is
    /// asked of the client as server → client requests (`Asking`); anything else is the
    /// response (`Finished`).
    fn on_response(&mut self, m: Message) -> Option<Message> {
        let input_required =
            m.result().and_then(|r| r.get("resultType")).and_then(Value::as_str) == Some("input_required");
        let Client::Legacy { sid, .. } = &self.client else { return self.finish(m) };
        if !input_required {
            return self.finish(m);
        }
        if self.rounds >= MAX_ROUNDS {
            let e = ErrorObject::new(
                error_code::INTERNAL_ERROR,
                format!("upstream {:?} asked for input more than {MAX_ROUNDS} times", self.server),
            );
            return self.finish_error(e);
        }
        self.rounds += 1;
        let sid = sid.clone();
        let result = m.result().cloned().unwrap_or_default();
        self.retry_state = result.get("requestState").cloned();
        let requests = result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut owed = Vec::new();
        for (key, request) in requests {
            let req_method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
            if !self.client.allows(&req_method) {
                let cap = capability_of(&req_method).unwrap_or("unknown");
                let e = ErrorObject::new(
                    error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("upstream {:?} needs {req_method}, but the session did not declare the {cap} capability", self.server),
                )
                .with_data(json!({"requiredCapabilities": {cap: {}}}));
                return self.finish_error(e);
            }
            let id = self.config.bridge.mint_request_id();
            let rx = self.config.bridge.expect_answer(&sid, &id);
            self.minted.push(id.clone());
            let params = request.get("params").cloned();
            if let Some(rid) = Id::from_value(&id) {
                self.outbox.push_back(Message::request(rid, &req_method, params));
            }
            owed.push((key, id, rx));
        }
        self.state = State::Asking(owed);
        None
    }

    /// Waits for the legacy client's answers; they are the retry's `inputResponses`.
    async fn collect_answers(&mut self, owed: Vec<Owed>) -> Result<Map<String, Value>, ErrorObject> {
        let mut responses = Map::new();
        let deadline = tokio::time::sleep(self.config.answer_timeout);
        tokio::pin!(deadline);
        for (key, id, rx) in owed {
            let answer = tokio::select! {
                () = self.cancel.cancelled() => return Err(ErrorObject::new(REQUEST_CANCELLED, "Request cancelled")),
                () = &mut deadline => {
                    return Err(ErrorObject::new(
                        error_code::INTERNAL_ERROR,
                        format!("the client did not answer request {id} within {} s", self.config.answer_timeout.as_secs()),
                    ));
                }
                a = rx => a,
            };
            let Ok(answer) = answer else {
                return Err(ErrorObject::new(
                    error_code::INTERNAL_ERROR,
                    format!("request {id} was abandoned"),
                ));
            };
            if let Some(e) = answer.error() {
                return Err(ErrorObject::new(
                    e.code,
                    format!("the client refused request {id} for upstream {:?}: {}", self.server, e.message),
                ));
            }
            responses.insert(key, answer.result().cloned().unwrap_or_else(|| json!({})));
        }
        Ok(responses)
    }
}

/// Notifications of the call relayed to the client.
fn relayable(m: &Message) -> bool {
    m.is_notification()
        && matches!(m.method(), Some(method::NOTIFICATION_PROGRESS) | Some(method::NOTIFICATION_MESSAGE))
}

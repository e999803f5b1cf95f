//! Questions an upstream asks during a call (server → client requests), bridged to the
//! client's revision: relayed with an id of ours to a 2025-11-25 client (its answer comes back
//! as a message of its own), or gathered into an `InputRequiredResult` with a router-sealed
//! `requestState` for a 2026-07-28 client, the call parked until the client retries.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_wire::{ErrorObject, Id, Message, error_code, method};

use super::{Call, State, relayable};
use crate::bridge::Parked;
use crate::endpoint::client::{Client, capability_of};

/// Most input keys one bridged call may ask a 2026 client for, over all its rounds.
const MAX_INPUTS_PER_CALL: usize = 1024;

/// How long to wait for further server → client requests after the first, so requests a
/// legacy upstream sends together reach a 2026 client in one `InputRequiredResult`.
const GATHER: Duration = Duration::from_millis(40);

impl Call {
    /// A legacy upstream asks the client something during the call.
    pub(super) async fn on_server_request(&mut self, m: Message) -> Option<Message> {
        let upstream = self.upstream.upstream().clone();
        let req_method = m.method().unwrap_or_default().to_owned();
        let upstream_id = m.id()?;
        if req_method == method::PING {
            let _ = upstream.send(Message::response(upstream_id, json!({}))).await;
            return None;
        }
        match self.client.clone() {
            Client::Legacy { sid, .. } => {
                if !self.client.allows(&req_method) {
                    refuse_upstream(&upstream, upstream_id, &req_method).await;
                    return None;
                }
                // Relay with an id of ours; the answer comes back as a POST.
                let id = self.config.bridge.mint_request_id();
                let rx = self.config.bridge.expect_answer(&sid, &id);
                self.minted.push(id.clone());
                let timeout = self.config.answer_timeout;
                tokio::spawn(async move {
                    let reply = match tokio::time::timeout(timeout, rx).await {
                        Ok(Ok(answer)) => match answer.error() {
                            Some(e) => Message::error_response(Some(upstream_id), e),
                            None => Message::response(
                                upstream_id,
                                answer.result().cloned().unwrap_or_else(|| json!({})),
                            ),
                        },
                        _ => Message::error_response(
                            Some(upstream_id),
                            ErrorObject::new(error_code::INTERNAL_ERROR, "the client did not answer"),
                        ),
                    };
                    let _ = upstream.send(reply).await;
                });
                let mut out = m;
                if let Some(rid) = Id::from_value(&id) {
                    out.set_id(&rid);
                }
                Some(out)
            }
            Client::Modern { .. } => self.bridge_to_input_required(m).await,
        }
    }

    /// Gathers the legacy upstream's requests, parks the call and answers the 2026 client
    /// with an `InputRequiredResult` whose `requestState` the router sealed.
    async fn bridge_to_input_required(&mut self, first: Message) -> Option<Message> {
        let upstream = self.upstream.upstream().clone();
        let mut asked = vec![first];
        while let State::Running(exchange) = &mut self.state {
            match tokio::time::timeout(GATHER, exchange.next()).await {
                Err(_) => break,
                Ok(Some(Ok(m))) if m.is_request() => asked.push(m),
                Ok(Some(Ok(m))) if m.is_response() => {
                    // Answered without waiting for its questions: that is the response.
                    for q in asked {
                        if let Some(qid) = q.id() {
                            refuse_upstream(&upstream, qid, q.method().unwrap_or_default()).await;
                        }
                    }
                    return self.finish(m);
                }
                Ok(Some(Ok(m))) => {
                    if relayable(&m) && self.wants(&m) {
                        self.outbox.push_back(m);
                    }
                }
                Ok(Some(Err(e))) => {
                    let e = self.failed(e);
                    return self.finish_error(e);
                }
                Ok(None) => break,
            }
        }
        let mut inputs = Vec::new();
        let mut requests = Map::new();
        let mut unmet = Map::new();
        for q in asked {
            let req_method = q.method().unwrap_or_default().to_owned();
            let Some(qid) = q.id() else { continue };
            if req_method == method::PING {
                let _ = upstream.send(Message::response(qid, json!({}))).await;
                continue;
            }
            if !self.client.allows(&req_method) {
                if let Some(cap) = capability_of(&req_method) {
                    unmet.insert(cap.into(), json!({}));
                }
                refuse_upstream(&upstream, qid, &req_method).await;
                continue;
            }
            let mut params = q.params().cloned().unwrap_or_default();
            // Keys are unique within the call across rounds: a hint already used (this round or
            // an earlier one) or a made-up key gets the next free number.
            let taken = |k: &str| {
                requests.contains_key(k)
                    || self.asked.iter().any(|a| a == k)
                    || self.used_inputs.iter().any(|a| a == k)
            };
            let hint = input_key_hint(&mut params).filter(|k| !taken(k));
            let key = hint.unwrap_or_else(|| {
                let stem = req_method.replace('/', "_");
                (1usize..).map(|n| format!("{stem}_{n}")).find(|k| !taken(k)).unwrap_or(stem)
            });
            // Answered up front (a client may send inputResponses without a requestState):
            // hand the answer over instead of asking.
            if !self.used_inputs.contains(&key)
                && let Some(answer @ Value::Object(_)) =
                    self.params.get("inputResponses").and_then(|r| r.get(&key)).cloned()
            {
                self.used_inputs.push(key);
                let _ = upstream.send(Message::response(qid, answer)).await;
                continue;
            }
            let request = json!({"method": req_method, "params": params});
            requests.insert(key.clone(), request.clone());
            inputs.push((key, qid.to_value(), request));
        }
        if inputs.is_empty() && unmet.is_empty() {
            // Everything was answered from the request's own inputResponses.
            return None;
        }
        if inputs.is_empty() {
            let e = ErrorObject::new(
                error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("upstream {:?} needs client capabilities the request did not declare", self.server),
            )
            .with_data(json!({"requiredCapabilities": unmet}));
            return self.finish_error(e);
        }
        let mut asked = std::mem::take(&mut self.asked);
        for key in self.used_inputs.iter().chain(inputs.iter().map(|(k, _, _)| k)) {
            if !asked.contains(key) {
                asked.push(key.clone());
            }
        }
        if asked.len() > MAX_INPUTS_PER_CALL {
            let e = self.failed(format!("it asked for more than {MAX_INPUTS_PER_CALL} inputs in one call"));
            return self.finish_error(e);
        }
        let State::Running(exchange) = std::mem::replace(&mut self.state, State::Finished) else {
            let e = self.failed("the call ended while asking for input");
            return self.finish_error(e);
        };
        let mut parked = Parked::new(
            exchange,
            self.server.clone(),
            inputs,
            self.binding(),
            self.client.log_level().map(str::to_owned),
        );
        parked.asked = asked;
        let parked = self.config.bridge.park(&self.config.session_key, parked);
        let state = match parked {
            Ok(s) => s,
            Err(e) => return self.finish_error(ErrorObject::new(error_code::INTERNAL_ERROR, e.to_string())),
        };
        let result =
            json!({"resultType": "input_required", "inputRequests": requests, "requestState": state});
        let m = Message::response(self.id.clone(), result);
        // Notifications gathered meanwhile go first.
        self.outbox.push_back(m);
        self.outbox.pop_front()
    }
}

/// `_meta` key by which a 2025-11-25 server may name the input a request of its asks for;
/// the router then uses that name as the `inputRequests` key when it bridges the request to
/// a 2026-07-28 client (otherwise it makes one up from the method).
pub const INPUT_KEY_META: &str = "dev.switchboard/inputKey";

/// Takes a valid input key hint out of a server request's params.
fn input_key_hint(params: &mut Map<String, Value>) -> Option<String> {
    let Some(Value::Object(m)) = params.get_mut("_meta") else { return None };
    let hint = m.remove(INPUT_KEY_META)?;
    if m.is_empty() {
        params.remove("_meta");
    }
    let key = hint.as_str()?;
    let ok = !key.is_empty()
        && key.len() <= 64
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    ok.then(|| key.to_owned())
}

/// Tells a legacy upstream the client cannot answer its request.
async fn refuse_upstream(upstream: &Arc<dyn switchboard_transport::Upstream>, id: Id, req_method: &str) {
    let cap = capability_of(req_method).unwrap_or("that");
    let e = ErrorObject::new(
        error_code::METHOD_NOT_FOUND,
        format!("the client did not declare the {cap} capability ({req_method})"),
    );
    let _ = upstream.send(Message::error_response(Some(id), e)).await;
}

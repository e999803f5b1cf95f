//! Change notifications a client asks for: 2025-11-25 `logging/setLevel` and
//! `resources/subscribe`/`unsubscribe`, and the 2026-07-28 `subscriptions/listen` stream.

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use switchboard_wire::{Message, error_code, meta, method};

use super::client::{Client, supports_subscribe};
use super::handler::Handler;
use super::watch::watch_resource;
use super::{Outbound, Outgoing, Reply};
use crate::bridge::LOG_LEVELS;
use crate::notify::{Kind, MAX_RESOURCE_SUBSCRIPTIONS, Note, Subscriptions};

impl Handler {
    /// `logging/setLevel` of a legacy session: remembered on this instance and applied to
    /// the log notifications relayed to it (and sent upstream as `_meta` logLevel).
    pub(super) fn set_level(&self) -> Reply {
        let Client::Legacy { sid, .. } = &self.client else {
            return self.error(
                StatusCode::NOT_FOUND,
                error_code::METHOD_NOT_FOUND,
                "Method not found: logging/setLevel",
            );
        };
        match self.param_str("level") {
            Some(level) if LOG_LEVELS.contains(&level.as_str()) => {
                match self.config.bridge.set_level(sid, &level, self.config.session_max_age) {
                    Ok(()) => self.result(json!({})),
                    Err(full) => self.error(StatusCode::OK, error_code::INTERNAL_ERROR, full.to_string()),
                }
            }
            other => self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                format!("invalid log level {other:?}: one of {}", LOG_LEVELS.join(", ")),
            ),
        }
    }

    /// `resources/subscribe` / `resources/unsubscribe` of a legacy session.
    pub(super) async fn subscribe(self, on: bool) -> Reply {
        let Client::Legacy { sid, .. } = &self.client else {
            return self.error(StatusCode::NOT_FOUND, error_code::METHOD_NOT_FOUND, "Method not found");
        };
        let Some(uri) = self.param_str("uri") else {
            return self.error(StatusCode::OK, error_code::INVALID_PARAMS, "params.uri is required");
        };
        let Some(server) = self.view().resource_server(&uri) else {
            return self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                format!("Resource not found: {uri}"),
            );
        };
        if !supports_subscribe(&self.registry, &server) {
            return self.error(
                StatusCode::OK,
                error_code::METHOD_NOT_FOUND,
                format!("server {server:?} offering {uri} does not support resource subscriptions"),
            );
        }
        self.config.notifier.ensure_started(&self.registry);
        if !on {
            self.config.subscriptions.remove(sid, &uri);
            return self.result(json!({}));
        }
        match self.config.subscriptions.add(sid, &uri) {
            Err(e) => return self.error(StatusCode::OK, error_code::INVALID_PARAMS, e.to_string()),
            Ok(None) => {}
            Ok(Some(watch)) => {
                if let Err(e) = watch_resource(&self.registry, &self.config, &server, watch).await {
                    self.config.subscriptions.remove(sid, &uri);
                    return self.upstream_failed(&server, e);
                }
            }
        }
        self.result(json!({}))
    }

    /// `subscriptions/listen`: a message stream that starts with the acknowledgement and
    /// carries the accepted kinds of change, tagged with the subscription id (the listen
    /// request's id); it lasts until the client closes it.
    pub(super) fn listen(self) -> Reply {
        let Some(id) = self.id.clone() else { return Reply::Accepted };
        let filter =
            self.msg.params().and_then(|p| p.get("notifications")).cloned().unwrap_or_else(|| json!({}));
        let Some(filter) = filter.as_object() else {
            return self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                "params.notifications must be an object",
            );
        };
        self.config.notifier.ensure_started(&self.registry);
        let mut accepted = Map::new();
        let mut kinds = Vec::new();
        for (key, kind) in [
            ("toolsListChanged", Kind::Tools),
            ("promptsListChanged", Kind::Prompts),
            ("resourcesListChanged", Kind::Resources),
        ] {
            if filter.get(key) == Some(&json!(true)) {
                accepted.insert(key.into(), json!(true));
                kinds.push(kind);
            }
        }
        let listener = format!("listen:{}", self.config.bridge.next_id());
        let mut uris = Vec::new();
        if let Some(requested) = filter.get("resourceSubscriptions").and_then(Value::as_array) {
            if requested.len() > MAX_RESOURCE_SUBSCRIPTIONS {
                return self.error(
                    StatusCode::OK,
                    error_code::INVALID_PARAMS,
                    format!(
                        "params.notifications.resourceSubscriptions lists {} URIs; at most {MAX_RESOURCE_SUBSCRIPTIONS} are accepted",
                        requested.len()
                    ),
                );
            }
            for uri in requested.iter().filter_map(Value::as_str) {
                let Some(server) = self.view().resource_server(uri) else { continue };
                if !supports_subscribe(&self.registry, &server) {
                    continue;
                }
                match self.config.subscriptions.add(&listener, uri) {
                    Err(e) => {
                        self.config.subscriptions.end_session(&listener);
                        return self.error(StatusCode::OK, error_code::INVALID_PARAMS, e.to_string());
                    }
                    Ok(watch) => {
                        if let Some(watch) = watch {
                            let (registry, config) = (self.registry.clone(), self.config.clone());
                            tokio::spawn(async move {
                                let _ = watch_resource(&registry, &config, &server, watch).await;
                            });
                        }
                        uris.push(uri.to_owned());
                    }
                }
            }
            accepted.insert("resourceSubscriptions".into(), json!(uris));
        }
        let sub_id = id.to_value();
        let tag = move |mut m: Message| {
            m.meta_mut().insert(meta::SUBSCRIPTION_ID.into(), sub_id.clone());
            m
        };
        let mut ack = Message::notification(
            method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(json!({"notifications": accepted})),
        );
        ack = tag(ack);
        let rx = self.config.notifier.subscribe();
        struct Listening {
            rx: tokio::sync::broadcast::Receiver<Arc<Note>>,
            ack: Option<Message>,
            kinds: Vec<Kind>,
            listener: String,
            subscriptions: Subscriptions,
        }
        impl Drop for Listening {
            fn drop(&mut self) {
                self.subscriptions.end_session(&self.listener);
            }
        }
        let state = Listening {
            rx,
            ack: Some(ack),
            kinds,
            listener,
            subscriptions: self.config.subscriptions.clone(),
        };
        let stream = futures::stream::unfold(state, move |mut s| {
            let tag = tag.clone();
            async move {
                if let Some(ack) = s.ack.take() {
                    return Some((Outgoing::from(ack), s));
                }
                loop {
                    let note = match s.rx.recv().await {
                        Ok(n) => n,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    };
                    let wanted = match &note.kind {
                        Kind::Updated(uri) => s.subscriptions.has(&s.listener, uri),
                        k => s.kinds.contains(k),
                    };
                    if wanted {
                        return Some((Outgoing::from(tag(note.kind.message())), s));
                    }
                }
            }
        });
        Reply::Stream(Outbound { messages: Box::pin(stream), long_lived: true })
    }
}

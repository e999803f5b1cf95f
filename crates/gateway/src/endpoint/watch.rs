//! The one upstream watcher of a subscribed resource URI (see [`crate::notify::Subscriptions`]).

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_router::Registry;
use switchboard_wire::{Era, Message, method};

use crate::config::EndpointConfig;
use crate::notify::{Kind, WatchStart};

/// Starts the one watcher of `watch.uri` on `server` (see [`Subscriptions`]): a legacy
/// upstream is sent `resources/subscribe` once and its `resources/updated` notifications are
/// followed; a modern one is asked through a `subscriptions/listen` stream of its own. Each
/// change is published once. When the last subscriber leaves (`watch.stop`), a legacy
/// upstream is sent `resources/unsubscribe` and a modern stream is closed. Returns once the
/// upstream accepted the subscription.
pub(super) async fn watch_resource(
    registry: &Registry,
    config: &Arc<EndpointConfig>,
    server: &str,
    watch: WatchStart,
) -> Result<(), String> {
    let subscriptions = config.subscriptions.clone();
    let WatchStart { uri, stop, generation } = watch;
    let ended = |why: &str| {
        tracing::debug!(%uri, server, why, "resource watcher ended");
        subscriptions.watch_ended(&uri, generation);
    };
    let Some(client) = registry.entry(server).and_then(|e| e.client()) else {
        ended("server not connected");
        return Err("not connected".into());
    };
    let notifier = config.notifier.clone();
    let is_update = |m: &Message, uri: &str| {
        m.method() == Some(method::NOTIFICATION_RESOURCES_UPDATED)
            && m.params().and_then(|p| p.get("uri")).and_then(Value::as_str) == Some(uri)
    };
    if client.era() == Era::Legacy {
        let mut incoming = client.upstream().incoming();
        if let Err(e) = client.request(method::RESOURCES_SUBSCRIBE, json!({"uri": uri})).await {
            tracing::warn!(%uri, error = %e, "upstream refused resources/subscribe");
            ended("subscribe refused");
            return Err(format!("resources/subscribe refused: {e}"));
        }
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => {
                        if let Err(e) = client.request(method::RESOURCES_UNSUBSCRIBE, json!({"uri": uri})).await {
                            tracing::debug!(%uri, error = %e, "resources/unsubscribe failed");
                        }
                        return;
                    }
                    m = incoming.recv() => match m {
                        Ok(m) if is_update(&m, &uri) => notifier.publish(Kind::Updated(uri.clone())),
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            subscriptions.watch_ended(&uri, generation);
                            return;
                        }
                    },
                }
            }
        });
    } else {
        let params = json!({"notifications": {"resourceSubscriptions": [uri]}});
        let mut exchange = match client.start(method::SUBSCRIPTIONS_LISTEN, params).await {
            Ok(ex) => ex,
            Err(e) => {
                ended("listen refused");
                return Err(format!("subscriptions/listen failed: {e}"));
            }
        };
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    // Dropping the exchange closes the stream upstream.
                    () = stop.cancelled() => return,
                    m = exchange.next() => match m {
                        Some(Ok(m)) if is_update(&m, &uri) => notifier.publish(Kind::Updated(uri.clone())),
                        Some(Ok(m)) if !m.is_response() => {}
                        _ => {
                            subscriptions.watch_ended(&uri, generation);
                            return;
                        }
                    },
                }
            }
        });
    }
    Ok(())
}

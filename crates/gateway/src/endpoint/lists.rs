//! Federated lists (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`) and `server/discover`: paging with opaque cursors, `ttlMs`, and
//! re-listing servers whose cached list is older than their own `ttlMs` before answering.

use std::time::Duration;

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};
use switchboard_router::ServerState;
use switchboard_wire::{MODERN_VERSIONS, error_code, meta};

use super::Reply;
use super::client::capabilities;
use super::handler::Handler;
use crate::config::PENDING_TTL_MS;

/// Whether a server that should be up is not (yet): pending or degraded, not disabled.
fn coming(v: &switchboard_router::ServerView) -> bool {
    matches!(v.state, ServerState::Pending | ServerState::Degraded) && v.reason != "disabled in configuration"
}

pub(super) fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(offset.to_string())
}

pub(super) fn decode_cursor(cursor: &str) -> Option<usize> {
    let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&raw).ok()?.parse().ok()
}

impl Handler {
    /// `ttlMs` of federated results: the endpoint's own, or less when an upstream asked for
    /// less (a merged list is only as fresh as its most volatile part).
    fn ttl_ms(&self) -> u64 {
        let upstream = self
            .view()
            .routes
            .catalogs
            .values()
            .filter_map(|c| c.ttl)
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
            .min();
        let ttl = upstream.map_or(self.config.ttl_ms, |u| u.min(self.config.ttl_ms));
        if self.registry.servers().iter().any(coming) { ttl.min(PENDING_TTL_MS) } else { ttl }
    }

    /// Re-lists the ready servers whose list is older than the `ttlMs` they gave, waiting at
    /// most [`crate::config::EndpointConfig::stale_list_wait`]. Listings coalesce in the
    /// registry (one per server however many requests wait); one that outlasts the wait
    /// finishes on its own and the request answers from what is cached.
    async fn refresh_stale(&self) {
        let stale: Vec<(String, Duration)> = self
            .view()
            .routes
            .catalogs
            .iter()
            .filter_map(|(name, c)| c.ttl.map(|t| (name.clone(), t)))
            .collect();
        if stale.is_empty() {
            return;
        }
        let registry = self.registry.clone();
        let mut all = Box::pin(async move {
            let refreshes = stale.iter().map(|(name, ttl)| registry.refresh_if_stale(name, *ttl));
            for (r, (name, _)) in futures::future::join_all(refreshes).await.into_iter().zip(&stale) {
                if let Err(e) = r {
                    tracing::debug!(server = %name, error = %e, "on-demand re-list failed; answering the cached list");
                }
            }
        });
        if tokio::time::timeout(self.config.stale_list_wait, &mut all).await.is_err() {
            // Dropping the listing would cancel it upstream; let it finish for the next request.
            tokio::spawn(all);
        }
    }

    pub(super) fn discover(&self) -> Reply {
        let capabilities = capabilities(&self.registry, &self.view(), false);
        self.result(json!({
            "resultType": "complete",
            "supportedVersions": MODERN_VERSIONS,
            "capabilities": capabilities,
            "_meta": {meta::SERVER_INFO: {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")}},
            "ttlMs": self.ttl_ms(),
            "cacheScope": "public",
        }))
    }

    fn page(&self, key: &str, items: Vec<Value>) -> Reply {
        let offset = match self.param_str("cursor") {
            None => 0,
            Some(c) => match decode_cursor(&c).filter(|o| *o <= items.len()) {
                Some(o) => o,
                None => {
                    return self.error(
                        StatusCode::OK,
                        error_code::INVALID_PARAMS,
                        format!("invalid cursor {c:?}"),
                    );
                }
            },
        };
        let size = self.config.page_size.max(1);
        let end = offset.saturating_add(size).min(items.len());
        let page: Vec<Value> = items.get(offset..end).map(<[Value]>::to_vec).unwrap_or_default();
        let mut result = Map::new();
        result.insert("resultType".into(), json!("complete"));
        result.insert(key.into(), Value::Array(page));
        if end < items.len() {
            result.insert("nextCursor".into(), json!(encode_cursor(end)));
        }
        result.insert("ttlMs".into(), json!(self.ttl_ms()));
        result.insert("cacheScope".into(), json!("public"));
        self.result(Value::Object(result))
    }

    pub(super) async fn list_federated(&self, tools: bool) -> Reply {
        self.refresh_stale().await;
        let view = self.view();
        let list = if tools { &view.routes.federation.tools } else { &view.routes.federation.prompts };
        self.page(if tools { "tools" } else { "prompts" }, list.iter().map(|e| e.raw.clone()).collect())
    }

    pub(super) async fn list_resources(&self) -> Reply {
        self.refresh_stale().await;
        let items = self.view().routes.listed_catalogs().flat_map(|c| c.resources.clone()).collect();
        self.page("resources", items)
    }

    pub(super) async fn list_templates(&self) -> Reply {
        self.refresh_stale().await;
        let items = self.view().routes.listed_catalogs().flat_map(|c| c.resource_templates.clone()).collect();
        self.page("resourceTemplates", items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        assert_eq!(decode_cursor("!!"), None);
    }
}

//! Listing a server's catalog: on connect, at the refresh period, on `list_changed`, on
//! demand ([`Registry::refresh_if_stale`], coalesced) and manually ([`Registry::refresh`]); what
//! changed is published, then stored.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::Value;
use switchboard_store::ToolSnapshot;
use switchboard_transport::McpClient;
use switchboard_transport::client::ClientError;
use switchboard_wire::{Era, error_code, method};

use super::entry::{ServerEntry, ServerState, write};
use super::{Inner, Registry};
use crate::Error;
use crate::catalog::Catalog;
use crate::events::{Event, now_ms};
use crate::schema::compile_tools;

impl Registry {
    /// Re-lists a server's catalog if its last listing is older than `max_age`, and returns
    /// the catalog.
    ///
    /// A list's `ttlMs` ([`Catalog::ttl`]) says how long it may be cached, not how often to
    /// poll: the registry re-lists on its own only at the configured period and on
    /// `list_changed`. A caller that needs a list no older than its `ttlMs` calls this.
    /// Calls coalesce: at most one listing per server is in flight, and a caller that arrives
    /// while one runs waits for it and takes its outcome instead of starting another.
    ///
    /// # Errors
    /// [`Error::UnknownServer`]; [`Error::NotConnected`] when the server has no live
    /// connection (with its caller-facing state reason); [`Error::Refresh`] when the listing
    /// failed.
    pub async fn refresh_if_stale(&self, id_or_name: &str, max_age: Duration) -> Result<Arc<Catalog>, Error> {
        let entry =
            self.entry(id_or_name).ok_or_else(|| Error::UnknownServer { name: id_or_name.to_owned() })?;
        let seen = entry.listed();
        if seen.at.is_some_and(|at| at.elapsed() <= max_age) {
            return Ok(entry.catalog());
        }
        let _listing = entry.listing.lock().await;
        let now = entry.listed();
        if now.attempts != seen.attempts {
            // A listing finished while this caller waited: it is as fresh as one started now.
            return match now.failure {
                None => Ok(entry.catalog()),
                Some(reason) => Err(Error::Refresh { server: entry.spec.name.clone(), reason }),
            };
        }
        let client = entry.client().ok_or_else(|| {
            let (state, reason) = entry.state();
            Error::NotConnected { server: entry.spec.name.clone(), state: state.as_str(), reason }
        })?;
        match refresh_locked(&self.inner, &entry, &client, "on_demand").await {
            Ok(n) => {
                if entry.state().0 != ServerState::Ready {
                    let q = entry.catalog().quarantined.len();
                    self.inner.set_state(&entry, ServerState::Ready, ready_reason(&client, n, q)).await;
                }
                Ok(entry.catalog())
            }
            Err(e) => Err(Error::Refresh { server: entry.spec.name.clone(), reason: e.to_string() }),
        }
    }

    /// A forwarded call to `id_or_name` failed at the transport level (refused, reset, timed
    /// out): the server is probed now instead of at its next probe interval, and enough such
    /// failures make it `unavailable` (see the registry's `health` module).
    pub fn call_failed(&self, id_or_name: &str) -> bool {
        match self.entry(id_or_name) {
            Some(e) => {
                e.probe_now.notify_one();
                true
            }
            None => false,
        }
    }

    /// Asks a server to relist its catalog now.
    pub fn refresh(&self, id_or_name: &str) -> bool {
        match self.entry(id_or_name) {
            Some(e) => {
                e.refresh_now.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Lists tools (and resources, templates, prompts where advertised) and compiles them.
pub async fn list_catalog(client: &McpClient) -> Result<Catalog, ClientError> {
    let caps = client.handshake().server_capabilities;
    let has = |k: &str| caps.get(k).is_some_and(|v| !v.is_null());
    let mut ttl: Option<u64> = None;
    let mut min_ttl = |t: Option<u64>| {
        if let Some(t) = t {
            ttl = Some(ttl.map_or(t, |x| x.min(t)));
        }
    };
    let (tools, quarantined) = if has("tools") {
        let l = client.list_all(method::TOOLS_LIST, "tools").await?;
        min_ttl(l.ttl_ms);
        compile_tools(&l.items)
    } else {
        (Vec::new(), Vec::new())
    };
    let optional = |r: Result<switchboard_transport::client::ListAll, ClientError>| match r {
        Ok(l) => Ok(Some(l)),
        Err(ClientError::Rpc { error, .. }) if error.code == error_code::METHOD_NOT_FOUND => Ok(None),
        Err(e) => Err(e),
    };
    let mut resources = Vec::new();
    let mut resource_templates = Vec::new();
    if has("resources") {
        if let Some(l) = optional(client.list_all(method::RESOURCES_LIST, "resources").await)? {
            min_ttl(l.ttl_ms);
            resources = l.items;
        }
        if let Some(l) =
            optional(client.list_all(method::RESOURCES_TEMPLATES_LIST, "resourceTemplates").await)?
        {
            min_ttl(l.ttl_ms);
            resource_templates = l.items;
        }
    }
    let mut prompts = Vec::new();
    if has("prompts")
        && let Some(l) = optional(client.list_all(method::PROMPTS_LIST, "prompts").await)?
    {
        min_ttl(l.ttl_ms);
        prompts = l.items;
    }
    for t in &tools {
        client.upstream().set_header_params(&t.name, t.header_params.clone());
    }
    Ok(Catalog {
        tools,
        quarantined,
        resources,
        resource_templates,
        prompts,
        ttl: ttl.map(Duration::from_millis),
        fetched_at_ms: now_ms(),
    })
}

/// Lists a server's catalog, after any listing already in flight.
pub(super) async fn refresh(
    inner: &Inner,
    entry: &ServerEntry,
    client: &McpClient,
    trigger: &str,
) -> Result<usize, ClientError> {
    let _listing = entry.listing.lock().await;
    refresh_locked(inner, entry, client, trigger).await
}

/// Lists a server's catalog; the caller holds `entry.listing`. Records the outcome.
async fn refresh_locked(
    inner: &Inner,
    entry: &ServerEntry,
    client: &McpClient,
    trigger: &str,
) -> Result<usize, ClientError> {
    let outcome = list_and_publish(inner, entry, client, trigger).await;
    let mut listed = entry.listed.lock().unwrap_or_else(PoisonError::into_inner);
    listed.attempts += 1;
    match &outcome {
        Ok(_) => {
            listed.at = Some(tokio::time::Instant::now());
            listed.failure = None;
        }
        Err(e) => listed.failure = Some(e.to_string()),
    }
    outcome
}

/// `true` when two catalogs offer the same lists (the fetch time and `ttlMs` aside).
fn same_lists(a: &Catalog, b: &Catalog) -> bool {
    a.tools.len() == b.tools.len()
        && a.tools.iter().zip(&b.tools).all(|(x, y)| x.raw == y.raw)
        && a.quarantined == b.quarantined
        && a.resources == b.resources
        && a.resource_templates == b.resource_templates
        && a.prompts == b.prompts
}

/// Lists a server's catalog and, when it changed (or on connect), bumps the registry version,
/// publishes it (a `Catalog` event, and a `CatalogChanged` with the diff when an item differs)
/// and then stores a snapshot: the events never wait for the disk.
async fn list_and_publish(
    inner: &Inner,
    entry: &ServerEntry,
    client: &McpClient,
    trigger: &str,
) -> Result<usize, ClientError> {
    let catalog = list_catalog(client).await?;
    let previous = entry.catalog();
    if trigger != "connect" && same_lists(&previous, &catalog) {
        // Nothing a caller could notice: keep the newer fetch time and ttl, say nothing above DEBUG.
        let count = catalog.tools.len();
        tracing::debug!(server = %entry.spec.name, %trigger, tools = count, "catalog unchanged");
        write(&entry.catalog, Arc::new(catalog));
        return Ok(count);
    }
    for q in &catalog.quarantined {
        tracing::warn!(server = %entry.spec.name, tool = %q.name, error = %q.error, "tool quarantined: its schema does not compile");
    }
    let count = catalog.tools.len();
    // Stored before the events, so a listener reading the registry sees the new catalog.
    let catalog = Arc::new(catalog);
    write(&entry.catalog, catalog.clone());
    inner.version.fetch_add(1, std::sync::atomic::Ordering::Release);
    inner.events.publish(Event::Catalog {
        server_id: entry.id.clone(),
        server: entry.spec.name.clone(),
        tools: count,
        quarantined: catalog.quarantined.clone(),
        resources: catalog.resources.len(),
        prompts: catalog.prompts.len(),
        trigger: trigger.to_owned(),
        at_ms: catalog.fetched_at_ms,
    });
    // Computed only when somebody listens (a reconnect to the same catalog, or a mere
    // reordering, differs in nothing and publishes nothing).
    if inner.events.active() {
        let diff = previous.diff(&catalog);
        if !diff.is_empty() {
            tracing::debug!(server = %entry.spec.name, %trigger, ?diff, "catalog changed");
            inner.events.publish(Event::CatalogChanged {
                server: entry.spec.name.clone(),
                diff,
                at_ms: catalog.fetched_at_ms,
            });
        }
    }
    if let Some(store) = &inner.store {
        let snap = ToolSnapshot {
            id: None,
            server_id: entry.id.clone(),
            taken_at_ms: catalog.fetched_at_ms,
            tools: Value::Array(catalog.raw_tools()),
            quarantined: serde_json::to_value(&catalog.quarantined).unwrap_or(Value::Null),
            resources: Value::Array(catalog.resources.clone()),
            prompts: Value::Array(catalog.prompts.clone()),
        };
        if let Err(e) = store.save_tool_snapshot(&snap).await {
            tracing::warn!(error = %e, "could not persist tool snapshot");
        }
    }
    Ok(count)
}

pub(super) fn ready_reason(client: &McpClient, tools: usize, quarantined: usize) -> String {
    let hs = client.handshake();
    let q = if quarantined > 0 { format!(", {quarantined} quarantined") } else { String::new() };
    format!(
        "{} {} ({}), {tools} tools{q}",
        hs.era,
        hs.protocol_version,
        if hs.era == Era::Modern { "server/discover" } else { "initialize" }
    )
}

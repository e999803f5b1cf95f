//! [`ServerView`]: the read-only picture of one server the CLI, the admin API and the UI show.

use serde::Serialize;
use serde_json::Value;
use switchboard_transport::UpstreamStatus;
use switchboard_wire::Era;

use super::entry::{ServerEntry, ServerState, read};
use crate::schema::Quarantined;

/// A read-only view of one server, for the CLI and the UI.
#[derive(Debug, Clone, Serialize)]
pub struct ServerView {
    /// Stable id.
    pub server_id: String,
    /// Name.
    pub name: String,
    /// `stdio`, `http` or `ws`.
    pub transport: &'static str,
    /// Command line or URL.
    pub endpoint: String,
    /// Domain labels.
    pub labels: Vec<String>,
    /// State.
    pub state: ServerState,
    /// Why it is in that state, fit for callers: never the server's stderr.
    pub reason: String,
    /// Operator detail of `reason` (the same plus the last stderr lines of a stdio server),
    /// when there is more to say. Can hold secrets: logs, events, the store and
    /// `switchboard servers` show it; it never goes into an error sent to a caller.
    pub detail: Option<String>,
    /// Since when (unix ms).
    pub since_ms: i64,
    /// Era spoken, once known.
    pub era: Option<Era>,
    /// Negotiated protocol version.
    pub protocol_version: Option<String>,
    /// `serverInfo`.
    pub server_info: Value,
    /// Usable tool names.
    pub tools: Vec<String>,
    /// Tools left out.
    pub quarantined: Vec<Quarantined>,
    /// Number of resources.
    pub resources: usize,
    /// Number of prompts.
    pub prompts: usize,
    /// Connection details (pid, restarts, memory, stderr tail, session): operator detail.
    pub status: UpstreamStatus,
}

impl ServerEntry {
    pub(super) fn view(&self) -> ServerView {
        let s = self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let client = read(&self.client);
        let hs = client.as_ref().map(|c| c.handshake());
        let cat = read(&self.catalog);
        ServerView {
            server_id: self.id.clone(),
            name: self.spec.name.clone(),
            transport: self.spec.transport.kind().as_str(),
            endpoint: self.spec.transport.describe(),
            labels: self.spec.labels.clone(),
            state: s.state,
            reason: s.reason.clone(),
            detail: s.detail.clone(),
            since_ms: s.since_ms,
            era: read(&self.era),
            protocol_version: hs.as_ref().map(|h| h.protocol_version.clone()),
            server_info: hs.map(|h| h.server_info).unwrap_or(Value::Null),
            tools: cat.tools.iter().map(|t| t.name.clone()).collect(),
            quarantined: cat.quarantined.clone(),
            resources: cat.resources.len(),
            prompts: cat.prompts.len(),
            status: read(&self.upstream).map(|u| u.status()).unwrap_or_default(),
        }
    }
}

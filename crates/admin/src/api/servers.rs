//! `/api/servers`: the registry's servers — list, add (a stdio command or a URL), remove,
//! restart, import an `mcp.json`, and one server's catalog with its schemas and quarantined
//! tools.

use std::collections::BTreeMap;
use std::path::PathBuf;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_router::config::{ServerToml, servers_from_mcp_json, spec_from_toml};
use switchboard_router::schema::Quarantined;
use ts_rs::TS;

use crate::AdminState;
use crate::error::AdminError;

/// Where servers added through the panel say they came from.
pub const PANEL_SOURCE: &str = "admin API";

/// One server as the registry sees it (the registry's `ServerView`, field for field).
#[derive(Debug, Clone, Serialize, TS)]
pub struct ServerView {
    /// Stable id.
    pub server_id: String,
    /// Name.
    pub name: String,
    /// `stdio`, `http`, `ws` or `in-process`.
    pub transport: String,
    /// Command line or URL.
    pub endpoint: String,
    /// Domain labels.
    pub labels: Vec<String>,
    /// `pending`, `ready`, `degraded` or `unavailable`.
    pub state: String,
    /// Why it is in that state, fit for callers.
    pub reason: String,
    /// The operator's detail of `reason` (with the last stderr lines).
    pub detail: Option<String>,
    /// Since when (unix ms).
    pub since_ms: i64,
    /// `modern` or `legacy`, once known.
    pub era: Option<String>,
    /// Negotiated protocol version.
    pub protocol_version: Option<String>,
    /// `serverInfo`.
    pub server_info: Value,
    /// Usable tool names.
    pub tools: Vec<String>,
    /// Tools left out, with the reason.
    pub quarantined: Vec<Quarantined>,
    /// Number of resources.
    pub resources: usize,
    /// Number of prompts.
    pub prompts: usize,
    /// The connection underneath.
    pub status: UpstreamStatus,
}

/// The connection underneath a server (operator detail).
#[derive(Debug, Clone, Serialize, TS)]
pub struct UpstreamStatus {
    /// `true` when messages can be sent now.
    pub connected: bool,
    /// Child process id (stdio).
    pub pid: Option<u32>,
    /// Restarts so far (stdio).
    pub restarts: u32,
    /// Resident memory of the child in bytes (stdio, Linux).
    pub memory_bytes: Option<u64>,
    /// Last stderr lines (stdio).
    pub stderr_tail: Vec<String>,
    /// Why the upstream is not connected, if it is not.
    pub last_error: Option<String>,
    /// 2025-11-25 HTTP session id, when one is held.
    pub session_id: Option<String>,
}

impl From<switchboard_router::ServerView> for ServerView {
    fn from(v: switchboard_router::ServerView) -> Self {
        let s = v.status;
        ServerView {
            server_id: v.server_id,
            name: v.name,
            transport: v.transport.to_owned(),
            endpoint: v.endpoint,
            labels: v.labels,
            state: v.state.as_str().to_owned(),
            reason: v.reason,
            detail: v.detail,
            since_ms: v.since_ms,
            era: v.era.map(|e| e.as_str().to_owned()),
            protocol_version: v.protocol_version,
            server_info: v.server_info,
            tools: v.tools,
            quarantined: v.quarantined,
            resources: v.resources,
            prompts: v.prompts,
            status: UpstreamStatus {
                connected: s.connected,
                pid: s.pid,
                restarts: s.restarts,
                memory_bytes: s.memory_bytes,
                stderr_tail: s.stderr_tail,
                last_error: s.last_error,
                session_id: s.session_id,
            },
        }
    }
}

/// Every server, by name.
pub fn views(state: &AdminState) -> Vec<ServerView> {
    state.config().registry.servers().into_iter().map(ServerView::from).collect()
}

/// `GET /api/servers`.
pub async fn list(State(state): State<AdminState>) -> Response {
    Json(views(&state)).into_response()
}

/// The body of `POST /api/servers`: exactly one of `command` (stdio) and `url` (Streamable
/// HTTP, or WebSocket for `ws://`/`wss://`).
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct AddServer {
    /// Unique name.
    pub name: String,
    /// Program of a stdio server.
    #[ts(optional)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    #[ts(optional)]
    pub args: Option<Vec<String>>,
    /// Extra environment of the child.
    #[serde(default)]
    #[ts(optional)]
    pub env: Option<BTreeMap<String, String>>,
    /// Working directory of the child.
    #[ts(optional)]
    pub cwd: Option<String>,
    /// URL of an HTTP or WebSocket server.
    #[ts(optional)]
    pub url: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    #[ts(optional)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Domain labels.
    #[serde(default)]
    #[ts(optional)]
    pub labels: Option<Vec<String>>,
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, AdminError> {
    serde_json::from_slice(body).map_err(|e| AdminError::BadRequest(format!("the body is not valid: {e}")))
}

/// `POST /api/servers` → `201` with the server's view.
pub async fn add(State(state): State<AdminState>, body: axum::body::Bytes) -> Result<Response, AdminError> {
    let req: AddServer = parse_json(&body)?;
    let name = req.name.trim();
    if name.is_empty() {
        return Err(AdminError::BadRequest("name: must not be empty".into()));
    }
    match (&req.command, &req.url) {
        (Some(_), Some(_)) => {
            return Err(AdminError::BadRequest("command and url: give exactly one, not both".into()));
        }
        (None, None) => return Err(AdminError::BadRequest("command or url: give exactly one".into())),
        _ => {}
    }
    let toml = ServerToml {
        command: req.command.clone(),
        args: req.args.unwrap_or_default(),
        env: req.env.unwrap_or_default(),
        cwd: req.cwd.map(PathBuf::from),
        url: req.url.clone(),
        headers: req.headers.unwrap_or_default(),
        labels: req.labels.unwrap_or_default(),
        ..ServerToml::default()
    };
    let spec = spec_from_toml(name, toml, PANEL_SOURCE).map_err(|e| AdminError::BadRequest(e.to_string()))?;
    let registry = &state.config().registry;
    registry.add(spec).await?;
    let view = registry
        .servers()
        .into_iter()
        .find(|v| v.name == name)
        .ok_or_else(|| AdminError::UnknownServer(name.to_owned()))?;
    Ok((StatusCode::CREATED, Json(ServerView::from(view))).into_response())
}

/// `DELETE /api/servers/{name}` → `204`.
pub async fn remove(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Result<Response, AdminError> {
    if state.config().registry.remove(&name).await {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(AdminError::UnknownServer(name))
    }
}

/// `POST /api/servers/{name}/restart` → `202`: the server is stopped and registered again
/// from the same definition (same id), so it reconnects and handshakes anew.
pub async fn restart(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Result<Response, AdminError> {
    let registry = &state.config().registry;
    let entry = registry.entry(&name).ok_or_else(|| AdminError::UnknownServer(name.clone()))?;
    let spec = entry.spec.clone();
    drop(entry);
    registry.remove(&spec.name).await;
    registry.add(spec).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// The answer of `POST /api/servers/import`.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct ImportResult {
    /// Names of the servers added.
    pub added: Vec<String>,
    /// Entries not added, and why.
    pub errors: Vec<ImportError>,
}

/// One `mcp.json` entry that was not added.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ImportError {
    /// The entry's name (empty when the file itself is at fault).
    pub name: String,
    /// Why.
    pub error: String,
}

/// `POST /api/servers/import` with the text of an `mcp.json` (`{"mcpServers": {...}}`).
pub async fn import(State(state): State<AdminState>, body: String) -> Result<Response, AdminError> {
    let (specs, bad) = servers_from_mcp_json(&body, PANEL_SOURCE)
        .map_err(|e| AdminError::BadRequest(format!("the mcp.json could not be read: {e}")))?;
    let mut out = ImportResult::default();
    for e in bad {
        out.errors.push(ImportError { name: String::new(), error: e.to_string() });
    }
    for spec in specs {
        let name = spec.name.clone();
        match state.config().registry.add(spec).await {
            Ok(_) => out.added.push(name),
            Err(e) => out.errors.push(ImportError { name, error: e.to_string() }),
        }
    }
    Ok(Json(out).into_response())
}

/// One usable tool, as the server listed it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct CatalogTool {
    /// Name.
    pub name: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub description: Option<String>,
    /// The input schema, as sent.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// The output schema, as sent.
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub output_schema: Option<Value>,
    /// Annotations, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub annotations: Option<Value>,
}

/// The answer of `GET /api/servers/{name}/catalog`.
#[derive(Debug, Clone, Serialize, TS)]
pub struct CatalogView {
    /// Usable tools.
    pub tools: Vec<CatalogTool>,
    /// Tools left out because a schema does not compile, with the error.
    pub quarantined: Vec<Quarantined>,
    /// `resources/list` items, as sent.
    pub resources: Vec<Value>,
    /// `resources/templates/list` items, as sent.
    pub templates: Vec<Value>,
    /// `prompts/list` items, as sent.
    pub prompts: Vec<Value>,
    /// When it was listed (unix ms; 0 before the first listing).
    pub fetched_at_ms: i64,
}

fn tool_of(raw: &Value, name: &str) -> CatalogTool {
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_owned);
    CatalogTool {
        name: name.to_owned(),
        title: text("title"),
        description: text("description"),
        input_schema: raw.get("inputSchema").cloned().unwrap_or(Value::Null),
        output_schema: raw.get("outputSchema").cloned(),
        annotations: raw.get("annotations").cloned(),
    }
}

/// `GET /api/servers/{name}/catalog`.
pub async fn catalog(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Result<Response, AdminError> {
    let entry = state.config().registry.entry(&name).ok_or(AdminError::UnknownServer(name))?;
    let cat = entry.catalog();
    Ok(Json(CatalogView {
        tools: cat.tools.iter().map(|t| tool_of(&t.raw, &t.name)).collect(),
        quarantined: cat.quarantined.clone(),
        resources: cat.resources.clone(),
        templates: cat.resource_templates.clone(),
        prompts: cat.prompts.clone(),
        fetched_at_ms: cat.fetched_at_ms,
    })
    .into_response())
}

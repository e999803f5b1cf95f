//! Server definitions: the `[servers.NAME]` tables of the TOML config and the
//! `mcpServers` map of `mcp.json` files, normalised into [`ServerSpec`]s.
//!
//! Parsing is pure (strings in, specs out): the binary reads files and the environment
//! and hands the text here, so the same rules apply to every source.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchboard_transport::TransportKind;
use switchboard_transport::stdio::RestartPolicy;

pub use self::limits::UpstreamLimits;
use crate::Error;

mod limits;

/// Default period of catalog refreshes.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(300);
/// Shortest refresh period accepted.
pub const MIN_REFRESH: Duration = Duration::from_secs(1);
/// Default handshake timeout.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default period of process statistics (see [`crate::stats`]).
pub const DEFAULT_STATS_INTERVAL: Duration = Duration::from_secs(2);
/// Default limit of connections of their own per server (see [`crate::dedicated`]).
pub const DEFAULT_MAX_CALL_CONNECTIONS: usize = 8;
/// Default idle time after which a connection of its own is closed.
pub const DEFAULT_CALL_CONNECTION_IDLE: Duration = Duration::from_secs(60);
/// Default time a call waits for a connection of its own when all are busy.
pub const DEFAULT_CALL_CONNECTION_WAIT: Duration = Duration::from_secs(30);
/// Default request timeout for registry requests (lists).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How the registry behaves, whatever the servers.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistryConfig {
    /// Catalog refresh period. A server's `ttlMs` does not shorten it: it says how long a
    /// list may be cached, and callers that need a younger list use
    /// [`crate::Registry::refresh_if_stale`].
    pub refresh_interval: Duration,
    /// Limit of each handshake step.
    pub handshake_timeout: Duration,
    /// Limit of list requests.
    pub request_timeout: Duration,
    /// Handshake failures in a row after which a server is `unavailable`.
    pub unavailable_after: u32,
    /// First delay between reconnect attempts (doubles, capped at 30 s).
    pub reconnect_backoff: Duration,
    /// Period of the process sampler's `ProcessStats` events (sampled only while somebody
    /// subscribes to the bus).
    pub stats_interval: Duration,
    /// Connections of their own a legacy stdio/WebSocket server's questioning calls may hold at
    /// once (see [`crate::Registry::client_for_call`]).
    pub max_call_connections: usize,
    /// A connection of its own idle this long is closed.
    pub call_connection_idle: Duration,
    /// How long a call waits for a connection of its own when all are busy, before failing.
    pub call_connection_wait: Duration,
    /// Period of the active health probes of every connected server.
    pub probe_interval: Duration,
    /// Limit of one health probe.
    pub probe_timeout: Duration,
    /// Failed probes in a row that make a server `unavailable` (a refused connection is
    /// decisive on its own).
    pub failure_threshold: u32,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            refresh_interval: DEFAULT_REFRESH,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            unavailable_after: 3,
            reconnect_backoff: Duration::from_millis(100),
            stats_interval: DEFAULT_STATS_INTERVAL,
            max_call_connections: DEFAULT_MAX_CALL_CONNECTIONS,
            call_connection_idle: DEFAULT_CALL_CONNECTION_IDLE,
            call_connection_wait: DEFAULT_CALL_CONNECTION_WAIT,
            probe_interval: Duration::from_secs(5),
            probe_timeout: Duration::from_millis(2000),
            failure_threshold: 3,
        }
    }
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum TransportSpec {
    /// A child process.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Extra environment.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// Endpoint URL.
        url: String,
        /// Extra headers (not part of the server id: tokens rotate).
        #[serde(skip)]
        headers: BTreeMap<String, String>,
    },
    /// WebSocket.
    Ws {
        /// `ws://` / `wss://` URL.
        url: String,
    },
    /// A built-in server running in the router's process.
    Builtin {
        /// Which one (`vision`, `knowledge`, `reasoning`).
        server: String,
    },
}

impl TransportSpec {
    /// The transport kind.
    pub fn kind(&self) -> TransportKind {
        match self {
            TransportSpec::Stdio { .. } => TransportKind::Stdio,
            TransportSpec::Http { .. } => TransportKind::Http,
            TransportSpec::Ws { .. } => TransportKind::Ws,
            TransportSpec::Builtin { .. } => TransportKind::InProcess,
        }
    }

    /// A one-line description (`npx -y pkg`, `http://host/mcp`).
    pub fn describe(&self) -> String {
        match self {
            TransportSpec::Stdio { command, args, .. } => {
                std::iter::once(command.clone()).chain(args.iter().cloned()).collect::<Vec<_>>().join(" ")
            }
            TransportSpec::Http { url, .. } | TransportSpec::Ws { url } => url.clone(),
            TransportSpec::Builtin { server } => format!("built-in {server} server"),
        }
    }
}

/// One upstream server, normalised from any source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSpec {
    /// Unique name; also the default namespace prefix of its tools.
    pub name: String,
    /// Transport and endpoint.
    #[serde(flatten)]
    pub transport: TransportSpec,
    /// Domain capability labels (`vision`, `rag`, …).
    pub labels: Vec<String>,
    /// The replica group it belongs to, when declared (see [`crate::schedule::groups`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// An HTTP path on the server's own host probed with `GET` instead of an MCP `ping`
    /// (`/healthz`); HTTP servers only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_path: Option<String>,
    /// Disabled servers are listed but never connected.
    pub enabled: bool,
    /// Restart policy of a stdio child.
    #[serde(skip)]
    pub restart: RestartPolicy,
    /// Per-server refresh period override.
    #[serde(skip)]
    pub refresh_interval: Option<Duration>,
    /// Pool size and timeouts (see [`UpstreamLimits`]).
    #[serde(skip)]
    pub limits: UpstreamLimits,
    /// Where the definition came from (file path or "flags").
    pub source: String,
}

impl ServerSpec {
    /// Stable id: a hash of the name and the normalised endpoint (command line, working
    /// directory and environment, or URL). Headers, labels and tuning are left out so a
    /// rotated token or a new label keeps the server's history.
    pub fn server_id(&self) -> String {
        let identity = match &self.transport {
            TransportSpec::Stdio { command, args, env, cwd } => serde_json::json!({
                "kind": "stdio", "command": command, "args": args, "env": env,
                "cwd": cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
            }),
            TransportSpec::Http { url, .. } => serde_json::json!({"kind": "http", "url": normalise_url(url)}),
            TransportSpec::Ws { url } => serde_json::json!({"kind": "ws", "url": normalise_url(url)}),
            TransportSpec::Builtin { server } => serde_json::json!({"kind": "builtin", "server": server}),
        };
        let mut h = Sha256::new();
        h.update(self.name.as_bytes());
        h.update([0]);
        h.update(canonical_json(&identity).as_bytes());
        let digest = h.finalize();
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The config as stored (headers left out).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn normalise_url(url: &str) -> String {
    let trimmed = url.trim().trim_end_matches('/');
    match trimmed.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
            let path = if path.is_empty() { String::new() } else { format!("/{path}") };
            format!("{}://{}{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), path)
        }
        None => trimmed.to_owned(),
    }
}

/// JSON with object keys sorted at every level.
pub(crate) fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&m[k.as_str()])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// One `[servers.NAME]` table of the TOML config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerToml {
    /// Program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// URL of an HTTP or WebSocket server.
    pub url: Option<String>,
    /// Name of a built-in server (`vision`, `knowledge`, `reasoning`).
    pub builtin: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `stdio`, `http` or `ws`; inferred from `command`/`url` when absent.
    pub transport: Option<String>,
    /// Domain capability labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// The replica group it belongs to: its instances share one set of catalog entries.
    #[serde(default)]
    pub group: Option<String>,
    /// A path on the server's host probed with `GET` (2xx is healthy) instead of MCP `ping`.
    #[serde(default)]
    pub health_path: Option<String>,
    /// `false` keeps the server registered but disconnected.
    pub enabled: Option<bool>,
    /// Override of the refresh period, in seconds.
    pub refresh_interval_secs: Option<u64>,
    /// Stdio restart policy.
    #[serde(default)]
    pub restart: RestartToml,
    /// Concurrent connections (see [`UpstreamLimits`] for the per-transport meaning).
    pub pool: Option<usize>,
    /// Connect timeout, ms.
    pub connect_timeout_ms: Option<u64>,
    /// Read (silence) timeout, ms.
    pub read_timeout_ms: Option<u64>,
    /// Write (acknowledgement) timeout, ms; below `read_timeout_ms`.
    pub write_timeout_ms: Option<u64>,
}

/// `[servers.NAME.restart]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartToml {
    /// First backoff in milliseconds.
    pub initial_backoff_ms: Option<u64>,
    /// Backoff cap in milliseconds.
    pub max_backoff_ms: Option<u64>,
    /// Runs shorter than this (ms) count as quick exits.
    pub quick_exit_ms: Option<u64>,
    /// Quick exits in a row before giving up.
    pub crash_loop_limit: Option<u32>,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Normalises one TOML server table.
pub fn spec_from_toml(name: &str, t: ServerToml, source: &str) -> Result<ServerSpec, Error> {
    let err = |message: String| Error::Config { file: source.to_owned(), message };
    if !valid_name(name) {
        return Err(err(format!(
            "server name {name:?} is invalid: use 1–64 characters from A–Z, a–z, 0–9, '-', '_' and '.'"
        )));
    }
    let limits = UpstreamLimits::from_toml(name, &t).map_err(err)?;
    let transport = match (&t.command, &t.url, &t.builtin) {
        (None, None, Some(server)) => {
            if !valid_name(server) {
                return Err(err(format!("servers.{name}.builtin {server:?} is not a valid server name")));
            }
            TransportSpec::Builtin { server: server.clone() }
        }
        (_, _, Some(_)) => {
            return Err(err(format!("servers.{name}: `builtin` cannot be combined with `command` or `url`")));
        }
        (Some(_), Some(_), None) => {
            return Err(err(format!(
                "servers.{name}: set either `command` (stdio) or `url` (http/ws), not both"
            )));
        }
        (None, None, None) => {
            return Err(err(format!(
                "servers.{name}: needs `command` (a stdio server), `url` (an HTTP or WebSocket server) or `builtin`"
            )));
        }
        (Some(command), None, None) => {
            if command.trim().is_empty() {
                return Err(err(format!("servers.{name}.command is empty")));
            }
            if let Some(tr) = t.transport.as_deref().filter(|t| *t != "stdio") {
                return Err(err(format!("servers.{name}: transport = {tr:?} needs `url`, not `command`")));
            }
            TransportSpec::Stdio { command: command.clone(), args: t.args, env: t.env, cwd: t.cwd }
        }
        (None, Some(url), None) => {
            url_transport(name, url, t.transport.as_deref(), t.headers).map_err(err)?
        }
    };
    let mut restart = RestartPolicy::default();
    if let Some(v) = t.restart.initial_backoff_ms {
        restart.initial_backoff = Duration::from_millis(v);
    }
    if let Some(v) = t.restart.max_backoff_ms {
        restart.max_backoff = Duration::from_millis(v);
    }
    if let Some(v) = t.restart.quick_exit_ms {
        restart.quick_exit = Duration::from_millis(v);
    }
    if let Some(v) = t.restart.crash_loop_limit {
        if v == 0 {
            return Err(err(format!("servers.{name}.restart.crash_loop_limit must be at least 1")));
        }
        restart.crash_loop_limit = v;
    }
    if restart.max_backoff < restart.initial_backoff {
        return Err(err(format!(
            "servers.{name}.restart: max_backoff_ms ({}) is below initial_backoff_ms ({})",
            restart.max_backoff.as_millis(),
            restart.initial_backoff.as_millis()
        )));
    }
    for l in &t.labels {
        if !valid_name(l) {
            return Err(err(format!(
                "servers.{name}.labels: {l:?} is not a valid label (letters, digits, '-', '_', '.')"
            )));
        }
    }
    if let Some(g) = t.group.as_deref().filter(|g| !valid_name(g)) {
        return Err(err(format!(
            "servers.{name}.group {g:?} is invalid: use 1–64 characters from A–Z, a–z, 0–9, '-', '_' and '.'"
        )));
    }
    if let Some(p) = t.health_path.as_deref() {
        if !matches!(transport, TransportSpec::Http { .. }) {
            return Err(err(format!(
                "servers.{name}.health_path is for HTTP servers (it has no `url` = http://…)"
            )));
        }
        if !p.starts_with('/') || p.len() > 256 || p.contains(char::is_whitespace) {
            return Err(err(format!(
                "servers.{name}.health_path {p:?} must be an absolute path like \"/healthz\""
            )));
        }
    }
    Ok(ServerSpec {
        name: name.to_owned(),
        transport,
        labels: t.labels,
        group: t.group,
        health_path: t.health_path,
        enabled: t.enabled.unwrap_or(true),
        restart,
        refresh_interval: t.refresh_interval_secs.map(|s| Duration::from_secs(s).max(MIN_REFRESH)),
        limits,
        source: source.to_owned(),
    })
}

fn url_transport(
    name: &str,
    url: &str,
    transport: Option<&str>,
    headers: BTreeMap<String, String>,
) -> Result<TransportSpec, String> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    let inferred = match scheme.as_deref() {
        Some("http" | "https") => "http",
        Some("ws" | "wss") => "ws",
        _ => {
            return Err(format!(
                "servers.{name}.url {url:?} must start with http://, https://, ws:// or wss://"
            ));
        }
    };
    let chosen = match transport {
        None => inferred,
        Some("http" | "streamable-http" | "streamableHttp") if inferred == "http" => "http",
        Some("ws" | "websocket") if inferred == "ws" => "ws",
        Some("sse") => {
            return Err(format!(
                "servers.{name}: the deprecated HTTP+SSE transport (2024-11-05) is not supported; point `url` at the server's Streamable HTTP endpoint"
            ));
        }
        Some(other) => return Err(format!("servers.{name}: transport {other:?} does not match url {url:?}")),
    };
    Ok(if chosen == "http" {
        TransportSpec::Http { url: url.to_owned(), headers }
    } else {
        TransportSpec::Ws { url: url.to_owned() }
    })
}

/// Parses the `[servers]` table of a TOML document (other tables are ignored here).
pub fn servers_from_toml(text: &str, source: &str) -> Result<Vec<ServerSpec>, Error> {
    #[derive(Deserialize)]
    struct Doc {
        #[serde(default)]
        servers: BTreeMap<String, ServerToml>,
    }
    let doc: Doc = toml::from_str(text)
        .map_err(|e| Error::Config { file: source.to_owned(), message: e.to_string() })?;
    doc.servers.into_iter().map(|(name, t)| spec_from_toml(&name, t, source)).collect()
}

/// Parses an `mcp.json` file (`{"mcpServers": {NAME: {command,args,env} | {url,headers,type}}}`;
/// VS Code's `servers` key is accepted too). Returns the servers that parsed and one
/// error per server that did not, so one bad entry does not hide the others.
pub fn servers_from_mcp_json(text: &str, source: &str) -> Result<(Vec<ServerSpec>, Vec<Error>), Error> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| Error::Config { file: source.to_owned(), message: format!("invalid JSON: {e}") })?;
    let map =
        doc.get("mcpServers").or_else(|| doc.get("servers")).and_then(Value::as_object).ok_or_else(|| {
            Error::Config { file: source.to_owned(), message: "no \"mcpServers\" object found".into() }
        })?;
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    for (name, entry) in map {
        let parsed = (|| -> Result<ServerSpec, Error> {
            let obj = entry.as_object().ok_or_else(|| Error::Config {
                file: source.to_owned(),
                message: format!("mcpServers.{name} must be an object"),
            })?;
            let mut t = ServerToml::default();
            let bad = |field: &str, want: &str| Error::Config {
                file: source.to_owned(),
                message: format!("mcpServers.{name}.{field} must be {want}"),
            };
            for (k, v) in obj {
                match k.as_str() {
                    "command" => {
                        t.command = Some(v.as_str().ok_or_else(|| bad("command", "a string"))?.to_owned())
                    }
                    "args" => {
                        t.args = v
                            .as_array()
                            .ok_or_else(|| bad("args", "an array of strings"))?
                            .iter()
                            .map(|a| {
                                a.as_str()
                                    .map(str::to_owned)
                                    .ok_or_else(|| bad("args", "an array of strings"))
                            })
                            .collect::<Result<_, _>>()?;
                    }
                    "env" | "headers" => {
                        let m: BTreeMap<String, String> = v
                            .as_object()
                            .ok_or_else(|| bad(k, "an object of strings"))?
                            .iter()
                            .map(|(a, b)| {
                                b.as_str()
                                    .map(|s| (a.clone(), s.to_owned()))
                                    .ok_or_else(|| bad(k, "an object of strings"))
                            })
                            .collect::<Result<_, _>>()?;
                        if k == "env" { t.env = m } else { t.headers = m }
                    }
                    "cwd" => t.cwd = Some(PathBuf::from(v.as_str().ok_or_else(|| bad("cwd", "a string"))?)),
                    "url" => t.url = Some(v.as_str().ok_or_else(|| bad("url", "a string"))?.to_owned()),
                    "type" | "transport" => {
                        t.transport = Some(v.as_str().ok_or_else(|| bad(k, "a string"))?.to_owned())
                    }
                    "disabled" => t.enabled = Some(!v.as_bool().unwrap_or(false)),
                    // Client-specific keys (autoApprove, timeout, …) are not ours to judge.
                    _ => {}
                }
            }
            if t.transport.as_deref() == Some("stdio") && t.command.is_some() {
                t.transport = None;
            }
            spec_from_toml(name, t, source)
        })();
        match parsed {
            Ok(s) => specs.push(s),
            Err(e) => errors.push(e),
        }
    }
    Ok((specs, errors))
}

/// Rejects duplicate names across sources.
pub fn check_unique(specs: &[ServerSpec]) -> Result<(), Error> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for s in specs {
        if let Some(first) = seen.insert(&s.name, &s.source) {
            return Err(Error::DuplicateName {
                name: s.name.clone(),
                first: first.to_owned(),
                second: s.source.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

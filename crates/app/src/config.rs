//! The application config file (`switchboard.toml`) and its defaults.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use serde::Deserialize;
use switchboard_router::config::{self, ServerToml};
use switchboard_router::federation::{FederationConfig, PrefixMode};
use switchboard_router::{RegistryConfig, ServerSpec};

pub use self::router::{RouterSettings, process_router_id};
use crate::upstreams::{self, UpstreamFlag};

/// The configuration shipped inside the binary.
pub const EMBEDDED_DEFAULT: &str = include_str!("../../../assets/switchboard.toml");

/// `[router]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterToml {
    /// Catalog refresh period in seconds.
    #[serde(default = "default_refresh")]
    pub refresh_interval_secs: u64,
    /// Handshake step limit in seconds.
    #[serde(default = "default_handshake")]
    pub handshake_timeout_secs: u64,
    /// Registry request limit in seconds.
    #[serde(default = "default_request")]
    pub request_timeout_secs: u64,
    /// `mcp.json` files to import.
    #[serde(default)]
    pub mcp_json: Vec<PathBuf>,
    /// Seconds between process statistics samples (taken only while somebody watches).
    #[serde(default)]
    pub stats_interval_secs: Option<f64>,
    /// Connections of their own per legacy stdio/WebSocket server, for calls whose server
    /// asks questions while other calls run (at least 1).
    #[serde(default)]
    pub max_call_connections: Option<usize>,
    /// Seconds an idle connection of its own stays open.
    #[serde(default)]
    pub call_connection_idle_secs: Option<u64>,
    /// Seconds a call waits for a connection of its own when all are busy.
    #[serde(default)]
    pub call_connection_wait_secs: Option<u64>,
    /// Seconds between health probes of every connected server (fractions allowed).
    #[serde(default)]
    pub probe_interval_secs: Option<f64>,
    /// Milliseconds one health probe may take.
    #[serde(default)]
    pub probe_timeout_ms: Option<u64>,
    /// Failed probes in a row that make a server `unavailable`.
    #[serde(default)]
    pub failure_threshold: Option<u32>,
    // The keys below are read by `config::router` (self-registration, labels, scheduler).
    /// This router's id in registration answers (default: host name + random, per process).
    pub router_id: Option<String>,
    /// MCP revisions accepted at registration (default both).
    pub mcp_version: Option<Vec<String>>,
    /// `POST` path of registrations (default `/register`).
    pub registration_path: Option<String>,
    /// `POST` path of confirmations (default `/confirm`).
    pub confirm_path: Option<String>,
    /// `POST` path of status reports (default `/status`).
    pub status_path: Option<String>,
    /// Hosts, IP addresses and CIDR ranges registered servers may be at (default loopback).
    pub registration_allow: Option<Vec<String>>,
    /// Self-registered servers at once (default 64).
    pub max_registered_servers: Option<usize>,
    /// How often registered servers report their load, ms (default 5000).
    pub load_sampling_interval_ms: Option<u64>,
    /// Fallback steps before a call fails (default 3).
    pub max_fallback_retries: Option<u32>,
    /// How long an affinity key stays on its upstream, seconds (default 300).
    pub session_affinity_window_secs: Option<u64>,
    /// Load score above which an upstream is overloaded (default 150).
    pub overload_threshold: Option<f64>,
    /// Whether identical servers form a replica group without declaring one (default true).
    pub detect_replicas: Option<bool>,
    /// Domain capability labels servers may carry, besides MCP's own and the built-in ones.
    #[serde(default)]
    pub labels: Vec<String>,
    /// `always`, `on-collision` or `never`: the same setting as `[endpoint] prefix`.
    pub prefix: Option<PrefixMode>,
}

fn default_refresh() -> u64 {
    config::DEFAULT_REFRESH.as_secs()
}
fn default_handshake() -> u64 {
    config::DEFAULT_HANDSHAKE_TIMEOUT.as_secs()
}
fn default_request() -> u64 {
    config::DEFAULT_REQUEST_TIMEOUT.as_secs()
}

impl Default for RouterToml {
    fn default() -> Self {
        RouterToml {
            refresh_interval_secs: default_refresh(),
            handshake_timeout_secs: default_handshake(),
            request_timeout_secs: default_request(),
            mcp_json: Vec::new(),
            stats_interval_secs: None,
            max_call_connections: None,
            call_connection_idle_secs: None,
            call_connection_wait_secs: None,
            probe_interval_secs: None,
            probe_timeout_ms: None,
            failure_threshold: None,
            router_id: None,
            mcp_version: None,
            registration_path: None,
            confirm_path: None,
            status_path: None,
            registration_allow: None,
            max_registered_servers: None,
            load_sampling_interval_ms: None,
            max_fallback_retries: None,
            session_affinity_window_secs: None,
            overload_threshold: None,
            detect_replicas: None,
            labels: Vec::new(),
            prefix: None,
        }
    }
}

/// `[store]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreToml {
    /// Database file; empty means the platform default.
    #[serde(default)]
    pub path: String,
}

/// `[endpoint]`: the federated MCP endpoint of `switchboard serve` (`--listen` / `--stdio`).
/// Every key is optional; the matching `serve` flag wins over it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointToml {
    /// Address of the HTTP listener (`--listen`); absent means no listener unless the flag is given.
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    /// `always`, `on-collision` (default) or `never` (`--prefix`).
    #[serde(default)]
    pub prefix: Option<PrefixMode>,
    /// Between server name and tool/prompt name (`--separator`; default `__`).
    #[serde(default)]
    pub separator: Option<String>,
    /// Origins accepted besides localhost, 127.0.0.1 and [::1] (exact `scheme://host[:port]`).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Largest request body in bytes.
    #[serde(default)]
    pub body_limit: Option<usize>,
    /// Deadline of a forwarded request (`tools/call`, `prompts/get`, `resources/read`), seconds.
    #[serde(default = "default_call_timeout")]
    pub call_timeout_secs: u64,
    /// Request traces kept in the store.
    #[serde(default = "default_traces_kept")]
    pub traces_kept: i64,
    /// Environment variable holding the bearer token `/mcp` requires (the token itself never
    /// goes in the file). Without it, `SWITCHBOARD_TOKEN` is used when set.
    #[serde(default)]
    pub token_env: Option<String>,
    /// File holding the key that seals 2025-11-25 session ids (32 to 1024 bytes, surrounding
    /// whitespace ignored), so several instances and restarts share sessions.
    /// `SWITCHBOARD_SESSION_KEY` wins over it; without either the key is random per process.
    #[serde(default)]
    pub session_key_file: Option<PathBuf>,
    /// How long a 2025-11-25 client may take to answer a server → client request, seconds.
    #[serde(default)]
    pub answer_timeout_secs: Option<u64>,
    /// How long a client may take to send a request's headers, seconds (default 10).
    #[serde(default)]
    pub header_read_timeout_secs: Option<u64>,
    /// How long an idle keep-alive connection stays open, seconds (default 60).
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    /// Connections served at once; more are closed as they arrive (default 1024).
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// Items per page of a federated list (`tools/list`, `prompts/list`, …; default 100).
    #[serde(default)]
    pub page_size: Option<usize>,
    /// Largest single JSON answer passed on to a client, in bytes (default 64 MiB); a larger
    /// one is replaced by an error naming the limit.
    #[serde(default)]
    pub answer_limit_bytes: Option<usize>,
}

fn default_call_timeout() -> u64 {
    crate::edge::DEFAULT_CALL_TIMEOUT.as_secs()
}
fn default_traces_kept() -> i64 {
    switchboard_store::TRACES_KEPT
}

impl Default for EndpointToml {
    fn default() -> Self {
        EndpointToml {
            listen: None,
            prefix: None,
            separator: None,
            allowed_origins: Vec::new(),
            body_limit: None,
            call_timeout_secs: default_call_timeout(),
            traces_kept: default_traces_kept(),
            token_env: None,
            session_key_file: None,
            answer_timeout_secs: None,
            header_read_timeout_secs: None,
            idle_timeout_secs: None,
            max_connections: None,
            page_size: None,
            answer_limit_bytes: None,
        }
    }
}

/// `[vision]`: where the built-in vision server may read images from besides the router's
/// own blob store and `data:` URLs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisionToml {
    /// Hosts, `host:port`s, IP addresses or CIDR ranges whose http(s) URLs vision may fetch,
    /// checked after DNS resolution and on every redirect. Empty (the default): none.
    /// Loopback, private and link-local addresses must be named by address.
    #[serde(default)]
    pub image_allow: Vec<String>,
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppToml {
    /// `[router]`.
    #[serde(default)]
    pub router: RouterToml,
    /// `[store]`.
    #[serde(default)]
    pub store: StoreToml,
    /// `[endpoint]`.
    #[serde(default)]
    pub endpoint: EndpointToml,
    /// `[vision]`.
    #[serde(default)]
    pub vision: VisionToml,
    /// `[servers.NAME]`.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerToml>,
}

/// Settings of the federated MCP endpoint after the file and the flags were merged.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSettings {
    /// Where `serve` listens; `None` runs the registry without an HTTP listener.
    pub listen: Option<SocketAddr>,
    /// Prefix mode and separator of federated names.
    pub federation: FederationConfig,
    /// Origins accepted besides the loopback ones.
    pub allowed_origins: Vec<String>,
    /// Largest request body in bytes.
    pub body_limit: usize,
    /// File holding the session key (see [`EndpointToml::session_key_file`]).
    pub session_key_file: Option<PathBuf>,
    /// How long a 2025-11-25 client may take to answer a server → client request.
    pub answer_timeout: Duration,
    /// Timeouts and connection cap of the HTTP listener.
    pub listener: crate::http::ListenerConfig,
    /// Items per page of a federated list.
    pub page_size: usize,
    /// Largest single JSON answer passed on to a client, in bytes.
    pub answer_limit: usize,
}

impl Default for EndpointSettings {
    fn default() -> Self {
        EndpointSettings {
            listen: None,
            federation: FederationConfig::default(),
            allowed_origins: Vec::new(),
            body_limit: crate::endpoint::DEFAULT_BODY_LIMIT,
            session_key_file: None,
            answer_timeout: crate::endpoint::DEFAULT_ANSWER_TIMEOUT,
            listener: crate::http::ListenerConfig::default(),
            page_size: crate::endpoint::DEFAULT_PAGE_SIZE,
            answer_limit: crate::edge::MAX_ANSWER_BYTES,
        }
    }
}

/// What `switchboard serve`'s flags add to or override in the file.
#[derive(Debug, Clone, Default)]
pub struct ServeFlags {
    /// `--listen`.
    pub listen: Option<SocketAddr>,
    /// `--prefix`.
    pub prefix: Option<PrefixMode>,
    /// `--separator`.
    pub separator: Option<String>,
    /// `--upstream` and `--upstream-cmd`, in command-line order.
    pub upstreams: Vec<UpstreamFlag>,
}

/// Configuration after all sources were merged.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Registry behaviour.
    pub registry: RegistryConfig,
    /// Database file.
    pub db_path: PathBuf,
    /// Servers from the file and the imported `mcp.json` files.
    pub servers: Vec<ServerSpec>,
    /// Where the configuration came from.
    pub source: String,
    /// Non-fatal problems (a bad entry in an `mcp.json` file).
    pub warnings: Vec<String>,
    /// Deadline of a forwarded request on the endpoint.
    pub call_timeout: Duration,
    /// Request traces kept in the store.
    pub traces_kept: i64,
    /// Environment variable naming the endpoint's bearer token, from `[endpoint].token_env`.
    pub token_env: Option<String>,
    /// The federated endpoint.
    pub endpoint: EndpointSettings,
    /// Whether the servers came from the embedded default (no file was found).
    pub embedded_default: bool,
    /// `[vision] image_allow`: image sources beyond the blob store and `data:` URLs.
    pub image_allow: Vec<String>,
    /// `[router]`'s registration, label and scheduler settings.
    pub router: RouterSettings,
}

impl AppConfig {
    /// Applies `serve`'s flags: listen address, prefix mode and separator win over
    /// `[endpoint]`; ad-hoc upstreams are added to the file's servers, except that with any
    /// of them the embedded default's built-in servers are left out (a file given with
    /// `--config` or found as `./switchboard.toml` keeps all of its servers).
    pub fn apply_serve_flags(&mut self, flags: ServeFlags) -> anyhow::Result<()> {
        if flags.listen.is_some() {
            self.endpoint.listen = flags.listen;
        }
        if let Some(p) = flags.prefix {
            self.endpoint.federation.mode = p;
        }
        if let Some(s) = flags.separator {
            self.endpoint.federation.separator =
                check_separator(&s).map_err(|e| anyhow::anyhow!("--separator {e}"))?;
        }
        if !flags.upstreams.is_empty() {
            if self.embedded_default {
                self.servers.retain(|s| s.source != self.source);
            }
            let taken: Vec<String> = self.servers.iter().map(|s| s.name.clone()).collect();
            let added = upstreams::to_specs(&flags.upstreams, &taken)?;
            self.servers.extend(added);
        }
        Ok(())
    }
}

/// A separator must be non-empty and printable without spaces (it becomes part of tool names).
fn check_separator(s: &str) -> Result<String, String> {
    if s.is_empty() || s.chars().count() > 8 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{s:?}: use 1–8 printable characters without spaces (default \"__\")"));
    }
    Ok(s.to_owned())
}

fn check_origin(o: &str) -> Result<String, String> {
    let ok = o.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty() && !rest.is_empty() && !rest.contains('/') && !rest.contains(char::is_whitespace)
    });
    if ok {
        Ok(o.trim_end_matches('/').to_owned())
    } else {
        Err(format!("{o:?} is not scheme://host[:port]"))
    }
}

/// The platform default database path.
pub fn default_db_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("switchboard").join("switchboard.db")
}

/// Loads the configuration: `file` if given, else `./switchboard.toml` if it exists, else
/// the embedded default. `extra_mcp_json` adds `mcp.json` files; `db` overrides the store path.
pub fn load(file: Option<&Path>, extra_mcp_json: &[PathBuf], db: Option<&Path>) -> anyhow::Result<AppConfig> {
    let local = Path::new("switchboard.toml");
    let (text, source) = match file {
        Some(f) => (
            std::fs::read_to_string(f).with_context(|| format!("cannot read config file {}", f.display()))?,
            f.display().to_string(),
        ),
        None if local.exists() => (
            std::fs::read_to_string(local).context("cannot read ./switchboard.toml")?,
            "switchboard.toml".to_owned(),
        ),
        None => (EMBEDDED_DEFAULT.to_owned(), "embedded default config".to_owned()),
    };
    let mut cfg = parse(&text, &source, extra_mcp_json, db)?;
    cfg.embedded_default = file.is_none() && !local.exists();
    Ok(cfg)
}

/// Parses configuration text (see [`load`]).
pub fn parse(
    text: &str,
    source: &str,
    extra_mcp_json: &[PathBuf],
    db: Option<&Path>,
) -> anyhow::Result<AppConfig> {
    let doc: AppToml = toml::from_str(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
    let mut servers = Vec::new();
    for (name, t) in doc.servers {
        servers.push(config::spec_from_toml(&name, t, source)?);
    }
    let mut warnings = Vec::new();
    for path in doc.router.mcp_json.iter().chain(extra_mcp_json) {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read mcp.json file {}", path.display()))?;
        let (specs, errors) = config::servers_from_mcp_json(&text, &path.display().to_string())?;
        servers.extend(specs);
        warnings.extend(errors.iter().map(|e| format!("skipped: {e}")));
    }
    config::check_unique(&servers)?;
    let router = router::settings(&doc.router, source)?;
    router::check_labels(&servers, &router.labels, source)?;
    let defaults = RegistryConfig::default();
    let r = &doc.router;
    if r.max_call_connections == Some(0) {
        anyhow::bail!("{source}: [router].max_call_connections must be at least 1");
    }
    let stats_interval = match r.stats_interval_secs {
        Some(s) if !(0.1..=3600.0).contains(&s) => {
            anyhow::bail!("{source}: [router].stats_interval_secs must be between 0.1 and 3600 (it is {s})")
        }
        Some(s) => Duration::from_secs_f64(s),
        None => defaults.stats_interval,
    };
    let probe_interval = match r.probe_interval_secs {
        Some(s) if !(0.05..=3600.0).contains(&s) => {
            anyhow::bail!("{source}: [router].probe_interval_secs must be between 0.05 and 3600 (it is {s})")
        }
        Some(s) => Duration::from_secs_f64(s),
        None => defaults.probe_interval,
    };
    let probe_timeout = match r.probe_timeout_ms {
        Some(ms) if !(10..=600_000).contains(&ms) => {
            anyhow::bail!("{source}: [router].probe_timeout_ms must be between 10 and 600000 (it is {ms})")
        }
        Some(ms) => Duration::from_millis(ms),
        None => defaults.probe_timeout,
    };
    if r.failure_threshold == Some(0) {
        anyhow::bail!("{source}: [router].failure_threshold must be at least 1");
    }
    let registry = RegistryConfig {
        probe_interval,
        probe_timeout,
        failure_threshold: r.failure_threshold.unwrap_or(defaults.failure_threshold),
        refresh_interval: Duration::from_secs(r.refresh_interval_secs).max(config::MIN_REFRESH),
        handshake_timeout: Duration::from_secs(r.handshake_timeout_secs.max(1)),
        request_timeout: Duration::from_secs(r.request_timeout_secs.max(1)),
        stats_interval,
        max_call_connections: r.max_call_connections.unwrap_or(defaults.max_call_connections),
        call_connection_idle: r
            .call_connection_idle_secs
            .map_or(defaults.call_connection_idle, Duration::from_secs),
        call_connection_wait: r
            .call_connection_wait_secs
            .map_or(defaults.call_connection_wait, Duration::from_secs),
        ..defaults.clone()
    };
    let db_path = match db {
        Some(p) => p.to_path_buf(),
        None if !doc.store.path.is_empty() => PathBuf::from(&doc.store.path),
        None => default_db_path(),
    };
    if doc.endpoint.traces_kept < 1 {
        anyhow::bail!(
            "{source}: [endpoint].traces_kept must be at least 1 (it is {})",
            doc.endpoint.traces_kept
        );
    }
    if let Err(e) = switchboard_servers::vision::source::allow::parse_rules(&doc.vision.image_allow) {
        anyhow::bail!(
            "{source}: [vision] image_allow: {e} (write a host, host:port, IP address or CIDR range)"
        );
    }
    let e = doc.endpoint;
    let mut endpoint = EndpointSettings { listen: e.listen, ..EndpointSettings::default() };
    if let (Some(a), Some(b)) = (router.prefix, e.prefix) {
        anyhow::ensure!(a == b, "{source}: [router].prefix and [endpoint].prefix disagree; keep one of them");
    }
    if let Some(p) = e.prefix.or(router.prefix) {
        endpoint.federation.mode = p;
    }
    if let Some(sep) = e.separator {
        endpoint.federation.separator =
            check_separator(&sep).map_err(|m| anyhow::anyhow!("{source}: endpoint.separator {m}"))?;
    }
    for o in &e.allowed_origins {
        endpoint
            .allowed_origins
            .push(check_origin(o).map_err(|m| anyhow::anyhow!("{source}: endpoint.allowed_origins: {m}"))?);
    }
    if let Some(b) = e.body_limit {
        anyhow::ensure!(b >= 1024, "{source}: endpoint.body_limit {b} is below 1024 bytes");
        endpoint.body_limit = b;
    }
    endpoint.session_key_file = e.session_key_file.clone();
    let secs = |key: &str, v: Option<u64>, default: Duration| match v {
        None => Ok(default),
        Some(0) => Err(anyhow::anyhow!("{source}: endpoint.{key} must be at least 1 second")),
        Some(n) => Ok(Duration::from_secs(n)),
    };
    endpoint.answer_timeout = secs("answer_timeout_secs", e.answer_timeout_secs, endpoint.answer_timeout)?;
    let l = &mut endpoint.listener;
    l.header_read_timeout =
        secs("header_read_timeout_secs", e.header_read_timeout_secs, l.header_read_timeout)?;
    l.idle_timeout = secs("idle_timeout_secs", e.idle_timeout_secs, l.idle_timeout)?;
    if let Some(n) = e.max_connections {
        anyhow::ensure!(n >= 1, "{source}: endpoint.max_connections must be at least 1");
        l.max_connections = n;
    }
    if let Some(n) = e.page_size {
        anyhow::ensure!(n >= 1, "{source}: endpoint.page_size must be at least 1");
        endpoint.page_size = n;
    }
    if let Some(n) = e.answer_limit_bytes {
        anyhow::ensure!(n >= 1024, "{source}: endpoint.answer_limit_bytes {n} is below 1024 bytes");
        endpoint.answer_limit = n;
    }
    Ok(AppConfig {
        registry,
        db_path,
        servers,
        source: source.to_owned(),
        warnings,
        call_timeout: Duration::from_secs(e.call_timeout_secs.max(1)),
        traces_kept: e.traces_kept,
        token_env: e.token_env.filter(|v| !v.is_empty()),
        endpoint,
        embedded_default: false,
        image_allow: doc.vision.image_allow,
        router,
    })
}

pub mod router;
#[cfg(test)]
mod tests;

//! The application config file (`switchboard.toml`) and its defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use serde::Deserialize;
use switchboard_router::config::{self, ServerToml};
use switchboard_router::{RegistryConfig, ServerSpec};

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

/// `[endpoint]`: the federated `/mcp` endpoint served by `serve --listen` / `--stdio`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointToml {
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
            call_timeout_secs: default_call_timeout(),
            traces_kept: default_traces_kept(),
            token_env: None,
        }
    }
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
    /// `[servers.NAME]`.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerToml>,
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
    parse(&text, &source, extra_mcp_json, db)
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
    let registry = RegistryConfig {
        refresh_interval: Duration::from_secs(doc.router.refresh_interval_secs).max(config::MIN_REFRESH),
        handshake_timeout: Duration::from_secs(doc.router.handshake_timeout_secs.max(1)),
        request_timeout: Duration::from_secs(doc.router.request_timeout_secs.max(1)),
        ..RegistryConfig::default()
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
    Ok(AppConfig {
        registry,
        db_path,
        servers,
        source: source.to_owned(),
        warnings,
        call_timeout: Duration::from_secs(doc.endpoint.call_timeout_secs.max(1)),
        traces_kept: doc.endpoint.traces_kept,
        token_env: doc.endpoint.token_env.filter(|v| !v.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_parses() {
        let c = parse(EMBEDDED_DEFAULT, "embedded", &[], None).unwrap();
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["knowledge", "reasoning", "vision"]);
        assert_eq!(c.registry.refresh_interval, Duration::from_secs(300));
        assert_eq!(c.call_timeout, Duration::from_secs(120));
        assert_eq!(c.traces_kept, 10_000);
    }

    #[test]
    fn endpoint_section() {
        let c = parse(
            "[endpoint]\ncall_timeout_secs = 5\ntraces_kept = 50\ntoken_env = \"MY_TOKEN\"\n",
            "e.toml",
            &[],
            None,
        )
        .unwrap();
        assert_eq!(
            (c.call_timeout, c.traces_kept, c.token_env.as_deref()),
            (Duration::from_secs(5), 50, Some("MY_TOKEN"))
        );
        let e = parse("[endpoint]\ntraces_kept = 0\n", "e.toml", &[], None).unwrap_err().to_string();
        assert!(e.contains("traces_kept"), "{e}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = parse("[router]\nrefresh_intervl_secs = 3\n", "x.toml", &[], None).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("refresh_intervl_secs"), "{e}");
    }
}

//! `GET /api/settings`: the effective configuration, with secrets redacted — every header
//! value, every environment value, and any key that names a secret (`token`, `key`,
//! `secret`, `password`, `authorization`) whatever its nesting.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use switchboard_router::TransportSpec;
use ts_rs::TS;

use crate::AdminState;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// The answer of `GET /api/settings`.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Settings {
    /// The router's settings (`[router]`, `[endpoint]`, `[store]`, …) as the app gave them.
    pub config: Value,
    /// The registered servers' definitions.
    pub servers: Vec<ServerSettings>,
}

/// One server's definition, secrets redacted.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ServerSettings {
    /// Name.
    pub name: String,
    /// `stdio`, `http`, `ws` or `builtin`.
    pub transport: String,
    /// Program (stdio).
    pub command: Option<String>,
    /// Arguments (stdio).
    pub args: Vec<String>,
    /// Environment names, values redacted (stdio).
    pub env: BTreeMap<String, String>,
    /// Working directory (stdio).
    pub cwd: Option<String>,
    /// URL (http, ws).
    pub url: Option<String>,
    /// Header names, values redacted (http).
    pub headers: BTreeMap<String, String>,
    /// Domain labels.
    pub labels: Vec<String>,
    /// Whether it is connected at all.
    pub enabled: bool,
    /// Where the definition came from.
    pub source: String,
}

fn redacted_values(m: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    m.keys().map(|k| (k.clone(), REDACTED.to_owned())).collect()
}

fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    // `token_env` and `*_file` name where a secret is, not the secret.
    if k.ends_with("_env") || k.ends_with("_file") {
        return false;
    }
    ["token", "key", "secret", "password", "authorization"].iter().any(|s| k.contains(s))
}

/// `value` with every secret replaced by [`REDACTED`] (see the module docs).
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let lower = k.to_ascii_lowercase();
                    let v = match v {
                        Value::Object(inner) if lower == "headers" || lower == "env" => Value::Object(
                            inner.keys().map(|ik| (ik.clone(), Value::String(REDACTED.into()))).collect(),
                        ),
                        Value::String(_) | Value::Number(_) if secret_key(k) => {
                            Value::String(REDACTED.into())
                        }
                        other => redact(other),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// The settings, redacted.
pub fn settings(state: &AdminState) -> Settings {
    let cfg = state.config();
    let servers = cfg
        .registry
        .servers()
        .iter()
        .filter_map(|v| cfg.registry.entry(&v.server_id))
        .map(|e| {
            let spec = &e.spec;
            let mut s = ServerSettings {
                name: spec.name.clone(),
                transport: match &spec.transport {
                    TransportSpec::Stdio { .. } => "stdio",
                    TransportSpec::Http { .. } => "http",
                    TransportSpec::Ws { .. } => "ws",
                    TransportSpec::Builtin { .. } => "builtin",
                }
                .to_owned(),
                command: None,
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
                url: None,
                headers: BTreeMap::new(),
                labels: spec.labels.clone(),
                enabled: spec.enabled,
                source: spec.source.clone(),
            };
            match &spec.transport {
                TransportSpec::Stdio { command, args, env, cwd } => {
                    s.command = Some(command.clone());
                    s.args = args.clone();
                    s.env = redacted_values(env);
                    s.cwd = cwd.as_ref().map(|p| p.display().to_string());
                }
                TransportSpec::Http { url, headers } => {
                    s.url = Some(url.clone());
                    s.headers = redacted_values(headers);
                }
                TransportSpec::Ws { url } => s.url = Some(url.clone()),
                TransportSpec::Builtin { server } => s.command = Some(format!("builtin:{server}")),
            }
            s
        })
        .collect();
    Settings { config: redact(&cfg.settings), servers }
}

/// `GET /api/settings`.
pub async fn get_settings(State(state): State<AdminState>) -> Response {
    Json(settings(&state)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headers_env_and_secret_keys_are_redacted_names_kept() {
        let v = json!({
            "endpoint": {"token_env": "MY_TOKEN", "session_key_file": "/k", "session_key": "abc", "page_size": 100},
            "servers": [{"headers": {"Authorization": "Bearer x"}, "env": {"API": "y"}, "name": "a"}],
        });
        let r = redact(&v);
        assert_eq!(r["endpoint"]["token_env"], "MY_TOKEN");
        assert_eq!(r["endpoint"]["session_key_file"], "/k");
        assert_eq!(r["endpoint"]["session_key"], REDACTED);
        assert_eq!(r["endpoint"]["page_size"], 100);
        assert_eq!(r["servers"][0]["headers"]["Authorization"], REDACTED);
        assert_eq!(r["servers"][0]["env"]["API"], REDACTED);
        assert_eq!(r["servers"][0]["name"], "a");
        assert!(!r.to_string().contains("Bearer x"));
    }
}

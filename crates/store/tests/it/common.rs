//! Builders for records and raw access to a database file, for checks the store's API does not offer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use switchboard_store::{HandshakeRecord, ServerRecord, StoreConfig, ToolSnapshot};

/// A config for `dir/name` with a short busy timeout, so lock tests fail fast.
pub fn config(dir: &Path, name: &str) -> StoreConfig {
    StoreConfig { path: dir.join(name), busy_timeout: Duration::from_millis(300), ..StoreConfig::default() }
}

pub fn server(id: &str, name: &str) -> ServerRecord {
    ServerRecord {
        server_id: id.into(),
        name: name.into(),
        transport: "stdio".into(),
        config: json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {}}),
        state: "pending".into(),
        state_reason: None,
        era: None,
        created_at_ms: 1_700_000_000_000,
        updated_at_ms: 1_700_000_000_000,
    }
}

pub fn snapshot(server_id: &str, taken_at_ms: i64) -> ToolSnapshot {
    ToolSnapshot {
        id: None,
        server_id: server_id.into(),
        taken_at_ms,
        tools: json!([
            {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
             "annotations": {"readOnlyHint": true}, "x-unknown": [1, 2, 3]}
        ]),
        quarantined: json!([{"name": "broken", "error": "$ref '#/defs/missing' does not resolve"}]),
        resources: json!([{"uri": "file:///readme.md", "name": "readme"}]),
        prompts: json!([]),
    }
}

pub fn handshake(server_id: Option<&str>, at_ms: i64) -> HandshakeRecord {
    HandshakeRecord {
        id: None,
        server_id: server_id.map(str::to_owned),
        leg: if server_id.is_some() { "upstream" } else { "downstream" }.into(),
        transport: "stdio".into(),
        era: Some("2025-11-25".into()),
        offered_versions: vec!["2025-11-25".into()],
        chosen_version: Some("2025-11-25".into()),
        client_capabilities: json!({"roots": {"listChanged": true}}),
        server_capabilities: json!({"tools": {}, "logging": {}}),
        client_info: json!({"name": "switchboard", "version": "0.1.0"}),
        server_info: json!({"name": "everything", "version": "2.0.0"}),
        tool_count: Some(11),
        duration_ms: 12.25,
        error: None,
        at_ms,
    }
}

/// A plain connection to the file, outside the store (stands in for another process or a sqlite3 shell).
pub async fn raw(path: &Path) -> SqliteConnection {
    SqliteConnectOptions::new().filename(path).connect().await.expect("raw connection to the test database")
}

/// `path` with `suffix` appended to the file name (`-wal`, `-shm`).
pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

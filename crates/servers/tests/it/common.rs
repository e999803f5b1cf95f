//! Shared helpers: the thermal sample directory and an rmcp client connected to a handler in memory.

use std::path::{Path, PathBuf};

use rmcp::{
    RoleClient, ServerHandler, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
};
use serde_json::Value;

/// The thermal sample directory: `$SWITCHBOARD_THERMAL_DATA`, else the first `<ancestor>/shared/data/thermal`
/// above this crate (the same rule as switchboard-thermal's tests).
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SWITCHBOARD_THERMAL_DATA") {
        let dir = PathBuf::from(dir);
        assert!(dir.is_dir(), "SWITCHBOARD_THERMAL_DATA={} is not a directory", dir.display());
        return dir;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.ancestors().map(|a| a.join("shared/data/thermal")).find(|p| p.is_dir()).unwrap_or_else(|| {
        panic!(
            "thermal sample data not found: set SWITCHBOARD_THERMAL_DATA or place shared/data/thermal in an \
             ancestor of {}",
            manifest.display()
        )
    })
}

/// The bytes of one sample file.
pub fn sample(name: &str) -> Vec<u8> {
    let path = data_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// An rmcp client talking to `handler` through an in-memory duplex pipe.
pub async fn connect<H: ServerHandler>(handler: H) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1024 * 1024);
    tokio::spawn(async move {
        let running = handler.serve(server_io).await.expect("server initialises");
        let _ = running.waiting().await;
    });
    ().serve(client_io).await.expect("client initialises")
}

/// Calls `tool` with `args`.
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    args: Value,
) -> CallToolResult {
    let params =
        CallToolRequestParams::new(tool).with_arguments(args.as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tools/call answered")
}

/// The text content of a result.
pub fn text_of(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

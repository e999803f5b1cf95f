//! Test harness: replicas in-process (`Chaos::bind` on port 0) or as the built binary, rmcp
//! clients in both revisions, and a small HTTP helper for the control API.

use std::time::Duration;

use rmcp::{
    RoleClient,
    model::{CallToolRequestParams, CallToolResult, ProtocolVersion},
    service::{ClientLifecycleMode, ClientServiceExt, RunningService, ServiceError},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use switchboard_chaos::{Chaos, ChaosConfig, ChaosHandle};

/// Longest a test waits for anything.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Path of the binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_switchboard-chaos");

/// A replica named `id` on 127.0.0.1:0.
pub async fn replica(id: &str) -> ChaosHandle {
    Chaos::bind(ChaosConfig { replica_id: Some(id.to_owned()), ..ChaosConfig::default() })
        .await
        .expect("bind a replica")
}

/// The 2026-07-28 lifecycle.
pub fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

/// The 2025-11-25 `initialize` lifecycle.
pub fn legacy() -> ClientLifecycleMode {
    ClientLifecycleMode::Initialize
}

/// An rmcp client over Streamable HTTP.
pub async fn client(url: &str, lifecycle: ClientLifecycleMode) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    tokio::time::timeout(TIMEOUT, ().serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("client start in time")
        .expect("client start")
}

/// `tools/call` of `tool` with `arguments` (a JSON object).
pub fn params(tool: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

/// Calls `tool`, within [`TIMEOUT`].
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    tokio::time::timeout(TIMEOUT, client.call_tool(params(tool, arguments))).await.expect("answer in time")
}

/// Calls `tool` and expects a successful result; returns its `structuredContent`.
pub async fn ok(client: &RunningService<RoleClient, ()>, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await.expect("tools/call");
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    let structured = result.structured_content.clone().expect("structuredContent");
    let text = result.content.first().and_then(|block| block.as_text()).map(|text| text.text.clone());
    let text: Value = serde_json::from_str(&text.expect("a text block")).expect("the text is JSON");
    assert_eq!(text, structured, "the text block carries the same JSON");
    structured
}

/// A `reqwest` client for the control API.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(TIMEOUT).build().expect("http client")
}

/// `GET /chaos`.
pub async fn status(replica: &ChaosHandle) -> Value {
    let response = http().get(replica.control_url()).send().await.expect("GET /chaos");
    assert_eq!(response.status(), 200);
    response.json().await.expect("json")
}

/// `POST /chaos/faults` with `patch`; returns the status and the body.
pub async fn set_faults(control_url: &str, patch: Value) -> (u16, Value) {
    let response =
        http().post(format!("{control_url}/faults")).json(&patch).send().await.expect("POST faults");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Polls `GET /chaos` until `check` holds (bounded by [`TIMEOUT`]).
pub async fn until(replica: &ChaosHandle, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let state = status(replica).await;
        if check(&state) {
            return state;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: never happened; last state {state}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A raw JSON-RPC `tools/call` body.
pub fn raw_call(id: u64, tool: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": {} } })
}

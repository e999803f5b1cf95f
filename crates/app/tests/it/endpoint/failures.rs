//! Upstreams that die or are down (the error names the server and why), and the requests the
//! endpoint refuses before any upstream sees them.

use serde_json::{Value, json};
use switchboard_router::{Event, EventKind, Filter};

use crate::harness::*;

#[tokio::test]
async fn a_dead_upstream_is_an_upstream_failure_naming_it() {
    let mut env = Harness::alpha_beta().start().await;
    // Gone for good: its connections drained and its port closed.
    env.stop_upstream("beta").await;
    let (_, r) = env.call(&tool_call(1, "beta__echo", json!({"text": "x"}))).await;
    // Before the registry notices, the forward fails (-32051); after, the server is named
    // unavailable (-32050): either way the message names it.
    assert!(matches!(r["error"]["code"].as_i64(), Some(-32051 | -32050)), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("beta"), "{r}");
    let r = env.call_tool("alpha__echo", json!({"text": "y"})).await;
    assert_eq!(r["result"]["structuredContent"]["text"], "y", "{r}");
}

#[tokio::test]
async fn a_tool_of_a_server_that_is_down_names_the_server_and_why() {
    let mut env = Harness::alpha_beta().start().await;
    let mut states = env.events().subscribe_filtered(Filter {
        kinds: [EventKind::ServerState].into(),
        servers: ["beta".to_owned()].into(),
        ..Filter::default()
    });
    env.stop_upstream("beta").await;
    // The next refresh fails and the registry says so (an event, not a guessed delay).
    env.registry().refresh("beta");
    tokio::time::timeout(PATIENCE, async {
        loop {
            let ev = states.recv().await.expect("state events");
            if let Event::ServerState { from, to, .. } = ev.as_ref()
                && from == "ready"
                && to != "ready"
            {
                return;
            }
        }
    })
    .await
    .expect("beta leaves the ready state");
    let (status, r) = env.call(&tool_call(1, "beta__echo", json!({"text": "x"}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["error"]["code"], -32050, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("\"beta\"") && msg.contains("unavailable"), "{msg}");
    let (_, reason) = env.registry().entry("beta").unwrap().state();
    assert!(!reason.is_empty() && msg.contains(&reason), "the registry's reason {reason:?}: {msg}");
    assert_eq!(r["error"]["data"]["server"], "beta", "{r}");
    // A name nobody serves is still unknown.
    let (_, r) = env.call(&tool_call(2, "nobody__echo", json!({}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("unknown tool"), "{r}");
}

#[tokio::test]
async fn a_tool_name_must_be_a_string() {
    let env = Harness::alpha_beta().start().await;
    // 2026-07-28: checked before the headers (a number has no Mcp-Name to mirror).
    for (id, name) in [(1, json!(42)), (2, json!({"n": 1}))] {
        let (status, r) = env.call(&request(id, "tools/call", json!({"name": name, "arguments": {}}))).await;
        assert_eq!((status, r["error"]["code"].clone()), (400, json!(-32602)), "{r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains("params.name must be a string"), "{msg}");
    }
    // 2025-11-25 sessions (and stdio clients) reach the call itself.
    let sid = env.legacy_initialize().await;
    for (id, name) in [(3, Some(json!(42))), (4, Some(json!(["echo"]))), (5, None)] {
        let mut params = json!({"arguments": {}});
        if let Some(name) = name.clone() {
            params["name"] = name;
        }
        let (_, r) = env.legacy_call(Some(&sid), &legacy_request(id, "tools/call", params)).await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(!msg.contains("unknown tool"), "{msg}");
        let want = if name.is_some() { "params.name must be a string" } else { "params.name is required" };
        assert!(msg.contains(want), "{msg}");
    }
}

#[tokio::test]
async fn input_errors() {
    let env = Harness::alpha_beta().start().await;
    // 10 MiB body → 413 naming the limit; the endpoint keeps serving.
    let big = vec![b' '; 10 * 1024 * 1024];
    let r =
        env.http.post(&env.url).header("content-type", "application/json").body(big).send().await.unwrap();
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains(&(4 * 1024 * 1024).to_string()) && msg.contains("MiB"), "{msg}");
    let (status, _) = env.call(&request(1, "server/discover", json!({}))).await;
    assert_eq!(status, 200);

    // Forged Origin → 403.
    let r = env
        .http
        .post(&env.url)
        .header("Origin", "http://evil.example")
        .header("MCP-Protocol-Version", VERSION)
        .header("Mcp-Method", "server/discover")
        .json(&request(2, "server/discover", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // Header mismatch → 400 -32020.
    let r = env
        .http
        .post(&env.url)
        .header("MCP-Protocol-Version", VERSION)
        .header("Mcp-Method", "tools/list")
        .json(&request(3, "server/discover", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32020, "{v}");
    assert_eq!(v["id"], 3);

    // Invalid JSON → 400 -32700.
    let r = env.http.post(&env.url).body("{not json").send().await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32700, "{v}");

    // Unsupported version → -32022 with supported/requested.
    let mut body = request(4, "server/discover", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = env
        .http
        .post(&env.url)
        .header("MCP-Protocol-Version", "2099-01-01")
        .header("Mcp-Method", "server/discover")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32022, "{v}");
    assert_eq!(v["error"]["data"]["requested"], "2099-01-01");

    // Modern `_meta` without client capabilities → 400 -32602.
    let mut body = request(8, "server/discover", json!({}));
    body["params"]["_meta"].as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
    let (status, v) = env.call(&body).await;
    assert_eq!((status, v["error"]["code"].clone()), (400, json!(-32602)), "{v}");

    // Unknown method → 404 -32601; legacy request without a session → 400 -32600;
    // notification → 202; GET → 405.
    let (status, v) = env.call(&request(5, "bogus/method", json!({}))).await;
    assert_eq!((status, v["error"]["code"].clone()), (404, json!(-32601)), "{v}");
    let legacy = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {}});
    let r = env.http.post(&env.url).json(&legacy).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32600);
    assert!(v["error"]["message"].as_str().unwrap().contains("Mcp-Session-Id"), "{v}");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = env.http.post(&env.url).json(&note).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let r = env.http.get(&env.url).send().await.unwrap();
    assert_eq!(r.status(), 405);
}

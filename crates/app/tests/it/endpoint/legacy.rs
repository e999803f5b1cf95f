//! 2025-11-25 sessions on the same endpoint: the lifecycle, refused session ids and versions,
//! a session served by another instance with the same key, cancellation, the rmcp client.

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn legacy_client_session_lifecycle() {
    let env = Harness::alpha_beta().start().await;
    let sid = env.legacy_initialize().await;
    let r =
        env.legacy_post(Some(&sid), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(r.status().as_u16(), 202);
    let (status, r) = env.legacy_call(Some(&sid), &legacy_request(1, "ping", json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"], json!({}), "{r}");

    // An unknown method is a JSON-RPC error, not HTTP 404 (which would end the session).
    let (status, r) = env.legacy_call(Some(&sid), &legacy_request(9, "bogus/method", json!({}))).await;
    assert_eq!((status, r["error"]["code"].clone()), (200, json!(-32601)), "{r}");
    let (status, r) =
        env.legacy_call(Some(&sid), &legacy_request(8, "resources/templates/list", json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert!(r["result"]["resourceTemplates"].is_array(), "{r}");

    let (status, r) = env.legacy_call(Some(&sid), &legacy_request(2, "tools/list", json!({}))).await;
    assert_eq!(status, 200, "{r}");
    let names = tool_names(&r);
    assert!(names.iter().any(|n| n == "alpha__echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "beta__echo"), "{names:?}");

    for (id, name) in [(3, "alpha__echo"), (4, "beta__echo")] {
        let body = legacy_request(
            id,
            "tools/call",
            json!({"name": name, "arguments": {"text": format!("hi {name}")}}),
        );
        let (status, r) = env.legacy_call(Some(&sid), &body).await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["id"], id, "{r}");
        assert_eq!(r["result"]["structuredContent"]["text"], format!("hi {name}"), "{r}");
    }

    let r = env.http.delete(&env.url).header("Mcp-Session-Id", &sid).send().await.unwrap();
    assert!(matches!(r.status().as_u16(), 200 | 204), "{}", r.status());
    let (status, r) = env.legacy_call(Some(&sid), &legacy_request(5, "tools/list", json!({}))).await;
    assert_eq!(status, 404, "{r}");
    assert!(r["error"]["code"].is_i64(), "{r}");
    // An ended session has no GET stream either; without a session GET is 405.
    let r = env.http.get(&env.url).header("Mcp-Session-Id", &sid).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = env.http.get(&env.url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);
}

#[tokio::test]
async fn legacy_tampered_session_is_404() {
    let env = Harness::alpha_beta().start().await;
    let sid = env.legacy_initialize().await;
    let (body, tag) = sid.split_once('.').unwrap();
    let mut chars: Vec<char> = body.chars().collect();
    chars[3] = if chars[3] == 'A' { 'B' } else { 'A' };
    let tampered = format!("{}.{tag}", chars.into_iter().collect::<String>());
    for bad in [tampered.as_str(), "not-a-session"] {
        let (status, r) = env.legacy_call(Some(bad), &legacy_request(1, "tools/list", json!({}))).await;
        assert_eq!(status, 404, "{r}");
        assert_eq!(r["jsonrpc"], "2.0", "{r}");
        assert!(r["error"]["code"].is_i64(), "{r}");
    }
    let r = env.http.delete(&env.url).header("Mcp-Session-Id", "not-a-session").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

#[tokio::test]
async fn legacy_missing_session_is_400() {
    let env = Harness::alpha_beta().start().await;
    let (status, r) = env.legacy_call(None, &legacy_request(1, "tools/list", json!({}))).await;
    assert_eq!(status, 400, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("Mcp-Session-Id"), "{r}");
}

#[tokio::test]
async fn legacy_version_header_mismatch_is_400() {
    let env = Harness::alpha_beta().start().await;
    let sid = env.legacy_initialize().await;
    let post = |version: Option<&str>, id: u64| {
        let mut req = env
            .http
            .post(&env.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", &sid);
        if let Some(v) = version {
            req = req.header("MCP-Protocol-Version", v);
        }
        req.json(&legacy_request(id, "tools/list", json!({}))).send()
    };
    assert_eq!(post(Some("1999-01-01"), 1).await.unwrap().status().as_u16(), 400);
    // Another 2025-era version is accepted (clients of older SDKs send their own).
    assert_eq!(post(Some("2025-03-26"), 3).await.unwrap().status().as_u16(), 200);
    // Without the header the session's version applies.
    assert_eq!(post(None, 2).await.unwrap().status().as_u16(), 200);
}

/// A second app in front of the same upstreams serves a session the first one opened when both
/// read their session key from the same file; an app with another key does not.
#[tokio::test]
async fn legacy_session_is_served_by_a_second_instance_with_the_same_key() {
    let keys = tempfile::tempdir().unwrap();
    let shared = keys.path().join("shared.key");
    std::fs::write(&shared, "0123456789abcdef0123456789abcdef-shared\n").unwrap();
    let other = keys.path().join("other.key");
    std::fs::write(&other, "another-key-that-is-long-enough-to-use").unwrap();
    let key = shared.clone();
    let env = Harness::alpha_beta().endpoint(move |e| e.session_key_file = Some(key)).start().await;
    let sid = env.legacy_initialize().await;

    let mut served = Vec::new();
    for key in [shared, other] {
        let second = Harness::new()
            .url_upstream("alpha", &env.upstream_url("alpha"))
            .url_upstream("beta", &env.upstream_url("beta"))
            .endpoint(move |e| e.session_key_file = Some(key))
            .start()
            .await;
        let body =
            legacy_request(1, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "there"}}));
        served.push(second.legacy_call(Some(&sid), &body).await);
    }
    assert_eq!(served[0].0, 200, "{}", served[0].1);
    assert_eq!(served[0].1["result"]["structuredContent"]["text"], "there", "{}", served[0].1);
    assert_eq!(served[1].0, 404, "another key does not open the session: {}", served[1].1);
}

#[tokio::test]
async fn legacy_cancelled_notification_stops_the_call_on_this_instance() {
    let env = Harness::alpha_beta().start().await;
    let sid = env.legacy_initialize().await;
    let mut frames = env.frames();
    let body = legacy_request(
        7,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "c"}}),
    );
    let mut r = env.legacy_post(Some(&sid), &body).await;
    assert_eq!(r.status(), 200);
    let chunk = r.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&chunk).contains("notifications/progress"));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    let c = env.legacy_post(Some(&sid), &note).await;
    assert_eq!(c.status().as_u16(), 202);
    expect_upstream_cancel(&mut frames).await;
    // The response stream ends.
    tokio::time::timeout(PATIENCE, async { while let Ok(Some(_)) = r.chunk().await {} })
        .await
        .expect("the SSE response ends after the cancellation");
}

#[tokio::test]
async fn rmcp_legacy_client_lists_and_calls_through_the_router() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;

    let env = Harness::alpha_beta().start().await;
    let transport = StreamableHttpClientTransport::from_uri(env.url.clone());
    let client =
        tokio::time::timeout(PATIENCE, ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize))
            .await
            .expect("client start in time")
            .expect("initialize through the router");
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"alpha__echo"), "{names:?}");
    assert!(names.contains(&"beta__echo"), "{names:?}");
    for name in ["alpha__echo", "beta__echo"] {
        let args = json!({"text": format!("rmcp {name}")});
        let r = client
            .call_tool(CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap()))
            .await
            .expect("tools/call");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["structuredContent"]["text"], format!("rmcp {name}"), "{v}");
    }
    client.cancel().await.expect("close");
}

//! The listener's edge around `/mcp`: bearer token, per-request deadline and request traces,
//! in front of `alpha` (both eras) and `beta` (legacy only).

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_router::Event;
use switchboard_store::TraceRecord;

use crate::harness::*;

#[tokio::test]
async fn bearer_token_guards_the_mcp_endpoint() {
    let env = Harness::alpha_beta().token("s3cret").start().await;
    let discover = request(1, "server/discover", json!({}));

    let r = env.post(&discover).await;
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32054, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("Bearer"), "{v}");

    let r = env.with_token("wrong").post(&discover).await;
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"].to_str().unwrap().contains("invalid_token"));

    let (status, v) = env.with_token("s3cret").call(&discover).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["resultType"], "complete", "{v}");

    // DELETE and GET (WebSocket included) need it too; health does not.
    let r = env.http.delete(&env.url).header("Mcp-Session-Id", "x").send().await.unwrap();
    assert_eq!(r.status(), 401);
    let health = format!("{}/healthz", env.base);
    assert_eq!(env.http.get(&health).send().await.unwrap().status(), 200);
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut ws = env.ws_url.as_str().into_client_request().unwrap();
    ws.headers_mut().insert("sec-websocket-protocol", "mcp".parse().unwrap());
    match tokio_tungstenite::connect_async(ws.clone()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401),
        other => panic!("a WebSocket without the token must be refused: {:?}", other.map(|_| ())),
    }
    ws.headers_mut().insert("authorization", "Bearer s3cret".parse().unwrap());
    let (socket, resp) = tokio_tungstenite::connect_async(ws).await.expect("upgrade with the token");
    assert_eq!(resp.headers()["sec-websocket-protocol"], "mcp");
    drop(socket);
}

#[tokio::test]
async fn a_call_past_the_deadline_is_an_error_naming_the_upstream_and_is_cancelled_upstream() {
    let mut env =
        Harness::alpha_beta().config(|c| c.call_timeout = Duration::from_millis(1500)).start().await;
    let mut frames = env.frames();
    // JSON answer (no progress token: nothing reaches the client before the deadline).
    let body =
        request(1, "tools/call", json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 1}}));
    let started = std::time::Instant::now();
    let (status, v) = env.call(&body).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["error"]["code"], -32053, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("\"beta\"") && msg.contains("1.5 s"), "{msg}");
    assert!(started.elapsed() < Duration::from_secs(30));
    expect_upstream_cancel(&mut frames).await;

    // SSE answer: progress first, then the timeout as the last event.
    let body = request(
        2,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "t"}}),
    );
    let r = env.post(&body).await;
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let msgs = sse_messages(&r.text().await.unwrap());
    assert!(msgs.iter().any(|m| m["method"] == "notifications/progress"), "{msgs:?}");
    let last = msgs.last().unwrap();
    assert_eq!((last["id"].clone(), last["error"]["code"].clone()), (json!(2), json!(-32053)), "{msgs:?}");
    expect_upstream_cancel(&mut frames).await;

    // Fast calls are untouched, and both timeouts are traced as such.
    let (_, v) = env.call(&tool_call(3, "alpha__echo", json!({"text": "ok"}))).await;
    assert_eq!(v["result"]["structuredContent"]["text"], "ok", "{v}");
    let traces = env.traces(3).await;
    let timeouts: Vec<&TraceRecord> = traces.iter().filter(|t| t.outcome == "timeout").collect();
    assert_eq!(timeouts.len(), 2, "{traces:#?}");
    assert!(timeouts.iter().all(|t| t.upstream.as_deref() == Some("beta") && t.error_code == Some(-32053)));
    assert!(timeouts.iter().any(|t| t.streamed));
}

#[tokio::test]
async fn requests_produce_traces_on_the_bus_and_in_the_store() {
    let mut env = Harness::alpha_beta().start().await;
    let mut bus = env.events().subscribe();
    let (_, v) = env.call(&request(1, "server/discover", json!({}))).await;
    assert!(v["result"].is_object(), "{v}");
    let (_, v) = env.call(&tool_call(2, "alpha__echo", json!({"text": "t"}))).await;
    assert!(v["result"].is_object(), "{v}");
    let (_, v) = env.call(&tool_call(3, "nope", json!({}))).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let slow = request(
        4,
        "tools/call",
        json!({"name": "alpha__slow", "arguments": {"ms": 200, "steps": 2}, "_meta": {"progressToken": "p"}}),
    );
    let (_, v) = env.call(&slow).await;
    assert!(v["result"].is_object(), "{v}");

    // A 2025-11-25 session: the client is known from the session id.
    let (_, _, sid) = env.legacy_exchange(None, &legacy_initialize(0, "legacy-tracer")).await;
    let sid = sid.expect("a session");
    let call = legacy_request(5, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "l"}}));
    let (_, v) = env.legacy_call(Some(&sid), &call).await;
    assert_eq!(v["result"]["structuredContent"]["text"], "l", "{v}");

    let traces = env.traces(6).await;
    assert_eq!(traces.len(), 6, "{traces:#?}");
    let by_method = |m: &str, name: Option<&str>| {
        traces
            .iter()
            .find(|t| t.method == m && t.name.as_deref() == name)
            .unwrap_or_else(|| panic!("no trace of {m} {name:?}: {traces:#?}"))
    };
    let d = by_method("server/discover", None);
    assert_eq!((d.outcome.as_str(), d.upstream.as_deref(), d.era.as_deref()), ("ok", None, Some(VERSION)));
    assert_eq!(
        (d.client_name.as_deref(), d.client_version.as_deref()),
        (Some(CLIENT_NAME), Some(CLIENT_VERSION))
    );
    assert_eq!(d.transport, "http");
    assert!(d.peer.as_deref().is_some_and(|p| p.starts_with("127.0.0.1:")), "{d:?}");
    let ok = by_method("tools/call", Some("alpha__echo"));
    assert_eq!((ok.outcome.as_str(), ok.upstream.as_deref(), ok.streamed), ("ok", Some("alpha"), false));
    assert!(ok.latency_ms > 0.0 && ok.first_byte_ms.is_some());
    let bad = by_method("tools/call", Some("nope"));
    assert_eq!(
        (bad.outcome.as_str(), bad.error_code, bad.upstream.as_deref()),
        ("error", Some(-32602), None)
    );
    let streamed = by_method("tools/call", Some("alpha__slow"));
    assert_eq!((streamed.outcome.as_str(), streamed.streamed), ("ok", true), "{streamed:?}");
    assert!(streamed.latency_ms >= 150.0, "timed to the end of the stream: {streamed:?}");
    let init = by_method("initialize", None);
    assert_eq!((init.client_name.as_deref(), init.era.as_deref()), (Some("legacy-tracer"), Some(LEGACY)));
    let legacy = by_method("tools/call", Some("beta__echo"));
    assert_eq!(
        (legacy.client_name.as_deref(), legacy.client_version.as_deref(), legacy.era.as_deref()),
        (Some("legacy-tracer"), Some("1.5"), Some(LEGACY))
    );
    assert_eq!(legacy.upstream.as_deref(), Some("beta"));

    // Each was published on the registry's event bus as well.
    let mut published = 0;
    while let Ok(ev) = bus.try_recv() {
        if matches!(ev.as_ref(), Event::Trace { .. }) {
            published += 1;
        }
    }
    assert_eq!(published, 6);
}

#[tokio::test]
async fn stored_traces_stay_within_the_bound() {
    let mut env = Harness::alpha_beta().config(|c| c.traces_kept = 5).start().await;
    for id in 0..12 {
        let (status, _) = env.call(&request(id, "tools/list", json!({}))).await;
        assert_eq!(status, 200);
    }
    // Once the writer has stored all twelve (row ids count up from 1), only five remain.
    let store = env.stored(12).await;
    let rows = store.traces(100).await.unwrap();
    assert!(rows.iter().any(|t| t.id == Some(12)), "{rows:#?}");
    assert_eq!(rows.len(), 5, "{rows:#?}");
    assert_eq!(rows.iter().filter_map(|t| t.id).min(), Some(8));
    assert_eq!(store.trace_count().await.unwrap(), 5);
    store.close().await;
}

#[tokio::test]
async fn serve_token_env_requires_the_variable_and_then_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("switchboard.toml");
    std::fs::write(&cfg, "").unwrap();
    let args = |listen: bool| {
        let mut a = vec![
            "--config".to_owned(),
            cfg.to_str().unwrap().to_owned(),
            "--db".to_owned(),
            dir.path().join("sb.db").to_str().unwrap().to_owned(),
            "serve".to_owned(),
            "--token-env".to_owned(),
            "SB_EDGE_TEST_TOKEN".to_owned(),
        ];
        if listen {
            a.extend(["--listen".to_owned(), "127.0.0.1:0".to_owned()]);
        }
        a
    };
    // Named but unset: a usage error that names the variable.
    let out = tokio::process::Command::new(crate::switchboard())
        .args(args(true))
        .env_remove("SB_EDGE_TEST_TOKEN")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SB_EDGE_TEST_TOKEN"));

    let mut child = tokio::process::Command::new(crate::switchboard())
        .args(args(true))
        .env("SB_EDGE_TEST_TOKEN", "t0ken")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = crate::listening_url(child.stdout.take().unwrap()).await;
    let http = reqwest::Client::new();
    let body = request(1, "server/discover", json!({}));
    let post = || {
        http.post(&url)
            .header("MCP-Protocol-Version", VERSION)
            .header("Mcp-Method", "server/discover")
            .json(&body)
    };
    assert_eq!(post().send().await.unwrap().status(), 401);
    let r = post().bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let health = url.replace("/mcp", "/healthz");
    assert_eq!(http.get(&health).send().await.unwrap().status(), 200);
    child.kill().await.unwrap();
}

/// A 2025-11-25 client answering the upstream's question slower than the per-request
/// deadline still gets its result: the deadline covers the upstream, and restarts when the
/// turn goes to the client.
#[tokio::test]
async fn waiting_for_the_clients_answer_does_not_count_against_the_deadline() {
    let env = Harness::new()
        .upstream("fx", Era::Both, Profile::Conformance)
        .config(|c| c.call_timeout = Duration::from_millis(800))
        .start()
        .await;
    let init = legacy_request(
        0,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "slow-human", "version": "1"}}),
    );
    let r = env
        .http
        .post(&env.url)
        .header("Accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let call = legacy_request(
        1,
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "who?"}}),
    );
    let mut resp = env
        .http
        .post(&env.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", LEGACY)
        .json(&call)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut buf = String::new();
    let (_, ask) = next_event(&mut resp, &mut buf).await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert!(ask["id"].as_str().unwrap().starts_with("sb-"), "{ask}");
    // A slow human: longer than the deadline. Real time, on purpose: the upstream is a real
    // server on a socket, and the point is that this wait does not count against its deadline.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}});
    let r = env
        .http
        .post(&env.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", LEGACY)
        .json(&answer)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let (_, done) = next_event(&mut resp, &mut buf).await;
    assert_eq!(done["id"], 1, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("ada"), "the answer reached the upstream: {done}");
}

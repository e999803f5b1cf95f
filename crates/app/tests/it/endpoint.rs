//! The federated `/mcp` endpoint (2026-07-28) in front of two in-process fixtures: `alpha`
//! (both eras, reached as modern) and `beta` (legacy only); their shared tools are prefixed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_app::blobs::BlobStore;
use switchboard_app::endpoint::EndpointConfig;
use switchboard_app::http::{HttpState, router, serve};
use switchboard_fixtures::Fixture;
use switchboard_fixtures::config::{Era, FixtureConfig, TransportKind};
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_router::{EventBus, Registry, RegistryConfig, ServerState};
use tokio_util::sync::CancellationToken;

const VERSION: &str = "2026-07-28";

/// A downstream client of the endpoint.
pub(crate) struct Mcp {
    pub(crate) url: String,
    pub(crate) http: reqwest::Client,
}

struct Env {
    mcp: Mcp,
    stop: CancellationToken,
    frames: EventBus,
    beta_stop: CancellationToken,
    _dir: tempfile::TempDir,
    _registry: Registry,
}

impl std::ops::Deref for Env {
    type Target = Mcp;
    fn deref(&self) -> &Mcp {
        &self.mcp
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn fixture(era: Era, stop: &CancellationToken) -> String {
    fixture_until(era, stop.clone()).await
}

async fn fixture_until(era: Era, stop: CancellationToken) -> String {
    let mut cfg = FixtureConfig::new(TransportKind::Http);
    cfg.era = era;
    let f = Fixture::bind(cfg).await.unwrap();
    let url = f.url().unwrap();
    tokio::spawn(async move { f.serve(stop).await });
    url
}

async fn start() -> Env {
    start_with(EndpointConfig::default()).await
}

async fn start_with(endpoint: EndpointConfig) -> Env {
    let stop = CancellationToken::new();
    let frames = EventBus::new(10_000);
    let alpha = fixture(Era::Both, &stop).await;
    let beta_stop = stop.child_token();
    let beta = fixture_until(Era::Legacy, beta_stop.clone()).await;
    let registry = Registry::new(RegistryConfig::default(), None, frames.clone(), stop.child_token());
    for (name, url) in [("alpha", alpha), ("beta", beta)] {
        let spec = spec_from_toml(name, ServerToml { url: Some(url), ..Default::default() }, "test").unwrap();
        registry.add(spec).await.unwrap();
    }
    for name in ["alpha", "beta"] {
        registry.wait_for(name, ServerState::Ready, Duration::from_secs(30)).await.expect(name);
    }
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::open(dir.path().join("blobs"), 1024 * 1024).unwrap();
    let app = router(HttpState { blobs, registry: Some(registry.clone()), endpoint: Arc::new(endpoint) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(serve(listener, app, stop.child_token()));
    Env {
        mcp: Mcp { url, http: reqwest::Client::new() },
        stop,
        frames,
        beta_stop,
        _dir: dir,
        _registry: registry,
    }
}

/// A 2026-07-28 `tools/call` of `tool` (no arguments) from a client that can answer elicitation,
/// with `extra` merged into its params (`inputResponses`, `requestState` of a retry).
pub(crate) fn eliciting_call(id: u64, tool: &str, extra: Value) -> Value {
    let mut body = request(id, "tools/call", json!({"name": tool, "arguments": {}}));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            body["params"][k] = v;
        }
    }
    body
}

pub(crate) fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(VERSION);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

impl Mcp {
    /// POSTs `body` with the headers a correct client sends.
    pub(crate) async fn post(&self, body: &Value) -> reqwest::Response {
        let mut req = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", VERSION)
            .header("Mcp-Method", body["method"].as_str().unwrap());
        if let Some(n) = body["params"]["name"].as_str().or(body["params"]["uri"].as_str()) {
            req = req.header("Mcp-Name", n);
        }
        req.json(body).send().await.unwrap()
    }

    pub(crate) async fn call(&self, body: &Value) -> (u16, Value) {
        let r = self.post(body).await;
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    }
}

/// The JSON messages of an SSE body.
pub(crate) fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

#[tokio::test]
async fn discover_and_list_federate_both_servers() {
    let env = start().await;
    let (status, r) = env.call(&request(1, "server/discover", json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["supportedVersions"], json!([VERSION]));
    assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "switchboard");
    assert!(r["result"]["ttlMs"].is_u64());

    let (status, r) = env.call(&request(2, "tools/list", json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "complete");
    let names: Vec<&str> =
        r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"alpha__echo"), "{names:?}");
    assert!(names.contains(&"beta__echo"), "{names:?}");
    assert!(!names.contains(&"echo"), "{names:?}");

    let (_, r) = env.call(&request(3, "tools/list", json!({"cursor": "not a cursor"}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn calls_reach_their_own_upstream_including_the_legacy_one() {
    let env = start().await;
    for (id, name) in [(1, "alpha__echo"), (2, "beta__echo")] {
        let body =
            request(id, "tools/call", json!({"name": name, "arguments": {"text": format!("hi {name}")}}));
        let (status, r) = env.call(&body).await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["id"], id, "{r}");
        assert_eq!(r["result"]["structuredContent"]["text"], format!("hi {name}"), "{r}");
    }
    let (_, r) = env.call(&request(3, "tools/call", json!({"name": "nope", "arguments": {}}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("nope"), "{r}");
    let (_, r) =
        env.call(&request(4, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": 5}}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("arguments/text"), "{r}");
}

#[tokio::test]
async fn both_legs_of_a_call_are_on_the_event_stream_with_one_correlation_id() {
    let env = start().await;
    for (id, name, upstream) in [(11, "alpha__echo", "alpha"), (12, "beta__echo", "beta")] {
        let mut frames = env.frames.subscribe_frames();
        let body = request(id, "tools/call", json!({"name": name, "arguments": {"text": "x"}}));
        let (status, _) = env.call(&body).await;
        assert_eq!(status, 200);
        let mut client = None;
        let mut upstream_out = None;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while client.is_none() || upstream_out.is_none() {
            let f = tokio::time::timeout_at(deadline, frames.recv())
                .await
                .expect("both frames within 10 s")
                .expect("frame");
            if f.method.as_deref() != Some("tools/call") {
                continue;
            }
            match (f.leg, f.direction) {
                ("downstream", switchboard_transport::Direction::In) => client = Some(f),
                ("upstream", switchboard_transport::Direction::Out) => upstream_out = Some(f),
                _ => {}
            }
        }
        let (client, up) = (client.unwrap(), upstream_out.unwrap());
        assert_eq!(up.peer.as_ref(), upstream);
        assert!(client.body.contains(name), "{}", client.body);
        assert!(client.correlation.is_some());
        assert_eq!(
            client.correlation, up.correlation,
            "the upstream frame names the client request it serves"
        );
    }
}

#[tokio::test]
async fn slow_call_streams_progress_then_the_result() {
    let env = start().await;
    let body = request(
        7,
        "tools/call",
        json!({"name": "alpha__slow", "arguments": {"ms": 300, "steps": 3}, "_meta": {"progressToken": "tok"}}),
    );
    let r = env.post(&body).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert_eq!(r.headers()["x-accel-buffering"], "no");
    let msgs = sse_messages(&r.text().await.unwrap());
    let progress: Vec<&Value> = msgs.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "{msgs:?}");
    assert_eq!(progress[0]["params"]["progressToken"], "tok", "{msgs:?}");
    let last = msgs.last().unwrap();
    assert_eq!(last["id"], 7, "{msgs:?}");
    assert!(last["result"].is_object(), "{msgs:?}");
}

#[tokio::test]
async fn legacy_upstream_progress_prompts_and_resources() {
    let env = start().await;
    let body = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 300, "steps": 3}, "_meta": {"progressToken": 99}}),
    );
    let r = env.post(&body).await;
    assert_eq!(r.status(), 200);
    let msgs = sse_messages(&r.text().await.unwrap());
    assert!(msgs.iter().any(|m| m["params"]["progressToken"] == 99), "{msgs:?}");
    assert_eq!(msgs.last().unwrap()["id"], 1, "{msgs:?}");

    let (status, r) = env
        .call(&request(2, "prompts/get", json!({"name": "beta__greet", "arguments": {"name": "Ada"}})))
        .await;
    assert_eq!(status, 200, "{r}");
    assert!(r["result"]["messages"].to_string().contains("Ada"), "{r}");

    let (_, r) = env.call(&request(3, "resources/list", json!({}))).await;
    assert!(r["result"]["resources"].as_array().unwrap().len() >= 2, "{r}");
    let (status, r) = env.call(&request(4, "resources/read", json!({"uri": "fixture://readme"}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["contents"][0]["uri"], "fixture://readme", "{r}");
    let (_, r) = env.call(&request(5, "resources/read", json!({"uri": "fixture://nope"}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn tools_list_pages_with_opaque_cursors() {
    let env = start_with(EndpointConfig { page_size: 3, ..EndpointConfig::default() }).await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 1..100 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, r) = env.call(&request(id, "tools/list", params)).await;
        let page = r["result"]["tools"].as_array().unwrap();
        assert!(page.len() <= 3, "{r}");
        names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match r["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let (_, all) = start().await.call(&request(1, "tools/list", json!({}))).await;
    let expected: Vec<String> = all["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(expected.len() > 3);
    assert_eq!(names, expected);
}

#[tokio::test]
async fn closing_the_stream_cancels_upstream() {
    let env = start().await;
    let mut frames = env.frames.subscribe_frames();
    let body = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "c"}}),
    );
    let mut r = env.post(&body).await;
    assert_eq!(r.status(), 200);
    let chunk = r.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&chunk).contains("notifications/progress"));
    drop(r);
    expect_upstream_cancel(&mut frames).await;
}

#[tokio::test]
async fn a_dead_upstream_is_an_upstream_failure_naming_it() {
    let env = start().await;
    env.beta_stop.cancel();
    // The fixture drains its connections before it is gone; poll instead of guessing a delay.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let r = loop {
        let (_, r) = env
            .call(&request(1, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "x"}})))
            .await;
        if r.get("error").is_some() || std::time::Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Before the registry notices, the forward fails (-32051); after, the server is named
    // unavailable (-32050): either way the message names it.
    assert!(matches!(r["error"]["code"].as_i64(), Some(-32051 | -32050)), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("beta"), "{r}");
    let (_, r) =
        env.call(&request(2, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": "y"}}))).await;
    assert_eq!(r["result"]["structuredContent"]["text"], "y", "{r}");
}

#[tokio::test]
async fn a_tool_of_a_server_that_is_down_names_the_server_and_why() {
    let env = start().await;
    env.beta_stop.cancel();
    let registry = &env._registry;
    // The fixture drains its connections before it is gone; wait until the registry sees it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while registry.servers().iter().any(|v| v.name == "beta" && v.state == ServerState::Ready) {
        assert!(std::time::Instant::now() < deadline, "beta never left the ready state");
        registry.refresh("beta");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, r) =
        env.call(&request(1, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "x"}}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["error"]["code"], -32050, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("\"beta\"") && msg.contains("unavailable"), "{msg}");
    let (_, reason) = registry.entry("beta").unwrap().state();
    assert!(!reason.is_empty() && msg.contains(&reason), "the registry's reason {reason:?}: {msg}");
    assert_eq!(r["error"]["data"]["server"], "beta", "{r}");
    // A name nobody serves is still unknown.
    let (_, r) = env.call(&request(2, "tools/call", json!({"name": "nobody__echo", "arguments": {}}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("unknown tool"), "{r}");
}

#[tokio::test]
async fn a_tool_name_must_be_a_string() {
    let env = start().await;
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
    let env = start().await;
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

#[tokio::test]
async fn serve_listen_exposes_the_endpoint() {
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let upstream = fixture(Era::Both, &stop).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("switchboard.toml");
    std::fs::write(&cfg, format!("[servers.alpha]\nurl = {upstream:?}\n")).unwrap();
    let db = dir.path().join("sb.db");
    let mut child = tokio::process::Command::new(crate::switchboard())
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = crate::listening_url(child.stdout.take().unwrap()).await;
    let env = Mcp { url, http: reqwest::Client::new() };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, r) = env.call(&request(1, "tools/list", json!({}))).await;
        assert_eq!(status, 200, "{r}");
        if r["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "echo") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "alpha never became ready: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, r) = env
        .call(&request(2, "tools/call", json!({"name": "echo", "arguments": {"text": "via serve"}})))
        .await;
    assert_eq!(r["result"]["structuredContent"]["text"], "via serve", "{r}");
    child.kill().await.unwrap();
}

// ---- 2025-11-25 (legacy) sessions on the same endpoint ----

const LEGACY: &str = "2025-11-25";

pub(crate) fn legacy_request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

impl Mcp {
    /// POSTs `body` as a 2025-11-25 client: session id and version headers when in a session.
    pub(crate) async fn legacy_post(&self, sid: Option<&str>, body: &Value) -> reqwest::Response {
        let mut req = self.http.post(&self.url).header("Accept", "application/json, text/event-stream");
        if let Some(sid) = sid {
            req = req.header("Mcp-Session-Id", sid).header("MCP-Protocol-Version", LEGACY);
        }
        req.json(body).send().await.unwrap()
    }

    /// Status and the final JSON-RPC message (plain JSON or the last SSE event).
    pub(crate) async fn legacy_call(&self, sid: Option<&str>, body: &Value) -> (u16, Value) {
        let r = self.legacy_post(sid, body).await;
        let status = r.status().as_u16();
        let sse = r
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or_default().starts_with("text/event-stream"));
        let text = r.text().await.unwrap();
        let v = if sse { sse_messages(&text).pop().unwrap() } else { serde_json::from_str(&text).unwrap() };
        (status, v)
    }

    /// `initialize`; returns the session id.
    pub(crate) async fn legacy_initialize(&self) -> String {
        let body = legacy_request(
            0,
            "initialize",
            json!({"protocolVersion": LEGACY, "capabilities": {"roots": {}}, "clientInfo": {"name": "legacy-test", "version": "1"}}),
        );
        let r = self.legacy_post(None, &body).await;
        assert_eq!(r.status().as_u16(), 200);
        let sid = r.headers().get("mcp-session-id").expect("Mcp-Session-Id").to_str().unwrap().to_owned();
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["id"], 0, "{v}");
        assert_eq!(v["result"]["protocolVersion"], LEGACY, "{v}");
        assert_eq!(v["result"]["serverInfo"]["name"], "switchboard", "{v}");
        assert_eq!(v["result"]["capabilities"]["tools"]["listChanged"], true, "{v}");
        sid
    }
}

#[tokio::test]
async fn legacy_client_session_lifecycle() {
    let env = start().await;
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
    let names: Vec<&str> =
        r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"alpha__echo"), "{names:?}");
    assert!(names.contains(&"beta__echo"), "{names:?}");

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
    let env = start().await;
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
    let env = start().await;
    let (status, r) = env.legacy_call(None, &legacy_request(1, "tools/list", json!({}))).await;
    assert_eq!(status, 400, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("Mcp-Session-Id"), "{r}");
}

#[tokio::test]
async fn legacy_version_header_mismatch_is_400() {
    let env = start().await;
    let sid = env.legacy_initialize().await;
    let r = env
        .http
        .post(&env.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "1999-01-01")
        .json(&legacy_request(1, "tools/list", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Another 2025-era version is accepted (clients of older SDKs send their own).
    let r = env
        .http
        .post(&env.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-03-26")
        .json(&legacy_request(3, "tools/list", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Without the header the session's version applies.
    let r = env
        .http
        .post(&env.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .json(&legacy_request(2, "tools/list", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn legacy_session_is_served_by_a_second_instance_with_the_same_key() {
    let first = EndpointConfig::default();
    let key = first.session_key.clone();
    let env = start_with(first).await;
    let sid = env.legacy_initialize().await;

    let mut served = Vec::new();
    for same_key in [true, false] {
        let mut cfg = EndpointConfig::default();
        if same_key {
            cfg.session_key = key.clone();
        }
        let dir = tempfile::tempdir().unwrap();
        let blobs = BlobStore::open(dir.path().join("blobs"), 1024 * 1024).unwrap();
        let app = router(HttpState { blobs, registry: Some(env._registry.clone()), endpoint: Arc::new(cfg) });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(serve(listener, app, env.stop.child_token()));
        let second = Mcp { url, http: reqwest::Client::new() };
        let body =
            legacy_request(1, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "there"}}));
        let (status, r) = second.legacy_call(Some(&sid), &body).await;
        served.push((status, r));
        drop(dir);
    }
    assert_eq!(served[0].0, 200, "{}", served[0].1);
    assert_eq!(served[0].1["result"]["structuredContent"]["text"], "there", "{}", served[0].1);
    assert_eq!(served[1].0, 404, "another key does not open the session: {}", served[1].1);
}

#[tokio::test]
async fn legacy_cancelled_notification_stops_the_call_on_this_instance() {
    let env = start().await;
    let sid = env.legacy_initialize().await;
    let mut frames = env.frames.subscribe_frames();
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
    tokio::time::timeout(Duration::from_secs(10), async { while let Ok(Some(_)) = r.chunk().await {} })
        .await
        .expect("the SSE response ends after the cancellation");
}

#[tokio::test]
async fn rmcp_legacy_client_lists_and_calls_through_the_router() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;

    let env = start().await;
    let transport = StreamableHttpClientTransport::from_uri(env.url.clone());
    let client = tokio::time::timeout(
        Duration::from_secs(20),
        ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize),
    )
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

/// Waits (bounded) until the upstream leg carries a `notifications/cancelled` frame.
async fn expect_upstream_cancel(frames: &mut switchboard_router::events::FrameSubscription) {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match frames.recv().await {
                Ok(f) if f.method.as_deref() == Some("notifications/cancelled") => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("frame bus: {e}"),
            }
        }
    })
    .await
    .expect("the legacy upstream is sent notifications/cancelled");
}

/// Reads the next SSE event's JSON from a streaming response (`buf` keeps partial input),
/// with its `id:` line if any.
pub(crate) async fn next_event(r: &mut reqwest::Response, buf: &mut String) -> (Option<String>, Value) {
    loop {
        if let Some(end) = buf.find("\n\n") {
            let raw: String = buf.drain(..end + 2).collect();
            let id = raw.lines().find_map(|l| l.strip_prefix("id:")).map(|v| v.trim().to_owned());
            let data: String = raw
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join("");
            if data.is_empty() {
                continue; // keep-alive comment
            }
            return (id, serde_json::from_str(&data).unwrap());
        }
        let chunk = tokio::time::timeout(Duration::from_secs(15), r.chunk())
            .await
            .expect("an event within 15 s")
            .unwrap()
            .expect("the stream stays open");
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn list_changes_reach_listen_streams_and_legacy_get_streams() {
    let env = start().await;
    // A 2026-07-28 subscription: acknowledged first, tagged with the listen request's id.
    let mut listen = env
        .post(&request(41, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})))
        .await;
    assert_eq!(listen.status(), 200);
    let mut lbuf = String::new();
    let (_, ack) = next_event(&mut listen, &mut lbuf).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true, "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{ack}");
    // A 2025-11-25 session's GET stream.
    let sid = env.legacy_initialize().await;
    let mut get = env.http.get(&env.url).header("Mcp-Session-Id", &sid).send().await.unwrap();
    assert_eq!(get.status(), 200);
    assert!(get.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));

    let (_, r) = env
        .call(&request(42, "tools/call", json!({"name": "alpha__add_tool", "arguments": {"name": "fresh"}})))
        .await;
    assert!(r["result"].is_object(), "{r}");

    let (_, note) = next_event(&mut listen, &mut lbuf).await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert_eq!(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{note}");
    let mut gbuf = String::new();
    let (event_id, note) = next_event(&mut get, &mut gbuf).await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let seq: u64 = event_id.expect("SSE id").parse().unwrap();
    // The federated list has the new tool by now (no collision, so not prefixed).
    let (_, r) = env.call(&request(43, "tools/list", json!({}))).await;
    assert!(r["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "fresh"), "{r}");

    // Resuming from before that event replays it; from it, nothing is replayed.
    let mut again = env
        .http
        .get(&env.url)
        .header("Mcp-Session-Id", &sid)
        .header("Last-Event-ID", (seq - 1).to_string())
        .send()
        .await
        .unwrap();
    let mut abuf = String::new();
    let (replayed_id, note) = next_event(&mut again, &mut abuf).await;
    assert_eq!(replayed_id, Some(seq.to_string()));
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
}

#[tokio::test]
async fn a_legacy_upstreams_question_becomes_a_sealed_single_use_input_request() {
    let stop = CancellationToken::new();
    let mut cfg = FixtureConfig::new(TransportKind::Http);
    cfg.era = Era::Legacy;
    cfg.profile = switchboard_fixtures::config::Profile::Conformance;
    let f = Fixture::bind(cfg).await.unwrap();
    let url = f.url().unwrap();
    tokio::spawn({
        let stop = stop.clone();
        async move { f.serve(stop).await }
    });
    let registry = Registry::new(RegistryConfig::default(), None, EventBus::new(100), stop.child_token());
    let spec = spec_from_toml("fx", ServerToml { url: Some(url), ..Default::default() }, "test").unwrap();
    registry.add(spec).await.unwrap();
    registry.wait_for("fx", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::open(dir.path().join("blobs"), 1024 * 1024).unwrap();
    let endpoint = Arc::new(EndpointConfig::default());
    let app = router(HttpState { blobs, registry: Some(registry.clone()), endpoint: endpoint.clone() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mcp =
        Mcp { url: format!("http://{}/mcp", listener.local_addr().unwrap()), http: reqwest::Client::new() };
    tokio::spawn(serve(listener, app, stop.child_token()));

    let tool = "test_input_required_result_request_state";
    let ask = |id: u64, extra: Value| eliciting_call(id, tool, extra);
    let (status, r) = mcp.call(&ask(1, json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("sbrs1."), "the router sealed it: {state}");
    let requests = r["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests["confirm"]["method"], "elicitation/create", "the upstream's key hint: {r}");
    assert_eq!(endpoint.bridge.parked_count(), 1);

    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let (_, tampered) =
        mcp.call(&ask(2, json!({"inputResponses": answer, "requestState": format!("{state}x")}))).await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    assert!(tampered["error"]["message"].as_str().unwrap().contains("integrity"), "{tampered}");
    let mut other = ask(3, json!({"inputResponses": answer, "requestState": state}));
    other["params"]["arguments"] = json!({"extra": 1});
    let (_, mismatch) = mcp.call(&other).await;
    assert_eq!(mismatch["error"]["code"], -32602, "bound to the original arguments: {mismatch}");

    let (status, done) = mcp.call(&ask(4, json!({"inputResponses": answer, "requestState": state}))).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("state-ok"), "{done}");
    let (_, reused) = mcp.call(&ask(5, json!({"inputResponses": answer, "requestState": state}))).await;
    assert_eq!(reused["error"]["code"], -32602, "single use: {reused}");
    assert!(reused["error"]["message"].as_str().unwrap().contains("already used"), "{reused}");
    assert_eq!(endpoint.bridge.parked_count(), 0);

    // A client without the capability is told which one is missing.
    let mut bare = ask(6, json!({}));
    bare["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let (status, r) = mcp.call(&bare).await;
    assert_eq!(status, 400, "{r}");
    assert_eq!(r["error"]["code"], -32021, "{r}");
    stop.cancel();
}

/// A loopback TCP relay in front of `target` that records what clients send through it.
async fn recording_relay(
    target: String,
    stop: CancellationToken,
) -> (String, Arc<std::sync::Mutex<Vec<u8>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let authority = target.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let path = target.trim_start_matches("http://").split_once('/').map(|(_, p)| p.to_owned()).unwrap();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut inbound, _) = tokio::select! {
                () = stop.cancelled() => return,
                c = listener.accept() => c.unwrap(),
            };
            let mut outbound = tokio::net::TcpStream::connect(&authority).await.unwrap();
            let log = log.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let (mut ri, mut wi) = inbound.split();
                let (mut ro, mut wo) = outbound.split();
                let up = async {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = ri.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        log.lock().unwrap().extend_from_slice(&buf[..n]);
                        if wo.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let down = async {
                    let _ = tokio::io::copy(&mut ro, &mut wi).await;
                };
                tokio::join!(up, down);
            });
        }
    });
    (format!("http://{addr}/{path}"), seen)
}

#[tokio::test]
async fn unknown_mcp_param_headers_are_forwarded_upstream() {
    let stop = CancellationToken::new();
    let upstream = fixture(Era::Both, &stop).await;
    let (relayed, seen) = recording_relay(upstream, stop.clone()).await;
    let registry = Registry::new(RegistryConfig::default(), None, EventBus::new(100), stop.child_token());
    let spec = spec_from_toml("fx", ServerToml { url: Some(relayed), ..Default::default() }, "test").unwrap();
    registry.add(spec).await.unwrap();
    registry.wait_for("fx", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::open(dir.path().join("blobs"), 1024 * 1024).unwrap();
    let app = router(HttpState {
        blobs,
        registry: Some(registry.clone()),
        endpoint: Arc::new(EndpointConfig::default()),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(serve(listener, app, stop.child_token()));

    let body = request(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}));
    let r = reqwest::Client::new()
        .post(&url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", VERSION)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "echo")
        .header("Mcp-Param-Region", "eu-west")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["structuredContent"]["text"], "hi", "{v}");
    let sent = String::from_utf8_lossy(&seen.lock().unwrap()).to_ascii_lowercase();
    assert!(sent.contains("mcp-param-region: eu-west"), "the upstream request carries it: {sent}");
    stop.cancel();
}

mod stale_lists {
    //! A server whose list says `ttlMs: 0` and changes on every listing, without ever sending
    //! `list_changed`: a list request re-lists it on demand rather than answering the cached list.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use switchboard_router::registry::BuiltinConnector;
    use switchboard_transport::pipe::PipeUpstream;
    use switchboard_transport::{Tap, Upstream};
    use switchboard_wire::Message;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;

    /// A 2025-11-25 server on a pipe whose `tools/list` names a new tool each time (`v1`, `v2`…).
    struct Drifting {
        lists: Arc<AtomicUsize>,
    }

    async fn serve(
        input: tokio::io::DuplexStream,
        mut output: tokio::io::DuplexStream,
        lists: Arc<AtomicUsize>,
    ) {
        let mut lines = BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = Message::parse(line.as_bytes()) else { continue };
            let Some(id) = msg.id() else { continue };
            let reply = match msg.method().unwrap_or_default() {
                "initialize" => Message::response(
                    id,
                    json!({"protocolVersion": msg.params().and_then(|p| p.get("protocolVersion")).cloned(),
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "drifting", "version": "1.0.0"}}),
                ),
                "tools/list" => {
                    let n = lists.fetch_add(1, Ordering::SeqCst) + 1;
                    Message::response(
                        id,
                        json!({"tools": [{"name": format!("v{n}"), "inputSchema": {"type": "object"}}], "ttlMs": 0}),
                    )
                }
                other => Message::error_response(
                    Some(id),
                    switchboard_wire::ErrorObject::new(-32601, format!("method {other} not found")),
                ),
            };
            let mut bytes = reply.to_bytes();
            bytes.push(b'\n');
            if output.write_all(&bytes).await.is_err() {
                return;
            }
        }
    }

    impl BuiltinConnector for Drifting {
        fn connect(
            &self,
            _server: &str,
            tap: Tap,
            cancel: CancellationToken,
        ) -> Result<Arc<dyn Upstream>, String> {
            let (ours, server_in) = tokio::io::duplex(64 * 1024);
            let (server_out, theirs) = tokio::io::duplex(64 * 1024);
            tokio::spawn(serve(server_in, server_out, self.lists.clone()));
            Ok(PipeUpstream::new(theirs, ours, tap, cancel))
        }
    }

    fn tool_names(r: &Value) -> Vec<String> {
        r["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn a_list_older_than_its_ttl_is_relisted_on_demand() {
        let stop = CancellationToken::new();
        let registry =
            Registry::new(RegistryConfig::default(), None, EventBus::new(1000), stop.child_token());
        let lists = Arc::new(AtomicUsize::new(0));
        registry.set_builtins(Arc::new(Drifting { lists: lists.clone() }));
        let spec = spec_from_toml(
            "drift",
            ServerToml { builtin: Some("drift".into()), ..Default::default() },
            "test",
        )
        .unwrap();
        registry.add(spec).await.unwrap();
        registry.wait_for("drift", ServerState::Ready, Duration::from_secs(30)).await.expect("drift");
        assert_eq!(lists.load(Ordering::SeqCst), 1, "listed once on connect");
        let dir = tempfile::tempdir().unwrap();
        let blobs = BlobStore::open(dir.path().join("blobs"), 1024 * 1024).unwrap();
        let app = router(HttpState {
            blobs,
            registry: Some(registry.clone()),
            endpoint: Arc::new(EndpointConfig::default()),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(serve_http(listener, app, stop.child_token()));
        let mcp = Mcp { url, http: reqwest::Client::new() };

        let (status, r) = mcp.call(&request(1, "tools/list", json!({}))).await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(tool_names(&r), ["v2"], "the cached list (v1) was older than its ttlMs 0: {r}");
        assert_eq!(r["result"]["ttlMs"], 0, "{r}");
        let (_, r) = mcp.call(&request(2, "tools/list", json!({}))).await;
        assert_eq!(tool_names(&r), ["v3"], "{r}");
        assert_eq!(lists.load(Ordering::SeqCst), 3, "one listing per list request");
        stop.cancel();
    }

    use switchboard_app::http::serve as serve_http;
}

//! [`App`], the one entry point: built from a configuration it serves health, blobs, the
//! server list and `/mcp` (behind the token when one is set), and its shutdown drains the
//! requests in flight before the registry, the trace writer and the store stop.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_app::auth::BearerToken;
use switchboard_app::config::{AppConfig, EMBEDDED_DEFAULT, parse};
use switchboard_app::{App, AppOptions};
use switchboard_router::ServerState;
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_router::events::Event;
use switchboard_store::{Store, StoreConfig};

const VERSION: &str = "2026-07-28";
const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// The fixture binary, built by `cargo build -p switchboard-fixtures`.
fn fixture_bin() -> String {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(|d| d.parent()).unwrap().join("mcp-fixture");
    assert!(bin.exists(), "{} is missing: run `cargo build -p switchboard-fixtures`", bin.display());
    bin.to_string_lossy().into_owned()
}

/// The embedded default configuration (the three built-in servers) with its store in `dir`.
fn defaults(dir: &Path) -> AppConfig {
    parse(EMBEDDED_DEFAULT, "embedded default config", &[], Some(&dir.join("switchboard.db"))).unwrap()
}

/// A 2026-07-28 request to `/mcp`: the HTTP status and the JSON-RPC answer (from a JSON or an
/// SSE body; `Null` when the body holds none).
async fn mcp(
    http: &reqwest::Client,
    url: &str,
    auth: Option<&str>,
    id: u64,
    method: &str,
    mut params: Value,
) -> (u16, Value) {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(VERSION);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut req = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", VERSION)
        .header("Mcp-Method", method);
    if let Some(n) = body["params"]["name"].as_str() {
        req = req.header("Mcp-Name", n);
    }
    if let Some(a) = auth {
        req = req.bearer_auth(a);
    }
    let resp = req.json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let answer = if text.trim_start().starts_with('{') {
        serde_json::from_str(&text).unwrap()
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["id"] == id)
            .unwrap_or(Value::Null)
    };
    (status, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_app_serves_health_and_the_builtin_tools_and_a_token_guards_every_data_route() {
    let dir = tempfile::tempdir().unwrap();
    let config = defaults(dir.path());
    let http = reqwest::Client::new();

    let app = App::build(&config, AppOptions::default()).await.unwrap();
    app.registry().wait_settled(Duration::from_secs(60)).await;
    let addr = app.listen(LOOPBACK).await.unwrap();
    let base = format!("http://{addr}");
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok");
    let (status, list) = mcp(&http, &format!("{base}/mcp"), None, 1, "tools/list", json!({})).await;
    assert_eq!(status, 200, "{list}");
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    for tool in ["analyze_thermal_image", "search_manual"] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    let servers: Value = http.get(format!("{base}/api/servers")).send().await.unwrap().json().await.unwrap();
    assert_eq!(servers.as_array().unwrap().len(), 3, "{servers}");
    app.shutdown(Duration::from_secs(10)).await;

    // The same directory again, now with a token.
    let token = "per-launch-token";
    let options = AppOptions { token: BearerToken::new(token), ..AppOptions::default() };
    let app = App::build(&config, options).await.unwrap();
    let addr = app.listen(LOOPBACK).await.unwrap();
    let base = format!("http://{addr}");
    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200, "health stays open");
    let refusals = [
        http.get(format!("{base}/api/servers")).send().await.unwrap().status(),
        http.get(format!("{base}/blobs/{}", "0".repeat(64))).send().await.unwrap().status(),
        http.post(format!("{base}/blobs")).body("x").send().await.unwrap().status(),
    ];
    assert!(refusals.iter().all(|s| *s == 401), "{refusals:?}");
    let (status, answer) = mcp(&http, &format!("{base}/mcp"), None, 2, "tools/list", json!({})).await;
    assert_eq!(status, 401, "{answer}");
    let (status, answer) =
        mcp(&http, &format!("{base}/mcp"), Some("wrong"), 3, "tools/list", json!({})).await;
    assert_eq!(status, 401, "{answer}");
    let with = http.get(format!("{base}/api/servers")).bearer_auth(token).send().await.unwrap();
    assert_eq!(with.status(), 200);
    let (status, answer) = mcp(&http, &format!("{base}/mcp"), Some(token), 4, "tools/list", json!({})).await;
    assert_eq!(status, 200, "{answer}");
    app.shutdown(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_call_in_flight_refuses_new_connections_then_closes_registry_and_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("switchboard.db");
    let mut config = parse("", "test", &[], Some(&db)).unwrap();
    let fixture = ServerToml {
        command: Some(fixture_bin()),
        args: vec!["--transport".into(), "stdio".into()],
        ..Default::default()
    };
    config.servers.push(spec_from_toml("fx", fixture, "test").unwrap());
    let app = App::build(&config, AppOptions { event_capacity: Some(100_000), ..AppOptions::default() })
        .await
        .unwrap();
    app.registry().wait_for("fx", ServerState::Ready, Duration::from_secs(60)).await.expect("fx ready");
    let addr = app.listen(LOOPBACK).await.unwrap();
    let url = format!("http://{addr}/mcp");
    let store = app.store().clone();
    let mut events = app.events().subscribe();

    let call = tokio::spawn({
        let url = url.clone();
        async move {
            let args = json!({"name": "slow", "arguments": {"ms": 3000, "steps": 3}});
            mcp(&reqwest::Client::new(), &url, None, 7, "tools/call", args).await
        }
    });
    // The call has reached the upstream once its request frame went out on the stdio leg.
    loop {
        let ev = events.recv().await.unwrap();
        if let Event::Frame { frame } = ev.as_ref()
            && frame.leg == "upstream"
            && &*frame.peer == "fx"
            && frame.method.as_deref() == Some("tools/call")
        {
            break;
        }
    }

    let shutdown = tokio::spawn(app.shutdown(Duration::from_secs(60)));
    // Until the listener socket is closed a connection may still be taken into the backlog
    // (and then reset, unserved); after that every one is refused.
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
    assert!(!call.is_finished(), "the listener stopped accepting while the call was still in flight");

    let (status, answer) = call.await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "slept 3000 ms in 3 steps", "{answer}");
    shutdown.await.unwrap();

    // Its trace was published after the answer, and stored: the writer flushed before the
    // store closed, which it did last.
    let mut traced = false;
    while let Ok(ev) = events.try_recv() {
        if let Event::Trace { record } = ev.as_ref() {
            traced |= record.name.as_deref() == Some("slow") && record.outcome == "ok";
        }
    }
    assert!(traced, "the drained call's trace was published");
    assert!(store.traces(10).await.is_err(), "the store is closed after shutdown");
    let reopened = Store::open(&StoreConfig { path: db, ..StoreConfig::default() }).await.unwrap();
    let rows = reopened.traces(10).await.unwrap();
    reopened.close().await;
    assert!(
        rows.iter()
            .any(|r| r.method == "tools/call" && r.name.as_deref() == Some("slow") && r.outcome == "ok"),
        "{rows:?}"
    );
}

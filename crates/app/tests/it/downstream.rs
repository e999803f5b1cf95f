//! Downstream clients that do not speak HTTP: WebSocket on `GET /mcp` and `switchboard serve
//! --stdio` (the binary, spawned as desktop clients do), in both eras, plus an rmcp client
//! over stdio.

use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_util::sync::CancellationToken;

use crate::edge::{LEGACY, legacy_initialize, legacy_request, request, start};

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn ws_connect(url: &str) -> Ws {
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert("sec-websocket-protocol", "mcp".parse().unwrap());
    let (ws, resp) = tokio_tungstenite::connect_async(req).await.expect("websocket upgrade");
    assert_eq!(resp.headers()["sec-websocket-protocol"], "mcp");
    ws
}

async fn ws_send(ws: &mut Ws, v: &Value) {
    ws.send(WsMessage::Text(v.to_string().into())).await.unwrap();
}

/// Frames until the response with `id` (inclusive).
async fn ws_until(ws: &mut Ws, id: Value) -> Vec<Value> {
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match ws.next().await.expect("socket open").unwrap() {
                WsMessage::Text(t) => {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap();
                    let done = v["id"] == id && v.get("method").is_none();
                    got.push(v);
                    if done {
                        return;
                    }
                }
                WsMessage::Close(_) => panic!("closed before the response to {id}: {got:?}"),
                _ => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no response to {id}"));
    got
}

#[tokio::test]
async fn websocket_client_in_both_eras_with_concurrent_requests() {
    let env = start(|_, _, _| {}).await;
    // A plain GET keeps its answer.
    assert_eq!(env.http.get(&env.url).send().await.unwrap().status(), 405);

    // A foreign Origin cannot open a socket (DNS-rebinding protection, as for POST).
    let mut evil = env.ws_url.as_str().into_client_request().unwrap();
    evil.headers_mut().insert("origin", "http://evil.example".parse().unwrap());
    match tokio_tungstenite::connect_async(evil).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 403),
        other => panic!("a foreign Origin must be refused: {:?}", other.map(|_| ())),
    }

    let mut ws = ws_connect(&env.ws_url).await;
    ws_send(&mut ws, &request(1, "server/discover", json!({}))).await;
    let r = ws_until(&mut ws, json!(1)).await;
    assert_eq!(r[0]["result"]["supportedVersions"], json!(["2026-07-28"]), "{r:?}");

    // A slow call with progress does not hold up a quick one sent after it.
    let slow = request(
        2,
        "tools/call",
        json!({"name": "alpha__slow", "arguments": {"ms": 1500, "steps": 3}, "_meta": {"progressToken": "w"}}),
    );
    ws_send(&mut ws, &slow).await;
    ws_send(
        &mut ws,
        &request(3, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": "quick"}})),
    )
    .await;
    let mut frames = Vec::new();
    let mut order = Vec::new();
    while !(order.contains(&2) && order.contains(&3)) {
        let next = tokio::time::timeout(Duration::from_secs(30), ws.next()).await.unwrap().unwrap().unwrap();
        let WsMessage::Text(t) = next else { continue };
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        if v.get("method").is_none() {
            order.push(v["id"].as_u64().unwrap());
        }
        frames.push(v);
    }
    assert_eq!(order, [3, 2], "{frames:?}");
    assert!(
        frames.iter().any(|f| f["method"] == "notifications/progress" && f["params"]["progressToken"] == "w")
    );
    let quick = frames.iter().find(|f| f["id"] == 3).unwrap();
    assert_eq!(quick["result"]["structuredContent"]["text"], "quick", "{quick}");

    // Malformed frames are answered and the socket keeps serving.
    ws.send(WsMessage::Text("{not json".into())).await.unwrap();
    let r = ws_until(&mut ws, Value::Null).await;
    assert_eq!(r.last().unwrap()["error"]["code"], -32700, "{r:?}");
    ws.send(WsMessage::Text(json!({"jsonrpc": "2.0", "id": 9, "params": {}}).to_string().into()))
        .await
        .unwrap();
    let r = ws_until(&mut ws, json!(9)).await;
    assert_eq!(r.last().unwrap()["error"]["code"], -32600, "{r:?}");

    // The 2025-11-25 lifecycle on a second socket: the session is the connection's.
    let mut legacy = ws_connect(&env.ws_url).await;
    ws_send(&mut legacy, &legacy_initialize(0, "ws-legacy")).await;
    let r = ws_until(&mut legacy, json!(0)).await;
    assert_eq!(r[0]["result"]["protocolVersion"], LEGACY, "{r:?}");
    ws_send(&mut legacy, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    ws_send(&mut legacy, &legacy_request(1, "tools/list", json!({}))).await;
    let r = ws_until(&mut legacy, json!(1)).await;
    let names: Vec<&str> =
        r[0]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"beta__echo"), "{names:?}");
    ws_send(
        &mut legacy,
        &legacy_request(2, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "ws"}})),
    )
    .await;
    let r = ws_until(&mut legacy, json!(2)).await;
    assert_eq!(r.last().unwrap()["result"]["structuredContent"]["text"], "ws", "{r:?}");
    drop(legacy);
    drop(ws);

    // Traced as WebSocket requests, with the client's name.
    let traces = env.traces(6).await;
    let t = traces.iter().find(|t| t.name.as_deref() == Some("beta__echo")).expect("legacy call traced");
    assert_eq!((t.transport.as_str(), t.client_name.as_deref()), ("ws", Some("ws-legacy")), "{t:?}");
    assert!(t.peer.as_deref().is_some_and(|p| p.starts_with("127.0.0.1:")), "{t:?}");
}

#[tokio::test]
async fn websocket_messages_get_the_mirrored_parameter_headers() {
    use switchboard_fixtures::config::{Era, Profile};
    let env = crate::edge::start_with(&[("conf", Era::Modern, Profile::Conformance)], |_, _, _| {}).await;
    let mut ws = ws_connect(&env.ws_url).await;
    // `test_custom_header` mirrors `value` into Mcp-Param-Value; the endpoint rejects a call
    // without that header (-32020), so a result shows the adapter derived it from the schema.
    let call =
        request(1, "tools/call", json!({"name": "test_custom_header", "arguments": {"value": "héllo"}}));
    ws_send(&mut ws, &call).await;
    let r = ws_until(&mut ws, json!(1)).await;
    let last = r.last().unwrap();
    assert!(last["result"].is_object(), "{r:?}");
    // Over HTTP without the header the same call is refused: the check is real.
    let (status, v) = env.call(env.post(&call)).await;
    assert_eq!((status, v["error"]["code"].clone()), (400, json!(-32020)), "{v}");
}

#[tokio::test]
async fn closing_a_websocket_cancels_its_calls_upstream() {
    let env = start(|_, _, _| {}).await;
    let mut frames = env.frames.subscribe_frames();
    let mut ws = ws_connect(&env.ws_url).await;
    let slow = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "c"}}),
    );
    ws_send(&mut ws, &slow).await;
    let first = tokio::time::timeout(Duration::from_secs(30), ws.next()).await.unwrap().unwrap().unwrap();
    assert!(first.to_text().unwrap().contains("notifications/progress"), "{first:?}");
    ws.close(None).await.unwrap();
    crate::edge::expect_upstream_cancel(&mut frames).await;
}

#[tokio::test]
async fn stdio_cancellation_and_client_responses() {
    let env = start(|_, _, _| {}).await;
    let mut frames = env.frames.subscribe_frames();
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_r, server_w) = tokio::io::split(server);
    tokio::spawn(switchboard_app::downstream::stdio::serve(
        env.adapter.clone(),
        server_r,
        server_w,
        env.stop.child_token(),
    ));
    let (client_r, mut client_w) = tokio::io::split(client);
    let mut lines = BufReader::new(client_r).lines();
    let mut next = async || -> Value {
        let line =
            tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let slow = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "s"}}),
    );
    client_w.write_all(format!("{slow}\n").as_bytes()).await.unwrap();
    let first = next().await;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    // 2026-07-28 over stdio cancels with notifications/cancelled: the call stops upstream.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    client_w.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
    crate::edge::expect_upstream_cancel(&mut frames).await;
    // A client's response (to a server→client request) is passed on and answered by nothing;
    // the next line is the answer to the next request, not a late result of the cancelled one.
    let answer = json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}});
    client_w.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
    let discover = request(2, "server/discover", json!({}));
    client_w.write_all(format!("{discover}\n").as_bytes()).await.unwrap();
    loop {
        let v = next().await;
        if v["method"] == "notifications/progress" {
            continue; // progress already in flight when the cancellation arrived
        }
        assert_eq!(v["id"], 2, "{v}");
        break;
    }
    let traces = env.traces(2).await;
    let cancelled = traces.iter().find(|t| t.name.as_deref() == Some("beta__slow")).unwrap();
    assert_eq!(
        (cancelled.outcome.as_str(), cancelled.transport.as_str()),
        ("cancelled", "stdio"),
        "{cancelled:?}"
    );
}

/// `switchboard serve --stdio` as a child process.
struct StdioChild {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl StdioChild {
    async fn send(&mut self, v: &Value) {
        self.stdin.write_all(format!("{v}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    /// Lines until the response with `id` (inclusive); every line must be JSON.
    async fn until(&mut self, id: Value) -> Vec<Value> {
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let line = self.stdout.next_line().await.unwrap().expect("stdout open");
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on stdout: {line:?}: {e}"));
                let done = v["id"] == id && v.get("method").is_none();
                got.push(v);
                if done {
                    return;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no response to {id}: {got:?}"));
        got
    }

    async fn call(&mut self, v: &Value) -> Value {
        self.send(v).await;
        self.until(v["id"].clone()).await.pop().unwrap()
    }
}

fn spawn_stdio(
    dir: &std::path::Path,
    config: Option<&std::path::Path>,
    extra: &[&str],
) -> tokio::process::Child {
    let db = dir.join("sb.db");
    let mut cmd = tokio::process::Command::new(crate::switchboard());
    if let Some(c) = config {
        cmd.args(["--config", c.to_str().unwrap()]);
    }
    cmd.args(["--db", db.to_str().unwrap(), "serve", "--stdio"])
        .args(extra)
        .current_dir(dir)
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd.spawn().unwrap()
}

fn take_stdio(mut child: tokio::process::Child) -> StdioChild {
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    StdioChild { child, stdin, stdout }
}

async fn fixture_config(dir: &std::path::Path, stop: &CancellationToken) -> std::path::PathBuf {
    use switchboard_fixtures::Fixture;
    use switchboard_fixtures::config::{Era, FixtureConfig, TransportKind};
    let mut urls = Vec::new();
    for era in [Era::Both, Era::Legacy] {
        let mut cfg = FixtureConfig::new(TransportKind::Http);
        cfg.era = era;
        let f = Fixture::bind(cfg).await.unwrap();
        urls.push(f.url().unwrap());
        let stop = stop.clone();
        tokio::spawn(async move { f.serve(stop).await });
    }
    let path = dir.join("switchboard.toml");
    std::fs::write(
        &path,
        format!("[servers.alpha]\nurl = {:?}\n[servers.beta]\nurl = {:?}\n", urls[0], urls[1]),
    )
    .unwrap();
    path
}

/// Polls `tools/list` (2026-07-28) until both fixtures are federated.
async fn wait_for_tools(c: &mut StdioChild, names: &[&str]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    for id in 1000.. {
        let r = c.call(&request(id, "tools/list", json!({}))).await;
        let listed: Vec<&str> = r["result"]["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        if names.iter().all(|n| listed.contains(n)) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "servers never became ready: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn serve_stdio_speaks_both_eras_next_to_listen() {
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let dir = tempfile::tempdir().unwrap();
    let cfg = fixture_config(dir.path(), &stop).await;
    let mut child = spawn_stdio(dir.path(), Some(&cfg), &["--listen", "127.0.0.1:0"]);
    // With --stdio the address is announced on stderr: stdout carries only the protocol.
    let url = crate::listening_url(child.stderr.take().unwrap()).await;
    let mut c = take_stdio(child);
    wait_for_tools(&mut c, &["alpha__echo", "beta__echo"]).await;

    // 2026-07-28.
    let r = c.call(&request(1, "server/discover", json!({}))).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let r = c
        .call(&request(2, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": "modern"}})))
        .await;
    assert_eq!(r["result"]["structuredContent"]["text"], "modern", "{r}");
    // Progress arrives as lines before the result.
    c.send(&request(
        3,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 300, "steps": 3}, "_meta": {"progressToken": 5}}),
    ))
    .await;
    let lines = c.until(json!(3)).await;
    assert!(lines.iter().any(|l| l["method"] == "notifications/progress"), "{lines:?}");
    assert!(lines.last().unwrap()["result"].is_object(), "{lines:?}");

    // Malformed lines get an error line; the connection keeps serving.
    c.send_raw("{oops").await;
    let r = c.until(Value::Null).await;
    assert_eq!(r.last().unwrap()["error"]["code"], -32700, "{r:?}");
    c.send_raw("[1, 2]").await;
    let r = c.until(Value::Null).await;
    assert_eq!(r.last().unwrap()["error"]["code"], -32600, "{r:?}");

    // 2025-11-25 on the same stdio connection after initialize.
    let r = c.call(&legacy_initialize(10, "stdio-legacy")).await;
    assert_eq!(r["result"]["protocolVersion"], LEGACY, "{r}");
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let r = c.call(&legacy_request(11, "tools/list", json!({}))).await;
    assert!(r["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "beta__echo"), "{r}");
    let r = c
        .call(&legacy_request(
            12,
            "tools/call",
            json!({"name": "beta__echo", "arguments": {"text": "legacy"}}),
        ))
        .await;
    assert_eq!(r["result"]["structuredContent"]["text"], "legacy", "{r}");
    let r = c.call(&legacy_request(13, "ping", json!({}))).await;
    assert_eq!(r["result"], json!({}), "{r}");

    // The HTTP listener serves at the same time.
    let http = reqwest::Client::new();
    let body = request(20, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": "http"}}));
    let v: Value = http
        .post(&url)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "alpha__echo")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["result"]["structuredContent"]["text"], "http", "{v}");

    // Closing stdin ends the process.
    drop(c.stdin);
    let status =
        tokio::time::timeout(Duration::from_secs(30), c.child.wait()).await.expect("exit after EOF").unwrap();
    assert!(status.success(), "{status}");

    // The requests were traced into the store; `switchboard traces` shows them.
    let out = tokio::process::Command::new(crate::switchboard())
        .args(["--config", cfg.to_str().unwrap(), "--db", dir.path().join("sb.db").to_str().unwrap()])
        .args(["traces", "--json", "--limit", "500"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let legacy = rows.iter().find(|r| r["name"] == "beta__echo").expect("legacy call traced");
    assert_eq!(legacy["transport"], "stdio", "{legacy}");
    assert_eq!(legacy["client_name"], "stdio-legacy", "{legacy}");
    assert_eq!(legacy["upstream"], "beta", "{legacy}");
    assert!(rows.iter().any(|r| r["transport"] == "http" && r["name"] == "alpha__echo"), "{rows:?}");
    let table = tokio::process::Command::new(crate::switchboard())
        .args(["--config", cfg.to_str().unwrap(), "--db", dir.path().join("sb.db").to_str().unwrap()])
        .args(["traces", "--limit", "3"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.starts_with("time (UTC)") && text.lines().count() == 4, "{text}");
}

#[tokio::test]
async fn rmcp_client_over_serve_stdio() {
    use rmcp::model::{CallToolRequestParams, ProtocolVersion};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};

    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let dir = tempfile::tempdir().unwrap();
    let cfg = fixture_config(dir.path(), &stop).await;
    let discover = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    for lifecycle in [ClientLifecycleMode::Initialize, discover] {
        let mode = format!("{lifecycle:?}");
        let mut child = spawn_stdio(dir.path(), Some(&cfg), &[]);
        let stderr = child.stderr.take().unwrap();
        tokio::spawn(async move {
            let mut l = BufReader::new(stderr).lines();
            while let Ok(Some(_)) = l.next_line().await {}
        });
        // Wait for the upstreams through a raw line client first, then hand the pipes to rmcp.
        let mut raw = take_stdio(child);
        wait_for_tools(&mut raw, &["alpha__echo", "beta__echo"]).await;
        let StdioChild { child, stdin, stdout } = raw;
        let stdout = stdout.into_inner().into_inner();
        let client = tokio::time::timeout(
            Duration::from_secs(30),
            ().serve_with_lifecycle((stdout, stdin), lifecycle),
        )
        .await
        .expect("client start in time")
        .unwrap_or_else(|e| panic!("{mode} over stdio: {e}"));
        let tools = client.list_all_tools().await.expect("tools/list");
        assert!(tools.iter().any(|t| t.name == "beta__echo"), "{mode}");
        for name in ["alpha__echo", "beta__echo"] {
            let args = json!({"text": format!("rmcp {name}")});
            let r = client
                .call_tool(
                    CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap()),
                )
                .await
                .expect("tools/call");
            let v = serde_json::to_value(&r).unwrap();
            assert_eq!(v["structuredContent"]["text"], format!("rmcp {name}"), "{mode}: {v}");
        }
        client.cancel().await.expect("close");
        let mut child = child;
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("exit after EOF")
            .unwrap();
        assert!(status.success(), "{status}");
    }
}

#[tokio::test]
async fn serve_stdio_with_the_default_config() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_stdio(dir.path(), None, &[]);
    let stderr = child.stderr.take().unwrap();
    tokio::spawn(async move {
        let mut l = BufReader::new(stderr).lines();
        while let Ok(Some(_)) = l.next_line().await {}
    });
    let mut c = take_stdio(child);
    let r = c.call(&legacy_initialize(0, "desktop")).await;
    assert_eq!(r["result"]["serverInfo"]["name"], "switchboard", "{r}");
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    for id in 1.. {
        let r = c.call(&legacy_request(id, "tools/list", json!({}))).await;
        let names: Vec<&str> =
            r["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        if ["analyze_thermal_image", "search_manual", "generate_repair_steps"]
            .iter()
            .all(|n| names.contains(n))
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "built-ins never listed: {names:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(c.stdin);
    let status =
        tokio::time::timeout(Duration::from_secs(30), c.child.wait()).await.expect("exit after EOF").unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_legacy_websocket_session_hears_list_changes() {
    let env = start(|_, _, _| {}).await;
    let mut ws = ws_connect(&env.ws_url).await;
    ws_send(&mut ws, &legacy_initialize(0, "ws-listener")).await;
    ws_until(&mut ws, json!(0)).await;
    ws_send(&mut ws, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    // The adapter opened the session's notification stream; give it a moment to subscribe.
    tokio::time::sleep(Duration::from_millis(200)).await;
    ws_send(
        &mut ws,
        &legacy_request(1, "tools/call", json!({"name": "alpha__add_tool", "arguments": {"name": "late"}})),
    )
    .await;
    let found = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            let WsMessage::Text(t) = ws.next().await.expect("socket open").unwrap() else { continue };
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["method"] == "notifications/tools/list_changed" {
                return v;
            }
        }
    })
    .await
    .expect("a tools/list_changed frame on the socket");
    assert_eq!(found["jsonrpc"], "2.0", "{found}");
}

/// A desktop client spawns `switchboard serve --stdio --upstream-cmd …` and lists tools at
/// once, while server-everything is still starting: the official Python client, in both
/// revisions, sees server-everything's tools in its very first `list_tools`.
#[tokio::test]
async fn python_client_first_list_over_stdio_waits_for_pending_servers() {
    let python = crate::repo_root().join(".cache/python/bin/python");
    let script = crate::repo_root().join("tests/clients/python_stdio_first_list.py");
    for mode in ["auto", "legacy"] {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("empty.toml");
        std::fs::write(&config, "").unwrap();
        let db = dir.path().join("sb.db");
        let upstream = format!("everything={} {} stdio", crate::node(), crate::everything_js());
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            tokio::process::Command::new(&python)
                .arg(&script)
                .args([mode, "--", crate::switchboard()])
                .args(["--config", config.to_str().unwrap(), "--db", db.to_str().unwrap()])
                .args(["serve", "--stdio", "--upstream-cmd", &upstream])
                .current_dir(dir.path())
                .env_remove("SWITCHBOARD_CONFIG")
                .env_remove("SWITCHBOARD_TOKEN")
                .env("RUST_LOG", "warn")
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("the client finishes in time")
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {:?}: {stderr}", out.status);
        let line = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{mode}: {e}: {line}"));
        let tools: Vec<&str> = v["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for want in ["echo", "get-sum"] {
            assert!(tools.contains(&want), "{mode}: the first list lacks {want}: {v}");
        }
        if mode == "auto" {
            assert_eq!(v["protocol_version"], "2026-07-28", "{v}");
        }
    }
}

/// The frames of one downstream request on the event bus, up to its response on the
/// downstream leg, and the upstream `tools/call` it caused.
async fn frames_of_one_call(
    frames: &mut switchboard_router::events::FrameSubscription,
) -> (Vec<switchboard_transport::FrameEvent>, switchboard_transport::FrameEvent) {
    use switchboard_transport::Direction;
    let mut downstream = Vec::new();
    let mut upstream = None;
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let f = frames.recv().await.expect("frame");
            match (f.leg, f.direction) {
                ("upstream", Direction::Out) if f.method.as_deref() == Some("tools/call") => {
                    upstream = Some(f)
                }
                ("downstream", direction) => {
                    let done = direction == Direction::Out && f.method.is_none();
                    downstream.push(f);
                    if done && upstream.is_some() {
                        return;
                    }
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the call's frames within 10 s");
    (downstream, upstream.expect("upstream frame"))
}

/// One request frame and one response frame on the downstream leg, tagged with the real
/// transport (and the WebSocket frame numbers), with the correlation id of the upstream leg.
#[tokio::test]
async fn websocket_and_stdio_frames_are_on_the_event_stream_with_their_transport() {
    use switchboard_transport::Direction;
    let env = start(|_, _, _| {}).await;
    let call = request(1, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": "framed"}}));

    let mut frames = env.frames.subscribe_frames();
    let mut ws = ws_connect(&env.ws_url).await;
    ws_send(&mut ws, &call).await;
    let r = ws_until(&mut ws, json!(1)).await;
    assert_eq!(r.last().unwrap()["result"]["structuredContent"]["text"], "framed", "{r:?}");
    let (down, up) = frames_of_one_call(&mut frames).await;
    let mine: Vec<_> = down.iter().filter(|f| f.correlation == up.correlation).collect();
    assert_eq!(mine.len(), 2, "one request and one response frame: {down:#?}");
    let (req, resp) = (mine[0], mine[1]);
    assert_eq!((req.direction, req.transport, req.ws_frame), (Direction::In, "ws", Some(1)), "{req:?}");
    assert_eq!(req.method.as_deref(), Some("tools/call"));
    assert_eq!((resp.direction, resp.transport, resp.ws_frame), (Direction::Out, "ws", Some(1)), "{resp:?}");
    assert!(resp.body.contains("framed"), "{}", resp.body);
    assert!(up.correlation.is_some());
    drop(ws);

    let mut frames = env.frames.subscribe_frames();
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_r, server_w) = tokio::io::split(server);
    tokio::spawn(switchboard_app::downstream::stdio::serve(
        env.adapter.clone(),
        server_r,
        server_w,
        env.stop.child_token(),
    ));
    let (client_r, mut client_w) = tokio::io::split(client);
    client_w.write_all(format!("{call}\n").as_bytes()).await.unwrap();
    let mut lines = BufReader::new(client_r).lines();
    let line =
        tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.unwrap().unwrap().unwrap();
    assert!(line.contains("framed"), "{line}");
    let (down, up) = frames_of_one_call(&mut frames).await;
    let mine: Vec<_> = down.iter().filter(|f| f.correlation == up.correlation).collect();
    assert_eq!(mine.len(), 2, "one request and one response frame: {down:#?}");
    assert_eq!((mine[0].direction, mine[0].transport, mine[0].ws_frame), (Direction::In, "stdio", None));
    assert_eq!((mine[1].direction, mine[1].transport, mine[1].ws_frame), (Direction::Out, "stdio", None));
    assert!(up.correlation.is_some());
}

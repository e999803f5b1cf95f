//! `switchboard serve --stdio`, the binary spawned as desktop clients spawn it: both eras on
//! stdio next to an HTTP listener, the rmcp client, the default configuration, and the Python
//! client's first list while servers are still starting.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::harness::*;

/// `switchboard serve --stdio` as a child process, and a line client of its pipes.
struct StdioChild {
    child: tokio::process::Child,
    c: LineClient<tokio::process::ChildStdout, tokio::process::ChildStdin>,
}

impl std::ops::Deref for StdioChild {
    type Target = LineClient<tokio::process::ChildStdout, tokio::process::ChildStdin>;
    fn deref(&self) -> &Self::Target {
        &self.c
    }
}

impl std::ops::DerefMut for StdioChild {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.c
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
    let stdout = child.stdout.take().unwrap();
    StdioChild { child, c: LineClient::new(stdout, stdin) }
}

async fn fixture_config(dir: &std::path::Path, stop: &CancellationToken) -> std::path::PathBuf {
    let mut urls = Vec::new();
    for era in [Era::Both, Era::Legacy] {
        urls.push(RunningFixture::of(era, Profile::Basic, stop.clone()).await.url);
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
    let StdioChild { mut child, c } = c;
    drop(c);
    let status =
        tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("exit after EOF").unwrap();
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
    // A header and three requests, each routed one with its decision on the line under it.
    let requests = text.lines().filter(|l| !l.starts_with(' ')).count();
    assert!(text.starts_with("time (UTC)") && requests == 4, "{text}");
    assert!(text.contains("└ route r-"), "{text}");
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
        let StdioChild { child, c: LineClient { lines, writer: stdin } } = raw;
        let stdout = lines.into_inner().into_inner();
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
    let StdioChild { mut child, c } = c;
    drop(c);
    let status =
        tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("exit after EOF").unwrap();
    assert!(status.success(), "{status}");
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

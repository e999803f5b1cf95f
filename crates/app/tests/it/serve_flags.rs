//! `switchboard serve` with ad-hoc upstreams on its command line (`--upstream`,
//! `--upstream-cmd`, `--prefix`), as a user runs it: real processes, a 2026-07-28 client.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::harness::{Client, fixture_bin, request};
use crate::switchboard;

/// Spawns `cmd` (killed on drop) and returns it with the URL of its `listening on URL` line.
async fn spawn_listening(mut cmd: tokio::process::Command) -> (tokio::process::Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let url = crate::listening_url(child.stdout.take().unwrap()).await;
    (child, url)
}

/// Two upstreams given only as flags, one over stdio (legacy only) and one over HTTP, are
/// federated with `--prefix always`; with no config file, the embedded built-in servers are
/// left out.
#[tokio::test]
async fn serve_federates_upstreams_given_as_flags() {
    let dir = tempfile::tempdir().unwrap();
    let mut fx = tokio::process::Command::new(fixture_bin());
    fx.args(["--transport", "http"]).stderr(Stdio::null());
    let (_fixture, fixture_url) = spawn_listening(fx).await;

    let mut sb = tokio::process::Command::new(switchboard());
    sb.current_dir(dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .env("RUST_LOG", "warn")
        .arg("--db")
        .arg(dir.path().join("sb.db"))
        .args(["serve", "--listen", "127.0.0.1:0", "--prefix", "always", "--upstream-cmd"])
        .arg(format!("'{}' --transport stdio --era legacy", fixture_bin()))
        .arg("--upstream")
        .arg(format!("web={fixture_url}"))
        .stderr(Stdio::null());
    let (_router, url) = spawn_listening(sb).await;
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");

    let client = Client::new(url.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let names = loop {
        let (_, r) = client.call(&request(1, "tools/list", json!({}))).await;
        let names: Vec<String> = r["result"]["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let both = names.iter().any(|n| n == "web__echo") && names.iter().any(|n| n == "mcp-fixture__echo");
        if both || std::time::Instant::now() > deadline {
            break names;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for want in ["web__echo", "web__add", "mcp-fixture__echo", "mcp-fixture__add"] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    assert!(
        names.iter().all(|n| n.starts_with("web__") || n.starts_with("mcp-fixture__")),
        "only the two flag upstreams, every name prefixed: {names:?}"
    );

    for (id, tool) in [(2, "web__echo"), (3, "mcp-fixture__echo")] {
        let (_, r) =
            client.call(&request(id, "tools/call", json!({"name": tool, "arguments": {"text": tool}}))).await;
        assert_eq!(r["result"]["content"][0]["text"], tool, "{r}");
        assert_eq!(r["result"]["structuredContent"]["text"], tool, "{r}");
        // The stdio upstream is legacy-only: its result still carries what 2026-07-28 requires.
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
    }
}

/// A bad flag value stops `serve` before anything starts, with one line that names it.
#[test]
fn bad_serve_flags_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sb.db");
    let cases: [(&[&str], &str); 6] = [
        (&["--upstream", "localhost:3000"], "not an http(s):// or ws(s):// URL"),
        (&["--upstream-cmd", "node 'unclosed"], "unbalanced quotes"),
        (&["--upstream-cmd", "x=  "], "no command given"),
        (&["--prefix", "sometimes"], "choose always, on-collision or never"),
        (&["--separator", ""], "--separator"),
        (
            &["--upstream", "a=http://127.0.0.1:9/mcp", "--upstream", "a=http://127.0.0.1:8/mcp"],
            "already exists",
        ),
    ];
    for (args, want) in cases {
        let out = std::process::Command::new(switchboard())
            .current_dir(dir.path())
            .env_remove("SWITCHBOARD_CONFIG")
            .env("RUST_LOG", "off")
            .arg("--db")
            .arg(&db)
            .arg("serve")
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("switchboard: ") && err.contains(want), "{args:?}: {err}");
    }
}

/// With neither `--listen` nor `--stdio`, `serve` listens on loopback — 127.0.0.1:7010, or,
/// when that is taken (held here), a free loopback port, saying so — and prints the panel's URL
/// on stderr with a per-launch token the admin API accepts.
#[tokio::test]
async fn serve_without_flags_listens_on_loopback_and_prints_the_panel_url() {
    use tokio::io::AsyncBufReadExt;
    // Held for the test (or held by someone else already): 7010 is taken either way.
    let _held = tokio::net::TcpListener::bind("127.0.0.1:7010").await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("switchboard.toml");
    std::fs::write(&cfg, "").unwrap();
    let mut sb = tokio::process::Command::new(switchboard());
    sb.current_dir(dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_TOKEN")
        .env("RUST_LOG", "warn")
        .arg("--config")
        .arg(&cfg)
        .arg("--db")
        .arg(dir.path().join("sb.db"))
        .arg("serve")
        .stderr(Stdio::piped());
    let mut child = sb.stdout(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let url = crate::listening_url(child.stdout.take().unwrap()).await;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let mut said = Vec::new();
    let panel = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(p) = line.strip_prefix("panel: ") {
                return p.to_owned();
            }
            said.push(line);
        }
        panic!("no panel line: {said:?}");
    })
    .await
    .expect("the panel line in time");
    assert!(said.iter().any(|l| l.contains("127.0.0.1:7010 is taken")), "{said:?}");
    let base = url.trim_end_matches("/mcp");
    assert!(base.starts_with("http://127.0.0.1:") && !base.ends_with(":7010"), "{url}");
    let token = panel.strip_prefix(&format!("{base}/#token=")).expect("http://ADDR/#token=TOKEN");
    assert_eq!(token.len(), 64, "32 random bytes, hex: {panel}");
    let http = reqwest::Client::new();
    let api = format!("{base}/api/overview");
    assert_eq!(http.get(&api).send().await.unwrap().status(), 401);
    let r = http.get(&api).bearer_auth(token).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let page = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
}

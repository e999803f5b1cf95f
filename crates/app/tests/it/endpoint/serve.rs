//! The endpoint as `switchboard serve --listen` exposes it (the binary, spawned).

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn serve_listen_exposes_the_endpoint() {
    let harness = Harness::new();
    let _guard = harness.stop_token().drop_guard();
    let upstream = harness.fixture(Era::Both, Profile::Basic).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("switchboard.toml");
    std::fs::write(&cfg, format!("[servers.alpha]\nurl = {:?}\n", upstream.url)).unwrap();
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
    let env = Client::new(url);
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
    let (_, r) = env.call(&tool_call(2, "echo", json!({"text": "via serve"}))).await;
    assert_eq!(r["result"]["structuredContent"]["text"], "via serve", "{r}");
    child.kill().await.unwrap();
}

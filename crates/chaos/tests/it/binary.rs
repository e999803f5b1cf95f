//! The built binary: the listening line, serving, the crash exit status, SIGTERM.

use std::process::Stdio;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::*;

/// Starts the binary with `args` and `envs`; returns the child and the URL it printed.
pub async fn spawn_with(args: &[&str], envs: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .envs(envs.iter().copied())
        .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn switchboard-chaos");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    tokio::time::timeout(TIMEOUT, BufReader::new(stdout).read_line(&mut line))
        .await
        .expect("listening line in time")
        .expect("read stdout");
    let url = line
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected line {line:?}"))
        .to_owned();
    (child, url)
}

async fn spawn(args: &[&str]) -> (Child, String) {
    spawn_with(args, &[]).await
}

/// Sends SIGTERM to `child`.
pub async fn terminate(child: &Child) {
    let pid = child.id().expect("pid");
    let killed = Command::new("kill").args(["-TERM", &pid.to_string()]).status().await.expect("kill");
    assert!(killed.success());
}

#[tokio::test]
async fn the_binary_serves_then_a_crash_exits_it_with_a_non_zero_status() {
    let (mut child, url) = spawn(&["--replica-id", "bin-1", "--faults", r#"{"slow_tools_ms": 1}"#]).await;
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    let client = client(&url, legacy()).await;
    assert_eq!(ok(&client, "whoami", json!({})).await, json!({ "replica": "bin-1" }));
    let control = url.replace("/mcp", "/chaos");
    let state: serde_json::Value =
        http().get(&control).send().await.expect("get").json().await.expect("json");
    assert_eq!(state["faults"]["slow_tools_ms"], 1, "--faults applies from the start");

    let crashed = http().post(format!("{control}/faults")).json(&json!({ "crash": true })).send().await;
    assert!(crashed.is_err(), "a crash answers nothing: {crashed:?}");
    let status = tokio::time::timeout(TIMEOUT, child.wait()).await.expect("exits in time").expect("wait");
    assert_eq!(status.code(), Some(switchboard_chaos::CRASH_EXIT_CODE));
    drop(client);
}

#[tokio::test]
async fn sigterm_stops_the_binary_cleanly() {
    let (mut child, _url) = spawn(&[]).await;
    terminate(&child).await;
    let status = tokio::time::timeout(TIMEOUT, child.wait()).await.expect("exits in time").expect("wait");
    assert_eq!(status.code(), Some(0));
}

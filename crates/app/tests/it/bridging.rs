//! Bridging a 2026-07-28 client to a 2025-11-25 server that asks its questions one after the
//! other (the conformance fixture's multi-round tool, legacy only): every round's input keys
//! are new, and each answer reaches only the question it answers.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_fixtures::config::{FixtureConfig, TransportKind};
use tokio_util::sync::CancellationToken;

use crate::harness::*;

/// The fixture's key hint, and what the relay turns it into (same length, so HTTP framing
/// stays valid): a server that names no keys.
const HINT: &[u8] = b"dev.switchboard/inputKey";
const NO_HINT: &[u8] = b"dev.switchboard/inputKeX";

fn replace_all(buf: &mut [u8], from: &[u8], to: &[u8]) {
    let mut i = 0;
    while i + from.len() <= buf.len() {
        if &buf[i..i + from.len()] == from {
            buf[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
}

/// A loopback TCP relay in front of `target` that hides the server's input key hints.
async fn hint_stripping_relay(target: &str, stop: CancellationToken) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let authority = target.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let path = target.trim_start_matches("http://").split_once('/').map(|(_, p)| p.to_owned()).unwrap();
    tokio::spawn(async move {
        loop {
            let (mut inbound, _) = tokio::select! {
                () = stop.cancelled() => return,
                c = listener.accept() => c.unwrap(),
            };
            let mut outbound = tokio::net::TcpStream::connect(&authority).await.unwrap();
            tokio::spawn(async move {
                let (mut ri, mut wi) = inbound.split();
                let (mut ro, mut wo) = outbound.split();
                let up = async {
                    let _ = tokio::io::copy(&mut ri, &mut wo).await;
                };
                let down = async {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = ro.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        replace_all(&mut buf[..n], HINT, NO_HINT);
                        if wi.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                tokio::join!(up, down);
            });
        }
    });
    format!("http://{addr}/{path}")
}

/// The router in front of the legacy-only conformance fixture, with or without its hints.
async fn bridged(hints: bool) -> Env {
    let harness = Harness::new();
    let mut url = harness.fixture(Era::Legacy, Profile::Conformance).await.url;
    if !hints {
        url = hint_stripping_relay(&url, harness.stop_token()).await;
    }
    harness.url_upstream("fx", &url).start().await
}

/// Runs the conformance suite's `input-required-result-multi-round` steps: each round answers
/// the one question asked with the round's own answer.
async fn multi_round(env: &Env) -> (Vec<String>, Value) {
    let tool = "test_input_required_result_multi_round";
    let call = |id: u64, extra: Value| eliciting_call(id, tool, extra);
    let mut keys = Vec::new();
    let (_, r1) = env.call(&call(1, json!({}))).await;
    assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
    let k1 = r1["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    keys.push(k1.clone());
    let answer1 = json!({k1: {"action": "accept", "content": {"name": "Alice"}}});
    let state1 = r1["result"]["requestState"].clone();
    let (_, r2) = env.call(&call(2, json!({"inputResponses": answer1, "requestState": state1}))).await;
    assert_eq!(r2["result"]["resultType"], "input_required", "a second round: {r2}");
    let (k2, q2) = r2["result"]["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert!(q2["params"]["message"].as_str().unwrap().contains("color"), "{r2}");
    assert_ne!(r2["result"]["requestState"], state1, "{r2}");
    keys.push(k2.clone());
    let answer2 = json!({k2.clone(): {"action": "accept", "content": {"color": "blue"}}});
    let state2 = r2["result"]["requestState"].clone();
    let (_, r3) = env.call(&call(3, json!({"inputResponses": answer2, "requestState": state2}))).await;
    (keys, r3)
}

#[tokio::test]
async fn multi_round_input_keys_are_unique_and_answers_reach_their_own_question() {
    for hints in [false, true] {
        let env = bridged(hints).await;
        let (keys, done) = multi_round(&env).await;
        assert_ne!(keys[0], keys[1], "hints {hints}: keys repeat across rounds: {keys:?}");
        if hints {
            assert_eq!(keys, ["step1", "step2"], "the server's own names");
        }
        assert_eq!(done["result"]["resultType"], "complete", "hints {hints}: {done}");
        let text = done["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("Alice's favorite color is blue"), "hints {hints}: {text}");
        assert_eq!(env.endpoint().bridge.parked_count(), 0);
    }
}

/// server-everything over stdio (a 2025-11-25 server on one shared pipe) asks the client
/// during a call; the official Python client, declaring elicitation and sampling, answers
/// through the router in both revisions (relayed to a legacy session, or bridged into an
/// `InputRequiredResult` for a 2026-07-28 client).
#[tokio::test]
async fn a_stdio_servers_questions_during_a_call_reach_the_python_client() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let upstream = format!("everything={} {} stdio", crate::node(), crate::everything_js());
    let mut child = tokio::process::Command::new(crate::switchboard())
        .args(["--config", config.to_str().unwrap(), "--db", dir.path().join("sb.db").to_str().unwrap()])
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream-cmd", &upstream])
        .current_dir(dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_TOKEN")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = crate::listening_url(child.stdout.take().unwrap()).await;
    let python = crate::repo_root().join(".cache/python/bin/python");
    let script = crate::repo_root().join("tests/clients/python_server_requests.py");
    for mode in ["legacy", "auto"] {
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            tokio::process::Command::new(&python)
                .arg(&script)
                .args([url.as_str(), mode])
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("the client finishes in time")
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {:?}: {stderr}", out.status);
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{mode}: {e}: {stderr}"));
        let sampled = v["trigger-sampling-request"].as_str().unwrap();
        assert!(sampled.contains("sampled-by-python"), "{mode}: {v}");
        let elicited = v["trigger-elicitation-request"].as_str().unwrap();
        assert!(elicited.contains("Ada Python"), "{mode}: {v}");
    }
}

/// A 2025-11-25 server that no longer knows the session the router keeps for a caller's
/// capabilities (an idle session expired; here the server restarted on its address): the
/// next call opens a new session instead of failing with "session … is no longer known".
#[tokio::test]
async fn a_forgotten_upstream_session_is_reopened() {
    let harness = Harness::new();
    let mut cfg = FixtureConfig::new(TransportKind::Http);
    cfg.era = Era::Legacy;
    let first = harness.fixture_with(cfg.clone()).await;
    let addr = first.addr;
    let env = harness.url_upstream("fx", &first.url.clone()).start().await;
    let echo = |id: u64, text: &str| tool_call(id, "echo", json!({"text": text}));
    let (_, r) = env.call(&echo(1, "one")).await;
    assert_eq!(r["result"]["structuredContent"]["text"], "one", "{r}");

    // The server restarts on its address: the old one is gone (its port closed) first.
    first.stop().await;
    cfg.listen = addr;
    let _again = RunningFixture::start(cfg, env.stop_token()).await;
    let (_, r) = env.call(&echo(2, "two")).await;
    assert_eq!(r["result"]["structuredContent"]["text"], "two", "{r}");
}

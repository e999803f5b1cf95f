//! State changes: crash loops, restarts, list_changed refreshes, dead upstreams.

use std::time::Duration;

use serde_json::json;
use switchboard_fixtures::config::{Era as FxEra, Profile, TransportKind};
use switchboard_router::config::{RestartToml, ServerToml, spec_from_toml};
use switchboard_router::{Event, RegistryConfig, ServerState};

use crate::common::*;

/// The stderr tail is the operator's (detail, store); the caller-facing reason leaves it out.
#[tokio::test]
async fn a_crash_looping_server_is_unavailable_with_its_stderr_tail_for_the_operator() {
    let h = harness(fast()).await;
    let spec = spec_from_toml(
        "crashy",
        ServerToml {
            command: Some("sh".into()),
            // The secret is computed, so only stderr holds it; the command line holds another one.
            args: vec![
                "-c".into(),
                "echo \"Error: cannot open database /var/lib/x$((6*7)).db\" >&2; exit 2 # --token=s3cr3t"
                    .into(),
            ],
            restart: RestartToml {
                initial_backoff_ms: Some(10),
                max_backoff_ms: Some(100),
                ..Default::default()
            },
            ..Default::default()
        },
        "test",
    )
    .unwrap();
    h.registry.add(spec).await.unwrap();
    let v = h.registry.wait_for("crashy", ServerState::Unavailable, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Unavailable, "{}", v.reason);
    // Give the supervisor time to finish its five attempts, then read the final reason.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let v = h.registry.servers().into_iter().find(|v| v.name == "crashy").unwrap();
    assert!(v.reason.contains("`crashy` exited 5 times in a row"), "{}", v.reason);
    assert!(v.reason.contains("exit status: 2"), "{}", v.reason);
    assert!(!v.reason.contains("x42.db"), "{}", v.reason);
    // Neither the caller's reason nor the operator's detail repeats the command line (it can hold secrets).
    assert!(!v.reason.contains("s3cr3t") && !v.reason.contains("sh -c"), "{}", v.reason);
    let detail = v.detail.clone().expect("an operator detail");
    assert!(
        detail.contains("5 times in a row") && detail.contains("cannot open database /var/lib/x42.db"),
        "{detail}"
    );
    let rec = h.store.server(&v.server_id).await.unwrap().unwrap();
    assert_eq!(rec.state, "unavailable");
    assert_eq!(rec.state_reason.as_deref(), Some(detail.as_str()));
    let failed = h.store.handshakes(Some(&v.server_id), 20).await.unwrap();
    assert!(!failed.is_empty() && failed.iter().all(|r| r.error.is_some()), "{failed:?}");
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_killed_stdio_server_restarts_and_is_handshaken_again() {
    let mut h = harness(fast()).await;
    h.registry.add(cmd_spec("ev", &node(), &[&everything_js(), "stdio"])).await.unwrap();
    let v = h.registry.wait_for("ev", ServerState::Ready, Duration::from_secs(60)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    let pid = v.status.pid.unwrap();
    std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    expect_event(&mut h.events, "degraded", |e| {
        matches!(e, Event::ServerState { server, to, reason, .. } if server == "ev" && to == "degraded" && reason.contains("signal: 9"))
    })
    .await;
    expect_event(&mut h.events, "restart scheduled", |e| {
        matches!(e, Event::Upstream { server, event: switchboard_transport::UpstreamEvent::Restarting { .. }, .. } if server == "ev")
    })
    .await;
    expect_event(
        &mut h.events,
        "ready again",
        |e| matches!(e, Event::ServerState { server, to, .. } if server == "ev" && to == "ready"),
    )
    .await;
    let v = h.registry.servers().into_iter().find(|v| v.name == "ev").unwrap();
    assert_ne!(v.status.pid, Some(pid));
    assert_eq!(v.status.restarts, 1);
    let ok = h
        .store
        .handshakes(Some(&v.server_id), 10)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.error.is_none())
        .count();
    assert_eq!(ok, 2, "one handshake per process");
    h.registry.shutdown(Duration::from_secs(5)).await;
}

/// `add_tool` makes the fixture announce a new tool; the registry relists on the
/// legacy notification and on a 2026-07-28 `subscriptions/listen` stream alike.
#[tokio::test]
async fn list_changed_triggers_a_refresh_in_both_eras() {
    for era in [FxEra::Legacy, FxEra::Modern] {
        let fx = fixture(TransportKind::Http, era, Profile::Basic, 0).await;
        let mut h = harness(fast()).await;
        h.registry.add(url_spec("dyn", &fx.url)).await.unwrap();
        let v = h.registry.wait_for("dyn", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
        assert!(!v.tools.contains(&"late_tool".to_owned()));
        let client = h.registry.entry("dyn").unwrap().client().unwrap();
        client
            .request("tools/call", json!({"name": "add_tool", "arguments": {"name": "late_tool"}}))
            .await
            .unwrap();
        expect_event(&mut h.events, "list_changed refresh", |e| {
            matches!(e, Event::Catalog { server, trigger, .. } if server == "dyn" && trigger == "list_changed")
        })
        .await;
        let v = h.registry.servers().into_iter().find(|v| v.name == "dyn").unwrap();
        assert!(v.tools.contains(&"late_tool".to_owned()), "{era:?}: {:?}", v.tools);
        h.registry.shutdown(Duration::from_secs(5)).await;
    }
}

#[tokio::test]
async fn a_dead_http_upstream_becomes_unavailable_and_recovers() {
    // Reserve a port, then serve on it only later.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let h = harness(RegistryConfig { unavailable_after: 2, ..fast() }).await;
    h.registry.add(url_spec("late", &format!("http://{addr}/mcp"))).await.unwrap();
    let v = h.registry.wait_for("late", ServerState::Unavailable, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Unavailable);
    assert!(v.reason.contains("Connection refused") || v.reason.contains("cannot connect"), "{}", v.reason);
    let mut cfg = switchboard_fixtures::config::FixtureConfig::new(TransportKind::Http);
    cfg.listen = addr;
    let f = switchboard_fixtures::Fixture::bind(cfg).await.unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move { f.serve(s).await });
    let v = h.registry.wait_for("late", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    stop.cancel();
    h.registry.shutdown(Duration::from_secs(5)).await;
}

/// A stdio server that writes a secret to stderr as it dies: the reason callers may see leaves it out, the
/// operator detail (view, event, store) keeps it.
#[tokio::test]
async fn a_dying_servers_stderr_reaches_the_operator_but_not_callers() {
    const SECRET: &str = "api_key=sk-live-0123456789abcdef";
    let mut h = harness(fast()).await;
    // The shell runs the fixture; once the fixture dies, the shell prints the secret and exits 7.
    let script = format!("\"$0\" --transport stdio --era legacy; echo '{SECRET}' >&2; exit 7");
    let spec = spec_from_toml(
        "leaky",
        ServerToml {
            command: Some("sh".into()),
            args: vec!["-c".into(), script, fixture_bin()],
            // A long backoff keeps the server degraded (not restarted) while the test looks.
            restart: RestartToml {
                initial_backoff_ms: Some(600_000),
                max_backoff_ms: Some(600_000),
                ..Default::default()
            },
            ..Default::default()
        },
        "test",
    )
    .unwrap();
    h.registry.add(spec).await.unwrap();
    let v = h.registry.wait_for("leaky", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    let shell = v.status.pid.unwrap().to_string();
    // Kill the shell's child (the fixture), by its parent's pid.
    std::process::Command::new("pkill").args(["-9", "-P", &shell]).status().unwrap();

    let event = expect_event(
        &mut h.events,
        "degraded",
        |e| matches!(e, Event::ServerState { server, to, .. } if server == "leaky" && to == "degraded"),
    )
    .await;
    let Event::ServerState { reason: logged, .. } = event.as_ref() else { unreachable!() };
    assert!(logged.contains(SECRET), "the operator's event keeps the stderr tail: {logged}");

    let v = h.registry.servers().into_iter().find(|v| v.name == "leaky").unwrap();
    assert_eq!(v.state, ServerState::Degraded, "{}", v.reason);
    assert!(v.reason.contains("exit status: 7"), "{}", v.reason);
    assert!(!v.reason.contains("sk-live"), "the caller-facing reason carries stderr: {}", v.reason);
    let (_, reason) = h.registry.entry("leaky").unwrap().state();
    assert!(!reason.contains("sk-live"), "{reason}");
    let detail = v.detail.expect("an operator detail");
    assert!(detail.contains(SECRET), "{detail}");
    // The state is stored just after its event is published; once the registry has stopped, it is written.
    h.registry.shutdown(Duration::from_secs(5)).await;
    let stored = h.store.server(&v.server_id).await.unwrap().unwrap();
    assert!(
        stored.state_reason.unwrap_or_default().contains(SECRET),
        "`switchboard servers` shows the operator detail"
    );
}

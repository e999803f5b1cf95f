//! State changes: crash loops, restarts, list_changed refreshes, dead upstreams.

use std::time::Duration;

use serde_json::json;
use switchboard_fixtures::config::{Era as FxEra, Profile, TransportKind};
use switchboard_router::config::{RestartToml, ServerToml, spec_from_toml};
use switchboard_router::{Event, RegistryConfig, ServerState};

use crate::common::*;

#[tokio::test]
async fn a_crash_looping_server_is_unavailable_with_its_stderr_tail() {
    let h = harness(fast()).await;
    let spec = spec_from_toml(
        "crashy",
        ServerToml {
            command: Some("sh".into()),
            args: vec!["-c".into(), "echo 'Error: cannot open database /var/lib/x.db' >&2; exit 2".into()],
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
    assert!(v.reason.contains("5 times in a row"), "{}", v.reason);
    assert!(v.reason.contains("cannot open database /var/lib/x.db"), "{}", v.reason);
    let rec = h.store.server(&v.server_id).await.unwrap().unwrap();
    assert_eq!(rec.state, "unavailable");
    assert_eq!(rec.state_reason.as_deref(), Some(v.reason.as_str()));
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

//! Handshakes with real peers of both eras over every transport.

use std::time::Duration;

use switchboard_fixtures::config::{Era as FxEra, Profile, TransportKind};
use switchboard_router::{Event, ServerState};
use switchboard_wire::Era;

use crate::common::*;

/// server-everything's tools as the registry sees them. The router declares sampling,
/// elicitation and roots (it relays those requests to its callers), so the tools gated on
/// them are listed too (`get-roots-list`, `trigger-elicitation-request`,
/// `trigger-sampling-request`, `trigger-url-elicitation`).
const EVERYTHING_TOOLS: &[&str] = &[
    "echo",
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-sampling-request",
    "trigger-url-elicitation",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
    "simulate-research-query",
];

async fn assert_handshake_record(h: &Harness, name: &str, era: &str, version: &str, tools: usize) {
    let entry = h.registry.entry(name).unwrap();
    let records = h.store.handshakes(Some(&entry.id), 10).await.unwrap();
    let ok = records
        .iter()
        .find(|r| r.error.is_none())
        .unwrap_or_else(|| panic!("{name}: no successful handshake in {records:?}"));
    assert_eq!(ok.era.as_deref(), Some(era), "{name}");
    assert_eq!(ok.chosen_version.as_deref(), Some(version), "{name}");
    assert_eq!(ok.tool_count, Some(tools as i64), "{name}");
    assert_eq!(ok.leg, "upstream");
    assert!(ok.offered_versions.contains(&"2026-07-28".to_owned()), "{:?}", ok.offered_versions);
    assert!(ok.server_info.get("name").is_some(), "{:?}", ok.server_info);
    assert!(ok.duration_ms > 0.0);
    let snap = h.store.latest_tool_snapshot(&entry.id).await.unwrap().expect("snapshot");
    assert_eq!(snap.tools.as_array().unwrap().len(), tools);
}

#[tokio::test]
async fn server_everything_over_stdio_and_http() {
    let http = everything_http().await;
    let mut h = harness(fast()).await;
    h.registry.add(cmd_spec("ev-stdio", &node(), &[&everything_js(), "stdio"])).await.unwrap();
    h.registry.add(url_spec("ev-http", &http.url)).await.unwrap();
    for name in ["ev-stdio", "ev-http"] {
        let v = h.registry.wait_for(name, ServerState::Ready, Duration::from_secs(60)).await.unwrap();
        assert_eq!(v.state, ServerState::Ready, "{name}: {}", v.reason);
        assert_eq!(v.era, Some(Era::Legacy));
        assert_eq!(v.protocol_version.as_deref(), Some("2025-11-25"));
        let mut tools = v.tools.clone();
        tools.sort();
        let mut want: Vec<String> = EVERYTHING_TOOLS.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(tools, want, "{name}");
        assert!(v.quarantined.is_empty(), "{:?}", v.quarantined);
        assert!(v.resources > 0 && v.prompts > 0, "{v:?}");
        assert_handshake_record(&h, name, "legacy", "2025-11-25", EVERYTHING_TOOLS.len()).await;
    }
    let http_view = h.registry.entry("ev-http").unwrap();
    let rec = h.store.handshakes(Some(&http_view.id), 1).await.unwrap().remove(0);
    assert_eq!(rec.transport, "http");
    assert!(
        h.registry.servers().iter().any(|v| v.status.session_id.is_some()),
        "legacy HTTP holds a session"
    );
    // The stdio child's pid and memory are visible.
    let st = h.registry.servers().into_iter().find(|v| v.name == "ev-stdio").unwrap().status;
    assert!(st.pid.is_some() && st.memory_bytes.unwrap_or(0) > 0, "{st:?}");
    expect_event(
        &mut h.events,
        "handshake event",
        |e| matches!(e, Event::Handshake { server, .. } if server == "ev-stdio"),
    )
    .await;
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn modern_fixture_over_http_lists_every_page() {
    let fx = fixture(TransportKind::Http, FxEra::Modern, Profile::Basic, 23).await;
    let h = harness(fast()).await;
    h.registry.add(url_spec("modern", &fx.url)).await.unwrap();
    let v = h.registry.wait_for("modern", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    assert_eq!(v.era, Some(Era::Modern));
    assert_eq!(v.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(v.tools.contains(&"echo".to_owned()) && v.tools.contains(&"gen_022".to_owned()), "{:?}", v.tools);
    let n = v.tools.len();
    assert!(n >= 25, "23 generated tools plus the basic ones across 3 pages, got {n}");
    assert!(v.status.session_id.is_none(), "2026-07-28 has no sessions");
    assert_handshake_record(&h, "modern", "modern", "2026-07-28", n).await;
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn legacy_only_fixture_falls_back_to_initialize() {
    let fx = fixture(TransportKind::Http, FxEra::Legacy, Profile::Basic, 0).await;
    let h = harness(fast()).await;
    h.registry.add(url_spec("legacy", &fx.url)).await.unwrap();
    let v = h.registry.wait_for("legacy", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    assert_eq!(v.era, Some(Era::Legacy));
    assert_handshake_record(&h, "legacy", "legacy", "2025-11-25", v.tools.len()).await;
    // The era is cached per server.
    let rec = h.store.server(&h.registry.entry("legacy").unwrap().id).await.unwrap().unwrap();
    assert_eq!(rec.era.as_deref(), Some("legacy"));
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn websocket_fixture_in_both_eras() {
    for (era, want) in [(FxEra::Both, Era::Modern), (FxEra::Legacy, Era::Legacy)] {
        let fx = fixture(TransportKind::Ws, era, Profile::Basic, 12).await;
        assert!(fx.url.starts_with("ws://"));
        let h = harness(fast()).await;
        h.registry.add(url_spec("sock", &fx.url)).await.unwrap();
        let v = h.registry.wait_for("sock", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
        assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
        assert_eq!(v.era, Some(want));
        assert_eq!(v.transport, "ws");
        assert!(v.tools.contains(&"gen_011".to_owned()), "{:?}", v.tools);
        let version = if want == Era::Modern { "2026-07-28" } else { "2025-11-25" };
        assert_handshake_record(&h, "sock", want.as_str(), version, v.tools.len()).await;
        h.registry.shutdown(Duration::from_secs(5)).await;
    }
}

#[tokio::test]
async fn modern_fixture_over_stdio() {
    let h = harness(fast()).await;
    h.registry
        .add(cmd_spec("fx-stdio", &fixture_bin(), &["--transport", "stdio", "--era", "modern"]))
        .await
        .unwrap();
    let v = h.registry.wait_for("fx-stdio", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    assert_eq!(v.era, Some(Era::Modern));
    assert_handshake_record(&h, "fx-stdio", "modern", "2026-07-28", v.tools.len()).await;
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_dangling_ref_quarantines_only_that_tool() {
    let fx = fixture(TransportKind::Http, FxEra::Both, Profile::BrokenRef, 0).await;
    let mut h = harness(fast()).await;
    h.registry.add(url_spec("broken", &fx.url)).await.unwrap();
    let v = h.registry.wait_for("broken", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    assert_eq!(v.quarantined.len(), 1, "{:?}", v.quarantined);
    assert_eq!(v.quarantined[0].name, "broken");
    assert!(v.quarantined[0].error.contains("/$defs/missing"), "{}", v.quarantined[0].error);
    assert!(!v.tools.contains(&"broken".to_owned()));
    assert!(v.tools.contains(&"echo".to_owned()) && v.tools.contains(&"add".to_owned()), "{:?}", v.tools);
    assert!(v.reason.contains("1 quarantined"), "{}", v.reason);
    let ev = expect_event(
        &mut h.events,
        "catalog event",
        |e| matches!(e, Event::Catalog { server, .. } if server == "broken"),
    )
    .await;
    let Event::Catalog { quarantined, .. } = ev.as_ref() else { unreachable!() };
    assert_eq!(quarantined[0].name, "broken");
    let snap = h.store.latest_tool_snapshot(&h.registry.entry("broken").unwrap().id).await.unwrap().unwrap();
    assert_eq!(snap.quarantined[0]["name"], "broken");
    h.registry.shutdown(Duration::from_secs(5)).await;
}

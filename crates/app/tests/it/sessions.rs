//! The gateway's table of downstream sessions and callers (`Gateway::sessions`), fed by real
//! clients through `/mcp`: the official Rust SDK's 2025-11-25 client, and 2026-07-28
//! requests; the downstream handshake records they leave on the bus and in the store.

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use switchboard_router::{Event, EventKind, Filter, Subscription};

use crate::harness::*;

/// An rmcp 2025-11-25 client of `env` calling itself `name` 1.0.
async fn sdk_client(env: &Env, name: &str) -> RunningService<rmcp::RoleClient, ClientConfig> {
    let config = ClientConfig::new(ClientCapabilities::default(), Implementation::new(name, "1.0"))
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
    let transport = StreamableHttpClientTransport::from_uri(env.url.clone());
    tokio::time::timeout(PATIENCE, config.serve_with_lifecycle(transport, ClientLifecycleMode::Initialize))
        .await
        .expect("client start in time")
        .expect("initialize through the router")
}

/// The next `Event::Session` with `action`, skipping others.
async fn next_session_event(events: &mut Subscription, action: &str) -> Event {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let ev = events.recv().await.expect("the subscription keeps up");
            if let Event::Session { action: a, .. } = ev.as_ref()
                && a == action
            {
                return ev.as_ref().clone();
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no session {action} event"))
}

/// The sessions table as the panel reads it: `GET /api/sessions` behind the admin token.
/// It must be what the gateway holds.
async fn sessions_of(env: &Env) -> Value {
    let view = env.api_json("/api/sessions").await;
    let direct = serde_json::to_value(env.app().gateway().sessions()).unwrap();
    assert_eq!(view["sessions"].as_array().map(Vec::len), direct["sessions"].as_array().map(Vec::len));
    view
}

fn session_named<'a>(view: &'a Value, client: &str) -> &'a Value {
    view["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["client_info"]["name"] == client)
        .unwrap_or_else(|| panic!("no session of {client}: {view}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sdk_sessions_are_listed_bound_to_an_upstream_session_and_ended() {
    let env = Harness::alpha_beta().start().await;
    let mut events =
        env.events().subscribe_filtered(Filter { kinds: [EventKind::Session].into(), ..Filter::default() });
    let a = sdk_client(&env, "sdk-a").await;
    let b = sdk_client(&env, "sdk-b").await;
    let view = sessions_of(&env).await;
    let (sa, sb) = (session_named(&view, "sdk-a"), session_named(&view, "sdk-b"));
    assert_ne!(sa["tag"], sb["tag"], "{view}");
    for s in [sa, sb] {
        let tag = s["tag"].as_str().unwrap();
        assert!(tag.starts_with("s-") && tag.len() == 14, "a short tag, not the sealed id: {tag}");
        assert_eq!(s["protocol_version"], "2025-11-25");
        assert_eq!(s["transport"], "http");
        assert_eq!(s["ended"], false);
    }
    assert!(
        view["scheduling"].is_null() && view["scheduling_note"].as_str().unwrap().contains("/api/decisions")
    );
    let Event::Session { kind, client, .. } = next_session_event(&mut events, "opened").await else {
        unreachable!()
    };
    assert_eq!((kind.as_str(), client.as_deref()), ("session", Some("sdk-a 1.0")));

    // beta speaks 2025-11-25 only: the router holds an upstream session for the caller's
    // capabilities, and the call binds the downstream session to it.
    let args = json!({"text": "bound"}).as_object().cloned().unwrap();
    a.call_tool(CallToolRequestParams::new("beta__echo").with_arguments(args)).await.expect("tools/call");
    let Event::Session { server, upstream_session, id, .. } = next_session_event(&mut events, "bound").await
    else {
        unreachable!()
    };
    assert_eq!(server.as_deref(), Some("beta"));
    let upstream = upstream_session.expect("beta holds an upstream session");
    assert!(upstream.starts_with("u-"), "{upstream}");
    let view = sessions_of(&env).await;
    let sa = session_named(&view, "sdk-a");
    assert_eq!(sa["tag"], id.as_str());
    let binding = &sa["bindings"][0];
    assert_eq!((&binding["server"], &binding["upstream_session"]), (&json!("beta"), &json!(upstream)));
    assert_eq!(binding["upstream_transport"], "http");
    assert_eq!(binding["calls"], 1);
    assert!(session_named(&view, "sdk-b")["bindings"].as_array().unwrap().is_empty());
    assert!(sa["requests"].as_u64().unwrap() >= 2, "initialize and the call: {sa}");

    // Closing the SDK client DELETEs its session: it stays listed, ended.
    a.cancel().await.expect("close");
    let Event::Session { id: ended, .. } = next_session_event(&mut events, "ended").await else {
        unreachable!()
    };
    assert_eq!(ended, id);
    let view = sessions_of(&env).await;
    let sa = session_named(&view, "sdk-a");
    assert_eq!(sa["ended"], true, "{sa}");
    assert!(sa["ended_ms"].as_i64().is_some());
    assert_eq!(session_named(&view, "sdk-b")["ended"], false);
    b.cancel().await.expect("close");
}

#[tokio::test]
async fn a_2026_caller_is_listed_with_its_binding_and_handshakes_are_recorded_downstream() {
    let mut env = Harness::alpha_beta().start().await;
    let mut handshakes =
        env.events().subscribe_filtered(Filter { kinds: [EventKind::Handshake].into(), ..Filter::default() });
    let (status, discover) = env.call(&request(1, "server/discover", json!({}))).await;
    assert_eq!(status, 200, "{discover}");
    let r = env.call_tool("alpha__echo", json!({"text": "hi"})).await;
    assert_eq!(r["result"]["structuredContent"]["text"], "hi", "{r}");
    let view = sessions_of(&env).await;
    let caller = view["callers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == CLIENT_NAME)
        .unwrap_or_else(|| panic!("the caller is listed: {view}"));
    assert_eq!(caller["version"], CLIENT_VERSION);
    assert_eq!(caller["key"], format!("{CLIENT_NAME}@{CLIENT_VERSION} http 127.0.0.1"));
    assert_eq!(caller["protocol_version"], VERSION);
    assert_eq!(caller["requests"], 2);
    assert_eq!(caller["bindings"][0]["server"], "alpha", "{caller}");
    assert!(view["sessions"].as_array().unwrap().is_empty(), "a 2026 caller has no session: {view}");

    // A legacy initialize: the other downstream handshake.
    let sid = env.legacy_initialize().await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let ev = tokio::time::timeout(PATIENCE, handshakes.recv()).await.expect("handshake events").unwrap();
        if let Event::Handshake { record, .. } = ev.as_ref()
            && record.leg == "downstream"
        {
            seen.push((**record).clone());
        }
    }
    let (modern, legacy) = (&seen[0], &seen[1]);
    assert_eq!(modern.era.as_deref(), Some("modern"));
    assert_eq!(modern.chosen_version.as_deref(), Some(VERSION));
    assert_eq!(modern.client_info["name"], CLIENT_NAME);
    assert_eq!(modern.server_info["name"], "switchboard");
    assert_eq!(legacy.era.as_deref(), Some("legacy"));
    assert_eq!(legacy.chosen_version.as_deref(), Some(LEGACY));
    assert_eq!(legacy.client_capabilities, json!({"roots": {}}));
    assert!(legacy.server_capabilities["tools"].is_object(), "{legacy:?}");
    assert!(seen.iter().all(|h| h.server_id.is_none() && h.transport == "http" && h.error.is_none()));
    assert!(!format!("{seen:?}").contains(&sid), "no session id in a handshake record");

    // Stored too, off the request path, by the trace writer.
    let store = env.stored(3).await;
    let stored = store.handshakes(None, 100).await.unwrap();
    store.close().await;
    let downstream: Vec<_> = stored.iter().filter(|h| h.leg == "downstream").collect();
    assert_eq!(downstream.len(), 2, "{stored:?}");
    assert!(downstream.iter().any(|h| h.era.as_deref() == Some("legacy")));
}

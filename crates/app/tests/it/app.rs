//! [`App`], the one entry point: built from a configuration it serves health, blobs, the
//! server list and `/mcp` (behind the token when one is set), and its shutdown drains the
//! requests in flight before the registry, the trace writer and the store stop.

use std::time::Duration;

use serde_json::json;
use switchboard_router::events::Event;
use switchboard_store::{Store, StoreConfig};

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_app_serves_health_and_the_builtin_tools_and_a_token_guards_every_data_route() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Harness::new().builtin_servers().in_dir(dir.path()).start().await;
    let (http, base) = (env.http.clone(), env.base.clone());
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok");
    let names = env.list_tools().await;
    for tool in ["analyze_thermal_image", "search_manual"] {
        assert!(names.iter().any(|n| n == tool), "{tool} missing from {names:?}");
    }
    // The admin API always wants its token, even when /mcp has none.
    assert_eq!(http.get(format!("{base}/api/servers")).send().await.unwrap().status(), 401);
    let servers = env.api_json("/api/servers").await;
    assert_eq!(servers.as_array().unwrap().len(), 3, "{servers}");
    env.shutdown().await;

    // The same directory again, now with a token.
    let token = "per-launch-token";
    let mut env = Harness::new().builtin_servers().in_dir(dir.path()).token(token).start().await;
    let base = env.base.clone();
    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200, "health stays open");
    let refusals = [
        http.get(format!("{base}/api/servers")).send().await.unwrap().status(),
        http.get(format!("{base}/blobs/{}", "0".repeat(64))).send().await.unwrap().status(),
        http.post(format!("{base}/blobs")).body("x").send().await.unwrap().status(),
    ];
    assert!(refusals.iter().all(|s| *s == 401), "{refusals:?}");
    let (status, answer) = env.call(&request(2, "tools/list", json!({}))).await;
    assert_eq!(status, 401, "{answer}");
    let (status, answer) = env.with_token("wrong").call(&request(3, "tools/list", json!({}))).await;
    assert_eq!(status, 401, "{answer}");
    let with = http.get(format!("{base}/api/servers")).bearer_auth(token).send().await.unwrap();
    assert_eq!(with.status(), 200);
    let (status, answer) = env.with_token(token).call(&request(4, "tools/list", json!({}))).await;
    assert_eq!(status, 200, "{answer}");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_call_in_flight_refuses_new_connections_then_closes_registry_and_store() {
    let mut env =
        Harness::new().stdio_upstream("fx", &[]).options(|o| o.event_capacity = Some(100_000)).start().await;
    let (addr, db) = (env.addr, env.db());
    let store = env.store().clone();
    let mut events = env.events().subscribe();

    let call = tokio::spawn({
        let client = env.client.clone();
        async move { client.call(&tool_call(7, "slow", json!({"ms": 3000, "steps": 3}))).await }
    });
    // The call has reached the upstream once its request frame went out on the stdio leg.
    loop {
        let ev = events.recv().await.unwrap();
        if let Event::Frame { frame } = ev.as_ref()
            && frame.leg == "upstream"
            && &*frame.peer == "fx"
            && frame.method.as_deref() == Some("tools/call")
        {
            break;
        }
    }

    let shutdown = tokio::spawn(env.take_app().shutdown(Duration::from_secs(60)));
    // Until the listener socket is closed a connection may still be taken into the backlog
    // (and then reset, unserved); after that every one is refused. Real sockets, so real
    // time: nothing announces the moment the socket closes.
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
    assert!(!call.is_finished(), "the listener stopped accepting while the call was still in flight");

    let (status, answer) = call.await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "slept 3000 ms in 3 steps", "{answer}");
    shutdown.await.unwrap();

    // Its trace was published after the answer, and stored: the writer flushed before the
    // store closed, which it did last.
    let mut traced = false;
    while let Ok(ev) = events.try_recv() {
        if let Event::Trace { record } = ev.as_ref() {
            traced |= record.name.as_deref() == Some("slow") && record.outcome == "ok";
        }
    }
    assert!(traced, "the drained call's trace was published");
    assert!(store.traces(10).await.is_err(), "the store is closed after shutdown");
    let reopened = Store::open(&StoreConfig { path: db, ..StoreConfig::default() }).await.unwrap();
    let rows = reopened.traces(10).await.unwrap();
    reopened.close().await;
    assert!(
        rows.iter()
            .any(|r| r.method == "tools/call" && r.name.as_deref() == Some("slow") && r.outcome == "ok"),
        "{rows:?}"
    );
}

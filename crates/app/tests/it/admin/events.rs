//! `/api/events`: a snapshot first, both legs of a routed call with one correlation id,
//! server-side filters (query and live), a stalled viewer told what it lost while `/mcp` calls
//! go on, and the frame ring's JSON lines export.

use futures::SinkExt;
use reqwest::Method;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::{events_until, next, viewer};
use crate::harness::*;

fn frame<'a>(e: &'a Value, leg: &str, method: &str) -> Option<&'a Value> {
    (e["type"] == "frame" && e["frame"]["leg"] == leg && e["frame"]["method"] == method).then(|| &e["frame"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_gets_a_snapshot_then_both_legs_of_a_call_with_one_correlation() {
    let env = Harness::new().upstream("alpha", Era::Both, Profile::Basic).start().await;
    let mut ws = viewer(&env, "").await;
    let snap = next(&mut ws).await;
    assert_eq!(snap["type"], "snapshot", "{snap}");
    assert_eq!(snap["servers"][0]["name"], "alpha");
    assert_eq!(snap["servers"][0]["state"], "ready");
    assert!(!snap["handshakes"].as_array().unwrap().is_empty(), "alpha's handshake: {snap}");
    assert!(snap["traces"].is_array() && snap["frames"].is_array() && snap["runs"].is_array());
    assert_eq!(snap["overview"]["servers"]["ready"], 1);

    env.call_tool("echo", json!({"text": "both legs"})).await;
    let seen = events_until(&mut ws, |evs| {
        evs.iter().any(|e| frame(e, "downstream", "tools/call").is_some())
            && evs.iter().any(|e| frame(e, "upstream", "tools/call").is_some())
    })
    .await;
    let down = seen.iter().find_map(|e| frame(e, "downstream", "tools/call")).unwrap();
    let up = seen.iter().find_map(|e| frame(e, "upstream", "tools/call")).unwrap();
    assert!(down["correlation"].is_u64(), "{down}");
    assert_eq!(down["correlation"], up["correlation"], "one call, one correlation id");
    assert_eq!(up["peer"], "alpha");
    assert!(up["body"].as_str().unwrap().contains("both legs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_from_the_query_and_from_a_filter_message_apply_on_the_server() {
    let env = Harness::new().upstream("alpha", Era::Both, Profile::Basic).start().await;
    let mut ws = viewer(&env, "?kinds=trace").await;
    assert_eq!(next(&mut ws).await["type"], "snapshot");
    env.call_tool("echo", json!({"text": "one"})).await;
    let seen = events_until(&mut ws, |evs| evs.iter().any(|e| e["type"] == "trace")).await;
    assert!(seen.iter().all(|e| e["type"] == "trace"), "only traces: {seen:?}");

    let filter = json!({"type": "filter", "kinds": ["frame"], "methods": ["tools/call"]});
    ws.send(WsMessage::Text(filter.to_string().into())).await.unwrap();
    let ack = loop {
        let m = next(&mut ws).await;
        if m["type"] == "filtered" {
            break m;
        }
    };
    assert_eq!(ack["filter"]["kinds"], json!(["frame"]), "{ack}");
    env.call_tool("echo", json!({"text": "two"})).await;
    let seen = events_until(&mut ws, |evs| evs.iter().filter(|e| e["type"] == "frame").count() >= 2).await;
    assert!(
        seen.iter().all(|e| e["type"] == "frame" && e["frame"]["method"] == "tools/call"),
        "only tools/call frames: {seen:?}"
    );
    // A bad command is answered, and the socket stays usable.
    ws.send(WsMessage::Text("{\"type\":\"nonsense\"}".into())).await.unwrap();
    let err = loop {
        let m = next(&mut ws).await;
        if m["type"] == "error" {
            break m;
        }
    };
    assert!(err["error"].as_str().unwrap().contains("not a viewer command"), "{err}");
    // An unknown kind in the query is refused before the upgrade.
    let r = env.api(Method::GET, "/api/events?kinds=nope").send().await.unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_viewer_is_told_how_many_events_it_lost_and_calls_went_on() {
    let env = Harness::new()
        .upstream("alpha", Era::Both, Profile::Basic)
        .options(|o| o.event_capacity = Some(64))
        .start()
        .await;
    let mut ws = viewer(&env, "?kinds=frame").await;
    assert_eq!(next(&mut ws).await["type"], "snapshot");
    // The viewer stops reading. Each call puts four frames of ~200 kB on the bus: far more than
    // the socket's buffers and the viewer's queue hold.
    let text = "x".repeat(200_000);
    const CALLS: usize = 60;
    for i in 0..CALLS {
        let r = env.call_tool("echo", json!({"text": text})).await;
        assert_ne!(r["result"]["isError"], true, "call {i}");
        assert_eq!(r["result"]["content"][0]["text"].as_str().map(str::len), Some(text.len()), "call {i}");
    }
    // Reading again: what was kept, then how much was lost.
    let lagged = loop {
        let m = next(&mut ws).await;
        if m["type"] == "lagged" {
            break m;
        }
        assert_eq!(m["type"], "events", "{}", m["type"]);
    };
    let lost = lagged["lost"].as_u64().unwrap();
    assert!(lost > 0 && lost <= env.events().published(), "{lagged}");
    assert_eq!(lagged["total_lost"], lost);
    // And it keeps receiving.
    env.call_tool("echo", json!({"text": "after"})).await;
    events_until(&mut ws, |evs| {
        evs.iter().any(|e| e["frame"]["body"].as_str().is_some_and(|b| b.contains("after")))
    })
    .await;
    assert!(env.events().lost() >= lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_frame_ring_records_while_watched_and_exports_json_lines() {
    let env = Harness::new().upstream("alpha", Era::Both, Profile::Basic).start().await;
    env.call_tool("echo", json!({"text": "unwatched"})).await;
    assert!(env.app().admin().ring().is_empty(), "nobody watched: nothing recorded");
    let mut ws = viewer(&env, "").await;
    assert_eq!(next(&mut ws).await["type"], "snapshot");
    env.call_tool("echo", json!({"text": "watched"})).await;
    events_until(&mut ws, |evs| evs.iter().any(|e| e["type"] == "trace")).await;

    let export = env.api(Method::GET, "/api/frames/export").send().await.unwrap();
    assert_eq!(export.status(), 200);
    assert_eq!(export.headers()["content-type"], "application/x-ndjson");
    let text = export.text().await.unwrap();
    let frames: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert!(frames.len() >= 4, "{text}");
    assert!(frames.iter().any(|f| f["leg"] == "downstream") && frames.iter().any(|f| f["leg"] == "upstream"));
    assert!(!text.contains("unwatched"));
    let upstream = env.api_json("/api/frames?leg=upstream").await;
    assert!(upstream.as_array().unwrap().iter().all(|f| f["leg"] == "upstream"), "{upstream}");
    let calls = env.api_json("/api/frames?method=tools/call&limit=1").await;
    assert_eq!(calls.as_array().unwrap().len(), 1, "{calls}");
}

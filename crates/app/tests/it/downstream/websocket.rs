//! WebSocket clients on `GET /mcp`: both eras on one listener, concurrent requests, the
//! mirrored parameter headers, cancellation by closing, a legacy session's list changes.

use futures::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::harness::*;

#[tokio::test]
async fn websocket_client_in_both_eras_with_concurrent_requests() {
    let mut env = Harness::alpha_beta().start().await;
    // A plain GET keeps its answer.
    assert_eq!(env.http.get(&env.url).send().await.unwrap().status(), 405);

    // A foreign Origin cannot open a socket (DNS-rebinding protection, as for POST).
    let mut evil = env.ws_url.as_str().into_client_request().unwrap();
    evil.headers_mut().insert("origin", "http://evil.example".parse().unwrap());
    match tokio_tungstenite::connect_async(evil).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 403),
        other => panic!("a foreign Origin must be refused: {:?}", other.map(|_| ())),
    }

    let mut ws = ws_connect(&env.ws_url).await;
    ws_send(&mut ws, &request(1, "server/discover", json!({}))).await;
    let r = ws_until(&mut ws, json!(1)).await;
    assert_eq!(r[0]["result"]["supportedVersions"], json!(["2026-07-28"]), "{r:?}");

    // A slow call with progress does not hold up a quick one sent after it.
    let slow = request(
        2,
        "tools/call",
        json!({"name": "alpha__slow", "arguments": {"ms": 1500, "steps": 3}, "_meta": {"progressToken": "w"}}),
    );
    ws_send(&mut ws, &slow).await;
    ws_send(
        &mut ws,
        &request(3, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": "quick"}})),
    )
    .await;
    let mut frames = Vec::new();
    let mut order = Vec::new();
    while !(order.contains(&2) && order.contains(&3)) {
        let v = ws_next(&mut ws).await;
        if v.get("method").is_none() {
            order.push(v["id"].as_u64().unwrap());
        }
        frames.push(v);
    }
    assert_eq!(order, [3, 2], "{frames:?}");
    assert!(
        frames.iter().any(|f| f["method"] == "notifications/progress" && f["params"]["progressToken"] == "w")
    );
    let quick = frames.iter().find(|f| f["id"] == 3).unwrap();
    assert_eq!(quick["result"]["structuredContent"]["text"], "quick", "{quick}");

    // Malformed frames are answered and the socket keeps serving.
    ws.send(WsMessage::Text("{not json".into())).await.unwrap();
    let r = ws_until(&mut ws, Value::Null).await;
    assert_eq!(r.last().unwrap()["error"]["code"], -32700, "{r:?}");
    ws.send(WsMessage::Text(json!({"jsonrpc": "2.0", "id": 9, "params": {}}).to_string().into()))
        .await
        .unwrap();
    let r = ws_until(&mut ws, json!(9)).await;
    assert_eq!(r.last().unwrap()["error"]["code"], -32600, "{r:?}");

    // The 2025-11-25 lifecycle on a second socket: the session is the connection's.
    let mut legacy = ws_connect(&env.ws_url).await;
    ws_send(&mut legacy, &legacy_initialize(0, "ws-legacy")).await;
    let r = ws_until(&mut legacy, json!(0)).await;
    assert_eq!(r[0]["result"]["protocolVersion"], LEGACY, "{r:?}");
    ws_send(&mut legacy, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    ws_send(&mut legacy, &legacy_request(1, "tools/list", json!({}))).await;
    let r = ws_until(&mut legacy, json!(1)).await;
    let names: Vec<&str> =
        r[0]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"beta__echo"), "{names:?}");
    ws_send(
        &mut legacy,
        &legacy_request(2, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "ws"}})),
    )
    .await;
    let r = ws_until(&mut legacy, json!(2)).await;
    assert_eq!(r.last().unwrap()["result"]["structuredContent"]["text"], "ws", "{r:?}");
    drop(legacy);
    drop(ws);

    // Traced as WebSocket requests, with the client's name.
    let traces = env.traces(6).await;
    let t = traces.iter().find(|t| t.name.as_deref() == Some("beta__echo")).expect("legacy call traced");
    assert_eq!((t.transport.as_str(), t.client_name.as_deref()), ("ws", Some("ws-legacy")), "{t:?}");
    assert!(t.peer.as_deref().is_some_and(|p| p.starts_with("127.0.0.1:")), "{t:?}");
}

#[tokio::test]
async fn websocket_messages_get_the_mirrored_parameter_headers() {
    let env = Harness::new().upstream("conf", Era::Modern, Profile::Conformance).start().await;
    let mut ws = ws_connect(&env.ws_url).await;
    // `test_custom_header` mirrors `value` into Mcp-Param-Value; the endpoint rejects a call
    // without that header (-32020), so a result shows the adapter derived it from the schema.
    let call =
        request(1, "tools/call", json!({"name": "test_custom_header", "arguments": {"value": "héllo"}}));
    ws_send(&mut ws, &call).await;
    let r = ws_until(&mut ws, json!(1)).await;
    let last = r.last().unwrap();
    assert!(last["result"].is_object(), "{r:?}");
    // Over HTTP without the header the same call is refused: the check is real.
    let (status, v) = env.call(&call).await;
    assert_eq!((status, v["error"]["code"].clone()), (400, json!(-32020)), "{v}");
}

#[tokio::test]
async fn closing_a_websocket_cancels_its_calls_upstream() {
    let env = Harness::alpha_beta().start().await;
    let mut frames = env.frames();
    let mut ws = ws_connect(&env.ws_url).await;
    let slow = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "c"}}),
    );
    ws_send(&mut ws, &slow).await;
    let first = ws_next(&mut ws).await;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    ws.close(None).await.unwrap();
    expect_upstream_cancel(&mut frames).await;
}

#[tokio::test]
async fn a_legacy_websocket_session_hears_list_changes() {
    let env = Harness::alpha_beta().start().await;
    let mut ws = ws_connect(&env.ws_url).await;
    ws_send(&mut ws, &legacy_initialize(0, "ws-listener")).await;
    ws_until(&mut ws, json!(0)).await;
    ws_send(&mut ws, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    // The adapter subscribes the session's notification stream in the task that wrote the
    // initialize answer, right after writing it; a ping round trip after that answer (instead
    // of a guessed delay) lets that task run on before the list changes.
    ws_send(&mut ws, &legacy_request(99, "ping", json!({}))).await;
    let pong = ws_until(&mut ws, json!(99)).await;
    assert_eq!(pong.last().unwrap()["result"], json!({}), "{pong:?}");
    ws_send(
        &mut ws,
        &legacy_request(1, "tools/call", json!({"name": "alpha__add_tool", "arguments": {"name": "late"}})),
    )
    .await;
    let found = loop {
        let v = ws_next(&mut ws).await;
        if v["method"] == "notifications/tools/list_changed" {
            break v;
        }
    };
    assert_eq!(found["jsonrpc"], "2.0", "{found}");
}

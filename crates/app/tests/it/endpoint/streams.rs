//! Change notifications on `subscriptions/listen` and 2025-11-25 GET streams (with
//! `Last-Event-ID` replay), and a legacy upstream's question turned into a sealed,
//! single-use `InputRequiredResult` for a 2026-07-28 client.

use serde_json::{Value, json};

use crate::harness::*;

#[tokio::test]
async fn list_changes_reach_listen_streams_and_legacy_get_streams() {
    let env = Harness::alpha_beta().start().await;
    // A 2026-07-28 subscription: acknowledged first, tagged with the listen request's id.
    let mut listen = env
        .post(&request(41, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})))
        .await;
    assert_eq!(listen.status(), 200);
    let mut lbuf = String::new();
    let (_, ack) = next_event(&mut listen, &mut lbuf).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true, "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{ack}");
    // A 2025-11-25 session's GET stream.
    let sid = env.legacy_initialize().await;
    let mut get = env.get_stream(&sid).await;

    let (_, r) = env.call(&tool_call(42, "alpha__add_tool", json!({"name": "fresh"}))).await;
    assert!(r["result"].is_object(), "{r}");

    let (_, note) = next_event(&mut listen, &mut lbuf).await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert_eq!(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{note}");
    let mut gbuf = String::new();
    let (event_id, note) = next_event(&mut get, &mut gbuf).await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let seq: u64 = event_id.expect("SSE id").parse().unwrap();
    // The federated list has the new tool by now (no collision, so not prefixed).
    let (_, r) = env.call(&request(43, "tools/list", json!({}))).await;
    assert!(tool_names(&r).iter().any(|t| t == "fresh"), "{r}");

    // Resuming from before that event replays it; from it, nothing is replayed.
    let mut again = env
        .http
        .get(&env.url)
        .header("Mcp-Session-Id", &sid)
        .header("Last-Event-ID", (seq - 1).to_string())
        .send()
        .await
        .unwrap();
    let mut abuf = String::new();
    let (replayed_id, note) = next_event(&mut again, &mut abuf).await;
    assert_eq!(replayed_id, Some(seq.to_string()));
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
}

#[tokio::test]
async fn a_legacy_upstreams_question_becomes_a_sealed_single_use_input_request() {
    let env = Harness::new().upstream("fx", Era::Legacy, Profile::Conformance).start().await;
    let bridge = &env.endpoint().bridge;

    let tool = "test_input_required_result_request_state";
    let ask = |id: u64, extra: Value| eliciting_call(id, tool, extra);
    let (status, r) = env.call(&ask(1, json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("sbrs1."), "the router sealed it: {state}");
    let requests = r["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests["confirm"]["method"], "elicitation/create", "the upstream's key hint: {r}");
    assert_eq!(bridge.parked_count(), 1);

    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let (_, tampered) =
        env.call(&ask(2, json!({"inputResponses": answer, "requestState": format!("{state}x")}))).await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    assert!(tampered["error"]["message"].as_str().unwrap().contains("integrity"), "{tampered}");
    let mut other = ask(3, json!({"inputResponses": answer, "requestState": state}));
    other["params"]["arguments"] = json!({"extra": 1});
    let (_, mismatch) = env.call(&other).await;
    assert_eq!(mismatch["error"]["code"], -32602, "bound to the original arguments: {mismatch}");

    let (status, done) = env.call(&ask(4, json!({"inputResponses": answer, "requestState": state}))).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("state-ok"), "{done}");
    let (_, reused) = env.call(&ask(5, json!({"inputResponses": answer, "requestState": state}))).await;
    assert_eq!(reused["error"]["code"], -32602, "single use: {reused}");
    assert!(reused["error"]["message"].as_str().unwrap().contains("already used"), "{reused}");
    assert_eq!(bridge.parked_count(), 0);

    // A client without the capability is told which one is missing.
    let mut bare = ask(6, json!({}));
    bare["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let (status, r) = env.call(&bare).await;
    assert_eq!(status, 400, "{r}");
    assert_eq!(r["error"]["code"], -32021, "{r}");
}

//! Each fault on and off, through real MCP clients; the counters prove what ran.

use std::time::{Duration, Instant};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{ServerNotification, SubscriptionFilter},
    service::{NotificationContext, ServiceError},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use switchboard_chaos::FailTools;
use tokio::sync::mpsc;

use crate::common::*;

fn json_rpc_error(error: &ServiceError) -> (i32, String, Option<Value>) {
    match error {
        ServiceError::McpError(data) => (data.code.0, data.message.to_string(), data.data.clone()),
        other => panic!("expected a JSON-RPC error, got {other}"),
    }
}

#[tokio::test]
async fn overload_refuses_calls_with_503_before_executing_them() {
    let replica = replica("r").await;
    let client = client(replica.url(), legacy()).await;
    replica.faults().set_overload(true);

    let error = call(&client, "append", json!({ "key": "k", "item": "x" })).await.expect_err("refused");
    assert!(error.to_string().contains("503") || error.to_string().contains("overloaded"), "{error}");
    // On the wire: 503, Retry-After, a JSON-RPC error echoing the id.
    let response = http().post(replica.url()).json(&raw_call(41, "append")).send().await.expect("post");
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers().get("retry-after").and_then(|value| value.to_str().ok()), Some("1"));
    let body: Value = response.json().await.expect("json body");
    assert_eq!(body["id"], 41);
    assert_eq!(body["error"]["code"], -32000);
    assert!(
        body["error"]["message"].as_str().is_some_and(|message| message.starts_with("overloaded")),
        "{body}"
    );
    assert_eq!(body["error"]["data"], json!({ "overloaded": true, "executed": false, "replica": "r" }));
    // Listing still works: only calls are refused.
    assert_eq!(client.list_all_tools().await.expect("tools/list").len(), 5);

    let counters = replica.counters();
    assert_eq!(counters.executions("append"), 0, "never executed");
    assert_eq!(counters.refused_overload, 2);

    replica.faults().set_overload(false);
    assert_eq!(ok(&client, "append", json!({ "key": "k", "item": "x" })).await["length"], 1);
    assert_eq!(replica.counters().appends("k"), 1);
    client.cancel().await.expect("close");
    replica.shutdown().await;
}

#[tokio::test]
async fn partition_holds_every_request_until_healed() {
    let replica = replica("r").await;
    let session = client(replica.url(), legacy()).await;
    replica.faults().set_partition(true);

    let held_call = tokio::spawn({
        let peer = session.peer().clone();
        async move { peer.call_tool(params("append", json!({ "key": "k", "item": "x" }))).await }
    });
    let url = replica.url().to_owned();
    let held_handshake = tokio::spawn(async move { client(&url, modern()).await });
    let ping = tokio::spawn(
        http().post(replica.url()).json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).send(),
    );
    // Three held requests (a legacy session's standalone GET stream may be held too).
    until(&replica, "three requests held", |state| {
        state["counters"]["held_partition"].as_u64() >= Some(3)
            && state["pending_requests"].as_u64() >= Some(3)
    })
    .await;
    assert!(!held_call.is_finished() && !held_handshake.is_finished() && !ping.is_finished());
    assert_eq!(replica.counters().executions("append"), 0, "held, not executed");
    assert_eq!(status(&replica).await["faults"]["partition"], true, "the control API still answers");

    replica.faults().set_partition(false);
    let result = held_call.await.expect("task").expect("answered after healing");
    assert_eq!(result.structured_content.expect("structured")["length"], 1);
    let modern_client = held_handshake.await.expect("task");
    assert_eq!(ok(&modern_client, "whoami", json!({})).await["replica"], "r");
    assert!(ping.await.expect("task").is_ok());
    assert_eq!(replica.counters().appends("k"), 1);
    modern_client.cancel().await.expect("close");
    session.cancel().await.expect("close");
    replica.shutdown().await;
}

#[tokio::test]
async fn slow_handshake_delays_initialize_and_discover_only() {
    let replica = replica("r").await;
    let fast = client(replica.url(), modern()).await;
    let delay = Duration::from_millis(300);
    replica.faults().set_slow_handshake(delay);
    for lifecycle in [legacy(), modern()] {
        let started = Instant::now();
        let slow = client(replica.url(), lifecycle).await;
        assert!(started.elapsed() >= delay, "the handshake waited for the fault");
        slow.cancel().await.expect("close");
    }
    // Calls are not handshakes (no upper bound asserted: the point is that this answers).
    assert_eq!(ok(&fast, "whoami", json!({})).await["replica"], "r");
    replica.faults().set_slow_handshake(Duration::ZERO);
    assert_eq!(status(&replica).await["faults"]["slow_handshake_ms"], 0);
    fast.cancel().await.expect("close");
    replica.shutdown().await;
}

/// A client handler that reports list changes.
#[derive(Clone)]
struct Observer {
    events: mpsc::UnboundedSender<&'static str>,
}

impl ClientHandler for Observer {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send("tools/list_changed");
    }
}

#[tokio::test]
async fn disable_capability_hides_tools_and_announces_list_changed() {
    let replica = replica("r").await;
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_uri(replica.url().to_owned());
    let session = Observer { events: events_tx }.serve(transport).await.expect("initialize");
    let modern_client = client(replica.url(), modern()).await;
    let mut subscription = modern_client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen");

    let names = |tools: Vec<rmcp::model::Tool>| {
        tools.into_iter().map(|tool| tool.name.to_string()).collect::<Vec<_>>()
    };
    for disabled in [true, false] {
        replica.faults().set_disabled("append", disabled).expect("a known tool");
        let event = tokio::time::timeout(TIMEOUT, events.recv()).await.expect("legacy notification in time");
        assert_eq!(event, Some("tools/list_changed"));
        let notification = tokio::time::timeout(TIMEOUT, subscription.next())
            .await
            .expect("subscriber notification in time");
        assert!(
            matches!(notification, Ok(Some(ServerNotification::ToolListChangedNotification(_)))),
            "{notification:?}"
        );
        let listed = names(session.list_all_tools().await.expect("tools/list"));
        assert_eq!(listed.contains(&"append".to_owned()), !disabled, "{listed:?}");
    }
    replica.faults().set_disabled("append", true).expect("known");
    let error =
        session.call_tool(params("append", json!({ "key": "k", "item": "x" }))).await.expect_err("gone");
    assert!(error.to_string().contains("unknown tool"), "{error}");
    assert_eq!(replica.counters().executions("append"), 0);

    // A whole capability: new handshakes no longer advertise it.
    replica.faults().set_disabled("resources", true).expect("known capability");
    let fresh = client(replica.url(), legacy()).await;
    let capabilities = fresh.peer_info().expect("info").capabilities.clone();
    assert!(capabilities.resources.is_none() && capabilities.tools.is_some(), "{capabilities:?}");
    assert!(fresh.list_all_resources().await.is_err());
    replica.faults().reset();
    let fresh_again = client(replica.url(), legacy()).await;
    assert!(fresh_again.peer_info().expect("info").capabilities.resources.is_some());
    assert_eq!(fresh_again.list_all_resources().await.expect("resources").len(), 1);

    for client in [fresh, fresh_again, modern_client] {
        client.cancel().await.expect("close");
    }
    drop(subscription);
    session.cancel().await.expect("close");
    replica.shutdown().await;
}

#[tokio::test]
async fn fail_tools_fails_chosen_calls_before_they_run_and_slow_tools_delays_them() {
    let replica = replica("r").await;
    let client = client(replica.url(), modern()).await;
    replica.faults().set_fail_tools(Some(FailTools::Every(2))).expect("valid");
    let mut outcomes = Vec::new();
    for n in 0..4 {
        outcomes.push(call(&client, "append", json!({ "key": "k", "item": n.to_string() })).await);
    }
    assert!(outcomes[0].is_ok() && outcomes[2].is_ok());
    for failed in [&outcomes[1], &outcomes[3]] {
        let (code, message, data) = json_rpc_error(failed.as_ref().expect_err("every 2nd fails"));
        assert_eq!(code, -32603);
        assert!(message.contains("injected failure"), "{message}");
        assert_eq!(data, Some(json!({ "injected": "fail_tools", "executed": false, "replica": "r" })));
    }
    let counters = replica.counters();
    assert_eq!((counters.appends("k"), counters.failed_injected), (2, 2), "failed calls never ran");

    replica.faults().set_fail_tools(Some(FailTools::Rate(1.0))).expect("valid");
    assert!(call(&client, "whoami", json!({})).await.is_err());
    replica.faults().set_fail_tools(None).expect("valid");

    let delay = Duration::from_millis(200);
    replica.faults().set_slow_tools(delay);
    let started = Instant::now();
    assert_eq!(ok(&client, "whoami", json!({})).await["replica"], "r");
    assert!(started.elapsed() >= delay, "the call waited for the fault");
    replica.faults().set_slow_tools(Duration::ZERO);
    client.cancel().await.expect("close");
    replica.shutdown().await;
}

#[tokio::test]
async fn crash_closes_the_listener_and_every_connection() {
    let mut replica = replica("r").await;
    let client = client(replica.url(), legacy()).await;
    // An open request: held by a partition, so it is surely in flight when the crash comes.
    replica.faults().set_partition(true);
    let held = tokio::spawn(http().post(replica.url()).json(&raw_call(1, "whoami")).send());
    until(&replica, "the request is held", |state| state["pending_requests"].as_u64() >= Some(1)).await;
    replica.faults().crash();
    tokio::time::timeout(TIMEOUT, replica.closed()).await.expect("closed in time");
    let outcome = tokio::time::timeout(TIMEOUT, held).await.expect("the open request ends in time");
    assert!(outcome.expect("task").is_err(), "the open request's connection closed without an answer");
    let refused = http().get(replica.control_url()).send().await;
    assert!(refused.is_err(), "the listener is closed: {refused:?}");
    assert!(client.list_all_tools().await.is_err(), "the session's server is gone");
    drop(client);
    replica.shutdown().await;
}

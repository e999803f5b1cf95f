//! Questions a legacy stdio server asks during calls (elicitation) reach the call that caused
//! them, even with several calls in flight: each such call gets a connection of its own.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_router::{Error, Registry, RegistryConfig, ServerState};
use switchboard_transport::{Exchange, McpClient};
use switchboard_wire::Message;
use tokio::sync::Barrier;

use crate::common::*;

/// A caller that declares it can answer elicitations.
fn caps() -> Value {
    json!({"elicitation": {}})
}

async fn asking_server(config: RegistryConfig) -> Harness {
    let h = harness(config).await;
    let args = ["--transport", "stdio", "--era", "legacy", "--profile", "conformance"];
    h.registry.add(cmd_spec("ask", &fixture_bin(), &args)).await.unwrap();
    let v = h.registry.wait_for("ask", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    h
}

/// Starts `test_elicitation` asking "who is {who}?" and waits for the server's question.
async fn ask(registry: &Registry, who: &str) -> (Arc<McpClient>, Exchange, Message) {
    let client = registry.client_for_call("ask", &caps()).await.unwrap();
    let params = json!({"name": "test_elicitation", "arguments": {"message": format!("who is {who}?")}});
    let mut exchange = client.start("tools/call", params).await.unwrap();
    let question = loop {
        let m = exchange.next().await.expect("a message before the response").unwrap();
        if m.method() == Some("elicitation/create") {
            break m;
        }
        assert!(!m.is_response(), "the call ended without asking: {m:?}");
    };
    (client, exchange, question)
}

/// One caller's whole call: its question must be its own, and its answer must reach its result.
async fn call(registry: Registry, who: &'static str, together: Arc<Barrier>) -> String {
    let (client, mut exchange, question) = ask(&registry, who).await;
    let asked = question.params().and_then(|p| p.get("message")).and_then(Value::as_str).unwrap_or_default();
    assert_eq!(asked, format!("who is {who}?"), "{who} was asked another caller's question");
    // Both calls are in flight, each waiting for its answer, before either answers.
    together.wait().await;
    let answer =
        json!({"action": "accept", "content": {"username": who, "email": format!("{who}@example.com")}});
    client.upstream().send(Message::response(question.id().unwrap(), answer)).await.unwrap();
    let response = loop {
        let m = exchange.next().await.expect("the response").unwrap();
        if m.is_response() {
            break m;
        }
    };
    response.result().unwrap()["content"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn two_concurrent_calls_whose_server_asks_each_get_their_own_answer() {
    let config = RegistryConfig { call_connection_idle: Duration::from_millis(200), ..fast() };
    let h = asking_server(config).await;
    let together = Arc::new(Barrier::new(2));
    let (alice, bob) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(
            call(h.registry.clone(), "alice", together.clone()),
            call(h.registry.clone(), "bob", together.clone())
        )
    })
    .await
    .expect("both questions reached their callers");
    assert!(alice.contains("\"username\":\"alice\"") && !alice.contains("bob"), "{alice}");
    assert!(bob.contains("\"username\":\"bob\"") && !bob.contains("alice"), "{bob}");
    // The second call got a connection of its own; idle, it is closed.
    tokio::time::timeout(Duration::from_secs(30), async {
        while h.registry.call_connections("ask") > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("an idle connection of its own is closed");
    // The shared connection serves the next call again.
    let next = call(h.registry.clone(), "carol", Arc::new(Barrier::new(1))).await;
    assert!(next.contains("carol"), "{next}");
    assert_eq!(h.registry.call_connections("ask"), 0);
    h.registry.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_call_beyond_the_limit_waits_then_fails_clearly() {
    let config = RegistryConfig {
        max_call_connections: 1,
        call_connection_wait: Duration::from_millis(100),
        ..fast()
    };
    let h = asking_server(config).await;
    // One call on the shared connection, one on the one connection of its own allowed: both wait
    // for their answers, so both are in flight.
    let first = ask(&h.registry, "alice").await;
    let second = ask(&h.registry, "bob").await;
    assert_eq!(h.registry.call_connections("ask"), 1);
    let err = h.registry.client_for_call("ask", &caps()).await.unwrap_err();
    assert!(matches!(err, Error::Busy { limit: 1, .. }), "{err:?}");
    assert!(err.to_string().contains("try again later"), "{err}");
    // Once the server has been seen asking, a caller that cannot answer is isolated too: sharing
    // would leave the asking call's question unattributable.
    let plain = h.registry.client_for_call("ask", &json!({})).await.unwrap_err();
    assert!(matches!(plain, Error::Busy { .. }), "{plain:?}");
    // A finished call frees its connection for the next one.
    drop(second);
    assert!(h.registry.client_for_call("ask", &caps()).await.is_ok());
    drop(first);
    h.registry.shutdown(Duration::from_secs(5)).await;
}

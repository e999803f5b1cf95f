//! Change notifications through the endpoint, against the scripted upstream: one watcher per
//! subscribed resource and one `resources/updated` per change and subscriber, bounded
//! subscription lists, and upstream list changes reaching `subscriptions/listen` streams.

use serde_json::{Value, json};

use crate::harness::*;
use crate::scripted::{Script, WATCHED};

#[tokio::test]
async fn one_watcher_per_resource_and_one_update_per_subscriber() {
    let (script, env) = Script::start().await;
    let mcp = &env.client;
    // Two 2025-11-25 sessions and one 2026-07-28 listen stream subscribe to one URI.
    let a = mcp.legacy_initialize().await;
    let b = mcp.legacy_initialize().await;
    let mut a_get = mcp.get_stream(&a).await;
    let mut b_get = mcp.get_stream(&b).await;
    for sid in [&a, &b] {
        for id in [1, 2] {
            // Subscribing twice is one subscription.
            let (_, r) = mcp
                .legacy_call(Some(sid), &legacy_request(id, "resources/subscribe", json!({"uri": WATCHED})))
                .await;
            assert_eq!(r["result"], json!({}), "{r}");
        }
    }
    let mut listen = mcp
        .post(&request(
            7,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": [WATCHED]}}),
        ))
        .await;
    let mut l_buf = String::new();
    let (_, ack) = next_event(&mut listen, &mut l_buf).await;
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([WATCHED]), "{ack}");
    assert_eq!(script.received("resources/subscribe").len(), 1, "the upstream sees one subscription");
    assert_eq!(env.endpoint().subscriptions.watched(), vec![WATCHED.to_owned()]);

    // One change; then a tool list change, which every stream also gets: between the two,
    // each stream must see exactly one resources/updated.
    script.notify("notifications/resources/updated", json!({"uri": WATCHED}));
    let mut streams = [(&mut a_get, String::new()), (&mut b_get, String::new()), (&mut listen, l_buf)];
    for (stream, buf) in streams.iter_mut() {
        let (_, note) = next_event(stream, buf).await;
        assert_eq!(note["method"], "notifications/resources/updated", "{note}");
        assert_eq!(note["params"]["uri"], WATCHED, "{note}");
    }
    script.set_tools(&["first", "second"]);
    script.notify("notifications/tools/list_changed", json!({}));
    for (stream, buf) in streams.iter_mut() {
        let (_, note) = next_event(stream, buf).await;
        assert_eq!(note["method"], "notifications/tools/list_changed", "one update per change: {note}");
    }
    drop(streams);

    // Everyone leaves: the watcher ends and the upstream is unsubscribed once.
    let (_, r) =
        mcp.legacy_call(Some(&a), &legacy_request(3, "resources/unsubscribe", json!({"uri": WATCHED}))).await;
    assert_eq!(r["result"], json!({}), "{r}");
    let r = mcp.http.delete(&mcp.url).header("Mcp-Session-Id", &b).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert!(script.received("resources/unsubscribe").is_empty(), "the listen stream still watches");
    assert_eq!(env.endpoint().subscriptions.watched(), vec![WATCHED.to_owned()]);
    drop(listen);
    assert_eq!(script.wait_received("resources/unsubscribe", 1).await.len(), 1);
    assert!(env.endpoint().subscriptions.watched().is_empty());
    assert_eq!(script.received("resources/subscribe").len(), 1);
}

#[tokio::test]
async fn resource_subscription_lists_are_bounded() {
    let (_script, env) = Script::start().await;
    let mcp = &env.client;
    let uris: Vec<Value> = (0..=switchboard_app::notify::MAX_RESOURCE_SUBSCRIPTIONS)
        .map(|i| json!(format!("test://r{i}")))
        .collect();
    let (_, r) = mcp
        .call(&request(1, "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": uris}})))
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains(&switchboard_app::notify::MAX_RESOURCE_SUBSCRIPTIONS.to_string()), "{msg}");
}

#[tokio::test]
async fn upstream_list_changes_reach_listen_streams() {
    let (script, env) = Script::start().await;
    let mcp = &env.client;
    let mut listen = mcp
        .post(&request(
            5,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        ))
        .await;
    let mut buf = String::new();
    let (_, ack) = next_event(&mut listen, &mut buf).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    script.set_tools(&["first", "added"]);
    script.notify("notifications/tools/list_changed", json!({}));
    let (_, note) = next_event(&mut listen, &mut buf).await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert_eq!(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 5, "{note}");
    script.set_prompts(&["first_prompt", "added_prompt"]);
    script.notify("notifications/prompts/list_changed", json!({}));
    let (_, note) = next_event(&mut listen, &mut buf).await;
    assert_eq!(note["method"], "notifications/prompts/list_changed", "{note}");
}

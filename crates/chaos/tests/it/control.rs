//! The control API over HTTP: state, merging, validation, reset, the token.

use serde_json::json;
use switchboard_chaos::{Chaos, ChaosConfig};

use crate::common::*;

#[tokio::test]
async fn control_api_reports_merges_validates_and_resets() {
    let replica = replica("r7").await;
    let client = client(replica.url(), legacy()).await;
    ok(&client, "append", json!({ "key": "k", "item": "x" })).await;

    let state = status(&replica).await;
    assert_eq!(state["replica"], "r7");
    assert_eq!(state["server"]["name"], "chaos");
    assert_eq!(state["url"], replica.url());
    assert_eq!(state["registration"]["state"], "off");
    assert_eq!(state["pending_requests"], 0);
    assert_eq!(
        state["faults"],
        json!({
            "overload": false, "disable_capability": [], "bad_encoding": false, "partition": false,
            "slow_handshake_ms": 0, "slow_tools_ms": 0, "fail_tools": null
        })
    );
    assert_eq!(state["counters"]["executions"], json!({ "append": 1 }));
    assert_eq!(state["counters"]["append_by_key"], json!({ "k": 1 }));

    let control = replica.control_url();
    let (code, body) = set_faults(&control, json!({ "overload": true, "fail_tools": { "rate": 0.5 } })).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["faults"]["overload"], true);
    assert_eq!(body["faults"]["fail_tools"], json!({ "rate": 0.5 }));
    let (code, body) =
        set_faults(&control, json!({ "slow_tools_ms": 5, "disable_capability": ["put", "put"] })).await;
    assert_eq!(code, 200);
    assert_eq!(body["faults"]["overload"], true, "a patch merges");
    assert_eq!(body["faults"]["disable_capability"], json!(["put"]));

    let (code, body) = set_faults(&control, json!({ "overlaod": true })).await;
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad-request")), "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|message| message.contains("overlaod")), "{body}");
    let (code, body) = set_faults(&control, json!({ "disable_capability": ["sql"] })).await;
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad-fault")));
    let (code, body) = set_faults(&control, json!({ "fail_tools": { "rate": 2 } })).await;
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad-fault")));
    let (code, _) = set_faults(&control, json!({ "slow_handshake_ms": 60_001 })).await;
    assert_eq!(code, 400);
    assert_eq!(status(&replica).await["faults"]["slow_tools_ms"], 5, "refused patches change nothing");

    let response = http().post(format!("{control}/reset")).send().await.expect("reset");
    assert_eq!(response.status(), 200);
    let state: serde_json::Value = response.json().await.expect("json");
    assert_eq!(state["faults"]["overload"], false);
    assert_eq!(state["faults"]["disable_capability"], json!([]));
    assert_eq!(state["counters"]["executions"], json!({}));
    assert_eq!(ok(&client, "read", json!({ "key": "k" })).await["length"], 0, "the store is empty again");
    client.cancel().await.expect("close");
    replica.shutdown().await;
}

#[tokio::test]
async fn the_control_token_is_required_when_set() {
    let replica = Chaos::bind(ChaosConfig { control_token: Some("s3cret".into()), ..ChaosConfig::default() })
        .await
        .expect("bind");
    let response = http().get(replica.control_url()).send().await.expect("get");
    assert_eq!(response.status(), 401);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "unauthorized");
    let response = http()
        .post(format!("{}/faults", replica.control_url()))
        .bearer_auth("wrong")
        .json(&json!({ "overload": true }))
        .send()
        .await
        .expect("post");
    assert_eq!(response.status(), 401);
    assert!(!replica.faults().current().overload);
    let response = http().get(replica.control_url()).bearer_auth("s3cret").send().await.expect("get");
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.expect("json");
    assert!(body["replica"].as_str().is_some_and(|id| id.starts_with("chaos-")), "a random id: {body}");
    replica.shutdown().await;
}

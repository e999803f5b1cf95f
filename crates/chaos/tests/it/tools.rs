//! Each tool in both revisions, identity across replicas, counters, bad input.

use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn every_tool_answers_with_its_replica_in_both_revisions() {
    let replica = replica("r1").await;
    for (lifecycle, version) in
        [(legacy(), ProtocolVersion::V_2025_11_25), (modern(), ProtocolVersion::V_2026_07_28)]
    {
        let client = client(replica.url(), lifecycle).await;
        assert_eq!(client.peer_info().expect("peer info").protocol_version, version);
        let tools = client.list_all_tools().await.expect("tools/list");
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names, ["read", "put", "append", "work", "whoami"]);
        let hints = |name: &str| {
            let tool = tools.iter().find(|tool| tool.name == name).expect("tool");
            let annotations = tool.annotations.clone().expect("annotations");
            (annotations.read_only_hint, annotations.idempotent_hint, annotations.destructive_hint)
        };
        assert_eq!(hints("read"), (Some(true), Some(true), None));
        assert_eq!(hints("put").1, Some(true));
        assert_eq!(hints("put").0, Some(false));
        assert_eq!(hints("append"), (Some(false), Some(false), Some(false)));
        assert_eq!(hints("work").0, Some(true));
        assert_eq!(hints("whoami").0, Some(true));

        assert_eq!(ok(&client, "whoami", json!({})).await, json!({ "replica": "r1" }));
        let key = format!("k-{version}");
        assert_eq!(
            ok(&client, "put", json!({ "key": key, "value": "v" })).await,
            json!({ "key": key, "value": "v", "replica": "r1" })
        );
        assert_eq!(ok(&client, "append", json!({ "key": key, "item": "a" })).await["length"], 1);
        assert_eq!(ok(&client, "append", json!({ "key": key, "item": "b" })).await["length"], 2);
        assert_eq!(
            ok(&client, "read", json!({ "key": key })).await,
            json!({ "key": key, "value": "v", "length": 2, "replica": "r1" })
        );
        assert_eq!(ok(&client, "work", json!({ "ms": 1 })).await, json!({ "ms": 1, "replica": "r1" }));
        client.cancel().await.expect("close");
    }
    let counters = replica.counters();
    for tool in ["whoami", "put", "read", "work"] {
        assert_eq!(counters.executions(tool), 2, "{tool}");
    }
    assert_eq!(counters.executions("append"), 4);
    assert_eq!(counters.appends("k-2025-11-25"), 2);
    assert_eq!(counters.appends("k-2026-07-28"), 2);
    replica.shutdown().await;
}

#[tokio::test]
async fn replicas_share_server_info_and_tools_but_not_their_id() {
    let (one, two) = (replica("one").await, replica("two").await);
    let (a, b) = (client(one.url(), legacy()).await, client(two.url(), legacy()).await);
    let server = |client: &rmcp::service::RunningService<rmcp::RoleClient, ()>| {
        client.peer_info().and_then(|info| info.server_info.clone()).expect("serverInfo")
    };
    let (info_a, info_b) = (server(&a), server(&b));
    assert_eq!(info_a.name, "chaos");
    assert_eq!(info_a.name, info_b.name);
    assert_eq!(info_a.version, info_b.version);
    let tools = |list: Vec<rmcp::model::Tool>| serde_json::to_value(list).expect("json");
    let (tools_a, tools_b) =
        (tools(a.list_all_tools().await.expect("list")), tools(b.list_all_tools().await.expect("list")));
    assert_eq!(tools_a, tools_b, "identical tool sets with schemas");
    assert!(!tools_a.to_string().contains("one"), "the replica id never appears in the catalogue");
    assert_eq!(ok(&a, "whoami", json!({})).await["replica"], "one");
    assert_eq!(ok(&b, "whoami", json!({})).await["replica"], "two");
    a.cancel().await.expect("close");
    b.cancel().await.expect("close");
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_and_unknown_tools_protocol_errors() {
    let replica = replica("r").await;
    let client = client(replica.url(), modern()).await;
    for (tool, arguments) in [
        ("append", json!({ "key": "k" })),
        ("put", json!({ "key": 7, "value": "v" })),
        ("work", json!({ "ms": 10_001 })),
        ("read", json!({ "key": "k".repeat(300) })),
        ("put", json!({ "key": "k", "value": "v".repeat(70_000) })),
    ] {
        let result = call(&client, tool, arguments).await.expect("a result");
        assert_eq!(result.is_error, Some(true), "{tool}: {result:?}");
        let structured = result.structured_content.expect("structured");
        assert_eq!(structured["replica"], "r");
        assert!(structured["error"].as_str().is_some_and(|error| !error.is_empty()), "{structured}");
    }
    let error = call(&client, "nope", json!({})).await.expect_err("unknown tool");
    assert!(error.to_string().contains("unknown tool"), "{error}");
    assert_eq!(replica.counters().executions("nope"), 0);
    assert_eq!(replica.counters().appends("k"), 1, "the failed append ran (and failed on its arguments)");
    let _: Value = ok(&client, "read", json!({ "key": "k" })).await;
    client.cancel().await.expect("close");
    replica.shutdown().await;
}

//! `search_manual` over MCP: a real rmcp client talks to [`KnowledgeServer`] through an in-memory duplex pipe.

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
};
use serde_json::{Value, json};
use switchboard_servers::knowledge::{
    KnowledgeBase, KnowledgeServer,
    server::{SEARCH_MANUAL, SearchManualOutput},
};

async fn connect() -> RunningService<RoleClient, ()> {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let running = KnowledgeServer::new(kb).serve(server_io).await.expect("server initialises");
        let _ = running.waiting().await;
    });
    ().serve(client_io).await.expect("client initialises")
}

async fn call(client: &RunningService<RoleClient, ()>, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(SEARCH_MANUAL)
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tools/call answered")
}

fn text_of(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn lists_search_manual_with_schemas() {
    let client = connect().await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, SEARCH_MANUAL);
    let input = serde_json::to_value(tool.input_schema.as_ref()).unwrap();
    assert_eq!(input["properties"]["top_k"]["maximum"], 20);
    assert_eq!(input["properties"]["top_k"]["default"], 3);
    assert_eq!(input["required"], json!(["query"]));
    let output = serde_json::to_value(tool.output_schema.as_deref().expect("outputSchema")).unwrap();
    assert_eq!(output["required"], json!(["results"]));
    assert_eq!(tool.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn search_manual_returns_structured_and_text_results() {
    let client = connect().await;
    let result =
        call(&client, json!({ "query": "regulator very hot", "part_number": "AMS117-3.3", "top_k": 2 }))
            .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let output: SearchManualOutput =
        serde_json::from_value(result.structured_content.clone().expect("structuredContent")).unwrap();
    assert_eq!(output.results.len(), 2);
    let first = &output.results[0];
    assert_eq!(first.id, "linreg-ams1117-sot223");
    assert!(!first.steps.is_empty() && !first.safety.is_empty() && !first.source.is_empty());
    assert!((0.0..=1.0).contains(&first.score));
    let text = text_of(&result);
    assert!(text.contains("AMS1117 and SOT-223 LDO overheating"), "{text}");
    assert!(text.contains("Steps:") && text.contains("Safety:"), "{text}");

    // Default top_k is 3.
    let result = call(&client, json!({ "query": "breaker lug hot on one phase" })).await;
    let output: SearchManualOutput = serde_json::from_value(result.structured_content.unwrap()).unwrap();
    assert_eq!(output.results.len(), 3);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_input_is_a_tool_error_not_a_crash() {
    let client = connect().await;
    let result = call(&client, json!({ "query": "  " })).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("empty query"), "{result:?}");

    let result = call(&client, json!({ "query": "hot", "bogus": 1 })).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("invalid arguments"), "{result:?}");

    let result = call(&client, json!({ "query": "\"AND OR NEAR( * : ^" })).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");

    let err = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .expect_err("unknown tool is a protocol error");
    assert!(err.to_string().contains("no_such_tool"), "{err}");
    client.cancel().await.unwrap();
}

//! `/api/servers`: add a stdio command, see it ready, restart it, remove it, import an
//! `mcp.json`; a catalog with its schemas and the quarantined `$ref`-broken tool.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_router::ServerState;

use crate::harness::*;

fn stdio_body(name: &str) -> Value {
    json!({"name": name, "command": fixture_bin(), "args": ["--transport", "stdio"], "labels": ["test"]})
}

/// The id of `name`'s newest upstream handshake.
async fn newest_handshake(env: &Env, name: &str) -> i64 {
    let rows = env.api_json(&format!("/api/handshakes?server={name}&leg=upstream&limit=1")).await;
    rows[0]["id"].as_i64().unwrap_or_else(|| panic!("no handshake of {name}: {rows}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_added_restarted_removed_and_imported() {
    let env = Harness::new().start().await;
    let r = env.api(Method::POST, "/api/servers").json(&stdio_body("fx")).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let view: Value = r.json().await.unwrap();
    assert_eq!((view["name"].as_str(), view["transport"].as_str()), (Some("fx"), Some("stdio")), "{view}");
    env.registry().wait_for("fx", ServerState::Ready, PATIENCE).await.unwrap();
    let list = env.api_json("/api/servers").await;
    let fx = list.as_array().unwrap().iter().find(|s| s["name"] == "fx").unwrap().clone();
    assert_eq!(fx["state"], "ready", "{fx}");
    assert!(fx["tools"].as_array().unwrap().iter().any(|t| t == "echo"), "{fx}");
    assert_eq!(fx["labels"], json!(["test"]));

    // Refusals name what is wrong.
    let again = env.api(Method::POST, "/api/servers").json(&stdio_body("fx")).send().await.unwrap();
    assert_eq!(again.status(), 409);
    let both = json!({"name": "x", "command": "true", "url": "http://127.0.0.1:1/mcp"});
    let r = env.api(Method::POST, "/api/servers").json(&both).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let err: Value = r.json().await.unwrap();
    assert!(err["error"].as_str().unwrap().contains("exactly one"), "{err}");
    let r = env.api(Method::POST, "/api/servers").body("{").send().await.unwrap();
    assert_eq!(r.status(), 400);

    // Restart: a new process and a new handshake.
    let pid = fx["status"]["pid"].as_u64().unwrap();
    let before = newest_handshake(&env, "fx").await;
    let r = env.api(Method::POST, "/api/servers/fx/restart").send().await.unwrap();
    assert_eq!(r.status(), 202);
    env.registry().wait_for("fx", ServerState::Ready, PATIENCE).await.unwrap();
    let view = env.registry().servers().into_iter().find(|s| s.name == "fx").unwrap();
    assert_ne!(view.status.pid, Some(pid as u32), "a new child process");
    assert!(newest_handshake(&env, "fx").await > before, "a new handshake");
    assert_eq!(env.api(Method::POST, "/api/servers/nope/restart").send().await.unwrap().status(), 404);

    // Remove.
    assert_eq!(env.api(Method::DELETE, "/api/servers/fx").send().await.unwrap().status(), 204);
    assert!(env.api_json("/api/servers").await.as_array().unwrap().is_empty());
    assert_eq!(env.api(Method::DELETE, "/api/servers/fx").send().await.unwrap().status(), 404);

    // Import an mcp.json as desktop clients write it: one good entry, one the router cannot use.
    let mcp_json = json!({"mcpServers": {
        "imported": {"command": fixture_bin(), "args": ["--transport", "stdio"]},
        "old-sse": {"url": "http://127.0.0.1:9/sse", "type": "sse"},
    }});
    let r = env.api(Method::POST, "/api/servers/import").body(mcp_json.to_string()).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let result: Value = r.json().await.unwrap();
    assert_eq!(result["added"], json!(["imported"]), "{result}");
    assert_eq!(result["errors"].as_array().unwrap().len(), 1, "{result}");
    env.registry().wait_for("imported", ServerState::Ready, PATIENCE).await.unwrap();
    let r = env.api(Method::POST, "/api/servers/import").body("not json").send().await.unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn a_catalog_has_the_schemas_and_the_quarantined_tool_with_its_error() {
    let env = Harness::new().stdio_upstream("broken", &["--profile", "broken-ref"]).start().await;
    let cat = env.api_json("/api/servers/broken/catalog").await;
    let echo = cat["tools"].as_array().unwrap().iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["inputSchema"]["type"], "object", "{echo}");
    assert!(echo["description"].is_string(), "{echo}");
    let q = cat["quarantined"].as_array().unwrap();
    assert_eq!(q.len(), 1, "{cat}");
    assert_eq!(q[0]["name"], "broken");
    assert!(q[0]["error"].as_str().unwrap().contains("inputSchema"), "{cat}");
    assert!(!cat["tools"].as_array().unwrap().iter().any(|t| t["name"] == "broken"));
    assert!(cat["resources"].is_array() && cat["prompts"].is_array() && cat["templates"].is_array());
    assert_eq!(env.api(Method::GET, "/api/servers/nope/catalog").send().await.unwrap().status(), 404);
    // The registry view says the same.
    let list = env.api_json("/api/servers").await;
    assert_eq!(list[0]["quarantined"][0]["name"], "broken", "{list}");
}

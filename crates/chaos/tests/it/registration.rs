//! The self-registration client against a stub registrar in the test, which records every
//! request so the test can assert the exact sequence and bodies.

use std::net::SocketAddr;
use std::time::Duration;

use axum::{
    Json, Router,
    extract::{Request, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};
use switchboard_chaos::{Chaos, ChaosConfig, ChaosHandle, FaultPatch, RegistrationConfig};
use tokio::sync::mpsc;

use crate::common::*;

/// One request the stub saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    body: Value,
}

#[derive(Clone)]
struct Stub {
    seen: mpsc::UnboundedSender<Seen>,
}

async fn handle(State(stub): State<Stub>, request: Request) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let authorization =
        request.headers().get("authorization").and_then(|value| value.to_str().ok()).map(str::to_owned);
    let bytes = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let _ = stub.seen.send(Seen {
        method: method.clone(),
        path: path.clone(),
        authorization,
        body: body.clone(),
    });
    match (method.as_str(), path.as_str()) {
        ("POST", "/register") => {
            let encodings = body["supported_encodings"].as_array().cloned().unwrap_or_default();
            if !encodings.iter().any(|encoding| encoding == "json" || encoding == "sse") {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({ "error": { "code": "unknown-encoding", "message": "unknown encoding \"protobuf\"; known: json, sse" } })),
                )
                    .into_response();
            }
            Json(json!({
                "mcp_version": "2025-11-25",
                "router_id": "router-test",
                "capabilities": ["tools"],
                "supported_encodings": ["sse", "json"],
                "metadata": {
                    "load_sampling_interval_ms": 20,
                    "status_path": "/status",
                    "confirm_path": "/confirm",
                    "deregister_path": "/register/{server_id}"
                }
            }))
            .into_response()
        }
        ("POST", "/confirm") => {
            Json(json!({ "server_id": body["server_id"], "state": "ready" })).into_response()
        }
        ("POST", "/status") => StatusCode::NO_CONTENT.into_response(),
        ("DELETE", _) => Json(json!({ "server_id": "chaos-1", "drained_calls": 0 })).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Serves the stub on `listener`; the receiver yields every request it saw.
fn serve_stub(listener: tokio::net::TcpListener) -> mpsc::UnboundedReceiver<Seen> {
    let (seen, requests) = mpsc::unbounded_channel();
    let app = Router::new().fallback(handle).with_state(Stub { seen });
    tokio::spawn(async move { axum::serve(listener, app).await });
    requests
}

async fn stub() -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind stub");
    let addr = listener.local_addr().expect("addr");
    (addr, serve_stub(listener))
}

async fn next(requests: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(TIMEOUT, requests.recv()).await.expect("a request in time").expect("stub running")
}

async fn registered(router: SocketAddr, token: Option<&str>, faults: FaultPatch) -> ChaosHandle {
    let mut registration = RegistrationConfig::new(format!("http://{router}"), "chaos-1");
    registration.capabilities = vec!["tools".into(), "kv".into()];
    registration.token = token.map(str::to_owned);
    Chaos::bind(ChaosConfig {
        replica_id: Some("r1".into()),
        registration: Some(registration),
        faults,
        ..ChaosConfig::default()
    })
    .await
    .expect("bind")
}

#[tokio::test]
async fn registers_confirms_reports_load_and_deregisters_on_shutdown() {
    let (router, mut requests) = stub().await;
    let replica = registered(router, Some("t0ken"), FaultPatch::default()).await;

    let register = next(&mut requests).await;
    assert_eq!((register.method.as_str(), register.path.as_str()), ("POST", "/register"));
    assert_eq!(register.authorization.as_deref(), Some("Bearer t0ken"));
    assert_eq!(
        register.body,
        json!({
            "mcp_version": "2025-11-25",
            "server_id": "chaos-1",
            "url": replica.url(),
            "capabilities": ["tools", "kv"],
            "supported_encodings": ["json", "sse"],
            "metadata": { "replica": "r1", "server": "chaos" }
        })
    );
    let confirm = next(&mut requests).await;
    assert_eq!((confirm.method.as_str(), confirm.path.as_str()), ("POST", "/confirm"));
    assert_eq!(confirm.authorization.as_deref(), Some("Bearer t0ken"));
    assert_eq!(
        confirm.body,
        json!({ "server_id": "chaos-1", "confirmed_capabilities": ["tools"], "negotiated_encoding": "sse" }),
        "the verified capabilities and the router's first encoding in common"
    );

    let report = next(&mut requests).await;
    assert_eq!((report.method.as_str(), report.path.as_str()), ("POST", "/status"));
    let mut keys: Vec<&str> = report.body.as_object().expect("object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["avg_response_time_ms", "cpu_usage_percent", "pending_requests", "server_id", "uptime_seconds"]
    );
    assert_eq!(report.body["server_id"], "chaos-1");
    assert!(report.body["cpu_usage_percent"].is_f64() && report.body["pending_requests"].is_u64());
    let state = until(&replica, "ready", |state| state["registration"]["state"] == "ready").await;
    assert_eq!(state["registration"]["router_id"], "router-test");
    assert_eq!(state["registration"]["negotiated_encoding"], "sse");

    // overload forces the reported load high.
    replica.faults().set_overload(true);
    loop {
        let report = next(&mut requests).await;
        assert_eq!(report.path, "/status");
        if report.body["cpu_usage_percent"] == 100.0 {
            assert!(
                report.body["pending_requests"].as_u64().is_some_and(|pending| pending >= 100),
                "{:?}",
                report.body
            );
            break;
        }
    }
    replica.shutdown().await;
    let deregister = loop {
        let seen = next(&mut requests).await;
        if seen.method != "POST" || seen.path != "/status" {
            break seen;
        }
    };
    assert_eq!((deregister.method.as_str(), deregister.path.as_str()), ("DELETE", "/register/chaos-1"));
    assert_eq!(deregister.authorization.as_deref(), Some("Bearer t0ken"));
    assert!(requests.try_recv().is_err(), "nothing after the deregistration");
}

#[tokio::test]
async fn bad_encoding_claims_only_protobuf_and_stops_at_the_refusal() {
    let (router, mut requests) = stub().await;
    let faults = FaultPatch { bad_encoding: Some(true), ..FaultPatch::default() };
    let replica = registered(router, None, faults).await;
    let register = next(&mut requests).await;
    assert_eq!(register.body["supported_encodings"], json!(["protobuf"]));
    assert_eq!(register.authorization, None);
    let state = until(&replica, "failed", |state| state["registration"]["state"] == "failed").await;
    let error = state["registration"]["last_error"].as_str().unwrap_or_default().to_owned();
    assert!(error.contains("400") && error.contains("unknown-encoding"), "{error}");
    replica.shutdown().await;
    assert!(requests.try_recv().is_err(), "no confirm, no status, no delete after a refusal");
}

#[tokio::test]
async fn waits_for_the_router_to_come_up() {
    // Reserve a port, free it, register against it, and only then start the router there.
    let reserved = std::net::TcpListener::bind("127.0.0.1:0").expect("reserve");
    let router = reserved.local_addr().expect("addr");
    drop(reserved);
    let replica = registered(router, None, FaultPatch::default()).await;
    until(&replica, "registering", |state| state["registration"]["state"] == "registering").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let listener = tokio::net::TcpListener::bind(router).await.expect("rebind the reserved port");
    let mut requests = serve_stub(listener);
    assert_eq!(next(&mut requests).await.path, "/register");
    assert_eq!(next(&mut requests).await.path, "/confirm");
    until(&replica, "ready", |state| state["registration"]["state"] == "ready").await;
    replica.shutdown().await;
}

#[tokio::test]
async fn the_binary_registers_with_its_flags_and_deregisters_on_sigterm() {
    let (router, mut requests) = stub().await;
    let router_url = format!("http://{router}");
    let args = [
        "--replica-id",
        "bin-r",
        "--register",
        &router_url,
        "--server-id",
        "chaos-bin",
        "--capabilities",
        "tools,kv",
        "--token-env",
        "CHAOS_TEST_ROUTER_TOKEN",
    ];
    let (mut child, url) = crate::binary::spawn_with(&args, &[("CHAOS_TEST_ROUTER_TOKEN", "from-env")]).await;
    let register = next(&mut requests).await;
    assert_eq!(register.authorization.as_deref(), Some("Bearer from-env"));
    assert_eq!(register.body["server_id"], "chaos-bin");
    assert_eq!(register.body["url"], url.as_str());
    assert_eq!(register.body["capabilities"], json!(["tools", "kv"]));
    assert_eq!(register.body["metadata"]["replica"], "bin-r");
    assert_eq!(next(&mut requests).await.path, "/confirm");
    assert_eq!(next(&mut requests).await.path, "/status");
    crate::binary::terminate(&child).await;
    let deregister = loop {
        let seen = next(&mut requests).await;
        if seen.path != "/status" {
            break seen;
        }
    };
    assert_eq!((deregister.method.as_str(), deregister.path.as_str()), ("DELETE", "/register/chaos-bin"));
    let status = tokio::time::timeout(TIMEOUT, child.wait()).await.expect("exits in time").expect("wait");
    assert_eq!(status.code(), Some(0));
}

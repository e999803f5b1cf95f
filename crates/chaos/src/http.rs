//! The listener's HTTP surface: MCP (Streamable HTTP, both revisions, rmcp's defaults) at
//! [`MCP_PATH`] behind the fault gate, and the control API under `/chaos` (see
//! [`crate::control`]), which no fault touches so a test can always heal what it broke.
//!
//! The gate acts on the wire, before rmcp sees a request:
//! - `partition`: every `/mcp` request (POST, GET, DELETE; pings and handshakes included) is
//!   held unanswered until the partition heals, then handled normally. Streams opened before
//!   the partition (a legacy GET stream, `subscriptions/listen`) are not cut.
//! - `slow_handshake_ms`: `initialize` and `server/discover` wait that long first.
//! - `overload`: a `tools/call` is refused with **HTTP 503**, `Retry-After: 1` and a JSON-RPC
//!   error body (code -32000, message starting "overloaded", `data.executed: false`), echoing
//!   the request id. The tool did not run.

use std::sync::Arc;
use std::time::Duration;

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use http::{HeaderValue, Method, StatusCode, header};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use serde_json::{Value, json};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::control::{self, ControlState};
use crate::replica::Replica;
use crate::server::ChaosServer;

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// Largest POST body the gate buffers.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// JSON-RPC error code of an `overload` refusal.
pub const OVERLOADED_CODE: i64 = -32000;
/// `Retry-After` of an `overload` refusal, in seconds.
pub const RETRY_AFTER_SECS: u64 = 1;
/// Host names the MCP endpoint answers to besides the listen address (DNS-rebinding check).
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

#[derive(Debug, Clone)]
struct Gate {
    replica: Arc<Replica>,
    shutdown: CancellationToken,
}

/// The whole app: `/mcp` behind the gate, `/chaos` beside it.
pub fn app(
    replica: Arc<Replica>,
    control: ControlState,
    listen_host: String,
    tasks: TaskTracker,
    shutdown: &CancellationToken,
) -> Router {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|host| (*host).to_owned()).collect();
    hosts.push(listen_host);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_json_response(true)
        .with_cancellation_token(shutdown.child_token());
    let server = ChaosServer::new(replica.clone(), tasks, shutdown.clone());
    let service: StreamableHttpService<ChaosServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.for_session()), Default::default(), config);
    let gate = Gate { replica, shutdown: shutdown.clone() };
    let mcp =
        Router::new().route_service(MCP_PATH, service).layer(middleware::from_fn_with_state(gate, screen));
    mcp.merge(control::router(control))
}

/// The JSON-RPC methods and the id of the first request in a body (object or batch).
fn methods(message: &Value) -> (Vec<&str>, Option<&Value>) {
    fn one(value: &Value) -> Option<&str> {
        value.get("method").and_then(Value::as_str)
    }
    match message {
        Value::Array(batch) => {
            (batch.iter().filter_map(one).collect(), batch.iter().find_map(|value| value.get("id")))
        }
        other => (one(other).into_iter().collect(), other.get("id")),
    }
}

/// The `overload` refusal for a request with `id`.
pub fn overloaded_response(replica: &str, id: Option<&Value>) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {
            "code": OVERLOADED_CODE,
            "message": "overloaded: the server refused the call before executing it; retry later",
            "data": { "overloaded": true, "executed": false, "replica": replica }
        }
    });
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

fn shutting_down() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response()
}

/// The fault gate for one `/mcp` request.
async fn screen(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let faults = &gate.replica.faults;
    if faults.current().partition {
        gate.replica.counters.held_partition();
        let _pending = gate.replica.load.pending();
        let mut settings = faults.watch();
        tokio::select! {
            healed = settings.wait_for(|settings| !settings.partition) => if healed.is_err() { return shutting_down() },
            () = gate.shutdown.cancelled() => return shutting_down(),
        }
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes: Bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::debug!(%error, "cannot read the request body");
            return (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large").into_response();
        }
    };
    if let Ok(message) = serde_json::from_slice::<Value>(&bytes) {
        let (methods, id) = methods(&message);
        let settings = faults.current();
        let handshake = methods.iter().any(|method| matches!(*method, "initialize" | "server/discover"));
        if handshake && settings.slow_handshake_ms > 0 {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(settings.slow_handshake_ms)) => {}
                () = gate.shutdown.cancelled() => return shutting_down(),
            }
        }
        if methods.contains(&"tools/call") && faults.current().overload {
            gate.replica.counters.refused_overload();
            return overloaded_response(&gate.replica.id, id);
        }
    }
    // Not JSON: rmcp answers with a parse error.
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[test]
    fn methods_of_single_messages_and_batches() {
        let single = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call"});
        assert_eq!(methods(&single), (vec!["tools/call"], Some(&json!(7))));
        let batch =
            json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}, {"id": 1, "method": "ping"}]);
        assert_eq!(methods(&batch), (vec!["notifications/initialized", "ping"], Some(&json!(1))));
    }

    fn test_app(replica: &Arc<Replica>) -> Router {
        let control = ControlState { replica: replica.clone(), token: None, url: String::new() };
        app(replica.clone(), control, "127.0.0.1".into(), TaskTracker::new(), &CancellationToken::new())
    }

    fn post(body: Value) -> Request {
        Request::post(MCP_PATH)
            .header(header::HOST, "127.0.0.1")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(Body::from(body.to_string()))
            .expect("request")
    }

    fn initialize() -> Request {
        post(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "test", "version": "0" }
            }
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn slow_handshake_holds_initialize_for_its_delay() {
        let replica = Replica::new("r".into());
        replica.faults.set_slow_handshake(Duration::from_millis(300));
        let answer = tokio::spawn(test_app(&replica).oneshot(initialize()));
        tokio::time::sleep(Duration::from_millis(299)).await;
        assert!(!answer.is_finished(), "initialize is still waiting");
        let response = answer.await.expect("task").expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test(start_paused = true)]
    async fn partition_holds_requests_for_as_long_as_it_lasts() {
        let replica = Replica::new("r".into());
        replica.faults.set_partition(true);
        let answer = tokio::spawn(test_app(&replica).oneshot(initialize()));
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!answer.is_finished(), "an hour later, still no answer");
        assert_eq!(replica.load.pending_now(), 1, "a held request is pending");
        replica.faults.set_partition(false);
        let response = answer.await.expect("task").expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(replica.counters.snapshot().held_partition, 1);
    }

    #[tokio::test]
    async fn overload_refuses_tools_call_but_not_the_handshake() {
        let replica = Replica::new("r".into());
        replica.faults.set_overload(true);
        let response = test_app(&replica).oneshot(initialize()).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
        let call =
            post(json!({"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "append"}}));
        let response = test_app(&replica).oneshot(call).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers().get(header::RETRY_AFTER), Some(&HeaderValue::from(1u64)));
        let body = axum::body::to_bytes(response.into_body(), MAX_BODY_BYTES).await.expect("body");
        let body: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(
            (body["id"].clone(), body["error"]["code"].clone()),
            (json!("c1"), json!(OVERLOADED_CODE))
        );
        assert_eq!(replica.counters.snapshot().refused_overload, 1);
    }
}

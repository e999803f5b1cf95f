//! The registry under concurrency: two adds of one name, and per-capability sessions whose handshakes must not
//! wait for each other.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchboard_router::{Error, ServerState};
use tokio::sync::{Notify, mpsc};

use crate::common::*;

#[tokio::test]
async fn two_concurrent_adds_of_one_name_exactly_one_succeeds() {
    let h = harness(fast()).await;
    // Disabled, so nothing connects: only the registration itself races (its store write is the await
    // between the name check and the insertion).
    let spec = |arg: &str| {
        let mut s = cmd_spec("twin", "sh", &["-c", arg]);
        s.enabled = false;
        s
    };
    let (a, b) = tokio::join!(h.registry.add(spec("exit 0")), h.registry.add(spec("exit 1")));
    let (ok, err) = match (a, b) {
        (Ok(id), Err(e)) | (Err(e), Ok(id)) => (id, e),
        (a, b) => panic!("exactly one add must succeed: {a:?} / {b:?}"),
    };
    assert!(matches!(err, Error::AlreadyExists { ref name, .. } if name == "twin"), "{err:?}");
    assert!(err.to_string().contains("already exists"), "{err}");
    let twins: Vec<_> = h.registry.servers().into_iter().filter(|v| v.name == "twin").collect();
    assert_eq!(twins.len(), 1, "{twins:?}");
    assert_eq!(twins[0].server_id, ok);
    // A failed add releases nothing it did not claim, and a later add of the name is still refused.
    let again = h.registry.add(spec("exit 2")).await.unwrap_err();
    assert!(matches!(again, Error::AlreadyExists { .. }), "{again:?}");
    h.registry.shutdown(Duration::from_secs(5)).await;
}

/// A minimal 2025-11-25 Streamable HTTP server whose `initialize` blocks while the client declares the
/// `slow` capability, until the test releases it.
#[derive(Clone)]
struct SlowServer {
    release: Arc<Notify>,
    slow_started: mpsc::UnboundedSender<()>,
    initializes: Arc<AtomicUsize>,
}

async fn legacy_post(
    axum::extract::State(s): axum::extract::State<SlowServer>,
    Json(msg): Json<Value>,
) -> Response {
    let Some(id) = msg.get("id").cloned() else { return StatusCode::ACCEPTED.into_response() };
    let method = msg["method"].as_str().unwrap_or_default();
    let result = match method {
        "initialize" => {
            let n = s.initializes.fetch_add(1, Ordering::SeqCst);
            if msg["params"]["capabilities"].get("slow").is_some() {
                let released = s.release.notified();
                let _ = s.slow_started.send(());
                released.await;
            }
            let version = msg["params"]["protocolVersion"].clone();
            let body = json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "slow-handshakes", "version": "1.0.0"}}});
            let mut headers = HeaderMap::new();
            headers.insert("mcp-session-id", format!("session-{n}").parse().unwrap());
            return (headers, Json(body)).into_response();
        }
        "tools/list" => json!({"tools": [{"name": "noop", "inputSchema": {"type": "object"}}]}),
        _ => {
            let error = json!({"code": -32601, "message": format!("method {method} not found")});
            return Json(json!({"jsonrpc": "2.0", "id": id, "error": error})).into_response();
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

#[tokio::test]
async fn a_slow_capability_handshake_does_not_block_other_capabilities() {
    let (slow_tx, mut slow_started) = mpsc::unbounded_channel();
    let server = SlowServer {
        release: Arc::new(Notify::new()),
        slow_started: slow_tx,
        initializes: Arc::new(AtomicUsize::new(0)),
    };
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(legacy_post)
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(|| async { StatusCode::OK }),
        )
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let h = harness(fast()).await;
    h.registry.add(url_spec("legacy", &url)).await.unwrap();
    let v = h.registry.wait_for("legacy", ServerState::Ready, Duration::from_secs(30)).await.unwrap();
    assert_eq!(v.state, ServerState::Ready, "{}", v.reason);
    let shared = h.registry.entry("legacy").unwrap().client().unwrap();
    let before = server.initializes.load(Ordering::SeqCst);

    // Two callers with the same (slow) capabilities: their handshake is held up by the server.
    let slow_caps = json!({"slow": {}});
    let (r1, r2, c1) = (h.registry.clone(), h.registry.clone(), slow_caps.clone());
    let first = tokio::spawn(async move { r1.client_for("legacy", &c1).await });
    slow_started.recv().await.expect("the slow handshake reached the server");
    let c2 = slow_caps.clone();
    let second = tokio::spawn(async move { r2.client_for("legacy", &c2).await });

    // A caller with other capabilities gets its own session meanwhile (the guard only stops a hang).
    let fast_caps = json!({"sampling": {}});
    let fast = tokio::time::timeout(Duration::from_secs(30), h.registry.client_for("legacy", &fast_caps))
        .await
        .expect("client_for of another capability set waited for the slow handshake")
        .unwrap();
    assert!(!Arc::ptr_eq(&fast, &shared), "a session of its own, not the shared connection");
    assert_eq!(fast.handshake().client_capabilities, fast_caps);
    assert!(!first.is_finished(), "the slow handshake is still held up by the server");

    // Released, both slow callers get the one session their shared handshake opened.
    server.release.notify_waiters();
    let a = first.await.unwrap().unwrap();
    let b = second.await.unwrap().unwrap();
    assert!(Arc::ptr_eq(&a, &b), "concurrent callers with one capability set share one handshake");
    assert_eq!(a.handshake().client_capabilities, slow_caps);
    assert_eq!(
        server.initializes.load(Ordering::SeqCst) - before,
        2,
        "one initialize for the slow capability set, one for the other"
    );
    h.registry.shutdown(Duration::from_secs(5)).await;
}

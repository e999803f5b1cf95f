//! The Streamable HTTP client against real sockets.

use std::time::Duration;

use switchboard_transport::http::{HttpConfig, HttpUpstream};
use switchboard_transport::{ConnectOptions, Error, McpClient, Tap, Upstream};
use switchboard_wire::Message;
use tokio_util::sync::CancellationToken;

/// A port that was free a moment ago: connecting to it is refused.
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/mcp")
}

#[tokio::test]
async fn a_dead_url_is_a_connect_error() {
    let url = dead_url();
    let up = HttpUpstream::new(HttpConfig::new(&url), Tap::disabled(), CancellationToken::new()).unwrap();
    let err = up.request(Message::request(1i64, "tools/list", None)).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err}");
    assert!(err.to_string().contains(&url), "{err}");
    let fail = McpClient::connect(
        up,
        ConnectOptions { handshake_timeout: Duration::from_secs(2), ..Default::default() },
    )
    .await
    .unwrap_err();
    assert!(fail.reason.contains("connection to"), "{}", fail.reason);
    assert_eq!(fail.steps.len(), 1, "a dead peer is not retried as another era: {:?}", fail.steps);
}

#[tokio::test]
async fn a_non_mcp_http_server_fails_the_handshake_clearly() {
    use axum::{Router, routing::post};
    let app = Router::new().route("/mcp", post(|| async { (axum::http::StatusCode::BAD_REQUEST, "nope") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(async move { s.cancelled().await }).await.unwrap();
    });
    let up = HttpUpstream::new(
        HttpConfig::new(format!("http://{addr}/mcp")),
        Tap::disabled(),
        CancellationToken::new(),
    )
    .unwrap();
    let fail = McpClient::connect(up, ConnectOptions::default()).await.unwrap_err();
    assert_eq!(fail.steps.len(), 2, "{:?}", fail.steps);
    assert!(fail.steps[0].contains("falling back to initialize"), "{:?}", fail.steps);
    assert!(fail.reason.contains("HTTP 400") && fail.reason.contains("nope"), "{}", fail.reason);
    stop.cancel();
}

/// An SSE event larger than the configured bound fails its request with an error naming the bound, instead of
/// being buffered without end.
#[tokio::test]
async fn an_oversize_sse_event_fails_the_request_clearly() {
    use axum::{Router, routing::post};
    const LIMIT: usize = 64 * 1024;
    // Data lines, never the blank line that would end the event: four times the bound.
    let body: String =
        std::iter::repeat_n("data: 0123456789abcdef0123456789abcdef0123456789abcdef\n", 4 * LIMIT / 50)
            .collect();
    let app = Router::new().route(
        "/mcp",
        post(move || {
            let body = body.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(async move { s.cancelled().await }).await.unwrap();
    });
    let mut config = HttpConfig::new(format!("http://{addr}/mcp"));
    config.max_response_bytes = LIMIT;
    let up = HttpUpstream::new(config, Tap::disabled(), CancellationToken::new()).unwrap();
    let exchange = up.request(Message::request(1i64, "tools/list", None)).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(30), exchange.response())
        .await
        .expect("an answer")
        .unwrap_err();
    assert!(matches!(err, Error::Protocol(_)), "{err:?}");
    assert!(err.to_string().contains(&format!("SSE event longer than {LIMIT} bytes")), "{err}");
    stop.cancel();
}

//! One caller that stops reading must not stall the others sharing its connection.
//!
//! The upstream is an in-process server on a pipe (the same multiplexer as stdio and WebSocket): it answers a
//! `flood` request with far more progress notifications than an exchange buffers, then its response; any other
//! request is answered at once. Time is paused, so a stalled call fails the test at once (the runtime jumps to
//! the timeout) instead of after a real wait.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_transport::pipe::PipeUpstream;
use switchboard_transport::{Error, Tap, Upstream};
use switchboard_wire::Message;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Progress notifications sent for a `flood` request: well over any exchange buffer.
const FLOOD: usize = 500;
/// Calls the other callers make while the slow one is not reading.
const OTHER_CALLS: usize = 20;

/// Serves requests on the pipe; reports every `notifications/cancelled` it receives.
async fn serve(
    input: tokio::io::DuplexStream,
    mut output: tokio::io::DuplexStream,
    cancelled: mpsc::UnboundedSender<Value>,
) {
    let mut lines = BufReader::new(input).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = Message::parse(line.as_bytes()) else { continue };
        if msg.method() == Some("notifications/cancelled") {
            let _ =
                cancelled.send(msg.params().and_then(|p| p.get("requestId")).cloned().unwrap_or(Value::Null));
            continue;
        }
        let Some(id) = msg.id() else { continue };
        let mut out = Vec::new();
        if msg.method() == Some("flood") {
            let token = msg.progress_token().cloned().unwrap_or(Value::Null);
            for i in 0..FLOOD {
                let note = Message::notification(
                    "notifications/progress",
                    Some(json!({"progressToken": token, "progress": i})),
                );
                out.extend_from_slice(&note.to_bytes());
                out.push(b'\n');
            }
        }
        out.extend_from_slice(&Message::response(id, json!({"echo": msg.params().cloned()})).to_bytes());
        out.push(b'\n');
        if output.write_all(&out).await.is_err() {
            return;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_stops_reading_fails_alone_and_others_complete() {
    let (client_side, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, client_in) = tokio::io::duplex(64 * 1024);
    let (cancelled_tx, mut cancelled) = mpsc::unbounded_channel();
    tokio::spawn(serve(server_in, server_out, cancelled_tx));
    let upstream: Arc<dyn Upstream> =
        PipeUpstream::new(client_in, client_side, Tap::disabled(), CancellationToken::new());

    // The slow caller: it sends its request and then does not read a single message.
    let mut slow = upstream
        .request(Message::request(1i64, "flood", Some(json!({"_meta": {"progressToken": "mine"}}))))
        .await
        .unwrap();

    // Everyone else on the connection still gets answers.
    for i in 0..OTHER_CALLS {
        let call = async {
            let exchange = upstream.request(Message::request(1i64, "echo", Some(json!({"n": i})))).await?;
            exchange.response().await
        };
        let response = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("call {i} stalled behind the caller that stopped reading"))
            .unwrap();
        assert_eq!(response.result().unwrap()["echo"]["n"], json!(i), "{response:?}");
    }

    // The slow caller's exchange was failed with a clear error, after a bounded number of messages.
    let mut buffered = 0;
    let failure = loop {
        match slow.next().await.expect("an unfinished exchange yields something") {
            Ok(m) => {
                assert!(
                    !m.is_response(),
                    "the flood's response must not arrive after its exchange overflowed"
                );
                buffered += 1;
                assert!(buffered <= FLOOD, "the slow exchange kept buffering past any bound");
            }
            Err(e) => break e,
        }
    };
    assert!(matches!(failure, Error::SlowConsumer { .. }), "{failure:?}");
    assert!(failure.to_string().contains("fell behind"), "{failure}");
    // ...and cancelled upstream, so the server stops working for nobody.
    let request_id = tokio::time::timeout(Duration::from_secs(60), cancelled.recv())
        .await
        .expect("the server is told the slow request is cancelled")
        .unwrap();
    assert!(request_id.is_u64(), "{request_id}");
    upstream.close().await;
}

//! Stdio connections of the app ([`switchboard_app::App::serve_stdio`], in-process):
//! cancellation and client responses, and the frames a WebSocket and a stdio call put on the
//! event bus.

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn stdio_cancellation_and_client_responses() {
    let mut env = Harness::alpha_beta().start().await;
    let mut frames = env.frames();
    let mut c = env.stdio();
    let slow = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "s"}}),
    );
    c.send(&slow).await;
    let first = c.next().await;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    // 2026-07-28 over stdio cancels with notifications/cancelled: the call stops upstream.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    c.send(&cancel).await;
    expect_upstream_cancel(&mut frames).await;
    // A client's response (to a server→client request) is passed on and answered by nothing;
    // the next line is the answer to the next request, not a late result of the cancelled one.
    let answer = json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}});
    c.send(&answer).await;
    c.send(&request(2, "server/discover", json!({}))).await;
    loop {
        let v = c.next().await;
        if v["method"] == "notifications/progress" {
            continue; // progress already in flight when the cancellation arrived
        }
        assert_eq!(v["id"], 2, "{v}");
        break;
    }
    let traces = env.traces(2).await;
    let cancelled = traces.iter().find(|t| t.name.as_deref() == Some("beta__slow")).unwrap();
    assert_eq!(
        (cancelled.outcome.as_str(), cancelled.transport.as_str()),
        ("cancelled", "stdio"),
        "{cancelled:?}"
    );
}

/// The frames of one downstream request on the event bus, up to its response on the
/// downstream leg, and the upstream `tools/call` it caused.
async fn frames_of_one_call(
    frames: &mut switchboard_router::events::FrameSubscription,
) -> (Vec<switchboard_transport::FrameEvent>, switchboard_transport::FrameEvent) {
    use switchboard_transport::Direction;
    let mut downstream = Vec::new();
    let mut upstream = None;
    tokio::time::timeout(PATIENCE, async {
        loop {
            let f = frames.recv().await.expect("frame");
            match (f.leg, f.direction) {
                ("upstream", Direction::Out) if f.method.as_deref() == Some("tools/call") => {
                    upstream = Some(f)
                }
                ("downstream", direction) => {
                    let done = direction == Direction::Out && f.method.is_none();
                    downstream.push(f);
                    if done && upstream.is_some() {
                        return;
                    }
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the call's frames in time");
    (downstream, upstream.expect("upstream frame"))
}

/// One request frame and one response frame on the downstream leg, tagged with the real
/// transport (and the WebSocket frame numbers), with the correlation id of the upstream leg.
#[tokio::test]
async fn websocket_and_stdio_frames_are_on_the_event_stream_with_their_transport() {
    use switchboard_transport::Direction;
    let env = Harness::alpha_beta().start().await;
    let call = request(1, "tools/call", json!({"name": "alpha__echo", "arguments": {"text": "framed"}}));

    let mut frames = env.frames();
    let mut ws = ws_connect(&env.ws_url).await;
    ws_send(&mut ws, &call).await;
    let r = ws_until(&mut ws, json!(1)).await;
    assert_eq!(r.last().unwrap()["result"]["structuredContent"]["text"], "framed", "{r:?}");
    let (down, up) = frames_of_one_call(&mut frames).await;
    let mine: Vec<_> = down.iter().filter(|f| f.correlation == up.correlation).collect();
    assert_eq!(mine.len(), 2, "one request and one response frame: {down:#?}");
    let (req, resp) = (mine[0], mine[1]);
    assert_eq!((req.direction, req.transport, req.ws_frame), (Direction::In, "ws", Some(1)), "{req:?}");
    assert_eq!(req.method.as_deref(), Some("tools/call"));
    assert_eq!((resp.direction, resp.transport, resp.ws_frame), (Direction::Out, "ws", Some(1)), "{resp:?}");
    assert!(resp.body.contains("framed"), "{}", resp.body);
    assert!(up.correlation.is_some());
    drop(ws);

    let mut frames = env.frames();
    let mut c = env.stdio();
    let answer = c.call(&call).await;
    assert_eq!(answer["result"]["structuredContent"]["text"], "framed", "{answer}");
    let (down, up) = frames_of_one_call(&mut frames).await;
    let mine: Vec<_> = down.iter().filter(|f| f.correlation == up.correlation).collect();
    assert_eq!(mine.len(), 2, "one request and one response frame: {down:#?}");
    assert_eq!((mine[0].direction, mine[0].transport, mine[0].ws_frame), (Direction::In, "stdio", None));
    assert_eq!((mine[1].direction, mine[1].transport, mine[1].ws_frame), (Direction::Out, "stdio", None));
    assert!(up.correlation.is_some());
}

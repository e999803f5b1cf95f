//! Discovery, federated lists and their pages, calls that reach their own upstream (the
//! legacy one included), progress, cancellation by closing the stream, `Mcp-Param-*` headers
//! passed on, and lists re-listed once older than their `ttlMs`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::harness::*;

#[tokio::test]
async fn discover_and_list_federate_both_servers() {
    let env = Harness::alpha_beta().start().await;
    let (status, r) = env.call(&request(1, "server/discover", json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["supportedVersions"], json!([VERSION]));
    assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "switchboard");
    assert!(r["result"]["ttlMs"].is_u64());

    let (status, r) = env.call(&request(2, "tools/list", json!({}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "complete");
    let names = tool_names(&r);
    assert!(names.iter().any(|n| n == "alpha__echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "beta__echo"), "{names:?}");
    assert!(!names.iter().any(|n| n == "echo"), "{names:?}");

    let (_, r) = env.call(&request(3, "tools/list", json!({"cursor": "not a cursor"}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn calls_reach_their_own_upstream_including_the_legacy_one() {
    let env = Harness::alpha_beta().start().await;
    for (id, name) in [(1, "alpha__echo"), (2, "beta__echo")] {
        let (status, r) = env.call(&tool_call(id, name, json!({"text": format!("hi {name}")}))).await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["id"], id, "{r}");
        assert_eq!(r["result"]["structuredContent"]["text"], format!("hi {name}"), "{r}");
    }
    let (_, r) = env.call(&tool_call(3, "nope", json!({}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("nope"), "{r}");
    let (_, r) = env.call(&tool_call(4, "alpha__echo", json!({"text": 5}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("arguments/text"), "{r}");
}

#[tokio::test]
async fn both_legs_of_a_call_are_on_the_event_stream_with_one_correlation_id() {
    let env = Harness::alpha_beta().start().await;
    for (id, name, upstream) in [(11, "alpha__echo", "alpha"), (12, "beta__echo", "beta")] {
        let mut frames = env.frames();
        let (status, _) = env.call(&tool_call(id, name, json!({"text": "x"}))).await;
        assert_eq!(status, 200);
        let mut client = None;
        let mut upstream_out = None;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while client.is_none() || upstream_out.is_none() {
            let f = tokio::time::timeout_at(deadline, frames.recv())
                .await
                .expect("both frames in time")
                .expect("frame");
            if f.method.as_deref() != Some("tools/call") {
                continue;
            }
            match (f.leg, f.direction) {
                ("downstream", switchboard_transport::Direction::In) => client = Some(f),
                ("upstream", switchboard_transport::Direction::Out) => upstream_out = Some(f),
                _ => {}
            }
        }
        let (client, up) = (client.unwrap(), upstream_out.unwrap());
        assert_eq!(up.peer.as_ref(), upstream);
        assert!(client.body.contains(name), "{}", client.body);
        assert!(client.correlation.is_some());
        assert_eq!(
            client.correlation, up.correlation,
            "the upstream frame names the client request it serves"
        );
    }
}

#[tokio::test]
async fn slow_call_streams_progress_then_the_result() {
    let env = Harness::alpha_beta().start().await;
    let body = request(
        7,
        "tools/call",
        json!({"name": "alpha__slow", "arguments": {"ms": 300, "steps": 3}, "_meta": {"progressToken": "tok"}}),
    );
    let r = env.post(&body).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert_eq!(r.headers()["x-accel-buffering"], "no");
    let msgs = sse_messages(&r.text().await.unwrap());
    let progress: Vec<&Value> = msgs.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "{msgs:?}");
    assert_eq!(progress[0]["params"]["progressToken"], "tok", "{msgs:?}");
    let last = msgs.last().unwrap();
    assert_eq!(last["id"], 7, "{msgs:?}");
    assert!(last["result"].is_object(), "{msgs:?}");
}

#[tokio::test]
async fn legacy_upstream_progress_prompts_and_resources() {
    let env = Harness::alpha_beta().start().await;
    let body = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 300, "steps": 3}, "_meta": {"progressToken": 99}}),
    );
    let r = env.post(&body).await;
    assert_eq!(r.status(), 200);
    let msgs = sse_messages(&r.text().await.unwrap());
    assert!(msgs.iter().any(|m| m["params"]["progressToken"] == 99), "{msgs:?}");
    assert_eq!(msgs.last().unwrap()["id"], 1, "{msgs:?}");

    let (status, r) = env
        .call(&request(2, "prompts/get", json!({"name": "beta__greet", "arguments": {"name": "Ada"}})))
        .await;
    assert_eq!(status, 200, "{r}");
    assert!(r["result"]["messages"].to_string().contains("Ada"), "{r}");

    let (_, r) = env.call(&request(3, "resources/list", json!({}))).await;
    assert!(r["result"]["resources"].as_array().unwrap().len() >= 2, "{r}");
    let (status, r) = env.call(&request(4, "resources/read", json!({"uri": "fixture://readme"}))).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["contents"][0]["uri"], "fixture://readme", "{r}");
    let (_, r) = env.call(&request(5, "resources/read", json!({"uri": "fixture://nope"}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn tools_list_pages_with_opaque_cursors() {
    let env = Harness::alpha_beta().endpoint(|e| e.page_size = 3).start().await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 1..100 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, r) = env.call(&request(id, "tools/list", params)).await;
        let page = r["result"]["tools"].as_array().unwrap();
        assert!(page.len() <= 3, "{r}");
        names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match r["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let expected = Harness::alpha_beta().start().await.list_tools().await;
    assert!(expected.len() > 3);
    assert_eq!(names, expected);
}

#[tokio::test]
async fn closing_the_stream_cancels_upstream() {
    let env = Harness::alpha_beta().start().await;
    let mut frames = env.frames();
    let body = request(
        1,
        "tools/call",
        json!({"name": "beta__slow", "arguments": {"ms": 60000, "steps": 600}, "_meta": {"progressToken": "c"}}),
    );
    let mut r = env.post(&body).await;
    assert_eq!(r.status(), 200);
    let chunk = r.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&chunk).contains("notifications/progress"));
    drop(r);
    expect_upstream_cancel(&mut frames).await;
}

/// A loopback TCP relay in front of `target` that records what clients send through it.
async fn recording_relay(
    target: String,
    stop: tokio_util::sync::CancellationToken,
) -> (String, Arc<std::sync::Mutex<Vec<u8>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let authority = target.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let path = target.trim_start_matches("http://").split_once('/').map(|(_, p)| p.to_owned()).unwrap();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut inbound, _) = tokio::select! {
                () = stop.cancelled() => return,
                c = listener.accept() => c.unwrap(),
            };
            let mut outbound = tokio::net::TcpStream::connect(&authority).await.unwrap();
            let log = log.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let (mut ri, mut wi) = inbound.split();
                let (mut ro, mut wo) = outbound.split();
                let up = async {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = ri.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        log.lock().unwrap().extend_from_slice(&buf[..n]);
                        if wo.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let down = async {
                    let _ = tokio::io::copy(&mut ro, &mut wi).await;
                };
                tokio::join!(up, down);
            });
        }
    });
    (format!("http://{addr}/{path}"), seen)
}

#[tokio::test]
async fn unknown_mcp_param_headers_are_forwarded_upstream() {
    let harness = Harness::new();
    let upstream = harness.fixture(Era::Both, Profile::Basic).await;
    let (relayed, seen) = recording_relay(upstream.url.clone(), harness.stop_token()).await;
    let env = harness.url_upstream("fx", &relayed).start().await;

    let body = tool_call(1, "echo", json!({"text": "hi"}));
    let (status, v) = send(env.post_req(&body).header("Mcp-Param-Region", "eu-west")).await;
    assert_eq!(status, 200);
    assert_eq!(v["result"]["structuredContent"]["text"], "hi", "{v}");
    let sent = String::from_utf8_lossy(&seen.lock().unwrap()).to_ascii_lowercase();
    assert!(sent.contains("mcp-param-region: eu-west"), "the upstream request carries it: {sent}");
}

mod stale_lists {
    //! A server whose list says `ttlMs: 0` and changes on every listing, without ever sending
    //! `list_changed`: a list request re-lists it on demand rather than answering the cached list.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;
    use switchboard_router::registry::BuiltinConnector;
    use switchboard_transport::pipe::PipeUpstream;
    use switchboard_transport::{Tap, Upstream};
    use switchboard_wire::Message;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio_util::sync::CancellationToken;

    use crate::harness::*;

    /// A 2025-11-25 server on a pipe whose `tools/list` names a new tool each time (`v1`, `v2`…).
    struct Drifting {
        lists: Arc<AtomicUsize>,
    }

    async fn serve(
        input: tokio::io::DuplexStream,
        mut output: tokio::io::DuplexStream,
        lists: Arc<AtomicUsize>,
    ) {
        let mut lines = BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = Message::parse(line.as_bytes()) else { continue };
            let Some(id) = msg.id() else { continue };
            let reply = match msg.method().unwrap_or_default() {
                "initialize" => Message::response(
                    id,
                    json!({"protocolVersion": msg.params().and_then(|p| p.get("protocolVersion")).cloned(),
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "drifting", "version": "1.0.0"}}),
                ),
                "tools/list" => {
                    let n = lists.fetch_add(1, Ordering::SeqCst) + 1;
                    Message::response(
                        id,
                        json!({"tools": [{"name": format!("v{n}"), "inputSchema": {"type": "object"}}], "ttlMs": 0}),
                    )
                }
                other => Message::error_response(
                    Some(id),
                    switchboard_wire::ErrorObject::new(-32601, format!("method {other} not found")),
                ),
            };
            let mut bytes = reply.to_bytes();
            bytes.push(b'\n');
            if output.write_all(&bytes).await.is_err() {
                return;
            }
        }
    }

    impl BuiltinConnector for Drifting {
        fn connect(
            &self,
            _server: &str,
            tap: Tap,
            cancel: CancellationToken,
        ) -> Result<Arc<dyn Upstream>, String> {
            let (ours, server_in) = tokio::io::duplex(64 * 1024);
            let (server_out, theirs) = tokio::io::duplex(64 * 1024);
            tokio::spawn(serve(server_in, server_out, self.lists.clone()));
            Ok(PipeUpstream::new(theirs, ours, tap, cancel))
        }
    }

    #[tokio::test]
    async fn a_list_older_than_its_ttl_is_relisted_on_demand() {
        let lists = Arc::new(AtomicUsize::new(0));
        let drifting = Arc::new(Drifting { lists: lists.clone() });
        let env = Harness::new().builtin_upstream("drift", drifting).start().await;
        assert_eq!(lists.load(Ordering::SeqCst), 1, "listed once on connect");

        let (status, r) = env.call(&request(1, "tools/list", json!({}))).await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(tool_names(&r), ["v2"], "the cached list (v1) was older than its ttlMs 0: {r}");
        assert_eq!(r["result"]["ttlMs"], 0, "{r}");
        let (_, r) = env.call(&request(2, "tools/list", json!({}))).await;
        assert_eq!(tool_names(&r), ["v3"], "{r}");
        assert_eq!(lists.load(Ordering::SeqCst), 3, "one listing per list request");
    }
}

//! The stdio supervisor with real child processes.

use std::time::Duration;

use serde_json::json;
use switchboard_transport::stdio::{RestartPolicy, StdioConfig, StdioUpstream};
use switchboard_transport::{Error, Tap, Upstream, UpstreamEvent};
use switchboard_wire::Message;
use tokio_util::sync::CancellationToken;

fn sh(script: &str, restart: RestartPolicy) -> StdioConfig {
    let mut c = StdioConfig::new("sh", vec!["-c".into(), script.into()]);
    c.name = "shell".into();
    c.restart = restart;
    c
}

fn fast_policy() -> RestartPolicy {
    RestartPolicy {
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        quick_exit: Duration::from_secs(2),
        crash_loop_limit: 5,
    }
}

async fn next_event(rx: &mut tokio::sync::broadcast::Receiver<UpstreamEvent>) -> UpstreamEvent {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("event in time")
        .expect("event channel open")
}

/// The stderr tail reaches the operator (events, status) but not the reason and errors callers see.
#[tokio::test]
async fn crash_loop_gives_up_with_the_stderr_tail_for_the_operator_only() {
    let up = StdioUpstream::spawn(
        sh(
            "echo 'starting'; echo \"fatal: config file /etc/x.toml missing, token 42\" >&2; exit 3 # --api-key=s3cr3t",
            fast_policy(),
        ),
        Tap::disabled(),
        CancellationToken::new(),
    );
    let mut ev = up.events();
    let mut exits = 0;
    let mut delays = Vec::new();
    let (reason, tail) = loop {
        match next_event(&mut ev).await {
            UpstreamEvent::Exited { stderr_tail, .. } => {
                exits += 1;
                assert!(stderr_tail.contains("config file"), "{stderr_tail}");
            }
            UpstreamEvent::Restarting { delay_ms, .. } => delays.push(delay_ms),
            UpstreamEvent::GaveUp { reason, stderr_tail } => break (reason, stderr_tail),
            _ => {}
        }
    };
    assert_eq!(exits, 5);
    assert_eq!(delays, vec![20, 40, 80, 160], "exponential backoff between quick exits");
    assert!(
        reason.contains("`shell` exited 5 times in a row") && reason.contains("exit status: 3"),
        "{reason}"
    );
    assert!(!reason.contains("token 42"), "the reason carries stderr: {reason}");
    // The command line can hold secrets (here an API key in an argument): the reason names the server.
    assert!(
        !reason.contains("s3cr3t") && !reason.contains("sh -c"),
        "the reason carries the command line: {reason}"
    );
    assert!(tail.contains("fatal: config file /etc/x.toml missing, token 42"), "{tail}");
    let status = up.status();
    assert!(!status.connected);
    assert_eq!(status.last_error.as_deref(), Some(reason.as_str()));
    assert!(status.stderr_tail.iter().any(|l| l.contains("token 42")), "{:?}", status.stderr_tail);
    let err = up.request(Message::request(1i64, "tools/list", None)).await.unwrap_err();
    assert!(matches!(err, Error::NotRunning { ref detail } if detail.contains("5 times in a row")), "{err}");
    assert!(!err.to_string().contains("token 42"), "the error carries stderr: {err}");
}

#[tokio::test]
async fn a_killed_process_is_restarted_with_backoff() {
    let up =
        StdioUpstream::spawn(sh("exec sleep 60", fast_policy()), Tap::disabled(), CancellationToken::new());
    let mut ev = up.events();
    up.wait_started(Duration::from_secs(10)).await.unwrap();
    let first = up.status().pid.expect("pid");
    assert!(up.status().memory_bytes.is_some_and(|m| m > 0));
    std::process::Command::new("kill").args(["-9", &first.to_string()]).status().unwrap();
    let mut saw = Vec::new();
    let second = loop {
        match next_event(&mut ev).await {
            UpstreamEvent::Started { pid, generation: 2 } => break pid.expect("pid"),
            other => saw.push(other),
        }
    };
    assert_ne!(first, second);
    assert!(
        saw.iter().any(|e| matches!(e, UpstreamEvent::Exited { status, .. } if status.contains("signal: 9"))),
        "{saw:?}"
    );
    assert!(saw.iter().any(|e| matches!(e, UpstreamEvent::Restarting { delay_ms: 20, .. })), "{saw:?}");
    assert_eq!(up.status().restarts, 1);
    up.close().await;
    assert!(!up.status().connected);
}

#[tokio::test]
async fn requests_in_flight_fail_with_exit_status_and_stderr() {
    let up = StdioUpstream::spawn(
        sh("read line; echo \"panic: cannot parse $line\" >&2; exit 1", fast_policy()),
        Tap::disabled(),
        CancellationToken::new(),
    );
    up.wait_started(Duration::from_secs(10)).await.unwrap();
    let ex = up.request(Message::request(7i64, "tools/list", Some(json!({})))).await.unwrap();
    let err = ex.response().await.unwrap_err();
    match err {
        Error::Exited { ref status, ref stderr_tail } => {
            assert!(status.contains("exit status: 1"), "{status}");
            assert!(stderr_tail.contains("panic: cannot parse"), "{stderr_tail}");
            assert!(!err.to_string().contains("panic"), "the message carries stderr: {err}");
        }
        other => panic!("expected Exited, got {other}"),
    }
    up.close().await;
}

#[tokio::test]
async fn a_missing_command_is_reported_as_a_spawn_failure() {
    let mut cfg = StdioConfig::new("/nonexistent/mcp-server", vec![]);
    cfg.restart = RestartPolicy { crash_loop_limit: 2, ..fast_policy() };
    let up = StdioUpstream::spawn(cfg, Tap::disabled(), CancellationToken::new());
    let mut ev = up.events();
    let reason = loop {
        if let UpstreamEvent::GaveUp { reason, .. } = next_event(&mut ev).await {
            break reason;
        }
    };
    assert!(reason.contains("could not be started"), "{reason}");
    assert!(!reason.contains("/nonexistent/mcp-server"), "the reason carries the command line: {reason}");
    // The operator still sees which command failed.
    assert!(up.status().stderr_tail.iter().any(|l| l.contains("/nonexistent/mcp-server")));
}

/// A line-echoing peer: responses are routed back to the caller's own id even when
/// two callers use the same id, and progress tokens are restored.
#[tokio::test]
async fn ids_and_progress_tokens_are_multiplexed() {
    // The peer answers each request with a progress notification and a result that
    // echo the wire id and token; sed turns the request line into both messages.
    let script = r#"while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  tok=$(printf '%s' "$line" | sed -n 's/.*"progressToken":"\([^"]*\)".*/\1/p')
  [ -n "$tok" ] && printf '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"%s","progress":1}}\n' "$tok"
  printf '{"jsonrpc":"2.0","id":%s,"result":{"wire":%s}}\n' "$id" "$id"
done"#;
    let up = StdioUpstream::spawn(sh(script, fast_policy()), Tap::disabled(), CancellationToken::new());
    up.wait_started(Duration::from_secs(10)).await.unwrap();
    let a = Message::request(1i64, "tools/call", Some(json!({"name":"x","_meta":{"progressToken":"p"}})));
    let b = Message::request(1i64, "tools/call", Some(json!({"name":"y","_meta":{"progressToken":"p"}})));
    let mut ea = up.request(a).await.unwrap();
    let mut eb = up.request(b).await.unwrap();
    let pa = ea.next().await.unwrap().unwrap();
    assert_eq!(pa.method(), Some("notifications/progress"));
    assert_eq!(pa.params().unwrap()["progressToken"], "p");
    let ra = ea.response().await.unwrap();
    let pb = eb.next().await.unwrap().unwrap();
    assert_eq!(pb.params().unwrap()["progressToken"], "p");
    let rb = eb.response().await.unwrap();
    assert_eq!(ra.id(), Some(1i64.into()));
    assert_eq!(rb.id(), Some(1i64.into()));
    assert_ne!(ra.result().unwrap()["wire"], rb.result().unwrap()["wire"]);
    up.close().await;
}

/// With a viewer attached, every frame is published once per direction with its size,
/// method and id; with none attached nothing is built.
#[tokio::test]
async fn frames_are_tapped_in_both_directions() {
    let bus = switchboard_transport::FrameBus::new(64);
    let script = r#"while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  printf '{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}\n' "$id"
done"#;
    let up = StdioUpstream::spawn(
        sh(script, fast_policy()),
        bus.tap("upstream", "echo", "stdio"),
        CancellationToken::new(),
    );
    up.wait_started(Duration::from_secs(10)).await.unwrap();
    // Nobody listens yet: this exchange is not recorded anywhere.
    up.request(Message::request(1i64, "ping", None)).await.unwrap().response().await.unwrap();
    let mut rx = bus.subscribe();
    up.request(Message::request("q", "tools/list", Some(json!({})))).await.unwrap().response().await.unwrap();
    let out = rx.recv().await.unwrap();
    let inc = rx.recv().await.unwrap();
    assert_eq!(out.direction, switchboard_transport::Direction::Out);
    assert_eq!(out.method.as_deref(), Some("tools/list"));
    assert_eq!(out.size, out.body.len());
    assert_eq!(inc.direction, switchboard_transport::Direction::In);
    assert_eq!(inc.kind, switchboard_wire::Kind::Response);
    assert_eq!(&*inc.peer, "echo");
    assert!(inc.body.contains("\"ok\":true"));
    assert!(inc.at_us >= out.at_us);
    assert!(rx.try_recv().is_err(), "exactly one frame per direction");
    up.close().await;
}

/// An in-process server over a `tokio::io::duplex` pipe behaves like a stdio one.
#[tokio::test]
async fn an_in_process_pipe_carries_requests_both_ways() {
    use switchboard_transport::pipe::PipeUpstream;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, mut server_write) = tokio::io::split(server_side);
    tokio::spawn(async move {
        let mut lines = BufReader::new(server_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let req = Message::parse(line.as_bytes()).unwrap();
            let resp = Message::response(req.id().unwrap(), json!({"echo": req.method()}));
            server_write.write_all(&resp.to_bytes()).await.unwrap();
            server_write.write_all(b"\n").await.unwrap();
        }
    });
    let (r, w) = tokio::io::split(client_side);
    let up = PipeUpstream::new(r, w, Tap::disabled(), CancellationToken::new());
    let resp = up.request(Message::request("x", "tools/list", None)).await.unwrap().response().await.unwrap();
    assert_eq!(resp.id(), Some("x".into()));
    assert_eq!(resp.result().unwrap()["echo"], "tools/list");
    assert_eq!(up.kind().as_str(), "in-process");
    up.close().await;
}

//! Security and resource bounds of the listener: unique session ids, shared session keys,
//! the bearer token on every data route, the exposure warning, bounded answers, a closed
//! stdout, and the listener's timeouts and connection cap.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::*;
use crate::{listening_url, repo_root, switchboard};

/// Fifty official-looking clients initializing at once with identical parameters get fifty
/// different sessions, and ending one leaves the other 49 working.
#[tokio::test]
async fn concurrent_identical_initializes_get_distinct_sessions() {
    let env = Harness::alpha_beta().start().await;
    let init = legacy_initialize(0, "twin");
    let sids: Vec<String> = futures::future::join_all((0..50).map(|_| {
        let (client, init) = (env.client.clone(), init.clone());
        async move {
            let (status, v, sid) = client.legacy_exchange(None, &init).await;
            assert_eq!(status, 200, "{v}");
            sid.expect("a session id")
        }
    }))
    .await;
    let distinct: std::collections::HashSet<&String> = sids.iter().collect();
    assert_eq!(distinct.len(), 50, "identical initializes must not share a session id");

    let r = env.http.delete(&env.url).header("Mcp-Session-Id", &sids[0]).send().await.unwrap();
    assert_eq!(r.status(), 204);
    let (status, v) = env.legacy_call(Some(&sids[0]), &legacy_request(1, "ping", json!({}))).await;
    assert_eq!(status, 404, "the ended session is gone: {v}");
    for sid in &sids[1..] {
        let (status, v) = env.legacy_call(Some(sid), &legacy_request(1, "ping", json!({}))).await;
        assert_eq!(status, 200, "the others still work: {v}");
        assert_eq!(v["result"], json!({}), "{v}");
    }
    let call =
        legacy_request(2, "tools/call", json!({"name": "beta__echo", "arguments": {"text": "still here"}}));
    let (status, v) = env.legacy_call(Some(&sids[49]), &call).await;
    assert_eq!((status, &v["result"]["structuredContent"]["text"]), (200, &json!("still here")), "{v}");
}

/// A `switchboard serve` on an empty config, listening on `listen`, with `envs` set; killed on drop.
async fn serve_process(
    dir: &std::path::Path,
    name: &str,
    config: &str,
    listen: &str,
    envs: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, config).unwrap();
    let mut cmd = tokio::process::Command::new(switchboard());
    cmd.current_dir(dir)
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_TOKEN")
        .env_remove("SWITCHBOARD_SESSION_KEY")
        .env("RUST_LOG", "warn")
        .arg("--config")
        .arg(&cfg)
        .arg("--db")
        .arg(dir.join(format!("{name}.db")))
        .args(["serve", "--listen", listen])
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let url = listening_url(child.stdout.take().unwrap()).await;
    (child, url)
}

/// Instances started with the same configured key (environment or key file) accept each
/// other's session ids; an instance with another key does not; a short key is refused at
/// start-up with a message naming its source and the required length.
#[tokio::test]
async fn instances_with_the_same_configured_key_share_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let key = "0123456789abcdef0123456789abcdef-shared";
    std::fs::write(dir.path().join("shared.key"), format!("{key}\n")).unwrap();
    std::fs::write(dir.path().join("other.key"), "another-key-that-is-long-enough-to-use").unwrap();
    let (_a, a) =
        serve_process(dir.path(), "a", "", "127.0.0.1:0", &[("SWITCHBOARD_SESSION_KEY", key)]).await;
    let (_b, b) =
        serve_process(dir.path(), "b", "[endpoint]\nsession_key_file = \"shared.key\"\n", "127.0.0.1:0", &[])
            .await;
    let (_c, c) =
        serve_process(dir.path(), "c", "[endpoint]\nsession_key_file = \"other.key\"\n", "127.0.0.1:0", &[])
            .await;
    let (a, b, c) = (Client::new(a), Client::new(b), Client::new(c));
    let (status, v, sid) = a.legacy_exchange(None, &legacy_initialize(0, "roamer")).await;
    assert_eq!(status, 200, "{v}");
    let sid = sid.unwrap();
    let ping = legacy_request(1, "ping", json!({}));
    let (status, v) = b.legacy_call(Some(&sid), &ping).await;
    assert_eq!(status, 200, "same key (from the file) serves the session: {v}");
    let (status, v) = c.legacy_call(Some(&sid), &ping).await;
    assert_eq!(status, 404, "another key does not: {v}");

    let out = tokio::process::Command::new(switchboard())
        .current_dir(dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .env("SWITCHBOARD_SESSION_KEY", "too-short")
        .arg("--config")
        .arg(dir.path().join("a.toml"))
        .arg("--db")
        .arg(dir.path().join("short.db"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await.unwrap().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("SWITCHBOARD_SESSION_KEY") && err.contains("9 bytes") && err.contains("32"),
        "{err}"
    );
}

/// With a token, blobs (upload and download) and the server list need it like `/mcp`;
/// health does not.
#[tokio::test]
async fn bearer_token_guards_blobs_and_the_server_list() {
    let env = Harness::alpha_beta().token("t0ken").start().await;
    let base = env.base.clone();
    let put = || env.http.post(format!("{base}/blobs")).body(b"thermal bytes".to_vec());
    let r = put().send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
    let v: Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("Bearer"), "{v}");
    let r = put().bearer_auth("wrong").send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = put().bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    let blob = format!("{base}{}", v["url"].as_str().unwrap());

    assert_eq!(env.http.get(&blob).send().await.unwrap().status(), 401);
    let r = env.http.get(&blob).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"thermal bytes");

    let servers = format!("{base}/api/servers");
    assert_eq!(env.http.get(&servers).send().await.unwrap().status(), 401);
    let r = env.http.get(&servers).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let list: Value = r.json().await.unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");

    assert_eq!(env.http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
    // Unknown paths are the panel's client routes: its page, which carries no data.
    let page = env.http.get(format!("{base}/nothing")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
}

/// Drains a child's stderr (bounded) after it was killed.
async fn stderr_of(mut child: tokio::process::Child) -> String {
    child.kill().await.unwrap();
    let mut err = String::new();
    let mut pipe = child.stderr.take().unwrap();
    tokio::time::timeout(Duration::from_secs(10), pipe.read_to_string(&mut err)).await.unwrap().unwrap();
    err
}

/// `--listen` on an address other machines can reach, without a token, says so on stderr;
/// with a token, or on loopback, it does not.
#[tokio::test]
async fn listening_beyond_loopback_without_a_token_warns() {
    let dir = tempfile::tempdir().unwrap();
    let (open, _) = serve_process(dir.path(), "open", "", "0.0.0.0:0", &[]).await;
    let err = stderr_of(open).await;
    assert!(err.contains("without a bearer token") && err.contains("0.0.0.0"), "{err}");
    let (guarded, _) =
        serve_process(dir.path(), "guarded", "", "0.0.0.0:0", &[("SWITCHBOARD_TOKEN", "t")]).await;
    let err = stderr_of(guarded).await;
    assert!(!err.contains("without a bearer token"), "{err}");
    let (local, _) = serve_process(dir.path(), "local", "", "127.0.0.1:0", &[]).await;
    let err = stderr_of(local).await;
    assert!(!err.contains("without a bearer token"), "{err}");
}

/// An answer larger than the edge's limit is replaced by an error naming the limit.
#[tokio::test]
async fn an_answer_over_the_edge_limit_is_a_clear_error() {
    let env = Harness::alpha_beta().endpoint(|e| e.answer_limit = 4096).start().await;
    let small = tool_call(1, "alpha__echo", json!({"text": "hi"}));
    let (status, v) = env.call(&small).await;
    assert_eq!((status, &v["result"]["structuredContent"]["text"]), (200, &json!("hi")), "{v}");
    let big = tool_call(2, "alpha__echo", json!({"text": "x".repeat(8192)}));
    let (status, v) = env.call(&big).await;
    assert_eq!(status, 200);
    assert_eq!(v["id"], 2, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("limit of 4096 bytes"), "{v}");
}

/// `switchboard diagnose IMG --json | head -c 100`: a reader that goes away ends the command
/// quietly, without a panic.
#[test]
fn a_closed_stdout_ends_diagnose_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let image = repo_root().join("../shared/data/thermal/wm01_200_deg_neutral.jpg");
    let mut child = std::process::Command::new(switchboard())
        .current_dir(dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .arg("--db")
        .arg(dir.path().join("sb.db"))
        .args(["diagnose", "--json"])
        .arg(&image)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Like `head -c 100` that has already exited: nobody will read.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

mod listener {
    //! The accept loop's bounds, as `[endpoint]` configures them for the app; and its drain
    //! at shutdown, on a small app of its own whose one handler says when it was entered (the
    //! app's own drain, of a real call, is in `app.rs`).

    use super::*;
    use switchboard_app::http::{ListenerConfig, serve_with};
    use tokio::net::TcpStream;
    use tokio_util::sync::CancellationToken;

    struct Server {
        addr: std::net::SocketAddr,
        stop: CancellationToken,
        task: tokio::task::JoinHandle<std::io::Result<()>>,
        /// Fires when `/slow` has been entered.
        entered: tokio::sync::mpsc::Receiver<()>,
    }

    /// The app on 127.0.0.1 with `listener` as its connection bounds.
    async fn app_with(listener: ListenerConfig) -> Env {
        Harness::new().endpoint(move |e| e.listener = listener).start().await
    }

    async fn server(config: ListenerConfig) -> Server {
        let (tx, entered) = tokio::sync::mpsc::channel(8);
        let app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" })).route(
            "/slow",
            axum::routing::get(move || {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(()).await;
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    "done"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve_with(listener, app, config, stop.clone()));
        Server { addr, stop, task, entered }
    }

    /// Reads until the peer closes (`Ok(true)`), or gives up after `within` (`Ok(false)`).
    async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
        let mut buf = [0u8; 1024];
        tokio::time::timeout(within, async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await
        .is_ok()
    }

    /// One keep-alive request on `s`; returns the response head and body text.
    async fn get(s: &mut TcpStream, path: &str) -> String {
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        tokio::time::timeout(Duration::from_secs(10), async {
            while !String::from_utf8_lossy(&got).contains("\r\n\r\n")
                || !(got.ends_with(b"ok") || got.ends_with(b"done"))
            {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
                got.extend_from_slice(&buf[..n]);
            }
        })
        .await
        .expect("an answer");
        String::from_utf8_lossy(&got).into_owned()
    }

    /// A client that sends a header line now and then never completes its head: the
    /// connection is closed after the header-read timeout, while a prompt client is served.
    #[tokio::test]
    async fn a_connection_dribbling_headers_is_closed() {
        let srv = app_with(ListenerConfig {
            header_read_timeout: Duration::from_millis(400),
            idle_timeout: Duration::from_secs(60),
            max_connections: 16,
        })
        .await;
        let mut slow = TcpStream::connect(srv.addr).await.unwrap();
        slow.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
        let dribble = async {
            for i in 0..100 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if slow.write_all(format!("X-Dribble-{i}: y\r\n").as_bytes()).await.is_err() {
                    return true;
                }
                let mut buf = [0u8; 64];
                if let Ok(r) = tokio::time::timeout(Duration::from_millis(1), slow.read(&mut buf)).await {
                    assert!(matches!(r, Ok(0) | Err(_)), "no answer to an unfinished head");
                    return true;
                }
            }
            false
        };
        assert!(dribble.await, "the dribbling connection was closed");
        let mut ok = TcpStream::connect(srv.addr).await.unwrap();
        assert!(get(&mut ok, "/healthz").await.contains("200 OK"));
    }

    /// An idle keep-alive connection is closed after the idle timeout.
    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed() {
        let srv = app_with(ListenerConfig {
            header_read_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_millis(300),
            max_connections: 16,
        })
        .await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        assert!(get(&mut s, "/healthz").await.contains("200 OK"));
        assert!(closed_within(&mut s, Duration::from_secs(10)).await, "idle connection closed");
    }

    /// With a cap of 3, a fourth connection is closed at once while the first three are
    /// served; once one of them goes, a new one is served again.
    #[tokio::test]
    async fn connections_over_the_cap_are_closed() {
        let srv = app_with(ListenerConfig { max_connections: 3, ..ListenerConfig::default() }).await;
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut s = TcpStream::connect(srv.addr).await.unwrap();
            assert!(get(&mut s, "/healthz").await.contains("200 OK"));
            held.push(s);
        }
        let mut extra = TcpStream::connect(srv.addr).await.unwrap();
        let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(closed_within(&mut extra, Duration::from_secs(10)).await, "the fourth is closed");
        for s in &mut held {
            assert!(get(s, "/healthz").await.contains("200 OK"), "the first three keep being served");
        }
        drop(held.pop());
        let again = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let mut s = TcpStream::connect(srv.addr).await.unwrap();
                let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
                let mut buf = [0u8; 256];
                if let Ok(n) = s.read(&mut buf).await
                    && n > 0
                {
                    return String::from_utf8_lossy(&buf[..n]).into_owned();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("a freed slot is used again");
        assert!(again.contains("200 OK"), "{again}");
    }

    /// Shutdown stops accepting but lets a request in flight finish.
    #[tokio::test]
    async fn shutdown_drains_requests_in_flight() {
        let mut srv = server(ListenerConfig::default()).await;
        let mut idle = TcpStream::connect(srv.addr).await.unwrap();
        assert!(get(&mut idle, "/healthz").await.contains("200 OK"));
        let addr = srv.addr;
        let busy = tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            get(&mut s, "/slow").await
        });
        tokio::time::timeout(Duration::from_secs(10), srv.entered.recv()).await.unwrap().unwrap();
        srv.stop.cancel();
        let answer = busy.await.unwrap();
        assert!(answer.contains("200 OK") && answer.ends_with("done"), "{answer}");
        assert!(
            closed_within(&mut idle, Duration::from_secs(10)).await,
            "idle connections close at shutdown"
        );
        tokio::time::timeout(Duration::from_secs(10), srv.task).await.unwrap().unwrap().unwrap();
        assert!(TcpStream::connect(addr).await.is_err(), "no longer accepting");
    }
}

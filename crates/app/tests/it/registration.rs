//! Self-registration (`docs/registration.md`) against the real fixture server over HTTP: a
//! server registers, is held until confirmed, becomes routable, reports its load and
//! deregisters with a drain; every refusal has its exact message ([`errors`]).

mod errors;

use serde_json::{Value, json};
use switchboard_router::ServerState;
use switchboard_router::registry::HELD_REASON;

use crate::harness::*;

/// A `/register` body for `server_id` at `url`.
pub fn register_body(server_id: &str, url: &str) -> Value {
    json!({
        "mcp_version": "2025-11-25",
        "server_id": server_id,
        "url": url,
        "capabilities": ["tools", "resources", "vision"],
        "supported_encodings": ["sse", "json"],
        "metadata": {"replica": 1},
    })
}

/// POSTs `body` to `path` on the env's listener; the status and the JSON answer (`null` when
/// there is none).
pub async fn post(env: &Env, path: &str, body: &Value, token: Option<&str>) -> (u16, Value) {
    let mut req = env.http.post(format!("{}{path}", env.base)).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_server_is_held_until_confirmed_then_routed_reports_load_and_deregisters() {
    let h = Harness::new().config(|c| c.router.registration.router_id = "router-a".into());
    let fx = h.fixture(Era::Both, Profile::Basic).await;
    let env = h.start().await;

    let (status, answer) = post(&env, "/register", &register_body("fx-1", &fx.url), None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({
            "mcp_version": "2025-11-25",
            "router_id": "router-a",
            "capabilities": ["tools", "resources", "vision"],
            "supported_encodings": ["json", "sse"],
            "metadata": {
                "load_sampling_interval_ms": 5000,
                "status_path": "/status",
                "confirm_path": "/confirm",
                "deregister_path": "/register/fx-1",
            },
        })
    );
    // Known, connected, but not routable.
    let entry = env.registry().entry("fx-1").unwrap();
    assert_eq!(entry.state(), (ServerState::Pending, HELD_REASON.to_owned()));
    assert_eq!(entry.spec.labels, ["vision"]);
    assert!(!env.list_tools().await.iter().any(|t| t.contains("echo")), "a held server is not routed");

    let confirm =
        json!({"server_id": "fx-1", "confirmed_capabilities": ["tools"], "negotiated_encoding": "json"});
    let (status, answer) = post(&env, "/confirm", &confirm, None).await;
    assert_eq!((status, answer), (200, json!({"server_id": "fx-1", "state": "ready"})));
    assert!(env.list_tools().await.iter().any(|t| t == "echo"), "a confirmed server is routed");
    let r = env.call_tool("echo", json!({"text": "hi"})).await;
    assert!(r.to_string().contains("hi"), "{r}");

    let report = json!({"server_id": "fx-1", "pending_requests": 3, "avg_response_time_ms": 12.5,
                        "cpu_usage_percent": 40.0, "uptime_seconds": 120});
    assert_eq!(post(&env, "/status", &report, None).await, (204, Value::Null));
    let fresh = entry.load().fresh_report(std::time::Duration::from_secs(15)).expect("the report is stored");
    assert_eq!((fresh.pending_requests, fresh.cpu_usage_percent, fresh.uptime_seconds), (3, 40.0, 120));

    // A call in flight holds the drain until it ends.
    let call = entry.load().begin();
    let (http, url) = (env.http.clone(), format!("{}/register/fx-1", env.base));
    let delete = tokio::spawn(async move { http.delete(url).send().await.unwrap() });
    while !entry.load().draining() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(env.registry().entry("fx-1").is_some(), "still there while a call is in flight");
    drop(call);
    let r = delete.await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"server_id": "fx-1", "drained_calls": 1}));
    assert!(env.registry().entry("fx-1").is_none(), "removed after the drain");
    assert!(env.app().registration().registered().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_needs_the_token_when_one_is_set() {
    let h = Harness::new().token("s3cret");
    let fx = h.fixture(Era::Both, Profile::Basic).await;
    let env = h.start().await;
    let body = register_body("fx-t", &fx.url);
    let (status, answer) = post(&env, "/register", &body, None).await;
    assert_eq!(status, 401);
    assert_eq!(
        answer,
        json!({"error": {"code": "unauthorized", "message": "Unauthorized: this endpoint requires an Authorization: Bearer <token> header"}})
    );
    let (status, answer) = post(&env, "/register", &body, Some("wrong")).await;
    assert_eq!(status, 401);
    assert_eq!(
        answer["error"]["message"],
        "Unauthorized: the bearer token is not the one this endpoint was started with"
    );
    for path in ["/confirm", "/status"] {
        assert_eq!(post(&env, path, &json!({}), None).await.0, 401, "{path}");
    }
    let r = env.http.delete(format!("{}/register/fx-t", env.base)).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let (status, answer) = post(&env, "/register", &body, Some("s3cret")).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switchboard_register_keeps_reporting_and_deregisters_on_sigterm() {
    use tokio::io::AsyncBufReadExt;
    let h = Harness::new()
        .token("tok")
        .config(|c| c.router.registration.load_sampling_interval = std::time::Duration::from_millis(100));
    let fx = h.fixture(Era::Both, Profile::Basic).await;
    let env = h.start().await;
    let refused = tokio::process::Command::new(crate::switchboard())
        .args(["register", "--router", &env.base, "--server-id", "cli-1", "--url", &fx.url])
        .args(["--capabilities", "tools,visoin", "--token-env", "REG_TOKEN"])
        .env("REG_TOKEN", "tok")
        .output()
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.starts_with("register failed: /register: unknown-capability: unknown capability label \"visoin\" for server \"cli-1\": did you mean \"vision\"?"),
        "{stderr}"
    );

    let mut child = tokio::process::Command::new(crate::switchboard())
        .args(["register", "--router", &env.base, "--server-id", "cli-1", "--url", &fx.url])
        .args(["--capabilities", "tools,vision", "--token-env", "REG_TOKEN", "--keep"])
        .env("REG_TOKEN", "tok")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(PATIENCE, lines.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let registered = next().await;
    assert_eq!(registered["capabilities"], json!(["tools", "vision"]), "{registered}");
    assert_eq!(registered["metadata"]["load_sampling_interval_ms"], 100);
    assert_eq!(next().await, json!({"server_id": "cli-1", "state": "ready"}));
    let entry = env.registry().entry("cli-1").unwrap();
    assert_eq!(entry.state().0, ServerState::Ready);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while entry.load().fresh_report(std::time::Duration::from_secs(60)).is_none() {
        assert!(tokio::time::Instant::now() < deadline, "no status report arrived");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert_eq!(next().await, json!({"server_id": "cli-1", "drained_calls": 0}));
    let status = tokio::time::timeout(PATIENCE, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
    assert!(env.registry().entry("cli-1").is_none(), "deregistered on SIGTERM");
}

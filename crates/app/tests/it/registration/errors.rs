//! Every refusal of the registration protocol, one test each, asserting the code, the status
//! and the exact message a registering server reads.

use serde_json::{Value, json};

use super::{post, register_body};
use crate::harness::*;

/// POSTs `body` to `path`, which must be refused with `status`; returns `(code, message)`.
async fn refused(env: &Env, path: &str, body: &Value, status: u16) -> (String, String) {
    let (got, answer) = post(env, path, body, None).await;
    assert_eq!(got, status, "{answer}");
    let e = &answer["error"];
    (e["code"].as_str().unwrap().to_owned(), e["message"].as_str().unwrap().to_owned())
}

fn pair(code: &str, message: &str) -> (String, String) {
    (code.to_owned(), message.to_owned())
}

/// An app with one fixture server not yet registered; its URL.
async fn env_and_fixture() -> (Env, String) {
    let h = Harness::new();
    let fx = h.fixture(Era::Both, Profile::Basic).await;
    (h.start().await, fx.url)
}

const URL: &str = "http://127.0.0.1:9/mcp";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_mismatch() {
    let env = Harness::new().start().await;
    let mut body = register_body("fx-1", URL);
    body["mcp_version"] = json!("2024-11-05");
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair(
            "version-mismatch",
            "mcp_version \"2024-11-05\" is not spoken by this router (it speaks 2025-11-25, 2026-07-28)"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_server_id() {
    let h = Harness::new().upstream("alpha", Era::Both, Profile::Basic);
    let fx = h.fixture(Era::Both, Profile::Basic).await;
    let env = h.start().await;
    assert_eq!(post(&env, "/register", &register_body("fx-1", &fx.url), None).await.0, 200);
    let message = "server_id \"fx-1\" is already registered; deregister it first or choose another server_id";
    assert_eq!(
        refused(&env, "/register", &register_body("fx-1", &fx.url), 409).await,
        pair("duplicate-server-id", message)
    );
    // A configured server's name is taken too.
    let (code, message) = refused(&env, "/register", &register_body("alpha", &fx.url), 409).await;
    assert_eq!(code, "duplicate-server-id");
    assert_eq!(
        message,
        "server_id \"alpha\" is already registered; deregister it first or choose another server_id"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_capability_with_did_you_mean() {
    let env = Harness::new()
        .config(|c| c.router.registration.labels = switchboard_router::labels::KnownLabels::new(["camera"]))
        .start()
        .await;
    let mut body = register_body("fx-1", URL);
    body["capabilities"] = json!(["tools", "visoin"]);
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair(
            "unknown-capability",
            "unknown capability label \"visoin\" for server \"fx-1\": did you mean \"vision\"? (known: tools, resources, prompts, completions, logging, camera, knowledge, rag, reasoning, thermal-analysis, vision)"
        )
    );
    body["capabilities"] = json!(["tool"]);
    let (_, message) = refused(&env, "/register", &body, 400).await;
    assert!(message.contains("did you mean \"tools\"?"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_encoding() {
    let env = Harness::new().start().await;
    let mut body = register_body("fx-1", URL);
    body["supported_encodings"] = json!(["json", "xml"]);
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair(
            "unknown-encoding",
            "unknown encoding \"xml\" in supported_encodings: the router speaks json, sse"
        )
    );
    body["supported_encodings"] = json!([]);
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair("unknown-encoding", "supported_encodings is empty: name at least one of json, sse")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_not_allowed() {
    let env = Harness::new().start().await;
    let body = register_body("fx-1", "http://10.0.0.5:8080/mcp");
    assert_eq!(
        refused(&env, "/register", &body, 403).await,
        pair(
            "url-not-allowed",
            "url \"http://10.0.0.5:8080/mcp\" is not allowed: host 10.0.0.5 is not in [router] registration_allow (127.0.0.0/8, ::1, localhost)"
        )
    );
    assert!(env.registry().entry("fx-1").is_none(), "the router never connected");
    let body = register_body("fx-1", "file:///etc/passwd");
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair("bad-request", "url \"file:///etc/passwd\" is not an http:// or https:// URL")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_names_the_url_and_nothing_the_server_said() {
    let env = Harness::new().start().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    assert_eq!(
        refused(&env, "/register", &register_body("gone", &url), 502).await,
        pair(
            "unreachable",
            &format!("could not connect to server \"gone\" at {url} and complete an MCP handshake")
        )
    );
    assert!(env.registry().entry("gone").is_none(), "a failed registration leaves nothing behind");
    assert!(env.app().registration().registered().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capability_not_offered() {
    let (env, url) = env_and_fixture().await;
    let mut body = register_body("fx-1", &url);
    body["capabilities"] = json!(["tools", "completions"]);
    assert_eq!(
        refused(&env, "/register", &body, 422).await,
        pair(
            "capability-not-offered",
            "server \"fx-1\" claims capability \"completions\" but its handshake does not offer it (it offers: tools, resources, prompts)"
        )
    );
    assert!(env.registry().entry("fx-1").is_none(), "the unverified server was removed");
    // At /confirm, only verified capabilities and offered encodings.
    assert_eq!(post(&env, "/register", &register_body("fx-1", &url), None).await.0, 200);
    let confirm =
        json!({"server_id": "fx-1", "confirmed_capabilities": ["prompts"], "negotiated_encoding": "json"});
    assert_eq!(
        refused(&env, "/confirm", &confirm, 422).await,
        pair(
            "capability-not-offered",
            "confirmed capability \"prompts\" was not verified at registration (verified: tools, resources, vision)"
        )
    );
    let confirm =
        json!({"server_id": "fx-1", "confirmed_capabilities": ["tools"], "negotiated_encoding": "cbor"});
    assert_eq!(
        refused(&env, "/confirm", &confirm, 400).await,
        pair(
            "unknown-encoding",
            "negotiated_encoding \"cbor\" is not one of the encodings the router answered with (json, sse)"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_server_id() {
    let env = Harness::new().upstream("alpha", Era::Both, Profile::Basic).start().await;
    let report = json!({"server_id": "nope", "pending_requests": 0, "avg_response_time_ms": 0.0,
                        "cpu_usage_percent": 0.0, "uptime_seconds": 1});
    assert_eq!(
        refused(&env, "/status", &report, 404).await,
        pair("unknown-server-id", "no registered server has server_id \"nope\"")
    );
    // A configured server is not a registered one: it cannot be deregistered from outside.
    for id in ["nope", "alpha"] {
        let r = env.http.delete(format!("{}/register/{id}", env.base)).send().await.unwrap();
        assert_eq!(r.status(), 404);
        let answer: Value = r.json().await.unwrap();
        assert_eq!(answer["error"]["code"], "unknown-server-id");
        assert_eq!(answer["error"]["message"], format!("no registered server has server_id \"{id}\""));
    }
    assert!(env.registry().entry("alpha").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_before_register() {
    let env = Harness::new().start().await;
    let confirm =
        json!({"server_id": "fx-1", "confirmed_capabilities": ["tools"], "negotiated_encoding": "json"});
    assert_eq!(
        refused(&env, "/confirm", &confirm, 409).await,
        pair("not-registered", "server \"fx-1\" is not registered: POST /register first")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_and_missing_fields_are_named() {
    let env = Harness::new().start().await;
    let r = env.http.post(format!("{}/register", env.base)).body("{\"server_id\": ").send().await.unwrap();
    assert_eq!(r.status(), 400);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["error"]["code"], "bad-request");
    assert_eq!(
        answer["error"]["message"],
        "the request body is not valid JSON: EOF while parsing a value at line 1 column 14"
    );
    let mut body = register_body("fx-1", URL);
    body.as_object_mut().unwrap().remove("server_id");
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair("bad-request", "the request body is not valid: missing field `server_id`")
    );
    assert_eq!(
        refused(&env, "/confirm", &json!({"server_id": "x"}), 400).await,
        pair("bad-request", "the request body is not valid: missing field `confirmed_capabilities`")
    );
    assert_eq!(
        refused(&env, "/register", &json!([1]), 400).await,
        pair("bad-request", "the request body must be a JSON object")
    );
    let body = register_body("no spaces", URL);
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair(
            "bad-request",
            "server_id \"no spaces\" is invalid: use 1–64 characters from A–Z, a–z, 0–9, '-', '_' and '.'"
        )
    );
    let report = json!({"server_id": "x", "pending_requests": 0, "avg_response_time_ms": -1.0,
                        "cpu_usage_percent": 0.0, "uptime_seconds": 1});
    assert_eq!(
        refused(&env, "/status", &report, 400).await,
        pair("bad-request", "avg_response_time_ms must be a finite number ≥ 0 (it is -1)")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_metadata_and_the_number_of_servers_are_bounded() {
    let h = Harness::new().config(|c| c.router.registration.max_servers = 1);
    let fx = h.fixture(Era::Both, Profile::Basic).await;
    let env = h.start().await;
    let mut body = register_body("fx-1", &fx.url);
    body["metadata"] = json!({"blob": "x".repeat(100 * 1024)});
    assert_eq!(
        refused(&env, "/register", &body, 413).await,
        pair("too-large", "the request body is over the limit of 65536 bytes")
    );
    body["metadata"] = json!({"blob": "x".repeat(5000)});
    assert_eq!(
        refused(&env, "/register", &body, 400).await,
        pair("bad-request", "metadata is 5011 bytes serialised; the limit is 4096")
    );
    assert_eq!(post(&env, "/register", &register_body("fx-1", &fx.url), None).await.0, 200);
    assert_eq!(
        refused(&env, "/register", &register_body("fx-2", &fx.url), 429).await,
        pair(
            "too-many-servers",
            "this router has reached its limit of 1 self-registered servers; deregister one first"
        )
    );
}

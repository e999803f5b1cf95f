//! Who may use `/api`: the token always (header or WebSocket subprotocol), the router's own
//! origin only; the UI's files need neither.

use reqwest::Method;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::harness::*;

#[tokio::test]
async fn api_wants_the_token_and_a_local_origin_and_the_ui_wants_neither() {
    let env = Harness::new().upstream("alpha", Era::Both, Profile::Basic).start().await;
    let url = format!("{}/api/servers", env.base);
    let r = env.http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 401, "no token");
    assert!(r.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("token"), "{body}");
    assert_eq!(env.http.get(&url).bearer_auth("wrong").send().await.unwrap().status(), 401, "wrong token");
    // A foreign page is refused before the token is looked at, even with the right one.
    let foreign = env.api(Method::GET, "/api/servers").header("origin", "http://evil.example");
    assert_eq!(foreign.send().await.unwrap().status(), 403);
    let other_port = env.api(Method::GET, "/api/servers").header("origin", "http://127.0.0.1:1");
    assert_eq!(other_port.send().await.unwrap().status(), 403, "another local port is another origin");
    let own = env
        .api(Method::GET, "/api/servers")
        .header("origin", format!("http://localhost:{}", env.addr.port()));
    let r = own.send().await.unwrap();
    assert_eq!(r.status(), 200, "the router's own origin");
    let list: serde_json::Value = r.json().await.unwrap();
    assert_eq!(list[0]["name"], "alpha", "{list}");
    assert_eq!(list[0]["state"], "ready", "{list}");
    // Unknown /api routes are guarded JSON 404s, not the UI.
    assert_eq!(env.http.get(format!("{}/api/nope", env.base)).send().await.unwrap().status(), 401);
    assert_eq!(env.api(Method::GET, "/api/nope").send().await.unwrap().status(), 404);

    // The event socket: without the token (or with a wrong one) the upgrade is refused.
    for protocols in ["switchboard.events", "switchboard.events, bearer.wrong"] {
        let mut req = format!("ws://{}/api/events", env.addr).into_client_request().unwrap();
        req.headers_mut().insert("sec-websocket-protocol", protocols.parse().unwrap());
        match tokio_tungstenite::connect_async(req).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401),
            other => panic!("{protocols}: must be refused: {:?}", other.map(|_| ())),
        }
    }

    // The UI: `/`, a client route and no token.
    for path in ["/", "/frames"] {
        let r = env.http.get(format!("{}{path}", env.base)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8", "{path}");
        assert!(r.text().await.unwrap().contains("<html"), "{path}");
    }
}

#[tokio::test]
async fn overview_and_settings_show_the_router_with_secrets_redacted() {
    let env = Harness::new().upstream("alpha", Era::Both, Profile::Basic).start().await;
    let body = serde_json::json!({
        "name": "secretive",
        "url": env.upstream_url("alpha"),
        "headers": {"Authorization": "Bearer sekrit-header"},
    });
    let r = env.api(Method::POST, "/api/servers").json(&body).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let body = serde_json::json!({
        "name": "child",
        "command": fixture_bin(),
        "args": ["--transport", "stdio"],
        "env": {"API_KEY": "hush-env-value"},
    });
    assert_eq!(env.api(Method::POST, "/api/servers").json(&body).send().await.unwrap().status(), 201);
    let settings = env.api_json("/api/settings").await;
    let text = settings.to_string();
    assert!(!text.contains("sekrit-header") && !text.contains("hush-env-value"), "{text}");
    let servers = settings["servers"].as_array().unwrap();
    let s = servers.iter().find(|s| s["name"] == "secretive").unwrap();
    assert_eq!(s["headers"]["Authorization"], "<redacted>", "{s}");
    let c = servers.iter().find(|s| s["name"] == "child").unwrap();
    assert_eq!(c["env"]["API_KEY"], "<redacted>", "{c}");
    assert_eq!(settings["config"]["endpoint"]["page_size"], 100, "{settings}");

    let overview = env.api_json("/api/overview").await;
    assert_eq!(overview["router"]["revisions"], serde_json::json!(["2026-07-28", "2025-11-25"]));
    assert_eq!(overview["router"]["listen"][0], env.addr.to_string());
    assert!(overview["servers"]["ready"].as_u64().unwrap() >= 1, "{overview}");
}

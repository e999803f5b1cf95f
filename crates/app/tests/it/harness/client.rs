//! The request helpers every test uses: JSON-RPC bodies of both protocol revisions, a
//! [`Client`] of `/mcp` that sends them with the headers a correct client sends and reads the
//! answer (JSON or SSE), and readers of SSE streams and of the event bus.

use serde_json::{Value, json};
use switchboard_router::events::FrameSubscription;

use super::PATIENCE;

/// The 2026-07-28 revision.
pub const VERSION: &str = "2026-07-28";
/// The 2025-11-25 revision.
pub const LEGACY: &str = "2025-11-25";
/// The `clientInfo` name of [`request`]'s `_meta`.
pub const CLIENT_NAME: &str = "harness";
/// The `clientInfo` version of [`request`]'s `_meta`.
pub const CLIENT_VERSION: &str = "2.0";

/// A 2026-07-28 request: `params._meta` names the version, empty client capabilities and the
/// client ([`CLIENT_NAME`] [`CLIENT_VERSION`]).
pub fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(VERSION);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    params["_meta"]["io.modelcontextprotocol/clientInfo"] =
        json!({"name": CLIENT_NAME, "version": CLIENT_VERSION});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2026-07-28 `tools/call` of `tool` (no arguments) from a client that can answer
/// elicitation, with `extra` merged into its params (`inputResponses`, `requestState`).
pub fn eliciting_call(id: u64, tool: &str, extra: Value) -> Value {
    let mut body = request(id, "tools/call", json!({"name": tool, "arguments": {}}));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            body["params"][k] = v;
        }
    }
    body
}

/// A 2025-11-25 request (no `_meta`).
pub fn legacy_request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2025-11-25 `initialize` from `client` (version 1.5), without capabilities.
pub fn legacy_initialize(id: u64, client: &str) -> Value {
    legacy_request(
        id,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": client, "version": "1.5"}}),
    )
}

/// A 2026-07-28 `tools/call` of `name` with `arguments`.
pub fn tool_call(id: u64, name: &str, arguments: Value) -> Value {
    request(id, "tools/call", json!({"name": name, "arguments": arguments}))
}

/// The JSON messages of an SSE body.
pub fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// The tool names of a `tools/list` answer.
pub fn tool_names(r: &Value) -> Vec<String> {
    r["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool list: {r}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Status, the final JSON-RPC message (plain JSON, or the last SSE event; `Null` for an
/// empty body) and the `Mcp-Session-Id` header of `r`.
pub async fn answer_of(r: reqwest::Response) -> (u16, Value, Option<String>) {
    let status = r.status().as_u16();
    let sid = r.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let sse = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap_or_default().starts_with("text/event-stream"));
    let text = r.text().await.unwrap();
    let v = if sse {
        sse_messages(&text).pop().unwrap_or(Value::Null)
    } else if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    (status, v, sid)
}

/// Sends `req`; status and the final JSON-RPC message ([`answer_of`]).
pub async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let (status, v, _) = answer_of(req.send().await.unwrap()).await;
    (status, v)
}

/// Reads the next SSE event's JSON from a streaming response (`buf` keeps partial input),
/// with its `id:` line if any; keep-alive comments are skipped.
pub async fn next_event(r: &mut reqwest::Response, buf: &mut String) -> (Option<String>, Value) {
    loop {
        if let Some(end) = buf.find("\n\n") {
            let raw: String = buf.drain(..end + 2).collect();
            let id = raw.lines().find_map(|l| l.strip_prefix("id:")).map(|v| v.trim().to_owned());
            let data: String = raw
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join("");
            if data.is_empty() {
                continue;
            }
            return (id, serde_json::from_str(&data).unwrap());
        }
        let chunk = tokio::time::timeout(PATIENCE, r.chunk())
            .await
            .expect("an event in time")
            .unwrap()
            .expect("the stream stays open");
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// Waits (bounded) until the upstream leg carries a `notifications/cancelled` frame.
pub async fn expect_upstream_cancel(frames: &mut FrameSubscription) {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match frames.recv().await {
                Ok(f) if f.method.as_deref() == Some("notifications/cancelled") => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("frame bus: {e}"),
            }
        }
    })
    .await
    .expect("the upstream is sent notifications/cancelled");
}

/// A client of one `/mcp` URL.
#[derive(Clone, Debug)]
pub struct Client {
    /// `http://HOST:PORT/mcp`.
    pub url: String,
    /// The HTTP client.
    pub http: reqwest::Client,
    /// Sent as the bearer token with every request of this client, when set.
    pub token: Option<String>,
}

impl Client {
    /// A client of `url`.
    pub fn new(url: impl Into<String>) -> Client {
        Client { url: url.into(), http: reqwest::Client::new(), token: None }
    }

    /// The same client, sending `token`.
    pub fn with_token(&self, token: &str) -> Client {
        Client { token: Some(token.to_owned()), ..self.clone() }
    }

    fn authorized(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// A POST of the 2026-07-28 `body` with the headers a correct client sends (version,
    /// `Mcp-Method`, `Mcp-Name` mirrored from `params.name` or `params.uri`), not yet sent.
    pub fn post_req(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", VERSION)
            .header("Mcp-Method", body["method"].as_str().unwrap());
        if let Some(n) = body["params"]["name"].as_str().or(body["params"]["uri"].as_str()) {
            req = req.header("Mcp-Name", n);
        }
        self.authorized(req.json(body))
    }

    /// POSTs the 2026-07-28 `body` ([`Client::post_req`]); the response as it comes.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        self.post_req(body).send().await.unwrap()
    }

    /// POSTs the 2026-07-28 `body`; status and the final JSON-RPC message.
    pub async fn call(&self, body: &Value) -> (u16, Value) {
        send(self.post_req(body)).await
    }

    /// The federated tool names (one `tools/list`).
    pub async fn list_tools(&self) -> Vec<String> {
        let (status, r) = self.call(&request(1, "tools/list", json!({}))).await;
        assert_eq!(status, 200, "{r}");
        tool_names(&r)
    }

    /// Calls tool `name`; the JSON-RPC answer.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Value {
        self.call(&tool_call(1, name, arguments)).await.1
    }

    /// A POST of the 2025-11-25 `body`: the session id and version headers when in a session.
    pub fn legacy_req(&self, sid: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self.http.post(&self.url).header("Accept", "application/json, text/event-stream");
        if let Some(sid) = sid {
            req = req.header("Mcp-Session-Id", sid).header("MCP-Protocol-Version", LEGACY);
        }
        self.authorized(req.json(body))
    }

    /// POSTs the 2025-11-25 `body` ([`Client::legacy_req`]); the response as it comes.
    pub async fn legacy_post(&self, sid: Option<&str>, body: &Value) -> reqwest::Response {
        self.legacy_req(sid, body).send().await.unwrap()
    }

    /// POSTs the 2025-11-25 `body`; status and the final JSON-RPC message.
    pub async fn legacy_call(&self, sid: Option<&str>, body: &Value) -> (u16, Value) {
        send(self.legacy_req(sid, body)).await
    }

    /// Like [`Client::legacy_call`], with the `Mcp-Session-Id` the answer carries.
    pub async fn legacy_exchange(&self, sid: Option<&str>, body: &Value) -> (u16, Value, Option<String>) {
        answer_of(self.legacy_post(sid, body).await).await
    }

    /// A 2025-11-25 `initialize` (declaring `roots`), checked; returns the session id.
    pub async fn legacy_initialize(&self) -> String {
        let body = legacy_request(
            0,
            "initialize",
            json!({"protocolVersion": LEGACY, "capabilities": {"roots": {}}, "clientInfo": {"name": "legacy-test", "version": "1"}}),
        );
        let (status, v, sid) = self.legacy_exchange(None, &body).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["id"], 0, "{v}");
        assert_eq!(v["result"]["protocolVersion"], LEGACY, "{v}");
        assert_eq!(v["result"]["serverInfo"]["name"], "switchboard", "{v}");
        assert_eq!(v["result"]["capabilities"]["tools"]["listChanged"], true, "{v}");
        sid.expect("Mcp-Session-Id")
    }

    /// Opens a 2025-11-25 session's GET stream (checked to be one).
    pub async fn get_stream(&self, sid: &str) -> reqwest::Response {
        let r = self.authorized(self.http.get(&self.url).header("Mcp-Session-Id", sid)).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        r
    }
}

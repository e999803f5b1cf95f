//! A scripted 2025-11-25 MCP server, run in-process behind the registry's built-in connector,
//! for behaviour no real server shows on demand: it records every message it receives,
//! pushes `resources/updated` and `list_changed` notifications when a test says so, and
//! serves tool and prompt lists the test changes. A test puts it in front of its app with
//! [`Script::start`] (the harness's built-in upstream `sc`).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard_router::registry::BuiltinConnector;
use switchboard_transport::pipe::PipeUpstream;
use switchboard_transport::{Tap, Upstream};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::harness::{Env, Harness, PATIENCE};

/// The one resource the scripted server offers (it supports subscriptions).
pub const WATCHED: &str = "test://watched";

#[derive(Default)]
struct State {
    tools: Vec<Value>,
    prompts: Vec<Value>,
    received: Vec<Value>,
    out: Option<mpsc::UnboundedSender<String>>,
}

/// The scripted server's handle (cheap to clone).
#[derive(Clone)]
pub struct Script {
    state: Arc<Mutex<State>>,
    /// Woken whenever a message was received.
    received: Arc<Notify>,
}

impl Script {
    fn new() -> Script {
        let state = State {
            tools: vec![tool("first")],
            prompts: vec![json!({"name": "first_prompt"})],
            ..State::default()
        };
        Script { state: Arc::new(Mutex::new(state)), received: Arc::new(Notify::new()) }
    }

    /// An app with the scripted server as its one upstream, `sc`, ready.
    pub async fn start() -> (Script, Env) {
        let script = Script::new();
        let env = Harness::new().builtin_upstream("sc", Arc::new(script.clone())).start().await;
        (script, env)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// The messages received so far with `method`.
    pub fn received(&self, method: &str) -> Vec<Value> {
        self.lock().received.iter().filter(|m| m["method"] == method).cloned().collect()
    }

    /// Waits (bounded) until `n` messages with `method` were received.
    pub async fn wait_received(&self, method: &str, n: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let arrived = self.received.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let got = self.received(method);
            if got.len() >= n {
                return got;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!("the scripted server never received {n} × {method}");
            }
        }
    }

    /// Sends a notification to the router.
    pub fn notify(&self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        if let Some(out) = &self.lock().out {
            let _ = out.send(line);
        }
    }

    /// Replaces the tool list (announce it with [`Script::notify`]).
    pub fn set_tools(&self, names: &[&str]) {
        self.lock().tools = names.iter().map(|n| tool(n)).collect();
    }

    /// Replaces the prompt list.
    pub fn set_prompts(&self, names: &[&str]) {
        self.lock().prompts = names.iter().map(|n| json!({"name": n})).collect();
    }
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": "scripted", "inputSchema": {"type": "object"}})
}

impl BuiltinConnector for Script {
    fn connect(
        &self,
        _server: &str,
        tap: Tap,
        cancel: CancellationToken,
    ) -> Result<Arc<dyn Upstream>, String> {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        tokio::spawn(run(self.clone(), theirs, cancel.clone()));
        let (r, w) = tokio::io::split(ours);
        let upstream: Arc<dyn Upstream> = PipeUpstream::new(r, w, tap, cancel);
        Ok(upstream)
    }
}

async fn run(script: Script, stream: tokio::io::DuplexStream, cancel: CancellationToken) {
    let (r, mut w) = tokio::io::split(stream);
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    script.lock().out = Some(tx.clone());
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if w.write_all(format!("{line}\n").as_bytes()).await.is_err() || w.flush().await.is_err() {
                return;
            }
        }
    });
    let mut lines = BufReader::new(r).lines();
    loop {
        let line = tokio::select! {
            () = cancel.cancelled() => return,
            l = lines.next_line() => match l {
                Ok(Some(l)) => l,
                _ => return,
            },
        };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        script.lock().received.push(msg.clone());
        script.received.notify_waiters();
        let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) else { continue };
        let result = answer(&script, method, &msg["params"]);
        let reply = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(message) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}})
            }
        };
        let _ = tx.send(reply.to_string());
    }
}

fn answer(script: &Script, method: &str, params: &Value) -> Result<Value, String> {
    let s = script.lock();
    Ok(match method {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
            },
            "serverInfo": {"name": "scripted", "version": "1.0.0"},
        }),
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => json!({}),
        "tools/list" => json!({"tools": s.tools}),
        "prompts/list" => json!({"prompts": s.prompts}),
        "resources/list" => json!({"resources": [{"uri": WATCHED, "name": "watched"}]}),
        "resources/templates/list" => json!({"resourceTemplates": []}),
        "resources/read" => json!({"contents": [{"uri": params["uri"], "text": "x"}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "called"}]}),
        other => return Err(format!("Method not found: {other}")),
    })
}

//! `switchboard register`: registers a running MCP server with a router (the client side of
//! `docs/registration.md`), for scripts and containers. It waits for the router (bounded
//! retries of `/healthz`), registers, confirms, prints the router's answers; with `--keep` it
//! stays to send status reports and deregisters on SIGTERM/SIGINT.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What `switchboard register` was asked.
#[derive(Debug)]
pub(crate) struct Args {
    /// The router's base URL (`http://127.0.0.1:7010`).
    pub router: String,
    /// The name to register under.
    pub server_id: String,
    /// The server's MCP endpoint.
    pub url: String,
    /// Claimed capabilities and labels.
    pub capabilities: Vec<String>,
    /// Encodings the server speaks.
    pub encodings: Vec<String>,
    /// Environment variable holding the router's token.
    pub token_env: Option<String>,
    /// Seconds to wait for the router.
    pub wait: u64,
    /// Stay, report, deregister on a signal.
    pub keep: bool,
}

/// Longest pause between two looks at the router while waiting for it.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Runs `switchboard register`.
pub(crate) async fn command(args: Args) -> ExitCode {
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("register failed: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Router {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Router {
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let req = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// Sends `body` (if any); the JSON answer of a 2xx, else the router's error message.
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, String> {
        let mut req = self.request(method, path);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.map_err(|e| format!("{path}: {e}"))?;
        let status = r.status();
        let text = r.text().await.map_err(|e| format!("{path}: {e}"))?;
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status.is_success() {
            return Ok(value);
        }
        let e = &value["error"];
        Err(match (e["code"].as_str(), e["message"].as_str()) {
            (Some(code), Some(message)) => format!("{path}: {code}: {message}"),
            _ => format!("{path}: HTTP {status}: {value}"),
        })
    }

    /// Waits until `/healthz` answers, at most `wait`.
    async fn wait_ready(&self, wait: Duration) -> Result<(), String> {
        let deadline = Instant::now() + wait;
        let mut backoff = Duration::from_millis(100);
        loop {
            let last = match self.http.get(format!("{}/healthz", self.base)).send().await {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => format!("HTTP {}", r.status()),
                Err(e) => e.to_string(),
            };
            if Instant::now() + backoff > deadline {
                return Err(format!(
                    "the router at {} did not answer within {} s ({last})",
                    self.base,
                    wait.as_secs()
                ));
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

fn token(var: Option<&str>) -> Result<Option<String>, String> {
    match var {
        Some(v) => match std::env::var(v) {
            Ok(t) if !t.trim().is_empty() => Ok(Some(t.trim().to_owned())),
            Ok(_) => Err(format!("environment variable {v} (the router token) is empty")),
            Err(_) => Err(format!("environment variable {v} (the router token) is not set")),
        },
        None => Ok(std::env::var("SWITCHBOARD_TOKEN").ok().filter(|t| !t.trim().is_empty())),
    }
}

async fn run(args: Args) -> Result<(), String> {
    let router = Router {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?,
        base: args.router.trim_end_matches('/').to_owned(),
        token: token(args.token_env.as_deref())?,
    };
    router.wait_ready(Duration::from_secs(args.wait)).await?;
    let body = json!({
        "mcp_version": "2025-11-25",
        "server_id": args.server_id,
        "url": args.url,
        "capabilities": args.capabilities,
        "supported_encodings": args.encodings,
        "metadata": {"client": "switchboard register", "version": env!("CARGO_PKG_VERSION")},
    });
    let registered = router.send(reqwest::Method::POST, "/register", Some(body)).await?;
    outln!("{registered}");
    let meta = &registered["metadata"];
    let path = |key: &str, default: &str| meta[key].as_str().unwrap_or(default).to_owned();
    let confirm = json!({
        "server_id": args.server_id,
        "confirmed_capabilities": registered["capabilities"],
        "negotiated_encoding": registered["supported_encodings"][0].as_str().unwrap_or("json"),
    });
    let confirmed =
        router.send(reqwest::Method::POST, &path("confirm_path", "/confirm"), Some(confirm)).await?;
    outln!("{confirmed}");
    if !args.keep {
        return Ok(());
    }
    let interval = Duration::from_millis(meta["load_sampling_interval_ms"].as_u64().unwrap_or(5000).max(100));
    let (status_path, deregister_path) =
        (path("status_path", "/status"), path("deregister_path", &format!("/register/{}", args.server_id)));
    let stop = CancellationToken::new();
    tokio::spawn(super::shutdown_signal(stop.clone()));
    let started = Instant::now();
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tick.tick() => {
                // This process is not the server: it knows only its own uptime.
                let report = json!({"server_id": args.server_id, "pending_requests": 0, "avg_response_time_ms": 0.0,
                                    "cpu_usage_percent": 0.0, "uptime_seconds": started.elapsed().as_secs()});
                if let Err(e) = router.send(reqwest::Method::POST, &status_path, Some(report)).await {
                    eprintln!("status report failed: {e}");
                }
            }
        }
    }
    let gone = router.send(reqwest::Method::DELETE, &deregister_path, None).await?;
    outln!("{gone}");
    Ok(())
}

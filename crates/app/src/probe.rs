//! `switchboard probe`: connect to one MCP server exactly as the router would, print the
//! handshake and the catalog, and fail with a one-line reason.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_router::registry::list_catalog;
use switchboard_transport::http::{HttpConfig, HttpUpstream};
use switchboard_transport::stdio::{RestartPolicy, StdioConfig, StdioUpstream};
use switchboard_transport::ws::{WsConfig, WsUpstream};
use switchboard_transport::{ConnectOptions, FrameBus, McpClient, Upstream};
use tokio_util::sync::CancellationToken;

/// What to probe.
#[derive(Debug, Clone)]
pub enum Target {
    /// `http(s)://…` or `ws(s)://…`.
    Url(String),
    /// A command line to spawn.
    Command(Vec<String>),
}

/// The probe's findings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The transport used.
    pub transport: &'static str,
    /// The handshake.
    pub handshake: switchboard_transport::Handshake,
    /// Usable tools (raw objects).
    pub tools: Vec<Value>,
    /// Quarantined tools.
    pub quarantined: Vec<switchboard_router::schema::Quarantined>,
    /// Resources.
    pub resources: Vec<Value>,
    /// Resource templates.
    pub resource_templates: Vec<Value>,
    /// Prompts.
    pub prompts: Vec<Value>,
}

/// Connects, handshakes and lists. The error is one line.
pub async fn probe(target: Target, timeout: Duration) -> Result<Report, String> {
    let cancel = CancellationToken::new();
    let frames = FrameBus::new(16);
    let upstream: Arc<dyn Upstream> = match &target {
        Target::Url(url) if url.starts_with("ws://") || url.starts_with("wss://") => {
            let mut cfg = WsConfig::new(url.clone());
            cfg.connect_timeout = timeout;
            WsUpstream::connect(cfg, frames.tap("upstream", "probe", "ws"), cancel.clone())
                .await
                .map_err(|e| e.to_string())?
        }
        Target::Url(url) if url.starts_with("http://") || url.starts_with("https://") => {
            let mut cfg = HttpConfig::new(url.clone());
            cfg.connect_timeout = timeout;
            HttpUpstream::new(cfg, frames.tap("upstream", "probe", "http"), cancel.clone())
                .map_err(|e| e.to_string())?
        }
        Target::Url(url) => {
            return Err(format!(
                "{url:?} is not an http(s):// or ws(s):// URL; to probe a command, put it after `--`"
            ));
        }
        Target::Command(argv) => {
            let Some((cmd, args)) = argv.split_first() else {
                return Err("no command given after `--`".into());
            };
            let mut cfg = StdioConfig::new(cmd.clone(), args.to_vec());
            cfg.restart = RestartPolicy { crash_loop_limit: 1, ..RestartPolicy::default() };
            let up = StdioUpstream::spawn(cfg, frames.tap("upstream", "probe", "stdio"), cancel.clone());
            // A command that dies at once may have given up before it counted as started: the
            // operator running `probe` still wants its last stderr line.
            if let Err(e) = up.wait_started(timeout).await {
                let status = up.status();
                return Err(match status.stderr_tail.last() {
                    Some(line) => format!("{e} (stderr: {line})"),
                    None => e.to_string(),
                });
            }
            up
        }
    };
    let options =
        ConnectOptions { handshake_timeout: timeout, request_timeout: timeout, ..ConnectOptions::default() };
    let result = async {
        let client = McpClient::connect(upstream.clone(), options).await.map_err(|f| {
            let status = upstream.status();
            match status.stderr_tail.last() {
                Some(line) if !f.reason.contains(line.as_str()) => {
                    format!("handshake failed: {} (stderr: {line})", f.reason)
                }
                _ => format!("handshake failed: {}", f.reason),
            }
        })?;
        let catalog = list_catalog(&client).await.map_err(|e| format!("listing failed: {e}"))?;
        Ok(Report {
            transport: upstream.kind().as_str(),
            handshake: client.handshake(),
            tools: catalog.raw_tools(),
            quarantined: catalog.quarantined,
            resources: catalog.resources,
            resource_templates: catalog.resource_templates,
            prompts: catalog.prompts,
        })
    }
    .await;
    upstream.close().await;
    result
}

fn caps_summary(caps: &Value) -> String {
    let Some(obj) = caps.as_object() else { return "none".into() };
    if obj.is_empty() {
        return "none".into();
    }
    obj.iter()
        .map(|(k, v)| {
            let flags: Vec<&str> = v
                .as_object()
                .map(|m| {
                    m.iter().filter(|(_, b)| b.as_bool() == Some(true)).map(|(f, _)| f.as_str()).collect()
                })
                .unwrap_or_default();
            if flags.is_empty() { k.clone() } else { format!("{k} ({})", flags.join(", ")) }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Renders a report for a terminal.
pub fn render(r: &Report) -> String {
    let hs = &r.handshake;
    let info = &hs.server_info;
    let name = info.get("name").and_then(Value::as_str).unwrap_or("?");
    let version = info.get("version").and_then(Value::as_str).unwrap_or("?");
    let mut out = String::new();
    let via = if hs.era == switchboard_wire::Era::Modern { "server/discover" } else { "initialize" };
    out += &format!("transport     {}\n", r.transport);
    out += &format!("era           {} ({}) via {via}\n", hs.era, hs.protocol_version);
    out += &format!("server        {name} {version}\n");
    out += &format!("offered       {}\n", hs.offered_versions.join(", "));
    if !hs.server_versions.is_empty() {
        out += &format!("server knows  {}\n", hs.server_versions.join(", "));
    }
    out += &format!("negotiation   {}\n", hs.steps.join("; "));
    out += &format!("duration      {:.1} ms\n", hs.duration.as_secs_f64() * 1000.0);
    out += &format!("capabilities  {}\n", caps_summary(&hs.server_capabilities));
    if let Some(i) = &hs.instructions {
        out += &format!("instructions  {}\n", first_line(i));
    }
    out += &format!("tools ({}):\n", r.tools.len());
    for t in &r.tools {
        let n = t.get("name").and_then(Value::as_str).unwrap_or("?");
        let d = t.get("description").and_then(Value::as_str).map(first_line).unwrap_or("");
        out += &format!("  {n}{}{d}\n", if d.is_empty() { "" } else { " — " });
    }
    if !r.quarantined.is_empty() {
        out += &format!("quarantined ({}):\n", r.quarantined.len());
        for q in &r.quarantined {
            out += &format!("  {} — {}\n", q.name, q.error);
        }
    }
    out += &format!(
        "resources {}, resource templates {}, prompts {}\n",
        r.resources.len(),
        r.resource_templates.len(),
        r.prompts.len()
    );
    out
}

/// The report as JSON.
pub fn to_json(r: &Report) -> Value {
    json!(r)
}

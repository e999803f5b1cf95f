//! The load generator: keep-alive 2026-07-28 clients calling `echo`, and the statistics of
//! a phase.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use switchboard_transport::McpClient;

use crate::{PhaseStats, VERSION, cpu};

/// One phase's target.
#[derive(Clone)]
pub(crate) enum Target {
    /// An MCP endpoint URL, the tool name it knows `echo` by and the `Authorization` header
    /// it requires.
    Http { url: String, tool: Arc<str>, auth: Option<Arc<str>> },
    /// A stdio server reached through its own client.
    Stdio(Arc<McpClient>),
}

/// A keep-alive client with room for the workers' connections plus those still draining.
pub(crate) fn client(concurrency: usize) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency * 4)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()?)
}

fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(VERSION);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POSTs one request with the headers a correct 2026-07-28 client sends; returns the JSON-RPC
/// response (from a JSON body or the last message of an SSE body).
async fn post(
    http: &reqwest::Client,
    url: &str,
    auth: Option<&str>,
    body: &Value,
    name: Option<&str>,
) -> anyhow::Result<Value> {
    let method = body["method"].as_str().unwrap_or_default();
    let mut req = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", VERSION)
        .header("Mcp-Method", method);
    if let Some(n) = name {
        req = req.header("Mcp-Name", n);
    }
    if let Some(a) = auth {
        req = req.header("Authorization", a);
    }
    let mut r = req.json(body).send().await?;
    let status = r.status();
    let sse = r
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !status.is_success() || !sse {
        let text = r.text().await?;
        if !status.is_success() {
            bail!("HTTP {status}: {text}");
        }
        return parse_body(&text);
    }
    // An SSE body: the response is there as soon as its event is complete. The end of the
    // stream can trail it by a delayed-ACK round (the terminating chunk is a separate small
    // write), so it is drained off the clock, as an MCP client would, keeping the connection
    // for reuse.
    let mut buf = Vec::new();
    while let Some(chunk) = r.chunk().await? {
        buf.extend_from_slice(&chunk);
        let Some(end) = buf.windows(2).rposition(|w| w == b"\n\n") else { continue };
        let Ok(found) = parse_body(&String::from_utf8_lossy(&buf[..end])) else { continue };
        tokio::spawn(async move { while let Ok(Some(_)) = r.chunk().await {} });
        return Ok(found);
    }
    parse_body(&String::from_utf8_lossy(&buf))
}

pub(crate) fn parse_body(text: &str) -> anyhow::Result<Value> {
    let t = text.trim_start();
    if t.starts_with('{') {
        return Ok(serde_json::from_str(t)?);
    }
    let last = t
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|v| v.get("id").is_some());
    last.context("no JSON-RPC response in the body")
}

/// The name the router exposes the fixture's `echo` tool under.
pub(crate) async fn echo_name(
    http: &reqwest::Client,
    url: &str,
    auth: Option<&str>,
) -> anyhow::Result<String> {
    let r = post(http, url, auth, &request(0, "tools/list", json!({})), None).await?;
    let tools = r["result"]["tools"].as_array().context("tools/list returned no tools")?;
    tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|n| *n == "echo" || n.ends_with("__echo"))
        .map(str::to_owned)
        .with_context(|| format!("no echo tool in {r}"))
}

/// One `tools/call echo {text:"x"}`; true when answered with the echoed text.
async fn call_echo(http: &reqwest::Client, target: &Target, id: u64) -> bool {
    match target {
        Target::Http { url, tool, auth } => {
            let body = request(id, "tools/call", json!({"name": &**tool, "arguments": {"text": "x"}}));
            match post(http, url, auth.as_deref(), &body, Some(tool)).await {
                Ok(r) => r["id"] == id && r.get("result").is_some() && r["result"]["isError"] != true,
                Err(_) => false,
            }
        }
        Target::Stdio(client) => {
            match client.request("tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).await {
                Ok(r) => r["isError"] != true,
                Err(_) => false,
            }
        }
    }
}

/// How many calls a phase makes and from how many clients.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Measured calls.
    pub requests: usize,
    /// Concurrent keep-alive clients.
    pub concurrency: usize,
    /// Unmeasured calls first.
    pub warmup: usize,
}

/// CPU readings at the start and the end of a measured phase.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuSpent {
    /// The whole bench process (load generator, router and an in-process upstream).
    pub process: Option<Duration>,
    /// The router's threads (its runtime and its SQLite worker).
    pub router: Option<Duration>,
    /// Of the router's, the SQLite worker's (trace writes).
    pub store: Option<Duration>,
    /// The in-process upstream's threads.
    pub upstream: Option<Duration>,
}

impl CpuSpent {
    fn now() -> CpuSpent {
        CpuSpent {
            process: cpu::process(),
            router: cpu::threads(crate::ROUTER_THREADS),
            store: cpu::threads(crate::STORE_THREADS),
            upstream: cpu::threads(crate::UPSTREAM_THREADS),
        }
    }

    fn since(self, before: CpuSpent) -> CpuSpent {
        let d = |a: Option<Duration>, b: Option<Duration>| Some(a?.saturating_sub(b?));
        CpuSpent {
            process: d(self.process, before.process),
            router: d(self.router, before.router),
            store: d(self.store, before.store),
            upstream: d(self.upstream, before.upstream),
        }
    }
}

/// Warms up, then issues `shape.requests` calls from `shape.concurrency` clients sharing one
/// keep-alive pool. Returns the stats, whether the deadline cut it short, and the CPU the
/// measured part used.
pub(crate) async fn phase(
    shape: Shape,
    target: &Target,
    deadline: Instant,
) -> anyhow::Result<(PhaseStats, bool, CpuSpent)> {
    let http = client(shape.concurrency)?;
    let (_, _, _) = drive(&http, target, shape.warmup, shape.concurrency, deadline, 1_000_000).await;
    let started = Instant::now();
    let before = CpuSpent::now();
    let (mut lat, ok, truncated) = drive(&http, target, shape.requests, shape.concurrency, deadline, 1).await;
    let spent = CpuSpent::now().since(before);
    let elapsed = started.elapsed().as_secs_f64();
    lat.sort_unstable();
    let n = lat.len();
    let mean = if n == 0 { 0.0 } else { lat.iter().map(|d| d.as_secs_f64()).sum::<f64>() / n as f64 * 1e6 };
    Ok((
        PhaseStats {
            requests: n,
            ok,
            p50_us: percentile(&lat, 0.50),
            p99_us: percentile(&lat, 0.99),
            mean_us: mean,
            requests_per_sec: if elapsed > 0.0 { n as f64 / elapsed } else { 0.0 },
        },
        truncated,
        spent,
    ))
}

/// Nearest-rank percentile of sorted latencies, in µs.
pub(crate) fn percentile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1e6
}

/// `total` calls shared out among `concurrency` workers; returns latencies, successes and
/// whether the deadline stopped it early.
async fn drive(
    http: &reqwest::Client,
    target: &Target,
    total: usize,
    concurrency: usize,
    deadline: Instant,
    first_id: u64,
) -> (Vec<Duration>, usize, bool) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.min(total.max(1)) {
        let (http, target, next) = (http.clone(), target.clone(), next.clone());
        workers.spawn(async move {
            let mut lat = Vec::new();
            let mut ok = 0usize;
            let mut cut = false;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                if Instant::now() >= deadline {
                    cut = true;
                    break;
                }
                let t = Instant::now();
                let good = call_echo(&http, &target, first_id + i as u64).await;
                lat.push(t.elapsed());
                ok += usize::from(good);
            }
            (lat, ok, cut)
        });
    }
    let mut all = Vec::with_capacity(total);
    let (mut ok, mut cut) = (0, false);
    while let Some(r) = workers.join_next().await {
        if let Ok((l, o, c)) = r {
            all.extend(l);
            ok += o;
            cut |= c;
        }
    }
    (all, ok, cut)
}

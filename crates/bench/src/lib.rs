//! endpoint-bench: measures `tools/call` latency (p50, p99, mean) and throughput through the
//! router's federated `POST /mcp` endpoint against the same rmcp fixture upstream called
//! directly, in one run, on loopback.
//!
//! With [`Upstream::Http`], [`run`] starts an in-process fixture (Streamable HTTP, 2026-07-28
//! stateless) and a router with that fixture as its only upstream, both on `127.0.0.1:0`. The
//! router is what `switchboard serve` runs — [`App::build`] with its store in a temporary
//! directory, request traces, the edge's deadlines and a bearer token (sent by every router
//! request) — so the figures include all of it. With [`Upstream::Stdio`] the upstream is the
//! `mcp-fixture` binary over stdio: "direct" is a client speaking to its own child process,
//! "router" reaches another child through the router's endpoint. Both phases use the same
//! number of concurrent clients; the [`Report`] gives their difference.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::{Value, json};
use switchboard_app::auth::BearerToken;
use switchboard_app::{App, AppOptions};
use switchboard_fixtures::Fixture;
use switchboard_fixtures::config::{FixtureConfig, TransportKind};
use switchboard_router::ServerState;
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_transport::stdio::{StdioConfig, StdioUpstream};
use switchboard_transport::{ConnectOptions, McpClient, Tap};
use tokio_util::sync::CancellationToken;

/// The protocol version both phases speak.
pub const VERSION: &str = "2026-07-28";

/// How the upstream is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Upstream {
    /// Streamable HTTP, an in-process rmcp fixture.
    Http,
    /// stdio, an `mcp-fixture --transport stdio` child process.
    Stdio,
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The upstream's transport.
    pub upstream: Upstream,
    /// The `mcp-fixture` binary (stdio upstream); default: beside this executable.
    pub fixture_bin: Option<std::path::PathBuf>,
    /// Measured requests per phase.
    pub requests: usize,
    /// Concurrent clients per phase.
    pub concurrency: usize,
    /// Unmeasured requests per phase before measuring.
    pub warmup: usize,
    /// Wall-clock guard for the whole run; phases stop early when it passes.
    pub max_duration: Duration,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            upstream: Upstream::Http,
            fixture_bin: None,
            requests: 5000,
            concurrency: 32,
            warmup: 200,
            max_duration: Duration::from_secs(120),
        }
    }
}

/// The figures of one phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseStats {
    /// Measured requests issued.
    pub requests: usize,
    /// Of those, the ones answered 200 with a `result` echoing the text.
    pub ok: usize,
    /// Median latency in µs.
    pub p50_us: f64,
    /// 99th percentile latency in µs.
    pub p99_us: f64,
    /// Mean latency in µs.
    pub mean_us: f64,
    /// Completed requests per second over the measured phase.
    pub requests_per_sec: f64,
}

/// The result of a run: both phases and their difference.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The upstream's transport.
    pub upstream: Upstream,
    /// Concurrent clients used.
    pub concurrency: usize,
    /// The upstream called directly.
    pub direct: PhaseStats,
    /// The same upstream through the router.
    pub router: PhaseStats,
    /// router p50 − direct p50, µs.
    pub added_p50_us: f64,
    /// router p99 − direct p99, µs.
    pub added_p99_us: f64,
    /// router req/s ÷ direct req/s.
    pub throughput_ratio: f64,
    /// True when the `max_duration` guard cut a phase short.
    pub truncated: bool,
}

impl Report {
    /// A plain-text table of the figures.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<8} {:>9} {:>7} {:>10} {:>10} {:>10} {:>12}\n",
            "phase", "requests", "ok", "p50 µs", "p99 µs", "mean µs", "req/s"
        );
        for (name, p) in [("direct", &self.direct), ("router", &self.router)] {
            s.push_str(&format!(
                "{:<8} {:>9} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>12.1}\n",
                name, p.requests, p.ok, p.p50_us, p.p99_us, p.mean_us, p.requests_per_sec
            ));
        }
        s.push_str(&format!(
            "added p50: {:.1} µs, added p99: {:.1} µs, throughput router/direct: {:.3} ({:?} upstream, concurrency {}){}\n",
            self.added_p50_us,
            self.added_p99_us,
            self.throughput_ratio,
            self.upstream,
            self.concurrency,
            if self.truncated { " [truncated by --max-seconds]" } else { "" }
        ));
        s
    }
}

/// One phase's target.
#[derive(Clone)]
enum Target {
    /// An MCP endpoint URL, the tool name it knows `echo` by and the `Authorization` header
    /// it requires.
    Http { url: String, tool: Arc<str>, auth: Option<Arc<str>> },
    /// A stdio server reached through its own client.
    Stdio(Arc<McpClient>),
}

/// The `mcp-fixture` binary: given, or beside this executable.
fn fixture_bin(cfg: &BenchConfig) -> anyhow::Result<String> {
    let path = match &cfg.fixture_bin {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("the executable has no directory")?
            .join(format!("mcp-fixture{}", std::env::consts::EXE_SUFFIX)),
    };
    if !path.exists() {
        bail!(
            "{} not found: build it (cargo build --release -p switchboard-fixtures) or pass --fixture-bin",
            path.display()
        );
    }
    Ok(path.to_string_lossy().into_owned())
}

/// A fresh bearer token for the router (32 random bytes, hex).
fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for the token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Runs both phases against a fresh fixture and router, then shuts them down.
pub async fn run(cfg: &BenchConfig) -> anyhow::Result<Report> {
    if cfg.concurrency == 0 || cfg.requests == 0 {
        bail!("--requests and --concurrency must be at least 1");
    }
    let deadline = Instant::now() + cfg.max_duration;
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();

    let (direct, toml) = match cfg.upstream {
        Upstream::Http => {
            let fixture = Fixture::bind(FixtureConfig::new(TransportKind::Http))
                .await
                .context("binding the fixture")?;
            let url = fixture.url().context("the HTTP fixture has no URL")?;
            tokio::spawn({
                let stop = stop.clone();
                async move { fixture.serve(stop).await }
            });
            (
                Target::Http { url: url.clone(), tool: Arc::from("echo"), auth: None },
                ServerToml { url: Some(url), ..Default::default() },
            )
        }
        Upstream::Stdio => {
            let bin = fixture_bin(cfg)?;
            let args = vec!["--transport".to_owned(), "stdio".to_owned()];
            let up = StdioUpstream::spawn(
                StdioConfig::new(bin.clone(), args.clone()),
                Tap::disabled(),
                stop.child_token(),
            );
            up.wait_started(Duration::from_secs(10)).await.context("starting the direct stdio fixture")?;
            let client = McpClient::connect(up, ConnectOptions::default())
                .await
                .map_err(|f| anyhow::anyhow!("handshake with the direct stdio fixture: {}", f.reason))?;
            (Target::Stdio(Arc::new(client)), ServerToml { command: Some(bin), args, ..Default::default() })
        }
    };

    // The router is the stack `serve` runs: App with its store, traces, edge and a bearer token.
    let dir = tempfile::tempdir().context("creating the router's directory")?;
    let mut config =
        switchboard_app::config::parse("", "bench", &[], Some(&dir.path().join("switchboard.db")))
            .context("building the router's config")?;
    config.servers.push(spec_from_toml("fixture", toml, "bench").context("building the upstream spec")?);
    let token = random_token()?;
    let options = AppOptions { token: BearerToken::new(&token), ..AppOptions::default() };
    let app = App::build(&config, options).await.context("building the router")?;
    app.registry()
        .wait_for("fixture", ServerState::Ready, Duration::from_secs(30))
        .await
        .context("the upstream did not become ready")?;
    let addr =
        app.listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.context("binding the router")?;
    let router_url = format!("http://{addr}/mcp");
    let auth: Option<Arc<str>> = Some(Arc::from(format!("Bearer {token}")));

    let http = client(cfg.concurrency)?;
    let router_tool =
        echo_name(&http, &router_url, auth.as_deref()).await.context("finding echo through the router")?;

    let router = Target::Http { url: router_url, tool: Arc::from(router_tool.as_str()), auth };
    let (direct, t1) = phase(cfg, &direct, deadline).await?;
    let (router, t2) = phase(cfg, &router, deadline).await?;
    app.shutdown(Duration::from_secs(5)).await;
    stop.cancel();

    Ok(Report {
        upstream: cfg.upstream,
        concurrency: cfg.concurrency,
        added_p50_us: router.p50_us - direct.p50_us,
        added_p99_us: router.p99_us - direct.p99_us,
        throughput_ratio: if direct.requests_per_sec > 0.0 {
            router.requests_per_sec / direct.requests_per_sec
        } else {
            0.0
        },
        direct,
        router,
        truncated: t1 || t2,
    })
}

/// A keep-alive client with room for the workers' connections plus those still draining.
fn client(concurrency: usize) -> anyhow::Result<reqwest::Client> {
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

fn parse_body(text: &str) -> anyhow::Result<Value> {
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
async fn echo_name(http: &reqwest::Client, url: &str, auth: Option<&str>) -> anyhow::Result<String> {
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

/// Warms up, then issues `cfg.requests` calls from `cfg.concurrency` clients sharing one
/// keep-alive pool. Returns the stats and whether the deadline cut it short.
async fn phase(cfg: &BenchConfig, target: &Target, deadline: Instant) -> anyhow::Result<(PhaseStats, bool)> {
    let http = client(cfg.concurrency)?;
    let (_, _, _) = drive(&http, target, cfg.warmup, cfg.concurrency, deadline, 1_000_000).await;
    let started = Instant::now();
    let (mut lat, ok, truncated) = drive(&http, target, cfg.requests, cfg.concurrency, deadline, 1).await;
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
    ))
}

/// Nearest-rank percentile of sorted latencies, in µs.
fn percentile(sorted: &[Duration], q: f64) -> f64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn sse_bodies_yield_the_response() {
        let r = parse_body("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n")
            .expect("parsed");
        assert_eq!(r["id"], 3);
    }
}

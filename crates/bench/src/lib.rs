//! endpoint-bench: what the router adds to a `tools/call`, measured against the same rmcp
//! fixture upstream called directly, in one run, on loopback.
//!
//! The router is what `switchboard serve` runs — [`App::build`] with its store in a temporary
//! directory, request traces, the edge's deadlines and a bearer token (sent by every router
//! request) — on a Tokio runtime of its own whose threads are named `sb-router`, so the CPU
//! it spends can be read apart from the load generator's ([`cpu`]). With [`Upstream::Http`]
//! the upstream is an in-process fixture (Streamable HTTP, 2026-07-28 stateless) on its own
//! `sb-upstream` runtime; with [`Upstream::Stdio`] it is the `mcp-fixture` binary over stdio:
//! "direct" is a client speaking to its own child process, "router" reaches another child
//! through the router's endpoint.
//!
//! Each target is measured twice: with one client (latency: what the router adds to p50 and
//! p99) and with [`BenchConfig::concurrency`] clients (throughput ratio, and CPU per call:
//! the router's threads, and the whole process in the direct and the routed run measured the
//! same way). The router is then measured once more with one client while a control-panel
//! event viewer is connected and never reads ([`Report::stalled_viewer`]).

pub mod cpu;
mod load;
pub mod schedule_cost;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use switchboard_app::auth::BearerToken;
use switchboard_app::{App, AppOptions};
use switchboard_fixtures::Fixture;
use switchboard_fixtures::config::{FixtureConfig, TransportKind};
use switchboard_router::ServerState;
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_transport::stdio::{StdioConfig, StdioUpstream};
use switchboard_transport::{ConnectOptions, McpClient, Tap};
use tokio_util::sync::CancellationToken;

use load::{Shape, Target};

/// The protocol version both phases speak.
pub const VERSION: &str = "2026-07-28";

/// Name prefixes of the threads whose CPU counts as the router's: its runtime (workers and
/// blocking pool) and the SQLite worker that writes its traces.
pub const ROUTER_THREADS: &[&str] = &["sb-router", "sqlx-sqlite"];

/// Name prefix of the router's SQLite worker (trace writes), part of [`ROUTER_THREADS`].
pub const STORE_THREADS: &[&str] = &["sqlx-sqlite"];

/// Name prefix of the in-process HTTP upstream's threads.
pub const UPSTREAM_THREADS: &[&str] = &["sb-upstream"];

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
    /// Measured requests of each one-client (latency) phase.
    pub latency_requests: usize,
    /// Measured requests of each concurrent (throughput) phase.
    pub requests: usize,
    /// Concurrent clients of the throughput phases.
    pub concurrency: usize,
    /// Unmeasured requests before each phase.
    pub warmup: usize,
    /// Worker threads of the router's runtime.
    pub router_threads: usize,
    /// Wall-clock guard for the whole run; phases stop early when it passes.
    pub max_duration: Duration,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            upstream: Upstream::Http,
            fixture_bin: None,
            latency_requests: 2000,
            requests: 5000,
            concurrency: 32,
            warmup: 200,
            router_threads: 2,
            max_duration: Duration::from_secs(180),
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

/// The same load against the upstream directly and through the router.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Concurrent clients.
    pub clients: usize,
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
}

impl Comparison {
    fn new(clients: usize, direct: PhaseStats, router: PhaseStats) -> Comparison {
        Comparison {
            clients,
            added_p50_us: router.p50_us - direct.p50_us,
            added_p99_us: router.p99_us - direct.p99_us,
            throughput_ratio: if direct.requests_per_sec > 0.0 {
                router.requests_per_sec / direct.requests_per_sec
            } else {
                0.0
            },
            direct,
            router,
        }
    }
}

/// CPU time per call in the throughput phases, µs (`None` where `/proc` is not there, or the
/// upstream is another process).
#[derive(Debug, Clone, Serialize)]
pub struct CpuPerCall {
    /// The router's threads during the routed run: what forwarding one call costs it.
    pub router_us: Option<f64>,
    /// Of `router_us`, the SQLite worker's share (storing the call's trace).
    pub router_store_us: Option<f64>,
    /// The whole bench process during the direct run.
    pub process_direct_us: Option<f64>,
    /// The whole bench process during the routed run.
    pub process_routed_us: Option<f64>,
    /// The in-process upstream's threads during the direct run.
    pub upstream_direct_us: Option<f64>,
    /// The in-process upstream's threads during the routed run.
    pub upstream_routed_us: Option<f64>,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The upstream's transport.
    pub upstream: Upstream,
    /// One client: what the router adds to latency.
    pub latency: Comparison,
    /// [`BenchConfig::concurrency`] clients: what it does to throughput.
    pub throughput: Comparison,
    /// CPU per call during the throughput phases.
    pub cpu: CpuPerCall,
    /// One client through the router again, while an event viewer (`/api/events`, the
    /// control panel's stream) is connected and never reads: what a stalled viewer does to
    /// `/mcp` latency. Compare with `latency.router`, measured in the same run without one.
    pub stalled_viewer: PhaseStats,
    /// The routing step with the scheduler against the bare name lookup, in the same router.
    pub scheduling: schedule_cost::SchedulingCost,
    /// True when the `max_duration` guard cut a phase short.
    pub truncated: bool,
}

fn us(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1} µs"))
}

impl Report {
    /// A plain-text table of the figures.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:?} upstream{}\n",
            self.upstream,
            if self.truncated { " [truncated by --max-seconds]" } else { "" }
        );
        s.push_str(&format!(
            "{:<8} {:>8} {:>9} {:>7} {:>10} {:>10} {:>10} {:>12}\n",
            "phase", "clients", "requests", "ok", "p50 µs", "p99 µs", "mean µs", "req/s"
        ));
        for c in [&self.latency, &self.throughput] {
            for (name, p) in [("direct", &c.direct), ("router", &c.router)] {
                s.push_str(&format!(
                    "{:<8} {:>8} {:>9} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>12.1}\n",
                    name, c.clients, p.requests, p.ok, p.p50_us, p.p99_us, p.mean_us, p.requests_per_sec
                ));
            }
        }
        s.push_str(&format!(
            "1 client: added p50 {:.1} µs, added p99 {:.1} µs\n{} clients: throughput router/direct {:.3}\n",
            self.latency.added_p50_us,
            self.latency.added_p99_us,
            self.throughput.clients,
            self.throughput.throughput_ratio,
        ));
        s.push_str(&format!(
            "1 client with a stalled event viewer: p50 {:.1} µs, p99 {:.1} µs (without one: {:.1} µs, {:.1} µs); ratio of p50 {:.2}\n",
            self.stalled_viewer.p50_us,
            self.stalled_viewer.p99_us,
            self.latency.router.p50_us,
            self.latency.router.p99_us,
            if self.latency.router.p50_us > 0.0 { self.stalled_viewer.p50_us / self.latency.router.p50_us } else { 0.0 },
        ));
        s.push_str(&format!(
            "CPU per call at {} clients: router threads {} (of which trace store {}); whole process direct {}, routed {}; upstream direct {}, routed {}\n",
            self.throughput.clients,
            us(self.cpu.router_us),
            us(self.cpu.router_store_us),
            us(self.cpu.process_direct_us),
            us(self.cpu.process_routed_us),
            us(self.cpu.upstream_direct_us),
            us(self.cpu.upstream_routed_us),
        ));
        let sc = &self.scheduling;
        s.push_str(&format!(
            "scheduling ({} routes each): name lookup {:.0} ns, scheduled {:.0} ns, scheduled with a session key {:.0} ns: adds {:.2} µs of the router's {:.1} µs added p50\n",
            sc.iterations, sc.lookup_ns, sc.scheduled_ns, sc.scheduled_with_key_ns, sc.added_us, self.latency.added_p50_us
        ));
        s
    }
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

/// Opens the control panel's event stream on the router at `addr` the way a browser does
/// (the token as a subprotocol) and hands the socket back unread.
async fn stalled_viewer(
    addr: std::net::SocketAddr,
    token: &str,
) -> anyhow::Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = format!("ws://{addr}/api/events").into_client_request().context("the viewer's URL")?;
    let protocols = format!("switchboard.events, bearer.{token}");
    req.headers_mut()
        .insert("sec-websocket-protocol", protocols.parse().context("the viewer's subprotocols")?);
    let (ws, _) = tokio_tungstenite::connect_async(req).await.context("opening the event viewer")?;
    Ok(ws)
}

/// A fresh bearer token for the router (32 random bytes, hex).
fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for the token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A multi-thread runtime whose threads carry `name`.
fn runtime(name: &str, workers: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .thread_name(name)
        .enable_all()
        .build()
        .with_context(|| format!("building the {name} runtime"))
}

/// Runs the future `make` gives to completion on a fresh thread inside `rt`'s context, so what it spawns runs on
/// `rt`; the caller awaits its output without blocking its own runtime.
async fn on_runtime<M, F>(rt: &tokio::runtime::Runtime, make: M) -> anyhow::Result<F::Output>
where
    M: FnOnce() -> F + Send + 'static,
    F: std::future::Future,
    F::Output: Send + 'static,
{
    let handle = rt.handle().clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("sb-router-main".into())
        .spawn(move || {
            let _ = tx.send(handle.block_on(make()));
        })
        .context("starting the router's start-up thread")?;
    rx.await.context("the router's start-up thread ended without an answer")
}

/// Runs every phase against a fresh fixture and router, then shuts them down.
pub async fn run(cfg: &BenchConfig) -> anyhow::Result<Report> {
    if cfg.concurrency == 0 || cfg.requests == 0 || cfg.latency_requests == 0 {
        bail!("--requests, --latency-requests and --concurrency must be at least 1");
    }
    let deadline = Instant::now() + cfg.max_duration;
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let upstream_rt = runtime("sb-upstream", 1)?;
    let router_rt = runtime("sb-router", cfg.router_threads)?;
    let result = measure(cfg, deadline, &stop, &upstream_rt, &router_rt).await;
    stop.cancel();
    router_rt.shutdown_background();
    upstream_rt.shutdown_background();
    result
}

async fn measure(
    cfg: &BenchConfig,
    deadline: Instant,
    stop: &CancellationToken,
    upstream_rt: &tokio::runtime::Runtime,
    router_rt: &tokio::runtime::Runtime,
) -> anyhow::Result<Report> {
    let (direct, toml) = match cfg.upstream {
        Upstream::Http => {
            let fixture = upstream_rt
                .spawn(Fixture::bind(FixtureConfig::new(TransportKind::Http)))
                .await?
                .context("binding the fixture")?;
            let url = fixture.url().context("the HTTP fixture has no URL")?;
            upstream_rt.spawn({
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

    // The router is the stack `serve` runs: App with its store, traces, edge and a bearer
    // token, on its own runtime (everything it spawns stays there).
    let dir = tempfile::tempdir().context("creating the router's directory")?;
    let mut config =
        switchboard_app::config::parse("", "bench", &[], Some(&dir.path().join("switchboard.db")))
            .context("building the router's config")?;
    config.servers.push(spec_from_toml("fixture", toml, "bench").context("building the upstream spec")?);
    let token = random_token()?;
    let options = AppOptions { token: BearerToken::new(&token), ..AppOptions::default() };
    // Built on a thread of its own that enters the router's runtime (App's start-up future is
    // not provably `Send`, so it cannot be spawned): everything it spawns runs there.
    let (app, addr) = on_runtime(router_rt, move || async move {
        let app = App::build(&config, options).await.context("building the router")?;
        app.registry()
            .wait_for("fixture", ServerState::Ready, Duration::from_secs(30))
            .await
            .context("the upstream did not become ready")?;
        let addr = app
            .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .context("binding the router")?;
        anyhow::Ok((app, addr))
    })
    .await??;
    let router_url = format!("http://{addr}/mcp");
    let auth: Option<Arc<str>> = Some(Arc::from(format!("Bearer {token}")));
    let http = load::client(cfg.concurrency)?;
    let router_tool = load::echo_name(&http, &router_url, auth.as_deref())
        .await
        .context("finding echo through the router")?;
    let router = Target::Http { url: router_url, tool: Arc::from(router_tool.as_str()), auth };

    let one = Shape { requests: cfg.latency_requests, concurrency: 1, warmup: cfg.warmup };
    let many = Shape { requests: cfg.requests, concurrency: cfg.concurrency, warmup: cfg.warmup };
    let (d1, t1, _) = load::phase(one, &direct, deadline).await?;
    let (r1, t2, _) = load::phase(one, &router, deadline).await?;
    // A viewer that connects and then never reads: the router's writes to it back up in the
    // socket, the bus overwrites what it has not taken, and `/mcp` must not notice but for
    // the frames the bus now builds (somebody is listening).
    let viewer = stalled_viewer(addr, app.admin_token().secret()).await?;
    // With a viewer connected, decisions are built into events too: the dearest case.
    let scheduling = schedule_cost::measure(app.registry(), &router_tool, 100_000);
    let (rv, t5, _) = load::phase(one, &router, deadline).await?;
    drop(viewer);
    let (dn, t3, cpu_direct) = load::phase(many, &direct, deadline).await?;
    let (rn, t4, cpu_routed) = load::phase(many, &router, deadline).await?;
    on_runtime(router_rt, move || app.shutdown(Duration::from_secs(5))).await?;
    drop(dir);

    let in_process = cfg.upstream == Upstream::Http;
    let per = |spent: Option<Duration>, calls: usize| cpu::per_call_us(spent, calls);
    let cpu = CpuPerCall {
        router_us: per(cpu_routed.router, rn.requests),
        router_store_us: per(cpu_routed.store, rn.requests),
        process_direct_us: per(cpu_direct.process, dn.requests),
        process_routed_us: per(cpu_routed.process, rn.requests),
        upstream_direct_us: per(cpu_direct.upstream.filter(|_| in_process), dn.requests),
        upstream_routed_us: per(cpu_routed.upstream.filter(|_| in_process), rn.requests),
    };
    Ok(Report {
        upstream: cfg.upstream,
        latency: Comparison::new(1, d1, r1),
        throughput: Comparison::new(cfg.concurrency, dn, rn),
        cpu,
        stalled_viewer: rv,
        scheduling,
        truncated: t1 || t2 || t3 || t4 || t5,
    })
}

#[cfg(test)]
mod tests {
    use super::load::{parse_body, percentile};
    use std::time::Duration;

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

//! Test harness: peers on 127.0.0.1 port 0, a registry over a temporary store.

use std::sync::Arc;
use std::time::Duration;

use switchboard_fixtures::Fixture;
use switchboard_fixtures::config::{Era, FixtureConfig, Profile, TransportKind};
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_router::{Event, EventBus, Registry, RegistryConfig, ServerSpec};
use switchboard_store::{Store, StoreConfig};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

pub use switchboard_fixtures::peers::{everything_js, node, repo_root};

/// The fixture binary, built by `cargo test --workspace` (or `cargo build -p switchboard-fixtures`).
pub fn fixture_bin() -> String {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let bin = dir.join("mcp-fixture");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p switchboard-fixtures` (the test script does)",
        bin.display()
    );
    bin.to_string_lossy().into_owned()
}

/// server-everything over Streamable HTTP, forced onto 127.0.0.1 and a free port.
pub struct NodeHttp {
    pub url: String,
    _child: tokio::process::Child,
}

pub async fn everything_http() -> NodeHttp {
    let preload = repo_root().join("tests/node/loopback-only.cjs");
    let mut child = tokio::process::Command::new(node())
        .arg("--require")
        .arg(preload)
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn server-everything");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(a) = line.strip_prefix("SWITCHBOARD_LISTENING ") {
                return a.to_owned();
            }
        }
        panic!("server-everything exited before listening");
    })
    .await
    .expect("server-everything listening in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    NodeHttp { url: format!("http://{addr}/mcp"), _child: child }
}

/// An in-process rmcp fixture on 127.0.0.1:0.
pub struct InProcess {
    pub url: String,
    stop: CancellationToken,
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub async fn fixture(transport: TransportKind, era: Era, profile: Profile, extra_tools: usize) -> InProcess {
    let mut cfg = FixtureConfig::new(transport);
    cfg.era = era;
    cfg.profile = profile;
    cfg.tools = extra_tools;
    let f = Fixture::bind(cfg).await.unwrap();
    let url = f.url().unwrap();
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move { f.serve(s).await });
    InProcess { url, stop }
}

pub fn url_spec(name: &str, url: &str) -> ServerSpec {
    spec_from_toml(name, ServerToml { url: Some(url.into()), ..Default::default() }, "test").unwrap()
}

pub fn cmd_spec(name: &str, command: &str, args: &[&str]) -> ServerSpec {
    spec_from_toml(
        name,
        ServerToml {
            command: Some(command.into()),
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        "test",
    )
    .unwrap()
}

pub struct Harness {
    pub registry: Registry,
    pub store: Store,
    pub events: switchboard_router::Subscription,
    _dir: tempfile::TempDir,
}

pub async fn harness(config: RegistryConfig) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(&StoreConfig { path: dir.path().join("sb.db"), ..Default::default() }).await.unwrap();
    let bus = EventBus::new(10_000);
    let events = bus.subscribe();
    let registry = Registry::new(config, Some(store.clone()), bus, CancellationToken::new());
    Harness { registry, store, events, _dir: dir }
}

pub fn fast() -> RegistryConfig {
    RegistryConfig { reconnect_backoff: Duration::from_millis(50), ..RegistryConfig::default() }
}

/// Waits for an event matching `pred`, failing after 30 s.
pub async fn expect_event(
    rx: &mut switchboard_router::Subscription,
    what: &str,
    pred: impl Fn(&Event) -> bool,
) -> Arc<Event> {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let e = rx.recv().await.expect("event bus open");
            if pred(&e) {
                return e;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no event: {what}"))
}

//! The one way these tests start Switchboard: [`Harness`] starts the upstreams a test names
//! (in-process fixtures over HTTP, the `mcp-fixture` binary over stdio, in-process scripted
//! servers, any URL), builds the app through [`App::build`] (store and blobs in a temporary
//! directory), waits until every upstream is ready and listens on 127.0.0.1 port 0. The
//! [`Env`] it returns has the URLs, an HTTP client with the request helpers ([`client`]), the
//! registry, the event bus, the store, the endpoint's live state and the stdio entry point;
//! dropping it (or [`Env::shutdown`]) stops everything, fixtures included.
//!
//! Every setting a test varies is an operator setting of [`AppConfig`] (`[endpoint]` page
//! size, answer limit, call timeout, traces kept, session key file, listener bounds) or an
//! [`AppOptions`] choice (token, event capacity). The one thing added after `App::build` is an
//! in-process server behind the registry's built-in connector ([`Harness::builtin_upstream`]):
//! a test double is not configuration, so it is plugged into the built app's registry rather
//! than into `App`.

pub mod client;
pub mod lines;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchboard_app::auth::BearerToken;
use switchboard_app::config::{AppConfig, EMBEDDED_DEFAULT, EndpointSettings, parse};
use switchboard_app::endpoint::EndpointConfig;
use switchboard_app::{App, AppOptions};
use switchboard_fixtures::Fixture;
use switchboard_fixtures::config::{FixtureConfig, TransportKind};
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_router::events::FrameSubscription;
use switchboard_router::registry::BuiltinConnector;
use switchboard_router::{Event, EventBus, EventKind, Filter, Registry, ServerState, Subscription};
use switchboard_store::{Store, StoreConfig, TraceRecord};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use client::*;
pub use lines::*;
pub use switchboard_fixtures::config::{Era, Profile};

/// How long a test waits for something that should happen (a server ready, an event, an
/// answer) before it fails. Generous: the machine is shared; nothing is timed against it.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// 127.0.0.1 port 0.
pub const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// The fixture binary, built by `cargo build -p switchboard-fixtures`.
pub fn fixture_bin() -> String {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(|d| d.parent()).unwrap().join("mcp-fixture");
    assert!(bin.exists(), "{} is missing: run `cargo build -p switchboard-fixtures`", bin.display());
    bin.to_string_lossy().into_owned()
}

/// An in-process fixture server on 127.0.0.1 (port 0 unless its config names one).
pub struct RunningFixture {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// Its address.
    pub addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl RunningFixture {
    /// Binds and serves `cfg` (over HTTP) until `stop` fires or [`RunningFixture::stop`].
    pub async fn start(mut cfg: FixtureConfig, stop: CancellationToken) -> RunningFixture {
        cfg.transport = TransportKind::Http;
        // Every fixture a test starts is a server of its own to the router (identical fixtures
        // would be detected as replicas of one); the routing tests bring replicas themselves.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        if cfg.server_name.is_none() {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            cfg.server_name = Some(format!("switchboard-fixture-{n}"));
        }
        let f = Fixture::bind(cfg).await.unwrap();
        let url = f.url().unwrap();
        let addr = url.trim_start_matches("http://").split('/').next().unwrap().parse().unwrap();
        let served = stop.clone();
        let task = tokio::spawn(async move {
            let _ = f.serve(served).await;
        });
        RunningFixture { url, addr, stop, task }
    }

    /// A fixture of `era` and `profile`.
    pub async fn of(era: Era, profile: Profile, stop: CancellationToken) -> RunningFixture {
        let mut cfg = FixtureConfig::new(TransportKind::Http);
        cfg.era = era;
        cfg.profile = profile;
        RunningFixture::start(cfg, stop).await
    }

    /// Stops it and waits until it has drained its connections and closed its port.
    pub async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(PATIENCE, self.task).await.expect("the fixture stops").unwrap();
    }
}

enum Upstream {
    Fixture { name: String, era: Era, profile: Profile },
    Url { name: String, url: String },
    Stdio { name: String, args: Vec<String> },
    Builtin { name: String },
}

type ConfigTweak = Box<dyn FnOnce(&mut AppConfig) + Send>;

/// Builds an [`Env`] (see the module docs).
#[must_use]
pub struct Harness {
    stop: CancellationToken,
    upstreams: Vec<Upstream>,
    connector: Option<Arc<dyn BuiltinConnector>>,
    tweaks: Vec<ConfigTweak>,
    options: AppOptions,
    builtin_servers: bool,
    dir: Option<PathBuf>,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

impl Harness {
    /// No upstreams, default settings, no token, an event bus of 10 000 events.
    pub fn new() -> Harness {
        Harness {
            stop: CancellationToken::new(),
            upstreams: Vec::new(),
            connector: None,
            tweaks: Vec::new(),
            options: AppOptions { event_capacity: Some(10_000), ..AppOptions::default() },
            builtin_servers: false,
            dir: None,
        }
    }

    /// The two upstreams most tests federate: `alpha` (both eras, reached as modern) and
    /// `beta` (legacy only), both with the basic catalogue, so their shared tools are prefixed.
    pub fn alpha_beta() -> Harness {
        Harness::new().upstream("alpha", Era::Both, Profile::Basic).upstream(
            "beta",
            Era::Legacy,
            Profile::Basic,
        )
    }

    /// An in-process fixture server over HTTP, stopped with the env.
    pub fn upstream(mut self, name: &str, era: Era, profile: Profile) -> Harness {
        self.upstreams.push(Upstream::Fixture { name: name.into(), era, profile });
        self
    }

    /// A server at `url` the test runs itself (a relay, a fixture it restarts).
    pub fn url_upstream(mut self, name: &str, url: &str) -> Harness {
        self.upstreams.push(Upstream::Url { name: name.into(), url: url.into() });
        self
    }

    /// The `mcp-fixture` binary over stdio, with `args` after `--transport stdio`; the
    /// registry supervises (and stops) the process.
    pub fn stdio_upstream(mut self, name: &str, args: &[&str]) -> Harness {
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        self.upstreams.push(Upstream::Stdio { name: name.into(), args });
        self
    }

    /// An in-process server behind the registry's built-in connector (every built-in upstream
    /// of one env shares `connector`; the app's own built-in servers are then unavailable).
    pub fn builtin_upstream(mut self, name: &str, connector: Arc<dyn BuiltinConnector>) -> Harness {
        assert!(!self.builtin_servers, "the built-in servers and a test connector exclude each other");
        self.connector = Some(connector);
        self.upstreams.push(Upstream::Builtin { name: name.into() });
        self
    }

    /// Starts from the embedded default configuration: the three built-in servers.
    pub fn builtin_servers(mut self) -> Harness {
        assert!(self.connector.is_none(), "the built-in servers and a test connector exclude each other");
        self.builtin_servers = true;
        self
    }

    /// Changes the app's configuration (after the upstreams were added to it).
    pub fn config(mut self, tweak: impl FnOnce(&mut AppConfig) + Send + 'static) -> Harness {
        self.tweaks.push(Box::new(tweak));
        self
    }

    /// Changes the `[endpoint]` settings.
    pub fn endpoint(self, tweak: impl FnOnce(&mut EndpointSettings) + Send + 'static) -> Harness {
        self.config(move |c| tweak(&mut c.endpoint))
    }

    /// Changes the app's build options.
    pub fn options(mut self, tweak: impl FnOnce(&mut AppOptions)) -> Harness {
        tweak(&mut self.options);
        self
    }

    /// Keeps the store, blobs and knowledge base in `dir` (which the test owns, to start
    /// another app on the same files) instead of a fresh temporary directory.
    pub fn in_dir(mut self, dir: &Path) -> Harness {
        self.dir = Some(dir.to_owned());
        self
    }

    /// Requires `token` on every data route (the env's client does not send it unless
    /// asked: [`Client::with_token`]), and on the admin API, as `serve` does with a configured
    /// token (without one the admin API has a random token: [`Env::admin_token`]).
    pub fn token(mut self, token: &str) -> Harness {
        self.options.token = BearerToken::new(token);
        self.options.admin_token = switchboard_admin::AdminToken::new(token).ok();
        self
    }

    /// The token fixtures and test-run tasks end on (cancelled with the env).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Starts an in-process fixture outside the app's configuration (to put a relay in front
    /// of, or to restart), stopped with the env.
    pub async fn fixture(&self, era: Era, profile: Profile) -> RunningFixture {
        RunningFixture::of(era, profile, self.stop.child_token()).await
    }

    /// Like [`Harness::fixture`] with a whole fixture configuration (a fixed address).
    pub async fn fixture_with(&self, cfg: FixtureConfig) -> RunningFixture {
        RunningFixture::start(cfg, self.stop.child_token()).await
    }

    /// Starts the upstreams, builds the app, waits until every upstream is ready, listens.
    pub async fn start(self) -> Env {
        let Harness { stop, upstreams, connector, tweaks, options, builtin_servers, dir } = self;
        let (temp, dir) = match dir {
            Some(d) => (None, d),
            None => {
                let t = tempfile::tempdir().unwrap();
                let d = t.path().to_owned();
                (Some(t), d)
            }
        };
        let db = dir.join("switchboard.db");
        let mut config = if builtin_servers {
            parse(EMBEDDED_DEFAULT, "embedded default config", &[], Some(&db)).unwrap()
        } else {
            parse("", "harness", &[], Some(&db)).unwrap()
        };
        let mut fixtures = HashMap::new();
        let mut builtins = Vec::new();
        let mut names = Vec::new();
        for up in upstreams {
            let (name, toml) = match up {
                Upstream::Fixture { name, era, profile } => {
                    // Named after the server, so two fixtures of one catalogue are two servers
                    // to the router, not replicas of one (see the routing tests for those).
                    let mut cfg = FixtureConfig::new(TransportKind::Http);
                    cfg.era = era;
                    cfg.profile = profile;
                    cfg.server_name = Some(name.clone());
                    let f = RunningFixture::start(cfg, stop.child_token()).await;
                    let toml = ServerToml { url: Some(f.url.clone()), ..Default::default() };
                    fixtures.insert(name.clone(), f);
                    (name, toml)
                }
                Upstream::Url { name, url } => (name, ServerToml { url: Some(url), ..Default::default() }),
                Upstream::Stdio { name, args } => {
                    let mut all = vec![
                        "--transport".to_owned(),
                        "stdio".to_owned(),
                        "--server-name".to_owned(),
                        name.clone(),
                    ];
                    all.extend(args);
                    (name, ServerToml { command: Some(fixture_bin()), args: all, ..Default::default() })
                }
                Upstream::Builtin { name } => {
                    let toml = ServerToml { builtin: Some(name.clone()), ..Default::default() };
                    builtins.push(spec_from_toml(&name, toml, "harness").unwrap());
                    names.push(name);
                    continue;
                }
            };
            config.servers.push(spec_from_toml(&name, toml, "harness").unwrap());
            names.push(name);
        }
        for tweak in tweaks {
            tweak(&mut config);
        }
        let app = App::build(&config, options).await.unwrap();
        if let Some(connector) = connector {
            app.registry().set_builtins(connector);
            for spec in builtins {
                app.registry().add(spec).await.unwrap();
            }
        }
        for name in &names {
            app.registry().wait_for(name, ServerState::Ready, PATIENCE).await.expect(name);
        }
        if builtin_servers {
            app.registry().wait_settled(Duration::from_secs(60)).await;
        }
        let traces =
            app.events().subscribe_filtered(Filter { kinds: [EventKind::Trace].into(), ..Filter::default() });
        let addr = app.listen(LOOPBACK).await.unwrap();
        let admin_token = app.admin_token().secret().to_owned();
        Env {
            admin_token,
            client: Client::new(format!("http://{addr}/mcp")),
            addr,
            base: format!("http://{addr}"),
            ws_url: format!("ws://{addr}/mcp"),
            app: Some(app),
            stop,
            fixtures,
            traces,
            db,
            _temp: temp,
        }
    }
}

/// A running app with its upstreams (see the module docs). Derefs to its [`Client`].
pub struct Env {
    /// The client of `/mcp` (with the token, when the app requires one).
    pub client: Client,
    /// The listener's address.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// `ws://127.0.0.1:PORT/mcp`.
    pub ws_url: String,
    /// The admin API's token (`/api`).
    pub admin_token: String,
    app: Option<App>,
    stop: CancellationToken,
    fixtures: HashMap<String, RunningFixture>,
    traces: Subscription,
    db: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl std::ops::Deref for Env {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // Dropping the app cancels its stages and the registry; this ends the fixtures.
        self.stop.cancel();
    }
}

impl Env {
    /// The running app.
    pub fn app(&self) -> &App {
        self.app.as_ref().expect("the app was shut down")
    }

    /// A request to the admin API at `path` (`/api/…`) with the admin token.
    pub fn api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.http.request(method, format!("{}{path}", self.base)).bearer_auth(&self.admin_token)
    }

    /// `GET` of an admin API JSON answer, which must be 200.
    pub async fn api_json(&self, path: &str) -> serde_json::Value {
        let r = self.api(reqwest::Method::GET, path).send().await.unwrap();
        assert_eq!(r.status(), 200, "GET {path}");
        r.json().await.unwrap()
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        self.app().registry()
    }

    /// The event bus.
    pub fn events(&self) -> &EventBus {
        self.app().events()
    }

    /// A subscription to the frames of both legs, from now on.
    pub fn frames(&self) -> FrameSubscription {
        self.events().subscribe_frames()
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.app().store()
    }

    /// The endpoint's settings and live state (parked calls, subscriptions).
    pub fn endpoint(&self) -> &EndpointConfig {
        self.app().endpoint()
    }

    /// The store's database file.
    pub fn db(&self) -> PathBuf {
        self.db.clone()
    }

    /// Takes the app out (to shut it down elsewhere); the env's accessors of it panic after.
    pub fn take_app(&mut self) -> App {
        self.app.take().expect("the app was shut down")
    }

    /// The token tasks the test starts (relays, restarted fixtures) end on.
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// The URL of the in-process fixture `name`.
    pub fn upstream_url(&self, name: &str) -> String {
        self.fixtures[name].url.clone()
    }

    /// Stops the in-process fixture `name` and waits until it is gone (connections drained,
    /// port closed).
    pub async fn stop_upstream(&mut self, name: &str) {
        self.fixtures.remove(name).expect("an in-process fixture of that name").stop().await;
    }

    /// A 2026-07-28 / 2025-11-25 client on a stdio connection of the app ([`App::serve_stdio`]).
    pub fn stdio(&self) -> LineClient<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>> {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_r, server_w) = tokio::io::split(server);
        drop(self.app().serve_stdio(server_r, server_w));
        let (client_r, client_w) = tokio::io::split(client);
        LineClient::new(client_r, client_w)
    }

    /// Stops the app in order (requests drained, traces flushed, store closed), then the
    /// fixtures. Idempotent.
    pub async fn shutdown(&mut self) {
        if let Some(app) = self.app.take() {
            app.shutdown(Duration::from_secs(10)).await;
        }
        self.stop.cancel();
    }

    /// Waits until `n` requests were traced (on the bus, from the env's start), shuts the app
    /// down (the trace writer stores what is queued) and opens its store again. The caller
    /// reads it and closes it.
    pub async fn stored(&mut self, n: usize) -> Store {
        for seen in 0..n {
            let ev = tokio::time::timeout(PATIENCE, self.traces.recv())
                .await
                .unwrap_or_else(|_| panic!("only {seen} of {n} requests were traced"))
                .expect("the trace subscription keeps up");
            assert!(matches!(ev.as_ref(), Event::Trace { .. }));
        }
        self.shutdown().await;
        Store::open(&StoreConfig { path: self.db.clone(), ..StoreConfig::default() }).await.unwrap()
    }

    /// [`Env::stored`]'s traces, newest first (the env is shut down afterwards).
    pub async fn traces(&mut self, n: usize) -> Vec<TraceRecord> {
        let store = self.stored(n).await;
        let rows = store.traces(1000).await.unwrap();
        store.close().await;
        rows
    }
}

//! `switchboard-chaos`: a real MCP server whose faults are toggled at run time, so routing
//! tests can run several replicas of it behind a Switchboard router and break them on purpose.
//!
//! Every replica serves MCP 2026-07-28 and 2025-11-25 over Streamable HTTP at `/mcp` (rmcp),
//! names itself `chaos` in `serverInfo` (same version, same tools and schemas for every
//! replica, so a router sees instances of one server), and tells replicas apart only in
//! results and in the control API by its replica id.
//!
//! # Tools
//! `read {key}`, `put {key, value}`, `append {key, item}`, `work {ms}`, `whoami {}` — see
//! [`tools`]. Every result carries `replica` in `structuredContent` and in its text. The
//! [`counters`] count executions per tool and `append` executions per key, when the tool body
//! runs: a call a fault refused first is not counted as executed.
//!
//! # Faults (all combinable, all resettable; see [`faults::FaultSettings`])
//! - `overload`: `tools/call` → HTTP 503, `Retry-After: 1`, JSON-RPC error -32000
//!   "overloaded: …" with `data.executed: false`; never executed. Status reports say 100 %
//!   cpu and 100 extra pending requests.
//! - `disable_capability: [names]`: tools (`append`, …) or capabilities (`tools`,
//!   `resources`) vanish from the catalogue (and from `capabilities` on new handshakes);
//!   `notifications/tools/list_changed` goes to legacy sessions and to 2026 subscribers.
//! - `bad_encoding`: registration claims only `["protobuf"]`.
//! - `partition`: `/mcp` holds every request (pings and handshakes too) unanswered until
//!   healed, then serves it; no status reports meanwhile. `/chaos` still answers.
//! - `slow_handshake_ms`: `initialize` / `server/discover` wait that long.
//! - `crash`: the binary exits at once with status [`CRASH_EXIT_CODE`]; in library mode the
//!   listener and every connection close (no deregistration).
//! - `slow_tools_ms`: each tool body waits that long first.
//! - `fail_tools: {"rate": r} | {"every": n}`: chosen calls fail with JSON-RPC internal error
//!   -32603 "chaos: injected failure (fail_tools)…", `data.executed: false`; the body does not run.
//!
//! # Control API (same listener; see [`control`])
//! `GET /chaos`, `POST /chaos/faults` (a JSON patch of the settings, plus `crash`),
//! `POST /chaos/reset`; an optional bearer token.
//!
//! # Self-registration (see [`register`])
//! With a [`RegistrationConfig`] the replica registers with a router, confirms, reports its
//! load and deregisters on shutdown.
//!
//! ```no_run
//! # async fn example() -> Result<(), switchboard_chaos::Error> {
//! use switchboard_chaos::{Chaos, ChaosConfig};
//!
//! let replica = Chaos::bind(ChaosConfig::default()).await?;
//! replica.faults().set_overload(true);
//! println!("{} executions of append", replica.counters().executions("append"));
//! replica.shutdown().await;
//! # Ok(()) }
//! ```

pub mod control;
pub mod counters;
pub mod error;
pub mod faults;
pub mod http;
pub mod load;
pub mod register;
pub mod replica;
pub mod serve;
pub mod server;
pub mod store;
pub mod tools;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

pub use crate::counters::CounterSnapshot;
pub use crate::error::Error;
pub use crate::faults::{FailTools, FaultPatch, FaultSettings, Faults};
pub use crate::register::RegistrationConfig;
use crate::replica::Replica;

/// Exit status of the binary after a `crash`.
pub const CRASH_EXIT_CODE: i32 = 70;

/// How a replica is started.
#[derive(Debug, Clone)]
pub struct ChaosConfig {
    /// Address to listen on (default `127.0.0.1:0`).
    pub listen: SocketAddr,
    /// The replica id (default: random, `chaos-xxxxxxxx`).
    pub replica_id: Option<String>,
    /// Bearer token the control API requires, if any.
    pub control_token: Option<String>,
    /// Register with a router, if set.
    pub registration: Option<RegistrationConfig>,
    /// Faults in force from the start (before the listener serves or registration begins).
    pub faults: FaultPatch,
}

impl Default for ChaosConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            replica_id: None,
            control_token: None,
            registration: None,
            faults: FaultPatch::default(),
        }
    }
}

/// Entry point: [`Chaos::bind`].
#[derive(Debug)]
pub struct Chaos;

impl Chaos {
    /// Binds the listener and starts serving (and registering, if configured) in the
    /// background; the handle controls the replica.
    pub async fn bind(config: ChaosConfig) -> Result<ChaosHandle, Error> {
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|source| Error::Bind { addr: config.listen, source })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind { addr: config.listen, source })?;
        let replica = Replica::new(config.replica_id.unwrap_or_else(replica::random_id));
        if config.faults.crash == Some(true) {
            return Err(Error::Faults(faults::FaultError::CrashAtStart));
        }
        replica.faults.apply(config.faults).map_err(Error::Faults)?;
        let url = format!("http://{addr}{}", http::MCP_PATH);
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let control =
            control::ControlState { replica: replica.clone(), token: config.control_token, url: url.clone() };
        let app = http::app(replica.clone(), control, addr.ip().to_string(), tasks.clone(), &shutdown);
        let registration = config
            .registration
            .map(|registration| {
                register::Registrar::new(registration, replica.registration_view(), url.clone())
            })
            .transpose()?;
        let crashed = replica.faults.crashed().clone();
        let serving = tasks.spawn(serve::serve(listener, app, shutdown.clone(), crashed.clone()));
        let registering = registration.map(|registrar| {
            let stop = shutdown.clone();
            let crashed = crashed.clone();
            tasks.spawn(async move {
                tokio::select! {
                    result = registrar.run(stop) => if let Err(error) = result {
                        tracing::warn!(%error, "self-registration stopped");
                    },
                    () = crashed.cancelled() => {}
                }
            })
        });
        Ok(ChaosHandle { replica, url, addr, shutdown, tasks, serving: Some(serving), registering })
    }
}

/// A running replica.
#[derive(Debug)]
pub struct ChaosHandle {
    replica: Arc<Replica>,
    url: String,
    addr: SocketAddr,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    /// `None` once awaited.
    serving: Option<tokio::task::JoinHandle<()>>,
    registering: Option<tokio::task::JoinHandle<()>>,
}

impl ChaosHandle {
    /// The MCP endpoint, `http://ADDR/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The control API root, `http://ADDR/chaos`.
    pub fn control_url(&self) -> String {
        format!("http://{}{}", self.addr, control::CONTROL_PATH)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The replica id.
    pub fn replica_id(&self) -> &str {
        &self.replica.id
    }

    /// The fault switches.
    pub fn faults(&self) -> &Faults {
        &self.replica.faults
    }

    /// The execution counters now.
    pub fn counters(&self) -> CounterSnapshot {
        self.replica.counters.snapshot()
    }

    /// Faults healthy, counters zero, store empty.
    pub fn reset(&self) {
        self.replica.faults.reset();
        self.replica.counters.reset();
        self.replica.store.clear();
    }

    /// Where self-registration stands.
    pub fn registration(&self) -> register::RegistrationSnapshot {
        self.replica.registration.snapshot()
    }

    /// Resolves once the replica crashed (the `crash` fault).
    pub async fn crashed(&self) {
        self.replica.faults.crashed().cancelled().await;
    }

    /// Resolves once the replica stopped serving (shutdown or crash).
    pub async fn closed(&mut self) {
        if let Some(serving) = self.serving.take()
            && let Err(error) = serving.await
        {
            tracing::warn!(%error, "the serving task failed");
        }
    }

    /// Stops: deregisters (if registered), drains connections (bounded), returns when done.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        if let Some(registering) = self.registering
            && let Err(error) = registering.await
        {
            tracing::warn!(%error, "the registration task failed");
        }
        if let Some(serving) = self.serving
            && let Err(error) = serving.await
        {
            tracing::warn!(%error, "the serving task failed");
        }
        self.tasks.close();
        if tokio::time::timeout(serve::DRAIN_DEADLINE, self.tasks.wait()).await.is_err() {
            tracing::warn!("background tasks still running after the drain deadline");
        }
    }
}

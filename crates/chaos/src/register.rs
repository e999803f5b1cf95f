//! The self-registration client: announces this replica to a Switchboard router and keeps the
//! router informed of its load (the protocol is in `docs/chaos.md` and the router's docs).
//!
//! 1. `POST {router}/register` `{mcp_version, server_id, url, capabilities,
//!    supported_encodings, metadata}`, retried while the router is not up yet (connection
//!    refused) for at most [`RegistrationConfig::wait_for_router`]. `supported_encodings` is
//!    `["json", "sse"]`, or `["protobuf"]` under the `bad_encoding` fault.
//! 2. `POST {router}{confirm_path}` `{server_id, confirmed_capabilities, negotiated_encoding}`:
//!    the capabilities the router verified that this replica claimed, and the first of the
//!    router's encodings (its order is its preference) that this replica offered.
//! 3. `POST {router}{status_path}` `{server_id, pending_requests, avg_response_time_ms,
//!    cpu_usage_percent, uptime_seconds}` every `load_sampling_interval_ms` (none while
//!    partitioned: a partitioned replica says nothing).
//! 4. `DELETE {router}{deregister_path}` on shutdown (not on a crash).
//!
//! A refusal (4xx/5xx) stops the client; `GET /chaos` shows it under `registration`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::faults::Faults;
use crate::load::LoadMeter;

/// Default MCP revision claimed at registration.
pub const DEFAULT_MCP_VERSION: &str = "2025-11-25";
/// Default registration path on the router.
pub const DEFAULT_REGISTER_PATH: &str = "/register";
/// Default time to wait for the router to come up.
pub const DEFAULT_WAIT_FOR_ROUTER: Duration = Duration::from_secs(30);
/// Pause between attempts while the router is not up.
pub const RETRY_PAUSE: Duration = Duration::from_millis(200);
/// Timeout of each request to the router.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Encodings claimed normally.
pub const ENCODINGS: [&str; 2] = ["json", "sse"];
/// Encodings claimed under `bad_encoding`.
pub const BAD_ENCODINGS: [&str; 1] = ["protobuf"];
/// Shortest status interval honoured, whatever the router says.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// Interval used when the router names none.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(5000);

/// Where and as what to register.
#[derive(Debug, Clone)]
pub struct RegistrationConfig {
    /// The router's base URL (`http://host:port`).
    pub router: String,
    /// The `server_id` to register under.
    pub server_id: String,
    /// Capabilities to claim (MCP names and domain labels).
    pub capabilities: Vec<String>,
    /// Bearer token for the router, if it has one.
    pub token: Option<String>,
    /// MCP revision claimed.
    pub mcp_version: String,
    /// Path of `POST /register` on the router.
    pub register_path: String,
    /// How long to keep trying while the router is not up.
    pub wait_for_router: Duration,
}

impl RegistrationConfig {
    /// Registration at `router` as `server_id`, claiming `tools`, with the defaults.
    pub fn new(router: impl Into<String>, server_id: impl Into<String>) -> Self {
        Self {
            router: router.into(),
            server_id: server_id.into(),
            capabilities: vec!["tools".to_owned()],
            token: None,
            mcp_version: DEFAULT_MCP_VERSION.to_owned(),
            register_path: DEFAULT_REGISTER_PATH.to_owned(),
            wait_for_router: DEFAULT_WAIT_FOR_ROUTER,
        }
    }
}

/// Where registration stands (the `registration` object of `GET /chaos`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RegistrationSnapshot {
    /// `off`, `registering`, `registered` (not yet confirmed), `ready`, `failed`, `deregistered`.
    pub state: &'static str,
    /// The router's id once registered.
    pub router_id: Option<String>,
    /// The encoding confirmed.
    pub negotiated_encoding: Option<String>,
    /// The capabilities confirmed.
    pub confirmed_capabilities: Vec<String>,
    /// Status reports the router accepted.
    pub reports_sent: u64,
    /// The last error (a refusal, or a status report that failed).
    pub last_error: Option<String>,
}

/// The shared registration state.
#[derive(Debug, Default)]
pub struct RegistrationStatus {
    inner: Mutex<RegistrationSnapshot>,
}

impl RegistrationStatus {
    /// A copy of the state.
    pub fn snapshot(&self) -> RegistrationSnapshot {
        let mut snapshot = self.with(|state| state.clone());
        if snapshot.state.is_empty() {
            snapshot.state = "off";
        }
        snapshot
    }

    fn with<T>(&self, change: impl FnOnce(&mut RegistrationSnapshot) -> T) -> T {
        change(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Why registration stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The router did not come up in time.
    #[error("the router at {router} did not answer within {waited:?}: {source}")]
    RouterDown {
        /// The router's URL.
        router: String,
        /// How long we tried.
        waited: Duration,
        /// The last connection error.
        #[source]
        source: reqwest::Error,
    },
    /// A request failed on the way.
    #[error("{step} failed: {source}")]
    Http {
        /// `register`, `confirm`, `status` or `deregister`.
        step: &'static str,
        /// The error.
        #[source]
        source: reqwest::Error,
    },
    /// The router refused a step.
    #[error("{step} refused with HTTP {status}: {body}")]
    Refused {
        /// The step.
        step: &'static str,
        /// The HTTP status.
        status: u16,
        /// The response body (bounded).
        body: String,
    },
    /// The router's answer lacks what the protocol promises.
    #[error("{step}: unexpected answer: {reason}")]
    BadAnswer {
        /// The step.
        step: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// The paths and interval the router gave at registration.
#[derive(Debug, Clone, PartialEq)]
struct Session {
    interval: Duration,
    status_path: String,
    confirm_path: String,
    deregister_path: String,
}

/// What the registration client needs of its replica.
#[derive(Debug, Clone)]
pub struct ReplicaView {
    /// The replica id (sent as `metadata.replica`).
    pub id: String,
    /// `serverInfo` name (sent as `metadata.server`).
    pub server: &'static str,
    /// Its faults (`bad_encoding`, `partition`, `overload`).
    pub faults: Faults,
    /// Its load meter (status reports).
    pub load: LoadMeter,
    /// Where registration stands (written here, read by `GET /chaos`).
    pub status: Arc<RegistrationStatus>,
}

/// One registration client.
#[derive(Debug)]
pub struct Registrar {
    config: RegistrationConfig,
    replica: ReplicaView,
    url: String,
    http: reqwest::Client,
}

/// Longest response body kept in an error.
const MAX_ERROR_BODY: usize = 2048;

impl Registrar {
    /// A client registering `replica`, reachable at `url`, per `config`.
    pub fn new(config: RegistrationConfig, replica: ReplicaView, url: String) -> Result<Self, RegisterError> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|source| RegisterError::Http { step: "client", source })?;
        Ok(Self { config, replica, url, http })
    }

    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.config.router.trim_end_matches('/'))
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, self.endpoint(path));
        match &self.config.token {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    async fn send(
        &self,
        step: &'static str,
        builder: reqwest::RequestBuilder,
    ) -> Result<Value, RegisterError> {
        let response = builder.send().await.map_err(|source| RegisterError::Http { step, source })?;
        let status = response.status();
        let text = response.text().await.map_err(|source| RegisterError::Http { step, source })?;
        if !status.is_success() {
            let body: String = text.chars().take(MAX_ERROR_BODY).collect();
            return Err(RegisterError::Refused { step, status: status.as_u16(), body });
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn set_state(&self, state: &'static str, error: Option<String>) {
        self.replica.status.with(|snapshot| {
            snapshot.state = state;
            if error.is_some() {
                snapshot.last_error = error;
            }
        });
    }

    /// The body of `POST /register`.
    pub fn register_body(&self) -> Value {
        let encodings: &[&str] =
            if self.replica.faults.current().bad_encoding { &BAD_ENCODINGS } else { &ENCODINGS };
        json!({
            "mcp_version": self.config.mcp_version,
            "server_id": self.config.server_id,
            "url": self.url,
            "capabilities": self.config.capabilities,
            "supported_encodings": encodings,
            "metadata": { "replica": self.replica.id, "server": self.replica.server },
        })
    }

    async fn register(&self) -> Result<Value, RegisterError> {
        let body = self.register_body();
        let deadline = tokio::time::Instant::now() + self.config.wait_for_router;
        loop {
            let attempt = self.request(reqwest::Method::POST, &self.config.register_path).json(&body);
            match self.send("register", attempt).await {
                Err(RegisterError::Http { source, .. }) if source.is_connect() => {
                    if tokio::time::Instant::now() + RETRY_PAUSE > deadline {
                        return Err(RegisterError::RouterDown {
                            router: self.config.router.clone(),
                            waited: self.config.wait_for_router,
                            source,
                        });
                    }
                    tracing::debug!(error = %source, "router not up yet; retrying");
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                other => return other,
            }
        }
    }

    /// Registers, confirms, reports status until `shutdown`, then deregisters.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), RegisterError> {
        self.set_state("registering", None);
        let result = tokio::select! {
            result = self.register_and_confirm() => result,
            () = shutdown.cancelled() => return Ok(()),
        };
        let session = match result {
            Ok(session) => session,
            Err((error, registered)) => {
                self.set_state("failed", Some(error.to_string()));
                if registered {
                    self.deregister(&format!("/register/{}", self.config.server_id)).await;
                }
                return Err(error);
            }
        };
        self.set_state("ready", None);
        let mut ticks = tokio::time::interval(session.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => self.report(&session).await,
                () = shutdown.cancelled() => break,
            }
        }
        self.deregister(&session.deregister_path).await;
        Ok(())
    }

    async fn register_and_confirm(&self) -> Result<Session, (RegisterError, bool)> {
        let answer = self.register().await.map_err(|error| (error, false))?;
        let bad =
            |reason: &str| (RegisterError::BadAnswer { step: "register", reason: reason.to_owned() }, true);
        let strings = |field: &str| -> Vec<String> {
            answer
                .get(field)
                .and_then(Value::as_array)
                .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let router_encodings = strings("supported_encodings");
        let offered: &[&str] =
            if self.replica.faults.current().bad_encoding { &BAD_ENCODINGS } else { &ENCODINGS };
        let Some(encoding) =
            router_encodings.iter().find(|encoding| offered.contains(&encoding.as_str())).cloned()
        else {
            return Err(bad("no encoding in common with the router"));
        };
        let confirmed: Vec<String> = strings("capabilities")
            .into_iter()
            .filter(|cap| self.config.capabilities.contains(cap))
            .collect();
        let metadata = answer.get("metadata").cloned().unwrap_or(Value::Null);
        let path = |field: &str, default: &str| -> String {
            metadata.get(field).and_then(Value::as_str).unwrap_or(default).to_owned()
        };
        let interval = metadata
            .get("load_sampling_interval_ms")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_INTERVAL, Duration::from_millis)
            .max(MIN_INTERVAL);
        let session = Session {
            interval,
            status_path: path("status_path", "/status"),
            confirm_path: path("confirm_path", "/confirm"),
            deregister_path: path("deregister_path", "/register/{server_id}")
                .replace("{server_id}", &self.config.server_id),
        };
        let router_id = answer.get("router_id").and_then(Value::as_str).map(str::to_owned);
        self.replica.status.with(|snapshot| {
            snapshot.state = "registered";
            snapshot.router_id = router_id;
        });
        let body = json!({
            "server_id": self.config.server_id,
            "confirmed_capabilities": confirmed,
            "negotiated_encoding": encoding,
        });
        self.send("confirm", self.request(reqwest::Method::POST, &session.confirm_path).json(&body))
            .await
            .map_err(|error| (error, true))?;
        self.replica.status.with(|snapshot| {
            snapshot.negotiated_encoding = Some(encoding);
            snapshot.confirmed_capabilities = confirmed;
        });
        Ok(session)
    }

    async fn report(&self, session: &Session) {
        let settings = self.replica.faults.current();
        if settings.partition {
            return;
        }
        let sample = self.replica.load.sample(settings.overload);
        let body = json!({
            "server_id": self.config.server_id,
            "pending_requests": sample.pending_requests,
            "avg_response_time_ms": sample.avg_response_time_ms,
            "cpu_usage_percent": sample.cpu_usage_percent,
            "uptime_seconds": sample.uptime_seconds,
        });
        match self.send("status", self.request(reqwest::Method::POST, &session.status_path).json(&body)).await
        {
            Ok(_) => self.replica.status.with(|snapshot| snapshot.reports_sent += 1),
            Err(error) => {
                tracing::warn!(%error, "status report failed");
                self.replica.status.with(|snapshot| snapshot.last_error = Some(error.to_string()));
            }
        }
    }

    async fn deregister(&self, path: &str) {
        match self.send("deregister", self.request(reqwest::Method::DELETE, path)).await {
            Ok(_) => self.set_state("deregistered", None),
            Err(error) => {
                tracing::warn!(%error, "deregistration failed");
                self.replica.status.with(|snapshot| snapshot.last_error = Some(error.to_string()));
            }
        }
    }
}

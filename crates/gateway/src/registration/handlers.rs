//! The four handlers of the protocol. Each checks what it can before touching the registry,
//! in the order the errors are documented; `/register` reserves its server_id before it
//! awaits anything, and a registration that fails or whose caller goes away leaves nothing
//! behind (see [`Reservation`]).

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use serde_json::json;
use switchboard_router::config::{ServerToml, spec_from_toml};
use switchboard_router::labels::{KnownLabels, MCP_CAPABILITIES};
use switchboard_router::registry::HeldOutcome;

use super::allow::UrlRefusal;
use super::wire::{
    ConfirmRequest, RegisterRequest, RegisterResponse, RegistrationError, StatusRequest, parse,
};
use super::{ENCODINGS, Phase, Registered, Registration};

/// Where a self-registered server's definition says it came from.
pub const SOURCE: &str = "registration";

/// How often a deregistration looks at the calls still in flight.
const DRAIN_POLL: Duration = Duration::from_millis(10);

type Answer = Result<Response, RegistrationError>;

fn answer(a: Answer) -> Response {
    a.unwrap_or_else(IntoResponse::into_response)
}

/// The body, or why there is none.
fn body(body: Result<Bytes, BytesRejection>, limit: usize) -> Result<Bytes, RegistrationError> {
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            RegistrationError::TooLarge { limit }
        } else {
            RegistrationError::BadRequest(format!("the request body could not be read: {}", e.body_text()))
        }
    })
}

fn valid_server_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// A server_id claimed by a `/register` in progress. Unless disarmed, dropping it forgets the
/// registration and removes the server it added (the registration failed, or its caller went
/// away mid-way).
struct Reservation<'a> {
    reg: &'a Registration,
    id: String,
    added: bool,
    armed: bool,
}

impl Reservation<'_> {
    /// Forgets the registration and removes its server now.
    async fn release(mut self) {
        self.armed = false;
        self.reg.shared.lock().remove(&self.id);
        if self.added {
            self.reg.shared.registry.remove(&self.id).await;
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.reg.shared.lock().remove(&self.id);
        if self.added {
            let (registry, id) = (self.reg.shared.registry.clone(), self.id.clone());
            tokio::spawn(async move {
                registry.remove(&id).await;
            });
        }
    }
}

pub(super) async fn register(State(reg): State<Registration>, b: Result<Bytes, BytesRejection>) -> Response {
    answer(register_inner(&reg, b).await)
}

async fn register_inner(reg: &Registration, b: Result<Bytes, BytesRejection>) -> Answer {
    let req: RegisterRequest = parse(&body(b, reg.shared.body_limit)?)?;
    let config = reg.config();
    if !config.mcp_versions.contains(&req.mcp_version) {
        return Err(RegistrationError::VersionMismatch {
            got: req.mcp_version,
            speaks: config.mcp_versions.join(", "),
        });
    }
    let id = req.server_id.clone();
    if !valid_server_id(&id) {
        return Err(RegistrationError::BadRequest(format!(
            "server_id {id:?} is invalid: use 1–64 characters from A–Z, a–z, 0–9, '-', '_' and '.'"
        )));
    }
    let mut capabilities: Vec<String> = Vec::new();
    for c in &req.capabilities {
        config.labels.check(&id, c).map_err(|e| RegistrationError::UnknownCapability(e.to_string()))?;
        if !capabilities.contains(c) {
            capabilities.push(c.clone());
        }
    }
    if let Some(e) = req.supported_encodings.iter().find(|e| !ENCODINGS.contains(&e.as_str())) {
        return Err(RegistrationError::UnknownEncoding(format!(
            "unknown encoding {e:?} in supported_encodings: the router speaks {}",
            ENCODINGS.join(", ")
        )));
    }
    let encodings: Vec<String> = ENCODINGS
        .iter()
        .filter(|e| req.supported_encodings.iter().any(|s| s == *e))
        .map(|e| (*e).to_owned())
        .collect();
    if encodings.is_empty() {
        return Err(RegistrationError::UnknownEncoding(format!(
            "supported_encodings is empty: name at least one of {}",
            ENCODINGS.join(", ")
        )));
    }
    let metadata_len = serde_json::to_vec(&req.metadata).map_or(usize::MAX, |v| v.len());
    if metadata_len > config.max_metadata_bytes {
        return Err(RegistrationError::BadRequest(format!(
            "metadata is {metadata_len} bytes serialised; the limit is {}",
            config.max_metadata_bytes
        )));
    }
    config.allow.check(&req.url).map_err(|e| match e {
        UrlRefusal::NotHttp { .. } => RegistrationError::BadRequest(e.to_string()),
        UrlRefusal::NotAllowed { .. } => RegistrationError::UrlNotAllowed(e.to_string()),
    })?;
    let mut reservation = reserve(reg, &id, config.max_servers)?;
    let registry = &reg.shared.registry;
    // `metadata.group` declares the replica group at registration (docs/routing.md).
    let group = match req.metadata.get("group") {
        None | Some(Value::Null) => None,
        Some(Value::String(g)) => Some(g.clone()),
        Some(_) => {
            return Err(RegistrationError::BadRequest(
                "metadata.group must be a string (a replica group name)".into(),
            ));
        }
    };
    let table = ServerToml {
        url: Some(req.url.clone()),
        transport: Some("http".into()),
        labels: capabilities.iter().filter(|c| !KnownLabels::is_mcp(c)).cloned().collect(),
        group,
        ..ServerToml::default()
    };
    let spec =
        spec_from_toml(&id, table, SOURCE).map_err(|e| RegistrationError::BadRequest(e.to_string()))?;
    registry.add_held(spec).await.map_err(|e| match e {
        switchboard_router::Error::AlreadyExists { .. } => RegistrationError::DuplicateServerId(id.clone()),
        other => {
            tracing::warn!(server = %id, error = %other, "registration could not add the server");
            RegistrationError::Unreachable { server_id: id.clone(), url: req.url.clone() }
        }
    })?;
    reservation.added = true;
    if let Err(e) = verify(reg, &id, &req.url, &capabilities, config.connect_wait).await {
        reservation.release().await;
        return Err(e);
    }
    reservation.armed = false;
    reg.shared.lock().insert(
        id.clone(),
        Registered { phase: Phase::Held, capabilities: capabilities.clone(), encodings: encodings.clone() },
    );
    tracing::info!(server = %id, url = %req.url, "server registered; waiting for /confirm");
    let p = &reg.shared.paths;
    Ok(Json(RegisterResponse {
        mcp_version: req.mcp_version,
        router_id: config.router_id.clone(),
        capabilities,
        supported_encodings: encodings,
        metadata: json!({
            "load_sampling_interval_ms": config.load_sampling_interval.as_millis() as u64,
            "status_path": p.status,
            "confirm_path": p.confirm,
            "deregister_path": format!("{}/{id}", p.registration.trim_end_matches('/')),
        }),
    })
    .into_response())
}

/// Waits for the server's handshake and checks the claimed MCP capabilities against it.
async fn verify(
    reg: &Registration,
    id: &str,
    url: &str,
    capabilities: &[String],
    wait: Duration,
) -> Result<(), RegistrationError> {
    let registry = &reg.shared.registry;
    let unreachable = || RegistrationError::Unreachable { server_id: id.to_owned(), url: url.to_owned() };
    let outcome = registry.wait_held(id, wait).await;
    if outcome != HeldOutcome::Connected {
        // The operator's log gets the reason; the caller gets no more than the URL.
        tracing::info!(server = %id, ?outcome, "registration failed: the server did not handshake");
        return Err(unreachable());
    }
    let offered = registry
        .entry(id)
        .and_then(|e| e.client())
        .map(|c| c.handshake().server_capabilities.clone())
        .ok_or_else(unreachable)?;
    let has = |c: &str| offered.get(c).is_some_and(|v| !v.is_null());
    if let Some(missing) = capabilities.iter().find(|c| KnownLabels::is_mcp(c) && !has(c)) {
        let list: Vec<&str> = MCP_CAPABILITIES.iter().copied().filter(|c| has(c)).collect();
        let list = if list.is_empty() { "none".to_owned() } else { list.join(", ") };
        return Err(RegistrationError::CapabilityNotOffered(format!(
            "server {id:?} claims capability {missing:?} but its handshake does not offer it (it offers: {list})"
        )));
    }
    Ok(())
}

/// Claims `id` for a registration, after forgetting registrations whose server was removed
/// by someone else (the admin API, a reload).
fn reserve<'a>(reg: &'a Registration, id: &str, max: usize) -> Result<Reservation<'a>, RegistrationError> {
    let registry = &reg.shared.registry;
    let mut servers = reg.shared.lock();
    servers.retain(|name, r| r.phase == Phase::Connecting || registry.entry(name).is_some());
    if servers.contains_key(id) || registry.entry(id).is_some() {
        return Err(RegistrationError::DuplicateServerId(id.to_owned()));
    }
    if servers.len() >= max {
        return Err(RegistrationError::TooManyServers { limit: max });
    }
    servers.insert(
        id.to_owned(),
        Registered { phase: Phase::Connecting, capabilities: Vec::new(), encodings: Vec::new() },
    );
    Ok(Reservation { reg, id: id.to_owned(), added: false, armed: true })
}

/// The registration of `id` once `/register` has answered, or why there is none.
fn registered(
    reg: &Registration,
    id: &str,
    unknown: RegistrationError,
) -> Result<Registered, RegistrationError> {
    match reg.shared.lock().get(id) {
        None => Err(unknown),
        Some(r) if r.phase == Phase::Connecting => Err(RegistrationError::NotRegistered(format!(
            "server {id:?} is still registering: wait for the answer to POST {}",
            reg.shared.paths.registration
        ))),
        Some(r) => Ok(r.clone()),
    }
}

pub(super) async fn confirm(State(reg): State<Registration>, b: Result<Bytes, BytesRejection>) -> Response {
    answer(confirm_inner(&reg, b).await)
}

async fn confirm_inner(reg: &Registration, b: Result<Bytes, BytesRejection>) -> Answer {
    let req: ConfirmRequest = parse(&body(b, reg.shared.body_limit)?)?;
    let id = &req.server_id;
    let not_registered = || {
        RegistrationError::NotRegistered(format!(
            "server {id:?} is not registered: POST {} first",
            reg.shared.paths.registration
        ))
    };
    let r = registered(reg, id, not_registered())?;
    if let Some(c) = req.confirmed_capabilities.iter().find(|c| !r.capabilities.contains(c)) {
        return Err(RegistrationError::CapabilityNotOffered(format!(
            "confirmed capability {c:?} was not verified at registration (verified: {})",
            r.capabilities.join(", ")
        )));
    }
    if !r.encodings.contains(&req.negotiated_encoding) {
        return Err(RegistrationError::UnknownEncoding(format!(
            "negotiated_encoding {:?} is not one of the encodings the router answered with ({})",
            req.negotiated_encoding,
            r.encodings.join(", ")
        )));
    }
    let Some(state) = reg.shared.registry.confirm(id).await else {
        reg.shared.lock().remove(id);
        return Err(not_registered());
    };
    if let Some(r) = reg.shared.lock().get_mut(id) {
        r.phase = Phase::Confirmed;
    }
    tracing::info!(server = %id, state = state.as_str(), "registered server confirmed");
    Ok(Json(json!({"server_id": id, "state": state.as_str()})).into_response())
}

pub(super) async fn status(State(reg): State<Registration>, b: Result<Bytes, BytesRejection>) -> Response {
    answer(status_inner(&reg, b))
}

fn status_inner(reg: &Registration, b: Result<Bytes, BytesRejection>) -> Answer {
    let req: StatusRequest = parse(&body(b, reg.shared.body_limit)?)?;
    let r = &req.report;
    for (field, v) in
        [("avg_response_time_ms", r.avg_response_time_ms), ("cpu_usage_percent", r.cpu_usage_percent)]
    {
        if !v.is_finite() || v < 0.0 {
            return Err(RegistrationError::BadRequest(format!(
                "{field} must be a finite number ≥ 0 (it is {v})"
            )));
        }
    }
    let id = &req.server_id;
    registered(reg, id, RegistrationError::UnknownServerId(id.clone()))?;
    if !reg.shared.registry.report_load(id, req.report) {
        reg.shared.lock().remove(id);
        return Err(RegistrationError::UnknownServerId(id.clone()));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn deregister(State(reg): State<Registration>, Path(id): Path<String>) -> Response {
    answer(deregister_inner(&reg, id).await)
}

async fn deregister_inner(reg: &Registration, id: String) -> Answer {
    registered(reg, &id, RegistrationError::UnknownServerId(id.clone()))?;
    let registry = &reg.shared.registry;
    let mut drained = 0;
    if let Some(entry) = registry.entry(&id) {
        registry.set_draining(&id, true);
        drained = entry.load().in_flight();
        let deadline = tokio::time::Instant::now() + reg.config().drain_wait;
        while entry.load().in_flight() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(DRAIN_POLL).await;
        }
        let left = entry.load().in_flight();
        if left > 0 {
            tracing::warn!(server = %id, left, "deregistration: calls still in flight after the drain wait; cancelling them");
        }
        registry.remove(&id).await;
    }
    reg.shared.lock().remove(&id);
    tracing::info!(server = %id, drained, "registered server deregistered");
    Ok(Json(json!({"server_id": id, "drained_calls": drained})).into_response())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchboard_router::config::{ServerToml, spec_from_toml};
    use switchboard_router::{EventBus, Registry, RegistryConfig};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::registration::{RegistrationConfig, RegistrationPaths};

    /// A registration of a server that is never connected (disabled), confirmed.
    async fn registered(drain_wait: Duration) -> (Registration, Registry) {
        let registry =
            Registry::new(RegistryConfig::default(), None, EventBus::default(), CancellationToken::new());
        let table = ServerToml {
            url: Some("http://127.0.0.1:9/mcp".into()),
            enabled: Some(false),
            ..Default::default()
        };
        registry.add(spec_from_toml("fx", table, SOURCE).unwrap()).await.unwrap();
        let config = RegistrationConfig { drain_wait, ..RegistrationConfig::default() };
        let reg = Registration::new(registry.clone(), config, RegistrationPaths::default(), None);
        reg.shared.lock().insert(
            "fx".into(),
            Registered {
                phase: Phase::Confirmed,
                capabilities: vec!["tools".into()],
                encodings: vec!["json".into()],
            },
        );
        (reg, registry)
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_waits_for_the_calls_in_flight_but_not_forever() {
        let (reg, registry) = registered(Duration::from_secs(30)).await;
        let entry = registry.entry("fx").unwrap();
        let _stuck = entry.load().begin();
        let started = tokio::time::Instant::now();
        let answer = deregister_inner(&reg, "fx".into()).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert!(started.elapsed() >= Duration::from_secs(30), "it waited the whole drain");
        assert!(entry.load().draining());
        assert!(registry.entry("fx").is_none(), "removed once the wait ran out");
        assert!(reg.registered().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_ends_when_the_last_call_does() {
        let (reg, registry) = registered(Duration::from_secs(30)).await;
        let entry = registry.entry("fx").unwrap();
        let call = entry.load().begin();
        let started = tokio::time::Instant::now();
        let finisher = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            drop(call);
        });
        deregister_inner(&reg, "fx".into()).await.unwrap();
        finisher.await.unwrap();
        let took = started.elapsed();
        assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(3), "{took:?}");
        assert!(registry.entry("fx").is_none());
    }
}

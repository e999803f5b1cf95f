//! `GET /api/decisions`, `GET /api/decisions/{id}` and `GET /api/groups`: the scheduler's recent
//! routing decisions (candidates, each layer's verdict, scores, the chosen upstream and why),
//! one by id, and the replica groups with their members' live load and the affinity bindings.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use switchboard_router::schedule::{Decision, fingerprint};
use ts_rs::TS;

use crate::AdminState;
use crate::error::{AdminError, error_response};

/// The query of `GET /api/decisions`.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct DecisionQuery {
    /// Only the decisions of this affinity key: its fingerprint (`k:…`) or the key itself
    /// (a session id), which is fingerprinted here.
    #[ts(optional)]
    pub key: Option<String>,
    /// Only those whose chosen upstream (or a candidate) is this server.
    #[ts(optional)]
    pub server: Option<String>,
    /// Only this replica group's.
    #[ts(optional)]
    pub group: Option<String>,
    /// At most this many (default 200; the scheduler keeps the newest 2 048).
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// `GET /api/decisions?key=&server=&group=&limit=`: newest first.
pub async fn list(
    State(state): State<AdminState>,
    Query(q): Query<DecisionQuery>,
) -> Result<Response, AdminError> {
    let key = q
        .key
        .as_deref()
        .filter(|k| !k.is_empty())
        .map(|k| if k.starts_with("k:") && k.len() == 14 { k.to_owned() } else { fingerprint(k) });
    let cfg = state.config();
    let rows: Vec<Decision> = cfg
        .registry
        .scheduler()
        .decisions(super::limit(q.limit) as usize, |d| {
            key.as_ref().is_none_or(|k| d.key.as_ref() == Some(k))
                && q.group.as_ref().is_none_or(|g| &d.group == g)
                && q.server.as_ref().is_none_or(|s| d.candidates.iter().any(|c| &c.server == s))
        })
        .into_iter()
        .map(|d| (*d).clone())
        .collect();
    Ok(Json(rows).into_response())
}

/// `GET /api/decisions/{id}`.
pub async fn one(State(state): State<AdminState>, Path(id): Path<String>) -> Response {
    match state.config().registry.scheduler().decision(&id) {
        Some(d) => Json(&*d).into_response(),
        None => error_response(
            StatusCode::NOT_FOUND,
            &format!("no decision {id:?} is kept (the scheduler keeps the newest 2 048; traces keep theirs)"),
        ),
    }
}

/// One member of a replica group, as `GET /api/groups` shows it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct GroupMember {
    /// The server.
    pub server: String,
    /// Its state.
    pub state: String,
    /// Calls in flight through this router.
    pub in_flight: u64,
    /// Latency average (ms), once it served a call.
    pub ewma_ms: Option<f64>,
    /// Whether it is draining (deregistered).
    pub draining: bool,
}

/// One affinity binding.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Binding {
    /// The key's fingerprint.
    pub key: String,
    /// The upstream it is bound to.
    pub server: String,
    /// Seconds since it was bound there.
    pub age_secs: f64,
    /// Seconds since its last call.
    pub idle_secs: f64,
    /// Its calls there that succeeded.
    pub ok: u64,
    /// Its calls there that failed.
    pub failed: u64,
}

/// One replica group.
#[derive(Debug, Clone, Serialize, TS)]
pub struct GroupView {
    /// Its name.
    pub name: String,
    /// `single`, `declared` or `detected`.
    pub formed: String,
    /// Its members.
    pub members: Vec<GroupMember>,
    /// The affinity keys bound in it (newest use first, at most 200).
    pub bindings: Vec<Binding>,
}

/// `GET /api/groups`: every replica group with more than one member, or all with `?all=true`.
pub async fn groups(State(state): State<AdminState>, Query(q): Query<GroupQuery>) -> Response {
    let cfg = state.config();
    let table = switchboard_router::RouteTable::build(
        &cfg.registry,
        &switchboard_router::federation::FederationConfig::default(),
    );
    let bindings = cfg.registry.scheduler().affinity().snapshot(10_000);
    let out: Vec<GroupView> = table
        .groups
        .values()
        .filter(|g| q.all.unwrap_or(false) || g.members.len() > 1)
        .map(|g| GroupView {
            name: g.name.clone(),
            formed: serde_json::to_value(g.formed)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            members: g
                .members
                .iter()
                .map(|m| GroupMember {
                    server: m.server.clone(),
                    state: m.state.as_str().to_owned(),
                    in_flight: m.load.in_flight(),
                    ewma_ms: m.load.ewma_ms(),
                    draining: m.load.draining(),
                })
                .collect(),
            bindings: bindings
                .iter()
                .filter(|(group, _, _)| group == &g.name)
                .take(200)
                .map(|(_, key, b)| Binding {
                    key: key.clone(),
                    server: b.server.clone(),
                    age_secs: b.since.elapsed().as_secs_f64(),
                    idle_secs: b.last.elapsed().as_secs_f64(),
                    ok: b.ok,
                    failed: b.failed,
                })
                .collect(),
        })
        .collect();
    Json(out).into_response()
}

/// The query of `GET /api/groups`.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct GroupQuery {
    /// Also servers of their own.
    #[ts(optional)]
    pub all: Option<bool>,
}

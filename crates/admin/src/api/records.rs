//! `GET /api/handshakes`, `GET /api/traces` and `GET /api/sessions`: the stored history, newest
//! first, and the live sessions table.

use axum::Json;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use switchboard_store::{HandshakeRecord, TraceRecord};
use ts_rs::TS;

use crate::AdminState;
use crate::error::AdminError;

/// The query of `GET /api/handshakes`.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct HandshakeQuery {
    /// Only this server's (by name or id).
    #[ts(optional)]
    pub server: Option<String>,
    /// Only this leg's: `upstream` or `downstream`.
    #[ts(optional)]
    pub leg: Option<String>,
    /// At most this many (default 200, at most 10 000).
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// The handshakes `q` asks for, newest first.
pub async fn handshake_list(
    state: &AdminState,
    q: &HandshakeQuery,
) -> Result<Vec<HandshakeRecord>, AdminError> {
    let cfg = state.config();
    // A removed server's history is kept under its id, so an unknown name is tried as one.
    let server_id = q
        .server
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(|s| cfg.registry.entry(s).map_or_else(|| s.to_owned(), |e| e.id.clone()));
    let limit = super::limit(q.limit);
    // A leg filter reads more rows, so `limit` of that leg can still come back.
    let read = if q.leg.is_some() { super::MAX_LIMIT } else { limit };
    let mut rows = cfg.store.handshakes(server_id.as_deref(), read).await?;
    if let Some(leg) = q.leg.as_deref() {
        rows.retain(|h| h.leg == leg);
    }
    rows.truncate(limit as usize);
    Ok(rows)
}

/// `GET /api/handshakes?server=&leg=&limit=`.
pub async fn handshakes(
    State(state): State<AdminState>,
    Query(q): Query<HandshakeQuery>,
) -> Result<Response, AdminError> {
    Ok(Json(handshake_list(&state, &q).await?).into_response())
}

/// The query of `GET /api/traces`.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct TraceQuery {
    /// At most this many (default 200, at most 10 000).
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// The newest `limit` traces.
pub async fn trace_list(state: &AdminState, limit: Option<u32>) -> Result<Vec<TraceRecord>, AdminError> {
    Ok(state.config().store.traces(super::limit(limit)).await?)
}

/// `GET /api/traces?limit=`.
pub async fn traces(
    State(state): State<AdminState>,
    Query(q): Query<TraceQuery>,
) -> Result<Response, AdminError> {
    Ok(Json(trace_list(&state, q.limit).await?).into_response())
}

/// `GET /api/sessions`: the downstream sessions and callers with their upstream bindings, as
/// the app's source gives them; 404 when the app gave none.
pub async fn sessions(State(state): State<AdminState>) -> Response {
    match state.config().sessions.as_ref() {
        Some(read) => Json(read()).into_response(),
        None => crate::error::error_response(
            axum::http::StatusCode::NOT_FOUND,
            "this router keeps no sessions table",
        ),
    }
}

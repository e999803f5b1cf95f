//! The control API, on the replica's own listener beside `/mcp`:
//!
//! - `GET /chaos` → `{"replica", "server": {"name", "version"}, "url", "faults", "counters",
//!   "pending_requests", "registration"}`.
//! - `POST /chaos/faults` with a JSON [`FaultPatch`](crate::faults::FaultPatch) → 200
//!   `{"faults": …}` (the merged settings), or 400 `{"error": {"code", "message"}}` (`bad-request`
//!   for malformed JSON or an unknown field, `bad-fault` for a refused value; nothing changes).
//!   `{"crash": true}` gets no answer: the replica crashes.
//! - `POST /chaos/reset` → faults healthy, counters zero, store empty; answers like `GET /chaos`.
//!
//! With a control token every route needs `Authorization: Bearer <token>` (401
//! `unauthorized` otherwise). No fault affects `/chaos`.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::Bytes,
    extract::{DefaultBodyLimit, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde_json::{Value, json};

use crate::faults::FaultPatch;
use crate::replica::{Replica, SERVER_NAME, SERVER_VERSION};

/// Path of the control API's root.
pub const CONTROL_PATH: &str = "/chaos";
/// Largest control request body.
pub const MAX_CONTROL_BODY_BYTES: usize = 64 * 1024;

/// What the control routes need.
#[derive(Debug, Clone)]
pub struct ControlState {
    /// The replica.
    pub replica: Arc<Replica>,
    /// The bearer token every control request must carry, if any.
    pub token: Option<String>,
    /// The replica's MCP URL, reported by `GET /chaos`.
    pub url: String,
}

/// The control routes.
pub fn router(state: ControlState) -> Router {
    Router::new()
        .route(CONTROL_PATH, get(status))
        .route("/chaos/faults", post(set_faults))
        .route("/chaos/reset", post(reset))
        .layer(DefaultBodyLimit::max(MAX_CONTROL_BODY_BYTES))
        .with_state(state)
}

fn error(status: StatusCode, code: &str, message: impl std::fmt::Display) -> Response {
    (status, Json(json!({ "error": { "code": code, "message": message.to_string() } }))).into_response()
}

/// The 401 answer when the request lacks the control token; `None` when it may proceed.
fn rejection(state: &ControlState, headers: &HeaderMap) -> Option<Response> {
    let token = state.token.as_ref()?;
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if given == Some(token.as_str()) {
        None
    } else {
        Some(error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the control API needs the control token (Authorization: Bearer …)",
        ))
    }
}

/// The body of `GET /chaos`.
pub fn snapshot(state: &ControlState) -> Value {
    let replica = &state.replica;
    json!({
        "replica": replica.id,
        "server": { "name": SERVER_NAME, "version": SERVER_VERSION },
        "url": state.url,
        "faults": replica.faults.current(),
        "counters": replica.counters.snapshot(),
        "pending_requests": replica.load.pending_now(),
        "registration": replica.registration.snapshot(),
    })
}

async fn status(State(state): State<ControlState>, headers: HeaderMap) -> Response {
    if let Some(response) = rejection(&state, &headers) {
        return response;
    }
    Json(snapshot(&state)).into_response()
}

async fn set_faults(State(state): State<ControlState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(response) = rejection(&state, &headers) {
        return response;
    }
    let patch: FaultPatch = match serde_json::from_slice(&body) {
        Ok(patch) => patch,
        Err(reason) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad-request",
                format!("malformed fault settings: {reason}"),
            );
        }
    };
    let crash = patch.crash == Some(true);
    match state.replica.faults.apply(patch) {
        Ok(_) if crash => {
            // The serving loop closes this connection (or the process exits): no answer.
            std::future::pending::<()>().await;
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Ok(settings) => Json(json!({ "faults": settings })).into_response(),
        Err(reason) => error(StatusCode::BAD_REQUEST, "bad-fault", reason),
    }
}

async fn reset(State(state): State<ControlState>, headers: HeaderMap) -> Response {
    if let Some(response) = rejection(&state, &headers) {
        return response;
    }
    state.replica.faults.reset();
    state.replica.counters.reset();
    state.replica.store.clear();
    Json(snapshot(&state)).into_response()
}

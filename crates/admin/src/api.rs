//! The JSON commands under `/api`, one module per resource. Each module holds its routes'
//! handlers and the bodies they take and give (which derive [`ts_rs::TS`] for the UI).
//!
//! Bodies of commands are bounded ([`BODY_LIMIT`]); a route that does not exist under `/api`
//! is a JSON `404` (behind the guard like every other `/api` path).

pub mod frames;
pub mod overview;
pub mod records;
pub mod routing;
pub mod servers;
pub mod settings;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{any, get, post};

use crate::AdminState;
use crate::error::error_response;

/// The largest JSON command body accepted.
pub const BODY_LIMIT: usize = 1024 * 1024;

/// Newest items a list answers with when no `limit` is given.
pub const DEFAULT_LIMIT: u32 = 200;

/// Most items a list answers with, whatever `limit` says.
pub const MAX_LIMIT: u32 = 10_000;

/// `limit` of a query, bounded by [`MAX_LIMIT`].
pub(crate) fn limit(asked: Option<u32>) -> u32 {
    asked.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

async fn unknown_route() -> Response {
    error_response(StatusCode::NOT_FOUND, "no such admin route (see docs/admin-api.md)")
}

/// The `/api` command routes of this crate, without the guard.
pub fn routes(state: AdminState) -> Router {
    Router::new()
        .route("/api/overview", get(overview::get_overview))
        .route("/api/servers", get(servers::list).post(servers::add))
        .route("/api/servers/import", post(servers::import))
        .route("/api/servers/{name}", axum::routing::delete(servers::remove))
        .route("/api/servers/{name}/restart", post(servers::restart))
        .route("/api/servers/{name}/catalog", get(servers::catalog))
        .route("/api/handshakes", get(records::handshakes))
        .route("/api/traces", get(records::traces))
        .route("/api/sessions", get(records::sessions))
        .route("/api/decisions", get(routing::list))
        .route("/api/decisions/{id}", get(routing::one))
        .route("/api/groups", get(routing::groups))
        .route("/api/frames", get(frames::list))
        .route("/api/frames/export", get(frames::export))
        .route("/api/settings", get(settings::get_settings))
        .route("/api", any(unknown_route))
        .route("/api/{*rest}", any(unknown_route))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

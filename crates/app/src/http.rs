//! The router's HTTP listener: the MCP endpoint, blobs and health.
//!
//! [`router_with`] builds the axum app around a [`Gateway`] (which brings `/mcp`);
//! [`with_token`] puts it behind the bearer token; [`serve_with`] serves it. [`crate::App`]
//! composes the three for every binary and test, and merges the admin API (`/api`, behind
//! its own guard, and the UI's files: `switchboard-admin`) beside them.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::blobs::{BlobError, BlobStore};
use switchboard_gateway::Gateway;

use crate::endpoint::EndpointConfig;
pub use crate::listener::ListenerConfig;

/// Shared state of the listener.
#[derive(Clone)]
pub struct HttpState {
    /// Uploaded inputs.
    pub blobs: BlobStore,
    /// The MCP endpoint's settings.
    pub endpoint: Arc<EndpointConfig>,
}

fn error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

impl IntoResponse for BlobError {
    fn into_response(self) -> Response {
        let status = match &self {
            BlobError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BlobError::Empty | BlobError::BadId(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        error(status, self.to_string())
    }
}

async fn get_blob(State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Response {
    match s.blobs.get(&id).await {
        Ok(Some(bytes)) => ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("no blob {id}")),
        Err(e) => e.into_response(),
    }
}

async fn put_blob(State(s): State<Arc<HttpState>>, body: Body) -> Response {
    let limit = s.blobs.limit();
    match s.blobs.put_stream(body.into_data_stream()).await {
        Ok(r) => (
            StatusCode::CREATED,
            axum::Json(json!({"sha256": r.sha256, "size": r.size, "url": format!("/blobs/{}", r.sha256)})),
        )
            .into_response(),
        // The body limit layer cuts the stream at the limit; report it as the limit.
        Err(BlobError::Io { .. }) | Err(BlobError::TooLarge { .. }) => {
            BlobError::TooLarge { size: limit + 1, limit }.into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// The axum application without the bearer token: `/healthz`, blobs and the gateway's `/mcp`
/// (with its edge: deadlines, traces, WebSocket upgrades).
pub fn router_with(state: HttpState, gateway: &Gateway) -> Router {
    let limit = usize::try_from(state.blobs.limit()).unwrap_or(usize::MAX);
    let state = Arc::new(state);
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/blobs/{id}", get(get_blob))
        .route("/blobs", post(put_blob).layer(DefaultBodyLimit::max(limit)))
        .with_state(state)
        .merge(gateway.router())
}

/// `router` behind the bearer token ([`crate::auth`]) when one is set; `/healthz` stays open.
pub fn with_token(router: Router, token: Option<crate::auth::BearerToken>) -> Router {
    match token {
        Some(token) => router.layer(axum::middleware::from_fn_with_state(token, crate::auth::require)),
        None => router,
    }
}

/// Serves `app` on `listener` until `cancel` fires, then stops accepting and drains the
/// requests in flight (idle connections close at once). Handlers see the peer address as
/// `ConnectInfo<SocketAddr>`. Connections are bounded in number and in how long they may
/// take to send a request's headers or stay idle ([`crate::listener`]).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: Router,
    config: ListenerConfig,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    crate::listener::run(listener, app, config, cancel).await
}

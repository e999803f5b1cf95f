//! The diagnosis routes of the admin API (`docs/admin-api.md`): blob upload, the thermal view
//! of an uploaded image, the default flow's graph, and runs (list, start, detail, cancel).
//!
//! [`routes`] is an `axum::Router` with absolute `/api/...` paths; the app merges it behind
//! the `/api` guard (token and Origin), which is not applied here. Every error answer is
//! `{"error": "<one sentence>"}` with the status [`status_of`] gives.

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::view::{BlobUploaded, ErrorBody, RunAccepted, RunRequest};
use super::{Diagnosis, DiagnosisError, ThermalViewError};
use crate::blobs::BlobError;

/// Largest JSON command body.
pub const MAX_COMMAND_BODY: usize = 1024 * 1024;
/// Runs `GET /api/runs` lists without `limit`.
pub const DEFAULT_RUN_LIMIT: u32 = 50;

fn error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(ErrorBody { error: message })).into_response()
}

/// The HTTP status of a refusal.
pub fn status_of(e: &DiagnosisError) -> StatusCode {
    match e {
        DiagnosisError::Input(_) | DiagnosisError::NotABlob(_) => StatusCode::BAD_REQUEST,
        DiagnosisError::Blob(BlobError::BadId(_) | BlobError::Empty) => StatusCode::BAD_REQUEST,
        DiagnosisError::Blob(BlobError::TooLarge { .. }) => StatusCode::PAYLOAD_TOO_LARGE,
        DiagnosisError::UnknownBlob(_) | DiagnosisError::UnknownRun(_) => StatusCode::NOT_FOUND,
        DiagnosisError::Thermal(ThermalViewError::Decode(_) | ThermalViewError::TooLarge { .. }) => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        DiagnosisError::Ended { .. } => StatusCode::CONFLICT,
        DiagnosisError::Busy(_) => StatusCode::TOO_MANY_REQUESTS,
        DiagnosisError::Flow(_) | DiagnosisError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for DiagnosisError {
    fn into_response(self) -> Response {
        error(status_of(&self), self.to_string())
    }
}

fn ok<T: serde::Serialize>(status: StatusCode, body: T) -> Response {
    (status, axum::Json(body)).into_response()
}

async fn upload(State(d): State<Diagnosis>, body: Body) -> Response {
    let limit = d.blobs().limit();
    match d.blobs().put_stream(body.into_data_stream()).await {
        Ok(b) => ok(
            StatusCode::CREATED,
            BlobUploaded { reference: format!("blob:{}", b.sha256), sha256: b.sha256, size: b.size },
        ),
        // The body limit layer cuts the stream at the limit; say so with the limit.
        Err(BlobError::Io { .. } | BlobError::TooLarge { .. }) => {
            DiagnosisError::Blob(BlobError::TooLarge { size: limit + 1, limit }).into_response()
        }
        Err(e) => DiagnosisError::Blob(e).into_response(),
    }
}

async fn thermal(State(d): State<Diagnosis>, Path(sha256): Path<String>) -> Response {
    match d.thermal(&sha256).await {
        Ok(view) => ok(StatusCode::OK, view),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/runs` query.
#[derive(Debug, Deserialize)]
struct ListQuery {
    limit: Option<u32>,
}

async fn list(State(d): State<Diagnosis>, Query(q): Query<ListQuery>) -> Response {
    match d.runs(q.limit.unwrap_or(DEFAULT_RUN_LIMIT)).await {
        Ok(runs) => ok(StatusCode::OK, runs),
        Err(e) => e.into_response(),
    }
}

async fn start(State(d): State<Diagnosis>, body: Result<axum::Json<RunRequest>, JsonRejection>) -> Response {
    let request = match body {
        Ok(axum::Json(r)) => r,
        Err(e) => return error(e.status(), format!("the run request is not valid: {}", e.body_text())),
    };
    match d.start(request).await {
        Ok(run_id) => ok(StatusCode::ACCEPTED, RunAccepted { run_id }),
        Err(e) => e.into_response(),
    }
}

async fn detail(State(d): State<Diagnosis>, Path(id): Path<String>) -> Response {
    match d.run_view(&id).await {
        Ok(view) => ok(StatusCode::OK, view),
        Err(e) => e.into_response(),
    }
}

async fn cancel(State(d): State<Diagnosis>, Path(id): Path<String>) -> Response {
    match d.cancel(&id).await {
        Ok(()) => ok(StatusCode::ACCEPTED, RunAccepted { run_id: id }),
        Err(e) => e.into_response(),
    }
}

/// The diagnosis routes (see the module docs), over `diagnosis` and its blob store.
pub fn routes(diagnosis: Diagnosis) -> Router {
    let blob_limit = usize::try_from(diagnosis.blobs().limit()).unwrap_or(usize::MAX);
    Router::new()
        .route("/api/blobs", post(upload).layer(DefaultBodyLimit::max(blob_limit)))
        .route("/api/blobs/{sha256}/thermal", get(thermal))
        .route("/api/flow", get(|State(d): State<Diagnosis>| async move { ok(StatusCode::OK, d.graph()) }))
        .route("/api/runs", get(list).post(start).layer(DefaultBodyLimit::max(MAX_COMMAND_BODY)))
        .route("/api/runs/{id}", get(detail))
        .route("/api/runs/{id}/cancel", post(cancel))
        .with_state(diagnosis)
}

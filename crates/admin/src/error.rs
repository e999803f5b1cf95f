//! The admin API's errors and their one HTTP shape: a status and `{"error": "<sentence>"}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// What an admin command can fail with. Messages are one specific sentence, lower-case,
/// and never carry a token or a header value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The request is malformed (a missing or conflicting field, bad JSON, a bad filter).
    #[error("{0}")]
    BadRequest(String),
    /// No such server.
    #[error("no server named {0:?} is registered")]
    UnknownServer(String),
    /// A server of that name exists already.
    #[error("{0}")]
    Conflict(String),
    /// The registry refused.
    #[error("the registry refused: {0}")]
    Registry(#[from] switchboard_router::Error),
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(#[from] switchboard_store::Error),
}

impl AdminError {
    /// The HTTP status it answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            AdminError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AdminError::UnknownServer(_) => StatusCode::NOT_FOUND,
            AdminError::Conflict(_) => StatusCode::CONFLICT,
            AdminError::Registry(switchboard_router::Error::AlreadyExists { .. }) => StatusCode::CONFLICT,
            AdminError::Registry(switchboard_router::Error::UnknownServer { .. }) => StatusCode::NOT_FOUND,
            AdminError::Registry(_) | AdminError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// `{"error": message}` with `status`.
pub fn error_response(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        error_response(self.status(), &self.to_string())
    }
}

/// The body of every 4xx/5xx answer of the admin API.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
pub struct ErrorBody {
    /// One specific sentence.
    pub error: String,
}

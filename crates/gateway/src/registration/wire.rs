//! The bodies of the registration protocol (`docs/registration.md`) and its errors, each with
//! its code and HTTP status: `{"error": {"code": "<kebab-code>", "message": "<sentence>"}}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `POST /register`.
#[derive(Debug, Clone, Deserialize)]
pub struct RegisterRequest {
    /// The MCP revision the server speaks.
    pub mcp_version: String,
    /// The name it is registered under (also its tools' prefix).
    pub server_id: String,
    /// Its Streamable HTTP endpoint.
    pub url: String,
    /// MCP capabilities and domain labels it claims.
    pub capabilities: Vec<String>,
    /// Encodings it can answer in (`json`, `sse`).
    pub supported_encodings: Vec<String>,
    /// Free-form, bounded.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// `POST /confirm`.
#[derive(Debug, Clone, Deserialize)]
pub struct ConfirmRequest {
    /// The registered server.
    pub server_id: String,
    /// A subset of the capabilities the router verified.
    pub confirmed_capabilities: Vec<String>,
    /// One of the encodings the router answered with.
    pub negotiated_encoding: String,
}

/// `POST /status`.
#[derive(Debug, Clone, Deserialize)]
pub struct StatusRequest {
    /// The registered server.
    pub server_id: String,
    /// Its load.
    #[serde(flatten)]
    pub report: switchboard_router::registry::LoadReport,
}

/// The answer to `POST /register`.
#[derive(Debug, Clone, Serialize)]
pub struct RegisterResponse {
    /// The revision the router agreed to.
    pub mcp_version: String,
    /// Which router this is.
    pub router_id: String,
    /// The claimed capabilities the router verified.
    pub capabilities: Vec<String>,
    /// The encodings both sides speak, the router's preference first.
    pub supported_encodings: Vec<String>,
    /// Where and how often to report.
    pub metadata: Value,
}

/// A registration refused, with what the caller should know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// Missing or wrong bearer token (the `WWW-Authenticate` challenge, the message).
    #[error("{1}")]
    Unauthorized(&'static str, &'static str),
    /// A revision the router does not speak.
    #[error("mcp_version {got:?} is not spoken by this router (it speaks {speaks})")]
    VersionMismatch {
        /// Asked for.
        got: String,
        /// The router's revisions.
        speaks: String,
    },
    /// The name is taken.
    #[error("server_id {0:?} is already registered; deregister it first or choose another server_id")]
    DuplicateServerId(String),
    /// A label nobody declared.
    #[error("{0}")]
    UnknownCapability(String),
    /// An encoding that is not `json` or `sse`, or none in common.
    #[error("{0}")]
    UnknownEncoding(String),
    /// The URL's host is not allowed.
    #[error("{0}")]
    UrlNotAllowed(String),
    /// Connecting or handshaking failed (never with the server's stderr).
    #[error("could not connect to server {server_id:?} at {url} and complete an MCP handshake")]
    Unreachable {
        /// The server.
        server_id: String,
        /// Where.
        url: String,
    },
    /// Claimed, but the handshake does not show it.
    #[error("{0}")]
    CapabilityNotOffered(String),
    /// `/status` or `DELETE` for a server that was never registered.
    #[error("no registered server has server_id {0:?}")]
    UnknownServerId(String),
    /// `/confirm` before a completed `/register`.
    #[error("{0}")]
    NotRegistered(String),
    /// Malformed JSON, a missing or mistyped field.
    #[error("{0}")]
    BadRequest(String),
    /// The body is over the limit.
    #[error("the request body is over the limit of {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The registration table is full.
    #[error("this router has reached its limit of {limit} self-registered servers; deregister one first")]
    TooManyServers {
        /// The limit.
        limit: usize,
    },
}

impl RegistrationError {
    /// The protocol's code.
    pub fn code(&self) -> &'static str {
        match self {
            RegistrationError::Unauthorized(..) => "unauthorized",
            RegistrationError::VersionMismatch { .. } => "version-mismatch",
            RegistrationError::DuplicateServerId(_) => "duplicate-server-id",
            RegistrationError::UnknownCapability(_) => "unknown-capability",
            RegistrationError::UnknownEncoding(_) => "unknown-encoding",
            RegistrationError::UrlNotAllowed(_) => "url-not-allowed",
            RegistrationError::Unreachable { .. } => "unreachable",
            RegistrationError::CapabilityNotOffered(_) => "capability-not-offered",
            RegistrationError::UnknownServerId(_) => "unknown-server-id",
            RegistrationError::NotRegistered(_) => "not-registered",
            RegistrationError::BadRequest(_) => "bad-request",
            RegistrationError::TooLarge { .. } => "too-large",
            RegistrationError::TooManyServers { .. } => "too-many-servers",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            RegistrationError::Unauthorized(..) => StatusCode::UNAUTHORIZED,
            RegistrationError::DuplicateServerId(_) | RegistrationError::NotRegistered(_) => {
                StatusCode::CONFLICT
            }
            RegistrationError::UrlNotAllowed(_) => StatusCode::FORBIDDEN,
            RegistrationError::Unreachable { .. } => StatusCode::BAD_GATEWAY,
            RegistrationError::CapabilityNotOffered(_) => StatusCode::UNPROCESSABLE_ENTITY,
            RegistrationError::UnknownServerId(_) => StatusCode::NOT_FOUND,
            RegistrationError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            RegistrationError::TooManyServers { .. } => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

impl IntoResponse for RegistrationError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code(), "message": self.to_string()}});
        let mut resp = (self.status(), axum::Json(body)).into_response();
        if let RegistrationError::Unauthorized(challenge, _) = self {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
        }
        resp
    }
}

/// Parses a request body: malformed JSON, a missing field or a mistyped one is a
/// `bad-request` naming what is wrong.
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, RegistrationError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| RegistrationError::BadRequest(format!("the request body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(RegistrationError::BadRequest("the request body must be a JSON object".into()));
    }
    serde_json::from_value(value)
        .map_err(|e| RegistrationError::BadRequest(format!("the request body is not valid: {e}")))
}

//! The optional bearer token in front of the listener.
//!
//! When a token is configured every request to a route that carries data or commands — `/mcp`
//! (POST, GET with WebSocket upgrades, DELETE), `/blobs` (upload and download), the server
//! list, and whatever joins them — must carry `Authorization: Bearer <token>`; anything else is
//! answered with 401, `WWW-Authenticate: Bearer` and an error saying what was wrong (a
//! JSON-RPC error on `/mcp`, `{"error": …}` elsewhere). Only the routes in [`OPEN_PATHS`]
//! (health) answer without it: a new route is guarded unless it is added there. Messages
//! arriving over stdio or inside an accepted WebSocket reach the endpoint in-process and never
//! pass this layer: the process owner (stdio) or the upgrade request (WebSocket) was already
//! trusted.
//!
//! The comparison hashes both sides with SHA-256 and compares the digests in constant time,
//! so neither the token's bytes nor its length leak through timing.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use switchboard_wire::{ErrorObject, Message, error_code};

/// Paths that answer without the token: they carry no data and accept no commands.
pub const OPEN_PATHS: [&str; 1] = ["/healthz"];

/// Environment variable read for the token when no other source names one.
pub const TOKEN_ENV: &str = "SWITCHBOARD_TOKEN";

/// The token `/mcp` requires. Only its digest is kept; `Debug` shows nothing.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(Arc<[u8; 32]>);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// A token; `None` for an empty (or all-whitespace) one.
    pub fn new(token: &str) -> Option<BearerToken> {
        let t = token.trim();
        (!t.is_empty()).then(|| BearerToken(Arc::new(Sha256::digest(t.as_bytes()).into())))
    }

    /// Resolves the configured token: the variable named by `--token-env` (or the config's
    /// `token_env`), which must then be set and non-empty; otherwise `SWITCHBOARD_TOKEN` if set.
    pub fn from_env(var: Option<&str>) -> Result<Option<BearerToken>, String> {
        match var {
            Some(var) => match std::env::var(var) {
                Ok(v) => BearerToken::new(&v)
                    .map(Some)
                    .ok_or_else(|| format!("environment variable {var} (the endpoint token) is empty")),
                Err(_) => Err(format!("environment variable {var} (the endpoint token) is not set")),
            },
            None => Ok(std::env::var(TOKEN_ENV).ok().and_then(|v| BearerToken::new(&v))),
        }
    }

    /// Whether `presented` is the token, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.trim().as_bytes()).into();
        digest.iter().zip(self.0.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

fn unauthorized(challenge: &'static str, message: &str, json_rpc: bool) -> Response {
    let body = if json_rpc {
        Message::error_response(None, ErrorObject::new(error_code::UNAUTHORIZED, message)).to_bytes()
    } else {
        serde_json::to_vec(&serde_json::json!({"error": message})).unwrap_or_default()
    };
    let mut resp =
        (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    resp
}

/// Why a request's `Authorization` header does not carry `expected`: the `WWW-Authenticate`
/// challenge and a message for the caller; `None` when it does.
pub fn refusal(expected: &BearerToken, headers: &HeaderMap) -> Option<(&'static str, &'static str)> {
    match headers.get(header::AUTHORIZATION).map(|v| v.to_str().unwrap_or_default()) {
        None => Some((
            r#"Bearer realm="switchboard""#,
            "Unauthorized: this endpoint requires an Authorization: Bearer <token> header",
        )),
        Some(presented) => match presented.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => (!expected.matches(token))
                .then_some((
                    r#"Bearer realm="switchboard", error="invalid_token""#,
                    "Unauthorized: the bearer token is not the one this endpoint was started with",
                )),
            _ => Some((
                r#"Bearer realm="switchboard", error="invalid_request""#,
                "Unauthorized: the Authorization header must use the Bearer scheme",
            )),
        },
    }
}

/// The middleware: checks every request except those to [`OPEN_PATHS`].
pub async fn require(State(expected): State<BearerToken>, req: Request, next: Next) -> Response {
    if OPEN_PATHS.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let json_rpc = req.uri().path() == "/mcp";
    match refusal(&expected, req.headers()) {
        Some((challenge, message)) => unauthorized(challenge, message, json_rpc),
        None => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_value_only() {
        let t = BearerToken::new("s3cret").unwrap();
        assert!(t.matches("s3cret"));
        assert!(!t.matches("s3cret2"));
        assert!(!t.matches(""));
        assert!(BearerToken::new("  ").is_none());
        assert_eq!(format!("{t:?}"), "BearerToken(..)");
    }
}

//! Who may use `/api`: the Origin rule first (a foreign browser page is `403` before the token
//! is looked at), then the token (`401` when missing or wrong).
//!
//! The token is always required — the configured one or a per-launch random one
//! ([`AdminToken::random`]) — because the panel can add servers, which run commands. It
//! travels as `Authorization: Bearer <token>`, or, for the event WebSocket (browsers cannot set
//! headers on one), as the subprotocol `bearer.<token>` next to `switchboard.events`
//! (`docs/decisions.md`, "The panel's token"). The comparison hashes both sides and compares
//! the digests in constant time. [`Access::layer`] is an axum middleware the app can put on
//! any other `/api` routes too.

use std::net::SocketAddr;
use std::sync::{Arc, PoisonError, RwLock};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::error::error_response;

/// The subprotocol the event WebSocket speaks.
pub const EVENTS_PROTOCOL: &str = "switchboard.events";

/// Prefix of the subprotocol that carries the token.
pub const BEARER_PROTOCOL_PREFIX: &str = "bearer.";

/// Origins of the desktop shell's web view, always allowed.
pub const SHELL_ORIGINS: [&str; 2] = ["tauri://localhost", "http://tauri.localhost"];

/// The panel's token. Keeps the secret (the panel's URL carries it) and its digest; `Debug`
/// shows neither.
#[derive(Clone)]
pub struct AdminToken {
    secret: Arc<str>,
    digest: [u8; 32],
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

/// Errors making a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The configured token is empty.
    #[error("the admin token is empty")]
    Empty,
    /// The OS had no randomness to give.
    #[error("no randomness for the admin token: {0}")]
    Random(String),
}

impl AdminToken {
    /// A configured token (trimmed); empty is refused.
    pub fn new(secret: &str) -> Result<AdminToken, TokenError> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(TokenError::Empty);
        }
        Ok(AdminToken { secret: secret.into(), digest: Sha256::digest(secret.as_bytes()).into() })
    }

    /// A per-launch token: 32 bytes from the OS, hex.
    pub fn random() -> Result<AdminToken, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        AdminToken::new(&hex)
    }

    /// The secret itself, for the panel's URL. Never log it.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Whether `presented` is the token, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.trim().as_bytes()).into();
        digest.iter().zip(self.digest.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// The addresses the router listens on, filled in as listeners are bound (the Origin rule
/// accepts the router's own origin, whose port is known only then). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Listeners(Arc<RwLock<Vec<SocketAddr>>>);

impl Listeners {
    /// Records a bound listener.
    pub fn add(&self, addr: SocketAddr) {
        self.0.write().unwrap_or_else(PoisonError::into_inner).push(addr);
    }

    /// The bound listeners, in binding order.
    pub fn all(&self) -> Vec<SocketAddr> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The guard's settings (see the module docs). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Access {
    token: AdminToken,
    allowed_origins: Arc<[String]>,
    listeners: Listeners,
}

impl Access {
    /// A guard requiring `token`, allowing the router's own origins (on the ports in
    /// `listeners`), the desktop shell's and `allowed_origins` (exact, case-insensitive).
    pub fn new(token: AdminToken, allowed_origins: Vec<String>, listeners: Listeners) -> Access {
        Access { token, allowed_origins: allowed_origins.into(), listeners }
    }

    /// The token.
    pub fn token(&self) -> &AdminToken {
        &self.token
    }

    /// Puts `router` behind this guard.
    pub fn layer<S: Clone + Send + Sync + 'static>(&self, router: Router<S>) -> Router<S> {
        router.layer(axum::middleware::from_fn_with_state(self.clone(), guard))
    }

    /// Whether a request with this `Origin` may pass: the router's own origin (`localhost`,
    /// `127.0.0.1` or `[::1]` on a port it listens on; any port while it listens on none, as
    /// when a test calls the router without a socket), the shell's, or a configured one.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let listed = |a: &str| a.eq_ignore_ascii_case(origin);
        if SHELL_ORIGINS.into_iter().any(listed) || self.allowed_origins.iter().any(|a| listed(a)) {
            return true;
        }
        let Some(rest) = origin.strip_prefix("http://") else { return false };
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !p.contains(']') => (h, p.parse::<u16>().ok()),
            _ => (rest, Some(80)),
        };
        if !matches!(host.to_ascii_lowercase().as_str(), "localhost" | "127.0.0.1" | "[::1]") {
            return false;
        }
        let ports: Vec<u16> = self.listeners.all().iter().map(SocketAddr::port).collect();
        ports.is_empty() || port.is_some_and(|p| ports.contains(&p))
    }

    /// Why a request without a usable token is refused, or `None` when it carries the token.
    fn refusal(&self, headers: &HeaderMap) -> Option<(&'static str, &'static str)> {
        if let Some(presented) = headers.get(header::AUTHORIZATION) {
            let presented = presented.to_str().unwrap_or_default();
            return match presented.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                    (!self.token.matches(token)).then_some((
                        r#"Bearer realm="switchboard-admin", error="invalid_token""#,
                        "the token is not the one this router was started with",
                    ))
                }
                _ => Some((
                    r#"Bearer realm="switchboard-admin", error="invalid_request""#,
                    "the Authorization header must use the Bearer scheme",
                )),
            };
        }
        let offered = headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|p| p.trim().strip_prefix(BEARER_PROTOCOL_PREFIX))
            .next();
        match offered {
            Some(token) if self.token.matches(token) => None,
            Some(_) => Some((
                r#"Bearer realm="switchboard-admin", error="invalid_token""#,
                "the token is not the one this router was started with",
            )),
            None => Some((
                r#"Bearer realm="switchboard-admin""#,
                "this route requires the panel's token: Authorization: Bearer <token> (or the \
                 WebSocket subprotocol bearer.<token>)",
            )),
        }
    }
}

/// The middleware: the Origin rule, then the token.
pub async fn guard(State(access): State<Access>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !access.origin_allowed(origin) {
            return error_response(
                StatusCode::FORBIDDEN,
                "this origin may not use the admin API (add it to [endpoint].allowed_origins)",
            );
        }
    }
    match access.refusal(req.headers()) {
        None => next.run(req).await,
        Some((challenge, message)) => {
            let mut resp = error_response(StatusCode::UNAUTHORIZED, message).into_response();
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
            resp
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_hex_and_compare_by_value() {
        let a = AdminToken::random().expect("random");
        let b = AdminToken::random().expect("random");
        assert_eq!(a.secret().len(), 64);
        assert!(a.secret().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.secret(), b.secret());
        assert!(a.matches(a.secret()) && !a.matches(b.secret()) && !a.matches(""));
        assert_eq!(format!("{a:?}"), "AdminToken(..)");
        assert!(AdminToken::new("  ").is_err());
    }

    #[test]
    fn the_router_own_origin_the_shell_and_configured_ones_pass() {
        let listeners = Listeners::default();
        let token = AdminToken::new("t").expect("token");
        let access = Access::new(token, vec!["https://ops.example".into()], listeners.clone());
        assert!(access.origin_allowed("http://127.0.0.1:5173"), "no listener yet: any loopback port");
        listeners.add("127.0.0.1:7010".parse().expect("addr"));
        for ok in ["http://127.0.0.1:7010", "http://localhost:7010", "http://[::1]:7010", "tauri://localhost"]
        {
            assert!(access.origin_allowed(ok), "{ok}");
        }
        assert!(access.origin_allowed("https://OPS.example"));
        for bad in [
            "http://127.0.0.1:5173",
            "http://evil.example",
            "http://localhost.evil.example:7010",
            "null",
            "https://127.0.0.1:7010",
        ] {
            assert!(!access.origin_allowed(bad), "{bad}");
        }
    }
}

//! JSON-RPC and MCP error codes of both revisions.
//!
//! Protocol errors are data (an [`crate::ErrorObject`] in a response), not Rust errors;
//! these constants keep the numbers in one place.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid JSON-RPC request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (also "resource not found" in 2026-07-28).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Resource not found (2025-11-25; replaced by -32602 in 2026-07-28).
pub const RESOURCE_NOT_FOUND_LEGACY: i64 = -32002;
/// URL-mode elicitation required (2025-11-25).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// 2026-07-28 `HeaderMismatch`: HTTP headers missing, malformed or not matching the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28 `MissingRequiredClientCapability` (`data.requiredCapabilities`).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28 `UnsupportedProtocolVersion` (`data.supported`, `data.requested`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Router-specific: no ready upstream serves the request (server error range).
pub const NO_UPSTREAM: i64 = -32050;
/// Router-specific: the upstream failed (dead, timed out, or answered garbage).
pub const UPSTREAM_FAILED: i64 = -32051;
/// Router-specific: the request body exceeds the configured limit.
pub const PAYLOAD_TOO_LARGE: i64 = -32052;
/// Router-specific: a forwarded request outlived the router's per-request deadline (it was
/// cancelled upstream).
pub const UPSTREAM_TIMEOUT: i64 = -32053;
/// Router-specific: the endpoint requires a bearer token and the request carried none or a wrong one
/// (sent with HTTP 401).
pub const UNAUTHORIZED: i64 = -32054;

/// `true` for the errors that only a 2026-07-28 server returns; an HTTP client that sees
/// one of them in a 400 body knows it is talking to a modern server.
pub fn is_modern_error(code: i64) -> bool {
    matches!(code, HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION)
}

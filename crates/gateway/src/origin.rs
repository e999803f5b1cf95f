//! Which browser origins may reach `/mcp` (POST and WebSocket upgrades alike).
//!
//! A leaf: both the HTTP handlers and the WebSocket upgrade check origins, and neither should
//! import the other to do it.

/// Whether an `Origin` header value may call the endpoint: localhost, 127.0.0.1 and [::1] on
/// any port and scheme, plus the exact origins in `allowed`.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some((_, rest)) = origin.split_once("://") else { return false };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().map(|h| format!("[{h}]")).unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or_default().to_owned()
    };
    matches!(host.to_ascii_lowercase().as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert!(origin_allowed("http://localhost:3000", &[]));
        assert!(origin_allowed("http://127.0.0.1", &[]));
        assert!(origin_allowed("http://[::1]:8080", &[]));
        assert!(!origin_allowed("http://evil.example", &[]));
        assert!(!origin_allowed("http://localhost.evil.example", &[]));
        assert!(origin_allowed("https://app.example", &["https://app.example".to_owned()]));
    }
}

//! The control panel's files: the built UI (`ui/dist`, `vite build` with a relative base),
//! embedded into the binary at compile time by `build.rs`, so `switchboard serve` needs no
//! Node and no files beside it (`docs/decisions.md`, "The UI is embedded").
//!
//! Served without the token: they carry no data (the UI asks `/api` for everything, with
//! the token). A path with no file extension that is not a file (a client route such as
//! `/frames`) gets `index.html`; a missing file with an extension is `404`. Built without
//! `ui/dist`, every page is a short one saying how to build the UI.

use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

mod assets {
    include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));
}

/// The page served when the binary was built without the UI.
pub const NOT_BUILT: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Switchboard</title></head><body style=\"font-family: sans-serif; max-width: 40em; margin: 3em auto\">\
<h1>Switchboard</h1><p>The router is running, but this binary was built without the control panel.</p>\
<p>Build the UI, then the binary again:</p>\
<pre>cd ui &amp;&amp; npm ci &amp;&amp; npm run build &amp;&amp; cd .. &amp;&amp; cargo build -p switchboard-app</pre>\
<p>(<code>scripts/run-app.sh</code> does both.) The MCP endpoint is at <code>/mcp</code>; the admin API \
at <code>/api</code>.</p></body></html>\n";

/// Whether the binary carries the built UI.
pub fn embedded() -> bool {
    !assets::ASSETS.is_empty()
}

/// The embedded file at `path` (relative to `ui/dist`).
pub fn asset(path: &str) -> Option<&'static [u8]> {
    assets::ASSETS.iter().find(|(p, _)| *p == path).map(|(_, b)| *b)
}

/// The `Content-Type` of a file, by its extension.
pub fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "wasm" => "application/wasm",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The panel's Content-Security-Policy, in a browser tab and in the desktop window alike: only
/// its own scripts, styles, images and fonts (plus `data:`/`blob:` images: rendered thermal
/// frames), connections to its own origin (`/api`, the events WebSocket) and to the desktop
/// shell's IPC (`ipc:`, which a browser never has); no plugins, no framing, no forms elsewhere.
/// `'unsafe-inline'` for styles only: the panel's components position things with inline
/// styles; no inline script runs.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self' ipc: http://ipc.localhost; \
object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn file(path: &str, bytes: &'static [u8]) -> Response {
    // Vite names what is under assets/ by content hash: those never change.
    let cache = if path.starts_with("assets/") { "public, max-age=31536000, immutable" } else { "no-cache" };
    let mut resp = (StatusCode::OK, bytes).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if path.ends_with(".html") {
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    }
    resp
}

fn not_built() -> Response {
    let mut resp = (StatusCode::OK, NOT_BUILT).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    resp
}

/// Whether a path looks like a client route (its last segment has no extension).
fn client_route(path: &str) -> bool {
    !path.rsplit('/').next().unwrap_or_default().contains('.')
}

/// The fallback handler: a UI file, `index.html` for a client route, or `404`.
pub async fn serve(method: Method, uri: Uri) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return crate::error::error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET and HEAD reach the UI's files",
        );
    }
    let path = uri.path().trim_start_matches('/');
    let path = if path.is_empty() { "index.html" } else { path };
    if !embedded() {
        return if client_route(path) || path == "index.html" {
            not_built()
        } else {
            (StatusCode::NOT_FOUND, "not found (the UI is not built into this binary)").into_response()
        };
    }
    if let Some(bytes) = asset(path) {
        return file(path, bytes);
    }
    match asset("index.html") {
        Some(index) if client_route(path) => file("index.html", index),
        _ => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_and_client_routes() {
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("assets/index-3f2a.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("assets/x.CSS"), "text/css; charset=utf-8");
        assert_eq!(content_type("favicon.svg"), "image/svg+xml");
        assert_eq!(content_type("blob"), "application/octet-stream");
        assert!(client_route("frames") && client_route("servers/alpha") && !client_route("assets/a.js"));
    }

    #[test]
    fn pages_carry_the_strict_csp_and_scripts_only_their_own_origin() {
        let page = file("index.html", b"<!doctype html>");
        assert_eq!(
            page.headers().get(header::CONTENT_SECURITY_POLICY).map(|v| v.as_bytes()),
            Some(CSP.as_bytes())
        );
        assert!(CSP.contains("script-src 'self';") && !CSP.contains("unsafe-eval"));
        assert!(CSP.contains("frame-ancestors 'none'") && CSP.contains("object-src 'none'"));
        assert!(file("assets/a.js", b"").headers().get(header::CONTENT_SECURITY_POLICY).is_none());
    }
}

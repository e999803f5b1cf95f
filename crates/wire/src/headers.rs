//! HTTP header rules of the Streamable HTTP transport.
//!
//! 2026-07-28 mirrors body fields into headers so intermediaries can route without
//! parsing bodies (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), and
//! requires servers to reject any mismatch (-32020). Values that are not plain visible
//! ASCII travel as `=?base64?…?=`. This module builds those headers for clients and
//! checks them for servers; it works on plain strings so it stays free of HTTP crates.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;

use crate::{ErrorObject, Message, error_code, method};

/// `MCP-Protocol-Version` (lower-cased, as HTTP libraries normalise names).
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME: &str = "mcp-name";
/// `Mcp-Session-Id` (2025-11-25 sessions).
pub const SESSION_ID: &str = "mcp-session-id";
/// Prefix of the tool-parameter headers, `Mcp-Param-{Name}`.
pub const PARAM_PREFIX: &str = "mcp-param-";
/// `Last-Event-ID` (2025-11-25 SSE resumption).
pub const LAST_EVENT_ID: &str = "last-event-id";
/// The schema keyword that designates a mirrored parameter.
pub const X_MCP_HEADER: &str = "x-mcp-header";
/// Switchboard's affinity key header for 2026-07-28 callers (see [`crate::meta::AFFINITY_KEY`]).
pub const AFFINITY_KEY: &str = "switchboard-affinity-key";
/// The idempotency key header (see [`crate::meta::IDEMPOTENCY_KEY`]).
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// `true` when `v` can be sent as-is: visible ASCII, space and tab, no leading or
/// trailing whitespace, and not itself shaped like the base64 sentinel.
pub fn is_plain_value(v: &str) -> bool {
    let chars_ok = v.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b));
    let trimmed = v.trim_matches([' ', '\t']).len() == v.len();
    let sentinel = v.starts_with(SENTINEL_START) && v.ends_with(SENTINEL_END);
    chars_ok && trimmed && !sentinel
}

/// Encodes a value for `Mcp-Name` / `Mcp-Param-*`.
pub fn encode_value(v: &str) -> String {
    if is_plain_value(v) { v.to_owned() } else { format!("{SENTINEL_START}{}{SENTINEL_END}", B64.encode(v)) }
}

/// Decodes a header value, undoing the base64 sentinel form.
pub fn decode_value(h: &str) -> Result<String, String> {
    if let Some(inner) = h.strip_prefix(SENTINEL_START).and_then(|r| r.strip_suffix(SENTINEL_END)) {
        let bytes = B64.decode(inner).map_err(|e| format!("invalid base64 in header value {h:?}: {e}"))?;
        String::from_utf8(bytes).map_err(|_| format!("base64 header value {h:?} is not UTF-8"))
    } else if h.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b)) {
        Ok(h.to_owned())
    } else {
        Err(format!("header value {h:?} contains invalid characters"))
    }
}

/// A tool parameter mirrored into `Mcp-Param-{header}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `{Name}` part of the header, as written in the schema.
    pub header: String,
    /// The chain of `properties` keys from the schema root to the parameter.
    pub path: Vec<String>,
}

/// Collects the `x-mcp-header` annotations of a tool's `inputSchema`, enforcing the
/// spec's constraints (token syntax, case-insensitive uniqueness, primitive non-number
/// types, reachable only through `properties`). An error makes the whole tool invalid.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut out = Vec::new();
    collect(input_schema, &mut Vec::new(), &mut out, true)?;
    let mut seen = std::collections::HashSet::new();
    for p in &out {
        if !seen.insert(p.header.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} is used twice (names are case-insensitive)", p.header));
        }
    }
    Ok(out)
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<HeaderParam>,
    reachable: bool,
) -> Result<(), String> {
    let Some(obj) = schema.as_object() else { return Ok(()) };
    for (key, value) in obj {
        if key == X_MCP_HEADER {
            let where_ = if path.is_empty() { "the schema root".to_owned() } else { path.join(".") };
            let Some(h) = value.as_str() else {
                return Err(format!("x-mcp-header at {where_} must be a string"));
            };
            if h.is_empty() || !h.bytes().all(is_tchar) {
                return Err(format!("x-mcp-header {h:?} at {where_} is not a valid HTTP field-name token"));
            }
            if !reachable || path.is_empty() {
                return Err(format!(
                    "x-mcp-header {h:?} at {where_} is not statically reachable through \"properties\""
                ));
            }
            let ty = obj.get("type").and_then(Value::as_str);
            if !matches!(ty, Some("string" | "integer" | "boolean")) {
                return Err(format!(
                    "x-mcp-header {h:?} on {where_} needs type string, integer or boolean, found {}",
                    ty.unwrap_or("no type")
                ));
            }
            out.push(HeaderParam { header: h.to_owned(), path: path.clone() });
        } else if key == "properties" {
            if let Some(props) = value.as_object() {
                for (name, sub) in props {
                    path.push(name.clone());
                    collect(sub, path, out, reachable)?;
                    path.pop();
                }
            }
        } else if value.is_object() || value.is_array() {
            // Any other keyword (items, oneOf, $defs, …) makes annotations below it unreachable.
            let subs: Vec<&Value> = match value {
                Value::Array(a) => a.iter().collect(),
                v => vec![v],
            };
            for sub in subs {
                let saved = std::mem::take(path);
                let r = collect(sub, &mut saved.clone(), out, false);
                *path = saved;
                r?;
            }
        }
    }
    Ok(())
}

/// The string form of a mirrored argument value, or `None` when the header is omitted.
pub fn param_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Number(n) => n.as_f64().filter(|f| f.fract() == 0.0).map(|f| format!("{}", f as i64)),
        _ => None,
    }
}

fn lookup<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(arguments, |v, k| v.get(k)).filter(|v| !v.is_null())
}

/// Every header a client must send with a 2026-07-28 POST of `msg`: the protocol
/// version, `Mcp-Method`, `Mcp-Name` where applicable and the mirrored parameters.
pub fn request_headers(msg: &Message, params: &[HeaderParam]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(v) = msg.protocol_version() {
        out.push(("MCP-Protocol-Version".to_owned(), v.to_owned()));
    }
    if let (true, Some(m)) = (msg.is_request(), msg.method()) {
        out.push(("Mcp-Method".to_owned(), m.to_owned()));
        if let Some(name) = msg.name() {
            out.push(("Mcp-Name".to_owned(), encode_value(name)));
        }
        if m == method::TOOLS_CALL {
            let args = msg.params().and_then(|p| p.get("arguments")).cloned().unwrap_or(Value::Null);
            for p in params {
                if let Some(s) = lookup(&args, &p.path).and_then(param_string) {
                    out.push((format!("Mcp-Param-{}", p.header), encode_value(&s)));
                }
            }
        }
    }
    out
}

fn mismatch(text: String) -> ErrorObject {
    ErrorObject::new(error_code::HEADER_MISMATCH, format!("Header mismatch: {text}"))
}

/// Server-side validation of a 2026-07-28 request's headers against its body.
/// `get` looks a header up by lower-case name. `params` are the mirrored parameters of
/// the called tool (empty when unknown or not a `tools/call`).
pub fn validate_request_headers<'h>(
    get: impl Fn(&str) -> Option<&'h str>,
    msg: &Message,
    params: &[HeaderParam],
) -> Result<(), ErrorObject> {
    let body_version = msg.protocol_version().unwrap_or_default();
    match get(PROTOCOL_VERSION) {
        None => return Err(mismatch("required header MCP-Protocol-Version is missing".into())),
        Some(h) if h != body_version => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header value '{h}' does not match body value '{body_version}'"
            )));
        }
        Some(_) => {}
    }
    if !msg.is_request() {
        return Ok(());
    }
    let body_method = msg.method().unwrap_or_default();
    match get(METHOD) {
        None => return Err(mismatch("required header Mcp-Method is missing".into())),
        Some(h) if h != body_method => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{h}' does not match body value '{body_method}'"
            )));
        }
        Some(_) => {}
    }
    if method::name_param(body_method).is_some() {
        let body_name = msg.name().unwrap_or_default();
        match get(NAME) {
            None => return Err(mismatch("required header Mcp-Name is missing".into())),
            Some(h) => {
                let decoded = decode_value(h).map_err(|e| mismatch(format!("Mcp-Name: {e}")))?;
                if decoded != body_name {
                    return Err(mismatch(format!(
                        "Mcp-Name header value '{decoded}' does not match body value '{body_name}'"
                    )));
                }
            }
        }
    }
    if body_method == method::TOOLS_CALL {
        let args = msg.params().and_then(|p| p.get("arguments")).cloned().unwrap_or(Value::Null);
        for p in params {
            let name = format!("{PARAM_PREFIX}{}", p.header.to_ascii_lowercase());
            let body = lookup(&args, &p.path);
            match (get(&name), body) {
                (None, None) => {}
                (None, Some(_)) => {
                    return Err(mismatch(format!("required header Mcp-Param-{} is missing", p.header)));
                }
                (Some(_), None) => {
                    return Err(mismatch(format!(
                        "Mcp-Param-{} header is present but the argument is absent",
                        p.header
                    )));
                }
                (Some(h), Some(v)) => {
                    let decoded =
                        decode_value(h).map_err(|e| mismatch(format!("Mcp-Param-{}: {e}", p.header)))?;
                    if !param_matches(&decoded, v) {
                        return Err(mismatch(format!(
                            "Mcp-Param-{} header value '{decoded}' does not match body value {v}",
                            p.header
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

fn param_matches(header: &str, body: &Value) -> bool {
    match body {
        Value::Number(n) => match (header.parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(b)) => h == b,
            _ => false,
        },
        other => param_string(other).as_deref() == Some(header),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_like_the_spec_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
        assert_eq!(decode_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(), "Hello, 世界");
        assert!(decode_value("=?base64?!!!?=").is_err());
    }

    #[test]
    fn collects_and_rejects_annotations() {
        let ok = json!({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},
            "nested":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}});
        let ps = header_params(&ok).unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[1].path, vec!["nested".to_owned(), "n".to_owned()]);
        let num = json!({"properties":{"x":{"type":"number","x-mcp-header":"X"}}});
        assert!(header_params(&num).unwrap_err().contains("number"));
        let items = json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}});
        assert!(header_params(&items).unwrap_err().contains("reachable"));
        let dup = json!({"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}});
        assert!(header_params(&dup).unwrap_err().contains("twice"));
    }

    #[test]
    fn validates_headers_against_body() {
        let msg = Message::request(
            1i64,
            "tools/call",
            Some(json!({"name":"sql","arguments":{"region":"Hello, 世界","n":42},
                "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}})),
        );
        let params = vec![
            HeaderParam { header: "Region".into(), path: vec!["region".into()] },
            HeaderParam { header: "N".into(), path: vec!["n".into()] },
        ];
        let hs = request_headers(&msg, &params);
        let lower: Vec<(String, String)> =
            hs.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect();
        let get = |k: &str| lower.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        validate_request_headers(get, &msg, &params).unwrap();
        let bad: Vec<(String, String)> = lower
            .iter()
            .map(|(k, v)| if k == "mcp-param-n" { (k.clone(), "43".into()) } else { (k.clone(), v.clone()) })
            .collect();
        let get = |k: &str| bad.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let err = validate_request_headers(get, &msg, &params).unwrap_err();
        assert_eq!(err.code, error_code::HEADER_MISMATCH);
        assert!(err.message.contains("Mcp-Param-N"), "{}", err.message);
    }
}

//! JSON-RPC 2.0 messages that keep every field.
//!
//! A [`Message`] is the parsed JSON object plus its classification. Only what routing
//! needs is interpreted (method, id, name, `_meta`, result/error); everything else stays
//! in the object exactly as received — field order included — so a message forwarded
//! by the router is byte-for-byte what the sender meant, minus whitespace.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::{error_code, meta, method};

/// A JSON-RPC request id: a string or a number (JSON-RPC forbids `null` on requests).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(untagged)]
pub enum Id {
    /// A numeric id, kept as the JSON number it was (`1` and `1.0` stay distinct).
    Number(#[ts(type = "number")] Number),
    /// A string id.
    String(String),
}

impl Id {
    /// Reads an id from a JSON value; `None` for anything that is not a string or number.
    pub fn from_value(v: &Value) -> Option<Id> {
        match v {
            Value::Number(n) => Some(Id::Number(n.clone())),
            Value::String(s) => Some(Id::String(s.clone())),
            _ => None,
        }
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => Value::Number(n.clone()),
            Id::String(s) => Value::String(s.clone()),
        }
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n.into())
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(n.into())
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// What a JSON-RPC message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Has `method` and `id`.
    Request,
    /// Has `method`, no `id`.
    Notification,
    /// Has `id` and `result`.
    Response,
    /// Has `error` (and an `id`, `null` when the request's id was unknown).
    Error,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// JSON-RPC / MCP error code (see [`crate::error_code`]).
    pub code: i64,
    /// Human-readable, specific message.
    pub message: String,
    /// Structured details (for example `supported`/`requested` for -32022).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// Attaches structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// Why bytes are not a JSON-RPC message: -32700 for bad JSON, -32600 for a bad envelope.
/// Carries the request id whenever it could be read, so the error response can echo it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// -32700 or -32600.
    pub code: i64,
    /// Specific reason, e.g. `"invalid request: \"jsonrpc\" must be \"2.0\", got \"1.0\""`.
    pub message: String,
    /// The id of the offending message when it was readable.
    pub id: Option<Id>,
}

impl ParseError {
    fn invalid(id: Option<Id>, message: impl Into<String>) -> Self {
        ParseError {
            code: error_code::INVALID_REQUEST,
            message: format!("invalid request: {}", message.into()),
            id,
        }
    }

    /// The error response to send back for this failure.
    pub fn to_response(&self) -> Message {
        Message::error_response(self.id.clone(), ErrorObject::new(self.code, self.message.clone()))
    }
}

/// One JSON-RPC 2.0 message, with all of its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    obj: Map<String, Value>,
    kind: Kind,
}

impl Message {
    /// Parses one message from bytes.
    pub fn parse(bytes: &[u8]) -> Result<Message, ParseError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| ParseError {
            code: error_code::PARSE_ERROR,
            message: format!("parse error: {e}"),
            id: None,
        })?;
        Message::from_value(value)
    }

    /// Classifies an already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Message, ParseError> {
        let obj = match value {
            Value::Object(obj) => obj,
            Value::Array(_) => {
                return Err(ParseError::invalid(
                    None,
                    "JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per request",
                ));
            }
            other => {
                return Err(ParseError::invalid(
                    None,
                    format!("a message must be a JSON object, got {}", json_type(&other)),
                ));
            }
        };
        let id = match obj.get("id") {
            None => None,
            Some(Value::Null) => None,
            Some(v) => match Id::from_value(v) {
                Some(id) => Some(id),
                None => {
                    return Err(ParseError::invalid(
                        None,
                        format!("\"id\" must be a string or a number, got {}", json_type(v)),
                    ));
                }
            },
        };
        match obj.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            Some(v) => {
                return Err(ParseError::invalid(id, format!("\"jsonrpc\" must be \"2.0\", got {v}")));
            }
            None => return Err(ParseError::invalid(id, "missing \"jsonrpc\": \"2.0\"")),
        }
        let kind = if let Some(m) = obj.get("method") {
            if !m.is_string() {
                return Err(ParseError::invalid(
                    id,
                    format!("\"method\" must be a string, got {}", json_type(m)),
                ));
            }
            match obj.get("params") {
                None | Some(Value::Object(_)) => {}
                Some(p) => {
                    return Err(ParseError::invalid(
                        id,
                        format!("\"params\" must be an object in MCP, got {}", json_type(p)),
                    ));
                }
            }
            match (obj.get("id"), &id) {
                (None, _) => Kind::Notification,
                (Some(_), Some(_)) => Kind::Request,
                (Some(_), None) => return Err(ParseError::invalid(None, "a request id must not be null")),
            }
        } else {
            match (obj.get("result"), obj.get("error")) {
                (Some(_), Some(_)) => {
                    return Err(ParseError::invalid(
                        id,
                        "a response must not carry both \"result\" and \"error\"",
                    ));
                }
                (Some(_), None) => {
                    if id.is_none() {
                        return Err(ParseError::invalid(
                            None,
                            "a result response needs a string or number \"id\"",
                        ));
                    }
                    Kind::Response
                }
                (None, Some(e)) => {
                    let ok = e.get("code").is_some_and(|c| c.as_i64().is_some())
                        && e.get("message").is_some_and(Value::is_string);
                    if !ok {
                        return Err(ParseError::invalid(
                            id,
                            "\"error\" must be an object with an integer \"code\" and a string \"message\"",
                        ));
                    }
                    Kind::Error
                }
                (None, None) => {
                    return Err(ParseError::invalid(
                        id,
                        "a message needs \"method\" (request or notification) or \"result\"/\"error\" (response)",
                    ));
                }
            }
        };
        Ok(Message { obj, kind })
    }

    /// A request.
    pub fn request(id: impl Into<Id>, method: &str, params: Option<Value>) -> Message {
        let mut obj = Map::new();
        obj.insert("jsonrpc".into(), "2.0".into());
        obj.insert("id".into(), id.into().to_value());
        obj.insert("method".into(), method.into());
        if let Some(p) = params {
            obj.insert("params".into(), p);
        }
        Message { obj, kind: Kind::Request }
    }

    /// A notification.
    pub fn notification(method: &str, params: Option<Value>) -> Message {
        let mut obj = Map::new();
        obj.insert("jsonrpc".into(), "2.0".into());
        obj.insert("method".into(), method.into());
        if let Some(p) = params {
            obj.insert("params".into(), p);
        }
        Message { obj, kind: Kind::Notification }
    }

    /// A result response.
    pub fn response(id: Id, result: Value) -> Message {
        let mut obj = Map::new();
        obj.insert("jsonrpc".into(), "2.0".into());
        obj.insert("id".into(), id.to_value());
        obj.insert("result".into(), result);
        Message { obj, kind: Kind::Response }
    }

    /// An error response; `id` is `None` when the request's id could not be read.
    pub fn error_response(id: Option<Id>, error: ErrorObject) -> Message {
        let mut obj = Map::new();
        obj.insert("jsonrpc".into(), "2.0".into());
        obj.insert("id".into(), id.map(|i| i.to_value()).unwrap_or(Value::Null));
        obj.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null));
        Message { obj, kind: Kind::Error }
    }

    /// What this message is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// `true` for requests.
    pub fn is_request(&self) -> bool {
        self.kind == Kind::Request
    }

    /// `true` for notifications.
    pub fn is_notification(&self) -> bool {
        self.kind == Kind::Notification
    }

    /// `true` for result and error responses.
    pub fn is_response(&self) -> bool {
        matches!(self.kind, Kind::Response | Kind::Error)
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        self.obj.get("method").and_then(Value::as_str)
    }

    /// The id, if any (`None` for notifications and `null`-id errors).
    pub fn id(&self) -> Option<Id> {
        self.obj.get("id").and_then(Id::from_value)
    }

    /// Replaces the id (transports multiplex many callers over one upstream).
    pub fn set_id(&mut self, id: &Id) {
        self.obj.insert("id".into(), id.to_value());
    }

    /// `params`, when present.
    pub fn params(&self) -> Option<&Map<String, Value>> {
        self.obj.get("params").and_then(Value::as_object)
    }

    /// `params`, created empty when absent.
    pub fn params_mut(&mut self) -> &mut Map<String, Value> {
        let entry = self.obj.entry("params").or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        match entry {
            Value::Object(m) => m,
            _ => unreachable!("params was just made an object"),
        }
    }

    /// `params._meta` of a request or notification.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.params().and_then(|p| p.get("_meta")).and_then(Value::as_object)
    }

    /// `params._meta`, created when absent.
    pub fn meta_mut(&mut self) -> &mut Map<String, Value> {
        let params = self.params_mut();
        let entry = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        match entry {
            Value::Object(m) => m,
            _ => unreachable!("_meta was just made an object"),
        }
    }

    /// The protocol version a modern request declares in `_meta`.
    pub fn protocol_version(&self) -> Option<&str> {
        self.meta().and_then(|m| m.get(meta::PROTOCOL_VERSION)).and_then(Value::as_str)
    }

    /// `params._meta.progressToken`.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta().and_then(|m| m.get(meta::PROGRESS_TOKEN))
    }

    /// The routed name: `params.name` for `tools/call`/`prompts/get`, `params.uri` for
    /// `resources/read` (the value `Mcp-Name` mirrors).
    pub fn name(&self) -> Option<&str> {
        let key = method::name_param(self.method()?)?;
        self.params()?.get(key)?.as_str()
    }

    /// Rewrites the routed name (used when the router strips or adds a namespace prefix).
    pub fn set_name(&mut self, name: &str) -> bool {
        let Some(key) = self.method().and_then(method::name_param) else { return false };
        self.params_mut().insert(key.into(), Value::String(name.to_owned()));
        true
    }

    /// `result` of a result response.
    pub fn result(&self) -> Option<&Value> {
        self.obj.get("result")
    }

    /// Mutable `result` of a result response.
    pub fn result_mut(&mut self) -> Option<&mut Value> {
        self.obj.get_mut("result")
    }

    /// `error` of an error response.
    pub fn error(&self) -> Option<ErrorObject> {
        self.obj.get("error").and_then(|e| serde_json::from_value(e.clone()).ok())
    }

    /// The whole object, read-only.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.obj
    }

    /// The message as a JSON value.
    pub fn to_value(&self) -> Value {
        Value::Object(self.obj.clone())
    }

    /// Consumes the message into its JSON value.
    pub fn into_value(self) -> Value {
        Value::Object(self.obj)
    }

    /// Compact JSON bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serialising a map of JSON values cannot fail.
        serde_json::to_vec(&self.obj).unwrap_or_default()
    }

    /// Compact JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.obj).unwrap_or_default()
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.obj.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Message::from_value(v).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_json())
    }
}

/// Short name of a JSON value's type, for error messages.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_messages() {
        let r = Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#)
            .unwrap();
        assert_eq!(r.kind(), Kind::Request);
        assert_eq!(r.name(), Some("x"));
        let n = Message::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert_eq!(n.kind(), Kind::Notification);
        let e =
            Message::parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap();
        assert_eq!(e.kind(), Kind::Error);
        assert_eq!(e.error().unwrap().code, -32700);
    }

    #[test]
    fn malformed_input_echoes_id() {
        let err = Message::parse(br#"{"jsonrpc":"1.0","id":"abc","method":"x"}"#).unwrap_err();
        assert_eq!(err.code, error_code::INVALID_REQUEST);
        assert_eq!(err.id, Some(Id::from("abc")));
        let resp = err.to_response();
        assert_eq!(resp.id(), Some(Id::from("abc")));
        let err = Message::parse(b"{\"jsonrpc\":\"2.0\",").unwrap_err();
        assert_eq!(err.code, error_code::PARSE_ERROR);
        assert_eq!(err.to_response().as_map()["id"], Value::Null);
        let err = Message::parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).unwrap_err();
        assert!(err.message.contains("batches"), "{}", err.message);
        let err = Message::parse(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":[1]}"#).unwrap_err();
        assert_eq!(err.id, Some(Id::from(7i64)));
        assert!(err.message.contains("params"));
    }

    #[test]
    fn set_name_rewrites_the_right_field() {
        let mut m = Message::request(1i64, "resources/read", Some(json!({"uri":"a://b"})));
        assert!(m.set_name("c://d"));
        assert_eq!(m.name(), Some("c://d"));
        let mut m = Message::request(1i64, "tools/list", None);
        assert!(!m.set_name("x"));
    }
}

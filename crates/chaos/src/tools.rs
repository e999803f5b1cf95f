//! The five tools every replica serves, with fixed schemas and annotations so that replicas are
//! recognisably instances of one server, and what `tools/call` does with them.
//!
//! | tool | arguments | annotations | result (`structuredContent`) |
//! |---|---|---|---|
//! | `read` | `key` | readOnly, idempotent | `{key, value, length, replica}` |
//! | `put` | `key`, `value` | idempotent, destructive | `{key, value, replica}` |
//! | `append` | `key`, `item` | **not** idempotent, not destructive | `{key, length, replica}` |
//! | `work` | `ms` (0..=10 000) | readOnly, idempotent | `{ms, replica}` |
//! | `whoami` | — | readOnly, idempotent | `{replica}` |
//!
//! Every result's text block is the same JSON as its `structuredContent`. Argument problems
//! and a full store are tool errors (`isError: true`), which still count as executions.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, ErrorData, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::counters::Counters;
use crate::store::{MAX_KEY_BYTES, MAX_VALUE_BYTES, Store};

/// Names of the tools, in `tools/list` order.
pub const TOOL_NAMES: [&str; 5] = ["read", "put", "append", "work", "whoami"];
/// Longest `work` accepted, in ms.
pub const MAX_WORK_MS: u64 = 10_000;

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn key_property() -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": MAX_KEY_BYTES, "description": "Key in this replica's store" })
}

fn text_property(description: &str) -> Value {
    json!({ "type": "string", "maxLength": MAX_VALUE_BYTES, "description": description })
}

/// The definition of tool `name` (one of [`TOOL_NAMES`]).
pub fn definition(name: &str) -> Option<Tool> {
    let tool = match name {
        "read" => Tool::new(
            "read",
            "Returns the value stored under `key` and the length of its appended list",
            schema(json!({ "type": "object", "properties": { "key": key_property() }, "required": ["key"] })),
        )
        .with_annotations(
            ToolAnnotations::with_title("Read a key").read_only(true).idempotent(true).open_world(false),
        ),
        "put" => Tool::new(
            "put",
            "Sets the value under `key` (idempotent: the same put twice leaves the same state)",
            schema(json!({
                "type": "object",
                "properties": { "key": key_property(), "value": text_property("Value to store") },
                "required": ["key", "value"]
            })),
        )
        .with_annotations(
            ToolAnnotations::with_title("Set a key")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
        "append" => Tool::new(
            "append",
            "Appends `item` to the list under `key` and returns the new length (NOT idempotent)",
            schema(json!({
                "type": "object",
                "properties": { "key": key_property(), "item": text_property("Item to append") },
                "required": ["key", "item"]
            })),
        )
        .with_annotations(
            ToolAnnotations::with_title("Append to a key")
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(false),
        ),
        "work" => Tool::new(
            "work",
            "Sleeps `ms` milliseconds, then answers",
            schema(json!({
                "type": "object",
                "properties": { "ms": { "type": "integer", "minimum": 0, "maximum": MAX_WORK_MS } },
                "required": ["ms"]
            })),
        )
        .with_annotations(
            ToolAnnotations::with_title("Simulate work").read_only(true).idempotent(true).open_world(false),
        ),
        "whoami" => Tool::new(
            "whoami",
            "Returns the id of the replica that answered",
            schema(json!({ "type": "object", "properties": {} })),
        )
        .with_annotations(
            ToolAnnotations::with_title("Which replica").read_only(true).idempotent(true).open_world(false),
        ),
        _ => return None,
    };
    Some(tool)
}

/// What one tool call needs.
#[derive(Debug)]
pub struct Call<'a> {
    /// The replica id put into every result.
    pub replica: &'a str,
    /// The replica's store.
    pub store: &'a Store,
    /// The replica's counters.
    pub counters: &'a Counters,
    /// The call's arguments.
    pub arguments: &'a JsonObject,
    /// Cancelled when the caller gives up on the call.
    pub cancelled: &'a CancellationToken,
}

fn string_arg<'a>(arguments: &'a JsonObject, name: &str) -> Result<&'a str, String> {
    match arguments.get(name) {
        Some(Value::String(text)) => Ok(text),
        Some(other) => Err(format!("argument `{name}` must be a string, got {}", kind(other))),
        None => Err(format!("missing required argument `{name}`")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn result(replica: &str, mut structured: Value) -> CallToolResult {
    if let Value::Object(map) = &mut structured {
        map.insert("replica".into(), Value::String(replica.to_owned()));
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(structured.to_string())]);
    result.structured_content = Some(structured);
    result
}

fn tool_error(replica: &str, message: impl std::fmt::Display) -> CallToolResult {
    let structured = json!({ "error": message.to_string(), "replica": replica });
    let mut result = CallToolResult::error(vec![ContentBlock::text(structured.to_string())]);
    result.structured_content = Some(structured);
    result
}

/// Runs the body of tool `name` (one of [`TOOL_NAMES`]) and counts the execution.
pub async fn run(name: &'static str, call: Call<'_>) -> Result<CallToolResult, ErrorData> {
    let args = call.arguments;
    let mut append_key = None;
    let outcome = match name {
        "read" => string_arg(args, "key").and_then(|key| {
            crate::store::check_key(key).map_err(|error| error.to_string())?;
            let read = call.store.read(key);
            Ok(json!({ "key": key, "value": read.value, "length": read.length }))
        }),
        "put" => string_arg(args, "key").and_then(|key| {
            let value = string_arg(args, "value")?;
            call.store.put(key, value).map_err(|error| error.to_string())?;
            Ok(json!({ "key": key, "value": value }))
        }),
        "append" => string_arg(args, "key").and_then(|key| {
            append_key = Some(key);
            let item = string_arg(args, "item")?;
            let length = call.store.append(key, item).map_err(|error| error.to_string())?;
            Ok(json!({ "key": key, "length": length }))
        }),
        "work" => match args.get("ms").and_then(Value::as_u64).filter(|ms| *ms <= MAX_WORK_MS) {
            Some(ms) => {
                call.counters.executed(name, None);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = call.cancelled.cancelled() => {
                        return Err(ErrorData::internal_error("work was cancelled", None));
                    }
                }
                return Ok(result(call.replica, json!({ "ms": ms })));
            }
            None => Err(format!("argument `ms` must be an integer in 0..={MAX_WORK_MS}")),
        },
        "whoami" => Ok(json!({})),
        _ => return Err(ErrorData::invalid_params(format!("unknown tool {name:?}"), None)),
    };
    // Keys over the size limit are not counted per key (they never reach the store).
    let counted_key = append_key.filter(|key| crate::store::check_key(key).is_ok());
    call.counters.executed(name, counted_key);
    Ok(match outcome {
        Ok(structured) => result(call.replica, structured),
        Err(message) => tool_error(call.replica, message),
    })
}

/// The `&'static` name of a tool, if `name` is one.
pub fn static_name(name: &str) -> Option<&'static str> {
    TOOL_NAMES.into_iter().find(|known| *known == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_definition_with_annotations() {
        for name in TOOL_NAMES {
            let tool = definition(name).expect("defined");
            assert!(tool.annotations.is_some(), "{name}");
        }
        let append = definition("append").and_then(|tool| tool.annotations).expect("annotations");
        assert_eq!((append.idempotent_hint, append.destructive_hint), (Some(false), Some(false)));
    }
}

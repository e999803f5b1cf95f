//! Compiling tool schemas.
//!
//! Every tool's `inputSchema` and `outputSchema` is compiled as JSON Schema (2020-12
//! unless the schema names another dialect with `$schema`), with `$ref` resolved inside
//! the document. External references are not fetched: a tool that needs the network to
//! describe its own arguments is quarantined, like any tool whose schema does not
//! compile, without affecting its server's other tools.

use std::sync::Arc;

use serde_json::Value;
use switchboard_wire::headers::{HeaderParam, header_params};

/// A compiled tool, ready for argument validation and header mirroring.
#[derive(Clone)]
pub struct CompiledTool {
    /// The tool name as the server spells it.
    pub name: String,
    /// The tool object exactly as the server sent it.
    pub raw: Value,
    /// Validator of `arguments`.
    pub input: Arc<jsonschema::Validator>,
    /// Validator of `structuredContent`, when an output schema is declared.
    pub output: Option<Arc<jsonschema::Validator>>,
    /// Arguments mirrored into `Mcp-Param-*` headers.
    pub header_params: Vec<HeaderParam>,
}

impl std::fmt::Debug for CompiledTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledTool").field("name", &self.name).finish_non_exhaustive()
    }
}

impl CompiledTool {
    /// Checks arguments against the input schema; the error lists every violation
    /// with its JSON pointer.
    pub fn validate_arguments(&self, args: &Value) -> Result<(), String> {
        let errors: Vec<String> = self
            .input
            .iter_errors(args)
            .take(10)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!(
                    "{}: {}",
                    if at.is_empty() { "arguments".to_owned() } else { format!("arguments{at}") },
                    e
                )
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    }
}

/// A tool left out of the catalog, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct Quarantined {
    /// Tool name (or `"<unnamed #N>"`).
    pub name: String,
    /// Which schema failed and how.
    pub error: String,
}

fn compile(schema: &Value, which: &str) -> Result<jsonschema::Validator, String> {
    if !schema.is_object() {
        return Err(format!(
            "{which} must be a JSON object, got {}",
            switchboard_wire::message::json_type(schema)
        ));
    }
    let built = if schema.get("$schema").is_some() {
        jsonschema::validator_for(schema)
    } else {
        jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(schema)
    };
    built.map_err(|e| {
        let at = e.schema_path().to_string();
        if at.is_empty() { format!("{which}: {e}") } else { format!("{which} at {at}: {e}") }
    })
}

/// Compiles one tool object from `tools/list`.
pub fn compile_tool(raw: &Value, index: usize) -> Result<CompiledTool, Quarantined> {
    let name = match raw.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => {
            return Err(Quarantined {
                name: format!("<unnamed #{index}>"),
                error: "tool has no \"name\" string".into(),
            });
        }
    };
    let q = |error: String| Quarantined { name: name.clone(), error };
    let input_schema = raw.get("inputSchema").ok_or_else(|| q("tool has no inputSchema".into()))?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(q("inputSchema must have \"type\": \"object\"".into()));
    }
    let input = compile(input_schema, "inputSchema").map_err(q)?;
    let output = match raw.get("outputSchema") {
        None | Some(Value::Null) => None,
        Some(s) => Some(Arc::new(compile(s, "outputSchema").map_err(q)?)),
    };
    let header_params = header_params(input_schema).map_err(|e| q(format!("inputSchema: {e}")))?;
    Ok(CompiledTool { name, raw: raw.clone(), input: Arc::new(input), output, header_params })
}

/// Compiles a whole tool list: the good tools in server order, and the quarantined ones.
/// A name that appears twice keeps its first definition; the second is quarantined.
pub fn compile_tools(raw: &[Value]) -> (Vec<CompiledTool>, Vec<Quarantined>) {
    let mut ok: Vec<CompiledTool> = Vec::new();
    let mut bad = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, t) in raw.iter().enumerate() {
        match compile_tool(t, i) {
            Ok(c) if !seen.insert(c.name.clone()) => {
                bad.push(Quarantined { name: c.name, error: "duplicate tool name in tools/list".into() });
            }
            Ok(c) => ok.push(c),
            Err(q) => bad.push(q),
        }
    }
    (ok, bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dangling_ref_is_quarantined_with_its_name() {
        let tools = vec![
            json!({"name":"ok","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}}),
            json!({"name":"broken","inputSchema":{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}}),
            json!({"name":"badout","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"n":{"type":17}}}}),
            json!({"name":"remote","inputSchema":{"type":"object","properties":{"x":{"$ref":"https://example.invalid/s.json"}}}}),
            json!({"name":"ok","inputSchema":{"type":"object"}}),
        ];
        let (ok, bad) = compile_tools(&tools);
        assert_eq!(ok.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["ok"]);
        let names: Vec<_> = bad.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, vec!["broken", "badout", "remote", "ok"]);
        assert!(bad[0].error.contains("missing"), "{}", bad[0].error);
        assert!(bad[1].error.starts_with("outputSchema"), "{}", bad[1].error);
        assert!(bad[3].error.contains("duplicate"));
    }

    #[test]
    fn arguments_are_validated_with_pointers() {
        let t = compile_tool(
            &json!({"name":"add","inputSchema":{"type":"object","properties":{"a":{"type":"number"}},"required":["a","b"]}}),
            0,
        )
        .unwrap();
        assert!(t.validate_arguments(&json!({"a":1,"b":2})).is_ok());
        let e = t.validate_arguments(&json!({"a":"x"})).unwrap_err();
        assert!(e.contains("arguments/a") && e.contains("\"b\""), "{e}");
    }
}

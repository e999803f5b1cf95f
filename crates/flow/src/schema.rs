//! JSON Schema helpers for load-time checks: compiling validators, and walking a schema along a reference
//! path to find what (if anything) it declares there.
//!
//! The walk is deliberately conservative: it follows `properties`, `items`, `additionalProperties` schemas,
//! local `$ref`s and single-element `allOf`, and answers "unknown" (no error) for anything more dynamic
//! (`oneOf`, `anyOf`, conditionals), so a flow is only refused for what the schema plainly says.

use std::sync::Arc;

use serde_json::Value;

use crate::reference::Segment;

/// Compiles a schema the way the router does: its own `$schema` if it names one, else draft 2020-12.
///
/// # Errors
/// A lowercase message with the schema location of the problem.
pub fn compile(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    if !schema.is_object() {
        return Err("a schema must be a json object".into());
    }
    let built = if schema.get("$schema").is_some() {
        jsonschema::validator_for(schema)
    } else {
        jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(schema)
    };
    built.map(Arc::new).map_err(|e| {
        let at = e.schema_path().to_string();
        if at.is_empty() { format!("invalid schema: {e}") } else { format!("invalid schema at {at}: {e}") }
    })
}

/// Every violation of `instance` against `validator`, as `"<pointer>: <message>"` (`/` for the root).
pub fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/" } else { at.as_str() })
        })
        .collect()
}

/// Follows local `$ref`s (`#/...`) and single-element `allOf`s to the schema that says something.
pub fn deref<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    // Bounded: a self-referencing `$ref` chain must not loop forever.
    for _ in 0..32 {
        if let Some(pointer) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
            match root.pointer(pointer) {
                Some(target) => schema = target,
                None => return schema,
            }
        } else if let Some([only]) = schema.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            schema = only;
        } else {
            return schema;
        }
    }
    schema
}

/// The schema's declared `type`s, if it declares any.
pub fn types(schema: &Value) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// Whether a value of one of `have` may satisfy one of `want` (integers and numbers mix).
pub fn types_overlap(have: &[&str], want: &[&str]) -> bool {
    have.iter().any(|h| {
        want.iter().any(|w| h == w || matches!((*h, *w), ("integer", "number") | ("number", "integer")))
    })
}

/// The subschema at `path` below `schema` (within document `root`).
///
/// `Ok(None)` when the schema does not say (the path leaves what can be checked statically).
///
/// # Errors
/// A lowercase message when the schema plainly rules the path out: a property it does not declare, or a
/// step into a value of the wrong type.
pub fn walk<'a>(root: &'a Value, schema: &'a Value, path: &[Segment]) -> Result<Option<&'a Value>, String> {
    let mut at = deref(root, schema);
    for segment in path {
        let declared = types(at);
        match segment {
            Segment::Key(key) => {
                if let Some(ts) = &declared
                    && !ts.contains(&"object")
                {
                    return Err(format!(
                        "`{key}` is read from a value of type {}, not an object",
                        ts.join(" or ")
                    ));
                }
                if let Some(props) = at.get("properties").and_then(Value::as_object) {
                    if let Some(sub) = props.get(key) {
                        at = deref(root, sub);
                        continue;
                    }
                    if let Some(extra) = at.get("additionalProperties").filter(|a| a.is_object()) {
                        at = deref(root, extra);
                        continue;
                    }
                    let names: Vec<&str> = props.keys().map(String::as_str).collect();
                    return Err(format!("`{key}` is not declared (declared: {})", names.join(", ")));
                }
                match at.get("additionalProperties").filter(|a| a.is_object()) {
                    Some(extra) => at = deref(root, extra),
                    None => return Ok(None),
                }
            }
            Segment::Index(i) => {
                if let Some(ts) = &declared
                    && !ts.contains(&"array")
                {
                    return Err(format!("`[{i}]` indexes a value of type {}, not an array", ts.join(" or ")));
                }
                match at.get("items").filter(|a| a.is_object()) {
                    Some(items) => at = deref(root, items),
                    None => return Ok(None),
                }
            }
        }
    }
    Ok(Some(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(keys: &[&str]) -> Vec<Segment> {
        keys.iter()
            .map(|k| k.parse().map_or_else(|_| Segment::Key((*k).to_owned()), Segment::Index))
            .collect()
    }

    #[test]
    fn walks_properties_items_and_refs() {
        let schema = json!({
            "type": "object",
            "$defs": {"spot": {"type": "object", "properties": {"max_c": {"type": ["number", "null"]}}}},
            "properties": {
                "hotspots": {"type": "array", "items": {"$ref": "#/$defs/spot"}},
                "free": {"type": "object"},
                "name": {"type": "string"}
            }
        });
        let found = walk(&schema, &schema, &path(&["hotspots", "0", "max_c"])).unwrap().unwrap();
        assert_eq!(types(found), Some(vec!["number", "null"]));
        assert_eq!(walk(&schema, &schema, &path(&["free", "anything"])).unwrap(), None);
        let err = walk(&schema, &schema, &path(&["hotspot"])).unwrap_err();
        assert!(err.contains("`hotspot` is not declared") && err.contains("hotspots"), "{err}");
        let err = walk(&schema, &schema, &path(&["name", "first"])).unwrap_err();
        assert!(err.contains("type string"), "{err}");
        let err = walk(&schema, &schema, &path(&["hotspots", "max_c"])).unwrap_err();
        assert!(err.contains("type array"), "{err}");
    }

    #[test]
    fn type_overlap_mixes_numbers() {
        assert!(types_overlap(&["integer"], &["number"]));
        assert!(types_overlap(&["number", "null"], &["number"]));
        assert!(!types_overlap(&["object"], &["string"]));
    }

    #[test]
    fn violations_name_the_pointer() {
        let v = compile(&json!({"type": "object", "properties": {"top_k": {"type": "integer"}}})).unwrap();
        let found = violations(&v, &json!({"top_k": "3"}));
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("/top_k: "), "{found:?}");
        assert!(compile(&json!({"type": 12})).unwrap_err().starts_with("invalid schema"));
    }
}

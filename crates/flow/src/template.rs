//! Argument templates: the JSON a node sends to its tool, with references filled in at run time.
//!
//! A string leaf is one of
//! * `"$input.image"`, `"$nodes.vision.output"`: a *reference*, replaced by the referenced JSON value of
//!   any type. Inside an object, a reference that resolves to nothing drops the property (so optional run
//!   inputs stay optional); anywhere else it is an error.
//! * `"{nodes.vision.output.failure_mode.kind} near {nodes.vision.output.suspected_component.designator}"`:
//!   *interpolation*, always a string; strings are inserted as they are, other values as JSON, absent or
//!   null values as nothing. `{{` and `}}` write literal braces; a `{` not followed by `input` or `nodes.`
//!   is literal too.
//! * anything else: a constant. `"$$x"` is the constant `"$x"`.

use serde_json::{Map, Value};

use crate::reference::{Reference, State};

/// A compiled template.
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    /// A value without references.
    Const(Value),
    /// A whole-value reference.
    Ref(Reference),
    /// A string built from text and references.
    Interpolate(Vec<Piece>),
    /// An array with at least one non-constant element.
    Array(Vec<Template>),
    /// An object with at least one non-constant property, in file order.
    Object(Vec<(String, Template)>),
}

/// Part of an interpolated string.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Literal text.
    Text(String),
    /// A reference, inserted as text.
    Ref(Reference),
}

impl Template {
    /// Compiles a JSON template. `field` is the template's path in the file, used in messages.
    ///
    /// # Errors
    /// `(field path, message)` for the first string that looks like a reference but is not one.
    pub fn compile(value: &Value, field: &str) -> Result<Template, (String, String)> {
        match value {
            Value::String(s) => compile_string(s).map_err(|m| (field.to_owned(), m)),
            Value::Array(items) => {
                let items = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| Template::compile(item, &format!("{field}[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(collapse_array(items))
            }
            Value::Object(map) => {
                let props = map
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Template::compile(v, &format!("{field}.{k}"))?)))
                    .collect::<Result<Vec<_>, (String, String)>>()?;
                Ok(collapse_object(props))
            }
            other => Ok(Template::Const(other.clone())),
        }
    }

    /// Every reference in the template, with its field path below `field`.
    pub fn references(&self, field: &str) -> Vec<(String, &Reference)> {
        let mut out = Vec::new();
        self.collect(field, &mut out);
        out
    }

    fn collect<'a>(&'a self, field: &str, out: &mut Vec<(String, &'a Reference)>) {
        match self {
            Template::Const(_) => {}
            Template::Ref(r) => out.push((field.to_owned(), r)),
            Template::Interpolate(pieces) => out.extend(pieces.iter().filter_map(|p| match p {
                Piece::Ref(r) => Some((field.to_owned(), r)),
                Piece::Text(_) => None,
            })),
            Template::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    item.collect(&format!("{field}[{i}]"), out);
                }
            }
            Template::Object(props) => {
                for (k, v) in props {
                    v.collect(&format!("{field}.{k}"), out);
                }
            }
        }
    }

    /// Fills in the references.
    ///
    /// # Errors
    /// A message naming the field whose reference resolved to nothing (outside an object).
    pub fn render(&self, state: &State) -> Result<Value, String> {
        self.render_at(state, "arguments")?.ok_or_else(|| "arguments resolve to nothing".to_owned())
    }

    fn render_at(&self, state: &State, field: &str) -> Result<Option<Value>, String> {
        Ok(match self {
            Template::Const(v) => Some(v.clone()),
            Template::Ref(r) => r.resolve(state),
            Template::Interpolate(pieces) => {
                let mut text = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => text.push_str(t),
                        Piece::Ref(r) => match r.resolve(state) {
                            None | Some(Value::Null) => {}
                            Some(Value::String(s)) => text.push_str(&s),
                            Some(other) => text.push_str(&other.to_string()),
                        },
                    }
                }
                Some(Value::String(text))
            }
            Template::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let at = format!("{field}[{i}]");
                    match item.render_at(state, &at)? {
                        Some(v) => out.push(v),
                        None => return Err(missing(&at, item)),
                    }
                }
                Some(Value::Array(out))
            }
            Template::Object(props) => {
                let mut out = Map::new();
                for (k, v) in props {
                    if let Some(value) = v.render_at(state, &format!("{field}.{k}"))? {
                        out.insert(k.clone(), value);
                    }
                }
                Some(Value::Object(out))
            }
        })
    }
}

fn missing(field: &str, item: &Template) -> String {
    match item {
        Template::Ref(r) => format!("{field}: `${r}` resolves to nothing"),
        _ => format!("{field} resolves to nothing"),
    }
}

fn collapse_array(items: Vec<Template>) -> Template {
    if items.iter().all(|t| matches!(t, Template::Const(_))) {
        Template::Const(Value::Array(
            items
                .into_iter()
                .filter_map(|t| if let Template::Const(v) = t { Some(v) } else { None })
                .collect(),
        ))
    } else {
        Template::Array(items)
    }
}

fn collapse_object(props: Vec<(String, Template)>) -> Template {
    if props.iter().all(|(_, t)| matches!(t, Template::Const(_))) {
        Template::Const(Value::Object(
            props
                .into_iter()
                .filter_map(|(k, t)| if let Template::Const(v) = t { Some((k, v)) } else { None })
                .collect(),
        ))
    } else {
        Template::Object(props)
    }
}

fn compile_string(s: &str) -> Result<Template, String> {
    if let Some(rest) = s.strip_prefix("$$") {
        return Ok(Template::Const(Value::String(format!("${rest}"))));
    }
    if let Some(rest) = s.strip_prefix('$') {
        return Reference::parse(rest)
            .map(Template::Ref)
            .map_err(|e| format!("{e} (write `$$` for a string that starts with a literal `$`)"));
    }
    if !(s.contains("{input") || s.contains("{nodes.")) {
        return Ok(Template::Const(Value::String(s.to_owned())));
    }
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("{{") {
            text.push('{');
            rest = after;
        } else if let Some(after) = rest.strip_prefix("}}") {
            text.push('}');
            rest = after;
        } else if c == '{' && (rest[1..].starts_with("input") || rest[1..].starts_with("nodes.")) {
            let (inner, after) = rest[1..]
                .split_once('}')
                .ok_or_else(|| format!("`{rest}`: a `{{` placeholder must be closed by `}}`"))?;
            let reference = Reference::parse(inner.trim())?;
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Ref(reference));
            rest = after;
        } else {
            text.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(Template::Interpolate(pieces))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> State {
        let mut state = State { input: json!({"image": "img", "context": null}), ..State::default() };
        state.outputs.insert(
            "vision".into(),
            json!({"failure_mode": {"kind": "loose-connection"}, "severity": {"band": "major"}, "hotspots": [1, 2]}),
        );
        state
    }

    fn render(template: Value) -> Result<Value, String> {
        Template::compile(&template, "arguments").unwrap().render(&state())
    }

    #[test]
    fn references_keep_their_type_and_absent_properties_are_dropped() {
        let out = render(json!({
            "image": "$input.image", "emissivity": "$input.emissivity", "first": "$nodes.vision.output.hotspots[0]",
            "all": "$nodes.vision.output.severity", "price": "$$5", "n": 3
        }))
        .unwrap();
        assert_eq!(out, json!({"image": "img", "first": 1, "all": {"band": "major"}, "price": "$5", "n": 3}));
    }

    #[test]
    fn interpolation_builds_strings_and_skips_absent_values() {
        let out = render(json!({
            "query": "{nodes.vision.output.failure_mode.kind} {nodes.vision.output.suspected_component.designator}\
                      severity {nodes.vision.output.severity.band} {{literal}} {x}"
        }))
        .unwrap();
        assert_eq!(out, json!({"query": "loose-connection severity major {literal} {x}"}));
    }

    #[test]
    fn an_absent_reference_in_an_array_is_an_error_naming_the_field() {
        let err = render(json!({"list": ["$nodes.vision.output.nope"]})).unwrap_err();
        assert!(err.contains("arguments.list[0]") && err.contains("nodes.vision.output.nope"), "{err}");
    }

    #[test]
    fn a_malformed_reference_is_reported_with_its_field() {
        let (field, msg) = Template::compile(&json!({"a": {"b": "$nodes.x"}}), "arguments").unwrap_err();
        assert_eq!(field, "arguments.a.b");
        assert!(msg.contains("$$"), "{msg}");
    }

    #[test]
    fn constants_collapse_and_references_are_listed() {
        let t = Template::compile(&json!({"a": [1, 2], "b": {"c": "$input.image"}}), "arguments").unwrap();
        let refs: Vec<String> =
            t.references("arguments").into_iter().map(|(f, r)| format!("{f}={r}")).collect();
        assert_eq!(refs, ["arguments.b.c=input.image"]);
        assert!(matches!(Template::compile(&json!({"a": [1]}), "x").unwrap(), Template::Const(_)));
    }
}

//! References into run state: `input.image`, `nodes.vision.output.hotspots[0]`, `nodes.vision.error`.
//!
//! A reference is how a node's arguments and an edge's condition read what came before. The grammar is
//! deliberately tiny (dotted keys and `[index]`, no wildcards or filters) so that every reference can be
//! checked against schemas when the flow is loaded.

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// An object property.
    Key(String),
    /// An array element.
    Index(usize),
}

/// What a reference starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    /// The run input.
    Input,
    /// A node's output (`nodes.<id>.output`).
    Output(String),
    /// A node's error message (`nodes.<id>.error`), a string or absent.
    Error(String),
}

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// Where it starts.
    pub root: Root,
    /// The path below the root.
    pub path: Vec<Segment>,
}

impl Reference {
    /// Parses a reference written without its `$` or braces, e.g. `nodes.vision.output.severity.band`.
    ///
    /// # Errors
    /// A lowercase message saying what is wrong with the text.
    pub fn parse(text: &str) -> Result<Reference, String> {
        let (head, rest) = split_ident(text);
        let (root, rest) = match head {
            "input" => (Root::Input, rest),
            "nodes" => {
                let rest = rest.strip_prefix('.').ok_or_else(|| {
                    format!("`{text}`: `nodes` must be followed by `.<node id>.output` or `.<node id>.error`")
                })?;
                let (id, rest) = split_ident(rest);
                if id.is_empty() {
                    return Err(format!("`{text}`: missing node id after `nodes.`"));
                }
                let (part, rest) = rest.strip_prefix('.').map(split_ident).unwrap_or(("", rest));
                match part {
                    "output" => (Root::Output(id.to_owned()), rest),
                    "error" => (Root::Error(id.to_owned()), rest),
                    _ => {
                        return Err(format!("`{text}`: expected `nodes.{id}.output` or `nodes.{id}.error`"));
                    }
                }
            }
            _ => return Err(format!("`{text}`: a reference starts with `input` or `nodes.<node id>`")),
        };
        let path = parse_path(rest).map_err(|e| format!("`{text}`: {e}"))?;
        if matches!(root, Root::Error(_)) && !path.is_empty() {
            return Err(format!("`{text}`: a node's error is a string; nothing can follow `.error`"));
        }
        Ok(Reference { root, path })
    }

    /// The node this reference reads from, if any.
    pub fn node(&self) -> Option<&str> {
        match &self.root {
            Root::Input => None,
            Root::Output(id) | Root::Error(id) => Some(id),
        }
    }

    /// Looks the reference up; `None` when any step is absent.
    pub fn resolve(&self, state: &State) -> Option<Value> {
        let start = match &self.root {
            Root::Input => &state.input,
            Root::Output(id) => state.outputs.get(id)?,
            Root::Error(id) => return state.errors.get(id).map(|e| Value::String(e.clone())),
        };
        let mut at = start;
        for segment in &self.path {
            at = match segment {
                Segment::Key(key) => at.get(key)?,
                Segment::Index(i) => at.get(*i)?,
            };
        }
        Some(at.clone())
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.root {
            Root::Input => f.write_str("input")?,
            Root::Output(id) => write!(f, "nodes.{id}.output")?,
            Root::Error(id) => write!(f, "nodes.{id}.error")?,
        }
        for segment in &self.path {
            match segment {
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// What references read: the run input and the outputs and errors of the nodes settled so far.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// The run input.
    pub input: Value,
    /// Outputs of nodes that finished (successfully, or with a tool error that returned content).
    pub outputs: HashMap<String, Value>,
    /// Error messages of nodes that failed.
    pub errors: HashMap<String, String>,
}

/// Characters allowed in keys and node ids.
pub(crate) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn split_ident(text: &str) -> (&str, &str) {
    let end = text.find(|c: char| !is_ident_char(c)).unwrap_or(text.len());
    text.split_at(end)
}

fn parse_path(mut rest: &str) -> Result<Vec<Segment>, String> {
    let mut path = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let (key, after) = split_ident(after);
            if key.is_empty() {
                return Err("a `.` must be followed by a property name (letters, digits, `_`, `-`)".into());
            }
            path.push(Segment::Key(key.to_owned()));
            rest = after;
        } else if let Some(after) = rest.strip_prefix('[') {
            let (digits, after) =
                after.split_once(']').ok_or_else(|| "an `[` must be closed by `]`".to_owned())?;
            let index = digits.parse().map_err(|_| format!("`[{digits}]` is not an array index"))?;
            path.push(Segment::Index(index));
            rest = after;
        } else {
            return Err(format!("unexpected `{rest}`; use `.name` or `[index]`"));
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_prints_every_form() {
        for text in ["input", "input.image", "nodes.vision.output.hotspots[0].max_c", "nodes.k-2.error"] {
            assert_eq!(Reference::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        for (text, expect) in [
            ("inputs.x", "starts with"),
            ("nodes.vision", "expected `nodes.vision.output`"),
            ("nodes.vision.output.", "property name"),
            ("nodes.vision.output[x]", "not an array index"),
            ("nodes.vision.error.x", "nothing can follow"),
            ("input.a b", "unexpected"),
        ] {
            let err = Reference::parse(text).unwrap_err();
            assert!(err.contains(expect), "{text}: {err}");
        }
    }

    #[test]
    fn resolves_against_state() {
        let mut state = State { input: json!({"image": "x"}), ..State::default() };
        state.outputs.insert("v".into(), json!({"hotspots": [{"max_c": 80.5}]}));
        state.errors.insert("k".into(), "boom".into());
        let get = |t: &str| Reference::parse(t).unwrap().resolve(&state);
        assert_eq!(get("input.image"), Some(json!("x")));
        assert_eq!(get("nodes.v.output.hotspots[0].max_c"), Some(json!(80.5)));
        assert_eq!(get("nodes.v.output.hotspots[1]"), None);
        assert_eq!(get("nodes.k.error"), Some(json!("boom")));
        assert_eq!(get("nodes.k.output"), None);
    }
}

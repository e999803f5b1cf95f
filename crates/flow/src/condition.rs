//! Edge conditions: `ok`, `error`, or a comparison such as `$nodes.vision.output.severity.band != "none"`.
//!
//! A comparison edge fires only when its source node succeeded *and* the comparison holds, so a condition
//! never routes around a failure. The right-hand side is a JSON literal; an absent left-hand side compares
//! as `null`. Ordering (`<`, `<=`, `>`, `>=`) is defined for two numbers or two strings and is false
//! otherwise.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use crate::reference::{Reference, State};

/// When an edge fires.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    /// The source node succeeded.
    Ok,
    /// The source node failed.
    Error,
    /// The source node succeeded and the comparison holds.
    Compare {
        /// The value compared.
        left: Reference,
        /// The operator.
        op: Op,
        /// The literal compared with.
        right: Value,
    },
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

impl When {
    /// Parses a `when` field; `None` means `ok`.
    ///
    /// # Errors
    /// A lowercase message showing the accepted forms.
    pub fn parse(text: Option<&str>) -> Result<When, String> {
        let Some(text) = text.map(str::trim) else {
            return Ok(When::Ok);
        };
        match text {
            "ok" => return Ok(When::Ok),
            "error" => return Ok(When::Error),
            _ => {}
        }
        let usage = "use `ok`, `error`, or `$<reference> <op> <json literal>` with op one of == != < <= > >=";
        let Some(at) = text.find(['=', '!', '<', '>']) else {
            return Err(format!("`{text}` is not a condition; {usage}"));
        };
        let (left, rest) = text.split_at(at);
        let op = [Op::Eq, Op::Ne, Op::Le, Op::Ge, Op::Lt, Op::Gt]
            .into_iter()
            .find(|op| rest.starts_with(op.symbol()))
            .ok_or_else(|| format!("`{text}` has no valid operator; {usage}"))?;
        let left = left.trim();
        let left = left
            .strip_prefix('$')
            .ok_or_else(|| format!("`{text}`: the left side must be a `$` reference; {usage}"))?;
        let left = Reference::parse(left)?;
        let literal = rest[op.symbol().len()..].trim();
        let right = serde_json::from_str(literal).map_err(|_| {
            format!("`{text}`: `{literal}` is not a json literal (strings need double quotes)")
        })?;
        Ok(When::Compare { left, op, right })
    }

    /// Whether the edge fires, given whether its source succeeded.
    pub fn fires(&self, source_ok: bool, state: &State) -> bool {
        match self {
            When::Ok => source_ok,
            When::Error => !source_ok,
            When::Compare { left, op, right } => {
                source_ok && compare(&left.resolve(state).unwrap_or(Value::Null), *op, right)
            }
        }
    }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            When::Ok => f.write_str("ok"),
            When::Error => f.write_str("error"),
            When::Compare { left, op, right } => write!(f, "${left} {} {right}", op.symbol()),
        }
    }
}

fn compare(left: &Value, op: Op, right: &Value) -> bool {
    let ordering = match (left, right) {
        (Value::Number(a), Value::Number(b)) => {
            a.as_f64().zip(b.as_f64()).and_then(|(a, b)| a.partial_cmp(&b))
        }
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match op {
        Op::Eq => ordering.map_or(left == right, Ordering::is_eq),
        Op::Ne => ordering.map_or(left != right, Ordering::is_ne),
        Op::Lt => ordering.is_some_and(Ordering::is_lt),
        Op::Le => ordering.is_some_and(Ordering::is_le),
        Op::Gt => ordering.is_some_and(Ordering::is_gt),
        Op::Ge => ordering.is_some_and(Ordering::is_ge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> State {
        let mut state = State::default();
        state.outputs.insert("v".into(), json!({"severity": {"band": "major"}, "delta": 12, "conf": 0.5}));
        state
    }

    #[test]
    fn comparisons_evaluate_on_state() {
        let s = state();
        let check = |text: &str| When::parse(Some(text)).unwrap().fires(true, &s);
        assert!(check(r#"$nodes.v.output.severity.band != "none""#));
        assert!(check(r#"$nodes.v.output.severity.band == "major""#));
        assert!(check("$nodes.v.output.delta >= 12.0"));
        assert!(check("$nodes.v.output.conf<0.75"));
        assert!(!check("$nodes.v.output.delta > 12"));
        assert!(check("$nodes.v.output.absent == null"));
        assert!(!check(r#"$nodes.v.output.severity.band > 3"#), "mixed types never order");
        assert!(!When::parse(Some(r#"$nodes.v.output.delta == 12"#)).unwrap().fires(false, &s));
    }

    #[test]
    fn ok_error_and_default() {
        let s = State::default();
        assert_eq!(When::parse(None).unwrap(), When::Ok);
        assert!(When::parse(Some("error")).unwrap().fires(false, &s));
        assert!(!When::parse(Some("ok")).unwrap().fires(false, &s));
    }

    #[test]
    fn malformed_conditions_are_explained() {
        for (text, expect) in [
            ("maybe", "not a condition"),
            ("$nodes.v.output.band = 1", "no valid operator"),
            ("nodes.v.output.band == 1", "left side"),
            ("$nodes.v.output.band == none", "json literal"),
        ] {
            let err = When::parse(Some(text)).unwrap_err();
            assert!(err.contains(expect), "{text}: {err}");
        }
    }
}

//! A server's catalog: what it offers, as last listed, and what changed between two listings.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::events::CatalogDiff;
use crate::schema::{CompiledTool, Quarantined};

/// Everything one server offers.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Usable tools, in server order.
    pub tools: Vec<CompiledTool>,
    /// Tools left out, with the reason.
    pub quarantined: Vec<Quarantined>,
    /// `resources/list` items, as sent.
    pub resources: Vec<Value>,
    /// `resources/templates/list` items, as sent.
    pub resource_templates: Vec<Value>,
    /// `prompts/list` items, as sent.
    pub prompts: Vec<Value>,
    /// Smallest `ttlMs` the server gave for these lists.
    pub ttl: Option<Duration>,
    /// Unix milliseconds of the listing.
    pub fetched_at_ms: i64,
}

impl Catalog {
    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The raw tool objects.
    pub fn raw_tools(&self) -> Vec<Value> {
        self.tools.iter().map(|t| t.raw.clone()).collect()
    }

    /// What differs from `self` (the earlier listing) to `newer`, item by item (see
    /// [`CatalogDiff`]). Order and the listing's time and `ttlMs` are not differences.
    pub fn diff(&self, newer: &Catalog) -> CatalogDiff {
        let mut d = CatalogDiff::default();
        (d.tools_added, d.tools_removed, d.tools_changed) = compare(&self.tool_map(), &newer.tool_map());
        (d.prompts_added, d.prompts_removed, d.prompts_changed) =
            compare(&keyed(&self.prompts, "name"), &keyed(&newer.prompts, "name"));
        (d.resources_added, d.resources_removed, d.resources_changed) =
            compare(&keyed(&self.resources, "uri"), &keyed(&newer.resources, "uri"));
        (d.templates_added, d.templates_removed, d.templates_changed) = compare(
            &keyed(&self.resource_templates, "uriTemplate"),
            &keyed(&newer.resource_templates, "uriTemplate"),
        );
        d
    }

    /// Every tool by name: a usable one as sent, a quarantined one as its reason (so moving
    /// into or out of quarantine is a change).
    fn tool_map(&self) -> BTreeMap<String, Value> {
        let usable = self.tools.iter().map(|t| (t.name.clone(), t.raw.clone()));
        let left_out = self.quarantined.iter().map(|q| (q.name.clone(), json!({"quarantined": q.error})));
        usable.chain(left_out).collect()
    }
}

/// Items by the string field `key` (items without one are keyed by their position, so they
/// still count).
fn keyed(items: &[Value], key: &str) -> BTreeMap<String, Value> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let k =
                v.get(key).and_then(Value::as_str).map_or_else(|| format!("<unnamed #{i}>"), str::to_owned);
            (k, v.clone())
        })
        .collect()
}

/// Keys added, removed and changed from `old` to `new`, each sorted.
fn compare(
    old: &BTreeMap<String, Value>,
    new: &BTreeMap<String, Value>,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let added = new.keys().filter(|k| !old.contains_key(*k)).cloned().collect();
    let removed = old.keys().filter(|k| !new.contains_key(*k)).cloned().collect();
    let changed =
        new.iter().filter(|(k, v)| old.get(*k).is_some_and(|o| o != *v)).map(|(k, _)| k.clone()).collect();
    (added, removed, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::compile_tools;

    fn catalog(tools: Value, prompts: Value, resources: Value, templates: Value) -> Catalog {
        let items = |v: Value| v.as_array().cloned().unwrap_or_default();
        let (tools, quarantined) = compile_tools(&items(tools));
        Catalog {
            tools,
            quarantined,
            resources: items(resources),
            resource_templates: items(templates),
            prompts: items(prompts),
            ..Catalog::default()
        }
    }

    fn tool(name: &str, description: &str) -> Value {
        json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
    }

    #[test]
    fn the_diff_names_what_was_added_removed_and_changed() {
        let before = catalog(
            json!([tool("a", "A"), tool("b", "B"), tool("c", "C")]),
            json!([{"name": "p", "description": "P"}, {"name": "q"}]),
            json!([{"uri": "file:///x", "name": "x"}]),
            json!([{"uriTemplate": "file:///{n}", "name": "n"}]),
        );
        let mut annotated = tool("c", "C");
        annotated["annotations"] = json!({"readOnlyHint": true});
        let after = catalog(
            // `a` gone, `b` described anew, `c` annotated, `d` new; order does not matter.
            json!([tool("d", "D"), annotated, tool("b", "B2")]),
            json!([{"name": "q"}, {"name": "p", "description": "P2"}, {"name": "r"}]),
            json!([{"uri": "file:///y", "name": "y"}]),
            json!([{"uriTemplate": "file:///{n}", "name": "n", "mimeType": "text/plain"}]),
        );
        let d = before.diff(&after);
        assert_eq!(
            (d.tools_added, d.tools_removed, d.tools_changed),
            (vec!["d".into()], vec!["a".into()], vec!["b".into(), "c".into()])
        );
        assert_eq!(
            (d.prompts_added, d.prompts_removed, d.prompts_changed),
            (vec!["r".into()], vec![], vec!["p".into()])
        );
        assert_eq!(
            (d.resources_added, d.resources_removed),
            (vec!["file:///y".into()], vec!["file:///x".into()])
        );
        assert!(d.resources_changed.is_empty());
        assert_eq!(d.templates_changed, vec!["file:///{n}".to_owned()]);
        assert!(before.diff(&before.clone()).is_empty());
        // Reordered lists are the same catalog.
        let reordered = catalog(
            json!([tool("c", "C"), tool("b", "B"), tool("a", "A")]),
            json!([{"name": "q"}, {"name": "p", "description": "P"}]),
            json!([{"uri": "file:///x", "name": "x"}]),
            json!([{"uriTemplate": "file:///{n}", "name": "n"}]),
        );
        assert!(before.diff(&reordered).is_empty());
    }

    #[test]
    fn a_tool_moving_into_quarantine_is_changed() {
        let before = catalog(json!([tool("t", "T")]), json!([]), json!([]), json!([]));
        let broken = json!({"name": "t", "inputSchema": {"$ref": "#/nowhere"}});
        let after = catalog(json!([broken]), json!([]), json!([]), json!([]));
        assert_eq!(after.quarantined.len(), 1, "the fixture's tool must be quarantined");
        assert_eq!(before.diff(&after).tools_changed, vec!["t".to_owned()]);
    }
}

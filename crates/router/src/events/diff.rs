//! [`CatalogDiff`]: what differs between two listings of one server's catalog.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What differs between two listings of one server's catalog.
///
/// Items are keyed by their identity (tools and prompts by name, resources by URI, templates by
/// URI template); an item is *changed* when its definition differs in anything a caller could
/// act on (description, schemas, annotations, title, arguments, MIME type). A tool that moved
/// into or out of quarantine is changed. Lists are sorted, so equal diffs compare equal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct CatalogDiff {
    /// Tools listed now and not before.
    pub tools_added: Vec<String>,
    /// Tools listed before and not now.
    pub tools_removed: Vec<String>,
    /// Tools whose definition (description, schemas, annotations) changed.
    pub tools_changed: Vec<String>,
    /// Prompts added, by name.
    pub prompts_added: Vec<String>,
    /// Prompts removed, by name.
    pub prompts_removed: Vec<String>,
    /// Prompts whose definition changed, by name.
    pub prompts_changed: Vec<String>,
    /// Resources added, by URI.
    pub resources_added: Vec<String>,
    /// Resources removed, by URI.
    pub resources_removed: Vec<String>,
    /// Resources whose definition changed, by URI.
    pub resources_changed: Vec<String>,
    /// Resource templates added, by URI template.
    pub templates_added: Vec<String>,
    /// Resource templates removed, by URI template.
    pub templates_removed: Vec<String>,
    /// Resource templates whose definition changed, by URI template.
    pub templates_changed: Vec<String>,
}

impl CatalogDiff {
    /// `true` when nothing differs.
    pub fn is_empty(&self) -> bool {
        self == &CatalogDiff::default()
    }
}

//! A server's catalog: what it offers, as last listed.

use std::time::Duration;

use serde_json::Value;

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
}

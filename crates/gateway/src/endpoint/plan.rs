//! What a routed request asks of the scheduler besides its name: its affinity key (the
//! 2025-11-25 session, or a 2026-07-28 caller's header or `_meta` key), the capability labels it
//! wants, and whether it may be retried on another upstream after a failure that may have
//! reached the first (a read-only or idempotent tool, or an idempotency key).

use serde_json::Value;
use switchboard_router::schedule::{Ask, KeySource};
use switchboard_wire::{Message, meta};

use super::client::Client;

/// Longest affinity or idempotency key accepted.
pub(super) const MAX_KEY_LEN: usize = 256;
/// Most capability labels one request may ask for.
const MAX_LABELS: usize = 16;

/// A request's scheduling inputs.
#[derive(Debug, Clone, Default)]
pub(super) struct Plan {
    pub(super) key: Option<String>,
    pub(super) key_source: Option<KeySource>,
    pub(super) core: Vec<String>,
    pub(super) optional: Vec<String>,
    pub(super) idempotency_key: Option<String>,
}

/// Header values a request came with that scheduling reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteHeaders {
    pub(crate) affinity: Option<String>,
    pub(crate) idempotency: Option<String>,
}

impl Plan {
    /// Reads the plan off a request; `Err` is the message of an invalid-params error.
    pub(super) fn of(msg: &Message, client: &Client, headers: &RouteHeaders) -> Result<Plan, String> {
        let m = msg.meta();
        let meta_str = |key: &str| -> Result<Option<String>, String> {
            match m.and_then(|m| m.get(key)) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!(
                    "params._meta[{key:?}] must be a string, not {}",
                    switchboard_wire::message::json_type(other)
                )),
            }
        };
        let mut plan = Plan::default();
        let explicit = match (meta_str(meta::AFFINITY_KEY)?, &headers.affinity) {
            (Some(k), _) => Some((k, KeySource::Meta)),
            (None, Some(h)) => Some((h.clone(), KeySource::Header)),
            (None, None) => None,
        };
        let (key, source) = match (client, explicit) {
            (_, Some((k, s))) => (Some(k), Some(s)),
            (Client::Legacy { sid, .. }, None) => (Some(sid.clone()), Some(KeySource::Session)),
            (Client::Modern { .. }, None) => (None, None),
        };
        plan.key = key.filter(|k| !k.is_empty());
        plan.key_source = plan.key.as_ref().and(source);
        plan.idempotency_key = meta_str(meta::IDEMPOTENCY_KEY)?.or_else(|| headers.idempotency.clone());
        plan.idempotency_key = plan.idempotency_key.filter(|k| !k.is_empty());
        for (what, k) in [("affinity", &plan.key), ("idempotency", &plan.idempotency_key)] {
            if k.as_ref().is_some_and(|k| k.len() > MAX_KEY_LEN) {
                return Err(format!("the {what} key is longer than {MAX_KEY_LEN} bytes"));
            }
        }
        if let Some(caps) = m.and_then(|m| m.get(meta::CAPABILITIES)) {
            let Some(obj) = caps.as_object() else {
                return Err(format!(
                    "params._meta[{:?}] must be an object {{\"core\": [...], \"optional\": [...]}}",
                    meta::CAPABILITIES
                ));
            };
            for (field, out) in [("core", &mut plan.core), ("optional", &mut plan.optional)] {
                match obj.get(field) {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(items)) if items.len() <= MAX_LABELS => {
                        for i in items {
                            match i.as_str() {
                                Some(l) if !l.is_empty() && l.len() <= 64 => out.push(l.to_owned()),
                                _ => {
                                    return Err(format!(
                                        "params._meta[{:?}].{field} must hold capability labels (non-empty strings of at most 64 bytes)",
                                        meta::CAPABILITIES
                                    ));
                                }
                            }
                        }
                    }
                    Some(_) => {
                        return Err(format!(
                            "params._meta[{:?}].{field} must be an array of at most {MAX_LABELS} labels",
                            meta::CAPABILITIES
                        ));
                    }
                }
            }
        }
        Ok(plan)
    }

    /// The scheduler's question for attempt `attempt`, leaving out `exclude`.
    pub(super) fn ask<'a>(&'a self, exclude: &'a [String], attempt: u32) -> Ask<'a> {
        Ask {
            key: self.key.as_deref(),
            key_source: self.key_source,
            core: &self.core,
            optional: &self.optional,
            exclude,
            attempt,
        }
    }
}

/// Whether a tool's annotations say a repeat is harmless (`readOnlyHint` or `idempotentHint`).
pub(super) fn repeatable(tool: Option<&Value>) -> bool {
    let hint = |k: &str| {
        tool.and_then(|t| t.get("annotations")).and_then(|a| a.get(k)).and_then(Value::as_bool) == Some(true)
    };
    hint("readOnlyHint") || hint("idempotentHint")
}

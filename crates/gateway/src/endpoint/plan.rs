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
        // A caller's own key is bounded; the router's session ids are what they are.
        if explicit.as_ref().is_some_and(|(k, _)| k.len() > MAX_KEY_LEN) {
            return Err(format!("the affinity key is longer than {MAX_KEY_LEN} bytes"));
        }
        let (key, source) = match (client, explicit) {
            (_, Some((k, s))) => (Some(k), Some(s)),
            (Client::Legacy { sid, .. }, None) => (Some(sid.clone()), Some(KeySource::Session)),
            (Client::Modern { .. }, None) => (None, None),
        };
        plan.key = key.filter(|k| !k.is_empty());
        plan.key_source = plan.key.as_ref().and(source);
        plan.idempotency_key = meta_str(meta::IDEMPOTENCY_KEY)?.or_else(|| headers.idempotency.clone());
        plan.idempotency_key = plan.idempotency_key.filter(|k| !k.is_empty());
        if plan.idempotency_key.as_ref().is_some_and(|k| k.len() > MAX_KEY_LEN) {
            return Err(format!("the idempotency key is longer than {MAX_KEY_LEN} bytes"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(meta: Value) -> Message {
        Message::parse(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": meta}})
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    }

    fn modern() -> Client {
        Client::Modern { caps: json!({}), log_level: None }
    }

    #[test]
    fn the_key_is_the_session_or_the_callers_own_and_never_empty() {
        let legacy =
            Client::Legacy { sid: "s".repeat(400), caps: json!({}), info: json!({}), log_level: None };
        let p = Plan::of(&msg(json!({})), &legacy, &RouteHeaders::default()).unwrap();
        assert_eq!((p.key.as_deref().map(str::len), p.key_source), (Some(400), Some(KeySource::Session)));
        let headers = RouteHeaders { affinity: Some("from-header".into()), idempotency: Some("i-1".into()) };
        let p = Plan::of(&msg(json!({})), &modern(), &headers).unwrap();
        assert_eq!((p.key.as_deref(), p.key_source), (Some("from-header"), Some(KeySource::Header)));
        assert_eq!(p.idempotency_key.as_deref(), Some("i-1"));
        let p =
            Plan::of(&msg(json!({"dev.switchboard/affinityKey": "from-meta"})), &modern(), &headers).unwrap();
        assert_eq!((p.key.as_deref(), p.key_source), (Some("from-meta"), Some(KeySource::Meta)));
        let p =
            Plan::of(&msg(json!({"dev.switchboard/affinityKey": ""})), &modern(), &RouteHeaders::default())
                .unwrap();
        assert_eq!((p.key, p.key_source), (None, None), "an empty string is no key");
        let p = Plan::of(&msg(json!({})), &modern(), &RouteHeaders::default()).unwrap();
        assert_eq!(p.key, None);
    }

    #[test]
    fn bad_keys_and_labels_are_refused_with_a_sentence() {
        let h = RouteHeaders::default();
        let long = "k".repeat(MAX_KEY_LEN + 1);
        for (meta, want) in [
            (json!({"dev.switchboard/affinityKey": long}), "the affinity key is longer than 256 bytes"),
            (
                json!({"dev.switchboard/affinityKey": 7}),
                "params._meta[\"dev.switchboard/affinityKey\"] must be a string, not a number",
            ),
            (
                json!({"dev.switchboard/idempotencyKey": "k".repeat(300)}),
                "the idempotency key is longer than 256 bytes",
            ),
            (
                json!({"dev.switchboard/capabilities": ["gpu"]}),
                "params._meta[\"dev.switchboard/capabilities\"] must be an object {\"core\": [...], \"optional\": [...]}",
            ),
            (
                json!({"dev.switchboard/capabilities": {"core": "gpu"}}),
                "params._meta[\"dev.switchboard/capabilities\"].core must be an array of at most 16 labels",
            ),
            (
                json!({"dev.switchboard/capabilities": {"optional": [""]}}),
                "params._meta[\"dev.switchboard/capabilities\"].optional must hold capability labels (non-empty strings of at most 64 bytes)",
            ),
        ] {
            assert_eq!(Plan::of(&msg(meta), &modern(), &h).unwrap_err(), want);
        }
        let p = Plan::of(
            &msg(json!({"dev.switchboard/capabilities": {"core": ["kv"], "optional": ["gpu"]}})),
            &modern(),
            &h,
        )
        .unwrap();
        assert_eq!((p.core, p.optional), (vec!["kv".to_owned()], vec!["gpu".to_owned()]));
    }

    #[test]
    fn repeatable_tools_say_so_in_their_annotations() {
        assert!(repeatable(Some(&json!({"annotations": {"readOnlyHint": true}}))));
        assert!(repeatable(Some(&json!({"annotations": {"idempotentHint": true}}))));
        assert!(!repeatable(Some(&json!({"annotations": {"destructiveHint": false}}))));
        assert!(!repeatable(Some(&json!({}))));
        assert!(!repeatable(None));
    }
}

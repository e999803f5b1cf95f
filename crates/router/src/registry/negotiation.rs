//! [`Event::Negotiation`]: one event per step of an upstream handshake, so the control panel can
//! show how the router and a server agreed on an era (or why they did not) as it happens.
//!
//! The steps come from the client's handshake (`Handshake::steps` / `HandshakeFailure::steps` of
//! `switchboard-transport`), one line per step; the versions offered and chosen come from the
//! handshake record. A step line names its method first (`server/discover …`, `initialize …`);
//! a discover that gave way to `initialize` ends with `; falling back to initialize` and becomes
//! two events, the discover and the fallback. A failed handshake ends with a `failed` event
//! carrying the record's error.

use switchboard_store::HandshakeRecord;
use switchboard_wire::{LEGACY_VERSIONS, MODERN_VERSIONS};

use crate::events::{Event, now_ms};

/// The suffix the client puts on a discover step that gave way to `initialize`.
const FALLBACK: &str = "; falling back to initialize";

/// What a step line is about: its step name and the rest of the line (the outcome).
fn split_step(line: &str) -> Option<(&'static str, &str)> {
    let rest = |prefix: &str| line[prefix.len()..].trim_start_matches([' ', ':', '→']).trim();
    if line.starts_with("server/discover") {
        Some(("discover", rest("server/discover")))
    } else if line.starts_with("notifications/initialized") {
        Some(("initialize", line.trim()))
    } else if line.starts_with("initialize") {
        Some(("initialize", rest("initialize")))
    } else {
        None
    }
}

/// The versions of `offered` that a step of kind `step` offers.
fn offered_at(step: &str, offered: &[String]) -> Vec<String> {
    let of_era: &[&str] = match step {
        "discover" => MODERN_VERSIONS,
        "initialize" => LEGACY_VERSIONS,
        _ => return Vec::new(),
    };
    offered.iter().filter(|v| of_era.contains(&v.as_str())).cloned().collect()
}

/// The negotiation events of one upstream handshake of `server`, in order.
pub(super) fn events(server: &str, steps: &[String], record: &HandshakeRecord) -> Vec<Event> {
    let at_ms = now_ms();
    let event = |step: &str, chosen: Option<String>, detail: Option<String>| Event::Negotiation {
        server: server.to_owned(),
        leg: record.leg.clone(),
        step: step.to_owned(),
        offered: offered_at(step, &record.offered_versions),
        chosen,
        detail,
        at_ms,
    };
    let mut out = Vec::with_capacity(steps.len() + 2);
    for (i, line) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let Some((step, outcome)) = split_step(line) else {
            // Not a protocol step (the connection itself failed): said by the `failed` event.
            if !(last && record.error.is_some()) {
                out.push(event("failed", None, Some(line.clone())));
            }
            continue;
        };
        if let Some(why) = outcome.strip_suffix(FALLBACK) {
            out.push(event(step, None, Some(why.to_owned())));
            out.push(event("fallback", None, Some(FALLBACK.trim_start_matches("; ").to_owned())));
            continue;
        }
        let chosen = record.chosen_version.as_ref().filter(|v| last && outcome == v.as_str()).cloned();
        let detail = if chosen.is_some() { None } else { Some(outcome.to_owned()) };
        out.push(event(step, chosen, detail));
    }
    if let Some(error) = &record.error {
        out.push(event("failed", None, Some(error.clone())));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn record(offered: &[&str], chosen: Option<&str>, error: Option<&str>) -> HandshakeRecord {
        HandshakeRecord {
            id: None,
            server_id: None,
            leg: "upstream".into(),
            transport: "http".into(),
            era: None,
            offered_versions: offered.iter().map(|v| (*v).to_owned()).collect(),
            chosen_version: chosen.map(str::to_owned),
            client_capabilities: Value::Null,
            server_capabilities: Value::Null,
            client_info: Value::Null,
            server_info: Value::Null,
            tool_count: None,
            duration_ms: 0.0,
            error: error.map(str::to_owned),
            at_ms: 0,
        }
    }

    /// (step, offered, chosen, detail) of one event.
    type Step = (String, Vec<String>, Option<String>, Option<String>);

    fn steps(events: &[Event]) -> Vec<Step> {
        events
            .iter()
            .map(|e| match e {
                Event::Negotiation { step, offered, chosen, detail, leg, .. } => {
                    assert_eq!(leg, "upstream");
                    (step.clone(), offered.clone(), chosen.clone(), detail.clone())
                }
                other => panic!("not a negotiation event: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_fallback_is_a_discover_then_a_fallback_then_the_initialize_that_chose() {
        let lines = vec![
            "server/discover → Method not found (-32601); falling back to initialize".to_owned(),
            "initialize → 2025-11-25".to_owned(),
        ];
        let rec = record(&["2026-07-28", "2025-11-25"], Some("2025-11-25"), None);
        let got = steps(&events("s", &lines, &rec));
        let names: Vec<&str> = got.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(names, ["discover", "fallback", "initialize"]);
        assert_eq!(got[0].1, ["2026-07-28"]);
        assert_eq!(got[0].3.as_deref(), Some("Method not found (-32601)"));
        assert_eq!(got[2].1, ["2025-11-25"]);
        assert_eq!(got[2].2.as_deref(), Some("2025-11-25"));
        assert_eq!(got[2].3, None);
    }

    #[test]
    fn a_failure_ends_with_failed_and_a_dead_connection_is_failed_alone() {
        let lines = vec!["initialize rejected: bad".to_owned()];
        let rec = record(&["2025-11-25"], None, Some("initialize rejected: bad"));
        let names: Vec<String> = steps(&events("s", &lines, &rec)).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["initialize", "failed"]);
        let lines = vec!["connection refused".to_owned()];
        let rec = record(&[], None, Some("connection refused"));
        let got = steps(&events("s", &lines, &rec));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].0.as_str(), got[0].3.as_deref()), ("failed", Some("connection refused")));
    }
}

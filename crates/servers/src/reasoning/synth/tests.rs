//! Tests of the synthesis: safety first, de-duplication, one component per plan.

use super::*;
use serde_json::json;

fn vision(band: &str, equipment: &str) -> VisionInput {
    serde_json::from_value(json!({
        "analysis": "absolute", "equipment": equipment, "max_c": 87.2, "delta_t_ref_c": 52.5,
        "severity": { "band": band, "action": "major discrepancy; repair immediately", "criterion": "ΔT", "assessed": true },
        "suspected_component": { "designator": "N1", "value": "neutral lug" },
        "failure_mode": { "kind": "loose-connection", "hypothesis": "loose connection" },
        "hotspots": [ { "hottest": { "x": 51.0, "y": 65.0 } } ],
        "confidence": 0.8
    }))
    .unwrap()
}

fn knowledge() -> KnowledgeInput {
    serde_json::from_value(json!({ "results": [
        { "id": "lug", "title": "Lug overheating", "kind": "lug", "score": 0.9,
          "steps": ["Torque the lug to the manufacturer's value.", "Clean and inspect the conductor."],
          "safety": ["De-energise the equipment and apply lockout/tagout before opening covers or touching conductors (NFPA 70E); treat it as energised until proven otherwise."],
          "parts": ["Mechanical lug"], "source": "NETA" },
        { "id": "lug2", "title": "Lug corrosion", "kind": "lug", "score": 0.7,
          "steps": ["Torque the lug to the manufacturers value", "Apply antioxidant compound."],
          "safety": ["Wear PPE."], "source": "" },
        { "id": "far", "title": "Unrelated", "kind": "breaker", "score": 0.2, "steps": ["Nope."] }
    ]}))
    .unwrap()
}

#[test]
fn panel_plan_puts_loto_first_and_deduplicates() {
    let p = synthesize(&vision("major", "panel"), &knowledge(), Some("70 % load, 400 A panel"));
    assert!(p.safety[0].contains("lockout/tagout"));
    assert_eq!(p.safety.iter().filter(|s| s.contains("lockout")).count(), 1);
    assert!(p.steps[0].starts_with("Repair immediately"));
    assert_eq!(p.steps.iter().filter(|s| s.contains("Torque the lug")).count(), 1);
    assert!(p.steps.iter().any(|s| s.contains("antioxidant")));
    assert!(!p.steps.iter().any(|s| s == "Nope."));
    assert!(p.steps.last().unwrap().starts_with("After the repair"));
    assert_eq!(p.parts, vec!["N1 (neutral lug)".to_owned(), "Mechanical lug".to_owned()]);
    assert_eq!(p.confidence, 0.72);
    assert!(p.summary.starts_with("Major discrepancy: hottest point 87.2 °C, ΔT 52.5 °C"), "{}", p.summary);
    assert_eq!(p.notes, ["1 manual section(s) about other components or failure modes were left out"]);
    assert_eq!(p.steps.len(), p.step_sources.len());
    assert!(p.steps.iter().all(|s| step_section(s).is_some()), "{:?}", p.steps);
    assert_eq!(p.component_group, "termination");
}

#[test]
fn board_plan_puts_esd_first_and_none_band_skips_repairs() {
    let p = synthesize(&vision("major", "board"), &knowledge(), None);
    assert!(p.safety[0].contains("Power down"));
    assert!(p.safety[1].contains("ESD"));
    let p = synthesize(&vision("none", "panel"), &knowledge(), None);
    assert_eq!(p.steps.len(), 1);
    assert!(p.steps[0].starts_with("No deficiency"));
    assert!(p.parts.is_empty());
    let p = synthesize(&VisionInput::default(), &KnowledgeInput::default(), None);
    assert_eq!(p.confidence, round2(0.5 * NO_KNOWLEDGE_FACTOR));
}

#[test]
fn a_plan_stays_on_one_component_of_its_family() {
    let section = |id: &str, kind: &str, score: f64| SectionInput {
        id: id.into(),
        title: id.into(),
        kind: kind.into(),
        group: "termination".into(),
        score,
        ..SectionInput::default()
    };
    let (neutral, block, mv) = (
        section("lug-neutral-bar-terminal", "neutral-bar", 0.815),
        section("lug-control-terminal-block", "terminal-block", 0.782),
        section("cable-mv-termination", "cable-termination", 0.778),
    );
    let ids = |v: &[&SectionInput]| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    // A generic component: the best section's component, the others as alternatives.
    let (used, alt) = focus_sections(vec![&neutral, &block, &mv], Some("termination"));
    assert_eq!(ids(&used), ["lug-neutral-bar-terminal"]);
    assert_eq!(ids(&alt), ["lug-control-terminal-block", "cable-mv-termination"]);
    // A component the vision report names wins over a better-scored neighbour.
    let (used, _) = focus_sections(vec![&neutral, &block, &mv], Some("terminal-block"));
    assert_eq!(ids(&used), ["lug-control-terminal-block"]);
}

#[test]
fn duplicates_by_words() {
    assert!(is_duplicate("Torque the lug.", "torque the LUG"));
    assert!(!is_duplicate("Torque the lug.", "Replace the breaker."));
}

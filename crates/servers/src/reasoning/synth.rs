//! Deterministic synthesis of a repair plan from the vision report and the manual sections.
//!
//! The rules, in order:
//!
//! - **Severity** is copied from the vision report (NETA band, action, criterion); nothing downstream may change it.
//! - **Equipment**: the vision report's `equipment`; else inferred from the manual sections' kinds (board parts
//!   such as capacitors, regulators, MOSFETs vs panel parts such as breakers, lugs, bus bars), then from words in
//!   the context; default panel.
//! - **Safety** comes first and is never dropped: for panels de-energise + lockout/tagout, verify absence of
//!   voltage, arc-rated PPE (NFPA 70E); for boards power down and discharge, ESD protection, let parts cool. Then
//!   the manual sections' own precautions, de-duplicated.
//! - **Steps**: the severity action as the first step; the suspected component to inspect; the steps of the top
//!   manual sections (those scoring at least [`SECTION_SCORE_FRACTION`] of the best, at most [`MAX_SECTIONS`]) in
//!   rank order, de-duplicated (same words after normalisation, or ≥ [`DUPLICATE_SIMILARITY`] token overlap); a
//!   closing re-survey step. With no deficiency, the repair steps are left out.
//! - **Parts**: the sections' `parts` lists and the suspected component (designator, value, package).
//! - **Confidence** = vision confidence × the best retrieval score (0.3 when no section matched).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Sections scoring at least this fraction of the best are merged.
pub const SECTION_SCORE_FRACTION: f64 = 0.6;
/// At most this many sections are merged.
pub const MAX_SECTIONS: usize = 3;
/// Two steps sharing at least this fraction of their words (Jaccard) are duplicates.
pub const DUPLICATE_SIMILARITY: f64 = 0.8;
/// Retrieval factor used when the knowledge search found nothing.
pub const NO_KNOWLEDGE_FACTOR: f64 = 0.3;

/// The parts of the vision report the synthesis reads (lenient: unknown fields are ignored, missing ones default).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct VisionInput {
    /// `absolute` or `relative`.
    pub analysis: Option<String>,
    /// `panel` or `board`.
    pub equipment: Option<String>,
    /// Hottest temperature.
    pub max_c: Option<f64>,
    /// ΔT vs reference.
    pub delta_t_ref_c: Option<f64>,
    /// ΔT vs ambient.
    pub delta_t_ambient_c: Option<f64>,
    /// NETA grading.
    pub severity: SeverityInput,
    /// Suspected part.
    pub suspected_component: Option<SuspectInput>,
    /// Failure-mode hypothesis.
    pub failure_mode: Option<FailureInput>,
    /// Hotspots (only the first one's position is used).
    pub hotspots: Vec<Value>,
    /// Confidence 0–1.
    pub confidence: Option<f64>,
}

/// `severity` of the vision report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SeverityInput {
    /// Band name.
    pub band: Option<String>,
    /// NETA action.
    pub action: Option<String>,
    /// Criterion text.
    pub criterion: Option<String>,
    /// False when not graded.
    pub assessed: Option<bool>,
}

/// `suspected_component` of the vision report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SuspectInput {
    /// Designator.
    pub designator: String,
    /// Value column.
    pub value: Option<String>,
    /// Package column.
    pub package: Option<String>,
    /// Class.
    pub class: Option<String>,
}

/// `failure_mode` of the vision report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FailureInput {
    /// Kind.
    pub kind: String,
    /// Hypothesis.
    pub hypothesis: String,
}

/// One manual section of the `search_manual` output (lenient).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SectionInput {
    /// Section id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Component kind.
    pub kind: String,
    /// Relevance 0–1.
    pub score: f64,
    /// Steps.
    pub steps: Vec<String>,
    /// Safety precautions.
    pub safety: Vec<String>,
    /// Part numbers, when the search output carries them.
    pub parts: Vec<String>,
    /// Provenance.
    pub source: String,
}

/// The `search_manual` output (lenient).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct KnowledgeInput {
    /// Sections, best first.
    pub results: Vec<SectionInput>,
}

/// The severity carried into the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanSeverity {
    /// NETA band (`none`, `possible`, `probable`, `monitor`, `major`).
    pub band: String,
    /// NETA action.
    pub action: String,
    /// Criterion text from the vision report.
    pub criterion: String,
    /// Whether the image could be graded at all.
    pub assessed: bool,
}

/// The structured output of `generate_repair_steps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairPlan {
    /// One-paragraph summary.
    pub summary: String,
    /// Severity (from the vision report, never changed).
    pub severity: PlanSeverity,
    /// Ordered steps.
    pub steps: Vec<String>,
    /// Parts to have at hand.
    pub parts: Vec<String>,
    /// Safety precautions, most important first.
    pub safety: Vec<String>,
    /// Confidence 0–1.
    pub confidence: f64,
    /// `panel` or `board`.
    pub equipment: String,
    /// Manual sections used (`id: source`).
    pub sources: Vec<String>,
    /// `deterministic` or `llm`.
    pub backend: String,
    /// Caveats and how the plan was made.
    pub notes: Vec<String>,
}

/// Mandatory safety for panels and switchgear.
pub const PANEL_SAFETY: [&str; 3] = [
    "De-energise the equipment and apply lockout/tagout before opening covers or touching conductors (NFPA 70E); \
     treat it as energised until proven otherwise.",
    "Verify the absence of voltage with a tested meter (test, verify, re-test) on every conductor before work.",
    "Wear arc-rated PPE and voltage-rated gloves for the incident energy whenever covers are off or the equipment \
     is energised (including during the thermal survey); keep unqualified people outside the approach boundary.",
];

/// Mandatory safety for circuit boards.
pub const BOARD_SAFETY: [&str; 3] = [
    "Power down and disconnect the board, then discharge bulk and high-voltage capacitors before handling it.",
    "Use ESD protection: a grounded wrist strap and mat (ANSI/ESD S20.20); handle the board by its edges.",
    "Let hot components cool before touching or desoldering them.",
];

const BOARD_KINDS: [&str; 24] = [
    "mosfet",
    "electrolytic-capacitor",
    "regulator",
    "power-supply",
    "diode",
    "resistor",
    "tantalum-capacitor",
    "switching-regulator",
    "ceramic-capacitor",
    "solder-joint",
    "inductor",
    "pcb-trace",
    "pcb-laminate",
    "igbt",
    "ic",
    "film-capacitor",
    "bjt",
    "zener-diode",
    "via",
    "varistor",
    "connector",
    "relay",
    "ldo",
    "capacitor",
];

fn band_label(band: &str) -> &'static str {
    match band {
        "major" => "Major discrepancy",
        "monitor" => "Monitor",
        "probable" => "Probable deficiency",
        "possible" => "Possible deficiency",
        _ => "No deficiency",
    }
}

fn severity_step(band: &str, assessed: bool) -> String {
    if !assessed {
        return "Grade the finding first: re-take the image with a radiometric camera (only a relative analysis was \
                possible), then compare ΔT with NETA Table 100.18."
            .into();
    }
    match band {
        "major" => "Repair immediately (NETA: major discrepancy): arrange an outage now and reduce the load on the \
                    circuit until the repair is done."
            .into(),
        "monitor" => "Monitor until corrective measures can be accomplished (NETA): re-survey at a short interval \
                      and plan the repair."
            .into(),
        "probable" => "Repair as time permits (NETA: probable deficiency): schedule the work at the next planned \
                       outage."
            .into(),
        "possible" => "Investigate (NETA: possible deficiency): confirm with a second survey at ≥ 40 % of normal \
                       load and compare with similar components under similar load."
            .into(),
        _ => "No deficiency indicated: record the survey (ΔT, load, emissivity) and keep the routine inspection \
              interval (NFPA 70B: at least every 12 months)."
            .into(),
    }
}

/// Lower-case words of `s` (letters and digits; apostrophes dropped), for duplicate detection.
pub fn words(s: &str) -> Vec<String> {
    // Apostrophes join words ("manufacturer's" = "manufacturers") so spelling variants still match.
    let joined: String = s.chars().filter(|c| !matches!(c, '\'' | '’')).collect();
    joined.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether two sentences say the same thing (identical words, or Jaccard overlap ≥ [`DUPLICATE_SIMILARITY`]).
pub fn is_duplicate(a: &str, b: &str) -> bool {
    let (wa, wb) = (words(a), words(b));
    if wa == wb {
        return true;
    }
    let sa: BTreeSet<&String> = wa.iter().collect();
    let sb: BTreeSet<&String> = wb.iter().collect();
    let union = sa.union(&sb).count();
    union > 0 && sa.intersection(&sb).count() as f64 / union as f64 >= DUPLICATE_SIMILARITY
}

/// Appends the items of `new` to `list` that do not duplicate an item already there (or in `also_against`).
pub fn push_unique(list: &mut Vec<String>, new: impl IntoIterator<Item = String>, also_against: &[String]) {
    for item in new {
        let item = item.trim().to_owned();
        if item.is_empty() {
            continue;
        }
        if list.iter().chain(also_against).any(|x| is_duplicate(x, &item)) {
            continue;
        }
        list.push(item);
    }
}

fn infer_equipment(vision: &VisionInput, knowledge: &KnowledgeInput, context: Option<&str>) -> &'static str {
    match vision.equipment.as_deref() {
        Some("board") => return "board",
        Some("panel") => return "panel",
        _ => {}
    }
    if let Some(top) = knowledge.results.first() {
        return if BOARD_KINDS.contains(&top.kind.as_str()) { "board" } else { "panel" };
    }
    let ctx = context.unwrap_or_default().to_lowercase();
    if ["pcb", "board", "capacitor", "regulator", "mosfet", "smd"].iter().any(|w| ctx.contains(w)) {
        "board"
    } else {
        "panel"
    }
}

/// The sections merged into the plan: the best, and the others within [`SECTION_SCORE_FRACTION`] of it.
pub fn top_sections(knowledge: &KnowledgeInput) -> Vec<&SectionInput> {
    let mut sorted: Vec<&SectionInput> = knowledge.results.iter().collect();
    sorted.sort_by(|a, b| b.score.total_cmp(&a.score));
    let best = sorted.first().map_or(0.0, |s| s.score);
    sorted.into_iter().filter(|s| s.score >= best * SECTION_SCORE_FRACTION).take(MAX_SECTIONS).collect()
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Builds the deterministic plan.
pub fn synthesize(vision: &VisionInput, knowledge: &KnowledgeInput, context: Option<&str>) -> RepairPlan {
    let band = vision.severity.band.clone().unwrap_or_else(|| "none".into());
    let assessed = vision.severity.assessed.unwrap_or(vision.analysis.as_deref() != Some("relative"));
    let action = vision.severity.action.clone().unwrap_or_default();
    let criterion = vision.severity.criterion.clone().unwrap_or_default();
    let equipment = infer_equipment(vision, knowledge, context);
    let sections = top_sections(knowledge);
    let deficiency = band != "none" || !assessed;
    let mut notes = Vec::new();

    let mut safety: Vec<String> = Vec::new();
    let mandatory = if equipment == "board" { BOARD_SAFETY } else { PANEL_SAFETY };
    push_unique(&mut safety, mandatory.iter().map(|s| (*s).to_owned()), &[]);
    push_unique(&mut safety, sections.iter().flat_map(|s| s.safety.iter().cloned()), &[]);

    let mut steps = vec![severity_step(&band, assessed)];
    if deficiency {
        if let Some(s) = &vision.suspected_component {
            let at = vision
                .hotspots
                .first()
                .and_then(|h| h.get("hottest"))
                .and_then(|p| Some((p.get("x")?.as_f64()?, p.get("y")?.as_f64()?)))
                .map(|(x, y)| format!(" (hotspot at pixel {x:.0}, {y:.0})"))
                .unwrap_or_default();
            steps.push(format!("Inspect {} first: it is the suspected component{at}.", s.designator));
        }
        if let Some(f) = &vision.failure_mode
            && !f.hypothesis.is_empty()
            && f.kind != "none"
        {
            steps.push(format!("Check the probable cause: {}.", f.hypothesis.trim_end_matches('.')));
        }
        let section_steps: Vec<String> = sections.iter().flat_map(|s| s.steps.iter().cloned()).collect();
        push_unique(&mut steps, section_steps, &safety);
        steps.push(
            "After the repair, re-survey under comparable load and record ΔT, the reference, the load and the \
             emissivity used (NETA / NFPA 70B report)."
                .into(),
        );
    } else if !sections.is_empty() {
        notes.push("no deficiency indicated, so the manual's repair steps were left out".into());
    }

    let mut parts = Vec::new();
    if deficiency {
        if let Some(s) = &vision.suspected_component {
            let detail: Vec<&str> =
                [s.value.as_deref(), s.package.as_deref()].into_iter().flatten().collect();
            let label = if detail.is_empty() {
                format!("{} (replacement of the same rating)", s.designator)
            } else {
                format!("{} ({})", s.designator, detail.join(", "))
            };
            push_unique(&mut parts, [label], &[]);
        }
        push_unique(&mut parts, sections.iter().flat_map(|s| s.parts.iter().cloned()), &[]);
    }

    let retrieval = sections.first().map_or(NO_KNOWLEDGE_FACTOR, |s| s.score.clamp(0.0, 1.0));
    if sections.is_empty() {
        notes.push(
            "no manual section matched; the steps come from the severity and the hypothesis only".into(),
        );
    }
    let vision_conf = vision.confidence.unwrap_or(0.5).clamp(0.0, 1.0);
    let confidence = round2(vision_conf * retrieval);

    let ctx = context.map(str::trim).filter(|c| !c.is_empty());
    match ctx {
        Some(c) if !["load", "%", " a ", "amp", "current"].iter().any(|w| c.to_lowercase().contains(w)) => {
            notes.push("the context does not state the load: NETA and NFPA 70B require recording it".into());
        }
        None => {
            notes.push("no context given: record the load conditions and equipment with the survey".into())
        }
        _ => {}
    }
    if !assessed {
        notes.push("relative analysis: the finding is located but not graded".into());
    }

    let mut summary = band_label(&band).to_owned();
    if !assessed {
        summary = "Not graded (relative analysis)".into();
    }
    match (vision.delta_t_ref_c, vision.max_c) {
        (Some(dt), Some(max)) => {
            summary.push_str(&format!(": hottest point {max:.1} °C, ΔT {dt:.1} °C vs reference"))
        }
        (Some(dt), None) => summary.push_str(&format!(": ΔT {dt:.1} °C vs reference")),
        _ => {}
    }
    if let Some(dta) = vision.delta_t_ambient_c {
        summary.push_str(&format!(", {dta:.1} °C vs ambient"));
    }
    summary.push('.');
    if deficiency {
        if let Some(f) = &vision.failure_mode
            && f.kind != "none"
            && !f.kind.is_empty()
        {
            summary.push_str(&format!(" Probable cause: {}.", f.kind.replace('-', " ")));
        }
        if let Some(s) = &vision.suspected_component {
            summary.push_str(&format!(" Suspected component: {}.", s.designator));
        }
        if let Some(top) = sections.first() {
            summary.push_str(&format!(" Manual: {}.", top.title));
        }
    }
    if !action.is_empty() && assessed {
        summary.push_str(&format!(" Action: {action}."));
    }
    if let Some(c) = ctx {
        summary.push_str(&format!(" Context: {c}"));
        if !c.ends_with('.') {
            summary.push('.');
        }
    }

    RepairPlan {
        summary,
        severity: PlanSeverity { band, action, criterion, assessed },
        steps,
        parts,
        safety,
        confidence,
        equipment: equipment.into(),
        sources: sections
            .iter()
            .map(|s| if s.source.is_empty() { s.id.clone() } else { format!("{}: {}", s.id, s.source) })
            .collect(),
        backend: "deterministic".into(),
        notes,
    }
}

#[cfg(test)]
mod tests {
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
        assert!(
            p.summary.starts_with("Major discrepancy: hottest point 87.2 °C, ΔT 52.5 °C"),
            "{}",
            p.summary
        );
        assert!(p.notes.is_empty(), "{:?}", p.notes);
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
    fn duplicates_by_words() {
        assert!(is_duplicate("Torque the lug.", "torque the LUG"));
        assert!(!is_duplicate("Torque the lug.", "Replace the breaker."));
    }
}

//! Deterministic synthesis of a repair plan from the vision report and the manual sections.
//!
//! The rules, in order:
//!
//! - **Severity** is copied from the vision report (the standard, the NETA band or IEC TS 62446-3 class, action,
//!   criterion); nothing downstream may change it.
//! - **Equipment**: the vision report's `equipment` (`unknown` stays unknown); a report without one (an older
//!   client) is read as before: board or panel from the sections' kinds, then from the context.
//! - **Sections used — only those about the diagnosed component**: a section is used when its component group
//!   (see `knowledge::taxonomy`) is the vision report's `component.group` and, when the failure mode is known,
//!   its modes include it; at most [`MAX_SECTIONS`], in rank order. Nothing else contributes a step, a part or a
//!   precaution: a battery section's hydrogen warning never reaches a plan for a lug. With no known group
//!   (unknown or other equipment) no section is used.
//! - **Safety** comes first and is never dropped: the mandatory precautions of the equipment (panels and
//!   transformers: de-energise + lockout/tagout, verify absence of voltage, arc-rated PPE, NFPA 70E; boards:
//!   power down and discharge, ESD, let parts cool; PV modules: DC stays live in daylight, isolate at the
//!   inverter/string disconnect, never pull connectors under load; motors: lockout and wait for rotation to
//!   stop; unknown: treat as energised until identified), then the used sections' own precautions.
//! - **Steps**, each ending with the manual section it comes from (`[manual: <id>]`, also listed in
//!   `step_sources`): for unknown equipment or equipment without published ΔT criteria, first what the operator
//!   should confirm; else the action for the band/class; the suspected component to inspect; the used sections'
//!   steps, de-duplicated (same words after normalisation, or ≥ [`DUPLICATE_SIMILARITY`] token overlap); a closing
//!   re-survey step. With no deficiency, the repair steps are left out.
//! - **Parts**: the used sections' `parts` lists and the suspected component (designator, value, package).
//! - **Confidence** = vision confidence × the best used section's score (0.3 when none was used).

use crate::knowledge::taxonomy;

mod model;
mod steps;

pub use self::model::{
    ComponentInput, FailureInput, KnowledgeInput, PlanSeverity, RepairPlan, SectionInput, SeverityInput,
    StepSource, SuspectInput, VisionInput,
};
pub use self::steps::{is_duplicate, push_unique, source_tag, step_section, strip_source, words};

/// At most this many sections are merged.
pub const MAX_SECTIONS: usize = 3;
/// Two steps sharing at least this fraction of their words (Jaccard) are duplicates.
pub const DUPLICATE_SIMILARITY: f64 = 0.8;
/// Retrieval factor used when no manual section was used.
pub const NO_KNOWLEDGE_FACTOR: f64 = 0.3;

/// Method section behind the NETA severity step.
pub const SECTION_NETA: (&str, &str) =
    ("thermo-neta-severity-bands", "NETA temperature-difference severity bands");
/// Method section behind the PV class step.
pub const SECTION_PV_CLASSES: (&str, &str) =
    ("pv-iec-62446-3-classes", "IEC TS 62446-3 classes of abnormality for PV modules");
/// Method section behind the confirmation steps of an ungraded finding.
pub const SECTION_CONFIRM: (&str, &str) =
    ("thermo-unknown-equipment", "Equipment unknown or without published criteria: what to confirm");
/// Method section behind a relative (non-radiometric) finding.
pub const SECTION_RADIOMETRIC: (&str, &str) =
    ("thermo-survey-planning-load", "Planning an infrared survey and load requirements");
/// Method section behind the closing re-survey step.
pub const SECTION_REPORTING: (&str, &str) = ("thermo-reporting", "Reporting thermographic findings");

/// Mandatory safety for panels, switchgear and transformers.
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

/// Mandatory safety for PV modules and strings.
pub const PV_SAFETY: [&str; 3] = [
    "PV modules generate voltage whenever light falls on them: the DC side cannot be de-energised by opening a \
     breaker; isolate at the string or inverter DC disconnect and treat conductors as live (IEC 62446-1).",
    "Never disconnect a PV connector under load: a DC arc does not self-extinguish; switch the inverter off and \
     open the DC isolator first.",
    "Use fall protection and voltage-rated gloves on roofs and arrays; hot spots can exceed 100 °C.",
];

/// Mandatory safety for motors and bearings.
pub const MOTOR_SAFETY: [&str; 2] = [
    "Stop the machine and apply lockout/tagout on its supply and any stored energy before touching it; wait \
     until rotation has stopped.",
    "Keep clear of rotating shafts and couplings during the thermal survey; surfaces may be hot.",
];

/// Mandatory safety when the equipment is unknown or other.
pub const UNKNOWN_SAFETY: [&str; 1] = [
    "Until the equipment is identified, treat it as energised and hot: keep a safe distance, do not open covers \
     and follow the site's procedures for that equipment.",
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

fn neta_step(band: &str) -> String {
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

fn infer_equipment(vision: &VisionInput, knowledge: &KnowledgeInput, context: Option<&str>) -> String {
    if let Some(e) = vision.equipment.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
        return e.to_ascii_lowercase();
    }
    if let Some(top) = knowledge.results.first() {
        return if BOARD_KINDS.contains(&top.kind.as_str()) { "board" } else { "panel" }.into();
    }
    let ctx = context.unwrap_or_default().to_lowercase();
    if ["pcb", "board", "capacitor", "regulator", "mosfet", "smd"].iter().any(|w| ctx.contains(w)) {
        "board".into()
    } else {
        "panel".into()
    }
}

/// The group and failure mode the plan is about; the group is `None` when not known.
fn diagnosis(
    vision: &VisionInput,
    knowledge: &KnowledgeInput,
    equipment: &str,
) -> (Option<String>, Option<String>) {
    let mode = vision
        .failure_mode
        .as_ref()
        .map(|f| f.kind.trim().to_ascii_lowercase())
        .filter(|m| taxonomy::is_known(m) && m != "undetermined");
    let group = match &vision.component {
        Some(c) if taxonomy::is_known(&c.group) => Some(taxonomy::group_of(&c.group)),
        Some(c) if taxonomy::is_known(&c.kind) => Some(taxonomy::group_of(&c.kind)),
        Some(_) => None,
        // An older vision report without `component`: the top section's group, when the equipment is known.
        None if !matches!(equipment, "unknown" | "other") => {
            knowledge.results.first().map(SectionInput::group).filter(|g| g != taxonomy::METHOD_GROUP)
        }
        None => None,
    };
    (group, mode)
}

/// The sections the plan uses: of the diagnosed group and, when the failure mode is known, about it; at most
/// [`MAX_SECTIONS`], best first.
pub fn used_sections<'a>(
    knowledge: &'a KnowledgeInput,
    group: Option<&str>,
    mode: Option<&str>,
) -> Vec<&'a SectionInput> {
    let Some(group) = group else { return Vec::new() };
    let mut sorted: Vec<&SectionInput> = knowledge
        .results
        .iter()
        .filter(|s| s.group() == group)
        .filter(|s| mode.is_none_or(|m| s.failure_modes().iter().any(|x| x == m)))
        .collect();
    sorted.sort_by(|a, b| b.score.total_cmp(&a.score));
    sorted.truncate(MAX_SECTIONS);
    sorted
}

/// Keeps the plan on one component: of `sections` (one family, best first), those about the
/// component the vision report names when a section is about exactly it, else those about the
/// best section's component. The others come back as alternatives, to be named, not merged:
/// a neutral-bar lug's plan does not carry the steps of a terminal block and an MV
/// termination just because all three are terminations.
pub fn focus_sections<'a>(
    sections: Vec<&'a SectionInput>,
    component: Option<&str>,
) -> (Vec<&'a SectionInput>, Vec<&'a SectionInput>) {
    let named = component.filter(|k| sections.iter().any(|s| s.kind == *k));
    let Some(focus) = named.map(str::to_owned).or_else(|| sections.first().map(|s| s.kind.clone())) else {
        return (sections, Vec::new());
    };
    if focus.is_empty() {
        return (sections, Vec::new());
    }
    sections.into_iter().partition(|s| s.kind == focus)
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Steps with their sources, built together so that every step names its section.
#[derive(Default)]
struct Steps {
    steps: Vec<String>,
    sources: Vec<StepSource>,
}

impl Steps {
    fn push(&mut self, text: String, (id, title): (&str, &str), group: &str, against: &[String]) -> bool {
        let text = text.trim().to_owned();
        if text.is_empty() || self.steps.iter().chain(against).any(|x| is_duplicate(x, &text)) {
            return false;
        }
        self.steps.push(format!("{text} {}", source_tag(id)));
        self.sources.push(StepSource { section: id.into(), title: title.into(), group: group.into() });
        true
    }

    fn method(&mut self, text: impl Into<String>, section: (&str, &str)) {
        self.push(text.into(), section, taxonomy::METHOD_GROUP, &[]);
    }
}

/// Builds the deterministic plan.
pub fn synthesize(vision: &VisionInput, knowledge: &KnowledgeInput, context: Option<&str>) -> RepairPlan {
    let sev = &vision.severity;
    let equipment = infer_equipment(vision, knowledge, context);
    let relative = vision.analysis.as_deref() == Some("relative");
    // A report from before `standard` existed was graded by NETA unless it says otherwise.
    let standard = sev
        .standard
        .clone()
        .unwrap_or_else(|| if relative { "none".into() } else { "NETA MTS Table 100.18".into() });
    let band = sev
        .band
        .clone()
        .filter(|b| !b.is_empty())
        .or_else(|| (standard.starts_with("NETA")).then(|| "none".into()));
    let class = sev.class.clone();
    let assessed = sev.assessed.unwrap_or(!relative && (band.is_some() || class.is_some()));
    let action = sev.action.clone().unwrap_or_default();
    let criterion = sev.criterion.clone().unwrap_or_default();
    let (group, mode) = diagnosis(vision, knowledge, &equipment);
    let component = vision.component.as_ref().map(|c| c.kind.as_str());
    let (sections, alternatives) =
        focus_sections(used_sections(knowledge, group.as_deref(), mode.as_deref()), component);
    let no_finding = match (&band, &class) {
        _ if !assessed => vision.failure_mode.as_ref().is_some_and(|f| f.kind == "none"),
        (Some(b), _) => b == "none",
        (None, Some(c)) => c == "CoA 1",
        (None, None) => false,
    };
    let deficiency = !no_finding;
    let mut notes = Vec::new();

    let mut safety: Vec<String> = Vec::new();
    let mandatory: &[&str] = match equipment.as_str() {
        "board" => &BOARD_SAFETY,
        "pv-module" => &PV_SAFETY,
        "motor-bearing" => &MOTOR_SAFETY,
        "panel" | "transformer" => &PANEL_SAFETY,
        _ => &UNKNOWN_SAFETY,
    };
    push_unique(&mut safety, mandatory.iter().map(|s| (*s).to_owned()), &[]);
    push_unique(&mut safety, sections.iter().flat_map(|s| s.safety.iter().cloned()), &[]);

    let hotspot_at = vision
        .hotspots
        .first()
        .and_then(|h| h.get("hottest"))
        .and_then(|p| Some((p.get("x")?.as_f64()?, p.get("y")?.as_f64()?)));
    let mut steps = Steps::default();
    if !assessed && !relative {
        // Ungraded: what the operator should confirm comes first.
        let at = hotspot_at.map(|(x, y)| format!(" at pixel ({x:.0}, {y:.0})")).unwrap_or_default();
        if matches!(equipment.as_str(), "unknown" | "other") {
            steps.method(
                format!(
                    "Confirm what the image shows: the equipment (electrical panel or switchgear, circuit board, \
                     motor or bearing, PV module, transformer, building envelope) and the component under the \
                     hotspot{at}; then analyse again with the equipment given (--equipment), so the criteria for \
                     it apply."
                ),
                SECTION_CONFIRM,
            );
        } else {
            steps.method(
                format!(
                    "No published ΔT severity criteria apply to this equipment ({equipment}): compare the hotspot{at} \
                     with a baseline of the same equipment or with similar equipment under similar conditions \
                     before acting."
                ),
                SECTION_CONFIRM,
            );
        }
        steps.method(
            "Confirm the operating conditions of the image: load (or irradiance for PV), emissivity and reflected \
             temperature of the surface, and that the spot is not a reflection.",
            SECTION_CONFIRM,
        );
        if let Some(dt) = vision.delta_t_ref_c {
            steps.method(
                format!(
                    "Record the measured ΔT ({dt:.1} °C vs reference) and the hotspot position; no severity band \
                     is given until the equipment and criteria are known."
                ),
                SECTION_CONFIRM,
            );
        }
    } else if relative {
        steps.method(
            "Grade the finding first: re-take the image with a radiometric camera (only a relative analysis was \
             possible), then apply the criteria for the equipment.",
            SECTION_RADIOMETRIC,
        );
    } else if let Some(c) = &class {
        steps.method(format!("{c} (IEC TS 62446-3): {}.", action.trim_end_matches('.')), SECTION_PV_CLASSES);
    } else {
        steps.method(neta_step(band.as_deref().unwrap_or("none")), SECTION_NETA);
    }
    let first_section = sections.first().map(|s| (s.id.as_str(), s.title.as_str()));
    if deficiency {
        if let (Some(s), Some(top)) = (&vision.suspected_component, first_section) {
            let at =
                hotspot_at.map(|(x, y)| format!(" (hotspot at pixel {x:.0}, {y:.0})")).unwrap_or_default();
            let g = group.clone().unwrap_or_default();
            steps.push(
                format!("Inspect {} first: it is the suspected component{at}.", s.designator),
                top,
                &g,
                &[],
            );
        }
        for s in &sections {
            let g = s.group();
            for step in &s.steps {
                steps.push(step.clone(), (&s.id, &s.title), &g, &safety);
            }
        }
        if let (Some(first), Some(alt)) = (sections.first(), alternatives.first()) {
            let others: Vec<String> =
                alternatives.iter().map(|a| format!("{} ({})", a.kind.replace('-', " "), a.title)).collect();
            steps.push(
                format!(
                    "If the hot part is not a {} but another {}, use the manual's section for it instead: {}.",
                    first.kind.replace('-', " "),
                    alt.group(),
                    others.join("; ")
                ),
                (&alt.id, &alt.title),
                &alt.group(),
                &safety,
            );
        }
        if assessed || !sections.is_empty() {
            steps.method(
                "After the repair, re-survey under comparable load and record ΔT, the reference, the load and the \
                 emissivity used (NETA / NFPA 70B report).",
                SECTION_REPORTING,
            );
        }
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
    let left_out = knowledge.results.len() - sections.len();
    if sections.is_empty() && deficiency {
        notes.push(match &group {
            Some(g) => format!("no manual section about {g} matched; the steps come from the criteria only"),
            None => "the component is not known, so no manual section was used; confirm it first".into(),
        });
    }
    if left_out > 0 {
        notes.push(format!(
            "{left_out} manual section(s) about other components or failure modes were left out"
        ));
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
    if relative {
        notes.push("relative analysis: the finding is located but not graded".into());
    }

    let mut summary = match (&band, &class) {
        _ if relative => "Not graded (relative analysis)".to_owned(),
        _ if !assessed && matches!(equipment.as_str(), "unknown" | "other") => {
            format!("Not graded (equipment {equipment})")
        }
        _ if !assessed => format!("Not graded (no published ΔT criteria for {equipment})"),
        (Some(b), _) => band_label(b).to_owned(),
        (None, Some(c)) => format!("{c} (IEC TS 62446-3)"),
        (None, None) => "Not graded".to_owned(),
    };
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
            && f.kind != "undetermined"
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
        severity: PlanSeverity { standard, band, class, action, criterion, assessed },
        steps: steps.steps,
        step_sources: steps.sources,
        parts,
        safety,
        confidence,
        equipment,
        component_group: group.unwrap_or_else(|| "unknown".into()),
        sources: sections
            .iter()
            .map(|s| if s.source.is_empty() { s.id.clone() } else { format!("{}: {}", s.id, s.source) })
            .collect(),
        backend: "deterministic".into(),
        notes,
    }
}

#[cfg(test)]
mod tests;

//! What the synthesis reads and writes: the lenient views of the vision report and of the `search_manual`
//! output (unknown fields are ignored, missing ones default), and the [`RepairPlan`] it returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::knowledge::taxonomy;

/// The parts of the vision report the synthesis reads (lenient: unknown fields are ignored, missing ones default).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct VisionInput {
    /// `absolute` or `relative`.
    pub analysis: Option<String>,
    /// `panel`, `board`, `pv-module`, …, `unknown`.
    pub equipment: Option<String>,
    /// Why the equipment is what it is.
    pub equipment_reason: Option<String>,
    /// The component the finding is about.
    pub component: Option<ComponentInput>,
    /// Hottest temperature.
    pub max_c: Option<f64>,
    /// ΔT vs reference.
    pub delta_t_ref_c: Option<f64>,
    /// ΔT vs ambient.
    pub delta_t_ambient_c: Option<f64>,
    /// Grading.
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

/// `component` of the vision report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ComponentInput {
    /// Kind.
    pub kind: String,
    /// Group (the diagnosed component family).
    pub group: String,
}

/// `severity` of the vision report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SeverityInput {
    /// The criteria applied.
    pub standard: Option<String>,
    /// NETA band name.
    pub band: Option<String>,
    /// IEC TS 62446-3 class.
    pub class: Option<String>,
    /// Suggested action.
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
    /// Component group; derived from `kind` when absent.
    pub group: String,
    /// Failure modes; the group's defaults when absent.
    pub modes: Vec<String>,
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

impl SectionInput {
    /// The section's group (given, else derived from its kind).
    pub fn group(&self) -> String {
        if self.group.trim().is_empty() {
            taxonomy::group_of(&self.kind)
        } else {
            taxonomy::group_of(&self.group)
        }
    }

    /// The section's failure modes (given, else its group's defaults).
    pub fn failure_modes(&self) -> Vec<String> {
        if self.modes.is_empty() {
            taxonomy::default_modes(&self.group()).iter().map(|m| (*m).to_owned()).collect()
        } else {
            self.modes.clone()
        }
    }
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
    /// The criteria applied (`NETA MTS Table 100.18`, `IEC TS 62446-3` or `none`).
    pub standard: String,
    /// NETA band (`none`, `possible`, `probable`, `monitor`, `major`), when NETA applied.
    pub band: Option<String>,
    /// IEC TS 62446-3 class (`CoA 1`–`CoA 3`), when it applied.
    pub class: Option<String>,
    /// Suggested action.
    pub action: String,
    /// Criterion text from the vision report.
    pub criterion: String,
    /// Whether the image could be graded at all.
    pub assessed: bool,
}

/// Where a plan step comes from: a manual section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSource {
    /// Section id.
    pub section: String,
    /// Section title.
    pub title: String,
    /// Component group of the section (`survey-method` for method and criteria sections).
    pub group: String,
}

/// The structured output of `generate_repair_steps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairPlan {
    /// One-paragraph summary.
    pub summary: String,
    /// Severity (from the vision report, never changed).
    pub severity: PlanSeverity,
    /// Ordered steps, each ending with `[manual: <section id>]`.
    pub steps: Vec<String>,
    /// The section of each step, in step order.
    pub step_sources: Vec<StepSource>,
    /// Parts to have at hand.
    pub parts: Vec<String>,
    /// Safety precautions, most important first.
    pub safety: Vec<String>,
    /// Confidence 0–1.
    pub confidence: f64,
    /// The equipment (`panel`, `board`, `pv-module`, …, `unknown`).
    pub equipment: String,
    /// The component group the plan is about (`unknown` when none).
    pub component_group: String,
    /// Manual sections used (`id: source`).
    pub sources: Vec<String>,
    /// `deterministic` or `llm`.
    pub backend: String,
    /// Caveats and how the plan was made.
    pub notes: Vec<String>,
}

//! The diagnosis evaluation: labelled cases run through the same three steps as the default flow, scored for
//! the knowledge hits and for the repair plan.
//!
//! A case is either a **real image** (a file of the thermal sample directory, with the equipment, context and
//! component map an operator would give) or a **scenario** (a vision result written out: equipment, component,
//! failure mode), labelled with the component group the plan must stay on and the manual sections that answer
//! it. Each case runs
//!
//! 1. vision: [`crate::vision::analyze`] on the image, or the scenario as the vision result;
//! 2. knowledge: `search_manual` with the query the default flow builds (`{component.kind}
//!    {failure_mode.kind}` as text, component kind and group, failure mode and equipment as fields, `top_k` 3);
//! 3. reasoning: the deterministic synthesis.
//!
//! Scores (see [`EvalReport`]): **recall@3** = expected sections among the top 3 / min(3, expected), and
//! **precision@3** = expected sections among the top 3 / hits returned, both averaged over the cases that expect
//! sections; **plan precision** = plan steps taken from sections of the expected component group / plan steps
//! taken from component sections (method and criteria steps excluded), over all cases; **criteria accuracy** =
//! cases whose standard (NETA, IEC TS 62446-3, none) is the expected one.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::knowledge::{
    KnowledgeBase,
    server::{KnowledgeServer, SearchManualArgs},
    taxonomy,
};
use crate::reasoning::synth::{self, KnowledgeInput, VisionInput};
use crate::vision::{self, AnalyzeOptions, Equipment};

/// The labelled cases shipped with the crate.
pub const CASES_JSON: &str = include_str!("eval/cases.json");

/// One labelled case.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Short name.
    pub name: String,
    /// A file of the thermal sample directory (real-image case).
    #[serde(default)]
    pub image: Option<String>,
    /// Equipment the operator gives (real-image case).
    #[serde(default)]
    pub equipment: Option<String>,
    /// Context text the operator gives.
    #[serde(default)]
    pub context: Option<String>,
    /// Component map (real-image case).
    #[serde(default)]
    pub component_map: Option<String>,
    /// The vision result of a scenario case.
    #[serde(default)]
    pub scenario: Option<Scenario>,
    /// The labels.
    pub expect: Expect,
}

/// A vision result written out.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Equipment.
    pub equipment: String,
    /// Component kind.
    pub component_kind: String,
    /// Failure mode.
    pub failure_mode: String,
    /// ΔT vs reference, °C (default 20).
    #[serde(default)]
    pub delta_t_c: Option<f64>,
}

/// What a case must give.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The component group the plan must stay on (`unknown`: no component steps at all).
    pub group: String,
    /// Manual sections that answer the case (any of them is a correct hit).
    #[serde(default)]
    pub sections: Vec<String>,
    /// The criteria: `NETA MTS Table 100.18`, `IEC TS 62446-3` or `none`.
    #[serde(default)]
    pub standard: Option<String>,
}

/// The outcome of one case.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The case name.
    pub name: String,
    /// Equipment, component group and failure mode the vision step reported.
    pub diagnosed: String,
    /// Section ids returned by the knowledge step, best first.
    pub hits: Vec<String>,
    /// recall@3, when the case expects sections.
    pub recall_at_3: Option<f64>,
    /// precision@3, when the case expects sections.
    pub precision_at_3: Option<f64>,
    /// Plan steps taken from component sections.
    pub component_steps: usize,
    /// Of those, the steps from the expected group.
    pub on_group_steps: usize,
    /// Whether the standard applied is the expected one (`None`: not labelled).
    pub criteria_ok: Option<bool>,
    /// Why the case could not run, if it could not.
    pub error: Option<String>,
}

/// The scores over a case set.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Per case.
    pub cases: Vec<CaseResult>,
    /// Mean recall@3 over the cases that expect sections.
    pub recall_at_3: f64,
    /// Mean precision@3 over the cases that expect sections.
    pub precision_at_3: f64,
    /// Plan steps from the expected group / plan steps from component sections, over all cases.
    pub plan_precision: f64,
    /// Share of labelled cases graded by the expected standard.
    pub criteria_accuracy: f64,
    /// Cases that could not run.
    pub failed: usize,
}

impl EvalReport {
    /// The figures as text, one line per case and a summary.
    pub fn render(&self) -> String {
        let mut t = String::new();
        for c in &self.cases {
            let f = |v: Option<f64>| v.map_or_else(|| "  -  ".to_owned(), |v| format!("{v:.2}"));
            t.push_str(&format!(
                "{:<34} {:<44} R@3 {} P@3 {} plan {}/{}{}\n",
                c.name,
                c.diagnosed,
                f(c.recall_at_3),
                f(c.precision_at_3),
                c.on_group_steps,
                c.component_steps,
                c.error.as_deref().map(|e| format!("  ERROR {e}")).unwrap_or_default()
            ));
        }
        t.push_str(&format!(
            "\ncases {}  recall@3 {:.3}  precision@3 {:.3}  plan precision {:.3}  criteria accuracy {:.3}  failed {}\n",
            self.cases.len(),
            self.recall_at_3,
            self.precision_at_3,
            self.plan_precision,
            self.criteria_accuracy,
            self.failed
        ));
        t
    }
}

/// Parses the shipped cases.
///
/// # Errors
/// A message when the JSON does not parse (caught by this crate's tests).
pub fn cases() -> Result<Vec<Case>, String> {
    serde_json::from_str(CASES_JSON).map_err(|e| format!("eval cases: {e}"))
}

fn scenario_vision(s: &Scenario) -> Value {
    let equipment: Equipment = serde_json::from_value(json!(s.equipment)).unwrap_or(Equipment::Unknown);
    let dt = s.delta_t_c.unwrap_or(20.0);
    let (standard, band, class) = if equipment.uses_neta() {
        let band = vision::severity::band_vs_reference(dt);
        ("NETA MTS Table 100.18", json!(band), Value::Null)
    } else if equipment == Equipment::PvModule {
        ("IEC TS 62446-3", Value::Null, json!(vision::severity::pv_class(dt).0))
    } else {
        ("none", Value::Null, Value::Null)
    };
    let assessed = standard != "none";
    json!({
        "analysis": "absolute",
        "equipment": equipment.as_str(),
        "component": {
            "kind": s.component_kind,
            "group": taxonomy::group_of(&s.component_kind),
            "source": "scenario"
        },
        "max_c": 30.0 + dt, "delta_t_ref_c": dt, "delta_t_ambient_c": null,
        "severity": { "standard": standard, "band": band, "class": class, "criterion": "scenario", "action": "scenario action", "assessed": assessed },
        "failure_mode": { "kind": s.failure_mode, "hypothesis": "scenario" },
        "hotspots": [],
        "confidence": 0.8
    })
}

fn image_vision(case: &Case, data_dir: &Path) -> Result<Value, String> {
    let name = case.image.as_deref().unwrap_or_default();
    let bytes = std::fs::read(data_dir.join(name)).map_err(|e| format!("cannot read {name}: {e}"))?;
    let equipment = case
        .equipment
        .as_ref()
        .map(|e| serde_json::from_value::<Equipment>(json!(e)).map_err(|e| format!("equipment: {e}")))
        .transpose()?;
    let components = case
        .component_map
        .as_deref()
        .map(vision::components::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    let opts =
        AnalyzeOptions { equipment, context: case.context.clone(), components, ..AnalyzeOptions::default() };
    let report = vision::analyze(&bytes, &opts).map_err(|e| e.to_string())?;
    serde_json::to_value(report).map_err(|e| e.to_string())
}

/// The `search_manual` arguments the default flow builds from a vision result.
pub fn knowledge_args(vision: &Value) -> SearchManualArgs {
    let s = |ptr: &str| vision.pointer(ptr).and_then(Value::as_str).map(str::to_owned);
    let kind = s("/component/kind");
    let mode = s("/failure_mode/kind");
    SearchManualArgs {
        query: format!("{} {}", kind.clone().unwrap_or_default(), mode.clone().unwrap_or_default()),
        part_number: None,
        component_kind: kind,
        component_group: s("/component/group"),
        failure_mode: mode,
        equipment: s("/equipment"),
        top_k: Some(3),
    }
}

async fn run_case(case: &Case, kb: &KnowledgeServer, data_dir: &Path) -> Result<CaseResult, String> {
    let vision = match (&case.scenario, &case.image) {
        (Some(s), _) => scenario_vision(s),
        (None, Some(_)) => image_vision(case, data_dir)?,
        (None, None) => return Err("a case needs an image or a scenario".into()),
    };
    let output = kb.search_manual(knowledge_args(&vision)).await.map_err(|e| e.to_string())?;
    let hits: Vec<String> = output.results.iter().map(|r| r.id.clone()).collect();
    let knowledge = serde_json::to_value(&output).map_err(|e| e.to_string())?;
    let v_in: VisionInput = serde_json::from_value(vision.clone()).map_err(|e| e.to_string())?;
    let k_in: KnowledgeInput = serde_json::from_value(knowledge).map_err(|e| e.to_string())?;
    let plan = synth::synthesize(&v_in, &k_in, case.context.as_deref());

    let expected = &case.expect.sections;
    let (recall, precision) = if expected.is_empty() {
        (None, None)
    } else {
        let found = hits.iter().take(3).filter(|h| expected.contains(h)).count() as f64;
        let recall = found / expected.len().min(3) as f64;
        let precision = if hits.is_empty() { 0.0 } else { found / hits.len().min(3) as f64 };
        (Some(recall), Some(precision))
    };
    let component: Vec<&str> = plan
        .step_sources
        .iter()
        .filter(|s| s.group != taxonomy::METHOD_GROUP)
        .map(|s| s.group.as_str())
        .collect();
    let on_group = component.iter().filter(|g| **g == case.expect.group).count();
    let standard = vision.pointer("/severity/standard").and_then(Value::as_str).unwrap_or("none");
    let s = |ptr: &str| vision.pointer(ptr).and_then(Value::as_str).unwrap_or("?").to_owned();
    Ok(CaseResult {
        name: case.name.clone(),
        diagnosed: format!("{}/{}/{}", s("/equipment"), s("/component/group"), s("/failure_mode/kind")),
        hits,
        recall_at_3: recall,
        precision_at_3: precision,
        component_steps: component.len(),
        on_group_steps: on_group,
        criteria_ok: case.expect.standard.as_deref().map(|want| want == standard),
        error: None,
    })
}

/// Runs `cases` against `kb`, reading images from `data_dir`.
pub async fn run(cases: &[Case], kb: KnowledgeBase, data_dir: &Path) -> EvalReport {
    let server = KnowledgeServer::new(kb);
    let mut results = Vec::with_capacity(cases.len());
    for case in cases {
        results.push(match run_case(case, &server, data_dir).await {
            Ok(r) => r,
            Err(e) => CaseResult {
                name: case.name.clone(),
                diagnosed: "-".into(),
                hits: Vec::new(),
                recall_at_3: None,
                precision_at_3: None,
                component_steps: 0,
                on_group_steps: 0,
                criteria_ok: None,
                error: Some(e),
            },
        });
    }
    let mean = |v: Vec<f64>| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let recall = mean(results.iter().filter_map(|r| r.recall_at_3).collect());
    let precision = mean(results.iter().filter_map(|r| r.precision_at_3).collect());
    let (on, all) = results.iter().fold((0, 0), |(o, a), r| (o + r.on_group_steps, a + r.component_steps));
    let plan_precision = if all == 0 { 1.0 } else { on as f64 / all as f64 };
    let labelled: Vec<bool> = results.iter().filter_map(|r| r.criteria_ok).collect();
    let criteria = if labelled.is_empty() {
        1.0
    } else {
        labelled.iter().filter(|ok| **ok).count() as f64 / labelled.len() as f64
    };
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    EvalReport {
        cases: results,
        recall_at_3: recall,
        precision_at_3: precision,
        plan_precision,
        criteria_accuracy: criteria,
        failed,
    }
}

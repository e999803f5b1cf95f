//! The bodies of the diagnosis routes: what the panel's Diagnosis view draws, built from the
//! stored run records and the flow, never from anything the browser sent.
//!
//! The run's *result* is read out of the node outputs (vision → knowledge → reasoning) into
//! typed, lenient views ([`DiagnosisResult`]): a field a tool leaves out is `null`/empty
//! here rather than an error, so an older or partial run (a failed knowledge node) still
//! shows what it has. Hotspot geometry is in the analysed frame's pixel coordinates (x =
//! column, y = row, origin top-left), the same grid as the thermal endpoint's temperatures.
//!
//! Node statuses use the vocabulary of the live `flow_progress` events (`running`,
//! `succeeded`, …) so the view merges a fetched run with the events that follow it unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_flow::{Flow, FlowFile};
use switchboard_store::{StoredRun, StoredRunNode};
use ts_rs::TS;

/// Any error answer: one specific sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
}

/// `POST /api/blobs` → `201`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BlobUploaded {
    /// Hex SHA-256 of the content.
    pub sha256: String,
    /// Bytes stored.
    pub size: u64,
    /// The reference a run takes as its image: `blob:<sha256>`.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// `POST /api/runs` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The image, uploaded first: `blob:<sha256>`.
    pub image: String,
    /// What the image shows (`panel`, `board`, `motor-bearing`, `pv-module`, `transformer`,
    /// `building-envelope`, `other`); picks the severity criteria.
    #[serde(default)]
    #[ts(optional)]
    pub equipment: Option<String>,
    /// Ambient temperature, °C.
    #[serde(default)]
    #[ts(optional)]
    pub ambient_c: Option<f64>,
    /// Object emissivity, (0, 1].
    #[serde(default)]
    #[ts(optional)]
    pub emissivity: Option<f64>,
    /// Load conditions, equipment, anything the technician knows.
    #[serde(default)]
    #[ts(optional)]
    pub context: Option<String>,
}

/// `POST /api/runs` → `202`, and `POST /api/runs/{id}/cancel` → `202`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunAccepted {
    /// The run; its progress arrives as `flow_progress` events with this id.
    pub run_id: String,
}

/// `GET /api/flow`: the default flow's graph, for drawing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FlowGraph {
    /// The flow's name (runs are recorded under it).
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Nodes in execution order.
    pub nodes: Vec<FlowNodeView>,
    /// Edges in file order.
    pub edges: Vec<FlowEdgeView>,
}

/// A node of [`FlowGraph`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FlowNodeView {
    /// Node id (the `node` of `flow_progress` events).
    pub id: String,
    /// The tool as the flow file names it.
    pub tool: Option<String>,
    /// The capability label it is bound through, when it is.
    pub capability: Option<String>,
    /// The tool's name on the router now (`null` when it does not resolve: its server is down).
    pub resolved_tool: Option<String>,
    /// What the node does.
    pub description: Option<String>,
    /// Per-attempt timeout, ms.
    pub timeout_ms: Option<u64>,
}

/// An edge of [`FlowGraph`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FlowEdgeView {
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
    /// When it fires (`ok` when the file says nothing).
    pub when: Option<String>,
}

impl FlowGraph {
    /// The graph of `file`, with each node's tool as the router resolved it in `loaded` (when
    /// the flow loaded against the live tools) and in its execution order.
    pub fn new(file: &FlowFile, loaded: Option<&Flow>) -> FlowGraph {
        let view = |n: &switchboard_flow::NodeFile| FlowNodeView {
            id: n.id.clone(),
            tool: n.tool.clone(),
            capability: n.capability.clone(),
            resolved_tool: loaded
                .and_then(|f| f.nodes().iter().find(|l| l.id == n.id))
                .map(|l| l.tool.name.clone()),
            description: n.description.clone(),
            timeout_ms: n.timeout_ms,
        };
        let mut nodes: Vec<FlowNodeView> = file.nodes.iter().map(view).collect();
        if let Some(flow) = loaded {
            let position = |id: &str| flow.nodes().iter().position(|n| n.id == id).unwrap_or(usize::MAX);
            nodes.sort_by_key(|n| position(&n.id));
        }
        FlowGraph {
            name: file.name.clone(),
            description: file.description.clone(),
            nodes,
            edges: file
                .edges
                .iter()
                .map(|e| FlowEdgeView { from: e.from.clone(), to: e.to.clone(), when: e.when.clone() })
                .collect(),
        }
    }
}

/// `GET /api/runs`: one stored run, without its nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunSummary {
    /// The run id.
    pub run_id: String,
    /// The flow that ran.
    pub flow: String,
    /// Start, unix ms.
    pub started_at_ms: i64,
    /// End, unix ms; `null` while running.
    pub finished_at_ms: Option<i64>,
    /// `running`, `ok`, `failed` or `cancelled`.
    pub outcome: String,
    /// Why it failed or was cancelled, naming the node (a corrupt image: the reader's error).
    pub error: Option<String>,
    /// The image reference of the input (`blob:<sha256>`).
    pub image: Option<String>,
    /// The equipment the operator gave.
    pub equipment: Option<String>,
}

impl RunSummary {
    /// The summary of a stored run.
    pub fn of(run: &StoredRun) -> RunSummary {
        let text = |k: &str| run.input.get(k).and_then(Value::as_str).map(str::to_owned);
        RunSummary {
            run_id: run.run_id.clone(),
            flow: run.flow.clone(),
            started_at_ms: run.started_at_ms,
            finished_at_ms: run.finished_at_ms,
            outcome: run.outcome.clone(),
            error: run.error.clone(),
            image: text("image"),
            equipment: text("equipment"),
        }
    }
}

/// A node's state, in the vocabulary of the `flow_progress` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum NodeStatus {
    /// Not started.
    Pending,
    /// Its tool is being called.
    Running,
    /// Done: the tool returned a result.
    Succeeded,
    /// Failed (after its retries).
    Failed,
    /// Not run (an upstream node failed, or the run was cancelled first).
    Skipped,
    /// Running when the run was cancelled.
    Cancelled,
}

impl NodeStatus {
    /// The status of a stored node outcome (`ok`, `failed`, …).
    pub fn of_outcome(outcome: &str) -> NodeStatus {
        match outcome {
            "ok" => NodeStatus::Succeeded,
            "failed" => NodeStatus::Failed,
            "skipped" => NodeStatus::Skipped,
            "cancelled" => NodeStatus::Cancelled,
            _ => NodeStatus::Pending,
        }
    }
}

/// One node of [`RunView`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct NodeView {
    /// Node id.
    pub node: String,
    /// The tool it called.
    pub tool: Option<String>,
    /// Where it is.
    pub status: NodeStatus,
    /// Time spent on it over all attempts, ms (0 until it settles).
    pub duration_ms: u64,
    /// Calls made.
    pub attempts: u32,
    /// The arguments it was called with (large strings elided).
    pub input: Option<Value>,
    /// What the tool returned.
    pub output: Option<Value>,
    /// Why it failed, was skipped or cancelled.
    pub error: Option<String>,
}

/// `GET /api/runs/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunView {
    /// The run.
    pub run: RunSummary,
    /// The run input as given.
    pub input: Value,
    /// Every node of the flow, in execution order, whether it ran yet or not.
    pub nodes: Vec<NodeView>,
    /// The diagnosis, once vision succeeded.
    pub result: Option<DiagnosisResult>,
}

impl RunView {
    /// The view of a stored run; `flow` (when it is the run's flow) supplies the nodes not
    /// stored yet as `pending`, and `running` names the node being called now.
    pub fn new(
        run: &StoredRun,
        stored: &[StoredRunNode],
        flow: Option<&FlowFile>,
        running: Option<&str>,
    ) -> RunView {
        let mut nodes: Vec<NodeView> = stored
            .iter()
            .map(|n| NodeView {
                node: n.node_id.clone(),
                tool: n.tool.clone(),
                status: NodeStatus::of_outcome(&n.outcome),
                duration_ms: u64::try_from(n.latency_ms).unwrap_or(0),
                attempts: u32::try_from(n.attempts).unwrap_or(0),
                input: n.input.clone(),
                output: n.output.clone(),
                error: n.error.clone(),
            })
            .collect();
        if let Some(file) = flow.filter(|f| f.name == run.flow) {
            for n in &file.nodes {
                if !nodes.iter().any(|v| v.node == n.id) {
                    nodes.push(NodeView {
                        node: n.id.clone(),
                        tool: n.tool.clone(),
                        status: NodeStatus::Pending,
                        duration_ms: 0,
                        attempts: 0,
                        input: None,
                        output: None,
                        error: None,
                    });
                }
            }
        }
        if let Some(current) = running
            && let Some(n) = nodes.iter_mut().find(|n| n.node == current && n.status == NodeStatus::Pending)
        {
            n.status = NodeStatus::Running;
        }
        // A failed tool's output is its error content, not a finding.
        let output = |id: &str| {
            nodes
                .iter()
                .find(|n| n.node == id && n.status == NodeStatus::Succeeded)
                .and_then(|n| n.output.as_ref())
        };
        let result =
            output("vision").map(|v| DiagnosisResult::new(v, output("knowledge"), output("reasoning")));
        RunView { run: RunSummary::of(run), input: run.input.clone(), nodes, result }
    }
}

/// A point in pixel coordinates of the analysed frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct PointPx {
    /// Column.
    pub x: f64,
    /// Row.
    pub y: f64,
}

/// A rectangle in pixel coordinates of the analysed frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct BoxPx {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

/// One hot region found by vision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct HotspotView {
    /// Its bounding box (outline this).
    pub bbox: BoxPx,
    /// Its centroid.
    pub centroid: PointPx,
    /// Its hottest pixel (mark this).
    pub hottest: Option<PointPx>,
    /// Largest temperature, °C (`null` for relative analyses).
    pub max_c: Option<f64>,
    /// Mean temperature, °C.
    pub mean_c: Option<f64>,
    /// `max_c` minus the reference, °C.
    pub delta_ref_c: Option<f64>,
    /// Pixels in the region.
    pub area_px: u64,
    /// Largest relative value 0–1 (relative analyses only).
    pub max_relative: Option<f64>,
}

/// The grading: a NETA band, an IEC TS 62446-3 class, or neither.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct SeverityView {
    /// The standard applied (`none` when the equipment is unknown).
    pub standard: String,
    /// NETA band: `none`, `possible`, `probable`, `monitor`, `major`.
    pub band: Option<String>,
    /// IEC TS 62446-3 class (`CoA 1` …).
    pub class: Option<String>,
    /// The criterion the grade rests on.
    pub criterion: Option<String>,
    /// What to do.
    pub action: Option<String>,
    /// Whether a grade was given at all.
    pub assessed: bool,
}

/// One manual section the knowledge node found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct KnowledgeHit {
    /// Section id.
    pub id: String,
    /// Section title.
    pub title: String,
    /// Component group.
    pub group: String,
    /// Relevance 0–1.
    pub score: f64,
    /// Provenance.
    pub source: String,
    /// Why it matched.
    pub matched: Vec<String>,
}

/// The repair plan of the reasoning node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct RepairPlan {
    /// One-paragraph summary.
    pub summary: String,
    /// Ordered steps, each naming its manual section.
    pub steps: Vec<String>,
    /// Safety precautions (read first).
    pub safety: Vec<String>,
    /// Parts to have at hand.
    pub parts: Vec<String>,
    /// Confidence 0–1.
    pub confidence: Option<f64>,
}

/// The failure-mode hypothesis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct FailureModeView {
    /// `loose-connection`, `overload-imbalance`, … or `undetermined`.
    pub kind: String,
    /// The hypothesis in words.
    pub hypothesis: String,
}

/// What the run found, read from the node outputs (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct DiagnosisResult {
    /// Values are temperatures from the camera's calibration.
    pub radiometric: bool,
    /// `absolute` or `relative`.
    pub analysis: Option<String>,
    /// Analysed frame width, pixels.
    pub width: Option<u32>,
    /// Analysed frame height, pixels.
    pub height: Option<u32>,
    /// Coldest temperature, °C.
    pub min_c: Option<f64>,
    /// Hottest temperature, °C.
    pub max_c: Option<f64>,
    /// The hottest pixel of the frame.
    pub hottest: Option<PointPx>,
    /// Hottest minus the reference, °C.
    pub delta_t_ref_c: Option<f64>,
    /// Equipment kind (`unknown` when nothing identified it).
    pub equipment: Option<String>,
    /// Why the equipment is what it is.
    pub equipment_reason: Option<String>,
    /// The grading.
    pub severity: Option<SeverityView>,
    /// The top hotspot (the first of `hotspots`).
    pub hotspot: Option<HotspotView>,
    /// Every hot region, hottest first.
    pub hotspots: Vec<HotspotView>,
    /// The probable cause.
    pub failure_mode: Option<FailureModeView>,
    /// Manual sections found, best first.
    pub knowledge: Vec<KnowledgeHit>,
    /// The repair plan, once reasoning ran.
    pub repair: Option<RepairPlan>,
}

/// `value[key]` as `T`, `None` when absent or of another shape.
fn field<T: serde::de::DeserializeOwned>(value: &Value, key: &str) -> Option<T> {
    value.get(key).filter(|v| !v.is_null()).and_then(|v| serde_json::from_value(v.clone()).ok())
}

impl DiagnosisResult {
    /// Reads the outputs of the vision, knowledge and reasoning nodes.
    pub fn new(vision: &Value, knowledge: Option<&Value>, reasoning: Option<&Value>) -> DiagnosisResult {
        let hotspots: Vec<HotspotView> = field(vision, "hotspots").unwrap_or_default();
        let image = vision.get("image").unwrap_or(&Value::Null);
        DiagnosisResult {
            radiometric: field(vision, "radiometric").unwrap_or(false),
            analysis: field(vision, "analysis"),
            width: field(image, "width"),
            height: field(image, "height"),
            min_c: field(vision, "min_c"),
            max_c: field(vision, "max_c"),
            hottest: field(vision, "hottest"),
            delta_t_ref_c: field(vision, "delta_t_ref_c"),
            equipment: field(vision, "equipment"),
            equipment_reason: field(vision, "equipment_reason"),
            severity: field(vision, "severity"),
            hotspot: hotspots.first().cloned(),
            hotspots,
            failure_mode: field(vision, "failure_mode"),
            knowledge: knowledge.and_then(|k| field(k, "results")).unwrap_or_default(),
            repair: reasoning.and_then(|r| serde_json::from_value(r.clone()).ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_result_reads_what_the_tools_returned_and_tolerates_gaps() {
        let vision = json!({
            "radiometric": true, "analysis": "absolute", "image": {"width": 320, "height": 240},
            "max_c": 201.5, "hottest": {"x": 51, "y": 65},
            "severity": {"standard": "NETA MTS", "band": "major", "class": null, "assessed": true},
            "hotspots": [{"bbox": {"x": 40, "y": 50, "width": 20, "height": 30},
                          "centroid": {"x": 50.5, "y": 64.0}, "hottest": {"x": 51, "y": 65},
                          "max_c": 201.5, "mean_c": 120.0, "area_px": 310, "delta_ref_c": 150.0}],
            "failure_mode": {"kind": "loose-connection", "hypothesis": "…"}
        });
        let knowledge = json!({"results": [{"id": "s1", "title": "Terminations", "score": 0.9}]});
        let r = DiagnosisResult::new(&vision, Some(&knowledge), None);
        assert_eq!(r.severity.as_ref().and_then(|s| s.band.as_deref()), Some("major"));
        let top = r.hotspot.expect("a hotspot");
        assert_eq!(top.bbox, BoxPx { x: 40, y: 50, width: 20, height: 30 });
        assert_eq!(top.hottest, Some(PointPx { x: 51.0, y: 65.0 }));
        assert_eq!((r.width, r.height), (Some(320), Some(240)));
        assert_eq!(r.knowledge[0].title, "Terminations");
        assert!(r.repair.is_none() && r.min_c.is_none());
        assert_eq!(DiagnosisResult::new(&json!("not an object"), None, None), DiagnosisResult::default());
    }

    #[test]
    fn stored_node_outcomes_speak_the_progress_events_vocabulary() {
        assert_eq!(NodeStatus::of_outcome("ok"), NodeStatus::Succeeded);
        assert_eq!(serde_json::to_value(NodeStatus::Succeeded).ok(), Some(json!("succeeded")));
        assert_eq!(NodeStatus::of_outcome("pending"), NodeStatus::Pending);
    }
}

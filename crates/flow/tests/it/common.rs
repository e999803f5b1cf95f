//! A fake [`ToolInvoker`] serving the three diagnosis tools with the schemas of `crates/servers`, scripted
//! per call, and helpers to load flows against it.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard_flow::{
    CancellationToken, Flow, FlowError, InvokeError, ProgressSink, RunEvent, ToolBinding, ToolInfo,
    ToolInvoker, ToolOutput,
};

pub const VISION: &str = "vision__analyze_thermal_image";
pub const KNOWLEDGE: &str = "knowledge__search_manual";
pub const REASONING: &str = "reasoning__generate_repair_steps";

/// What the fake does on one call of a tool.
#[derive(Debug, Clone)]
pub enum Step {
    /// Structured result.
    Reply(Value),
    /// Report progress twice, then reply.
    ProgressThenReply(Value),
    /// `isError: true` with this text.
    ToolError(&'static str),
    /// A transport failure.
    Transport(&'static str),
    /// Never answer; return `Cancelled` once the call's token fires.
    Hang,
}

#[derive(Default)]
pub struct Fake {
    tools: HashMap<String, ToolInfo>,
    script: Mutex<HashMap<String, VecDeque<Step>>>,
    /// Every call made: (tool, arguments).
    pub calls: Mutex<Vec<(String, Value)>>,
    /// Tools whose call saw its cancellation token fire.
    pub cancelled: Mutex<Vec<String>>,
}

impl Fake {
    pub fn new() -> Arc<Fake> {
        let mut tools = HashMap::new();
        for (name, input, output) in [
            (VISION, vision_input_schema(), vision_output_schema()),
            (KNOWLEDGE, knowledge_input_schema(), knowledge_output_schema()),
            (REASONING, reasoning_input_schema(), reasoning_output_schema()),
        ] {
            tools.insert(
                name.to_owned(),
                ToolInfo { name: name.to_owned(), input_schema: input, output_schema: Some(output) },
            );
        }
        Arc::new(Fake { tools, ..Fake::default() })
    }

    /// Queues what the next calls of `tool` do; when the queue is empty the tool replies with its default.
    pub fn script(&self, tool: &str, steps: impl IntoIterator<Item = Step>) {
        self.script.lock().unwrap().entry(tool.to_owned()).or_default().extend(steps);
    }

    pub fn calls_of(&self, tool: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|(t, _)| t == tool).map(|(_, a)| a.clone()).collect()
    }
}

#[async_trait::async_trait]
impl ToolInvoker for Fake {
    fn resolve(&self, binding: &ToolBinding) -> Result<ToolInfo, InvokeError> {
        let server = |cap: &str| match cap {
            "vision" => Some("vision"),
            "rag" => Some("knowledge"),
            "reasoning" => Some("reasoning"),
            _ => None,
        };
        let name = match (&binding.capability, &binding.tool) {
            (Some(cap), tool) => {
                let server = server(cap)
                    .ok_or_else(|| InvokeError::Unresolved(format!("no server has capability `{cap}`")))?;
                match tool {
                    Some(tool) => format!("{server}__{tool}"),
                    None => self
                        .tools
                        .keys()
                        .find(|k| k.starts_with(&format!("{server}__")))
                        .cloned()
                        .unwrap_or_default(),
                }
            }
            (None, Some(tool)) => tool.clone(),
            (None, None) => String::new(),
        };
        self.tools
            .get(&name)
            .cloned()
            .ok_or_else(|| InvokeError::Unresolved(format!("no tool named `{name}`")))
    }

    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        progress: ProgressSink,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, InvokeError> {
        self.calls.lock().unwrap().push((tool.to_owned(), arguments));
        let step = self.script.lock().unwrap().get_mut(tool).and_then(VecDeque::pop_front);
        let step = step.unwrap_or_else(|| Step::Reply(default_output(tool)));
        let structured = |v: Value| ToolOutput {
            content: json!([{"type": "text", "text": v.to_string()}]),
            structured: Some(v),
            is_error: false,
        };
        match step {
            Step::Reply(v) => Ok(structured(v)),
            Step::ProgressThenReply(v) => {
                progress.report(1.0, Some(2.0), Some("decoding".into()));
                tokio::task::yield_now().await;
                progress.report(2.0, Some(2.0), Some("analysing".into()));
                Ok(structured(v))
            }
            Step::ToolError(text) => Ok(ToolOutput {
                structured: None,
                content: json!([{"type": "text", "text": text}]),
                is_error: true,
            }),
            Step::Transport(text) => Err(InvokeError::Transport(text.into())),
            Step::Hang => {
                cancel.cancelled().await;
                self.cancelled.lock().unwrap().push(tool.to_owned());
                Err(InvokeError::Cancelled)
            }
        }
    }
}

pub fn default_output(tool: &str) -> Value {
    match tool {
        VISION => vision_output(),
        KNOWLEDGE => knowledge_output(),
        _ => reasoning_output(),
    }
}

pub fn vision_output() -> Value {
    json!({
        "radiometric": true, "analysis": "absolute", "min_c": 21.0, "max_c": 88.4, "mean_c": 30.2,
        "hotspots": [{"bbox": {"x": 10, "y": 12, "width": 8, "height": 6}, "centroid": {"x": 14.0, "y": 15.0},
                      "max_c": 88.4, "mean_c": 70.1, "area_px": 40, "delta_ref_c": 57.4}],
        "reference": {"method": "median", "temperature_c": 31.0},
        "delta_t_ref_c": 57.4, "delta_t_ambient_c": null,
        "equipment": "panel", "component": {"kind": "termination", "group": "termination", "source": "failure-mode"},
        "severity": {"band": "major", "criterion": "ΔT over similar component > 15 °C", "action": "repair immediately"},
        "suspected_component": {"designator": "Q3", "distance_px": 4.0},
        "failure_mode": {"kind": "loose-connection", "hypothesis": "high-resistance joint", "evidence": []},
        "confidence": 0.8, "notes": []
    })
}

pub fn knowledge_output() -> Value {
    json!({"results": [{
        "id": "breakers-3", "title": "Hot breaker lug", "kind": "breaker", "score": 0.71,
        "steps": ["de-energise", "re-torque the lug"], "safety": ["LOTO"], "source": "circuit-breakers.md",
        "matched": ["lug"]
    }]})
}

pub fn reasoning_output() -> Value {
    json!({
        "summary": "Q3 runs 57 °C above its neighbours: loose connection.",
        "severity": {"band": "major", "action": "repair immediately"},
        "steps": ["de-energise", "re-torque"], "parts": [], "safety": ["LOTO"], "confidence": 0.7
    })
}

fn vision_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "image": {"type": "string", "minLength": 1},
            "emissivity": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "reflected_temp_c": {"type": "number"},
            "distance_m": {"type": "number", "minimum": 0},
            "ambient_c": {"type": "number", "minimum": -60, "maximum": 200},
            "reference_region": {"$ref": "#/$defs/rect"},
            "component_map": {"type": "string"},
            "equipment": {"type": "string"},
            "context": {"type": "string"}
        },
        "required": ["image"],
        "additionalProperties": false,
        "$defs": {"rect": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}},
                           "required": ["x"]}}
    })
}

fn vision_output_schema() -> Value {
    let num_or_null = json!({"type": ["number", "null"]});
    json!({
        "type": "object",
        "properties": {
            "radiometric": {"type": "boolean"},
            "analysis": {"type": "string", "enum": ["absolute", "relative"]},
            "min_c": num_or_null, "max_c": num_or_null, "mean_c": num_or_null,
            "hotspots": {"type": "array", "items": {"type": "object", "properties": {
                "bbox": {"type": "object"}, "centroid": {"type": "object"},
                "max_c": num_or_null, "mean_c": num_or_null, "area_px": {"type": "integer"},
                "delta_ref_c": num_or_null}}},
            "reference": {"type": "object", "properties": {
                "method": {"type": "string"}, "temperature_c": num_or_null}},
            "delta_t_ref_c": num_or_null,
            "delta_t_ambient_c": num_or_null,
            "equipment": {"type": "string"},
            "component": {"type": "object", "properties": {
                "kind": {"type": "string"}, "group": {"type": "string"}, "source": {"type": "string"}},
                "required": ["kind", "group", "source"]},
            "severity": {"type": "object", "properties": {
                "band": {"type": "string", "enum": ["none", "possible", "probable", "monitor", "major"]},
                "criterion": {"type": "string"}, "action": {"type": "string"}},
                "required": ["band", "criterion", "action"]},
            "suspected_component": {"type": ["object", "null"], "properties": {
                "designator": {"type": "string"}, "distance_px": {"type": "number"}},
                "required": ["designator", "distance_px"]},
            "failure_mode": {"type": "object", "properties": {
                "kind": {"type": "string"}, "hypothesis": {"type": "string"},
                "evidence": {"type": "array", "items": {"type": "string"}}},
                "required": ["kind", "hypothesis"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "notes": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["radiometric", "analysis", "severity", "failure_mode", "confidence"]
    })
}

fn knowledge_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "part_number": {"type": "string"},
            "component_kind": {"type": "string"},
            "component_group": {"type": "string"},
            "failure_mode": {"type": "string"},
            "equipment": {"type": "string"},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

fn knowledge_output_schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {"results": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "title": {"type": "string"}, "kind": {"type": "string"},
            "score": {"type": "number"}, "steps": strings, "safety": strings, "source": {"type": "string"},
            "matched": strings}}}},
        "required": ["results"]
    })
}

fn reasoning_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "vision": {"type": "object"},
            "knowledge": {"type": "object", "properties": {"results": {"type": "array"}}},
            "context": {"type": "string", "maxLength": 2000}
        },
        "required": ["vision", "knowledge"],
        "additionalProperties": false
    })
}

fn reasoning_output_schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "severity": {"type": "object", "properties": {"band": {"type": "string"}, "action": {"type": "string"}}},
            "steps": strings, "parts": strings, "safety": strings,
            "confidence": {"type": "number"}
        },
        "required": ["summary", "severity", "steps", "parts", "safety", "confidence"]
    })
}

/// The shipped default flow file.
pub fn default_flow_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/flows/thermal-diagnosis.toml")
}

pub fn default_flow(fake: &Fake) -> Flow {
    Flow::load(&default_flow_path(), fake).expect("the default flow loads against the fake tools")
}

/// Loads a TOML flow that must be refused, returning the message.
pub fn refused(toml: &str) -> (FlowError, String) {
    let fake = Fake::new();
    let err = Flow::from_toml("flows/test.toml", toml, fake.as_ref()).expect_err("the flow must be refused");
    let msg = err.to_string();
    (err, msg)
}

/// Drains the events received so far.
pub fn drain(rx: &mut tokio::sync::mpsc::Receiver<RunEvent>) -> Vec<RunEvent> {
    let mut out = Vec::new();
    while let Ok(event) = rx.try_recv() {
        out.push(event);
    }
    out
}

/// A compact description of an event, for asserting order.
pub fn label(event: &RunEvent) -> String {
    match event {
        RunEvent::RunStarted { .. } => "run_started".into(),
        RunEvent::NodeStarted { node, .. } => format!("started {node}"),
        RunEvent::NodeProgress { node, progress, .. } => format!("progress {node} {progress}"),
        RunEvent::NodeRetrying { node, attempt, .. } => format!("retrying {node} after {attempt}"),
        RunEvent::NodeFinished { node, outcome, .. } => format!("finished {node} {outcome}"),
        RunEvent::RunFinished { outcome, .. } => format!("run_finished {outcome}"),
        _ => "other".into(),
    }
}

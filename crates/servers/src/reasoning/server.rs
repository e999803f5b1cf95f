//! The reasoning server: [`ReasoningServer`] exposes one tool, `generate_repair_steps`.
//!
//! The inputs are the outputs of the two previous flow nodes passed through unchanged (`vision` is the
//! `analyze_thermal_image` result, `knowledge` the `search_manual` result), so the tool reads them leniently:
//! unknown fields are ignored and missing ones default. Malformed shapes (not objects, `results` not an array) are
//! tool errors. The plan is deterministic unless an LLM backend is configured; an LLM failure never fails the
//! call.

use std::sync::{Arc, OnceLock};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    },
    service::RequestContext,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::llm::{self, LlmClient, LlmConfig};
use super::synth::{self, KnowledgeInput, RepairPlan, VisionInput};
use crate::error::Error;

/// Name the server gives itself in `serverInfo`.
pub const SERVER_NAME: &str = "switchboard-reasoning";
/// Name of the tool.
pub const GENERATE_REPAIR_STEPS: &str = "generate_repair_steps";
/// Longest `context` accepted, characters.
pub const MAX_CONTEXT_CHARS: usize = 8000;

/// Settings of [`ReasoningServer`].
#[derive(Debug, Clone, Default)]
pub struct ReasoningConfig {
    /// The optional LLM backend; `None` (the default) keeps the synthesis deterministic.
    pub llm: Option<LlmConfig>,
}

/// The MCP handler for repair planning (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct ReasoningServer {
    llm: Option<Arc<LlmClient>>,
}

/// Arguments of `generate_repair_steps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairArgs {
    /// The `analyze_thermal_image` structured output.
    pub vision: Value,
    /// The `search_manual` structured output (`{results: [...]}`).
    pub knowledge: Value,
    /// Free text: load conditions, equipment, history.
    #[serde(default)]
    pub context: Option<String>,
}

impl ReasoningServer {
    /// A server with `config`.
    pub fn new(config: ReasoningConfig) -> Self {
        Self { llm: config.llm.map(|c| Arc::new(LlmClient::new(c))) }
    }

    /// Runs `generate_repair_steps` on decoded arguments; the transport-free core of the tool.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `vision` or `knowledge` has the wrong shape or `context` is too long.
    pub async fn generate(&self, args: RepairArgs) -> Result<RepairPlan, Error> {
        let shape = |field: &'static str, e: serde_json::Error| Error::InvalidArgument {
            field,
            message: format!("does not have the expected shape: {e}"),
        };
        if !args.vision.is_object() {
            return Err(Error::InvalidArgument {
                field: "vision",
                message: "must be the analyze_thermal_image result object".into(),
            });
        }
        if !args.knowledge.is_object() {
            return Err(Error::InvalidArgument {
                field: "knowledge",
                message: "must be the search_manual result object `{results: [...]}`".into(),
            });
        }
        let vision: VisionInput =
            serde_json::from_value(args.vision.clone()).map_err(|e| shape("vision", e))?;
        let knowledge: KnowledgeInput =
            serde_json::from_value(args.knowledge.clone()).map_err(|e| shape("knowledge", e))?;
        if let Some(c) = &args.context
            && c.chars().count() > MAX_CONTEXT_CHARS
        {
            return Err(Error::InvalidArgument {
                field: "context",
                message: format!("longer than {MAX_CONTEXT_CHARS} characters"),
            });
        }
        let plan = synth::synthesize(&vision, &knowledge, args.context.as_deref());
        let Some(client) = &self.llm else { return Ok(plan) };
        // The model sees only the sections the plan used: the same rule as the deterministic synthesis.
        let used: std::collections::HashSet<&str> =
            plan.step_sources.iter().map(|s| s.section.as_str()).collect();
        let sections: Vec<Value> = args
            .knowledge
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| r.get("id").and_then(Value::as_str).is_some_and(|id| used.contains(id)))
            .cloned()
            .collect();
        let inputs =
            json!({ "vision": args.vision, "knowledge": { "results": sections }, "context": args.context });
        match client.ask(&plan, &inputs).await {
            Ok(answer) => Ok(llm::merge(plan, answer, client.config())),
            Err(e) => {
                tracing::warn!(error = %e, "llm backend failed; using the deterministic plan");
                let mut plan = plan;
                plan.notes.push(format!("{e}; the deterministic result is used"));
                Ok(plan)
            }
        }
    }
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

/// The `generate_repair_steps` tool definition served by `tools/list`; `open_world` is true when an LLM backend
/// is configured (the call then reaches an outside service).
pub fn generate_repair_steps_tool(open_world: bool) -> Tool {
    static CLOSED: OnceLock<Tool> = OnceLock::new();
    static OPEN: OnceLock<Tool> = OnceLock::new();
    let cell = if open_world { &OPEN } else { &CLOSED };
    cell.get_or_init(|| {
        let strings = json!({ "type": "array", "items": { "type": "string" } });
        Tool::new(
            GENERATE_REPAIR_STEPS,
            "Write a repair plan for a thermal finding: give the analyze_thermal_image result as `vision`, the \
             search_manual result as `knowledge` and, optionally, the load conditions and equipment as `context`. \
             Returns a summary, the severity (NETA band, IEC TS 62446-3 class, or not graded), ordered steps each \
             naming the manual section it comes from (only sections about the diagnosed component and failure \
             mode are used; for unknown equipment the plan starts with what to confirm), parts, safety precautions \
             for the equipment (always first) and a confidence.",
            object(json!({
                "type": "object",
                "properties": {
                    "vision": {
                        "type": "object",
                        "description": "The structured output of analyze_thermal_image, unchanged."
                    },
                    "knowledge": {
                        "type": "object",
                        "description": "The structured output of search_manual, unchanged: {results: [...]}.",
                        "properties": { "results": { "type": "array", "items": { "type": "object" } } }
                    },
                    "context": {
                        "type": "string",
                        "maxLength": MAX_CONTEXT_CHARS,
                        "description": "Load conditions (e.g. '70 % of rated load, phase currents 180/182/240 A'), equipment, history."
                    }
                },
                "required": ["vision", "knowledge"],
                "additionalProperties": false
            })),
        )
        .with_title("Generate repair steps")
        .with_raw_output_schema(object(json!({
            "type": "object",
            "properties": {
                "summary": { "type": "string" },
                "severity": {
                    "type": "object",
                    "properties": {
                        "standard": { "type": "string" },
                        "band": { "type": ["string", "null"], "enum": ["none", "possible", "probable", "monitor", "major", null] },
                        "class": { "type": ["string", "null"] },
                        "action": { "type": "string" },
                        "criterion": { "type": "string" },
                        "assessed": { "type": "boolean" }
                    },
                    "required": ["standard", "band", "class", "action"]
                },
                "steps": strings,
                "step_sources": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "section": { "type": "string" },
                            "title": { "type": "string" },
                            "group": { "type": "string" }
                        },
                        "required": ["section", "title", "group"]
                    }
                },
                "component_group": { "type": "string" },
                "parts": strings,
                "safety": strings,
                "confidence": { "type": "number", "minimum": 0, "maximum": 1 },
                "equipment": { "type": "string" },
                "sources": strings,
                "backend": { "type": "string", "enum": ["deterministic", "llm"] },
                "notes": strings
            },
            "required": ["summary", "severity", "steps", "parts", "safety", "confidence"]
        })))
        .with_annotations(
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(open_world),
        )
    })
    .clone()
}

/// The plain-text rendering placed in `content`.
pub fn render_text(plan: &RepairPlan) -> String {
    let mut t = format!("{}\n\nSafety:\n", plan.summary);
    for s in &plan.safety {
        t.push_str(&format!("- {s}\n"));
    }
    t.push_str("\nSteps:\n");
    for (i, s) in plan.steps.iter().enumerate() {
        t.push_str(&format!("{}. {s}\n", i + 1));
    }
    if !plan.parts.is_empty() {
        t.push_str("\nParts:\n");
        for p in &plan.parts {
            t.push_str(&format!("- {p}\n"));
        }
    }
    t.push_str(&format!("\nConfidence {:.2} ({})\n", plan.confidence, plan.backend));
    for n in &plan.notes {
        t.push_str(&format!("note: {n}\n"));
    }
    t
}

fn tool_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

impl ServerHandler for ReasoningServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Repair planning for thermal findings. Call generate_repair_steps with the analyze_thermal_image \
                 result, the search_manual result and the load conditions.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![generate_repair_steps_tool(self.llm.is_some())]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == GENERATE_REPAIR_STEPS).then(|| generate_repair_steps_tool(self.llm.is_some()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != GENERATE_REPAIR_STEPS {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}; this server has only {GENERATE_REPAIR_STEPS}", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let args: RepairArgs = match serde_json::from_value(arguments) {
            Ok(args) => args,
            Err(e) => return Ok(tool_error(format!("invalid arguments: {e}")).into()),
        };
        let plan = match self.generate(args).await {
            Ok(plan) => plan,
            Err(e) => return Ok(tool_error(e.to_string()).into()),
        };
        let structured = serde_json::to_value(&plan)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))?;
        let mut result = CallToolResult::structured(structured);
        result.content = vec![ContentBlock::text(render_text(&plan))];
        Ok(result.into())
    }
}

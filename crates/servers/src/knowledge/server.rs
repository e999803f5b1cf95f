//! The knowledge base as an MCP server: [`KnowledgeServer`] exposes one tool, `search_manual`.
//!
//! The schemas are written out by hand rather than derived, so that what clients see (`minimum`/`maximum` on
//! `top_k`, `additionalProperties: false`, descriptions aimed at a model) is exactly what is reviewed here. The tool
//! answers with `structuredContent` matching its `outputSchema` and a plain-text rendering in `content` for
//! clients and models that read text only.
//!
//! Errors follow the MCP split: bad arguments and an empty query are *tool* errors (`isError: true`, so a model can
//! correct itself); a database failure is a JSON-RPC internal error.

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

use super::index::{DEFAULT_TOP_K, Hit, KnowledgeBase, MAX_TOP_K, SearchQuery};
use crate::error::Error;

/// Name the server gives itself in `serverInfo`.
pub const SERVER_NAME: &str = "switchboard-knowledge";
/// Name of the tool.
pub const SEARCH_MANUAL: &str = "search_manual";

/// The MCP handler around a [`KnowledgeBase`] (cheap to clone; clones share the database).
#[derive(Debug, Clone)]
pub struct KnowledgeServer {
    kb: KnowledgeBase,
}

impl KnowledgeServer {
    /// Serves `kb`.
    pub fn new(kb: KnowledgeBase) -> Self {
        Self { kb }
    }

    /// The knowledge base being served.
    pub fn knowledge_base(&self) -> &KnowledgeBase {
        &self.kb
    }

    /// Runs `search_manual` on already-decoded arguments; the transport-free core of the tool.
    ///
    /// # Errors
    /// As [`KnowledgeBase::search`].
    pub async fn search_manual(&self, args: SearchManualArgs) -> Result<SearchManualOutput, Error> {
        let query = SearchQuery {
            query: args.query,
            part_number: args.part_number,
            component_kind: args.component_kind,
            component_group: args.component_group,
            failure_mode: args.failure_mode,
            equipment: args.equipment,
            top_k: args.top_k.unwrap_or(DEFAULT_TOP_K),
        };
        let hits = self.kb.search(&query).await?;
        Ok(SearchManualOutput { results: hits.into_iter().map(ManualResult::from).collect() })
    }
}

/// Arguments of `search_manual` (the tool's `inputSchema`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchManualArgs {
    /// Symptoms and component description in free text.
    #[serde(default)]
    pub query: String,
    /// Part number read off the component, any spelling.
    #[serde(default)]
    pub part_number: Option<String>,
    /// Component kind (`breaker`, `regulator`, `electrolytic-capacitor`, …).
    #[serde(default)]
    pub component_kind: Option<String>,
    /// Component group (`termination`, `capacitor`, `pv-module`, …).
    #[serde(default)]
    pub component_group: Option<String>,
    /// Failure mode (`loose-connection`, `overload-imbalance`, …).
    #[serde(default)]
    pub failure_mode: Option<String>,
    /// Equipment kind (`panel`, `board`, `pv-module`, …): a filter.
    #[serde(default)]
    pub equipment: Option<String>,
    /// Number of results, `1..=20`, default 3.
    #[serde(default)]
    pub top_k: Option<usize>,
}

/// Structured result of `search_manual` (the tool's `outputSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchManualOutput {
    /// Best section first.
    pub results: Vec<ManualResult>,
}

/// One manual section in a `search_manual` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManualResult {
    /// Section id.
    pub id: String,
    /// Section title.
    pub title: String,
    /// Component kind.
    pub kind: String,
    /// Component group of the kind (the diagnosed component family it belongs to).
    pub group: String,
    /// Failure modes the section is about.
    pub modes: Vec<String>,
    /// Relevance, `0..=1`.
    pub score: f64,
    /// Diagnosis and repair steps, in order.
    pub steps: Vec<String>,
    /// Safety precautions.
    pub safety: Vec<String>,
    /// Provenance.
    pub source: String,
    /// Why the section matched, in words.
    pub matched: Vec<String>,
}

impl From<Hit> for ManualResult {
    fn from(hit: Hit) -> Self {
        Self {
            matched: hit.matched.iter().map(ToString::to_string).collect(),
            id: hit.id,
            title: hit.title,
            kind: hit.kind,
            group: hit.group,
            modes: hit.modes,
            score: hit.score,
            steps: hit.steps,
            safety: hit.safety,
            source: hit.source,
        }
    }
}

/// The plain-text rendering placed in `content`.
pub fn render_text(output: &SearchManualOutput) -> String {
    if output.results.is_empty() {
        return "No matching manual section.".to_string();
    }
    let mut text = String::new();
    for (n, r) in output.results.iter().enumerate() {
        if n > 0 {
            text.push('\n');
        }
        text.push_str(&format!(
            "{}. {} [{}; kind {} ({}); score {:.2}]\n",
            n + 1,
            r.title,
            r.id,
            r.kind,
            r.group,
            r.score
        ));
        if !r.matched.is_empty() {
            text.push_str(&format!("   Matched: {}\n", r.matched.join("; ")));
        }
        text.push_str("   Steps:\n");
        for (i, step) in r.steps.iter().enumerate() {
            text.push_str(&format!("   {}. {step}\n", i + 1));
        }
        if !r.safety.is_empty() {
            text.push_str("   Safety:\n");
            for item in &r.safety {
                text.push_str(&format!("   - {item}\n"));
            }
        }
        if !r.source.is_empty() {
            text.push_str(&format!("   Source: {}\n", r.source));
        }
    }
    text
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

/// The `search_manual` tool definition served by `tools/list`.
pub fn search_manual_tool() -> Tool {
    static TOOL: OnceLock<Tool> = OnceLock::new();
    TOOL.get_or_init(|| {
        let string_list = json!({ "type": "array", "items": { "type": "string" } });
        Tool::new(
            SEARCH_MANUAL,
            "Search the maintenance manual for a hot component found by thermal imaging. Give the symptoms in \
             `query`, the part number printed on the component if readable (misspellings are tolerated), and the \
             component kind if known. Returns the best-matching manual sections with diagnosis steps, safety \
             precautions and sources.",
            object(json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Symptoms and component description, e.g. 'breaker lug 30 °C hotter than the other phases'. May be empty when part_number, or component_group/failure_mode, is given."
                    },
                    "part_number": {
                        "type": "string",
                        "description": "Part number read off the component, any spelling (e.g. 'lm 7805', 'EEU-FR1V101')."
                    },
                    "component_kind": {
                        "type": "string",
                        "description": "Component kind, e.g. breaker, mccb, fuse, contactor, regulator, mosfet, electrolytic-capacitor. Sections of this kind are ranked first."
                    },
                    "component_group": {
                        "type": "string",
                        "description": "Component group (the diagnosed component family): termination, breaker, bus, conductor, fuse, disconnect, contactor, transformer, motor, pv-module, capacitor, semiconductor, connector, resistor, magnetics, pcb, … With a failure_mode the search ranks on section metadata: sections of this group about this failure mode first."
                    },
                    "failure_mode": {
                        "type": "string",
                        "description": "Failure mode from analyze_thermal_image (failure_mode.kind), e.g. loose-connection, overload-imbalance, capacitor-overheating, pv-hotspot."
                    },
                    "equipment": {
                        "type": "string",
                        "description": "Equipment kind from analyze_thermal_image (panel, board, pv-module, transformer, motor-bearing, …): sections of component groups that do not occur in it are left out."
                    },
                    "top_k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_TOP_K,
                        "default": DEFAULT_TOP_K,
                        "description": "Number of sections to return."
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            })),
        )
        .with_title("Search maintenance manual")
        .with_raw_output_schema(object(json!({
            "type": "object",
            "properties": {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string" },
                            "title": { "type": "string" },
                            "kind": { "type": "string" },
                            "group": { "type": "string" },
                            "modes": string_list,
                            "score": { "type": "number", "minimum": 0, "maximum": 1 },
                            "steps": string_list,
                            "safety": string_list,
                            "source": { "type": "string" },
                            "matched": string_list
                        },
                        "required": ["id", "title", "kind", "score", "steps", "safety", "source"]
                    }
                }
            },
            "required": ["results"]
        })))
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        )
    })
    .clone()
}

fn tool_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

impl ServerHandler for KnowledgeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Maintenance knowledge for components found hot by thermal imaging. Call search_manual with the \
                 symptoms, and the part number and component kind when known.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![search_manual_tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == SEARCH_MANUAL).then(search_manual_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != SEARCH_MANUAL {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}; this server has only {SEARCH_MANUAL}", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let args: SearchManualArgs = match serde_json::from_value(arguments) {
            Ok(args) => args,
            Err(e) => return Ok(tool_error(format!("invalid arguments: {e}")).into()),
        };
        let output = match self.search_manual(args).await {
            Ok(output) => output,
            Err(e @ Error::EmptyQuery) => return Ok(tool_error(e.to_string()).into()),
            Err(e) => {
                tracing::error!(error = %e, "search_manual failed");
                return Err(ErrorData::internal_error(e.to_string(), None));
            }
        };
        let structured = serde_json::to_value(&output)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))?;
        let mut result = CallToolResult::structured(structured);
        result.content = vec![ContentBlock::text(render_text(&output))];
        Ok(result.into())
    }
}

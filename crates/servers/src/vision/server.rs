//! The vision server: [`VisionServer`] exposes one tool, `analyze_thermal_image`.
//!
//! As in the knowledge server, the schemas are hand-written so that what a client or model sees is reviewed here.
//! Everything the caller can get wrong (an image that cannot be fetched, is too large, is corrupt or truncated, a
//! region outside the frame, a malformed component map) is a *tool* error (`isError: true` with a message that
//! names the problem), so a model can correct itself; only an internal failure is a JSON-RPC error. Decoding runs
//! on the blocking thread pool so a large image never stalls the transport.

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
use switchboard_thermal::Rect;

use super::analysis::{self, AnalyzeOptions, BoxPx, Equipment, ReferenceMethod, VisionReport};
use super::components;
use super::equipment::EQUIPMENT_NAMES;
use super::source::{self, DefaultImageSource, ImageSource, ImageSourceConfig};
use crate::error::Error;

/// Name the server gives itself in `serverInfo`.
pub const SERVER_NAME: &str = "switchboard-vision";
/// Name of the tool.
pub const ANALYZE_THERMAL_IMAGE: &str = "analyze_thermal_image";
/// Largest `max_hotspots` accepted.
pub const MAX_HOTSPOTS: usize = 64;
/// Longest `context` accepted, characters.
pub const MAX_CONTEXT_CHARS: usize = 8000;

/// Settings of [`VisionServer`].
#[derive(Debug, Clone, Default)]
pub struct VisionConfig {
    /// How images are fetched (size limit, blob directory, http(s) allowlist, HTTP timeout).
    pub image_source: ImageSourceConfig,
}

/// The MCP handler for thermal-image analysis (cheap to clone; clones share the image source).
#[derive(Debug, Clone)]
pub struct VisionServer {
    source: Arc<dyn ImageSource>,
}

impl Default for VisionServer {
    fn default() -> Self {
        Self::new(VisionConfig::default())
    }
}

impl VisionServer {
    /// A server fetching images with [`DefaultImageSource`] configured by `config`.
    pub fn new(config: VisionConfig) -> Self {
        Self { source: Arc::new(DefaultImageSource::new(config.image_source)) }
    }

    /// A server fetching images through `source` (e.g. the router's blob store).
    pub fn with_source(source: Arc<dyn ImageSource>) -> Self {
        Self { source }
    }

    /// Runs `analyze_thermal_image` on decoded arguments; the transport-free core of the tool.
    ///
    /// # Errors
    /// Fetch, size, decode and argument errors as described in [`analysis::analyze`] and [`ImageSource`].
    pub async fn analyze(&self, args: AnalyzeArgs) -> Result<VisionReport, Error> {
        let opts = args.options()?;
        let uri = args.image.uri();
        let bytes = self.source.fetch(uri).await?;
        let report = tokio::task::spawn_blocking(move || analysis::analyze(&bytes, &opts))
            .await
            .map_err(|e| Error::Internal { context: "analysing the image", message: e.to_string() })?;
        match report {
            // Bytes fetched from a third party are never described back to the caller.
            Err(Error::Thermal(_) | Error::UnknownImageFormat) if source::is_network_reference(uri) => {
                Err(Error::ImageFetch {
                    source_desc: uri.chars().take(200).collect(),
                    message: "the fetched resource is not a readable thermal image".into(),
                })
            }
            other => other,
        }
    }
}

/// The `image` argument: a string (data URL, base64, URL) or a resource link object carrying a `uri`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ImageArg {
    /// Data URL, bare base64, blob reference, allowlisted `http(s)://` URL, or any resource-link URI.
    Text(String),
    /// An MCP `resource_link` content block (only `uri` is used).
    Link {
        /// The resource URI.
        uri: String,
    },
}

impl ImageArg {
    /// The string to resolve.
    pub fn uri(&self) -> &str {
        match self {
            ImageArg::Text(s) | ImageArg::Link { uri: s } => s,
        }
    }
}

/// Arguments of `analyze_thermal_image` (the tool's `inputSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeArgs {
    /// The image.
    pub image: ImageArg,
    /// Emissivity override, (0, 1].
    #[serde(default)]
    pub emissivity: Option<f64>,
    /// Reflected apparent temperature, °C.
    #[serde(default)]
    pub reflected_temp_c: Option<f64>,
    /// Object distance, m.
    #[serde(default)]
    pub distance_m: Option<f64>,
    /// Ambient air temperature, °C (enables the NETA ambient criterion).
    #[serde(default)]
    pub ambient_c: Option<f64>,
    /// Reference region (a similar component under similar load), raw-frame pixels.
    #[serde(default)]
    pub reference_region: Option<BoxPx>,
    /// Reference method; default `region` with a region, else `median`.
    #[serde(default)]
    pub reference_method: Option<ReferenceMethod>,
    /// Pick-and-place CSV (`designator, x, y[, …]`, frame pixels).
    #[serde(default)]
    pub component_map: Option<String>,
    /// The equipment (`panel`, `board`, `motor-bearing`, `pv-module`, `transformer`, `building-envelope`, `other`);
    /// default `board` with a component map, else what `context` names, else `unknown`.
    #[serde(default)]
    pub equipment: Option<Equipment>,
    /// The operator's context text (equipment, component, load).
    #[serde(default)]
    pub context: Option<String>,
    /// Hotspots to report, 1–64 (default 8).
    #[serde(default)]
    pub max_hotspots: Option<usize>,
}

impl AnalyzeArgs {
    /// Arguments for an image with every option at its default.
    pub fn new(image: impl Into<String>) -> Self {
        Self {
            image: ImageArg::Text(image.into()),
            emissivity: None,
            reflected_temp_c: None,
            distance_m: None,
            ambient_c: None,
            reference_region: None,
            reference_method: None,
            component_map: None,
            equipment: None,
            context: None,
            max_hotspots: None,
        }
    }

    /// Checks and converts everything but the image.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] or [`Error::ComponentMap`].
    pub fn options(&self) -> Result<AnalyzeOptions, Error> {
        if let Some(n) = self.max_hotspots
            && !(1..=MAX_HOTSPOTS).contains(&n)
        {
            return Err(Error::InvalidArgument {
                field: "max_hotspots",
                message: format!("{n} is outside 1–{MAX_HOTSPOTS}"),
            });
        }
        if let Some(r) = self.reference_region
            && (r.width == 0 || r.height == 0)
        {
            return Err(Error::InvalidArgument {
                field: "reference_region",
                message: "width and height must be at least 1 pixel".into(),
            });
        }
        if let Some(c) = &self.context
            && c.chars().count() > MAX_CONTEXT_CHARS
        {
            return Err(Error::InvalidArgument {
                field: "context",
                message: format!("longer than {MAX_CONTEXT_CHARS} characters"),
            });
        }
        let components = self.component_map.as_deref().map(components::parse).transpose()?;
        Ok(AnalyzeOptions {
            emissivity: self.emissivity,
            reflected_temp_c: self.reflected_temp_c,
            distance_m: self.distance_m,
            ambient_c: self.ambient_c,
            reference_region: self.reference_region.map(|r| Rect {
                x: r.x,
                y: r.y,
                width: r.width,
                height: r.height,
            }),
            reference_method: self.reference_method,
            components,
            equipment: self.equipment,
            context: self.context.clone(),
            max_hotspots: self.max_hotspots.unwrap_or(0),
        })
    }
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

/// The `analyze_thermal_image` input schema.
pub fn input_schema() -> Value {
    let rect = json!({
        "type": "object",
        "properties": {
            "x": { "type": "integer", "minimum": 0 },
            "y": { "type": "integer", "minimum": 0 },
            "width": { "type": "integer", "minimum": 1 },
            "height": { "type": "integer", "minimum": 1 }
        },
        "required": ["x", "y", "width", "height"],
        "additionalProperties": false
    });
    json!({
        "type": "object",
        "properties": {
            "image": {
                "description": "The thermal image: a data: URL or raw base64 of the file bytes, a blob reference to the router's blob store (blob:<sha256>, or the router's URL http://127.0.0.1:PORT/blobs/<sha256>), an http(s) URL on a host the server's allowlist names, or a resource link object with a uri. file:// URLs are never read. FLIR radiometric JPEG/FFF/SEQ give temperatures; DJI R-JPEG and plain JPEG/PNG give a labelled relative analysis.",
                "oneOf": [
                    { "type": "string", "minLength": 1 },
                    {
                        "type": "object",
                        "properties": { "uri": { "type": "string", "minLength": 1 } },
                        "required": ["uri"]
                    }
                ]
            },
            "emissivity": {
                "type": "number", "exclusiveMinimum": 0, "maximum": 1,
                "description": "Surface emissivity; default: the value stored by the camera. 0.9 for solder mask/plastic, 0.95 for insulation and paint; bare metal is about 0.15 and reads far too cold."
            },
            "reflected_temp_c": { "type": "number", "description": "Reflected apparent temperature, °C; default: stored value." },
            "distance_m": { "type": "number", "minimum": 0, "description": "Camera-to-object distance, metres; default: stored value." },
            "ambient_c": {
                "type": "number", "minimum": -60, "maximum": 200,
                "description": "Ambient air temperature, °C. Only when given is the NETA ΔT-vs-ambient criterion applied (and it sets the atmospheric temperature of the conversion)."
            },
            "reference_region": {
                "description": "Rectangle on a similar component under similar load, in raw thermal-frame pixels (x = column, y = row; the frame size is reported as image.width × image.height). Default reference: the frame median.",
                "allOf": [rect]
            },
            "reference_method": {
                "type": "string", "enum": ["median", "region", "ambient"],
                "description": "Force the reference: median of the frame, mean of reference_region, or ambient_c. Default: region when reference_region is given, else median."
            },
            "component_map": {
                "type": "string",
                "description": "Pick-and-place CSV naming parts: one `designator, x, y[, value, package]` per line, separator , ; or tab, header optional (columns may then be in any order: designator/ref, x/mid x, y/mid y, value, package). Coordinates are raw thermal-frame pixels, not millimetres. The part nearest the top hotspot is reported as suspected_component."
            },
            "equipment": {
                "type": "string", "enum": EQUIPMENT_NAMES,
                "description": "What the image shows: panel (electrical panel/switchgear), board (circuit board), motor-bearing, pv-module, transformer, building-envelope or other. It decides the criteria: NETA MTS Table 100.18 bands for electrical equipment, IEC TS 62446-3 classes for PV modules, no band for the rest. Default: board when component_map is given, else what `context` names, else unknown (reported without a severity band)."
            },
            "context": {
                "type": "string", "maxLength": MAX_CONTEXT_CHARS,
                "description": "What the operator knows: equipment, component, load (e.g. 'main switchboard, neutral lug, 70 % load'). Used to identify the equipment and the component when not given otherwise."
            },
            "max_hotspots": { "type": "integer", "minimum": 1, "maximum": MAX_HOTSPOTS, "default": analysis::DEFAULT_MAX_HOTSPOTS }
        },
        "required": ["image"],
        "additionalProperties": false
    })
}

/// The `analyze_thermal_image` output schema.
pub fn output_schema() -> Value {
    let num_or_null = json!({ "type": ["number", "null"] });
    let rect = json!({
        "type": "object",
        "properties": {
            "x": { "type": "integer" }, "y": { "type": "integer" },
            "width": { "type": "integer" }, "height": { "type": "integer" }
        },
        "required": ["x", "y", "width", "height"]
    });
    let point = json!({
        "type": "object",
        "properties": { "x": { "type": "number" }, "y": { "type": "number" } },
        "required": ["x", "y"]
    });
    let strings = json!({ "type": "array", "items": { "type": "string" } });
    json!({
        "type": "object",
        "properties": {
            "radiometric": { "type": "boolean" },
            "analysis": { "type": "string", "enum": ["absolute", "relative"] },
            "relative": {
                "type": ["object", "null"],
                "properties": {
                    "method": { "type": "string", "enum": ["raw-counts", "palette-inversion"] },
                    "palette": { "type": ["string", "null"] },
                    "label": { "type": "string" },
                    "reason": { "type": "string" }
                },
                "required": ["method", "label", "reason"]
            },
            "image": {
                "type": "object",
                "properties": {
                    "width": { "type": "integer" }, "height": { "type": "integer" },
                    "format": { "type": "string" },
                    "camera": { "type": ["string", "null"] }
                },
                "required": ["width", "height", "format", "camera"]
            },
            "equipment": { "type": "string", "enum": ["panel", "board", "motor-bearing", "pv-module", "transformer", "building-envelope", "other", "unknown"] },
            "equipment_source": { "type": "string", "enum": ["operator", "component-map", "context", "none"] },
            "equipment_reason": { "type": "string" },
            "component": {
                "type": "object",
                "properties": {
                    "kind": { "type": "string" },
                    "group": { "type": "string" },
                    "source": { "type": "string" }
                },
                "required": ["kind", "group", "source"]
            },
            "conditions": { "type": ["object", "null"] },
            "min_c": num_or_null, "max_c": num_or_null, "mean_c": num_or_null,
            "hottest": point,
            "hotspots": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "bbox": rect, "centroid": point, "hottest": point,
                        "max_c": num_or_null, "mean_c": num_or_null,
                        "area_px": { "type": "integer" },
                        "delta_ref_c": num_or_null,
                        "max_relative": num_or_null
                    },
                    "required": ["bbox", "centroid", "max_c", "mean_c", "area_px", "delta_ref_c"]
                }
            },
            "reference": {
                "type": "object",
                "properties": {
                    "method": { "type": "string", "enum": ["median", "region", "ambient"] },
                    "temperature_c": num_or_null,
                    "region": { "type": ["object", "null"] },
                    "relative_value": num_or_null
                },
                "required": ["method", "temperature_c"]
            },
            "delta_t_ref_c": num_or_null,
            "delta_t_ambient_c": num_or_null,
            "severity": {
                "type": "object",
                "properties": {
                    "standard": { "type": "string" },
                    "band": { "type": ["string", "null"], "enum": ["none", "possible", "probable", "monitor", "major", null] },
                    "class": { "type": ["string", "null"], "enum": ["CoA 1", "CoA 2", "CoA 3", null] },
                    "criterion": { "type": "string" },
                    "action": { "type": "string" },
                    "assessed": { "type": "boolean" }
                },
                "required": ["standard", "band", "class", "criterion", "action", "assessed"]
            },
            "suspected_component": {
                "type": ["object", "null"],
                "properties": {
                    "designator": { "type": "string" },
                    "distance_px": { "type": "number" },
                    "class": { "type": "string" },
                    "value": { "type": ["string", "null"] },
                    "package": { "type": ["string", "null"] },
                    "temperature_c": num_or_null
                },
                "required": ["designator", "distance_px"]
            },
            "failure_mode": {
                "type": "object",
                "properties": {
                    "kind": { "type": "string" },
                    "hypothesis": { "type": "string" },
                    "evidence": strings
                },
                "required": ["kind", "hypothesis"]
            },
            "confidence": { "type": "number", "minimum": 0, "maximum": 1 },
            "notes": strings
        },
        "required": [
            "radiometric", "analysis", "image", "min_c", "max_c", "mean_c", "hotspots", "reference",
            "delta_t_ref_c", "delta_t_ambient_c", "severity", "failure_mode", "confidence", "notes",
            "equipment", "equipment_source", "equipment_reason", "component"
        ]
    })
}

/// The `analyze_thermal_image` tool definition served by `tools/list`.
pub fn analyze_thermal_image_tool() -> Tool {
    static TOOL: OnceLock<Tool> = OnceLock::new();
    TOOL.get_or_init(|| {
        Tool::new(
            ANALYZE_THERMAL_IMAGE,
            "Analyse a thermal image: temperatures (FLIR radiometric) or a labelled relative analysis (DJI, plain \
             images), hotspots, ΔT against a reference (a similar component, else the frame median) and, if \
             ambient_c is given, against ambient air; the equipment (given, from a component_map or the context, \
             else unknown) and the criteria for it: NETA Table 100.18 band for electrical equipment, IEC TS \
             62446-3 class for PV modules, no band for the rest; the component and a failure-mode hypothesis, a \
             confidence and caveats.",
            object(input_schema()),
        )
        .with_title("Analyse thermal image")
        .with_raw_output_schema(object(output_schema()))
        .with_annotations(
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(true),
        )
    })
    .clone()
}

fn tool_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

impl ServerHandler for VisionServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Thermal-image analysis for inspection. Call analyze_thermal_image with the image (blob reference or \
                 base64) and the equipment it shows; add reference_region on a similar component, ambient_c, \
                 emissivity, context and a component_map when known.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![analyze_thermal_image_tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == ANALYZE_THERMAL_IMAGE).then(analyze_thermal_image_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != ANALYZE_THERMAL_IMAGE {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}; this server has only {ANALYZE_THERMAL_IMAGE}", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let args: AnalyzeArgs = match serde_json::from_value(arguments) {
            Ok(args) => args,
            Err(e) => return Ok(tool_error(format!("invalid arguments: {e}")).into()),
        };
        let report = match self.analyze(args).await {
            Ok(report) => report,
            Err(e @ Error::Internal { .. }) => {
                tracing::error!(error = %e, "analyze_thermal_image failed");
                return Err(ErrorData::internal_error(e.to_string(), None));
            }
            Err(e) => {
                tracing::debug!(error = %e, "analyze_thermal_image refused its input");
                return Ok(tool_error(e.to_string()).into());
            }
        };
        let structured = serde_json::to_value(&report)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))?;
        let mut result = CallToolResult::structured(structured);
        result.content = vec![ContentBlock::text(analysis::render_text(&report))];
        Ok(result.into())
    }
}

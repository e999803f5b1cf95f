// Generated from the Rust body types of the diagnosis routes (crates/app/src/diagnosis/) by
// `UPDATE_BINDINGS=1 cargo test -p switchboard-app --lib typescript`. Do not edit.

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

export type ErrorBody = { 
/**
 * What went wrong.
 */
error: string, };

export type BlobUploaded = { 
/**
 * Hex SHA-256 of the content.
 */
sha256: string, 
/**
 * Bytes stored.
 */
size: number, 
/**
 * The reference a run takes as its image: `blob:<sha256>`.
 */
ref: string, };

export type PointPx = { 
/**
 * Column.
 */
x: number, 
/**
 * Row.
 */
y: number, };

export type RelativeInfo = { 
/**
 * `raw-counts` or `palette-inversion`.
 */
method: string, 
/**
 * Why only a relative analysis is possible.
 */
reason: string, };

export type ThermalView = { 
/**
 * The blob.
 */
sha256: string, 
/**
 * Columns.
 */
width: number, 
/**
 * Rows.
 */
height: number, 
/**
 * Values are °C from the camera's radiometric calibration.
 */
radiometric: boolean, 
/**
 * `C` for temperatures, `relative` for a 0 (coldest) … 1 (hottest) scale.
 */
unit: string, 
/**
 * The container the reader recognised (`flir-jpeg`, `fff`, `flir-seq`, `dji-rjpeg`,
 * `jpeg`, `png`).
 */
format: string, 
/**
 * Coldest temperature, °C (`null` when not radiometric).
 */
min_c: number | null, 
/**
 * Hottest temperature, °C (`null` when not radiometric).
 */
max_c: number | null, 
/**
 * Smallest value in `unit`.
 */
min: number, 
/**
 * Largest value in `unit`.
 */
max: number, 
/**
 * Where the largest value is.
 */
hottest: PointPx, 
/**
 * Where the smallest value is.
 */
coldest: PointPx, 
/**
 * How the relative scale was made (not radiometric only).
 */
relative: RelativeInfo | null, 
/**
 * `width × height` values as little-endian `f32`, row-major, base64 (standard alphabet,
 * padded); `NaN` where a pixel has no value.
 */
temps: string, };

export type FlowNodeView = { 
/**
 * Node id (the `node` of `flow_progress` events).
 */
id: string, 
/**
 * The tool as the flow file names it.
 */
tool: string | null, 
/**
 * The capability label it is bound through, when it is.
 */
capability: string | null, 
/**
 * The tool's name on the router now (`null` when it does not resolve: its server is down).
 */
resolved_tool: string | null, 
/**
 * What the node does.
 */
description: string | null, 
/**
 * Per-attempt timeout, ms.
 */
timeout_ms: number | null, };

export type FlowEdgeView = { 
/**
 * Source node id.
 */
from: string, 
/**
 * Target node id.
 */
to: string, 
/**
 * When it fires (`ok` when the file says nothing).
 */
when: string | null, };

export type FlowGraph = { 
/**
 * The flow's name (runs are recorded under it).
 */
name: string, 
/**
 * What it is for.
 */
description: string | null, 
/**
 * Nodes in execution order.
 */
nodes: Array<FlowNodeView>, 
/**
 * Edges in file order.
 */
edges: Array<FlowEdgeView>, };

export type RunRequest = { 
/**
 * The image, uploaded first: `blob:<sha256>`.
 */
image: string, 
/**
 * What the image shows (`panel`, `board`, `motor-bearing`, `pv-module`, `transformer`,
 * `building-envelope`, `other`); picks the severity criteria.
 */
equipment?: string, 
/**
 * Ambient temperature, °C.
 */
ambient_c?: number, 
/**
 * Object emissivity, (0, 1].
 */
emissivity?: number, 
/**
 * Load conditions, equipment, anything the technician knows.
 */
context?: string, };

export type RunAccepted = { 
/**
 * The run; its progress arrives as `flow_progress` events with this id.
 */
run_id: string, };

export type RunSummary = { 
/**
 * The run id.
 */
run_id: string, 
/**
 * The flow that ran.
 */
flow: string, 
/**
 * Start, unix ms.
 */
started_at_ms: number, 
/**
 * End, unix ms; `null` while running.
 */
finished_at_ms: number | null, 
/**
 * `running`, `ok`, `failed` or `cancelled`.
 */
outcome: string, 
/**
 * Why it failed or was cancelled, naming the node (a corrupt image: the reader's error).
 */
error: string | null, 
/**
 * The image reference of the input (`blob:<sha256>`).
 */
image: string | null, 
/**
 * The equipment the operator gave.
 */
equipment: string | null, };

export type NodeStatus = "pending" | "running" | "succeeded" | "failed" | "skipped" | "cancelled";

export type NodeView = { 
/**
 * Node id.
 */
node: string, 
/**
 * The tool it called.
 */
tool: string | null, 
/**
 * Where it is.
 */
status: NodeStatus, 
/**
 * Time spent on it over all attempts, ms (0 until it settles).
 */
duration_ms: number, 
/**
 * Calls made.
 */
attempts: number, 
/**
 * The arguments it was called with (large strings elided).
 */
input: JsonValue | null, 
/**
 * What the tool returned.
 */
output: JsonValue | null, 
/**
 * Why it failed, was skipped or cancelled.
 */
error: string | null, };

export type BoxPx = { 
/**
 * Left column.
 */
x: number, 
/**
 * Top row.
 */
y: number, 
/**
 * Columns.
 */
width: number, 
/**
 * Rows.
 */
height: number, };

export type HotspotView = { 
/**
 * Its bounding box (outline this).
 */
bbox: BoxPx, 
/**
 * Its centroid.
 */
centroid: PointPx, 
/**
 * Its hottest pixel (mark this).
 */
hottest: PointPx | null, 
/**
 * Largest temperature, °C (`null` for relative analyses).
 */
max_c: number | null, 
/**
 * Mean temperature, °C.
 */
mean_c: number | null, 
/**
 * `max_c` minus the reference, °C.
 */
delta_ref_c: number | null, 
/**
 * Pixels in the region.
 */
area_px: number, 
/**
 * Largest relative value 0–1 (relative analyses only).
 */
max_relative: number | null, };

export type SeverityView = { 
/**
 * The standard applied (`none` when the equipment is unknown).
 */
standard: string, 
/**
 * NETA band: `none`, `possible`, `probable`, `monitor`, `major`.
 */
band: string | null, 
/**
 * IEC TS 62446-3 class (`CoA 1` …).
 */
class: string | null, 
/**
 * The criterion the grade rests on.
 */
criterion: string | null, 
/**
 * What to do.
 */
action: string | null, 
/**
 * Whether a grade was given at all.
 */
assessed: boolean, };

export type KnowledgeHit = { 
/**
 * Section id.
 */
id: string, 
/**
 * Section title.
 */
title: string, 
/**
 * Component group.
 */
group: string, 
/**
 * Relevance 0–1.
 */
score: number, 
/**
 * Provenance.
 */
source: string, 
/**
 * Why it matched.
 */
matched: Array<string>, };

export type RepairPlan = { 
/**
 * One-paragraph summary.
 */
summary: string, 
/**
 * Ordered steps, each naming its manual section.
 */
steps: Array<string>, 
/**
 * Safety precautions (read first).
 */
safety: Array<string>, 
/**
 * Parts to have at hand.
 */
parts: Array<string>, 
/**
 * Confidence 0–1.
 */
confidence: number | null, };

export type FailureModeView = { 
/**
 * `loose-connection`, `overload-imbalance`, … or `undetermined`.
 */
kind: string, 
/**
 * The hypothesis in words.
 */
hypothesis: string, };

export type DiagnosisResult = { 
/**
 * Values are temperatures from the camera's calibration.
 */
radiometric: boolean, 
/**
 * `absolute` or `relative`.
 */
analysis: string | null, 
/**
 * Analysed frame width, pixels.
 */
width: number | null, 
/**
 * Analysed frame height, pixels.
 */
height: number | null, 
/**
 * Coldest temperature, °C.
 */
min_c: number | null, 
/**
 * Hottest temperature, °C.
 */
max_c: number | null, 
/**
 * The hottest pixel of the frame.
 */
hottest: PointPx | null, 
/**
 * Hottest minus the reference, °C.
 */
delta_t_ref_c: number | null, 
/**
 * Equipment kind (`unknown` when nothing identified it).
 */
equipment: string | null, 
/**
 * Why the equipment is what it is.
 */
equipment_reason: string | null, 
/**
 * The grading.
 */
severity: SeverityView | null, 
/**
 * The top hotspot (the first of `hotspots`).
 */
hotspot: HotspotView | null, 
/**
 * Every hot region, hottest first.
 */
hotspots: Array<HotspotView>, 
/**
 * The probable cause.
 */
failure_mode: FailureModeView | null, 
/**
 * Manual sections found, best first.
 */
knowledge: Array<KnowledgeHit>, 
/**
 * The repair plan, once reasoning ran.
 */
repair: RepairPlan | null, };

export type RunView = { 
/**
 * The run.
 */
run: RunSummary, 
/**
 * The run input as given.
 */
input: JsonValue, 
/**
 * Every node of the flow, in execution order, whether it ran yet or not.
 */
nodes: Array<NodeView>, 
/**
 * The diagnosis, once vision succeeded.
 */
result: DiagnosisResult | null, };


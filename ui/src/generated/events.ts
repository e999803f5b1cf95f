// Generated from the Rust event model (crates/router/src/events.rs) by
// `UPDATE_BINDINGS=1 cargo test -p switchboard-router --lib typescript`. Do not edit.

/** Any JSON value (the types above use it for fields serde keeps as `serde_json::Value`). */
export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;

export type Kind = "request" | "notification" | "response" | "error";

export type Id = number | string;

export type Direction = "out" | "in";

export type FrameEvent = { 
/**
 * `upstream` or `downstream`.
 */
leg: string, 
/**
 * Server name (upstream leg) or client label (downstream leg).
 */
peer: string, 
/**
 * `stdio`, `http` or `ws`.
 */
transport: string, 
/**
 * Direction of travel.
 */
direction: Direction, 
/**
 * Size of the serialised message in bytes.
 */
size: number, 
/**
 * Request, notification, response or error.
 */
kind: Kind, 
/**
 * Method of a request or notification.
 */
method: string | null, 
/**
 * Id of a request or response.
 */
id: Id | null, 
/**
 * Ties a client's request to the upstream requests it caused (same value on both legs);
 * `None` for frames outside any forwarded request (handshakes, list refreshes).
 */
correlation: number | null, 
/**
 * The SSE event id the frame arrived with (Streamable HTTP), for resumption.
 */
sse_id: string | null, 
/**
 * The WebSocket frame number on its connection (one message per frame), counted from 1.
 */
ws_frame: number | null, 
/**
 * Unix time in microseconds.
 */
at_us: number, 
/**
 * The message text as sent or received.
 */
body: string, };

export type UpstreamEvent = { "event": "started", 
/**
 * Process id (stdio).
 */
pid: number | null, 
/**
 * Increases with every restart.
 */
generation: number, } | { "event": "exited", 
/**
 * Exit status or close reason.
 */
status: string, 
/**
 * How long it ran, in milliseconds.
 */
uptime_ms: number, 
/**
 * Last stderr lines (stdio).
 */
stderr_tail: string, } | { "event": "restarting", 
/**
 * 1 for the first restart after a clean run, then increasing.
 */
attempt: number, 
/**
 * Backoff before the restart, in milliseconds.
 */
delay_ms: number, } | { "event": "gave_up", 
/**
 * Human-readable reason, fit for callers (no stderr).
 */
reason: string, 
/**
 * The last stderr lines (operator detail: can hold secrets, never sent to callers).
 */
stderr_tail: string, };

export type HandshakeRecord = { 
/**
 * Row id; `None` before inserting ([`Store::insert_handshake`] ignores it and returns the new one).
 */
id: number | null, 
/**
 * The upstream server, which must be stored already; `None` for a downstream client or a probe of a
 * server not yet registered. Cleared when the server is removed.
 */
server_id: string | null, 
/**
 * `"upstream"` (router → server) or `"downstream"` (client → router).
 */
leg: string, 
/**
 * The transport the handshake ran over.
 */
transport: string, 
/**
 * Protocol era (e.g. the handshake style of a revision), if determined.
 */
era: string | null, 
/**
 * Protocol versions the initiating side offered.
 */
offered_versions: Array<string>, 
/**
 * The version agreed on; `None` when negotiation failed.
 */
chosen_version: string | null, 
/**
 * Capabilities the client declared.
 */
client_capabilities: JsonValue, 
/**
 * Capabilities the server granted.
 */
server_capabilities: JsonValue, 
/**
 * The client's `clientInfo`.
 */
client_info: JsonValue, 
/**
 * The server's `serverInfo`.
 */
server_info: JsonValue, 
/**
 * Tools seen right after the handshake, if listed.
 */
tool_count: number | null, 
/**
 * Wall time the handshake took, in milliseconds; must be finite.
 */
duration_ms: number, 
/**
 * Why the handshake failed; `None` on success.
 */
error: string | null, 
/**
 * When it happened (unix ms); listings are newest first by this.
 */
at_ms: number, };

export type TraceRecord = { 
/**
 * Row id; `None` before inserting.
 */
id: number | null, 
/**
 * When the request arrived (unix ms).
 */
at_ms: number, 
/**
 * `http`, `ws` or `stdio`.
 */
transport: string, 
/**
 * The client's address (`ip:port`) when it has one.
 */
peer: string | null, 
/**
 * `clientInfo.name` (from `_meta`, `initialize` or the session).
 */
client_name: string | null, 
/**
 * `clientInfo.version`.
 */
client_version: string | null, 
/**
 * The protocol version the request was served under, when known.
 */
era: string | null, 
/**
 * The JSON-RPC method (`(invalid)` when the body did not parse).
 */
method: string, 
/**
 * The tool or prompt name, or the resource URI.
 */
name: string | null, 
/**
 * The upstream server the request was forwarded to; `None` when the router answered itself.
 */
upstream: string | null, 
/**
 * Arrival to the end of the response (the last SSE event for streams), in milliseconds.
 */
latency_ms: number, 
/**
 * Arrival to the response head, in milliseconds.
 */
first_byte_ms: number | null, 
/**
 * Whether the response was an SSE stream.
 */
streamed: boolean, 
/**
 * The HTTP status of the response.
 */
http_status: number | null, 
/**
 * One of [`outcome`].
 */
outcome: string, 
/**
 * The JSON-RPC error code, for errors, timeouts and cancellations answered with one.
 */
error_code: number | null, 
/**
 * The error message.
 */
error: string | null, 
/**
 * The scheduler's decision for the upstream that served it (or the last one tried): the
 * candidates, each layer's verdict, their scores, the chosen upstream and why.
 */
route: JsonValue | null, 
/**
 * Attempts on other upstreams that failed before the last one (retries).
 */
retries: number, };

export type Quarantined = { 
/**
 * Tool name (or `"<unnamed #N>"`).
 */
name: string, 
/**
 * Which schema failed and how.
 */
error: string, };

export type CatalogDiff = { 
/**
 * Tools listed now and not before.
 */
tools_added: Array<string>, 
/**
 * Tools listed before and not now.
 */
tools_removed: Array<string>, 
/**
 * Tools whose definition (description, schemas, annotations) changed.
 */
tools_changed: Array<string>, 
/**
 * Prompts added, by name.
 */
prompts_added: Array<string>, 
/**
 * Prompts removed, by name.
 */
prompts_removed: Array<string>, 
/**
 * Prompts whose definition changed, by name.
 */
prompts_changed: Array<string>, 
/**
 * Resources added, by URI.
 */
resources_added: Array<string>, 
/**
 * Resources removed, by URI.
 */
resources_removed: Array<string>, 
/**
 * Resources whose definition changed, by URI.
 */
resources_changed: Array<string>, 
/**
 * Resource templates added, by URI template.
 */
templates_added: Array<string>, 
/**
 * Resource templates removed, by URI template.
 */
templates_removed: Array<string>, 
/**
 * Resource templates whose definition changed, by URI template.
 */
templates_changed: Array<string>, };

export type KeySource = "session" | "header" | "meta" | "none";

export type Layer = "only" | "affinity" | "score" | "fallback" | "none";

export type Candidate = { 
/**
 * The upstream server.
 */
server: string, 
/**
 * Layer 1: `null` when it matched, else why not (state, a missing tool or label).
 */
rejected: string | null, 
/**
 * Layer 2: `in_flight*10 + ewma_ms + cpu*2`, for candidates that matched.
 */
score: number | null, 
/**
 * Calls in flight through this router.
 */
in_flight: number, 
/**
 * Latency average (ms), once it served a call.
 */
ewma_ms: number | null, 
/**
 * CPU from its last fresh status report.
 */
cpu_percent: number | null, 
/**
 * Its score is above the overload threshold: no new keys.
 */
overloaded: boolean, 
/**
 * Layer 3, for the key's upstream: what the binding says (age, success rate).
 */
affinity: string | null, };

export type Decision = { 
/**
 * Unique id (a random per-process prefix and a counter).
 */
id: string, 
/**
 * Unix milliseconds.
 */
at_ms: number, 
/**
 * What was routed (`tool "read"`, `resource "file:///a"`, `capability "vision"`).
 */
target: string, 
/**
 * The replica group (or the server of its own) the name belongs to.
 */
group: string, 
/**
 * A fingerprint of the affinity key (`k:` and 12 hex digits of its SHA-256), never the key.
 */
key: string | null, 
/**
 * Where the key came from.
 */
key_source: KeySource, 
/**
 * Every member of the group, with each layer's verdict.
 */
candidates: Array<Candidate>, 
/**
 * The chosen upstream.
 */
chosen: string | null, 
/**
 * The layer that chose.
 */
layer: Layer, 
/**
 * Why, in one sentence.
 */
reason: string, 
/**
 * The call runs without capabilities it asked for (core ones dropped by fallback).
 */
degraded: boolean, 
/**
 * Capability labels fallback dropped, in order.
 */
dropped: Array<string>, 
/**
 * 0 for the first choice, then one more per retry elsewhere.
 */
attempt: number, 
/**
 * Upstreams left out because an earlier attempt of this call failed on them.
 */
excluded: Array<string>, };

export type EventKind = "handshake" | "negotiation" | "server_state" | "catalog" | "catalog_changed" | "upstream" | "frame" | "trace" | "notification" | "flow_progress" | "flow_run" | "session" | "process_stats" | "route";

export type Filter = { 
/**
 * Event kinds.
 */
kinds: Array<EventKind>, 
/**
 * Upstream server names; events about no server pass only when this is empty.
 */
servers: Array<string>, 
/**
 * JSON-RPC methods; events about no method pass only when this is empty.
 */
methods: Array<string>, };

export type Event = { "type": "handshake", 
/**
 * Server name (empty for probes).
 */
server: string, 
/**
 * The record as stored.
 */
record: HandshakeRecord, } | { "type": "negotiation", 
/**
 * Server name.
 */
server: string, 
/**
 * `upstream` (router → server) or `downstream` (client → router).
 */
leg: string, 
/**
 * What happened (`discover`, `initialize`, `fallback`, `answer`, `failed`).
 */
step: string, 
/**
 * Protocol versions offered at this step.
 */
offered: Array<string>, 
/**
 * The version chosen, when this step chose one.
 */
chosen: string | null, 
/**
 * A one-line detail (an error, the reason for a fallback).
 */
detail: string | null, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "server_state", 
/**
 * Server id.
 */
server_id: string, 
/**
 * Server name.
 */
server: string, 
/**
 * Previous state.
 */
from: string, 
/**
 * New state.
 */
to: string, 
/**
 * Why.
 */
reason: string, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "catalog", 
/**
 * Server id.
 */
server_id: string, 
/**
 * Server name.
 */
server: string, 
/**
 * Usable tools.
 */
tools: number, 
/**
 * Tools left out.
 */
quarantined: Array<Quarantined>, 
/**
 * Resources listed.
 */
resources: number, 
/**
 * Prompts listed.
 */
prompts: number, 
/**
 * What triggered the listing (`connect`, `timer`, `list_changed`).
 */
trigger: string, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "catalog_changed", 
/**
 * Server name.
 */
server: string, 
/**
 * What differs.
 */
diff: CatalogDiff, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "upstream", 
/**
 * Server id.
 */
server_id: string, 
/**
 * Server name.
 */
server: string, 
/**
 * What happened.
 */
event: UpstreamEvent, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "frame", 
/**
 * The frame.
 */
frame: FrameEvent, } | { "type": "trace", 
/**
 * The record as stored.
 */
record: TraceRecord, } | { "type": "notification", 
/**
 * The notification's method (`notifications/tools/list_changed`, …).
 */
method: string, 
/**
 * The resource, for `notifications/resources/updated`.
 */
uri: string | null, 
/**
 * Listeners it reached.
 */
listeners: number, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "flow_progress", 
/**
 * Run id.
 */
run_id: string, 
/**
 * Node id.
 */
node: string, 
/**
 * `running`, `progress`, `retrying`, `succeeded`, `failed`, `skipped`, `cancelled`.
 */
status: string, 
/**
 * Progress so far, 0..=1, when the tool reported a total.
 */
progress: number | null, 
/**
 * Time spent on the node so far (all attempts and backoffs), in milliseconds, when the
 * engine measured it (at `running`, 0, and when the node settled).
 */
elapsed_ms: number | null, 
/**
 * A line for the operator (the tool called, its progress message, the error).
 */
message: string | null, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "flow_run", 
/**
 * Run id.
 */
run_id: string, 
/**
 * The flow's name.
 */
flow: string, 
/**
 * `running`, `ok`, `failed` or `cancelled`.
 */
status: string, 
/**
 * Why it failed or was cancelled.
 */
error: string | null, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "session", 
/**
 * `opened`, `ended` or `bound`.
 */
action: string, 
/**
 * `session` (2025-11-25) or `caller` (2026-07-28).
 */
kind: string, 
/**
 * The session's tag or the caller's key: never a full session id.
 */
id: string, 
/**
 * The client's `clientInfo` name and version, when known.
 */
client: string | null, 
/**
 * The downstream transport (`http`, `ws`, `stdio`).
 */
transport: string, 
/**
 * For `bound`: the upstream server.
 */
server: string | null, 
/**
 * For `bound`: the tag of the upstream session, when the upstream holds one.
 */
upstream_session: string | null, 
/**
 * Unix milliseconds.
 */
at_ms: number, } | { "type": "route", 
/**
 * The decision.
 */
decision: Decision, } | { "type": "process_stats", 
/**
 * The server whose child process this is; `None` for the router process.
 */
server: string | null, 
/**
 * Process id.
 */
pid: number, 
/**
 * Resident memory in bytes.
 */
rss_bytes: number, 
/**
 * CPU use since the previous sample of this process, in percent of one core (0 on a
 * process's first sample).
 */
cpu_percent: number, 
/**
 * Events subscribers lost since the previous sample, all subscribers together (on the
 * router's own sample only).
 */
events_lost: number | null, 
/**
 * Unix milliseconds.
 */
at_ms: number, };


// Generated from the admin API's Rust types (crates/admin/src) by
// `UPDATE_BINDINGS=1 cargo test -p switchboard-admin --lib typescript`. Do not edit.

import type { Event, EventKind, Filter, FrameEvent, HandshakeRecord, JsonValue, Quarantined, TraceRecord } from "./events";

/** The subprotocol of `/api/events`; the token goes beside it as `bearer.<token>`. */
export const EVENTS_PROTOCOL = "switchboard.events";

export type ErrorBody = { 
/**
 * One specific sentence.
 */
error: string, };

export type RouterInfo = { 
/**
 * Switchboard's version.
 */
version: string, 
/**
 * Time since the admin API started, in milliseconds.
 */
uptime_ms: number, 
/**
 * The listeners' addresses (`ip:port`).
 */
listen: Array<string>, 
/**
 * The protocol revisions the endpoint speaks, newest first.
 */
revisions: Array<string>, };

export type ServerCounts = { 
/**
 * Routable.
 */
ready: number, 
/**
 * Restarting, reconnecting or failing refreshes.
 */
degraded: number, 
/**
 * Not routable until they recover.
 */
unavailable: number, 
/**
 * Not connected yet (or disabled).
 */
pending: number, };

export type CallStats = { 
/**
 * Requests traced in the window.
 */
total: number, 
/**
 * Of them, the ones that did not end `ok`.
 */
errors: number, 
/**
 * Requests per second over the window.
 */
per_s: number, 
/**
 * Median latency, in milliseconds (`null` without calls).
 */
p50_ms: number | null, 
/**
 * 99th percentile latency, in milliseconds (`null` without calls).
 */
p99_ms: number | null, };

export type EventStats = { 
/**
 * Subscribers now (viewers, the frame ring's recorder, the logs).
 */
subscribers: number, 
/**
 * Events subscribers lost by falling behind, all together, since start.
 */
lost: number, };

export type Overview = { 
/**
 * The router process.
 */
router: RouterInfo, 
/**
 * Servers by state.
 */
servers: ServerCounts, 
/**
 * Downstream calls over the last [`WINDOW_MS`].
 */
calls: CallStats, 
/**
 * The event stream.
 */
events: EventStats, };

export type UpstreamStatus = { 
/**
 * `true` when messages can be sent now.
 */
connected: boolean, 
/**
 * Child process id (stdio).
 */
pid: number | null, 
/**
 * Restarts so far (stdio).
 */
restarts: number, 
/**
 * Resident memory of the child in bytes (stdio, Linux).
 */
memory_bytes: number | null, 
/**
 * Last stderr lines (stdio).
 */
stderr_tail: Array<string>, 
/**
 * Why the upstream is not connected, if it is not.
 */
last_error: string | null, 
/**
 * 2025-11-25 HTTP session id, when one is held.
 */
session_id: string | null, };

export type ServerView = { 
/**
 * Stable id.
 */
server_id: string, 
/**
 * Name.
 */
name: string, 
/**
 * `stdio`, `http`, `ws` or `in-process`.
 */
transport: string, 
/**
 * Command line or URL.
 */
endpoint: string, 
/**
 * Domain labels.
 */
labels: Array<string>, 
/**
 * `pending`, `ready`, `degraded` or `unavailable`.
 */
state: string, 
/**
 * Why it is in that state, fit for callers.
 */
reason: string, 
/**
 * The operator's detail of `reason` (with the last stderr lines).
 */
detail: string | null, 
/**
 * Since when (unix ms).
 */
since_ms: number, 
/**
 * `modern` or `legacy`, once known.
 */
era: string | null, 
/**
 * Negotiated protocol version.
 */
protocol_version: string | null, 
/**
 * `serverInfo`.
 */
server_info: JsonValue, 
/**
 * Usable tool names.
 */
tools: Array<string>, 
/**
 * Tools left out, with the reason.
 */
quarantined: Array<Quarantined>, 
/**
 * Number of resources.
 */
resources: number, 
/**
 * Number of prompts.
 */
prompts: number, 
/**
 * The connection underneath.
 */
status: UpstreamStatus, };

export type AddServer = { 
/**
 * Unique name.
 */
name: string, 
/**
 * Program of a stdio server.
 */
command?: string, 
/**
 * Its arguments.
 */
args?: Array<string>, 
/**
 * Extra environment of the child.
 */
env?: { [key in string]: string }, 
/**
 * Working directory of the child.
 */
cwd?: string, 
/**
 * URL of an HTTP or WebSocket server.
 */
url?: string, 
/**
 * Extra HTTP headers.
 */
headers?: { [key in string]: string }, 
/**
 * Domain labels.
 */
labels?: Array<string>, };

export type ImportError = { 
/**
 * The entry's name (empty when the file itself is at fault).
 */
name: string, 
/**
 * Why.
 */
error: string, };

export type ImportResult = { 
/**
 * Names of the servers added.
 */
added: Array<string>, 
/**
 * Entries not added, and why.
 */
errors: Array<ImportError>, };

export type CatalogTool = { 
/**
 * Name.
 */
name: string, 
/**
 * Display title.
 */
title?: string, 
/**
 * Description.
 */
description?: string, 
/**
 * The input schema, as sent.
 */
inputSchema: JsonValue, 
/**
 * The output schema, as sent.
 */
outputSchema?: JsonValue, 
/**
 * Annotations, as sent.
 */
annotations?: JsonValue, };

export type CatalogView = { 
/**
 * Usable tools.
 */
tools: Array<CatalogTool>, 
/**
 * Tools left out because a schema does not compile, with the error.
 */
quarantined: Array<Quarantined>, 
/**
 * `resources/list` items, as sent.
 */
resources: Array<JsonValue>, 
/**
 * `resources/templates/list` items, as sent.
 */
templates: Array<JsonValue>, 
/**
 * `prompts/list` items, as sent.
 */
prompts: Array<JsonValue>, 
/**
 * When it was listed (unix ms; 0 before the first listing).
 */
fetched_at_ms: number, };

export type HandshakeQuery = { 
/**
 * Only this server's (by name or id).
 */
server?: string, 
/**
 * Only this leg's: `upstream` or `downstream`.
 */
leg?: string, 
/**
 * At most this many (default 200, at most 10 000).
 */
limit?: number, };

export type TraceQuery = { 
/**
 * At most this many (default 200, at most 10 000).
 */
limit?: number, };

export type DecisionQuery = { 
/**
 * Only the decisions of this affinity key: its fingerprint (`k:…`) or the key itself
 * (a session id), which is fingerprinted here.
 */
key?: string, 
/**
 * Only those whose chosen upstream (or a candidate) is this server.
 */
server?: string, 
/**
 * Only this replica group's.
 */
group?: string, 
/**
 * At most this many (default 200; the scheduler keeps the newest 2 048).
 */
limit?: number, };

export type GroupQuery = { 
/**
 * Also servers of their own.
 */
all?: boolean, };

export type GroupMember = { 
/**
 * The server.
 */
server: string, 
/**
 * Its state.
 */
state: string, 
/**
 * Calls in flight through this router.
 */
in_flight: number, 
/**
 * Latency average (ms), once it served a call.
 */
ewma_ms: number | null, 
/**
 * Whether it is draining (deregistered).
 */
draining: boolean, };

export type Binding = { 
/**
 * The key's fingerprint.
 */
key: string, 
/**
 * The upstream it is bound to.
 */
server: string, 
/**
 * Seconds since it was bound there.
 */
age_secs: number, 
/**
 * Seconds since its last call.
 */
idle_secs: number, 
/**
 * Its calls there that succeeded.
 */
ok: number, 
/**
 * Its calls there that failed.
 */
failed: number, };

export type GroupView = { 
/**
 * Its name.
 */
name: string, 
/**
 * `single`, `declared` or `detected`.
 */
formed: string, 
/**
 * Its members.
 */
members: Array<GroupMember>, 
/**
 * The affinity keys bound in it (newest use first, at most 200).
 */
bindings: Array<Binding>, };

export type FramesQuery = { 
/**
 * `upstream` or `downstream`.
 */
leg?: string, 
/**
 * The server (upstream leg) or client label (downstream leg).
 */
server?: string, 
/**
 * The JSON-RPC method.
 */
method?: string, 
/**
 * At most this many, the newest (default: all kept).
 */
limit?: number, };

export type ServerSettings = { 
/**
 * Name.
 */
name: string, 
/**
 * `stdio`, `http`, `ws` or `builtin`.
 */
transport: string, 
/**
 * Program (stdio).
 */
command: string | null, 
/**
 * Arguments (stdio).
 */
args: Array<string>, 
/**
 * Environment names, values redacted (stdio).
 */
env: { [key in string]: string }, 
/**
 * Working directory (stdio).
 */
cwd: string | null, 
/**
 * URL (http, ws).
 */
url: string | null, 
/**
 * Header names, values redacted (http).
 */
headers: { [key in string]: string }, 
/**
 * Domain labels.
 */
labels: Array<string>, 
/**
 * Whether it is connected at all.
 */
enabled: boolean, 
/**
 * Where the definition came from.
 */
source: string, };

export type Settings = { 
/**
 * The router's settings (`[router]`, `[endpoint]`, `[store]`, …) as the app gave them.
 */
config: JsonValue, 
/**
 * The registered servers' definitions.
 */
servers: Array<ServerSettings>, };

export type EventsQuery = { 
/**
 * Event `type`s (`frame,trace`).
 */
kinds?: string, 
/**
 * Server names.
 */
servers?: string, 
/**
 * JSON-RPC methods.
 */
methods?: string, };

export type ViewerCommand = { "type": "filter", 
/**
 * Event kinds.
 */
kinds: Array<EventKind>, 
/**
 * Server names.
 */
servers: Array<string>, 
/**
 * JSON-RPC methods.
 */
methods: Array<string>, };

export type Snapshot = { 
/**
 * Every server.
 */
servers: Array<ServerView>, 
/**
 * The newest handshakes, newest first.
 */
handshakes: Array<HandshakeRecord>, 
/**
 * The newest traces, newest first.
 */
traces: Array<TraceRecord>, 
/**
 * The newest frames the ring kept that pass the viewer's filter, oldest first.
 */
frames: Array<FrameEvent>, 
/**
 * The newest stored flow runs, newest first (the store's run rows).
 */
runs: Array<JsonValue>, 
/**
 * Downstream sessions and callers (`GET /api/sessions`); `null` when the app gave no source.
 */
sessions: JsonValue | null, 
/**
 * The overview.
 */
overview: Overview, };

export type ViewerMessage = { "type": "snapshot" } & Snapshot | { "type": "events", 
/**
 * The events.
 */
events: Array<Event>, } | { "type": "lagged", 
/**
 * Dropped since the previous report.
 */
lost: number, 
/**
 * Dropped for this viewer since it connected.
 */
total_lost: number, } | { "type": "filtered", 
/**
 * The filter now applied.
 */
filter: Filter, } | { "type": "error", 
/**
 * Why.
 */
error: string, };


// Generated from the gateway's session table (crates/gateway/src/sessions.rs) by
// `UPDATE_BINDINGS=1 cargo test -p switchboard-gateway --lib typescript`. Do not edit.

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

export type UpstreamBinding = { 
/**
 * The upstream server.
 */
server: string, 
/**
 * Tag of the upstream 2025-11-25 session the calls went over; `null` when the upstream
 * holds none (stdio, WebSocket, 2026-07-28 servers).
 */
upstream_session: string | null, 
/**
 * The client capabilities that session was opened with (the router holds one upstream
 * session per capability set on a legacy HTTP server), sorted.
 */
capabilities: Array<string>, 
/**
 * The upstream connection's transport.
 */
upstream_transport: string, 
/**
 * Calls routed over it.
 */
calls: number, 
/**
 * First call, unix ms.
 */
first_ms: number, 
/**
 * Latest call, unix ms.
 */
last_ms: number, };

export type SessionView = { 
/**
 * The session's tag (never its id).
 */
tag: string, 
/**
 * The negotiated protocol version.
 */
protocol_version: string, 
/**
 * The client's `clientInfo`.
 */
client_info: JsonValue, 
/**
 * The client's capabilities.
 */
capabilities: JsonValue, 
/**
 * `http`, `ws` or `stdio`.
 */
transport: string, 
/**
 * The client's address, when it has one.
 */
peer: string | null, 
/**
 * When the session was created, unix ms.
 */
created_ms: number, 
/**
 * Its latest message, unix ms.
 */
last_seen_ms: number, 
/**
 * Requests it sent (through this instance, since this table knew it).
 */
requests: number, 
/**
 * Ended here (`DELETE`, or its WebSocket/stdio connection closed).
 */
ended: boolean, 
/**
 * When it ended, unix ms.
 */
ended_ms: number | null, 
/**
 * Where its calls went, most recent last.
 */
bindings: Array<UpstreamBinding>, };

export type CallerView = { 
/**
 * `name@version transport peer`.
 */
key: string, 
/**
 * `clientInfo.name`.
 */
name: string | null, 
/**
 * `clientInfo.version`.
 */
version: string | null, 
/**
 * The protocol version of its latest request.
 */
protocol_version: string | null, 
/**
 * `http`, `ws` or `stdio`.
 */
transport: string, 
/**
 * The client's address without the port, when it has one.
 */
peer: string | null, 
/**
 * The capabilities of its latest request.
 */
capabilities: JsonValue, 
/**
 * Its first request, unix ms.
 */
first_seen_ms: number, 
/**
 * Its latest request, unix ms.
 */
last_seen_ms: number, 
/**
 * Requests so far.
 */
requests: number, 
/**
 * Where its calls went, most recent last.
 */
bindings: Array<UpstreamBinding>, };

export type SessionsView = { 
/**
 * 2025-11-25 sessions, most recently seen first.
 */
sessions: Array<SessionView>, 
/**
 * 2026-07-28 callers, most recently seen first.
 */
callers: Array<CallerView>, 
/**
 * The bound on `sessions`.
 */
sessions_kept: number, 
/**
 * The bound on `callers`.
 */
callers_kept: number, 
/**
 * Sessions forgotten to stay within the bound, since start.
 */
sessions_evicted: number, 
/**
 * Callers forgotten to stay within the bound, since start.
 */
callers_evicted: number, 
/**
 * Always `null`: the scheduler's decisions and bindings are served by `/api/decisions` and
 * `/api/groups` (kept for clients of the first version of this body).
 */
scheduling: JsonValue | null, 
/**
 * Where the decisions and bindings are.
 */
scheduling_note: string, };


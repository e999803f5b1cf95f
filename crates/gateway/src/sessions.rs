//! The live table of who is connected downstream: 2025-11-25 sessions and 2026-07-28
//! callers, each with the upstream sessions its calls were bound to — what the panel's
//! "Sessions & affinity" view shows ([`SessionTable::view`], `Gateway::sessions`).
//!
//! Sealed session ids ([`crate::session`]) keep the request path free of a session table;
//! this one is for *looking*, and nothing is refused because of it. So it is bounded and
//! forgetful: at most [`SessionsConfig::sessions_kept`] sessions and
//! [`SessionsConfig::callers_kept`] callers, the least recently seen going first (counted in
//! `*_evicted`), at most [`BINDINGS_KEPT`] bindings each. A session another instance opened,
//! or one this table forgot, reappears on its next request (its sealed id says who it is).
//!
//! Ids are shown as tags: the first 48 bits of a SHA-256 of the id (`s-…` for downstream
//! sessions, `u-…` for upstream ones), never the id itself, which is a bearer credential.
//! A 2026-07-28 caller has no id at all; it is keyed by its `clientInfo` name and version,
//! transport and peer address (without the port, which changes per connection).
//!
//! Openings, endings and new bindings are published as `Event::Session` on the bus.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchboard_router::{Event, EventBus};
use ts_rs::TS;

pub mod typescript;

/// Sessions kept by default.
pub const DEFAULT_SESSIONS_KEPT: usize = 1000;
/// Callers kept by default.
pub const DEFAULT_CALLERS_KEPT: usize = 1000;
/// Upstream bindings kept per session or caller (the least recently used go first).
pub const BINDINGS_KEPT: usize = 16;
/// What [`SessionsView::scheduling_note`] says: where the scheduler's side of a session is.
pub const SCHEDULING_NOTE: &str = "routing decisions of a session: GET /api/decisions?key=<its tag or id>; \
     replica groups and affinity bindings: GET /api/groups (a session's tag s-… and its key fingerprint k:… share their hex digits)";

/// How many entries the table keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionsConfig {
    /// 2025-11-25 sessions kept (ended ones included, until they are the least recently seen).
    pub sessions_kept: usize,
    /// 2026-07-28 callers kept.
    pub callers_kept: usize,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig { sessions_kept: DEFAULT_SESSIONS_KEPT, callers_kept: DEFAULT_CALLERS_KEPT }
    }
}

/// A short tag of an id: `prefix` and 12 hex digits of its SHA-256.
fn tag(prefix: &str, id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

/// The tag shown for a downstream session id.
pub fn session_tag(sid: &str) -> String {
    tag("s-", sid)
}

/// The tag shown for an upstream session id.
pub fn upstream_tag(id: &str) -> String {
    tag("u-", id)
}

/// One upstream a session or caller was routed to.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct UpstreamBinding {
    /// The upstream server.
    pub server: String,
    /// Tag of the upstream 2025-11-25 session the calls went over; `null` when the upstream
    /// holds none (stdio, WebSocket, 2026-07-28 servers).
    pub upstream_session: Option<String>,
    /// The client capabilities that session was opened with (the router holds one upstream
    /// session per capability set on a legacy HTTP server), sorted.
    pub capabilities: Vec<String>,
    /// The upstream connection's transport.
    pub upstream_transport: String,
    /// Calls routed over it.
    pub calls: u64,
    /// First call, unix ms.
    pub first_ms: i64,
    /// Latest call, unix ms.
    pub last_ms: i64,
}

/// A 2025-11-25 downstream session.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SessionView {
    /// The session's tag (never its id).
    pub tag: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The client's `clientInfo`.
    pub client_info: Value,
    /// The client's capabilities.
    pub capabilities: Value,
    /// `http`, `ws` or `stdio`.
    pub transport: String,
    /// The client's address, when it has one.
    pub peer: Option<String>,
    /// When the session was created, unix ms.
    pub created_ms: i64,
    /// Its latest message, unix ms.
    pub last_seen_ms: i64,
    /// Requests it sent (through this instance, since this table knew it).
    pub requests: u64,
    /// Ended here (`DELETE`, or its WebSocket/stdio connection closed).
    pub ended: bool,
    /// When it ended, unix ms.
    pub ended_ms: Option<i64>,
    /// Where its calls went, most recent last.
    pub bindings: Vec<UpstreamBinding>,
}

/// A 2026-07-28 caller (no session: keyed by who it says it is and where it comes from).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct CallerView {
    /// `name@version transport peer`.
    pub key: String,
    /// `clientInfo.name`.
    pub name: Option<String>,
    /// `clientInfo.version`.
    pub version: Option<String>,
    /// The protocol version of its latest request.
    pub protocol_version: Option<String>,
    /// `http`, `ws` or `stdio`.
    pub transport: String,
    /// The client's address without the port, when it has one.
    pub peer: Option<String>,
    /// The capabilities of its latest request.
    pub capabilities: Value,
    /// Its first request, unix ms.
    pub first_seen_ms: i64,
    /// Its latest request, unix ms.
    pub last_seen_ms: i64,
    /// Requests so far.
    pub requests: u64,
    /// Where its calls went, most recent last.
    pub bindings: Vec<UpstreamBinding>,
}

/// `GET /api/sessions`: the table as it is now.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SessionsView {
    /// 2025-11-25 sessions, most recently seen first.
    pub sessions: Vec<SessionView>,
    /// 2026-07-28 callers, most recently seen first.
    pub callers: Vec<CallerView>,
    /// The bound on `sessions`.
    pub sessions_kept: usize,
    /// The bound on `callers`.
    pub callers_kept: usize,
    /// Sessions forgotten to stay within the bound, since start.
    pub sessions_evicted: u64,
    /// Callers forgotten to stay within the bound, since start.
    pub callers_evicted: u64,
    /// Always `null`: the scheduler's decisions and bindings are served by `/api/decisions` and
    /// `/api/groups` (kept for clients of the first version of this body).
    pub scheduling: Option<Value>,
    /// Where the decisions and bindings are.
    pub scheduling_note: String,
}

/// Who a request came from, as the table keys it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Downstream {
    /// A 2025-11-25 session, by tag.
    Session(String),
    /// A 2026-07-28 caller, by key.
    Caller(String),
}

impl Downstream {
    /// The 2025-11-25 session `sid`.
    pub fn session(sid: &str) -> Downstream {
        Downstream::Session(session_tag(sid))
    }

    /// The 2026-07-28 caller described by `client_info`, `transport` and `peer`.
    pub fn caller(client_info: Option<&Value>, transport: &str, peer: Option<&str>) -> Downstream {
        Downstream::Caller(caller_key(client_info, transport, peer))
    }
}

fn info_str(info: Option<&Value>, key: &str) -> Option<String> {
    info.and_then(|i| i.get(key)).and_then(Value::as_str).map(str::to_owned)
}

/// The peer without its port (`127.0.0.1:54321` → `127.0.0.1`).
fn peer_host(peer: Option<&str>) -> Option<String> {
    let peer = peer?;
    Some(peer.parse::<std::net::SocketAddr>().map_or_else(|_| peer.to_owned(), |a| a.ip().to_string()))
}

fn caller_key(info: Option<&Value>, transport: &str, peer: Option<&str>) -> String {
    let name = info_str(info, "name").unwrap_or_else(|| "unnamed".into());
    let version = info_str(info, "version").unwrap_or_else(|| "?".into());
    match peer_host(peer) {
        Some(host) => format!("{name}@{version} {transport} {host}"),
        None => format!("{name}@{version} {transport}"),
    }
}

fn client_label(info: &Value) -> Option<String> {
    let name = info_str(Some(info), "name")?;
    Some(match info_str(Some(info), "version") {
        Some(v) => format!("{name} {v}"),
        None => name,
    })
}

/// Sorted capability names of a capabilities object.
fn capability_set(caps: &Value) -> Vec<String> {
    let mut names: Vec<String> = caps.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    names.sort();
    names
}

#[derive(Debug, Default)]
struct Tables {
    sessions: HashMap<String, SessionView>,
    callers: HashMap<String, CallerView>,
    sessions_evicted: u64,
    callers_evicted: u64,
}

/// Makes room for one more entry in `map` (bounded by `kept`): drops the least recently
/// seen; returns how many it dropped.
fn make_room<V>(map: &mut HashMap<String, V>, kept: usize, seen: impl Fn(&V) -> i64) -> u64 {
    let mut evicted = 0;
    while map.len() >= kept.max(1) {
        let Some(oldest) = map.iter().min_by_key(|(_, v)| seen(v)).map(|(k, _)| k.clone()) else { break };
        map.remove(&oldest);
        evicted += 1;
    }
    evicted
}

/// Adds a call to `bindings`; `true` when the binding is new.
fn bind(bindings: &mut Vec<UpstreamBinding>, new: UpstreamBinding) -> bool {
    if let Some(pos) =
        bindings.iter().position(|b| b.server == new.server && b.upstream_session == new.upstream_session)
    {
        let mut b = bindings.remove(pos);
        b.calls += 1;
        b.last_ms = new.last_ms;
        b.capabilities = new.capabilities;
        bindings.push(b);
        return false;
    }
    if bindings.len() >= BINDINGS_KEPT {
        bindings.remove(0);
    }
    bindings.push(new);
    true
}

/// The table (see the module docs). Cheap to clone; clones share it.
#[derive(Debug, Clone, Default)]
pub struct SessionTable {
    tables: Arc<Mutex<Tables>>,
    config: SessionsConfig,
    events: Arc<OnceLock<EventBus>>,
}

/// What an `Event::Session` says.
struct Note<'a> {
    action: &'static str,
    kind: &'static str,
    id: &'a str,
    client: Option<String>,
    transport: &'a str,
    server: Option<&'a str>,
    upstream_session: Option<&'a str>,
}

impl SessionTable {
    /// An empty table with the given bounds.
    pub fn new(config: SessionsConfig) -> SessionTable {
        SessionTable { config, ..SessionTable::default() }
    }

    /// Publishes openings, endings and bindings on `bus` from now on (once; later calls are
    /// ignored).
    pub fn publish_on(&self, bus: EventBus) {
        let _ = self.events.set(bus);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, note: Note<'_>) {
        let Some(bus) = self.events.get() else { return };
        bus.publish_with(|| Event::Session {
            action: note.action.to_owned(),
            kind: note.kind.to_owned(),
            id: note.id.to_owned(),
            client: note.client,
            transport: note.transport.to_owned(),
            server: note.server.map(str::to_owned),
            upstream_session: note.upstream_session.map(str::to_owned),
            at_ms: switchboard_router::events::now_ms(),
        });
    }

    /// A message of the 2025-11-25 session `sid` (created at `created_ms` with `version`,
    /// `capabilities` and `client_info`) came in on `transport` from `peer`; `request` says
    /// whether it is a request. Opens the entry when the table does not hold it (a new
    /// session, or one it forgot), and says so on the bus.
    #[allow(clippy::too_many_arguments)]
    pub fn session_seen(
        &self,
        sid: &str,
        version: &str,
        capabilities: &Value,
        client_info: &Value,
        created_ms: i64,
        transport: &str,
        peer: Option<&str>,
        request: bool,
    ) {
        let tag = session_tag(sid);
        let now = switchboard_router::events::now_ms();
        let opened = {
            let mut t = self.lock();
            if let Some(s) = t.sessions.get_mut(&tag) {
                s.last_seen_ms = now;
                s.requests += u64::from(request);
                false
            } else {
                t.sessions_evicted +=
                    make_room(&mut t.sessions, self.config.sessions_kept, |s| s.last_seen_ms);
                t.sessions.insert(
                    tag.clone(),
                    SessionView {
                        tag: tag.clone(),
                        protocol_version: version.to_owned(),
                        client_info: client_info.clone(),
                        capabilities: capabilities.clone(),
                        transport: transport.to_owned(),
                        peer: peer.map(str::to_owned),
                        created_ms,
                        last_seen_ms: now,
                        requests: u64::from(request),
                        ended: false,
                        ended_ms: None,
                        bindings: Vec::new(),
                    },
                );
                true
            }
        };
        if opened {
            let client = client_label(client_info);
            self.publish(Note {
                action: "opened",
                kind: "session",
                id: &tag,
                client,
                transport,
                server: None,
                upstream_session: None,
            });
        }
    }

    /// The session `sid` ended on this instance.
    pub fn session_ended(&self, sid: &str) {
        let tag = session_tag(sid);
        let now = switchboard_router::events::now_ms();
        let ended = {
            let mut t = self.lock();
            t.sessions.get_mut(&tag).filter(|s| !s.ended).map(|s| {
                s.ended = true;
                s.ended_ms = Some(now);
                s.last_seen_ms = now;
                (client_label(&s.client_info), s.transport.clone())
            })
        };
        if let Some((client, transport)) = ended {
            self.publish(Note {
                action: "ended",
                kind: "session",
                id: &tag,
                client,
                transport: &transport,
                server: None,
                upstream_session: None,
            });
        }
    }

    /// A 2026-07-28 request came in; returns the caller's key.
    pub fn caller_seen(
        &self,
        client_info: Option<&Value>,
        protocol_version: Option<&str>,
        capabilities: &Value,
        transport: &str,
        peer: Option<&str>,
    ) -> String {
        let key = caller_key(client_info, transport, peer);
        let now = switchboard_router::events::now_ms();
        let mut t = self.lock();
        if let Some(c) = t.callers.get_mut(&key) {
            c.last_seen_ms = now;
            c.requests += 1;
            c.protocol_version = protocol_version.map(str::to_owned);
            if c.capabilities != *capabilities {
                c.capabilities = capabilities.clone();
            }
            return key;
        }
        t.callers_evicted += make_room(&mut t.callers, self.config.callers_kept, |c| c.last_seen_ms);
        t.callers.insert(
            key.clone(),
            CallerView {
                key: key.clone(),
                name: info_str(client_info, "name"),
                version: info_str(client_info, "version"),
                protocol_version: protocol_version.map(str::to_owned),
                transport: transport.to_owned(),
                peer: peer_host(peer),
                capabilities: capabilities.clone(),
                first_seen_ms: now,
                last_seen_ms: now,
                requests: 1,
                bindings: Vec::new(),
            },
        );
        key
    }

    /// A call of `who` was routed to `server` over the upstream session `upstream_session`
    /// (its full id; only its tag is kept), opened for `capabilities`, on `upstream_transport`.
    pub fn bound(
        &self,
        who: &Downstream,
        server: &str,
        upstream_session: Option<&str>,
        capabilities: &Value,
        upstream_transport: &str,
    ) {
        let now = switchboard_router::events::now_ms();
        let upstream = upstream_session.map(upstream_tag);
        let binding = UpstreamBinding {
            server: server.to_owned(),
            upstream_session: upstream.clone(),
            capabilities: capability_set(capabilities),
            upstream_transport: upstream_transport.to_owned(),
            calls: 1,
            first_ms: now,
            last_ms: now,
        };
        let new = {
            let mut t = self.lock();
            match who {
                Downstream::Session(tag) => t.sessions.get_mut(tag).and_then(|s| {
                    bind(&mut s.bindings, binding)
                        .then(|| ("session", tag.clone(), client_label(&s.client_info), s.transport.clone()))
                }),
                Downstream::Caller(key) => t.callers.get_mut(key).and_then(|c| {
                    let client =
                        c.name.clone().map(|n| format!("{n} {}", c.version.as_deref().unwrap_or("?")));
                    bind(&mut c.bindings, binding)
                        .then(|| ("caller", key.clone(), client, c.transport.clone()))
                }),
            }
        };
        if let Some((kind, id, client, transport)) = new {
            self.publish(Note {
                action: "bound",
                kind,
                id: &id,
                client,
                transport: &transport,
                server: Some(server),
                upstream_session: upstream.as_deref(),
            });
        }
    }

    /// The table now: sessions and callers most recently seen first.
    pub fn view(&self) -> SessionsView {
        let t = self.lock();
        let mut sessions: Vec<SessionView> = t.sessions.values().cloned().collect();
        sessions.sort_by(|a, b| b.last_seen_ms.cmp(&a.last_seen_ms).then_with(|| a.tag.cmp(&b.tag)));
        let mut callers: Vec<CallerView> = t.callers.values().cloned().collect();
        callers.sort_by(|a, b| b.last_seen_ms.cmp(&a.last_seen_ms).then_with(|| a.key.cmp(&b.key)));
        SessionsView {
            sessions,
            callers,
            sessions_kept: self.config.sessions_kept,
            callers_kept: self.config.callers_kept,
            sessions_evicted: t.sessions_evicted,
            callers_evicted: t.callers_evicted,
            scheduling: None,
            scheduling_note: SCHEDULING_NOTE.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn open(t: &SessionTable, sid: &str) {
        t.session_seen(
            sid,
            "2025-11-25",
            &json!({}),
            &json!({"name": "c", "version": "1"}),
            0,
            "http",
            None,
            true,
        );
    }

    #[test]
    fn tags_are_short_stable_and_not_the_id() {
        let sid = "eyJ2IjoiMjAyNS0xMS0yNSJ9.c2VjcmV0LXRhZw";
        assert_eq!(session_tag(sid), session_tag(sid));
        assert_eq!(session_tag(sid).len(), 14);
        assert!(!sid.contains(&session_tag(sid)[2..]));
        assert_ne!(session_tag(sid), session_tag("other"));
        // The panel matches a session to its routing decisions by these digits.
        let key = switchboard_router::schedule::fingerprint(sid);
        assert_eq!(session_tag(sid)[2..], key[2..], "tag s-… and key fingerprint k:… share their digits");
    }

    #[test]
    fn the_bounds_hold_and_evictions_are_counted() {
        let t = SessionTable::new(SessionsConfig { sessions_kept: 3, callers_kept: 2 });
        for i in 0..10 {
            open(&t, &format!("sid-{i}"));
        }
        let v = t.view();
        assert_eq!((v.sessions.len(), v.sessions_evicted), (3, 7));
        for i in 0..5 {
            t.caller_seen(
                Some(&json!({"name": format!("c{i}"), "version": "1"})),
                None,
                &json!({}),
                "http",
                None,
            );
        }
        let v = t.view();
        assert_eq!((v.callers.len(), v.callers_evicted), (2, 3));
        assert!(v.scheduling.is_none() && v.scheduling_note.contains("/api/decisions"));
        let who = Downstream::session("sid-9");
        for i in 0..(BINDINGS_KEPT + 4) {
            t.bound(&who, &format!("server{i}"), Some("upstream-id"), &json!({"roots": {}}), "http");
        }
        let s = t.view().sessions.into_iter().find(|s| s.tag == session_tag("sid-9")).expect("kept");
        assert_eq!(s.bindings.len(), BINDINGS_KEPT);
        assert_eq!(s.bindings[0].upstream_session.as_deref(), Some(upstream_tag("upstream-id").as_str()));
        assert_eq!(s.bindings[0].capabilities, ["roots"]);
    }

    #[test]
    fn a_caller_is_one_entry_across_connections_and_a_session_ends_once() {
        let t = SessionTable::default();
        let info = json!({"name": "sdk", "version": "2"});
        let a = t.caller_seen(Some(&info), Some("2026-07-28"), &json!({}), "http", Some("127.0.0.1:5000"));
        let b = t.caller_seen(Some(&info), Some("2026-07-28"), &json!({}), "http", Some("127.0.0.1:5001"));
        assert_eq!(a, b);
        assert_eq!(a, "sdk@2 http 127.0.0.1");
        assert_eq!(t.view().callers[0].requests, 2);
        open(&t, "sid");
        t.session_ended("sid");
        t.session_ended("sid");
        let s = &t.view().sessions[0];
        assert!(s.ended && s.ended_ms.is_some());
    }

    #[test]
    fn typescript_bindings_are_generated_from_the_rust_types() {
        let text = typescript::render();
        assert!(text.contains("export type SessionsView ="), "{text}");
        assert!(!text.contains("bigint"));
        switchboard_router::events::typescript::check_or_update(
            env!("CARGO_MANIFEST_DIR"),
            typescript::PATH,
            &text,
            "UPDATE_BINDINGS=1 cargo test -p switchboard-gateway --lib typescript",
        );
    }
}

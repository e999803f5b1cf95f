//! Replica groups: upstreams that are instances of one server, behind one set of catalog
//! entries.
//!
//! A group is declared (`group = "…"` on each server in the config, or at registration) or
//! detected: servers whose `serverInfo` (name and version), protocol version and whole tool set
//! (names, input and output schemas) are identical are replicas. Different servers that merely share a tool name are not
//! replicas — that is a collision, and the federation's prefix rules apply. A server in no group
//! is a group of its own, so every name routes through the same scheduler.
//!
//! A detected replica that goes down keeps its place in the group (the scheduler remembers the
//! signature it had when it was ready), so the decision lists it as rejected instead of it
//! vanishing from the candidates.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::catalog::Catalog;
use crate::config::canonical_json;
use crate::load::Load;
use crate::state::ServerState;

/// How a group came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Formed {
    /// A server of its own.
    Single,
    /// `group = "…"` in the config or at registration.
    Declared,
    /// Identical `serverInfo.name` and tool set.
    Detected,
}

/// One upstream of a group, as the scheduler sees it.
#[derive(Debug, Clone)]
pub struct Member {
    /// The server's name.
    pub server: String,
    /// Its state.
    pub state: ServerState,
    /// Why it is in that state (caller-safe).
    pub reason: String,
    /// Its domain labels.
    pub labels: Vec<String>,
    /// Its last catalog (what it offered when it last was ready).
    pub catalog: Arc<Catalog>,
    /// Its live load (shared with the calls in flight; not a snapshot).
    pub load: Arc<Load>,
}

impl Member {
    /// Ready and not draining.
    pub fn routable(&self) -> bool {
        self.state == ServerState::Ready && !self.load.draining()
    }
}

/// A replica group.
#[derive(Debug, Clone)]
pub struct Group {
    /// Its name: the declared one, `serverInfo.name` for a detected one, the server's own name
    /// for a server of its own.
    pub name: String,
    /// How it was formed.
    pub formed: Formed,
    /// Its members, by name.
    pub members: Vec<Member>,
}

impl Group {
    /// The catalog the group is listed with: its first routable member's, else its first
    /// member's.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.members
            .iter()
            .find(|m| m.routable())
            .or_else(|| self.members.first())
            .map(|m| m.catalog.clone())
            .unwrap_or_default()
    }

    /// Whether any member can take calls.
    pub fn routable(&self) -> bool {
        self.members.iter().any(Member::routable)
    }
}

/// What replica detection compares: `serverInfo` (name and version), the protocol version the
/// router speaks with it (instances of one deployment speak the same revision; a 2025-11-25 and a
/// 2026-07-28 endpoint of one program are two servers to a client) and the tool set.
pub fn signature(
    server_info: &Value,
    protocol: Option<&str>,
    catalog: &Catalog,
) -> Option<(String, [u8; 16])> {
    let name = server_info.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())?;
    if catalog.tools.is_empty() {
        return None;
    }
    let mut tools: Vec<(&str, String)> = catalog
        .tools
        .iter()
        .map(|t| {
            let schemas = serde_json::json!([t.raw.get("inputSchema"), t.raw.get("outputSchema")]);
            (t.name.as_str(), canonical_json(&schemas))
        })
        .collect();
    tools.sort();
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(server_info.get("version").and_then(Value::as_str).unwrap_or_default().as_bytes());
    h.update([0]);
    h.update(protocol.unwrap_or_default().as_bytes());
    for (n, s) in tools {
        h.update([0]);
        h.update(n.as_bytes());
        h.update([0]);
        h.update(s.as_bytes());
    }
    let mut sig = [0u8; 16];
    sig.copy_from_slice(&h.finalize()[..16]);
    Some((name.to_owned(), sig))
}

/// One server, as group formation needs it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The member it becomes.
    pub member: Member,
    /// Its declared group.
    pub declared: Option<String>,
    /// Its detection signature (now, or when it was last ready).
    pub signature: Option<(String, [u8; 16])>,
}

/// Forms the groups of `servers` (sorted by name). `detect` turns detection on.
pub fn form(servers: Vec<Seen>, detect: bool) -> Vec<Group> {
    let names: std::collections::HashSet<String> = servers.iter().map(|s| s.member.server.clone()).collect();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut by_sig: HashMap<[u8; 16], Vec<Seen>> = HashMap::new();
    let mut singles = Vec::new();
    for s in servers {
        if let Some(g) = s.declared.clone() {
            groups
                .entry(g.clone())
                .or_insert_with(|| Group { name: g, formed: Formed::Declared, members: Vec::new() })
                .members
                .push(s.member);
        } else if let (true, Some((_, sig))) = (detect, &s.signature) {
            by_sig.entry(*sig).or_default().push(s);
        } else {
            singles.push(s);
        }
    }
    for (_, seen) in by_sig {
        if seen.len() < 2 {
            singles.extend(seen);
            continue;
        }
        let info = seen[0].signature.as_ref().map(|(n, _)| n.clone()).unwrap_or_default();
        let mut name = group_name(&info);
        // Never shadow a server of another name, nor a declared group.
        if (names.contains(&name) && !seen.iter().any(|s| s.member.server == name))
            || groups.contains_key(&name)
        {
            name = seen.iter().map(|s| s.member.server.clone()).min().unwrap_or(name);
        }
        let mut members: Vec<Member> = seen.into_iter().map(|s| s.member).collect();
        members.sort_by(|a, b| a.server.cmp(&b.server));
        groups.insert(name.clone(), Group { name, formed: Formed::Detected, members });
    }
    for s in singles {
        let name = s.member.server.clone();
        match groups.get_mut(&name) {
            // A server named like a group joins it only when it declared it; else it keeps
            // its own name under a suffix (never silently merged).
            Some(_) => {
                let alt = format!("{name}.solo");
                groups.insert(
                    alt.clone(),
                    Group { name: alt, formed: Formed::Single, members: vec![s.member] },
                );
            }
            None => {
                groups.insert(name.clone(), Group { name, formed: Formed::Single, members: vec![s.member] });
            }
        }
    }
    groups.into_values().collect()
}

/// A group name from a `serverInfo.name`: the characters server names allow, the rest `-`.
fn group_name(info: &str) -> String {
    let mut n: String = info
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .take(64)
        .collect();
    if n.is_empty() {
        n.push_str("replicas");
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::compile_tools;
    use serde_json::json;

    fn catalog(tools: &[(&str, Value)]) -> Arc<Catalog> {
        let raw: Vec<Value> = tools.iter().map(|(n, s)| json!({"name": n, "inputSchema": s})).collect();
        let (tools, quarantined) = compile_tools(&raw);
        Arc::new(Catalog { tools, quarantined, ..Catalog::default() })
    }

    fn seen(server: &str, info: &str, cat: Arc<Catalog>, declared: Option<&str>) -> Seen {
        Seen {
            signature: signature(&json!({"name": info, "version": "1"}), Some("2026-07-28"), &cat),
            member: Member {
                server: server.into(),
                state: ServerState::Ready,
                reason: String::new(),
                labels: vec![],
                catalog: cat,
                load: Arc::default(),
            },
            declared: declared.map(str::to_owned),
        }
    }

    #[test]
    fn identical_servers_are_replicas_and_a_shared_tool_name_is_not() {
        let obj = json!({"type": "object"});
        let a = catalog(&[("read", obj.clone()), ("put", obj.clone())]);
        let other = catalog(&[("read", json!({"type": "object", "properties": {"k": {"type": "string"}}}))]);
        let groups = form(
            vec![
                seen("c1", "chaos", a.clone(), None),
                seen("c2", "chaos", a.clone(), None),
                seen("c3", "chaos", a.clone(), None),
                seen("lookalike", "chaos", other, None),
                seen("different", "other-server", a.clone(), None),
            ],
            true,
        );
        let view: Vec<(String, Formed, Vec<String>)> = groups
            .iter()
            .map(|g| (g.name.clone(), g.formed, g.members.iter().map(|m| m.server.clone()).collect()))
            .collect();
        assert!(
            view.contains(&("chaos".into(), Formed::Detected, vec!["c1".into(), "c2".into(), "c3".into()])),
            "{view:?}"
        );
        assert!(view.contains(&("lookalike".into(), Formed::Single, vec!["lookalike".into()])), "{view:?}");
        assert!(view.contains(&("different".into(), Formed::Single, vec!["different".into()])), "{view:?}");
        let off = form(vec![seen("c1", "chaos", a.clone(), None), seen("c2", "chaos", a, None)], false);
        assert_eq!(off.len(), 2, "detection off: two servers of their own");
    }

    #[test]
    fn declared_groups_win_and_never_shadow_a_server() {
        let obj = json!({"type": "object"});
        let a = catalog(&[("read", obj.clone())]);
        let b = catalog(&[("other", obj)]);
        let groups = form(
            vec![
                seen("x1", "x", a.clone(), Some("pool")),
                seen("x2", "y", b, Some("pool")),
                seen("pool", "z", a, None),
            ],
            true,
        );
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["pool", "pool.solo"]);
        assert_eq!(groups[0].members.len(), 2);
        assert_eq!(groups[0].formed, Formed::Declared);
    }
}

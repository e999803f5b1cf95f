//! The one routing seam: which upstream serves a tool, a prompt, a resource or a capability.
//!
//! Every place that sends a call somewhere asks [`RouteTable::route`]: the gateway's endpoint
//! and edge (and so its traces), and the flow engine's invoker. The scheduler (replica groups,
//! load scores, session affinity) lives behind this function, which is why it already takes an
//! affinity key; a key that is an empty string is no key.
//!
//! A table is a snapshot of the registry at one [`Registry::version`]: the ready servers'
//! catalogs federated under the configured prefix mode and separator, plus what the servers
//! that are not ready offered when they last were, so a call to one of their tools is told
//! which server is down and why instead of "unknown tool". [`RouteCache`] rebuilds it only
//! when the registry changed.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

use crate::catalog::Catalog;
use crate::federation::{Exposed, Federation, FederationConfig, federate};
use crate::registry::{Registry, ServerState};

/// What a call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// A tool by its exposed name, or `server<sep>tool` whatever the prefix mode.
    Tool(&'a str),
    /// A prompt, named like a tool.
    Prompt(&'a str),
    /// A resource by URI (listed, or matching a resource template).
    Resource(&'a str),
    /// A server with a capability label, optionally the one tool of it to call.
    Capability {
        /// The label servers declare in their configuration.
        label: &'a str,
        /// The tool's name on the server; `None` when the server has exactly one tool.
        tool: Option<&'a str>,
    },
}

/// Where a call goes, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The upstream server.
    pub server: String,
    /// The tool or prompt name on that server, or the resource URI.
    pub upstream_name: String,
    /// The name clients see (`server<sep>tool` for capability routes).
    pub exposed_name: String,
    /// One line saying why this server was chosen.
    pub reason: String,
}

/// Why a call has nowhere to go. Messages are for callers: they name servers and states, and
/// never carry a server's stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// No server, ready or not, offers the name.
    #[error("unknown {what} {name:?}")]
    Unknown {
        /// `tool`, `prompt` or `resource`.
        what: &'static str,
        /// The name or URI asked for.
        name: String,
    },
    /// The server that offers the name is not ready.
    #[error("{what} {name:?} is offered by server {server:?}, which is {state}: {reason}")]
    Unavailable {
        /// `tool`, `prompt` or `resource`.
        what: &'static str,
        /// The name or URI asked for.
        name: String,
        /// The server.
        server: String,
        /// Its state (`pending`, `degraded`, `unavailable`, `disabled`).
        state: String,
        /// Why (caller-safe).
        reason: String,
    },
    /// The tool exists but its schema was refused.
    #[error("tool {name:?} of server {server:?} is quarantined: {error}")]
    Quarantined {
        /// The tool.
        name: String,
        /// Its server.
        server: String,
        /// What is wrong with its schema.
        error: String,
    },
    /// No server has the capability label, or none that is ready offers the tool.
    #[error("no ready server with capability {label:?} offers {wanted}{why}")]
    NoCapability {
        /// The label.
        label: String,
        /// `a tool` or `tool "x"`.
        wanted: String,
        /// The servers that have the label and why they did not qualify, in parentheses.
        why: String,
    },
    /// Several tools match a capability and nothing chooses between them.
    #[error("capability {label:?} is ambiguous: {}", candidates.join(", "))]
    Ambiguous {
        /// The label.
        label: String,
        /// The candidates' exposed names.
        candidates: Vec<String>,
    },
}

/// A server that is not ready, with what it offered when it last was.
#[derive(Debug, Clone)]
struct Down {
    state: ServerState,
    reason: String,
    catalog: Arc<Catalog>,
}

/// A snapshot of where every name goes.
#[derive(Debug, Clone)]
pub struct RouteTable {
    version: u64,
    config: FederationConfig,
    /// The ready servers' catalogs, by name.
    pub catalogs: BTreeMap<String, Arc<Catalog>>,
    /// Their federation.
    pub federation: Federation,
    labels: BTreeMap<String, Vec<String>>,
    down: BTreeMap<String, Down>,
}

impl RouteTable {
    /// The table of `registry` now.
    pub fn build(registry: &Registry, config: &FederationConfig) -> Self {
        let version = registry.version();
        let mut catalogs = BTreeMap::new();
        let mut labels = BTreeMap::new();
        let mut down = BTreeMap::new();
        for view in registry.servers() {
            let Some(entry) = registry.entry(&view.name) else { continue };
            labels.insert(view.name.clone(), view.labels);
            if view.state == ServerState::Ready {
                catalogs.insert(view.name, entry.catalog());
            } else {
                down.insert(
                    view.name,
                    Down { state: view.state, reason: view.reason, catalog: entry.catalog() },
                );
            }
        }
        let federation = federate(&catalogs, config);
        RouteTable { version, config: config.clone(), catalogs, federation, labels, down }
    }

    /// The registry version this table was built from.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The federation settings this table was built with.
    pub fn config(&self) -> &FederationConfig {
        &self.config
    }

    /// Where a call to `target` goes. `affinity` is the caller's affinity key (a 2025-11-25
    /// session or a 2026-07-28 caller's key); `None` or `Some("")` means none.
    pub fn route(&self, target: Target<'_>, affinity: Option<&str>) -> Result<Route, RouteError> {
        let _affinity = affinity.filter(|k| !k.is_empty());
        match target {
            Target::Tool(name) => self.named("tool", name, true),
            Target::Prompt(name) => self.named("prompt", name, false),
            Target::Resource(uri) => self.resource(uri),
            Target::Capability { label, tool } => self.capability(label, tool),
        }
    }

    fn exposed(&self, name: &str, tools: bool) -> Option<&Exposed> {
        if tools { self.federation.tool(name) } else { self.federation.prompt(name) }
    }

    fn named(&self, what: &'static str, name: &str, tools: bool) -> Result<Route, RouteError> {
        if let Some(e) = self.exposed(name, tools) {
            return Ok(Route {
                server: e.server.clone(),
                upstream_name: e.upstream_name.clone(),
                exposed_name: e.name.clone(),
                reason: format!("the only server offering {what} {name:?}"),
            });
        }
        // `server<sep>name` always names that server's item, whatever the prefix mode.
        let sep = self.config.separator.as_str();
        let qualified = (!sep.is_empty()).then(|| name.split_once(sep)).flatten();
        if let Some((server, item)) = qualified {
            if let Some(catalog) = self.catalogs.get(server) {
                if offers(catalog, item, tools) {
                    return Ok(Route {
                        server: server.to_owned(),
                        upstream_name: item.to_owned(),
                        exposed_name: name.to_owned(),
                        reason: format!("named with its server's prefix {server:?}"),
                    });
                }
                if tools && let Some(q) = catalog.quarantined.iter().find(|q| q.name == item) {
                    return Err(RouteError::Quarantined {
                        name: name.to_owned(),
                        server: server.to_owned(),
                        error: q.error.clone(),
                    });
                }
            }
            if let Some(d) = self.down.get(server) {
                return Err(self.unavailable(what, name, server, d));
            }
        }
        if tools {
            for (server, catalog) in &self.catalogs {
                if let Some(q) = catalog.quarantined.iter().find(|q| q.name == name) {
                    return Err(RouteError::Quarantined {
                        name: name.to_owned(),
                        server: server.clone(),
                        error: q.error.clone(),
                    });
                }
            }
        }
        // A server that is down and offered the name when it was up.
        for (server, d) in &self.down {
            if offers(&d.catalog, name, tools) {
                return Err(self.unavailable(what, name, server, d));
            }
        }
        Err(RouteError::Unknown { what, name: name.to_owned() })
    }

    fn unavailable(&self, what: &'static str, name: &str, server: &str, d: &Down) -> RouteError {
        RouteError::Unavailable {
            what,
            name: name.to_owned(),
            server: server.to_owned(),
            state: d.state.as_str().to_owned(),
            reason: d.reason.clone(),
        }
    }

    fn resource(&self, uri: &str) -> Result<Route, RouteError> {
        let route = |server: &str, reason: String| Route {
            server: server.to_owned(),
            upstream_name: uri.to_owned(),
            exposed_name: uri.to_owned(),
            reason,
        };
        if let Some((s, _)) = self.catalogs.iter().find(|(_, c)| lists_resource(c, uri)) {
            return Ok(route(s, format!("{s:?} lists {uri:?}")));
        }
        if let Some((s, _)) = self.catalogs.iter().find(|(_, c)| template_for(c, uri).is_some()) {
            return Ok(route(s, format!("a resource template of {s:?} matches {uri:?}")));
        }
        for (server, d) in &self.down {
            if lists_resource(&d.catalog, uri) || template_for(&d.catalog, uri).is_some() {
                return Err(self.unavailable("resource", uri, server, d));
            }
        }
        Err(RouteError::Unknown { what: "resource", name: uri.to_owned() })
    }

    fn capability(&self, label: &str, tool: Option<&str>) -> Result<Route, RouteError> {
        let sep = &self.config.separator;
        let mut candidates = Vec::new();
        let mut why = Vec::new();
        for (server, labels) in &self.labels {
            if !labels.iter().any(|l| l == label) {
                continue;
            }
            let Some(catalog) = self.catalogs.get(server) else {
                if let Some(d) = self.down.get(server) {
                    why.push(format!("{server} is {} ({})", d.state.as_str(), d.reason));
                }
                continue;
            };
            for t in &catalog.tools {
                if tool.is_none_or(|want| want == t.name) {
                    candidates.push((server.clone(), t.name.clone()));
                }
            }
        }
        match candidates.as_slice() {
            [(server, name)] => Ok(Route {
                server: server.clone(),
                upstream_name: name.clone(),
                exposed_name: format!("{server}{sep}{name}"),
                reason: format!("the only ready server with capability {label:?}"),
            }),
            [] => Err(RouteError::NoCapability {
                label: label.to_owned(),
                wanted: tool.map_or("a tool".to_owned(), |t| format!("tool {t:?}")),
                why: if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) },
            }),
            many => Err(RouteError::Ambiguous {
                label: label.to_owned(),
                candidates: many.iter().map(|(s, t)| format!("{s}{sep}{t}")).collect(),
            }),
        }
    }
}

fn offers(catalog: &Catalog, name: &str, tools: bool) -> bool {
    if tools {
        catalog.tool(name).is_some()
    } else {
        catalog.prompts.iter().any(|p| p.get("name").and_then(Value::as_str) == Some(name))
    }
}

fn lists_resource(catalog: &Catalog, uri: &str) -> bool {
    catalog.resources.iter().any(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
}

fn template_for<'c>(catalog: &'c Catalog, uri: &str) -> Option<&'c str> {
    catalog
        .resource_templates
        .iter()
        .filter_map(|t| t.get("uriTemplate").and_then(Value::as_str))
        .find(|t| *t == uri || template_matches(t, uri))
}

/// Whether `uri` matches the RFC 6570 template `tpl` (simple and reserved expansions:
/// `{x}` matches a run without `/`, `{+x}`, `{/x}`, `{#x}` and friends any run).
pub fn template_matches(tpl: &str, uri: &str) -> bool {
    fn go(t: &[u8], u: &[u8]) -> bool {
        match t.first() {
            None => u.is_empty(),
            Some(b'{') => {
                let Some(close) = t.iter().position(|c| *c == b'}') else { return t == u };
                let expr = &t[1..close];
                let rest = &t[close + 1..];
                let any = matches!(expr.first(), Some(b'+' | b'#' | b'/' | b'.' | b';' | b'?' | b'&'));
                for take in 0..=u.len() {
                    let part = &u[..take];
                    if !any && part.contains(&b'/') {
                        break;
                    }
                    if go(rest, &u[take..]) {
                        return true;
                    }
                }
                false
            }
            Some(c) => u.first() == Some(c) && go(&t[1..], &u[1..]),
        }
    }
    go(tpl.as_bytes(), uri.as_bytes())
}

/// The current [`RouteTable`] of one registry, rebuilt only when the registry changed.
#[derive(Debug, Clone, Default)]
pub struct RouteCache(Arc<RwLock<Option<Arc<RouteTable>>>>);

impl RouteCache {
    /// The table of `registry` now under `config`.
    pub fn get(&self, registry: &Registry, config: &FederationConfig) -> Arc<RouteTable> {
        let version = registry.version();
        if let Some(t) = self.0.read().unwrap_or_else(PoisonError::into_inner).as_ref()
            && t.version == version
            && &t.config == config
        {
            return t.clone();
        }
        let table = Arc::new(RouteTable::build(registry, config));
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(table.clone());
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::PrefixMode;
    use crate::schema::{Quarantined, compile_tools};
    use serde_json::json;

    fn catalog(tools: &[&str]) -> Arc<Catalog> {
        let raw: Vec<Value> =
            tools.iter().map(|t| json!({"name": t, "inputSchema": {"type": "object"}})).collect();
        let (tools, quarantined) = compile_tools(&raw);
        Arc::new(Catalog {
            tools,
            quarantined,
            prompts: vec![json!({"name": "greet"})],
            resources: vec![json!({"uri": "file:///a.txt"})],
            resource_templates: vec![json!({"uriTemplate": "db://{table}/rows"})],
            ..Catalog::default()
        })
    }

    fn table(mode: PrefixMode) -> RouteTable {
        let config = FederationConfig { mode, separator: "__".into() };
        let mut catalogs = BTreeMap::new();
        catalogs.insert("alpha".to_owned(), catalog(&["echo", "add"]));
        catalogs.insert("beta".to_owned(), catalog(&["echo", "mul"]));
        let mut broken = (*catalog(&["scan"])).clone();
        broken.quarantined.push(Quarantined { name: "bad".into(), error: "inputSchema: oops".into() });
        catalogs.insert("gamma".to_owned(), Arc::new(broken));
        let federation = federate(&catalogs, &config);
        let mut down = BTreeMap::new();
        down.insert(
            "delta".to_owned(),
            Down {
                state: ServerState::Degraded,
                reason: "process exited (status 1)".into(),
                catalog: catalog(&["divide"]),
            },
        );
        let labels = [
            ("alpha".to_owned(), vec!["math".to_owned()]),
            ("beta".to_owned(), vec!["math".to_owned()]),
            ("gamma".to_owned(), vec!["vision".to_owned()]),
            ("delta".to_owned(), vec!["math".to_owned()]),
        ]
        .into();
        RouteTable { version: 1, config, catalogs, federation, labels, down }
    }

    #[test]
    fn routes_exposed_and_qualified_names_under_every_prefix_mode() {
        for mode in [PrefixMode::Always, PrefixMode::OnCollision, PrefixMode::Never] {
            let t = table(mode);
            let r = t.route(Target::Tool("alpha__add"), None).expect("qualified name routes");
            assert_eq!((r.server.as_str(), r.upstream_name.as_str()), ("alpha", "add"), "{mode:?}");
            let r = t.route(Target::Tool("beta__echo"), Some("")).expect("qualified name routes");
            assert_eq!(r.server, "beta");
        }
        let t = table(PrefixMode::OnCollision);
        assert_eq!(t.route(Target::Tool("mul"), None).expect("mul").server, "beta");
        assert!(matches!(t.route(Target::Tool("echo"), None), Err(RouteError::Unknown { .. })));
    }

    #[test]
    fn a_tool_of_a_server_that_is_down_names_the_server_and_why() {
        let t = table(PrefixMode::OnCollision);
        let err = t.route(Target::Tool("divide"), None).expect_err("delta is down");
        assert_eq!(
            err.to_string(),
            "tool \"divide\" is offered by server \"delta\", which is degraded: process exited (status 1)"
        );
        let err = t.route(Target::Tool("delta__divide"), None).expect_err("delta is down");
        assert!(matches!(err, RouteError::Unavailable { ref server, .. } if server == "delta"));
        let err = t.route(Target::Tool("bad"), None).expect_err("quarantined");
        assert!(err.to_string().contains("quarantined: inputSchema: oops"), "{err}");
        assert_eq!(
            t.route(Target::Tool("nope"), None).expect_err("unknown").to_string(),
            "unknown tool \"nope\""
        );
    }

    #[test]
    fn resources_by_listing_then_template() {
        let t = table(PrefixMode::OnCollision);
        assert_eq!(t.route(Target::Resource("file:///a.txt"), None).expect("listed").server, "alpha");
        let r = t.route(Target::Resource("db://users/rows"), None).expect("template");
        assert!(r.reason.contains("template"), "{}", r.reason);
        assert!(matches!(
            t.route(Target::Resource("db://a/b/rows"), None),
            Err(RouteError::Unknown { what: "resource", .. })
        ));
    }

    #[test]
    fn capabilities_name_the_tool_and_honour_the_separator() {
        let mut t = table(PrefixMode::OnCollision);
        let r = t.route(Target::Capability { label: "vision", tool: None }, None).expect("one tool");
        assert_eq!(r.exposed_name, "gamma__scan");
        let err = t.route(Target::Capability { label: "math", tool: Some("echo") }, None).expect_err("two");
        assert!(matches!(err, RouteError::Ambiguous { ref candidates, .. } if candidates.len() == 2));
        let err =
            t.route(Target::Capability { label: "math", tool: Some("divide") }, None).expect_err("down");
        assert!(err.to_string().contains("delta is degraded"), "{err}");
        t.config.separator = "::".into();
        let r = t.route(Target::Capability { label: "math", tool: Some("add") }, None).expect("add");
        assert_eq!(r.exposed_name, "alpha::add");
        assert_eq!(t.route(Target::Tool("alpha::add"), None).expect("qualified").upstream_name, "add");
    }

    #[test]
    fn templates_match_like_rfc6570_expansions() {
        assert!(template_matches("db://{table}/rows", "db://users/rows"));
        assert!(!template_matches("db://{table}/rows", "db://a/b/rows"));
        assert!(template_matches("file://{+path}", "file:///etc/hosts"));
    }
}

//! The one routing seam: which upstream serves a tool, a prompt, a resource or a capability.
//!
//! Every place that sends a call somewhere asks [`RouteTable::route`]: the gateway's endpoint
//! and edge (and so its traces), and the flow engine's invoker. The scheduler
//! ([`crate::schedule`]: replica groups, capability match, load scores, session affinity,
//! fallback) lives behind this function; a key that is an empty string is no key. Every route
//! carries the scheduler's [`Decision`].
//!
//! A table is a snapshot of the registry at one [`Registry::version`]: the ready servers'
//! catalogs federated under the configured prefix mode and separator, plus what the servers
//! that are not ready offered when they last were, so a call to one of their tools is told
//! which server is down and why instead of "unknown tool". [`RouteCache`] rebuilds it only
//! when the registry changed.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

use crate::catalog::Catalog;
use crate::federation::{Exposed, Federation, FederationConfig, federate};
use crate::registry::{Registry, ServerState};
use crate::schedule::groups::{self, Group, Member, Seen};
use crate::schedule::{Ask, Decision, Offers, Scheduler, SchedulerConfig};

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
    /// The replica group (or the server of its own) the name belongs to.
    pub group: String,
    /// The scheduler's full decision.
    pub decision: Arc<Decision>,
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
        /// The server (or the replica group).
        server: String,
        /// Its state (`pending`, `degraded`, `unavailable`, `disabled`, `draining`).
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
    /// The group offers the name, but the scheduler rejected every member (even after
    /// fallback): why, member by member.
    #[error("{why}")]
    NoCandidate {
        /// The replica group.
        group: String,
        /// The rejections, one per member.
        why: String,
        /// The recorded decision's id.
        decision: String,
    },
}

/// A server that is not routable, with what it offered when it last was.
#[derive(Debug, Clone)]
struct Down {
    state: String,
    reason: String,
    catalog: Arc<Catalog>,
}

/// A snapshot of where every name goes.
#[derive(Debug, Clone)]
pub struct RouteTable {
    version: u64,
    config: FederationConfig,
    /// The routable servers' catalogs, by server name.
    pub catalogs: BTreeMap<String, Arc<Catalog>>,
    /// The federation of the groups that can take calls (one entry per replica group).
    pub federation: Federation,
    /// Every replica group (a server of its own is a group of one), by name.
    pub groups: BTreeMap<String, Group>,
    down: BTreeMap<String, Down>,
    scheduler: Arc<Scheduler>,
}

/// What a member must offer: a tool, a prompt or a resource.
struct Item<'a> {
    what: &'static str,
    name: &'a str,
}

impl Offers for Item<'_> {
    fn missing(&self, m: &Member) -> Option<String> {
        let has = match self.what {
            "tool" => m.catalog.tool(self.name).is_some(),
            "prompt" => offers(&m.catalog, self.name, false),
            _ => lists_resource(&m.catalog, self.name) || template_for(&m.catalog, self.name).is_some(),
        };
        (!has).then(|| format!("does not offer {} {:?}", self.what, self.name))
    }
}

impl RouteTable {
    /// The table of `registry` now.
    pub fn build(registry: &Registry, config: &FederationConfig) -> Self {
        let version = registry.version();
        let scheduler = registry.scheduler().clone();
        let mut seen = Vec::new();
        for view in registry.servers() {
            let Some(entry) = registry.entry(&view.name) else { continue };
            let catalog = entry.catalog();
            let fresh = (view.state == ServerState::Ready)
                .then(|| groups::signature(&view.server_info, view.protocol_version.as_deref(), &catalog))
                .flatten();
            let signature = scheduler.remember_signature(&view.name, fresh);
            seen.push(Seen {
                member: Member {
                    server: view.name,
                    state: view.state,
                    reason: view.reason,
                    labels: view.labels,
                    catalog,
                    load: entry.load().clone(),
                },
                declared: entry.spec.group.clone(),
                signature,
            });
        }
        let names: HashSet<&str> = seen.iter().map(|s| s.member.server.as_str()).collect();
        scheduler.forget_signatures_except(&names);
        RouteTable::from_servers(version, config, seen, scheduler)
    }

    /// The table of the given servers (what [`RouteTable::build`] reads off the registry).
    pub fn from_servers(
        version: u64,
        config: &FederationConfig,
        servers: Vec<Seen>,
        scheduler: Arc<Scheduler>,
    ) -> Self {
        let mut catalogs = BTreeMap::new();
        let mut down = BTreeMap::new();
        for s in &servers {
            let m = &s.member;
            if m.routable() {
                catalogs.insert(m.server.clone(), m.catalog.clone());
            } else {
                let (state, reason) = if m.state == ServerState::Ready {
                    ("draining".to_owned(), "deregistered; finishing its calls in flight".to_owned())
                } else {
                    (m.state.as_str().to_owned(), m.reason.clone())
                };
                down.insert(m.server.clone(), Down { state, reason, catalog: m.catalog.clone() });
            }
        }
        let detect = scheduler.config().detect_replicas;
        let groups: BTreeMap<String, Group> =
            groups::form(servers, detect).into_iter().map(|g| (g.name.clone(), g)).collect();
        let listed: BTreeMap<String, Arc<Catalog>> =
            groups.values().filter(|g| g.routable()).map(|g| (g.name.clone(), g.catalog())).collect();
        let federation = federate(&listed, config);
        RouteTable { version, config: config.clone(), catalogs, federation, groups, down, scheduler }
    }

    /// A table of nothing, scheduling with default settings (for tests and tools).
    pub fn empty(config: &FederationConfig) -> Self {
        let scheduler = Arc::new(Scheduler::new(SchedulerConfig::default(), crate::EventBus::new(16)));
        RouteTable::from_servers(0, config, Vec::new(), scheduler)
    }

    /// The registry version this table was built from.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The federation settings this table was built with.
    pub fn config(&self) -> &FederationConfig {
        &self.config
    }

    /// The scheduler the table routes with.
    pub fn scheduler(&self) -> &Arc<Scheduler> {
        &self.scheduler
    }

    /// One catalog per group that can take calls (what the federated lists show: a group's
    /// replicas are listed once).
    pub fn listed_catalogs(&self) -> impl Iterator<Item = Arc<Catalog>> + '_ {
        self.groups.values().filter(|g| g.routable()).map(Group::catalog)
    }

    /// The group a server belongs to.
    pub fn group_of(&self, server: &str) -> Option<&Group> {
        self.groups.values().find(|g| g.members.iter().any(|m| m.server == server))
    }

    /// Where a call to `target` goes. `affinity` is the caller's affinity key (a 2025-11-25
    /// session or a 2026-07-28 caller's key); `None` or `Some("")` means none.
    pub fn route(&self, target: Target<'_>, affinity: Option<&str>) -> Result<Route, RouteError> {
        self.route_with(target, &Ask { key: affinity, ..Ask::default() })
    }

    /// [`RouteTable::route`] with everything a call can ask: its key and where it came from,
    /// capability labels, upstreams to leave out (a retry), the attempt number.
    pub fn route_with(&self, target: Target<'_>, ask: &Ask<'_>) -> Result<Route, RouteError> {
        match target {
            Target::Tool(name) => self.named("tool", name, true, ask),
            Target::Prompt(name) => self.named("prompt", name, false, ask),
            Target::Resource(uri) => self.resource(uri, ask),
            Target::Capability { label, tool } => self.capability(label, tool, ask),
        }
    }

    fn exposed(&self, name: &str, tools: bool) -> Option<&Exposed> {
        if tools { self.federation.tool(name) } else { self.federation.prompt(name) }
    }

    /// Schedules `item` in `group`.
    fn schedule(
        &self,
        group: &Group,
        item: Item<'_>,
        exposed_name: String,
        how: String,
        ask: &Ask<'_>,
    ) -> Result<Route, RouteError> {
        let target = format!("{} {:?}", item.what, exposed_name);
        match self.scheduler.choose(group, target, &item, ask) {
            Ok(d) => Ok(Route {
                server: d.chosen.clone().unwrap_or_default(),
                upstream_name: item.name.to_owned(),
                exposed_name,
                reason: if d.layer == crate::schedule::Layer::Only {
                    how
                } else {
                    format!("{how}; {}", d.reason)
                },
                group: group.name.clone(),
                decision: d,
            }),
            Err(d) => Err(RouteError::NoCandidate {
                group: group.name.clone(),
                why: d.reason.clone(),
                decision: d.id.clone(),
            }),
        }
    }

    fn named(&self, what: &'static str, name: &str, tools: bool, ask: &Ask<'_>) -> Result<Route, RouteError> {
        if let Some(e) = self.exposed(name, tools)
            && let Some(group) = self.groups.get(&e.server)
        {
            let how = if group.members.len() == 1 {
                format!("the only server offering {what} {name:?}")
            } else {
                format!("{what} {name:?} of replica group {:?}", group.name)
            };
            return self.schedule(group, Item { what, name: &e.upstream_name }, e.name.clone(), how, ask);
        }
        // `server<sep>name` always names that server's item (or that group's), whatever the
        // prefix mode.
        let sep = self.config.separator.as_str();
        let qualified = (!sep.is_empty()).then(|| name.split_once(sep)).flatten();
        if let Some((prefix, item)) = qualified {
            if let Some(catalog) = self.catalogs.get(prefix) {
                if offers(catalog, item, tools) {
                    let pinned = Group {
                        name: prefix.to_owned(),
                        formed: groups::Formed::Single,
                        members: self.member(prefix).into_iter().collect(),
                    };
                    let how = format!("named with its server's prefix {prefix:?}");
                    return self.schedule(&pinned, Item { what, name: item }, name.to_owned(), how, ask);
                }
                if tools && let Some(q) = catalog.quarantined.iter().find(|q| q.name == item) {
                    return Err(RouteError::Quarantined {
                        name: name.to_owned(),
                        server: prefix.to_owned(),
                        error: q.error.clone(),
                    });
                }
            }
            if let Some(group) = self.groups.get(prefix).filter(|g| g.routable())
                && offers(&group.catalog(), item, tools)
            {
                let how = format!("named with its group's prefix {prefix:?}");
                return self.schedule(group, Item { what, name: item }, name.to_owned(), how, ask);
            }
            if let Some(d) = self.down.get(prefix) {
                return Err(self.unavailable(what, name, prefix, d));
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

    fn member(&self, server: &str) -> Option<Member> {
        self.groups.values().flat_map(|g| g.members.iter()).find(|m| m.server == server).cloned()
    }

    fn unavailable(&self, what: &'static str, name: &str, server: &str, d: &Down) -> RouteError {
        RouteError::Unavailable {
            what,
            name: name.to_owned(),
            server: server.to_owned(),
            state: d.state.clone(),
            reason: d.reason.clone(),
        }
    }

    fn resource(&self, uri: &str, ask: &Ask<'_>) -> Result<Route, RouteError> {
        let serves = |c: &Catalog| lists_resource(c, uri) || template_for(c, uri).is_some();
        let routable = || self.groups.values().filter(|g| g.routable());
        // A group listing the URI first, then one with a matching template.
        let listed = routable().find(|g| lists_resource(&g.catalog(), uri));
        let found = listed.map(|g| (g, format!("{:?} lists {uri:?}", g.name))).or_else(|| {
            routable()
                .find(|g| serves(&g.catalog()))
                .map(|g| (g, format!("a resource template of {:?} matches {uri:?}", g.name)))
        });
        if let Some((g, how)) = found {
            return self.schedule(g, Item { what: "resource", name: uri }, uri.to_owned(), how, ask);
        }
        for (server, d) in &self.down {
            if serves(&d.catalog) {
                return Err(self.unavailable("resource", uri, server, d));
            }
        }
        Err(RouteError::Unknown { what: "resource", name: uri.to_owned() })
    }

    fn capability(&self, label: &str, tool: Option<&str>, ask: &Ask<'_>) -> Result<Route, RouteError> {
        let sep = &self.config.separator;
        let mut candidates: Vec<(&Group, String)> = Vec::new();
        let mut why = Vec::new();
        for group in self.groups.values() {
            let labelled: Vec<&Member> =
                group.members.iter().filter(|m| m.labels.iter().any(|l| l == label)).collect();
            if labelled.is_empty() {
                continue;
            }
            if !labelled.iter().any(|m| m.routable()) {
                for m in labelled {
                    if let Some(d) = self.down.get(&m.server) {
                        why.push(format!("{} is {} ({})", m.server, d.state, d.reason));
                    }
                }
                continue;
            }
            for t in &group.catalog().tools {
                if tool.is_none_or(|want| want == t.name) {
                    candidates.push((group, t.name.clone()));
                }
            }
        }
        match candidates.as_slice() {
            [(group, name)] => {
                let core = [label.to_owned()];
                let ask = Ask { core: &core, ..*ask };
                let how = if group.members.len() == 1 {
                    format!("the only ready server with capability {label:?}")
                } else {
                    format!("replica group {:?} has capability {label:?}", group.name)
                };
                self.schedule(
                    group,
                    Item { what: "tool", name },
                    format!("{}{sep}{name}", group.name),
                    how,
                    &ask,
                )
            }
            [] => Err(RouteError::NoCapability {
                label: label.to_owned(),
                wanted: tool.map_or("a tool".to_owned(), |t| format!("tool {t:?}")),
                why: if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) },
            }),
            many => Err(RouteError::Ambiguous {
                label: label.to_owned(),
                candidates: many.iter().map(|(g, t)| format!("{}{sep}{t}", g.name)).collect(),
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
mod tests;

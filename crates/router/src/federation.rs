//! Federation: one namespace of tools and prompts out of many servers' catalogs.
//!
//! Names are made unique by prefixing them with the server name and a separator, always
//! or only where two servers collide; with prefixing off, a collision refuses the later
//! server (by name order) with an error naming both. A collision is never silent. The
//! result is deterministic (servers by name, items in server order) so pagination over
//! it is stable, and every exposed name maps back to (server, upstream name).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::Catalog;

/// When tool and prompt names get the server prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrefixMode {
    /// Every name is `server<sep>name`.
    Always,
    /// Only names that two servers share are prefixed (all their occurrences).
    #[default]
    OnCollision,
    /// Names are exposed as the servers spell them; a collision refuses the later server.
    Never,
}

/// How to federate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FederationConfig {
    /// Prefix mode.
    pub mode: PrefixMode,
    /// Separator between server and item name.
    pub separator: String,
}

impl Default for FederationConfig {
    fn default() -> Self {
        FederationConfig { mode: PrefixMode::OnCollision, separator: "__".into() }
    }
}

/// One exposed tool or prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposed {
    /// The name clients see.
    pub name: String,
    /// The server that offers it.
    pub server: String,
    /// The name on that server.
    pub upstream_name: String,
    /// The item as the server sent it, with `name` rewritten to [`Exposed::name`].
    pub raw: Value,
}

/// A server left out of the federation, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The refused server.
    pub server: String,
    /// What collided, naming both servers.
    pub reason: String,
}

/// The merged namespace.
#[derive(Debug, Clone, Default)]
pub struct Federation {
    /// Tools, servers by name, each server's tools in its order.
    pub tools: Vec<Exposed>,
    /// Prompts, likewise.
    pub prompts: Vec<Exposed>,
    /// Servers refused in `never` mode.
    pub refused: Vec<Refusal>,
    tool_index: HashMap<String, usize>,
    prompt_index: HashMap<String, usize>,
}

impl Federation {
    /// The tool behind an exposed name.
    pub fn tool(&self, name: &str) -> Option<&Exposed> {
        self.tool_index.get(name).map(|i| &self.tools[*i])
    }

    /// The prompt behind an exposed name.
    pub fn prompt(&self, name: &str) -> Option<&Exposed> {
        self.prompt_index.get(name).map(|i| &self.prompts[*i])
    }
}

fn names(items: &[Value]) -> Vec<String> {
    items.iter().filter_map(|i| i.get("name").and_then(Value::as_str).map(str::to_owned)).collect()
}

/// Merges the catalogs of the given servers (name → catalog).
pub fn federate(servers: &BTreeMap<String, Arc<Catalog>>, config: &FederationConfig) -> Federation {
    let mut fed = Federation::default();
    let tool_lists: BTreeMap<&String, Vec<Value>> = servers.iter().map(|(s, c)| (s, c.raw_tools())).collect();
    let prompt_lists: BTreeMap<&String, Vec<Value>> =
        servers.iter().map(|(s, c)| (s, c.prompts.clone())).collect();
    // In `never` mode, refuse servers whose names collide with an earlier server's.
    let mut accepted: Vec<&String> = Vec::new();
    if config.mode == PrefixMode::Never {
        let mut owner: HashMap<String, (&str, &String)> = HashMap::new();
        'servers: for server in servers.keys() {
            for (kind, list) in [("tool", &tool_lists[server]), ("prompt", &prompt_lists[server])] {
                for n in names(list) {
                    if let Some((k, first)) = owner.get(&format!("{kind}:{n}")) {
                        fed.refused.push(Refusal {
                            server: server.clone(),
                            reason: format!(
                                "{k} {n:?} of server {server:?} collides with server {first:?}; with prefix mode `never` the later server is refused (use `on-collision` or `always`)"
                            ),
                        });
                        continue 'servers;
                    }
                }
            }
            for (kind, list) in [("tool", &tool_lists[server]), ("prompt", &prompt_lists[server])] {
                for n in names(list) {
                    owner.insert(format!("{kind}:{n}"), (kind, server));
                }
            }
            accepted.push(server);
        }
    } else {
        accepted = servers.keys().collect();
    }
    for (lists, out, index) in [
        (&tool_lists, &mut fed.tools, &mut fed.tool_index),
        (&prompt_lists, &mut fed.prompts, &mut fed.prompt_index),
    ] {
        let mut count: HashMap<String, usize> = HashMap::new();
        for s in &accepted {
            for n in names(&lists[*s]) {
                *count.entry(n).or_default() += 1;
            }
        }
        for s in &accepted {
            for item in &lists[*s] {
                let Some(n) = item.get("name").and_then(Value::as_str) else { continue };
                let prefixed = match config.mode {
                    PrefixMode::Always => true,
                    PrefixMode::OnCollision => count.get(n).copied().unwrap_or(0) > 1,
                    PrefixMode::Never => false,
                };
                let mut exposed = if prefixed { format!("{s}{}{n}", config.separator) } else { n.to_owned() };
                // A prefixed name can still meet an unprefixed one spelled the same way;
                // keep both visible by prefixing the newcomer too.
                if index.contains_key(&exposed) && !prefixed {
                    exposed = format!("{s}{}{n}", config.separator);
                }
                if index.contains_key(&exposed) {
                    tracing::warn!(name = %exposed, server = %s, "duplicate name after prefixing; the later one is left out");
                    continue;
                }
                let mut raw = item.clone();
                if let Some(obj) = raw.as_object_mut() {
                    obj.insert("name".into(), Value::String(exposed.clone()));
                }
                index.insert(exposed.clone(), out.len());
                out.push(Exposed { name: exposed, server: (*s).clone(), upstream_name: n.to_owned(), raw });
            }
        }
    }
    fed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::compile_tools;
    use serde_json::json;

    fn catalog(tools: &[&str], prompts: &[&str]) -> Arc<Catalog> {
        let raw: Vec<Value> =
            tools.iter().map(|t| json!({"name": t, "inputSchema": {"type": "object"}})).collect();
        let (tools, _) = compile_tools(&raw);
        Arc::new(Catalog {
            tools,
            prompts: prompts.iter().map(|p| json!({"name": p})).collect(),
            ..Default::default()
        })
    }

    fn servers() -> BTreeMap<String, Arc<Catalog>> {
        BTreeMap::from([
            ("alpha".to_owned(), catalog(&["echo", "add"], &["greet"])),
            ("beta".to_owned(), catalog(&["echo", "search"], &[])),
        ])
    }

    #[test]
    fn on_collision_prefixes_only_shared_names() {
        let f = federate(&servers(), &FederationConfig::default());
        let names: Vec<&str> = f.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["alpha__echo", "add", "beta__echo", "search"]);
        let t = f.tool("beta__echo").unwrap();
        assert_eq!((t.server.as_str(), t.upstream_name.as_str()), ("beta", "echo"));
        assert_eq!(t.raw["name"], "beta__echo");
        assert_eq!(f.prompt("greet").unwrap().server, "alpha");
        assert!(f.refused.is_empty());
    }

    #[test]
    fn always_prefixes_everything_with_the_separator() {
        let f = federate(&servers(), &FederationConfig { mode: PrefixMode::Always, separator: ".".into() });
        let names: Vec<&str> = f.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["alpha.echo", "alpha.add", "beta.echo", "beta.search"]);
        assert_eq!(f.prompts[0].name, "alpha.greet");
    }

    #[test]
    fn never_refuses_the_later_server_naming_both() {
        let f = federate(&servers(), &FederationConfig { mode: PrefixMode::Never, ..Default::default() });
        assert_eq!(f.refused.len(), 1);
        assert_eq!(f.refused[0].server, "beta");
        assert!(
            f.refused[0].reason.contains("\"alpha\"") && f.refused[0].reason.contains("\"echo\""),
            "{}",
            f.refused[0].reason
        );
        let names: Vec<&str> = f.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo", "add"]);
    }

    #[test]
    fn an_unprefixed_name_that_looks_prefixed_does_not_shadow() {
        let s = BTreeMap::from([
            ("a".to_owned(), catalog(&["x"], &[])),
            ("b".to_owned(), catalog(&["x", "a__x"], &[])),
        ]);
        let f = federate(&s, &FederationConfig::default());
        let names: Vec<&str> = f.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a__x", "b__x", "b__a__x"]);
        assert_eq!(f.tool("b__a__x").unwrap().upstream_name, "a__x");
    }
}

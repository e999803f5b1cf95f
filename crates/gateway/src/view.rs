//! What the endpoint derives from the ready servers' catalogs ([`View`]), cached per registry
//! version ([`ViewCache`]).
//!
//! A leaf: the endpoint routes with it and the notifier compares catalogs with it; neither
//! depends on the other for that.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock};

use switchboard_router::federation::FederationConfig;
use switchboard_router::{Registry, RouteTable, ServerState, Target};
use switchboard_wire::headers;

pub use switchboard_router::route::template_matches;

/// The derived state, valid for one [`Registry::version`], so calls do not re-federate every
/// catalog.
pub struct View {
    version: u64,
    /// Where every name goes: the ready servers' catalogs, their federation under the
    /// endpoint's prefix mode, and what the servers that are down offered (the router's one
    /// routing seam).
    pub routes: Arc<RouteTable>,
    /// Mirrored (`x-mcp-header`) parameters of each exposed tool.
    header_params: HashMap<String, Vec<headers::HeaderParam>>,
}

impl View {
    /// The mirrored (`x-mcp-header`) parameters of the exposed tool `name`.
    pub fn header_params(&self, name: &str) -> &[headers::HeaderParam] {
        self.header_params.get(name).map(Vec::as_slice).unwrap_or_default()
    }

    /// The ready server offering resource `uri`: one listing it, else one whose template
    /// matches.
    pub fn resource_server(&self, uri: &str) -> Option<String> {
        self.routes.route(Target::Resource(uri), None).ok().map(|r| r.server)
    }
}

/// The current [`View`], shared by the requests of one endpoint.
#[derive(Clone, Default)]
pub struct ViewCache(Arc<RwLock<Option<Arc<View>>>>);

impl std::fmt::Debug for ViewCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ViewCache")
    }
}

impl ViewCache {
    /// The view of `registry` now, rebuilt if the registry changed since the last one.
    pub fn get(&self, registry: &Registry, federation: &FederationConfig) -> Arc<View> {
        let version = registry.version();
        if let Some(v) = self.0.read().unwrap_or_else(PoisonError::into_inner).as_ref()
            && v.version == version
        {
            return v.clone();
        }
        let routes = Arc::new(RouteTable::build(registry, federation));
        let header_params = routes
            .federation
            .tools
            .iter()
            .filter_map(|t| {
                let params = t.raw.get("inputSchema").and_then(|s| headers::header_params(s).ok())?;
                (!params.is_empty()).then(|| (t.name.clone(), params))
            })
            .collect();
        let view = Arc::new(View { version, routes, header_params });
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(view.clone());
        view
    }
}

/// The ready servers' catalogs, by name.
pub fn ready_catalogs(registry: &Registry) -> BTreeMap<String, Arc<switchboard_router::catalog::Catalog>> {
    registry
        .servers()
        .into_iter()
        .filter(|v| v.state == ServerState::Ready)
        .filter_map(|v| registry.entry(&v.name).map(|e| (v.name, e.catalog())))
        .collect()
}

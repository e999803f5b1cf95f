//! The flow engine's view of the router: tools resolved through the router's one routing
//! seam ([`switchboard_router::route`]) — by exposed or `server<sep>tool` name with the
//! configured separator, or by a server's capability label — and called through the
//! registry's connections with progress relayed and cancellation sent upstream.

use serde_json::{Value, json};
use switchboard_flow::error::InvokeError;
use switchboard_flow::invoker::{ProgressSink, ToolBinding, ToolInfo, ToolInvoker, ToolOutput};
use switchboard_router::federation::FederationConfig;
use switchboard_router::{Registry, Route, RouteCache, Target};
use switchboard_transport::client::ClientError;
use tokio_util::sync::CancellationToken;

/// [`ToolInvoker`] over the registry.
#[derive(Clone)]
pub struct RegistryInvoker {
    registry: Registry,
    federation: FederationConfig,
    routes: RouteCache,
}

impl RegistryInvoker {
    /// Wraps a registry, naming tools with the default federation settings.
    pub fn new(registry: Registry) -> Self {
        RegistryInvoker::with_federation(registry, FederationConfig::default())
    }

    /// Wraps a registry, naming tools as the endpoint does under `federation` (prefix mode and
    /// separator).
    pub fn with_federation(registry: Registry, federation: FederationConfig) -> Self {
        RegistryInvoker { registry, federation, routes: RouteCache::default() }
    }

    fn route(&self, target: Target<'_>) -> Result<Route, InvokeError> {
        self.routes
            .get(&self.registry, &self.federation)
            .route(target, None)
            .map_err(|e| InvokeError::Unresolved(e.to_string()))
    }

    fn info(&self, route: &Route) -> Result<ToolInfo, InvokeError> {
        let table = self.routes.get(&self.registry, &self.federation);
        let tool = table.catalogs.get(&route.server).and_then(|c| c.tool(&route.upstream_name)).ok_or_else(
            || {
                InvokeError::Unresolved(format!(
                    "server {:?} has no tool {:?}",
                    route.server, route.upstream_name
                ))
            },
        )?;
        Ok(ToolInfo {
            name: route.exposed_name.clone(),
            input_schema: tool.raw.get("inputSchema").cloned().unwrap_or(json!({"type": "object"})),
            output_schema: tool.raw.get("outputSchema").cloned(),
        })
    }
}

#[async_trait::async_trait]
impl ToolInvoker for RegistryInvoker {
    fn resolve(&self, binding: &ToolBinding) -> Result<ToolInfo, InvokeError> {
        let target = match (&binding.capability, &binding.tool) {
            (None, Some(name)) => Target::Tool(name),
            (Some(label), tool) => Target::Capability { label, tool: tool.as_deref() },
            (None, None) => {
                return Err(InvokeError::Unresolved(
                    "the binding names neither a tool nor a capability".into(),
                ));
            }
        };
        self.info(&self.route(target)?)
    }

    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        progress: ProgressSink,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, InvokeError> {
        let route = self.route(Target::Tool(tool))?;
        let (server, name) = (route.server.as_str(), route.upstream_name.as_str());
        let entry = self
            .registry
            .entry(server)
            .ok_or_else(|| InvokeError::Unresolved(format!("no server named {server:?}")))?;
        let client = entry.client().ok_or_else(|| {
            let (state, reason) = entry.state();
            InvokeError::Transport(format!(
                "server {server:?} is not connected ({}: {reason})",
                state.as_str()
            ))
        })?;
        let params =
            json!({"name": name, "arguments": arguments, "_meta": {"progressToken": format!("flow-{tool}")}});
        let mut exchange =
            client.start("tools/call", params).await.map_err(|e| InvokeError::Transport(e.to_string()))?;
        loop {
            let next = tokio::select! {
                // Dropping the exchange sends the cancellation upstream.
                _ = cancel.cancelled() => return Err(InvokeError::Cancelled),
                n = exchange.next() => n,
            };
            let msg = match next {
                Some(Ok(m)) => m,
                Some(Err(e)) => return Err(InvokeError::Transport(format!("{server}: {e}"))),
                None => return Err(InvokeError::Transport(format!("{server}: no response"))),
            };
            if msg.method() == Some("notifications/progress") {
                if let Some(p) = msg.params() {
                    let value = p.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
                    let total = p.get("total").and_then(Value::as_f64);
                    let message = p.get("message").and_then(Value::as_str).map(str::to_owned);
                    progress.report(value, total, message);
                }
                continue;
            }
            if !msg.is_response() {
                continue;
            }
            if let Some(err) = msg.error() {
                return Err(InvokeError::Refused(
                    ClientError::Rpc { method: "tools/call".into(), error: Box::new(err) }.to_string(),
                ));
            }
            let result = msg.result().cloned().unwrap_or(Value::Null);
            return Ok(ToolOutput {
                structured: result.get("structuredContent").cloned(),
                content: result.get("content").cloned().unwrap_or(json!([])),
                is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
            });
        }
    }
}

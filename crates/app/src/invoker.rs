//! The flow engine's view of the router: tools resolved by namespaced name
//! (`server__tool`) or by a server's capability label, and called through the registry's
//! connections with progress relayed and cancellation sent upstream.

use serde_json::{Value, json};
use switchboard_flow::error::InvokeError;
use switchboard_flow::invoker::{ProgressSink, ToolBinding, ToolInfo, ToolInvoker, ToolOutput};
use switchboard_router::{Registry, ServerState};
use switchboard_transport::client::ClientError;
use tokio_util::sync::CancellationToken;

/// Separator between server and tool names in a namespaced tool name.
pub const SEPARATOR: &str = "__";

/// [`ToolInvoker`] over the registry.
#[derive(Clone)]
pub struct RegistryInvoker {
    registry: Registry,
}

impl RegistryInvoker {
    /// Wraps a registry.
    pub fn new(registry: Registry) -> Self {
        RegistryInvoker { registry }
    }

    fn info(&self, server: &str, tool: &str) -> Result<ToolInfo, InvokeError> {
        let entry = self
            .registry
            .entry(server)
            .ok_or_else(|| InvokeError::Unresolved(format!("no server named {server:?}")))?;
        let (state, reason) = entry.state();
        if state != ServerState::Ready {
            return Err(InvokeError::Unresolved(format!(
                "server {server:?} is {} ({reason})",
                state.as_str()
            )));
        }
        let catalog = entry.catalog();
        let t = catalog.tool(tool).ok_or_else(|| {
            let q = catalog.quarantined.iter().find(|q| q.name == tool);
            InvokeError::Unresolved(match q {
                Some(q) => format!("tool {tool:?} of server {server:?} is quarantined: {}", q.error),
                None => format!("server {server:?} has no tool {tool:?}"),
            })
        })?;
        Ok(ToolInfo {
            name: format!("{server}{SEPARATOR}{tool}"),
            input_schema: t.raw.get("inputSchema").cloned().unwrap_or(json!({"type": "object"})),
            output_schema: t.raw.get("outputSchema").cloned(),
        })
    }
}

#[async_trait::async_trait]
impl ToolInvoker for RegistryInvoker {
    fn resolve(&self, binding: &ToolBinding) -> Result<ToolInfo, InvokeError> {
        match (&binding.capability, &binding.tool) {
            (None, Some(name)) => {
                let (server, tool) = name.split_once(SEPARATOR).ok_or_else(|| {
                    InvokeError::Unresolved(format!(
                        "tool {name:?} is not namespaced (write SERVER{SEPARATOR}TOOL or give a capability)"
                    ))
                })?;
                self.info(server, tool)
            }
            (Some(cap), tool) => {
                let servers: Vec<_> = self
                    .registry
                    .servers()
                    .into_iter()
                    .filter(|v| v.labels.iter().any(|l| l == cap))
                    .collect();
                if servers.is_empty() {
                    return Err(InvokeError::Unresolved(format!(
                        "no server has the capability label {cap:?}"
                    )));
                }
                let mut candidates = Vec::new();
                let mut why = Vec::new();
                for v in &servers {
                    let names: Vec<&String> = match tool {
                        Some(t) => v.tools.iter().filter(|n| *n == t).collect(),
                        None => v.tools.iter().collect(),
                    };
                    if v.state != ServerState::Ready {
                        why.push(format!("{} is {} ({})", v.name, v.state.as_str(), v.reason));
                        continue;
                    }
                    for n in names {
                        candidates.push((v.name.clone(), n.clone()));
                    }
                }
                match candidates.as_slice() {
                    [(server, tool)] => self.info(server, tool),
                    [] => Err(InvokeError::Unresolved(format!(
                        "no ready server with capability {cap:?} offers {}{}",
                        tool.as_deref().map_or("a tool".to_owned(), |t| format!("tool {t:?}")),
                        if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) }
                    ))),
                    many => Err(InvokeError::Unresolved(format!(
                        "capability {cap:?} is ambiguous: {}",
                        many.iter().map(|(s, t)| format!("{s}{SEPARATOR}{t}")).collect::<Vec<_>>().join(", ")
                    ))),
                }
            }
            (None, None) => {
                Err(InvokeError::Unresolved("the binding names neither a tool nor a capability".into()))
            }
        }
    }

    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        progress: ProgressSink,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, InvokeError> {
        let (server, name) = tool
            .split_once(SEPARATOR)
            .ok_or_else(|| InvokeError::Unresolved(format!("tool {tool:?} is not namespaced")))?;
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

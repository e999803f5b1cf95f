//! The MCP handler: [`ChaosServer`] serves the [`tools`](crate::tools) and one resource from
//! the replica's state, honouring the faults that act inside MCP (`disable_capability`,
//! `slow_tools`, `fail_tools`). Faults that act on the wire (`overload`, `partition`,
//! `slow_handshake`) are the HTTP gate's (see [`crate::http`]).
//!
//! `fail_tools` answers with a JSON-RPC internal error (-32603) whose `data` says
//! `{"injected": "fail_tools", "executed": false, "replica": …}`: the tool body did not run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
        ListResourcesRequestMethod, ListResourcesResult, ListToolsRequestMethod, ListToolsResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        Resource, ResourceContents, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use serde_json::json;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::faults::ListChange;
use crate::replica::{Replica, SERVER_NAME, SERVER_VERSION};
use crate::tools::{self, Call};

/// URI of the one resource (its text is the replica id).
pub const RESOURCE_URI: &str = "chaos://replica";
/// How often a legacy session's list_changed forwarder checks whether its session is gone.
const SESSION_POLL: Duration = Duration::from_secs(1);

/// The replica's MCP handler (cheap to clone; one clone per session or stateless request).
#[derive(Debug, Clone)]
pub struct ChaosServer {
    replica: Arc<Replica>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// Catalogue changes since this session began, taken by `on_initialized` (subscribing when
    /// the session is created means a change made before `notifications/initialized` still
    /// reaches it).
    session_changes: Arc<std::sync::Mutex<Option<broadcast::Receiver<ListChange>>>>,
}

impl ChaosServer {
    /// The handler of `replica`; its background tasks are tracked by `tasks` and end with
    /// `shutdown`.
    pub fn new(replica: Arc<Replica>, tasks: TaskTracker, shutdown: CancellationToken) -> Self {
        let session_changes = Arc::new(std::sync::Mutex::new(Some(replica.faults.list_changes())));
        Self { replica, tasks, shutdown, session_changes }
    }

    /// A handler for a new session: same replica, its own view of catalogue changes.
    pub fn for_session(&self) -> Self {
        Self {
            session_changes: Arc::new(std::sync::Mutex::new(Some(self.replica.faults.list_changes()))),
            ..self.clone()
        }
    }

    fn resources_enabled(&self) -> bool {
        self.replica.faults.current().resources_enabled()
    }
}

fn empty_arguments() -> &'static JsonObject {
    static EMPTY: std::sync::OnceLock<JsonObject> = std::sync::OnceLock::new();
    EMPTY.get_or_init(JsonObject::new)
}

impl ServerHandler for ChaosServer {
    fn get_info(&self) -> ServerConfig {
        let settings = self.replica.faults.current();
        let mut builder = ServerCapabilities::builder();
        let capabilities = match (settings.tools_enabled(), self.resources_enabled()) {
            (true, true) => builder.enable_tools().enable_tool_list_changed().enable_resources().build(),
            (true, false) => builder.enable_tools().enable_tool_list_changed().build(),
            (false, true) => builder.enable_resources().build(),
            (false, false) => {
                builder = ServerCapabilities::builder();
                builder.build()
            }
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, SERVER_VERSION))
            .with_instructions("A fault-injecting test server. Tools: read, put, append, work, whoami.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let settings = self.replica.faults.current();
        if !settings.tools_enabled() {
            return Err(ErrorData::method_not_found::<ListToolsRequestMethod>());
        }
        let tools = settings.visible_tools().into_iter().filter_map(tools::definition).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let settings = self.replica.faults.current();
        settings.visible_tools().contains(&name).then(|| tools::definition(name)).flatten()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let settings = self.replica.faults.current();
        let replica = &self.replica;
        let Some(name) =
            tools::static_name(&request.name).filter(|name| settings.visible_tools().contains(name))
        else {
            return Err(ErrorData::invalid_params(format!("unknown tool {:?}", request.name), None));
        };
        let _pending = replica.load.pending();
        let started = Instant::now();
        if settings.slow_tools_ms > 0 {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(settings.slow_tools_ms)) => {}
                () = context.ct.cancelled() => {
                    return Err(ErrorData::internal_error("the call was cancelled", None));
                }
            }
        }
        if replica.faults.should_fail() {
            replica.counters.failed_injected();
            replica.load.finished(started.elapsed());
            return Err(ErrorData::internal_error(
                "chaos: injected failure (fail_tools); the tool did not run",
                Some(json!({ "injected": "fail_tools", "executed": false, "replica": replica.id })),
            ));
        }
        let arguments = request.arguments.as_ref().unwrap_or_else(|| empty_arguments());
        let call = Call {
            replica: &replica.id,
            store: &replica.store,
            counters: &replica.counters,
            arguments,
            cancelled: &context.ct,
        };
        let result: Result<CallToolResult, ErrorData> = tools::run(name, call).await;
        replica.load.finished(started.elapsed());
        result.map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if !self.resources_enabled() {
            return Err(ErrorData::method_not_found::<ListResourcesRequestMethod>());
        }
        let resource = Resource::new(RESOURCE_URI, "replica").with_description("The id of this replica");
        Ok(ListResourcesResult::with_all_items(vec![resource]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if !self.resources_enabled() || request.uri != RESOURCE_URI {
            return Err(ErrorData::resource_not_found(format!("no resource {:?}", request.uri), None));
        }
        let contents = ResourceContents::text(self.replica.id.clone(), RESOURCE_URI);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // rmcp intersects this with what get_info advertises: tools/list_changed only.
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.replica.faults.list_changes();
        let wants_tools = subscription.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                change = changes.recv() => {
                    match change {
                        Ok(ListChange::Tools) | Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => return Ok(()),
                    }
                    if wants_tools && let Err(error) = subscription.sink().notify_tool_list_changed().await {
                        tracing::debug!(%error, "subscription stream is gone");
                        return Ok(());
                    }
                },
                () = subscription.cancelled() => return Ok(()),
                () = self.shutdown.cancelled() => return Ok(()),
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A legacy session: forward catalogue changes as notifications/tools/list_changed on the
        // session's own stream until the session ends.
        let peer = context.peer;
        let taken = self.session_changes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let mut changes = taken.unwrap_or_else(|| self.replica.faults.list_changes());
        let shutdown = self.shutdown.clone();
        self.tasks.spawn(async move {
            let mut poll = tokio::time::interval(SESSION_POLL);
            loop {
                tokio::select! {
                    change = changes.recv() => {
                        let sent = match change {
                            Ok(ListChange::Tools) | Err(RecvError::Lagged(_)) => peer.notify_tool_list_changed().await,
                            Err(RecvError::Closed) => return,
                        };
                        if let Err(error) = sent {
                            tracing::debug!(%error, "session is gone; stop forwarding list changes");
                            return;
                        }
                    },
                    _ = poll.tick() => if peer.is_transport_closed() { return },
                    () = shutdown.cancelled() => return,
                }
            }
        });
    }
}

//! Method and notification names of both MCP revisions.
//!
//! Names are constants rather than an enum because the data plane must forward methods
//! it has never heard of; the helpers below only classify what routing needs to know.

/// `initialize` (2025-11-25 only; removed in 2026-07-28).
pub const INITIALIZE: &str = "initialize";
/// `ping` (2025-11-25 only).
pub const PING: &str = "ping";
/// `server/discover` (2026-07-28; servers MUST implement it).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (2025-11-25 only).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (2025-11-25 only).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `logging/setLevel` (2025-11-25 only).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `subscriptions/listen` (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `tasks/get` (2025-11-25 experimental core; an extension in 2026-07-28).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result`.
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list`.
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel`.
pub const TASKS_CANCEL: &str = "tasks/cancel";

/// Server → client `sampling/createMessage` (a request in 2025-11-25, an input request in 2026-07-28).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Server → client `roots/list`.
pub const ROOTS_LIST: &str = "roots/list";
/// Server → client `elicitation/create`.
pub const ELICITATION_CREATE: &str = "elicitation/create";

/// `notifications/initialized` (2025-11-25).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled` (both; only on stdio in 2026-07-28).
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// `notifications/message` (log messages).
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// `notifications/resources/updated`.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/tools/list_changed`.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/resources/list_changed`.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/prompts/list_changed`.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/roots/list_changed` (client → server, 2025-11-25 only).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/subscriptions/acknowledged` (first frame of a 2026-07-28 listen stream).
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `notifications/tasks/status`.
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";

/// Methods that exist in 2025-11-25 but were removed in 2026-07-28: a modern request for
/// one of them is answered with 404 / -32601.
pub const REMOVED_IN_MODERN: &[&str] =
    &[INITIALIZE, PING, LOGGING_SET_LEVEL, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE];

/// Methods that may answer with an MRTR `input_required` result in 2026-07-28.
pub const MRTR_METHODS: &[&str] = &[TOOLS_CALL, PROMPTS_GET, RESOURCES_READ];

/// Methods whose `Mcp-Name` header mirrors `params.name` / `params.uri`.
pub fn name_param(method: &str) -> Option<&'static str> {
    match method {
        TOOLS_CALL | PROMPTS_GET => Some("name"),
        RESOURCES_READ => Some("uri"),
        _ => None,
    }
}

/// `true` for the `*/list_changed` notifications a registry refreshes on.
pub fn is_list_changed(method: &str) -> bool {
    matches!(
        method,
        NOTIFICATION_TOOLS_LIST_CHANGED
            | NOTIFICATION_RESOURCES_LIST_CHANGED
            | NOTIFICATION_PROMPTS_LIST_CHANGED
    )
}

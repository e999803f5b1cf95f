//! Server messages that belong to no request, on the router's own upstream connections.
//!
//! The registry's shared connection and the connections of their own that calls get
//! ([`crate::dedicated`]) both receive them: a `list_changed` notification, or a request a
//! server sends outside any call. Both answer them the same way, so the rule lives here, below
//! both, rather than in one of them.

use std::sync::Arc;

use switchboard_transport::Upstream;
use switchboard_wire::{ErrorObject, Message, error_code, method};

/// Handles a server message that belongs to no request. Returns `true` for a
/// `list_changed` notification. Server → client requests are refused: the registry's
/// own connection declares no client capabilities.
pub(crate) async fn answer(up: &Arc<dyn Upstream>, msg: &Message) -> bool {
    if msg.is_request() {
        if let Some(id) = msg.id() {
            let m = msg.method().unwrap_or_default();
            let err = ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                format!(
                    "{m} is not available on switchboard's registry connection (no client capability declared)"
                ),
            );
            let _ = up.send(Message::error_response(Some(id), err)).await;
        }
        return false;
    }
    msg.method().is_some_and(method::is_list_changed)
}

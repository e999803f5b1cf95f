//! The TypeScript declarations of the admin API's bodies, as the UI imports them
//! (`ui/src/generated/admin.ts`), generated from the Rust types with ts-rs and never written
//! by hand. Types of the event model come from `events.ts` (see
//! `switchboard_router::events::typescript`) and are imported, not repeated.

use ts_rs::TS;

/// Where the generated file lives, relative to the repository root.
pub const PATH: &str = "ui/src/generated/admin.ts";

/// The file's text.
///
/// JSON has one number type, and serde writes 64-bit integers as plain numbers, so ts-rs's
/// `bigint` for them is written `number` here.
pub fn render() -> String {
    use crate::api::{frames, overview, records, routing, servers, settings};
    let cfg = ts_rs::Config::default();
    let decls = [
        crate::error::ErrorBody::decl(&cfg),
        overview::RouterInfo::decl(&cfg),
        overview::ServerCounts::decl(&cfg),
        overview::CallStats::decl(&cfg),
        overview::EventStats::decl(&cfg),
        overview::Overview::decl(&cfg),
        servers::UpstreamStatus::decl(&cfg),
        servers::ServerView::decl(&cfg),
        servers::AddServer::decl(&cfg),
        servers::ImportError::decl(&cfg),
        servers::ImportResult::decl(&cfg),
        servers::CatalogTool::decl(&cfg),
        servers::CatalogView::decl(&cfg),
        records::HandshakeQuery::decl(&cfg),
        records::TraceQuery::decl(&cfg),
        routing::DecisionQuery::decl(&cfg),
        routing::GroupQuery::decl(&cfg),
        routing::GroupMember::decl(&cfg),
        routing::Binding::decl(&cfg),
        routing::GroupView::decl(&cfg),
        frames::FramesQuery::decl(&cfg),
        settings::ServerSettings::decl(&cfg),
        settings::Settings::decl(&cfg),
        crate::events::EventsQuery::decl(&cfg),
        crate::events::ViewerCommand::decl(&cfg),
        crate::events::Snapshot::decl(&cfg),
        crate::events::ViewerMessage::decl(&cfg),
    ];
    switchboard_router::events::typescript::module(
        "// Generated from the admin API's Rust types (crates/admin/src) by\n\
         // `UPDATE_BINDINGS=1 cargo test -p switchboard-admin --lib typescript`. Do not edit.\n\n\
         import type { Event, EventKind, Filter, FrameEvent, HandshakeRecord, JsonValue, Quarantined, TraceRecord } from \"./events\";\n\n\
         /** The subprotocol of `/api/events`; the token goes beside it as `bearer.<token>`. */\n\
         export const EVENTS_PROTOCOL = \"switchboard.events\";\n\n",
        decls,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_bindings_are_generated_from_the_rust_types() {
        let text = render();
        assert!(text.contains("export type ViewerMessage ="), "{text}");
        assert!(!text.contains("bigint"));
        switchboard_router::events::typescript::check_or_update(
            env!("CARGO_MANIFEST_DIR"),
            PATH,
            &text,
            "UPDATE_BINDINGS=1 cargo test -p switchboard-admin --lib typescript",
        );
    }
}

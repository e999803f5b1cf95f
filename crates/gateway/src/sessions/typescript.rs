//! The TypeScript declarations of [`super::SessionsView`], as the UI imports them
//! (`ui/src/generated/sessions.ts`), generated from the Rust types and never written by hand.

use ts_rs::TS;

/// Where the generated file lives, relative to the repository root.
pub const PATH: &str = "ui/src/generated/sessions.ts";

/// The file's text (64-bit integers written `number`: serde writes them as plain numbers).
pub fn render() -> String {
    let cfg = ts_rs::Config::default();
    let decls = [
        serde_json::Value::decl(&cfg),
        super::UpstreamBinding::decl(&cfg),
        super::SessionView::decl(&cfg),
        super::CallerView::decl(&cfg),
        super::SessionsView::decl(&cfg),
    ];
    switchboard_router::events::typescript::module(
        "// Generated from the gateway's session table (crates/gateway/src/sessions.rs) by\n\
         // `UPDATE_BINDINGS=1 cargo test -p switchboard-gateway --lib typescript`. Do not edit.\n\n",
        decls,
    )
}

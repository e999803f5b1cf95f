//! The TypeScript declarations of the event model, as the UI imports them.
//!
//! Generated from the Rust types, never written by hand: the test below fails when the committed
//! file is stale and rewrites it under `UPDATE_BINDINGS=1`.

use ts_rs::TS;

/// Where the generated file lives, relative to the repository root.
pub const PATH: &str = "ui/src/generated/events.ts";

/// The file's text: every type an [`super::Event`] can carry, in dependency order.
///
/// JSON has one number type, and serde writes 64-bit integers as plain numbers, so
/// ts-rs's `bigint` for them is written `number` here.
pub fn render() -> String {
    let cfg = ts_rs::Config::default();
    let decls = [
        switchboard_wire::Kind::decl(&cfg),
        switchboard_wire::Id::decl(&cfg),
        switchboard_transport::Direction::decl(&cfg),
        switchboard_transport::FrameEvent::decl(&cfg),
        switchboard_transport::UpstreamEvent::decl(&cfg),
        switchboard_store::HandshakeRecord::decl(&cfg),
        switchboard_store::TraceRecord::decl(&cfg),
        crate::schema::Quarantined::decl(&cfg),
        super::CatalogDiff::decl(&cfg),
        crate::decision::KeySource::decl(&cfg),
        crate::decision::Layer::decl(&cfg),
        crate::decision::Candidate::decl(&cfg),
        crate::decision::Decision::decl(&cfg),
        super::EventKind::decl(&cfg),
        super::Filter::decl(&cfg),
        super::Event::decl(&cfg),
    ];
    module(
        "// Generated from the Rust event model (crates/router/src/events.rs) by\n\
         // `UPDATE_BINDINGS=1 cargo test -p switchboard-router --lib typescript`. Do not edit.\n\n\
         /** Any JSON value (the types above use it for fields serde keeps as `serde_json::Value`). */\n\
         export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;\n\n",
        decls,
    )
}

/// A generated module: `header`, then each ts-rs declaration exported, with `bigint` written
/// `number` (serde writes 64-bit integers as JSON numbers). Every crate that generates UI
/// types (events, admin, sessions, diagnosis) builds its file this way.
pub fn module(header: &str, decls: impl IntoIterator<Item = String>) -> String {
    let mut out = String::from(header);
    for d in decls {
        out.push_str("export ");
        out.push_str(&d.replace("bigint", "number"));
        out.push_str("\n\n");
    }
    out
}

/// For the bindings tests of the crates that generate UI types: writes `text` to `path`
/// (relative to the repository root, which is `manifest_dir/../..`) under `UPDATE_BINDINGS=1`,
/// then panics when the committed file differs, naming `command` as the way to regenerate it.
///
/// # Panics
/// When the committed file is stale, or (under `UPDATE_BINDINGS`) cannot be written.
pub fn check_or_update(manifest_dir: &str, path: &str, text: &str, command: &str) {
    let file = std::path::Path::new(manifest_dir).join("../..").join(path);
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        }
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(committed == text, "{path} is stale: run `{command}`");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_bindings_are_generated_from_the_rust_types() {
        let text = render();
        assert!(text.contains("export type Event ="), "{text}");
        assert!(!text.contains("bigint"));
        check_or_update(
            env!("CARGO_MANIFEST_DIR"),
            PATH,
            &text,
            "UPDATE_BINDINGS=1 cargo test -p switchboard-router --lib typescript",
        );
    }
}

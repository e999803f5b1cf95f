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
        super::EventKind::decl(&cfg),
        super::Filter::decl(&cfg),
        super::Event::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from the Rust event model (crates/router/src/events.rs) by\n\
         // `UPDATE_BINDINGS=1 cargo test -p switchboard-router --lib typescript`. Do not edit.\n\n",
    );
    for d in decls {
        out.push_str("export ");
        out.push_str(&d.replace("bigint", "number"));
        out.push_str("\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_bindings_are_generated_from_the_rust_types() {
        let text = render();
        assert!(text.contains("export type Event ="), "{text}");
        assert!(!text.contains("bigint"));
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(PATH);
        if std::env::var_os("UPDATE_BINDINGS").is_some() {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, &text).expect("write bindings");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "{} is stale: run `UPDATE_BINDINGS=1 cargo test -p switchboard-router --lib typescript`",
            PATH
        );
    }
}

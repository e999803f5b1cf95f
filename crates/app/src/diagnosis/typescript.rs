//! The TypeScript declarations of the diagnosis routes' bodies, as the UI imports them
//! (`ui/src/generated/diagnosis.ts`), generated from the Rust types and never written by hand.
//!
//! Regenerate with `UPDATE_BINDINGS=1 cargo test -p switchboard-app --lib typescript`; the
//! same test fails when the committed file is stale.

use ts_rs::TS;

use super::thermal::{RelativeInfo, ThermalView};
use super::view::{
    BlobUploaded, BoxPx, DiagnosisResult, ErrorBody, FailureModeView, FlowEdgeView, FlowGraph, FlowNodeView,
    HotspotView, KnowledgeHit, NodeStatus, NodeView, PointPx, RepairPlan, RunAccepted, RunRequest,
    RunSummary, RunView, SeverityView,
};

/// Where the generated file lives, relative to the repository root.
pub const PATH: &str = "ui/src/generated/diagnosis.ts";

/// The file's text: every body type, in dependency order.
///
/// JSON has one number type, and serde writes 64-bit integers as plain numbers, so ts-rs's
/// `bigint` for them is written `number` here.
pub fn render() -> String {
    let cfg = ts_rs::Config::default();
    let decls = [
        serde_json::Value::decl(&cfg),
        ErrorBody::decl(&cfg),
        BlobUploaded::decl(&cfg),
        PointPx::decl(&cfg),
        RelativeInfo::decl(&cfg),
        ThermalView::decl(&cfg),
        FlowNodeView::decl(&cfg),
        FlowEdgeView::decl(&cfg),
        FlowGraph::decl(&cfg),
        RunRequest::decl(&cfg),
        RunAccepted::decl(&cfg),
        RunSummary::decl(&cfg),
        NodeStatus::decl(&cfg),
        NodeView::decl(&cfg),
        BoxPx::decl(&cfg),
        HotspotView::decl(&cfg),
        SeverityView::decl(&cfg),
        KnowledgeHit::decl(&cfg),
        RepairPlan::decl(&cfg),
        FailureModeView::decl(&cfg),
        DiagnosisResult::decl(&cfg),
        RunView::decl(&cfg),
    ];
    switchboard_router::events::typescript::module(
        "// Generated from the Rust body types of the diagnosis routes (crates/app/src/diagnosis/) by\n\
         // `UPDATE_BINDINGS=1 cargo test -p switchboard-app --lib typescript`. Do not edit.\n\n",
        decls,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_bindings_are_generated_from_the_rust_types() {
        let text = render();
        assert!(text.contains("export type RunView ="), "{text}");
        assert!(text.contains("\"ref\": string") || text.contains("ref: string"), "{text}");
        assert!(!text.contains("bigint"));
        switchboard_router::events::typescript::check_or_update(
            env!("CARGO_MANIFEST_DIR"),
            PATH,
            &text,
            "UPDATE_BINDINGS=1 cargo test -p switchboard-app --lib typescript",
        );
    }
}

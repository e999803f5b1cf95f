/**
 * The admin API's types as the rest of the UI imports them, all generated from Rust:
 * events.ts, admin.ts, diagnosis.ts (blobs, thermal, flow, runs) and sessions.ts.
 */
export type * from '../generated/events';
export type * from '../generated/admin';
export type { BlobUploaded, PointPx, RelativeInfo, ThermalView, FlowNodeView, FlowEdgeView, FlowGraph, RunRequest, RunAccepted, RunSummary, NodeStatus, NodeView, BoxPx, HotspotView, SeverityView, KnowledgeHit, RepairPlan, FailureModeView, DiagnosisResult, RunView } from '../generated/diagnosis';
export type { UpstreamBinding, SessionView, CallerView, SessionsView as Sessions } from '../generated/sessions';

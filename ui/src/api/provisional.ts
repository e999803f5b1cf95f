/**
 * Provisional types of the admin API's bodies that are not generated yet (diagnosis: the
 * generated `ui/src/generated/diagnosis.ts` has landed beside this file and replaces them at
 * integration), written from
 * docs/admin-api.md and the Rust structs they serialise. This is the ONE file that holds
 * them: replace each type here with the generated one as it appears. The admin API's own
 * bodies come from `ui/src/generated/admin.ts`.
 */

export interface BlobRef {
  sha256: string;
  size: number;
  ref: string;
}

export interface Thermal {
  sha256?: string;
  width: number;
  height: number;
  radiometric: boolean;
  /** `C` for temperatures, `relative` for a 0…1 scale. */
  unit: string;
  format?: string;
  min_c: number | null;
  max_c: number | null;
  /** Smallest and largest value in `unit`. */
  min?: number;
  max?: number;
  hottest?: { x: number; y: number };
  coldest?: { x: number; y: number };
  /** base64 of little-endian f32, row-major; NaN where a pixel has no value. */
  temps: string;
}

export interface FlowNode {
  id: string;
  /** The tool named in the flow file, if it names one (else `capability` picks it). */
  tool?: string | null;
  capability?: string | null;
  /** The tool the router resolved the node to now. */
  resolved_tool?: string | null;
  description?: string | null;
  timeout_ms?: number | null;
}

export interface FlowGraph {
  name: string;
  description?: string;
  nodes: FlowNode[];
  edges: { from: string; to: string; when?: string | null }[];
}

export type NodeStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped' | 'cancelled';

export interface RunSummary {
  run_id: string;
  flow: string;
  started_at_ms: number;
  finished_at_ms: number | null;
  /** `running`, `ok`, `failed` or `cancelled`. */
  outcome: string;
  error: string | null;
  /** The image reference of the input (`blob:<sha256>`). */
  image?: string | null;
  equipment?: string | null;
  /** The store's run rows (in the snapshot) carry the whole input instead. */
  input?: Record<string, unknown>;
}

export interface RunNode {
  node: string;
  tool?: string | null;
  /** `pending`, `running`, `succeeded`, `failed`, `skipped`, `cancelled`. */
  status: string;
  duration_ms: number | null;
  attempts?: number;
  input?: unknown;
  output?: unknown;
  error?: string | null;
}

export interface PointPx {
  x: number;
  y: number;
}

export interface BoxPx {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface DiagnosisResult {
  radiometric: boolean;
  analysis?: string | null;
  width?: number | null;
  height?: number | null;
  min_c?: number | null;
  max_c?: number | null;
  hottest?: PointPx | null;
  delta_t_ref_c?: number | null;
  equipment?: string | null;
  equipment_reason?: string | null;
  severity?: { standard: string; band?: string | null; class?: string | null; criterion?: string | null; action?: string | null; assessed: boolean } | null;
  hotspot?: { bbox: BoxPx; centroid: PointPx; hottest?: PointPx | null; max_c?: number | null } | null;
  hotspots?: unknown[];
  failure_mode?: { kind: string; hypothesis: string } | null;
  knowledge: { id: string; title: string; group: string; score: number; source: string; matched: string[] }[];
  repair?: { summary: string; steps: string[]; safety: string[]; parts: string[]; confidence?: number | null } | null;
}

export interface RunDetail {
  run: RunSummary;
  input?: Record<string, unknown>;
  nodes: RunNode[];
  result?: DiagnosisResult | null;
}

export interface StartRun {
  image: string;
  equipment?: string;
  ambient_c?: number;
  emissivity?: number;
  context?: string;
}

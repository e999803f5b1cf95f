/**
 * Thermal image helpers: decode `GET /api/blobs/{sha}/thermal` temperatures (base64 of
 * little-endian f32, row-major), map them through an iron palette to RGBA, and read the
 * figures of a diagnosis run (vision report, knowledge hits, repair plan) out of node outputs.
 */
/** How the flow graph draws a node (the API's `succeeded` is drawn as `done`). */
export type NodeStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped' | 'cancelled';

/** Decodes base64 little-endian f32s. Throws when the length does not fit `width × height`. */
export function decodeTemps(b64: string, width: number, height: number): Float32Array {
  const bin = atob(b64);
  const n = width * height;
  if (bin.length !== n * 4) {
    throw new Error(`thermal data has ${bin.length} bytes, expected ${n * 4} for ${width}×${height} f32 values`);
  }
  const buf = new ArrayBuffer(bin.length);
  const u8 = new Uint8Array(buf);
  for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
  const dv = new DataView(buf);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
  return out;
}

/** Iron palette stops (black → blue-violet → red → orange → yellow → white), as 0..1 → RGB. */
const IRON: [number, number, number, number][] = [
  [0.0, 0, 0, 0],
  [0.15, 32, 0, 140],
  [0.35, 145, 0, 160],
  [0.55, 225, 45, 40],
  [0.75, 250, 140, 0],
  [0.9, 255, 220, 40],
  [1.0, 255, 255, 245],
];

/** The iron palette colour of `t` in 0..1 (clamped). */
export function iron(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0));
  for (let i = 1; i < IRON.length; i++) {
    const b = IRON[i] as [number, number, number, number];
    const a = IRON[i - 1] as [number, number, number, number];
    if (x <= b[0]) {
      const f = (x - a[0]) / (b[0] - a[0] || 1);
      return [Math.round(a[1] + f * (b[1] - a[1])), Math.round(a[2] + f * (b[2] - a[2])), Math.round(a[3] + f * (b[3] - a[3]))];
    }
  }
  return [255, 255, 245];
}

/** RGBA pixels of the temperatures, scaled from `min` to `max`. */
export function toRgba(temps: Float32Array, min: number, max: number): Uint8ClampedArray {
  const out = new Uint8ClampedArray(temps.length * 4);
  const span = max - min || 1;
  // A 256-entry lookup keeps this fast for megapixel frames.
  const lut = Array.from({ length: 256 }, (_, i) => iron(i / 255));
  for (let i = 0; i < temps.length; i++) {
    const v = temps[i] as number;
    if (!Number.isFinite(v)) continue; // no value: left transparent
    const t = (v - min) / span;
    const c = lut[Math.min(255, Math.max(0, Math.round(t * 255)))] as [number, number, number];
    out[i * 4] = c[0];
    out[i * 4 + 1] = c[1];
    out[i * 4 + 2] = c[2];
    out[i * 4 + 3] = 255;
  }
  return out;
}

/** The structured result inside a node output (a CallToolResult's `structuredContent`, or the output itself). */
export function structured(output: unknown): Record<string, unknown> | null {
  if (!output || typeof output !== 'object') return null;
  const o = output as Record<string, unknown>;
  if (o.structuredContent && typeof o.structuredContent === 'object') return o.structuredContent as Record<string, unknown>;
  const content = o.content as { type?: string; text?: string }[] | undefined;
  if (Array.isArray(content) && !('severity' in o) && !('results' in o) && !('steps' in o)) {
    for (const c of content) {
      if (c.type === 'text' && c.text?.trim().startsWith('{')) {
        try {
          return JSON.parse(c.text) as Record<string, unknown>;
        } catch {
          // not JSON text
        }
      }
    }
    return null;
  }
  return o;
}

/** A node status from a `flow_progress` status or a stored node outcome. */
export function nodeStatus(s: string | undefined | null): NodeStatus {
  switch (s) {
    case 'running':
    case 'progress':
    case 'retrying':
      return 'running';
    case 'succeeded':
    case 'ok':
    case 'done':
      return 'done';
    case 'failed':
      return 'failed';
    case 'skipped':
      return 'skipped';
    case 'cancelled':
      return 'cancelled';
    default:
      return 'pending';
  }
}

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface VisionFigures {
  width: number | null;
  height: number | null;
  hotspot: Box | null;
  hottest: { x: number; y: number } | null;
  maxC: number | null;
  minC: number | null;
  deltaRef: number | null;
  band: string | null;
  klass: string | null;
  assessed: boolean;
  criterion: string | null;
  action: string | null;
  equipment: string | null;
  component: string | null;
  failureMode: string | null;
  hypothesis: string | null;
  notes: string[];
}

/** The figures the Diagnosis view shows, from the vision node's output. */
export function visionFigures(output: unknown): VisionFigures | null {
  const v = structured(output) as {
    image?: { width?: number; height?: number };
    hotspots?: { bbox?: Box; hottest?: { x: number; y: number } }[];
    hottest?: { x: number; y: number };
    max_c?: number | null;
    min_c?: number | null;
    delta_t_ref_c?: number | null;
    severity?: { band?: string | null; class?: string | null; assessed?: boolean; criterion?: string; action?: string };
    equipment?: string;
    component?: { kind?: string; group?: string };
    failure_mode?: { kind?: string; hypothesis?: string };
    notes?: string[];
  } | null;
  if (!v || (!v.severity && !v.hotspots)) return null;
  const top = v.hotspots?.[0];
  return {
    width: v.image?.width ?? null,
    height: v.image?.height ?? null,
    hotspot: top?.bbox ?? null,
    hottest: v.hottest ?? top?.hottest ?? null,
    maxC: v.max_c ?? null,
    minC: v.min_c ?? null,
    deltaRef: v.delta_t_ref_c ?? null,
    band: v.severity?.band ?? null,
    klass: v.severity?.class ?? null,
    assessed: v.severity?.assessed ?? false,
    criterion: v.severity?.criterion ?? null,
    action: v.severity?.action ?? null,
    equipment: v.equipment ?? null,
    component: v.component?.kind ?? null,
    failureMode: v.failure_mode?.kind ?? null,
    hypothesis: v.failure_mode?.hypothesis ?? null,
    notes: v.notes ?? [],
  };
}

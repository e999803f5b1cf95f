/**
 * Handshake helpers: which server a record is about, the capability diff of a handshake, and
 * the messages of its sequence diagram, built from the record, the negotiation steps and the
 * handshake frames (frames without a correlation on the upstream leg).
 */
import type { FrameEvent, HandshakeRecord, ServerView } from '../api/types';

export type Hs = HandshakeRecord & { server_name?: string };

/** The peer a handshake is with: the server's name (upstream) or the client's name (downstream). */
export function hsPeer(h: Hs, servers: Record<string, ServerView>): string {
  if (h.server_name) return h.server_name;
  if (h.server_id) {
    const v = Object.values(servers).find((s) => s.server_id === h.server_id);
    if (v) return v.name;
  }
  const info = (h.leg === 'downstream' ? h.client_info : h.server_info) as { name?: string } | null;
  return info?.name ?? (h.leg === 'downstream' ? 'client' : 'server');
}

export interface CapDiff {
  key: string;
  requested: boolean;
  granted: boolean;
}

function keys(v: unknown): string[] {
  return v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v as object) : [];
}

/**
 * Capabilities side by side: each key the client declared or the server granted. (Client and
 * server capabilities are different vocabularies in MCP; the table shows both so the operator
 * sees what each side brought.)
 */
export function capabilityDiff(h: HandshakeRecord): CapDiff[] {
  const c = new Set(keys(h.client_capabilities));
  const s = new Set(keys(h.server_capabilities));
  return [...new Set([...c, ...s])].sort().map((key) => ({ key, requested: c.has(key), granted: s.has(key) }));
}

export interface SeqMsg {
  /** 0 = client, 1 = router, 2 = upstream. */
  from: 0 | 1 | 2;
  to: 0 | 1 | 2;
  label: string;
  note?: string;
  kind: 'req' | 'resp' | 'fail' | 'note';
  at_ms: number;
}

function frameLabel(f: FrameEvent): { label: string; note?: string } {
  let body: { method?: string; params?: { protocolVersion?: string; supportedVersions?: string[] }; result?: { protocolVersion?: string; supportedVersions?: string[] }; error?: { message?: string } } = {};
  try {
    body = JSON.parse(f.body);
  } catch {
    // a frame that is not JSON keeps its method only
  }
  if (f.kind === 'request' || f.kind === 'notification') {
    const v = body.params?.protocolVersion ?? body.params?.supportedVersions?.join(', ');
    return { label: f.method ?? f.kind, note: v ? `offers ${v}` : undefined };
  }
  if (f.kind === 'error') return { label: `error ${body.error?.message ?? ''}`.trim() };
  const v = body.result?.protocolVersion ?? body.result?.supportedVersions?.join(', ');
  return { label: `result #${String(f.id)}`, note: v ? `version ${v}` : undefined };
}

/** Frames that belong to the handshake of `server` around `h` (upstream leg, no correlation). */
export function handshakeFrames(frames: readonly FrameEvent[], server: string, h: HandshakeRecord): FrameEvent[] {
  const end = h.at_ms + 500;
  const start = h.at_ms - Math.max(2_000, h.duration_ms * 2 + 500);
  const hsMethods = new Set(['initialize', 'notifications/initialized', 'server/discover']);
  return frames.filter((f) => {
    if (f.leg !== 'upstream' || f.correlation !== null || f.peer !== server) return false;
    const ms = f.at_us / 1000;
    if (ms < start || ms > end) return false;
    return f.method === null ? true : hsMethods.has(f.method);
  });
}

/** The messages of one handshake's sequence diagram. */
export function sequence(h: Hs, frames: FrameEvent[]): SeqMsg[] {
  const up = h.leg === 'upstream';
  const a: 0 | 1 = up ? 1 : 0; // initiator
  const b: 1 | 2 = up ? 2 : 1; // responder
  const out: SeqMsg[] = [];
  if (up && frames.length) {
    for (const f of frames) {
      const { label, note } = frameLabel(f);
      const outward = f.direction === 'out';
      out.push({
        from: outward ? 1 : 2,
        to: outward ? 2 : 1,
        label,
        note,
        kind: f.kind === 'error' ? 'fail' : f.kind === 'response' ? 'resp' : 'req',
        at_ms: f.at_us / 1000,
      });
    }
  } else {
    const modern = (h.era ?? '').includes('2026') || (h.era ?? '').toLowerCase() === 'modern';
    out.push({
      from: a,
      to: b,
      label: modern ? 'server/discover' : 'initialize',
      note: h.offered_versions.length ? `offers ${h.offered_versions.join(', ')}` : undefined,
      kind: 'req',
      at_ms: h.at_ms - h.duration_ms,
    });
    if (h.error) {
      out.push({ from: b, to: a, label: 'failed', note: h.error, kind: 'fail', at_ms: h.at_ms });
    } else {
      out.push({ from: b, to: a, label: 'result', note: h.chosen_version ? `version ${h.chosen_version}` : undefined, kind: 'resp', at_ms: h.at_ms });
      if (!modern) out.push({ from: a, to: b, label: 'notifications/initialized', kind: 'req', at_ms: h.at_ms });
    }
  }
  if (h.error && !out.some((m) => m.kind === 'fail')) {
    out.push({ from: b, to: a, label: 'failed', note: h.error, kind: 'fail', at_ms: h.at_ms });
  }
  if (h.tool_count !== null && !h.error) {
    out.push({ from: b, to: b, label: `${h.tool_count} tools listed`, kind: 'note', at_ms: h.at_ms });
  }
  return out;
}

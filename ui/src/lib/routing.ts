/**
 * The pure side of the Sessions & affinity view: matching sessions to the scheduler's
 * decisions, filtering them, and the bounded live list.
 *
 * A decision names its affinity key only by fingerprint: `k:` and the first 12 hex digits of
 * the key's SHA-256 (`crates/router/src/schedule/decision.rs`). A 2025-11-25 session's key is
 * its session id, and the sessions table shows that id as a tag: `s-` and the first 12 hex
 * digits of the same SHA-256 (`crates/gateway/src/sessions.rs`). So a session's fingerprint is
 * its tag with the prefix swapped — no id ever reaches the page.
 */
import type { Binding, Decision, SessionView } from '../api/types';

/** Decisions the view keeps (newest first). */
export const MAX_DECISIONS = 500;

/** The affinity-key fingerprint of a session tag (`s-…` → `k:…`), or null for anything else. */
export function sessionFingerprint(tag: string): string | null {
  return /^s-[0-9a-f]{12}$/.test(tag) ? 'k:' + tag.slice(2) : null;
}

/** The fingerprint of a raw key, the way the router computes it (crypto.subtle SHA-256). */
export async function fingerprint(key: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key)));
  return 'k:' + [...d.slice(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** fingerprint → a label for the session it belongs to (client name and tag). */
export function keyLabels(sessions: SessionView[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const s of sessions) {
    const fp = sessionFingerprint(s.tag);
    if (!fp) continue;
    const info = s.client_info as { name?: string } | null;
    m.set(fp, info?.name ? `${info.name} (${s.tag})` : s.tag);
  }
  return m;
}

export interface DecisionFilter {
  /** Only this key fingerprint. */
  key?: string | null;
  /** Only this group. */
  group?: string | null;
}

/** The decisions passing `f` (order kept). */
export function filterDecisions(ds: readonly Decision[], f: DecisionFilter): Decision[] {
  if (!f.key && !f.group) return ds as Decision[];
  return ds.filter((d) => (!f.key || d.key === f.key) && (!f.group || d.group === f.group));
}

/**
 * Folds `incoming` (oldest first, as events arrive) into `list` (newest first): new ids go on
 * top, a repeated id is ignored, and the list keeps at most `max`.
 */
export function mergeDecisions(list: readonly Decision[], incoming: readonly Decision[], max = MAX_DECISIONS): Decision[] {
  if (incoming.length === 0) return list as Decision[];
  const seen = new Set(list.map((d) => d.id));
  const fresh: Decision[] = [];
  for (const d of incoming) {
    if (seen.has(d.id)) continue;
    seen.add(d.id);
    fresh.push(d);
  }
  if (fresh.length === 0) return list as Decision[];
  fresh.reverse();
  const out = fresh.concat(list);
  out.sort((a, b) => b.at_ms - a.at_ms);
  return out.length > max ? out.slice(0, max) : out;
}

/** A binding's success rate, percent (null before its first call). */
export function successPct(b: Pick<Binding, 'ok' | 'failed'>): number | null {
  const n = b.ok + b.failed;
  return n === 0 ? null : (100 * b.ok) / n;
}

/** Flags shown next to a decision. */
export function decisionFlags(d: Pick<Decision, 'degraded' | 'attempt'>): string[] {
  const f: string[] = [];
  if (d.degraded) f.push('degraded');
  if (d.attempt > 0) f.push(`retry ${d.attempt}`);
  return f;
}

/**
 * A decision's reason for a one-line cell: without the layer's name in front and without the
 * key's fingerprint (both have columns of their own). The detail shows the whole sentence.
 */
export function shortReason(d: Pick<Decision, 'reason' | 'layer' | 'key'>): string {
  let r = d.reason;
  if (r.startsWith(d.layer + ': ')) r = r.slice(d.layer.length + 2);
  if (d.key) r = r.split(`key ${d.key} `).join('').split(`key ${d.key}:`).join('key:');
  return r;
}

/** Seconds as a short age: 42s, 3m 5s, 2h 10m. */
export function secs(s: number): string {
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${Math.floor(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/**
 * The frame filter language: space-separated terms, all of which must hold.
 *
 * - `server:NAME` — the upstream server (upstream leg) or client label (downstream leg)
 * - `method:NAME` — exact method; `method:tools/*` or `method:tools/` matches by prefix
 * - `dir:in|out` — direction of travel
 * - `leg:upstream|downstream` (`up`, `down` too)
 * - `kind:request|response|notification|error`
 * - `text:WORD` or a bare word — a case-insensitive substring of the body (or method)
 * - `-key:value` or `-word` negates a term; `"quoted words"` keep their spaces
 *
 * Parsing is a pure function so the page and the tests agree on what a query means.
 */
import type { FrameEvent } from '../generated/events';

export type FilterKey = 'server' | 'method' | 'dir' | 'leg' | 'kind' | 'text';

export interface FilterTerm {
  key: FilterKey;
  value: string;
  negate: boolean;
}

export interface ParsedFilter {
  terms: FilterTerm[];
  /** One sentence per term that could not be understood (those terms are left out). */
  errors: string[];
}

const KEYS: readonly FilterKey[] = ['server', 'method', 'dir', 'leg', 'kind', 'text'];
const KINDS = ['request', 'response', 'notification', 'error'];

/** Splits a query into raw tokens, keeping quoted parts together and dropping the quotes. */
export function tokenize(query: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inQuote = false;
  let has = false;
  for (const ch of query) {
    if (ch === '"') {
      inQuote = !inQuote;
      has = true;
    } else if (!inQuote && /\s/.test(ch)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += ch;
      has = true;
    }
  }
  if (has) out.push(cur);
  return out;
}

/** Parses a filter query into terms; never throws. */
export function parseFilter(query: string): ParsedFilter {
  const terms: FilterTerm[] = [];
  const errors: string[] = [];
  for (const raw of tokenize(query)) {
    let tok = raw;
    let negate = false;
    if (tok.startsWith('-') && tok.length > 1) {
      negate = true;
      tok = tok.slice(1);
    }
    const colon = tok.indexOf(':');
    const maybeKey = colon > 0 ? tok.slice(0, colon).toLowerCase() : '';
    if (colon > 0 && /^[a-z]+$/.test(maybeKey) && !tok.startsWith('//', colon + 1)) {
      const value = tok.slice(colon + 1);
      if (!(KEYS as readonly string[]).includes(maybeKey)) {
        errors.push(`unknown filter key "${maybeKey}" (use ${KEYS.join(', ')})`);
        continue;
      }
      const key = maybeKey as FilterKey;
      if (value === '') {
        errors.push(`"${key}:" needs a value`);
        continue;
      }
      const norm = normalise(key, value);
      if (typeof norm !== 'string') {
        errors.push(norm.error);
        continue;
      }
      terms.push({ key, value: norm, negate });
    } else {
      terms.push({ key: 'text', value: tok.toLowerCase(), negate });
    }
  }
  return { terms, errors };
}

function normalise(key: FilterKey, value: string): string | { error: string } {
  const v = value.toLowerCase();
  switch (key) {
    case 'dir':
      return v === 'in' || v === 'out' ? v : { error: `dir: must be in or out, not "${value}"` };
    case 'leg':
      if (v === 'upstream' || v === 'up') return 'upstream';
      if (v === 'downstream' || v === 'down') return 'downstream';
      return { error: `leg: must be upstream or downstream, not "${value}"` };
    case 'kind':
      return KINDS.includes(v) ? v : { error: `kind: must be one of ${KINDS.join(', ')}, not "${value}"` };
    case 'server':
    case 'text':
      return v;
    case 'method':
      return value; // methods are case-sensitive on the wire
  }
}

function termHolds(t: FilterTerm, f: FrameEvent): boolean {
  switch (t.key) {
    case 'server':
      return f.peer.toLowerCase() === t.value;
    case 'method': {
      const m = f.method ?? '';
      if (t.value.endsWith('*')) return m.startsWith(t.value.slice(0, -1));
      if (t.value.endsWith('/')) return m.startsWith(t.value);
      return m === t.value;
    }
    case 'dir':
      return f.direction === t.value;
    case 'leg':
      return f.leg === t.value;
    case 'kind':
      return f.kind === t.value;
    case 'text':
      return f.body.toLowerCase().includes(t.value) || (f.method ?? '').toLowerCase().includes(t.value);
  }
}

/** Whether a frame passes every term. An empty filter passes everything. */
export function matchFrame(filter: ParsedFilter, frame: FrameEvent): boolean {
  for (const t of filter.terms) {
    if (termHolds(t, frame) === t.negate) return false;
  }
  return true;
}

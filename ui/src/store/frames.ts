/**
 * The frame log: a bounded ring outside React, request→response pairing for latency, and the
 * filtered index the Frames view renders. Frames are pushed as they arrive (thousands a second);
 * the view learns of them through `framesVersion`, bumped at most once per animation frame.
 */
import { create } from 'zustand';
import type { FrameEvent } from '../api/types';
import { RingBuffer } from '../lib/ring';
import { FlushScheduler } from '../lib/flush';
import { matchFrame, parseFilter, type ParsedFilter } from '../lib/filter';

/** Frames kept in the page. */
export const FRAME_CAPACITY = 50_000;
/** Requests waiting for their response, per page (oldest forgotten first). */
const PENDING_CAPACITY = 20_000;

export interface FrameRow {
  seq: number;
  f: FrameEvent;
  /** For a response: microseconds since its request; for a request: set once answered. */
  latencyUs?: number;
  /** The seq of the request (for a response) or of the response (for a request). */
  pairSeq?: number;
}

export const ring = new RingBuffer<FrameRow>(FRAME_CAPACITY);
const pending = new Map<string, number>();

/**
 * Seqs of the held rows per correlation, oldest first (`head` skips the evicted ones): the
 * selection's linked frames without scanning the ring. Bounded with the ring: a row's seq leaves
 * its list when the ring evicts the row, and an emptied list leaves the map.
 */
interface CorrSeqs {
  seqs: number[];
  head: number;
}
const byCorrelation = new Map<number, CorrSeqs>();

function forgetCorrelation(row: FrameRow): void {
  const c = row.f.correlation;
  if (c === null) return;
  const e = byCorrelation.get(c);
  if (!e) return;
  // Rows leave the ring oldest first, so the evicted row is the head of its list.
  if (e.seqs[e.head] === row.seq) e.head += 1;
  if (e.head >= e.seqs.length) byCorrelation.delete(c);
  else if (e.head > 1024 && e.head * 2 > e.seqs.length) {
    e.seqs = e.seqs.slice(e.head);
    e.head = 0;
  }
}

/** Correlations tracked now (for tests: bounded by the ring). */
export function correlationCount(): number {
  return byCorrelation.size;
}

let filter: ParsedFilter = parseFilter('');
/** Seqs of held rows passing the filter, oldest first: all legs, then per leg. */
let index: number[] = [];
let indexDown: number[] = [];
let indexUp: number[] = [];
let indexedUpTo = 0;
let frozen = false;

interface FramesState {
  /** Bumped once per animation frame when frames arrived (or the filter changed). */
  version: number;
  /** Frames received in total (including any evicted). */
  received: number;
  /** Frames the page dropped from its ring to stay bounded. */
  evicted: number;
  query: string;
  errors: string[];
  paused: boolean;
}

export const useFrames = create<FramesState>(() => ({
  version: 0,
  received: 0,
  evicted: 0,
  query: '',
  errors: [],
  paused: false,
}));

function pairKey(f: FrameEvent): string | null {
  if (f.id === null) return null;
  // A request travels one way and its answer the other: key on the leg, peer and id.
  return `${f.leg}\u0000${f.peer}\u0000${typeof f.id}:${String(f.id)}`;
}

/** Time of the newest frame held (to skip what a reconnect's snapshot repeats). */
export function newestAtUs(): number {
  return ring.at(ring.length - 1)?.f.at_us ?? -Infinity;
}

/** Adds one frame (no React work; the flush scheduler publishes it). */
export function pushFrame(f: FrameEvent): void {
  const row: FrameRow = { seq: 0, f };
  if (ring.length === ring.capacity) {
    const gone = ring.at(0);
    if (gone) forgetCorrelation(gone);
  }
  row.seq = ring.push(row);
  if (f.correlation !== null) {
    const e = byCorrelation.get(f.correlation);
    if (e) e.seqs.push(row.seq);
    else byCorrelation.set(f.correlation, { seqs: [row.seq], head: 0 });
  }
  const key = pairKey(f);
  if (key !== null) {
    if (f.kind === 'request') {
      pending.set(key, row.seq);
      if (pending.size > PENDING_CAPACITY) {
        const oldest = pending.keys().next().value;
        if (oldest !== undefined) pending.delete(oldest);
      }
    } else if (f.kind === 'response' || f.kind === 'error') {
      const reqSeq = pending.get(key);
      if (reqSeq !== undefined) {
        pending.delete(key);
        const req = ring.bySeq(reqSeq);
        if (req) {
          row.latencyUs = f.at_us - req.f.at_us;
          row.pairSeq = reqSeq;
          req.latencyUs = row.latencyUs;
          req.pairSeq = row.seq;
        }
      }
    }
  }
  scheduler.mark();
}

function dropEvicted(xs: number[], first: number): number[] {
  let drop = 0;
  while (drop < xs.length && (xs[drop] as number) < first) drop++;
  return drop ? xs.slice(drop) : xs;
}

function refreshIndex(full: boolean): void {
  if (frozen) return;
  const first = ring.firstSeq;
  if (full) {
    index = [];
    indexDown = [];
    indexUp = [];
    indexedUpTo = first;
  }
  index = dropEvicted(index, first);
  indexDown = dropEvicted(indexDown, first);
  indexUp = dropEvicted(indexUp, first);
  const start = Math.max(indexedUpTo, first);
  const end = ring.total;
  const any = filter.terms.length === 0;
  for (let s = start; s < end; s++) {
    const row = ring.bySeq(s);
    if (!row || (!any && !matchFrame(filter, row.f))) continue;
    index.push(s);
    (row.f.leg === 'downstream' ? indexDown : indexUp).push(s);
  }
  indexedUpTo = end;
}

/** Shortest gap between two view updates in the page (none in unit tests, which step by hand). */
const FLUSH_INTERVAL_MS = import.meta.env.MODE === 'test' ? 0 : 100;

const scheduler = new FlushScheduler(
  () => {
    if (frozen) {
      // Paused: only the counts move (the lists are frozen); skip the update when they did not.
      const st = useFrames.getState();
      if (st.received === ring.total && st.evicted === ring.evicted) return;
      useFrames.setState({ received: ring.total, evicted: ring.evicted });
      return;
    }
    refreshIndex(false);
    useFrames.setState((s) => ({ version: s.version + 1, received: ring.total, evicted: ring.evicted }));
  },
  undefined,
  FLUSH_INTERVAL_MS,
);

/** The seqs the view shows now (filtered; frozen while paused): all legs, or one. */
export function visibleSeqs(leg?: 'downstream' | 'upstream'): readonly number[] {
  return leg === 'downstream' ? indexDown : leg === 'upstream' ? indexUp : index;
}

/** Held rows with this correlation (both legs), oldest first: at most `limit` of them. */
export function correlated(correlation: number, limit = Infinity): FrameRow[] {
  const e = byCorrelation.get(correlation);
  const out: FrameRow[] = [];
  if (!e) return out;
  for (let i = e.head; i < e.seqs.length && out.length < limit; i++) {
    const r = ring.bySeq(e.seqs[i] as number);
    if (r) out.push(r);
  }
  return out;
}

/** How many held rows have this correlation. */
export function correlatedCount(correlation: number): number {
  const e = byCorrelation.get(correlation);
  return e ? e.seqs.length - e.head : 0;
}

/** The current filter (for exports that pass leg/server to the router). */
export function currentFilter(): ParsedFilter {
  return filter;
}

/** Sets the filter query (re-indexes the held frames once). */
export function setQuery(query: string): void {
  filter = parseFilter(query);
  refreshIndex(true);
  useFrames.setState((s) => ({ query, errors: filter.errors, version: s.version + 1 }));
}

/** Pauses or resumes the view (frames keep arriving into the ring either way). */
export function setPaused(paused: boolean): void {
  frozen = paused;
  if (!paused) refreshIndex(false);
  useFrames.setState((s) => ({ paused, version: s.version + 1 }));
}

/** Forgets every held frame. */
export function clearFrames(): void {
  ring.clear();
  pending.clear();
  byCorrelation.clear();
  index = [];
  indexDown = [];
  indexUp = [];
  indexedUpTo = ring.total;
  useFrames.setState((s) => ({ version: s.version + 1, evicted: ring.evicted }));
}

/** The held rows (all, unfiltered) as JSON lines, for export. */
export function framesAsJsonLines(): string {
  return ring
    .toArray()
    .map((r) => JSON.stringify(r.f))
    .join('\n');
}

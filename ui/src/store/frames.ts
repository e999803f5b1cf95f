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
  row.seq = ring.push(row);
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

const scheduler = new FlushScheduler(() => {
  refreshIndex(false);
  useFrames.setState((s) => ({ version: s.version + 1, received: ring.total, evicted: ring.evicted }));
});

/** The seqs the view shows now (filtered; frozen while paused): all legs, or one. */
export function visibleSeqs(leg?: 'downstream' | 'upstream'): readonly number[] {
  return leg === 'downstream' ? indexDown : leg === 'upstream' ? indexUp : index;
}

/** Held rows with this correlation (both legs), oldest first. */
export function correlated(correlation: number): FrameRow[] {
  const out: FrameRow[] = [];
  for (let i = 0; i < ring.length; i++) {
    const r = ring.at(i);
    if (r && r.f.correlation === correlation) out.push(r);
  }
  return out;
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

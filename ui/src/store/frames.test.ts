import { afterEach, describe, expect, it } from 'vitest';
import { clearFrames, correlated, correlatedCount, correlationCount, FRAME_CAPACITY, pushFrame, ring, setPaused, setQuery, useFrames, visibleSeqs } from './frames';
import { matchFrame, parseFilter } from '../lib/filter';
import type { FrameEvent } from '../api/types';

const nextFrame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));

function frame(i: number, over: Partial<FrameEvent> = {}): FrameEvent {
  return {
    leg: i % 2 ? 'upstream' : 'downstream', peer: 'everything', transport: 'http', direction: 'out', size: 10,
    kind: 'request', method: 'tools/call', id: i, correlation: i, sse_id: null, ws_frame: null, at_us: i, body: `{"n":${i}}`, ...over,
  };
}

describe('frame store', () => {
  afterEach(() => {
    setQuery('');
    setPaused(false);
    clearFrames();
  });

  it('publishes 5 000 frames in one view update', async () => {
    const v0 = useFrames.getState().version;
    const before = ring.total;
    for (let i = 0; i < 5_000; i++) pushFrame(frame(i));
    expect(useFrames.getState().version).toBe(v0);
    await nextFrame();
    expect(useFrames.getState().version).toBe(v0 + 1);
    expect(useFrames.getState().received - before).toBe(5_000);
    expect(visibleSeqs()).toHaveLength(5_000);
    expect(visibleSeqs('downstream')).toHaveLength(2_500);
    expect(visibleSeqs('upstream')).toHaveLength(2_500);
  });

  it('filters the held frames and the ones that arrive after', async () => {
    for (let i = 0; i < 10; i++) pushFrame(frame(i, { method: i < 5 ? 'ping' : 'tools/call' }));
    await nextFrame();
    setQuery('-method:ping');
    expect(visibleSeqs()).toHaveLength(5);
    pushFrame(frame(99, { method: 'ping' }));
    pushFrame(frame(100));
    await nextFrame();
    expect(visibleSeqs()).toHaveLength(6);
  });

  it('pairs a response with its request for latency', async () => {
    pushFrame(frame(1, { leg: 'upstream', id: 7, at_us: 1_000 }));
    pushFrame(frame(2, { leg: 'upstream', id: 7, kind: 'response', method: null, direction: 'in', at_us: 4_500 }));
    await nextFrame();
    const resp = ring.at(ring.length - 1);
    const req = ring.at(ring.length - 2);
    expect(resp?.latencyUs).toBe(3_500);
    expect(req?.pairSeq).toBe(resp?.seq);
  });

  it('freezes the view while paused and catches up on resume', async () => {
    pushFrame(frame(1));
    await nextFrame();
    setPaused(true);
    const shown = visibleSeqs().length;
    for (let i = 0; i < 50; i++) pushFrame(frame(i));
    await nextFrame();
    expect(visibleSeqs().length).toBe(shown);
    setPaused(false);
    expect(visibleSeqs().length).toBe(shown + 50);
  });

  /** The filtered index built from scratch over the held rows. */
  function fullRebuild(query: string, leg?: 'downstream' | 'upstream'): number[] {
    const f = parseFilter(query);
    const out: number[] = [];
    for (let i = 0; i < ring.length; i++) {
      const r = ring.at(i);
      if (r && (f.terms.length === 0 || matchFrame(f, r.f)) && (!leg || r.f.leg === leg)) out.push(r.seq);
    }
    return out;
  }

  it('keeps the incremental index equal to a full rebuild, across flushes and evictions', async () => {
    setQuery('-method:ping');
    let n = 0;
    // Several flushes, the last ones past the ring's capacity (the oldest rows evicted).
    for (const batch of [10, 1_000, FRAME_CAPACITY, 7_777]) {
      for (let i = 0; i < batch; i++, n++) pushFrame(frame(n, { method: n % 3 ? 'tools/call' : 'ping' }));
      await nextFrame();
      expect(visibleSeqs()).toEqual(fullRebuild('-method:ping'));
      expect(visibleSeqs('downstream')).toEqual(fullRebuild('-method:ping', 'downstream'));
      expect(visibleSeqs('upstream')).toEqual(fullRebuild('-method:ping', 'upstream'));
    }
    expect(ring.length).toBe(FRAME_CAPACITY);
  });

  it('finds linked frames through the correlation map, equal to a scan of the ring', async () => {
    for (let i = 0; i < 1_000; i++) pushFrame(frame(i, { correlation: i % 7 === 0 ? null : i % 10 }));
    await nextFrame();
    for (let c = 0; c < 10; c++) {
      const scan = ring.toArray().filter((r) => r.f.correlation === c);
      expect(correlated(c).map((r) => r.seq)).toEqual(scan.map((r) => r.seq));
      expect(correlatedCount(c)).toBe(scan.length);
      expect(correlated(c, 5).map((r) => r.seq)).toEqual(scan.slice(0, 5).map((r) => r.seq));
    }
    expect(correlated(42)).toEqual([]);
  });

  it('evicts correlations with the ring (the map stays bounded)', async () => {
    // One long call (correlation 1) and many short ones, well past the capacity.
    const total = FRAME_CAPACITY * 2 + 123;
    for (let i = 0; i < total; i++) pushFrame(frame(i, { correlation: i % 2 ? 1 : 1_000 + i }));
    await nextFrame();
    expect(ring.length).toBe(FRAME_CAPACITY);
    // Only the correlations of held rows are tracked: the long call plus the held short ones.
    const held = new Set(ring.toArray().map((r) => r.f.correlation));
    expect(correlationCount()).toBe(held.size);
    const scan = ring.toArray().filter((r) => r.f.correlation === 1);
    expect(correlatedCount(1)).toBe(scan.length);
    expect(correlated(1).map((r) => r.seq)).toEqual(scan.map((r) => r.seq));
    // An evicted short call is gone from the map.
    expect(correlatedCount(1_000)).toBe(0);
    clearFrames();
    expect(correlationCount()).toBe(0);
  });

  it('publishes only the counts while paused (no list update)', async () => {
    pushFrame(frame(1));
    await nextFrame();
    setPaused(true);
    const v = useFrames.getState().version;
    const received = useFrames.getState().received;
    for (let i = 0; i < 20; i++) pushFrame(frame(i));
    await nextFrame();
    expect(useFrames.getState().version).toBe(v);
    expect(useFrames.getState().received).toBe(received + 20);
  });
});

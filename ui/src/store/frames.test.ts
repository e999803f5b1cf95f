import { afterEach, describe, expect, it } from 'vitest';
import { clearFrames, pushFrame, ring, setPaused, setQuery, useFrames, visibleSeqs } from './frames';
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
});

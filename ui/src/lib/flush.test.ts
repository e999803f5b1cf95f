import { describe, expect, it } from 'vitest';
import { FlushScheduler, type FrameClock } from './flush';

/** A clock the test advances by hand. */
function manualClock() {
  let next = 1;
  const queued = new Map<number, () => void>();
  const clock: FrameClock = {
    request(cb) {
      const h = next++;
      queued.set(h, cb);
      return h;
    },
    cancel(h) {
      queued.delete(h);
    },
  };
  const tick = () => {
    const cbs = [...queued.values()];
    queued.clear();
    cbs.forEach((cb) => cb());
  };
  return { clock, tick, queued };
}

describe('FlushScheduler', () => {
  it('runs one flush per frame however many changes were marked', () => {
    const { clock, tick, queued } = manualClock();
    let flushed = 0;
    const s = new FlushScheduler(() => flushed++, clock);
    for (let i = 0; i < 5_000; i++) s.mark();
    expect(queued.size).toBe(1);
    expect(flushed).toBe(0);
    tick();
    expect(flushed).toBe(1);
    tick();
    expect(flushed).toBe(1);
  });

  it('schedules again after a flush', () => {
    const { clock, tick } = manualClock();
    let flushed = 0;
    const s = new FlushScheduler(() => flushed++, clock);
    s.mark();
    tick();
    s.mark();
    expect(s.scheduled).toBe(true);
    tick();
    expect(flushed).toBe(2);
    expect(s.count).toBe(2);
  });

  it('a change marked during a flush gets its own next frame', () => {
    const { clock, tick } = manualClock();
    let flushed = 0;
    const s: FlushScheduler = new FlushScheduler(() => {
      flushed++;
      if (flushed === 1) s.mark();
    }, clock);
    s.mark();
    tick();
    expect(s.scheduled).toBe(true);
    tick();
    expect(flushed).toBe(2);
  });

  it('dispose cancels the pending flush', () => {
    const { clock, tick } = manualClock();
    let flushed = 0;
    const s = new FlushScheduler(() => flushed++, clock);
    s.mark();
    s.dispose();
    tick();
    expect(flushed).toBe(0);
  });

  it('spaces flushes by the minimum interval (a frame that comes sooner waits for a later one)', () => {
    const { clock, tick } = manualClock();
    let now = 0;
    let flushed = 0;
    const s = new FlushScheduler(() => flushed++, clock, 100, () => now);
    s.mark();
    tick();
    expect(flushed).toBe(1);
    s.mark();
    now = 16;
    tick();
    now = 50;
    tick();
    expect(flushed).toBe(1);
    expect(s.scheduled).toBe(true);
    now = 116;
    tick();
    expect(flushed).toBe(2);
    expect(s.scheduled).toBe(false);
    // Nothing marked: no flush however many frames pass.
    now = 1_000;
    tick();
    expect(flushed).toBe(2);
  });
});

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
});

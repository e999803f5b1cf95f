import { describe, expect, it } from 'vitest';
import { RingBuffer } from './ring';

describe('RingBuffer', () => {
  it('keeps items in order until full', () => {
    const r = new RingBuffer<number>(4);
    [1, 2, 3].forEach((n) => r.push(n));
    expect(r.toArray()).toEqual([1, 2, 3]);
    expect(r.length).toBe(3);
    expect(r.evicted).toBe(0);
  });

  it('evicts the oldest when full and counts what it evicted', () => {
    const r = new RingBuffer<number>(3);
    for (let i = 0; i < 10; i++) r.push(i);
    expect(r.toArray()).toEqual([7, 8, 9]);
    expect(r.total).toBe(10);
    expect(r.evicted).toBe(7);
    expect(r.firstSeq).toBe(7);
    expect(r.at(0)).toBe(7);
    expect(r.at(3)).toBeUndefined();
  });

  it('finds items by sequence number while they are held', () => {
    const r = new RingBuffer<string>(2);
    const a = r.push('a');
    const b = r.push('b');
    const c = r.push('c');
    expect([a, b, c]).toEqual([0, 1, 2]);
    expect(r.bySeq(a)).toBeUndefined();
    expect(r.bySeq(b)).toBe('b');
    expect(r.bySeq(c)).toBe('c');
  });

  it('clears but keeps counting', () => {
    const r = new RingBuffer<number>(5);
    r.pushAll([1, 2, 3]);
    r.clear();
    expect(r.length).toBe(0);
    expect(r.push(4)).toBe(3);
    expect(r.toArray()).toEqual([4]);
  });

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new RingBuffer(0)).toThrow(/positive integer/);
  });

  it('takes 50 000 frames a second without growing', () => {
    const r = new RingBuffer<{ n: number }>(50_000);
    const t0 = performance.now();
    for (let i = 0; i < 200_000; i++) r.push({ n: i });
    const ms = performance.now() - t0;
    expect(r.length).toBe(50_000);
    expect(r.at(0)?.n).toBe(150_000);
    // 200 000 pushes is 40 s of traffic at 5 000/s; it must take a small fraction of that.
    expect(ms).toBeLessThan(2_000);
  });
});

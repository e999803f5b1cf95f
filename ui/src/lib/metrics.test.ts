import { describe, expect, it } from 'vitest';
import { MetricSeries, percentile } from './metrics';
import type { TraceRecord } from '../generated/events';

const t = (at_ms: number, latency_ms: number, outcome = 'ok') => ({ at_ms, latency_ms, outcome }) as TraceRecord;

describe('MetricSeries', () => {
  it('computes percentiles by rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 0.5)).toBe(50);
    expect(percentile(xs, 0.99)).toBe(99);
    expect(percentile([], 0.5)).toBeNull();
  });

  it('buckets calls per second with errors and latency', () => {
    const m = new MetricSeries(10);
    for (let i = 0; i < 10; i++) m.add(t(5_000 + i, i + 1));
    m.add(t(5_500, 100, 'error'));
    const [xs, calls, errors, p50, p99] = m.series(6);
    expect(xs.at(-1)).toBe(5);
    expect(calls.at(-1)).toBe(11);
    expect(errors.at(-1)).toBe(1);
    expect(p50.at(-1)).toBe(6);
    expect(p99.at(-1)).toBe(100);
    expect(m.summary(6, 10).perS).toBeCloseTo(1.1);
  });

  it('forgets seconds outside its window', () => {
    const m = new MetricSeries(5);
    m.add(t(1_000, 1));
    m.add(t(100_000, 1));
    const [, calls] = m.series(101);
    expect(calls.reduce((a, b) => a + b, 0)).toBe(1);
  });
});

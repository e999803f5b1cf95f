/**
 * Per-second call figures from trace records, for the live chart: calls, errors and the p50/p99
 * latency of each second over a sliding window. Pure data; the Overview reads it once a second.
 */
import type { TraceRecord } from '../generated/events';

interface Bucket {
  sec: number;
  calls: number;
  errors: number;
  latencies: number[];
}

/** Latency samples kept per second (a random subset beyond this). */
const SAMPLES_PER_SECOND = 2_000;

export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[i] ?? null;
}

export class MetricSeries {
  private buckets = new Map<number, Bucket>();

  constructor(readonly windowSeconds: number) {}

  reset(): void {
    this.buckets.clear();
  }

  /** Adds one finished call. */
  add(t: TraceRecord): void {
    const sec = Math.floor(t.at_ms / 1000);
    let b = this.buckets.get(sec);
    if (!b) {
      b = { sec, calls: 0, errors: 0, latencies: [] };
      this.buckets.set(sec, b);
      this.prune(sec);
    }
    b.calls += 1;
    if (t.outcome !== 'ok') b.errors += 1;
    if (b.latencies.length < SAMPLES_PER_SECOND) b.latencies.push(t.latency_ms);
    else b.latencies[Math.floor(Math.random() * SAMPLES_PER_SECOND)] = t.latency_ms;
  }

  private prune(newest: number): void {
    for (const k of this.buckets.keys()) if (k <= newest - this.windowSeconds) this.buckets.delete(k);
  }

  /**
   * Columns for the chart, one per second up to `nowSec` (exclusive of the current, partial
   * second): x (unix s), calls/s, errors/s, p50 ms, p99 ms.
   */
  series(nowSec: number): [number[], number[], number[], (number | null)[], (number | null)[]] {
    const xs: number[] = [];
    const calls: number[] = [];
    const errors: number[] = [];
    const p50: (number | null)[] = [];
    const p99: (number | null)[] = [];
    for (let s = nowSec - this.windowSeconds; s < nowSec; s++) {
      const b = this.buckets.get(s);
      xs.push(s);
      calls.push(b?.calls ?? 0);
      errors.push(b?.errors ?? 0);
      const sorted = b ? [...b.latencies].sort((a, c) => a - c) : [];
      p50.push(percentile(sorted, 0.5));
      p99.push(percentile(sorted, 0.99));
    }
    return [xs, calls, errors, p50, p99];
  }

  /** Totals over the last `seconds` whole seconds before `nowSec`. */
  summary(nowSec: number, seconds = 10): { perS: number; errors: number; p50: number | null; p99: number | null } {
    let calls = 0;
    let errors = 0;
    const lat: number[] = [];
    for (let s = nowSec - seconds; s < nowSec; s++) {
      const b = this.buckets.get(s);
      if (!b) continue;
      calls += b.calls;
      errors += b.errors;
      lat.push(...b.latencies);
    }
    lat.sort((a, c) => a - c);
    return { perS: calls / seconds, errors, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) };
  }
}

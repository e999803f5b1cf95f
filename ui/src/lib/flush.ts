/**
 * Coalesces "something changed" signals into at most one view update per animation frame.
 *
 * The event stream calls `mark()` for every batch (thousands a second); the scheduler asks the
 * frame clock for one callback and runs the flush there, once, however many marks came in. The
 * clock is injected so tests drive it by hand and the page uses `requestAnimationFrame`.
 */
export interface FrameClock {
  request(cb: () => void): number;
  cancel(handle: number): void;
}

/** The browser's animation-frame clock (a 16 ms timer where there is none, e.g. a hidden tab in tests). */
export const animationFrameClock: FrameClock = {
  request: (cb) =>
    typeof requestAnimationFrame === 'function'
      ? requestAnimationFrame(() => cb())
      : (setTimeout(cb, 16) as unknown as number),
  cancel: (h) => (typeof cancelAnimationFrame === 'function' ? cancelAnimationFrame(h) : clearTimeout(h)),
};

export class FlushScheduler {
  private pending: number | null = null;
  private flushes = 0;
  private lastAt = -Infinity;

  /**
   * `minIntervalMs` spaces flushes at least that far apart (a frame that comes sooner asks for
   * the next one): under a storm the view re-renders a few times a second instead of sixty,
   * which leaves the main thread free to answer the operator. 0 = every animation frame.
   */
  constructor(
    private readonly flush: () => void,
    private readonly clock: FrameClock = animationFrameClock,
    private readonly minIntervalMs = 0,
    private readonly now: () => number = () => (typeof performance !== 'undefined' ? performance.now() : Date.now()),
  ) {}

  /** Notes a change; the flush runs on the next frame (once, however often this is called). */
  mark(): void {
    if (this.pending !== null) return;
    const tick = () => {
      if (this.minIntervalMs > 0 && this.now() - this.lastAt < this.minIntervalMs) {
        this.pending = this.clock.request(tick);
        return;
      }
      this.pending = null;
      this.flushes += 1;
      this.lastAt = this.now();
      this.flush();
    };
    this.pending = this.clock.request(tick);
  }

  /** Whether a flush is scheduled. */
  get scheduled(): boolean {
    return this.pending !== null;
  }

  /** Flushes run so far. */
  get count(): number {
    return this.flushes;
  }

  /** Cancels a scheduled flush. */
  dispose(): void {
    if (this.pending !== null) this.clock.cancel(this.pending);
    this.pending = null;
  }
}

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

  constructor(
    private readonly flush: () => void,
    private readonly clock: FrameClock = animationFrameClock,
  ) {}

  /** Notes a change; the flush runs on the next frame (once, however often this is called). */
  mark(): void {
    if (this.pending !== null) return;
    this.pending = this.clock.request(() => {
      this.pending = null;
      this.flushes += 1;
      this.flush();
    });
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

/**
 * A bounded ring buffer that lives outside React: frames arrive thousands per second and are
 * pushed here; views read a window of it when the flush scheduler says something changed.
 *
 * Every item gets a sequence number (`seq`, counting from 0 for the first item ever pushed), so
 * a view can keep a selection or a scroll anchor across evictions: an item is still held while
 * `seq >= ring.firstSeq`.
 */
export class RingBuffer<T> {
  private readonly items: (T | undefined)[];
  private start = 0;
  private count = 0;
  private pushed = 0;

  /** A buffer holding at most `capacity` items (the oldest are evicted first). */
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`ring capacity must be a positive integer, got ${capacity}`);
    }
    this.items = new Array<T | undefined>(capacity);
  }

  /** Items held now. */
  get length(): number {
    return this.count;
  }

  /** Items ever pushed (held + evicted). */
  get total(): number {
    return this.pushed;
  }

  /** Items evicted to make room. */
  get evicted(): number {
    return this.pushed - this.count;
  }

  /** Sequence number of the oldest item held. */
  get firstSeq(): number {
    return this.pushed - this.count;
  }

  /** Appends one item, evicting the oldest when full; returns its sequence number. */
  push(item: T): number {
    const end = (this.start + this.count) % this.capacity;
    this.items[end] = item;
    if (this.count < this.capacity) {
      this.count += 1;
    } else {
      this.start = (this.start + 1) % this.capacity;
    }
    this.pushed += 1;
    return this.pushed - 1;
  }

  /** Appends many items. */
  pushAll(items: Iterable<T>): void {
    for (const item of items) this.push(item);
  }

  /** The `i`-th item held (0 = oldest), or undefined out of range. */
  at(i: number): T | undefined {
    if (i < 0 || i >= this.count) return undefined;
    return this.items[(this.start + i) % this.capacity];
  }

  /** The item with sequence number `seq`, if still held. */
  bySeq(seq: number): T | undefined {
    return this.at(seq - this.firstSeq);
  }

  /** Items held, oldest first (a copy). */
  toArray(): T[] {
    const out: T[] = new Array<T>(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.items[(this.start + i) % this.capacity] as T;
    return out;
  }

  /** Drops every item; sequence numbers keep counting. */
  clear(): void {
    this.items.fill(undefined);
    this.start = 0;
    // Everything held counts as evicted from now on.
    this.count = 0;
  }
}

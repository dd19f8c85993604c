/** Counting semaphore: at most `permits` holders at once; waiters are served in arrival order. */
export class Semaphore {
  private available: number;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly permits: number) {
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError(`permits must be a positive integer, got ${permits}`);
    this.available = permits;
  }

  get inUse(): number {
    return this.permits - this.available;
  }

  async acquire(): Promise<() => void> {
    if (this.available > 0) {
      this.available--;
    } else {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.available++;
    };
  }
}

/**
 * Weighted semaphore over a byte budget (e.g. the trace memory of runs in flight): a holder takes
 * `bytes` of `capacity`, waiters are served strictly in arrival order (a big request is not starved
 * by small ones). A request larger than the whole budget is clamped to it, so it runs alone instead
 * of waiting forever. `charge` records bytes that are already held (learnt only after a read) without
 * waiting: the budget may then be exceeded, and later requests wait until it is back below capacity.
 */
export class ByteBudget {
  private used = 0;
  private readonly waiters: { bytes: number; resolve: () => void }[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
  }

  /** Bytes held now (may exceed the capacity after a `charge`). */
  get inUse(): number {
    return this.used;
  }

  /** Requests waiting. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Waits until `bytes` (clamped to the capacity) fit; returns the release (idempotent). */
  async acquire(bytes: number): Promise<() => void> {
    const n = this.clamp(bytes);
    if (this.waiters.length === 0 && this.used + n <= this.capacity) this.used += n;
    else await new Promise<void>((resolve) => this.waiters.push({ bytes: n, resolve }));
    return this.releaser(n);
  }

  /** Takes `bytes` at once, even beyond the capacity; returns the release (idempotent). */
  charge(bytes: number): () => void {
    const n = Math.max(0, Math.ceil(bytes));
    this.used += n;
    return this.releaser(n);
  }

  private clamp(bytes: number): number {
    if (!(Number.isFinite(bytes) && bytes >= 0)) throw new RangeError(`bytes must be a finite number >= 0, got ${bytes}`);
    return Math.min(this.capacity, Math.ceil(bytes));
  }

  private releaser(n: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= n;
      this.drain();
    };
  }

  private drain(): void {
    for (let next = this.waiters[0]; next && this.used + next.bytes <= this.capacity; next = this.waiters[0]) {
      this.waiters.shift();
      this.used += next.bytes;
      next.resolve();
    }
  }
}

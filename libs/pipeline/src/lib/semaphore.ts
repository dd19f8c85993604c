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

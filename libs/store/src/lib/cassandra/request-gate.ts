/**
 * At most `limit` requests in flight; the rest wait their turn in arrival order. The Cassandra driver
 * refuses a request beyond `pooling.maxRequestsPerConnection` (2,048 with protocol v3+) in flight on
 * every connection to a host ("All connections to host ... are busy"), which a defender starting with
 * thousands of chambers reached at once: queued here, such a burst is served instead of failed.
 */
export class RequestGate {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private head = 0;

  constructor(readonly limit: number) {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`request gate limit must be an integer >= 1, got ${limit}`);
  }

  /** Requests running now. */
  get running(): number {
    return this.inFlight;
  }

  /** Requests waiting for a turn. */
  get queued(): number {
    return this.waiting.length - this.head;
  }

  /** Runs `request` once fewer than `limit` others run; its result or error is passed through. */
  async run<T>(request: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.limit || this.queued > 0) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.inFlight++;
    try {
      return await request();
    } finally {
      this.release();
    }
  }

  /** Hands the slot to the next waiting request (which counts as in flight already), or frees it. */
  private release(): void {
    const next = this.head < this.waiting.length ? this.waiting[this.head++] : undefined;
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
    if (next) next();
    else this.inFlight--;
  }
}

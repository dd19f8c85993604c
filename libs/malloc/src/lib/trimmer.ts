import type { Malloc, MallocInfo } from './malloc';

/** What one trim did. */
export interface TrimResult {
  readonly released: boolean;
  /** Free heap bytes before the trim (undefined where the counters are unsupported). */
  readonly freeBytesBefore?: number;
  /** The allocator's counters after the trim. */
  readonly after?: MallocInfo;
}

export interface TrimmerOptions {
  /** Seconds between trims; > 0. */
  readonly intervalSeconds: number;
  /** Called after each trim (metrics). */
  readonly onTrim?: (result: TrimResult) => void;
  /** Timer functions (tests inject fakes). */
  readonly setInterval?: (fn: () => void, ms: number) => { unref?: () => void };
  readonly clearInterval?: (handle: unknown) => void;
}

/**
 * Returns the C heap's free pages to the kernel every `intervalSeconds`. glibc keeps memory freed
 * in the middle of its heap resident; a process that frees megabytes per second between live
 * blocks (the defender's trace buffers) keeps its high-water mark resident without this. A trim
 * costs a few milliseconds on the calling thread (a walk of the free lists and madvise calls),
 * and freed pages that are used again are faulted back in.
 */
export class MallocTrimmer {
  private handle: unknown;

  constructor(
    private readonly malloc: Pick<Malloc, 'supported' | 'trim' | 'info'>,
    private readonly options: TrimmerOptions,
  ) {
    if (!(Number.isFinite(options.intervalSeconds) && options.intervalSeconds > 0)) {
      throw new RangeError(`intervalSeconds must be > 0, got ${options.intervalSeconds}`);
    }
  }

  /** Trims once now. */
  trimNow(): TrimResult {
    const before = this.malloc.info();
    const released = this.malloc.trim();
    const after = this.malloc.info();
    const result: TrimResult = { released, ...(before ? { freeBytesBefore: before.freeBytes } : {}), ...(after ? { after } : {}) };
    this.options.onTrim?.(result);
    return result;
  }

  /** Starts the periodic trim (idempotent; the timer does not keep the process alive). */
  start(): void {
    if (this.handle !== undefined || !this.malloc.supported) return;
    const set = this.options.setInterval ?? setInterval;
    const h = set(() => this.trimNow(), this.options.intervalSeconds * 1000);
    h.unref?.();
    this.handle = h;
  }

  stop(): void {
    if (this.handle === undefined) return;
    (this.options.clearInterval ?? ((x: unknown) => clearInterval(x as NodeJS.Timeout)))(this.handle);
    this.handle = undefined;
  }
}

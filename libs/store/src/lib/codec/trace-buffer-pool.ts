/**
 * Reusable buffers for the traces a store reads (issue 24, "memory by design").
 *
 * Every trace read used to allocate one buffer for the whole trace (MBs: above glibc's mmap threshold,
 * so a fresh mapping, zero-filled and faulted in page by page) and to free it after the evaluation.
 * The pool keeps the buffers given back and leases them out again: at a steady run load the same few
 * buffers carry every trace, and no trace memory is allocated or freed. It keeps a buffer only while
 * the buffers out on lease and the free ones together stay within `capacityBytes` (the defender's
 * trace budget), so pooling never holds more trace memory than the budget lets runs hold at once.
 *
 * A buffer leaves the pool by {@link TraceBufferPool.lease} and comes back by
 * {@link TraceBufferPool.give}, which takes it over by a zero-copy transfer: every view the caller
 * still holds reads as empty from then on (a trace used after its release fails loudly instead of
 * seeing the next run's samples). A buffer that another thread leased comes back the same way, moved
 * by `postMessage` (ThreadedSqliteStore). Buffers are sized in classes (64 KiB, then 2^k and
 * 1.5 x 2^k bytes), so a trace fits a buffer at most a third larger than it.
 */
export const DEFAULT_TRACE_POOL_BYTES = 32 * 1024 * 1024;

/** Smallest buffer the pool hands out: traces smaller than this share the class. */
export const MIN_TRACE_BUFFER_BYTES = 64 * 1024;

/** What a pool has done since it was made. */
export interface TraceBufferPoolStats {
  /** Leases served by a buffer given back earlier. */
  readonly reused: number;
  /** Leases served by a new allocation (none of the class was free). */
  readonly allocated: number;
  /** Buffers given back and kept. */
  readonly kept: number;
  /** Buffers given back and freed: they did not fit the capacity, or were not of a class. */
  readonly freed: number;
  /** Bytes of the free buffers held now. */
  readonly retainedBytes: number;
  /** Bytes of the buffers out on lease now (not given back yet). */
  readonly leasedBytes: number;
  /** Free buffers held now. */
  readonly retainedBuffers: number;
  readonly capacityBytes: number;
}

/** ES2024's transfer (Node 22+); the project's TypeScript lib is ES2023. */
interface TransferableArrayBuffer extends ArrayBuffer {
  transfer(newLength?: number): ArrayBuffer;
  readonly detached: boolean;
}

/** The buffer size a trace of `bytes` bytes is leased in. */
export function traceBufferClass(bytes: number): number {
  if (!(Number.isSafeInteger(bytes) && bytes >= 0)) throw new RangeError(`trace buffer size must be a non-negative integer, got ${bytes}`);
  if (bytes <= MIN_TRACE_BUFFER_BYTES) return MIN_TRACE_BUFFER_BYTES;
  const pow = 2 ** Math.ceil(Math.log2(bytes));
  // 2^k, or 1.5 x 2^(k-1) when that is enough (both are multiples of 8 above 64 KiB).
  return bytes <= pow * 0.75 ? pow * 0.75 : pow;
}

function isClassSize(bytes: number): boolean {
  return bytes >= MIN_TRACE_BUFFER_BYTES && traceBufferClass(bytes) === bytes;
}

/**
 * Frees a buffer's memory now: a transfer to zero length detaches it, and V8 releases the backing
 * store of a detached buffer at once (no garbage collection needed). A buffer that cannot be
 * detached (e.g. Node's shared Buffer pool) is left to the collector.
 */
export function freeArrayBuffer(buffer: ArrayBuffer): void {
  const b = buffer as TransferableArrayBuffer;
  if (b.detached) return;
  try {
    b.transfer(0);
  } catch {
    // not detachable: the garbage collector frees it
  }
}

export class TraceBufferPool {
  /** Free buffers, oldest given back first. */
  private free: ArrayBuffer[] = [];
  private retained = 0;
  private leased = 0;
  private counts = { reused: 0, allocated: 0, kept: 0, freed: 0 };

  constructor(readonly capacityBytes: number = DEFAULT_TRACE_POOL_BYTES) {
    if (!(Number.isSafeInteger(capacityBytes) && capacityBytes >= 0)) {
      throw new RangeError(`trace pool capacity must be a non-negative integer of bytes, got ${capacityBytes}`);
    }
  }

  /** A buffer of at least `bytes` bytes (of its class), reused when one is free. Its contents are undefined. */
  lease(bytes: number): ArrayBuffer {
    const size = traceBufferClass(bytes);
    for (let i = this.free.length - 1; i >= 0; i--) {
      const b = this.free[i] as ArrayBuffer;
      if (b.byteLength !== size) continue;
      this.free.splice(i, 1);
      this.retained -= size;
      this.leased += size;
      this.counts.reused++;
      return b;
    }
    this.counts.allocated++;
    this.leased += size;
    // The new buffer and the ones on lease may not leave room for all the free ones.
    this.evictOver(this.capacityBytes);
    return new ArrayBuffer(size);
  }

  /**
   * Takes a buffer back (it must be one the caller no longer uses: its views read empty afterwards).
   * It is kept for the next lease when it is of a class and, with the buffers still on lease, fits
   * the capacity, making room by freeing the buffers given back longest ago; otherwise it is freed now.
   */
  give(buffer: ArrayBuffer): void {
    const b = buffer as TransferableArrayBuffer;
    if (b.detached) return;
    const size = b.byteLength;
    // (A buffer of a class is taken for one of ours: a foreign one of the same size is kept just the same.)
    if (isClassSize(size)) this.leased = Math.max(0, this.leased - size);
    if (!isClassSize(size) || this.leased + size > this.capacityBytes) {
      this.counts.freed++;
      freeArrayBuffer(b);
      return;
    }
    let fresh: ArrayBuffer;
    try {
      fresh = b.transfer();
    } catch {
      this.counts.freed++; // not detachable (not one of ours): leave it to the collector
      return;
    }
    this.evictOver(this.capacityBytes - size);
    this.free.push(fresh);
    this.retained += size;
    this.counts.kept++;
  }

  /** Frees the free buffers given back longest ago until the leased and free bytes are at most `bytes`. */
  private evictOver(bytes: number): void {
    while (this.free.length > 0 && this.leased + this.retained > bytes) {
      const oldest = this.free.shift() as ArrayBuffer;
      this.retained -= oldest.byteLength;
      this.counts.freed++;
      freeArrayBuffer(oldest);
    }
  }

  /** Frees every buffer held (leased ones are not affected: given back later, they are kept again). */
  clear(): void {
    for (const b of this.free) freeArrayBuffer(b);
    this.counts.freed += this.free.length;
    this.free = [];
    this.retained = 0;
  }

  stats(): TraceBufferPoolStats {
    return { ...this.counts, retainedBytes: this.retained, leasedBytes: this.leased, retainedBuffers: this.free.length, capacityBytes: this.capacityBytes };
  }
}

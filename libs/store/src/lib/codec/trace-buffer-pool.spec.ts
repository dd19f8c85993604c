import { DEFAULT_TRACE_POOL_BYTES, freeArrayBuffer, MIN_TRACE_BUFFER_BYTES, TraceBufferPool, traceBufferClass } from './trace-buffer-pool';

const KiB = 1024;
const MiB = 1024 * KiB;

describe('traceBufferClass', () => {
  it('is 64 KiB up to 64 KiB, then the smaller of 1.5 x 2^k and 2^k that holds the trace', () => {
    expect(traceBufferClass(0)).toBe(64 * KiB);
    expect(traceBufferClass(64 * KiB)).toBe(64 * KiB);
    expect(traceBufferClass(64 * KiB + 1)).toBe(96 * KiB);
    expect(traceBufferClass(96 * KiB)).toBe(96 * KiB);
    expect(traceBufferClass(96 * KiB + 1)).toBe(128 * KiB);
    expect(traceBufferClass(1_600_000)).toBe(2 * MiB);
    expect(traceBufferClass(28_800_000)).toBe(32 * MiB);
    expect(() => traceBufferClass(-1)).toThrow(RangeError);
    expect(() => traceBufferClass(1.5)).toThrow(RangeError);
  });

  it('property: holds the trace, wastes at most a third of the class above 64 KiB, is a multiple of 8 and a fixed point', () => {
    let seed = 12345;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 5000; i++) {
      const bytes = next() % (64 * MiB);
      const c = traceBufferClass(bytes);
      expect(c).toBeGreaterThanOrEqual(bytes);
      expect(c % 8).toBe(0);
      expect(traceBufferClass(c)).toBe(c);
      if (bytes > MIN_TRACE_BUFFER_BYTES) expect(bytes).toBeGreaterThan(c * 0.66);
    }
  });
});

describe('TraceBufferPool', () => {
  it('leases a buffer of the class, and a buffer given back carries the next lease of its class', () => {
    const pool = new TraceBufferPool(8 * MiB);
    const a = pool.lease(1_000_000);
    expect(a.byteLength).toBe(1 * MiB);
    const view = new Uint8Array(a, 0, 10).fill(9);
    pool.give(a);
    // The caller's views are cut off: a use after release reads nothing.
    expect(view.length).toBe(0);
    expect(a.byteLength).toBe(0);
    const b = pool.lease(900_000);
    expect(b.byteLength).toBe(1 * MiB);
    expect(new Uint8Array(b)[5]).toBe(9); // the same memory (contents are the caller's to overwrite)
    expect(pool.lease(900_000)).not.toBe(b); // none free any more: a new one
    expect(pool.stats()).toEqual({ reused: 1, allocated: 2, kept: 1, freed: 0, retainedBytes: 0, leasedBytes: 2 * MiB, retainedBuffers: 0, capacityBytes: 8 * MiB });
  });

  it('holds, on lease and free together, at most its capacity: it frees the buffers given back longest ago to make room', () => {
    const pool = new TraceBufferPool(4 * MiB);
    const [a, b, c] = [pool.lease(MiB), pool.lease(MiB), pool.lease(MiB)];
    pool.give(a);
    pool.give(b);
    expect(pool.stats()).toMatchObject({ leasedBytes: MiB, retainedBytes: 2 * MiB, retainedBuffers: 2 });
    // A 2 MiB lease: 3 MiB on lease, so only 1 MiB may stay free: the older free buffer goes.
    const d = pool.lease(2 * MiB);
    expect(pool.stats()).toMatchObject({ leasedBytes: 3 * MiB, retainedBytes: MiB, freed: 1 });
    expect(a.byteLength + b.byteLength).toBe(0); // given back: cut off from the caller either way
    pool.give(d); // 2 MiB back beside 1 MiB free and 1 MiB out: exactly the capacity
    expect(pool.stats()).toMatchObject({ leasedBytes: MiB, retainedBytes: 3 * MiB, retainedBuffers: 2, freed: 1 });
    pool.give(c);
    expect(pool.stats()).toMatchObject({ leasedBytes: 0, retainedBytes: 4 * MiB, retainedBuffers: 3 });
    // A 3 MiB lease needs room: the two oldest free buffers (1 MiB, then 2 MiB) go, the 1 MiB given back last stays.
    pool.lease(3 * MiB);
    expect(pool.stats()).toMatchObject({ leasedBytes: 3 * MiB, retainedBytes: MiB, retainedBuffers: 1, freed: 3 });
    expect(pool.lease(MiB).byteLength).toBe(MiB);
    expect(pool.stats().reused).toBe(1);
  });

  it('frees a buffer given back while the ones still on lease fill the capacity', () => {
    const pool = new TraceBufferPool(2 * MiB);
    const [a, b, c] = [pool.lease(MiB), pool.lease(MiB), pool.lease(MiB)];
    pool.give(a); // 2 MiB still out: no room
    expect(pool.stats()).toMatchObject({ leasedBytes: 2 * MiB, retainedBytes: 0, freed: 1 });
    pool.give(b);
    pool.give(c);
    expect(pool.stats()).toMatchObject({ leasedBytes: 0, retainedBytes: 2 * MiB, kept: 2 });
  });

  it('frees instead of keeping: a buffer larger than the capacity, one not of a class, and everything with capacity 0', () => {
    const pool = new TraceBufferPool(MiB);
    const big = pool.lease(2 * MiB);
    pool.give(big);
    expect(big.byteLength).toBe(0);
    const odd = new ArrayBuffer(100_000);
    pool.give(odd);
    expect(odd.byteLength).toBe(0);
    expect(pool.stats()).toMatchObject({ freed: 2, kept: 0, retainedBytes: 0 });
    const none = new TraceBufferPool(0);
    const b = none.lease(10);
    none.give(b);
    expect(none.stats()).toMatchObject({ allocated: 1, freed: 1, retainedBytes: 0 });
    expect(() => new TraceBufferPool(-1)).toThrow(RangeError);
  });

  it('ignores a buffer given back twice, and clear() frees what it holds', () => {
    const pool = new TraceBufferPool();
    expect(pool.capacityBytes).toBe(DEFAULT_TRACE_POOL_BYTES);
    const a = pool.lease(100);
    pool.give(a);
    pool.give(a); // detached by the first give: nothing happens
    expect(pool.stats()).toMatchObject({ kept: 1, retainedBuffers: 1 });
    pool.clear();
    expect(pool.stats()).toMatchObject({ retainedBuffers: 0, retainedBytes: 0, freed: 1 });
  });

  it('property: under random leases and gives, every buffer made is out, held or freed, and free buffers are held only within the capacity', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const pool = new TraceBufferPool(4 * MiB);
    const out: ArrayBuffer[] = [];
    const check = () => {
      const s = pool.stats();
      expect(s.leasedBytes).toBe(out.reduce((n, b) => n + b.byteLength, 0));
      if (s.retainedBytes > 0) expect(s.leasedBytes + s.retainedBytes).toBeLessThanOrEqual(4 * MiB);
      expect(s.allocated).toBe(out.length + s.retainedBuffers + s.freed);
    };
    for (let i = 0; i < 2000; i++) {
      if (out.length > 0 && next() % 2 === 0) pool.give(out.splice(next() % out.length, 1)[0] as ArrayBuffer);
      else out.push(pool.lease(next() % (3 * MiB)));
      check();
    }
    while (out.length > 0) pool.give(out.pop() as ArrayBuffer);
    check();
    expect(pool.stats().reused).toBeGreaterThan(0);
  });
});

describe('freeArrayBuffer', () => {
  it('detaches, so the memory goes at once; a detached buffer is left alone', () => {
    const a = new Float64Array(1024);
    freeArrayBuffer(a.buffer);
    expect(a.length).toBe(0);
    expect(() => freeArrayBuffer(a.buffer)).not.toThrow();
  });
});

import { loadYoungGc } from './young-gc';

/** Ends the current job: V8 keeps WeakRef targets created in a job alive until it ends. */
const nextTask = () => new Promise((r) => setImmediate(r));

describe('loadYoungGc', () => {
  it('frees the off-heap memory of buffers that became unreachable at once, without a global gc', async () => {
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    const gc = loadYoungGc();
    gc();
    await nextTask();
    const base = process.memoryUsage().arrayBuffers;
    // Like the blob copies of a trace read: many medium buffers, copied out, then dropped.
    const copied = (() => {
      const chunks = Array.from({ length: 256 }, (_, i) => Buffer.alloc(64 * 1024, i));
      expect(process.memoryUsage().arrayBuffers - base).toBeGreaterThanOrEqual(15 * 1024 * 1024);
      return chunks.reduce((n, c) => n + c.length, 0);
    })();
    expect(copied).toBe(256 * 64 * 1024);
    await nextTask();
    gc();
    // V8 frees the dead buffers' memory off the main thread, right after the scavenge (a few
    // turns of the event loop; without the scavenge nothing would free it meanwhile).
    for (let i = 0; i < 100 && process.memoryUsage().arrayBuffers - base >= 2 * 1024 * 1024; i++) await nextTask();
    expect(process.memoryUsage().arrayBuffers - base).toBeLessThan(2 * 1024 * 1024);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });

  it('uses the global gc when the process has one', () => {
    const calls: unknown[] = [];
    (globalThis as { gc?: unknown }).gc = (o: unknown) => calls.push(o);
    try {
      loadYoungGc()();
      expect(calls).toEqual([{ type: 'minor' }]);
    } finally {
      delete (globalThis as { gc?: unknown }).gc;
    }
  });
});

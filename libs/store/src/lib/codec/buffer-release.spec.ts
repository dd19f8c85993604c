import { releaseArrayBuffer, releaseDriverBuffer } from './buffer-release';

describe('releaseArrayBuffer', () => {
  it('detaches the buffer (views read as empty), and twice is harmless', () => {
    const a = new Float64Array(1000).fill(1);
    releaseArrayBuffer(a.buffer);
    expect(a.length).toBe(0);
    expect(a.buffer.byteLength).toBe(0);
    expect(() => releaseArrayBuffer(a.buffer)).not.toThrow();
  });

  it("frees the memory at once: external memory drops without a garbage collection", () => {
    const before = process.memoryUsage().arrayBuffers;
    const arrays = Array.from({ length: 8 }, () => new Uint8Array(4 * 1024 * 1024).fill(7));
    const held = process.memoryUsage().arrayBuffers;
    expect(held - before).toBeGreaterThanOrEqual(32 * 1024 * 1024);
    for (const a of arrays) releaseArrayBuffer(a.buffer);
    // `arrays` still references every view: only the detach can have given the memory back.
    expect(process.memoryUsage().arrayBuffers).toBeLessThan(held - 30 * 1024 * 1024);
    expect(arrays.every((a) => a.length === 0)).toBe(true);
  });

  it("leaves a buffer that cannot be detached to the collector (Node's shared Buffer pool)", () => {
    const pooled = Buffer.from('tiny');
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length); // a slice of the pool
    expect(() => releaseArrayBuffer(pooled.buffer as ArrayBuffer)).not.toThrow();
    expect(pooled.toString()).toBe('tiny');
  });
});

describe('releaseDriverBuffer', () => {
  it('frees a Buffer that is the whole of its ArrayBuffer', () => {
    const own = Buffer.alloc(100_000, 1);
    releaseDriverBuffer(own);
    expect(own.length).toBe(0);
  });

  it('leaves a slice of a larger buffer alone (e.g. a network frame)', () => {
    const frame = Buffer.alloc(100_000, 1);
    const slice = frame.subarray(10, 20);
    releaseDriverBuffer(slice);
    expect(slice.length).toBe(10);
    expect(frame.length).toBe(100_000);
  });
});

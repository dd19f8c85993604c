import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadMalloc, MallocUnavailableError, sourceBuildPath } from './malloc';
import { MallocTrimmer, type TrimResult } from './trimmer';

const BUILT = sourceBuildPath();

// A full GC frees the blocks' memory (their ArrayBuffers) before the trim.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function rssMb(): number {
  return process.memoryUsage().rss / 2 ** 20;
}

// The real addon (built by `npm ci`'s postinstall), on this machine's glibc.
describe('loadMalloc', () => {
  it('loads the built addon from the first existing path', () => {
    const m = loadMalloc(['/nonexistent/malloc.node', BUILT]);
    expect(m.supported).toBe(true);
    const info = m.info()!;
    expect(info.heapBytes).toBeGreaterThan(0);
    expect(info.inUseBytes).toBeGreaterThan(0);
    expect(info.inUseBytes + info.freeBytes).toBeLessThanOrEqual(info.heapBytes);
  });

  it('returns freed C-heap pages to the kernel', async () => {
    const m = loadMalloc([BUILT]);
    // Interleave blocks that are freed with small ones that stay: the freed room is not at the heap's
    // top, so glibc keeps it resident on its own.
    let blocks: Buffer[] = [];
    const pins: Buffer[] = [];
    for (let i = 0; i < 3000; i++) {
      blocks.push(Buffer.alloc(20_000, 1));
      pins.push(Buffer.alloc(64, 2));
    }
    blocks = [];
    gc();
    // V8 frees ArrayBuffer memory on a background thread after the GC: wait for it.
    for (let i = 0; i < 100 && m.info()!.freeBytes < 40 * 2 ** 20; i++) await new Promise((r) => setTimeout(r, 20));
    const before = m.info()!;
    const rssBefore = rssMb();
    expect(m.trim()).toBe(true);
    const after = m.info()!;
    // mallinfo2 counts the heap, not residency: what changes is the process's RSS.
    expect(before.freeBytes).toBeGreaterThan(40 * 2 ** 20);
    expect(rssBefore - rssMb()).toBeGreaterThan(30);
    expect(after.inUseBytes).toBeLessThanOrEqual(before.inUseBytes + 2 ** 20);
    expect(pins.every((p) => p[0] === 2)).toBe(true);
  });

  it('names the paths tried when the addon is missing, and rejects a file that is not it', () => {
    expect(() => loadMalloc(['/a/malloc.node', '/b/malloc.node'])).toThrow(new MallocUnavailableError('malloc.node not found (tried /a/malloc.node, /b/malloc.node); build it with `npm run build:native`'));
    expect(() => loadMalloc([__filename])).toThrow(MallocUnavailableError);
  });
});

describe('MallocTrimmer', () => {
  it('trims on its interval, reports each trim, and stops', () => {
    const m = loadMalloc([BUILT]);
    const ticks: (() => void)[] = [];
    let cleared = 0;
    const results: TrimResult[] = [];
    const t = new MallocTrimmer(m, {
      intervalSeconds: 7,
      onTrim: (r) => results.push(r),
      setInterval: (fn, ms) => {
        expect(ms).toBe(7000);
        ticks.push(fn);
        return {};
      },
      clearInterval: () => cleared++,
    });
    t.start();
    t.start(); // idempotent
    expect(ticks).toHaveLength(1);
    ticks[0]!();
    ticks[0]!();
    expect(results).toHaveLength(2);
    expect(results[0]!.after!.heapBytes).toBeGreaterThan(0);
    expect(typeof results[0]!.freeBytesBefore).toBe('number');
    t.stop();
    t.stop();
    expect(cleared).toBe(1);
  });

  it('does not start where malloc_trim is unsupported, and rejects a bad interval', () => {
    const unsupported = { supported: false, trim: () => false, info: () => undefined };
    let started = 0;
    new MallocTrimmer(unsupported, { intervalSeconds: 1, setInterval: () => (started++, {}) }).start();
    expect(started).toBe(0);
    expect(new MallocTrimmer(unsupported, { intervalSeconds: 1 }).trimNow()).toEqual({ released: false });
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new MallocTrimmer(unsupported, { intervalSeconds: bad })).toThrow(RangeError);
    }
  });
});

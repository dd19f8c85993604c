import { loadMalloc, MallocUnavailableError, sourceBuildPath, type MallocInfo } from './malloc';
import { MallocTrimmer, type TrimResult } from './trimmer';

const BUILT = sourceBuildPath();

/** ES2024's ArrayBuffer transfer (the workspace's TypeScript lib is ES2023). */
interface TransferableArrayBuffer extends ArrayBuffer {
  transfer(newByteLength?: number): ArrayBuffer;
  readonly detached: boolean;
}
const detachable = (b: Buffer) => b.buffer as TransferableArrayBuffer;

/** mallinfo2's counters as glibc defines them: byte counts, the in-use and free bytes parts of the heap. */
function expectWellFormed(info: MallocInfo | undefined): void {
  expect(info).toBeDefined();
  const { heapBytes, mmappedBytes, inUseBytes, freeBytes, releasableTopBytes } = info!;
  for (const n of [heapBytes, mmappedBytes, inUseBytes, freeBytes, releasableTopBytes]) {
    expect(Number.isSafeInteger(n) && n >= 0).toBe(true);
  }
  expect(heapBytes).toBeGreaterThan(0);
  expect(inUseBytes).toBeGreaterThan(0);
  expect(inUseBytes + freeBytes).toBeLessThanOrEqual(heapBytes);
  // The heap's top is one of its free blocks.
  expect(releasableTopBytes).toBeLessThanOrEqual(freeBytes);
}

// The real addon (built by `npm ci`'s postinstall), on this machine's glibc.
describe('loadMalloc', () => {
  it('loads the built addon from the first existing path', () => {
    const m = loadMalloc(['/nonexistent/malloc.node', BUILT]);
    expect(m.supported).toBe(true);
    expectWellFormed(m.info());
  });

  // What glibc guarantees, not how much the RSS falls (that depends on the kernel, V8's threads and
  // the machine's load; `npm run bench:malloc` measures it, docs/benchmarks.md `malloc`).
  it('trims free pages in the middle of the heap without touching live memory', () => {
    const m = loadMalloc([BUILT]);
    // Blocks that are freed between small ones that stay (256 bytes: above V8's 64-byte limit for
    // typed arrays on its own heap, so they are C-heap blocks too): the freed room is not at the
    // heap's top, so glibc keeps it as free blocks of whole pages, which only malloc_trim returns.
    const blocks: Buffer[] = [];
    const pins: Buffer[] = [];
    for (let i = 0; i < 3000; i++) {
      blocks.push(Buffer.alloc(20_000, 1));
      pins.push(Buffer.alloc(256, i % 251));
    }
    // Detaching frees a buffer's memory at once (no garbage collection, no V8 background thread).
    for (const b of blocks) detachable(b).transfer(0);
    expect(blocks.every((b) => detachable(b).detached)).toBe(true);
    expectWellFormed(m.info());
    // malloc_trim(0) returns 1 when it released memory: here the freed blocks' whole pages.
    expect(m.trim()).toBe(true);
    expectWellFormed(m.info());
    expect(pins.every((p, i) => p.length === 256 && p.every((x) => x === i % 251))).toBe(true);
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

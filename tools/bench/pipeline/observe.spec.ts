import { Worker } from 'node:worker_threads';
import { gaugesBy, memoryBreakdownOf, memoryOf, parseSmaps, threadCpuMsOf } from './observe';

const SMAPS = [
  '55e752e0b000-55e752e0d000 r--p 00000000 fe:00 260386                     /usr/local/bin/node',
  'Size:                  8 kB',
  'Rss:                   8 kB',
  'Pss:                   8 kB',
  '55e752e0d000-55e752e1d000 r-xp 00002000 fe:00 260386                     /usr/local/bin/node',
  'Rss:                  40 kB',
  '55e753000000-55e757000000 rw-p 00000000 00:00 0                          [heap]',
  'Rss:                1024 kB',
  '7f0000000000-7f0004000000 rw-p 00000000 00:00 0 ',
  'Rss:                2048 kB',
  '7f1000000000-7f1000010000 r-xp 00000000 fe:00 99                         /usr/lib/x86_64-linux-gnu/libc.so.6',
  'Rss:                 512 kB',
  '7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]',
  'Rss:                 512 kB',
  'VmFlags: rd wr mr mw me gd ac',
].join('\n');

describe('parseSmaps', () => {
  it('sums resident pages by kind of mapping', () => {
    expect(parseSmaps(SMAPS)).toEqual({
      rssMb: (48 + 1024 + 2048 + 512 + 512) / 1024,
      nodeBinaryMb: 48 / 1024,
      otherFilesMb: 0.5,
      brkHeapMb: 1,
      // [stack] is anonymous memory too.
      anonMb: (2048 + 512) / 1024,
    });
  });

  it('agrees with VmRSS for this process', () => {
    // The two are read moments apart, and V8's background threads may map or free tens of MB in
    // between (seen in a fresh-clone CI: 30 MB). VmRSS is read before and after the breakdown, and
    // the comparison is made on a reading where the two VmRSS agree (a quiet moment), a few tries.
    let sample: { b: ReturnType<typeof memoryBreakdownOf>; before: number; after: number } | undefined;
    for (let i = 0; i < 20; i++) {
      const before = memoryOf(process.pid)?.rssMb ?? NaN;
      const b = memoryBreakdownOf(process.pid);
      const after = memoryOf(process.pid)?.rssMb ?? NaN;
      sample = { b, before, after };
      if (Math.abs(after - before) <= 0.01 * before) break;
    }
    const b = sample?.b;
    expect(b).toBeTruthy();
    const lo = Math.min(sample?.before ?? NaN, sample?.after ?? NaN);
    const hi = Math.max(sample?.before ?? NaN, sample?.after ?? NaN);
    expect(b?.rssMb).toBeGreaterThan(0.9 * lo);
    expect(b?.rssMb).toBeLessThan(1.1 * hi);
    expect(b?.nodeBinaryMb).toBeGreaterThan(0);
  });

  it('is undefined for a process that does not exist', () => {
    expect(memoryBreakdownOf(2 ** 30)).toBeUndefined();
  });
});

describe('gaugesBy', () => {
  it('sums a metric per label value and ignores metrics sharing its prefix', () => {
    const text = [
      '# HELP nodejs_heap_space_size_total_bytes Process heap space size total from Node.js in bytes.',
      'nodejs_heap_space_size_total_bytes{space="new"} 16777216',
      'nodejs_heap_space_size_total_bytes{space="old"} 80000000',
      'nodejs_heap_space_size_total_bytes_other{space="old"} 5',
      'defender_malloc_heap_bytes{kind="in_use"} 100',
      'defender_malloc_heap_bytes{kind="in_use",pod="x"} 20',
    ].join('\n');
    expect(gaugesBy(text, 'nodejs_heap_space_size_total_bytes', 'space')).toEqual(
      new Map([
        ['new', 16777216],
        ['old', 80000000],
      ]),
    );
    expect(gaugesBy(text, 'defender_malloc_heap_bytes', 'kind').get('in_use')).toBe(120);
  });
});

describe('threadCpuMsOf', () => {
  it("sums the CPU time of a process's threads by name (a Worker's name), NaN for a name no thread has", async () => {
    // A thread that uses 50 ms of its own CPU (several clock ticks, however busy the machine), then waits to be read and stopped.
    const worker = new Worker(
      "const { parentPort } = require('node:worker_threads'); const used = () => { const u = process.threadCpuUsage(); return u.user + u.system; }; while (used() < 50_000); parentPort.postMessage('done'); setInterval(() => {}, 1000);",
      { eval: true, name: 'observe-spec' },
    );
    try {
      await new Promise((resolve) => worker.once('message', resolve));
      expect(threadCpuMsOf(process.pid, 'observe-spec')).toBeGreaterThan(0);
      expect(threadCpuMsOf(process.pid, 'no-such-thread')).toBeNaN();
      expect(threadCpuMsOf(-1, 'observe-spec')).toBeNaN();
    } finally {
      await worker.terminate();
    }
  });
});
